//! candle interop on the GPU (feature `candle`): `cute_copy::candle` against candle's own CPU
//! results, bit for bit, on candle's CUDA device and stream. Destinations are poisoned (filled
//! with a value the copy never writes) so that a missed or stray write shows.
//! Every test's name starts with `candle_` (`.gpu/run tests candle` on the GPU host).

use std::io::Write;

use candle_core::{DType, Device, Tensor};
use cute_copy::candle as cc;
use cute_copy::reference::random_elements;
use cute_copy::{Element, Error};
use half::{bf16, f16};

/// candle's CUDA device 0, or None after a visible skip line (a failure under
/// `CUTE_COPY_REQUIRE_GPU=1`, as the other GPU tests).
fn gpu() -> Option<Device> {
    match Device::new_cuda(0) {
        Ok(d) => Some(d),
        Err(e) => {
            if std::env::var("CUTE_COPY_REQUIRE_GPU").as_deref() == Ok("1") {
                panic!("CUTE_COPY_REQUIRE_GPU=1 but no usable GPU: {e}");
            }
            // candle's error carries a backtrace under RUST_BACKTRACE: its first line says why.
            let why = e.to_string();
            let why = why.lines().next().unwrap_or_default();
            let _ = writeln!(std::io::stderr(), "skipped: no GPU ({why})");
            None
        }
    }
}

/// A random tensor of `shape` on the CPU (random bits: NaNs included, so results are compared
/// as bits).
fn random<T: Element + candle_core::WithDType>(shape: &[usize], seed: u64) -> Tensor {
    let host: Vec<T> = random_elements(shape.iter().product(), seed);
    Tensor::from_vec(host, shape, &Device::Cpu).unwrap()
}

fn bits(t: &Tensor) -> Vec<u64> {
    let t = t.to_device(&Device::Cpu).unwrap().flatten_all().unwrap();
    match t.dtype() {
        DType::U8 => t
            .to_vec1::<u8>()
            .unwrap()
            .iter()
            .map(|&x| x as u64)
            .collect(),
        DType::I16 => (t.to_vec1::<i16>().unwrap().iter())
            .map(|&x| x as u16 as u64)
            .collect(),
        DType::F16 => (t.to_vec1::<f16>().unwrap().iter())
            .map(|x| x.to_bits() as u64)
            .collect(),
        DType::BF16 => (t.to_vec1::<bf16>().unwrap().iter())
            .map(|x| x.to_bits() as u64)
            .collect(),
        DType::F32 => (t.to_vec1::<f32>().unwrap().iter())
            .map(|x| x.to_bits() as u64)
            .collect(),
        DType::F64 => t
            .to_vec1::<f64>()
            .unwrap()
            .iter()
            .map(|x| x.to_bits())
            .collect(),
        DType::I64 => t
            .to_vec1::<i64>()
            .unwrap()
            .iter()
            .map(|&x| x as u64)
            .collect(),
        d => panic!("{d:?}"),
    }
}

fn assert_same(what: &str, got: &Tensor, want: &Tensor) {
    assert_eq!(got.dims(), want.dims(), "{what}: shape");
    assert_eq!(got.dtype(), want.dtype(), "{what}: dtype");
    assert!(bits(got) == bits(want), "{what}: values differ");
}

