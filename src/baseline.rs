//! Baselines that are not CuTe, for benchmarks and for the numbers in BENCHMARKS.md: the 2D
//! baselines ([`Baseline`]: a naive and a hand-vectorized kernel, `cudaMemcpy2DAsync`,
//! `cudaMemcpyAsync`) and the batch baselines ([`BatchBaseline`]: a hand-written block gather,
//! one `cudaMemcpyAsync` per piece, one `cudaMemcpyBatchAsync`), kept out of the user API's files.
//! Their kernels are `cpp/baselines.cu`.

use std::sync::Arc;

use cudarc::driver::{CudaSlice, CudaStream};

use crate::batch::Batch;
use crate::copy::{enqueue_typed, make_plan, side_of, side_of_mut};
use crate::error::{Error, Result};
use crate::ffi::{self, BaselineKernel, PiecesBaseline, RowsDesc};
use crate::gather::{check_cols, index_addr, pinned_pair};
use crate::plan::Operation;
use crate::view::{MatrixView, MatrixViewMut};
use crate::{Atom, Element};

/// A non-CuTe baseline, for comparison in benchmarks.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Baseline {
    /// One element per thread.
    Naive,
    /// Hand-vectorized 16-byte accesses with a scalar tail (16-byte-aligned rows only).
    Vectorized16,
    /// `cudaMemcpy2DAsync`, device to device.
    Memcpy2D,
    /// `cudaMemcpyAsync` of the same byte count, contiguous: the practical limit.
    Memcpy,
}

impl Baseline {
    fn kernel(self) -> BaselineKernel {
        match self {
            Baseline::Naive => BaselineKernel::Naive,
            Baseline::Vectorized16 => BaselineKernel::Vectorized16,
            Baseline::Memcpy2D => BaselineKernel::Memcpy2D,
            Baseline::Memcpy => BaselineKernel::Memcpy,
        }
    }
}

/// Launch a baseline copy of `src` into `dst` (same shape). `Memcpy` needs both views packed.
pub fn launch_baseline<T: Element>(
    which: Baseline,
    src: &MatrixView<'_, T>,
    dst: &mut MatrixViewMut<'_, T>,
    stream: &Arc<CudaStream>,
) -> Result<()> {
    // An element-wise plan: the baselines take the views' own shapes, never a coalesced run.
    let plan = make_plan(
        T::DTYPE,
        &side_of(src)?,
        &side_of_mut(dst)?,
        Some(Atom::Universal),
        Some(Operation::Copy),
        stream.context(),
    )?;
    if which == Baseline::Memcpy && (plan.src.ld != plan.src.cols || plan.dst.ld != plan.dst.cols) {
        return Err(Error::Unsupported(
            "the memcpy baseline needs packed views".into(),
        ));
    }
    if which == Baseline::Vectorized16 && (plan.src_bits < 128 || plan.dst_bits < 128) {
        return Err(Error::Unsupported(
            "the vectorized baseline needs 16-byte-aligned rows".into(),
        ));
    }
    enqueue_typed(
        &plan,
        src,
        dst,
        stream,
        ffi::Kernel::Baseline(which.kernel()),
    )
}

/// A non-CuTe way to do a batch's or block table's work, for benchmarks.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum BatchBaseline {
    /// A plain hand-written gather kernel (one CUDA block per table entry, 16-byte vectors, 4 in
    /// flight per thread); block tables of contiguous 16-byte-aligned blocks only.
    HandGather,
    /// One `cudaMemcpyAsync` per contiguous piece (a block, or a row of a block or copy); for a
    /// block table between pools on two devices, one `cuMemcpyPeerAsync` per piece.
    MemcpyEach,
    /// All pieces in one `cudaMemcpyBatchAsync` (CUDA 12.8+).
    MemcpyBatch,
}

