//! candle interop (feature `candle`): candle CUDA tensors in and out, on candle's own stream and
//! storage, with no host copy.
//!
//! A candle tensor is a storage (a cudarc `CudaSlice` of its dtype, held by candle's `CudaDevice`
//! with its `Arc<CudaStream>`) and a candle `Layout` (shape, strides in elements, start offset).
//! This module reads the two as this crate's [`RawTensor`] (KV-cache pools as typed [`TensorView`]s
//! of their element width) and calls the crate's own front doors, so every check — bounds against
//! the storage, overlap, context, alignment, dtype — is the crate's; nothing is planned here.
//!
//! | candle | here |
//! | --- | --- |
//! | `t.contiguous()` | [`contiguous`]: the same result (a new row-major tensor, same dtype, shape and device; `t` itself when already contiguous), one launch of the crate's planned copy |
//! | `t.permute(dims)?.contiguous()` | [`permute`] |
//! | `dst.slice_set(src, ..)` / `copy_strided_src` into an existing tensor | [`copy_into`]: any layouts of one shape, the destination may be a view (`narrow`, `permute`, `t()`) of a larger tensor; only its elements are written |
//! | vLLM's `copy_blocks` / a KV-cache block gather | [`copy_blocks`]: `dst[pairs[k, 1]] = src[pairs[k, 0]]` for blocks `[num_blocks, ...]`, one launch, a device block table |
//! | — | [`plan_contiguous`], [`plan_copy`]: the plan and its reasons, nothing launched |
//!
//! Launches go on the destination's candle stream (`CudaDevice::cuda_stream`) and take cudarc's
//! guards on both storages, so they are ordered after candle's own work on them (and on another
//! stream's, where cudarc tracks events). Results of [`contiguous`] and [`permute`] are candle
//! custom ops ([`candle_core::CustomOp1`]): gradients pass through them as through candle's own
//! `contiguous`. [`copy_into`] and [`copy_blocks`] are in-place ops (candle's `InplaceOp*`), outside
//! autograd as candle's `slice_set` is.
//!
//! candle's dtypes are the crate's of the same name (`F8E8M0`, candle's bytes of scales, moves as
//! u8); the sub-byte `F6E2M3`, `F6E3M2` and `F4` are refused. Tensors on candle's CPU or Metal devices are refused
//! with [`Error::NotOnCuda`]; failures of candle itself (allocation, its in-place checks) arrive as
//! [`Error::Candle`].
//!
//! candle-core (feature `cuda`) links the CUDA libraries dynamically (libcuda, cuBLAS, cuBLASLt,
//! cuRAND, NVRTC, cudart): a program with this feature needs them to link and to run; README.md,
//! "candle tensors: the `candle` feature", says where this repository finds them.
//!
//! ```no_run
//! # fn main() -> Result<(), cute_copy::Error> {
//! use candle_core::{DType, Device, Tensor};
//! let dev = Device::new_cuda(0)?;
//! let x = Tensor::zeros((8, 32, 4096, 128), DType::F16, &dev)?; // [B, H, S, D]
//! let y = cute_copy::candle::permute(&x, (0, 2, 1, 3))?; // [B, S, H, D], row-major
//! println!("{}", cute_copy::candle::plan_contiguous(&x.permute((0, 2, 1, 3))?)?);
//! let z = Tensor::zeros((8, 4096, 32, 128), DType::F16, &dev)?;
//! cute_copy::candle::copy_into(&y, &z)?; // z[...] = y, on z's stream
//! # Ok(()) }
//! ```

use std::cell::RefCell;
use std::sync::{Arc, Mutex};

use candle_core::backend::{BackendDevice, BackendStorage};
use candle_core::cuda::CudaStorageSlice;
use candle_core::{
    CpuStorage, CudaStorage, CustomOp1, InplaceOp1, InplaceOp2, InplaceOp3, Shape, Storage, Tensor,
};
use cudarc::driver::{CudaStream, DevicePtr, DevicePtrMut, SyncOnDrop};

use crate::batch::BatchPlan;
use crate::device::{check_context, DeviceInfo};
use crate::error::{Error, Result};
use crate::{DType, IndexStatus, Layout, RawTensor, TensorPlan, TensorView, TensorViewMut};

