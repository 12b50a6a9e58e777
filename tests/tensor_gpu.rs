//! Tensor copies on the GPU: transposes, permutes, NCHW <-> NHWC, batched strided views and random
//! layouts of rank 1 to 6 (random permutations, padded strides, offsets, every element width),
//! against the host reference. Every case poisons the destination allocation (the complement of the
//! expected value where the copy writes, random canaries elsewhere) and compares all of it.

mod common;

use common::tensor::{by_width, random_side, route_name, Side};
use common::{gpu, rng};
use cute_copy::reference::random_elements;
use cute_copy::{
    Access, DeviceTensor, Element, Layout, TensorPlan, TensorRoute, TileKind, TileStage,
    TransposeTile,
};
use rand::Rng;

/// The transpose-family launch of a plan that must have one.
fn transpose_tile(plan: &TensorPlan) -> TransposeTile {
    match &plan.route {
        TensorRoute::Transpose(t) => *t,
        _ => panic!("not a transpose-family plan:\n{plan}"),
    }
}

fn transpose_case(rows: usize, cols: usize) -> (Side, Side) {
    let src = Layout::row_major(&[rows, cols])
        .unwrap()
        .permute(&[1, 0])
        .unwrap();
    (
        Side::packed(Layout::row_major(&[rows, cols]).unwrap()),
        Side::packed(Layout::row_major(&[cols, rows]).unwrap()),
    )
        .map_src(src)
}

trait MapSrc {
    fn map_src(self, l: Layout) -> Self;
}
impl MapSrc for (Side, Side) {
    fn map_src(mut self, l: Layout) -> Self {
        self.0.layout = l;
        self
    }
}

#[test]
fn transposes_of_every_width_full_and_edge_tiles_are_exact() {
    let Some(stream) = gpu() else { return };
    let mut r = rng(1);
    for w in [1, 2, 4, 8] {
        for (rows, cols) in [
            (300, 517),
            (517, 300),
            (1, 77),
            (77, 1),
            (128, 256),
            (256, 128),
            (1000, 999),
        ] {
            let (s, d) = transpose_case(rows, cols);
            let plan = by_width(&stream, w, s, d, &mut r);
            if rows > 1 && cols > 1 {
                let t = transpose_tile(&plan);
                assert_eq!(t.kind, TileKind::Transpose, "{plan}");
                assert!(t.load.is_vectorized() && t.store.is_vectorized(), "{plan}");
            }
        }
    }
}

#[test]
fn misaligned_transposes_realign_their_vectors_exactly() {
    let Some(stream) = gpu() else { return };
    let mut r = rng(2);
    for w in [1, 2, 4, 8] {
        // odd pitches and offsets on both sides: no whole 16-byte access is legal, realigned ones are
        let src = Side {
            alloc: 301 * 263 + 5,
            offset: 3,
            layout: Layout::new(&[259, 301], &[1, 263]).unwrap(),
        };
        let dst = Side {
            alloc: 259 * 305 + 7,
            offset: 1,
            layout: Layout::new(&[259, 301], &[305, 1]).unwrap(),
        };
        let plan = by_width(&stream, w, src, dst, &mut r);
        let t = transpose_tile(&plan);
        assert_eq!(
            (t.load, t.store),
            (Access::Realigned, Access::Realigned),
            "{plan}"
        );
    }
}

#[test]
fn permute_0213_of_heads_runs_as_rows_through_the_tile() {
    let Some(stream) = gpu() else { return };
    let mut r = rng(3);
    for w in [1, 2, 4, 8] {
        for (b, h, s, d) in [(2, 4, 300, 128), (3, 5, 129, 64), (1, 3, 17, 7)] {
            let x = Layout::row_major(&[b, h, s, d]).unwrap();
            let src = Side {
                layout: x.permute(&[0, 2, 1, 3]).unwrap(),
                ..Side::packed(x)
            };
            let dst = Side::packed(Layout::row_major(&[b, s, h, d]).unwrap());
            let plan = by_width(&stream, w, src, dst, &mut r);
            if b > 1 {
                let t = transpose_tile(&plan);
                assert_eq!(t.kind, TileKind::Rows, "{plan}");
            }
        }
    }
}

