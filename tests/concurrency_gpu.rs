//! Concurrency on the GPU: copies on several streams at once and from several host threads at once.
//! Every destination is checked against the host reference. (Graph capture: tests/graph_gpu.rs.)

mod common;

use common::{check, gpu, Case, Fixture};
use cute_copy::Operation;
use half::f16;
use rand::SeedableRng;

#[test]
fn copies_on_several_streams_at_once_are_each_correct() {
    let Some(stream) = gpu() else { return };
    let streams: Vec<_> = (0..4)
        .map(|_| stream.context().new_stream().unwrap())
        .collect();
    let mut jobs: Vec<Fixture<f16>> = streams
        .iter()
        .enumerate()
        .map(|(i, s)| {
            let (rows, cols) = (1000 + 17 * i, 777 + i);
            let mut rng = rand::rngs::StdRng::seed_from_u64(i as u64);
            Fixture::new(s, (rows, cols, cols + 3), (rows, cols, cols), &mut rng)
        })
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
        let (bad, first) = j.mismatches(s, Operation::Copy);
        assert_eq!(bad, 0, "first mismatch {first:?}");
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
