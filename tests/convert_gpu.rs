//! Converting copies on the GPU against the host model (`reference::convert_bits`): every supported
//! pair of the 14 dtypes on odd rows at offsets and on transposes, scales and per-channel
//! normalizations (channel in a mode of its own, folded into a longer mode, along the fastest
//! mode, more channels than travel by value), random layouts of rank 2 to 5, empty and refused
//! copies. Every case poisons the whole destination allocation (the complement of the expected
//! value where the copy writes, random canaries elsewhere) and compares all of it; NaNs compare as
//! NaNs (their payload after a conversion is not part of the contract).

mod common;

use std::sync::Arc;

use common::tensor::{random_side, Side};
use common::{gpu, rng};
use cute_copy::cudarc::driver::CudaStream;
use cute_copy::reference::{
    convert_bits, expected_tensor_convert, for_each_pair, random_elements, same_value,
};
use cute_copy::{
    conversion, Convert, ConvertPlan, ConvertRoute, DType, DeviceTensor, Element, Error, Layout,
};
use float8::{F8E4M3, F8E5M2};
use half::{bf16, f16};
use rand::Rng;

/// Half random bits (NaNs, infinities, extremes), half moderate values of every magnitude from
/// 2^-14 to 2^14 (rounded into `T` by the host model), so that both the saturating and the
/// rounding paths are hit.
fn test_data<T: Element>(n: usize, seed: u64) -> Vec<T> {
    let bits: Vec<u64> = random_elements(n, seed);
    bits.iter()
        .enumerate()
        .map(|(i, &b)| {
            if i % 2 == 0 {
                T::from_bits(b)
            } else {
                let unit = (b >> 11) as f64 / (1u64 << 53) as f64 * 2.0 - 1.0;
                let v = unit * 2f64.powi((b % 29) as i32 - 14);
                T::from_bits(convert_bits(DType::F64, T::DTYPE, v.to_bits(), None))
            }
        })
        .collect()
}

/// Convert `src` into `dst` on the GPU and compare the whole destination allocation.
fn check<S: Element, D: Element>(
    stream: &Arc<CudaStream>,
    src: Side,
    dst: Side,
    convert: &Convert,
    r: &mut impl Rng,
) -> ConvertPlan {
    let host: Vec<S> = test_data(src.alloc, r.random());
    let canaries: Vec<D> = random_elements(dst.alloc, r.random());
    let want = expected_tensor_convert(
        &host,
        (src.offset, &src.layout),
        &canaries,
        (dst.offset, &dst.layout),
        convert,
    )
    .unwrap();
    // poison: the complement of the expected value wherever the copy writes
    let mut before = canaries.clone();
    for_each_pair(&src.layout, &dst.layout, |_, d| {
        let i = dst.offset + d;
        before[i] = D::from_bits(!want[i].to_bits());
    });
    let s_all = Layout::new(&[src.alloc], &[1]).unwrap();
    let d_all = Layout::new(&[dst.alloc], &[1]).unwrap();
    let s = DeviceTensor::from_host(stream, s_all, &host).unwrap();
    let mut d = DeviceTensor::from_host(stream, d_all, &before).unwrap();
    let plan = {
        let sv = s.view_at(src.offset, src.layout).unwrap();
        let mut dv = d.view_at_mut(dst.offset, dst.layout).unwrap();
        cute_copy::convert_tensor(&sv, &mut dv, convert, stream)
            .unwrap_or_else(|e| panic!("{} -> {}: {src:?} -> {dst:?}: {e}", S::DTYPE, D::DTYPE))
    };
    let got = d.to_host(stream).unwrap();
    let bad: Vec<usize> = (0..got.len())
        .filter(|&i| !same_value(D::DTYPE, got[i].to_bits(), want[i].to_bits()))
        .collect();
    if let Some(&i) = bad.first() {
        panic!(
            "{} wrong elements of {} -> {}, first at {i}: got {:#x}, want {:#x}: {src:?} -> {dst:?}\n{plan}",
            bad.len(),
            S::DTYPE,
            D::DTYPE,
            got[i].to_bits(),
            want[i].to_bits()
        );
    }
    plan
}