#[test]
fn nchw_to_nhwc_and_back_take_the_narrow_tiles_exactly() {
    let Some(stream) = gpu() else { return };
    let mut r = rng(4);
    for w in [1, 2, 4, 8] {
        for (n, c, hh, ww) in [
            (2, 3, 37, 41),
            (3, 4, 64, 64),
            (1, 16, 20, 20),
            (2, 64, 9, 9),
        ] {
            let nchw = Layout::row_major(&[n, c, hh, ww]).unwrap();
            let nhwc = Layout::row_major(&[n, hh, ww, c]).unwrap();
            let src = Side {
                layout: nchw.permute(&[0, 2, 3, 1]).unwrap(),
                ..Side::packed(nchw)
            };
            let plan = by_width(&stream, w, src, Side::packed(nhwc), &mut r);
            if c * w < 128 {
                let t = transpose_tile(&plan);
                // both modes can be short: either narrow tile is right
                assert!(
                    matches!(t.kind, TileKind::Narrow | TileKind::NarrowLoad),
                    "{plan}"
                );
            }
            // and back: NHWC -> NCHW
            let src = Side {
                layout: nhwc.permute(&[0, 3, 1, 2]).unwrap(),
                ..Side::packed(nhwc)
            };
            let plan = by_width(&stream, w, src, Side::packed(nchw), &mut r);
            if c * w < 128 {
                let t = transpose_tile(&plan);
                assert!(
                    matches!(t.kind, TileKind::Narrow | TileKind::NarrowLoad),
                    "{plan}"
                );
            }
        }
    }
}

#[test]
fn short_modes_of_two_to_eight_elements_transpose_in_registers_exactly() {
    let Some(stream) = gpu() else { return };
    let mut r = rng(11);
    for w in [1, 2, 4, 8] {
        let v = 16 / w;
        for c in 2..=cute_copy::NARROW_REGISTER_ROWS {
            // planes of hw elements at a pitch of whole 16-byte vectors: hw a multiple of the
            // vector (whole column blocks only), or not (the last block element by element), one
            // tile or several along hw, with an offset of whole vectors on either side
            for (n, hw, pitch) in [
                (2, 64 * v, 64 * v),
                (3, 5 * v + 3, 7 * v),
                (1, 4099, 4099usize.next_multiple_of(v) + v),
            ] {
                let plane = Layout::new(&[n, c, hw], &[c * pitch, pitch, 1]).unwrap();
                let runs = Layout::row_major(&[n, hw, c]).unwrap();
                let planes = Side {
                    alloc: n * c * pitch + 3 * v,
                    offset: v * r.random_range(0..3),
                    layout: plane,
                };
                let run = |layout: Layout, r: &mut rand::rngs::StdRng| Side {
                    alloc: n * hw * c + 2 * v,
                    offset: v * r.random_range(0..2),
                    layout,
                };
                // NCHW -> NHWC: the store mode (c) is short
                let dst = run(runs, &mut r);
                let src = Side {
                    layout: plane.permute(&[0, 2, 1]).unwrap(),
                    ..planes
                };
                let plan = by_width(&stream, w, src, dst, &mut r);
                let t = transpose_tile(&plan);
                // 16-byte stores need the run of every item to start on a vector
                let stage = if n == 1 || (hw * c) % v == 0 {
                    TileStage::Registers
                } else {
                    TileStage::SharedMemory
                };
                assert_eq!((t.kind, t.stage), (TileKind::Narrow, stage), "{plan}");
                // NHWC -> NCHW: the load mode (c) is short
                let src = run(runs.permute(&[0, 2, 1]).unwrap(), &mut r);
                let plan = by_width(&stream, w, src, planes, &mut r);
                let t = transpose_tile(&plan);
                assert_eq!((t.kind, t.stage), (TileKind::NarrowLoad, stage), "{plan}");
            }
        }
    }
}