/// The crate's dtype for a candle dtype: the same type (candle's `F8E4M3` is the crate's, both
/// `float8::F8E4M3`); candle's `F8E8M0` (scales, stored as bytes) moves as u8 bits. The sub-byte
/// floats (`F6E2M3`, `F6E3M2`, `F4`) are [`Error::Unsupported`].
pub fn dtype(d: candle_core::DType) -> Result<DType> {
    use candle_core::DType as C;
    Ok(match d {
        C::U8 | C::F8E8M0 => DType::U8,
        C::F8E4M3 => DType::F8E4M3,
        C::U32 => DType::U32,
        C::I16 => DType::I16,
        C::I32 => DType::I32,
        C::I64 => DType::I64,
        C::BF16 => DType::BF16,
        C::F16 => DType::F16,
        C::F32 => DType::F32,
        C::F64 => DType::F64,
        other => {
            return Err(Error::Unsupported(format!(
                "candle dtype {other:?}: cute-copy moves elements of 1, 2, 4 or 8 bytes, not sub-byte ones"
            )))
        }
    })
}

/// A candle layout as this crate reads it: `(offset, layout)`, coordinate 0 at `offset` elements
/// into the storage (candle's `start_offset`), candle's shape and strides in elements as a CuTe
/// [`Layout`]. A scalar (rank 0) is the one-element `(1):(1)`. Zero strides (candle's broadcasts)
/// are kept: a source may have them, a destination is refused by the planner.
///
/// ```
/// # fn main() -> Result<(), cute_copy::Error> {
/// let l = candle_core::Layout::contiguous_with_offset((8, 32, 4096, 128), 64).permute(&[0, 2, 1, 3])?;
/// let (offset, layout) = cute_copy::candle::layout(&l)?;
/// assert_eq!((offset, layout.to_string()), (64, "(8,4096,32,128):(16777216,128,524288,1)".into()));
/// # Ok(()) }
/// ```
pub fn layout(l: &candle_core::Layout) -> Result<(usize, Layout)> {
    let layout = if l.dims().is_empty() {
        Layout::new(&[1], &[1])?
    } else {
        Layout::new(l.dims(), l.stride())?
    };
    Ok((l.start_offset(), layout))
}

/// The plan [`contiguous`] runs for `t` (its layout into a row-major tensor of its shape), with its
/// reasons (`println!("{plan}")`); nothing is launched. For a CUDA tensor the plan is made for its
/// device's facts; for a tensor elsewhere (a CPU tensor, to look at a layout), for no device in
/// particular ([`TensorPlan::new`]). The storage is taken as 256-byte aligned, as cudarc allocates.
pub fn plan_contiguous(t: &Tensor) -> Result<TensorPlan> {
    let dst = candle_core::Layout::contiguous(t.shape());
    plan_layouts(t, t.layout(), &dst)
}

/// The plan [`copy_into`] runs for `src` into `dst`; nothing is launched (see [`plan_contiguous`]).
pub fn plan_copy(src: &Tensor, dst: &Tensor) -> Result<TensorPlan> {
    check_dtypes(src.dtype(), dst.dtype())?;
    plan_layouts(src, src.layout(), dst.layout())
}

fn plan_layouts(
    t: &Tensor,
    src: &candle_core::Layout,
    dst: &candle_core::Layout,
) -> Result<TensorPlan> {
    let dt = dtype(t.dtype())?;
    let e = dt.size_bytes();
    let ((so, sl), (d_off, dl)) = (layout(src)?, layout(dst)?);
    let offsets = ((so * e) % 256, (d_off * e) % 256);
    match t.device() {
        candle_core::Device::Cuda(dev) => {
            let info = DeviceInfo::of(dev.cuda_stream().context())?;
            TensorPlan::for_device(dt, sl, dl, offsets, &info)
        }
        _ => TensorPlan::new(dt, sl, dl, offsets),
    }
}

/// `t.contiguous()` by this crate: `t` itself (a cheap clone, as candle does) when it is already
/// row-major, else a new row-major tensor of `t`'s dtype, shape and device, written by one launch
/// of the crate's planned copy on `t`'s candle stream. Gradients pass through as through candle's
/// `contiguous`.
pub fn contiguous(t: &Tensor) -> Result<Tensor> {
    if t.is_contiguous() {
        return Ok(t.clone());
    }
    force_contiguous(t).map(|(t, _)| t)
}

/// [`contiguous`] that always copies, and returns the plan it ran.
pub fn force_contiguous(t: &Tensor) -> Result<(Tensor, TensorPlan)> {
    on_cuda("tensor", t)?;
    let outcome = Arc::new(Mutex::new(Outcome::default()));
    let op = Contiguous {
        outcome: outcome.clone(),
    };
    let res = t.apply_op1_arc(Arc::new(Box::new(op) as Box<dyn CustomOp1 + Send + Sync>));
    let taken = std::mem::take(&mut *outcome.lock().unwrap_or_else(|p| p.into_inner()));
    match (res, taken) {
        (Ok(y), Outcome { plan: Some(p), .. }) => Ok((y, p)),
        (_, Outcome { error: Some(e), .. }) => Err(e),
        (Err(e), _) => Err(Error::Candle(e)),
        (Ok(_), _) => Err(Error::Candle(candle_core::Error::Msg(
            "the contiguous op returned without a plan".into(),
        ))),
    }
}