/// Every element width, the Layouts shapes' kinds (transpose, head permute, NCHW -> NHWC, a
/// batched narrow) at small sizes with odd extents: the result is candle's CPU
/// `permute(..).contiguous()`, with candle's dtype, shape and device.
#[test]
fn candle_permutes_and_narrows_match_candles_cpu_contiguous() {
    let Some(dev) = gpu() else { return };
    let cases: Vec<(Tensor, Vec<usize>)> = vec![
        (random::<f32>(&[300, 517], 1), vec![1, 0]),
        (random::<f16>(&[2, 8, 333, 64], 2), vec![0, 2, 1, 3]),
        (random::<bf16>(&[3, 5, 129, 80], 3), vec![0, 2, 1, 3]),
        (random::<f32>(&[4, 3, 57, 61], 4), vec![0, 2, 3, 1]),
        (random::<u8>(&[999, 1001], 5), vec![1, 0]),
        (random::<f64>(&[17, 13, 11], 6), vec![2, 0, 1]),
        (
            random::<i16>(&[7, 6, 5, 4, 3, 2], 7),
            vec![5, 3, 1, 0, 2, 4],
        ),
    ];
    for (cpu, dims) in cases {
        let x = cpu.to_device(&dev).unwrap();
        let y = cc::permute(&x, dims.as_slice()).unwrap();
        assert!(y.device().same_device(&dev) && y.is_contiguous());
        let what = format!("{:?} {:?} permute {dims:?}", cpu.dtype(), cpu.dims());
        assert_same(
            &what,
            &y,
            &cpu.permute(dims.as_slice()).unwrap().contiguous().unwrap(),
        );
    }
    // A batched narrow (rows of 1023 of 1024) and a crop at an odd offset.
    let cpu = random::<f16>(&[6, 64, 1024], 8);
    let x = cpu.to_device(&dev).unwrap();
    let v = x.narrow(2, 0, 1023).unwrap();
    assert_same(
        "narrow",
        &cc::contiguous(&v).unwrap(),
        &cpu.narrow(2, 0, 1023).unwrap().contiguous().unwrap(),
    );
    let v = x
        .narrow(1, 3, 50)
        .unwrap()
        .narrow(2, 5, 999)
        .unwrap()
        .t()
        .unwrap();
    let want = cpu
        .narrow(1, 3, 50)
        .unwrap()
        .narrow(2, 5, 999)
        .unwrap()
        .t()
        .unwrap();
    let (y, plan) = cc::force_contiguous(&v).unwrap();
    assert_same("cropped transpose", &y, &want.contiguous().unwrap());
    assert_eq!(plan.bytes_moved(), 2 * 6 * 50 * 999 * 2);
}

/// A row-major tensor comes back as itself (candle's `contiguous` does the same); a forced copy
/// is a new storage with equal values.
#[test]
fn candle_contiguous_tensors_are_returned_as_they_are() {
    let Some(dev) = gpu() else { return };
    let x = random::<f32>(&[64, 33], 9).to_device(&dev).unwrap();
    assert_eq!(cc::contiguous(&x).unwrap().id(), x.id());
    let (y, _) = cc::force_contiguous(&x).unwrap();
    assert_ne!(y.id(), x.id());
    assert_same("forced copy", &y, &x);
}

/// `copy_into` a narrowed, permuted view of a poisoned tensor writes exactly the view's elements.
#[test]
fn candle_copy_into_a_view_writes_only_its_elements() {
    let Some(dev) = gpu() else { return };
    let src_cpu = random::<f16>(&[2, 40, 8, 64], 10);
    let src = src_cpu.to_device(&dev).unwrap();
    let poison = f16::from_bits(0x7bff); // the largest finite f16
    let canvas = Tensor::full(poison, (2, 8, 50, 64), &dev).unwrap();
    // dst[b, s, h, d] seen as canvas[b, h, 5 + s, d]: a narrow, then a permute.
    let view = canvas
        .narrow(2, 5, 40)
        .unwrap()
        .permute((0, 2, 1, 3))
        .unwrap();
    let plan = cc::copy_into(&src, &view).unwrap();
    assert_eq!(plan.bytes_moved(), 2 * 2 * 40 * 8 * 64 * 2);
    let p = Tensor::full(poison, (2, 8, 5, 64), &Device::Cpu).unwrap();
    let tail = Tensor::full(poison, (2, 8, 5, 64), &Device::Cpu).unwrap();
    let want = Tensor::cat(&[&p, &src_cpu.permute((0, 2, 1, 3)).unwrap(), &tail], 2).unwrap();
    assert_same("canvas", &canvas, &want);
}

/// Two views of one storage: disjoint row ranges copy (the source read through the destination's
/// storage, both seen transposed), overlapping ones are refused by the crate's overlap check, and
/// nothing is written.
#[test]
fn candle_copies_within_one_storage_are_exact_or_refused() {
    let Some(dev) = gpu() else { return };
    let cpu = random::<f32>(&[256, 96], 11);
    let x = cpu.to_device(&dev).unwrap();
    let (a, b) = (x.narrow(0, 0, 128).unwrap(), x.narrow(0, 128, 128).unwrap());
    cc::copy_into(&a.t().unwrap(), &b.t().unwrap()).unwrap();
    let half = cpu.narrow(0, 0, 128).unwrap();
    assert_same(
        "disjoint halves",
        &x,
        &Tensor::cat(&[&half, &half], 0).unwrap(),
    );
    let before = bits(&x);
    let overlapping = x.narrow(0, 64, 128).unwrap();
    match cc::copy_into(&a, &overlapping) {
        Err(Error::Overlap) => {}
        other => panic!("{other:?}"),
    }
    assert!(bits(&x) == before, "a refused copy wrote");
}

