//! The tensor front doors: [`plan_tensor`], [`copy_tensor`] and [`copy_tensor_raw`] turn views into
//! a [`TensorPlan`] (src/plan/tensor.rs) and hand it to the one launch path (src/launch.rs).

use std::sync::Arc;

use cudarc::driver::CudaStream;

use crate::convert::{Convert, ConvertPlan};
use crate::device::check_context;
use crate::error::{Error, Result};
use crate::plan::TensorPlan;
use crate::view::{Place, RawTensor, TensorView, TensorViewMut};
use crate::{DType, DeviceInfo, Element};

/// Plan a tensor copy of `src` into `dst` (equal shapes, any layouts). Nothing is launched.
/// Views on two devices are planned for a stream of the source's device (see
/// [`PeerRoute`](crate::PeerRoute)).
pub fn plan_tensor<T: Element>(
    src: &TensorView<'_, T>,
    dst: &TensorViewMut<'_, T>,
) -> Result<TensorPlan> {
    plan_on(src, dst, src.context())
}

/// [`plan_tensor`] for a launch on a stream of `on`: its device facts, and a route between
/// devices when the views are on two.
fn plan_on<T: Element>(
    src: &TensorView<'_, T>,
    dst: &TensorViewMut<'_, T>,
    on: &Arc<cudarc::driver::CudaContext>,
) -> Result<TensorPlan> {
    let e = T::DTYPE.size_bytes();
    let mut plan = plan_places(
        T::DTYPE,
        (src.place(), src.alloc_base()),
        (dst.place(), dst.alloc_base()),
        e,
        &DeviceInfo::of(on)?,
    )?;
    crate::peer::route_tensor(&mut plan, src.context(), dst.context(), on)?;
    Ok(plan)
}

fn plan_places(
    dtype: DType,
    (s, sb): (Place, u64),
    (d, db): (Place, u64),
    e: usize,
    device: &DeviceInfo,
) -> Result<TensorPlan> {
    s.check()?;
    d.check()?;
    let off = |p: &Place, base: u64| (base as usize % 256 + p.offset * e) % 256;
    let offsets = (off(&s, sb), off(&d, db));
    kept_plan((dtype, s.layout, d.layout, offsets, *device))
}

/// What a tensor plan is a function of: the dtype, both layouts, both offsets modulo 256 bytes
/// and the device's facts.
type PlanKey = (
    DType,
    crate::Layout,
    crate::Layout,
    (usize, usize),
    DeviceInfo,
);

/// Plans a front door made last on this thread: a plan is a pure function of its [`PlanKey`], so
/// a program copying the same shapes again (the many-small-copies case, where planning is a
/// visible share of the call) reuses it instead of coalescing and routing again.
const KEPT_PLANS: usize = 4;

/// One kept plan and its key.
type Kept = (PlanKey, TensorPlan);

/// [`TensorPlan::for_device`] of `key`, from this thread's last [`KEPT_PLANS`] plans when one
/// has the same key.
fn kept_plan(key: PlanKey) -> Result<TensorPlan> {
    use std::cell::RefCell;
    thread_local! {
        static KEPT: RefCell<(usize, [Option<Kept>; KEPT_PLANS])> =
            const { RefCell::new((0, [const { None }; KEPT_PLANS])) };
    }
    let found = KEPT.with_borrow(|(_, kept)| {
        kept.iter()
            .flatten()
            .find(|(k, _)| *k == key)
            .map(|(_, plan)| plan.clone())
    });
    if let Some(plan) = found {
        return Ok(plan);
    }
    let (dtype, src, dst, offsets, device) = key;
    let plan = TensorPlan::for_device(dtype, src, dst, offsets, &device)?;
    KEPT.with_borrow_mut(|(next, kept)| {
        kept[*next] = Some((key, plan.clone()));
        *next = (*next + 1) % KEPT_PLANS;
    });
    Ok(plan)
}