/// Calls `$f::<S, D>($args)` for the run-time dtypes `$s`, `$d`.
macro_rules! with_pair {
    ($s:expr, $d:expr, $f:ident ( $($arg:expr),* )) => {
        with_pair!(@src $s, $d, $f ($($arg),*))
    };
    (@src $s:expr, $d:expr, $f:ident ( $($arg:expr),* )) => {
        match $s {
            DType::F32 => with_pair!(@dst f32, $d, $f ($($arg),*)),
            DType::F64 => with_pair!(@dst f64, $d, $f ($($arg),*)),
            DType::F16 => with_pair!(@dst f16, $d, $f ($($arg),*)),
            DType::BF16 => with_pair!(@dst bf16, $d, $f ($($arg),*)),
            DType::U8 => with_pair!(@dst u8, $d, $f ($($arg),*)),
            DType::I8 => with_pair!(@dst i8, $d, $f ($($arg),*)),
            DType::U16 => with_pair!(@dst u16, $d, $f ($($arg),*)),
            DType::I16 => with_pair!(@dst i16, $d, $f ($($arg),*)),
            DType::U32 => with_pair!(@dst u32, $d, $f ($($arg),*)),
            DType::I32 => with_pair!(@dst i32, $d, $f ($($arg),*)),
            DType::U64 => with_pair!(@dst u64, $d, $f ($($arg),*)),
            DType::I64 => with_pair!(@dst i64, $d, $f ($($arg),*)),
            DType::F8E4M3 => with_pair!(@dst F8E4M3, $d, $f ($($arg),*)),
            DType::F8E5M2 => with_pair!(@dst F8E5M2, $d, $f ($($arg),*)),
        }
    };
    (@dst $S:ty, $d:expr, $f:ident ( $($arg:expr),* )) => {
        match $d {
            DType::F32 => $f::<$S, f32>($($arg),*),
            DType::F64 => $f::<$S, f64>($($arg),*),
            DType::F16 => $f::<$S, f16>($($arg),*),
            DType::BF16 => $f::<$S, bf16>($($arg),*),
            DType::U8 => $f::<$S, u8>($($arg),*),
            DType::I8 => $f::<$S, i8>($($arg),*),
            DType::U16 => $f::<$S, u16>($($arg),*),
            DType::I16 => $f::<$S, i16>($($arg),*),
            DType::U32 => $f::<$S, u32>($($arg),*),
            DType::I32 => $f::<$S, i32>($($arg),*),
            DType::U64 => $f::<$S, u64>($($arg),*),
            DType::I64 => $f::<$S, i64>($($arg),*),
            DType::F8E4M3 => $f::<$S, F8E4M3>($($arg),*),
            DType::F8E5M2 => $f::<$S, F8E5M2>($($arg),*),
        }
    };
}

fn rm(s: &[usize]) -> Layout {
    Layout::row_major(s).unwrap()
}

/// Odd rows at odd offsets (elementwise, realigned loads and phased stores), a transpose, and a
/// few elements of rank 1, for one pair.
fn pair_cases<S: Element, D: Element>(stream: &Arc<CudaStream>, r: &mut rand::rngs::StdRng) {
    let plain = Convert::new();
    // 37 x 101 rows: source ld 105 at offset 3, destination ld 103 at offset 5
    let src = Side::placed(3, Layout::new(&[37, 101], &[105, 1]).unwrap(), 4);
    let dst = Side::placed(5, Layout::new(&[37, 101], &[103, 1]).unwrap(), 6);
    let p = check::<S, D>(stream, src, dst, &plain, r);
    assert!(matches!(p.route, ConvertRoute::Elementwise { .. }), "{p}");
    // a 45 x 77 transpose
    let src = Side::placed(1, rm(&[77, 45]).permute(&[1, 0]).unwrap(), 2);
    let dst = Side::placed(2, rm(&[45, 77]), 3);
    let p = check::<S, D>(stream, src, dst, &plain, r);
    assert!(matches!(p.route, ConvertRoute::Tile { .. }), "{p}");
    // 7 elements, and a scaled strided copy
    check::<S, D>(
        stream,
        Side::packed(rm(&[7])),
        Side::placed(1, rm(&[7]), 0),
        &plain,
        r,
    );
    let strided = Side::packed(Layout::new(&[50], &[3]).unwrap());
    check::<S, D>(
        stream,
        strided,
        Side::packed(rm(&[50])),
        &Convert::new().scale(0.75),
        r,
    );
}

