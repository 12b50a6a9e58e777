//! Property tests on the GPU: random shapes, leading dimensions, sub-matrix offsets, dtypes, atoms
//! and pads. Every case poisons the destination, checks every element and the canaries around it
//! against the host reference, and, where the planner refuses an explicit atom, checks that the
//! launch path refuses it the same way. Case count: `PROPTEST_CASES` (default 4000 on a GPU).

mod common;

use common::{gpu, run_case, Case};
use cute_copy::{Atom, DType, Operand, Plan};
use half::{bf16, f16};
use proptest::prelude::*;
use proptest::test_runner::{Config, TestRunner};
use rand::SeedableRng;

fn case_strategy() -> impl Strategy<Value = (usize, Case)> {
    let atom = prop_oneof![
        3 => Just(None),
        2 => (0..Atom::all().count()).prop_map(|i| Atom::all().nth(i)),
    ];
    // Leading dimensions and offsets are often multiples of 8 so that wide atoms are legal.
    let extra = prop_oneof![(0usize..5).prop_map(|k| k * 8), 0usize..40];
    let off = prop_oneof![(0usize..3).prop_map(|k| k * 8), 0usize..9];
    (
        0..DType::ALL.len(),
        (1usize..300, 1usize..700),
        (extra.clone(), extra),
        (0usize..3, off.clone(), 0usize..3, off),
        prop_oneof![3 => Just((0usize, 0usize)), 1 => (0usize..70, 0usize..70)],
        atom,
    )
        .prop_map(
            |(d, (rows, cols), (xs, xd), (sr, sc, dr, dc), (pr, pc), atom)| {
                let case = Case {
                    rows,
                    cols,
                    ld_src: sc + cols + xs,
                    ld_dst: dc + cols + pc + xd,
                    src_at: (sr, sc),
                    dst_at: (dr, dc),
                    dst_shape: (rows + pr, cols + pc),
                    atom,
                };
                (d, case)
            },
        )
}

fn run<T: cute_copy::Element>(
    stream: &std::sync::Arc<cute_copy::cudarc::driver::CudaStream>,
    case: Case,
    seed: u64,
) -> Result<(), TestCaseError> {
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
    let e = T::DTYPE.size_bytes();
    let op = |at: (usize, usize), ld, (rows, cols)| Operand {
        rows,
        cols,
        ld,
        offset_bytes: (at.0 * ld + at.1) * e % 256,
    };
    let expected = Plan::new(
        T::DTYPE,
        op(case.src_at, case.ld_src, (case.rows, case.cols)),
        op(case.dst_at, case.ld_dst, case.dst_shape),
        case.atom,
        None,
    );
    match (run_case::<T>(stream, case, &mut rng), expected) {
        (Ok(r), Ok(_)) => {
            prop_assert_eq!(
                r.mismatches,
                0,
                "{:?} {}: first {:?}\n{}",
                case,
                T::DTYPE,
                r.first,
                r.plan
            );
        }
        (Err(got), Err(want)) => prop_assert_eq!(got.to_string(), want.to_string()),
        (got, want) => prop_assert!(
            false,
            "{:?} {}: launch path {:?}, planner {:?}",
            case,
            T::DTYPE,
            got.err(),
            want.err()
        ),
    }
    Ok(())
}

#[test]
fn random_copies_and_pads_match_the_host_reference() {
    let Some(stream) = gpu() else { return };
    let cases = std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(4000);
    let mut runner = TestRunner::new(Config {
        cases,
        failure_persistence: None,
        ..Config::default()
    });
    let count = std::sync::atomic::AtomicU64::new(0);
    runner
        .run(&case_strategy(), |(d, case)| {
            let n = count.fetch_add(1, std::sync::atomic::Ordering::Relaxed) + 1;
            match DType::ALL[d] {
                DType::F32 => run::<f32>(&stream, case, n),
                DType::F64 => run::<f64>(&stream, case, n),
                DType::F16 => run::<f16>(&stream, case, n),
                DType::BF16 => run::<bf16>(&stream, case, n),
                DType::U8 => run::<u8>(&stream, case, n),
                DType::I8 => run::<i8>(&stream, case, n),
                DType::U16 => run::<u16>(&stream, case, n),
                DType::I16 => run::<i16>(&stream, case, n),
                DType::U32 => run::<u32>(&stream, case, n),
                DType::I32 => run::<i32>(&stream, case, n),
                DType::U64 => run::<u64>(&stream, case, n),
                DType::I64 => run::<i64>(&stream, case, n),
                DType::F8E4M3 => run::<float8::F8E4M3>(&stream, case, n),
                DType::F8E5M2 => run::<float8::F8E5M2>(&stream, case, n),
            }
        })
        .unwrap();
    println!("{} random cases passed", count.into_inner());
}