/// Launch a non-empty tensor plan, coordinate 0 of each side at its address: on the copy engine
/// when its route between devices says so (the coalesced run, or rows at their pitches, from
/// element 0), else on its family's kernel.
fn launch(
    plan: &TensorPlan,
    (src_ctx, src): (&Arc<cudarc::driver::CudaContext>, u64),
    (dst_ctx, dst): (&Arc<cudarc::driver::CudaContext>, u64),
    stream: &Arc<CudaStream>,
) -> Result<()> {
    match &plan.peer {
        Some(route) if route.copy_engine() => {
            let e = plan.dtype.size_bytes() as u64;
            let span = |addr, l: &crate::Layout| -> Result<crate::launch::Span> {
                Ok(crate::launch::Span {
                    addr,
                    bytes: l.cosize()? as u64 * e,
                })
            };
            let (s, d) = (span(src, &plan.src)?, span(dst, &plan.dst)?);
            crate::launch::peer_memcpy(route, (src_ctx, s), (dst_ctx, d), stream)
        }
        _ => crate::launch::tensor(plan, src, dst, stream),
    }
}

/// Copy `src` into `dst`: views of any rank (1 to 6) and any layouts of equal shape — a
/// transpose, a permute, NCHW -> NHWC, a batched strided slice. Returns the plan it ran.
///
/// `src` and `dst` may be on two devices of one host, `stream` on either (as for
/// [`copy`](crate::copy)): the copy engine for a copy that is one run or rows at a pitch, the
/// plan's kernel reading or writing the other device's memory for any other layout.
///
/// ```no_run
/// # fn main() -> Result<(), cute_copy::Error> {
/// use cute_copy::{DeviceTensor, Layout};
/// let stream = cute_copy::stream(0)?;
/// let x = DeviceTensor::<half::f16>::zeros(&stream, Layout::row_major(&[8, 32, 4096, 128])?)?;
/// let mut y = DeviceTensor::<half::f16>::zeros(&stream, Layout::row_major(&[8, 4096, 32, 128])?)?;
/// // y = x.permute(0, 2, 1, 3).contiguous()
/// let plan = cute_copy::copy_tensor(&x.view().permute(&[0, 2, 1, 3])?, &mut y.view_mut(), &stream)?;
/// println!("{plan}");
/// # Ok(()) }
/// ```
pub fn copy_tensor<T: Element>(
    src: &TensorView<'_, T>,
    dst: &mut TensorViewMut<'_, T>,
    stream: &Arc<CudaStream>,
) -> Result<TensorPlan> {
    let plan = plan_on(src, dst, stream.context())?;
    if plan.src.size() == 0 {
        return Ok(plan);
    }
    if plan.peer.is_none() {
        check_context("source", src.context(), stream)?;
        check_context("destination", dst.context(), stream)?;
        let s = src.pin(stream);
        let d = dst.pin(stream);
        crate::launch::tensor(&plan, s.addr, d.addr, stream)?;
        return Ok(plan);
    }
    // Between devices: the pins order both buffers' own streams around the launch.
    let (src_ctx, dst_ctx) = (src.context().clone(), dst.context().clone());
    let s = src.pin_on(stream)?;
    let d = dst.pin_on(stream)?;
    launch(&plan, (&src_ctx, s.addr), (&dst_ctx, d.addr), stream)?;
    Ok(plan)
}

/// [`copy_tensor`] for run-time-typed views.
pub fn copy_tensor_raw(
    src: &RawTensor<'_>,
    dst: &mut RawTensor<'_>,
    stream: &Arc<CudaStream>,
) -> Result<TensorPlan> {
    if src.dtype() != dst.dtype() {
        return Err(Error::DTypeMismatch {
            src: src.dtype(),
            dst: dst.dtype(),
        });
    }
    let e = src.dtype().size_bytes();
    let mut plan = plan_places(
        src.dtype(),
        (src.place(), src.ptr()),
        (dst.place(), dst.ptr()),
        e,
        &DeviceInfo::of(stream.context())?,
    )?;
    crate::peer::route_tensor(&mut plan, src.context(), dst.context(), stream.context())?;
    if plan.src.size() == 0 {
        return Ok(plan);
    }
    if plan.peer.is_none() {
        check_context("source", src.context(), stream)?;
        check_context("destination", dst.context(), stream)?;
    }
    // Raw memory of another device: the caller orders it (the constructors' contract).
    let at = |t: &RawTensor| t.ptr() + (t.offset() * e) as u64;
    let (s, d) = ((src.context(), at(src)), (dst.context(), at(dst)));
    launch(&plan, s, d, stream)?;
    Ok(plan)
}

