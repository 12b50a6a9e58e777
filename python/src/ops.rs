//! The copies between layouts (copy_, permute, pad) and the plans: arrays in, the crate's public
//! calls, nothing planned here. The index-driven copies are in `indexed.rs`.

use std::sync::Arc;

use cute_copy::cudarc::driver::CudaStream;
use cute_copy::{Convert, DType, Layout, RawTensor, TensorPlan, TensorRoute};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::PyDict;

use crate::array::{device_name, import, parse_stream, shape_str, Array, Call, KDL_CUDA};
use crate::device;
use crate::errors::IntoPy;

/// One side of a copy after the checks: coordinate 0's address and a non-negative layout.
struct Side {
    addr: u64,
    shape: Vec<usize>,
    stride: Vec<usize>,
}

/// A checked pair: equal shapes and devices; negative strides resolved. The dtypes may differ (a
/// converting copy).
struct Pair {
    dtype: DType,
    dst_dtype: DType,
    ordinal: usize,
    src: Side,
    dst: Side,
    empty: bool,
}

pub(crate) fn check_same_device(a: &Array, what_a: &str, b: &Array, what_b: &str) -> PyResult<()> {
    if a.device != b.device {
        return Err(PyValueError::new_err(format!(
            "the {what_a} is on {} and the {what_b} on {}: one call copies within one device",
            device_name(a.device),
            device_name(b.device)
        )));
    }
    Ok(())
}

pub(crate) fn check_same_dtype(
    src: &Array,
    what_s: &str,
    dst: &Array,
    what_d: &str,
) -> PyResult<()> {
    if (src.code, src.bits) != (dst.code, dst.bits) {
        return Err(PyValueError::new_err(format!(
            "dtype mismatch: {what_s} {}, {what_d} {} (cute_copy moves bits unchanged; convert first)",
            src.dtype_name(),
            dst.dtype_name()
        )));
    }
    Ok(())
}

pub(crate) fn check_writable(dst: &Array, what: &str) -> PyResult<()> {
    if dst.read_only {
        return Err(PyValueError::new_err(format!(
            "the {what} is read-only (its DLPack export says so): cute_copy does not write it"
        )));
    }
    Ok(())
}

/// Check `src` (seen through `src_shape`/`src_strides`, a permuted reading of it) against `dst`
/// and resolve the layouts the crate takes.
fn pair(dst: &Array, src: &Array, src_shape: &[usize], src_strides: &[i64]) -> PyResult<Pair> {
    check_same_device(src, "source", dst, "destination")?;
    check_writable(dst, "destination")?;
    if src_shape != dst.shape.as_slice() {
        return Err(PyValueError::new_err(format!(
            "shape mismatch: source {}, destination {} (a copy needs equal shapes)",
            shape_str(src_shape),
            shape_str(&dst.shape)
        )));
    }
    let e = src.dtype.size_bytes() as i64;
    let empty = src_shape.contains(&0);
    let (mut sa, mut da) = (src.addr as i64, dst.addr as i64);
    let (mut shape, mut ss, mut ds) = (Vec::new(), Vec::new(), Vec::new());
    for (m, &n) in src_shape.iter().enumerate() {
        let (s, d) = (src_strides[m], dst.strides[m]);
        if n == 1 {
            // A mode of one coordinate: its stride never multiplies anything.
            shape.push(1);
            ss.push(0);
            ds.push(0);
            continue;
        }
        let (s, d) = match (s < 0, d < 0) {
            (false, false) => (s, d),
            // Flipped on both sides: the same copy read from the other end of the mode.
            (true, true) if !empty => {
                sa += (n as i64 - 1) * s * e;
                da += (n as i64 - 1) * d * e;
                (-s, -d)
            }
            (true, true) => (-s, -d),
            (s_neg, _) => {
                let (what, stride) = if s_neg {
                    ("source", s)
                } else {
                    ("destination", d)
                };
                return Err(PyValueError::new_err(format!(
                    "negative strides: the {what}'s mode {m} has stride {stride} (a flipped view such as x[::-1]); cute_copy copies layouts of non-negative strides (or flipped alike on both sides): make it contiguous first"
                )));
            }
        };
        shape.push(n);
        ss.push(s as usize);
        ds.push(d as usize);
    }
    let (shape, ss, ds) = fit_rank(shape, ss, ds)?;
    Ok(Pair {
        dtype: src.dtype,
        dst_dtype: dst.dtype,
        ordinal: dst.ordinal(),
        src: Side {
            addr: sa as u64,
            shape: shape.clone(),
            stride: ss,
        },
        dst: Side {
            addr: da as u64,
            shape,
            stride: ds,
        },
        empty,
    })
}

