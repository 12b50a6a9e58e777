//! The FFI surface: the cxx bridge to the C++ side (`cpp/`) and the few raw calls into cudarc's
//! driver bindings. This module is private to the crate and holds all of its `unsafe` code.

use crate::error::Error;

#[cxx::bridge(namespace = "cute_copy")]
mod bridge {
    // ---- Shared structs: one descriptor crosses the bridge, never a long argument list. ----

    /// One copy (or pad) as the kernels see it. Shapes in elements, pointers as device addresses.
    #[derive(Debug, Clone, Copy)]
    struct CopyDesc {
        /// `Atom as u32`: the menu row.
        atom: u32,
        /// Element width in bytes (1, 2, 4 or 8): the kernels are instantiated per width.
        elem_bytes: u32,
        src: u64,
        dst: u64,
        /// Source logical shape.
        rows: u64,
        cols: u64,
        /// Destination logical shape: equal to the source for a copy, larger for a pad.
        dst_rows: u64,
        dst_cols: u64,
        ld_src: u64,
        ld_dst: u64,
        /// The `CUstream` (= `cudaStream_t`) the launch is ordered on.
        stream: u64,
        /// Bit 0: predicate every tile (turn the interior peel off), to measure what peeling saves.
        flags: u32,
        /// Realign atoms only: the lean run kernel's threads per block (128 or 256), or 0 for the
        /// general kernel; decided by the planner (`src/realign.rs`), checked by C++.
        lean_threads: u32,
        /// Realign atoms only: the L2 prefetch distance in warp tasks, 0 for none (the planner's).
        prefetch: i64,
    }

    /// One copy of the realign family, in bytes: `items` repetitions of a `dst_rows x
    /// dst_row_bytes` destination (row pitch `dst_pitch`) filled from a `src_rows x src_row_bytes`
    /// source (row pitch `src_pitch`); destination bytes outside the source are written as zeros.
    /// Item `i` sits at `src + s * src_item_stride` / `dst + d * dst_item_stride`, where `s` and `d`
    /// are `i`, or `src_index[i * index_stride]` / `dst_index[i * index_stride]` when those device
    /// arrays (i32 or i64, `index_bytes`) are given; a negative index skips the item, one at or
    /// past `src_items` / `dst_items` skips it and is recorded. The kernel walks `items x dst_rows
    /// x segs` warp tasks starting at `task_begin` of its batch. The layout is shared with C++ and
    /// copied to the device as is.
    #[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
    struct RowsDesc {
        src: u64,
        dst: u64,
        src_pitch: i64,
        dst_pitch: i64,
        src_row_bytes: i64,
        dst_row_bytes: i64,
        src_rows: i64,
        dst_rows: i64,
        items: i64,
        src_item_stride: i64,
        dst_item_stride: i64,
        src_index: u64,
        dst_index: u64,
        src_items: i64,
        dst_items: i64,
        index_bytes: i32,
        index_stride: i32,
        segs: i64,
        task_begin: i64,
    }

    /// One launch over `count` row descriptors in device memory (`descs`), `tasks` warp tasks in
    /// all; `status` (device, 2 x u64: count, lowest item) records out-of-range indices, or 0.
    /// The descriptors' `src` / `dst` are offsets from `src_base` / `dst_base`, so that a batch
    /// is planned once and launched on any buffers large enough for it.
    #[derive(Debug, Clone, Copy)]
    struct BatchLaunch {
        atom: u32,
        elem_bytes: u32,
        descs: u64,
        count: u64,
        tasks: i64,
        status: u64,
        src_base: u64,
        dst_base: u64,
        stream: u64,
        /// The lean run kernel's threads per block (128 or 256; one descriptor by value, no
        /// status), or 0 for the general kernel: the planner's decision (`src/realign.rs`).
        lean_threads: u32,
        /// The L2 prefetch distance in warp tasks (one descriptor by value), 0 for none.
        prefetch: i64,
    }

