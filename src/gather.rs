//! Index-driven copies: row gathers and scatters ([`gather_rows`], [`scatter_rows`]) and
//! block-table copies ([`copy_blocks`]), each one realign descriptor passed by value with its
//! indices read on the device (see the indices' rules in `src/batch.rs`'s module docs), and the
//! [`IndexStatus`] that counts the indices found out of range. Their converting forms
//! ([`convert_gather_rows`], [`convert_scatter_rows`], [`convert_copy_blocks`]) run on the
//! convert family's elementwise route, mode 0 of the plan walking the items
//! ([`ConvertPlan::indexed`]).

use std::sync::Arc;

use cudarc::driver::{CudaSlice, CudaStream, DevicePtr, DevicePtrMut};

use crate::batch::{BatchPlan, Index};
use crate::convert::{Convert, ConvertPlan, ConvertRoute, IndexKind};
use crate::device::check_context;
use crate::error::{Error, Result};
use crate::ffi::RowsDesc;
use crate::peer::{PeerRoute, PeerShape};
use crate::realign::{self, Rows};
use crate::view::{MatrixView, MatrixViewMut, RawTensor, TensorView, TensorViewMut};
use crate::{launch, DType, Element};

/// A device buffer that counts indices found out of range by index-driven copies.
///
/// Allocate it once, pass it to every launch, and [`check`](IndexStatus::check) it when you
/// synchronize: the kernels only add to it, `check` reads and clears it.
#[derive(Debug)]
pub struct IndexStatus {
    /// [count, lowest item]
    buf: CudaSlice<u64>,
}

impl IndexStatus {
    /// A cleared status buffer on `stream`'s device.
    pub fn new(stream: &Arc<CudaStream>) -> Result<Self> {
        let buf = stream.clone_htod(&[0u64, u64::MAX])?;
        Ok(IndexStatus { buf })
    }

    /// Wait for `stream`, then report what the launches since the last check found: `Ok` when
    /// every index was in range (negative ones are skips, not errors), else
    /// [`Error::IndexOutOfRange`]. Clears the status either way.
    pub fn check(&mut self, stream: &Arc<CudaStream>) -> Result<()> {
        let v = stream.clone_dtoh(&self.buf)?;
        stream.memcpy_htod(&[0u64, u64::MAX], &mut self.buf)?;
        stream.synchronize()?;
        match v[0] {
            0 => Ok(()),
            count => Err(Error::IndexOutOfRange {
                count,
                first_item: v[1],
            }),
        }
    }

    fn addr<'s>(&'s mut self, stream: &'s CudaStream) -> (u64, cudarc::driver::SyncOnDrop<'s>) {
        self.buf.device_ptr_mut(stream)
    }
}

/// Check host-side indices against `limit` (negative ones are skips) and upload them.
/// An index at or past `limit` is [`Error::IndexOutOfRange`] before anything is uploaded.
pub fn upload_indices<I: Index>(
    stream: &Arc<CudaStream>,
    indices: &[I],
    limit: usize,
) -> Result<CudaSlice<I>> {
    upload_checked(stream, indices, |_| limit)
}

/// [`upload_indices`] for a block table of `(source block, destination block)` pairs, each column
/// checked against its own pool: `src_blocks` and `dst_blocks` (pools of different sizes).
/// `first_item` of the error is the pair's index.
pub fn upload_block_table<I: Index>(
    stream: &Arc<CudaStream>,
    pairs: &[I],
    src_blocks: usize,
    dst_blocks: usize,
) -> Result<CudaSlice<I>> {
    if pairs.len() % 2 != 0 {
        return Err(Error::IndexCount {
            what: "a block table of (source, destination) pairs",
            got: pairs.len(),
            expected: pairs.len() + 1,
        });
    }
    upload_checked(stream, pairs, |k| {
        if k % 2 == 0 {
            src_blocks
        } else {
            dst_blocks
        }
    })
    .map_err(|e| match e {
        Error::IndexOutOfRange { count, first_item } => Error::IndexOutOfRange {
            count,
            first_item: first_item / 2,
        },
        e => e,
    })
}

