//! Layout changes on the GPU with `copy_tensor`: attention heads [B,H,S,D] -> [B,S,H,D] (what
//! `x.permute(0, 2, 1, 3).contiguous()` does), images NCHW -> NHWC, and a square f32 transpose;
//! then shapes real programs have: an odd-sized transpose (realigned 16-byte vectors on both
//! sides), a head dim of 80 (a rows tile in registers) and a batch of tiny 5 x 3 matrices (the items
//! tile); each checked against the same permutation done on the CPU, then timed.
//!
//!   cargo run --release --example permute_layouts
//!
//! Without a GPU it prints `no GPU: <why>` and exits 0 (non-zero with CUTE_COPY_REQUIRE_GPU=1).

mod common;

use std::process::ExitCode;
use std::sync::Arc;

use common::no_gpu;
use cute_copy::cudarc::driver::CudaStream;
use cute_copy::{DeviceTensor, Element, Layout};
use rand::{Rng, SeedableRng};

const ITERS: usize = 20;

fn main() -> ExitCode {
    let stream = match cute_copy::stream(0) {
        Ok(s) => s,
        Err(e) => return no_gpu(e),
    };
    let run = || -> Result<(), Box<dyn std::error::Error>> {
        let (name, (major, minor)) = cute_copy::describe(stream.context())?;
        println!("GPU: {name} (sm_{major}{minor})");
        permute::<half::f16>(
            &stream,
            "heads [B,H,S,D] -> [B,S,H,D]",
            &[4, 16, 2048, 128],
            &[0, 2, 1, 3],
        )?;
        permute::<f32>(
            &stream,
            "images NCHW -> NHWC",
            &[32, 3, 224, 224],
            &[0, 2, 3, 1],
        )?;
        permute::<f32>(&stream, "transpose", &[8192, 8192], &[1, 0])?;
        permute::<half::f16>(&stream, "odd transpose", &[9001, 5003], &[1, 0])?;
        permute::<half::bf16>(
            &stream,
            "heads of 80 [B,H,S,D] -> [B,S,H,D]",
            &[8, 16, 1025, 80],
            &[0, 2, 1, 3],
        )?;
        permute::<f32>(
            &stream,
            "tiny matrices [N,3,5] -> [N,5,3]",
            &[131072, 3, 5],
            &[0, 2, 1],
        )?;
        Ok(())
    };
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}

/// A packed tensor of `shape`, copied into a packed tensor of its permuted shape.
fn permute<T: Element>(
    stream: &Arc<CudaStream>,
    what: &str,
    shape: &[usize],
    order: &[usize],
) -> Result<(), Box<dyn std::error::Error>> {
    let storage = Layout::row_major(shape)?;
    let mut rng = rand::rngs::StdRng::seed_from_u64(0x5eed);
    let host: Vec<T> = cute_copy::reference::random_elements(storage.size(), rng.random());
    let x = DeviceTensor::from_host(stream, storage, &host)?;
    let view = x.view().permute(order)?; // no copy: the same memory, modes reordered
    let mut y = DeviceTensor::<T>::zeros(stream, Layout::row_major(view.layout().shape())?)?;
    let plan = cute_copy::copy_tensor(&view, &mut y.view_mut(), stream)?;
    println!("== {what}: {} -> {}", view.layout(), y.layout());
    print!("{plan}");

    // The same permutation on the CPU: y[i] = x[offset of the view's i-th coordinate].
    let mut expected = vec![T::from_bits(0); storage.size()];
    let mut i = 0;
    cute_copy::reference::for_each_pair(&view.layout(), &y.layout(), |s, d| {
        expected[d] = host[s];
        i += 1;
    });
    let got = y.to_host(stream)?;
    if let Some(k) = (0..got.len()).find(|&k| got[k].to_bits() != expected[k].to_bits()) {
        return Err(format!("{what}: element {k} differs from the CPU permutation").into());
    }
    println!("verified: all {i} elements match the CPU permutation");

    let ms = cute_copy::timing::time_launches(stream, 3, ITERS, || {
        cute_copy::copy_tensor(&view, &mut y.view_mut(), stream).map(|_| ())
    })?;
    let bytes = plan.bytes_moved();
    println!(
        "bandwidth: {:.1} GB/s ({bytes} bytes read + written in {ms:.4} ms, mean of {ITERS})",
        cute_copy::timing::gbps(bytes, ms)
    );
    Ok(())
}
