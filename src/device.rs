//! Finding a GPU without panicking: cudarc loads libcuda lazily and panics when it is missing, so
//! every entry point checks for the driver first and turns its absence into [`Error::NoDriver`].

use std::sync::{Arc, OnceLock};

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

/// The facts about a device that plans depend on, as a value: a plan made for the same facts
/// prints the same on every machine, and plans are made (and printed) without a device at all.
///
/// ```
/// use cute_copy::DeviceInfo;
/// let h200 = DeviceInfo::new(60 << 20, 132, (9, 0));
/// assert_eq!(h200.l2_bytes, 60 << 20);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct DeviceInfo {
    /// L2 cache in bytes (60 MiB on an H200): the line the realign family's rules draw for copies
    /// that stream from DRAM ([`Plan::lean_threads`](crate::Plan::lean_threads),
    /// [`Plan::l2_prefetch_tasks`](crate::Plan::l2_prefetch_tasks)).
    pub l2_bytes: usize,
    /// Streaming multiprocessors.
    pub sm_count: u32,
    /// Compute capability (major, minor).
    pub compute_capability: (u32, u32),
}

impl DeviceInfo {
    /// Facts given by hand: for tests, and for planning for a device other than this machine's.
    pub const fn new(l2_bytes: usize, sm_count: u32, compute_capability: (u32, u32)) -> Self {
        DeviceInfo {
            l2_bytes,
            sm_count,
            compute_capability,
        }
    }

    /// The facts of `ctx`'s device, asked once per device ordinal and kept for the process (a
    /// lock-free read afterwards, so the front doors ask on every call at no cost).
    pub fn of(ctx: &CudaContext) -> Result<DeviceInfo> {
        const KEPT: usize = 64;
        static KNOWN: [OnceLock<DeviceInfo>; KEPT] = [const { OnceLock::new() }; KEPT];
        let ordinal = ctx.ordinal();
        if let Some(info) = KNOWN.get(ordinal).and_then(OnceLock::get) {
            return Ok(*info);
        }
        let sms = ctx.attribute(
            cudarc::driver::sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT,
        )?;
        let (major, minor) = ctx.compute_capability()?;
        let cc = (major as u32, minor as u32);
        let info = DeviceInfo::new(l2_cache_bytes(ctx)?, sms.max(0) as u32, cc);
        if let Some(slot) = KNOWN.get(ordinal) {
            let _ = slot.set(info);
        }
        Ok(info)
    }
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