/// Layouts of rank 1 to 6: a scalar is `(1):(0)`; above rank 6, size-1 modes go and adjacent
/// modes that merge on both sides merge.
#[allow(clippy::type_complexity)]
fn fit_rank(
    shape: Vec<usize>,
    ss: Vec<usize>,
    ds: Vec<usize>,
) -> PyResult<(Vec<usize>, Vec<usize>, Vec<usize>)> {
    if shape.is_empty() {
        return Ok((vec![1], vec![0], vec![0]));
    }
    if shape.len() <= cute_copy::MAX_RANK {
        return Ok((shape, ss, ds));
    }
    let (mut sh, mut s, mut d) = (Vec::new(), Vec::new(), Vec::new());
    for m in 0..shape.len() {
        if shape[m] == 1 {
            continue;
        }
        if !sh.is_empty() {
            let k = sh.len() - 1;
            if s[k] == shape[m] * ss[m] && d[k] == shape[m] * ds[m] {
                sh[k] *= shape[m];
                s[k] = ss[m];
                d[k] = ds[m];
                continue;
            }
        }
        sh.push(shape[m]);
        s.push(ss[m]);
        d.push(ds[m]);
    }
    if sh.is_empty() {
        return Ok((vec![1], vec![0], vec![0]));
    }
    if sh.len() > cute_copy::MAX_RANK {
        return Err(PyValueError::new_err(format!(
            "a copy of rank {} that does not merge into {} modes: {} (source strides {:?}, destination strides {:?})",
            shape.len(),
            cute_copy::MAX_RANK,
            shape_str(&shape),
            ss,
            ds
        )));
    }
    Ok((sh, s, d))
}

fn layout(side: &Side) -> PyResult<Layout> {
    Layout::new(&side.shape, &side.stride).py_err()
}

/// A borrowed raw tensor over one side (`len` = the layout's cosize).
///
/// # Safety
/// The side's memory must stay alive and unwritten by others for the launch (the Array holds its
/// owner; the framework's stream order does the rest).
unsafe fn raw<'a>(side: &Side, dtype: DType, s: &'a Arc<CudaStream>) -> PyResult<RawTensor<'a>> {
    let l = layout(side)?;
    let len = l.cosize().py_err()?;
    // SAFETY: forwarded to the caller.
    unsafe { RawTensor::with_layout(side.addr, len, dtype, 0, l, s) }.py_err()
}

/// Copy (or, when the dtypes differ or `convert` scales or normalizes, convert) one pair.
fn launch_pair(p: &Pair, stream: u64, convert: &Convert) -> PyResult<()> {
    if p.dtype == p.dst_dtype && convert.is_identity() {
        if p.empty {
            return Ok(());
        }
    } else {
        // checked even when empty: a bad pair or normalization is an error whatever the shape
        convert_plan(p, convert)?;
        if p.empty {
            return Ok(());
        }
    }
    let s = device::stream(p.ordinal, stream)?;
    let _restore = device::RestoreContext::save();
    // SAFETY: both arrays are held by the caller for the call and ordered on `s` by their
    // frameworks (the same stream, or the DLPack handshake made `s` wait).
    let src = unsafe { raw(&p.src, p.dtype, &s)? };
    let mut dst = unsafe { raw(&p.dst, p.dst_dtype, &s)? };
    if p.dtype == p.dst_dtype && convert.is_identity() {
        cute_copy::copy_tensor_raw(&src, &mut dst, &s).py_err()?;
    } else {
        cute_copy::convert_tensor_raw(&src, &mut dst, convert, &s).py_err()?;
    }
    Ok(())
}

