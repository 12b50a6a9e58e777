mod atom;
mod copy;
mod device;
mod dtype;
mod error;
mod ffi;
mod layout;
mod matrix;
mod plan;
pub mod reference;
pub mod timing;

pub use atom::{Atom, Family, KernelConfig, ELEMENT_WIDTHS};
pub use copy::{copy, copy_with, pad, pad_with, plan, tutorial_copy};
pub use device::{context, describe, device_count, runtime_device_count, stream};
pub use dtype::{DType, Element};
pub use error::{Error, Result};
pub use layout::TiledCopySpec;
pub use matrix::{DeviceMatrix, Geometry, MatrixView, MatrixViewMut};
pub use plan::{copy_mask, widest_vector_bits, Operand, Operation, Plan};

/// Re-exported so users name the same cudarc types the crate's API takes.
pub use cudarc;