/// A refused pair: a typed error, and nothing written.
fn refused<S: Element, D: Element>(stream: &Arc<CudaStream>) {
    let s = DeviceTensor::<S>::zeros(stream, rm(&[4, 8])).unwrap();
    let before: Vec<D> = random_elements(32, 5);
    let mut d = DeviceTensor::from_host(stream, rm(&[4, 8]), &before).unwrap();
    let e = cute_copy::convert_tensor(&s.view(), &mut d.view_mut(), &Convert::new(), stream);
    assert!(
        matches!(e, Err(Error::UnsupportedConversion { src, dst }) if src == S::DTYPE && dst == D::DTYPE),
        "{e:?}"
    );
    let after = d.to_host(stream).unwrap();
    assert!(after
        .iter()
        .zip(&before)
        .all(|(a, b)| a.to_bits() == b.to_bits()));
}

#[test]
fn every_supported_pair_converts_bit_exactly_on_odd_rows_and_transposes() {
    let Some(stream) = gpu() else { return };
    let mut r = rng(41);
    let (mut ran, mut refusals) = (0, 0);
    for s in DType::ALL {
        for d in DType::ALL {
            if conversion(s, d).is_ok() {
                with_pair!(s, d, pair_cases(&stream, &mut r));
                ran += 1;
            } else {
                with_pair!(s, d, refused(&stream));
                refusals += 1;
            }
        }
    }
    assert_eq!((ran, refusals), (196 - 12, 12));
}

#[test]
fn scales_and_per_channel_normalizations_match_the_host_model() {
    let Some(stream) = gpu() else { return };
    let mut r = rng(42);
    let imagenet =
        |mode| Convert::new().normalize(mode, &[123.675, 116.28, 103.53], &[58.395, 57.12, 57.375]);
    // u8 NHWC -> f32 NCHW normalized: the channel is the tile's load mode
    let nhwc = rm(&[2, 37, 41, 3]);
    let p = check::<u8, f32>(
        &stream,
        Side::placed(1, nhwc.permute(&[0, 3, 1, 2]).unwrap(), 3),
        Side::packed(rm(&[2, 3, 37, 41])),
        &imagenet(1),
        &mut r,
    );
    assert!(matches!(p.route, ConvertRoute::Tile { .. }), "{p}");
    // u8 NCHW cropped -> bf16 NHWC normalized (the crop's rows are strided)
    let storage = rm(&[2, 3, 40, 45]);
    let crop = Layout::new(&[2, 3, 33, 41], storage.stride()).unwrap();
    check::<u8, bf16>(
        &stream,
        Side::placed(3 * 45 + 2, crop.permute(&[0, 2, 3, 1]).unwrap(), 5),
        Side::packed(rm(&[2, 33, 41, 3])),
        &imagenet(3),
        &mut r,
    );
    // the same layout on both sides: NHWC normalized along the fastest mode, and NCHW with the
    // channel folded into one long mode
    check::<u8, f32>(
        &stream,
        Side::packed(nhwc),
        Side::placed(3, nhwc, 1),
        &imagenet(3),
        &mut r,
    );
    let nchw = rm(&[2, 3, 19, 23]);
    let p = check::<f16, f32>(
        &stream,
        Side::packed(nchw),
        Side::packed(nchw),
        &imagenet(1),
        &mut r,
    );
    assert_eq!(p.coalesced.0.rank(), 1, "{p}");
    // 20 channels: mean and mul in a device array
    let many = Convert::new().scale(0.5).normalize(
        1,
        &(0..20).map(|c| c as f32 * 0.25).collect::<Vec<_>>(),
        &(0..20).map(|c| 1.0 + c as f32).collect::<Vec<_>>(),
    );
    check::<f32, f16>(
        &stream,
        Side::packed(rm(&[5, 20, 33])),
        Side::packed(rm(&[5, 20, 33])),
        &many,
        &mut r,
    );
    // FP8 with a per-tensor scale, permuted (0, 2, 1, 3), and back
    let q = rm(&[2, 4, 33, 24]);
    check::<f16, F8E4M3>(
        &stream,
        Side::packed(q.permute(&[0, 2, 1, 3]).unwrap()),
        Side::packed(rm(&[2, 33, 4, 24])),
        &Convert::new().scale(448.0 / 3.0),
        &mut r,
    );
    check::<F8E5M2, f32>(
        &stream,
        Side::packed(q),
        Side::packed(q),
        &Convert::new().scale(1.0 / 64.0),
        &mut r,
    );
    // an f64 side computes the affine in f64
    check::<f64, bf16>(
        &stream,
        Side::packed(nchw),
        Side::packed(nchw),
        &imagenet(1),
        &mut r,
    );
}