/// The convert spec of `copy_`'s keywords: `scale`, and `mean` / `std` along `dim`.
pub(crate) fn convert_spec(
    rank: usize,
    scale: Option<f32>,
    mean: Option<Vec<f32>>,
    std: Option<Vec<f32>>,
    dim: Option<i64>,
) -> PyResult<Convert> {
    let mut c = Convert::new();
    if let Some(s) = scale {
        c = c.scale(s);
    }
    match (mean, std, dim) {
        (None, None, None) => Ok(c),
        (Some(mean), Some(std), Some(dim)) => {
            let d = if dim < 0 { dim + rank as i64 } else { dim };
            if d < 0 || d >= rank.max(1) as i64 {
                return Err(PyValueError::new_err(format!(
                    "dim {dim} is out of range for a destination of {rank} dimensions"
                )));
            }
            Ok(c.normalize(d as usize, &mean, &std))
        }
        _ => Err(PyValueError::new_err(
            "mean, std and dim go together: the channel dimension and its mean and std",
        )),
    }
}

fn convert_plan(p: &Pair, convert: &Convert) -> PyResult<cute_copy::ConvertPlan> {
    cute_copy::ConvertPlan::new(
        p.dtype,
        p.dst_dtype,
        layout(&p.src)?,
        layout(&p.dst)?,
        convert,
    )
    .py_err()
}

pub(crate) fn launch_call(stream: Option<&Bound<'_, PyAny>>) -> PyResult<Call> {
    Ok(Call {
        stream: parse_stream(stream)?,
        launch: true,
    })
}

/// `dst[...] = src`: any layouts of one shape, on the caller's stream; converting (and scaling
/// or normalizing along `dim`) when the dtypes differ or `scale` / `mean` / `std` are given.
#[pyfunction]
#[pyo3(signature = (dst, src, stream=None, scale=None, mean=None, std=None, dim=None))]
#[allow(clippy::too_many_arguments)]
pub fn copy_(
    dst: &Bound<'_, PyAny>,
    src: &Bound<'_, PyAny>,
    stream: Option<&Bound<'_, PyAny>>,
    scale: Option<f32>,
    mean: Option<Vec<f32>>,
    std: Option<Vec<f32>>,
    dim: Option<i64>,
) -> PyResult<()> {
    let mut call = launch_call(stream)?;
    let d = import(dst, "destination", &mut call)?;
    let s = import(src, "source", &mut call)?;
    let convert = convert_spec(d.shape.len(), scale, mean, std, dim)?;
    let p = pair(&d, &s, &s.shape, &s.strides)?;
    if convert.channel_mode().is_some() && p.dst.shape.len() != d.shape.len().max(1) {
        return Err(PyValueError::new_err(format!(
            "normalizing along a dim needs a copy of at most {} dimensions (this one has {})",
            cute_copy::MAX_RANK,
            d.shape.len()
        )));
    }
    launch_pair(&p, call.stream.unwrap_or(0), &convert)
}

fn permuted(x: &Array, dims: &[i64]) -> PyResult<(Vec<usize>, Vec<i64>)> {
    let r = x.shape.len() as i64;
    let mut seen = vec![false; x.shape.len()];
    let mut shape = Vec::with_capacity(dims.len());
    let mut strides = Vec::with_capacity(dims.len());
    let bad = || {
        PyValueError::new_err(format!(
            "dims {dims:?} is not a permutation of the {r} modes of an array of shape {}",
            shape_str(&x.shape)
        ))
    };
    if dims.len() != x.shape.len() {
        return Err(bad());
    }
    for &d in dims {
        let m = if d < 0 { d + r } else { d };
        if m < 0 || m >= r || seen[m as usize] {
            return Err(bad());
        }
        seen[m as usize] = true;
        shape.push(x.shape[m as usize]);
        strides.push(x.strides[m as usize]);
    }
    Ok((shape, strides))
}

/// `out[...] = x.permute(dims)`: `out` is the caller's new array.
#[pyfunction]
#[pyo3(signature = (out, x, dims, stream=None))]
pub fn permute_into(
    out: &Bound<'_, PyAny>,
    x: &Bound<'_, PyAny>,
    dims: Vec<i64>,
    stream: Option<&Bound<'_, PyAny>>,
) -> PyResult<()> {
    let mut call = launch_call(stream)?;
    let d = import(out, "destination", &mut call)?;
    let s = import(x, "source", &mut call)?;
    let (shape, strides) = permuted(&s, &dims)?;
    check_same_dtype(&s, "source", &d, "destination")?;
    let p = pair(&d, &s, &shape, &strides)?;
    launch_pair(&p, call.stream.unwrap_or(0), &Convert::new())
}

