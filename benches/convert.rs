//! Criterion benchmarks of converting copies ("Conversions" in BENCHMARKS.md): each group times
//! `convert_tensor` (or `convert_scatter_rows` for the KV-cache write) beside a D2D memcpy moving
//! the same number of bytes (half of bytes read plus written each way); those of at most 64 MiB
//! also from CUDA-graph replays. tools/torch_anchor.py --convert times torch eager and
//! torch.compile of the same expressions on the same shapes.
//!
//! Without a GPU every group prints a skip line and measures nothing.

use std::sync::Arc;
use std::time::Duration;

#[path = "../tests/common/mod.rs"]
mod common;
mod support;

use common::gpu;
use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use cute_copy::cudarc::driver::CudaStream;
use cute_copy::reference::random_elements;
use cute_copy::{Convert, ConvertRoute, DeviceTensor, Element, Layout};
use float8::F8E4M3;
use half::{bf16, f16};
use support::{bench_d2d, bench_with_anchors, gpu_time};

/// One group: `src` (a view at `offset` of a packed `storage` of S) converted into a packed D of
/// its shape, against D2D of the same bytes.
fn bench_convert<S: Element, D: Element>(
    c: &mut Criterion,
    stream: &Arc<CudaStream>,
    name: &str,
    (storage, offset, src): (Layout, usize, Layout),
    convert: &Convert,
) {
    let host: Vec<S> = random_elements(storage.cosize().expect("cosize"), storage.size() as u64);
    let x = DeviceTensor::from_host(stream, storage, &host).expect("upload");
    drop(host);
    let mut y = DeviceTensor::<D>::zeros(stream, Layout::row_major(src.shape()).expect("layout"))
        .expect("alloc");
    let xv = x.view_at(offset, src).expect("view");
    let plan = cute_copy::plan_convert(&xv, &y.view_mut(), convert).expect("plan");
    let bytes = plan.bytes_moved() as u64;
    let mut g = c.benchmark_group(format!("convert_{name}_{}_to_{}", S::DTYPE, D::DTYPE));
    g.throughput(Throughput::Bytes(bytes));
    let route = match &plan.route {
        ConvertRoute::Elementwise { .. } => "elementwise",
        ConvertRoute::Tile { .. } => "tile",
        ConvertRoute::Channels { .. } => "channels",
        ConvertRoute::Gather { .. } => "gather",
        ConvertRoute::Empty => "empty",
    };
    bench_with_anchors(&mut g, stream, bytes, ("convert_tensor", route), || {
        cute_copy::convert_tensor(&xv, &mut y.view_mut(), convert, stream).map(|_| ())
    });
    g.finish();
}

/// A KV-cache write into an FP8 pool (vLLM's reshape_and_cache with an fp8 cache): `tokens` new
/// keys `[tokens, heads, head_dim]` of bf16 scattered with a scale into a pool of twice as many
/// slots, `[slots, heads, head_dim]` FP8 E4M3, the slot mapping of sequences of 16-slot blocks
/// in random block order; against D2D of the same bytes.
fn bench_kv_scatter(
    c: &mut Criterion,
    stream: &Arc<CudaStream>,
    (tokens, heads, head_dim): (usize, usize, usize),
) {
    let (block, slots) = (16, 2 * tokens);
    let keys: Vec<bf16> = random_elements(tokens * heads * head_dim, 5);
    let x =
        DeviceTensor::from_host(stream, layout(&[tokens, heads, head_dim]), &keys).expect("upload");
    drop(keys);
    let mut pool =
        DeviceTensor::<F8E4M3>::zeros(stream, layout(&[slots, heads, head_dim])).expect("alloc");
    // block b of the tokens goes to pool block order[b]
    let order: Vec<u64> = random_elements(slots / block, 6);
    let mut blocks: Vec<usize> = (0..slots / block).collect();
    blocks.sort_by_key(|&b| order[b]);
    let mapping: Vec<i64> = (0..tokens)
        .map(|t| (blocks[t / block] * block + t % block) as i64)
        .collect();
    let idx = cute_copy::upload_indices(stream, &mapping, slots).expect("indices");
    let mut status = cute_copy::IndexStatus::new(stream).expect("status");
    let scale = Convert::new().scale(448.0 / 6.0);
    let plan = cute_copy::convert_scatter_rows(
        &x.view(),
        &idx,
        &mut pool.view_mut(),
        &scale,
        &mut status,
        stream,
    )
    .expect("plan");
    status.check(stream).expect("indices in range");
    let bytes = plan.bytes_moved() as u64;
    let mut g = c.benchmark_group(format!(
        "convert_kv_scatter_{tokens}x{heads}x{head_dim}_scaled_bf16_to_f8e4m3"
    ));
    g.throughput(Throughput::Bytes(bytes));
    g.bench_function(
        BenchmarkId::new("convert_scatter_rows", "elementwise"),
        |b| {
            b.iter_custom(|k| {
                gpu_time(stream, k, || {
                    cute_copy::convert_scatter_rows(
                        &x.view(),
                        &idx,
                        &mut pool.view_mut(),
                        &scale,
                        &mut status,
                        stream,
                    )
                    .map(|_| ())
                })
            })
        },
    );
    bench_d2d(&mut g, stream, bytes);
    g.finish();
}

