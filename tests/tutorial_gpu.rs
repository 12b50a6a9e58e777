//! The CuTe tutorial TiledCopy on the GPU: random f32, poisoned destination, every element compared.

mod common;

use common::{gpu, Case, Fixture};
use cute_copy::{DeviceMatrix, Error, Operation};
use rand::SeedableRng;

fn tutorial_case(rows: usize, cols: usize, ld_src: usize, ld_dst: usize) {
    let Some(stream) = gpu() else { return };
    let mut rng = rand::rngs::StdRng::seed_from_u64((rows * 31 + cols) as u64);
    let mut f = Fixture::<f32>::new(
        &stream,
        (rows, cols, ld_src),
        (rows, cols, ld_dst),
        &mut rng,
    );
    cute_copy::tutorial_copy(&f.src.view(), &mut f.dst.view_mut(), &stream).unwrap();
    let (bad, first) = f.mismatches(&stream, Operation::Copy);
    assert_eq!(
        bad, 0,
        "{rows}x{cols} ld {ld_src}/{ld_dst}: first mismatch {first:?}"
    );
}

#[test]
fn tutorial_copy_matches_host_on_a_single_tile() {
    tutorial_case(32, 32, 32, 32);
}

#[test]
fn tutorial_copy_matches_host_on_square_and_non_square_shapes() {
    tutorial_case(4096, 4096, 4096, 4096);
    tutorial_case(64, 1024, 1024, 1024);
    tutorial_case(2048, 96, 96, 96);
}

#[test]
fn tutorial_copy_honours_independent_leading_dimensions() {
    tutorial_case(96, 160, 161, 200);
}

#[test]
fn tutorial_copy_rejects_sizes_that_are_not_multiples_of_32() {
    let Some(stream) = gpu() else { return };
    let src = DeviceMatrix::<f32>::zeros(&stream, 33, 32, 32).unwrap();
    let mut dst = DeviceMatrix::<f32>::zeros(&stream, 33, 32, 32).unwrap();
    let e = cute_copy::tutorial_copy(&src.view(), &mut dst.view_mut(), &stream).unwrap_err();
    assert!(matches!(e, Error::Unsupported(_)), "{e}");
}

#[test]
fn engine_copy_of_the_tutorial_shape_matches_host() {
    let Some(stream) = gpu() else { return };
    let mut rng = rand::rngs::StdRng::seed_from_u64(2);
    common::check::<f32>(&stream, Case::copy(4096, 4096), &mut rng);
}
