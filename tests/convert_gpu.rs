//! Converting copies on the GPU against the host model (`reference::convert_bits`): every supported
//! pair of the 14 dtypes on odd rows at offsets and on transposes, scales and per-channel
//! normalizations (channel in a mode of its own, folded into a longer mode, along the fastest
//! mode, more channels than travel by value), random layouts of rank 2 to 5, empty and refused
//! copies; gathers, scatters and block tables that convert (every pair of element widths, bad
//! indices counted, the KV-cache write into an FP8 pool). Every case poisons the whole destination allocation (the complement of the expected
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
    conversion, group_pixels, ChannelStage, Convert, ConvertPlan, ConvertRoute, DType,
    DeviceTensor, Element, Error, IndexKind, IndexStatus, Interleaved, Layout,
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
    // NHWC [2,9,17,3] -> NCHW and back at odd offsets: the channels route both ways, into compact
    // destinations (where the gather route applies too and loses to the stage) and into ones
    // with a gap after each image
    let nhwc = rm(&[2, 9, 17, 3]).permute(&[0, 3, 1, 2]).unwrap();
    let nchw = rm(&[2, 3, 9, 17]);
    for (src, dst) in [(nhwc, nchw), (nchw, nhwc)] {
        let p = check::<S, D>(
            stream,
            Side::placed(1, src, 2),
            Side::placed(3, dst, 1),
            &plain,
            r,
        );
        assert!(matches!(p.route, ConvertRoute::Channels { .. }), "{p}");
    }
    let gapped = |l: &Layout| {
        let mut st = l.stride().to_vec();
        st[0] += 2;
        Layout::new(l.shape(), &st).unwrap()
    };
    let (nhwc, nchw) = (gapped(&nhwc), gapped(&nchw));
    let il = |p: &ConvertPlan| match p.route {
        ConvertRoute::Channels { interleaved, .. } => Some(interleaved),
        _ => None,
    };
    let p = check::<S, D>(
        stream,
        Side::placed(1, nhwc, 2),
        Side::placed(3, nchw, 1),
        &plain,
        r,
    );
    assert_eq!(il(&p), Some(Interleaved::Source), "{p}");
    let p = check::<S, D>(
        stream,
        Side::placed(2, nchw, 1),
        Side::placed(1, nhwc, 3),
        &plain,
        r,
    );
    assert_eq!(il(&p), Some(Interleaved::Destination), "{p}");
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
        // (planes with a gap after each image: the channels route; a compact destination takes
        // the gather route)
        Side::packed(Layout::new(&[2, 3, 37, 41], &[3 * 37 * 41 + 16, 37 * 41, 41, 1]).unwrap()),
        &imagenet(1),
        &mut r,
    );
    assert!(matches!(p.route, ConvertRoute::Channels { .. }), "{p}");
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
fn fp8_destinations_keep_the_sign_of_zero_under_a_mean_of_minus_zero() {
    // Chunks converting to FP8 go two elements per instruction, and skip the subtraction when
    // their channel's mean is +0 (exact); a mean of -0 must still subtract (-0 - -0 = +0).
    let Some(stream) = gpu() else { return };
    let host: Vec<f32> = (0..128)
        .map(|i| match i % 4 {
            0 => -0.0,
            1 => 0.0,
            2 => -(i as f32) / 7.0,
            _ => 1e6,
        })
        .collect();
    let src = rm(&[2, 64]);
    // a padded destination keeps the channel mode outer: one channel per chunk
    let dst = Layout::new(&[2, 64], &[72, 1]).unwrap();
    let norm = Convert::new().normalize(0, &[-0.0, 0.0], &[1.0, -2.0]);
    let x = DeviceTensor::from_host(&stream, src, &host).unwrap();
    let before: Vec<F8E4M3> = random_elements(144, 3);
    let mut y = DeviceTensor::from_host(&stream, rm(&[144]), &before).unwrap();
    let plan = cute_copy::convert_tensor(
        &x.view(),
        &mut y.view_mut().into_relayout(dst).unwrap(),
        &norm,
        &stream,
    )
    .unwrap();
    assert_eq!(plan.channel, Some((0, 1)), "{plan}");
    let want = expected_tensor_convert(&host, (0, &src), &before, (0, &dst), &norm).unwrap();
    // row 0 (mean -0): -0 becomes +0; row 1 (mean +0, mul -0.5): -0 becomes +0 too, +0 becomes -0
    assert_eq!(Element::to_bits(want[0]), 0x00);
    assert_eq!(Element::to_bits(want[72 + 1]), 0x80);
    let got = y.to_host(&stream).unwrap();
    for (i, (g, w)) in got.iter().zip(&want).enumerate() {
        assert!(
            same_value(DType::F8E4M3, Element::to_bits(*g), Element::to_bits(*w)),
            "element {i}: got {:#x}, want {:#x}\n{plan}",
            Element::to_bits(*g),
            Element::to_bits(*w)
        );
    }
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
fn lane_interleaved_rows_of_any_chunk_count_convert_every_element() {
    let Some(stream) = gpu() else { return };
    let mut r = rng(46);
    // Rows of every chunk count around a group of 32 (fewer, exactly 32, 32 and a partial group,
    // several groups) at random source and destination offsets and pitches: each row's phase on
    // either side differs, so the destination vectors a chunk takes are cut at a row's ends and
    // their sources realigned (16-byte vectors; 4- or 8-byte words for widening pairs). Also a
    // normalization over an outer mode (one channel per chunk: interleaved) and one along the
    // row (never interleaved), and u8 -> f64 (never interleaved).
    fn one<S: Element, D: Element>(stream: &Arc<CudaStream>, r: &mut rand::rngs::StdRng) {
        let chunk = 32 / S::DTYPE.size_bytes().min(D::DTYPE.size_bytes());
        for n in [
            1,
            chunk * 5 + 3,
            chunk * 32,
            chunk * 32 - 1,
            chunk * 33 + 1,
            chunk * 70 + r.random_range(0..chunk),
        ] {
            let rows = r.random_range(1..=3);
            // (destination rows always padded: a compact destination of a widening pair into 4- or
            // 8-byte elements takes the gather route)
            let (sp, dp) = (r.random_range(0..9), r.random_range(1..9));
            let src = Side::placed(
                r.random_range(0..16),
                Layout::new(&[rows, n], &[n + sp, 1]).unwrap(),
                r.random_range(0..3),
            );
            let dst = Side::placed(
                r.random_range(0..16),
                Layout::new(&[rows, n], &[n + dp, 1]).unwrap(),
                r.random_range(0..3),
            );
            let p = check::<S, D>(stream, src, dst, &Convert::new().scale(0.5), r);
            let (sw, dw) = (S::DTYPE.size_bytes(), D::DTYPE.size_bytes());
            if n > 1 {
                // a destination vector's source: 4 bytes or more, destinations of 2 or more
                assert_eq!(p.lane_interleaved(), dw >= 2 && 16 / dw * sw >= 4, "{p}");
            }
        }
        // rows that do not coalesce (a source pitch), one channel per row
        let n = chunk * 40 + 5;
        let over_rows = Convert::new().normalize(0, &[1.0, -2.0, 0.5], &[2.0, 4.0, 8.0]);
        let p = check::<S, D>(
            stream,
            Side::placed(
                r.random_range(0..16),
                Layout::new(&[3, n], &[n + 4, 1]).unwrap(),
                0,
            ),
            Side::placed(
                r.random_range(0..16),
                Layout::new(&[3, n], &[n + 1, 1]).unwrap(),
                0,
            ),
            &over_rows,
            r,
        );
        assert!(matches!(p.route, ConvertRoute::Elementwise { .. }), "{p}");
        assert_eq!(p.channel.map(|(m, _)| m), Some(0), "{p}");
        let along = rm(&[n / 3 + 1, 3]);
        let along_padded = Layout::new(&[n / 3 + 1, 3], &[4, 1]).unwrap();
        let norm = Convert::new().normalize(1, &[1.0, -2.0, 0.5], &[2.0, 4.0, 8.0]);
        let p = check::<S, D>(
            stream,
            Side::placed(r.random_range(0..16), along, 0),
            Side::placed(r.random_range(0..16), along_padded, 0),
            &norm,
            r,
        );
        assert!(!p.lane_interleaved(), "{p}");
    }
    for (s, d) in [
        (DType::F32, DType::BF16),
        (DType::F16, DType::F8E4M3),
        (DType::BF16, DType::F8E5M2),
        (DType::F64, DType::U8),
        (DType::F32, DType::F32),
        (DType::U16, DType::F16),
        (DType::BF16, DType::F32),
        (DType::I32, DType::I64),
        (DType::U8, DType::F32),
        (DType::U8, DType::BF16),
        (DType::F16, DType::F64),
        (DType::I16, DType::I64),
        (DType::U8, DType::F64),
    ] {
        with_pair!(s, d, one(&stream, &mut r));
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
            // wide tiles: a short mode against 2048 .. 4096 of the other (more than one tile)
            (3, 9001),
            (4500, 5),
            (2, 2049),
            // short modes the channels route leaves to the tile: 20 channels, 40 pixels
            (20, 3000),
            (3000, 20),
            (3, 40),
            (40, 5),
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
            // a short mode of 2 to 16 against 64 or more of the other: the channels route
            let channels = (2..=16).contains(&m.min(n)) && m.max(n) >= 64;
            // (the destination is compact: where its fastest modes step through the source in
            // short steps, the gather route takes the copy instead)
            match p.route {
                ConvertRoute::Tile { .. } => assert!(!channels, "{p}"),
                ConvertRoute::Channels { .. } => assert!(channels, "{p}"),
                ConvertRoute::Gather { .. } => {}
                _ => panic!("{p}"),
            }
        }
        // a flat run on both sides: [N, 3, HW] -> [N, HW, 3], channel normalized (a wide tile when
        // HW passes 1024)
        let (n, hw) = (3, [777, 4099][r.random_range(0..2)]);
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
        // stage spans of 8 and 16 words (rotated per lane) from 1- and 2-byte sources
        (DType::U8, DType::BF16),
        (DType::U16, DType::F32),
        (DType::I8, DType::F64),
    ] {
        with_pair!(s, d, one(&stream, &mut r));
    }
}