    /// How a transpose-family tile is staged (`TileKind` and `TileStage` as the kernels number
    /// them): one definition for Rust and C++ (dispatch.cu, transpose.cu).
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
    #[repr(u32)]
    enum TensorKind {
        /// Stores along `mode_b`, the destination's unit-stride mode, through a swizzled tile.
        #[default]
        Transpose = 0,
        /// `mode_a` has unit stride on both sides, `mode_b` is the tile's row mode.
        Rows = 1,
        /// The whole of `mode_b` in a tile, the destination tile one contiguous run.
        Narrow = 2,
        /// The mirror image: the whole of `mode_a` in a tile, the source tile one run.
        NarrowLoad = 3,
        /// `Narrow` with registers as the stage.
        NarrowRegisters = 4,
        /// `NarrowLoad` with registers as the stage.
        NarrowLoadRegisters = 5,
        /// Small items: `mode_a == mode_b == 0` is the item mode, every other mode lies inside
        /// an item of `tile_b` elements, compact and contiguous on both sides; a tile is
        /// `tile_a` consecutive items, one run on each side, permuted in shared memory.
        Items = 6,
        /// `Rows` with registers as the stage: a tile is `tile_b` rows of `tile_a` elements
        /// (16-byte vectors on both sides), flattened over the block's threads.
        RowsRegisters = 7,
    }

    /// How one side of a transpose-family tile is accessed along its unit-stride mode.
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
    #[repr(u32)]
    enum Access {
        /// Element by element (the side has no unit-stride mode where the tile needs one).
        #[default]
        Element = 0,
        /// 16-byte vectors: the base and every other stride whole vectors.
        Vector = 1,
        /// 16-byte-aligned vectors whatever the offset and strides: each row (or run) is covered
        /// by the aligned vectors that hold it and shifted into place (funnel shifts in
        /// registers, or an offset in the byte-addressable shared-memory stage); only a row's
        /// first and last partial vectors go element by element.
        Realigned = 2,
    }

    /// What kind of failure a C++ exception is: the first byte of the message every bridged call's
    /// exception arrives with (`rust::behavior::trycatch` in `cute_copy/bridge.h`), read by
    /// `Error::from_cxx`. Never 0 (the message is a C string).
    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    #[repr(u8)]
    enum Fault {
        /// A refusal: the C++ side's second line of checks (any other `std::exception`).
        Refused = 1,
        /// A CUDA call failed (`CudaFailure`): CUDA's name for the error, 0x1f, its description.
        Cuda = 2,
        /// A build without CUDA kernels (`cpp/no_cuda.cc`).
        NoKernels = 3,
    }

    /// The 2D baselines of `cpp/baselines.cu` (not CuTe), for benchmarks.
    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    #[repr(u32)]
    enum BaselineKernel {
        /// One element per thread.
        Naive = 0,
        /// Hand-written 16-byte vectors.
        Vectorized16 = 1,
        /// `cudaMemcpy2DAsync`.
        Memcpy2D = 2,
        /// `cudaMemcpyAsync` of the same byte count.
        Memcpy = 3,
    }

    /// The batch baselines that copy (dst, src, size) pieces.
    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    #[repr(u32)]
    enum PiecesBaseline {
        /// One `cudaMemcpyAsync` per piece.
        MemcpyEach = 0,
        /// One `cudaMemcpyBatchAsync` for all of them.
        MemcpyBatch = 1,
    }

    /// One tensor copy of the transpose family (src/plan/tensor.rs routes it, src/transpose.rs
    /// builds it): layouts of rank `rank` (1..6) with equal shapes, strides in elements (modes past
    /// `rank` unused). A tile is `tile_b` rows along mode `mode_b` by `tile_a` elements along mode
    /// `mode_a`; the grid walks `tiles` tiles: `tiles_a` x `tiles_b` x every other mode, the last
    /// mode fastest, staged as `kind` says. `load` / `store`: how each side is accessed
    /// ([`Access`]). `src_span`: bytes from `src` that the source layout spans (its cosize times the
    /// element width): a realigned load may read a whole aligned vector inside it.
    #[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
    struct TensorDesc {
        atom: u32,
        elem_bytes: u32,
        src: u64,
        dst: u64,
        rank: u32,
        kind: TensorKind,
        mode_a: u32,
        mode_b: u32,
        load: Access,
        store: Access,
        src_span: i64,
        shape: [i64; 6],
        src_stride: [i64; 6],
        dst_stride: [i64; 6],
        tile_a: i64,
        tile_b: i64,
        tiles_a: i64,
        tiles_b: i64,
        tiles: i64,
        stream: u64,
    }

