//! `run`: one copy or pad on the GPU, verified against the host reference and timed against a
//! device-to-device memcpy; the measuring machinery `bench` shares.

use std::sync::Arc;

use clap::Args;
use cute_copy::cudarc::driver::CudaStream;
use cute_copy::reference::{compare, expected_destination, poisoned_destination, random_elements};
use cute_copy::timing::{gbps, time_launches};
use cute_copy::{DType, DeviceMatrix, Element, Geometry, Operand, Operation, Plan};
use rand::{Rng, SeedableRng};

use crate::flags::{Case, ShapeArgs};
use crate::CliResult;

#[derive(Args)]
pub(crate) struct RunArgs {
    #[command(flatten)]
    shape: ShapeArgs,
    /// Timed iterations (after 3 warm-up launches).
    #[arg(long, default_value_t = 20)]
    iters: usize,
}

/// Call `$f::<T>(args)` with the Rust element type of a run-time [`DType`]; with a type given,
/// `$f::<$S, T>(args)` (a second element type, for conversions).
macro_rules! with_element {
    ($dtype:expr, $f:ident($($arg:expr),* $(,)?)) => {
        with_element!(@ $dtype, $f, [], ($($arg),*))
    };
    ($dtype:expr, $f:ident::<$S:ty>($($arg:expr),* $(,)?)) => {
        with_element!(@ $dtype, $f, [$S,], ($($arg),*))
    };
    (@ $dtype:expr, $f:ident, [$($S:ty,)?], $args:tt) => {
        match $dtype {
            DType::F32 => with_element!(@call $f, [$($S,)? f32], $args),
            DType::F64 => with_element!(@call $f, [$($S,)? f64], $args),
            DType::F16 => with_element!(@call $f, [$($S,)? half::f16], $args),
            DType::BF16 => with_element!(@call $f, [$($S,)? half::bf16], $args),
            DType::U8 => with_element!(@call $f, [$($S,)? u8], $args),
            DType::I8 => with_element!(@call $f, [$($S,)? i8], $args),
            DType::U16 => with_element!(@call $f, [$($S,)? u16], $args),
            DType::I16 => with_element!(@call $f, [$($S,)? i16], $args),
            DType::U32 => with_element!(@call $f, [$($S,)? u32], $args),
            DType::I32 => with_element!(@call $f, [$($S,)? i32], $args),
            DType::U64 => with_element!(@call $f, [$($S,)? u64], $args),
            DType::I64 => with_element!(@call $f, [$($S,)? i64], $args),
            DType::F8E4M3 => with_element!(@call $f, [$($S,)? float8::F8E4M3], $args),
            DType::F8E5M2 => with_element!(@call $f, [$($S,)? float8::F8E5M2], $args),
        }
    };
    (@call $f:ident, [$($T:ty),+], ($($arg:expr),*)) => {
        $f::<$($T),+>($($arg),*)
    };
}
pub(crate) use with_element;

/// Allocations (source + destination elements) from which `measure` reports its steps on stderr.
const PROGRESS_ELEMENTS: usize = 1 << 24;

/// A verified, timed run.
pub(crate) struct Measurement {
    pub(crate) plan: Plan,
    /// Destination elements written, and allocation elements around them left untouched.
    written: usize,
    canaries: usize,
    ms: f64,
    /// The D2D memcpy of `plan.bytes_moved() / 2` bytes: (ms, GB/s); None for an empty copy.
    pub(crate) d2d: Option<(f64, f64)>,
}

impl Measurement {
    pub(crate) fn gbps(&self) -> f64 {
        gbps(self.plan.bytes_moved(), self.ms)
    }
    pub(crate) fn ratio(&self) -> Option<f64> {
        self.d2d.map(|(_, d)| self.gbps() / d)
    }
}

pub(crate) fn gpu() -> CliResult<Arc<CudaStream>> {
    cute_copy::stream(0).map_err(|e| format!("this command needs a GPU: {e}").into())
}

/// The allocation an operand lives in: element (0,0) `offset_bytes / size` elements after its
/// start, and `rows * ld` elements from there (at least one).
fn allocation(o: &Operand, elem: usize) -> Geometry {
    let offset = o.offset_bytes / elem;
    Geometry {
        offset,
        rows: o.rows,
        cols: o.cols,
        ld: o.ld,
        len: offset + (o.rows * o.ld).max(1),
    }
}

