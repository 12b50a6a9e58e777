//! The copy engine on the GPU: every atom and dtype, boundary tiles, strides, sub-views, pads.
//! Each case poisons the destination and compares the whole allocation with the host reference.

mod common;

use common::{check, check_dtype, gpu, rng, run_case, Case};
use cute_copy::{Atom, DType, Error};
use half::{bf16, f16};

#[test]
fn every_atom_copies_every_dtype_it_is_legal_for() {
    let Some(stream) = gpu() else { return };
    let mut r = rng(1);
    for dtype in DType::ALL {
        for atom in Atom::all() {
            if atom.values_for(dtype).is_err() {
                continue;
            }
            if atom.is_tensor_only() {
                // a tensor atom: 2D copies refuse it with a typed error (copy_tensor plans it)
                let src = cute_copy::DeviceMatrix::<u8>::zeros(&stream, 4, 64, 64).unwrap();
                let mut dst = cute_copy::DeviceMatrix::<u8>::zeros(&stream, 4, 64, 64).unwrap();
                let e = cute_copy::plan(&src.view(), &dst.view_mut(), Some(atom));
                assert!(matches!(e, Err(Error::Unsupported(_))), "{e:?}");
                continue;
            }
            // Dense 16-byte-aligned rows, shape cut by both tile edges.
            let case = Case::copy(131, 1000).lds(1024, 1040).atom(atom);
            check_dtype(&stream, dtype, case, &mut r);
        }
    }
}

#[test]
fn automatic_plan_handles_every_alignment_and_boundary() {
    let Some(stream) = gpu() else { return };
    let mut r = rng(2);
    for dtype in DType::ALL {
        for (rows, cols, ld_src, ld_dst, src_at, dst_at) in [
            (1, 1, 1, 1, (0, 0), (0, 0)),
            (130, 130, 130, 130, (0, 0), (0, 0)),
            (65, 257, 300, 261, (1, 3), (2, 1)),
            (200, 77, 84, 80, (0, 5), (3, 0)),
            (64, 256, 256, 256, (0, 0), (0, 0)),
        ] {
            let case = Case::copy(rows, cols)
                .lds(ld_src, ld_dst)
                .at(src_at, dst_at);
            check_dtype(&stream, dtype, case, &mut r);
        }
    }
}

#[test]
fn pad_writes_zeros_past_the_source_in_one_launch() {
    let Some(stream) = gpu() else { return };
    let mut r = rng(3);
    for atom in [
        None,
        Some(Atom::Universal128),
        Some(Atom::CpAsyncZfill128),
        Some(Atom::CpAsyncZfill32),
        Some(Atom::Universal),
    ] {
        let mut case = Case::copy(127, 250).lds(256, 264).pad_to(128, 256);
        case.atom = atom;
        check::<f16>(&stream, case, &mut r);
        let mut case = Case::copy(3, 5).lds(8, 72).pad_to(70, 64);
        case.atom = atom;
        check::<f32>(&stream, case, &mut r);
    }
}

#[test]
fn copy_into_a_sub_view_leaves_the_rest_untouched() {
    let Some(stream) = gpu() else { return };
    let mut r = rng(4);
    // The canaries around the destination region are checked by `check` for every case; here the
    // region is small inside a large allocation.
    check::<u8>(
        &stream,
        Case::copy(5, 7).lds(64, 128).at((3, 9), (17, 33)),
        &mut r,
    );
    check::<f64>(
        &stream,
        Case::copy(9, 3)
            .lds(16, 16)
            .at((1, 1), (2, 2))
            .atom(Atom::CpAsync64),
        &mut r,
    );
}

#[test]
fn cp_async_without_zero_fill_refuses_a_pad() {
    let Some(stream) = gpu() else { return };
    let mut r = rng(5);
    let e = run_case::<f16>(
        &stream,
        Case::copy(8, 8)
            .lds(16, 16)
            .pad_to(16, 16)
            .atom(Atom::CpAsync128),
        &mut r,
    )
    .err();
    assert!(
        matches!(e, Some(Error::AtomCannotZeroFill(Atom::CpAsync128))),
        "{e:?}"
    );
}

#[test]
fn misaligned_explicit_atom_is_an_error_before_launch() {
    let Some(stream) = gpu() else { return };
    let mut r = rng(6);
    let e = run_case::<f16>(
        &stream,
        Case::copy(8, 130).lds(130, 136).atom(Atom::Universal128),
        &mut r,
    )
    .err();
    assert!(
        matches!(
            e,
            Some(Error::Misaligned {
                what: "source row pitch",
                value: 260,
                ..
            })
        ),
        "{e:?}"
    );
}

#[test]
fn large_strided_copies_match_host() {
    let Some(stream) = gpu() else { return };
    let mut r = rng(7);
    check::<f16>(&stream, Case::copy(2047, 2047).lds(2048, 2048), &mut r);
    check::<f16>(&stream, Case::copy(1024, 2044).lds(2052, 2044), &mut r);
    check::<bf16>(
        &stream,
        Case::copy(1023, 1023).lds(1024, 1024).pad_to(1024, 1024),
        &mut r,
    );
}