#[test]
fn tile_route_normalizes_along_either_tile_mode_at_edge_tiles_and_strided_sources() {
    let Some(stream) = gpu() else { return };
    let mut r = rng(46);
    // A transpose of (n, m) normalized along mode 0 or mode 1: the channel walks the tile's load
    // mode or its store mode (one coefficient a tile row or column, read from the block's table),
    // on tiles cut by both edges, runs cut at every 16-byte phase, and sources whose fastest mode
    // steps by 2 (element loads). Each side's mode has as many channels as elements (more than
    // the descriptor holds: a device array).
    fn one<S: Element, D: Element>(stream: &Arc<CudaStream>, r: &mut rand::rngs::StdRng) {
        let mut tiles = 0;
        for (m, n) in [(130, 67), (67, 130), (200, 33), (3, 1000), (300, 3)] {
            for step in [1, 2] {
                let pad = r.random_range(0..5);
                let storage = Layout::new(&[m, n], &[step * n + pad, step]).unwrap();
                let src = Side::placed(
                    r.random_range(0..16),
                    storage.permute(&[1, 0]).unwrap(),
                    r.random_range(0..2),
                );
                let dst = Side::placed(r.random_range(0..16), rm(&[n, m]), r.random_range(0..2));
                for mode in [0, 1] {
                    let c = [n, m][mode];
                    let mean: Vec<f32> = (0..c).map(|i| (i % 7) as f32 * 1.5 - 3.0).collect();
                    let std: Vec<f32> = (0..c).map(|i| 0.5 + (i % 5) as f32).collect();
                    let norm = Convert::new().normalize(mode, &mean, &std);
                    let p = check::<S, D>(stream, src, dst, &norm, r);
                    tiles += usize::from(matches!(p.route, ConvertRoute::Tile { .. }));
                }
            }
        }
        assert!(
            tiles >= 8,
            "{} -> {}: {tiles} tile plans",
            S::DTYPE,
            D::DTYPE
        );
    }
    one::<u8, f32>(&stream, &mut r);
    one::<f32, bf16>(&stream, &mut r);
    one::<f16, F8E4M3>(&stream, &mut r);
    one::<i16, u8>(&stream, &mut r);
    one::<f64, f16>(&stream, &mut r);
}

