//! The index-driven copies (row gather and scatter, block tables) and their status object.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use cute_copy::cudarc::driver::{CudaSlice, CudaStream};
use cute_copy::{Convert, IndexKind, Layout, RawTensor, TensorView, TensorViewMut};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;

use crate::array::{import, parse_stream, shape_str, Array};
use crate::device;
use crate::errors::IntoPy;
use crate::ops::{check_same_device, check_same_dtype, check_writable, launch_call};

/// The matrix reading of an array of rows: `[n, ...]` with each row (the trailing modes)
/// contiguous is `(n, prod(...))` with leading dimension `stride[0]`.
fn rows_of(a: &Array, what: &str) -> PyResult<(u64, usize, usize, usize)> {
    if a.shape.is_empty() {
        return Err(PyValueError::new_err(format!(
            "the {what} must have a row mode: it is a scalar"
        )));
    }
    let rows = a.shape[0];
    let mut cols = 1usize;
    for m in (1..a.shape.len()).rev() {
        if a.shape[m] != 1 && a.strides[m] != cols as i64 {
            return Err(PyValueError::new_err(format!(
                "each row of the {what} must be contiguous: shape {}, strides {:?}",
                shape_str(&a.shape),
                a.strides
            )));
        }
        cols *= a.shape[m];
    }
    if rows > 1 && (a.strides[0] < 0 || (a.strides[0] as usize) < cols) {
        return Err(PyValueError::new_err(format!(
            "the {what}'s rows overlap or run backwards: row stride {} for rows of {cols} elements",
            a.strides[0]
        )));
    }
    // One row (or none): its stride never multiplies anything.
    let ld = if rows <= 1 {
        cols
    } else {
        a.strides[0] as usize
    };
    Ok((a.addr, rows, cols, ld.max(cols)))
}

/// An index array: int32 or int64, contiguous; `pairs` reads `[n, 2]` (or a flat even length).
fn indices_of(a: &Array, what: &str, pairs: bool) -> PyResult<(u64, usize)> {
    match (a.code, a.bits) {
        (0, 32) | (0, 64) => {}
        _ => {
            return Err(PyValueError::new_err(format!(
                "the {what} must be int32 or int64, not {}",
                a.dtype_name()
            )))
        }
    };
    let contiguous = a.numel() <= 1
        || crate::array::row_major(&a.shape)
            .iter()
            .zip(&a.strides)
            .zip(&a.shape)
            .all(|((r, s), n)| *n == 1 || r == s);
    let shape_ok = match (pairs, a.shape.as_slice()) {
        (false, [_]) => true,
        (true, [_, 2]) => true,
        (true, [n]) => n % 2 == 0,
        _ => false,
    };
    if !shape_ok || !contiguous {
        return Err(PyValueError::new_err(format!(
            "the {what} must be a contiguous {} of int32/int64; got shape {} strides {:?}",
            if pairs {
                "[n, 2] array (source block, destination block)"
            } else {
                "1D array"
            },
            shape_str(&a.shape),
            a.strides
        )));
    }
    Ok((a.addr, a.numel()))
}

/// A device slice over the caller's index memory, never freed by us.
struct Borrowed<I>(Option<CudaSlice<I>>);

impl<I> Borrowed<I> {
    /// # Safety
    /// `addr` must address `len` indices of live device memory on `s`'s device.
    unsafe fn new(s: &Arc<CudaStream>, addr: u64, len: usize) -> Self {
        // SAFETY: forwarded; `leak` in Drop hands the memory back without freeing it.
        Borrowed(Some(unsafe { s.upgrade_device_ptr::<I>(addr, len) }))
    }
    fn get(&self) -> &CudaSlice<I> {
        self.0.as_ref().expect("present until dropped")
    }
}

impl<I> Drop for Borrowed<I> {
    fn drop(&mut self) {
        if let Some(s) = self.0.take() {
            s.leak();
        }
    }
}

/// `cute_copy.IndexStatus`: a device counter of out-of-range indices.
#[pyclass(name = "IndexStatus", module = "cute_copy._cute_copy")]
pub struct PyIndexStatus {
    ordinal: usize,
    last_stream: AtomicU64,
    inner: Mutex<cute_copy::IndexStatus>,
}

