//! Many copies, one launch: batches of 2D copies, row gathers and scatters, and block-table copies.
//!
//! All of them run on the realign family (any byte alignment, 16-byte-aligned loads and stores):
//! each copy is a row descriptor ([`crate::ffi::RowsDesc`]); a kernel launch walks the warp tasks
//! (item, row, segment) of every descriptor, 2 warps per block. A [`Batch`] keeps its
//! descriptors in device memory, so it is uploaded once and re-launched (or captured into a CUDA
//! graph) as one kernel. Index-driven copies ([`gather_rows`], [`scatter_rows`], [`copy_blocks`])
//! are one descriptor passed by value, their indices read on the device.
//!
//! **Indices.** An index is an `i32` or `i64` ([`Index`]). A negative index skips its row or block
//! (the convention of paged-attention caches). An index past the end is never followed: the kernel
//! skips it and counts it in an [`IndexStatus`]; [`IndexStatus::check`] waits for the stream and
//! returns [`Error::IndexOutOfRange`] with the count and the lowest offending item (and clears the
//! status for the next launch). Host-side index lists are checked before upload by
//! [`upload_indices`]. Repeated destination indices (a scatter, a block table) leave the result of
//! one of the writers, unspecified which, as in PyTorch's `index_copy_` with repeated indices.

use std::fmt;
use std::sync::Arc;

use cudarc::driver::{CudaSlice, CudaStream, DevicePtr, DeviceRepr, ValidAsZeroBits};

use crate::device::check_context;
use crate::error::{Error, Result};
use crate::ffi::{self, RowsDesc};
use crate::launch::{self, Span};
use crate::peer::{PeerRoute, PeerShape};
use crate::plan::{coalesce, Operand, Operation};
use crate::realign::{self, Rows, TABLE_TASKS};
use crate::view::{span, MatrixView, MatrixViewMut};
use crate::{DType, Element};

/// An index type the kernels read: `i32` or `i64`.
pub trait Index: DeviceRepr + ValidAsZeroBits + Copy + Into<i64> + fmt::Debug + 'static {
    /// Bytes per index.
    const BYTES: i32;
}
impl Index for i32 {
    const BYTES: i32 = 4;
}
impl Index for i64 {
    const BYTES: i32 = 8;
}

/// A region of a buffer for [`Batch::push`]: `rows × cols` elements, row-major with leading
/// dimension `ld`, element (0, 0) at `offset` elements from the element (0, 0) of the batch's view.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Region {
    /// Offset of element (0, 0), in elements, from the view's element (0, 0).
    pub offset: usize,
    /// Rows.
    pub rows: usize,
    /// Columns.
    pub cols: usize,
    /// Leading dimension (elements between row starts).
    pub ld: usize,
}

impl Region {
    /// The `rows × cols` region at element (`row`, `col`) of a matrix with leading dimension `ld`.
    pub fn at(row: usize, col: usize, rows: usize, cols: usize, ld: usize) -> Region {
        Region {
            offset: row * ld + col,
            rows,
            cols,
            ld,
        }
    }
}

/// Refuse a list of destination extents that share bytes with each other or with any source.
fn check_disjoint(dsts: &[Rows], srcs: &[Rows]) -> Result<()> {
    let mut all: Vec<(u64, u64, bool, usize)> = dsts
        .iter()
        .enumerate()
        .map(|(i, e)| (e.addr, e.end(), true, i))
        .chain(
            srcs.iter()
                .enumerate()
                .map(|(i, e)| (e.addr, e.end(), false, i)),
        )
        .filter(|(a, b, _, _)| a < b)
        .collect();
    all.sort_unstable();
    // Sweep by start address; `open` holds the entries whose span is still running.
    let mut open: Vec<(u64, bool, usize)> = Vec::new();
    for &(start, end, is_dst, i) in &all {
        open.retain(|&(e, _, _)| e > start);
        for &(_, other_dst, j) in &open {
            if !(is_dst || other_dst) {
                continue; // two sources may share bytes
            }
            let ext = |dst: bool, k: usize| if dst { dsts[k] } else { srcs[k] };
            if ext(is_dst, i).overlaps(&ext(other_dst, j)) {
                return Err(Error::Overlap);
            }
        }
        open.push((end, is_dst, i));
    }
    Ok(())
}