fn upload_checked<I: Index>(
    stream: &Arc<CudaStream>,
    indices: &[I],
    limit_of: impl Fn(usize) -> usize,
) -> Result<CudaSlice<I>> {
    let bad: Vec<usize> = indices
        .iter()
        .enumerate()
        .filter(|&(k, &i)| i.into() >= limit_of(k) as i64)
        .map(|(k, _)| k)
        .collect();
    if let Some(&first) = bad.first() {
        return Err(Error::IndexOutOfRange {
            count: bad.len() as u64,
            first_item: first as u64,
        });
    }
    if indices.is_empty() {
        return Ok(stream.alloc_zeros::<I>(1)?);
    }
    Ok(stream.clone_htod(indices)?)
}

/// One index-driven descriptor, launched by value with the status buffer.
fn launch_indexed(
    desc: RowsDesc,
    dtype: DType,
    status: &mut IndexStatus,
    stream: &Arc<CudaStream>,
) -> Result<()> {
    if realign::tasks_of(&desc) == 0 {
        return Ok(());
    }
    let (status_addr, _g) = status.addr(stream);
    launch::rows(&desc, dtype, status_addr, stream)
}

pub(crate) fn index_addr<'s, I: Index>(
    idx: &'s CudaSlice<I>,
    stream: &'s Arc<CudaStream>,
) -> Result<(u64, cudarc::driver::SyncOnDrop<'s>)> {
    check_context("indices", idx.context(), stream)?;
    Ok(idx.device_ptr(stream))
}

pub(crate) fn check_cols<T: Element>(
    src: &MatrixView<'_, T>,
    dst: &MatrixViewMut<'_, T>,
) -> Result<()> {
    if src.cols() != dst.cols() {
        return Err(Error::ShapeMismatch {
            src: (src.rows(), src.cols()),
            dst: (dst.rows(), dst.cols()),
            what: "rows move between matrices of the same number of columns",
        });
    }
    src.geometry()?.check_extent()?;
    dst.geometry()?.check_extent()
}

/// Pin both views of an index-driven copy (`what`, for the reason text) for a launch on
/// `stream`: in its context, or on two devices with the kernel's route between them (the index
/// and status buffers stay on the stream's device), which is returned.
pub(crate) fn pinned_pair<'s, T: Element>(
    src: &'s MatrixView<'_, T>,
    dst: &'s mut MatrixViewMut<'_, T>,
    stream: &'s Arc<CudaStream>,
    what: &'static str,
) -> Result<(
    crate::view::Pinned<'s>,
    crate::view::Pinned<'s>,
    Option<PeerRoute>,
)> {
    let (sc, dc) = (src.context(), dst.context());
    let route = PeerRoute::of(sc, dc, stream.context(), PeerShape::Kernel(what))?;
    if route.is_none() {
        check_context("source", sc, stream)?;
        check_context("destination", dc, stream)?;
    }
    let e = T::DTYPE.size_bytes();
    let (sg, dg) = (src.geometry()?, dst.geometry()?);
    let s = src.pin_on(stream)?;
    let d = dst.pin_on(stream)?;
    launch::disjoint(sg.span_at(s.addr, e)?, dg.span_at(d.addr, e)?)?;
    Ok((s, d, route))
}

pub(crate) fn row_desc<T: Element>(
    src: &MatrixView<'_, T>,
    dst: &MatrixViewMut<'_, T>,
) -> Result<RowsDesc> {
    let e = T::DTYPE.size_bytes() as i64;
    // One row per item, the items `ld` apart: addresses, items and indices set by the caller.
    let row = Rows {
        addr: 0,
        pitch: 0,
        row_bytes: (src.cols() * T::DTYPE.size_bytes()) as u64,
        rows: 1,
    };
    Ok(RowsDesc {
        src_item_stride: src.ld() as i64 * e,
        dst_item_stride: dst.ld() as i64 * e,
        src_items: src.rows() as i64,
        dst_items: dst.rows() as i64,
        ..realign::rows_desc(row, row)
    })
}

/// Row gather: `dst[i, :] = src[indices[i], :]` for every row `i` of `dst`, in one launch.
/// `indices` holds at least `dst.rows()` entries on the device; a negative entry leaves its
/// destination row untouched; one at or past `src.rows()` too, and is counted in `status`.
///
/// ```no_run
/// # fn main() -> Result<(), cute_copy::Error> {
/// let stream = cute_copy::stream(0)?;
/// let table = cute_copy::DeviceMatrix::<f32>::zeros(&stream, 50_000, 256, 256)?;
/// let mut out = cute_copy::DeviceMatrix::<f32>::zeros(&stream, 3, 256, 256)?;
/// let idx = cute_copy::upload_indices(&stream, &[7i64, -1, 49_999], table.rows())?;
/// let mut status = cute_copy::IndexStatus::new(&stream)?;
/// cute_copy::gather_rows(&table.view(), &idx, &mut out.view_mut(), &mut status, &stream)?;
/// status.check(&stream)?; // waits; Err(IndexOutOfRange) if an index was past the end
/// # Ok(()) }
/// ```
pub fn gather_rows<T: Element, I: Index>(
    src: &MatrixView<'_, T>,
    indices: &CudaSlice<I>,
    dst: &mut MatrixViewMut<'_, T>,
    status: &mut IndexStatus,
    stream: &Arc<CudaStream>,
) -> Result<BatchPlan> {
    indexed_rows(Indexed::Source, src, indices, dst, status, stream)
}

