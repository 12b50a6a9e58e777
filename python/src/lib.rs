//! The `cute_copy._cute_copy` extension: Python arrays (DLPack, `__cuda_array_interface__`) in,
//! the cute-copy crate's public calls, errors out as Python exceptions (mapped once, in
//! `errors`). The Python shim (`py_src/cute_copy`) allocates outputs and registers the torch ops.

mod array;
mod device;
mod errors;
mod indexed;
mod ops;

use pyo3::prelude::*;

/// Name the Python function asked for the current stream of an array's framework.
#[pyfunction]
fn _set_stream_hook(f: Py<PyAny>) {
    array::set_stream_hook(f);
}

#[pymodule]
fn _cute_copy(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    m.add_class::<indexed::PyIndexStatus>()?;
    m.add_function(wrap_pyfunction!(ops::copy_, m)?)?;
    m.add_function(wrap_pyfunction!(ops::permute_into, m)?)?;
    m.add_function(wrap_pyfunction!(ops::pad_into, m)?)?;
    m.add_function(wrap_pyfunction!(indexed::gather_rows, m)?)?;
    m.add_function(wrap_pyfunction!(indexed::scatter_rows, m)?)?;
    m.add_function(wrap_pyfunction!(indexed::copy_blocks, m)?)?;
    m.add_function(wrap_pyfunction!(indexed::index_status, m)?)?;
    m.add_function(wrap_pyfunction!(ops::plan, m)?)?;
    m.add_function(wrap_pyfunction!(ops::explain, m)?)?;
    m.add_function(wrap_pyfunction!(ops::explain_layout, m)?)?;
    m.add_function(wrap_pyfunction!(ops::describe, m)?)?;
    m.add_function(wrap_pyfunction!(ops::device_count, m)?)?;
    m.add_function(wrap_pyfunction!(_set_stream_hook, m)?)?;
    Ok(())
}
