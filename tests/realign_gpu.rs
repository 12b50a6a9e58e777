//! The realign family and coalesced runs on the GPU: every relative byte shift between source and
//! destination, heads and tails shorter than a vector, rows shorter than 16 bytes, multi-segment
//! rows, pads, one-row and one-column copies, contiguous copies run as one range. Every case
//! poisons the destination and compares the whole allocation (canaries included) with the host
//! reference.

mod common;

use common::{check, check_dtype, gpu, rng, Case};
use cute_copy::{Atom, DType, Operand, Operation, Plan};
use rand::Rng;

type Stream = std::sync::Arc<cute_copy::cudarc::driver::CudaStream>;

#[test]
fn every_relative_byte_shift_is_realigned_exactly() {
    let Some(stream) = gpu() else { return };
    let mut r = rng(11);
    // u8: source and destination column offsets 0..16 each, so (src - dst) mod 16 takes every
    // value with heads of every length; odd pitches make the shift change from row to row.
    for sc in 0..16 {
        for dc in 0..16 {
            let case = Case::copy(37, 3001)
                .lds(3001 + sc + 7, 3001 + dc + 16)
                .at((1, sc), (2, dc))
                .atom(Atom::Realign128);
            let plan = check::<u8>(&stream, case, &mut r);
            assert_eq!(plan.atom, Atom::Realign128);
        }
    }
}

#[test]
fn automatic_plan_realigns_rows_that_are_not_16_byte_aligned() {
    let Some(stream) = gpu() else { return };
    let mut r = rng(12);
    for dtype in DType::ALL {
        let e = dtype.size_bytes();
        for (rows, cols, ld_src, ld_dst, src_at, dst_at) in [
            (61, 4093, 4099, 4096, (1, 1), (0, 1)), // odd pitch on one side
            (5, 100_003, 100_011, 100_005, (0, 3), (1, 0)), // rows of many segments
            (300, 130, 131, 133, (2, 1), (1, 2)),   // short rows, a few vectors each
            (1, 9999, 10004, 10003, (0, 5), (0, 3)), // one row
            (64, 64 / e + 1, 64 / e + 3, 64 / e + 1, (0, 1), (0, 0)),
        ] {
            let case = Case::copy(rows, cols)
                .lds(ld_src, ld_dst)
                .at(src_at, dst_at);
            let plan = check_dtype(&stream, dtype, case, &mut r);
            if cols * e >= cute_copy::REALIGN_MIN_ROW_BYTES
                && plan.src_bits.min(plan.dst_bits) < 128
            {
                assert_eq!(plan.atom, Atom::Realign128, "{dtype} {case:?}\n{plan}");
            }
        }
    }
}

#[test]
fn heads_tails_and_rows_shorter_than_a_vector_are_copied_element_by_element() {
    let Some(stream) = gpu() else { return };
    let mut r = rng(13);
    for dtype in DType::ALL {
        let e = dtype.size_bytes();
        for cols in [
            1,
            2,
            3,
            15 / e.min(15),
            16 / e,
            17 / e + 1,
            31 / e + 1,
            33 / e + 1,
            47,
        ] {
            let cols = cols.max(1);
            for (sc, dc) in [(0, 0), (1, 0), (0, 1), (3, 5)] {
                let case = Case::copy(9, cols)
                    .lds(cols + sc + 5, cols + dc + 2)
                    .at((1, sc), (0, dc))
                    .atom(Atom::Realign128);
                check_dtype(&stream, dtype, case, &mut r);
            }
        }
        // One column.
        let case = Case::copy(77, 1)
            .lds(3, 5)
            .at((0, 1), (1, 2))
            .atom(Atom::Realign128);
        check_dtype(&stream, dtype, case, &mut r);
    }
}

