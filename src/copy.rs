//! The calls users make: copy and pad between device matrix views, on a stream.
//!
//! Every check happens here, in Rust, before anything crosses the bridge: shapes, extents,
//! dtypes, contexts, overlap, atom legality and alignment. A launch is stream-ordered: it returns
//! once the kernel is enqueued, and the cudarc guards of both buffers are held until then.

use std::sync::Arc;

use cudarc::driver::{CudaContext, CudaStream};

use crate::device::check_context;
use crate::error::{Error, Result};
use crate::ffi::{self, Kernel};
use crate::launch::Span;
use crate::peer::{route_plan, PeerRoute, PeerShape};
use crate::plan::{Operand, Operation, Plan};
use crate::view::{Geometry, MatrixView, MatrixViewMut, RawMatrix};
use crate::{Atom, DType, DeviceInfo, Element};

/// One side of a copy, as planning and launching see it.
pub(crate) struct Side<'a> {
    geo: Geometry,
    /// Address of the allocation's start when known (raw memory), else 0 (cudarc buffers are
    /// 256-byte aligned, which is all alignment planning needs).
    alloc_base: u64,
    ctx: &'a Arc<CudaContext>,
}

impl Side<'_> {
    fn operand(&self, dtype: DType) -> Operand {
        let offset_bytes =
            (self.alloc_base as usize % 256 + self.geo.offset * dtype.size_bytes()) % 256;
        Operand {
            rows: self.geo.rows,
            cols: self.geo.cols,
            ld: self.geo.ld,
            offset_bytes,
        }
    }
}

pub(crate) fn side_of<'a, T: Element>(v: &'a MatrixView<'_, T>) -> Result<Side<'a>> {
    Ok(Side {
        geo: v.geometry()?,
        alloc_base: v.alloc_base(),
        ctx: v.context(),
    })
}

pub(crate) fn side_of_mut<'a, T: Element>(v: &'a MatrixViewMut<'_, T>) -> Result<Side<'a>> {
    Ok(Side {
        geo: v.geometry()?,
        alloc_base: v.alloc_base(),
        ctx: v.context(),
    })
}

/// The plan of a copy or pad between `src` and `dst` launched on a stream of `on`: the device
/// facts are `on`'s (asked once per device, then kept), and a copy between devices carries its
/// route (src/peer.rs).
pub(crate) fn make_plan(
    dtype: DType,
    src: &Side,
    dst: &Side,
    atom: Option<Atom>,
    want: Option<Operation>,
    on: &Arc<CudaContext>,
) -> Result<Plan> {
    src.geo.check_extent()?;
    dst.geo.check_extent()?;
    let device = DeviceInfo::of(on)?;
    let mut plan = Plan::build(
        dtype,
        src.operand(dtype),
        dst.operand(dtype),
        atom,
        None,
        Some(device),
    )?;
    if want == Some(Operation::Copy) && plan.operation != Operation::Copy {
        return Err(Error::ShapeMismatch {
            src: (src.geo.rows, src.geo.cols),
            dst: (dst.geo.rows, dst.geo.cols),
            what: "a copy needs equal shapes (use pad for a larger destination)",
        });
    }
    route_plan(&mut plan, src.ctx, dst.ctx, on)?;
    Ok(plan)
}

/// The plan a copy (equal shapes) or pad (larger `dst`) of `src` into `dst` would run, on `atom`
/// if given, else the widest legal one. Nothing is launched. Views on two devices are planned for
/// a stream of the source's device (the copy pushes; see [`PeerRoute`]).
pub fn plan<T: Element>(
    src: &MatrixView<'_, T>,
    dst: &MatrixViewMut<'_, T>,
    atom: Option<Atom>,
) -> Result<Plan> {
    let s = side_of(src)?;
    make_plan(T::DTYPE, &s, &side_of_mut(dst)?, atom, None, s.ctx)
}

/// Copy `src` into `dst` (same shape) on the widest legal atom. Returns the plan it ran.
///
/// `src` and `dst` may be on two devices of one host, `stream` on either: a contiguous or pitched
/// copy then goes by the copy engine, any other by the plan's kernel reading or writing the other
/// device's memory (peer access, enabled once per pair), as the plan's [`PeerRoute`] says. The
/// other device's buffer is ordered as cudarc orders a buffer's users: the copy waits for its
/// pending work and its later users wait for the copy (by its events; with cudarc's event
/// tracking off, by its own stream, which then waits for the copy).
///
/// ```no_run
/// # fn main() -> Result<(), cute_copy::Error> {
/// let stream = cute_copy::stream(0)?;
/// let src = cute_copy::DeviceMatrix::<half::f16>::zeros(&stream, 16384, 16376, 16384)?;
/// let mut dst = cute_copy::DeviceMatrix::<half::f16>::zeros(&stream, 16384, 16376, 16384)?;
/// let plan = cute_copy::copy(&src.view(), &mut dst.view_mut(), &stream)?;
/// assert_eq!(plan.atom, cute_copy::Atom::Universal128);
/// # Ok(()) }
/// ```
pub fn copy<T: Element>(
    src: &MatrixView<'_, T>,
    dst: &mut MatrixViewMut<'_, T>,
    stream: &Arc<CudaStream>,
) -> Result<Plan> {
    run_typed(src, dst, stream, None, Some(Operation::Copy))
}