/// The matrix reading `(rows, cols, ld)` of a 2D array (rank 1: one row).
fn matrix2(a: &Array, what: &str) -> PyResult<Side> {
    let (rows, cols, rs, cs) = match a.shape.as_slice() {
        [n] => (1, *n, *n as i64, a.strides[0]),
        [r, c] => (*r, *c, a.strides[0], a.strides[1]),
        _ => {
            return Err(PyValueError::new_err(format!(
                "pad takes 1D or 2D arrays; the {what} has shape {}",
                shape_str(&a.shape)
            )))
        }
    };
    let cs = if cols <= 1 { 1 } else { cs };
    let rs = if rows <= 1 { cols.max(1) as i64 } else { rs };
    if cs != 1 || rs < cols as i64 {
        return Err(PyValueError::new_err(format!(
            "pad needs row-major rows (column stride 1, row stride >= columns); the {what} has shape {} and strides {:?}: make it contiguous first",
            shape_str(&a.shape),
            a.strides
        )));
    }
    Ok(Side {
        addr: a.addr,
        shape: vec![rows, cols],
        stride: vec![rs as usize, 1],
    })
}

/// `out = zero-padded x`: `x` (rows, cols) into the top-left corner of `out` (R >= rows, C >= cols),
/// the rest zeros, in one launch.
#[pyfunction]
#[pyo3(signature = (out, x, stream=None))]
pub fn pad_into(
    out: &Bound<'_, PyAny>,
    x: &Bound<'_, PyAny>,
    stream: Option<&Bound<'_, PyAny>>,
) -> PyResult<()> {
    let mut call = launch_call(stream)?;
    let d = import(out, "destination", &mut call)?;
    let s = import(x, "source", &mut call)?;
    check_same_device(&s, "source", &d, "destination")?;
    check_same_dtype(&s, "source", &d, "destination")?;
    check_writable(&d, "destination")?;
    let (sm, dm) = (matrix2(&s, "source")?, matrix2(&d, "destination")?);
    if d.numel() == 0 {
        return Ok(());
    }
    let st = device::stream(d.ordinal(), call.stream.unwrap_or(0))?;
    let _restore = device::RestoreContext::save();
    // SAFETY: as in launch_pair.
    let src = unsafe { raw(&sm, s.dtype, &st)? };
    let mut dst = unsafe { raw(&dm, d.dtype, &st)? };
    cute_copy::pad_raw(&src, &mut dst, None, &st).py_err()?;
    Ok(())
}

// ---- plans ---------------------------------------------------------------------------------

fn plan_of(dst: &Bound<'_, PyAny>, src: &Bound<'_, PyAny>) -> PyResult<TensorPlan> {
    let p = pair_of(dst, src)?;
    check_dtypes(&p)?;
    plan_pair(&p)
}

fn pair_of(dst: &Bound<'_, PyAny>, src: &Bound<'_, PyAny>) -> PyResult<Pair> {
    let mut call = Call {
        stream: None,
        launch: false,
    };
    let d = import(dst, "destination", &mut call)?;
    let s = import(src, "source", &mut call)?;
    pair(&d, &s, &s.shape, &s.strides)
}

fn check_dtypes(p: &Pair) -> PyResult<()> {
    if p.dtype != p.dst_dtype {
        return Err(PyValueError::new_err(format!(
            "dtype mismatch: source {}, destination {} (explain describes copies; plan() gives a converting copy's text)",
            p.dtype, p.dst_dtype
        )));
    }
    Ok(())
}

fn plan_pair(p: &Pair) -> PyResult<TensorPlan> {
    TensorPlan::new(
        p.dtype,
        layout(&p.src)?,
        layout(&p.dst)?,
        ((p.src.addr % 256) as usize, (p.dst.addr % 256) as usize),
    )
    .py_err()
}

/// The plan's text for copying (or converting) `src` into `dst` with `copy_`'s keywords (nothing
/// is launched; any device).
#[pyfunction]
#[pyo3(signature = (dst, src, scale=None, mean=None, std=None, dim=None))]
pub fn plan(
    dst: &Bound<'_, PyAny>,
    src: &Bound<'_, PyAny>,
    scale: Option<f32>,
    mean: Option<Vec<f32>>,
    std: Option<Vec<f32>>,
    dim: Option<i64>,
) -> PyResult<String> {
    let p = pair_of(dst, src)?;
    let convert = convert_spec(p.dst.shape.len(), scale, mean, std, dim)?;
    if p.dtype == p.dst_dtype && convert.is_identity() {
        Ok(plan_pair(&p)?.to_string())
    } else {
        Ok(convert_plan(&p, &convert)?.to_string())
    }
}