/// The rows of one side as (address, bytes) pieces: one per row, or one when contiguous.
fn pieces_of(base: u64, rows: u64, row_bytes: u64, pitch: u64, out: &mut Vec<(u64, u64)>) {
    if rows == 0 || row_bytes == 0 {
        return;
    }
    if pitch == row_bytes {
        out.push((base, rows * row_bytes));
    } else {
        out.extend((0..rows).map(|r| (base + r * pitch, row_bytes)));
    }
}

/// [`copy_blocks`](crate::copy_blocks)'s work done by `which`, with the block table also given on the host
/// (`pairs_host`, equal to `pairs`) for the memcpy baselines, which need the addresses there.
/// Entries must be in range; negative ones are skipped.
#[allow(clippy::too_many_arguments)]
pub fn copy_blocks_baseline<T: Element>(
    which: BatchBaseline,
    src: &MatrixView<'_, T>,
    dst: &mut MatrixViewMut<'_, T>,
    block_rows: usize,
    pairs_host: &[i32],
    pairs: &CudaSlice<i32>,
    stream: &Arc<CudaStream>,
) -> Result<()> {
    check_cols(src, dst)?;
    let (src_blocks, dst_blocks) = (
        src.rows() / block_rows.max(1),
        dst.rows() / block_rows.max(1),
    );
    if block_rows == 0 || pairs_host.len() != pairs.len() || pairs_host.len() % 2 != 0 {
        return Err(Error::Shape(
            "block table: host and device copies differ, or odd".into(),
        ));
    }
    let bad = pairs_host
        .chunks(2)
        .position(|p| p[0] as i64 >= src_blocks as i64 || p[1] as i64 >= dst_blocks as i64);
    if let Some(first) = bad {
        return Err(Error::IndexOutOfRange {
            count: 1,
            first_item: first as u64,
        });
    }
    let e = T::DTYPE.size_bytes() as u64;
    let (cols, ls, ld, br) = (
        src.cols() as u64,
        src.ld() as u64,
        dst.ld() as u64,
        block_rows as u64,
    );
    let (idx, _ig) = index_addr(pairs, stream)?;
    let (src_ctx, dst_ctx) = (src.context().clone(), dst.context().clone());
    let (s, d, peer) = pinned_pair(src, dst, stream, "a block-table baseline")?;
    stream.context().bind_to_thread()?;
    let cu = stream.cu_stream() as u64;
    if which == BatchBaseline::HandGather {
        if ls != cols || ld != cols {
            return Err(Error::Unsupported(
                "the hand gather baseline needs contiguous blocks".into(),
            ));
        }
        let bytes = (br * cols * e) as i64;
        let desc = RowsDesc {
            src: s.addr,
            dst: d.addr,
            src_row_bytes: bytes,
            dst_row_bytes: bytes,
            src_rows: 1,
            dst_rows: 1,
            items: pairs_host.len() as i64 / 2,
            src_item_stride: bytes,
            dst_item_stride: bytes,
            src_index: idx,
            dst_index: idx + 4,
            index_bytes: 4,
            index_stride: 2,
            segs: 1,
            ..RowsDesc::default()
        };
        return ffi::launch_baseline_batch(
            Some(&desc),
            PiecesBaseline::MemcpyEach,
            (&[], &[], &[]),
            cu,
        );
    }
    let (mut dsts, mut srcs, mut sizes) = (Vec::new(), Vec::new(), Vec::new());
    for p in pairs_host.chunks(2) {
        if p[0] < 0 || p[1] < 0 {
            continue;
        }
        let (mut sp, mut dp) = (Vec::new(), Vec::new());
        pieces_of(
            s.addr + p[0] as u64 * br * ls * e,
            br,
            cols * e,
            ls * e,
            &mut sp,
        );
        pieces_of(
            d.addr + p[1] as u64 * br * ld * e,
            br,
            cols * e,
            ld * e,
            &mut dp,
        );
        if sp.len() != dp.len() {
            // One side contiguous, the other not: go row by row on both.
            sp.clear();
            dp.clear();
            sp.extend((0..br).map(|r| (s.addr + (p[0] as u64 * br + r) * ls * e, cols * e)));
            dp.extend((0..br).map(|r| (d.addr + (p[1] as u64 * br + r) * ld * e, cols * e)));
        }
        for ((sa, n), (da, _)) in sp.into_iter().zip(dp) {
            srcs.push(sa);
            dsts.push(da);
            sizes.push(n);
        }
    }
    if peer.is_some() && which == BatchBaseline::MemcpyEach {
        // Pools on two devices: one cuMemcpyPeerAsync per piece (what KV transfers do today).
        for ((&sa, &da), &n) in srcs.iter().zip(&dsts).zip(&sizes) {
            let side = |ctx, addr| ffi::PeerSide {
                ctx,
                addr,
                pitch: n,
            };
            ffi::memcpy_peer(side(&src_ctx, sa), side(&dst_ctx, da), n, 1, stream)?;
        }
        return Ok(());
    }
    let which = if which == BatchBaseline::MemcpyEach {
        PiecesBaseline::MemcpyEach
    } else {
        PiecesBaseline::MemcpyBatch
    };
    ffi::launch_baseline_batch(None, which, (&dsts, &srcs, &sizes), cu)
}