/// Copy on an explicitly chosen atom; an atom illegal for these buffers is an error before launch.
///
/// ```no_run
/// # fn main() -> Result<(), cute_copy::Error> {
/// use cute_copy::{Atom, DeviceMatrix, Error};
/// let stream = cute_copy::stream(0)?;
/// let src = DeviceMatrix::<half::f16>::zeros(&stream, 8, 130, 130)?; // row pitch 260 B
/// let mut dst = DeviceMatrix::<half::f16>::zeros(&stream, 8, 130, 136)?;
/// let e = cute_copy::copy_with(Atom::Universal128, &src.view(), &mut dst.view_mut(), &stream);
/// assert!(matches!(e, Err(Error::Misaligned { what: "source row pitch", value: 260, .. })));
/// cute_copy::copy_with(Atom::CpAsync32, &src.view(), &mut dst.view_mut(), &stream)?;
/// # Ok(()) }
/// ```
pub fn copy_with<T: Element>(
    atom: Atom,
    src: &MatrixView<'_, T>,
    dst: &mut MatrixViewMut<'_, T>,
    stream: &Arc<CudaStream>,
) -> Result<Plan> {
    run_typed(src, dst, stream, Some(atom), Some(Operation::Copy))
}

/// Pad: copy `src` into the top-left of the larger `dst` and write zeros to the rest of `dst`, in
/// one launch. (A copy into a sub-view of `dst` leaves the rest untouched instead.)
///
/// ```no_run
/// # fn main() -> Result<(), cute_copy::Error> {
/// let stream = cute_copy::stream(0)?;
/// let src = cute_copy::DeviceMatrix::<f32>::zeros(&stream, 1000, 1000, 1000)?;
/// let mut dst = cute_copy::DeviceMatrix::<f32>::zeros(&stream, 1024, 1024, 1024)?;
/// let plan = cute_copy::pad(&src.view(), &mut dst.view_mut(), &stream)?;
/// assert_eq!(plan.operation, cute_copy::Operation::Pad);
/// # Ok(()) }
/// ```
pub fn pad<T: Element>(
    src: &MatrixView<'_, T>,
    dst: &mut MatrixViewMut<'_, T>,
    stream: &Arc<CudaStream>,
) -> Result<Plan> {
    run_typed(src, dst, stream, None, None)
}

/// Pad on an explicitly chosen atom (a Universal* or CpAsyncZfill* atom).
///
/// ```no_run
/// # fn main() -> Result<(), cute_copy::Error> {
/// let stream = cute_copy::stream(0)?;
/// let src = cute_copy::DeviceMatrix::<u8>::zeros(&stream, 100, 100, 112)?;
/// let mut dst = cute_copy::DeviceMatrix::<u8>::zeros(&stream, 128, 128, 128)?;
/// cute_copy::pad_with(cute_copy::Atom::CpAsyncZfill128, &src.view(), &mut dst.view_mut(), &stream)?;
/// # Ok(()) }
/// ```
pub fn pad_with<T: Element>(
    atom: Atom,
    src: &MatrixView<'_, T>,
    dst: &mut MatrixViewMut<'_, T>,
    stream: &Arc<CudaStream>,
) -> Result<Plan> {
    run_typed(src, dst, stream, Some(atom), None)
}