/// A KV-cache block gather by an i64 and an i32 table: blocks land in their slots, padding (-1)
/// leaves the poisoned slot as it was, an index past the pool is skipped and counted.
#[test]
fn candle_copy_blocks_gathers_pool_blocks_and_counts_bad_indices() {
    let Some(dev) = gpu() else { return };
    let pool_cpu = random::<bf16>(&[300, 16, 4, 32], 12);
    let pool = pool_cpu.to_device(&dev).unwrap();
    let poison = bf16::from_bits(0x4242);
    let table: Vec<i64> = vec![7, 0, 299, 1, -1, 2, 0, 3, 150, 4, 300, 5];
    let mut status = cc::index_status(&dev).unwrap();
    let stream = cc::stream(&dev).unwrap();
    for i32_table in [false, true] {
        let out = Tensor::full(poison, (6, 16, 4, 32), &dev).unwrap();
        let pairs = if i32_table {
            let t: Vec<i32> = table.iter().map(|&x| x as i32).collect();
            Tensor::from_vec(t, (6, 2), &dev).unwrap()
        } else {
            Tensor::from_vec(table.clone(), (6, 2), &dev).unwrap()
        };
        let plan = cc::copy_blocks(&pool, &out, &pairs, &mut status).unwrap();
        assert_eq!(plan.items, 6);
        match status.check(&stream) {
            Err(Error::IndexOutOfRange { count, first_item }) => {
                assert_eq!((count, first_item), (1, 5))
            }
            other => panic!("{other:?}"),
        }
        let p = Tensor::full(poison, (1, 16, 4, 32), &Device::Cpu).unwrap();
        let block = |b: usize| pool_cpu.narrow(0, b, 1).unwrap();
        let want = Tensor::cat(
            &[block(7), block(299), p.clone(), block(0), block(150), p],
            0,
        );
        assert_same("gathered blocks", &out, &want.unwrap());
    }
    // Blocks copied within one pool share its storage: refused as overlapping, nothing written.
    let pairs = Tensor::from_vec(vec![1i64, 2], (1, 2), &dev).unwrap();
    let before = bits(&pool);
    assert!(matches!(
        cc::copy_blocks(&pool, &pool, &pairs, &mut status),
        Err(Error::Overlap)
    ));
    assert!(bits(&pool) == before);
}

/// Arguments the crate refuses, refused before anything is written: other dtypes, other shapes,
/// a block table of floats, a pool whose blocks are not contiguous.
#[test]
fn candle_mismatched_arguments_are_refused_with_typed_errors() {
    let Some(dev) = gpu() else { return };
    let x = Tensor::zeros((8, 8), DType::F32, &dev).unwrap();
    let h = Tensor::zeros((8, 8), DType::F16, &dev).unwrap();
    assert!(matches!(
        cc::copy_into(&x, &h),
        Err(Error::DTypeMismatch { .. })
    ));
    let y = Tensor::zeros((8, 9), DType::F32, &dev).unwrap();
    assert!(matches!(
        cc::copy_into(&x, &y),
        Err(Error::LayoutMismatch { .. })
    ));
    let mut status = cc::index_status(&dev).unwrap();
    let f = Tensor::zeros((1, 2), DType::F32, &dev).unwrap();
    assert!(matches!(
        cc::copy_blocks(
            &x,
            &y.narrow(1, 0, 8).unwrap().contiguous().unwrap(),
            &f,
            &mut status
        ),
        Err(Error::Unsupported(_))
    ));
    let pairs = Tensor::from_vec(vec![0i64, 1], (1, 2), &dev).unwrap();
    let pool = Tensor::zeros((4, 8, 2), DType::F32, &dev).unwrap();
    assert!(matches!(
        cc::copy_blocks(
            &pool.transpose(1, 2).unwrap(),
            &pool.transpose(1, 2).unwrap(),
            &pairs,
            &mut status
        ),
        Err(Error::Shape(_))
    ));
    let cpu = Tensor::zeros((8, 8), DType::F32, &Device::Cpu).unwrap();
    assert!(matches!(
        cc::copy_into(&cpu, &x),
        Err(Error::NotOnCuda { what: "source", .. })
    ));
}
