//! The crate's one error type.

use crate::ffi::Fault;
use crate::{Atom, DType};

/// Everything that can go wrong, checked before anything is launched where it can be.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The CUDA driver library (libcuda) could not be loaded: no NVIDIA driver on this machine.
    #[error("no CUDA driver: libcuda could not be loaded")]
    NoDriver,
    /// The driver loaded but reports no device (or not the requested ordinal).
    #[error("no CUDA device {ordinal} (the driver reports {count})")]
    NoDevice {
        /// The device ordinal asked for.
        ordinal: usize,
        /// How many devices the driver reports.
        count: usize,
    },
    /// A CUDA driver call failed (through cudarc).
    #[error("CUDA driver: {0}")]
    Driver(#[from] cudarc::driver::DriverError),
    /// A CUDA runtime error from the C++ side, with CUDA's name for it (e.g. `cudaErrorInvalidValue`).
    #[error("{name}: {message}")]
    Cuda {
        /// CUDA's name for the error, e.g. `cudaErrorInvalidValue`.
        name: String,
        /// CUDA's description of it.
        message: String,
    },
    /// The C++ side refused the request (a second line of checks behind the Rust ones).
    #[error("refused by the C++ side: {0}")]
    Refused(String),
    /// A shape or leading dimension that cannot describe a matrix.
    #[error("bad shape: {0}")]
    Shape(String),
    /// A row-major matrix whose leading dimension is smaller than its columns (or zero): the
    /// caller passes `ld >= cols`.
    #[error("{what} leading dimension {ld} is smaller than cols {cols} (or zero)")]
    LeadingDimension {
        /// Which side (source, destination, matrix).
        what: &'static str,
        /// The leading dimension given, in elements.
        ld: usize,
        /// The columns it must cover.
        cols: usize,
    },
    /// Host data whose length is not the number of elements the device side holds.
    #[error("host data has {got} elements, {what} needs {expected}")]
    HostLength {
        /// What the data was for (a matrix, a layout's span).
        what: String,
        /// Elements given.
        got: usize,
        /// Elements needed.
        expected: usize,
    },
    /// A kept plan launched on views other than the ones it was made for: plan again.
    #[error("the plan was made for other views (dtype, shapes, leading dimensions or 16-byte phases differ): plan again for these")]
    PlanMismatch,
    /// More blocks (or warp tasks) than one launch can hold: split the copy.
    #[error("{what}: {count} exceed the {max} a launch can hold")]
    GridTooLarge {
        /// What was counted (tiles of the grid, warp tasks).
        what: String,
        /// How many the copy needs (saturated at `u64::MAX`).
        count: u64,
        /// The most a launch holds.
        max: u64,
    },
    /// A layout of a rank outside 1..=[`crate::MAX_RANK`].
    #[error("rank {rank} is outside 1..={max}")]
    Rank {
        /// The rank given.
        rank: usize,
        /// The highest rank the crate has.
        max: usize,
    },
    /// A mode order that is not a permutation of the view's modes.
    #[error("{order:?} is not a permutation of the {rank} modes 0..{rank}")]
    NotAPermutation {
        /// The order given.
        order: Vec<usize>,
        /// The rank of the view.
        rank: usize,
    },
    /// A sub-matrix or slice that reaches past the view's extents (or has the wrong rank).
    #[error("slice at {start:?} of shape {shape:?} does not fit in a view of shape {extent:?}")]
    DoesNotFit {
        /// The start coordinate asked for.
        start: Vec<usize>,
        /// The shape asked for.
        shape: Vec<usize>,
        /// The view's shape.
        extent: Vec<usize>,
    },
    /// A raw device address that is not aligned to one element of its dtype.
    #[error("address {ptr:#x} is not aligned to one {dtype} element ({} bytes)", dtype.size_bytes())]
    UnalignedAddress {
        /// The address given.
        ptr: u64,
        /// The element type.
        dtype: DType,
    },
    /// An index list whose length does not match the rows it indexes, or a block table with an
    /// odd number of entries.
    #[error("{what}: {got} entries, expected {expected}")]
    IndexCount {
        /// What was counted.
        what: &'static str,
        /// Entries given.
        got: usize,
        /// Entries expected (for a block table: the next even number).
        expected: usize,
    },
    /// A size computation overflowed.
    #[error("size overflow: {0}")]
    Overflow(String),
    /// A view reaches past the end of its allocation.
    #[error("view needs {needed} elements from offset {offset} but the allocation holds {len}")]
    OutOfBounds {
        /// Offset of element (0, 0) in the allocation, in elements.
        offset: usize,
        /// Elements the view spans from its offset.
        needed: usize,
        /// Elements in the allocation.
        len: usize,
    },
    /// Source and destination shapes do not fit the operation.
    #[error("shape mismatch: source {src:?}, destination {dst:?} ({what})")]
    ShapeMismatch {
        /// The source side.
        src: (usize, usize),
        /// The destination side.
        dst: (usize, usize),
        /// What was checked.
        what: &'static str,
    },
    /// Source and destination share bytes.
    #[error("source and destination overlap")]
    Overlap,
    /// Source and destination element types differ.
    #[error("dtype mismatch: source {src}, destination {dst}")]
    DTypeMismatch {
        /// The source side.
        src: DType,
        /// The destination side.
        dst: DType,
    },
    /// A buffer and the stream belong to different contexts of one device, or an index or status
    /// buffer to another device than the stream's. (Views on two devices are a copy between
    /// devices: peer access or the copy engine, see [`crate::PeerRoute`].)
    #[error("{what} belongs to device {buffer_device}, the stream to device {stream_device}")]
    WrongContext {
        /// What was checked.
        what: &'static str,
        /// Device ordinal of the buffer.
        buffer_device: usize,
        /// Device ordinal of the stream.
        stream_device: usize,
    },
    /// A copy between two devices that only a kernel can do (a layout the copy engine does not
    /// take: a pad, a transpose, a block table, an atom the caller named), where the stream's
    /// device cannot map the other device's memory (`cuDeviceCanAccessPeer` says no, or the driver
    /// refused `cuCtxEnablePeerAccess`). Nothing is written; the copy engine still moves contiguous
    /// and pitched data between such devices.
    #[error("{what} from device {src_device} to device {dst_device} needs a kernel on device {stream_device} reading or writing the other device's memory, and device {stream_device} has no peer access to it")]
    NoPeerAccess {
        /// What only a kernel does.
        what: &'static str,
        /// Device ordinal of the source.
        src_device: usize,
        /// Device ordinal of the destination.
        dst_device: usize,
        /// Device ordinal of the stream.
        stream_device: usize,
    },
    /// A copy between two devices on a stream of a third: a copy between devices runs on a
    /// stream of the source's device (push) or the destination's (pull).
    #[error("the source is on device {src_device} and the destination on device {dst_device}, the stream on device {stream_device}: use a stream of one of them")]
    StreamOnThirdDevice {
        /// Device ordinal of the source.
        src_device: usize,
        /// Device ordinal of the destination.
        dst_device: usize,
        /// Device ordinal of the stream.
        stream_device: usize,
    },
    /// An explicitly requested atom whose accesses would be misaligned.
    #[error("{atom:?} needs {required}-byte alignment but the {what} is {value} bytes ({value} mod {required} = {remainder})")]
    Misaligned {
        /// The atom concerned.
        atom: Atom,
        /// What was checked.
        what: &'static str,
        /// The offending value, in bytes.
        value: usize,
        /// The alignment the atom needs, in bytes.
        required: usize,
        /// `value` modulo `required`.
        remainder: usize,
    },
    /// An atom narrower than one element.
    #[error("{atom:?} moves {atom_bytes} bytes per call, narrower than one {dtype} element ({elem_bytes} bytes)")]
    AtomNarrowerThanElement {
        /// The atom concerned.
        atom: Atom,
        /// Bytes the atom moves per call.
        atom_bytes: usize,
        /// The element type.
        dtype: DType,
        /// Bytes per element.
        elem_bytes: usize,
    },
    /// A pad asked of an atom that cannot write zeros for masked lanes.
    #[error("{0:?} cannot zero-fill: a pad needs a Universal* atom or a CpAsyncZfill* atom")]
    AtomCannotZeroFill(Atom),
    /// The atom needs a newer GPU.
    #[error(
        "{atom:?} needs compute capability {needed}.0 or newer, the device has {major}.{minor}"
    )]
    UnsupportedArch {
        /// The atom concerned.
        atom: Atom,
        /// Elements the view spans from its offset.
        needed: u32,
        /// The device compute capability, major.
        major: u32,
        /// The device compute capability, minor.
        minor: u32,
    },
    /// A conversion the convert family does not do (a 64-bit integer to a 16-bit or 8-bit float,
    /// a 32-bit integer to an 8-bit float): `cute_copy::conversion` lists what converts how.
    #[error("no conversion from {src} to {dst}")]
    UnsupportedConversion {
        /// The source dtype.
        src: DType,
        /// The destination dtype.
        dst: DType,
    },
    /// A scale or per-channel normalization that cannot apply: a mode outside the rank, mean or
    /// std of another length than the mode's extent, a zero or non-finite std or scale.
    #[error("normalize: {0}")]
    Normalize(String),
    /// A request outside what the chosen kernel supports (e.g. the tutorial's multiples of 32).
    #[error("unsupported: {0}")]
    Unsupported(String),
    /// A layout that cannot be written (rank, notation, overflow, permutation), or a TiledCopy spec
    /// that CuTe cannot build or that does not tile the tile.
    #[error("layout: {0}")]
    Layout(String),
    /// The two layouts of a tensor copy have different shapes.
    #[error("layout mismatch: source {src}, destination {dst} (a copy needs equal shapes)")]
    LayoutMismatch {
        /// The source layout, in CuTe's notation.
        src: String,
        /// The destination layout.
        dst: String,
    },
    /// A destination layout that maps two coordinates to one element (a zero or overlapping
    /// stride): the copy's result would depend on the order of writes.
    #[error("destination layout {0} writes some elements twice (zero or overlapping strides)")]
    DestinationNotInjective(String),
    /// A matrix operation (2D copy or pad, `sub`) on a view whose layout is not a row-major matrix.
    #[error("{what}: the view's layout {layout} is not a row-major matrix (rows, cols):(ld, 1); use copy_tensor for any layout")]
    NotAMatrix {
        /// The view's layout.
        layout: String,
        /// What was asked.
        what: &'static str,
    },
    /// The crate was built without its CUDA kernels (`DOCS_RS` or `CUTE_COPY_NO_CUDA=1` at build
    /// time, for docs and `cargo check` on a machine without a CUDA toolkit): nothing can launch.
    #[error("{0}")]
    NoKernels(String),
    /// A thread index outside the thread layout.
    #[error("thread {thread} is out of range: the thread layout has {threads} threads")]
    ThreadOutOfRange {
        /// The thread index asked for.
        thread: usize,
        /// Threads in the thread layout.
        threads: usize,
    },
    /// Indices at or past the end of the side they index: found before upload for host indices
    /// ([`crate::upload_indices`]), or by the kernel (which skipped them) and reported by
    /// [`crate::IndexStatus::check`].
    #[error("{count} index(es) out of range; the first at item {first_item}")]
    IndexOutOfRange {
        /// How many indices were out of range.
        count: u64,
        /// The lowest item (row or pair number) whose index was out of range.
        first_item: u64,
    },
    /// A tensor of another framework (candle) that does not live on a CUDA device.
    #[error("the {what} is on {device}, not on a CUDA device: cute-copy moves GPU memory")]
    NotOnCuda {
        /// Which argument (source, destination, block table, ...).
        what: &'static str,
        /// The device it is on, as its framework names it.
        device: String,
    },
    /// candle itself failed or refused (an allocation, the checks of its in-place ops).
    #[cfg(feature = "candle")]
    #[error("candle: {0}")]
    Candle(#[from] candle_core::Error),
}

