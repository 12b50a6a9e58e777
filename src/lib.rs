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
pub use copy::{
    copy, copy_raw, copy_with, launch, launch_baseline, launch_overhead_ns, pad, pad_raw, pad_with,
    plan, tutorial_copy, Baseline,
};
pub use device::{context, describe, device_count, runtime_device_count, stream};
pub use dtype::{DType, Element};
pub use error::{Error, Result};
pub use layout::TiledCopySpec;
pub use matrix::{DeviceMatrix, Geometry, MatrixView, MatrixViewMut, RawMatrix};
pub use plan::{copy_mask, widest_vector_bits, Operand, Operation, Plan, MAX_BLOCKS};

/// Re-exported so users name the same cudarc types the crate's API takes.
pub use cudarc;
