//! Copies that convert on the way, with `convert_tensor`: camera frames u8 NHWC -> f32 NCHW
//! normalized with ImageNet's mean and std (one launch instead of a permute, a cast and a
//! normalize), activations f32 -> bf16, and attention heads f16 [B,H,S,D] -> FP8 E4M3
//! [B,S,H,D] with a scale; and with `convert_scatter_rows`, new bf16 keys written into an FP8
//! KV-cache pool at a slot mapping (padding slots -1) with a scale. Each is checked against the
//! host model of the conversion, then timed.
//!
//!   cargo run --release --example convert_frames
//!
//! Without a GPU it prints `no GPU: <why>` and exits 0 (non-zero with CUTE_COPY_REQUIRE_GPU=1).

mod common;

use std::process::ExitCode;
use std::sync::Arc;

use common::no_gpu;
use cute_copy::cudarc::driver::CudaStream;
use cute_copy::reference::{expected_tensor_convert, random_elements, same_value};
use cute_copy::{Convert, DeviceTensor, Element, IndexStatus, Layout};

const ITERS: usize = 20;

type F8 = float8::F8E4M3;

fn main() -> ExitCode {
    let stream = match cute_copy::stream(0) {
        Ok(s) => s,
        Err(e) => return no_gpu(e),
    };
    let run = || -> Result<(), Box<dyn std::error::Error>> {
        let (name, (major, minor)) = cute_copy::describe(stream.context())?;
        println!("GPU: {name} (sm_{major}{minor})");
        let imagenet =
            Convert::new().normalize(1, &[123.675, 116.28, 103.53], &[58.395, 57.12, 57.375]);
        convert::<u8, f32>(
            &stream,
            "frames u8 NHWC -> f32 NCHW, normalized",
            &[32, 224, 224, 3],
            &[0, 3, 1, 2],
            &imagenet,
        )?;
        convert::<f32, half::bf16>(
            &stream,
            "activations f32 -> bf16",
            &[4096, 4097],
            &[0, 1],
            &Convert::new(),
        )?;
        convert::<half::f16, float8::F8E4M3>(
            &stream,
            "heads f16 [B,H,S,D] -> FP8 E4M3 [B,S,H,D], scale 64",
            &[4, 16, 1025, 96],
            &[0, 2, 1, 3],
            &Convert::new().scale(64.0),
        )?;
        kv_write_fp8(&stream, (4096, 8, 128))?;
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

/// A packed `shape` of S seen through `order`, converted into a packed D of the permuted shape.
fn convert<S: Element, D: Element>(
    stream: &Arc<CudaStream>,
    what: &str,
    shape: &[usize],
    order: &[usize],
    spec: &Convert,
) -> Result<(), Box<dyn std::error::Error>> {
    let storage = Layout::row_major(shape)?;
    let view = storage.permute(order)?;
    let host: Vec<S> = random_elements(storage.size(), 11);
    let x = DeviceTensor::from_host(stream, storage, &host)?;
    let out = Layout::row_major(view.shape())?;
    let mut y = DeviceTensor::<D>::zeros(stream, out)?;
    let xv = x.view().permute(order)?;
    let plan = cute_copy::convert_tensor(&xv, &mut y.view_mut(), spec, stream)?;
    let got = y.to_host(stream)?;
    let zeros = vec![D::from_bits(0); out.size()];
    let want = expected_tensor_convert(&host, (0, &view), &zeros, (0, &out), spec)?;
    let bad = got
        .iter()
        .zip(&want)
        .filter(|(g, w)| !same_value(D::DTYPE, g.to_bits(), w.to_bits()))
        .count();
    if bad != 0 {
        return Err(format!("{what}: {bad} elements differ from the host model").into());
    }
    let ms = cute_copy::timing::time_launches(stream, 3, ITERS, || {
        cute_copy::convert_tensor(&xv, &mut y.view_mut(), spec, stream).map(|_| ())
    })?;
    println!("\n{what}: {shape:?} permuted {order:?}, checked against the host model");
    print!("{plan}");
    println!(
        "  {:.3} ms per launch, {:.0} GB/s read + written",
        ms,
        cute_copy::timing::gbps(plan.bytes_moved(), ms)
    );
    Ok(())
}

/// vLLM's reshape_and_cache into an FP8 cache: `tokens` keys `[tokens, heads, head_dim]` of bf16,
/// scaled by 1 / 0.05 and written as FP8 E4M3 into a pool of twice as many slots at a slot
/// mapping (every 7th token a padding token, -1), in one launch.
fn kv_write_fp8(
    stream: &Arc<CudaStream>,
    (tokens, heads, head_dim): (usize, usize, usize),
) -> Result<(), Box<dyn std::error::Error>> {
    let slots = 2 * tokens;
    let (keys, pool) = (
        Layout::row_major(&[tokens, heads, head_dim])?,
        Layout::row_major(&[slots, heads, head_dim])?,
    );
    let host: Vec<half::bf16> = random_elements(keys.size(), 12);
    let x = DeviceTensor::from_host(stream, keys, &host)?;
    let mut cache = DeviceTensor::<F8>::zeros(stream, pool)?;
    let mapping: Vec<i64> = (0..tokens as i64)
        .map(|t| {
            if t % 7 == 6 {
                -1
            } else {
                (t * 37) % slots as i64
            }
        })
        .collect();
    let idx = cute_copy::upload_indices(stream, &mapping, slots)?;
    let mut status = IndexStatus::new(stream)?;
    let scale = Convert::new().scale(1.0 / 0.05);
    let plan = cute_copy::convert_scatter_rows(
        &x.view(),
        &idx,
        &mut cache.view_mut(),
        &scale,
        &mut status,
        stream,
    )?;
    status.check(stream)?;
    // the host model: each written slot is the token's row converted, every other slot stays 0
    let row = heads * head_dim;
    let one = Layout::row_major(&[row])?;
    let mut want = vec![<F8 as Element>::from_bits(0); pool.size()];
    for (t, &slot) in mapping.iter().enumerate() {
        if slot >= 0 {
            want = expected_tensor_convert(
                &host,
                (t * row, &one),
                &want,
                (slot as usize * row, &one),
                &scale,
            )?;
        }
    }
    let got = cache.to_host(stream)?;
    let bad = got
        .iter()
        .zip(&want)
        .filter(|(&g, &w)| !same_value(F8::DTYPE, Element::to_bits(g), Element::to_bits(w)))
        .count();
    if bad != 0 {
        return Err(format!("KV-cache write: {bad} elements differ from the host model").into());
    }
    let ms = cute_copy::timing::time_launches(stream, 3, ITERS, || {
        cute_copy::convert_scatter_rows(
            &x.view(),
            &idx,
            &mut cache.view_mut(),
            &scale,
            &mut status,
            stream,
        )
        .map(|_| ())
    })?;
    status.check(stream)?;
    println!("\nKV-cache write: {tokens} bf16 tokens [{heads}, {head_dim}] -> FP8 E4M3 pool of {slots} slots, checked against the host model");
    print!("{plan}");
    println!(
        "  {:.3} ms per launch, {:.0} GB/s read + written",
        ms,
        cute_copy::timing::gbps(plan.bytes_moved(), ms)
    );
    Ok(())
}
