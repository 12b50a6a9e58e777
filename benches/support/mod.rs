//! What the bench files share: CUDA-event timing of back-to-back launches and of CUDA-graph
//! replays, and the D2D anchor of the same bytes.
#![allow(dead_code)]

use std::io::Write;
use std::sync::Arc;
use std::time::Duration;

use cute_copy::cudarc::driver::sys::{CUgraphInstantiate_flags, CUstreamCaptureMode};
use cute_copy::cudarc::driver::CudaStream;
use cute_copy::timing::time_launches;
use cute_copy::{Baseline, DeviceMatrix};

/// Time `launch` per call with CUDA events: criterion asks for `iters` calls.
pub fn gpu_time(
    stream: &Arc<CudaStream>,
    iters: u64,
    launch: impl FnMut() -> cute_copy::Result<()>,
) -> Duration {
    let ms = time_launches(stream, 0, iters as usize, launch).expect("launch");
    Duration::from_secs_f64(ms * 1e-3 * iters as f64)
}

/// Copies of at most this many bytes read + written are also timed from graph replays
/// ([`graph_time`]): at 4 TB/s 64 MiB take about 17 µs of GPU time, a few host launches' worth,
/// and below it back-to-back launches can be bound by the host rather than the GPU.
pub const GRAPH_BYTES: u64 = 64 << 20;

/// Time `launch` per call from CUDA-graph replays: up to 100 launches captured into one graph, the
/// graph replayed back to back. This takes the host's launch cost out, leaving the GPU's own time
/// per launch (what small copies are compared on). None when the launch path cannot be captured.
pub fn graph_time(
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

/// Two packed u8 buffers for a D2D memcpy anchor of `bytes` read + written (rounded down to a
/// KiB, a relative difference under 1e-6 for the shapes here), shaped rows x 1024 so that every
/// dimension fits the kernels' int.
pub fn d2d_buffers(stream: &Arc<CudaStream>, bytes: u64) -> (DeviceMatrix<u8>, DeviceMatrix<u8>) {
    let rows = ((bytes / 2) as usize / 1024).max(1);
    let a = DeviceMatrix::<u8>::zeros(stream, rows, 1024, 1024).expect("alloc");
    let b = DeviceMatrix::<u8>::zeros(stream, rows, 1024, 1024).expect("alloc");
    (a, b)
}

pub fn bench_d2d(
    g: &mut criterion::BenchmarkGroup<'_, criterion::measurement::WallTime>,
    stream: &Arc<CudaStream>,
    bytes: u64,
) {
    bench_d2d_timed(g, stream, bytes, false);
}

/// The D2D anchor of `bytes`, back-to-back launches (`d2d_same_bytes`, [`gpu_time`]) or graph
/// replays (`d2d_graph`, [`graph_time`]): the anchor of a copy timed the same way.
pub fn bench_d2d_timed(
    g: &mut criterion::BenchmarkGroup<'_, criterion::measurement::WallTime>,
    stream: &Arc<CudaStream>,
    bytes: u64,
    graph: bool,
) {
    let (a, mut b) = d2d_buffers(stream, bytes);
    let name = if graph { "d2d_graph" } else { "d2d_same_bytes" };
    g.bench_function(name, |bch| {
        bch.iter_custom(|k| {
            time_by(graph, stream, k, || {
                cute_copy::launch_baseline(Baseline::Memcpy, &a.view(), &mut b.view_mut(), stream)
            })
        })
    });
}

/// [`graph_time`] when `graph` (zero when the launch cannot be captured), else [`gpu_time`].
pub fn time_by(
    graph: bool,
    stream: &Arc<CudaStream>,
    iters: u64,
    launch: impl FnMut() -> cute_copy::Result<()>,
) -> Duration {
    if graph {
        graph_time(stream, iters, launch).unwrap_or(Duration::ZERO)
    } else {
        gpu_time(stream, iters, launch)
    }
}

/// `launch` as `{name}/{route}` beside the D2D anchor of its `bytes`, both timed back to back; and
/// when the copy moves at most [`GRAPH_BYTES`], both again from graph replays (`{name}_graph`,
/// `d2d_graph`: GPU time only, as tools/torch_anchor.py times torch), which tools/bench_table.py
/// then compares.
pub fn bench_with_anchors(
    g: &mut criterion::BenchmarkGroup<'_, criterion::measurement::WallTime>,
    stream: &Arc<CudaStream>,
    bytes: u64,
    (name, route): (&str, &str),
    mut launch: impl FnMut() -> cute_copy::Result<()>,
) {
    for graph in [false, true] {
        if graph && bytes > GRAPH_BYTES {
            continue;
        }
        let id = if graph {
            format!("{name}_graph")
        } else {
            name.to_string()
        };
        g.bench_function(criterion::BenchmarkId::new(id, route), |b| {
            b.iter_custom(|k| time_by(graph, stream, k, &mut launch))
        });
        bench_d2d_timed(g, stream, bytes, graph);
    }
}
