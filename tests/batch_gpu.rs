//! Many copies in one launch on the GPU: random batches of 2D copies and pads (mixed shapes,
//! offsets, alignments, empty entries), row gathers and scatters with repeated, negative and
//! out-of-range indices, block tables, a batch replayed from a CUDA graph. Every destination is
//! poisoned first and compared whole (the untouched rest included) with a host reference.

mod common;

use std::sync::Arc;

use common::{gpu, rng};
use cute_copy::cudarc::driver::CudaStream;
use cute_copy::reference::random_elements;
use cute_copy::{Batch, DeviceMatrix, Element, Error, IndexStatus, Region};
use half::f16;
use rand::Rng;

/// Host reference of one batch entry: copy `s` of `src` into `d` of `dst`, zeros past the source.
fn apply<T: Element>(src: &[T], dst: &mut [T], s: &Region, d: &Region) {
    for r in 0..d.rows {
        for c in 0..d.cols {
            dst[d.offset + r * d.ld + c] = if r < s.rows && c < s.cols {
                src[s.offset + r * s.ld + c]
            } else {
                T::default()
            };
        }
    }
}

fn region_cells(reg: &Region) -> impl Iterator<Item = usize> + '_ {
    (0..reg.rows).flat_map(move |r| (0..reg.cols).map(move |c| reg.offset + r * reg.ld + c))
}

/// A random batch: entries laid out in disjoint horizontal bands of the destination.
fn random_batch<T: Element>(stream: &Arc<CudaStream>, n: usize, seed: u64) {
    let mut r = rng(seed);
    let (src_ld, dst_ld) = (700 + r.random_range(0..9), 600 + r.random_range(0..9));
    let src_rows = 300;
    let mut pairs = Vec::new();
    let mut dst_row = 0;
    for _ in 0..n {
        let rows = if r.random_bool(0.05) {
            0
        } else {
            r.random_range(1..12)
        };
        let cols = if r.random_bool(0.05) {
            0
        } else {
            r.random_range(1..500)
        };
        let pad = r.random_bool(0.2);
        let (dr, dc) = if pad {
            (rows + r.random_range(0..3), cols + r.random_range(0..20))
        } else {
            (rows, cols)
        };
        let s = Region::at(
            r.random_range(0..src_rows - rows),
            r.random_range(0..src_ld - cols),
            rows,
            cols,
            src_ld,
        );
        let d = Region::at(
            dst_row,
            r.random_range(0..dst_ld - dc.max(1) + 1).min(dst_ld - dc),
            dr,
            dc,
            dst_ld,
        );
        dst_row += dr;
        pairs.push((s, d));
    }
    let dst_rows = dst_row + 2;
    let src_host: Vec<T> = random_elements(src_rows * src_ld, r.random());
    let before: Vec<T> = random_elements(dst_rows * dst_ld, r.random());
    let src = DeviceMatrix::from_host(stream, src_rows, src_ld, src_ld, &src_host).unwrap();
    let mut dst = DeviceMatrix::from_host(stream, dst_rows, dst_ld, dst_ld, &before).unwrap();
    let mut batch = Batch::<T>::new();
    for (s, d) in &pairs {
        batch.push(*s, *d).unwrap();
    }
    let plan = batch.plan().unwrap();
    assert_eq!(plan.copies, n);
    batch
        .launch(&src.view(), &mut dst.view_mut(), stream)
        .unwrap();
    let after = dst.to_host(stream).unwrap();
    let mut want = before.clone();
    for (s, d) in &pairs {
        apply(&src_host, &mut want, s, d);
    }
    let bad = (0..want.len())
        .filter(|&i| want[i].to_bits() != after[i].to_bits())
        .count();
    assert_eq!(
        bad,
        0,
        "{} of {} elements differ ({} copies, seed {seed})",
        bad,
        want.len(),
        n
    );
}

#[test]
fn random_batches_match_the_reference() {
    let Some(stream) = gpu() else { return };
    for (k, n) in [1usize, 2, 7, 100, 1000].into_iter().enumerate() {
        random_batch::<u8>(&stream, n, 100 + k as u64);
        random_batch::<f16>(&stream, n, 200 + k as u64);
        random_batch::<f32>(&stream, n, 300 + k as u64);
        random_batch::<u64>(&stream, n, 400 + k as u64);
    }
}

#[test]
fn ten_thousand_small_copies_in_one_launch() {
    let Some(stream) = gpu() else { return };
    random_batch::<u16>(&stream, 10_000, 7);
}

