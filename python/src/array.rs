//! Python arrays in, zero copy: the DLPack C exchange API (PyTorch), `__dlpack__` capsules
//! (versioned and legacy: CuPy, JAX, numba, ...) and `__cuda_array_interface__`, read into one
//! [`Array`] descriptor that keeps the array's owner (and, for a capsule, its deleter) alive.

use cute_copy::DType;
use dlpark::ffi::{DLTensor, DLPACK_MAJOR_VERSION, DLPACK_MINOR_VERSION};
use dlpark::python::consumer::exchange::ExchangeApi;
use dlpark::python::{dlpack_device, from_dlpack, ImportedDlpack};
use dlpark::DlpackFlags;
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::intern;
use pyo3::prelude::*;
use pyo3::types::PyDict;
use std::sync::Mutex;

/// DLPack's `kDLCUDA`.
pub const KDL_CUDA: u32 = 2;

/// How a call reads its arrays: the stream it will launch on (chosen by the first array that
/// names one, unless the caller gave it) and whether it launches at all (a plan does not, and
/// reads arrays of any device).
pub struct Call {
    pub stream: Option<u64>,
    pub launch: bool,
}

/// One array as the kernels see it. `addr` is the address of coordinate 0 (the data pointer plus
/// the byte offset); strides are in elements and may be negative.
pub struct Array<'py> {
    /// The array itself: holding it keeps its memory alive for the call.
    pub _owner: Bound<'py, PyAny>,
    pub addr: u64,
    /// DLPack type code and bits: two arrays copy into each other when these are equal.
    pub code: u8,
    pub bits: u8,
    /// The crate's dtype of the same width (the exact one where the crate has it).
    pub dtype: DType,
    pub shape: Vec<usize>,
    pub strides: Vec<i64>,
    /// DLPack device type and id.
    pub device: (u32, i32),
    pub read_only: bool,
    /// A consumed capsule: dropping it calls the producer's deleter, after the launch.
    _managed: Option<ImportedDlpack>,
}

struct Desc {
    addr: u64,
    code: u8,
    bits: u8,
    dtype: DType,
    shape: Vec<usize>,
    strides: Vec<i64>,
    device: (u32, i32),
}

impl Array<'_> {
    /// The array's dtype for messages: torch's names.
    pub fn dtype_name(&self) -> String {
        dtype_name(self.code, self.bits)
    }
    /// The number of elements.
    pub fn numel(&self) -> usize {
        self.shape.iter().product()
    }
    /// The CUDA device ordinal (the caller checked the device type).
    pub fn ordinal(&self) -> usize {
        self.device.1.max(0) as usize
    }
}

/// torch's name of a DLPack dtype.
pub fn dtype_name(code: u8, bits: u8) -> String {
    match (code, bits) {
        (0, b) => format!("int{b}"),
        (1, b) => format!("uint{b}"),
        (2, b) => format!("float{b}"),
        (4, 16) => "bfloat16".into(),
        (5, b) => format!("complex{b}"),
        (6, 8) => "bool".into(),
        (10, 8) => "float8_e4m3fn".into(),
        (12, 8) => "float8_e5m2".into(),
        (c, b) => format!("DLPack type code {c} of {b} bits"),
    }
}