impl Error {
    /// Turn a C++ exception into an error by its [`Fault`] code, the message's first byte (the
    /// bridge's `trycatch`, `cpp/include/cute_copy/bridge.h`): a CUDA failure carries CUDA's
    /// name for the error and its description, separated by 0x1f.
    pub(crate) fn from_cxx(e: cxx::Exception) -> Self {
        let what = e.what();
        let code = what.as_bytes().first().copied();
        let is = |f: Fault| code == Some(f.repr);
        let text = if [Fault::Refused, Fault::Cuda, Fault::NoKernels]
            .into_iter()
            .any(is)
        {
            &what[1..] // an ASCII code byte
        } else {
            what
        };
        if is(Fault::Cuda) {
            let (name, message) = text.split_once('\x1f').unwrap_or(("cudaError", text));
            Error::Cuda {
                name: name.to_string(),
                message: message.to_string(),
            }
        } else if is(Fault::NoKernels) {
            Error::NoKernels(text.to_string())
        } else {
            Error::Refused(text.to_string())
        }
    }
}

/// Shorthand for this crate's results.
pub type Result<T, E = Error> = std::result::Result<T, E>;

#[cfg(test)]
mod tests {
    use super::*;

    /// A C++ exception arrives as its Fault code plus its text: a refusal of the kernel library's
    /// second line of checks, or the no-kernels build's answer (host calls, no GPU needed).
    #[test]
    fn cxx_exceptions_arrive_typed_by_their_fault_code() {
        let kernels = crate::ffi::rows_segments(0).is_ok();
        match crate::ffi::kernel_config(9999, 1) {
            Err(Error::Refused(m)) if kernels => assert_eq!(m, "unknown atom 9999"),
            Err(Error::NoKernels(m)) if !kernels => {
                assert!(
                    m.starts_with("cute-copy was built without CUDA kernels"),
                    "{m}"
                )
            }
            other => panic!("{other:?}"),
        }
    }
}