/// Row scatter: `dst[indices[i], :] = src[i, :]` for every row `i` of `src`, in one launch.
/// Negative entries skip their source row; entries at or past `dst.rows()` are skipped and counted
/// in `status`. With repeated indices one of the writers wins, unspecified which.
pub fn scatter_rows<T: Element, I: Index>(
    src: &MatrixView<'_, T>,
    indices: &CudaSlice<I>,
    dst: &mut MatrixViewMut<'_, T>,
    status: &mut IndexStatus,
    stream: &Arc<CudaStream>,
) -> Result<BatchPlan> {
    indexed_rows(Indexed::Destination, src, indices, dst, status, stream)
}

/// Which side of a row gather or scatter the indices address.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Indexed {
    /// `dst[i] = src[indices[i]]`: one index per destination row.
    Source,
    /// `dst[indices[i]] = src[i]`: one index per source row.
    Destination,
}

fn indexed_rows<T: Element, I: Index>(
    which: Indexed,
    src: &MatrixView<'_, T>,
    indices: &CudaSlice<I>,
    dst: &mut MatrixViewMut<'_, T>,
    status: &mut IndexStatus,
    stream: &Arc<CudaStream>,
) -> Result<BatchPlan> {
    check_cols(src, dst)?;
    let (rows, what, kind) = match which {
        Indexed::Source => (dst.rows(), "indices for the destination rows", "row gather"),
        Indexed::Destination => (src.rows(), "indices for the source rows", "row scatter"),
    };
    if indices.len() < rows {
        return Err(Error::IndexCount {
            what,
            got: indices.len(),
            expected: rows,
        });
    }
    let (idx, _ig) = index_addr(indices, stream)?;
    let mut desc = row_desc(src, dst)?;
    desc.items = if src.cols() == 0 { 0 } else { rows as i64 };
    let (s, d, peer) = pinned_pair(src, dst, stream, kind)?;
    (desc.src, desc.dst) = (s.addr, d.addr);
    match which {
        Indexed::Source => desc.src_index = idx,
        Indexed::Destination => desc.dst_index = idx,
    }
    desc.index_bytes = I::BYTES;
    let plan = BatchPlan {
        peer,
        ..BatchPlan::of(kind, T::DTYPE, &[desc])
    };
    launch_indexed(desc, T::DTYPE, status, stream)?;
    Ok(plan)
}