fn layout(shape: &[usize]) -> Layout {
    Layout::row_major(shape).expect("layout")
}

/// The shapes: f32 -> bf16 16384^2 packed and transposed; f16 -> FP8 E4M3 with a scale,
/// [8,32,4096,128] permuted (0,2,1,3); bf16 [64,1024,1023] strided -> packed f32; u8 NHWC
/// [64,224,224,3] -> f32 NCHW ImageNet-normalized; u8 [8,3,1088,1928] cropped at (3,5) to
/// [8,3,1080,1920] -> bf16 NHWC normalized.
fn benches(c: &mut Criterion) {
    let Some(stream) = gpu() else { return };
    // SAFETY: every buffer of the benchmarks is created after this call and used on this one
    // stream: cudarc's cross-stream event tracking is not needed.
    unsafe { stream.context().disable_event_tracking() };
    let rm = |s: &[usize]| Layout::row_major(s).expect("layout");
    let plain = Convert::new();
    let sq = rm(&[16384, 16384]);
    bench_convert::<f32, bf16>(c, &stream, "16384x16384", (sq, 0, sq), &plain);
    let t = sq.permute(&[1, 0]).expect("permute");
    bench_convert::<f32, bf16>(c, &stream, "transpose_16384x16384", (sq, 0, t), &plain);
    let bhsd = rm(&[8, 32, 4096, 128]);
    let p = bhsd.permute(&[0, 2, 1, 3]).expect("permute");
    let scale = Convert::new().scale(448.0 / 6.0);
    bench_convert::<f16, F8E4M3>(
        c,
        &stream,
        "permute_8x32x4096x128_0213_scaled",
        (bhsd, 0, p),
        &scale,
    );
    let batched = Layout::new(&[64, 1024, 1023], &[1024 * 1024, 1024, 1]).expect("layout");
    bench_convert::<bf16, f32>(
        c,
        &stream,
        "batched_64x1024x1023_ld1024",
        (rm(&[64, 1024, 1024]), 0, batched),
        &plain,
    );
    let (mean, std) = ([123.675, 116.28, 103.53], [58.395, 57.12, 57.375]);
    let nhwc = rm(&[64, 224, 224, 3]);
    let to_nchw = nhwc.permute(&[0, 3, 1, 2]).expect("permute");
    let norm1 = Convert::new().normalize(1, &mean, &std);
    bench_convert::<u8, f32>(
        c,
        &stream,
        "nhwc_to_nchw_64x224x224x3_normalized",
        (nhwc, 0, to_nchw),
        &norm1,
    );
    let frames = rm(&[8, 3, 1088, 1928]);
    let crop = Layout::new(&[8, 3, 1080, 1920], frames.stride()).expect("crop");
    let at = frames.offset_of(&[0, 0, 3, 5]).expect("offset");
    let norm3 = Convert::new().normalize(3, &mean, &std);
    let to_nhwc = crop.permute(&[0, 2, 3, 1]).expect("permute");
    bench_convert::<u8, bf16>(
        c,
        &stream,
        "crop_nchw_to_nhwc_8x3x1080x1920_normalized",
        (frames, at, to_nhwc),
        &norm3,
    );
    bench_kv_scatter(c, &stream, (65536, 8, 128));
}

criterion_group! {
    name = convert_benches;
    config = Criterion::default().warm_up_time(Duration::from_millis(2000)).measurement_time(Duration::from_millis(1200)).sample_size(20);
    targets = benches
}
criterion_main!(convert_benches);
