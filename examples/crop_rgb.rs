//! Crop an RGB image on the GPU: a 3000x4000-pixel u8 image (3 bytes per pixel, so a
//! 3000 x 12000-byte matrix) cropped at an odd offset (row 7, pixel 5 = byte column 15) into a
//! packed buffer, checked against a crop done on the CPU, then timed.
//!
//!   cargo run --release --example crop_rgb
//!
//! Without a GPU it prints `no GPU: <why>` and exits 0 (non-zero with CUTE_COPY_REQUIRE_GPU=1).

mod common;

use std::process::ExitCode;
use std::sync::Arc;

use common::no_gpu;
use cute_copy::cudarc::driver::CudaStream;
use cute_copy::DeviceMatrix;
use rand::{Rng, SeedableRng};

const HEIGHT: usize = 3000;
const WIDTH: usize = 4000;
const CHANNELS: usize = 3; // R, G, B bytes per pixel
/// The crop: top-left pixel (row, pixel column) and size in pixels. Both offsets are odd, so the
/// crop's first byte is at column 15 of row 7: only byte-wide accesses are aligned there.
const TOP: usize = 7;
const LEFT: usize = 5;
const CROP_H: usize = 2001;
const CROP_W: usize = 3001;
const ITERS: usize = 20;

fn main() -> ExitCode {
    let stream = match cute_copy::stream(0) {
        Ok(s) => s,
        Err(e) => return no_gpu(e),
    };
    match crop(&stream) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}

fn crop(stream: &Arc<CudaStream>) -> Result<(), Box<dyn std::error::Error>> {
    let (name, (major, minor)) = cute_copy::describe(stream.context())?;
    println!("GPU: {name} (sm_{major}{minor})");

    // The image as a u8 matrix: HEIGHT rows of WIDTH * CHANNELS bytes, packed.
    let row_bytes = WIDTH * CHANNELS;
    let mut rng = rand::rngs::StdRng::seed_from_u64(0x5eed);
    let image: Vec<u8> = (0..HEIGHT * row_bytes).map(|_| rng.random()).collect();
    let src = DeviceMatrix::from_host(stream, HEIGHT, row_bytes, row_bytes, &image)?;

    // The crop, packed: CROP_H rows of CROP_W * CHANNELS bytes.
    let crop_bytes = CROP_W * CHANNELS;
    let mut dst = DeviceMatrix::<u8>::zeros(stream, CROP_H, crop_bytes, crop_bytes)?;

    // A sub-view of the image: no copy, just (row 7, byte column 15) and the crop's shape.
    let window = src.view().sub(TOP, LEFT * CHANNELS, CROP_H, crop_bytes)?;
    let plan = cute_copy::copy(&window, &mut dst.view_mut(), stream)?;
    println!("{plan}");

    // The same crop on the CPU.
    let expected: Vec<u8> = (TOP..TOP + CROP_H)
        .flat_map(|r| {
            let start = r * row_bytes + LEFT * CHANNELS;
            image[start..start + crop_bytes].iter().copied()
        })
        .collect();
    let got = dst.to_host(stream)?;
    if let Some(i) = (0..expected.len()).find(|&i| got[i] != expected[i]) {
        return Err(format!(
            "crop differs from the CPU crop at pixel ({}, {}), channel {}: {} != {}",
            i / crop_bytes,
            i % crop_bytes / CHANNELS,
            i % CHANNELS,
            got[i],
            expected[i]
        )
        .into());
    }
    println!(
        "verified: the {CROP_H}x{CROP_W}-pixel crop at pixel ({TOP}, {LEFT}) matches the CPU crop"
    );

    // Bandwidth: the same plan launched back to back, timed with CUDA events.
    let ms = cute_copy::timing::time_launches(stream, 3, ITERS, || {
        cute_copy::launch(&plan, &window, &mut dst.view_mut(), stream)
    })?;
    let bytes = 2 * CROP_H * crop_bytes; // read + written
    println!(
        "bandwidth: {:.1} GB/s ({bytes} bytes read + written in {ms:.4} ms per crop, mean of {ITERS})",
        cute_copy::timing::gbps(bytes, ms)
    );
    Ok(())
}
