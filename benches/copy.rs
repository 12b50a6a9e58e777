//! Criterion benchmarks on the GPU: the crate's automatic plan, every explicitly chosen atom that is
//! legal for the shape, hand-written baselines (naive, hand-vectorized 16 B), cudaMemcpy2DAsync, and
//! cudaMemcpyAsync of the same bytes (the practical limit), side by side in one run.
//!
//! Throughput is bytes read + bytes written of the logical region. Kernel time comes from CUDA
//! events around back-to-back launches on one stream after warm-up (criterion's `iter_custom`).
//! Large shapes are several times the H200's 60 MB L2; data is random.
//!
//! Without a GPU every group prints a skip line and measures nothing.

use std::io::Write;
use std::sync::Arc;
use std::time::Duration;

#[path = "../tests/common/mod.rs"]
mod common;

use common::gpu;
use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use cute_copy::cudarc::driver::sys::{CUgraphInstantiate_flags, CUstreamCaptureMode};
use cute_copy::cudarc::driver::CudaStream;
use cute_copy::reference::random_elements;
use cute_copy::timing::time_launches;
use cute_copy::{Atom, Baseline, DeviceMatrix, Element, Operation};
use half::{bf16, f16};
use rand::SeedableRng;

struct Shape {
    name: &'static str,
    rows: usize,
    cols: usize,
    ld_src: usize,
    ld_dst: usize,
    /// Destination shape for a pad (None: a copy).
    pad_to: Option<(usize, usize)>,
}

const fn copy(name: &'static str, rows: usize, cols: usize, ld_src: usize, ld_dst: usize) -> Shape {
    Shape {
        name,
        rows,
        cols,
        ld_src,
        ld_dst,
        pad_to: None,
    }
}

/// Time `launch` per call with CUDA events: criterion asks for `iters` calls.
fn gpu_time(
    stream: &Arc<CudaStream>,
    iters: u64,
    launch: impl FnMut() -> cute_copy::Result<()>,
) -> Duration {
    let ms = time_launches(stream, 0, iters as usize, launch).expect("launch");
    Duration::from_secs_f64(ms * 1e-3 * iters as f64)
}

/// Time `launch` per call from CUDA-graph replays: up to 100 launches captured into one graph, the
/// graph replayed back to back. This takes the host's launch cost out, leaving the GPU's own time
/// per launch (what small copies are compared on). None when the launch path cannot be captured.
fn graph_time(
    stream: &Arc<CudaStream>,
    iters: u64,
    mut launch: impl FnMut() -> cute_copy::Result<()>,
) -> Option<Duration> {
    let per_graph = iters.clamp(1, 100);
    stream
        .begin_capture(CUstreamCaptureMode::CU_STREAM_CAPTURE_MODE_THREAD_LOCAL)
        .ok()?;
    let captured = (0..per_graph).try_for_each(|_| launch());
    let graph = stream
        .end_capture(CUgraphInstantiate_flags::CUDA_GRAPH_INSTANTIATE_FLAG_AUTO_FREE_ON_LAUNCH);
    if let Err(e) = &captured {
        let _ = writeln!(std::io::stderr(), "graph capture failed: {e}");
    }
    let graph = graph.ok().flatten().filter(|_| captured.is_ok())?;
    let replays = iters.div_ceil(per_graph);
    let ms = time_launches(stream, 1, replays as usize, || Ok(graph.launch()?)).ok()?;
    Some(Duration::from_secs_f64(
        ms * 1e-3 / per_graph as f64 * iters as f64,
    ))
}