#[test]
fn channels_route_converts_random_images_both_ways_at_any_offset_pitch_and_crop() {
    let Some(stream) = gpu() else { return };
    let mut r = rng(45);
    // [N, C, H, W] between a planar side (rows and planes padded: a crop) and an interleaved one
    // (pixels of S >= C elements on a source, C on a destination; rows padded), either way, at
    // random offsets with 0 or 1 spare elements after each view (a vector at the span's end read
    // by element); plain, scaled, normalized over C, or normalized over N (one channel a tile).
    // Packed 3- and 4-channel sources into planes at one phase take the register stage.
    fn one<S: Element, D: Element>(stream: &Arc<CudaStream>, r: &mut rand::rngs::StdRng) {
        let (sw, dw) = (S::DTYPE.size_bytes(), D::DTYPE.size_bytes());
        for case in 0..8 {
            let c = [2, 3, 4, r.random_range(2..=16)][case / 2 % 4];
            let (n, h, w) = (
                r.random_range(1..=3),
                r.random_range(1..=9),
                r.random_range(64..=700),
            );
            let to_interleaved = r.random_bool(0.5);
            let (row_pad, plane_pad) = if r.random_bool(0.5) {
                (0, 0)
            } else {
                (r.random_range(0..9), r.random_range(0..5))
            };
            // odd cases: planes a whole number of 16-byte vectors apart (all at one phase: a
            // planar destination's stores take vector j of every plane in turn); even: any pitch
            let plane: usize = h * (w + row_pad) + plane_pad;
            let plane = if case % 2 == 1 {
                plane.next_multiple_of(16)
            } else {
                plane
            };
            let planar =
                Layout::new(&[n, c, h, w], &[c * plane + 3, plane, w + row_pad, 1]).unwrap();
            // the interleaved side's pixel: C elements, or a few more on a source within 64 bytes
            let pixel = if to_interleaved || c * sw >= 64 || r.random_bool(0.5) {
                c
            } else {
                r.random_range(c..=(64 / sw).min(c + 3))
            };
            let ipad = if r.random_bool(0.5) {
                0
            } else {
                r.random_range(1..5)
            };
            let irow = w * pixel + ipad;
            let interleaved = Layout::new(&[n, c, h, w], &[h * irow + 5, 1, irow, pixel]).unwrap();
            let (src, dst) = if to_interleaved {
                (planar, interleaved)
            } else {
                (interleaved, planar)
            };
            let cvt = match (case + case / 2) % 4 {
                0 => Convert::new(),
                1 => Convert::new().scale(0.5),
                2 => {
                    let mean: Vec<f32> = (0..c).map(|i| i as f32 * 1.5 - 2.0).collect();
                    let std: Vec<f32> = (0..c).map(|i| 0.5 + i as f32).collect();
                    Convert::new().normalize(1, &mean, &std)
                }
                _ => {
                    let mean: Vec<f32> = (0..n).map(|i| i as f32).collect();
                    Convert::new().normalize(0, &mean, &vec![2.0; n])
                }
            };
            let p = check::<S, D>(
                stream,
                Side::placed(r.random_range(0..16), src, r.random_range(0..2)),
                Side::placed(r.random_range(0..16), dst, r.random_range(0..2)),
                &cvt,
                r,
            );
            if to_interleaved || pixel * sw <= 64 {
                let want = if to_interleaved {
                    Interleaved::Destination
                } else {
                    Interleaved::Source
                };
                assert!(
                    matches!(p.route, ConvertRoute::Channels { interleaved, .. } if interleaved == want),
                    "{p}"
                );
                let registers = (c == 3 || c == 4)
                    && sw <= 4
                    && (dw == 2 || dw == 4)
                    && if to_interleaved {
                        sw > dw && (group_pixels(c, dw) + 1) * sw * c <= 128
                    } else {
                        pixel == c
                            && (16..=64).contains(&((16 / dw) * c * sw))
                            && (plane * dw) % 16 == 0
                    };
                let stage = if registers {
                    ChannelStage::Registers
                } else {
                    ChannelStage::Shared
                };
                assert!(
                    matches!(p.route, ConvertRoute::Channels { stage: s, .. } if s == stage),
                    "{p}"
                );
            }
        }
    }
    // every (source width, destination width) pair, and the image pairs
    for (s, d) in [
        (DType::U8, DType::F32),
        (DType::U8, DType::BF16),
        (DType::U8, DType::U8),
        (DType::U8, DType::F64),
        (DType::F16, DType::BF16),
        (DType::BF16, DType::F32),
        (DType::F16, DType::F8E4M3),
        (DType::BF16, DType::F64),
        (DType::F32, DType::BF16),
        (DType::F32, DType::F32),
        (DType::F32, DType::F8E5M2),
        (DType::F32, DType::F64),
        (DType::F64, DType::U8),
        (DType::F64, DType::F16),
        (DType::I64, DType::I32),
        (DType::F64, DType::I64),
        (DType::I8, DType::I16),
        (DType::F8E4M3, DType::F32),
    ] {
        with_pair!(s, d, one(&stream, &mut r));
    }
}