/// Run a plan made by [`plan`] for these views, as it stands: its atom, and its `peel` setting
/// (`peel = false` predicates every tile, to measure what the unpredicated interior path saves).
///
/// ```no_run
/// # fn main() -> Result<(), cute_copy::Error> {
/// let stream = cute_copy::stream(0)?;
/// let src = cute_copy::DeviceMatrix::<f32>::zeros(&stream, 4095, 4095, 4096)?;
/// let mut dst = cute_copy::DeviceMatrix::<f32>::zeros(&stream, 4095, 4095, 4096)?;
/// let mut plan = cute_copy::plan(&src.view(), &dst.view_mut(), None)?;
/// println!("{plan}");
/// plan.peel = false;
/// cute_copy::launch(&plan, &src.view(), &mut dst.view_mut(), &stream)?;
/// # Ok(()) }
/// ```
pub fn launch<T: Element>(
    plan: &Plan,
    src: &MatrixView<'_, T>,
    dst: &mut MatrixViewMut<'_, T>,
    stream: &Arc<CudaStream>,
) -> Result<()> {
    // A plan is a function of the dtype and the two operands (shape, leading dimension, offset
    // modulo 256 bytes), and so is every legality check it passed: views with the same three are
    // views it was made for, with no planning again (the kept plan's whole point).
    // Each view's geometry is read once, here, and handed on to the launch.
    let (s, d) = (side_of(src)?, side_of_mut(dst)?);
    s.geo.check_extent()?;
    d.geo.check_extent()?;
    if (T::DTYPE, s.operand(T::DTYPE), d.operand(T::DTYPE)) != (plan.dtype, plan.src, plan.dst) {
        return Err(Error::PlanMismatch);
    }
    // Between devices, the route too: a plan for a stream of the other device is another plan.
    let route = match s.ctx == d.ctx {
        true => None,
        false => PeerRoute::of(s.ctx, d.ctx, stream.context(), PeerShape::of_plan(plan))?,
    };
    if route != plan.peer {
        return Err(Error::PlanMismatch);
    }
    let geos = (s.geo, d.geo);
    enqueue_at(plan, geos, src, dst, stream, Kernel::Menu)
}

fn run_typed<T: Element>(
    src: &MatrixView<'_, T>,
    dst: &mut MatrixViewMut<'_, T>,
    stream: &Arc<CudaStream>,
    atom: Option<Atom>,
    want: Option<Operation>,
) -> Result<Plan> {
    let (s, d) = (side_of(src)?, side_of_mut(dst)?);
    let plan = make_plan(T::DTYPE, &s, &d, atom, want, stream.context())?;
    let geos = (s.geo, d.geo);
    enqueue_at(&plan, geos, src, dst, stream, Kernel::Menu)?;
    Ok(plan)
}

/// The CuTe tutorial TiledCopy (f32, thread layout (32,4), 32x32 tiles staged through shared
/// memory). Rows and cols must be multiples of 32.
pub fn tutorial_copy(
    src: &MatrixView<'_, f32>,
    dst: &mut MatrixViewMut<'_, f32>,
    stream: &Arc<CudaStream>,
) -> Result<()> {
    let plan = make_plan(
        DType::F32,
        &side_of(src)?,
        &side_of_mut(dst)?,
        Some(Atom::Universal),
        Some(Operation::Copy),
        stream.context(),
    )?;
    let (rows, cols) = (plan.src.rows, plan.src.cols);
    if rows % 32 != 0 || cols % 32 != 0 {
        return Err(Error::Unsupported(format!(
            "the tutorial copy needs rows and cols that are multiples of 32, got {rows} x {cols}"
        )));
    }
    enqueue_typed(&plan, src, dst, stream, Kernel::Tutorial)
}

/// The Rust-side cost of a launch, against C++: returns (Rust ns per `copy`-equivalent launch of
/// `plan`, C++ ns per bare launch of the same descriptor), each over `iters` back-to-back launches
/// with no synchronisation in between. For the launch-overhead benchmark.
pub fn launch_overhead_ns<T: Element>(
    plan: &Plan,
    src: &MatrixView<'_, T>,
    dst: &mut MatrixViewMut<'_, T>,
    stream: &Arc<CudaStream>,
    iters: u32,
) -> Result<(f64, f64)> {
    let t0 = std::time::Instant::now();
    for _ in 0..iters {
        run_typed(src, dst, stream, Some(plan.atom), None)?;
    }
    let rust_ns = t0.elapsed().as_nanos() as f64 / iters.max(1) as f64;
    let mut bare = 0.0;
    let geos = (src.geometry()?, dst.geometry()?);
    pinned(plan, geos, src, dst, stream, |s, d| {
        crate::launch::with_copy_desc(plan, s, d, stream, |desc| {
            bare = ffi::bare_launch_ns(desc, iters)?;
            Ok(())
        })
    })?;
    Ok((rust_ns, bare))
}

/// [`copy`] between run-time-typed views ([`RawMatrix`]), for interop with code whose element type
/// is only known at run time (a framework's tensor, say). Different dtypes on the two sides are
/// [`Error::DTypeMismatch`]; `atom` as in [`copy_with`], `None` for the widest legal one.
pub fn copy_raw(
    src: &RawMatrix<'_>,
    dst: &mut RawMatrix<'_>,
    atom: Option<Atom>,
    stream: &Arc<CudaStream>,
) -> Result<Plan> {
    run_raw(src, dst, atom, Some(Operation::Copy), stream)
}

/// [`pad`] for untyped views.
pub fn pad_raw(
    src: &RawMatrix<'_>,
    dst: &mut RawMatrix<'_>,
    atom: Option<Atom>,
    stream: &Arc<CudaStream>,
) -> Result<Plan> {
    run_raw(src, dst, atom, None, stream)
}

