//! Criterion benchmarks on the GPU: the crate's automatic plan, every explicitly chosen atom that is
//! legal for the shape, hand-written baselines (naive, hand-vectorized 16 B), cudaMemcpy2DAsync, and
//! cudaMemcpyAsync of the same bytes (the practical limit), side by side in one run.
//!
//! Throughput is bytes read + bytes written of the logical region. Kernel time comes from CUDA
//! events around back-to-back launches on one stream after warm-up (criterion's `iter_custom`).
//! Large shapes are several times the H200's 60 MB L2; data is random.
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
use cute_copy::{
    Atom, Baseline, Batch, BatchBaseline, DeviceMatrix, DeviceTensor, Element, IndexStatus, Layout,
    Operation, Region, TensorRoute,
};
use half::{bf16, f16};
use rand::{Rng, SeedableRng};
use support::{bench_d2d, bench_with_anchors, gpu_time, graph_time};

struct Shape {
    name: &'static str,
    rows: usize,
    cols: usize,
    ld_src: usize,
    ld_dst: usize,
    /// Destination shape for a pad (None: a copy).
    pad_to: Option<(usize, usize)>,
    /// Element (row, col) of the source and destination views in their allocations.
    src_at: (usize, usize),
    dst_at: (usize, usize),
}

const fn copy(name: &'static str, rows: usize, cols: usize, ld_src: usize, ld_dst: usize) -> Shape {
    Shape {
        name,
        rows,
        cols,
        ld_src,
        ld_dst,
        pad_to: None,
        src_at: (0, 0),
        dst_at: (0, 0),
    }
}

impl Shape {
    const fn at(mut self, src_at: (usize, usize), dst_at: (usize, usize)) -> Self {
        self.src_at = src_at;
        self.dst_at = dst_at;
        self
    }
    const fn pad(mut self, rows: usize, cols: usize) -> Self {
        self.pad_to = Some((rows, cols));
        self
    }
}

fn bench_shape<T: Element>(c: &mut Criterion, stream: &Arc<CudaStream>, shape: &Shape) {
    let mut rng = rand::rngs::StdRng::seed_from_u64(shape.rows as u64 ^ (shape.cols as u64) << 20);
    let host: Vec<T> = random_elements(shape.rows * shape.ld_src, rng.random());
    let src = DeviceMatrix::from_host(stream, shape.rows, shape.cols, shape.ld_src, &host)
        .expect("upload");
    drop(host);
    let (drows, dcols) = shape.pad_to.unwrap_or((shape.rows, shape.cols));
    let mut dst =
        DeviceMatrix::<T>::zeros(stream, drows, dcols, shape.ld_dst.max(dcols)).expect("alloc");
    let plan = cute_copy::plan(&src.view(), &dst.view_mut(), None).expect("plan");
    let bytes = plan.bytes_moved() as u64;

    let mut g = c.benchmark_group(format!("{}_{}", shape.name, T::DTYPE));
    g.throughput(Throughput::Bytes(bytes));
    g.bench_function(BenchmarkId::new("auto", plan.atom.cli_name()), |b| {
        b.iter_custom(|n| {
            gpu_time(stream, n, || {
                cute_copy::launch(&plan, &src.view(), &mut dst.view_mut(), stream)
            })
        })
    });
    if plan.blocks() <= 1024 {
        // Small copies are launch-bound: also time them from graph replays.
        g.bench_function(BenchmarkId::new("auto_graph", plan.atom.cli_name()), |b| {
            b.iter_custom(|n| {
                graph_time(stream, n, || {
                    cute_copy::launch(&plan, &src.view(), &mut dst.view_mut(), stream)
                })
                .unwrap_or(Duration::ZERO)
            })
        });
        if plan.operation == Operation::Copy {
            g.bench_function(BenchmarkId::new("baseline_graph", "Memcpy2D"), |b| {
                b.iter_custom(|n| {
                    graph_time(stream, n, || {
                        cute_copy::launch_baseline(
                            Baseline::Memcpy2D,
                            &src.view(),
                            &mut dst.view_mut(),
                            stream,
                        )
                    })
                    .unwrap_or(Duration::ZERO)
                })
            });
        }
    }
    if plan.predicated_tiles() > 0 {
        let mut unpeeled = plan.clone();
        unpeeled.peel = false;
        g.bench_function(
            BenchmarkId::new("auto_no_peel", plan.atom.cli_name()),
            |b| {
                b.iter_custom(|n| {
                    gpu_time(stream, n, || {
                        cute_copy::launch(&unpeeled, &src.view(), &mut dst.view_mut(), stream)
                    })
                })
            },
        );
    }
    for atom in Atom::all() {
        let Ok(p) = cute_copy::plan(&src.view(), &dst.view_mut(), Some(atom)) else {
            continue;
        };
        if atom == plan.atom || atom.bytes_for(T::DTYPE) < 4 {
            continue; // the automatic plan already ran it; sub-4-byte atoms are not contenders
        }
        g.bench_function(BenchmarkId::new("atom", atom.cli_name()), |b| {
            b.iter_custom(|n| {
                gpu_time(stream, n, || {
                    cute_copy::launch(&p, &src.view(), &mut dst.view_mut(), stream)
                })
            })
        });
    }
    if plan.operation == Operation::Copy {
        let mut baselines = vec![Baseline::Naive, Baseline::Memcpy2D];
        if plan.src_bits == 128 && plan.dst_bits == 128 {
            baselines.push(Baseline::Vectorized16);
        }
        if plan.src.ld == plan.src.cols && plan.dst.ld == plan.dst.cols {
            baselines.push(Baseline::Memcpy);
        }
        for which in baselines {
            g.bench_function(BenchmarkId::new("baseline", format!("{which:?}")), |b| {
                b.iter_custom(|n| {
                    gpu_time(stream, n, || {
                        cute_copy::launch_baseline(which, &src.view(), &mut dst.view_mut(), stream)
                    })
                })
            });
        }
    }
    g.finish();
}

