//! The one place the crate's errors become Python exceptions.

use cute_copy::Error;
use pyo3::exceptions::{PyIndexError, PyRuntimeError, PyValueError};
use pyo3::PyErr;

/// `ValueError` for what the caller asked (shape, dtype, layout, alignment, overlap), `IndexError`
/// for indices found out of range, `RuntimeError` for the driver, the device and CUDA itself.
pub fn to_py(e: Error) -> PyErr {
    let msg = e.to_string();
    match e {
        Error::NoDriver
        | Error::NoDevice { .. }
        | Error::Driver(_)
        | Error::Cuda { .. }
        | Error::NoKernels(_)
        | Error::UnsupportedArch { .. }
        | Error::GridTooLarge { .. } => PyRuntimeError::new_err(msg),
        Error::IndexOutOfRange { .. } => PyIndexError::new_err(msg),
        Error::Refused(_)
        | Error::Shape(_)
        | Error::Overflow(_)
        | Error::OutOfBounds { .. }
        | Error::ShapeMismatch { .. }
        | Error::Overlap
        | Error::DTypeMismatch { .. }
        | Error::UnsupportedConversion { .. }
        | Error::Normalize(_)
        | Error::WrongContext { .. }
        | Error::Misaligned { .. }
        | Error::AtomNarrowerThanElement { .. }
        | Error::AtomCannotZeroFill(_)
        | Error::Unsupported(_)
        | Error::Layout(_)
        | Error::LayoutMismatch { .. }
        | Error::DestinationNotInjective(_)
        | Error::NotAMatrix { .. }
        | Error::ThreadOutOfRange { .. }
        | Error::LeadingDimension { .. }
        | Error::HostLength { .. }
        | Error::PlanMismatch
        | Error::Rank { .. }
        | Error::NotAPermutation { .. }
        | Error::DoesNotFit { .. }
        | Error::UnalignedAddress { .. }
        | Error::IndexCount { .. } => PyValueError::new_err(msg),
        // A variant added to the crate later: not knowing better, a runtime failure.
        _ => PyRuntimeError::new_err(msg),
    }
}

/// `.map_err(to_py)` as a method.
pub trait IntoPy<T> {
    fn py_err(self) -> pyo3::PyResult<T>;
}

impl<T> IntoPy<T> for Result<T, Error> {
    fn py_err(self) -> pyo3::PyResult<T> {
        self.map_err(to_py)
    }
}

impl<T> IntoPy<T> for Result<T, cute_copy::cudarc::driver::DriverError> {
    fn py_err(self) -> pyo3::PyResult<T> {
        self.map_err(|e| to_py(Error::Driver(e)))
    }
}