/// What one launch of a batch or index-driven copy does. `Display` prints it with its reasons.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BatchPlan {
    /// The element type.
    pub dtype: DType,
    /// Copies (descriptors) in the launch; for index-driven copies, 1.
    pub copies: usize,
    /// Items (rows gathered, blocks copied, or 1 per copy).
    pub items: usize,
    /// Copies that move nothing.
    pub empty: usize,
    /// Copies run as one contiguous run (both sides contiguous).
    pub coalesced: usize,
    /// Copies with a side whose row starts are not all 16-byte aligned (realigned in registers).
    pub realigned: usize,
    /// Warp tasks (item, row, segment of up to 2 KiB) of the whole launch.
    pub tasks: i64,
    /// Bytes read plus written, counting every item as present (skipped items move less).
    pub bytes: u64,
    /// What it is: "batch", "row gather", "row scatter", "block copy".
    pub kind: &'static str,
    /// For a block copy between two devices, how it crosses (see [`crate::Plan::peer`]).
    pub peer: Option<crate::PeerRoute>,
}

impl BatchPlan {
    /// Bytes read plus bytes written (the `bytes` field), under the name [`TensorPlan`]'s method
    /// has.
    ///
    /// [`TensorPlan`]: crate::TensorPlan
    pub fn bytes_moved(&self) -> usize {
        self.bytes as usize
    }

    pub(crate) fn of(kind: &'static str, dtype: DType, descs: &[RowsDesc]) -> Self {
        let mut p = BatchPlan {
            dtype,
            copies: descs.len(),
            items: 0,
            empty: 0,
            coalesced: 0,
            realigned: 0,
            tasks: 0,
            bytes: 0,
            kind,
            peer: None,
        };
        for d in descs {
            p.items += d.items as usize;
            p.tasks += realign::tasks_of(d);
            if d.dst_rows == 0 || d.dst_row_bytes == 0 || d.items == 0 {
                p.empty += 1;
            }
            if d.dst_rows == 1 && d.src_rows == 1 && d.items == 1 && d.src_row_bytes > 0 {
                p.coalesced += 1;
            }
            let aligned =
                |addr: u64, pitch: i64| addr % 16 == 0 && (d.dst_rows <= 1 || pitch % 16 == 0);
            if !aligned(d.src, d.src_pitch) || !aligned(d.dst, d.dst_pitch) {
                p.realigned += 1;
            }
            p.bytes +=
                (d.items * (d.src_rows * d.src_row_bytes + d.dst_rows * d.dst_row_bytes)) as u64;
        }
        p
    }

    /// Blocks launched: one per 2 warp tasks (the realign kernel's blocks of 2 warps).
    pub fn blocks(&self) -> usize {
        realign::blocks(self.tasks as usize)
    }
}

/// A batch of copies (or pads) of one dtype, planned once and launched as one kernel on any
/// source and destination views large enough for it.
///
/// Each entry is a pair of [`Region`]s (relative to the element (0, 0) of the source and the
/// destination view) with its own shape, leading dimensions and offsets, any alignment; a
/// destination region larger than its source region is a pad (the rest written as zeros).
/// Destination regions may not share bytes with each other ([`Error::Overlap`], checked at
/// [`upload`](Batch::upload)). The descriptors go to device memory once ([`upload`](Batch::upload),
/// or the first [`launch`](Batch::launch) after a `push`); every later launch, or CUDA-graph
/// capture of one, is a single kernel with nothing uploaded. The batch does not borrow the
/// buffers: it can be re-launched between reads of the destination.
///
/// ```no_run
/// # fn main() -> Result<(), cute_copy::Error> {
/// use cute_copy::{Batch, DeviceMatrix, Region};
/// let stream = cute_copy::stream(0)?;
/// let src = DeviceMatrix::<half::f16>::zeros(&stream, 1024, 1024, 1024)?;
/// let mut dst = DeviceMatrix::<half::f16>::zeros(&stream, 1024, 1024, 1024)?;
/// let mut batch = Batch::<half::f16>::new();
/// for k in 0..100 {
///     batch.push(Region::at(k, 3, 5, 100, 1024), Region::at(5 * k, 7, 5, 100, 1024))?;
/// }
/// println!("{}", batch.plan()?);
/// batch.launch(&src.view(), &mut dst.view_mut(), &stream)?;
/// # Ok(()) }
/// ```
#[derive(Debug)]
pub struct Batch<T: Element> {
    pub(crate) pairs: Vec<(Region, Region)>,
    /// Elements each side needs from its view's element (0, 0).
    needed: (usize, usize),
    /// Device descriptors (offsets from the views' element (0, 0)) and their task count.
    /// Device bytes: the descriptors, then the block table (see [`device_image`]).
    uploaded: Option<(CudaSlice<u8>, i64)>,
    _element: std::marker::PhantomData<T>,
}

