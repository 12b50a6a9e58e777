//! Host references: what a copy or pad must leave in the destination, and helpers to make test data
//! that cannot hide a missed write. Used by the GPU tests, the CLI's `run` and `demo`, and benches.
//!
//! Random data comes from a `seed`: the same seed gives the same bits on every machine, and the
//! module puts no random-number crate in the crate's API (a caller with `rand` passes
//! `rng.random()`).

use half::{bf16, f16};

use crate::layout::Layout;
use crate::plan::Operation;
use crate::view::Geometry;
use crate::{Convert, DType, Element};

/// `n` elements of random bits (NaNs and all: copies are compared bit for bit), from `seed`.
pub fn random_elements<T: Element>(n: usize, seed: u64) -> Vec<T> {
    let mut state = seed;
    (0..n)
        .map(|_| T::from_bits(split_mix64(&mut state)))
        .collect()
}

/// SplitMix64 (Steele, Lea and Flood 2014): one 64-bit state, every output bit well mixed; enough
/// for test data, not for anything that must be unpredictable.
fn split_mix64(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// The destination image (whole allocation) a copy or pad must produce from `src` (whole source
/// allocation) and the destination's prior contents `dst_before`: inside the destination's logical
/// region, the source element, or zero outside the source for a pad; everything else untouched.
pub fn expected_destination<T: Element>(
    src: &[T],
    s: Geometry,
    dst_before: &[T],
    d: Geometry,
    op: Operation,
) -> Vec<T> {
    let mut out = dst_before.to_vec();
    for r in 0..d.rows {
        for c in 0..d.cols {
            let v = if r < s.rows && c < s.cols {
                src[s.offset + r * s.ld + c]
            } else {
                debug_assert_eq!(op, Operation::Pad);
                T::from_bits(0)
            };
            out[d.offset + r * d.ld + c] = v;
        }
    }
    out
}

/// A destination image that differs, in every element of the logical region, from what a correct
/// copy writes there (the bitwise complement of the expected value), and holds random canaries
/// everywhere else. A missed or misplaced write then always shows.
pub fn poisoned_destination<T: Element>(src: &[T], s: Geometry, d: Geometry, seed: u64) -> Vec<T> {
    let mut out: Vec<T> = random_elements(d.len, seed);
    for r in 0..d.rows {
        for c in 0..d.cols {
            let want = if r < s.rows && c < s.cols {
                src[s.offset + r * s.ld + c].to_bits()
            } else {
                0
            };
            out[d.offset + r * d.ld + c] = T::from_bits(!want);
        }
    }
    out
}

/// One element that differs from the reference.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Mismatch {
    /// Index in the allocation.
    pub index: usize,
    /// The reference bits.
    pub expected_bits: u64,
    /// The bits found.
    pub actual_bits: u64,
}

/// Compare bit for bit; returns how many elements differ and the first one.
pub fn compare<T: Element>(expected: &[T], actual: &[T]) -> (usize, Option<Mismatch>) {
    let mut count = 0;
    let mut first = None;
    for (index, (e, a)) in expected.iter().zip(actual).enumerate() {
        if e.to_bits() != a.to_bits() {
            count += 1;
            first.get_or_insert(Mismatch {
                index,
                expected_bits: e.to_bits(),
                actual_bits: a.to_bits(),
            });
        }
    }
    count += expected.len().abs_diff(actual.len());
    (count, first)
}

/// Visit every coordinate of `layout` (the last mode fastest) with its offsets in `src` and `dst`
/// (two layouts of one shape).
pub fn for_each_pair(src: &Layout, dst: &Layout, mut f: impl FnMut(usize, usize)) {
    for_each_coord(src, dst, |so, dof, _| f(so, dof));
}

/// [`for_each_pair`] with the coordinate itself.
fn for_each_coord(src: &Layout, dst: &Layout, mut f: impl FnMut(usize, usize, &[usize])) {
    let n = src.size();
    let shape = src.shape();
    let mut coord = vec![0; shape.len()];
    for i in 0..n {
        let (mut rest, mut so, mut dof) = (i, 0usize, 0usize);
        for m in (0..shape.len()).rev() {
            let c = rest % shape[m];
            rest /= shape[m];
            coord[m] = c;
            so += c * src.stride()[m];
            dof += c * dst.stride()[m];
        }
        f(so, dof, &coord);
    }
}

