use super::*;

/// Plans are values: the device's facts come in as a [`DeviceInfo`], so the same facts print
/// the same text on every machine (and without a device: `Plan::new`).
#[test]
fn a_plan_prints_the_facts_of_the_device_it_was_made_for() {
    let h200 = DeviceInfo::new(60 << 20, 132, (9, 0));
    let small = DeviceInfo::new(4 << 20, 24, (8, 6));
    let run = Operand::packed(1, 4 << 20); // 16 MiB of f32: one run, the same 16-byte phase
    let on = |d: &DeviceInfo| Plan::for_device(DType::F32, run, run, None, d).unwrap();
    let (a, b) = (on(&h200), on(&small));
    println!("{a}\n{b}");
    assert!(a.lean_run() && b.lean_run());
    assert_eq!((a.device, b.device), (Some(h200), Some(small)));
    let (ta, tb) = (a.to_string(), b.to_string());
    assert!(
        ta.contains("blocks of 128 threads") && ta.contains("L2 (60.0 MiB)"),
        "{ta}"
    );
    assert!(
        tb.contains("blocks of 256 threads") && tb.contains("L2 (4.0 MiB)"),
        "{tb}"
    );
    assert_eq!(ta, on(&h200).to_string());
    let none = Plan::new(DType::F32, run, run, None, None).unwrap();
    assert!(none.to_string().contains("no device to ask here"));
    // a row-by-row realign plan: the L2 prefetch line follows the device's L2
    let src = Operand {
        rows: 4096,
        cols: 4095,
        ld: 4097,
        offset_bytes: 0,
    };
    let dst = Operand {
        rows: 4096,
        cols: 4095,
        ld: 4095,
        offset_bytes: 0,
    };
    let on = |d: &DeviceInfo| Plan::for_device(DType::U8, src, dst, None, d).unwrap();
    let (a, b) = (on(&h200), on(&small));
    println!("{a}\n{b}");
    assert!(a.realigned() && !a.lean_run());
    assert!(a.to_string().contains("no L2 prefetch"), "{a}");
    assert!(
        b.to_string().contains("L2 prefetch: the source span"),
        "{b}"
    );
    // the compute capability is checked against the atom
    let old = DeviceInfo::new(4 << 20, 24, (7, 5));
    let p = Operand::packed(64, 64);
    assert!(matches!(
        Plan::for_device(DType::F32, p, p, Some(Atom::CpAsync128), &old),
        Err(Error::UnsupportedArch { .. })
    ));
}

#[test]
fn widest_vector_bits_checks_every_row_start() {
    assert_eq!(widest_vector_bits(DType::F16, 16384, 0), 128);
    assert_eq!(widest_vector_bits(DType::F16, 16388, 0), 64);
    assert_eq!(widest_vector_bits(DType::F16, 130, 0), 32);
    assert_eq!(widest_vector_bits(DType::F16, 131, 0), 16);
    assert_eq!(widest_vector_bits(DType::U8, 131, 0), 8);
    assert_eq!(widest_vector_bits(DType::F64, 3, 0), 64); // never narrower than one element
    assert_eq!(widest_vector_bits(DType::F32, 1024, 8), 64);
    assert_eq!(widest_vector_bits(DType::I8, 1024, 3), 8);
    assert_eq!(widest_vector_bits(DType::U16, 64, 2), 16);
}

#[test]
fn copy_mask_marks_lanes_inside_the_logical_size() {
    assert_eq!(copy_mask(0, 8, 16383), vec![true; 8]);
    assert_eq!(
        copy_mask(16376, 8, 16383),
        [true, true, true, true, true, true, true, false]
    );
    assert_eq!(copy_mask(20, 4, 10), vec![false; 4]);
    assert_eq!(copy_mask(usize::MAX, 2, 10), [false, false]);
}