    /// An element type as the convert family's kernels know it (`CUTE_COPY_SCALAR` rows of
    /// cpp/menu.def name the C++ type of each).
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
    #[repr(u32)]
    enum Scalar {
        #[default]
        F32 = 0,
        F64 = 1,
        F16 = 2,
        BF16 = 3,
        U8 = 4,
        I8 = 5,
        U16 = 6,
        I16 = 7,
        U32 = 8,
        I32 = 9,
        U64 = 10,
        I64 = 11,
        F8E4M3 = 12,
        F8E5M2 = 13,
    }

    /// How a convert-family copy runs (src/convert.rs `ConvertRoute`).
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
    #[repr(u32)]
    enum ConvertKind {
        /// The last mode is the fastest on both sides: chunks of one row per thread.
        #[default]
        Elementwise = 0,
        /// The fastest modes differ: a tile staged in shared memory.
        Tile = 1,
        /// A short channel mode interleaved on one side, planar on the other: (C, tile_w)
        /// tiles, the source's bytes staged raw, the destination's vectors gathered from them.
        Channels = 2,
        /// A compact destination: aligned 16-byte destination vectors, their source elements
        /// loaded one by one at their coordinates.
        Gather = 3,
    }

    /// One copy of the convert family (src/convert.rs plans and builds it): layouts of rank
    /// `rank` (1..6, coalesced) with equal shapes, strides in elements. Each element becomes
    /// `dst_type` from `src_type`; with `affine` it is first `(x - mean[c]) * mul[c]`, `c` =
    /// `(x_m / chan_div) % channels` along mode `chan_mode` (-1: always 0), the coefficients in
    /// `mean` / `mul` for up to 16 channels, else at `params` (device: `channels` means then
    /// `channels` muls, f32). Elementwise: `rows` x `chunks_per_row` chunks of `chunk`
    /// elements along the last mode. Tile: `tile_b` x `tile_a` tiles over modes `mode_b` x
    /// `mode_a`, `tiles_a` x `tiles_b` x every other mode, `blocks` in all. Channels: `mode_a`
    /// is the channel mode (extent 2..16, unit-stride on its interleaved side), `mode_b` the pixel
    /// mode (stride >= C on an interleaved source, C on an interleaved destination, 1 on the
    /// planar side), `tile_a` pixels a tile, `tiles_a` tiles along it, `blocks` = `tiles_a` x
    /// every other mode. `src_span`: bytes from
    /// `src` that the source layout spans (a realigned load reads whole vectors inside it).
    /// Index-driven (elementwise only): mode 0 walks items; item `i` reads source item
    /// `src_index[i * index_stride]` and writes destination item `dst_index[i * index_stride]`
    /// (an address of 0: item `i` itself on that side), entries of `index_bytes` (4 or 8); a
    /// negative entry skips the item, one at or past `src_items` / `dst_items` too, counted at
    /// `status` ([count, lowest item]); `src_span` then spans `src_items` source items.
    #[derive(Debug, Clone, Copy, Default, PartialEq)]
    struct ConvertDesc {
        src: u64,
        dst: u64,
        stream: u64,
        src_type: Scalar,
        dst_type: Scalar,
        kind: ConvertKind,
        rank: u32,
        mode_a: u32,
        mode_b: u32,
        shape: [i64; 6],
        src_stride: [i64; 6],
        dst_stride: [i64; 6],
        src_span: i64,
        chunk: i64,
        rows: i64,
        chunks_per_row: i64,
        tile_a: i64,
        tile_b: i64,
        tiles_a: i64,
        tiles_b: i64,
        blocks: i64,
        affine: u32,
        chan_mode: i32,
        chan_div: i64,
        channels: i64,
        mean: [f32; 16],
        mul: [f32; 16],
        params: u64,
        src_index: u64,
        dst_index: u64,
        status: u64,
        src_items: i64,
        dst_items: i64,
        index_bytes: i32,
        index_stride: i32,
    }

    /// The compile-time configuration behind one (atom, width) instantiation.
    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    struct KernelConfig {
        threads: u32,
        thr_m: u32,
        thr_n: u32,
        val_m: u32,
        val_n: u32,
        tile_m: u32,
        tile_n: u32,
        smem_bytes: u32,
    }

