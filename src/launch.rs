//! The one launch path. Every front door (copy / pad, copy_tensor, Batch, gather / scatter /
//! copy_blocks) plans, checks its views' bounds and contexts, and pins its buffers; then it hands
//! the plan and the pinned device addresses here, where the overlap check, the device check, the
//! context binding and the bridge call happen once for all of them.

use std::sync::Arc;

use cudarc::driver::{CudaStream, DevicePtr};

use crate::convert::{ConvertPlan, ConvertRoute, CHANNELS_BY_VALUE};
use crate::error::{Error, Result};
use crate::ffi::{self, BatchLaunch, CopyDesc, Kernel, RowsDesc};
use crate::plan::{Plan, TensorPlan, TensorRoute};
use crate::{realign, Atom, DType, DeviceInfo};

/// The bytes one side of a launch may touch: its first byte's device address and the length of
/// its span (first element to last, pitch gaps included).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Span {
    pub addr: u64,
    pub bytes: u64,
}

/// The one overlap check: a copy whose source and destination spans share a byte is refused.
pub(crate) fn disjoint(src: Span, dst: Span) -> Result<()> {
    if src.addr < dst.addr + dst.bytes && dst.addr < src.addr + src.bytes {
        return Err(Error::Overlap);
    }
    Ok(())
}

/// The device can run `atom`, or [`Error::UnsupportedArch`].
fn check_arch(atom: Atom, device: &DeviceInfo) -> Result<()> {
    let needed = atom.min_compute_capability();
    let (major, minor) = device.compute_capability;
    if major < needed {
        return Err(Error::UnsupportedArch {
            atom,
            needed,
            major,
            minor,
        });
    }
    Ok(())
}

/// A non-empty 2D plan whose buffers are in the stream's context (checked by the caller), element
/// (0, 0) of each side at `src.addr` / `dst.addr`: check the device for the atom and overlap,
/// build the descriptor, and hand it to `f` with the stream's context bound to this thread.
pub(crate) fn with_copy_desc(
    plan: &Plan,
    src: Span,
    dst: Span,
    stream: &Arc<CudaStream>,
    f: impl FnOnce(&CopyDesc) -> Result<()>,
) -> Result<()> {
    let device = DeviceInfo::of(stream.context())?;
    check_arch(plan.atom, &device)?;
    disjoint(src, dst)?;
    stream.context().bind_to_thread()?;
    let (lean_threads, prefetch) = if plan.realigned() {
        let one = plan.rows_desc_at(src.addr, dst.addr);
        // Between devices the link paces the copy: the rules read as for an unknown L2.
        let l2 = if plan.peer.is_some() {
            0
        } else {
            device.l2_bytes
        };
        realign::by_value(&one, false, l2)
    } else {
        (0, 0)
    };
    let (s, d) = plan.launched;
    let desc = CopyDesc {
        atom: plan.atom as u32,
        elem_bytes: plan.dtype.size_bytes() as u32,
        src: src.addr,
        dst: dst.addr,
        // The shapes the kernel receives: the views' own, or their coalesced run.
        rows: s.rows as u64,
        cols: s.cols as u64,
        dst_rows: d.rows as u64,
        dst_cols: d.cols as u64,
        ld_src: s.ld as u64,
        ld_dst: d.ld as u64,
        stream: stream.cu_stream() as u64,
        flags: if plan.peel { 0 } else { ffi::FLAG_NO_PEEL },
        lean_threads,
        prefetch,
    };
    f(&desc)
}