/// The crate's dtype for a DLPack one: the exact type where there is one, bool as `u8`, and any
/// other 1-, 2-, 4- or 8-byte type (complex64, the float8s) as the unsigned type of its width,
/// since a copy moves bits unchanged.
fn dtype_of(code: u8, bits: u8, lanes: u16) -> PyResult<DType> {
    let exact = match (code, bits) {
        (0, 8) => Some(DType::I8),
        (0, 16) => Some(DType::I16),
        (0, 32) => Some(DType::I32),
        (0, 64) => Some(DType::I64),
        (1, 8) | (6, 8) => Some(DType::U8),
        (1, 16) => Some(DType::U16),
        (1, 32) => Some(DType::U32),
        (1, 64) => Some(DType::U64),
        (2, 16) => Some(DType::F16),
        (2, 32) => Some(DType::F32),
        (2, 64) => Some(DType::F64),
        (4, 16) => Some(DType::BF16),
        (10, 8) => Some(DType::F8E4M3),
        (12, 8) => Some(DType::F8E5M2),
        _ => None,
    };
    let by_width = match bits {
        8 => Some(DType::U8),
        16 => Some(DType::U16),
        32 => Some(DType::U32),
        64 => Some(DType::U64),
        _ => None,
    };
    match (lanes, exact.or(by_width)) {
        (1, Some(d)) => Ok(d),
        _ => Err(PyValueError::new_err(format!(
            "cute_copy moves elements of 1, 2, 4 or 8 bytes; this array's dtype is {}{}",
            dtype_name(code, bits),
            if lanes == 1 {
                String::new()
            } else {
                format!(" x{lanes} lanes")
            }
        ))),
    }
}

/// A DLPack device for messages: `cpu`, `cuda:1`, ...
pub fn device_name((ty, id): (u32, i32)) -> String {
    let name = match ty {
        1 => "cpu",
        2 => "cuda",
        3 => "cuda_host (pinned host memory)",
        4 => "opencl",
        7 => "vulkan",
        8 => "metal",
        10 => "rocm",
        11 => "rocm_host",
        13 => "cuda_managed",
        14 => "oneapi",
        15 => "webgpu",
        _ => return format!("DLPack device type {ty} id {id}"),
    };
    if ty == KDL_CUDA || ty == 10 {
        format!("{name}:{id}")
    } else {
        format!("{name} (DLPack device type {ty}, id {id})")
    }
}

fn check_device(device: (u32, i32), what: &str, call: &Call) -> PyResult<()> {
    if call.launch && device.0 != KDL_CUDA {
        return Err(PyTypeError::new_err(format!(
            "cute_copy copies CUDA device memory; the {what} is on {}",
            device_name(device)
        )));
    }
    Ok(())
}

/// Read a borrowed `DLTensor`: shape, strides (row-major when absent), dtype, coordinate 0.
///
/// # Safety
/// `t` must be a valid descriptor: `shape` and (when not null) `strides` address `ndim` values.
unsafe fn read(t: &DLTensor) -> PyResult<Desc> {
    let nd = usize::try_from(t.ndim)
        .map_err(|_| PyValueError::new_err(format!("DLPack ndim is negative: {}", t.ndim)))?;
    let shape_i: &[i64] = if nd == 0 {
        &[]
    } else {
        // SAFETY: the producer's descriptor holds ndim extents (the caller's contract).
        unsafe { std::slice::from_raw_parts(t.shape, nd) }
    };
    let mut shape = Vec::with_capacity(nd);
    for &n in shape_i {
        shape.push(
            usize::try_from(n).map_err(|_| {
                PyValueError::new_err(format!("negative extent {n} in {shape_i:?}"))
            })?,
        );
    }
    let strides = if t.strides.is_null() || nd == 0 {
        row_major(&shape)
    } else {
        // SAFETY: as above, ndim strides.
        unsafe { std::slice::from_raw_parts(t.strides, nd) }.to_vec()
    };
    let (code, bits) = (t.dtype.code.0, t.dtype.bits);
    let dtype = dtype_of(code, bits, t.dtype.lanes)?;
    let strides = strides
        .into_iter()
        .map(|s| undo_unsigned_division(s, dtype.size_bytes() as u64))
        .collect();
    Ok(Desc {
        addr: (t.data as u64).wrapping_add(t.byte_offset),
        code,
        bits,
        dtype,
        shape,
        strides,
        device: (t.device.device_type.0, t.device.device_id),
    })
}