/// cudaMemcpyAsync of 2 GiB device to device: the copy limit every shape is compared with.
fn bench_limit(c: &mut Criterion, stream: &Arc<CudaStream>) {
    let n = 1usize << 30; // 1 Gi elements of u8 read + 1 Gi written = 2 GiB moved
    let src =
        DeviceMatrix::<u8>::from_host(stream, 1, n, n, &random_elements(n, 9)).expect("upload");
    let mut dst = DeviceMatrix::<u8>::zeros(stream, 1, n, n).expect("alloc");
    let mut g = c.benchmark_group("limit_d2d_1GiB");
    g.throughput(Throughput::Bytes(2 * n as u64));
    g.bench_function("memcpy", |b| {
        b.iter_custom(|k| {
            gpu_time(stream, k, || {
                cute_copy::launch_baseline(
                    Baseline::Memcpy,
                    &src.view(),
                    &mut dst.view_mut(),
                    stream,
                )
            })
        })
    });
    g.finish();
}

/// An empty kernel, the floor the small shapes are compared with, and the Rust call overhead.
fn bench_launch(c: &mut Criterion, stream: &Arc<CudaStream>) {
    let mut g = c.benchmark_group("launch");
    g.bench_function("empty_kernel", |b| {
        b.iter_custom(|n| gpu_time(stream, n, || cute_copy::timing::launch_empty(stream)))
    });
    let src = DeviceMatrix::<f16>::zeros(stream, 32, 32, 32).expect("alloc");
    let mut dst = DeviceMatrix::<f16>::zeros(stream, 32, 32, 32).expect("alloc");
    let plan = cute_copy::plan(&src.view(), &dst.view_mut(), None).expect("plan");
    // Host time per call, no sync: the Rust path (plan, checks, guards, bridge) against C++ calling
    // the same launch function with a prepared descriptor.
    for (name, rust_side) in [
        ("host_rust_copy_call", true),
        ("host_cpp_bare_launch", false),
    ] {
        g.bench_function(name, |b| {
            b.iter_custom(|n| {
                let (rust, bare) = cute_copy::launch_overhead_ns(
                    &plan,
                    &src.view(),
                    &mut dst.view_mut(),
                    stream,
                    n as u32,
                )
                .expect("launch");
                stream.synchronize().expect("sync");
                Duration::from_secs_f64(if rust_side { rust } else { bare } * 1e-9 * n as f64)
            })
        });
    }
    g.finish();
}