#[test]
fn realign_pads_write_zeros_past_the_source() {
    let Some(stream) = gpu() else { return };
    let mut r = rng(14);
    for dtype in [DType::U8, DType::BF16, DType::F32, DType::I64] {
        for (rows, cols, pr, pc, ld_src, ld_dst, src_at) in [
            (100, 1638, 28, 10, 1642, 1648, (0, 0)), // bf16-style 8-byte pitch pad
            (33, 515, 1, 1, 517, 520, (1, 1)),
            (1, 300, 3, 0, 300, 301, (0, 0)), // rows of zeros only
            (7, 3, 2, 40, 5, 43, (0, 1)),     // short source rows, long zero tails
        ] {
            let case = Case::copy(rows, cols)
                .lds(ld_src, ld_dst)
                .at(src_at, (0, 0))
                .pad_to(rows + pr, cols + pc);
            let plan = check_dtype(&stream, dtype, case, &mut r);
            assert_eq!(plan.operation, Operation::Pad);
            let case = case.atom(Atom::Realign128);
            check_dtype(&stream, dtype, case, &mut r);
        }
    }
}

#[test]
fn contiguous_copies_run_as_one_range() {
    let Some(stream) = gpu() else { return };
    let mut r = rng(15);
    for dtype in DType::ALL {
        // Contiguous on both sides at odd element offsets: coalesced into one run.
        let case = Case::copy(123, 1001).lds(1001, 1001).at((0, 0), (0, 0));
        let plan = check_dtype(&stream, dtype, case, &mut r);
        assert!(plan.coalesced(), "{plan}");
        assert_eq!(plan.launched.0.rows, 1);
        assert_eq!(plan.launched.0.cols, 123 * 1001);
        assert!(plan.to_string().contains("coalesce"), "{plan}");
    }
    // A 16-byte-aligned dense copy coalesces too.
    let p = Plan::new(
        DType::U8,
        Operand::packed(8192, 8192),
        Operand::packed(8192, 8192),
        None,
        None,
    )
    .unwrap();
    assert!(p.coalesced() && p.atom == Atom::Realign128);
}

#[test]
fn same_phase_runs_of_any_length_copy_exactly_on_the_lean_kernel_in_both_block_shapes() {
    let Some(stream) = gpu() else { return };
    let mut r = rng(16);
    let l2 = cute_copy::l2_cache_bytes(stream.context()).unwrap();
    assert!(l2 > 0, "the device reports no L2");
    for dtype in DType::ALL {
        let e = dtype.size_bytes();
        let v = 16 / e; // elements per 16 bytes
        let mut runs: Vec<(usize, usize, usize)> = (0..6)
            .map(|_| {
                let n = if r.random_bool(0.5) {
                    r.random_range(1024 / e..(1 << 20) / e) // many tiles
                } else {
                    r.random_range(cute_copy::REALIGN_MIN_ROW_BYTES / e..4096 / e)
                    // a tile or two
                };
                let p = r.random_range(0..v); // the shared phase, in elements
                (n, p, p + v * r.random_range(0..4))
            })
            .collect();
        runs.push((8 * v + 1, 1 % v, v + 1 % v)); // one tile, a head and a one-element tail
        runs.push((5000 / e, 0, 1)); // another phase: the general kernel
        if matches!(dtype, DType::U8 | DType::F64) {
            // source and destination fill the L2 exactly: the longest run in 128-thread blocks;
            // one element more streams from DRAM in 256-thread blocks (with a head and a tail)
            runs.push((l2 / 2 / e, 0, 0));
            runs.push((l2 / 2 / e + 1, 1 % v, 1 % v + 2 * v));
        }
        for (n, sc, dc) in runs {
            let lean = (sc * e) % 16 == (dc * e) % 16;
            let case = Case::copy(1, n)
                .lds(n + sc + 3, n + dc + 5)
                .at((0, sc), (0, dc));
            let plan = check_dtype(&stream, dtype, case, &mut r);
            assert!(plan.realigned(), "{plan}");
            assert_eq!(plan.lean_run(), lean, "{dtype} {case:?}\n{plan}");
            let threads = match (lean, 2 * n * e <= l2) {
                (false, _) => 0,
                (true, true) => 128,
                (true, false) => 256,
            };
            assert_eq!(plan.lean_threads(l2), threads, "{dtype} {case:?}\n{plan}");
        }
    }
}

