//! The calls users make: copy and pad between device matrix views, on a stream.
//!
//! Every check happens here, in Rust, before anything crosses the bridge: shapes, extents,
//! contexts, overlap, atom legality and alignment. A launch is stream-ordered: it returns once the
//! kernel is enqueued, and the cudarc guards of both buffers are held until then.

use std::sync::Arc;

use cudarc::driver::CudaStream;

use crate::error::{Error, Result};
use crate::ffi::{self, CopyDesc, Kernel};
use crate::matrix::{MatrixView, MatrixViewMut};
use crate::plan::{Operand, Operation, Plan};
use crate::{Atom, Element};

fn operand<T>(rows: usize, cols: usize, ld: usize, base: u64, offset: usize) -> Operand {
    let offset_bytes = (base as usize % 256 + offset * std::mem::size_of::<T>()) % 256;
    Operand {
        rows,
        cols,
        ld,
        offset_bytes,
    }
}

/// The plan a copy or pad of `src` into `dst` would run (no launch, no GPU needed beyond the views).
pub fn plan<T: Element>(
    src: &MatrixView<'_, T>,
    dst: &MatrixViewMut<'_, T>,
    atom: Option<Atom>,
) -> Result<Plan> {
    let (s, d) = (src.geometry(), dst.geometry());
    s.check_extent()?;
    d.check_extent()?;
    let so = operand::<T>(s.rows, s.cols, s.ld, src.alloc_base(), s.offset);
    let dop = operand::<T>(d.rows, d.cols, d.ld, dst.alloc_base(), d.offset);
    Plan::new(T::DTYPE, so, dop, atom, None)
}

/// Copy `src` into `dst` (same shape) on the widest legal atom. Returns the plan it ran.
pub fn copy<T: Element>(
    src: &MatrixView<'_, T>,
    dst: &mut MatrixViewMut<'_, T>,
    stream: &Arc<CudaStream>,
) -> Result<Plan> {
    run(src, dst, stream, None, Some(Operation::Copy))
}

/// Copy on an explicitly chosen atom; an atom illegal for these buffers is an error before launch.
pub fn copy_with<T: Element>(
    atom: Atom,
    src: &MatrixView<'_, T>,
    dst: &mut MatrixViewMut<'_, T>,
    stream: &Arc<CudaStream>,
) -> Result<Plan> {
    run(src, dst, stream, Some(atom), Some(Operation::Copy))
}

/// Pad: copy `src` into the top-left of the larger `dst` and write zeros to the rest of `dst`, in
/// one launch. (A copy into a sub-view of `dst` leaves the rest untouched instead.)
pub fn pad<T: Element>(
    src: &MatrixView<'_, T>,
    dst: &mut MatrixViewMut<'_, T>,
    stream: &Arc<CudaStream>,
) -> Result<Plan> {
    run(src, dst, stream, None, None)
}

/// Pad on an explicitly chosen atom (a Universal* or CpAsyncZfill* atom).
pub fn pad_with<T: Element>(
    atom: Atom,
    src: &MatrixView<'_, T>,
    dst: &mut MatrixViewMut<'_, T>,
    stream: &Arc<CudaStream>,
) -> Result<Plan> {
    run(src, dst, stream, Some(atom), None)
}

fn run<T: Element>(
    src: &MatrixView<'_, T>,
    dst: &mut MatrixViewMut<'_, T>,
    stream: &Arc<CudaStream>,
    atom: Option<Atom>,
    want: Option<Operation>,
) -> Result<Plan> {
    let plan = plan(src, dst, atom)?;
    if want == Some(Operation::Copy) && plan.operation != Operation::Copy {
        return Err(Error::ShapeMismatch {
            src: (src.rows(), src.cols()),
            dst: (dst.rows(), dst.cols()),
            what: "a copy needs equal shapes (use pad for a larger destination)",
        });
    }
    if plan.blocks() == 0 {
        return Ok(plan);
    }
    if atom.is_some_and(|a| a.min_compute_capability() > 7) {
        let (major, minor) = stream.context().compute_capability()?;
        Plan::new(
            T::DTYPE,
            plan.src,
            plan.dst,
            atom,
            Some((major as u32, minor as u32)),
        )?;
    }
    enqueue(src, dst, stream, plan.atom as u32, Kernel::Menu)?;
    Ok(plan)
}

/// The CuTe tutorial TiledCopy (f32, thread layout (32,4), 32x32 tiles staged through shared
/// memory). Rows and cols must be multiples of 32.
pub fn tutorial_copy(
    src: &MatrixView<'_, f32>,
    dst: &mut MatrixViewMut<'_, f32>,
    stream: &Arc<CudaStream>,
) -> Result<()> {
    let (s, d) = (src.geometry(), dst.geometry());
    s.check_extent()?;
    d.check_extent()?;
    if (s.rows, s.cols) != (d.rows, d.cols) {
        return Err(Error::ShapeMismatch {
            src: (s.rows, s.cols),
            dst: (d.rows, d.cols),
            what: "a copy needs equal shapes",
        });
    }
    if s.rows % 32 != 0 || s.cols % 32 != 0 {
        return Err(Error::Unsupported(format!(
            "the tutorial copy needs rows and cols that are multiples of 32, got {} x {}",
            s.rows, s.cols
        )));
    }
    if s.rows > i32::MAX as usize || s.cols > i32::MAX as usize {
        return Err(Error::Overflow(format!("{} x {}", s.rows, s.cols)));
    }
    if s.rows == 0 || s.cols == 0 {
        return Ok(());
    }
    enqueue(src, dst, stream, Atom::Universal as u32, Kernel::Tutorial)
}

/// Check contexts, pin both buffers (holding cudarc's guards), check overlap on the real
/// addresses, and launch.
fn enqueue<T: Element>(
    src: &MatrixView<'_, T>,
    dst: &mut MatrixViewMut<'_, T>,
    stream: &Arc<CudaStream>,
    atom: u32,
    kernel: Kernel,
) -> Result<()> {
    let ctx = stream.context();
    for (what, c) in [("source", src.context()), ("destination", dst.context())] {
        if c != ctx {
            return Err(Error::WrongContext {
                what,
                buffer_device: c.ordinal(),
                stream_device: ctx.ordinal(),
            });
        }
    }
    ctx.bind_to_thread()?;
    let (s, d) = (src.geometry(), dst.geometry());
    let elem = std::mem::size_of::<T>() as u64;
    let src_pin = src.pin(stream);
    let dst_pin = dst.pin(stream);
    let (s_lo, s_hi) = s.byte_range(elem as usize);
    let (d_lo, d_hi) = d.byte_range(elem as usize);
    let (s0, d0) = (
        src_pin.addr - s.offset as u64 * elem,
        dst_pin.addr - d.offset as u64 * elem,
    );
    if s0 + (s_lo as u64) < d0 + d_hi as u64 && d0 + (d_lo as u64) < s0 + s_hi as u64 {
        return Err(Error::Overlap);
    }
    let desc = CopyDesc {
        atom,
        elem_bytes: elem as u32,
        src: src_pin.addr,
        dst: dst_pin.addr,
        rows: s.rows as u64,
        cols: s.cols as u64,
        dst_rows: d.rows as u64,
        dst_cols: d.cols as u64,
        ld_src: s.ld as u64,
        ld_dst: d.ld as u64,
        stream: stream.cu_stream() as u64,
    };
    ffi::launch(&desc, kernel)
}