#[test]
fn channels_tiles_cut_to_whole_store_rounds_convert_every_pixel() {
    let Some(stream) = gpu() else { return };
    let mut r = rng(46);
    // Images large enough that the shared-stage tile takes whole rounds of 256 destination
    // vectors a plane (1024 pixels into f32, 2048 into 2-byte types), the last tile of each image
    // partial, both views at random offsets with a spare element after them.
    let nhwc = |n: usize, h: usize, w: usize, pixel: usize| {
        Layout::new(&[n, 3, h, w], &[h * w * pixel, 1, w * pixel, pixel]).unwrap()
    };
    let planes = |n: usize, h: usize, w: usize| Layout::row_major(&[n, 3, h, w]).unwrap();
    let imagenet =
        Convert::new().normalize(1, &[123.675, 116.28, 103.53], &[58.395, 57.12, 57.375]);
    fn one<S: Element, D: Element>(
        stream: &Arc<CudaStream>,
        (src, dst): (Layout, Layout),
        cvt: &Convert,
        round: usize,
        r: &mut rand::rngs::StdRng,
    ) {
        let p = check::<S, D>(
            stream,
            Side::placed(r.random_range(0..16), src, 1),
            Side::placed(r.random_range(0..16), dst, 1),
            cvt,
            r,
        );
        let ConvertRoute::Channels {
            stage,
            tile,
            interleaved,
            ..
        } = p.route
        else {
            panic!("{p}")
        };
        assert_eq!(
            (stage, interleaved),
            (ChannelStage::Shared, Interleaved::Source),
            "{p}"
        );
        assert!(tile >= round && tile % round == 0, "{p}");
    }
    // u8 RGB into f32 planes, normalized: 300000 pixels an image, 2 images: 1024-pixel tiles
    one::<u8, f32>(
        &stream,
        (nhwc(2, 300, 1000, 3), planes(2, 300, 1000)),
        &imagenet,
        1024,
        &mut r,
    );
    // u8 RGBX (3 channels of 4 read) into f16 and bf16 planes: the 6-blocks-per-SM kernel,
    // 2048-pixel tiles
    one::<u8, f16>(
        &stream,
        (nhwc(1, 1024, 1040, 4), planes(1, 1024, 1040)),
        &Convert::new(),
        2048,
        &mut r,
    );
    one::<u8, bf16>(
        &stream,
        (nhwc(1, 1000, 1100, 4), planes(1, 1000, 1100)),
        &imagenet,
        2048,
        &mut r,
    );
}

/// A packed layout of `shape` whose modes are laid out slowest to fastest in `order` (the
/// destination of a `permute(..).contiguous()` seen in the source's mode order).
fn compact_in(shape: &[usize], order: &[usize]) -> Layout {
    let mut stride = vec![0; shape.len()];
    let mut step = 1;
    for &m in order.iter().rev() {
        stride[m] = step;
        step *= shape[m];
    }
    Layout::new(shape, &stride).unwrap()
}

