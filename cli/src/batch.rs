//! `blocks` and `batch`: many copies in one launch on the GPU, verified against the host and timed
//! against a device-to-device memcpy of the same bytes.
//!
//!   blocks: a paged-cache block gather (`copy_blocks`): `--count` random blocks of
//!           `--block-rows x --cols` from a pool of `--pool` blocks into a packed buffer, every
//!           `--skip-every`-th entry negative (skipped).
//!   batch:  `--copies` random 2D copies (1..=max-rows x 1..=max-cols, random offsets) between two
//!           matrices, in one `Batch` launch.

use std::sync::Arc;

use clap::Args;
use cute_copy::cudarc::driver::CudaStream;
use cute_copy::reference::random_elements;
use cute_copy::timing::{gbps, time_launches};
use cute_copy::{Batch, BatchPlan, DType, DeviceMatrix, Element, IndexStatus, Region};
use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng};

use crate::flags::parse_dtype;
use crate::run::{gpu, with_element};
use crate::CliResult;

#[derive(Args)]
pub(crate) struct BlocksArgs {
    /// Element type.
    #[arg(long, value_parser = parse_dtype, default_value = "f16")]
    dtype: DType,
    /// Blocks in the source pool.
    #[arg(long, default_value_t = 4096)]
    pool: usize,
    /// Rows per block.
    #[arg(long, default_value_t = 16)]
    block_rows: usize,
    /// Columns (elements per row).
    #[arg(long, default_value_t = 128)]
    cols: usize,
    /// Leading dimension of the pool [default: --cols].
    #[arg(long)]
    ld_src: Option<usize>,
    /// Leading dimension of the destination [default: --cols].
    #[arg(long)]
    ld_dst: Option<usize>,
    /// Blocks gathered.
    #[arg(long, default_value_t = 300)]
    count: usize,
    /// Blocks in a destination pool that the blocks are scattered into: sources and destinations
    /// are then each `--count` distinct random blocks (torch's `randperm(pool)[:count]`, what a
    /// vLLM block swap does); 0 gathers into `--count` packed blocks in order, sources drawn with
    /// repeats.
    #[arg(long, default_value_t = 0)]
    dst_pool: usize,
    /// Every n-th table entry is -1 (skipped); 0 for none.
    #[arg(long, default_value_t = 0)]
    skip_every: usize,
    /// Timed iterations.
    #[arg(long, default_value_t = 50)]
    iters: usize,
}

#[derive(Args)]
pub(crate) struct BatchArgs {
    /// Element type.
    #[arg(long, value_parser = parse_dtype, default_value = "f16")]
    dtype: DType,
    /// Copies in the batch.
    #[arg(long, default_value_t = 10_000)]
    copies: usize,
    /// Largest rows of a copy.
    #[arg(long, default_value_t = 64)]
    max_rows: usize,
    /// Largest cols of a copy.
    #[arg(long, default_value_t = 512)]
    max_cols: usize,
    /// Timed iterations.
    #[arg(long, default_value_t = 20)]
    iters: usize,
}

fn d2d_gbps(stream: &Arc<CudaStream>, bytes: usize, iters: usize) -> CliResult<f64> {
    let n = (bytes / 2).max(1);
    let a = DeviceMatrix::<u8>::zeros(stream, 1, n, n)?;
    let mut b = DeviceMatrix::<u8>::zeros(stream, 1, n, n)?;
    let ms = time_launches(stream, 3, iters, || {
        cute_copy::launch_baseline(
            cute_copy::Baseline::Memcpy,
            &a.view(),
            &mut b.view_mut(),
            stream,
        )
    })?;
    Ok(gbps(n * 2, ms))
}

fn report(plan: &BatchPlan, ms: f64, d2d: f64) {
    outln!("{plan}");
    let g = gbps(plan.bytes as usize, ms);
    outln!(
        "time: {:.2} us per launch ({} bytes read+written): {g:.1} GB/s; D2D memcpy of the same bytes {d2d:.1} GB/s; ratio {:.2}",
        ms * 1e3,
        plan.bytes,
        g / d2d
    );
}

pub(crate) fn blocks(a: &BlocksArgs) -> CliResult {
    let stream = gpu()?;
    with_element!(a.dtype, blocks_typed(&stream, a))
}

