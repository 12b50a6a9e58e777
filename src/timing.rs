//! Kernel timing with CUDA events, for the CLI and the benchmarks.

use std::sync::Arc;

use cudarc::driver::sys::CUevent_flags;
use cudarc::driver::CudaStream;

use crate::error::Result;

/// Milliseconds per call of `launch`, measured with CUDA events around `iters` back-to-back calls
/// on `stream` after `warmup` calls. `launch` must enqueue its work on `stream`.
pub fn time_launches(
    stream: &Arc<CudaStream>,
    warmup: usize,
    iters: usize,
    mut launch: impl FnMut() -> Result<()>,
) -> Result<f64> {
    for _ in 0..warmup {
        launch()?;
    }
    let start = stream.record_event(Some(CUevent_flags::CU_EVENT_DEFAULT))?;
    for _ in 0..iters {
        launch()?;
    }
    let end = stream.record_event(Some(CUevent_flags::CU_EVENT_DEFAULT))?;
    end.synchronize()?;
    Ok(start.elapsed_ms(&end)? as f64 / iters.max(1) as f64)
}

/// An empty kernel on `stream`: the launch floor small copies are measured against.
pub fn launch_empty(stream: &Arc<CudaStream>) -> Result<()> {
    stream.context().bind_to_thread()?;
    crate::ffi::launch_empty(stream)
}

/// GB/s (10^9 bytes per second) for `bytes` moved in `ms` milliseconds.
pub fn gbps(bytes: usize, ms: f64) -> f64 {
    bytes as f64 / (ms * 1e6)
}