fn bench_shape<T: Element>(c: &mut Criterion, stream: &Arc<CudaStream>, shape: &Shape) {
    let mut rng = rand::rngs::StdRng::seed_from_u64(shape.rows as u64 ^ (shape.cols as u64) << 20);
    let host: Vec<T> = random_elements(shape.rows * shape.ld_src, &mut rng);
    let src = DeviceMatrix::from_host(stream, shape.rows, shape.cols, shape.ld_src, &host)
        .expect("upload");
    drop(host);
    let (drows, dcols) = shape.pad_to.unwrap_or((shape.rows, shape.cols));
    let mut dst =
        DeviceMatrix::<T>::zeros(stream, drows, dcols, shape.ld_dst.max(dcols)).expect("alloc");
    let plan = cute_copy::plan(&src.view(), &dst.view_mut(), None).expect("plan");
    let bytes = plan.bytes_moved() as u64;

    let mut g = c.benchmark_group(format!("{}_{}", shape.name, T::DTYPE));
    g.throughput(Throughput::Bytes(bytes));
    g.bench_function(BenchmarkId::new("auto", plan.atom.cli_name()), |b| {
        b.iter_custom(|n| {
            gpu_time(stream, n, || {
                cute_copy::launch(&plan, &src.view(), &mut dst.view_mut(), stream)
            })
        })
    });
    if plan.blocks() <= 1024 {
        // Small copies are launch-bound: also time them from graph replays.
        g.bench_function(BenchmarkId::new("auto_graph", plan.atom.cli_name()), |b| {
            b.iter_custom(|n| {
                graph_time(stream, n, || {
                    cute_copy::launch(&plan, &src.view(), &mut dst.view_mut(), stream)
                })
                .unwrap_or(Duration::ZERO)
            })
        });
        if plan.operation == Operation::Copy {
            g.bench_function(BenchmarkId::new("baseline_graph", "Memcpy2D"), |b| {
                b.iter_custom(|n| {
                    graph_time(stream, n, || {
                        cute_copy::launch_baseline(
                            Baseline::Memcpy2D,
                            &src.view(),
                            &mut dst.view_mut(),
                            stream,
                        )
                    })
                    .unwrap_or(Duration::ZERO)
                })
            });
        }
    }
    if plan.predicated_tiles() > 0 {
        let mut unpeeled = plan.clone();
        unpeeled.peel = false;
        g.bench_function(
            BenchmarkId::new("auto_no_peel", plan.atom.cli_name()),
            |b| {
                b.iter_custom(|n| {
                    gpu_time(stream, n, || {
                        cute_copy::launch(&unpeeled, &src.view(), &mut dst.view_mut(), stream)
                    })
                })
            },
        );
    }
    for atom in Atom::all() {
        let Ok(p) = cute_copy::plan(&src.view(), &dst.view_mut(), Some(atom)) else {
            continue;
        };
        if atom == plan.atom || atom.bytes_for(T::DTYPE) < 4 {
            continue; // the automatic plan already ran it; sub-4-byte atoms are not contenders
        }
        g.bench_function(BenchmarkId::new("atom", atom.cli_name()), |b| {
            b.iter_custom(|n| {
                gpu_time(stream, n, || {
                    cute_copy::launch(&p, &src.view(), &mut dst.view_mut(), stream)
                })
            })
        });
    }
    if plan.operation == Operation::Copy {
        let mut baselines = vec![Baseline::Naive, Baseline::Memcpy2D];
        if plan.src_bits == 128 && plan.dst_bits == 128 {
            baselines.push(Baseline::Vectorized16);
        }
        if plan.src.ld == plan.src.cols && plan.dst.ld == plan.dst.cols {
            baselines.push(Baseline::Memcpy);
        }
        for which in baselines {
            g.bench_function(BenchmarkId::new("baseline", format!("{which:?}")), |b| {
                b.iter_custom(|n| {
                    gpu_time(stream, n, || {
                        cute_copy::launch_baseline(which, &src.view(), &mut dst.view_mut(), stream)
                    })
                })
            });
        }
    }
    g.finish();
}

