//! "Launch cost": what one small copy costs per call when calls come back to back on one stream,
//! the host's share included. Each function makes `n` calls, then waits for the stream; the time
//! per call is wall-clock time over `n` (with calls this small the GPU finishes each before the host
//! has issued the next, so this is the host's cost per call, as a program making many small copies
//! pays it). Side by side: an empty kernel (the floor), a stream memcpy of the same 16 KiB, and the
//! crate's calls — `copy`, `copy_tensor`, a kept plan's `launch`, a kept one-entry `Batch` — on
//! buffers with cudarc's per-buffer event tracking on (what `cute_copy::stream` gives: a second
//! stream turns it on) and off (`disable_event_tracking`, as graph users and Python do).
//!
//! Without a GPU every group prints a skip line and measures nothing.

use std::sync::Arc;
use std::time::{Duration, Instant};

#[path = "../tests/common/mod.rs"]
mod common;

use common::gpu;
use criterion::{criterion_group, criterion_main, Criterion};
use cute_copy::cudarc::driver::CudaStream;
use cute_copy::{Batch, DeviceMatrix, DeviceTensor, Layout, Region};

const ROWS: usize = 64;
const COLS: usize = 64;

/// Wall-clock time of `n` back-to-back calls and one stream synchronize.
fn per_calls(
    stream: &Arc<CudaStream>,
    n: u64,
    mut call: impl FnMut() -> cute_copy::Result<()>,
) -> Duration {
    stream.synchronize().expect("sync");
    let t = Instant::now();
    for _ in 0..n {
        call().expect("launch");
    }
    stream.synchronize().expect("sync");
    t.elapsed()
}

/// One set of buffers and the calls on them, under `label` (`tracked` / `untracked`).
fn calls(c: &mut Criterion, stream: &Arc<CudaStream>, label: &str) {
    let host: Vec<f32> = cute_copy::reference::random_elements(ROWS * COLS, 1);
    let src = DeviceMatrix::from_host(stream, ROWS, COLS, COLS, &host).expect("upload");
    let mut dst = DeviceMatrix::<f32>::zeros(stream, ROWS, COLS, COLS).expect("alloc");
    let layout = Layout::row_major(&[ROWS, COLS]).expect("layout");
    let tsrc = DeviceTensor::<f32>::from_host(stream, layout, &host).expect("upload");
    let mut tdst = DeviceTensor::<f32>::zeros(stream, layout).expect("alloc");
    let plan = cute_copy::plan(&src.view(), &dst.view_mut(), None).expect("plan");
    let mut batch = Batch::<f32>::new();
    batch
        .push(
            Region::at(0, 0, ROWS, COLS, COLS),
            Region::at(0, 0, ROWS, COLS, COLS),
        )
        .expect("push");
    batch
        .launch(&src.view(), &mut dst.view_mut(), stream)
        .expect("batch");

    let mut g = c.benchmark_group(format!("launch_cost_64x64_f32_{label}"));
    // cudarc's own cuMemcpyDtoDAsync on plain buffers of the same 16 KiB.
    let raw_src = stream.clone_htod(&host).expect("upload");
    let mut raw_dst = stream.alloc_zeros::<f32>(ROWS * COLS).expect("alloc");
    g.bench_function("memcpy_stream", |b| {
        b.iter_custom(|n| {
            per_calls(
                stream,
                n,
                || Ok(stream.memcpy_dtod(&raw_src, &mut raw_dst)?),
            )
        })
    });
    g.bench_function("copy", |b| {
        b.iter_custom(|n| {
            per_calls(stream, n, || {
                cute_copy::copy(&src.view(), &mut dst.view_mut(), stream).map(drop)
            })
        })
    });
    g.bench_function("copy_tensor", |b| {
        b.iter_custom(|n| {
            per_calls(stream, n, || {
                cute_copy::copy_tensor(&tsrc.view(), &mut tdst.view_mut(), stream).map(drop)
            })
        })
    });
    g.bench_function("launch_kept_plan", |b| {
        b.iter_custom(|n| {
            per_calls(stream, n, || {
                cute_copy::launch(&plan, &src.view(), &mut dst.view_mut(), stream)
            })
        })
    });
    g.bench_function("batch_kept_one_entry", |b| {
        b.iter_custom(|n| {
            per_calls(stream, n, || {
                batch
                    .launch(&src.view(), &mut dst.view_mut(), stream)
                    .map(drop)
            })
        })
    });
    g.finish();
}

fn benches(c: &mut Criterion) {
    let Some(stream) = gpu() else { return };
    let mut g = c.benchmark_group("launch_cost_floor");
    g.bench_function("empty_kernel", |b| {
        b.iter_custom(|n| per_calls(&stream, n, || cute_copy::timing::launch_empty(&stream)))
    });
    g.finish();
    // `cute_copy::stream` is a second stream of the context, so buffers made now track their uses.
    calls(c, &stream, "tracked");
    // SAFETY: every buffer below is used on this one stream only, and freed after its last use
    // there has been synchronized (per_calls ends with a synchronize).
    unsafe { stream.context().disable_event_tracking() };
    calls(c, &stream, "untracked");
}

criterion_group! {
    name = launch_benches;
    config = Criterion::default().warm_up_time(Duration::from_millis(500)).measurement_time(Duration::from_millis(1000)).sample_size(20);
    targets = benches
}
criterion_main!(launch_benches);