#[test]
fn gather_route_converts_compact_destinations_from_local_sources_at_any_offset() {
    let Some(stream) = gpu() else { return };
    let mut r = rng(47);
    // every pair of element widths (1, 2, 4, 8 bytes), FP8 among them
    let pairs = [
        (DType::U8, DType::F32),
        (DType::U8, DType::BF16),
        (DType::I8, DType::I8),
        (DType::F8E4M3, DType::F64),
        (DType::F16, DType::F8E4M3),
        (DType::BF16, DType::F32),
        (DType::U16, DType::F16),
        (DType::I16, DType::I64),
        (DType::F32, DType::F8E5M2),
        (DType::F32, DType::BF16),
        (DType::I32, DType::F32),
        (DType::U32, DType::U64),
        (DType::F64, DType::U8),
        (DType::F64, DType::F16),
        (DType::I64, DType::I32),
        (DType::U64, DType::F64),
    ];
    // Random shapes of rank 1 to 5; the destination compact in a random mode order at a random
    // offset; the source padded, in a random order whose fastest mode is either
    // - the destination's fastest, for a widening pair: the elementwise route's copies, which
    //   the gather takes over when they are more than one row into 4- or 8-byte elements, or
    // - after a short destination mode of 2 to 4, the next one, of 2 to 63 (too few pixels for
    //   a channels tile unless coalescing merges it): tiny items, the tile route's copies, which
    //   the gather takes over;
    // a normalization on a random mode one time in three. Returns whether the gather divided
    // every element's coordinates, or None when the plan took another route.
    fn one<S: Element, D: Element>(
        stream: &Arc<CudaStream>,
        r: &mut rand::rngs::StdRng,
    ) -> Option<bool> {
        let widening = D::DTYPE.size_bytes() > S::DTYPE.size_bytes();
        let short = !widening || r.random_bool(0.5);
        let rank = r.random_range(if short { 2 } else { 1 }..=5);
        let mut shape: Vec<usize> = (0..rank).map(|_| r.random_range(1..=9)).collect();
        let mut order: Vec<usize> = (0..rank).collect();
        for i in (1..rank).rev() {
            order.swap(i, r.random_range(0..=i));
        }
        let fastest = order[rank - 1];
        shape[fastest] = r.random_range(2..=300);
        if short {
            shape[fastest] = r.random_range(2..=4);
            shape[order[rank - 2]] = r.random_range(2..=63);
        }
        let inner = if short { order[rank - 2] } else { fastest };
        // the source: `inner` unit-stride, every other mode padded by 0..3, in a random order
        let mut src_order: Vec<usize> = (0..rank).filter(|&m| m != inner).collect();
        for i in (1..src_order.len()).rev() {
            src_order.swap(i, r.random_range(0..=i));
        }
        src_order.push(inner);
        let mut stride = vec![0; rank];
        let mut step = 1;
        for &m in src_order.iter().rev() {
            stride[m] = step;
            step *= shape[m]
                + if m != inner && r.random_bool(0.4) {
                    r.random_range(1..4)
                } else {
                    0
                };
        }
        let src = Layout::new(&shape, &stride).unwrap();
        let dst = compact_in(&shape, &order);
        let convert = if r.random_bool(0.33) {
            let m = r.random_range(0..rank);
            let n = shape[m];
            Convert::new().normalize(
                m,
                &(0..n).map(|c| c as f32 * 0.25).collect::<Vec<_>>(),
                &(1..=n).map(|c| c as f32).collect::<Vec<_>>(),
            )
        } else {
            Convert::new()
        };
        let p = check::<S, D>(
            stream,
            Side::placed(r.random_range(0..24), src, r.random_range(0..5)),
            Side::placed(r.random_range(0..24), dst, r.random_range(0..5)),
            &convert,
            r,
        );
        // (coalescing can merge the short case's pixel mode into one of 64 or more: a channels
        // tile then, kept before the gather)
        let due = if short {
            !matches!(p.route, ConvertRoute::Channels { .. })
        } else {
            D::DTYPE.size_bytes() >= 4 && p.coalesced.0.rank() >= 2
        };
        assert_eq!(
            matches!(p.route, ConvertRoute::Gather { .. }),
            due,
            "gather due: {due}\n{p}"
        );
        match p.route {
            ConvertRoute::Gather { divided, .. } => Some(divided),
            _ => None,
        }
    }
    // (gathers with coordinates divided per element, stepped per vector)
    let (mut divided, mut stepped) = (0, 0);
    for i in 0..16 * 12 {
        let (s, d) = pairs[i % pairs.len()];
        match with_pair!(s, d, one(&stream, &mut r)) {
            Some(true) => divided += 1,
            Some(false) => stepped += 1,
            None => {}
        }
    }
    let gathered = divided + stepped;
    // both ways of finding the coordinates are exercised
    assert!(
        divided >= 8 && stepped >= 8,
        "{divided} divided, {stepped} stepped"
    );
    // one row of a widening, or a widening into 2-byte elements, stays elementwise, a merged
    // pixel mode takes a channels tile: about two cases in three are left to the gather
    assert!(
        gathered >= 16 * 12 / 2,
        "{gathered} of {} through gather",
        16 * 12
    );
}