#[test]
fn overlapping_destinations_are_refused_before_launch() {
    let Some(stream) = gpu() else { return };
    let src = DeviceMatrix::<f32>::zeros(&stream, 64, 64, 64).unwrap();
    let mut dst = DeviceMatrix::<f32>::from_host(&stream, 64, 64, 64, &vec![7.0; 64 * 64]).unwrap();
    let mut batch = Batch::<f32>::new();
    batch
        .push(Region::at(0, 0, 4, 4, 64), Region::at(0, 0, 4, 4, 64))
        .unwrap();
    batch
        .push(Region::at(0, 0, 4, 4, 64), Region::at(3, 3, 4, 4, 64))
        .unwrap();
    assert!(matches!(
        batch.launch(&src.view(), &mut dst.view_mut(), &stream),
        Err(Error::Overlap)
    ));
    // Column strips of one matrix interleave in address but share no byte: allowed.
    let mut batch = Batch::<f32>::new();
    batch
        .push(Region::at(0, 0, 64, 10, 64), Region::at(0, 0, 64, 10, 64))
        .unwrap();
    batch
        .push(Region::at(0, 0, 64, 10, 64), Region::at(0, 10, 64, 10, 64))
        .unwrap();
    batch
        .launch(&src.view(), &mut dst.view_mut(), &stream)
        .unwrap();
    let after = dst.to_host(&stream).unwrap();
    assert!(after
        .iter()
        .enumerate()
        .all(|(i, &x)| if i % 64 < 20 { x == 0.0 } else { x == 7.0 }));
    // A region past the end of a view is refused at launch, before anything is written.
    let mut batch = Batch::<f32>::new();
    batch
        .push(Region::at(60, 0, 5, 4, 64), Region::at(0, 0, 5, 4, 64))
        .unwrap();
    assert!(matches!(
        batch.launch(&src.view(), &mut dst.view_mut(), &stream),
        Err(Error::OutOfBounds { .. })
    ));
    // A destination smaller than its source is refused at push.
    assert!(matches!(
        batch.push(Region::at(0, 0, 5, 4, 64), Region::at(0, 0, 4, 4, 64)),
        Err(Error::ShapeMismatch { .. })
    ));
}

fn rows_equal<T: Element>(a: &[T], ai: usize, b: &[T], bi: usize, cols: usize) -> bool {
    (0..cols).all(|c| a[ai + c].to_bits() == b[bi + c].to_bits())
}

#[test]
fn gather_and_scatter_follow_indices_and_skip_bad_ones() {
    let Some(stream) = gpu() else { return };
    let mut r = rng(21);
    let (rows, cols, ld) = (5000, 333, 340);
    let src_host: Vec<f16> = random_elements(rows * ld, r.random());
    let src = DeviceMatrix::from_host(&stream, rows, cols, ld, &src_host).unwrap();
    let n = 777;
    // Repeated, negative (skip) and out-of-range (skip, recorded) indices.
    let idx: Vec<i64> = (0..n)
        .map(|i| match i % 50 {
            7 => -1,
            13 => rows as i64 + i as i64, // out of range
            _ => r.random_range(0..rows as i64 / 10),
        })
        .collect();
    let before: Vec<f16> = random_elements(n * (cols + 3), r.random());
    let mut dst = DeviceMatrix::from_host(&stream, n, cols, cols + 3, &before).unwrap();
    let idx_dev = stream.clone_htod(&idx).unwrap();
    let mut status = IndexStatus::new(&stream).unwrap();
    cute_copy::gather_rows(
        &src.view(),
        &idx_dev,
        &mut dst.view_mut(),
        &mut status,
        &stream,
    )
    .unwrap();
    match status.check(&stream) {
        Err(Error::IndexOutOfRange { count, first_item }) => {
            assert_eq!(count, (0..n).filter(|i| i % 50 == 13).count() as u64);
            assert_eq!(first_item, 13);
        }
        other => panic!("expected IndexOutOfRange, got {other:?}"),
    }
    status.check(&stream).unwrap(); // cleared
    let after = dst.to_host(&stream).unwrap();
    let ldd = cols + 3;
    for (i, &ix) in idx.iter().enumerate() {
        let row_ok = if ix < 0 || ix >= rows as i64 {
            rows_equal(&after, i * ldd, &before, i * ldd, ldd)
        } else {
            rows_equal(&after, i * ldd, &src_host, ix as usize * ld, cols)
                && rows_equal(&after, i * ldd + cols, &before, i * ldd + cols, 3)
        };
        assert!(row_ok, "gathered row {i} (index {ix})");
    }

    // Scatter with distinct indices (a permutation with holes) and one out of range.
    let m = 1000;
    let mut perm: Vec<i32> = (0..m as i32).collect();
    for i in (1..m).rev() {
        perm.swap(i, r.random_range(0..=i));
    }
    perm[5] = -3;
    perm[9] = 5000;
    let src2_host: Vec<u32> = random_elements(m * 70, r.random());
    let src2 = DeviceMatrix::from_host(&stream, m, 70, 70, &src2_host).unwrap();
    let before2: Vec<u32> = random_elements(m * 71, r.random());
    let mut dst2 = DeviceMatrix::from_host(&stream, m, 70, 71, &before2).unwrap();
    let pidx = stream.clone_htod(&perm).unwrap();
    cute_copy::scatter_rows(
        &src2.view(),
        &pidx,
        &mut dst2.view_mut(),
        &mut status,
        &stream,
    )
    .unwrap();
    assert!(matches!(
        status.check(&stream),
        Err(Error::IndexOutOfRange {
            count: 1,
            first_item: 9
        })
    ));
    let after2 = dst2.to_host(&stream).unwrap();
    let mut want2 = before2.clone();
    for (i, &p) in perm.iter().enumerate() {
        if p >= 0 && (p as usize) < m {
            want2[p as usize * 71..p as usize * 71 + 70]
                .copy_from_slice(&src2_host[i * 70..i * 70 + 70]);
        }
    }
    assert_eq!(after2, want2);

    // Host indices are checked before upload.
    assert!(matches!(
        cute_copy::upload_indices(&stream, &[0i64, 4, 9, 2], 5),
        Err(Error::IndexOutOfRange {
            count: 1,
            first_item: 2
        })
    ));
    // A block table's columns against their own pools: source 10 blocks, destination 4.
    assert!(cute_copy::upload_block_table(&stream, &[9i32, 3, 2, 0], 10, 4).is_ok());
    assert!(matches!(
        cute_copy::upload_block_table(&stream, &[9i32, 3, 2, 4, 10, 1], 10, 4),
        Err(Error::IndexOutOfRange {
            count: 2,
            first_item: 1
        })
    ));
    assert!(matches!(
        cute_copy::upload_block_table(&stream, &[1i32, 2, 3], 10, 4),
        Err(Error::IndexCount {
            got: 3,
            expected: 4,
            ..
        })
    ));
}

