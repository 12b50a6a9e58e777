//! Criterion benchmarks between two GPUs of one host (issue 25; BENCHMARKS.md "Between GPUs"):
//! every `peer_*` group has its anchor, `cuMemcpyPeerAsync` of the same bytes (cudarc's
//! `memcpy_dtod` between contexts), beside the crate's copy on the destination's stream (pull)
//! and the source's (push), by the route its rule picks and by the kernel where the rule picks
//! the copy engine.
//!
//! Throughput is the bytes that cross the link (once; both ways at once: twice). Time comes from
//! CUDA events on the stream that runs the copy (both ways: from a start event both streams wait
//! for to an end event after both). Every buffer lives on an idle stream of its own device, so
//! the crate's cross-device ordering (the copy waits for the other buffer's own stream, which
//! waits for the copy) joins nothing the other direction runs.
//!
//! With fewer than two GPUs every group prints one skip line and measures nothing. The two-GPU
//! run: `.gpu/run bench peer` on nvidia-h200-x2 (docs/between-gpus.md).

use std::sync::Arc;
use std::time::Duration;

#[path = "../tests/common/mod.rs"]
mod common;

use criterion::{criterion_group, criterion_main, BenchmarkGroup, Criterion, Throughput};
use cute_copy::cudarc::driver::sys::CUevent_flags;
use cute_copy::cudarc::driver::CudaStream;
use cute_copy::reference::random_elements;
use cute_copy::{
    Atom, BatchBaseline, DeviceMatrix, DeviceTensor, Element, IndexStatus, Layout, PeerEngine,
};
use half::f16;

type Group<'a> = BenchmarkGroup<'a, criterion::measurement::WallTime>;

/// The streams of one device: `home` holds its buffers (and stays idle), `run` runs copies.
struct Dev {
    home: Arc<CudaStream>,
    run: Arc<CudaStream>,
}

fn dev(ordinal: usize) -> Dev {
    let home = cute_copy::stream(ordinal).expect("stream");
    let run = home.context().new_stream().expect("stream");
    Dev { home, run }
}

/// Seconds of `k` calls of `launch` on `stream`, by CUDA events, after one warm-up call.
fn gpu_time(
    stream: &Arc<CudaStream>,
    k: u64,
    mut launch: impl FnMut() -> cute_copy::Result<()>,
) -> Duration {
    launch().expect("warm-up");
    let ms = cute_copy::timing::time_launches(stream, 0, k as usize, launch).expect("launch");
    Duration::from_secs_f64(ms * 1e-3 * k as f64)
}

/// Seconds of `k` calls of each of `fa` (enqueued on `a`) and `fb` (on `b`), running at once.
fn both_time(
    (a, b): (&Arc<CudaStream>, &Arc<CudaStream>),
    k: u64,
    mut fa: impl FnMut() -> cute_copy::Result<()>,
    mut fb: impl FnMut() -> cute_copy::Result<()>,
) -> Duration {
    fa().expect("warm-up");
    fb().expect("warm-up");
    let timing = Some(CUevent_flags::CU_EVENT_DEFAULT);
    let start = a.record_event(timing).expect("event");
    b.wait(&start).expect("wait");
    for _ in 0..k {
        fa().expect("launch");
        fb().expect("launch");
    }
    a.wait(&b.record_event(None).expect("event")).expect("wait");
    let end = a.record_event(timing).expect("event");
    end.synchronize().expect("sync");
    Duration::from_secs_f64(start.elapsed_ms(&end).expect("elapsed") as f64 * 1e-3)
}

/// `cuMemcpyPeerAsync` of `bytes` from `from`'s device to `to`'s, on `to.run` (cudarc's
/// `memcpy_dtod` between contexts): the anchor of every group.
struct Anchor {
    src: cute_copy::cudarc::driver::CudaSlice<u8>,
    dst: cute_copy::cudarc::driver::CudaSlice<u8>,
}

impl Anchor {
    fn new(from: &Dev, to: &Dev, bytes: usize) -> Self {
        Anchor {
            src: from.home.alloc_zeros::<u8>(bytes).expect("alloc"),
            dst: to.home.alloc_zeros::<u8>(bytes).expect("alloc"),
        }
    }
    fn run(&mut self, on: &Arc<CudaStream>) -> cute_copy::Result<()> {
        on.memcpy_dtod(&self.src, &mut self.dst)?;
        Ok(())
    }
}

fn anchor(g: &mut Group<'_>, (a, b): (&Dev, &Dev), bytes: usize) {
    let mut m = Anchor::new(a, b, bytes);
    g.bench_function("memcpy_peer", |bch| {
        bch.iter_custom(|k| gpu_time(&b.run, k, || m.run(&b.run)))
    });
}