/// Plan a converting copy of `src` into `dst` (equal shapes, any layouts, any supported pair of
/// element types). Nothing is launched.
pub fn plan_convert<S: Element, D: Element>(
    src: &TensorView<'_, S>,
    dst: &TensorViewMut<'_, D>,
    convert: &Convert,
) -> Result<ConvertPlan> {
    let (s, d) = (src.place(), dst.place());
    s.check()?;
    d.check()?;
    ConvertPlan::new(S::DTYPE, D::DTYPE, s.layout, d.layout, convert)
}

/// Copy `src` into `dst` converting every element to the destination's type, and scaling or
/// normalizing it per channel as `convert` says: views of any rank and layouts of equal shape,
/// so a transpose, permute, crop or strided slice converts in the same launch. Returns the plan
/// it ran; [`crate::ConvertRule`] says how each pair rounds.
///
/// ```no_run
/// # fn main() -> Result<(), cute_copy::Error> {
/// use cute_copy::{Convert, DeviceTensor, Layout};
/// let stream = cute_copy::stream(0)?;
/// // u8 NHWC frames -> f32 NCHW, ImageNet-normalized, in one launch
/// let x = DeviceTensor::<u8>::zeros(&stream, Layout::row_major(&[64, 224, 224, 3])?)?;
/// let mut y = DeviceTensor::<f32>::zeros(&stream, Layout::row_major(&[64, 3, 224, 224])?)?;
/// let norm = Convert::new().normalize(1, &[123.675, 116.28, 103.53], &[58.395, 57.12, 57.375]);
/// let plan = cute_copy::convert_tensor(&x.view().permute(&[0, 3, 1, 2])?, &mut y.view_mut(), &norm, &stream)?;
/// println!("{plan}");
/// # Ok(()) }
/// ```
pub fn convert_tensor<S: Element, D: Element>(
    src: &TensorView<'_, S>,
    dst: &mut TensorViewMut<'_, D>,
    convert: &Convert,
    stream: &Arc<CudaStream>,
) -> Result<ConvertPlan> {
    let plan = plan_convert(src, dst, convert)?;
    if plan.src.size() == 0 {
        return Ok(plan);
    }
    check_context("source", src.context(), stream)?;
    check_context("destination", dst.context(), stream)?;
    let s = src.pin(stream);
    let d = dst.pin(stream);
    crate::launch::convert(&plan, s.addr, d.addr, None, stream)?;
    Ok(plan)
}

