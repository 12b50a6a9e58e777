//! # cute-copy: CuTe TiledCopy data movement for Rust
//!
//! cute-copy runs the real CUTLASS/CuTe copy templates (compiled by nvcc at build time, bridged by
//! cxx) on [cudarc](https://crates.io/crates/cudarc) buffers, and explains each choice in CuTe's
//! terms. A walk-through:
//!
//! 1. **Find a GPU without panicking.** [`stream`] returns [`Error::NoDriver`] or
//!    [`Error::NoDevice`] where cudarc itself would panic.
//! 2. **Own device matrices** ([`DeviceMatrix`]: row-major, `rows × cols`, leading dimension `ld`)
//!    and borrow views of them ([`MatrixView`], [`MatrixViewMut`], sub-matrices with
//!    [`MatrixView::sub`]); wrap foreign memory with the `unsafe` `from_raw` constructors or a
//!    run-time-typed [`RawMatrix`].
//! 3. **Copy or pad** with [`copy`] / [`pad`] (widest legal atom) or [`copy_with`] / [`pad_with`]
//!    (an atom you name). Launches are stream-ordered; they return the [`Plan`] they ran.
//! 4. **Inspect before launching:** [`plan`] gives the [`Plan`] — atom, thread and value layouts,
//!    tile, grid, which tiles are predicated — and `Display` prints the reason for every choice.
//!    [`launch`] then runs exactly that plan.
//! 5. **Tensors of any rank**: a view is a CuTe [`Layout`] (rank 1 to 6) at an offset
//!    ([`TensorView`], [`TensorViewMut`], [`RawTensor`], owned [`DeviceTensor`]; a matrix is the
//!    rank-2 case), and [`copy_tensor`] copies between any two layouts of one shape (transposes,
//!    permutes, NCHW <-> NHWC), planned by [`TensorPlan`] (coalescing, route, swizzled tile).
//!    [`convert_tensor`] does the same while converting the element type (f32 -> bf16, f16 ->
//!    FP8 with a scale, u8 -> normalized f32), planned by [`ConvertPlan`] with its [`Convert`]
//!    spec and [`ConvertRule`].
//! 6. **See what CuTe does** on the host, no GPU needed: [`TiledCopySpec`] builds the TiledCopy with
//!    real CuTe and partitions a tile for any thread ([`TiledCopySpec::thread_coords`]);
//!    [`svg::tiled_copy_svg`] draws the thread-value map.
//! 7. **candle tensors** (feature `candle`): `cute_copy::candle` makes candle CUDA tensors
//!    contiguous, permutes them, copies between them and gathers KV-cache blocks, on candle's own
//!    stream and storage.
//!
//! ```no_run
//! # fn main() -> Result<(), cute_copy::Error> {
//! use cute_copy::DeviceMatrix;
//! let stream = cute_copy::stream(0)?;
//! let host = vec![1.0f32; 130 * 136];
//! let src = DeviceMatrix::from_host(&stream, 130, 130, 136, &host)?;
//! let mut dst = DeviceMatrix::<f32>::zeros(&stream, 130, 130, 130)?;
//! let plan = cute_copy::copy(&src.view(), &mut dst.view_mut(), &stream)?;
//! println!("{plan}"); // row pitch 520 B is 8-byte aligned: Realign128, 16-byte accesses realigned in registers
//! # Ok(()) }
//! ```
//!
//! ## How the crate is built
//!
//! A call's way to a kernel: a **front door** ([`copy`], [`copy_tensor`], [`Batch::launch`],
//! [`gather_rows`], ...) checks its views and gets the device's facts once ([`DeviceInfo::of`]); the
//! **plan** ([`Plan`], [`TensorPlan`]) is a pure value of the views and a [`DeviceInfo`], printed with
//! its reasons; **one launch path** checks overlap and the device, binds the context and calls the
//! **bridge** (cxx: one descriptor, shared enums), which dispatches to the **family kernel** in
//! `cpp/kernels/` (universal, cp_async, realign, transpose, convert). Each family's Rust half (configuration,
//! tiling rule, descriptor builder, launch decisions) sits beside the planner in a module of the
//! family's name. README.md, "How the crate is built", names the files.
//!
//! ## CuTe concepts and their Rust names
//!
//! | CuTe | here |
//! | --- | --- |
//! | copy operation + `Copy_Atom<Op, T>` (`UniversalCopy<uint128_t>`, `SM80_CP_ASYNC_CACHEGLOBAL_ZFILL<uint128_t>`, ...) | [`Atom`] (one row of the instantiation menu `cpp/menu.def`; [`Atom::cute_op`] names the CuTe type) |
//! | element type `T` | [`DType`] / [`Element`]; kernels are instantiated per element *width* (1, 2, 4, 8 bytes) |
//! | thread layout, value layout, `make_tiled_copy` | [`TiledCopySpec`], [`KernelConfig`] (`thr_layout`, `val_layout`) |
//! | tiler / `local_tile` tile | [`TiledCopySpec::tiler`], [`KernelConfig::tile`] |
//! | `get_slice(t).partition_S(..)`, `(CPY, CPY_M, CPY_N)` | [`TiledCopySpec::thread_coords`], [`TiledCopySpec::partition_shape`] |
//! | `make_identity_tensor` + `elem_less` predicates, `copy_if` | [`copy_mask`]; boundary tiles in [`Plan`] (`predicated_tiles`) |
//! | ZFILL (`cp.async` src-size 0) | [`Atom::zero_fill`], [`pad`] |
//! | `Layout<Shape, Stride>`, `coalesce` | [`Layout`] (`(8,32):(32,1)` notation), [`Layout::coalesce`], [`coalesce_layouts`] (the pair of a copy) |
//! | `Tensor` = engine + layout | [`TensorView`] / [`TensorViewMut`] / [`RawTensor`] (`slice`, `permute`, `relayout`) |
//! | `composition(Swizzle<B,M,S>, layout)` shared-memory tile | [`TransposeTile::swizzle`], [`TransposeTile::smem_offset`], [`svg::smem_tile_svg`] |
//!
//! ## Threads, streams and graphs
//!
//! The matrix and view types are `Send` and `Sync` exactly when cudarc's buffers are (they hold a
//! `CudaSlice` or a reference to one); copies may be issued from several host threads and on several
//! streams at once (tests/concurrency_gpu.rs). Launches can be captured into a CUDA graph
//! (tests/graph_gpu.rs), but cudarc's per-buffer event tracking — on once a context has more than one
//! stream — inserts waits that CUDA refuses inside a capture: capture with tracking off
//! (`unsafe { ctx.disable_event_tracking() }` before creating the buffers) and order streams yourself.
//!
//! ## Between GPUs
//!
//! Source and destination may be on two devices of one host, the stream on either: the copy
//! engine moves runs and pitched rows, the plan's own kernel reads or writes the other device's
//! memory for any other layout (peer access enabled once per pair), as the plan's [`PeerRoute`]
//! says and explains ([`DevicePair`] holds the facts; docs/between-gpus.md).
#![warn(missing_docs)]