/// A stride of 2^56 elements or more addresses no real allocation: it is a negative byte stride
/// that its producer divided by the element size as an unsigned number (CuPy 14's DLPack export
/// of `a[::-1]` gives `(2^64 - 24) / 4` for a stride of -6 int32 elements). Multiplying back (mod
/// 2^64) recovers the byte stride exactly; anything else is left for the layout checks to refuse.
fn undo_unsigned_division(stride: i64, elem_bytes: u64) -> i64 {
    const IMPOSSIBLE: u64 = 1 << 56;
    if stride.unsigned_abs() < IMPOSSIBLE || elem_bytes <= 1 {
        return stride;
    }
    let bytes = (stride as u64).wrapping_mul(elem_bytes) as i64;
    if bytes < 0 && bytes.unsigned_abs() < IMPOSSIBLE && bytes % elem_bytes as i64 == 0 {
        bytes / elem_bytes as i64
    } else {
        stride
    }
}

/// Row-major strides (elements) of `shape`.
pub fn row_major(shape: &[usize]) -> Vec<i64> {
    let mut s = vec![0i64; shape.len()];
    let mut acc = 1i64;
    for i in (0..shape.len()).rev() {
        s[i] = acc;
        acc = acc.saturating_mul(shape[i].max(1) as i64);
    }
    s
}

fn array<'py>(
    obj: &Bound<'py, PyAny>,
    d: Desc,
    read_only: bool,
    managed: Option<ImportedDlpack>,
) -> Array<'py> {
    Array {
        _owner: obj.clone(),
        addr: d.addr,
        code: d.code,
        bits: d.bits,
        dtype: d.dtype,
        shape: d.shape,
        strides: d.strides,
        device: d.device,
        read_only,
        _managed: managed,
    }
}

/// The Python function that names a framework's current stream (`cute_copy._current_stream`),
/// asked for arrays that do not say it themselves.
static STREAM_HOOK: Mutex<Option<Py<PyAny>>> = Mutex::new(None);

pub fn set_stream_hook(f: Py<PyAny>) {
    *STREAM_HOOK.lock().unwrap_or_else(|p| p.into_inner()) = Some(f);
}

fn hook_stream(obj: &Bound<'_, PyAny>, device: i32) -> PyResult<u64> {
    let py = obj.py();
    let hook = STREAM_HOOK
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .as_ref()
        .map(|h| h.clone_ref(py));
    match hook {
        Some(h) => h.call1(py, (obj, device))?.extract::<u64>(py),
        None => Ok(0),
    }
}

/// A stream argument: an int (a `CUstream` handle), a `torch.cuda.Stream` (`cuda_stream`), an
/// object with `__cuda_stream__` (the CUDA stream protocol) or a CuPy stream (`ptr`).
pub fn parse_stream(s: Option<&Bound<'_, PyAny>>) -> PyResult<Option<u64>> {
    let Some(s) = s else { return Ok(None) };
    if s.is_none() {
        return Ok(None);
    }
    if let Ok(h) = s.extract::<u64>() {
        return Ok(Some(h));
    }
    let py = s.py();
    if let Ok(h) = s.getattr(intern!(py, "cuda_stream")) {
        return Ok(Some(h.extract::<u64>()?));
    }
    if let Ok(f) = s.getattr(intern!(py, "__cuda_stream__")) {
        let (_, h): (u64, u64) = f.call0()?.extract()?;
        return Ok(Some(h));
    }
    if let Ok(h) = s.getattr(intern!(py, "ptr")) {
        return Ok(Some(h.extract::<u64>()?));
    }
    Err(PyTypeError::new_err(format!(
        "stream must be a CUstream handle (int), a torch.cuda.Stream, a CuPy stream or an object with __cuda_stream__; got {}",
        s.get_type().name()?
    )))
}

