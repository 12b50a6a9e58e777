//! Launches captured into a CUDA graph replay correctly.
//!
//! cudarc tracks each buffer's uses with events once a context has more than one stream, and
//! CUDA refuses a wait on such an event inside a capture (CUDA_ERROR_STREAM_CAPTURE_ISOLATION). A
//! program that captures turns tracking off for the buffers it captures with and orders its
//! streams itself; this binary does so for its one stream, so it has a test binary of its own.

mod common;

use common::{gpu, Fixture};
use cute_copy::cudarc::driver::sys::{CUgraphInstantiate_flags, CUstreamCaptureMode};
use cute_copy::reference::compare;
use cute_copy::{DeviceMatrix, Operation};
use half::bf16;
use rand::{Rng, SeedableRng};

#[test]
fn launches_capture_into_a_cuda_graph_and_replay_correctly() {
    let Some(stream) = gpu() else { return };
    // SAFETY: every buffer below is created after this call and used on `stream` alone, so no
    // cross-stream ordering is needed; no other test shares this binary's context.
    unsafe { stream.context().disable_event_tracking() };
    let mut rng = rand::rngs::StdRng::seed_from_u64(11);
    let (rows, cols) = (513, 1025);
    let mut f = Fixture::<bf16>::new(
        &stream,
        (rows, cols, 1032),
        (rows + 3, cols + 5, cols + 5),
        &mut rng,
    );
    let mut mid = DeviceMatrix::<bf16>::zeros(&stream, rows, cols, cols).unwrap();
    stream.synchronize().unwrap();

    stream
        .begin_capture(CUstreamCaptureMode::CU_STREAM_CAPTURE_MODE_THREAD_LOCAL)
        .unwrap();
    // src -> mid (a copy into a packed buffer) -> dst (a pad): two dependent launches, one graph.
    let captured = cute_copy::copy(&f.src.view(), &mut mid.view_mut(), &stream)
        .and_then(|_| cute_copy::pad(&mid.view(), &mut f.dst.view_mut(), &stream));
    let graph = stream
        .end_capture(CUgraphInstantiate_flags::CUDA_GRAPH_INSTANTIATE_FLAG_AUTO_FREE_ON_LAUNCH)
        .unwrap();
    captured.unwrap();
    let graph = graph.expect("the capture recorded the launches");
    let (changed, _) = compare(&f.before, &f.dst.to_host(&stream).unwrap());
    assert_eq!(changed, 0, "capturing must not run anything");
    for _ in 0..3 {
        graph.launch().unwrap();
    }
    stream.synchronize().unwrap();
    let (bad, first) = f.mismatches(&stream, Operation::Pad);
    assert_eq!(bad, 0, "first mismatch {first:?}");
}

#[test]
fn a_batch_captured_into_a_graph_replays_three_times() {
    use cute_copy::{Batch, Region};
    let Some(stream) = gpu() else { return };
    // SAFETY: as above: buffers made after this call, used on `stream` alone.
    unsafe { stream.context().disable_event_tracking() };
    let mut rng = rand::rngs::StdRng::seed_from_u64(12);
    let (rows, cols) = (300, 700);
    let src_host: Vec<u8> = cute_copy::reference::random_elements(rows * cols, rng.random());
    let src = DeviceMatrix::from_host(&stream, rows, cols, cols, &src_host).unwrap();
    let poison: Vec<u8> = cute_copy::reference::random_elements(rows * cols, rng.random());
    let mut dst = DeviceMatrix::from_host(&stream, rows, cols, cols, &poison).unwrap();
    // 30 bands of 10 rows, each shifted right by one byte (so every copy is realigned).
    let pairs: Vec<(Region, Region)> = (0..30)
        .map(|k| {
            (
                Region::at(10 * k, 0, 10, cols - 1, cols),
                Region::at(10 * k, 1, 10, cols - 1, cols),
            )
        })
        .collect();
    let mut want = poison.clone();
    for (s, d) in &pairs {
        for r in 0..s.rows {
            let (so, dof) = (s.offset + r * cols, d.offset + r * cols);
            want[dof..dof + s.cols].copy_from_slice(&src_host[so..so + s.cols]);
        }
    }
    let mut batch = Batch::<u8>::new();
    for (s, d) in &pairs {
        batch.push(*s, *d).unwrap();
    }
    batch.upload(&stream).unwrap();
    stream.synchronize().unwrap();
    stream
        .begin_capture(CUstreamCaptureMode::CU_STREAM_CAPTURE_MODE_THREAD_LOCAL)
        .unwrap();
    let captured = batch.launch(&src.view(), &mut dst.view_mut(), &stream);
    let graph = stream
        .end_capture(CUgraphInstantiate_flags::CUDA_GRAPH_INSTANTIATE_FLAG_AUTO_FREE_ON_LAUNCH)
        .unwrap();
    captured.unwrap();
    let graph = graph.expect("the capture recorded the launch");
    assert_eq!(
        dst.to_host(&stream).unwrap(),
        poison,
        "capturing must not run anything"
    );
    for replay in 0..3 {
        dst.upload(&stream, &poison).unwrap();
        graph.launch().unwrap();
        stream.synchronize().unwrap();
        assert_eq!(dst.to_host(&stream).unwrap(), want, "replay {replay}");
    }
}
