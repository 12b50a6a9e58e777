//! Concurrency on the GPU: copies on several streams at once and from several host threads at once.
//! Every destination is checked against the host reference. (Graph capture: tests/graph_gpu.rs.)

mod common;

use std::sync::Arc;

use common::{check, gpu, Case};
use cute_copy::reference::{compare, expected_destination, poisoned_destination, random_elements};
use cute_copy::{DeviceMatrix, Operation};
use half::f16;
use rand::SeedableRng;

struct Job {
    src_host: Vec<f16>,
    src: DeviceMatrix<f16>,
    dst: DeviceMatrix<f16>,
    before: Vec<f16>,
}

fn job(
    stream: &Arc<cute_copy::cudarc::driver::CudaStream>,
    rows: usize,
    cols: usize,
    seed: u64,
) -> Job {
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
    let src_host: Vec<f16> = random_elements(rows * (cols + 3), &mut rng);
    let src = DeviceMatrix::from_host(stream, rows, cols, cols + 3, &src_host).unwrap();
    let mut dst = DeviceMatrix::<f16>::zeros(stream, rows, cols, cols).unwrap();
    let before = poisoned_destination(
        &src_host,
        src.view().geometry(),
        dst.view_mut().geometry(),
        &mut rng,
    );
    dst.upload(stream, &before).unwrap();
    Job {
        src_host,
        src,
        dst,
        before,
    }
}

fn verify(stream: &Arc<cute_copy::cudarc::driver::CudaStream>, j: &mut Job) {
    let after = j.dst.to_host(stream).unwrap();
    let want = expected_destination(
        &j.src_host,
        j.src.view().geometry(),
        &j.before,
        j.dst.view_mut().geometry(),
        Operation::Copy,
    );
    let (bad, first) = compare(&want, &after);
    assert_eq!(bad, 0, "first mismatch {first:?}");
}

#[test]
fn copies_on_several_streams_at_once_are_each_correct() {
    let Some(stream) = gpu() else { return };
    let streams: Vec<_> = (0..4)
        .map(|_| stream.context().new_stream().unwrap())
        .collect();
    let mut jobs: Vec<Job> = streams
        .iter()
        .enumerate()
        .map(|(i, s)| job(s, 1000 + 17 * i, 777 + i, i as u64))
        .collect();
    for s in &streams {
        s.synchronize().unwrap();
    }
    // Enqueue everything before waiting for anything.
    for (j, s) in jobs.iter_mut().zip(&streams) {
        for _ in 0..3 {
            cute_copy::copy(&j.src.view(), &mut j.dst.view_mut(), s).unwrap();
        }
    }
    for (j, s) in jobs.iter_mut().zip(&streams) {
        verify(s, j);
    }
}

#[test]
fn copies_from_several_host_threads_are_each_correct() {
    let Some(stream) = gpu() else { return };
    let ctx = stream.context().clone();
    std::thread::scope(|scope| {
        for t in 0..4u64 {
            let ctx = ctx.clone();
            scope.spawn(move || {
                let s = ctx.new_stream().unwrap();
                let mut rng = rand::rngs::StdRng::seed_from_u64(100 + t);
                for k in 0..8 {
                    let case = Case::copy(50 + 31 * k, 90 + 7 * t as usize)
                        .lds(128 + 8 * k, 200)
                        .at((1, 0), (0, 2));
                    check::<f16>(&s, case, &mut rng);
                }
            });
        }
    });
}