mod atom;
mod baseline;
mod batch;
#[cfg(feature = "candle")]
pub mod candle;
mod convert;
mod copy;
mod device;
mod dtype;
mod error;
mod ffi;
mod gather;
mod launch;
mod layout;
mod peer;
mod plan;
mod realign;
pub mod reference;
pub mod svg;
mod tensor;
mod tile;
mod tiled_copy;
pub mod timing;
mod transpose;
mod view;

pub use atom::{Atom, Family, KernelConfig, ELEMENT_WIDTHS};
pub use baseline::{copy_blocks_baseline, launch_baseline, Baseline, BatchBaseline};
pub use batch::{Batch, BatchPlan, Index, Region};
pub use convert::{
    conversion, group_pixels, ChannelStage, Convert, ConvertPlan, ConvertRoute, ConvertRule,
    IndexKind, Interleaved, ItemIndex, CHANNELS_BY_VALUE, CHANNEL_STAGE_BYTES, MAX_CHANNELS,
};
pub use copy::{
    copy, copy_raw, copy_with, launch, launch_overhead_ns, pad, pad_raw, pad_with, plan,
    tutorial_copy,
};
pub use device::{
    context, describe, device_count, l2_cache_bytes, runtime_device_count, stream, DeviceInfo,
};
pub use dtype::{DType, Element};
pub use error::{Error, Result};
pub use gather::{
    convert_copy_blocks, convert_gather_rows, convert_indexed_raw, convert_scatter_rows,
    copy_blocks, gather_rows, scatter_rows, upload_block_table, upload_indices, IndexStatus,
};
pub use layout::{coalesce_layouts, Layout, MAX_RANK};
pub use peer::{
    DevicePair, PeerEngine, PeerLink, PeerRoute, PeerShape, PEER_MEMCPY_MAX_PITCH,
    PEER_MEMCPY_MIN_ROW_BYTES,
};
pub use plan::{
    coalesce, copy_mask, widest_vector_bits, Operand, Operation, Plan, TensorPlan, TensorRoute,
    MAX_BLOCKS, RAGGED_ROW_MIN_BYTES, REALIGN_MIN_ROW_BYTES,
};
pub use tensor::{
    convert_tensor, convert_tensor_raw, copy_tensor, copy_tensor_raw, plan_convert, plan_tensor,
};
pub use tiled_copy::TiledCopySpec;
pub use transpose::{
    swizzle, Access, ThreadWork, TileKind, TileStage, TransposeTile, ITEM_MAX_BYTES,
    NARROW_MAX_BYTES, NARROW_REGISTER_ROWS,
};
pub use view::{
    DeviceMatrix, DeviceTensor, Geometry, MatrixView, MatrixViewMut, RawMatrix, RawTensor,
    TensorView, TensorViewMut,
};

/// Re-exported so users name the same cudarc types the crate's API takes.
pub use cudarc;

/// The GPU targets this build's kernels were compiled for, and who chose them: e.g.
/// `sm_90 (nvidia-smi)` (the GPUs of the machine that built it, the default where it has one),
/// `sm_90 (CUDA_COMPUTE_CAP)`, or `sm_80,sm_90,compute_90 (portable)` (the default on a machine
/// without a GPU, and `CUTE_COPY_CUDA_ARCHS=default`). A GPU that none of them runs fails its
/// launches with CUDA's "no kernel image is available" error.
pub const GPU_TARGETS: &str = env!("CUTE_COPY_GPU_TARGETS");