impl<T: Element> Default for Batch<T> {
    fn default() -> Self {
        Self::new()
    }
}

impl<T: Element> Batch<T> {
    /// An empty batch.
    pub fn new() -> Self {
        Batch {
            pairs: Vec::new(),
            needed: (0, 0),
            uploaded: None,
            _element: std::marker::PhantomData,
        }
    }

    /// Add one copy (equal shapes) or pad (destination larger). Checked here: shapes and leading
    /// dimensions; at launch, that the views hold every region.
    pub fn push(&mut self, src: Region, dst: Region) -> Result<()> {
        if dst.rows < src.rows || dst.cols < src.cols {
            return Err(Error::ShapeMismatch {
                src: (src.rows, src.cols),
                dst: (dst.rows, dst.cols),
                what: "a batch entry needs a destination at least as large as its source",
            });
        }
        let mut ends = [0usize; 2];
        for (k, (r, what)) in [(&src, "source"), (&dst, "destination")]
            .into_iter()
            .enumerate()
        {
            if r.ld < r.cols || r.ld == 0 {
                return Err(Error::LeadingDimension {
                    what,
                    ld: r.ld,
                    cols: r.cols,
                });
            }
            let bytes = |n: usize| {
                n.checked_mul(T::DTYPE.size_bytes())
                    .filter(|&b| b <= i64::MAX as usize / 4)
            };
            ends[k] = span(r.rows, r.cols, r.ld)?
                .checked_add(r.offset)
                .filter(|&end| bytes(end).is_some() && bytes(r.ld).is_some())
                .ok_or_else(|| Error::Overflow(format!("{what} region {r:?}")))?;
        }
        self.needed = (self.needed.0.max(ends[0]), self.needed.1.max(ends[1]));
        self.pairs.push((src, dst));
        self.uploaded = None;
        Ok(())
    }

    /// Copies in the batch.
    pub fn len(&self) -> usize {
        self.pairs.len()
    }

    /// Whether the batch has no copies.
    pub fn is_empty(&self) -> bool {
        self.pairs.is_empty()
    }

    /// Elements the (source, destination) views must hold from their element (0, 0).
    pub fn needed(&self) -> (usize, usize) {
        self.needed
    }

    /// Descriptors with addresses relative to the views' element (0, 0).
    fn descriptors(&self) -> Result<Vec<RowsDesc>> {
        let e = T::DTYPE.size_bytes() as u64;
        let operand = |r: &Region| Operand {
            rows: r.rows,
            cols: r.cols,
            ld: r.ld,
            offset_bytes: 0,
        };
        let extent = |r: &Region, o: Operand| Rows {
            addr: r.offset as u64 * e,
            rows: o.rows as u64,
            row_bytes: o.cols as u64 * e,
            pitch: o.ld as u64 * e,
        };
        let mut begin = 0i64;
        self.pairs
            .iter()
            .map(|(s, d)| {
                // The planner's coalesce: contiguous on both sides -> one run.
                let op = if (s.rows, s.cols) == (d.rows, d.cols) {
                    Operation::Copy
                } else {
                    Operation::Pad
                };
                let (so, dop) = coalesce(op, operand(s), operand(d));
                let mut desc = realign::rows_desc(extent(s, so), extent(d, dop));
                if d.rows == 0 || d.cols == 0 {
                    desc.dst_rows = 0;
                }
                desc.task_begin = begin;
                begin += realign::tasks_of(&desc);
                Ok(desc)
            })
            .collect()
    }