    /// A TiledCopy to build on the host: row-major thread layout (thr_m, thr_n), value layout
    /// (val_m, val_n), an atom of `atom_vals` elements, partitioning a (tile_m, tile_n) tile.
    #[derive(Debug, Clone, Copy)]
    struct SpecDesc {
        thr_m: u32,
        thr_n: u32,
        val_m: u32,
        val_n: u32,
        atom_vals: u32,
        tile_m: u32,
        tile_n: u32,
    }

    /// What CuTe says about that TiledCopy and one thread's partition.
    #[derive(Debug, Clone)]
    struct SpecInfo {
        cpy: u32,
        cpy_m: u32,
        cpy_n: u32,
        num_threads: u32,
        tiler_m: u32,
        tiler_n: u32,
        thr_layout: String,
        val_layout: String,
        layout_tv: String,
        partition: String,
    }

    // ---- The C++ side. Every call is `-> Result`: a thrown exception becomes an Err. ----
    unsafe extern "C++" {
        include!("cute_copy/bridge.h");

        /// # Safety
        /// `desc.src`/`desc.dst` address live device memory of the described extent, in the
        /// stream's context, alive until the stream has run the copy.
        unsafe fn launch_copy(desc: &CopyDesc) -> Result<()>;
        /// # Safety
        /// As for `launch_copy`.
        unsafe fn launch_tutorial(desc: &CopyDesc) -> Result<()>;
        /// # Safety
        /// `stream` is a live `CUstream` (or 0, the legacy default stream) of the current context.
        unsafe fn launch_empty(stream: u64) -> Result<()>;
        /// # Safety
        /// As for `launch_copy`.
        unsafe fn launch_baseline(desc: &CopyDesc, which: BaselineKernel) -> Result<()>;
        /// # Safety
        /// `launch.descs` holds `launch.count` descriptors in device memory of the stream's context
        /// (or is 0, and `one` is the only descriptor), sorted by `task_begin`, each addressing
        /// live device memory of its described extent (and index arrays of `items` entries), and
        /// `launch.status` is 0 or two u64 of device memory; all alive until the stream has run
        /// the launch.
        unsafe fn launch_rows(one: &RowsDesc, launch: &BatchLaunch) -> Result<()>;
        /// Warp tasks the realign kernel splits a destination row of `row_bytes` into.
        /// (The kernel's own segment rule, which `launch_rows` checks descriptors against; Rust
        /// plans with `src/realign.rs` and its tests compare the two.)
        #[allow(dead_code)] // the tests' only
        fn rows_segments(row_bytes: i64) -> Result<i64>;
        /// # Safety
        /// `desc.src` / `desc.dst` address live device memory covering every element of the two
        /// layouts, in the stream's context, alive until the stream has run the copy.
        unsafe fn launch_tensor(desc: &TensorDesc) -> Result<()>;
        /// # Safety
        /// `desc.src` / `desc.dst` address live device memory covering every element of the two
        /// layouts (of their own element types), `desc.params` is 0 or `2 * channels` f32 of
        /// device memory, in the stream's context, alive until the stream has run the copy.
        unsafe fn launch_convert(desc: &ConvertDesc) -> Result<()>;
        /// # Safety
        /// `desc` as for `launch_rows` (one descriptor), with an i32 block table.
        unsafe fn launch_baseline_gather(desc: &RowsDesc, stream: u64) -> Result<()>;
        /// # Safety
        /// Each (dst, src, size) addresses live device memory in the stream's context.
        unsafe fn launch_baseline_pieces(
            which: PiecesBaseline,
            dsts: &[u64],
            srcs: &[u64],
            sizes: &[u64],
            stream: u64,
        ) -> Result<()>;
        /// # Safety
        /// As for `launch_copy`; launches `iters` times.
        unsafe fn bare_launch_ns(desc: &CopyDesc, iters: u32) -> Result<f64>;
        /// The compiled configuration of one menu instantiation (the tests compare the families'
        /// Rust modules with it).
        #[allow(dead_code)] // the tests' only
        fn kernel_config(atom: u32, elem_bytes: u32) -> Result<KernelConfig>;
        fn tiled_copy_partition(
            spec: &SpecDesc,
            thread: u32,
            coords: &mut Vec<u32>,
        ) -> Result<SpecInfo>;
        fn runtime_device_count() -> i32;
    }
}

pub(crate) use bridge::{
    Access, BaselineKernel, BatchLaunch, ConvertDesc, ConvertKind, CopyDesc, Fault, PiecesBaseline,
    RowsDesc, Scalar, SpecDesc, SpecInfo, TensorDesc, TensorKind,
};