#[test]
fn random_layouts_of_rank_2_to_5_convert_exactly() {
    let Some(stream) = gpu() else { return };
    let mut r = rng(43);
    let pairs = [
        (DType::F32, DType::BF16),
        (DType::U8, DType::F32),
        (DType::F16, DType::F8E5M2),
        (DType::I32, DType::I8),
        (DType::BF16, DType::F64),
        (DType::U16, DType::F16),
    ];
    fn one<S: Element, D: Element>(stream: &Arc<CudaStream>, r: &mut rand::rngs::StdRng) {
        let rank = r.random_range(2..=5);
        let shape: Vec<usize> = (0..rank).map(|_| r.random_range(1..=13)).collect();
        let (src, dst) = (random_side(&shape, r), random_side(&shape, r));
        let convert = if r.random_bool(0.3) {
            let m = r.random_range(0..rank);
            let n = shape[m];
            Convert::new().normalize(
                m,
                &vec![0.5; n],
                &(1..=n).map(|c| c as f32).collect::<Vec<_>>(),
            )
        } else {
            Convert::new()
        };
        check::<S, D>(stream, src, dst, &convert, r);
    }
    for i in 0..120 {
        let (s, d) = pairs[i % pairs.len()];
        with_pair!(s, d, one(&stream, &mut r));
    }
}

#[test]
fn elementwise_rows_on_the_16_byte_grid_and_off_it_convert_every_element() {
    let Some(stream) = gpu() else { return };
    let mut r = rng(45);
    // Destination rows that all start on the 16-byte grid launch without the phase chunk; the
    // same copies at a destination offset off the grid keep it. Every element is checked.
    let heads = rm(&[2, 4, 33, 128]).permute(&[0, 2, 1, 3]).unwrap();
    for dst_offset in [0, 16, 1, 5] {
        let p = check::<f16, F8E4M3>(
            &stream,
            Side::packed(heads),
            Side::placed(dst_offset, rm(&[2, 33, 4, 128]), 3),
            &Convert::new().scale(2.0),
            &mut r,
        );
        assert!(matches!(p.route, ConvertRoute::Elementwise { .. }), "{p}");
        // rows of 32 f32 (128 bytes) at a row pitch of 36 (144 bytes): on the grid at offset 0 and 4
        let src = Side::placed(3, rm(&[5, 7, 32]).permute(&[1, 0, 2]).unwrap(), 1);
        let dst = Side::placed(
            dst_offset,
            Layout::new(&[7, 5, 32], &[5 * 36, 36, 1]).unwrap(),
            2,
        );
        check::<f16, f32>(&stream, src, dst, &Convert::new(), &mut r);
        check::<u8, f32>(
            &stream,
            Side::packed(rm(&[3, 64])),
            Side::placed(dst_offset, rm(&[3, 64]), 0),
            &Convert::new(),
            &mut r,
        );
    }
}