/// One "Alignment" group: the automatic plan, the element-width plan the engine ran before the
/// realign family (the widest Universal atom legal on both sides), and a D2D cudaMemcpyAsync of
/// the same bytes in the same process: the anchor the targets are stated against.
fn bench_alignment<T: Element>(c: &mut Criterion, stream: &Arc<CudaStream>, shape: &Shape) {
    let mut rng = rand::rngs::StdRng::seed_from_u64(shape.rows as u64 ^ (shape.cols as u64) << 20);
    let src_rows = shape.src_at.0 + shape.rows;
    let (drows, dcols) = shape.pad_to.unwrap_or((shape.rows, shape.cols));
    let dst_rows = shape.dst_at.0 + drows;
    let host: Vec<T> = random_elements(src_rows * shape.ld_src, rng.random());
    let src = DeviceMatrix::from_host(stream, src_rows, shape.ld_src, shape.ld_src, &host)
        .expect("upload");
    drop(host);
    let mut dst =
        DeviceMatrix::<T>::zeros(stream, dst_rows, shape.ld_dst, shape.ld_dst).expect("alloc");
    let sview = src
        .view()
        .sub(shape.src_at.0, shape.src_at.1, shape.rows, shape.cols)
        .expect("src view");
    let mut dview = dst
        .view_at_mut(
            shape.dst_at.0 * shape.ld_dst + shape.dst_at.1,
            drows,
            dcols,
            shape.ld_dst,
        )
        .expect("dst view");
    let plan = cute_copy::plan(&sview, &dview, None).expect("plan");
    let bytes = plan.bytes_moved() as u64;
    let narrow = Atom::universal_for((plan.src_bits.min(plan.dst_bits) / 8) as usize, T::DTYPE)
        .expect("atom");
    let old = cute_copy::plan(&sview, &dview, Some(narrow)).expect("element-width plan");
    let mut g = c.benchmark_group(format!("align_{}_{}", shape.name, T::DTYPE));
    g.throughput(Throughput::Bytes(bytes));
    g.bench_function(BenchmarkId::new("auto", plan.atom.cli_name()), |bch| {
        bch.iter_custom(|k| {
            gpu_time(stream, k, || {
                cute_copy::launch(&plan, &sview, &mut dview, stream)
            })
        })
    });
    if old.atom != plan.atom {
        g.bench_function(
            BenchmarkId::new("element_width", old.atom.cli_name()),
            |bch| {
                bch.iter_custom(|k| {
                    gpu_time(stream, k, || {
                        cute_copy::launch(&old, &sview, &mut dview, stream)
                    })
                })
            },
        );
    }
    if plan.atom != Atom::Realign128 {
        let realign =
            cute_copy::plan(&sview, &dview, Some(Atom::Realign128)).expect("realign plan");
        g.bench_function(BenchmarkId::new("atom", "realign-128"), |bch| {
            bch.iter_custom(|k| {
                gpu_time(stream, k, || {
                    cute_copy::launch(&realign, &sview, &mut dview, stream)
                })
            })
        });
    }
    // The anchor: one contiguous D2D memcpy of the same bytes (half read, half written).
    bench_d2d(&mut g, stream, bytes);
    g.finish();
}

fn alignment_benches(c: &mut Criterion, stream: &Arc<CudaStream>) {
    let s = &stream;
    bench_alignment::<u8>(
        c,
        s,
        &copy("8191x8191_at1_1_ld8192_to_ld8192", 8191, 8191, 8192, 8192).at((1, 1), (0, 0)),
    );
    bench_alignment::<u8>(
        c,
        s,
        &copy(
            "2000x7001_at5_3_ld11520_to_0_1_ld7168",
            2000,
            7001,
            11520,
            7168,
        )
        .at((5, 3), (0, 1)),
    );
    bench_alignment::<u8>(
        c,
        s,
        &copy(
            "47999x45999_at1_1_ld46000_to_0_1",
            47999,
            45999,
            46000,
            46000,
        )
        .at((1, 1), (0, 1)),
    );
    bench_alignment::<u16>(
        c,
        s,
        &copy("12000x12001_contiguous", 12000, 12001, 12001, 12001),
    );
    bench_alignment::<u32>(
        c,
        s,
        &copy("8191x8191_ld8193_to_packed", 8191, 8191, 8193, 8191),
    );
    bench_alignment::<i64>(
        c,
        s,
        &copy(
            "3000x2999_at1_1_ld3001_to_0_1_ld3000",
            3000,
            2999,
            3001,
            3000,
        )
        .at((1, 1), (0, 1)),
    );
    bench_alignment::<f16>(
        c,
        s,
        &copy("16384x16380_ld16388_to_packed", 16384, 16380, 16388, 16380),
    );
    bench_alignment::<u8>(c, s, &copy("8192x8192_dense", 8192, 8192, 8192, 8192));
    bench_alignment::<f16>(
        c,
        s,
        &copy("16383x16383_ld16383_to_ld16384", 16383, 16383, 16383, 16384),
    );
    bench_alignment::<bf16>(
        c,
        s,
        &copy(
            "pad_16384x16380_ld16388_to_16384",
            16384,
            16380,
            16388,
            16384,
        )
        .pad(16384, 16384),
    );
    bench_alignment::<f32>(c, s, &copy("4096x4096_dense", 4096, 4096, 4096, 4096));
    bench_alignment::<bf16>(c, s, &copy("4096x4096_dense", 4096, 4096, 4096, 4096));
    // 16 MiB each way: a lean run whose source and destination fit in the L2 (128-thread blocks)
    bench_alignment::<u8>(c, s, &copy("4096x4096_dense", 4096, 4096, 4096, 4096));
    bench_alignment::<f16>(c, s, &copy("16384x16384_dense", 16384, 16384, 16384, 16384));
    bench_alignment::<f16>(
        c,
        s,
        &copy("16383x16383_ld16384", 16383, 16383, 16384, 16384),
    );
}

