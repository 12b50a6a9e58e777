//! Tensor copies on the GPU on the shapes real programs have: odd-extent transposes placed at
//! offsets with padded leading dimensions, image crops permuted between NCHW and NHWC, batches of
//! tiny items, attention heads of odd sequence lengths, and random odd layouts of rank 2 to 5,
//! against the host reference. Every case poisons the destination allocation (the complement of
//! the expected value where the copy writes, random canaries elsewhere) and compares all of it.

mod common;

use common::tensor::{by_width, check, random_side, route_name, Side};
use common::{gpu, rng};
use cute_copy::{Access, Layout, TensorPlan, TensorRoute, TileKind, TileStage};
use half::{bf16, f16};
use rand::rngs::StdRng;
use rand::Rng;

const WIDTHS: [usize; 4] = [1, 2, 4, 8];

/// Where a matrix lies in its allocation: its element offset, the padding of its leading
/// dimension past the columns, and the spare elements after its last element.
#[derive(Clone, Copy, Debug)]
struct Placement {
    offset: usize,
    pad: usize,
    tail: usize,
}

impl Placement {
    const PACKED: Placement = Placement {
        offset: 0,
        pad: 0,
        tail: 0,
    };

    /// An offset of 0..31 elements, a leading dimension of `cols + 0..17`, 0..7 spare elements.
    fn random(r: &mut StdRng) -> Self {
        Placement {
            offset: r.random_range(0..32),
            pad: r.random_range(0..18),
            tail: r.random_range(0..8),
        }
    }

    /// A `rows x cols` matrix placed here, seen with its modes in `order`.
    fn matrix(self, rows: usize, cols: usize, order: [usize; 2]) -> Side {
        let m = Layout::matrix(rows, cols, cols + self.pad).unwrap();
        Side::placed(self.offset, m.permute(&order).unwrap(), self.tail)
    }
}

/// A packed row-major `storage` cropped to `shape` at coordinate `at` and seen with its modes in
/// `order` (the whole storage is the source allocation), and a packed destination of that shape.
fn crop_permute(storage: &[usize], at: &[usize], shape: &[usize], order: &[usize]) -> (Side, Side) {
    let whole = Layout::row_major(storage).unwrap();
    let crop = Layout::new(shape, whole.stride())
        .unwrap()
        .permute(order)
        .unwrap();
    let src = Side {
        alloc: whole.cosize().unwrap(),
        offset: whole.offset_of(at).unwrap(),
        layout: crop,
    };
    (src, Side::packed(Layout::row_major(crop.shape()).unwrap()))
}

/// The whole packed `storage` seen with its modes in `order`, and a packed destination.
fn permute(storage: &[usize], order: &[usize]) -> (Side, Side) {
    crop_permute(storage, &vec![0; storage.len()], storage, order)
}

#[test]
fn odd_transposes_at_offsets_with_padded_leading_dimensions_are_exact() {
    let Some(stream) = gpu() else { return };
    let mut r = rng(101);
    let mut shapes = vec![
        (1, 1),
        (1, 257),
        (257, 1),
        (127, 129),
        (129, 127),
        (255, 257),
        (257, 255),
        (2, 599),
        (599, 3),
        (31, 509),
        (509, 31),
    ];
    for _ in 0..4 {
        shapes.push((r.random_range(1..600), r.random_range(1..600)));
    }
    let packed = Placement::PACKED;
    for w in WIDTHS {
        for (i, &(rows, cols)) in shapes.iter().enumerate() {
            // rows x cols -> its transpose, packed on both sides
            by_width(
                &stream,
                w,
                packed.matrix(rows, cols, [1, 0]),
                packed.matrix(cols, rows, [0, 1]),
                &mut r,
            );
            // then placed at an offset with a padded leading dimension: the source, the
            // destination or both
            let (a, b) = (Placement::random(&mut r), Placement::random(&mut r));
            let (s, d) = [(a, packed), (packed, b), (a, b)][i % 3];
            by_width(
                &stream,
                w,
                s.matrix(rows, cols, [1, 0]),
                d.matrix(cols, rows, [0, 1]),
                &mut r,
            );
        }
    }
}