/// Block-table copy (paged KV-cache copy and swap): for each pair `k`, the block
/// `pairs[2k]` of `src` goes to block `pairs[2k + 1]` of `dst`, in one launch. A block is
/// `block_rows` consecutive rows: block `b` is rows `b * block_rows ..` of the view, so a pool of
/// `n` blocks is a `(n * block_rows) × cols` matrix (vLLM's `[num_blocks, block_size, ...]`).
/// `pairs` holds `2 * n` entries (`[n, 2]` row-major) on the device. A negative entry skips the
/// pair; one past the last whole block of its side is skipped and counted in `status`.
///
/// The pools may be on two devices of one host (a prefill-to-decode KV transfer): the block table
/// and `status` then live on the stream's device, and the same one launch runs there, reading
/// the source pool over the link (a stream of the destination's device: pull) or writing the
/// destination pool over it (push); it needs peer access ([`Error::NoPeerAccess`] otherwise,
/// nothing written), and is ordered with the other pool's own stream as [`copy`](crate::copy)
/// is.
pub fn copy_blocks<T: Element, I: Index>(
    src: &MatrixView<'_, T>,
    dst: &mut MatrixViewMut<'_, T>,
    block_rows: usize,
    pairs: &CudaSlice<I>,
    status: &mut IndexStatus,
    stream: &Arc<CudaStream>,
) -> Result<BatchPlan> {
    check_cols(src, dst)?;
    if block_rows == 0 {
        return Err(Error::Shape("blocks of 0 rows".into()));
    }
    if pairs.len() % 2 != 0 {
        return Err(Error::IndexCount {
            what: "a block table of (source, destination) pairs",
            got: pairs.len(),
            expected: pairs.len() + 1,
        });
    }
    let (idx, _ig) = index_addr(pairs, stream)?;
    let dst_blocks = (dst.rows() / block_rows) as i64;
    let ld = dst.ld() as i64;
    let (s, d, peer) = pinned_pair(src, dst, stream, "a block table")?;
    let e = T::DTYPE.size_bytes() as i64;
    let (cols, ls) = (src.cols() as i64, src.ld() as i64);
    let br = block_rows as i64;
    // Contiguous blocks on both sides coalesce into one run each.
    let (rows, row_bytes, sp, dp) = if ls == cols && ld == cols {
        (1, br * cols * e, br * cols * e, br * cols * e)
    } else {
        (br, cols * e, ls * e, ld * e)
    };
    let side = |addr, pitch: i64| Rows {
        addr,
        pitch: pitch as u64,
        row_bytes: row_bytes as u64,
        rows: rows as u64,
    };
    let desc = RowsDesc {
        items: if cols == 0 { 0 } else { pairs.len() as i64 / 2 },
        src_item_stride: br * ls * e,
        dst_item_stride: br * ld * e,
        src_index: idx,
        dst_index: idx + I::BYTES as u64,
        src_items: (src.rows() / block_rows) as i64,
        dst_items: dst_blocks,
        index_bytes: I::BYTES,
        index_stride: 2,
        ..realign::rows_desc(side(s.addr, sp), side(d.addr, dp))
    };
    let plan = BatchPlan {
        peer,
        ..BatchPlan::of("block copy", T::DTYPE, &[desc])
    };
    launch_indexed(desc, T::DTYPE, status, stream)?;
    Ok(plan)
}

/// [`gather_rows`] converting on the way: `dst[i, ..] = D(src[indices[i], ..])` for every entry
/// `i` of mode 0 of `dst`, in one launch, each element converted (and scaled or normalized) as
/// [`convert_tensor`](crate::convert_tensor) does. The views have any rank and layouts; their
/// modes past 0 have equal shapes (a matrix's rows, or `[tokens, heads, head_dim]` slices).
/// Indices behave as for [`gather_rows`]; `convert`'s channel mode, if any, is one of the item's
/// modes (1 ..). Both views, the indices and `status` are on the stream's device.
///
/// ```no_run
/// # fn main() -> Result<(), cute_copy::Error> {
/// use cute_copy::{Convert, DeviceTensor, Layout};
/// let stream = cute_copy::stream(0)?;
/// let table = DeviceTensor::<f32>::zeros(&stream, Layout::row_major(&[50_000, 256])?)?;
/// let mut out = DeviceTensor::<half::bf16>::zeros(&stream, Layout::row_major(&[3, 256])?)?;
/// let idx = cute_copy::upload_indices(&stream, &[7i64, -1, 49_999], 50_000)?;
/// let mut status = cute_copy::IndexStatus::new(&stream)?;
/// cute_copy::convert_gather_rows(&table.view(), &idx, &mut out.view_mut(), &Convert::new(), &mut status, &stream)?;
/// status.check(&stream)?;
/// # Ok(()) }
/// ```
pub fn convert_gather_rows<S: Element, D: Element, I: Index>(
    src: &TensorView<'_, S>,
    indices: &CudaSlice<I>,
    dst: &mut TensorViewMut<'_, D>,
    convert: &Convert,
    status: &mut IndexStatus,
    stream: &Arc<CudaStream>,
) -> Result<ConvertPlan> {
    convert_indexed(
        src,
        dst,
        (IndexKind::Gather, 1, indices),
        convert,
        status,
        stream,
    )
}

/// [`scatter_rows`] converting on the way: `dst[indices[i], ..] = D(src[i, ..])` for every entry
/// `i` of mode 0 of `src`, in one launch (a KV-cache write into an FP8 pool with a scale: `src`
/// the new tokens `[tokens, heads, head_dim]`, `dst` the pool's slots
/// `[blocks * block_size, heads, head_dim]`, `indices` the slot mapping). As
/// [`convert_gather_rows`] otherwise; with repeated indices one of the writers wins.
pub fn convert_scatter_rows<S: Element, D: Element, I: Index>(
    src: &TensorView<'_, S>,
    indices: &CudaSlice<I>,
    dst: &mut TensorViewMut<'_, D>,
    convert: &Convert,
    status: &mut IndexStatus,
    stream: &Arc<CudaStream>,
) -> Result<ConvertPlan> {
    convert_indexed(
        src,
        dst,
        (IndexKind::Scatter, 1, indices),
        convert,
        status,
        stream,
    )
}