/// The destination allocation a tensor copy must produce: every coordinate of the destination
/// view (coordinate 0 at `dst_offset`) holds the source element of the same coordinate
/// (coordinate 0 at `src_offset`); everything else keeps `dst_before`.
pub fn expected_tensor_copy<T: Element>(
    src: &[T],
    (src_offset, src_layout): (usize, &Layout),
    dst_before: &[T],
    (dst_offset, dst_layout): (usize, &Layout),
) -> Vec<T> {
    let mut out = dst_before.to_vec();
    for_each_pair(src_layout, dst_layout, |s, d| {
        out[dst_offset + d] = src[src_offset + s];
    });
    out
}

/// A destination allocation of `len` elements with random canaries, and the bitwise complement of
/// the expected value at every element the copy writes: a missed write always shows.
pub fn poisoned_tensor_destination<T: Element>(
    src: &[T],
    (src_offset, src_layout): (usize, &Layout),
    len: usize,
    (dst_offset, dst_layout): (usize, &Layout),
    seed: u64,
) -> Vec<T> {
    let mut out: Vec<T> = random_elements(len, seed);
    for_each_pair(src_layout, dst_layout, |s, d| {
        out[dst_offset + d] = T::from_bits(!src[src_offset + s].to_bits());
    });
    out
}

/// A small float format: exponent and mantissa bits, bias, largest finite value and its bits, and
/// what overflow becomes.
struct SmallFloat {
    man_bits: i32,
    bias: i32,
    max: f64,
    max_bits: u64,
    /// The bits of +infinity, or `None` to saturate at `max` (FP8, `satfinite`).
    inf_bits: Option<u64>,
    nan_bits: u64,
    sign_bit: u64,
}

fn small_float(d: DType) -> SmallFloat {
    match d {
        DType::F16 => SmallFloat {
            man_bits: 10,
            bias: 15,
            max: 65504.0,
            max_bits: 0x7bff,
            inf_bits: Some(0x7c00),
            nan_bits: 0x7e00,
            sign_bit: 0x8000,
        },
        DType::BF16 => SmallFloat {
            man_bits: 7,
            bias: 127,
            max: (2.0 - 2f64.powi(-7)) * 2f64.powi(127),
            max_bits: 0x7f7f,
            inf_bits: Some(0x7f80),
            nan_bits: 0x7fc0,
            sign_bit: 0x8000,
        },
        DType::F8E4M3 => SmallFloat {
            man_bits: 3,
            bias: 7,
            max: 448.0,
            max_bits: 0x7e,
            inf_bits: None,
            nan_bits: 0x7f,
            sign_bit: 0x80,
        },
        _ => SmallFloat {
            man_bits: 2,
            bias: 15,
            max: 57344.0,
            max_bits: 0x7b,
            inf_bits: None,
            nan_bits: 0x7e,
            sign_bit: 0x80,
        },
    }
}

/// floor(log2(a)) of a positive finite f64 (its exponent field; subnormals report -1023).
fn exponent_of(a: f64) -> i32 {
    ((a.to_bits() >> 52) & 0x7ff) as i32 - 1023
}

/// `x` rounded to nearest even in the format `d` (f16, bf16 or an FP8), as bits: an independent
/// model (scaled rounding in f64, which is exact here), not a port of any library's conversion.
fn encode_small_float(x: f64, d: DType) -> u64 {
    let f = small_float(d);
    let sign = if x.is_sign_negative() { f.sign_bit } else { 0 };
    if x.is_nan() {
        return f.nan_bits;
    }
    let overflow = sign | f.inf_bits.unwrap_or(f.max_bits);
    let a = x.abs();
    if a.is_infinite() {
        return overflow;
    }
    if a == 0.0 {
        return sign;
    }
    let emin = 1 - f.bias;
    let e = exponent_of(a).max(emin);
    let q = 2f64.powi(e - f.man_bits);
    let r = (a / q).round_ties_even() * q;
    if r > f.max {
        return overflow;
    }
    if r == 0.0 {
        return sign;
    }
    let er = exponent_of(r);
    if er < emin {
        sign | (r / 2f64.powi(emin - f.man_bits)) as u64
    } else {
        let m = (r / 2f64.powi(er - f.man_bits)) as u64 - (1 << f.man_bits);
        sign | (((er + f.bias) as u64) << f.man_bits) | m
    }
}

