//! Bad input: a typed error, nothing written, never a panic or trap. The cases that need a GPU
//! (buffers, streams) skip without one; the rest run everywhere.

mod common;

use common::gpu;
use cute_copy::cudarc::driver::{CudaContext, DevicePtr};
use cute_copy::{Atom, DType, DeviceMatrix, Error, Operand, Plan, RawMatrix};

#[test]
fn no_driver_or_no_device_is_a_typed_error_not_a_panic() {
    let count = cute_copy::device_count();
    match cute_copy::stream(count) {
        Err(Error::NoDriver) => assert_eq!(count, 0),
        Err(Error::NoDevice { ordinal, count: c }) => assert_eq!((ordinal, c), (count, count)),
        other => panic!("expected NoDriver or NoDevice, got {other:?}"),
    }
    assert_eq!(
        cute_copy::runtime_device_count(),
        count,
        "cudart and the driver disagree"
    );
}

#[test]
fn launch_beyond_the_grid_limit_is_refused_before_launch() {
    let max = Operand {
        rows: i32::MAX as usize,
        cols: i32::MAX as usize,
        ld: i32::MAX as usize,
        offset_bytes: 0,
    };
    let e = Plan::new(DType::U8, max, max, Some(Atom::Universal), None).unwrap_err();
    assert!(matches!(e, Error::GridTooLarge { .. }), "{e}");
}

#[test]
fn zero_and_overflowing_sizes_are_rejected_or_empty() {
    let e = Plan::new(
        DType::F32,
        Operand {
            rows: 2,
            cols: 3,
            ld: 0,
            offset_bytes: 0,
        },
        Operand::packed(2, 3),
        None,
        None,
    );
    assert!(
        matches!(e, Err(Error::LeadingDimension { ld: 0, cols: 3, .. })),
        "{e:?}"
    );
    let p = Plan::new(
        DType::F32,
        Operand::packed(0, 5),
        Operand::packed(0, 5),
        None,
        None,
    )
    .unwrap();
    assert_eq!(p.blocks(), 0, "an empty copy launches nothing");
    let big = Operand {
        rows: usize::MAX / 2,
        cols: 4,
        ld: 4,
        offset_bytes: 0,
    };
    assert!(matches!(
        Plan::new(DType::F64, big, big, None, None),
        Err(Error::Overflow(_))
    ));
}

#[test]
fn bad_buffers_are_typed_errors_and_write_nothing() {
    let Some(stream) = gpu() else { return };
    // ld < cols, wrong host length, sub-matrix out of range
    assert!(matches!(
        DeviceMatrix::<f32>::zeros(&stream, 4, 8, 7),
        Err(Error::LeadingDimension { ld: 7, cols: 8, .. })
    ));
    assert!(matches!(
        DeviceMatrix::<f32>::from_host(&stream, 4, 8, 8, &[0.0; 31]),
        Err(Error::HostLength {
            got: 31,
            expected: 32,
            ..
        })
    ));
    let src = DeviceMatrix::<f32>::from_host(
        &stream,
        4,
        8,
        8,
        &(0..32).map(|i| i as f32).collect::<Vec<_>>(),
    )
    .unwrap();
    assert!(matches!(
        src.view().sub(2, 0, 3, 8),
        Err(Error::DoesNotFit { .. })
    ));

    let poison = vec![-1.0f32; 32];
    let mut dst = DeviceMatrix::<f32>::from_host(&stream, 4, 8, 8, &poison).unwrap();
    // shape mismatch for a copy, a destination smaller than the source for a pad
    let e = cute_copy::copy(
        &src.view(),
        &mut dst.view_mut().sub_mut(0, 0, 4, 7).unwrap(),
        &stream,
    )
    .unwrap_err();
    assert!(matches!(e, Error::ShapeMismatch { .. }), "{e}");
    let e = cute_copy::pad(
        &src.view(),
        &mut dst.view_mut().sub_mut(0, 0, 3, 8).unwrap(),
        &stream,
    )
    .unwrap_err();
    assert!(matches!(e, Error::ShapeMismatch { .. }), "{e}");
    // an explicit atom that is illegal for the buffers
    let e = cute_copy::copy_with(
        Atom::Universal128,
        &src.view().sub(0, 1, 4, 7).unwrap(),
        &mut dst.view_mut().sub_mut(0, 0, 4, 7).unwrap(),
        &stream,
    )
    .unwrap_err();
    assert!(
        matches!(
            e,
            Error::Misaligned {
                what: "source base address",
                value: 4,
                ..
            }
        ),
        "{e}"
    );
    let e = cute_copy::copy_with(Atom::Universal16, &src.view(), &mut dst.view_mut(), &stream)
        .unwrap_err();
    assert!(matches!(e, Error::AtomNarrowerThanElement { .. }), "{e}");
    assert_eq!(
        dst.to_host(&stream).unwrap(),
        poison,
        "an error must write nothing"
    );
}