    /// What a launch will do, for views whose element (0, 0) is 16-byte aligned (alignment is
    /// decided per row on the device; this only counts it for the report).
    pub fn plan(&self) -> Result<BatchPlan> {
        Ok(BatchPlan::of("batch", T::DTYPE, &self.descriptors()?))
    }

    /// Check that no two destination regions share a byte and upload the descriptors to device
    /// memory on `stream`, unless done since the last `push`. [`launch`](Batch::launch) does this
    /// itself; call it first when the launch is to be captured into a CUDA graph.
    pub fn upload(&mut self, stream: &Arc<CudaStream>) -> Result<()> {
        // Uploaded on this device already (a launch on another device's stream uploads again:
        // the kernel reads its descriptors from its own device).
        if let Some((dev, _)) = &self.uploaded {
            if dev.context() == stream.context() {
                return Ok(());
            }
        }
        let descs = self.descriptors()?;
        let dsts: Vec<Rows> = descs
            .iter()
            .map(|d| Rows {
                addr: d.dst,
                rows: d.dst_rows as u64,
                row_bytes: d.dst_row_bytes as u64,
                pitch: d.dst_pitch as u64,
            })
            .collect();
        check_disjoint(&dsts, &[])?;
        let tasks = descs.iter().map(realign::tasks_of).sum::<i64>();
        let dev = stream.clone_htod(&device_image(&descs, tasks))?;
        self.uploaded = Some((dev, tasks));
        Ok(())
    }

    /// The views hold every region of the batch, and live in the stream's context (or on two
    /// devices, the stream's one of them, with peer access).
    pub(crate) fn check_views(
        &self,
        src: &MatrixView<'_, T>,
        dst: &MatrixViewMut<'_, T>,
        stream: &Arc<CudaStream>,
    ) -> Result<()> {
        for (g, needed) in [(src.place(), self.needed.0), (dst.place(), self.needed.1)] {
            if g.offset.checked_add(needed).is_none_or(|end| end > g.len) {
                return Err(Error::OutOfBounds {
                    offset: g.offset,
                    needed,
                    len: g.len,
                });
            }
        }
        // Two devices: the kernel reads or writes the other one (src/peer.rs), or a typed error.
        let (sc, dc) = (src.context(), dst.context());
        if sc == dc
            || PeerRoute::of(sc, dc, stream.context(), PeerShape::Kernel("a batch"))?.is_none()
        {
            check_context("source", sc, stream)?;
            check_context("destination", dc, stream)?;
        }
        Ok(())
    }

    /// Enqueue the whole batch as one kernel on `stream`, from regions of `src` into regions of
    /// `dst` (uploading the descriptors first if the batch changed since the last launch). `src`
    /// and `dst` may be on two devices of one host, `stream` on either: the kernel reads or writes
    /// the other device's memory, as [`copy`](crate::copy)'s kernel route does.
    /// Returns the number of warp tasks launched.
    pub fn launch(
        &mut self,
        src: &MatrixView<'_, T>,
        dst: &mut MatrixViewMut<'_, T>,
        stream: &Arc<CudaStream>,
    ) -> Result<i64> {
        let e = T::DTYPE.size_bytes() as u64;
        self.check_views(src, dst, stream)?;
        self.upload(stream)?;
        let (descs, tasks) = self.uploaded.as_ref().expect("uploaded above");
        if *tasks == 0 {
            return Ok(0);
        }
        // Hold every buffer's guard until the launch is enqueued (and order a buffer of another
        // device with its own stream).
        let src_pin = src.pin_on(stream)?;
        let dst_pin = dst.pin_on(stream)?;
        launch::disjoint(
            Span {
                addr: src_pin.addr,
                bytes: self.needed.0 as u64 * e,
            },
            Span {
                addr: dst_pin.addr,
                bytes: self.needed.1 as u64 * e,
            },
        )?;
        let (descs_addr, _g) = descs.device_ptr(stream);
        let bases = (src_pin.addr, dst_pin.addr);
        let count = self.pairs.len();
        launch::batch(descs_addr, count, *tasks, T::DTYPE, bases, stream)?;
        Ok(*tasks)
    }
}