// SAFETY: `RowsDesc` is a cxx shared struct, `#[repr(C)]` plain integers with no padding and no
// pointers the host dereferences: its bytes are what the kernel reads from device memory.
unsafe impl cudarc::driver::DeviceRepr for RowsDesc {}
// SAFETY: every field is an integer, for which all-zero bits are a valid value.
unsafe impl cudarc::driver::ValidAsZeroBits for RowsDesc {}

/// The bytes of `descs` as the kernel reads them (little-endian host, `#[repr(C)]` layout).
pub(crate) fn rows_desc_bytes(descs: &[RowsDesc]) -> &[u8] {
    const { assert!(std::mem::size_of::<RowsDesc>() == 144) };
    // SAFETY: `RowsDesc` is a `#[repr(C)]` struct of 17 eight-byte and 2 four-byte integers (the
    // two i32 adjacent, so no padding: 144 bytes, checked above); every byte is initialised, and
    // the slice borrows `descs`.
    unsafe { std::slice::from_raw_parts(descs.as_ptr().cast::<u8>(), std::mem::size_of_val(descs)) }
}

/// Which kernel runs a descriptor.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kernel {
    /// The menu instantiation for `desc.atom` and `desc.elem_bytes`.
    Menu,
    /// The CuTe tutorial TiledCopy (f32, 32x32 tiles through shared memory).
    Tutorial,
    /// A non-CuTe baseline for benchmarks (`cpp/baselines.cu`).
    Baseline(BaselineKernel),
}

pub(crate) const FLAG_NO_PEEL: u32 = 1;

/// Enqueue one copy on `desc.stream`.
///
/// Callers (`launch.rs`, for the front doors of `copy.rs` and `tensor.rs`) build `desc` only from
/// views whose extent has been checked against their allocation, while holding the cudarc
/// `SyncOnDrop` guards of both buffers, with the stream's context bound to this thread.
pub(crate) fn launch(desc: &CopyDesc, kernel: Kernel) -> Result<(), Error> {
    // SAFETY: per the contract above, both addresses are live device memory of the described
    // extent in the stream's context, kept alive by the caller's guards until the stream work is
    // ordered after the launch; C++ re-checks shape and alignment before any kernel runs.
    let r = unsafe {
        match kernel {
            Kernel::Menu => bridge::launch_copy(desc),
            Kernel::Tutorial => bridge::launch_tutorial(desc),
            Kernel::Baseline(which) => bridge::launch_baseline(desc, which),
        }
    };
    r.map_err(Error::from_cxx)
}

/// Enqueue one launch of the realign kernel over the descriptors at `launch.descs`, or over `one`
/// when `launch.descs` is 0.
///
/// Callers (`launch.rs`, for `batch.rs`, `gather.rs` and `tensor.rs`) build the descriptors from
/// checked views (and upload them to a device buffer they keep alive with the views' buffers), and
/// hold the guards of every buffer, index array and status buffer while launching, with the
/// stream's context bound to this thread.
pub(crate) fn launch_rows(one: &RowsDesc, launch: &BatchLaunch) -> Result<(), Error> {
    // SAFETY: per the contract above, the descriptor array and every address it holds are live
    // device memory of the described extent; C++ checks the atom, width and count.
    unsafe { bridge::launch_rows(one, launch) }.map_err(Error::from_cxx)
}

/// The batch baselines: a hand-written gather kernel over `desc` (`pieces` empty), or the
/// (dst, src, size) `pieces` as `which` says. Callers hold the guards of every buffer involved, as
/// for `launch_rows`.
pub(crate) fn launch_baseline_batch(
    desc: Option<&RowsDesc>,
    which: PiecesBaseline,
    pieces: (&[u64], &[u64], &[u64]),
    stream: u64,
) -> Result<(), Error> {
    // SAFETY: per the contract above, every address is live device memory of the stated size.
    let r = unsafe {
        match desc {
            Some(d) => bridge::launch_baseline_gather(d, stream),
            None => bridge::launch_baseline_pieces(which, pieces.0, pieces.1, pieces.2, stream),
        }
    };
    r.map_err(Error::from_cxx)
}