#[test]
fn planner_picks_the_widest_atom_legal_on_both_sides() {
    // Rows shorter than REALIGN_MIN_ROW_BYTES keep the widest element-width atom.
    let short = Operand {
        rows: 130,
        cols: 60,
        ld: 62,
        offset_bytes: 0,
    };
    let p = Plan::new(DType::F16, short, short, None, None).unwrap();
    assert_eq!(p.atom, Atom::Universal32);
    assert!(
        p.reasons()
            .iter()
            .any(|r| r.contains("row pitch 124 B") && r.contains("128-bit not legal")),
        "{p}"
    );
    assert!(p.to_string().contains("too short"), "{p}");
    let dense = Operand {
        rows: 16383,
        cols: 16383,
        ld: 16384,
        offset_bytes: 0,
    };
    // 16-byte-aligned rows of 32766 B: realigned (an element-wise tail per row) ...
    let p = Plan::new(DType::F16, dense, dense, None, None).unwrap();
    assert_eq!(p.atom, Atom::Realign128);
    assert!(p.to_string().contains("not a multiple of 16"), "{p}");
    // ... where the tile engine would predicate the last tile of every row
    let p = Plan::new(DType::F16, dense, dense, Some(Atom::Universal128), None).unwrap();
    assert!(p.predicated_last_row && p.predicated_last_col);
    assert_eq!(p.tiles, (256, 64));
    assert_eq!(p.predicated_tiles(), 256 + 64 - 1);
    assert!(!p.coalesced());
    // a pad of such rows to whole vectors: realigned too (its source rows are ragged)
    let p = Plan::new(DType::F16, dense, Operand::packed(16384, 16384), None, None).unwrap();
    assert!(
        p.operation == Operation::Pad && p.atom == Atom::Realign128,
        "{p}"
    );
    assert!(
        p.to_string()
            .contains("32766 B long in the source and 32768 B in the destination"),
        "{p}"
    );
    // a pad of whole-vector rows to ragged ones, likewise
    let whole = Operand::packed(100, 16384);
    let ragged = Operand {
        ld: 16392, // 16-byte-aligned rows of 32778 B
        ..Operand::packed(100, 16389)
    };
    let p = Plan::new(DType::F16, whole, ragged, None, None).unwrap();
    assert_eq!(p.atom, Atom::Realign128, "{p}");
    // rows that are whole vectors on both sides, or short, stay on the tile engine, pads too
    let p = Plan::new(DType::F16, whole, Operand::packed(128, 16392), None, None).unwrap();
    assert!(
        p.operation == Operation::Pad && p.atom == Atom::Universal128,
        "{p}"
    );
    for (cols, ld) in [(16384, 16392), (1001, 1008)] {
        let o = Operand {
            rows: 64,
            cols,
            ld,
            offset_bytes: 0,
        };
        let p = Plan::new(DType::F16, o, o, None, None).unwrap();
        assert_eq!(p.atom, Atom::Universal128, "{p}");
    }
    let p = Plan::new(
        DType::F64,
        Operand::packed(3, 3),
        Operand::packed(3, 3),
        None,
        None,
    )
    .unwrap();
    assert_eq!(p.atom, Atom::Universal); // a 72-byte run: too short to realign
}

#[test]
fn rows_not_16_byte_aligned_are_realigned() {
    // A packed 16383-wide f16 destination: odd pitch.
    let src = Operand {
        rows: 16383,
        cols: 16383,
        ld: 16384,
        offset_bytes: 0,
    };
    let p = Plan::new(DType::F16, src, Operand::packed(16383, 16383), None, None).unwrap();
    assert_eq!(p.atom, Atom::Realign128);
    assert!(!p.coalesced());
    assert_eq!(p.tiles, (16383, 16)); // 32766-byte rows: 16 segments of 2 KiB
    assert!(p.to_string().contains("funnel-shift"), "{p}");
    assert!(p.to_string().contains("changing from row to row"), "{p}");
    // 8-byte pitch on one side, any byte offset on the other.
    let a = Operand {
        rows: 100,
        cols: 1000,
        ld: 1004,
        offset_bytes: 0,
    };
    let b = Operand {
        rows: 100,
        cols: 1000,
        ld: 1024,
        offset_bytes: 6,
    };
    let p = Plan::new(DType::F16, a, b, None, None).unwrap();
    assert_eq!(p.atom, Atom::Realign128);
    assert_eq!((p.src_bits, p.dst_bits), (64, 16));
    // The element-width plan is still there on request, and Realign128 is legal anywhere.
    let p = Plan::new(DType::F16, a, b, Some(Atom::Universal16), None).unwrap();
    assert_eq!(p.atom, Atom::Universal16);
    let p = Plan::new(
        DType::U8,
        Operand::packed(5, 7),
        Operand::packed(5, 7),
        Some(Atom::Realign128),
        None,
    )
    .unwrap();
    assert!(p.explicit && p.realigned());
    // A pad realigns too and says so.
    let p = Plan::new(DType::BF16, a, Operand::packed(104, 1024), None, None).unwrap();
    assert_eq!((p.atom, p.operation), (Atom::Realign128, Operation::Pad));
    assert!(p.to_string().contains("zeros"), "{p}");
}