/// The value of FP8 bits (exact in f64).
fn decode_fp8(bits: u64, d: DType) -> f64 {
    let b = bits as u8;
    let sign = if b & 0x80 != 0 { -1.0 } else { 1.0 };
    let (e, m, man_bits, bias) = if d == DType::F8E4M3 {
        if b & 0x7f == 0x7f {
            return f64::NAN;
        }
        (((b >> 3) & 0xf) as i32, (b & 7) as f64, 3, 7)
    } else {
        let e = ((b >> 2) & 0x1f) as i32;
        if e == 31 {
            return if b & 3 == 0 {
                sign * f64::INFINITY
            } else {
                f64::NAN
            };
        }
        (e, (b & 3) as f64, 2, 15)
    };
    let frac = m / 2f64.powi(man_bits);
    sign * if e == 0 {
        frac * 2f64.powi(1 - bias)
    } else {
        (1.0 + frac) * 2f64.powi(e - bias)
    }
}

/// A source element's exact value: a float (every float dtype) or an integer.
#[derive(Clone, Copy)]
enum Exact {
    Float(f64),
    Int(i128),
}

fn decode(d: DType, bits: u64) -> Exact {
    match d {
        DType::F32 => Exact::Float(f32::from_bits(bits as u32) as f64),
        DType::F64 => Exact::Float(f64::from_bits(bits)),
        DType::F16 => Exact::Float(f16::from_bits(bits as u16).to_f64()),
        DType::BF16 => Exact::Float(bf16::from_bits(bits as u16).to_f64()),
        DType::F8E4M3 | DType::F8E5M2 => Exact::Float(decode_fp8(bits, d)),
        DType::U8 => Exact::Int(bits as u8 as i128),
        DType::I8 => Exact::Int(bits as u8 as i8 as i128),
        DType::U16 => Exact::Int(bits as u16 as i128),
        DType::I16 => Exact::Int(bits as u16 as i16 as i128),
        DType::U32 => Exact::Int(bits as u32 as i128),
        DType::I32 => Exact::Int(bits as u32 as i32 as i128),
        DType::U64 => Exact::Int(bits as i128),
        DType::I64 => Exact::Int(bits as i64 as i128),
    }
}

/// The integer range of an integer dtype.
fn int_range(d: DType) -> (i128, i128) {
    let bits = 8 * d.size_bytes() as u32;
    if d.is_signed() {
        (-(1i128 << (bits - 1)), (1i128 << (bits - 1)) - 1)
    } else {
        (0, (1i128 << bits) - 1)
    }
}

/// An exact value in `d`, rounded once (see [`crate::ConvertRule`]), as `d`'s bits.
fn encode(v: Exact, d: DType) -> u64 {
    let mask = if d.size_bytes() == 8 {
        u64::MAX
    } else {
        (1u64 << (8 * d.size_bytes())) - 1
    };
    let bits = match (v, d.is_float()) {
        (Exact::Int(i), false) => {
            let (lo, hi) = int_range(d);
            i.clamp(lo, hi) as u64
        }
        (Exact::Float(x), false) => {
            // f64 -> i128 saturates (NaN -> 0), then the destination's range clamps
            let (lo, hi) = int_range(d);
            (x.round_ties_even() as i128).clamp(lo, hi) as u64
        }
        (Exact::Int(i), true) => match d {
            DType::F64 => (i as f64).to_bits(),
            DType::F32 => (i as f32).to_bits() as u64,
            _ => encode_small_float(i as f64, d),
        },
        (Exact::Float(x), true) => match d {
            DType::F64 => x.to_bits(),
            DType::F32 => (x as f32).to_bits() as u64,
            _ => encode_small_float(x, d),
        },
    };
    bits & mask
}