/// A block-table gather: `count` blocks of `block_rows x cols` f16 from a pool of `pool` blocks,
/// by `copy_blocks` (stream and graph replays), a hand-written gather kernel, one
/// cudaMemcpyAsync per block, one cudaMemcpyBatchAsync, and D2D of the same bytes.
fn bench_blocks(
    c: &mut Criterion,
    stream: &Arc<CudaStream>,
    name: &str,
    (pool, block_rows, cols, count): (usize, usize, usize, usize),
) {
    let mut rng = rand::rngs::StdRng::seed_from_u64(77);
    let host: Vec<f16> = random_elements(pool * block_rows * cols, rng.random());
    let src =
        DeviceMatrix::from_host(stream, pool * block_rows, cols, cols, &host).expect("upload");
    drop(host);
    let mut dst =
        DeviceMatrix::<f16>::zeros(stream, count * block_rows, cols, cols).expect("alloc");
    let pairs: Vec<i32> = (0..count)
        .flat_map(|k| [((k * 2654435761 + 7) % pool) as i32, k as i32])
        .collect();
    let pairs_dev = stream.clone_htod(&pairs).expect("upload");
    let mut status = IndexStatus::new(stream).expect("status");
    let bytes = (2 * count * block_rows * cols * 2) as u64;
    let mut g = c.benchmark_group(name);
    g.throughput(Throughput::Bytes(bytes));
    let mut run = |st: &mut IndexStatus| {
        cute_copy::copy_blocks(
            &src.view(),
            &mut dst.view_mut(),
            block_rows,
            &pairs_dev,
            st,
            stream,
        )
        .map(drop)
    };
    g.bench_function("copy_blocks", |b| {
        b.iter_custom(|k| gpu_time(stream, k, || run(&mut status)))
    });
    g.bench_function("copy_blocks_graph", |b| {
        b.iter_custom(|k| graph_time(stream, k, || run(&mut status)).unwrap_or(Duration::ZERO))
    });
    for which in [
        BatchBaseline::HandGather,
        BatchBaseline::MemcpyEach,
        BatchBaseline::MemcpyBatch,
    ] {
        let mut base = || {
            cute_copy::copy_blocks_baseline(
                which,
                &src.view(),
                &mut dst.view_mut(),
                block_rows,
                &pairs,
                &pairs_dev,
                stream,
            )
        };
        g.bench_function(BenchmarkId::new("baseline", format!("{which:?}")), |b| {
            b.iter_custom(|k| gpu_time(stream, k, &mut base))
        });
        if which == BatchBaseline::HandGather {
            g.bench_function(
                BenchmarkId::new("baseline_graph", format!("{which:?}")),
                |b| b.iter_custom(|k| graph_time(stream, k, &mut base).unwrap_or(Duration::ZERO)),
            );
        }
    }
    bench_d2d(&mut g, stream, bytes);
    g.finish();
    status.check(stream).expect("indices in range");
}