/// The automatic plan of a u8 copy of `rows x cols`, source at ld `src_ld` and `src_offset`
/// bytes, destination at ld `dst_ld`.
fn u8_rows(rows: usize, cols: usize, (src_ld, src_offset): (usize, usize), dst_ld: usize) -> Plan {
    let src = Operand {
        ld: src_ld,
        offset_bytes: src_offset,
        ..Operand::packed(rows, cols)
    };
    let dst = Operand {
        ld: dst_ld,
        ..Operand::packed(rows, cols)
    };
    Plan::new(DType::U8, src, dst, None, None).unwrap()
}

#[test]
fn realign_task_coordinates_come_from_a_host_divmod_below_2_31_tasks() {
    // rows of 4000 bytes (two 2 KiB segments), ld 4001 -> 4096: realigned, never coalesced
    let rows = |n: usize| u8_rows(n, 4000, (4001, 0), 4096);
    let p = rows(8191);
    assert!(p.realigned(), "{p}");
    assert!(p.to_string().contains("cutlass::FastDivmod"), "{p}");
    // 2^30 rows x 2 segments: 2^31 tasks, past FastDivmod's 31-bit dividends
    let p = rows(1 << 30);
    assert_eq!(p.tiles.0 * p.tiles.1, 1 << 31, "{p}");
    let text = p.to_string();
    assert!(
        !text.contains("FastDivmod") && text.contains("2^31 tasks or more"),
        "{p}"
    );
}

#[test]
fn realigned_vectors_read_whole_inside_the_source_span_and_by_pieces_past_a_pads_rows() {
    let src = Operand {
        ld: 4001,
        ..Operand::packed(100, 4000)
    };
    let copy = Plan::new(DType::U8, src, Operand::packed(100, 4000), None, None).unwrap();
    let text = copy.to_string();
    assert!(copy.realigned(), "{copy}");
    assert!(
        text.contains("inside the source's read span") && !text.contains("this pad's shorter"),
        "{copy}"
    );
    // a pad whose source rows are shorter: the vectors past them must read zeros
    let pad = Plan::new(DType::U8, src, Operand::packed(100, 4100), None, None).unwrap();
    assert!(pad.realigned() && pad.operation == Operation::Pad, "{pad}");
    assert!(
        pad.to_string().contains("this pad's shorter source rows"),
        "{pad}"
    );
    // a pad of rows only keeps the span rule for every row it reads
    let rows = Plan::new(DType::U8, src, Operand::packed(120, 4000), None, None).unwrap();
    assert!(
        rows.realigned() && rows.operation == Operation::Pad,
        "{rows}"
    );
    assert!(!rows.to_string().contains("this pad's shorter"), "{rows}");
}

#[test]
fn sources_at_least_the_l2_prefetch_ahead_and_smaller_ones_do_not() {
    let l2 = 60 << 20; // an H200's L2
                       // u8 rows of 8191 bytes at (0,1) of ld 8192 -> ld 8192: realigned, never one run
    let rows = |n: usize| u8_rows(n, 8191, (8192, 1), 8192);
    let big = rows(8191); // a 64 MiB span
    assert!(big.realigned() && !big.lean_run(), "{big}");
    assert_eq!(big.l2_prefetch_tasks(l2), 1024);
    assert!(big
        .l2_prefetch_reason(l2)
        .starts_with("L2 prefetch: the source span (64.0 MiB)"));
    let small = rows(4096); // 32 MiB
    assert_eq!(small.l2_prefetch_tasks(l2), 0);
    assert!(small.l2_prefetch_reason(l2).starts_with("no L2 prefetch"));
    // the line is the L2 itself: a span equal to the L2 prefetches, one a byte short of it does not
    assert_eq!(big.l2_prefetch_tasks(8191 * 8192 - 1), 1024);
    assert_eq!(big.l2_prefetch_tasks(8191 * 8192), 0);
    // no device: the rule is stated, nothing claimed
    assert!(big.l2_prefetch_reason(0).contains("no device to ask"));
    // lean runs (contiguous, one 16-byte phase) and short rows sharing a warp task never prefetch
    let lean = Plan::new(
        DType::U8,
        Operand::packed(1024, 1024),
        Operand::packed(1024, 1024),
        None,
        None,
    )
    .unwrap();
    assert!(lean.lean_run() && lean.l2_prefetch_tasks(1) == 0, "{lean}");
    let short = Plan::new(
        DType::U8,
        Operand {
            ld: 1001,
            ..Operand::packed(100_000, 1000)
        },
        Operand::packed(100_000, 1000),
        None,
        None,
    )
    .unwrap();
    assert!(
        short.realigned() && short.l2_prefetch_tasks(1) == 0,
        "{short}"
    );
}

