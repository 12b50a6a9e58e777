//! Host references: what a copy or pad must leave in the destination, and helpers to make test data
//! that cannot hide a missed write. Used by the GPU tests, the CLI's `run` and `demo`, and benches.
//!
//! Random data comes from a `seed`: the same seed gives the same bits on every machine, and the
//! module puts no random-number crate in the crate's API (a caller with `rand` passes
//! `rng.random()`).

use crate::layout::Layout;
use crate::plan::Operation;
use crate::view::Geometry;
use crate::Element;

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
    let n = src.size();
    let shape = src.shape();
    for i in 0..n {
        let (mut rest, mut so, mut dof) = (i, 0usize, 0usize);
        for m in (0..shape.len()).rev() {
            let c = rest % shape[m];
            rest /= shape[m];
            so += c * src.stride()[m];
            dof += c * dst.stride()[m];
        }
        f(so, dof);
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
    fn random_elements_are_the_same_for_a_seed_and_differ_between_seeds() {
        let a: Vec<u64> = random_elements(64, 1);
        assert_eq!(a, random_elements::<u64>(64, 1));
        assert_ne!(a, random_elements::<u64>(64, 2));
        // No stuck bit: every bit position is set in some word and clear in another.
        let (or, and) = a.iter().fold((0, !0), |(o, n), &w| (o | w, n & w));
        assert_eq!((or, and), (!0, 0));
    }
}