/// cudaMemcpyAsync of 2 GiB device to device: the copy limit every shape is compared with.
fn bench_limit(c: &mut Criterion, stream: &Arc<CudaStream>) {
    let n = 1usize << 30; // 1 Gi elements of u8 read + 1 Gi written = 2 GiB moved
    let src = DeviceMatrix::<u8>::from_host(
        stream,
        1,
        n,
        n,
        &random_elements(n, &mut rand::rngs::StdRng::seed_from_u64(9)),
    )
    .expect("upload");
    let mut dst = DeviceMatrix::<u8>::zeros(stream, 1, n, n).expect("alloc");
    let mut g = c.benchmark_group("limit_d2d_1GiB");
    g.throughput(Throughput::Bytes(2 * n as u64));
    g.bench_function("memcpy", |b| {
        b.iter_custom(|k| {
            gpu_time(stream, k, || {
                cute_copy::launch_baseline(
                    Baseline::Memcpy,
                    &src.view(),
                    &mut dst.view_mut(),
                    stream,
                )
            })
        })
    });
    g.finish();
}

/// An empty kernel, the floor the small shapes are compared with, and the Rust call overhead.
fn bench_launch(c: &mut Criterion, stream: &Arc<CudaStream>) {
    let mut g = c.benchmark_group("launch");
    g.bench_function("empty_kernel", |b| {
        b.iter_custom(|n| gpu_time(stream, n, || cute_copy::timing::launch_empty(stream)))
    });
    let src = DeviceMatrix::<f16>::zeros(stream, 32, 32, 32).expect("alloc");
    let mut dst = DeviceMatrix::<f16>::zeros(stream, 32, 32, 32).expect("alloc");
    let plan = cute_copy::plan(&src.view(), &dst.view_mut(), None).expect("plan");
    // Host time per call, no sync: the Rust path (plan, checks, guards, bridge) against C++ calling
    // the same launch function with a prepared descriptor.
    for (name, rust_side) in [
        ("host_rust_copy_call", true),
        ("host_cpp_bare_launch", false),
    ] {
        g.bench_function(name, |b| {
            b.iter_custom(|n| {
                let (rust, bare) = cute_copy::launch_overhead_ns(
                    &plan,
                    &src.view(),
                    &mut dst.view_mut(),
                    stream,
                    n as u32,
                )
                .expect("launch");
                stream.synchronize().expect("sync");
                Duration::from_secs_f64(if rust_side { rust } else { bare } * 1e-9 * n as f64)
            })
        });
    }
    g.finish();
}

fn benches(c: &mut Criterion) {
    let Some(stream) = gpu() else { return };
    // SAFETY: the benchmarks use this one stream for every buffer, created after this call, so
    // cudarc's cross-stream event tracking is not needed; without it launches can be captured into
    // graphs (graph_time) and the timed path has no per-launch event records.
    unsafe { stream.context().disable_event_tracking() };
    bench_limit(c, &stream);
    bench_launch(c, &stream);
    let big = [
        copy("16384x16384_dense", 16384, 16384, 16384, 16384),
        copy("16383x16383_ld16384", 16383, 16383, 16384, 16384),
        copy("16384x16380_ld16388_to_packed", 16384, 16380, 16388, 16380),
        copy("8192x130_ld136_to_130", 8192, 130, 136, 130),
        Shape {
            name: "pad_16383_to_16384",
            rows: 16383,
            cols: 16383,
            ld_src: 16384,
            ld_dst: 16384,
            pad_to: Some((16384, 16384)),
        },
        copy("130x130", 130, 130, 130, 130),
        copy("32x32", 32, 32, 32, 32),
    ];
    for s in &big {
        bench_shape::<f16>(c, &stream, s);
    }
    bench_shape::<f32>(c, &stream, &copy("4096x4096", 4096, 4096, 4096, 4096));
    bench_shape::<bf16>(c, &stream, &copy("4096x4096", 4096, 4096, 4096, 4096));
}

criterion_group! {
    name = gpu_benches;
    config = Criterion::default().warm_up_time(Duration::from_millis(400)).measurement_time(Duration::from_millis(1200)).sample_size(20);
    targets = benches
}
criterion_main!(gpu_benches);