impl PyIndexStatus {
    fn create(ordinal: usize) -> PyResult<Self> {
        let ctx = device::context(ordinal)?;
        let _restore = device::RestoreContext::save();
        let s = ctx.default_stream();
        let inner = cute_copy::IndexStatus::new(&s).py_err()?;
        // Cleared before any stream of the caller reads it (once per status, never per copy).
        s.synchronize().py_err()?;
        Ok(PyIndexStatus {
            ordinal,
            last_stream: AtomicU64::new(0),
            inner: Mutex::new(inner),
        })
    }
}

#[pymethods]
impl PyIndexStatus {
    /// A cleared status on CUDA device `device`.
    #[new]
    #[pyo3(signature = (device=0))]
    fn new(device: usize) -> PyResult<Self> {
        Self::create(device)
    }

    /// Wait for the stream of the last copy that used this status, then raise `IndexError` if any
    /// index since the last check was out of range (negative ones are skips, not errors). Clears.
    #[pyo3(signature = (stream=None))]
    fn check(&self, stream: Option<&Bound<'_, PyAny>>) -> PyResult<()> {
        let h = parse_stream(stream)?.unwrap_or(self.last_stream.load(Ordering::Relaxed));
        let s = device::stream(self.ordinal, h)?;
        let _restore = device::RestoreContext::save();
        let mut inner = self.inner.lock().unwrap_or_else(|p| p.into_inner());
        inner.check(&s).py_err()
    }

    /// The CUDA device ordinal.
    #[getter]
    fn device(&self) -> usize {
        self.ordinal
    }

    fn __repr__(&self) -> String {
        format!("IndexStatus(device={})", self.ordinal)
    }
}

static DEFAULT_STATUS: Mutex<Vec<(usize, Py<PyIndexStatus>)>> = Mutex::new(Vec::new());

/// The status a copy without `status=` counts into, one per device.
#[pyfunction]
#[pyo3(signature = (device=0))]
pub fn index_status(py: Python<'_>, device: usize) -> PyResult<Py<PyIndexStatus>> {
    let mut all = DEFAULT_STATUS.lock().unwrap_or_else(|p| p.into_inner());
    if let Some((_, s)) = all.iter().find(|(d, _)| *d == device) {
        return Ok(s.clone_ref(py));
    }
    let s = Py::new(py, PyIndexStatus::create(device)?)?;
    all.push((device, s.clone_ref(py)));
    Ok(s)
}

macro_rules! by_width {
    ($dtype:expr, $T:ident => $body:expr) => {
        match $dtype.size_bytes() {
            1 => {
                type $T = u8;
                $body
            }
            2 => {
                type $T = u16;
                $body
            }
            4 => {
                type $T = u32;
                $body
            }
            _ => {
                type $T = u64;
                $body
            }
        }
    };
}

macro_rules! by_index {
    ($bits:expr, $I:ident => $body:expr) => {
        if $bits == 32 {
            type $I = i32;
            $body
        } else {
            type $I = i64;
            $body
        }
    };
}

#[derive(Clone, Copy, PartialEq)]
enum Indexed {
    Gather,
    Scatter,
    Blocks,
}

