//! Shared by the GPU tests: find the GPU (or skip visibly), and run one copy against the host
//! reference with a poisoned destination and random canaries around it ([`tensor`]: the same for
//! tensor copies).
#![allow(dead_code)]

use std::io::Write;
use std::sync::Arc;

use cute_copy::cudarc::driver::CudaStream;
use cute_copy::reference::{compare, expected_destination, poisoned_destination, random_elements};
use cute_copy::{Atom, DType, DeviceMatrix, Element, Operation, Plan};
use rand::Rng;

pub mod tensor;

/// The GPU's stream, or None after a visible skip line. With `CUTE_COPY_REQUIRE_GPU=1` (set by
/// `.gpu/run` on the GPU host) a missing GPU fails the test instead.
pub fn gpu() -> Option<Arc<CudaStream>> {
    match cute_copy::stream(0) {
        Ok(s) => Some(s),
        Err(e) => {
            if std::env::var("CUTE_COPY_REQUIRE_GPU").as_deref() == Ok("1") {
                panic!("CUTE_COPY_REQUIRE_GPU=1 but no usable GPU: {e}");
            }
            // Written past libtest's capture so that CI shows it.
            let _ = writeln!(std::io::stderr(), "skipped: no GPU ({e})");
            None
        }
    }
}

/// One copy or pad case. The source is `rows x cols` at (row_off, col_off) of a `ld_src`-wide
/// allocation with spare rows; the destination likewise. `dst_shape` larger than (rows, cols) is a pad.
#[derive(Clone, Copy, Debug)]
pub struct Case {
    pub rows: usize,
    pub cols: usize,
    pub ld_src: usize,
    pub ld_dst: usize,
    pub src_at: (usize, usize),
    pub dst_at: (usize, usize),
    pub dst_shape: (usize, usize),
    pub atom: Option<Atom>,
}

impl Case {
    pub fn copy(rows: usize, cols: usize) -> Self {
        Case {
            rows,
            cols,
            ld_src: cols,
            ld_dst: cols,
            src_at: (0, 0),
            dst_at: (0, 0),
            dst_shape: (rows, cols),
            atom: None,
        }
    }
    pub fn lds(mut self, ld_src: usize, ld_dst: usize) -> Self {
        self.ld_src = ld_src;
        self.ld_dst = ld_dst;
        self
    }
    pub fn at(mut self, src_at: (usize, usize), dst_at: (usize, usize)) -> Self {
        self.src_at = src_at;
        self.dst_at = dst_at;
        self
    }
    pub fn pad_to(mut self, rows: usize, cols: usize) -> Self {
        self.dst_shape = (rows, cols);
        self
    }
    pub fn atom(mut self, atom: Atom) -> Self {
        self.atom = Some(atom);
        self
    }
}

/// Result of one checked case.
pub struct Checked {
    pub plan: Plan,
    pub mismatches: usize,
    pub first: Option<cute_copy::reference::Mismatch>,
}

/// Run `case` for element type `T` and compare the whole destination allocation (the logical region
/// and the canaries around it) with the host reference.
pub fn run_case<T: Element>(
    stream: &Arc<CudaStream>,
    case: Case,
    rng: &mut impl Rng,
) -> Result<Checked, cute_copy::Error> {
    let src_rows = case.src_at.0 + case.rows + 1;
    let dst_rows = case.dst_at.0 + case.dst_shape.0 + 1;
    let src_host: Vec<T> = random_elements(src_rows * case.ld_src, rng.random());
    let src = DeviceMatrix::from_host(stream, src_rows, case.ld_src, case.ld_src, &src_host)?;
    let sview = src
        .view()
        .sub(case.src_at.0, case.src_at.1, case.rows, case.cols)?;
    let mut dst = DeviceMatrix::<T>::zeros(stream, dst_rows, case.ld_dst, case.ld_dst)?;
    let before = {
        let mut whole = dst.view_mut();
        let dview = whole.sub_mut(
            case.dst_at.0,
            case.dst_at.1,
            case.dst_shape.0,
            case.dst_shape.1,
        )?;
        poisoned_destination(
            &src_host,
            sview.geometry().unwrap(),
            dview.geometry().unwrap(),
            rng.random(),
        )
    };
    dst.upload(stream, &before)?;
    let mut whole = dst.view_mut();
    let mut dview = whole.sub_mut(
        case.dst_at.0,
        case.dst_at.1,
        case.dst_shape.0,
        case.dst_shape.1,
    )?;
    let (sg, dg) = (sview.geometry().unwrap(), dview.geometry().unwrap());
    let pad = case.dst_shape != (case.rows, case.cols);
    let plan = match (case.atom, pad) {
        (None, false) => cute_copy::copy(&sview, &mut dview, stream)?,
        (Some(a), false) => cute_copy::copy_with(a, &sview, &mut dview, stream)?,
        (None, true) => cute_copy::pad(&sview, &mut dview, stream)?,
        (Some(a), true) => cute_copy::pad_with(a, &sview, &mut dview, stream)?,
    };
    let after = dst.to_host(stream)?;
    let op = if pad { Operation::Pad } else { Operation::Copy };
    let want = expected_destination(&src_host, sg, &before, dg, op);
    let (mismatches, first) = compare(&want, &after);
    Ok(Checked {
        plan,
        mismatches,
        first,
    })
}