/// What a batch puts in device memory: the descriptors (sorted by `task_begin`), then a block
/// table: for each group of [`TABLE_TASKS`] tasks, the u32 index of the last descriptor whose
/// first task is at or before the group's first task. A warp starts from there instead of
/// searching all descriptors (a chain of dependent loads per task).
fn device_image(descs: &[RowsDesc], tasks: i64) -> Vec<u8> {
    let mut bytes = ffi::rows_desc_bytes(descs).to_vec();
    if bytes.is_empty() {
        bytes.resize(16, 0);
    }
    let groups = (tasks + TABLE_TASKS - 1) / TABLE_TASKS;
    let mut k = 0usize;
    for b in 0..groups {
        let first = b * TABLE_TASKS;
        while k + 1 < descs.len() && descs[k + 1].task_begin <= first {
            k += 1;
        }
        bytes.extend_from_slice(&(k as u32).to_le_bytes());
    }
    bytes
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ext(addr: u64, rows: u64, row_bytes: u64, pitch: u64) -> Rows {
        Rows {
            addr,
            rows,
            row_bytes,
            pitch,
        }
    }

    /// Byte-by-byte truth for two extents.
    fn brute(a: &Rows, b: &Rows) -> bool {
        let bytes = |e: &Rows| {
            (0..e.rows)
                .flat_map(move |r| (0..e.row_bytes).map(move |c| e.addr + r * e.pitch + c))
                .collect::<std::collections::HashSet<u64>>()
        };
        !bytes(a).is_disjoint(&bytes(b))
    }

    #[test]
    fn overlap_is_exact_for_equal_pitches_and_never_missed_otherwise() {
        // Column strips of one matrix: interleaved spans, no shared byte.
        assert!(!ext(0, 64, 40, 256).overlaps(&ext(40, 64, 40, 256)));
        assert!(ext(0, 64, 40, 256).overlaps(&ext(39, 64, 40, 256)));
        // Exhaustive small cases against the byte-by-byte truth.
        for pitch in [8u64, 13, 16] {
            for (wa, wb) in [(3u64, 5u64), (8, 1), (1, 8)] {
                if wa > pitch || wb > pitch {
                    continue;
                }
                for start in 0..60 {
                    for (ra, rb) in [(1u64, 1u64), (3, 2), (2, 5), (0, 3)] {
                        let (a, b) = (ext(20, ra, wa, pitch), ext(start, rb, wb, pitch));
                        assert_eq!(a.overlaps(&b), brute(&a, &b), "{a:?} {b:?}");
                        assert_eq!(b.overlaps(&a), brute(&a, &b), "{b:?} {a:?}");
                    }
                }
            }
        }
        // Different pitches: conservative (span overlap counts), never a miss.
        for start in 0..80 {
            let (a, b) = (ext(10, 4, 3, 9), ext(start, 3, 2, 7));
            assert!(a.overlaps(&b) || !brute(&a, &b));
        }
    }

    #[test]
    fn destinations_sharing_a_byte_are_refused_sources_may_share() {
        let d = [ext(0, 4, 16, 64), ext(16, 4, 16, 64), ext(32, 4, 32, 64)];
        assert!(check_disjoint(&d, &[]).is_ok());
        let d2 = [ext(0, 4, 16, 64), ext(15, 4, 16, 64)];
        assert!(matches!(check_disjoint(&d2, &[]), Err(Error::Overlap)));
        let s = [ext(1000, 2, 8, 8), ext(1000, 2, 8, 8)];
        assert!(check_disjoint(&d, &s).is_ok());
        assert!(matches!(
            check_disjoint(&d, &[ext(70, 1, 4, 4)]),
            Err(Error::Overlap)
        ));
    }
}
