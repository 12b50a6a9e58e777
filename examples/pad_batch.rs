//! Pad a batch of f16 matrices to tile multiples on the GPU: 16 matrices of random shapes between
//! 1000x1000 and 1100x1100, each padded with `cute_copy::pad` to the next multiples of 128 (the
//! extra rows and columns written as zeros, in the same launch), checked on the CPU, then timed.
//!
//!   cargo run --release --example pad_batch
//!
//! Without a GPU it prints `no GPU: <why>` and exits 0 (non-zero with CUTE_COPY_REQUIRE_GPU=1).

mod common;

use std::process::ExitCode;
use std::sync::Arc;

use common::no_gpu;
use cute_copy::cudarc::driver::CudaStream;
use cute_copy::DeviceMatrix;
use half::f16;
use rand::{Rng, SeedableRng};

const BATCH: usize = 16;
const TILE: usize = 128;
const ITERS: usize = 10;

fn main() -> ExitCode {
    let stream = match cute_copy::stream(0) {
        Ok(s) => s,
        Err(e) => return no_gpu(e),
    };
    match pad_batch(&stream) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}

/// One matrix of the batch, on the host and on the device.
struct Item {
    host: Vec<f16>,
    src: DeviceMatrix<f16>,
    dst: DeviceMatrix<f16>,
}

fn pad_batch(stream: &Arc<CudaStream>) -> Result<(), Box<dyn std::error::Error>> {
    let (name, (major, minor)) = cute_copy::describe(stream.context())?;
    println!("GPU: {name} (sm_{major}{minor})");

    let mut rng = rand::rngs::StdRng::seed_from_u64(0x5eed);
    let mut batch = Vec::with_capacity(BATCH);
    for _ in 0..BATCH {
        let (rows, cols): (usize, usize) =
            (rng.random_range(1000..=1100), rng.random_range(1000..=1100));
        let (prows, pcols) = (rows.next_multiple_of(TILE), cols.next_multiple_of(TILE));
        // Values in [1, 2): never zero, so a zero can only come from the pad.
        let host: Vec<f16> = (0..rows * cols)
            .map(|_| f16::from_f32(rng.random_range(1.0..2.0)))
            .collect();
        let src = DeviceMatrix::from_host(stream, rows, cols, cols, &host)?;
        // Poison the destination (NaN everywhere) so that every element the pad misses shows.
        let poison = vec![f16::NAN; prows * pcols];
        let dst = DeviceMatrix::from_host(stream, prows, pcols, pcols, &poison)?;
        batch.push(Item { host, src, dst });
    }

    let mut bytes = 0;
    for (i, item) in batch.iter_mut().enumerate() {
        let plan = cute_copy::pad(&item.src.view(), &mut item.dst.view_mut(), stream)?;
        if i == 0 {
            println!("{plan}");
        }
        println!(
            "matrix {i:2}: {}x{} -> {}x{} on {}",
            item.src.rows(),
            item.src.cols(),
            item.dst.rows(),
            item.dst.cols(),
            plan.atom.cli_name()
        );
        bytes += plan.bytes_moved();
    }

    // Check on the CPU: the data in the top-left, zeros (+0.0, bit for bit) everywhere else.
    for (i, item) in batch.iter().enumerate() {
        let (rows, cols) = (item.src.rows(), item.src.cols());
        let pcols = item.dst.cols();
        let got = item.dst.to_host(stream)?;
        for (k, v) in got.iter().enumerate() {
            let (r, c) = (k / pcols, k % pcols);
            let want = if r < rows && c < cols {
                item.host[r * cols + c]
            } else {
                f16::ZERO
            };
            if v.to_bits() != want.to_bits() {
                return Err(format!(
                    "matrix {i}: element ({r}, {c}) is {v} (bits {:#06x}), expected {want}",
                    v.to_bits()
                )
                .into());
            }
        }
    }
    println!("verified: all {BATCH} padded matrices hold their data and zeros in the pad");

    // Bandwidth: the whole batch, back to back on one stream, timed with CUDA events.
    let ms = cute_copy::timing::time_launches(stream, 2, ITERS, || {
        for item in batch.iter_mut() {
            cute_copy::pad(&item.src.view(), &mut item.dst.view_mut(), stream)?;
        }
        Ok(())
    })?;
    println!(
        "bandwidth: {:.1} GB/s ({bytes} bytes read + written in {ms:.4} ms per batch of {BATCH}, mean of {ITERS})",
        cute_copy::timing::gbps(bytes, ms)
    );
    Ok(())
}
