//! candle interop against candle's own copies (feature `candle`), on the "Layouts" shapes of
//! BENCHMARKS.md: each a non-contiguous candle view (a transpose, a head permute, NCHW -> NHWC, a
//! batched narrow) made row-major on candle's CUDA device and stream.
//!
//! In each group `candle_layout_<shape>_<dtype>`:
//! - `cute_copy_contiguous`: `cute_copy::candle::contiguous(&view)` (allocates the result, as
//!   candle does);
//! - `candle_contiguous`: candle's own `view.contiguous()` (its `copy_strided_src`: one element
//!   per thread, a div/mod per mode, the layout uploaded per call);
//! - `cute_copy_copy_into` and `candle_copy_strided_src`: the same copy into a preallocated tensor
//!   (`cute_copy::candle::copy_into` against candle's storage-level `copy_strided_src`, the copy
//!   `contiguous()` runs, called through an in-place op as user code can: candle's `slice_set`
//!   takes contiguous sources only);
//! - `d2d_same_bytes`: a cudaMemcpyAsync of the same bytes on the same stream, the anchor.
//!
//! Throughput is bytes read + written; time comes from CUDA events around back-to-back calls on
//! candle's stream after warm-up (criterion's `iter_custom`), as in benches/copy.rs. Without a GPU
//! every group prints a skip line and measures nothing.
//!
//! `cargo bench --features candle --bench candle` (on the GPU host: `.gpu/run bench candle`).

use std::io::Write;
use std::sync::Arc;
use std::time::Duration;

use candle_core::backend::BackendStorage;
use candle_core::{Device, Tensor, WithDType};
use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use cute_copy::candle as cc;
use cute_copy::cudarc::driver::CudaStream;
use cute_copy::reference::random_elements;
use cute_copy::timing::time_launches;
use cute_copy::{Baseline, DeviceMatrix, Element};
use half::f16;

/// Time `launch` per call with CUDA events: criterion asks for `iters` calls.
fn gpu_time(
    stream: &Arc<CudaStream>,
    iters: u64,
    launch: impl FnMut() -> cute_copy::Result<()>,
) -> Duration {
    let ms = time_launches(stream, 0, iters as usize, launch).expect("launch");
    Duration::from_secs_f64(ms * 1e-3 * iters as f64)
}

/// candle's own strided copy into an existing tensor: `BackendStorage::copy_strided_src`, the
/// kernel (`ucopy_<dtype>`) and layout upload that `Tensor::contiguous()` runs, without its
/// allocation.
struct CandleCopy;

impl candle_core::InplaceOp2 for CandleCopy {
    fn name(&self) -> &'static str {
        "candle-copy-strided-src"
    }

    fn cpu_fwd(
        &self,
        dst: &mut candle_core::CpuStorage,
        dl: &candle_core::Layout,
        src: &candle_core::CpuStorage,
        sl: &candle_core::Layout,
    ) -> candle_core::Result<()> {
        src.copy_strided_src(dst, dl.start_offset(), sl)
    }

    fn cuda_fwd(
        &self,
        dst: &mut candle_core::CudaStorage,
        dl: &candle_core::Layout,
        src: &candle_core::CudaStorage,
        sl: &candle_core::Layout,
    ) -> candle_core::Result<()> {
        src.copy_strided_src(dst, dl.start_offset(), sl)
    }
}