/// `t.permute(dims)?.contiguous()`: the tensor whose mode `i` is mode `dims[i]` of `t`, row-major,
/// in one launch (candle's `permute` is a view; the copy is this crate's). `dims` as candle's
/// `permute` takes them (`&[0, 2, 1, 3]`, `(0, 2, 1, 3)`).
pub fn permute<D: candle_core::shape::Dims>(t: &Tensor, dims: D) -> Result<Tensor> {
    contiguous(&t.permute(dims)?)
}

/// `dst[...] = src`: copy `src` into the elements of `dst`, any layouts of one shape and dtype,
/// in one launch on `dst`'s candle stream; returns the plan it ran. `dst` may be a view of a larger
/// tensor (`narrow`, `permute`, `t()`): only the elements it sees are written, in candle's shared
/// storage (as candle's `slice_set`). Two views of one storage are copied when the crate finds
/// them disjoint ([`Error::Overlap`] otherwise).
pub fn copy_into(src: &Tensor, dst: &Tensor) -> Result<TensorPlan> {
    on_cuda("source", src)?;
    on_cuda("destination", dst)?;
    check_dtypes(src.dtype(), dst.dtype())?;
    let outcome = RefCell::new(Outcome::default());
    let res = if same_storage(src, dst) {
        // candle's in-place ops refuse a source that shares the destination's storage: hand over
        // the one storage and read the source through it.
        dst.inplace_op1(&CopyWithin {
            src: src.layout(),
            outcome: &outcome,
        })
    } else {
        dst.inplace_op2(src, &CopyInto { outcome: &outcome })
    };
    outcome.into_inner().plan_or(res)
}

/// Block-table copy between KV-cache pools: for each pair `k`, block `pairs[k, 0]` of `src` goes
/// to block `pairs[k, 1]` of `dst`, in one launch on `dst`'s candle stream (this crate's
/// [`crate::copy_blocks`]). A pool is `[num_blocks, ...]` (vLLM's `[num_blocks, block_size, heads,
/// head_dim]`) with each block contiguous; blocks may be any stride apart. `pairs` is an `i64` or
/// `i32` CUDA tensor of shape `[n, 2]` (or `[2n]`), contiguous and filling its storage (as
/// `Tensor::new` makes it). A negative entry skips its pair; one past its pool's last block is
/// skipped and counted in `status` (see [`index_status`]). Returns the launch's plan (its dtype is
/// the unsigned integer of the pools' width: the blocks move as bits). Blocks within one pool
/// (`src` and `dst` the same tensor, vLLM's copy-on-write) are refused as [`Error::Overlap`], as the
/// crate's [`crate::copy_blocks`] refuses any pair of pools that share bytes.
pub fn copy_blocks(
    src: &Tensor,
    dst: &Tensor,
    pairs: &Tensor,
    status: &mut IndexStatus,
) -> Result<BatchPlan> {
    on_cuda("source pool", src)?;
    on_cuda("destination pool", dst)?;
    on_cuda("block table", pairs)?;
    check_dtypes(src.dtype(), dst.dtype())?;
    let table = pairs.layout();
    let pairs_shape_ok = match pairs.dims() {
        [_, 2] => true,
        [n] => n % 2 == 0,
        _ => false,
    };
    if !pairs_shape_ok || !table.is_contiguous() || table.start_offset() != 0 {
        return Err(Error::Shape(format!(
            "a block table is a contiguous [n, 2] (or [2n]) tensor at offset 0; got shape {:?}, strides {:?}, offset {}",
            pairs.dims(),
            table.stride(),
            table.start_offset()
        )));
    }
    let outcome = RefCell::new(Outcome::default());
    let op = Blocks {
        src: src.layout(),
        outcome: &outcome,
        status: RefCell::new(status),
    };
    let res = if same_storage(src, dst) {
        // One pool (vLLM's copy-on-write): the source read through the destination's storage.
        dst.inplace_op2(pairs, &BlocksWithin(op))
    } else {
        dst.inplace_op3(src, pairs, &op)
    };
    outcome.into_inner().plan_or(res)
}

