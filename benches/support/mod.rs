//! What the bench files share: CUDA-event timing of back-to-back launches and the D2D anchor of
//! the same bytes.
#![allow(dead_code)]

use std::sync::Arc;
use std::time::Duration;

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
    let (a, mut b) = d2d_buffers(stream, bytes);
    g.bench_function("d2d_same_bytes", |bch| {
        bch.iter_custom(|k| {
            gpu_time(stream, k, || {
                cute_copy::launch_baseline(Baseline::Memcpy, &a.view(), &mut b.view_mut(), stream)
            })
        })
    });
}