/// "Batches": many copies in one launch, against the same work by hand-written kernels,
/// one memcpy per piece, cudaMemcpyBatchAsync, and D2D of the same bytes.
fn batch_benches(c: &mut Criterion, stream: &Arc<CudaStream>) {
    // Paged KV-cache style: 300 blocks of 16 x 128 f16 (4 KiB) from a 4096-block pool.
    bench_blocks(c, stream, "batch_gather_300x4KiB_f16", (4096, 16, 128, 300));
    // 4096 blocks of 64 KiB (16 x 2048 f16), a permutation of a 4096-block pool.
    bench_blocks(
        c,
        stream,
        "batch_blocks_4096x64KiB_f16",
        (4096, 16, 2048, 4096),
    );

    // 10 000 random small 2D copies (1-64 rows x 1-512 cols, random offsets) in one batch.
    use rand::Rng;
    let mut rng = rand::rngs::StdRng::seed_from_u64(78);
    let (sld, dld, srows) = (4096usize, 4096usize, 8192usize);
    let host: Vec<f16> = random_elements(srows * sld, rng.random());
    let src = DeviceMatrix::from_host(stream, srows, sld, sld, &host).expect("upload");
    let mut batch = Batch::<f16>::new();
    let (mut row, mut col, mut band) = (0usize, 0usize, 0usize);
    for _ in 0..10_000 {
        let (r, cc) = (rng.random_range(1..=64), rng.random_range(1..=512));
        if col + cc + 8 > dld {
            (row, col, band) = (row + band, 0, 0);
        }
        let s = Region::at(
            rng.random_range(0..srows - r),
            rng.random_range(0..sld - cc),
            r,
            cc,
            sld,
        );
        let d = Region::at(row, col + rng.random_range(0..8), r, cc, dld);
        (col, band) = (col + cc + 8, band.max(r));
        batch.push(s, d).expect("push");
    }
    let mut dst = DeviceMatrix::<f16>::zeros(stream, row + band + 1, dld, dld).expect("alloc");
    let bytes = batch.plan().expect("plan").bytes;
    batch.upload(stream).expect("upload");
    let mut g = c.benchmark_group("batch_10000_random_small_f16");
    g.throughput(Throughput::Bytes(bytes));
    g.bench_function("batch", |b| {
        b.iter_custom(|k| {
            gpu_time(stream, k, || {
                batch
                    .launch(&src.view(), &mut dst.view_mut(), stream)
                    .map(drop)
            })
        })
    });
    for which in [BatchBaseline::MemcpyEach, BatchBaseline::MemcpyBatch] {
        // Host-bound (10 000 calls, or ~330 000 rows in one call): 3 timed calls, scaled.
        g.bench_function(BenchmarkId::new("baseline", format!("{which:?}")), |b| {
            b.iter_custom(|k| {
                gpu_time(stream, k.min(3), || {
                    batch.launch_baseline(which, &src.view(), &mut dst.view_mut(), stream)
                })
                .mul_f64(k as f64 / k.min(3) as f64)
            })
        });
    }
    bench_d2d(&mut g, stream, bytes);
    g.finish();
}

/// One "Layouts" group: a tensor copy from `storage` (a packed allocation) seen through `src`
/// (a permuted or strided view of it) into a packed destination of `src`'s shape, by
/// `copy_tensor`, beside a D2D cudaMemcpyAsync of the same bytes.
fn bench_layout<T: Element>(
    c: &mut Criterion,
    stream: &Arc<CudaStream>,
    name: &str,
    storage: Layout,
    src: Layout,
) {
    bench_layout_at::<T>(c, stream, name, storage, 0, src);
}

/// [`bench_layout`] with the source's coordinate 0 at element `offset` of the storage (a crop:
/// `DeviceTensor::view_at`); offset 0 is the view `bench_layout` makes.
fn bench_layout_at<T: Element>(
    c: &mut Criterion,
    stream: &Arc<CudaStream>,
    name: &str,
    storage: Layout,
    offset: usize,
    src: Layout,
) {
    let packed = Layout::row_major(src.shape()).expect("layout");
    bench_layout_into::<T>(c, stream, name, (storage, offset, src), (packed, 0, packed));
}