/// One element of a converting copy, as bits: `src`'s element `bits` as a `dst` element, through
/// `(x - mean) * mul` when `coefficient` is `(mean, mul)` (computed in f32, in f64 when a side is
/// f64). The host model of the convert family, written from the rules in [`crate::ConvertRule`]
/// (round once from the exact value; FP8 saturates to the largest finite value; float to integer
/// rounds to nearest even, clamps, NaN -> 0; integers clamp).
pub fn convert_bits(src: DType, dst: DType, bits: u64, coefficient: Option<(f32, f32)>) -> u64 {
    let x = decode(src, bits);
    let Some((mean, mul)) = coefficient else {
        // a plain copy of one dtype moves the bits (an FP8 infinity stays one)
        return if src == dst { bits } else { encode(x, dst) };
    };
    let v = if src == DType::F64 || dst == DType::F64 {
        let x = match x {
            Exact::Float(f) => f,
            Exact::Int(i) => i as f64,
        };
        (x - mean as f64) * mul as f64
    } else {
        let x = match x {
            Exact::Float(f) => f as f32,
            Exact::Int(i) => i as f32,
        };
        ((x - mean) * mul) as f64
    };
    encode(Exact::Float(v), dst)
}

/// Whether two elements of `dtype` hold the same value: the same bits, or both NaN (a NaN's
/// payload after a conversion is not part of the contract).
pub fn same_value(dtype: DType, a: u64, b: u64) -> bool {
    a == b
        || (dtype.is_float()
            && matches!(decode(dtype, a), Exact::Float(x) if x.is_nan())
            && matches!(decode(dtype, b), Exact::Float(y) if y.is_nan()))
}