/// [`convert_tensor`] for run-time-typed views (each side its own dtype).
pub fn convert_tensor_raw(
    src: &RawTensor<'_>,
    dst: &mut RawTensor<'_>,
    convert: &Convert,
    stream: &Arc<CudaStream>,
) -> Result<ConvertPlan> {
    let (s, d) = (src.place(), dst.place());
    s.check()?;
    d.check()?;
    let plan = ConvertPlan::new(src.dtype(), dst.dtype(), s.layout, d.layout, convert)?;
    if plan.src.size() == 0 {
        return Ok(plan);
    }
    check_context("source", src.context(), stream)?;
    check_context("destination", dst.context(), stream)?;
    let at = |t: &RawTensor| t.ptr() + (t.offset() * t.dtype().size_bytes()) as u64;
    crate::launch::convert(&plan, at(src), at(dst), None, stream)?;
    Ok(plan)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::layout::Layout;
    use crate::plan::TensorRoute;
    use crate::transpose::*;
    use crate::Atom;

    fn plan(dtype: DType, src: Layout, dst: Layout) -> TensorPlan {
        TensorPlan::new(dtype, src, dst, (0, 0)).unwrap()
    }
    fn rm(s: &[usize]) -> Layout {
        Layout::row_major(s).unwrap()
    }

    #[test]
    fn kept_plans_are_the_plans_of_their_keys() {
        let h200 = DeviceInfo::new(60 << 20, 132, (9, 0));
        let small = DeviceInfo::new(4 << 20, 16, (8, 0));
        let t = rm(&[64, 64]);
        let keys = [
            (DType::F32, t, t, (0, 0), h200),
            (DType::F32, t, t, (4, 0), h200),
            (DType::F16, t, t, (0, 0), h200),
            (
                DType::F32,
                rm(&[64, 64]).permute(&[1, 0]).unwrap(),
                t,
                (0, 0),
                h200,
            ),
            (DType::F32, t, t, (0, 0), small),
            (DType::U8, rm(&[3, 5, 7]), rm(&[3, 5, 7]), (1, 2), h200),
        ];
        // More keys than are kept, twice round: every answer is the key's own plan.
        for _ in 0..2 {
            for &k in &keys {
                let (dtype, src, dst, offsets, device) = k;
                let fresh = TensorPlan::for_device(dtype, src, dst, offsets, &device).unwrap();
                assert_eq!(kept_plan(k).unwrap(), fresh);
                assert_eq!(kept_plan(k).unwrap(), fresh);
            }
        }
        // A refusal is not kept: it stays a refusal.
        let bad = (DType::F32, t, rm(&[64, 63]), (0, 0), h200);
        assert!(kept_plan(bad).is_err());
        assert!(kept_plan(bad).is_err());
    }

    #[test]
    fn swizzle_is_cutes_xor_of_the_row_bits_into_the_chunk_bits() {
        // Swizzle<3,2,6> on (64-column f32 rows): chunk (bits 2..5) ^= row / 4 (bits 8..11)
        assert_eq!(swizzle(0, (3, 2, 6)), 0);
        assert_eq!(swizzle(4 * 64, (3, 2, 6)), 4 * 64 + 4); // row 4, col 0 -> chunk 1
        assert_eq!(swizzle(4 * 64 + 5, (3, 2, 6)), 4 * 64 + 1); // row 4, col 5 (chunk 1) -> chunk 0
        for o in 0..8192 {
            assert_eq!(
                swizzle(swizzle(o, (3, 2, 6)), (3, 2, 6)),
                o,
                "an involution"
            );
        }
    }

    #[test]
    fn transpose_tiles_find_their_coordinates_by_a_host_divmod_below_2_31_tiles() {
        let src = rm(&[64, 256, 128]).permute(&[0, 2, 1]).unwrap();
        let p = plan(DType::U8, src, rm(&[64, 128, 256]));
        assert!(matches!(p.route, TensorRoute::Transpose(_)), "{p}");
        assert!(p.to_string().contains("cutlass::FastDivmod"), "{p}");
        // 2^31 batches of a 256 x 128 transpose: 2^32 tiles, past FastDivmod's 31-bit dividends
        let b = 1usize << 31;
        let src = rm(&[b, 256, 128]).permute(&[0, 2, 1]).unwrap();
        let p = plan(DType::U8, src, rm(&[b, 128, 256]));
        let TensorRoute::Transpose(t) = &p.route else {
            panic!("{p}")
        };
        assert!(t.tiles.2 > i32::MAX as usize, "{p}");
        let text = p.to_string();
        assert!(
            !text.contains("FastDivmod") && text.contains("divides its tile index in 64 bits"),
            "{p}"
        );
    }

    #[test]
    fn odd_extents_and_offsets_plan_realigned_vectors_never_elements() {
        // f32 10000 x 7001: source rows of 28004 bytes, destination rows of 40000
        let p = plan(
            DType::F32,
            rm(&[10000, 7001]).permute(&[1, 0]).unwrap(),
            rm(&[7001, 10000]),
        );
        let TensorRoute::Transpose(t) = &p.route else {
            panic!("{p}")
        };
        assert_eq!(
            (t.kind, t.load, t.store),
            (TileKind::Transpose, Access::Realigned, Access::Vector),
            "{p}"
        );
        assert!(p.to_string().contains("realigned 16-byte vectors"), "{p}");
        // every width, odd extents and offsets on both sides: vectors on both sides, realigned
        for (w, dtype) in [
            (1, DType::U8),
            (2, DType::F16),
            (4, DType::F32),
            (8, DType::F64),
        ] {
            for (rows, cols, off) in [(9999, 8191, (3, 5)), (577, 1000, (0, 7)), (5, 3, (1, 1))] {
                let offsets = (off.0 * w, off.1 * w);
                let src = rm(&[rows, cols]).permute(&[1, 0]).unwrap();
                let p = TensorPlan::new(dtype, src, rm(&[cols, rows]), offsets).unwrap();
                let TensorRoute::Transpose(t) = &p.route else {
                    panic!("{p}")
                };
                assert!(t.load.is_vectorized() && t.store.is_vectorized(), "{p}");
            }
        }
        // a crop of an NCHW batch to NHWC: the narrow tile in registers with realigned loads,
        // 128 threads a tile (120 column blocks of a 1920-byte row, one each), two tiles a block
        let storage = rm(&[8, 3, 1088, 1928]);
        let crop = Layout::new(&[8, 3, 1080, 1920], storage.stride()).unwrap();
        let p = TensorPlan::new(
            DType::U8,
            crop.permute(&[0, 2, 3, 1]).unwrap(),
            rm(&[8, 1080, 1920, 3]),
            (3 * 1928 + 5, 0),
        )
        .unwrap();
        let TensorRoute::Transpose(t) = &p.route else {
            panic!("{p}")
        };
        assert_eq!(
            (t.kind, t.stage, t.load, t.store),
            (
                TileKind::Narrow,
                TileStage::Registers,
                Access::Realigned,
                Access::Vector
            ),
            "{p}"
        );
        assert_eq!((t.tile, t.group_threads()), ((1920, 3), 128), "{p}");
        let text = p.to_string();
        assert!(text.contains("funnel-shifts the pair"), "{p}");
        assert!(text.contains("128 threads move one"), "{p}");
    }

    #[test]
    fn realigned_square_tiles_are_what_sixteen_aligned_vectors_hold_at_any_misalignment() {
        for dtype in [DType::U8, DType::F16, DType::F32, DType::F64] {
            let w = dtype.size_bytes();
            let v = 16 / w;
            // odd pitches on the source (realigned loads) and on both sides; aligned for reference
            for (rows, cols) in [(10000, 7001), (9001, 5003), (4096, 4096), (577, 96)] {
                let src = rm(&[rows, cols]).permute(&[1, 0]).unwrap();
                let p = plan(dtype, src, rm(&[cols, rows]));
                let TensorRoute::Transpose(t) = &p.route else {
                    panic!("{p}")
                };
                if t.kind != TileKind::Transpose {
                    continue;
                }
                let (stage_cols, stage_rows) = t.stage_extent();
                assert_eq!(stage_rows, t.tile.1, "{p}");
                if t.load == Access::Realigned {
                    // one vector narrower than the stage ...
                    assert_eq!(t.tile.0, stage_cols - v, "{p}");
                    // ... so that a row's bytes fit in the 16 aligned vectors under it wherever
                    // it starts on the 16-byte grid
                    for m in (0..16).step_by(w) {
                        assert!(m + t.tile.0 * w <= 16 * 16, "{dtype} m={m}: {p}");
                    }
                    assert!(
                        p.to_string().contains("one vector narrower than the stage"),
                        "{p}"
                    );
                } else {
                    assert_eq!(t.tile.0, stage_cols, "{p}");
                }
                // the stores cover exactly the tile's columns
                let mut cols_stored = std::collections::BTreeSet::new();
                for th in 0..t.config.threads {
                    for (_, c0, _, nc) in t.thread_work(dtype, th).unwrap().stores {
                        cols_stored.extend(c0..c0 + nc);
                    }
                }
                assert_eq!(cols_stored.len(), t.tile.0, "{p}");
                assert_eq!(cols_stored.last(), Some(&(t.tile.0 - 1)), "{p}");
            }
        }
    }

    #[test]
    fn small_items_share_a_tile_and_head_dims_fill_a_rows_tile_in_registers() {
        let p = plan(
            DType::F32,
            rm(&[131072, 3, 5]).permute(&[0, 2, 1]).unwrap(),
            rm(&[131072, 5, 3]),
        );
        let TensorRoute::Transpose(t) = &p.route else {
            panic!("{p}")
        };
        assert_eq!(t.kind, TileKind::Items, "{p}");
        let per_tile = crate::transpose::ITEM_TILE_BYTES / 60; // items of 15 f32
        assert_eq!(t.tile, (per_tile, 15), "{p}");
        assert_eq!(t.tiles.2, 131072usize.div_ceil(per_tile), "{p}");
        assert_eq!(
            (t.load, t.store),
            (Access::Realigned, Access::Realigned),
            "{p}"
        );
        // items that do not follow each other (a crop of each), or a broadcast item, are not
        let padded = Layout::new(&[1000, 3, 5], &[16, 5, 1]).unwrap();
        let p = plan(
            DType::F32,
            padded.permute(&[0, 2, 1]).unwrap(),
            rm(&[1000, 5, 3]),
        );
        assert!(
            !matches!(&p.route, TensorRoute::Transpose(t) if t.kind == TileKind::Items),
            "{p}"
        );
        let bcast = Layout::new(&[1000, 3, 5], &[15, 0, 1]).unwrap();
        let p = plan(
            DType::F32,
            bcast.permute(&[0, 2, 1]).unwrap(),
            rm(&[1000, 5, 3]),
        );
        assert!(
            !matches!(&p.route, TensorRoute::Transpose(t) if t.kind == TileKind::Items),
            "{p}"
        );
        // items past ITEM_MAX_BYTES take the transposing tile
        let p = plan(
            DType::F32,
            rm(&[64, 64, 65]).permute(&[0, 2, 1]).unwrap(),
            rm(&[64, 65, 64]),
        );
        assert!(
            matches!(&p.route, TensorRoute::Transpose(t) if t.kind == TileKind::Transpose),
            "{p}"
        );

        for d in [64, 80, 96, 112, 192] {
            let x = rm(&[8, 16, 1025, d]);
            let p = plan(
                DType::BF16,
                x.permute(&[0, 2, 1, 3]).unwrap(),
                rm(&[8, 1025, 16, d]),
            );
            let TensorRoute::Transpose(t) = &p.route else {
                panic!("{p}")
            };
            assert_eq!(
                (t.kind, t.stage),
                (TileKind::Rows, TileStage::Registers),
                "{p}"
            );
            assert_eq!(t.tile.0, d, "a tile row is one head: {p}");
            // every thread moves a vector: the tile holds at least one vector per thread
            assert!(t.tile.0 * t.tile.1 * 2 / 16 >= t.config.threads, "{p}");
            let work = t.thread_work(DType::BF16, 0).unwrap();
            assert!(
                work.loads.iter().all(|&(r, c)| r < t.tile.1 && c < d),
                "{p}"
            );
        }
    }

    #[test]
    fn transposes_route_to_the_swizzled_tile_and_read_it_without_bank_conflicts() {
        for dtype in [DType::U8, DType::F16, DType::F32, DType::F64] {
            let src = rm(&[1000, 1000]).permute(&[1, 0]).unwrap();
            let p = plan(dtype, src, rm(&[1000, 1000]));
            let TensorRoute::Transpose(t) = p.route else {
                panic!("{p}")
            };
            assert_eq!(t.kind, TileKind::Transpose);
            assert_eq!((t.mode_a, t.mode_b), (0, 1));
            let w = dtype.size_bytes();
            // 16-byte vectors on both sides when the rows are whole vectors, realigned ones else
            let want = if (1000 * w) % 16 == 0 {
                Access::Vector
            } else {
                Access::Realigned
            };
            assert_eq!((t.load, t.store), (want, want), "{p}");
            // conflict-free: one wavefront per 128 bytes (two for a warp's 8-byte elements)
            assert_eq!(
                t.transposed_read_ways(dtype),
                Some((w / 4).max(1)),
                "{dtype}"
            );
            // every tile element has one place in shared memory
            let (cols, rows) = t.stage_extent();
            assert!(t.tile.0 <= cols && t.tile.1 <= rows, "{p}");
            let mut seen = vec![false; cols * rows];
            for r in 0..t.tile.1 {
                for c in 0..t.tile.0 {
                    let o = t.smem_offset(r, c);
                    assert!(!seen[o]);
                    seen[o] = true;
                }
            }
            // the threads' stores cover the tile once
            let mut cover = vec![0u8; t.tile.0 * t.tile.1];
            for th in 0..t.config.threads {
                for (r0, c0, nr, nc) in t.thread_work(dtype, th).unwrap().stores {
                    for r in r0..r0 + nr {
                        for c in c0..c0 + nc {
                            cover[r * t.tile.0 + c] += 1;
                        }
                    }
                }
            }
            assert!(cover.iter().all(|&x| x == 1), "{dtype}");
        }
        // without a swizzle the same read would conflict: the swizzle is what makes it free
        let src = rm(&[1024, 1024]).permute(&[1, 0]).unwrap();
        let TensorRoute::Transpose(mut t) = plan(DType::F32, src, rm(&[1024, 1024])).route else {
            panic!()
        };
        t.swizzle = None;
        assert!(t.transposed_read_ways(DType::F32).unwrap() >= 8);
    }

    #[test]
    fn head_permutes_nchw_and_batched_views_take_their_routes() {
        let x = rm(&[8, 32, 4096, 128]);
        let p = plan(
            DType::F16,
            x.permute(&[0, 2, 1, 3]).unwrap(),
            rm(&[8, 4096, 32, 128]),
        );
        let TensorRoute::Transpose(t) = p.route else {
            panic!("{p}")
        };
        assert_eq!(t.kind, TileKind::Rows);
        assert_eq!(
            p.coalesced.0.shape()[t.mode_b],
            4096,
            "the row mode fills the tile: {p}"
        );
        assert_eq!(t.stage, TileStage::Registers, "{p}");
        assert_eq!((t.load, t.store), (Access::Vector, Access::Vector));

        let nchw = rm(&[64, 3, 224, 224]);
        let p = plan(
            DType::F32,
            nchw.permute(&[0, 2, 3, 1]).unwrap(),
            rm(&[64, 224, 224, 3]),
        );
        let TensorRoute::Transpose(t) = p.route else {
            panic!("{p}")
        };
        assert_eq!(t.kind, TileKind::Narrow);
        assert_eq!(
            t.stage,
            TileStage::Registers,
            "C = 3 with 16-byte planes: {p}"
        );
        assert_eq!(t.tile.1, 3);
        assert_eq!((t.load, t.store), (Access::Vector, Access::Vector), "{p}");
        // two 4-element column blocks per thread: at most 2048 columns, balanced over 50176
        assert_eq!(t.tiles.0, 25, "balanced tiles along HW: {p}");
        assert_eq!(t.tile.0, 2008, "{p}");

        let nhwc = rm(&[64, 224, 224, 3]);
        let p = plan(
            DType::F32,
            nhwc.permute(&[0, 3, 1, 2]).unwrap(),
            rm(&[64, 3, 224, 224]),
        );
        let TensorRoute::Transpose(t) = p.route else {
            panic!("{p}")
        };
        assert_eq!(t.kind, TileKind::NarrowLoad, "{p}");
        assert_eq!(t.stage, TileStage::Registers, "{p}");
        assert_eq!(t.tile.0, 3);
        assert!(
            t.tile.0 * t.tile.1 * 4 <= t.config.smem_bytes
                && (t.load, t.store) == (Access::Vector, Access::Vector),
            "{p}"
        );

        let b = Layout::new(&[64, 1024, 1023], &[1 << 20, 1024, 1]).unwrap();
        let p = plan(DType::F16, b, rm(&[64, 1024, 1023]));
        let TensorRoute::Matrix(m) = &p.route else {
            panic!("{p}")
        };
        assert_eq!(
            (m.src.rows, m.src.cols, m.src.ld, m.dst.ld),
            (65536, 1023, 1024, 1023)
        );
        assert_eq!(m.atom, Atom::Realign128);

        let p = plan(
            DType::U8,
            Layout::new(&[6, 33, 37], &[1500, 40, 1]).unwrap(),
            rm(&[6, 33, 37]),
        );
        assert!(matches!(p.route, TensorRoute::Rows { items: 6, .. }), "{p}");
        // a packed copy of any rank is one run
        let p = plan(DType::U8, rm(&[3, 4, 5, 6]), rm(&[3, 4, 5, 6]));
        assert_eq!(p.coalesced.0.to_string(), "(360):(1)");
    }

    #[test]
    fn narrow_tiles_stage_in_registers_for_two_to_eight_rows_with_16_byte_accesses() {
        for dtype in [DType::U8, DType::F16, DType::F32, DType::F64] {
            let (w, v) = (dtype.size_bytes(), 16 / dtype.size_bytes());
            for c in 2..=12 {
                for hw in [64 * v, 64 * v + 1, 9999] {
                    let nchw = rm(&[2, c, hw]);
                    let nhwc = rm(&[2, hw, c]);
                    for (src, dst) in [
                        (nchw.permute(&[0, 2, 1]).unwrap(), nhwc),
                        (nhwc.permute(&[0, 2, 1]).unwrap(), nchw),
                    ] {
                        let p = plan(dtype, src, dst);
                        let TensorRoute::Transpose(t) = p.route.clone() else {
                            panic!("{p}")
                        };
                        if c * w >= NARROW_MAX_BYTES {
                            continue;
                        }
                        // registers need the run on the 16-byte grid (every run of the batch
                        // on a vector); the rows may be realigned
                        let run_aligned = (hw * c) % v == 0;
                        let regs = c <= NARROW_REGISTER_ROWS && run_aligned;
                        assert_eq!(t.stage == TileStage::Registers, regs, "{p}");
                        if !regs {
                            continue;
                        }
                        // every element of a whole tile is loaded once and stored once
                        let (rows, cols) = (t.tile.1, t.tile.0);
                        let (mut ld, mut st) = (vec![0u8; rows * cols], vec![0u8; rows * cols]);
                        for th in 0..t.config.threads {
                            let work = t.thread_work(dtype, th).unwrap();
                            for (r, c0) in work.loads {
                                (c0..c0 + v).for_each(|c| ld[r * cols + c] += 1);
                            }
                            for (r0, c0, nr, nc) in work.stores {
                                if nr == 1 {
                                    // v consecutive run elements from (r0, c0), rows fastest
                                    let f0 = c0 * rows + r0;
                                    (f0..f0 + nc).for_each(|f| st[f] += 1);
                                } else {
                                    (r0..r0 + nr).for_each(|r| st[r * cols + c0] += 1);
                                }
                            }
                        }
                        // realigned stores: a warp's last block is loaded again by the next
                        // warp's first lane (at most twice, never missed)
                        if t.kind == TileKind::NarrowLoad && t.store == Access::Realigned {
                            assert!(ld.iter().all(|&x| x == 1 || x == 2), "loads of {p}");
                        } else {
                            assert!(ld.iter().all(|&x| x == 1), "loads of {p}");
                        }
                        assert!(st.iter().all(|&x| x == 1), "stores of {p}");
                        assert!(p.to_string().contains("registers are the stage"), "{p}");
                        // the exchange's bank conflicts, as the model counts them: none under
                        // the per-R swizzle; 3, 2, 3, 7 for R = 3, 5, 6, 7 under the fixed
                        // Swizzle<3,0,3> shipped before
                        let fixed = match c {
                            2 | 4 | 8 => 1,
                            5 => 2,
                            3 | 6 => 3,
                            _ => 7,
                        };
                        if t.kind == TileKind::Narrow {
                            assert_eq!(t.exchange_ways(), Some(1), "{p}");
                            assert_eq!(t.exchange_ways_under((3, 0, 3)), Some(fixed), "{p}");
                            let b = c.trailing_zeros().min(3);
                            assert_eq!(t.exchange_swizzle(), Some((b, 0, 3)), "{p}");
                        } else {
                            assert_eq!(t.exchange_ways(), None, "{p}");
                            assert_eq!(t.exchange_swizzle(), None, "{p}");
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn bad_tensor_copies_are_typed_errors() {
        let e = TensorPlan::new(DType::F32, rm(&[4, 5]), rm(&[5, 4]), (0, 0));
        assert!(matches!(e, Err(Error::LayoutMismatch { .. })));
        let e = TensorPlan::new(
            DType::F32,
            rm(&[4, 5]),
            Layout::new(&[4, 5], &[0, 1]).unwrap(),
            (0, 0),
        );
        assert!(matches!(e, Err(Error::DestinationNotInjective(_))));
        // a broadcast source is fine
        TensorPlan::new(
            DType::F32,
            Layout::new(&[4, 5], &[0, 1]).unwrap(),
            rm(&[4, 5]),
            (0, 0),
        )
        .unwrap();
        // misaligned offsets realign the 16-byte accesses, never an error
        let src = rm(&[64, 64]).permute(&[1, 0]).unwrap();
        let TensorRoute::Transpose(t) = TensorPlan::new(DType::F32, src, rm(&[64, 64]), (4, 8))
            .unwrap()
            .route
        else {
            panic!()
        };
        assert_eq!((t.load, t.store), (Access::Realigned, Access::Realigned));
    }
}