fn indexed(
    py: Python<'_>,
    which: Indexed,
    src: &Bound<'_, PyAny>,
    idx: &Bound<'_, PyAny>,
    out: &Bound<'_, PyAny>,
    (status, stream, scale): (
        Option<&Bound<'_, PyIndexStatus>>,
        Option<&Bound<'_, PyAny>>,
        Option<f32>,
    ),
) -> PyResult<()> {
    let mut call = launch_call(stream)?;
    let d = import(out, "destination", &mut call)?;
    let s = import(src, "source", &mut call)?;
    let what = if which == Indexed::Blocks {
        "block table"
    } else {
        "indices"
    };
    let i = import(idx, what, &mut call)?;
    check_same_device(&s, "source", &d, "destination")?;
    check_same_device(&i, what, &d, "destination")?;
    check_writable(&d, "destination")?;
    if s.dtype != d.dtype || scale.is_some() {
        let convert = scale.map_or_else(Convert::new, |x| Convert::new().scale(x));
        return indexed_convert(py, which, (&s, &i, &d), &convert, status, call.stream);
    }
    check_same_dtype(&s, "source", &d, "destination")?;
    let (sa, s_rows, s_cols, s_ld) = rows_of(&s, "source")?;
    let (da, d_rows, d_cols, d_ld) = rows_of(&d, "destination")?;
    if s.shape.get(1..) != d.shape.get(1..) {
        return Err(PyValueError::new_err(format!(
            "rows of the source {} and of the destination {} differ in shape",
            shape_str(&s.shape),
            shape_str(&d.shape)
        )));
    }
    let (ia, n) = indices_of(&i, what, which == Indexed::Blocks)?;
    let need = match which {
        Indexed::Gather => d_rows,
        Indexed::Scatter => s_rows,
        Indexed::Blocks => 0,
    };
    if n < need {
        return Err(PyValueError::new_err(format!(
            "{n} indices for {need} rows of the {}",
            if which == Indexed::Gather {
                "destination"
            } else {
                "source"
            }
        )));
    }
    let count = if which == Indexed::Blocks {
        n / 2
    } else {
        need
    };
    if count == 0 || s_cols == 0 {
        return Ok(());
    }
    let st = device::stream(d.ordinal(), call.stream.unwrap_or(0))?;
    let _restore = device::RestoreContext::save();
    let status = status_for(py, status, d.ordinal(), call.stream)?;
    let status = status.bind(py).borrow();
    let mut guard = status.inner.lock().unwrap_or_else(|p| p.into_inner());
    let span =
        |rows: usize, cols: usize, ld: usize| if rows == 0 { 0 } else { (rows - 1) * ld + cols };
    by_width!(s.dtype, T => {
        // SAFETY: the arrays are held for the call and ordered on `st` (see launch_pair); the
        // views span exactly the rows the arrays have.
        let sv = unsafe { TensorView::<T>::from_raw(sa, span(s_rows, s_cols, s_ld), s_rows, s_cols, s_ld, &st) }.py_err()?;
        let mut dv = unsafe { TensorViewMut::<T>::from_raw(da, span(d_rows, d_cols, d_ld), d_rows, d_cols, d_ld, &st) }.py_err()?;
        by_index!(i.bits, I => {
            // SAFETY: the index array is held for the call; `n` indices at `ia` on this device.
            let ix = unsafe { Borrowed::<I>::new(&st, ia, n) };
            match which {
                Indexed::Gather => cute_copy::gather_rows(&sv, ix.get(), &mut dv, &mut guard, &st),
                Indexed::Scatter => cute_copy::scatter_rows(&sv, ix.get(), &mut dv, &mut guard, &st),
                Indexed::Blocks => cute_copy::copy_blocks(&sv, &mut dv, 1, ix.get(), &mut guard, &st),
            }
            .py_err()?;
        })
    });
    Ok(())
}

/// The status a copy counts into (`status`, else the device's default), checked to be on the
/// arrays' device and told the stream its `check` waits for.
fn status_for(
    py: Python<'_>,
    status: Option<&Bound<'_, PyIndexStatus>>,
    ordinal: usize,
    stream: Option<u64>,
) -> PyResult<Py<PyIndexStatus>> {
    let status = match status {
        Some(s) => s.clone().unbind(),
        None => index_status(py, ordinal)?,
    };
    {
        let st = status.bind(py).borrow();
        if st.ordinal != ordinal {
            return Err(PyValueError::new_err(format!(
                "the IndexStatus is on cuda:{}, the arrays on cuda:{ordinal}",
                st.ordinal
            )));
        }
        st.last_stream.store(stream.unwrap_or(0), Ordering::Relaxed);
    }
    Ok(status)
}

/// A whole array as a view of its own layout (any non-negative strides, rank 1 to 6).
///
/// # Safety
/// The array's memory must stay alive and unwritten by others for the launch (the Array holds
/// its owner; the framework's stream order does the rest).
unsafe fn raw_tensor<'a>(
    a: &Array,
    what: &str,
    st: &'a Arc<CudaStream>,
) -> PyResult<RawTensor<'a>> {
    if a.shape.is_empty() {
        return Err(PyValueError::new_err(format!(
            "the {what} must have a row mode: it is a scalar"
        )));
    }
    let strides = a
        .strides
        .iter()
        .map(|&x| usize::try_from(x))
        .collect::<Result<Vec<usize>, _>>()
        .map_err(|_| {
            PyValueError::new_err(format!("the {what} has a negative stride: {:?}", a.strides))
        })?;
    let layout = Layout::new(&a.shape, &strides).py_err()?;
    let len = layout.cosize().py_err()?;
    // SAFETY: forwarded to the caller.
    unsafe { RawTensor::with_layout(a.addr, len, a.dtype, 0, layout, st) }.py_err()
}