/// A 2D copy from `a` to `b`: the crate's route on either side's stream, and `kernel` (an atom:
/// the plan's kernel) on either side's stream when the route is the copy engine.
fn bench_2d<T: Element>(
    c: &mut Criterion,
    (a, b): (&Dev, &Dev),
    name: &str,
    (rows, cols, ld_src, at): (usize, usize, usize, (usize, usize)),
    kernel: Atom,
) {
    let src_rows = rows + at.0;
    let host: Vec<T> = random_elements(src_rows * ld_src, 5);
    let src = DeviceMatrix::from_host(&a.home, src_rows, ld_src, ld_src, &host).expect("upload");
    drop(host);
    let sview = src.view().sub(at.0, at.1, rows, cols).expect("sub");
    let mut dst = DeviceMatrix::<T>::zeros(&b.home, rows, cols, cols).expect("alloc");
    let bytes = rows * cols * T::DTYPE.size_bytes();
    let mut g = c.benchmark_group(name);
    g.throughput(Throughput::Bytes(bytes as u64));
    let plan = cute_copy::plan(&sview, &dst.view_mut(), None).expect("plan");
    println!("{plan}");
    let engine = plan.peer.expect("a route").engine;
    for (side, on) in [("pull", &b.run), ("push", &a.run)] {
        g.bench_function(format!("copy_{side}"), |bch| {
            bch.iter_custom(|k| {
                gpu_time(on, k, || {
                    cute_copy::copy(&sview, &mut dst.view_mut(), on).map(drop)
                })
            })
        });
        if engine != PeerEngine::Kernel {
            g.bench_function(format!("kernel_{side}"), |bch| {
                bch.iter_custom(|k| {
                    gpu_time(on, k, || {
                        cute_copy::copy_with(kernel, &sview, &mut dst.view_mut(), on).map(drop)
                    })
                })
            });
        }
    }
    anchor(&mut g, (a, b), bytes);
    g.finish();
}

/// 1 GiB one way and both ways at once: the link's limit, by the anchor, by the crate's copy
/// (the copy engine) and by the realign kernel pulling and pushing.
fn bench_limit(c: &mut Criterion, (a, b): (&Dev, &Dev)) {
    let n = 1usize << 30;
    bench_2d::<u8>(
        c,
        (a, b),
        "peer_limit_1GiB_one_way",
        (1, n, n, (0, 0)),
        Atom::Realign128,
    );
    let mk = |d: &Dev| DeviceMatrix::<u8>::zeros(&d.home, 1, n, n).expect("alloc");
    let (sa, sb, mut da, mut db) = (mk(a), mk(b), mk(a), mk(b));
    let mut g = c.benchmark_group("peer_limit_1GiB_both_ways");
    g.throughput(Throughput::Bytes(2 * n as u64));
    let (mut ab, mut ba) = (Anchor::new(a, b, n), Anchor::new(b, a, n));
    g.bench_function("memcpy_peer", |bch| {
        bch.iter_custom(|k| both_time((&b.run, &a.run), k, || ab.run(&b.run), || ba.run(&a.run)))
    });
    for (name, atom, pull) in [
        ("copy_pull", None, true),
        ("kernel_pull", Some(Atom::Realign128), true),
        ("kernel_push", Some(Atom::Realign128), false),
    ] {
        // a -> b on b's stream and b -> a on a's (pull), or the other way round (push)
        let (ab_on, ba_on) = if pull {
            (&b.run, &a.run)
        } else {
            (&a.run, &b.run)
        };
        let go = |src: &DeviceMatrix<u8>, dst: &mut DeviceMatrix<u8>, on: &Arc<CudaStream>| {
            let (s, mut d) = (src.view(), dst.view_mut());
            match atom {
                None => cute_copy::copy(&s, &mut d, on).map(drop),
                Some(x) => cute_copy::copy_with(x, &s, &mut d, on).map(drop),
            }
        };
        g.bench_function(name, |bch| {
            bch.iter_custom(|k| {
                both_time(
                    (ab_on, ba_on),
                    k,
                    || go(&sa, &mut db, ab_on),
                    || go(&sb, &mut da, ba_on),
                )
            })
        });
    }
    g.finish();
}