/// Read `obj` (the `what` of the call: "source", "destination", ...).
pub fn import<'py>(obj: &Bound<'py, PyAny>, what: &str, call: &mut Call) -> PyResult<Array<'py>> {
    let py = obj.py();
    // 1. The DLPack C exchange API (PyTorch): a borrowed view, no capsule, and the producer's
    //    current stream, which is the call's stream unless the caller named another one.
    if let Some(api) = ExchangeApi::from_object(obj.as_borrowed())? {
        // SAFETY: the view is valid during the callback, which copies what it needs out of it;
        // the data stays alive with `obj`, which the Array holds.
        let viewed =
            api.with_tensor_view_no_sync(obj.as_borrowed(), |t, s| (unsafe { read(t) }, s as u64));
        match viewed {
            Ok((desc, producer)) => {
                let desc = desc?;
                check_device(desc.device, what, call)?;
                match call.stream {
                    None if call.launch => {
                        call.stream = Some(producer);
                        return Ok(array(obj, desc, false, None));
                    }
                    Some(s) if s == producer => return Ok(array(obj, desc, false, None)),
                    _ if !call.launch => return Ok(array(obj, desc, false, None)),
                    // Another stream than the producer's: the standard protocol below makes
                    // ours wait for it.
                    _ => {}
                }
            }
            Err(e) => {
                // A producer that cannot say its stream for this device (a CPU tensor, say):
                // name the device if that is the reason.
                if let Ok(dev) = dlpack_device(obj.as_borrowed()) {
                    check_device((dev.device_type.0, dev.device_id), what, call)?;
                }
                return Err(e);
            }
        }
    }

    // 2. `__dlpack__` / `__dlpack_device__`.
    if let Ok(dev_fn) = obj.getattr(intern!(py, "__dlpack_device__")) {
        let (ty, id): (u32, i32) = dev_fn.call0()?.extract()?;
        check_device((ty, id), what, call)?;
        let kwargs = PyDict::new(py);
        if call.launch {
            let s = match call.stream {
                Some(s) => s,
                None => {
                    let s = hook_stream(obj, id)?;
                    call.stream = Some(s);
                    s
                }
            };
            // DLPack: 1 is CUDA's legacy default stream (handle 0 is ambiguous there).
            kwargs.set_item(intern!(py, "stream"), if s == 0 { 1 } else { s })?;
        } else if ty == KDL_CUDA {
            // A plan launches nothing: ask for no synchronization.
            kwargs.set_item(intern!(py, "stream"), -1)?;
        }
        kwargs.set_item(
            intern!(py, "max_version"),
            (DLPACK_MAJOR_VERSION, DLPACK_MINOR_VERSION),
        )?;
        let method = intern!(py, "__dlpack__");
        let exported = match obj.call_method(method, (), Some(&kwargs)) {
            // A producer from before DLPack 1.0 does not know max_version: a legacy capsule.
            Err(e) if e.is_instance_of::<PyTypeError>(py) => {
                kwargs.del_item(intern!(py, "max_version"))?;
                obj.call_method(method, (), Some(&kwargs))
            }
            r => r,
        };
        let capsule = match exported {
            Ok(c) => c,
            // A producer that will not export this array through DLPack (a BufferError, say, for
            // a layout it cannot describe) may still describe it by its CUDA array interface.
            Err(e) => match obj.getattr(intern!(py, "__cuda_array_interface__")) {
                Ok(cai) if ty == KDL_CUDA => return cuda_array_interface(obj, &cai, what, call),
                _ => return Err(e),
            },
        };
        let imported = from_dlpack(capsule.as_borrowed(), None, None)?;
        // SAFETY: a consumed capsule's descriptor, valid until its deleter runs (when `imported`
        // is dropped, after the launch).
        let desc = unsafe {
            match &imported {
                ImportedDlpack::Legacy(m) => read(m.tensor()),
                ImportedDlpack::Versioned(m) => read(m.tensor()),
            }
        }?;
        let read_only = imported.flags().contains(DlpackFlags::READ_ONLY);
        check_device(desc.device, what, call)?;
        return Ok(array(obj, desc, read_only, Some(imported)));
    }

    // 3. `__cuda_array_interface__` (v2/v3).
    if let Ok(cai) = obj.getattr(intern!(py, "__cuda_array_interface__")) {
        return cuda_array_interface(obj, &cai, what, call);
    }

    Err(PyTypeError::new_err(format!(
        "the {what} must be an array with __dlpack__ or __cuda_array_interface__ (a torch.Tensor, CuPy or JAX array, ...); got {}",
        obj.get_type().name()?
    )))
}

