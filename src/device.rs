//! Finding a GPU without panicking: cudarc loads libcuda lazily and panics when it is missing, so
//! every entry point checks for the driver first and turns its absence into [`Error::NoDriver`].

use std::sync::Arc;

use cudarc::driver::{CudaContext, CudaStream};

use crate::error::{Error, Result};
use crate::ffi;

/// Number of CUDA devices: 0 when there is no driver or no device (never a panic).
pub fn device_count() -> usize {
    if !ffi::driver_present() {
        return 0;
    }
    cudarc::driver::result::init()
        .and_then(|_| cudarc::driver::result::device::get_count())
        .map(|n| n.max(0) as usize)
        .unwrap_or(0)
}

/// The primary context of device `ordinal`, or a typed error when there is no driver or device.
pub fn context(ordinal: usize) -> Result<Arc<CudaContext>> {
    if !ffi::driver_present() {
        return Err(Error::NoDriver);
    }
    let count = device_count();
    if ordinal >= count {
        return Err(Error::NoDevice { ordinal, count });
    }
    Ok(CudaContext::new(ordinal)?)
}

/// A new stream on device `ordinal`'s primary context.
pub fn stream(ordinal: usize) -> Result<Arc<CudaStream>> {
    Ok(context(ordinal)?.new_stream()?)
}

/// The device's name and compute capability, e.g. `("NVIDIA H200", (9, 0))`.
pub fn describe(ctx: &CudaContext) -> Result<(String, (u32, u32))> {
    let (major, minor) = ctx.compute_capability()?;
    Ok((ctx.name()?, (major as u32, minor as u32)))
}

/// The device's L2 cache in bytes (60 MiB on an H200): the line the realign family's rules draw
/// for copies that stream from DRAM (`Plan::lean_threads`, `Plan::l2_prefetch_tasks`).
pub fn l2_cache_bytes(ctx: &CudaContext) -> Result<usize> {
    let bytes =
        ctx.attribute(cudarc::driver::sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE)?;
    Ok(bytes.max(0) as usize)
}

/// The CUDA runtime's device count as the C++ side sees it (0 without a driver): a check that the
/// static cudart linked into the crate and cudarc's driver agree.
pub fn runtime_device_count() -> usize {
    if !ffi::driver_present() {
        return 0;
    }
    ffi::runtime_device_count().max(0) as usize
}

/// A buffer (`what`) belongs to the stream's context, or [`Error::WrongContext`]: the one check
/// every launch path makes before pinning its views.
pub(crate) fn check_context(
    what: &'static str,
    buffer: &Arc<CudaContext>,
    stream: &Arc<CudaStream>,
) -> Result<()> {
    if buffer != stream.context() {
        return Err(Error::WrongContext {
            what,
            buffer_device: buffer.ordinal(),
            stream_device: stream.context().ordinal(),
        });
    }
    Ok(())
}