/// [`bench_layout_at`] into a view of a destination allocation: each side is (the allocation's
/// layout, the view's element offset in it, the view), e.g. packed frames into a crop of planes.
fn bench_layout_into<T: Element>(
    c: &mut Criterion,
    stream: &Arc<CudaStream>,
    name: &str,
    (storage, offset, src): (Layout, usize, Layout),
    dst: (Layout, usize, Layout),
) {
    let mut rng = rand::rngs::StdRng::seed_from_u64(storage.size() as u64);
    let host: Vec<T> = random_elements(storage.cosize().expect("cosize"), rng.random());
    let x = DeviceTensor::from_host(stream, storage, &host).expect("upload");
    drop(host);
    let mut y = DeviceTensor::<T>::zeros(stream, dst.0).expect("alloc");
    let xv = x.view_at(offset, src).expect("view");
    let plan =
        cute_copy::plan_tensor(&xv, &y.view_at_mut(dst.1, dst.2).expect("view")).expect("plan");
    let bytes = plan.bytes_moved() as u64;
    let mut g = c.benchmark_group(format!("layout_{name}_{}", T::DTYPE));
    g.throughput(Throughput::Bytes(bytes));
    let route = match &plan.route {
        TensorRoute::Matrix(p) | TensorRoute::Rows { plan: p, .. } => p.atom.cli_name(),
        TensorRoute::Transpose(t) => format!("transpose-{:?}", t.kind).to_lowercase(),
        TensorRoute::Empty => "empty".into(),
    };
    bench_with_anchors(&mut g, stream, bytes, ("copy_tensor", &route), || {
        let mut yv = y.view_at_mut(dst.1, dst.2)?;
        cute_copy::copy_tensor(&xv, &mut yv, stream).map(|_| ())
    });
    g.finish();
}

/// The layout-change shapes (transposes, a head permute, NCHW -> NHWC, a batched strided
/// view), each against D2D of the same bytes; tools/torch_anchor.py --layouts times torch on them.
fn layout_benches(c: &mut Criterion, stream: &Arc<CudaStream>) {
    let rm = |s: &[usize]| Layout::row_major(s).expect("layout");
    let t2 = |n: usize| rm(&[n, n]).permute(&[1, 0]).expect("permute");
    bench_layout::<f32>(
        c,
        stream,
        "transpose_16384x16384",
        rm(&[16384, 16384]),
        t2(16384),
    );
    bench_layout::<f16>(
        c,
        stream,
        "transpose_16384x16384",
        rm(&[16384, 16384]),
        t2(16384),
    );
    bench_layout::<u8>(
        c,
        stream,
        "transpose_8192x8192",
        rm(&[8192, 8192]),
        t2(8192),
    );
    let bhsd = rm(&[8, 32, 4096, 128]);
    bench_layout::<f16>(
        c,
        stream,
        "permute_8x32x4096x128_0213",
        bhsd,
        bhsd.permute(&[0, 2, 1, 3]).expect("permute"),
    );
    let nchw = rm(&[64, 3, 224, 224]);
    bench_layout::<f32>(
        c,
        stream,
        "nchw_to_nhwc_64x3x224x224",
        nchw,
        nchw.permute(&[0, 2, 3, 1]).expect("permute"),
    );
    let batched = Layout::new(&[64, 1024, 1023], &[1024 * 1024, 1024, 1]).expect("layout");
    bench_layout::<f16>(
        c,
        stream,
        "batched_64x1024x1023_ld1024_to_packed",
        rm(&[64, 1024, 1024]),
        batched,
    );
}