/// The pieces of `__cuda_array_interface__`: shape, typestr, data, strides (bytes), stream.
fn cuda_array_interface<'py>(
    obj: &Bound<'py, PyAny>,
    cai: &Bound<'py, PyAny>,
    what: &str,
    call: &mut Call,
) -> PyResult<Array<'py>> {
    let cai = cai.cast::<PyDict>()?;
    let get = |k: &str| -> PyResult<Bound<'py, PyAny>> {
        cai.get_item(k)?
            .ok_or_else(|| PyValueError::new_err(format!("__cuda_array_interface__ has no '{k}'")))
    };
    let shape: Vec<usize> = get("shape")?.extract()?;
    let typestr: String = get("typestr")?.extract()?;
    let (ptr, read_only): (u64, bool) = get("data")?.extract()?;
    let (code, bits) = parse_typestr(&typestr)?;
    let dtype = dtype_of(code, bits, 1)?;
    let e = dtype.size_bytes() as i64;
    let strides = match cai.get_item("strides")? {
        Some(s) if !s.is_none() => {
            let b: Vec<i64> = s.extract()?;
            if b.iter().any(|x| x % e != 0) {
                return Err(PyValueError::new_err(format!(
                    "strides {b:?} (bytes) are not whole {typestr} elements"
                )));
            }
            b.iter().map(|x| x / e).collect()
        }
        _ => row_major(&shape),
    };
    let producer: Option<u64> = match cai.get_item("stream")? {
        Some(s) if !s.is_none() => Some(s.extract()?),
        _ => None,
    };
    // The interface does not name the device: ask the driver where the pointer lives.
    let ordinal = if ptr == 0 {
        0
    } else {
        crate::device::pointer_device(ptr)?.ok_or_else(|| {
            PyTypeError::new_err(format!(
                "cute_copy copies CUDA device memory; the {what}'s __cuda_array_interface__ pointer {ptr:#x} is not device memory"
            ))
        })?
    };
    let device = (KDL_CUDA, ordinal as i32);
    if call.launch {
        let ours = match call.stream {
            Some(s) => s,
            None => {
                let s = hook_stream(obj, device.1)?;
                call.stream = Some(s);
                s
            }
        };
        // v3: the consumer's stream waits for the producer's (1 and 2 name the default streams).
        if let Some(p) = producer {
            let p = if p == 1 { 0 } else { p };
            if p != ours {
                crate::device::wait_stream(ordinal, ours, p)?;
            }
        }
    }
    let desc = Desc {
        addr: ptr,
        code,
        bits,
        dtype,
        shape,
        strides,
        device,
    };
    Ok(array(obj, desc, read_only, None))
}

/// `<f4`, `|u1`, `|b1`, `<V2`, ... -> DLPack (code, bits).
fn parse_typestr(t: &str) -> PyResult<(u8, u8)> {
    let bad = || {
        PyValueError::new_err(format!(
            "unsupported __cuda_array_interface__ typestr {t:?}"
        ))
    };
    let b = t.as_bytes();
    if b.len() < 3 {
        return Err(bad());
    }
    let bytes: u32 = t[2..].parse().map_err(|_| bad())?;
    if b[0] == b'>' && bytes > 1 {
        return Err(PyValueError::new_err(format!(
            "big-endian arrays ({t:?}) are not supported"
        )));
    }
    let code = match b[1] {
        b'i' => 0,
        b'u' => 1,
        b'f' => 2,
        b'c' => 5,
        b'b' => 6,
        // Raw bytes (bfloat16 shows up as V2): moved as bits.
        b'V' => 1,
        _ => return Err(bad()),
    };
    let bits = u8::try_from(bytes * 8).map_err(|_| bad())?;
    Ok((code, bits))
}

/// `(n, m)` from a Python sequence, for error messages.
pub fn shape_str(shape: &[usize]) -> String {
    let v: Vec<String> = shape.iter().map(|n| n.to_string()).collect();
    format!("[{}]", v.join(", "))
}