fn run_raw(
    src: &RawMatrix<'_>,
    dst: &mut RawMatrix<'_>,
    atom: Option<Atom>,
    want: Option<Operation>,
    stream: &Arc<CudaStream>,
) -> Result<Plan> {
    if src.dtype() != dst.dtype() {
        return Err(Error::DTypeMismatch {
            src: src.dtype(),
            dst: dst.dtype(),
        });
    }
    let s = Side {
        geo: src.geometry()?,
        alloc_base: src.ptr(),
        ctx: src.context(),
    };
    let d = Side {
        geo: dst.geometry()?,
        alloc_base: dst.ptr(),
        ctx: dst.context(),
    };
    let plan = make_plan(src.dtype(), &s, &d, atom, want, stream.context())?;
    if plan.blocks() == 0 {
        return Ok(plan);
    }
    let e = src.dtype().size_bytes();
    let at = |g: &Geometry, ptr: u64| g.span_at(ptr + (g.offset * e) as u64, e);
    let (ss, ds) = (at(&s.geo, src.ptr())?, at(&d.geo, dst.ptr())?);
    match &plan.peer {
        // Raw memory of another device: the caller orders it (the constructors' contract).
        Some(route) if route.copy_engine() => {
            crate::launch::peer_memcpy(route, (s.ctx, ss), (d.ctx, ds), stream)?
        }
        Some(_) => crate::launch::copy(&plan, ss, ds, stream, Kernel::Menu)?,
        None => {
            check_contexts(s.ctx, d.ctx, stream)?;
            crate::launch::copy_menu(&plan, ss, ds, stream)?
        }
    }
    Ok(plan)
}

/// Pin both typed views (holding cudarc's guards until the launch is enqueued) and launch.
pub(crate) fn enqueue_typed<T: Element>(
    plan: &Plan,
    src: &MatrixView<'_, T>,
    dst: &mut MatrixViewMut<'_, T>,
    stream: &Arc<CudaStream>,
    kernel: Kernel,
) -> Result<()> {
    let geos = (src.geometry()?, dst.geometry()?);
    enqueue_at(plan, geos, src, dst, stream, kernel)
}

/// [`enqueue_typed`] with both views' geometry already read (by the caller's checks).
fn enqueue_at<T: Element>(
    plan: &Plan,
    geos: (Geometry, Geometry),
    src: &MatrixView<'_, T>,
    dst: &mut MatrixViewMut<'_, T>,
    stream: &Arc<CudaStream>,
    kernel: Kernel,
) -> Result<()> {
    pinned(plan, geos, src, dst, stream, |s, d| match kernel {
        Kernel::Menu => crate::launch::copy_menu(plan, s, d, stream),
        other => crate::launch::copy(plan, s, d, stream, other),
    })
}

/// Check contexts, pin both typed views (their geometry `geos`), and hand the spans of element
/// (0, 0) of each side to `f` while the guards are held; a copy-engine route between devices is
/// enqueued here.
fn pinned<T: Element>(
    plan: &Plan,
    (sg, dg): (Geometry, Geometry),
    src: &MatrixView<'_, T>,
    dst: &mut MatrixViewMut<'_, T>,
    stream: &Arc<CudaStream>,
    f: impl FnOnce(Span, Span) -> Result<()>,
) -> Result<()> {
    if plan.blocks() == 0 {
        return Ok(());
    }
    let e = plan.dtype.size_bytes();
    let Some(route) = &plan.peer else {
        check_contexts(src.context(), dst.context(), stream)?;
        let src_pin = src.pin(stream);
        let dst_pin = dst.pin(stream);
        return f(sg.span_at(src_pin.addr, e)?, dg.span_at(dst_pin.addr, e)?);
    };
    // Between devices: the route was made for these contexts and this stream (make_plan, or
    // launch's check); the pins order both buffers' own streams around the launch.
    let (src_ctx, dst_ctx) = (src.context().clone(), dst.context().clone());
    let src_pin = src.pin_on(stream)?;
    let dst_pin = dst.pin_on(stream)?;
    let (s, d) = (sg.span_at(src_pin.addr, e)?, dg.span_at(dst_pin.addr, e)?);
    if route.copy_engine() {
        crate::launch::peer_memcpy(route, (&src_ctx, s), (&dst_ctx, d), stream)
    } else {
        f(s, d)
    }
}

/// Both views' buffers belong to the stream's context (the one check, [`check_context`], per side).
fn check_contexts(
    src: &Arc<CudaContext>,
    dst: &Arc<CudaContext>,
    stream: &Arc<CudaStream>,
) -> Result<()> {
    check_context("source", src, stream)?;
    check_context("destination", dst, stream)
}