impl<T: Element> Batch<T> {
    /// The batch's work done by `which` (`MemcpyEach`: one `cudaMemcpy2DAsync` per copy;
    /// `MemcpyBatch`: every row of every copy in one `cudaMemcpyBatchAsync`), for benchmarks.
    /// Copies only (a pad's zeros are not written).
    pub fn launch_baseline(
        &self,
        which: BatchBaseline,
        src: &MatrixView<'_, T>,
        dst: &mut MatrixViewMut<'_, T>,
        stream: &Arc<CudaStream>,
    ) -> Result<()> {
        let e = T::DTYPE.size_bytes() as u64;
        self.check_views(src, dst, stream)?;
        let s = src.pin_on(stream)?;
        let d = dst.pin_on(stream)?;
        stream.context().bind_to_thread()?;
        let cu = stream.cu_stream() as u64;
        match which {
            BatchBaseline::HandGather => Err(Error::Unsupported(
                "the hand gather baseline is for block tables".into(),
            )),
            BatchBaseline::MemcpyEach => {
                for (sr, dr) in &self.pairs {
                    let desc = crate::ffi::CopyDesc {
                        atom: Atom::Universal as u32,
                        elem_bytes: e as u32,
                        src: s.addr + sr.offset as u64 * e,
                        dst: d.addr + dr.offset as u64 * e,
                        rows: sr.rows as u64,
                        cols: sr.cols as u64,
                        dst_rows: sr.rows as u64,
                        dst_cols: sr.cols as u64,
                        ld_src: sr.ld as u64,
                        ld_dst: dr.ld as u64,
                        stream: cu,
                        flags: 0,
                        lean_threads: 0,
                        prefetch: 0,
                    };
                    ffi::launch(&desc, ffi::Kernel::Baseline(BaselineKernel::Memcpy2D))?;
                }
                Ok(())
            }
            BatchBaseline::MemcpyBatch => {
                let (mut dsts, mut srcs, mut sizes) = (Vec::new(), Vec::new(), Vec::new());
                for (sr, dr) in &self.pairs {
                    for r in 0..sr.rows as u64 {
                        srcs.push(s.addr + (sr.offset as u64 + r * sr.ld as u64) * e);
                        dsts.push(d.addr + (dr.offset as u64 + r * dr.ld as u64) * e);
                        sizes.push(sr.cols as u64 * e);
                    }
                }
                let which = PiecesBaseline::MemcpyBatch;
                ffi::launch_baseline_batch(None, which, (&dsts, &srcs, &sizes), cu)
            }
        }
    }
}
