//! candle tensors through cute-copy (feature `candle`), on candle's own CUDA device, stream and
//! storage, with no host copy: a head permute, a transpose and NCHW -> NHWC made contiguous, a
//! copy into a view of a larger tensor, and a paged KV-cache block gather. Each result is checked
//! bit for bit against candle's own CPU result, and the layout changes are timed with CUDA events
//! against candle's own `Tensor::contiguous()` of the same view.
//!
//! `cargo run --release --features candle --example candle_interop` (prints "no GPU" and exits 0
//! without one, unless CUTE_COPY_REQUIRE_GPU=1). candle links the CUDA libraries (cuBLAS, cuRAND,
//! NVRTC, the driver) dynamically: they must be on the loader's path.

mod common;

use std::process::ExitCode;

use candle_core::{DType, Device, Tensor};
use common::no_gpu;
use cute_copy::candle as cc;
use cute_copy::reference::random_elements;
use cute_copy::timing::{gbps, time_launches};
use cute_copy::{Error, Result};
use half::f16;

fn main() -> ExitCode {
    let dev = match Device::new_cuda(0) {
        Ok(d) => d,
        // candle's error carries a backtrace under RUST_BACKTRACE: its first line says why.
        Err(e) => {
            let why = e.to_string();
            let why = why.lines().next().unwrap_or_default();
            return no_gpu(Error::Candle(candle_core::Error::Msg(why.to_string())));
        }
    };
    match run(&dev) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}

/// A tensor of `shape` with random bits on `dev`, and the same on the CPU.
fn random<T: cute_copy::Element + candle_core::WithDType>(
    shape: &[usize],
    seed: u64,
    dev: &Device,
) -> Result<(Tensor, Tensor)> {
    let host: Vec<T> = random_elements(shape.iter().product(), seed);
    let cpu = Tensor::from_vec(host, shape, &Device::Cpu)?;
    Ok((cpu.to_device(dev)?, cpu))
}

/// The tensor's elements as raw bits (random bits include NaNs, which never compare equal).
fn bits(t: &Tensor) -> Result<Vec<u64>> {
    let t = t.to_device(&Device::Cpu)?.flatten_all()?;
    Ok(match t.dtype() {
        DType::F16 => t
            .to_vec1::<f16>()?
            .iter()
            .map(|x| x.to_bits() as u64)
            .collect(),
        DType::F32 => t
            .to_vec1::<f32>()?
            .iter()
            .map(|x| x.to_bits() as u64)
            .collect(),
        DType::U8 => t.to_vec1::<u8>()?.iter().map(|&x| x as u64).collect(),
        d => return Err(Error::Unsupported(format!("{d:?} in this example"))),
    })
}

fn check(what: &str, got: &Tensor, want: &Tensor) -> Result<()> {
    if got.dims() != want.dims() || got.dtype() != want.dtype() || bits(got)? != bits(want)? {
        return Err(Error::Shape(format!(
            "{what}: the result differs from candle's CPU result"
        )));
    }
    println!("verified: {what} matches candle's CPU result bit for bit");
    Ok(())
}

/// `permute` of `x` (on the GPU) against candle's CPU `permute().contiguous()`, its plan, and
/// cute-copy's time against candle's own `contiguous()` of the same view.
fn layout_change(name: &str, x: &Tensor, cpu: &Tensor, dims: &[usize]) -> Result<()> {
    println!(
        "\n== {name}: permute {dims:?} of {:?} {:?}",
        x.dims(),
        x.dtype()
    );
    let view = x.permute(dims)?;
    println!("{}", cc::plan_contiguous(&view)?);
    let y = cc::permute(x, dims)?;
    check(name, &y, &cpu.permute(dims)?.contiguous()?)?;
    let stream = cc::stream(x.device())?;
    let bytes = 2 * x.elem_count() * x.dtype().size_in_bytes();
    let ours = time_launches(&stream, 3, 20, || cc::contiguous(&view).map(drop))?;
    let theirs = time_launches(&stream, 3, 20, || {
        view.contiguous().map(drop).map_err(Error::Candle)
    })?;
    println!(
        "cute_copy::candle::contiguous {:.1} us ({:.0} GB/s), candle's contiguous {:.1} us ({:.0} GB/s): {:.2}x",
        ours * 1e3,
        gbps(bytes, ours),
        theirs * 1e3,
        gbps(bytes, theirs),
        theirs / ours
    );
    Ok(())
}