/// An [`IndexStatus`] on the stream of candle's CUDA device `device`, for [`copy_blocks`];
/// `status.check(&stream)` with the same stream ([`stream`]) waits and reports.
pub fn index_status(device: &candle_core::Device) -> Result<IndexStatus> {
    IndexStatus::new(&stream(device)?)
}

/// The cudarc stream candle's CUDA device `device` launches on (every call of this module
/// launches on its destination's).
pub fn stream(device: &candle_core::Device) -> Result<Arc<CudaStream>> {
    match device {
        candle_core::Device::Cuda(dev) => Ok(dev.cuda_stream()),
        other => Err(Error::NotOnCuda {
            what: "device",
            device: format!("{:?}", other.location()),
        }),
    }
}

fn on_cuda(what: &'static str, t: &Tensor) -> Result<()> {
    stream(t.device())
        .map(|_| ())
        .map_err(|_| Error::NotOnCuda {
            what,
            device: format!("{:?}", t.device().location()),
        })
}

/// candle's dtypes must be equal: two of them (u8 and f8e8m0) move as the same bits here.
fn check_dtypes(src: candle_core::DType, dst: candle_core::DType) -> Result<()> {
    let (s, d) = (dtype(src)?, dtype(dst)?);
    if src != dst {
        if s == d {
            return Err(Error::Unsupported(format!(
                "candle dtypes {src:?} and {dst:?}: cute-copy moves bits unchanged; convert first"
            )));
        }
        return Err(Error::DTypeMismatch { src: s, dst: d });
    }
    Ok(())
}

/// Whether two tensors share one candle storage (candle's own test is crate-private): the address
/// of the storage each read lock guards, taken one after the other.
fn same_storage(a: &Tensor, b: &Tensor) -> bool {
    let addr = |t: &Tensor| {
        let (s, _) = t.storage_and_layout();
        &*s as *const Storage as usize
    };
    addr(a) == addr(b)
}

/// What an op run inside candle leaves for its caller: the plan it ran, or this crate's error
/// (candle's op traits return candle's error, which carries only a message).
struct Outcome<P> {
    plan: Option<P>,
    error: Option<Error>,
}

impl<P> Default for Outcome<P> {
    fn default() -> Self {
        Outcome {
            plan: None,
            error: None,
        }
    }
}

impl<P> Outcome<P> {
    /// Keep `r` and hand candle a result of its own type.
    fn keep<T>(&mut self, r: Result<(T, P)>) -> candle_core::Result<T> {
        match r {
            Ok((t, p)) => {
                self.plan = Some(p);
                Ok(t)
            }
            Err(e) => {
                let msg = e.to_string();
                self.error = Some(e);
                Err(candle_core::Error::Msg(msg))
            }
        }
    }

    /// The plan, this crate's error, or candle's.
    fn plan_or(self, res: candle_core::Result<()>) -> Result<P> {
        match (res, self) {
            (_, Outcome { error: Some(e), .. }) => Err(e),
            (Err(e), _) => Err(Error::Candle(e)),
            (Ok(()), Outcome { plan: Some(p), .. }) => Ok(p),
            (Ok(()), _) => Err(Error::Candle(candle_core::Error::Msg(
                "the op returned without a plan".into(),
            ))),
        }
    }
}

/// One storage's memory pinned on the launch stream: the allocation's address and its length in
/// elements, and cudarc's guard, which orders the slice's other work around the launch (a read or
/// write event recorded when it drops).
struct Pinned<'a> {
    addr: u64,
    len: usize,
    _guard: SyncOnDrop<'a>,
}

/// Run `$body` with `$s` bound to the storage's `CudaSlice`, whatever its element type.
macro_rules! with_slice {
    ($slice:expr, $s:ident => $body:expr) => {
        match $slice {
            CudaStorageSlice::U8($s) => $body,
            CudaStorageSlice::U32($s) => $body,
            CudaStorageSlice::I16($s) => $body,
            CudaStorageSlice::I32($s) => $body,
            CudaStorageSlice::I64($s) => $body,
            CudaStorageSlice::BF16($s) => $body,
            CudaStorageSlice::F16($s) => $body,
            CudaStorageSlice::F32($s) => $body,
            CudaStorageSlice::F64($s) => $body,
            CudaStorageSlice::F8E4M3($s) => $body,
            CudaStorageSlice::F6E2M3($s) => $body,
            CudaStorageSlice::F6E3M2($s) => $body,
            CudaStorageSlice::F4($s) => $body,
            CudaStorageSlice::F8E8M0($s) => $body,
        }
    };
}

