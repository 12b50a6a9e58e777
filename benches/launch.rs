//! "Launch cost": what one small copy costs per call when calls come back to back on one stream,
//! the host's share included. Side by side: an empty kernel (the floor), a stream memcpy of the
//! same 16 KiB, and the crate's calls — `copy`, `copy_tensor`, a kept plan's `launch`, a kept
//! one-entry `Batch` — on buffers with cudarc's per-buffer event tracking on (what
//! `cute_copy::stream` gives: a second stream turns it on) and off (`disable_event_tracking`, as
//! graph users and Python do). Two clocks: `launch_cost_*` is wall-clock time over `n` calls and
//! one synchronize (what a program making many small copies waits for); `launch_host_*` counts
//! only the host's time issuing them, in runs short enough that no call waits for the GPU. Then
//! `launch_interleaved_*` prints each call's median host time from runs taken in turn, against the
//! empty kernel's from the same rounds (the host's speed drifts more between groups than these
//! calls differ). `launch_cost_floor` also times planning alone.
//!
//! Without a GPU every group prints a skip line and measures nothing.

use std::hint::black_box;
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

/// How a call is timed: `Wall`, `n` back-to-back calls and one stream synchronize (what a
/// program making many small copies waits for); `Host`, only the time spent issuing them, in runs
/// of [`RUN`] calls between untimed synchronizes (the queue never fills, so no call waits for the
/// GPU: the host's own cost, whatever the GPU's time per kernel).
#[derive(Clone, Copy)]
enum Clock {
    Wall,
    Host,
}

/// Calls issued between two synchronizes under [`Clock::Host`]: far below the launch queue's depth.
const RUN: u64 = 256;

/// The time of `n` calls of `call` on `stream`, as `clock` counts it.
fn per_calls(
    stream: &Arc<CudaStream>,
    n: u64,
    clock: Clock,
    mut call: impl FnMut() -> cute_copy::Result<()>,
) -> Duration {
    let run = match clock {
        Clock::Wall => n,
        Clock::Host => RUN,
    };
    let mut left = n;
    let mut spent = Duration::ZERO;
    while left > 0 {
        let k = left.min(run);
        stream.synchronize().expect("sync");
        let t = Instant::now();
        for _ in 0..k {
            call().expect("launch");
        }
        if let Clock::Wall = clock {
            stream.synchronize().expect("sync");
        }
        spent += t.elapsed();
        left -= k;
    }
    stream.synchronize().expect("sync");
    spent
}

/// The calls side by side, each issuing one 64x64 f32 copy (or the empty kernel).
const CALLS: [&str; 6] = [
    "empty_kernel",
    "memcpy_stream",
    "copy",
    "copy_tensor",
    "launch_kept_plan",
    "batch_kept_one_entry",
];

/// One set of buffers and what every call in [`CALLS`] needs.
struct Bufs {
    stream: Arc<CudaStream>,
    src: DeviceMatrix<f32>,
    dst: DeviceMatrix<f32>,
    tsrc: DeviceTensor<f32>,
    tdst: DeviceTensor<f32>,
    plan: cute_copy::Plan,
    batch: Batch<f32>,
    raw_src: cute_copy::cudarc::driver::CudaSlice<f32>,
    raw_dst: cute_copy::cudarc::driver::CudaSlice<f32>,
}

impl Bufs {
    fn new(stream: &Arc<CudaStream>) -> Bufs {
        let host: Vec<f32> = cute_copy::reference::random_elements(ROWS * COLS, 1);
        let src = DeviceMatrix::from_host(stream, ROWS, COLS, COLS, &host).expect("upload");
        let mut dst = DeviceMatrix::<f32>::zeros(stream, ROWS, COLS, COLS).expect("alloc");
        let layout = Layout::row_major(&[ROWS, COLS]).expect("layout");
        let plan = cute_copy::plan(&src.view(), &dst.view_mut(), None).expect("plan");
        let mut batch = Batch::<f32>::new();
        let all = Region::at(0, 0, ROWS, COLS, COLS);
        batch.push(all, all).expect("push");
        batch
            .launch(&src.view(), &mut dst.view_mut(), stream)
            .expect("batch");
        Bufs {
            stream: stream.clone(),
            tsrc: DeviceTensor::<f32>::from_host(stream, layout, &host).expect("upload"),
            tdst: DeviceTensor::<f32>::zeros(stream, layout).expect("alloc"),
            src,
            dst,
            plan,
            batch,
            // cudarc's own cuMemcpyDtoDAsync on plain buffers of the same 16 KiB.
            raw_src: stream.clone_htod(&host).expect("upload"),
            raw_dst: stream.alloc_zeros::<f32>(ROWS * COLS).expect("alloc"),
        }
    }

