//! Contexts and streams: one primary context per device, kept for the process; the caller's
//! streams borrowed, never created, never synchronized.

use std::sync::{Arc, Mutex};

use cute_copy::cudarc::driver::{sys, CudaContext, CudaStream};
use pyo3::PyResult;

use crate::errors::IntoPy;

static CONTEXTS: Mutex<Vec<Option<Arc<CudaContext>>>> = Mutex::new(Vec::new());

/// Device `ordinal`'s primary context (the one PyTorch, CuPy and JAX use), created once.
pub fn context(ordinal: usize) -> PyResult<Arc<CudaContext>> {
    let mut all = CONTEXTS.lock().unwrap_or_else(|p| p.into_inner());
    if let Some(Some(c)) = all.get(ordinal) {
        return Ok(c.clone());
    }
    let ctx = if cute_copy::device_count() > ordinal {
        // The driver is loaded and initialised: creating the context makes it current, and the
        // caller's context must be current again afterwards.
        let _restore = RestoreContext::save();
        cute_copy::context(ordinal).py_err()?
    } else {
        // No driver or no such device: the crate's error says which.
        cute_copy::context(ordinal).py_err()?
    };
    // SAFETY: every buffer the bindings touch belongs to a framework that orders its own streams
    // (or to an IndexStatus, used on the caller's streams); cudarc's per-buffer events would
    // only add waits, which a CUDA graph capture refuses.
    unsafe { ctx.disable_event_tracking() };
    if all.len() <= ordinal {
        all.resize(ordinal + 1, None);
    }
    all[ordinal] = Some(ctx.clone());
    Ok(ctx)
}

/// The caller's stream `handle` (0: the legacy default stream) on device `ordinal`, borrowed.
pub fn stream(ordinal: usize, handle: u64) -> PyResult<Arc<CudaStream>> {
    let ctx = context(ordinal)?;
    // SAFETY: the handle names a live stream of this device's primary context: the framework's
    // current stream, a stream the caller passed, or 0/1/2 (the default streams); a borrowed
    // stream is never destroyed by cudarc.
    Ok(unsafe { ctx.wrap_borrowed_stream(handle as sys::CUstream) })
}

/// The device ordinal that owns device pointer `ptr`; `None` for memory no device owns (host
/// memory). No driver or no device is the crate's error.
pub fn pointer_device(ptr: u64) -> PyResult<Option<usize>> {
    // Loads the driver (or says there is none) before calling it.
    context(0)?;
    let mut ordinal: i32 = -1;
    // SAFETY: the driver is loaded and initialised (context(0) succeeded); the attribute is an
    // int written into `ordinal`.
    let rc = unsafe {
        sys::cuPointerGetAttribute(
            (&mut ordinal as *mut i32).cast(),
            sys::CUpointer_attribute::CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL,
            ptr as sys::CUdeviceptr,
        )
    };
    Ok((rc == sys::CUresult::CUDA_SUCCESS && ordinal >= 0).then_some(ordinal as usize))
}

/// Make stream `ours` wait for the work already queued on `theirs` (an event, no host wait).
pub fn wait_stream(ordinal: usize, ours: u64, theirs: u64) -> PyResult<()> {
    let (a, b) = (stream(ordinal, ours)?, stream(ordinal, theirs)?);
    a.join(&b).py_err()
}

/// The thread's current CUDA context when it was made, made current again on drop: the crate
/// binds the arrays' device's primary context to launch, and a framework that reads the current
/// device from the current context (torch, CuPy) must find its own again afterwards.
pub struct RestoreContext(sys::CUcontext);

impl RestoreContext {
    /// Call once the driver is loaded and initialised ([`context`] succeeded, or
    /// `cute_copy::device_count()` found a device).
    pub fn save() -> Self {
        let mut c: sys::CUcontext = std::ptr::null_mut();
        // SAFETY: the driver is loaded and initialised (a context exists); `c` is written.
        let rc = unsafe { sys::cuCtxGetCurrent(&mut c) };
        if rc != sys::CUresult::CUDA_SUCCESS {
            c = std::ptr::null_mut();
        }
        RestoreContext(c)
    }
}

impl Drop for RestoreContext {
    fn drop(&mut self) {
        let mut now: sys::CUcontext = std::ptr::null_mut();
        // SAFETY: as in save; setting back a context that was current a moment ago.
        unsafe {
            if sys::cuCtxGetCurrent(&mut now) == sys::CUresult::CUDA_SUCCESS && now != self.0 {
                sys::cuCtxSetCurrent(self.0);
            }
        }
    }
}