fn pin<'a>(
    what: &'static str,
    s: &'a CudaStorage,
    stream: &'a Arc<CudaStream>,
) -> Result<Pinned<'a>> {
    with_slice!(&s.slice, x => {
        check_context(what, x.context(), stream)?;
        let (addr, guard) = x.device_ptr(stream);
        Ok(Pinned { addr, len: x.len(), _guard: guard })
    })
}

fn pin_mut<'a>(
    what: &'static str,
    s: &'a mut CudaStorage,
    stream: &'a Arc<CudaStream>,
) -> Result<Pinned<'a>> {
    with_slice!(&mut s.slice, x => {
        check_context(what, x.context(), stream)?;
        let len = x.len();
        let (addr, guard) = x.device_ptr_mut(stream);
        Ok(Pinned { addr, len, _guard: guard })
    })
}

/// The raw view of a pinned storage seen through candle layout `l`. Bounds are checked by the
/// crate against the storage's length.
///
/// # Safety
/// `p` must pin a live storage of `dtype`'s width on `stream`'s context, held (candle's storage
/// lock) and pinned until the launch that uses the view has been issued.
unsafe fn raw<'a>(
    p: &Pinned<'_>,
    dtype: DType,
    l: &candle_core::Layout,
    stream: &'a Arc<CudaStream>,
) -> Result<RawTensor<'a>> {
    let (offset, layout) = layout(l)?;
    // SAFETY: forwarded to the caller.
    unsafe { RawTensor::with_layout(p.addr, p.len, dtype, offset, layout, stream) }
}

/// Copy `src` (through `sl`) into `dst` (through `dl`), both pinned by the caller.
fn copy_pinned(
    src: &Pinned<'_>,
    sl: &candle_core::Layout,
    dst: &Pinned<'_>,
    dl: &candle_core::Layout,
    dt: DType,
    stream: &Arc<CudaStream>,
) -> Result<TensorPlan> {
    // SAFETY: both sides are pinned storages of `dt`'s width on `stream`'s context (checked by
    // `pin`), held under candle's storage locks by the op that called us until we return, after
    // the launch is issued; cudarc's guards order it after the storages' earlier work.
    let (s, mut d) = unsafe { (raw(src, dt, sl, stream)?, raw(dst, dt, dl, stream)?) };
    crate::copy_tensor_raw(&s, &mut d, stream)
}

fn copy_storages(
    src: &CudaStorage,
    sl: &candle_core::Layout,
    dst: &mut CudaStorage,
    dl: &candle_core::Layout,
) -> Result<TensorPlan> {
    check_dtypes(src.dtype(), dst.dtype())?;
    let dt = dtype(dst.dtype())?;
    let stream = dst.device.cuda_stream();
    let s = pin("source", src, &stream)?;
    let d = pin_mut("destination", dst, &stream)?;
    copy_pinned(&s, sl, &d, dl, dt, &stream)
}

/// [`force_contiguous`] inside candle: a new storage of the layout's shape, written by one copy.
struct Contiguous {
    outcome: Arc<Mutex<Outcome<TensorPlan>>>,
}

impl Contiguous {
    fn run(&self, src: &CudaStorage, l: &candle_core::Layout) -> Result<(CudaStorage, TensorPlan)> {
        dtype(src.dtype())?;
        // SAFETY: every element of the new row-major storage is written by the copy below before
        // the storage is handed to anyone; if the copy fails it is dropped unread.
        let mut out = unsafe { src.device.alloc_uninit(l.shape(), src.dtype()) }?;
        let dl = candle_core::Layout::contiguous(l.shape());
        let plan = copy_storages(src, l, &mut out, &dl)?;
        Ok((out, plan))
    }
}

impl CustomOp1 for Contiguous {
    fn name(&self) -> &'static str {
        "cute-copy-contiguous"
    }

    fn cpu_fwd(
        &self,
        _: &CpuStorage,
        _: &candle_core::Layout,
    ) -> candle_core::Result<(CpuStorage, Shape)> {
        candle_core::bail!("cute-copy moves CUDA tensors only")
    }

    fn cuda_fwd(
        &self,
        storage: &CudaStorage,
        layout: &candle_core::Layout,
    ) -> candle_core::Result<(CudaStorage, Shape)> {
        let r = self.run(storage, layout);
        let mut o = self.outcome.lock().unwrap_or_else(|p| p.into_inner());
        o.keep(r).map(|s| (s, layout.shape().clone()))
    }

    /// The values are the argument's, rearranged into the same coordinates: the gradient passes.
    fn bwd(
        &self,
        _: &Tensor,
        _: &Tensor,
        grad_res: &Tensor,
    ) -> candle_core::Result<Option<Tensor>> {
        Ok(Some(grad_res.clone()))
    }
}

