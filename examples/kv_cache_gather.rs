//! Paged KV-cache block gather, as an LLM server does it: a pool of 4096 blocks, each 16 tokens x
//! 8 heads x 128 dims of f16 (32 KiB), and a block table of (pool block, output slot) pairs on
//! the device. One `copy_blocks` launch gathers the blocks a batch of sequences needs into a packed
//! buffer; a negative pool index skips its slot (a padding entry). The result is checked against a
//! host reference and the bandwidth printed.
//!
//! `cargo run --release --example kv_cache_gather` (prints "no GPU" and exits 0 without one,
//! unless CUTE_COPY_REQUIRE_GPU=1).

mod common;

use std::process::ExitCode;

use common::no_gpu;
use cute_copy::reference::random_elements;
use cute_copy::{DeviceMatrix, IndexStatus};
use half::f16;
use rand::{Rng, SeedableRng};

fn main() -> ExitCode {
    let stream = match cute_copy::stream(0) {
        Ok(s) => s,
        Err(e) => return no_gpu(e),
    };
    match run(&stream) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}

fn run(stream: &std::sync::Arc<cute_copy::cudarc::driver::CudaStream>) -> cute_copy::Result<()> {
    let (pool_blocks, block_tokens, width) = (4096usize, 16usize, 8 * 128usize);
    let slots = 600usize;
    let mut rng = rand::rngs::StdRng::seed_from_u64(2026);

    // The cache pool: [pool_blocks, block_tokens, heads * dims], row-major = a matrix of
    // pool_blocks * block_tokens rows.
    let pool_host: Vec<f16> = random_elements(pool_blocks * block_tokens * width, rng.random());
    let pool =
        DeviceMatrix::from_host(stream, pool_blocks * block_tokens, width, width, &pool_host)?;
    let mut out = DeviceMatrix::<f16>::zeros(stream, slots * block_tokens, width, width)?;

    // The block table: slot k takes pool block table[2k]; every 50th slot is padding (-1).
    let table: Vec<i32> = (0..slots)
        .flat_map(|k| {
            let block = if k % 50 == 49 {
                -1
            } else {
                rng.random_range(0..pool_blocks as i32)
            };
            [block, k as i32]
        })
        .collect();
    let table_dev = cute_copy::upload_indices(stream, &table, pool_blocks)?;
    let mut status = IndexStatus::new(stream)?;

    let plan = cute_copy::copy_blocks(
        &pool.view(),
        &mut out.view_mut(),
        block_tokens,
        &table_dev,
        &mut status,
        stream,
    )?;
    status.check(stream)?; // waits; an index past the pool would be an Err here
    println!("{plan}");

    // Verify against the host, bit for bit (random bits include NaNs, which never compare equal).
    let got = out.to_host(stream)?;
    let block = block_tokens * width;
    let bits = |v: &[f16]| v.iter().map(|x| x.to_bits()).collect::<Vec<u16>>();
    for k in 0..slots {
        let src = table[2 * k];
        let want = if src < 0 {
            vec![0u16; block] // never written: the buffer started zeroed
        } else {
            bits(&pool_host[src as usize * block..(src as usize + 1) * block])
        };
        if bits(&got[k * block..(k + 1) * block]) != want {
            return Err(cute_copy::Error::Shape(format!(
                "slot {k} differs from pool block {src}"
            )));
        }
    }
    println!(
        "verified: {slots} slots ({} skipped) match the pool blocks",
        slots / 50
    );

    // Bandwidth: launches back to back, timed with CUDA events.
    let ms = cute_copy::timing::time_launches(stream, 5, 50, || {
        cute_copy::copy_blocks(
            &pool.view(),
            &mut out.view_mut(),
            block_tokens,
            &table_dev,
            &mut status,
            stream,
        )
        .map(drop)
    })?;
    let bytes = plan.bytes as f64;
    println!(
        "copy_blocks: {:.1} us per launch, {:.0} GB/s (bytes read + written)",
        ms * 1e3,
        bytes / (ms * 1e-3) / 1e9
    );
    Ok(())
}