/// A transpose of 16384^2 f32 across devices, pulled and pushed.
fn bench_transpose(c: &mut Criterion, (a, b): (&Dev, &Dev)) {
    let n = 16384;
    let rm = Layout::row_major(&[n, n]).expect("layout");
    let host: Vec<f32> = random_elements(n * n, 6);
    let src = DeviceTensor::from_host(&a.home, rm, &host).expect("upload");
    drop(host);
    let mut dst = DeviceTensor::<f32>::zeros(&b.home, rm).expect("alloc");
    let bytes = n * n * 4;
    let mut g = c.benchmark_group("peer_transpose_16384x16384_f32");
    g.throughput(Throughput::Bytes(bytes as u64));
    let t = src.view().permute(&[1, 0]).expect("permute");
    for (side, on) in [("pull", &b.run), ("push", &a.run)] {
        g.bench_function(format!("copy_tensor_{side}"), |bch| {
            bch.iter_custom(|k| {
                gpu_time(on, k, || {
                    cute_copy::copy_tensor(&t, &mut dst.view_mut(), on).map(drop)
                })
            })
        });
    }
    anchor(&mut g, (a, b), bytes);
    g.finish();
}

/// 4096 KV blocks of 64 KiB (16 x 2048 f16) from a pool on `a` to a pool on `b` by a device
/// table, in one launch (pulled and pushed), against one cuMemcpyPeerAsync per block
/// (`MemcpyEach`) and one cudaMemcpyBatchAsync of unified addresses (`MemcpyBatch`).
fn bench_blocks(c: &mut Criterion, (a, b): (&Dev, &Dev)) {
    let (pool, block_rows, cols, count) = (4096usize, 16usize, 2048usize, 4096usize);
    let host: Vec<f16> = random_elements(pool * block_rows * cols, 7);
    let src =
        DeviceMatrix::from_host(&a.home, pool * block_rows, cols, cols, &host).expect("upload");
    drop(host);
    let mut dst =
        DeviceMatrix::<f16>::zeros(&b.home, count * block_rows, cols, cols).expect("alloc");
    let pairs: Vec<i32> = (0..count)
        .flat_map(|k| [((k * 2654435761 + 7) % pool) as i32, k as i32])
        .collect();
    let bytes = count * block_rows * cols * 2;
    let mut g = c.benchmark_group("peer_blocks_4096x64KiB_f16");
    g.throughput(Throughput::Bytes(bytes as u64));
    for (side, on) in [("pull", &b.run), ("push", &a.run)] {
        let table = on.clone_htod(&pairs).expect("upload");
        let mut status = IndexStatus::new(on).expect("status");
        g.bench_function(format!("copy_blocks_{side}"), |bch| {
            bch.iter_custom(|k| {
                gpu_time(on, k, || {
                    cute_copy::copy_blocks(
                        &src.view(),
                        &mut dst.view_mut(),
                        block_rows,
                        &table,
                        &mut status,
                        on,
                    )
                    .map(drop)
                })
            })
        });
        status.check(on).expect("indices in range");
    }
    let table = b.run.clone_htod(&pairs).expect("upload");
    for which in [BatchBaseline::MemcpyEach, BatchBaseline::MemcpyBatch] {
        let mut base = || {
            cute_copy::copy_blocks_baseline(
                which,
                &src.view(),
                &mut dst.view_mut(),
                block_rows,
                &pairs,
                &table,
                &b.run,
            )
        };
        // A baseline the driver refuses between devices is reported, not a panic of the run.
        if let Err(e) = base().and_then(|_| Ok(b.run.synchronize()?)) {
            println!("peer_blocks_4096x64KiB_f16/baseline_{which:?}: skipped ({e})");
            continue;
        }
        g.bench_function(format!("baseline_{which:?}"), |bch| {
            bch.iter_custom(|k| gpu_time(&b.run, k, &mut base))
        });
    }
    anchor(&mut g, (a, b), bytes);
    g.finish();
}

fn benches(c: &mut Criterion) {
    let Some(_) = common::two_gpus() else { return };
    let (a, b) = (dev(0), dev(1));
    let pair = (&a, &b);
    bench_limit(c, pair);
    // a 16384^2 f16 sub-matrix at ld 16392: rows of 32 KiB at a pitch (the copy engine)
    bench_2d::<f16>(
        c,
        pair,
        "peer_submatrix_16384x16384_f16_ld16392",
        (16384, 16384, 16392, (0, 0)),
        Atom::Universal128,
    );
    // a u8 crop at odd offsets: rows of 16379 B at an odd pitch and an odd start
    bench_2d::<u8>(
        c,
        pair,
        "peer_crop_u8_16381x16379_at_3_5_ld16392",
        (16381, 16379, 16392, (3, 5)),
        Atom::Realign128,
    );
    bench_transpose(c, pair);
    bench_blocks(c, pair);
}

criterion_group! {
    name = peer_benches;
    config = Criterion::default().warm_up_time(Duration::from_millis(2000)).measurement_time(Duration::from_millis(1200)).sample_size(20);
    targets = benches
}
criterion_main!(peer_benches);