/// Launch a non-empty 2D plan on the menu's kernel, its buffers in the stream's context (checked
/// by the caller): a realigned plan goes to the bridge as the one row descriptor it is
/// (`launch_rows`, as a kept [`Batch`](crate::Batch) does), with the same lean-kernel and prefetch
/// rules as [`with_copy_desc`]; any other plan as a `CopyDesc`.
pub(crate) fn copy_menu(plan: &Plan, src: Span, dst: Span, stream: &Arc<CudaStream>) -> Result<()> {
    if !plan.realigned() || plan.peer.is_some() {
        return copy(plan, src, dst, stream, Kernel::Menu);
    }
    let device = DeviceInfo::of(stream.context())?;
    check_arch(plan.atom, &device)?;
    disjoint(src, dst)?;
    let one = plan.rows_desc_at(src.addr, dst.addr);
    rows_on(&one, plan.dtype, 0, device.l2_bytes, stream)
}

/// Launch a non-empty 2D plan on `kernel` (the menu's, the tutorial's or a baseline).
pub(crate) fn copy(
    plan: &Plan,
    src: Span,
    dst: Span,
    stream: &Arc<CudaStream>,
    kernel: Kernel,
) -> Result<()> {
    with_copy_desc(plan, src, dst, stream, |desc| ffi::launch(desc, kernel))
}

/// Enqueue a copy-engine route between devices (src/peer.rs): element (0, 0) of each side at
/// its span's address, in its context; the views' pins held by the caller.
pub(crate) fn peer_memcpy(
    route: &crate::PeerRoute,
    (src_ctx, src): (&Arc<cudarc::driver::CudaContext>, Span),
    (dst_ctx, dst): (&Arc<cudarc::driver::CudaContext>, Span),
    stream: &Arc<CudaStream>,
) -> Result<()> {
    let Some((rows, row_bytes, src_pitch, dst_pitch)) = route.rows() else {
        return Err(Error::Unsupported(format!(
            "{route:?} is not a copy-engine route"
        )));
    };
    disjoint(src, dst)?;
    stream.context().bind_to_thread()?;
    let (s, d) = (
        ffi::PeerSide {
            ctx: src_ctx,
            addr: src.addr,
            pitch: src_pitch,
        },
        ffi::PeerSide {
            ctx: dst_ctx,
            addr: dst.addr,
            pitch: dst_pitch,
        },
    );
    ffi::memcpy_peer(s, d, row_bytes, rows, stream)
}

/// Launch one realign descriptor by value (its addresses absolute), with the device status
/// buffer at `status` (index-driven copies) or none (0); the lean kernel and the L2 prefetch as
/// the planner decides for this device.
pub(crate) fn rows(
    one: &RowsDesc,
    dtype: DType,
    status: u64,
    stream: &Arc<CudaStream>,
) -> Result<()> {
    let l2 = DeviceInfo::of(stream.context())?.l2_bytes;
    rows_on(one, dtype, status, l2, stream)
}

/// [`rows`] on a device of `l2` bytes of L2 (its facts already read by the caller).
fn rows_on(
    one: &RowsDesc,
    dtype: DType,
    status: u64,
    l2: usize,
    stream: &Arc<CudaStream>,
) -> Result<()> {
    let tasks = realign::tasks_of(one);
    if tasks == 0 {
        return Ok(());
    }
    let (lean_threads, prefetch) = realign::by_value(one, status != 0, l2);
    stream.context().bind_to_thread()?;
    // A one-descriptor batch: the descriptor goes by value when `descs` is 0 (no device array).
    let launch = BatchLaunch {
        status,
        lean_threads,
        prefetch,
        ..realign_launch(dtype, tasks, stream)
    };
    ffi::launch_rows(one, &launch)
}

/// A realign launch of `tasks` warp tasks over one descriptor by value at absolute addresses, no
/// status buffer, the general kernel without prefetch: what [`rows`] and [`batch`] start from.
fn realign_launch(dtype: DType, tasks: i64, stream: &CudaStream) -> BatchLaunch {
    BatchLaunch {
        atom: Atom::Realign128 as u32,
        elem_bytes: dtype.size_bytes() as u32,
        descs: 0,
        count: 1,
        tasks,
        status: 0,
        src_base: 0,
        dst_base: 0,
        stream: stream.cu_stream() as u64,
        lean_threads: 0,
        prefetch: 0,
    }
}