/// The destination allocation a converting copy must produce: every coordinate of the destination
/// view (coordinate 0 at `dst_offset`) holds [`convert_bits`] of the source element of the same
/// coordinate, with the channel coefficients `convert` gives; everything else keeps `dst_before`.
pub fn expected_tensor_convert<S: Element, D: Element>(
    src: &[S],
    (src_offset, src_layout): (usize, &Layout),
    dst_before: &[D],
    (dst_offset, dst_layout): (usize, &Layout),
    convert: &Convert,
) -> crate::Result<Vec<D>> {
    let coefficients = convert.coefficients(src_layout.shape())?;
    let channel_mode = convert.channel_mode();
    let mut out = dst_before.to_vec();
    for_each_coord(src_layout, dst_layout, |s, d, coord| {
        let coefficient = coefficients.as_ref().map(|(mean, mul)| {
            let c = channel_mode.map_or(0, |m| coord[m]);
            (mean[c], mul[c])
        });
        let bits = convert_bits(
            S::DTYPE,
            D::DTYPE,
            src[src_offset + s].to_bits(),
            coefficient,
        );
        out[dst_offset + d] = D::from_bits(bits);
    });
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn geo(offset: usize, rows: usize, cols: usize, ld: usize, len: usize) -> Geometry {
        Geometry {
            offset,
            rows,
            cols,
            ld,
            len,
        }
    }

    #[test]
    fn poison_differs_from_the_expected_value_everywhere_in_the_region() {
        let s = geo(1, 3, 4, 5, 16);
        let d = geo(2, 4, 6, 7, 30);
        let src: Vec<u8> = random_elements(s.len, 7);
        let before = poisoned_destination(&src, s, d, 8);
        let want = expected_destination(&src, s, &before, d, Operation::Pad);
        for r in 0..d.rows {
            for c in 0..d.cols {
                let i = d.offset + r * d.ld + c;
                assert_ne!(before[i], want[i]);
            }
        }
        assert_eq!(compare(&want, &before).0, d.rows * d.cols);
        assert_eq!(want[d.offset + 3 * d.ld + 5], 0); // pad region is zero
        assert_eq!(want[d.offset + d.ld + 2], src[s.offset + s.ld + 2]);
        assert_eq!(want[0], before[0]); // outside the region: untouched
    }

    #[test]
    fn conversions_round_once_to_nearest_even_and_saturate_as_their_rules_say() {
        use DType::*;
        let f32b = |x: f32| x.to_bits() as u64;
        // f32 -> f16 / bf16 agree with the half crate (round to nearest even) on edge values
        for x in [
            1.0f32,
            65504.0,
            65519.99,
            65520.0,
            1e-8,
            -2.5e-7,
            1.0009765,
            f32::INFINITY,
            5.96e-8,
        ] {
            assert_eq!(
                convert_bits(F32, F16, f32b(x), None),
                f16::from_f32(x).to_bits() as u64,
                "{x}"
            );
            assert_eq!(
                convert_bits(F32, BF16, f32b(x), None),
                bf16::from_f32(x).to_bits() as u64,
                "{x}"
            );
        }
        // FP8 E4M3: 448 is the largest finite value; past it, and infinity, saturate; NaN is 0x7f
        assert_eq!(convert_bits(F32, F8E4M3, f32b(448.0), None), 0x7e);
        assert_eq!(convert_bits(F32, F8E4M3, f32b(1e6), None), 0x7e);
        assert_eq!(convert_bits(F32, F8E4M3, f32b(-f32::INFINITY), None), 0xfe);
        assert_eq!(convert_bits(F32, F8E4M3, f32b(f32::NAN), None), 0x7f);
        assert_eq!(convert_bits(F32, F8E4M3, f32b(1.0), None), 0x38);
        assert_eq!(convert_bits(F32, F8E4M3, f32b(2f32.powi(-9)), None), 0x01); // smallest subnormal
        assert_eq!(convert_bits(F32, F8E4M3, f32b(2f32.powi(-10)), None), 0x00); // tie to even: 0
        assert_eq!(convert_bits(F32, F8E5M2, f32b(57344.0), None), 0x7b);
        assert_eq!(convert_bits(F32, F8E5M2, f32b(1.0), None), 0x3c);
        // every FP8 value decodes and encodes back to itself (through f32 and f16)
        for d in [F8E4M3, F8E5M2] {
            for b in 0..=255u64 {
                let x = convert_bits(d, F32, b, None);
                assert!(
                    same_value(d, convert_bits(F32, d, x, None), b)
                        || f32::from_bits(x as u32).is_infinite(),
                    "{d} {b:#x}"
                );
                assert!(
                    same_value(
                        d,
                        convert_bits(F16, d, convert_bits(d, F16, b, None), None),
                        b
                    ) || d == F8E5M2 && b & 0x7f == 0x7c,
                    "{d} {b:#x}"
                );
            }
        }
        // integers clamp; floats to integers round to nearest even, clamp, NaN -> 0
        assert_eq!(convert_bits(I32, U8, (-3i32) as u32 as u64, None), 0);
        assert_eq!(convert_bits(U16, U8, 300, None), 255);
        assert_eq!(convert_bits(I64, I8, (-1000i64) as u64, None), 0x80);
        assert_eq!(convert_bits(U64, I64, u64::MAX, None), i64::MAX as u64);
        assert_eq!(convert_bits(F32, U8, f32b(2.5), None), 2);
        assert_eq!(convert_bits(F32, U8, f32b(3.5), None), 4);
        assert_eq!(convert_bits(F32, I8, f32b(-1e9), None), 0x80);
        assert_eq!(convert_bits(F32, U32, f32b(f32::NAN), None), 0);
        assert_eq!(convert_bits(F32, U64, f32b(1e30), None), u64::MAX);
        assert_eq!(
            convert_bits(F64, I64, 1e30f64.to_bits(), None),
            i64::MAX as u64
        );
        assert_eq!(convert_bits(F32, I64, f32b(-1e30), None), i64::MIN as u64);
        // u8 -> f32 normalized: (x - mean) * mul in f32
        let mul = 1.0f32 / 58.395;
        let want = ((200.0f32 - 123.675) * mul).to_bits() as u64;
        assert_eq!(convert_bits(U8, F32, 200, Some((123.675, mul))), want);
        // a NaN's payload is not compared
        assert!(same_value(F16, 0x7e00, 0xfe01));
        // one dtype, no scale: the bits move unchanged (E5M2's -infinity too)
        assert_eq!(convert_bits(F8E5M2, F8E5M2, 0xfc, None), 0xfc);
        assert!(!same_value(F16, 0x7c00, 0x7e00));
    }

    #[test]
    fn random_elements_are_the_same_for_a_seed_and_differ_between_seeds() {
        let a: Vec<u64> = random_elements(64, 1);
        assert_eq!(a, random_elements::<u64>(64, 1));
        assert_ne!(a, random_elements::<u64>(64, 2));
        // No stuck bit: every bit position is set in some word and clear in another.
        let (or, and) = a.iter().fold((0, !0), |(o, n), &w| (o | w, n & w));
        assert_eq!((or, and), (!0, 0));
    }
}