/// One group: `view_of(x)` of a random tensor `x` of `shape`, made contiguous every way.
fn bench_layout<T: Element + WithDType>(
    c: &mut Criterion,
    dev: &Device,
    name: &str,
    shape: &[usize],
    view_of: impl Fn(&Tensor) -> candle_core::Result<Tensor>,
) {
    let stream = cc::stream(dev).expect("stream");
    let n: usize = shape.iter().product();
    let host: Vec<T> = random_elements(n, n as u64);
    let x = Tensor::from_vec(host, shape, &Device::Cpu)
        .and_then(|t| t.to_device(dev))
        .expect("upload");
    let view = view_of(&x).expect("view");
    let y = Tensor::zeros(view.shape(), view.dtype(), dev).expect("alloc");
    let plan = cc::plan_contiguous(&view).expect("plan");
    let bytes = plan.bytes_moved() as u64;
    let mut g = c.benchmark_group(format!("candle_layout_{name}_{}", <T as Element>::DTYPE));
    g.throughput(Throughput::Bytes(bytes));
    g.bench_function("cute_copy_contiguous", |b| {
        b.iter_custom(|k| gpu_time(&stream, k, || cc::contiguous(&view).map(drop)))
    });
    g.bench_function("candle_contiguous", |b| {
        b.iter_custom(|k| {
            gpu_time(&stream, k, || {
                view.contiguous().map(drop).map_err(Into::into)
            })
        })
    });
    g.bench_function("cute_copy_copy_into", |b| {
        b.iter_custom(|k| gpu_time(&stream, k, || cc::copy_into(&view, &y).map(drop)))
    });
    g.bench_function("candle_copy_strided_src", |b| {
        b.iter_custom(|k| {
            gpu_time(&stream, k, || {
                y.inplace_op2(&view, &CandleCopy).map_err(Into::into)
            })
        })
    });
    // A D2D memcpy of the same bytes (read + written), on the same stream.
    let rows = ((bytes / 2) as usize / 1024).max(1);
    let a = DeviceMatrix::<u8>::zeros(&stream, rows, 1024, 1024).expect("alloc");
    let mut d = DeviceMatrix::<u8>::zeros(&stream, rows, 1024, 1024).expect("alloc");
    g.bench_function("d2d_same_bytes", |b| {
        b.iter_custom(|k| {
            gpu_time(&stream, k, || {
                cute_copy::launch_baseline(Baseline::Memcpy, &a.view(), &mut d.view_mut(), &stream)
            })
        })
    });
    g.finish();
}

fn benches(c: &mut Criterion) {
    let dev = match Device::new_cuda(0) {
        Ok(d) => d,
        Err(e) => {
            if std::env::var("CUTE_COPY_REQUIRE_GPU").as_deref() == Ok("1") {
                panic!("CUTE_COPY_REQUIRE_GPU=1 but no usable GPU: {e}");
            }
            let why = e.to_string(); // its first line: candle adds a backtrace under RUST_BACKTRACE
            let why = why.lines().next().unwrap_or_default();
            let _ = writeln!(std::io::stderr(), "skipped: no GPU ({why})");
            return;
        }
    };
    // SAFETY: every buffer of these benchmarks lives on candle's one stream of this device, created
    // after this call, so cudarc's cross-stream event tracking is not needed (as in
    // benches/copy.rs): neither side pays for event records in the timed loop.
    unsafe { dev.as_cuda_device().expect("cuda").disable_event_tracking() };
    let t = |x: &Tensor| x.t();
    bench_layout::<f32>(c, &dev, "transpose_16384x16384", &[16384, 16384], t);
    bench_layout::<f16>(c, &dev, "transpose_16384x16384", &[16384, 16384], t);
    bench_layout::<u8>(c, &dev, "transpose_8192x8192", &[8192, 8192], t);
    bench_layout::<f16>(
        c,
        &dev,
        "permute_8x32x4096x128_0213",
        &[8, 32, 4096, 128],
        |x| x.permute((0, 2, 1, 3)),
    );
    bench_layout::<f32>(
        c,
        &dev,
        "nchw_to_nhwc_64x3x224x224",
        &[64, 3, 224, 224],
        |x| x.permute((0, 2, 3, 1)),
    );
    bench_layout::<f16>(
        c,
        &dev,
        "batched_64x1024x1023_ld1024_to_packed",
        &[64, 1024, 1024],
        |x| x.narrow(2, 0, 1023),
    );
}

// The warm-up and measurement of benches/copy.rs (its note says why 2 s of warm-up).
criterion_group! {
    name = candle;
    config = Criterion::default().warm_up_time(Duration::from_millis(2000)).measurement_time(Duration::from_millis(1200)).sample_size(20);
    targets = benches
}
criterion_main!(candle);