/// Launch a batch: `count` descriptors (and the block table after them) in device memory at
/// `descs`, `tasks` warp tasks in all, their addresses offsets from `bases` (source,
/// destination). Batches run the general kernel without L2 prefetch.
pub(crate) fn batch(
    descs: u64,
    count: usize,
    tasks: i64,
    dtype: DType,
    (src_base, dst_base): (u64, u64),
    stream: &Arc<CudaStream>,
) -> Result<()> {
    stream.context().bind_to_thread()?;
    let launch = BatchLaunch {
        descs,
        count: count as u64,
        src_base,
        dst_base,
        ..realign_launch(dtype, tasks, stream)
    };
    ffi::launch_rows(&RowsDesc::default(), &launch)
}

/// Launch a non-empty tensor plan whose views are pinned at `src` / `dst` (coordinate 0), in the
/// stream's context (checked by the caller).
pub(crate) fn tensor(
    plan: &TensorPlan,
    src: u64,
    dst: u64,
    stream: &Arc<CudaStream>,
) -> Result<()> {
    let e = plan.dtype.size_bytes() as u64;
    let s = Span {
        addr: src,
        bytes: plan.src.cosize()? as u64 * e,
    };
    let d = Span {
        addr: dst,
        bytes: plan.dst.cosize()? as u64 * e,
    };
    match &plan.route {
        TensorRoute::Empty => Ok(()),
        TensorRoute::Matrix(p) => copy_menu(p, s, d, stream),
        TensorRoute::Rows {
            plan: p,
            items,
            item_stride,
        } => {
            disjoint(s, d)?;
            let mut one = p.rows_desc_at(src, dst);
            one.items = *items as i64;
            one.src_item_stride = (item_stride.0 as u64 * e) as i64;
            one.dst_item_stride = (item_stride.1 as u64 * e) as i64;
            rows(&one, plan.dtype, 0, stream)
        }
        TensorRoute::Transpose(t) => {
            disjoint(s, d)?;
            stream.context().bind_to_thread()?;
            let (cs, cd) = &plan.coalesced;
            let desc = t.tensor_desc(plan.dtype, (cs, cd), (src, dst), stream.cu_stream() as u64);
            ffi::launch_tensor(&desc)
        }
    }
}

/// Launch a non-empty convert plan whose views are pinned at `src` / `dst` (coordinate 0), in the
/// stream's context (checked by the caller); an index-driven plan with its index array and status
/// buffer at `index` (`(table, status)`, device addresses in that context). Channel coefficients
/// past what the descriptor holds go up in a device array on the stream, freed in stream order
/// after the launch.
pub(crate) fn convert(
    plan: &ConvertPlan,
    src: u64,
    dst: u64,
    index: Option<(u64, u64)>,
    stream: &Arc<CudaStream>,
) -> Result<()> {
    if plan.route == ConvertRoute::Empty {
        return Ok(());
    }
    if plan.indexed.is_some() != index.is_some() {
        return Err(Error::PlanMismatch);
    }
    let s = Span {
        addr: src,
        bytes: (plan.src.cosize()? * plan.src_dtype.size_bytes()) as u64,
    };
    let d = Span {
        addr: dst,
        bytes: (plan.dst.cosize()? * plan.dst_dtype.size_bytes()) as u64,
    };
    disjoint(s, d)?;
    stream.context().bind_to_thread()?;
    let params = match &plan.coefficients {
        Some((mean, mul)) if mean.len() > CHANNELS_BY_VALUE => {
            Some(stream.clone_htod(&[mean.as_slice(), mul.as_slice()].concat())?)
        }
        _ => None,
    };
    let guard = params.as_ref().map(|p| p.device_ptr(stream));
    let desc = plan.desc(
        (src, dst),
        guard.as_ref().map_or(0, |g| g.0),
        index,
        stream.cu_stream() as u64,
    );
    ffi::launch_convert(&desc)
}