/// [`copy_blocks`] converting on the way: for each pair `k` of the block table, block
/// `pairs[2k]` of `src` becomes block `pairs[2k + 1]` of `dst`, converted. A block is
/// `block_rows` consecutive entries of mode 0 of a view of any rank (a `[blocks * block_size,
/// heads, head_dim]` pool with `block_rows = block_size`, or `[blocks, block_size, heads,
/// head_dim]` with 1). As [`convert_gather_rows`] otherwise.
pub fn convert_copy_blocks<S: Element, D: Element, I: Index>(
    src: &TensorView<'_, S>,
    dst: &mut TensorViewMut<'_, D>,
    block_rows: usize,
    pairs: &CudaSlice<I>,
    convert: &Convert,
    status: &mut IndexStatus,
    stream: &Arc<CudaStream>,
) -> Result<ConvertPlan> {
    convert_indexed(
        src,
        dst,
        (IndexKind::BlockTable, block_rows, pairs),
        convert,
        status,
        stream,
    )
}

fn convert_indexed<S: Element, D: Element, I: Index>(
    src: &TensorView<'_, S>,
    dst: &mut TensorViewMut<'_, D>,
    (kind, block_rows, table): (IndexKind, usize, &CudaSlice<I>),
    convert: &Convert,
    status: &mut IndexStatus,
    stream: &Arc<CudaStream>,
) -> Result<ConvertPlan> {
    let (sp, dp) = (src.place(), dst.place());
    sp.check()?;
    dp.check()?;
    let plan = ConvertPlan::indexed(
        (S::DTYPE, D::DTYPE),
        (sp.layout, dp.layout),
        kind,
        block_rows,
        (table.len(), I::BYTES as usize),
        convert,
    )?;
    if plan.route == ConvertRoute::Empty {
        return Ok(plan);
    }
    check_context("source", src.context(), stream)?;
    check_context("destination", dst.context(), stream)?;
    let s = src.pin(stream);
    let d = dst.pin(stream);
    launch_indexed_convert(&plan, (s.addr, d.addr), table, status, stream)?;
    Ok(plan)
}

/// The converting index-driven copies ([`convert_gather_rows`], [`convert_scatter_rows`],
/// [`convert_copy_blocks`], as `kind` says) for run-time-typed views, each side its own dtype;
/// `block_rows` is 1 for a gather or scatter.
pub fn convert_indexed_raw<I: Index>(
    src: &RawTensor<'_>,
    dst: &mut RawTensor<'_>,
    (kind, block_rows): (IndexKind, usize),
    table: &CudaSlice<I>,
    convert: &Convert,
    status: &mut IndexStatus,
    stream: &Arc<CudaStream>,
) -> Result<ConvertPlan> {
    let (sp, dp) = (src.place(), dst.place());
    sp.check()?;
    dp.check()?;
    let plan = ConvertPlan::indexed(
        (src.dtype(), dst.dtype()),
        (sp.layout, dp.layout),
        kind,
        block_rows,
        (table.len(), I::BYTES as usize),
        convert,
    )?;
    if plan.route == ConvertRoute::Empty {
        return Ok(plan);
    }
    check_context("source", src.context(), stream)?;
    check_context("destination", dst.context(), stream)?;
    let at = |t: &RawTensor| t.ptr() + (t.offset() * t.dtype().size_bytes()) as u64;
    launch_indexed_convert(&plan, (at(src), at(dst)), table, status, stream)?;
    Ok(plan)
}

/// Launch a non-empty index-driven convert plan with its table and status on the stream.
fn launch_indexed_convert<I: Index>(
    plan: &ConvertPlan,
    (src, dst): (u64, u64),
    table: &CudaSlice<I>,
    status: &mut IndexStatus,
    stream: &Arc<CudaStream>,
) -> Result<()> {
    check_context("the status buffer", status.buf.context(), stream)?;
    let (idx, _ig) = index_addr(table, stream)?;
    let (status_addr, _sg) = status.addr(stream);
    crate::launch::convert(plan, src, dst, Some((idx, status_addr)), stream)
}