/// The converting forms (the dtypes differ, or `scale` is given): items are the entries of mode
/// 0 of arrays of any strides, each converted (and scaled) on the way.
fn indexed_convert(
    py: Python<'_>,
    which: Indexed,
    (s, i, d): (&Array, &Array, &Array),
    convert: &Convert,
    status: Option<&Bound<'_, PyIndexStatus>>,
    stream: Option<u64>,
) -> PyResult<()> {
    let (what, kind) = match which {
        Indexed::Gather => ("indices", IndexKind::Gather),
        Indexed::Scatter => ("indices", IndexKind::Scatter),
        Indexed::Blocks => ("block table", IndexKind::BlockTable),
    };
    let (ia, n) = indices_of(i, what, which == Indexed::Blocks)?;
    let st = device::stream(d.ordinal(), stream.unwrap_or(0))?;
    let _restore = device::RestoreContext::save();
    let status = status_for(py, status, d.ordinal(), stream)?;
    let status = status.bind(py).borrow();
    let mut guard = status.inner.lock().unwrap_or_else(|p| p.into_inner());
    // SAFETY: the arrays are held for the call and ordered on `st` (see launch_pair).
    let sv = unsafe { raw_tensor(s, "source", &st)? };
    let mut dv = unsafe { raw_tensor(d, "destination", &st)? };
    by_index!(i.bits, I => {
        // SAFETY: the index array is held for the call; `n` indices at `ia` on this device.
        let ix = unsafe { Borrowed::<I>::new(&st, ia, n) };
        cute_copy::convert_indexed_raw(&sv, &mut dv, (kind, 1), ix.get(), convert, &mut guard, &st)
            .py_err()?;
    });
    Ok(())
}

/// `out[i] = src[idx[i]]` for every row `i` of `out`.
#[pyfunction]
#[pyo3(signature = (src, idx, out, status=None, stream=None, scale=None))]
pub fn gather_rows(
    py: Python<'_>,
    src: &Bound<'_, PyAny>,
    idx: &Bound<'_, PyAny>,
    out: &Bound<'_, PyAny>,
    status: Option<&Bound<'_, PyIndexStatus>>,
    stream: Option<&Bound<'_, PyAny>>,
    scale: Option<f32>,
) -> PyResult<()> {
    indexed(py, Indexed::Gather, src, idx, out, (status, stream, scale))
}

/// `out[idx[i]] = src[i]` for every row `i` of `src`.
#[pyfunction]
#[pyo3(signature = (src, idx, out, status=None, stream=None, scale=None))]
pub fn scatter_rows(
    py: Python<'_>,
    src: &Bound<'_, PyAny>,
    idx: &Bound<'_, PyAny>,
    out: &Bound<'_, PyAny>,
    status: Option<&Bound<'_, PyIndexStatus>>,
    stream: Option<&Bound<'_, PyAny>>,
    scale: Option<f32>,
) -> PyResult<()> {
    indexed(py, Indexed::Scatter, src, idx, out, (status, stream, scale))
}

/// `dst[pairs[k, 1]] = src[pairs[k, 0]]` for every pair `k`: blocks are the rows of `[n, ...]`.
#[pyfunction]
#[pyo3(signature = (src, dst, pairs, status=None, stream=None, scale=None))]
pub fn copy_blocks(
    py: Python<'_>,
    src: &Bound<'_, PyAny>,
    dst: &Bound<'_, PyAny>,
    pairs: &Bound<'_, PyAny>,
    status: Option<&Bound<'_, PyIndexStatus>>,
    stream: Option<&Bound<'_, PyAny>>,
    scale: Option<f32>,
) -> PyResult<()> {
    indexed(
        py,
        Indexed::Blocks,
        src,
        pairs,
        dst,
        (status, stream, scale),
    )
}