/// Enqueue one launch of the transpose family.
///
/// Callers (`launch.rs`, for `tensor.rs`) build `desc` from views whose every element has been
/// checked to lie in their allocation, hold the guards of both buffers while launching, and bind
/// the stream's context.
pub(crate) fn launch_tensor(desc: &TensorDesc) -> Result<(), Error> {
    // SAFETY: per the contract above, both addresses cover every element of their layouts; C++
    // re-checks the atom, width, rank, modes and tile arithmetic before any kernel runs.
    unsafe { bridge::launch_tensor(desc) }.map_err(Error::from_cxx)
}

/// Launch one convert-family copy (see the bridge's contract).
pub(crate) fn launch_convert(desc: &ConvertDesc) -> Result<(), Error> {
    // SAFETY: per the contract above, both addresses cover every element of their layouts and
    // `params` every coefficient; C++ re-checks the types, rank, modes, tile and chunk arithmetic
    // before any kernel runs.
    unsafe { bridge::launch_convert(desc) }.map_err(Error::from_cxx)
}

/// The kernel's warp tasks per destination row of `row_bytes` bytes (its compiled segment rule),
/// for the tests that hold `src/realign.rs` to it.
#[cfg(test)]
pub(crate) fn rows_segments(row_bytes: i64) -> Result<i64, Error> {
    bridge::rows_segments(row_bytes).map_err(Error::from_cxx)
}

/// Mean host nanoseconds per launch when C++ launches `desc` `iters` times itself.
pub(crate) fn bare_launch_ns(desc: &CopyDesc, iters: u32) -> Result<f64, Error> {
    // SAFETY: as for `launch`: the caller built `desc` from live, pinned views.
    unsafe { bridge::bare_launch_ns(desc, iters) }.map_err(Error::from_cxx)
}

/// Enqueue an empty kernel on `stream`: the floor under any launch, for benchmarks.
pub(crate) fn launch_empty(stream: &cudarc::driver::CudaStream) -> Result<(), Error> {
    // SAFETY: `stream` is a live cudarc stream, so its handle is valid in its context, which the
    // caller has bound to this thread.
    unsafe { bridge::launch_empty(stream.cu_stream() as u64) }.map_err(Error::from_cxx)
}

/// The compiled configuration of one (atom, width) instantiation, for the tests that hold the
/// families' Rust modules to it.
#[cfg(test)]
pub(crate) fn kernel_config(atom: u32, elem_bytes: u32) -> Result<bridge::KernelConfig, Error> {
    bridge::kernel_config(atom, elem_bytes).map_err(Error::from_cxx)
}

pub(crate) fn tiled_copy_partition(
    spec: &SpecDesc,
    thread: u32,
) -> Result<(SpecInfo, Vec<u32>), Error> {
    let mut coords = Vec::new();
    let info = bridge::tiled_copy_partition(spec, thread, &mut coords).map_err(Error::from_cxx)?;
    Ok((info, coords))
}

/// Whether the CUDA driver library (libcuda) can be loaded: cudarc panics on first use without it
/// when it loads the driver at run time. Asked here rather than through cudarc's
/// `is_culib_present`, which exists only when cudarc loads the driver itself, not when another
/// crate in the program (candle) has it linked; then libcuda is in the process and found at once.
/// The names are the driver's own (`libcuda.so.1`, its development link, Windows' `nvcuda.dll`),
/// which cudarc's loader tries too.
pub(crate) fn driver_present() -> bool {
    use std::env::consts::{DLL_PREFIX, DLL_SUFFIX};
    [
        format!("{DLL_PREFIX}cuda{DLL_SUFFIX}.1"),
        format!("{DLL_PREFIX}cuda{DLL_SUFFIX}"),
        format!("{DLL_PREFIX}nvcuda{DLL_SUFFIX}"),
    ]
    .iter()
    // SAFETY: loading libcuda runs no initialiser with preconditions of ours; the handle is
    // dropped at once (the library stays loaded while cudarc or the program holds it).
    .any(|name| unsafe { libloading::Library::new(name) }.is_ok())
}

/// The CUDA runtime's device count; 0 without a driver or device.
pub(crate) fn runtime_device_count() -> i32 {
    bridge::runtime_device_count()
}

// ---- Between devices: the driver calls of src/peer.rs (peer access and the copy engine). ----

use cudarc::driver::sys as cu;
use cudarc::driver::CudaContext;