fn plan_dict<'py>(py: Python<'py>, p: &TensorPlan) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    d.set_item("dtype", p.dtype.name())?;
    d.set_item("src", p.src.to_string())?;
    d.set_item("dst", p.dst.to_string())?;
    d.set_item(
        "coalesced",
        (p.coalesced.0.to_string(), p.coalesced.1.to_string()),
    )?;
    d.set_item("offset_bytes", p.offset_bytes)?;
    let route = match &p.route {
        TensorRoute::Matrix(_) => "matrix",
        TensorRoute::Rows { .. } => "rows",
        TensorRoute::Transpose(_) => "transpose",
        TensorRoute::Empty => "empty",
    };
    d.set_item("route", route)?;
    d.set_item("atom", p.atom().to_string())?;
    d.set_item("bytes", p.bytes_moved())?;
    d.set_item("reasons", p.reasons())?;
    d.set_item("text", p.to_string())?;
    Ok(d)
}

/// The plan as a dict: dtype, layouts, coalesced layouts, route, atom, bytes, reasons, text.
#[pyfunction]
pub fn explain<'py>(
    py: Python<'py>,
    dst: &Bound<'py, PyAny>,
    src: &Bound<'py, PyAny>,
) -> PyResult<Bound<'py, PyDict>> {
    plan_dict(py, &plan_of(dst, src)?)
}

/// The plan of a copy described by layouts alone (no arrays, no GPU): `dtype` by name (`f16`,
/// `bf16`, `u8`, ...), one shape, strides in elements (None: row-major), offsets in bytes.
#[pyfunction]
#[pyo3(signature = (dtype, shape, src_strides=None, dst_strides=None, src_offset_bytes=0, dst_offset_bytes=0))]
pub fn explain_layout<'py>(
    py: Python<'py>,
    dtype: &str,
    shape: Vec<usize>,
    src_strides: Option<Vec<usize>>,
    dst_strides: Option<Vec<usize>>,
    src_offset_bytes: usize,
    dst_offset_bytes: usize,
) -> PyResult<Bound<'py, PyDict>> {
    let dt = DType::from_name(dtype).ok_or_else(|| {
        let names: Vec<&str> = DType::ALL.iter().map(|d| d.name()).collect();
        PyValueError::new_err(format!(
            "unknown dtype {dtype:?}: one of {}",
            names.join(", ")
        ))
    })?;
    let rm: Vec<usize> = crate::array::row_major(&shape)
        .iter()
        .map(|&s| s as usize)
        .collect();
    let s = Layout::new(&shape, src_strides.as_deref().unwrap_or(&rm)).py_err()?;
    let d = Layout::new(&shape, dst_strides.as_deref().unwrap_or(&rm)).py_err()?;
    let p = TensorPlan::new(dt, s, d, (src_offset_bytes, dst_offset_bytes)).py_err()?;
    plan_dict(py, &p)
}

/// What cute_copy reads from an array (any device): for tests and for debugging a producer.
#[pyfunction]
pub fn describe<'py>(py: Python<'py>, x: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyDict>> {
    let mut call = Call {
        stream: None,
        launch: false,
    };
    let a = import(x, "argument", &mut call)?;
    let d = PyDict::new(py);
    d.set_item("ptr", a.addr)?;
    d.set_item("shape", a.shape.clone())?;
    d.set_item("strides", a.strides.clone())?;
    d.set_item("dtype", a.dtype_name())?;
    d.set_item("kernel_dtype", a.dtype.name())?;
    d.set_item("device", device_name(a.device))?;
    d.set_item("device_type", a.device.0)?;
    d.set_item("device_id", a.device.1)?;
    d.set_item("read_only", a.read_only)?;
    d.set_item("cuda", a.device.0 == KDL_CUDA)?;
    Ok(d)
}

/// Python names the CUDA device count without touching a GPU-less machine's driver.
#[pyfunction]
pub fn device_count() -> usize {
    cute_copy::device_count()
}