/// [`copy_into`] between two storages.
struct CopyInto<'o> {
    outcome: &'o RefCell<Outcome<TensorPlan>>,
}

impl InplaceOp2 for CopyInto<'_> {
    fn name(&self) -> &'static str {
        "cute-copy-copy-into"
    }

    fn cpu_fwd(
        &self,
        _: &mut CpuStorage,
        _: &candle_core::Layout,
        _: &CpuStorage,
        _: &candle_core::Layout,
    ) -> candle_core::Result<()> {
        candle_core::bail!("cute-copy moves CUDA tensors only")
    }

    fn cuda_fwd(
        &self,
        dst: &mut CudaStorage,
        dl: &candle_core::Layout,
        src: &CudaStorage,
        sl: &candle_core::Layout,
    ) -> candle_core::Result<()> {
        let r = copy_storages(src, sl, dst, dl).map(|p| ((), p));
        self.outcome.borrow_mut().keep(r)
    }
}

/// [`copy_into`] within one storage: the source read through the destination's storage.
struct CopyWithin<'a> {
    src: &'a candle_core::Layout,
    outcome: &'a RefCell<Outcome<TensorPlan>>,
}

impl InplaceOp1 for CopyWithin<'_> {
    fn name(&self) -> &'static str {
        "cute-copy-copy-into"
    }

    fn cpu_fwd(&self, _: &mut CpuStorage, _: &candle_core::Layout) -> candle_core::Result<()> {
        candle_core::bail!("cute-copy moves CUDA tensors only")
    }

    fn cuda_fwd(&self, st: &mut CudaStorage, dl: &candle_core::Layout) -> candle_core::Result<()> {
        let r = (|| {
            let dt = dtype(st.dtype())?;
            let stream = st.device.cuda_stream();
            let p = pin_mut("destination", st, &stream)?;
            copy_pinned(&p, self.src, &p, dl, dt, &stream)
        })();
        self.outcome.borrow_mut().keep(r.map(|p| ((), p)))
    }
}

/// The matrix reading of a pool `[num_blocks, ...]` whose blocks are each contiguous: one row a
/// block, `(num_blocks, block elements):(block stride, 1)`, at candle's start offset.
fn pool_rows(what: &str, l: &candle_core::Layout) -> Result<(usize, Layout)> {
    let (dims, strides) = (l.dims(), l.stride());
    let Some((&blocks, _)) = dims.split_first() else {
        return Err(Error::Shape(format!(
            "the {what} must have a block mode: it is a scalar"
        )));
    };
    let mut cols = 1usize;
    for m in (1..dims.len()).rev() {
        if dims[m] != 1 && strides[m] != cols {
            return Err(Error::Shape(format!(
                "each block of the {what} must be contiguous: shape {dims:?}, strides {strides:?}"
            )));
        }
        cols = cols
            .checked_mul(dims[m])
            .ok_or_else(|| Error::Overflow(format!("blocks of {dims:?}")))?;
    }
    // One block (or none): its stride never multiplies anything.
    let ld = if blocks <= 1 { cols } else { strides[0] };
    Ok((
        l.start_offset(),
        Layout::matrix(blocks, cols, ld.max(cols))?,
    ))
}

/// [`copy_blocks`] inside candle: the pools as matrices of one block a row, moved as the bits of
/// their width.
struct Blocks<'a> {
    src: &'a candle_core::Layout,
    outcome: &'a RefCell<Outcome<BatchPlan>>,
    status: RefCell<&'a mut IndexStatus>,
}

/// Launch one typed block copy of `$T`-wide elements over two pinned pools.
macro_rules! by_width {
    ($bytes:expr, $T:ident => $body:expr) => {
        match $bytes {
            1 => {
                type $T = u8;
                $body
            }
            2 => {
                type $T = u16;
                $body
            }
            4 => {
                type $T = u32;
                $body
            }
            _ => {
                type $T = u64;
                $body
            }
        }
    };
}