/// "Layouts at any shape": transposes and permutes whose extents are not multiples of any tile
/// (odd, prime-ish, one past a power of two), a cropped NCHW -> NHWC frame batch, and narrow inner
/// modes; each against D2D of the same bytes. The destination is always the packed row-major
/// tensor of the view's shape (torch's `x.permute(..).contiguous()`). Groups `layout_any_*`;
/// tools/torch_anchor.py --any-shape times torch eager and torch.compile on them.
fn any_shape_benches(c: &mut Criterion, stream: &Arc<CudaStream>) {
    let rm = |s: &[usize]| Layout::row_major(s).expect("layout");
    let permuted = |s: &[usize], order: &[usize]| rm(s).permute(order).expect("permute");
    let (name, shape) = ("any_transpose_10000x7001", [10000, 7001]);
    bench_layout::<f32>(c, stream, name, rm(&shape), permuted(&shape, &[1, 0]));
    let (name, shape) = ("any_transpose_9001x5003", [9001, 5003]);
    bench_layout::<f16>(c, stream, name, rm(&shape), permuted(&shape, &[1, 0]));
    let (name, shape) = ("any_transpose_9999x8191", [9999, 8191]);
    bench_layout::<u8>(c, stream, name, rm(&shape), permuted(&shape, &[1, 0]));
    let (name, shape) = ("any_transpose_5001x3003", [5001, 3003]);
    bench_layout::<f64>(c, stream, name, rm(&shape), permuted(&shape, &[1, 0]));
    // 8 frames of 1088x1928 (padded) cropped at row 3, column 5 to 1080x1920, then NCHW -> NHWC:
    // the crop keeps the storage's strides, its coordinate 0 at element (0, 0, 3, 5).
    let frames = rm(&[8, 3, 1088, 1928]);
    let crop = Layout::new(&[8, 3, 1080, 1920], frames.stride()).expect("crop");
    bench_layout_at::<u8>(
        c,
        stream,
        "any_crop_nchw_to_nhwc_8x3x1080x1920",
        frames,
        frames.offset_of(&[0, 0, 3, 5]).expect("offset"),
        crop.permute(&[0, 2, 3, 1]).expect("permute"),
    );
    let (name, shape) = ("any_items_131072x3x5_021", [131072, 3, 5]);
    bench_layout::<f32>(c, stream, name, rm(&shape), permuted(&shape, &[0, 2, 1]));
    let (name, shape) = ("any_permute_8x16x1025x80_0213", [8, 16, 1025, 80]);
    bench_layout::<bf16>(c, stream, name, rm(&shape), permuted(&shape, &[0, 2, 1, 3]));
    let (name, shape) = ("any_permute_2x2048x32x128_0231", [2, 2048, 32, 128]);
    bench_layout::<f16>(c, stream, name, rm(&shape), permuted(&shape, &[0, 2, 3, 1]));
    // the mirror image of the crop: packed NHWC frames into the same crop of the padded planes
    let nhwc = rm(&[8, 1080, 1920, 3]);
    bench_layout_into::<u8>(
        c,
        stream,
        "any_nhwc_to_crop_nchw_8x3x1080x1920",
        (nhwc, 0, nhwc.permute(&[0, 3, 1, 2]).expect("permute")),
        (
            frames,
            frames.offset_of(&[0, 0, 3, 5]).expect("offset"),
            crop,
        ),
    );
}

fn benches(c: &mut Criterion) {
    let Some(stream) = gpu() else { return };
    // SAFETY: the benchmarks use this one stream for every buffer, created after this call, so
    // cudarc's cross-stream event tracking is not needed; without it launches can be captured into
    // graphs (graph_time) and the timed path has no per-launch event records.
    unsafe { stream.context().disable_event_tracking() };
    bench_limit(c, &stream);
    bench_launch(c, &stream);
    alignment_benches(c, &stream);
    batch_benches(c, &stream);
    layout_benches(c, &stream);
    any_shape_benches(c, &stream);
    let big = [
        copy("16384x16384_dense", 16384, 16384, 16384, 16384),
        copy("16383x16383_ld16384", 16383, 16383, 16384, 16384),
        copy("16384x16380_ld16388_to_packed", 16384, 16380, 16388, 16380),
        copy("8192x130_ld136_to_130", 8192, 130, 136, 130),
        copy("pad_16383_to_16384", 16383, 16383, 16384, 16384).pad(16384, 16384),
        copy("130x130", 130, 130, 130, 130),
        copy("32x32", 32, 32, 32, 32),
    ];
    for s in &big {
        bench_shape::<f16>(c, &stream, s);
    }
    bench_shape::<f32>(c, &stream, &copy("4096x4096", 4096, 4096, 4096, 4096));
    bench_shape::<bf16>(c, &stream, &copy("4096x4096", 4096, 4096, 4096, 4096));
}

// Warm-up of 2 s: after the GPU has idled (a group's setup: host data, uploads), bandwidth dips for a
// few hundred ms about 0.7-1 s into the load (H200, 2026-11-30 (e): raw samples of the first
// function of a group slow by 4-20% 0.27-0.6 s into a measurement that began after 0.4 s of warm-up,
// at the same time offset in different groups and calls; the D2D anchor, measured right after it,
// never). Two seconds put every function's measurement past it.
criterion_group! {
    name = gpu_benches;
    config = Criterion::default().warm_up_time(Duration::from_millis(2000)).measurement_time(Duration::from_millis(1200)).sample_size(20);
    targets = benches
}
criterion_main!(gpu_benches);