#[test]
fn batched_strided_views_coalesce_to_rows() {
    let Some(stream) = gpu() else { return };
    let mut r = rng(5);
    for w in [1, 2, 4, 8] {
        // [B, R, C] of ld > C -> packed: coalesces to a (B*R, C) matrix
        let src = Side {
            alloc: 6 * 33 * 40,
            offset: 0,
            layout: Layout::new(&[6, 33, 37], &[33 * 40, 40, 1]).unwrap(),
        };
        let plan = by_width(
            &stream,
            w,
            src,
            Side::packed(Layout::row_major(&[6, 33, 37]).unwrap()),
            &mut r,
        );
        assert!(matches!(plan.route, TensorRoute::Matrix(_)), "{plan}");
        // a batch stride that does not step over the rows: rank 3, realign rows with items
        let src = Side {
            alloc: 6 * 1500 + 33 * 40,
            offset: 2,
            layout: Layout::new(&[6, 33, 37], &[1500, 40, 1]).unwrap(),
        };
        let plan = by_width(
            &stream,
            w,
            src,
            Side::packed(Layout::row_major(&[6, 33, 37]).unwrap()),
            &mut r,
        );
        assert!(matches!(plan.route, TensorRoute::Rows { .. }), "{plan}");
    }
}

#[test]
fn broadcast_sources_and_rank_six_layouts_are_exact() {
    let Some(stream) = gpu() else { return };
    let mut r = rng(6);
    // a zero-stride (broadcast) source mode is legal: every destination row gets the same source row
    let src = Side {
        alloc: 50,
        offset: 3,
        layout: Layout::new(&[40, 47], &[0, 1]).unwrap(),
    };
    by_width(
        &stream,
        4,
        src,
        Side::packed(Layout::row_major(&[40, 47]).unwrap()),
        &mut r,
    );
    let x = Layout::row_major(&[2, 3, 4, 5, 6, 7]).unwrap();
    for order in [[5, 4, 3, 2, 1, 0], [0, 2, 4, 1, 3, 5], [1, 0, 3, 2, 5, 4]] {
        let src = Side {
            layout: x.permute(&order).unwrap(),
            ..Side::packed(x)
        };
        let shape: Vec<usize> = order.iter().map(|&o| x.shape()[o]).collect();
        for w in [1, 2, 4, 8] {
            by_width(
                &stream,
                w,
                src,
                Side::packed(Layout::row_major(&shape).unwrap()),
                &mut r,
            );
        }
    }
}