#[test]
fn raw_views_past_their_allocation_overlapping_or_of_other_dtypes_are_refused() {
    let Some(stream) = gpu() else { return };
    let buf = DeviceMatrix::<u16>::from_host(&stream, 1, 1024, 1024, &vec![7u16; 1024]).unwrap();
    let (ptr, guard) = buf.as_slice().device_ptr(&stream);
    let ptr: u64 = ptr;
    drop(guard);
    // SAFETY: `ptr` addresses the 1024 u16 of `buf`, alive for this test, on this stream's context.
    let whole = unsafe { RawMatrix::new(ptr, 1024, DType::U16, 16, 64, 64, &stream) }.unwrap();
    // SAFETY: as above; the view is refused because it claims more than the allocation holds.
    let past = unsafe { RawMatrix::new(ptr, 1024, DType::U16, 17, 64, 64, &stream) };
    assert!(
        matches!(
            past,
            Err(Error::OutOfBounds {
                needed: 1088,
                len: 1024,
                ..
            })
        ),
        "{past:?}"
    );
    let a = whole.sub(0, 0, 8, 64).unwrap();
    let mut b = whole.sub(4, 0, 8, 64).unwrap();
    assert!(matches!(
        cute_copy::copy_raw(&a, &mut b, None, &stream),
        Err(Error::Overlap)
    ));
    // SAFETY: as above, viewed as f16 (same width, other dtype).
    let mut as_f16 = unsafe { RawMatrix::new(ptr, 1024, DType::F16, 16, 64, 64, &stream) }
        .unwrap()
        .sub(8, 0, 8, 64)
        .unwrap();
    let e = cute_copy::copy_raw(&a, &mut as_f16, None, &stream).unwrap_err();
    assert!(
        matches!(
            e,
            Error::DTypeMismatch {
                src: DType::U16,
                dst: DType::F16
            }
        ),
        "{e}"
    );
    assert_eq!(
        buf.to_host(&stream).unwrap(),
        vec![7u16; 1024],
        "an error must write nothing"
    );
    // A legal raw copy between the two halves works.
    let mut lower = whole.sub(8, 0, 8, 64).unwrap();
    cute_copy::copy_raw(&a, &mut lower, None, &stream).unwrap();
    assert_eq!(buf.to_host(&stream).unwrap(), vec![7u16; 1024]);
}

#[test]
fn a_stream_of_another_context_is_refused() {
    let Some(stream) = gpu() else { return };
    let src = DeviceMatrix::<f32>::zeros(&stream, 4, 4, 4).unwrap();
    let mut dst = DeviceMatrix::<f32>::zeros(&stream, 4, 4, 4).unwrap();
    let other = CudaContext::new_non_primary(0, 0).unwrap();
    let other_stream = other.new_stream().unwrap();
    let e = cute_copy::copy(&src.view(), &mut dst.view_mut(), &other_stream).unwrap_err();
    assert!(
        matches!(e, Error::WrongContext { what: "source", .. }),
        "{e}"
    );
    stream.context().bind_to_thread().unwrap();
}

#[test]
fn allocation_failure_is_a_typed_error() {
    let Some(stream) = gpu() else { return };
    // 2^40 f32 = 4 TiB: more than any GPU has.
    let e = DeviceMatrix::<f32>::zeros(&stream, 1 << 20, 1 << 20, 1 << 20).unwrap_err();
    assert!(matches!(e, Error::Driver(_)), "{e}");
    // The context still works afterwards.
    let m = DeviceMatrix::<f32>::zeros(&stream, 2, 2, 2).unwrap();
    assert_eq!(m.to_host(&stream).unwrap(), vec![0.0; 4]);
}

#[test]
fn a_kept_plan_launches_on_its_views_and_is_refused_for_others_with_nothing_written() {
    let Some(stream) = gpu() else { return };
    let host: Vec<u32> = (0..40 * 72).map(|i| i as u32).collect();
    let src = DeviceMatrix::from_host(&stream, 40, 70, 72, &host).unwrap();
    let poison = vec![0xdead_beef_u32; 40 * 72];
    let mut dst = DeviceMatrix::from_host(&stream, 40, 70, 72, &poison).unwrap();
    let plan = cute_copy::plan(&src.view(), &dst.view_mut(), None).unwrap();
    // The same shapes at another offset or leading dimension are other views: refused.
    {
        let shifted = src.view().sub(1, 1, 39, 69).unwrap();
        let mut dv = dst.view_mut();
        let mut narrow = dv.sub_mut(0, 0, 39, 69).unwrap();
        let e = cute_copy::launch(&plan, &shifted, &mut narrow, &stream).unwrap_err();
        assert!(matches!(e, Error::PlanMismatch), "{e}");
    }
    let moved = src.view().sub(0, 1, 40, 69).unwrap();
    let e = cute_copy::launch(&plan, &moved, &mut dst.view_mut(), &stream).unwrap_err();
    assert!(matches!(e, Error::PlanMismatch), "{e}");
    assert_eq!(
        dst.to_host(&stream).unwrap(),
        poison,
        "a refused launch wrote"
    );
    // Its own views: the copy, twice.
    for _ in 0..2 {
        cute_copy::launch(&plan, &src.view(), &mut dst.view_mut(), &stream).unwrap();
    }
    let got = dst.to_host(&stream).unwrap();
    for r in 0..40 {
        assert_eq!(
            got[r * 72..r * 72 + 70],
            host[r * 72..r * 72 + 70],
            "row {r}"
        );
        assert_eq!(
            got[r * 72 + 70..r * 72 + 72],
            poison[..2],
            "row {r}'s pitch gap"
        );
    }
}