#[test]
fn random_offsets_and_pitches_match_the_reference() {
    let Some(stream) = gpu() else { return };
    let mut r = rng(16);
    let cases: usize = std::env::var("REALIGN_CASES")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(600);
    for _ in 0..cases {
        let dtype = DType::ALL[r.random_range(0..DType::ALL.len())];
        let rows = r.random_range(1..40);
        let cols = r.random_range(1..3000);
        let (sc, dc) = (r.random_range(0..20), r.random_range(0..20));
        let pad = r.random_bool(0.25);
        let (pr, pc) = if pad {
            (r.random_range(0..4), r.random_range(0..40))
        } else {
            (0, 0)
        };
        let case = Case::copy(rows, cols)
            .lds(
                cols + sc + r.random_range(0..24),
                cols + pc + dc + r.random_range(0..24),
            )
            .at((r.random_range(0..2), sc), (r.random_range(0..2), dc))
            .pad_to(rows + pr, cols + pc);
        let case = if r.random_bool(0.5) {
            case.atom(Atom::Realign128)
        } else {
            case
        };
        check_dtype(&stream, dtype, case, &mut r);
    }
}

/// A realigned copy reads whole 16-byte source vectors that reach past its row into the
/// neighbouring rows and pitch gaps, but never past the source view's span: here the span ends at
/// the last byte of its allocation (an odd byte count for u8), so the last row's last vector is read
/// by pieces. `compute-sanitizer --tool memcheck` (`tools/gpu_check.sh sanitize`) reports any read
/// past the allocation; the values are checked against the host reference here.
fn span_ends_at_the_allocation_end<T: cute_copy::Element>(
    stream: &Stream,
    (rows, cols, off): (usize, usize, usize),
    r: &mut rand::rngs::StdRng,
) -> Plan {
    use cute_copy::reference::{compare, expected_destination, poisoned_destination};
    let ld = cols + off;
    let src_host: Vec<T> = cute_copy::reference::random_elements(rows * ld, r.random());
    let src = cute_copy::DeviceMatrix::from_host(stream, rows, ld, ld, &src_host).unwrap();
    let sview = src.view().sub(0, off, rows, cols).unwrap();
    let mut dst =
        cute_copy::DeviceMatrix::<T>::zeros(stream, rows + 1, cols + 3, cols + 3).unwrap();
    let dg = dst
        .view_mut()
        .sub_mut(1, 1, rows, cols)
        .unwrap()
        .geometry()
        .unwrap();
    let before = poisoned_destination(&src_host, sview.geometry().unwrap(), dg, r.random());
    dst.upload(stream, &before).unwrap();
    let mut whole = dst.view_mut();
    let mut dview = whole.sub_mut(1, 1, rows, cols).unwrap();
    let plan = cute_copy::copy(&sview, &mut dview, stream).unwrap();
    let after = dst.to_host(stream).unwrap();
    let want = expected_destination(
        &src_host,
        sview.geometry().unwrap(),
        &before,
        dg,
        Operation::Copy,
    );
    let (mismatches, first) = compare(&want, &after);
    assert_eq!(
        mismatches,
        0,
        "{} {rows}x{cols}+{off}: {first:?}\n{plan}",
        T::DTYPE
    );
    plan
}

#[test]
fn realigned_reads_stay_inside_the_source_span_at_the_allocation_end() {
    let Some(stream) = gpu() else { return };
    let mut r = rng(17);
    // (rows, cols, column offset): whole-warp rows of one or several segments, rows shared by
    // groups of 8 or 16 lanes, one-row copies; the last row ends at the allocation's last byte.
    let shapes = [
        (7, 3001, 1),
        (3, 9000, 5),
        (40, 333, 3),
        (21, 700, 9),
        (1, 5003, 7),
        (64, 1500, 1),
    ];
    for (rows, cols, off) in shapes {
        let plan = span_ends_at_the_allocation_end::<u8>(&stream, (rows, cols, off), &mut r);
        assert!(plan.realigned(), "{plan}");
        span_ends_at_the_allocation_end::<u16>(&stream, (rows, cols, off), &mut r);
        span_ends_at_the_allocation_end::<f32>(&stream, (rows, cols / 2, off), &mut r);
        span_ends_at_the_allocation_end::<u64>(&stream, (rows, cols / 4, off), &mut r);
    }
}