#[test]
fn tile_route_moves_whole_vectors_at_every_offset_pitch_and_span_edge() {
    let Some(stream) = gpu() else { return };
    let mut r = rng(44);
    // (source extents of a transpose) x (offset, pitch padding) x (spare elements after the view):
    // tile rows cut at every 16-byte phase, partial edge tiles, runs that end at the source
    // span's last byte (their last vector read element by element), a whole mode of 3 or 5
    // (one flat run per tile on that side), and more than one tile along both modes.
    fn one<S: Element, D: Element>(stream: &Arc<CudaStream>, r: &mut rand::rngs::StdRng) {
        for (m, n) in [
            (130, 67),
            (67, 130),
            (3, 1000),
            (1000, 3),
            (5, 333),
            (200, 200),
        ] {
            let (off, pad, tail) = (
                r.random_range(0..16),
                r.random_range(0..5),
                r.random_range(0..2),
            );
            // the source: (n, m) read column-major out of an (m, n + pad) row-major storage
            let storage = Layout::new(&[m, n], &[n + pad, 1]).unwrap();
            let src = Side::placed(off, storage.permute(&[1, 0]).unwrap(), tail);
            let dst = Side::placed(r.random_range(0..16), rm(&[n, m]), r.random_range(0..2));
            let p = check::<S, D>(stream, src, dst, &Convert::new(), r);
            assert!(matches!(p.route, ConvertRoute::Tile { .. }), "{p}");
        }
        // a flat run on both sides: [N, 3, HW] -> [N, HW, 3], channel normalized
        let (n, hw) = (3, 777);
        let src = Side::placed(
            r.random_range(0..16),
            rm(&[n, 3, hw]).permute(&[0, 2, 1]).unwrap(),
            0,
        );
        let dst = Side::placed(r.random_range(0..16), rm(&[n, hw, 3]), 0);
        let norm = Convert::new().normalize(2, &[1.0, 2.0, 3.0], &[2.0, 4.0, 8.0]);
        check::<S, D>(stream, src, dst, &norm, r);
    }
    for (s, d) in [
        (DType::F32, DType::BF16),
        (DType::U8, DType::F32),
        (DType::F64, DType::U8),
        (DType::F16, DType::F8E4M3),
        (DType::I16, DType::I64),
        (DType::F32, DType::F32),
    ] {
        with_pair!(s, d, one(&stream, &mut r));
    }
}

#[test]
fn empty_copies_and_bad_normalizations_write_nothing() {
    let Some(stream) = gpu() else { return };
    let s = DeviceTensor::<f32>::zeros(&stream, rm(&[4, 3])).unwrap();
    let before: Vec<u8> = random_elements(12, 9);
    let mut d = DeviceTensor::from_host(&stream, rm(&[4, 3]), &before).unwrap();
    // zero extents plan nothing and launch nothing
    let empty = Layout::new(&[0, 3], &[1, 2]).unwrap();
    let p = cute_copy::convert_tensor(
        &s.view().relayout(empty).unwrap(),
        &mut d
            .view_mut()
            .relayout_mut(Layout::new(&[0, 3], &[3, 1]).unwrap())
            .unwrap(),
        &Convert::new(),
        &stream,
    )
    .unwrap();
    assert_eq!(p.route, ConvertRoute::Empty);
    for bad in [
        Convert::new().normalize(1, &[0.0; 2], &[1.0; 2]),
        Convert::new().normalize(5, &[0.0; 3], &[1.0; 3]),
        Convert::new().normalize(1, &[0.0; 3], &[0.0; 3]),
        Convert::new().scale(f32::INFINITY),
    ] {
        let e = cute_copy::convert_tensor(&s.view(), &mut d.view_mut(), &bad, &stream);
        assert!(matches!(e, Err(Error::Normalize(_))), "{bad:?}: {e:?}");
    }
    let after = d.to_host(&stream).unwrap();
    assert_eq!(after, before);
}