impl Blocks<'_> {
    fn run(
        &self,
        src: Option<&CudaStorage>,
        dst: &mut CudaStorage,
        dl: &candle_core::Layout,
        pairs: &CudaStorage,
    ) -> Result<BatchPlan> {
        let dt = dtype(dst.dtype())?;
        if let Some(src) = src {
            check_dtypes(src.dtype(), dst.dtype())?;
        }
        let stream = dst.device.cuda_stream();
        let (so, sm) = pool_rows("source pool", self.src)?;
        let (d_off, dm) = pool_rows("destination pool", dl)?;
        let mut status = self.status.borrow_mut();
        let d = pin_mut("destination pool", dst, &stream)?;
        let s = match src {
            Some(src) => Some(pin("source pool", src, &stream)?),
            None => None, // read through the destination's storage
        };
        let s = s.as_ref().unwrap_or(&d);
        by_width!(dt.size_bytes(), T => {
            // SAFETY: both pools are pinned storages on `stream`'s context (checked by `pin`), of
            // `dt`'s width, at least `len` elements; candle's storage locks are held by the op
            // until we return, after the launch is issued. The views are bounds-checked here, and
            // the crate refuses pools that overlap (one storage read and written).
            let (sv, mut dv) = unsafe {
                (
                    TensorView::<T>::from_raw_layout(s.addr, s.len, so, sm, &stream)?,
                    TensorViewMut::<T>::from_raw_layout(d.addr, d.len, d_off, dm, &stream)?,
                )
            };
            match &pairs.slice {
                CudaStorageSlice::I64(ix) => crate::copy_blocks(&sv, &mut dv, 1, ix, &mut status, &stream),
                CudaStorageSlice::I32(ix) => crate::copy_blocks(&sv, &mut dv, 1, ix, &mut status, &stream),
                _ => Err(Error::Unsupported(format!(
                    "a block table of {:?}: i64 or i32 only",
                    pairs.dtype()
                ))),
            }
        })
    }
}

impl InplaceOp3 for Blocks<'_> {
    fn name(&self) -> &'static str {
        "cute-copy-copy-blocks"
    }

    fn cpu_fwd(
        &self,
        _: &mut CpuStorage,
        _: &candle_core::Layout,
        _: &CpuStorage,
        _: &candle_core::Layout,
        _: &CpuStorage,
        _: &candle_core::Layout,
    ) -> candle_core::Result<()> {
        candle_core::bail!("cute-copy moves CUDA tensors only")
    }

    fn cuda_fwd(
        &self,
        dst: &mut CudaStorage,
        dl: &candle_core::Layout,
        src: &CudaStorage,
        _: &candle_core::Layout,
        pairs: &CudaStorage,
        _: &candle_core::Layout,
    ) -> candle_core::Result<()> {
        let r = self.run(Some(src), dst, dl, pairs);
        self.outcome.borrow_mut().keep(r.map(|p| ((), p)))
    }
}

/// [`Blocks`] within one pool: the source read through the destination's storage.
struct BlocksWithin<'a>(Blocks<'a>);