fn blocks_typed<T: Element>(stream: &Arc<CudaStream>, a: &BlocksArgs) -> CliResult {
    let mut rng = rand::rngs::StdRng::seed_from_u64(5);
    let (lds, ldd) = (a.ld_src.unwrap_or(a.cols), a.ld_dst.unwrap_or(a.cols));
    let pool_host: Vec<T> = random_elements(a.pool * a.block_rows * lds, rng.random());
    let pool = DeviceMatrix::from_host(stream, a.pool * a.block_rows, a.cols, lds, &pool_host)?;
    let dst_blocks = if a.dst_pool > 0 { a.dst_pool } else { a.count };
    if a.dst_pool > 0 && (a.count > a.pool || a.count > a.dst_pool) {
        return Err(format!(
            "--dst-pool draws {} distinct blocks from pools of {} and {}",
            a.count, a.pool, a.dst_pool
        )
        .into());
    }
    let out_host: Vec<T> = random_elements(dst_blocks * a.block_rows * ldd, rng.random());
    let mut out =
        DeviceMatrix::from_host(stream, dst_blocks * a.block_rows, a.cols, ldd, &out_host)?;
    let (srcs, dsts): (Vec<i64>, Vec<i64>) = if a.dst_pool > 0 {
        let mut s: Vec<i64> = (0..a.pool as i64).collect();
        let mut d: Vec<i64> = (0..a.dst_pool as i64).collect();
        s.shuffle(&mut rng);
        d.shuffle(&mut rng);
        (s[..a.count].to_vec(), d[..a.count].to_vec())
    } else {
        let s = (0..a.count).map(|_| rng.random_range(0..a.pool as i64));
        (s.collect(), (0..a.count as i64).collect())
    };
    let table: Vec<i64> = (0..a.count)
        .flat_map(|k| {
            let skip = a.skip_every > 0 && k % a.skip_every == a.skip_every - 1;
            [if skip { -1 } else { srcs[k] }, dsts[k]]
        })
        .collect();
    let table_dev = cute_copy::upload_indices(stream, &table, a.pool.max(dst_blocks))?;
    let mut status = IndexStatus::new(stream)?;
    let plan = cute_copy::copy_blocks(
        &pool.view(),
        &mut out.view_mut(),
        a.block_rows,
        &table_dev,
        &mut status,
        stream,
    )?;
    status.check(stream)?;
    let got = out.to_host(stream)?;
    // The host reference: the destination as it was, with every pair's rows moved.
    let mut want = out_host.clone();
    for pair in table.chunks(2) {
        let (s, d) = (pair[0], pair[1] as usize);
        if s < 0 {
            continue;
        }
        for r in 0..a.block_rows {
            let (so, dof) = (
                (s as usize * a.block_rows + r) * lds,
                (d * a.block_rows + r) * ldd,
            );
            want[dof..dof + a.cols].copy_from_slice(&pool_host[so..so + a.cols]);
        }
    }
    let bad = want
        .iter()
        .zip(&got)
        .filter(|(w, g)| w.to_bits() != g.to_bits())
        .count();
    if bad > 0 {
        return Err(format!("{bad} destination elements differ from the host reference").into());
    }
    outln!(
        "verified: {} blocks gathered ({} skipped), every element of the destination allocation matches the host reference",
        a.count,
        table.chunks(2).filter(|p| p[0] < 0).count()
    );
    let ms = time_launches(stream, 3, a.iters, || {
        cute_copy::copy_blocks(
            &pool.view(),
            &mut out.view_mut(),
            a.block_rows,
            &table_dev,
            &mut status,
            stream,
        )
        .map(drop)
    })?;
    report(&plan, ms, d2d_gbps(stream, plan.bytes as usize, a.iters)?);
    Ok(())
}

pub(crate) fn batch(a: &BatchArgs) -> CliResult {
    let stream = gpu()?;
    with_element!(a.dtype, batch_typed(&stream, a))
}

fn batch_typed<T: Element>(stream: &Arc<CudaStream>, a: &BatchArgs) -> CliResult {
    let mut rng = rand::rngs::StdRng::seed_from_u64(6);
    let (max_r, max_c) = (a.max_rows.max(1), a.max_cols.max(1));
    let ld = (8 * max_c).max(1024);
    let src_rows = 4 * max_r + 64;
    let src_host: Vec<T> = random_elements(src_rows * ld, rng.random());
    let src = DeviceMatrix::from_host(stream, src_rows, ld, ld, &src_host)?;
    let mut batch = Batch::<T>::new();
    let mut pairs = Vec::with_capacity(a.copies);
    let (mut row, mut col, mut band) = (0usize, 0usize, 0usize);
    for _ in 0..a.copies {
        let (r, c) = (rng.random_range(1..=max_r), rng.random_range(1..=max_c));
        if col + c + 8 > ld {
            (row, col, band) = (row + band, 0, 0);
        }
        let s = Region::at(
            rng.random_range(0..=src_rows - r),
            rng.random_range(0..=ld - c),
            r,
            c,
            ld,
        );
        let d = Region::at(row, col + rng.random_range(0..8), r, c, ld);
        (col, band) = (col + c + 8, band.max(r));
        batch.push(s, d)?;
        pairs.push((s, d));
    }
    let dst_rows = row + band + 1;
    if a.copies > 1000 {
        eprintln!(
            "batch: {} copies into a {dst_rows} x {ld} destination",
            a.copies
        );
    }
    let before: Vec<T> = random_elements(dst_rows * ld, rng.random());
    let mut dst = DeviceMatrix::from_host(stream, dst_rows, ld, ld, &before)?;
    let plan = batch.plan()?;
    batch.launch(&src.view(), &mut dst.view_mut(), stream)?;
    let got = dst.to_host(stream)?;
    let mut want = before;
    for (s, d) in &pairs {
        for r in 0..s.rows {
            want[d.offset + r * ld..d.offset + r * ld + s.cols]
                .copy_from_slice(&src_host[s.offset + r * ld..s.offset + r * ld + s.cols]);
        }
    }
    let bad = (0..want.len())
        .filter(|&i| want[i].to_bits() != got[i].to_bits())
        .count();
    if bad > 0 {
        return Err(format!("{bad} destination elements differ from the host reference").into());
    }
    outln!("verified: {} copies, every element of the destination allocation matches the host reference", a.copies);
    let ms = time_launches(stream, 3, a.iters, || {
        batch
            .launch(&src.view(), &mut dst.view_mut(), stream)
            .map(drop)
    })?;
    report(&plan, ms, d2d_gbps(stream, plan.bytes as usize, a.iters)?);
    Ok(())
}