#[test]
fn image_crops_permute_between_nchw_and_nhwc_exactly() {
    let Some(stream) = gpu() else { return };
    let mut r = rng(102);
    for c in [1, 2, 3, 4, 5, 8] {
        for _ in 0..2 {
            let n = r.random_range(1..=3);
            let (hh, ww) = (r.random_range(8..=160), r.random_range(8..=160));
            let (h, w) = (r.random_range(1..=hh), r.random_range(1..=ww));
            let (y, x) = (r.random_range(0..=hh - h), r.random_range(0..=ww - w));
            // a crop of NCHW storage -> packed NHWC, and a crop of NHWC storage -> packed NCHW
            for (s, d) in [
                crop_permute(&[n, c, hh, ww], &[0, 0, y, x], &[n, c, h, w], &[0, 2, 3, 1]),
                crop_permute(&[n, hh, ww, c], &[0, y, x, 0], &[n, h, w, c], &[0, 3, 1, 2]),
            ] {
                check::<u8>(&stream, s, d, &mut r);
                check::<f32>(&stream, s, d, &mut r);
            }
        }
    }
}

#[test]
fn planar_rows_at_any_offset_and_pitch_interleave_in_registers_both_ways_exactly() {
    let Some(stream) = gpu() else { return };
    let mut r = rng(107);
    for w in WIDTHS {
        let v = 16 / w;
        for c in 2..=cute_copy::NARROW_REGISTER_ROWS {
            // crops of [n, c, hh, ww] planes -> packed [n, h, cols, c] and back: rows shorter than two
            // vectors (one 32-thread group, eight tiles a block), a 1920-byte-like row, rows
            // longer than one pass of the block, and a random one; the crop's column offset and
            // the plane's pitch at any element, the whole view at an offset of 0..v elements
            let long = 256 * v + 7 * v + r.random_range(0..v);
            for (n, h, cols) in [
                (1, 3, 2 * v - 1),
                (2, 3, 120 * v),
                (1, 2, long),
                (2, 2, r.random_range(v..40 * v)),
            ] {
                let (x, pad) = (r.random_range(0..v + 2), r.random_range(0..2 * v));
                let (hh, ww) = (h + r.random_range(0..3), cols + x + pad);
                let y = r.random_range(0..=hh - h);
                let (s, d) = crop_permute(
                    &[n, c, hh, ww],
                    &[0, 0, y, x],
                    &[n, c, h, cols],
                    &[0, 2, 3, 1],
                );
                // every run on a vector: registers, the run's side whole vectors, the rows'
                // side realigned or whole
                let in_registers = (cols * c) % v == 0 && c * w < cute_copy::NARROW_MAX_BYTES;
                let check_route = |plan: &TensorPlan, kind: TileKind| {
                    let TensorRoute::Transpose(t) = &plan.route else {
                        panic!("{plan}")
                    };
                    let run = if kind == TileKind::Narrow {
                        t.store
                    } else {
                        t.load
                    };
                    if in_registers {
                        let want = (kind, TileStage::Registers, Access::Vector);
                        assert_eq!((t.kind, t.stage, run), want, "{plan}");
                    }
                };
                let s = s.at(s.offset + r.random_range(0..v));
                check_route(&by_width(&stream, w, s, d, &mut r), TileKind::Narrow);
                // the mirror image: packed [n, h, cols, c] runs into the crop of the planes
                // (stores realigned or whole, the rest of the planes' allocation untouched)
                let planes = Layout::row_major(&[n, c, hh, ww]).unwrap();
                let into = Side {
                    alloc: planes.cosize().unwrap() + v,
                    offset: planes.offset_of(&[0, 0, y, x]).unwrap() + r.random_range(0..v),
                    layout: Layout::new(&[n, c, h, cols], planes.stride()).unwrap(),
                };
                let runs = Layout::row_major(&[n, h, cols, c]).unwrap();
                let from = Side::packed(runs.permute(&[0, 3, 1, 2]).unwrap());
                check_route(
                    &by_width(&stream, w, from, into, &mut r),
                    TileKind::NarrowLoad,
                );
            }
        }
    }
}