    /// Issue call `which` (an index into [`CALLS`]) once.
    fn issue(&mut self, which: usize) -> cute_copy::Result<()> {
        let stream = &self.stream;
        match CALLS[which] {
            "empty_kernel" => cute_copy::timing::launch_empty(stream),
            "memcpy_stream" => Ok(stream.memcpy_dtod(&self.raw_src, &mut self.raw_dst)?),
            "copy" => cute_copy::copy(&self.src.view(), &mut self.dst.view_mut(), stream).map(drop),
            "copy_tensor" => {
                cute_copy::copy_tensor(&self.tsrc.view(), &mut self.tdst.view_mut(), stream)
                    .map(drop)
            }
            "launch_kept_plan" => cute_copy::launch(
                &self.plan,
                &self.src.view(),
                &mut self.dst.view_mut(),
                stream,
            ),
            _ => self
                .batch
                .launch(&self.src.view(), &mut self.dst.view_mut(), stream)
                .map(drop),
        }
    }
}

/// The calls of [`CALLS`] on one set of buffers, under `label` (`tracked` / `untracked`), timed
/// by `clock` (group `launch_cost_*` by the wall clock, `launch_host_*` the host's issue time only).
fn calls(c: &mut Criterion, bufs: &mut Bufs, label: &str, clock: Clock) {
    let kind = match clock {
        Clock::Wall => "cost",
        Clock::Host => "host",
    };
    let stream = bufs.stream.clone();
    let mut g = c.benchmark_group(format!("launch_{kind}_64x64_f32_{label}"));
    for (which, name) in CALLS.iter().enumerate().skip(1) {
        g.bench_function(*name, |b| {
            b.iter_custom(|n| per_calls(&stream, n, clock, || bufs.issue(which)))
        });
    }
    g.finish();
}

/// The host's issue time of every call in [`CALLS`], runs of [`RUN`] calls of each in turn,
/// `rounds` times: the median per call of each, and its difference from the empty kernel's. The
/// host's speed drifts by more than the differences between these calls from one criterion group
/// to the next on a shared machine; taken in turn, every call sees the same drift.
fn interleaved(bufs: &mut Bufs, label: &str, rounds: usize) {
    let stream = bufs.stream.clone();
    let mut times: Vec<Vec<f64>> = vec![Vec::with_capacity(rounds); CALLS.len()];
    for _ in 0..rounds {
        for (which, t) in times.iter_mut().enumerate() {
            let d = per_calls(&stream, RUN, Clock::Host, || bufs.issue(which));
            t.push(d.as_secs_f64() * 1e6 / RUN as f64);
        }
    }
    let median = |t: &mut Vec<f64>| {
        t.sort_by(f64::total_cmp);
        t[t.len() / 2]
    };
    let medians: Vec<f64> = times.iter_mut().map(median).collect();
    println!("launch_interleaved_{label}: host issue time per call, median of {rounds} runs of {RUN} calls each, in turn");
    for (name, m) in CALLS.iter().zip(&medians) {
        println!(
            "  {name:<22} {m:>6.2} us  (empty kernel {:+.2})",
            m - medians[0]
        );
    }
}

fn benches(c: &mut Criterion) {
    let Some(stream) = gpu() else { return };
    let mut g = c.benchmark_group("launch_cost_floor");
    for (name, clock) in [
        ("empty_kernel", Clock::Wall),
        ("empty_kernel_host", Clock::Host),
    ] {
        g.bench_function(name, |b| {
            b.iter_custom(|n| {
                per_calls(&stream, n, clock, || {
                    cute_copy::timing::launch_empty(&stream)
                })
            })
        });
    }
    // What planning alone costs on this host (no launch): the share of `copy` / `copy_tensor`
    // that a kept plan saves.
    let layout = Layout::row_major(&[ROWS, COLS]).expect("layout");
    let device = cute_copy::DeviceInfo::of(stream.context()).expect("device");
    let op = cute_copy::Operand {
        rows: ROWS,
        cols: COLS,
        ld: COLS,
        offset_bytes: 0,
    };
    g.bench_function("plan_only", |b| {
        b.iter(|| {
            cute_copy::Plan::for_device(cute_copy::DType::F32, black_box(op), op, None, &device)
        })
    });
    g.bench_function("plan_tensor_only", |b| {
        b.iter(|| {
            cute_copy::TensorPlan::for_device(
                cute_copy::DType::F32,
                black_box(layout),
                layout,
                (0, 0),
                &device,
            )
        })
    });
    g.finish();
    // `cute_copy::stream` is a second stream of the context, so buffers made now track their uses.
    let mut tracked = Bufs::new(&stream);
    calls(c, &mut tracked, "tracked", Clock::Wall);
    calls(c, &mut tracked, "tracked", Clock::Host);
    interleaved(&mut tracked, "tracked", 200);
    drop(tracked);
    stream.synchronize().expect("sync");
    // SAFETY: every buffer below is used on this one stream only, and freed after its last use
    // there has been synchronized (per_calls ends with a synchronize).
    unsafe { stream.context().disable_event_tracking() };
    let mut untracked = Bufs::new(&stream);
    calls(c, &mut untracked, "untracked", Clock::Wall);
    calls(c, &mut untracked, "untracked", Clock::Host);
    interleaved(&mut untracked, "untracked", 200);
}

criterion_group! {
    name = launch_benches;
    config = Criterion::default().warm_up_time(Duration::from_millis(500)).measurement_time(Duration::from_millis(1000)).sample_size(20);
    targets = benches
}
criterion_main!(launch_benches);