impl InplaceOp2 for BlocksWithin<'_> {
    fn name(&self) -> &'static str {
        "cute-copy-copy-blocks"
    }

    fn cpu_fwd(
        &self,
        _: &mut CpuStorage,
        _: &candle_core::Layout,
        _: &CpuStorage,
        _: &candle_core::Layout,
    ) -> candle_core::Result<()> {
        candle_core::bail!("cute-copy moves CUDA tensors only")
    }

    fn cuda_fwd(
        &self,
        dst: &mut CudaStorage,
        dl: &candle_core::Layout,
        pairs: &CudaStorage,
        _: &candle_core::Layout,
    ) -> candle_core::Result<()> {
        let r = self.0.run(None, dst, dl, pairs);
        self.0.outcome.borrow_mut().keep(r.map(|p| ((), p)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use candle_core::{DType as C, Device, Tensor};

    fn cpu(shape: &[usize], dt: C) -> Tensor {
        Tensor::zeros(shape, dt, &Device::Cpu).unwrap()
    }

    /// candle's start offset, shape and strides (in elements) are the crate's offset and layout,
    /// through permutes, transposes, narrows and broadcasts.
    #[test]
    fn candle_layouts_read_as_cute_layouts_with_their_offsets() {
        let x = cpu(&[8, 32, 64, 16], C::F16);
        let cases = [
            (
                x.permute((0, 2, 1, 3)).unwrap(),
                0,
                "(8,64,32,16):(32768,16,1024,1)",
            ),
            (x.t().unwrap(), 0, "(8,32,16,64):(32768,1024,1,16)"),
            (
                x.narrow(2, 5, 50).unwrap(),
                80,
                "(8,32,50,16):(32768,1024,16,1)",
            ),
            (
                x.narrow(1, 3, 4).unwrap().narrow(3, 1, 7).unwrap(),
                3 * 1024 + 1,
                "(8,4,64,7):(32768,1024,16,1)",
            ),
            (
                cpu(&[1, 5], C::F32).broadcast_as((3, 5)).unwrap(),
                0,
                "(3,5):(0,1)",
            ),
            (Tensor::new(3f32, &Device::Cpu).unwrap(), 0, "(1):(1)"),
        ];
        for (t, offset, want) in cases {
            let (o, l) = layout(t.layout()).unwrap();
            assert_eq!(
                (o, l.to_string()),
                (offset, want.to_string()),
                "{:?}",
                t.layout()
            );
        }
    }

    #[test]
    fn candle_dtypes_map_to_the_crate_dtypes_of_their_width() {
        let pairs = [
            (C::U8, DType::U8),
            (C::U32, DType::U32),
            (C::I16, DType::I16),
            (C::I32, DType::I32),
            (C::I64, DType::I64),
            (C::BF16, DType::BF16),
            (C::F16, DType::F16),
            (C::F32, DType::F32),
            (C::F64, DType::F64),
            (C::F8E4M3, DType::F8E4M3),
            (C::F8E8M0, DType::U8),
        ];
        for (c, d) in pairs {
            assert_eq!(dtype(c).unwrap(), d, "{c:?}");
            assert_eq!(c.size_in_bytes(), d.size_bytes(), "{c:?}");
        }
        for c in [C::F6E2M3, C::F6E3M2, C::F4] {
            assert!(matches!(dtype(c), Err(Error::Unsupported(_))), "{c:?}");
        }
        assert!(matches!(
            check_dtypes(C::U8, C::F8E8M0),
            Err(Error::Unsupported(_))
        ));
        assert!(matches!(
            check_dtypes(C::F16, C::BF16),
            Err(Error::DTypeMismatch {
                src: DType::F16,
                dst: DType::BF16
            })
        ));
    }

    /// The plan of a candle permute is the crate's plan of the same layouts: a head permute takes
    /// the rows route, a transpose the transpose tile, with no device needed.
    #[test]
    fn plans_of_candle_views_are_the_crate_plans_of_their_layouts() {
        let x = cpu(&[8, 32, 64, 128], C::F16);
        let p = plan_contiguous(&x.permute((0, 2, 1, 3)).unwrap()).unwrap();
        let direct = TensorPlan::new(
            DType::F16,
            "(8,64,32,128):(262144,128,8192,1)".parse().unwrap(),
            Layout::row_major(&[8, 64, 32, 128]).unwrap(),
            (0, 0),
        )
        .unwrap();
        assert_eq!(p.to_string(), direct.to_string());
        assert_eq!(p.bytes_moved(), 2 * 8 * 32 * 64 * 128 * 2);
        let t = plan_contiguous(&cpu(&[512, 256], C::F32).t().unwrap()).unwrap();
        assert!(matches!(t.route, crate::TensorRoute::Transpose(_)), "{t}");
        // A narrow's start offset is the source's byte offset modulo 256.
        let n = plan_contiguous(&cpu(&[64, 1024], C::U8).narrow(1, 3, 1000).unwrap()).unwrap();
        assert_eq!(n.offset_bytes, (3, 0));
        assert!(matches!(
            plan_copy(&cpu(&[4, 4], C::F32), &cpu(&[4, 5], C::F32)),
            Err(Error::LayoutMismatch { .. })
        ));
    }

    #[test]
    fn pools_read_as_one_block_a_row() {
        let pool = candle_core::Layout::contiguous((4096, 16, 8, 128));
        let (o, m) = pool_rows("pool", &pool).unwrap();
        assert_eq!((o, m.to_string()), (0, "(4096,16384):(16384,1)".into()));
        // Blocks 2 apart in a larger allocation (every other block), at an offset.
        let strided = candle_core::Layout::new(
            (10, 16, 8, 128).into(),
            vec![2 * 16384, 1024, 128, 1],
            16384,
        );
        let (o, m) = pool_rows("pool", &strided).unwrap();
        assert_eq!((o, m.to_string()), (16384, "(10,16384):(32768,1)".into()));
        let transposed = pool.permute(&[0, 2, 1, 3]).unwrap();
        assert!(matches!(
            pool_rows("pool", &transposed),
            Err(Error::Shape(_))
        ));
    }

    /// CPU (and Metal) tensors are refused by name before anything reaches candle's ops.
    #[test]
    fn tensors_off_cuda_are_refused_with_their_device() {
        let x = cpu(&[4, 6], C::F32);
        match contiguous(&x.t().unwrap()) {
            Err(Error::NotOnCuda { what, device }) => {
                assert_eq!(what, "tensor");
                assert_eq!(device, "Cpu");
            }
            other => panic!("{other:?}"),
        }
        assert!(matches!(
            copy_into(&x, &x),
            Err(Error::NotOnCuda { what: "source", .. })
        ));
        // Already row-major: candle's `contiguous` returns the tensor itself, so does this one.
        assert_eq!(contiguous(&x).unwrap().id(), x.id());
    }
}