/// Whether `device` can map `peer`'s memory (`cuDeviceCanAccessPeer`).
pub(crate) fn can_access_peer(device: &CudaContext, peer: &CudaContext) -> Result<bool, Error> {
    let mut can = 0i32;
    // SAFETY: both handles come from live cudarc contexts; the driver writes one int.
    unsafe { cu::cuDeviceCanAccessPeer(&mut can, device.cu_device(), peer.cu_device()) }
        .result()?;
    Ok(can != 0)
}

/// Let kernels of `from`'s context read and write `to`'s memory (`cuCtxEnablePeerAccess` with
/// `from` current): true when enabled now or before, false when the driver refuses the pair
/// (peer access unsupported, or too many peers).
pub(crate) fn enable_peer_access(from: &CudaContext, to: &CudaContext) -> Result<bool, Error> {
    from.bind_to_thread()?;
    // SAFETY: `to` is a live primary context held by its `Arc`; the flags must be 0.
    match unsafe { cu::cuCtxEnablePeerAccess(to.cu_ctx(), 0) } {
        cu::CUresult::CUDA_SUCCESS | cu::CUresult::CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED => {
            Ok(true)
        }
        cu::CUresult::CUDA_ERROR_PEER_ACCESS_UNSUPPORTED
        | cu::CUresult::CUDA_ERROR_TOO_MANY_PEERS => Ok(false),
        e => Err(Error::Driver(cudarc::driver::DriverError(e))),
    }
}

/// One side of a copy-engine copy between contexts: its context, the address of its first row
/// and its row pitch in bytes.
#[derive(Clone, Copy, Debug)]
pub(crate) struct PeerSide<'a> {
    pub ctx: &'a CudaContext,
    pub addr: u64,
    pub pitch: u64,
}

/// Enqueue `rows` rows of `row_bytes` from `src` to `dst` on the copy engine, on `stream` (of
/// either side's context): one `cuMemcpyPeerAsync` for a single row, else one
/// `cuMemcpy3DPeerAsync` of depth 1.
///
/// Callers (`peer.rs`) build both sides from views whose extent has been checked against their
/// allocation, hold the views' pins (cudarc guards and the cross-device waits) while enqueuing,
/// and have bound `stream`'s context.
pub(crate) fn memcpy_peer(
    src: PeerSide<'_>,
    dst: PeerSide<'_>,
    row_bytes: u64,
    rows: u64,
    stream: &cudarc::driver::CudaStream,
) -> Result<(), Error> {
    if rows == 0 || row_bytes == 0 {
        return Ok(());
    }
    if rows == 1 {
        // SAFETY: per the contract above, both ranges of `row_bytes` are live device memory of
        // their contexts, kept alive and ordered by the caller's pins.
        unsafe {
            cudarc::driver::result::memcpy_peer_async(
                dst.ctx.cu_ctx(),
                dst.addr,
                src.ctx.cu_ctx(),
                src.addr,
                row_bytes as usize,
                stream.cu_stream(),
            )
        }?;
        return Ok(());
    }
    let p = cu::CUDA_MEMCPY3D_PEER {
        srcXInBytes: 0,
        srcY: 0,
        srcZ: 0,
        srcLOD: 0,
        srcMemoryType: cu::CUmemorytype::CU_MEMORYTYPE_DEVICE,
        srcHost: std::ptr::null(),
        srcDevice: src.addr,
        srcArray: std::ptr::null_mut(),
        srcContext: src.ctx.cu_ctx(),
        srcPitch: src.pitch as usize,
        srcHeight: rows as usize,
        dstXInBytes: 0,
        dstY: 0,
        dstZ: 0,
        dstLOD: 0,
        dstMemoryType: cu::CUmemorytype::CU_MEMORYTYPE_DEVICE,
        dstHost: std::ptr::null_mut(),
        dstDevice: dst.addr,
        dstArray: std::ptr::null_mut(),
        dstContext: dst.ctx.cu_ctx(),
        dstPitch: dst.pitch as usize,
        dstHeight: rows as usize,
        WidthInBytes: row_bytes as usize,
        Height: rows as usize,
        Depth: 1,
    };
    // SAFETY: per the contract above, `rows` rows of `row_bytes` at each side's pitch are live
    // device memory of its context; the descriptor is read during the call only.
    unsafe { cu::cuMemcpy3DPeerAsync(&p, stream.cu_stream()) }.result()?;
    Ok(())
}