/// Run and assert: every element of the destination allocation equals the reference.
pub fn check<T: Element>(stream: &Arc<CudaStream>, case: Case, rng: &mut impl Rng) -> Plan {
    let r =
        run_case::<T>(stream, case, rng).unwrap_or_else(|e| panic!("{case:?} {}: {e}", T::DTYPE));
    assert_eq!(
        r.mismatches,
        0,
        "{case:?} {}: first mismatch {:?}\n{}",
        T::DTYPE,
        r.first,
        r.plan
    );
    r.plan
}

/// The seeded generator every test draws its data and cases from (a failure names its seed).
pub fn rng(seed: u64) -> rand::rngs::StdRng {
    rand::SeedableRng::seed_from_u64(seed)
}

/// [`check`] for the Rust element type of `dtype`.
pub fn check_dtype(
    stream: &Arc<CudaStream>,
    dtype: DType,
    case: Case,
    r: &mut rand::rngs::StdRng,
) -> Plan {
    use half::{bf16, f16};
    match dtype {
        DType::F32 => check::<f32>(stream, case, r),
        DType::F64 => check::<f64>(stream, case, r),
        DType::F16 => check::<f16>(stream, case, r),
        DType::BF16 => check::<bf16>(stream, case, r),
        DType::U8 => check::<u8>(stream, case, r),
        DType::I8 => check::<i8>(stream, case, r),
        DType::U16 => check::<u16>(stream, case, r),
        DType::I16 => check::<i16>(stream, case, r),
        DType::U32 => check::<u32>(stream, case, r),
        DType::I32 => check::<i32>(stream, case, r),
        DType::U64 => check::<u64>(stream, case, r),
        DType::I64 => check::<i64>(stream, case, r),
        DType::F8E4M3 => check::<float8::F8E4M3>(stream, case, r),
        DType::F8E5M2 => check::<float8::F8E5M2>(stream, case, r),
    }
}

/// A random source matrix and a poisoned destination matrix (whole views, no offsets), with the
/// host copies a check needs. For tests that drive the copy calls themselves.
pub struct Fixture<T: Element> {
    pub src_host: Vec<T>,
    pub src: DeviceMatrix<T>,
    pub dst: DeviceMatrix<T>,
    pub before: Vec<T>,
}

impl<T: Element> Fixture<T> {
    /// Source `rows x cols` with leading dimension `ld_src`; destination `dst_shape` with `ld_dst`.
    pub fn new(
        stream: &Arc<CudaStream>,
        (rows, cols, ld_src): (usize, usize, usize),
        (dst_rows, dst_cols, ld_dst): (usize, usize, usize),
        rng: &mut impl Rng,
    ) -> Self {
        let src_host: Vec<T> = random_elements(rows * ld_src, rng.random());
        let src = DeviceMatrix::from_host(stream, rows, cols, ld_src, &src_host).unwrap();
        let mut dst = DeviceMatrix::<T>::zeros(stream, dst_rows, dst_cols, ld_dst).unwrap();
        let before = poisoned_destination(
            &src_host,
            src.view().geometry().unwrap(),
            dst.view_mut().geometry().unwrap(),
            rng.random(),
        );
        dst.upload(stream, &before).unwrap();
        Fixture {
            src_host,
            src,
            dst,
            before,
        }
    }

    /// Elements of the destination allocation that differ from the reference for `op`, and the first.
    pub fn mismatches(
        &mut self,
        stream: &Arc<CudaStream>,
        op: Operation,
    ) -> (usize, Option<cute_copy::reference::Mismatch>) {
        let after = self.dst.to_host(stream).unwrap();
        let want = expected_destination(
            &self.src_host,
            self.src.view().geometry().unwrap(),
            &self.before,
            self.dst.view_mut().geometry().unwrap(),
            op,
        );
        compare(&want, &after)
    }
}
