//! The tensor planner on a million random layout pairs: ranks 1 to 6, zero extents, broadcast
//! (stride-0) sources, padded and permuted strides, overlapping destinations, strides and extents
//! near the limits of `usize`, every element width and random byte offsets. It must never panic;
//! every refusal is a typed error; a pair with a zero extent plans a copy of nothing; and every
//! plan it returns can be printed. Host only: no GPU is needed.

use std::panic::{catch_unwind, AssertUnwindSafe};

use cute_copy::{DType, Error, Layout, TensorPlan, TensorRoute, MAX_RANK};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

/// Pairs to plan: the million (about 10 s in release on one core).
const PAIRS: usize = 1_000_000;

fn extent(rng: &mut impl Rng) -> usize {
    match rng.random_range(0..100) {
        0..=7 => 0,
        8..=27 => 1,
        28..=94 => rng.random_range(2..=40),
        95..=98 => rng.random_range(41..=5000),
        _ => {
            let shift = rng.random_range(1..40);
            rng.random_range(1..=usize::MAX >> shift)
        }
    }
}

/// Strides for `shape`: packed in a random mode order with random padding, random, or with
/// broadcast or enormous modes mixed in.
fn strides(shape: &[usize], rng: &mut impl Rng, allow_broadcast: bool) -> Vec<usize> {
    let r = shape.len();
    let mut order: Vec<usize> = (0..r).collect();
    for i in (1..r).rev() {
        order.swap(i, rng.random_range(0..=i));
    }
    let mut stride = vec![0; r];
    match rng.random_range(0..10) {
        // Packed or padded, modes in a random order (a permuted view of a packed tensor).
        0..=6 => {
            let mut step = 1usize;
            for &m in order.iter().rev() {
                stride[m] = step;
                let pad = if rng.random_bool(0.3) {
                    rng.random_range(0..=9)
                } else {
                    0
                };
                step = step.saturating_mul(shape[m].max(1).saturating_add(pad));
            }
        }
        // Anything: small random strides (often not injective).
        7 | 8 => {
            for s in stride.iter_mut() {
                *s = rng.random_range(0..=64);
            }
        }
        // Enormous strides: offsets past usize.
        _ => {
            for s in stride.iter_mut() {
                let shift = rng.random_range(0..30);
                *s = rng.random_range(1..=usize::MAX >> shift);
            }
        }
    }
    if allow_broadcast {
        for s in stride.iter_mut() {
            if rng.random_bool(0.1) {
                *s = 0;
            }
        }
    }
    stride
}

#[derive(Default, Debug)]
struct Tally {
    planned: usize,
    empty: usize,
    refused: std::collections::BTreeMap<&'static str, usize>,
    bad_layout: usize,
}

fn variant(e: &Error) -> &'static str {
    match e {
        Error::Shape(_) => "Shape",
        Error::Overflow(_) => "Overflow",
        Error::ShapeMismatch { .. } => "ShapeMismatch",
        Error::Unsupported(_) => "Unsupported",
        Error::Refused(_) => "Refused",
        Error::OutOfBounds { .. } => "OutOfBounds",
        Error::Misaligned { .. } => "Misaligned",
        Error::DestinationNotInjective(_) => "DestinationNotInjective",
        Error::Layout(_) => "Layout",
        Error::Rank { .. } => "Rank",
        Error::NotAPermutation { .. } => "NotAPermutation",
        Error::DoesNotFit { .. } => "DoesNotFit",
        Error::LeadingDimension { .. } => "LeadingDimension",
        Error::GridTooLarge { .. } => "GridTooLarge",
        _ => "other",
    }
}

#[test]
fn a_million_random_layout_pairs_plan_or_refuse_with_a_typed_error_and_never_panic() {
    let mut rng = StdRng::seed_from_u64(0x1a70_0f27);
    let mut tally = Tally::default();
    for i in 0..PAIRS {
        let rank = rng.random_range(1..=MAX_RANK);
        let shape: Vec<usize> = (0..rank).map(|_| extent(&mut rng)).collect();
        let dtype = DType::ALL[rng.random_range(0..DType::ALL.len())];
        let e = dtype.size_bytes();
        let offsets = (
            rng.random_range(0..256 / e) * e,
            rng.random_range(0..256 / e) * e,
        );
        let (src, dst) = match (
            Layout::new(&shape, &strides(&shape, &mut rng, true)),
            Layout::new(&shape, &strides(&shape, &mut rng, false)),
        ) {
            (Ok(s), Ok(d)) => (s, d),
            _ => {
                tally.bad_layout += 1;
                continue;
            }
        };
        let planned = catch_unwind(AssertUnwindSafe(|| {
            TensorPlan::new(dtype, src, dst, offsets)
        }));
        let planned = planned.unwrap_or_else(|_| {
            panic!("TensorPlan::new panicked on {dtype} {src} -> {dst} at byte offsets {offsets:?}")
        });
        let empty = shape.contains(&0);
        match planned {
            Ok(plan) => {
                if empty {
                    assert_eq!(plan.bytes_moved(), 0, "{src} -> {dst}");
                    assert_eq!(plan.route, TensorRoute::Empty, "{src} -> {dst}");
                    tally.empty += 1;
                } else {
                    tally.planned += 1;
                }
                // Printing every plan costs more than planning it: every 16th, and all the empty ones.
                if empty || i % 16 == 0 {
                    let text = catch_unwind(AssertUnwindSafe(|| plan.to_string()))
                        .unwrap_or_else(|_| panic!("printing the plan of {src} -> {dst} panicked"));
                    assert!(!text.is_empty());
                }
            }
            Err(err) => {
                assert!(
                    !empty,
                    "{dtype} {src} -> {dst} has a zero extent, so it copies nothing, but was refused: {err}"
                );
                assert!(!err.to_string().is_empty());
                *tally.refused.entry(variant(&err)).or_default() += 1;
            }
        }
    }
    println!("{tally:?}");
    // The generator reaches every kind of case: plans, empty copies and refusals.
    assert!(tally.planned > PAIRS / 10, "{tally:?}");
    assert!(tally.empty > PAIRS / 50, "{tally:?}");
    assert!(!tally.refused.is_empty(), "{tally:?}");
}