#[test]
fn runs_in_one_phase_take_the_lean_kernel_in_blocks_by_the_l2() {
    let run = |dtype: DType, n: usize, so: usize, dof: usize| {
        let at = |o: usize| Operand {
            offset_bytes: o,
            ..Operand::packed(1, n)
        };
        Plan::new(dtype, at(so), at(dof), None, None).unwrap()
    };
    let e = |d: DType| d.size_bytes();
    let l2 = 60 << 20; // an H200's L2
    for dtype in [DType::U8, DType::F16, DType::F32, DType::F64] {
        // same phase (offsets 16 bytes apart, or equal), any length: lean
        let n = (l2 / 2) / e(dtype); // source and destination fill the L2 exactly
        let p = run(dtype, n, 0, 0);
        assert!(p.lean_run(), "{p}");
        assert!(p.to_string().contains("lean run kernel"), "{p}");
        assert_eq!(p.lean_threads(l2), 128, "{p}");
        assert!(p.lean_reason(l2).contains("blocks of 128 threads"));
        assert!(p.lean_reason(l2).contains("2 vectors per thread"));
        // one element more outgrows the L2: finer tiles
        let p = run(dtype, n + 1, 0, 0);
        assert_eq!(p.lean_threads(l2), 256, "{p}");
        assert!(p.lean_reason(l2).contains("1 vector per thread"));
        assert!(p.lean_reason(l2).contains("streams from DRAM"));
        // no device: the rule is stated with both shapes, and the launch count is the same
        assert!(p.lean_reason(0).contains("no device to ask"));
        assert_eq!(p.lean_threads(0), 256);
        // either shape's 4 KiB tiles cover the body (all but a head and a tail of < 16 B)
        assert!(p.blocks() * 4096 + 16 > (n + 1) * e(dtype), "{p}");
        let p = run(dtype, 4096, 8, 24);
        assert!(p.lean_run() && p.lean_threads(l2) == 128, "{p}");
        // a run much longer than any L2 is still lean
        assert!(run(dtype, (1 << 30) / e(dtype), 16, 0).lean_run());
        // another phase: the general kernel
        let p = run(dtype, 1000, 0, e(dtype));
        assert!(
            !p.lean_run() && p.lean_threads(l2) == 0 && !p.to_string().contains("lean run kernel"),
            "{p}"
        );
    }
    // rows that do not coalesce, and pads, are never lean
    let p = Plan::new(
        DType::U8,
        Operand::packed(4, 1000),
        Operand {
            ld: 1024,
            ..Operand::packed(4, 1000)
        },
        None,
        None,
    )
    .unwrap();
    assert!(p.realigned() && !p.lean_run(), "{p}");
    let p = Plan::new(
        DType::U8,
        Operand::packed(1, 1000),
        Operand::packed(1, 1024),
        None,
        None,
    )
    .unwrap();
    assert!(p.operation == Operation::Pad && !p.lean_run(), "{p}");
}

#[test]
fn contiguous_copies_coalesce_into_one_run() {
    let p = Plan::new(
        DType::F32,
        Operand::packed(64, 128),
        Operand::packed(64, 128),
        None,
        None,
    )
    .unwrap();
    assert!(p.coalesced());
    assert_eq!(p.launched.0, Operand::packed(1, 64 * 128));
    assert_eq!(p.atom, Atom::Realign128);
    assert_eq!(p.tiles, (1, 16)); // 32 KiB: 16 segments
    assert!(
        p.to_string().contains("(64,128):(128,1) into (8192):(1)"),
        "{p}"
    );
    // 12000 x 12001 u16 with ld 12001 on both sides: one run of 288 MB.
    let o = Operand::packed(12000, 12001);
    let p = Plan::new(DType::U16, o, o, None, None).unwrap();
    assert_eq!(p.launched.1.cols, 12000 * 12001);
    // Not for pads, nor when one side has gaps.
    let gap = Operand {
        ld: 130,
        ..Operand::packed(64, 128)
    };
    assert_eq!(
        coalesce(Operation::Copy, gap, Operand::packed(64, 128)),
        (gap, Operand::packed(64, 128))
    );
    let (s, d) = (Operand::packed(4, 4), Operand::packed(8, 8));
    assert_eq!(coalesce(Operation::Pad, s, d), (s, d));
}