#[test]
fn batches_of_tiny_items_transpose_every_item_exactly() {
    let Some(stream) = gpu() else { return };
    let mut r = rng(103);
    let mut items = vec![(3, 5), (5, 7), (3, 3), (1, 7), (8, 8), (7, 2)];
    items.push((r.random_range(1..9), r.random_range(1..9)));
    for w in WIDTHS {
        for (i, &(a, b)) in items.iter().enumerate() {
            // one batch of more than 65535 items per width (past one grid dimension's limit), the
            // others of a random count up to 70000 items or 150000 elements
            let n = if i == 0 {
                69_997
            } else {
                r.random_range(1..=(150_000 / (a * b)).min(70_000))
            };
            let (s, d) = permute(&[n, a, b], &[0, 2, 1]);
            by_width(&stream, w, s, d, &mut r);
        }
    }
}

#[test]
fn rank_four_batches_of_tiny_items_permute_exactly() {
    let Some(stream) = gpu() else { return };
    let mut r = rng(104);
    let mut items = vec![(3, 5, 7), (2, 3, 4), (8, 1, 5), (4, 4, 3)];
    items.push((
        r.random_range(1..9),
        r.random_range(1..9),
        r.random_range(1..9),
    ));
    for w in WIDTHS {
        for &(a, b, c) in &items {
            let n = r.random_range(1..=(200_000 / (a * b * c)).min(20_000));
            for order in [[0, 3, 1, 2], [0, 2, 3, 1]] {
                let (s, d) = permute(&[n, a, b, c], &order);
                by_width(&stream, w, s, d, &mut r);
            }
        }
    }
}

#[test]
fn attention_heads_of_odd_sequence_lengths_permute_exactly() {
    let Some(stream) = gpu() else { return };
    let mut r = rng(105);
    let seqs = [577, 1000, 1025];
    for (i, dim) in [64, 80, 96, 112, 192].into_iter().enumerate() {
        let (b, h, s) = (r.random_range(1..=2), r.random_range(2..=3), seqs[i % 3]);
        // [B,H,S,D] -> [B,S,H,D] (heads next to each other per token) and -> [B,S,D,H], in f32
        // and in bf16 or f16 (each order meets both over the dims)
        for (j, order) in [[0, 2, 1, 3], [0, 2, 3, 1]].into_iter().enumerate() {
            let (src, dst) = permute(&[b, h, s, dim], &order);
            check::<f32>(&stream, src, dst, &mut r);
            if (i + j) % 2 == 0 {
                check::<bf16>(&stream, src, dst, &mut r);
            } else {
                check::<f16>(&stream, src, dst, &mut r);
            }
        }
    }
}

#[test]
fn random_odd_layouts_of_rank_two_to_five_at_offsets_are_exact() {
    let Some(stream) = gpu() else { return };
    let mut r = rng(106);
    let mut routes = std::collections::BTreeMap::new();
    let cases = 30;
    for w in WIDTHS {
        for _ in 0..cases {
            let rank = r.random_range(2..=5);
            // odd extents, at most 60000 elements
            let mut shape = Vec::with_capacity(rank);
            let mut size = 1usize;
            for _ in 0..rank {
                let cap = (60_000 / size).min([600, 60, 24, 13][rank - 2]).max(1);
                let extent = 2 * r.random_range(0..=(cap - 1) / 2) + 1;
                shape.push(extent);
                size *= extent;
            }
            // a random storage order and padding on each side (so a random permutation between
            // them), both at a random offset of 0..15 elements
            let src = random_side(&shape, &mut r).at(r.random_range(0..16));
            let dst = random_side(&shape, &mut r).at(r.random_range(0..16));
            let plan = by_width(&stream, w, src, dst, &mut r);
            *routes.entry(route_name(&plan)).or_insert(0) += 1;
        }
    }
    eprintln!(
        "{} random odd tensor copies passed: {routes:?}",
        cases * WIDTHS.len()
    );
}