#[test]
fn random_layouts_of_rank_one_to_six_are_exact() {
    let Some(stream) = gpu() else { return };
    let mut r = rng(7);
    let cases: usize = std::env::var("TENSOR_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(600);
    let mut kinds = std::collections::BTreeMap::new();
    for i in 0..cases {
        let rank = r.random_range(1..=6);
        let budget = if i % 10 == 0 { 400_000 } else { 20_000 };
        let mut shape = vec![1usize; rank];
        let mut size = 1usize;
        for extent in shape.iter_mut() {
            let cap = (budget / size).clamp(1, 300);
            *extent = r.random_range(1..=cap.min(if rank > 2 { 40 } else { 300 }));
            size *= *extent;
        }
        let src = random_side(&shape, &mut r);
        let dst = random_side(&shape, &mut r);
        let w = [1, 2, 4, 8][r.random_range(0..4)];
        let plan = by_width(&stream, w, src, dst, &mut r);
        *kinds.entry(route_name(&plan)).or_insert(0) += 1;
    }
    eprintln!("{cases} random tensor copies passed: {kinds:?}");
}

#[test]
fn copies_with_a_zero_extent_launch_nothing_and_leave_the_destination_untouched() {
    let Some(stream) = gpu() else { return };
    let mut r = rng(21);
    let side = |shape: &[usize], stride: &[usize], offset: usize| Side {
        alloc: offset + 7,
        offset,
        layout: Layout::new(shape, stride).unwrap(),
    };
    // The two pairs that panicked ("attempt to divide by zero") and were refused (Shape) before.
    let mut cases = vec![
        (4, side(&[0, 3], &[1, 2], 0), side(&[0, 3], &[3, 1], 0)),
        (
            1,
            side(&[50, 0, 0], &[1310, 0, 1], 3),
            side(&[50, 0, 0], &[13, 6, 1], 1),
        ),
    ];
    for _ in 0..200 {
        let rank = r.random_range(1..=6);
        let mut shape: Vec<usize> = (0..rank).map(|_| r.random_range(0..=9)).collect();
        let zero = r.random_range(0..rank);
        shape[zero] = 0;
        let strides = |r: &mut rand::rngs::StdRng| -> Vec<usize> {
            (0..rank).map(|_| r.random_range(0..=5000)).collect()
        };
        let (ss, ds) = (strides(&mut r), strides(&mut r));
        let w = [1, 2, 4, 8][r.random_range(0..4)];
        let (so, doff) = (r.random_range(0..5), r.random_range(0..5));
        cases.push((w, side(&shape, &ss, so), side(&shape, &ds, doff)));
    }
    for (w, src, dst) in cases {
        let plan = by_width(&stream, w, src, dst, &mut r);
        assert_eq!(plan.route, TensorRoute::Empty, "{plan}");
        assert_eq!(plan.bytes_moved(), 0);
    }
}

#[test]
fn views_without_a_unit_stride_mode_are_exact() {
    let Some(stream) = gpu() else { return };
    let mut r = rng(8);
    for w in [1, 2, 4, 8] {
        // every third element of a buffer -> packed (rank 1, no unit stride on the source)
        let src = Side {
            alloc: 3 * 1000 + 2,
            offset: 2,
            layout: Layout::new(&[1000], &[3]).unwrap(),
        };
        by_width(
            &stream,
            w,
            src,
            Side::packed(Layout::row_major(&[1000]).unwrap()),
            &mut r,
        );
        // packed -> every other element (no unit stride on the destination)
        let dst = Side {
            alloc: 2 * 700,
            offset: 1,
            layout: Layout::new(&[700], &[2]).unwrap(),
        };
        by_width(
            &stream,
            w,
            Side::packed(Layout::row_major(&[700]).unwrap()),
            dst,
            &mut r,
        );
        // rank 2, no unit stride on either side, the smallest strides on different modes
        let sl = Layout::new(&[130, 140], &[7, 1000]).unwrap();
        let src = Side {
            alloc: sl.cosize().unwrap() + 3,
            offset: 3,
            layout: sl,
        };
        let dl = Layout::new(&[130, 140], &[2, 260]).unwrap();
        let dst = Side {
            alloc: dl.cosize().unwrap() + 1,
            offset: 1,
            layout: dl,
        };
        by_width(&stream, w, src, dst, &mut r);
    }
}

/// Head `h` of a `[tokens, heads, dim]` view, as a helper returning a view of the caller's
/// lifetime would write it (the consuming transforms keep `'a`).
fn head_mut<'a, T: Element>(
    v: cute_copy::TensorViewMut<'a, T>,
    h: usize,
) -> cute_copy::TensorViewMut<'a, T> {
    let (tokens, dim) = (v.layout().shape()[0], v.layout().shape()[2]);
    let row = v.layout().stride()[0];
    v.into_slice(&[0, h, 0], &[tokens, 1, dim])
        .and_then(|v| v.into_relayout(Layout::new(&[tokens, dim], &[row, 1])?))
        .unwrap()
}

#[test]
fn views_placed_at_an_offset_and_returned_by_value_copy_exactly() {
    let Some(stream) = gpu() else { return };
    let (tokens, heads, dim) = (64, 3, 80);
    let packed = Layout::row_major(&[tokens, heads * dim]).unwrap();
    let host: Vec<half::f16> = random_elements(tokens * heads * dim, 5);
    let qkv = DeviceTensor::from_host(&stream, packed, &host).unwrap();
    // K (head 1) of the packed rows, placed by offset and layout, into head 2 of another tensor.
    let k = qkv
        .view_at(dim, Layout::new(&[tokens, dim], &[heads * dim, 1]).unwrap())
        .unwrap();
    let poison: Vec<half::f16> = random_elements(tokens * heads * dim, 6);
    let three = Layout::row_major(&[tokens, heads, dim]).unwrap();
    let mut out = DeviceTensor::from_host(&stream, three, &poison).unwrap();
    cute_copy::copy_tensor(&k, &mut head_mut(out.view_mut(), 2), &stream).unwrap();
    let got = out.to_host(&stream).unwrap();
    for t in 0..tokens {
        for h in 0..heads {
            for d in 0..dim {
                let i = (t * heads + h) * dim + d;
                let want = if h == 2 {
                    host[t * heads * dim + dim + d]
                } else {
                    poison[i]
                };
                assert_eq!(
                    got[i].to_bits(),
                    want.to_bits(),
                    "token {t} head {h} dim {d}"
                );
            }
        }
    }
    // A layout that reaches past the allocation is refused.
    assert!(qkv.view_at(1, packed).is_err());
}