fn run(dev: &Device) -> Result<()> {
    // Layout changes: attention heads [B,H,S,D] -> [B,S,H,D], a transpose, NCHW -> NHWC.
    let (x, cpu) = random::<f16>(&[4, 16, 2048, 128], 1, dev)?;
    layout_change(
        "heads [4,16,2048,128] f16 -> [B,S,H,D]",
        &x,
        &cpu,
        &[0, 2, 1, 3],
    )?;
    let (a, a_cpu) = random::<f32>(&[4096, 4096], 2, dev)?;
    layout_change("transpose 4096x4096 f32", &a, &a_cpu, &[1, 0])?;
    let (img, img_cpu) = random::<f32>(&[16, 3, 224, 224], 3, dev)?;
    layout_change(
        "NCHW -> NHWC [16,3,224,224] f32",
        &img,
        &img_cpu,
        &[0, 2, 3, 1],
    )?;
    let (u, u_cpu) = random::<u8>(&[3001, 4097], 4, dev)?;
    layout_change("transpose 3001x4097 u8", &u, &u_cpu, &[1, 0])?;

    // A copy into a view: the permuted heads into rows 32..2080 of a larger [B, S + 64, H, D]
    // tensor filled with a poison value; only the view's elements change.
    println!("\n== copy_into a narrow of a larger tensor");
    let y = x.permute((0, 2, 1, 3))?;
    let canvas = Tensor::full(f16::from_f32(-7.5), (4, 2048 + 64, 16, 128), dev)?;
    let plan = cc::copy_into(&y, &canvas.narrow(1, 32, 2048)?)?;
    println!("{plan}");
    let poison = Tensor::full(f16::from_f32(-7.5), (4, 32, 16, 128), &Device::Cpu)?;
    let want = Tensor::cat(
        &[&poison, &cpu.permute((0, 2, 1, 3))?.contiguous()?, &poison],
        1,
    )?;
    check("copy_into a narrow (the rest untouched)", &canvas, &want)?;

    // A paged KV-cache gather: 600 slots from a pool of 4096 blocks of 16 tokens x 8 heads x 128
    // dims f16 by a device block table; every 50th slot is padding (-1) and stays zero.
    println!("\n== copy_blocks: 600 slots from a [4096,16,8,128] f16 pool");
    let (pool, pool_cpu) = random::<f16>(&[4096, 16, 8, 128], 5, dev)?;
    let slots = 600usize;
    let table: Vec<i64> = (0..slots as i64)
        .flat_map(|k| [if k % 50 == 49 { -1 } else { (k * 7919) % 4096 }, k])
        .collect();
    let pairs = Tensor::from_vec(table.clone(), (slots, 2), dev)?;
    let out = Tensor::zeros((slots, 16, 8, 128), DType::F16, dev)?;
    let mut status = cc::index_status(dev)?;
    let plan = cc::copy_blocks(&pool, &out, &pairs, &mut status)?;
    status.check(&cc::stream(dev)?)?; // waits; an index past the pool would be an Err here
    println!("{plan}");
    let zero = Tensor::zeros((1, 16, 8, 128), DType::F16, &Device::Cpu)?;
    let rows: Vec<Tensor> = (0..slots)
        .map(|k| match table[2 * k] {
            b if b < 0 => Ok(zero.clone()),
            b => pool_cpu.narrow(0, b as usize, 1),
        })
        .collect::<candle_core::Result<_>>()?;
    check(
        "copy_blocks (padding slots untouched)",
        &out,
        &Tensor::cat(&rows, 0)?,
    )?;
    let stream = cc::stream(dev)?;
    let ms = time_launches(&stream, 3, 50, || {
        cc::copy_blocks(&pool, &out, &pairs, &mut status).map(drop)
    })?;
    println!(
        "copy_blocks: {:.1} us per launch, {:.0} GB/s (bytes read + written)",
        ms * 1e3,
        gbps(plan.bytes as usize, ms)
    );
    status.check(&stream)?;
    Ok(())
}