/// Allocate, fill, copy once, verify bit for bit against the host reference, then time the copy
/// and a D2D memcpy of the same bytes. `T` must be `case.dtype`'s element type.
pub(crate) fn measure<T: Element>(
    case: &Case,
    stream: &Arc<CudaStream>,
    iters: usize,
) -> CliResult<Measurement> {
    assert_eq!(T::DTYPE, case.dtype);
    case.plan()?; // shape and atom errors before any allocation
    let elem = std::mem::size_of::<T>();
    let (sg, dg) = (allocation(&case.src, elem), allocation(&case.dst, elem));
    // Big shapes take seconds per step on the host: say what is going on, on stderr.
    let progress = |what: String| {
        if sg.len + dg.len >= PROGRESS_ELEMENTS {
            eprintln!("  {} {}: {what}", case.dtype, case.shape());
        }
    };
    progress(format!(
        "filling {} + {} elements on the host and uploading",
        sg.len, dg.len
    ));
    let mut rng = rand::rngs::StdRng::seed_from_u64(0x5eed);
    let src_host: Vec<T> = random_elements(sg.len, rng.random());
    let before = poisoned_destination(&src_host, sg, dg, rng.random());
    // Each operand lives in a one-row allocation of `len` elements; `view_at` places element
    // (0,0) at any element offset in it (a byte offset a sub-view could not express).
    let src_buf = DeviceMatrix::from_host(stream, 1, sg.len, sg.len, &src_host)?;
    let mut dst_buf = DeviceMatrix::from_host(stream, 1, dg.len, dg.len, &before)?;
    // The first launch goes through the call a user makes (copy / copy_with / pad / pad_with).
    let plan = {
        let src = src_buf.view_at(sg.offset, sg.rows, sg.cols, sg.ld)?;
        let mut dst = dst_buf.view_at_mut(dg.offset, dg.rows, dg.cols, dg.ld)?;
        match (case.plan()?.operation, case.atom) {
            (Operation::Copy, None) => cute_copy::copy(&src, &mut dst, stream),
            (Operation::Copy, Some(a)) => cute_copy::copy_with(a, &src, &mut dst, stream),
            (Operation::Pad, None) => cute_copy::pad(&src, &mut dst, stream),
            (Operation::Pad, Some(a)) => cute_copy::pad_with(a, &src, &mut dst, stream),
        }?
    };
    progress("copied once; downloading and verifying against the host reference".into());
    let after = dst_buf.to_host(stream)?;
    let expected = expected_destination(&src_host, sg, &before, dg, plan.operation);
    let (bad, first) = compare(&expected, &after);
    if bad != 0 {
        return Err(format!(
            "verification failed for {} {}: {bad} elements differ, first {first:?}",
            case.dtype,
            case.shape()
        )
        .into());
    }
    drop((src_host, before, expected, after));
    // Timed: the same plan, launched back to back.
    progress(format!(
        "verified; timing {iters} launches and a D2D memcpy of the same bytes"
    ));
    let src = src_buf.view_at(sg.offset, sg.rows, sg.cols, sg.ld)?;
    let mut dst = dst_buf.view_at_mut(dg.offset, dg.rows, dg.cols, dg.ld)?;
    let ms = time_launches(stream, 3, iters, || {
        cute_copy::launch(&plan, &src, &mut dst, stream)
    })?;
    let n = plan.bytes_moved() / 2;
    let d2d = if n == 0 {
        None
    } else {
        let a = stream.alloc_zeros::<u8>(n)?;
        let mut b = stream.alloc_zeros::<u8>(n)?;
        let ms = time_launches(stream, 3, iters, || Ok(stream.memcpy_dtod(&a, &mut b)?))?;
        Some((ms, gbps(2 * n, ms)))
    };
    let written = dg.rows * dg.cols;
    Ok(Measurement {
        plan,
        written,
        canaries: dg.len - written,
        ms,
        d2d,
    })
}

pub(crate) fn run(args: &RunArgs) -> CliResult {
    let case = args.shape.case()?;
    case.plan()?; // a bad request is an error even without a GPU
    let stream = gpu()?;
    let (name, (major, minor)) = cute_copy::describe(stream.context())?;
    outln!("GPU: {name} (sm_{major}{minor})");
    let iters = args.iters.max(1);
    let m = with_element!(case.dtype, measure(&case, &stream, iters))?;
    out!("{}", m.plan);
    let untouched = match m.canaries {
        0 => String::new(),
        n => format!("; the {n} other elements of its allocation are untouched"),
    };
    outln!(
        "verified: all {} destination elements match the host reference bit for bit{untouched}",
        m.written
    );
    let bytes = m.plan.bytes_moved();
    outln!(
        "{}: {:.1} GB/s ({bytes} bytes read+written in {:.4} ms per launch; CUDA events, mean of {iters} after 3 warm-up)",
        match m.plan.operation {
            Operation::Copy => "copy",
            Operation::Pad => "pad",
        },
        m.gbps(),
        m.ms
    );
    match (m.d2d, m.ratio()) {
        (Some((ms, g)), Some(ratio)) => {
            outln!(
                "D2D memcpy of the same bytes ({} read + {} written, memcpy_dtod): {g:.1} GB/s ({ms:.4} ms)",
                bytes / 2,
                bytes / 2
            );
            outln!("ratio to D2D memcpy: {ratio:.2}");
        }
        _ => outln!("ratio to D2D memcpy: n/a (nothing moved)"),
    }
    Ok(())
}