#[test]
fn explicit_misaligned_atom_names_what_and_by_how_much() {
    let src = Operand {
        rows: 10,
        cols: 130,
        ld: 130,
        offset_bytes: 0,
    };
    let e = Plan::new(
        DType::F16,
        src,
        Operand::packed(10, 130),
        Some(Atom::Universal128),
        None,
    )
    .unwrap_err();
    assert!(
        matches!(
            e,
            Error::Misaligned {
                what: "source row pitch",
                value: 260,
                required: 16,
                remainder: 4,
                ..
            }
        ),
        "{e}"
    );
    let src = Operand {
        rows: 10,
        cols: 128,
        ld: 128,
        offset_bytes: 8,
    };
    let e = Plan::new(
        DType::F16,
        src,
        Operand::packed(10, 128),
        Some(Atom::CpAsync128),
        None,
    )
    .unwrap_err();
    assert!(
        matches!(
            e,
            Error::Misaligned {
                what: "source base address",
                value: 8,
                remainder: 8,
                ..
            }
        ),
        "{e}"
    );
    let dst = Operand {
        rows: 10,
        cols: 128,
        ld: 130,
        offset_bytes: 0,
    };
    let e = Plan::new(
        DType::F32,
        Operand::packed(10, 128),
        dst,
        Some(Atom::Universal128),
        None,
    )
    .unwrap_err();
    assert!(
        matches!(
            e,
            Error::Misaligned {
                what: "destination row pitch",
                value: 520,
                remainder: 8,
                ..
            }
        ),
        "{e}"
    );
}

#[test]
fn pads_need_an_atom_that_can_write_zeros() {
    let e = Plan::new(
        DType::F16,
        Operand::packed(8, 8),
        Operand::packed(16, 16),
        Some(Atom::CpAsync128),
        None,
    )
    .unwrap_err();
    assert!(matches!(e, Error::AtomCannotZeroFill(Atom::CpAsync128)));
    let p = Plan::new(
        DType::F16,
        Operand::packed(8, 8),
        Operand::packed(16, 16),
        Some(Atom::CpAsyncZfill128),
        None,
    )
    .unwrap();
    assert_eq!(p.operation, Operation::Pad);
    assert!(p.to_string().contains("ZFILL"));
    let e = Plan::new(
        DType::F16,
        Operand::packed(16, 16),
        Operand::packed(8, 16),
        None,
        None,
    )
    .unwrap_err();
    assert!(matches!(e, Error::ShapeMismatch { .. }));
}

#[test]
fn cp_async_needs_sm80_and_bad_shapes_are_errors() {
    let e = Plan::new(
        DType::F32,
        Operand::packed(8, 8),
        Operand::packed(8, 8),
        Some(Atom::CpAsync32),
        Some((7, 5)),
    )
    .unwrap_err();
    assert!(matches!(
        e,
        Error::UnsupportedArch {
            needed: 8,
            major: 7,
            minor: 5,
            ..
        }
    ));
    let bad = Operand {
        rows: 4,
        cols: 8,
        ld: 4,
        offset_bytes: 0,
    };
    assert!(matches!(
        Plan::new(DType::F32, bad, bad, None, None),
        Err(Error::LeadingDimension { ld: 4, cols: 8, .. })
    ));
    let huge = Operand {
        rows: 1 << 32,
        cols: 1,
        ld: 1,
        offset_bytes: 0,
    };
    assert!(matches!(
        Plan::new(DType::U8, huge, huge, None, None),
        Err(Error::Overflow(_))
    ));
    let e = Plan::new(
        DType::F64,
        Operand::packed(8, 8),
        Operand::packed(8, 8),
        Some(Atom::Universal32),
        None,
    )
    .unwrap_err();
    assert!(matches!(e, Error::AtomNarrowerThanElement { .. }));
}

#[test]
fn a_tensor_plan_prints_the_facts_of_the_device_it_was_made_for() {
    use crate::Layout;
    let run = Layout::row_major(&[64, 65536]).unwrap(); // 16 MiB of f32, contiguous
    let on = |d: &DeviceInfo| TensorPlan::for_device(DType::F32, run, run, (0, 0), d).unwrap();
    let (a, b) = (
        on(&DeviceInfo::new(60 << 20, 132, (9, 0))),
        on(&DeviceInfo::new(4 << 20, 24, (8, 6))),
    );
    println!("{a}\n{b}");
    assert!(a.to_string().contains("blocks of 128 threads"), "{a}");
    assert!(b.to_string().contains("blocks of 256 threads"), "{b}");
    let none = TensorPlan::new(DType::F32, run, run, (0, 0)).unwrap();
    assert!(none.to_string().contains("no device to ask here"), "{none}");
}