#[test]
fn block_tables_copy_blocks_between_pools() {
    let Some(stream) = gpu() else { return };
    let mut r = rng(31);
    for (block_rows, cols, ld_src, ld_dst) in [
        (16, 128, 128, 128),
        (16, 129, 131, 129),
        (3, 1000, 1003, 1001),
    ] {
        let (pool_src, pool_dst) = (300, 200);
        let src_host: Vec<f16> = random_elements(pool_src * block_rows * ld_src, r.random());
        let src = DeviceMatrix::from_host(&stream, pool_src * block_rows, cols, ld_src, &src_host)
            .unwrap();
        let before: Vec<f16> = random_elements(pool_dst * block_rows * ld_dst, r.random());
        let mut dst =
            DeviceMatrix::from_host(&stream, pool_dst * block_rows, cols, ld_dst, &before).unwrap();
        // Distinct destination blocks; a few negative (skip) and one past the end of the source.
        let mut dsts: Vec<i32> = (0..pool_dst as i32).collect();
        for i in (1..dsts.len()).rev() {
            dsts.swap(i, r.random_range(0..=i));
        }
        let n = 150;
        let mut pairs = Vec::new();
        for (k, &d) in dsts.iter().take(n).enumerate() {
            let s = match k {
                10 => -1,
                20 => pool_src as i32,
                _ => r.random_range(0..pool_src as i32),
            };
            pairs.extend([s, d]);
        }
        let pairs_dev = stream.clone_htod(&pairs).unwrap();
        let mut status = IndexStatus::new(&stream).unwrap();
        let plan = cute_copy::copy_blocks(
            &src.view(),
            &mut dst.view_mut(),
            block_rows,
            &pairs_dev,
            &mut status,
            &stream,
        )
        .unwrap();
        assert_eq!(plan.items, n);
        assert!(matches!(
            status.check(&stream),
            Err(Error::IndexOutOfRange {
                count: 1,
                first_item: 20
            })
        ));
        let after = dst.to_host(&stream).unwrap();
        let mut want = before.clone();
        for k in 0..n {
            let (s, d) = (pairs[2 * k], pairs[2 * k + 1] as usize);
            if s < 0 || s as usize >= pool_src {
                continue;
            }
            for row in 0..block_rows {
                let so = (s as usize * block_rows + row) * ld_src;
                let dof = (d * block_rows + row) * ld_dst;
                want[dof..dof + cols].copy_from_slice(&src_host[so..so + cols]);
            }
        }
        let bad = (0..want.len())
            .filter(|&i| want[i].to_bits() != after[i].to_bits())
            .count();
        assert_eq!(
            bad, 0,
            "block copy {block_rows}x{cols} ld {ld_src}/{ld_dst}"
        );
    }
}

#[test]
fn regions_cover_what_they_say() {
    let reg = Region::at(2, 3, 2, 2, 10);
    assert_eq!(region_cells(&reg).collect::<Vec<_>>(), [23, 24, 33, 34]);
}