#[test]
fn gather_route_reads_sources_whose_offsets_reach_past_2_pow_31_elements() {
    let Some(stream) = gpu() else { return };
    let mut r = rng(53);
    // A 2 GiB + 256-byte u8 source whose two items lie at element 0 and 2^31: the kernel's source
    // offsets do not fit 32 bits there (elsewhere they do, and are kept in 32 bits).
    let (far, window) = (1usize << 31, 256);
    let flat = |n: usize| Layout::new(&[n], &[1]).unwrap();
    let mut s = DeviceTensor::<u8>::zeros(&stream, flat(far + window)).unwrap();
    let items: Vec<u8> = random_elements(2 * window, r.random());
    for (k, item) in items.chunks(window).enumerate() {
        let x = DeviceTensor::from_host(&stream, flat(window), item).unwrap();
        let mut at = s.view_at_mut(k * far, flat(window)).unwrap();
        cute_copy::copy_tensor(&x.view(), &mut at, &stream).unwrap();
    }
    // (the divided gather, normalized along the item mode, and the stepped one; each item's
    // elements transposed)
    let cases = [
        (
            [2, 24, 3],
            [1, 24],
            true,
            Convert::new().normalize(0, &[1.5, -2.0], &[3.0, 0.5]),
        ),
        ([2, 3, 40], [1, 3], false, Convert::new()),
    ];
    for (shape, inner, divided, convert) in cases {
        let src = Layout::new(&shape, &[far, inner[0], inner[1]]).unwrap();
        let dst = Layout::row_major(&shape).unwrap();
        // the host model reads the same items packed a window apart
        let packed = Layout::new(&shape, &[window, inner[0], inner[1]]).unwrap();
        let offset = 3;
        let canaries: Vec<f32> = random_elements(dst.size() + 8, r.random());
        let want =
            expected_tensor_convert(&items, (0, &packed), &canaries, (offset, &dst), &convert)
                .unwrap();
        let poisoned: Vec<f32> = (0..want.len())
            .map(|i| {
                let written = i >= offset && i < offset + dst.size();
                if written {
                    f32::from_bits(!want[i].to_bits())
                } else {
                    canaries[i]
                }
            })
            .collect();
        let mut d = DeviceTensor::from_host(&stream, flat(want.len()), &poisoned).unwrap();
        let plan = cute_copy::convert_tensor(
            &s.view_at(0, src).unwrap(),
            &mut d.view_at_mut(offset, dst).unwrap(),
            &convert,
            &stream,
        )
        .unwrap();
        assert!(
            matches!(plan.route, ConvertRoute::Gather { divided: g, .. } if g == divided),
            "{plan}"
        );
        let got = d.to_host(&stream).unwrap();
        let bad = (0..got.len())
            .filter(|&i| {
                let (g, w) = (u64::from(got[i].to_bits()), u64::from(want[i].to_bits()));
                !same_value(DType::F32, g, w)
            })
            .count();
        assert_eq!(bad, 0, "{bad} wrong elements of {src:?} -> {dst:?}\n{plan}");
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

/// An index-driven converting copy's host model: each item of the launch (its source and
/// destination items per `kind`, negatives skipped, out-of-range ones skipped and counted) is a
/// layout-to-layout conversion of one item, `expected_tensor_convert` of the item's views.
/// Returns the whole destination allocation, the out-of-range count and the lowest such item.
#[allow(clippy::too_many_arguments)]
fn expected_indexed<S: Element, D: Element>(
    host: &[S],
    src: &Side,
    before: &[D],
    dst: &Side,
    kind: IndexKind,
    block_rows: usize,
    table: &[i64],
    convert: &Convert,
) -> Expected<D> {
    let (src_items, dst_items) = (
        src.layout.shape()[0] / block_rows,
        dst.layout.shape()[0] / block_rows,
    );
    let items = match kind {
        IndexKind::Gather => dst_items,
        IndexKind::Scatter => src_items,
        IndexKind::BlockTable => table.len() / 2,
    };
    let item_layout = |l: &Layout| {
        let mut shape = l.shape().to_vec();
        shape[0] = block_rows;
        Layout::new(&shape, l.stride()).unwrap()
    };
    let (si_l, di_l) = (item_layout(&src.layout), item_layout(&dst.layout));
    let (mut out, mut writes, mut count, mut first) = (before.to_vec(), vec![], 0u64, u64::MAX);
    for i in 0..items {
        let (si, di) = match kind {
            IndexKind::Gather => (table[i], i as i64),
            IndexKind::Scatter => (i as i64, table[i]),
            IndexKind::BlockTable => (table[2 * i], table[2 * i + 1]),
        };
        let bad = |count: &mut u64, first: &mut u64| {
            *count += 1;
            *first = (*first).min(i as u64);
        };
        if si < 0 {
            continue;
        }
        if si as usize >= src_items {
            bad(&mut count, &mut first);
            continue;
        }
        if di < 0 {
            continue;
        }
        if di as usize >= dst_items {
            bad(&mut count, &mut first);
            continue;
        }
        let so = src.offset + si as usize * block_rows * src.layout.stride()[0];
        let dof = dst.offset + di as usize * block_rows * dst.layout.stride()[0];
        out = expected_tensor_convert(host, (so, &si_l), &out, (dof, &di_l), convert).unwrap();
        writes.push((si_l, dof, di_l));
    }
    Expected {
        out,
        writes,
        count,
        first,
    }
}

/// What [`expected_indexed`] gives: the destination allocation, each item written (source item
/// layout, destination offset, destination item layout), the out-of-range count and lowest item.
struct Expected<D> {
    out: Vec<D>,
    writes: Vec<(Layout, usize, Layout)>,
    count: u64,
    first: u64,
}

/// Run one index-driven converting copy on the GPU (i32 or i64 indices) and compare the whole
/// destination allocation and the status with the host model.
#[allow(clippy::too_many_arguments)]
fn check_indexed<S: Element, D: Element>(
    stream: &Arc<CudaStream>,
    (src, dst): (Side, Side),
    kind: IndexKind,
    block_rows: usize,
    table: &[i64],
    wide: bool,
    convert: &Convert,
    r: &mut impl Rng,
) -> ConvertPlan {
    let host: Vec<S> = test_data(src.alloc, r.random());
    let canaries: Vec<D> = random_elements(dst.alloc, r.random());
    let Expected {
        out: want,
        writes,
        count,
        first,
    } = expected_indexed(
        &host, &src, &canaries, &dst, kind, block_rows, table, convert,
    );
    let mut before = canaries.clone();
    for (sl, dof, dl) in &writes {
        for_each_pair(sl, dl, |_, d| {
            before[dof + d] = D::from_bits(!want[dof + d].to_bits());
        });
    }
    let s_all = Layout::new(&[src.alloc], &[1]).unwrap();
    let d_all = Layout::new(&[dst.alloc], &[1]).unwrap();
    let s = DeviceTensor::from_host(stream, s_all, &host).unwrap();
    let mut d = DeviceTensor::from_host(stream, d_all, &before).unwrap();
    let mut status = IndexStatus::new(stream).unwrap();
    let plan = {
        let sv = s.view_at(src.offset, src.layout).unwrap();
        let mut dv = d.view_at_mut(dst.offset, dst.layout).unwrap();
        let run = |dv: &mut cute_copy::TensorViewMut<'_, D>, status: &mut IndexStatus| {
            macro_rules! go {
                ($idx:expr) => {{
                    let idx = $idx;
                    match kind {
                        IndexKind::Gather => {
                            cute_copy::convert_gather_rows(&sv, &idx, dv, convert, status, stream)
                        }
                        IndexKind::Scatter => {
                            cute_copy::convert_scatter_rows(&sv, &idx, dv, convert, status, stream)
                        }
                        IndexKind::BlockTable => cute_copy::convert_copy_blocks(
                            &sv, dv, block_rows, &idx, convert, status, stream,
                        ),
                    }
                }};
            }
            if wide {
                go!(stream.clone_htod(table).unwrap())
            } else {
                let t32: Vec<i32> = table.iter().map(|&i| i as i32).collect();
                go!(stream.clone_htod(&t32).unwrap())
            }
        };
        run(&mut dv, &mut status).unwrap_or_else(|e| {
            panic!(
                "{} -> {} {kind:?}: {src:?} -> {dst:?}: {e}",
                S::DTYPE,
                D::DTYPE
            )
        })
    };
    let got = d.to_host(stream).unwrap();
    let bad: Vec<usize> = (0..got.len())
        .filter(|&i| !same_value(D::DTYPE, got[i].to_bits(), want[i].to_bits()))
        .collect();
    if let Some(&i) = bad.first() {
        panic!(
            "{} wrong elements of {} -> {} {kind:?}, first at {i}: got {:#x}, want {:#x}: {src:?} -> {dst:?}, table {table:?}\n{plan}",
            bad.len(),
            S::DTYPE,
            D::DTYPE,
            got[i].to_bits(),
            want[i].to_bits()
        );
    }
    match status.check(stream) {
        Ok(()) => assert_eq!(
            count, 0,
            "{kind:?}: out-of-range indices not counted\n{plan}"
        ),
        Err(Error::IndexOutOfRange {
            count: c,
            first_item,
        }) => assert_eq!((c, first_item), (count, first), "{kind:?}\n{plan}"),
        Err(e) => panic!("{e}"),
    }
    plan
}

/// A random table for `kind`: source indices anywhere in range, destination indices distinct
/// (one writer per destination item), about one in eight negative and one in eight past the end.
fn random_table(
    kind: IndexKind,
    (src_items, dst_items, items): (usize, usize, usize),
    r: &mut impl Rng,
) -> Vec<i64> {
    let mut dsts: Vec<i64> = (0..dst_items as i64).collect();
    for i in (1..dsts.len()).rev() {
        dsts.swap(i, r.random_range(0..=i));
    }
    let odd = |i: i64, limit: usize, r: &mut dyn rand::RngCore| match r.random_range(0..8) {
        0 => -1 - r.random_range(0..3),
        1 => (limit + r.random_range(0..3)) as i64,
        _ => i,
    };
    let mut t = vec![];
    for i in 0..items {
        let s = if src_items == 0 {
            0
        } else {
            r.random_range(0..src_items) as i64
        };
        let d = dsts.get(i).copied().unwrap_or(dst_items as i64);
        match kind {
            IndexKind::Gather => t.push(odd(s, src_items, r)),
            IndexKind::Scatter => t.push(odd(d, dst_items, r)),
            IndexKind::BlockTable => {
                t.push(odd(s, src_items, r));
                t.push(odd(d, dst_items, r));
            }
        }
    }
    t
}

#[test]
fn gathers_scatters_and_block_tables_convert_every_width_pair_with_bad_indices_counted() {
    let Some(stream) = gpu() else { return };
    let mut r = rng(0x1d5e);
    fn one<S: Element, D: Element>(stream: &Arc<CudaStream>, r: &mut rand::rngs::StdRng) {
        for kind in [IndexKind::Gather, IndexKind::Scatter, IndexKind::BlockTable] {
            let block_rows = if kind == IndexKind::BlockTable {
                r.random_range(1..4)
            } else {
                1
            };
            let inner: Vec<usize> = (0..r.random_range(0..3))
                .map(|_| r.random_range(1..40))
                .collect();
            let (rs, rd) = (
                r.random_range(1..12) * block_rows,
                r.random_range(1..12) * block_rows,
            );
            let shape = |rows: usize| [&[rows][..], &inner].concat();
            let (src, dst) = (random_side(&shape(rs), r), random_side(&shape(rd), r));
            let (si, di) = (rs / block_rows, rd / block_rows);
            let items = match kind {
                IndexKind::Gather => di,
                IndexKind::Scatter => si,
                IndexKind::BlockTable => r.random_range(1..di + 2),
            };
            let table = random_table(kind, (si, di, items), r);
            let convert = if r.random_bool(0.3) {
                Convert::new().scale(0.75)
            } else {
                Convert::new()
            };
            let wide = r.random_bool(0.5);
            check_indexed::<S, D>(
                stream,
                (src, dst),
                kind,
                block_rows,
                &table,
                wide,
                &convert,
                r,
            );
        }
    }
    // every pair of element widths (1, 2, 4, 8 bytes on each side), both signednesses and floats
    use DType as T;
    for (s, d) in [
        (T::U8, T::F32),
        (T::F8E4M3, T::BF16),
        (T::I8, T::I16),
        (T::U8, T::F64),
        (T::F16, T::F8E4M3),
        (T::BF16, T::F16),
        (T::F16, T::F32),
        (T::I16, T::I64),
        (T::F32, T::BF16),
        (T::F32, T::F8E5M2),
        (T::I32, T::F32),
        (T::F32, T::F64),
        (T::F64, T::F16),
        (T::F64, T::F32),
        (T::U64, T::U8),
        (T::I64, T::I64),
    ] {
        with_pair!(s, d, one(&stream, &mut r));
    }
}

#[test]
fn kv_cache_tokens_scatter_into_an_fp8_pool_with_a_scale_and_normalized_rows_gather() {
    let Some(stream) = gpu() else { return };
    let mut r = rng(0x4c4c);
    // vLLM's reshape_and_cache: [tokens, heads, head_dim] bf16 -> [blocks * block_size, heads,
    // head_dim] FP8 E4M3 at slot_mapping, padding tokens -1
    for (tokens, heads, head_dim, slots) in
        [(37, 8, 128, 64 * 16), (5, 2, 80, 16), (130, 4, 96, 512)]
    {
        let src = Side::placed(r.random_range(0..9), rm(&[tokens, heads, head_dim]), 3);
        let dst = Side::packed(rm(&[slots, heads, head_dim]));
        let table = random_table(IndexKind::Scatter, (tokens, slots, tokens), &mut r);
        let plan = check_indexed::<bf16, F8E4M3>(
            &stream,
            (src, dst),
            IndexKind::Scatter,
            1,
            &table,
            false,
            &Convert::new().scale(1.0 / 0.037),
            &mut r,
        );
        assert!(
            matches!(
                plan.route,
                ConvertRoute::Elementwise {
                    vector_store: true,
                    ..
                }
            ),
            "{plan}"
        );
    }
    // a gather normalized along the rows' channel mode (mode 2 of [rows, 5, 3])
    let norm = Convert::new().normalize(2, &[0.5, -1.0, 2.0], &[2.0, 0.25, 3.0]);
    let (src, dst) = (
        Side::packed(rm(&[40, 5, 3])),
        Side::placed(7, rm(&[23, 5, 3]), 5),
    );
    let table = random_table(IndexKind::Gather, (40, 23, 23), &mut r);
    check_indexed::<u8, f32>(
        &stream,
        (src, dst),
        IndexKind::Gather,
        1,
        &table,
        true,
        &norm,
        &mut r,
    );
    // a paged pool [blocks, block_size, heads, head_dim] with block_rows = 1, and the same pool
    // as [blocks * block_size, heads * head_dim] rows with block_rows = block_size
    let (src, dst) = (
        Side::packed(rm(&[9, 16, 2, 64])),
        Side::packed(rm(&[7, 16, 2, 64])),
    );
    let table = random_table(IndexKind::BlockTable, (9, 7, 6), &mut r);
    check_indexed::<bf16, F8E5M2>(
        &stream,
        (src, dst),
        IndexKind::BlockTable,
        1,
        &table,
        false,
        &Convert::new().scale(4.0),
        &mut r,
    );
    let (src, dst) = (
        Side::packed(rm(&[9 * 16, 128])),
        Side::packed(rm(&[7 * 16, 128])),
    );
    check_indexed::<bf16, F8E5M2>(
        &stream,
        (src, dst),
        IndexKind::BlockTable,
        16,
        &table,
        true,
        &Convert::new().scale(4.0),
        &mut r,
    );
}

#[test]
fn index_driven_conversions_refuse_bad_input_and_empty_ones_write_nothing() {
    let Some(stream) = gpu() else { return };
    let s = DeviceTensor::<f32>::zeros(&stream, rm(&[6, 4])).unwrap();
    let before: Vec<u16> = random_elements(24, 11);
    let mut d = DeviceTensor::from_host(&stream, rm(&[6, 4]), &before).unwrap();
    let mut status = IndexStatus::new(&stream).unwrap();
    let idx = stream.clone_htod(&[0i64, 1, 2, 3, 4]).unwrap();
    let plain = Convert::new();
    let e = cute_copy::convert_gather_rows(
        &s.view(),
        &idx,
        &mut d.view_mut(),
        &plain,
        &mut status,
        &stream,
    );
    assert!(
        matches!(
            e,
            Err(Error::IndexCount {
                got: 5,
                expected: 6,
                ..
            })
        ),
        "{e:?}"
    );
    let e = cute_copy::convert_copy_blocks(
        &s.view(),
        &mut d.view_mut(),
        2,
        &idx,
        &plain,
        &mut status,
        &stream,
    );
    assert!(matches!(e, Err(Error::IndexCount { got: 5, .. })), "{e:?}");
    let e = cute_copy::convert_copy_blocks(
        &s.view(),
        &mut d.view_mut(),
        0,
        &idx,
        &plain,
        &mut status,
        &stream,
    );
    assert!(matches!(e, Err(Error::Shape(_))), "{e:?}");
    let by_item = Convert::new().normalize(0, &[0.0; 6], &[1.0; 6]);
    let e = cute_copy::convert_scatter_rows(
        &s.view(),
        &idx,
        &mut d.view_mut(),
        &by_item,
        &mut status,
        &stream,
    );
    assert!(matches!(e, Err(Error::Normalize(_))), "{e:?}");
    let narrow = s.view().slice(&[0, 0], &[6, 3]).unwrap();
    let e = cute_copy::convert_scatter_rows(
        &narrow,
        &idx,
        &mut d.view_mut(),
        &plain,
        &mut status,
        &stream,
    );
    assert!(matches!(e, Err(Error::LayoutMismatch { .. })), "{e:?}");
    // i64 -> f8 has no conversion
    let wide = DeviceTensor::<i64>::zeros(&stream, rm(&[6, 4])).unwrap();
    let mut f8 = DeviceTensor::<F8E4M3>::zeros(&stream, rm(&[6, 4])).unwrap();
    let e = cute_copy::convert_gather_rows(
        &wide.view(),
        &idx,
        &mut f8.view_mut(),
        &plain,
        &mut status,
        &stream,
    );
    assert!(
        matches!(e, Err(Error::UnsupportedConversion { .. })),
        "{e:?}"
    );
    // empty: no items, no columns, an empty block table
    let none = stream.alloc_zeros::<i32>(1).unwrap();
    let empty_rows = s.view().slice(&[0, 0], &[0, 4]).unwrap();
    let p = cute_copy::convert_scatter_rows(
        &empty_rows,
        &none,
        &mut d.view_mut(),
        &plain,
        &mut status,
        &stream,
    )
    .unwrap();
    assert_eq!((&p.route, p.bytes_moved()), (&ConvertRoute::Empty, 0));
    let no_cols = s.view().slice(&[0, 0], &[6, 0]).unwrap();
    let mut d_no_cols = d.view_mut().into_slice(&[0, 0], &[6, 0]).unwrap();
    // as gather_rows: the indices are counted before the copy is found empty
    let p = cute_copy::convert_gather_rows(
        &no_cols,
        &idx,
        &mut d_no_cols,
        &plain,
        &mut status,
        &stream,
    );
    assert!(matches!(p, Err(Error::IndexCount { .. })), "{p:?}");
    let six = stream.clone_htod(&[0i64; 6]).unwrap();
    let p = cute_copy::convert_gather_rows(
        &no_cols,
        &six,
        &mut d_no_cols,
        &plain,
        &mut status,
        &stream,
    )
    .unwrap();
    assert_eq!(p.route, ConvertRoute::Empty);
    let p = cute_copy::convert_copy_blocks(
        &no_cols,
        &mut d_no_cols,
        3,
        &six,
        &plain,
        &mut status,
        &stream,
    )
    .unwrap();
    assert_eq!(p.route, ConvertRoute::Empty);
    status.check(&stream).unwrap();
    assert_eq!(d.to_host(&stream).unwrap(), before);
}
