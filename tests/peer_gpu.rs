//! Copies between GPUs (src/peer.rs). On one GPU: copies within it carry no route and explain and
//! copy as before, and the routes between devices plan and print from facts given by hand. On two
//! (skipped with "skipped: needs 2 GPUs" on fewer): every family exact against the host reference
//! in both directions, on a stream of either device, the copy engine and the kernels, block tables
//! between pools on two devices, concurrent copies each way, kept plans and the refusals. Every
//! destination is poisoned and compared whole (the untouched rest included).
//!
//! The two-GPU runs: `CUTE_COPY_REQUIRE_GPUS=2 .gpu/run tests peer` on nvidia-h200-x2
//! (docs/between-gpus.md).

mod common;

use std::sync::Arc;

use common::tensor::Side;
use common::{check, gpu, rng, two_gpus, Case};
use cute_copy::cudarc::driver::CudaStream;
use cute_copy::reference::{
    compare, expected_destination, expected_tensor_copy, poisoned_destination,
    poisoned_tensor_destination, random_elements,
};
use cute_copy::{
    Atom, DType, DeviceMatrix, DevicePair, DeviceTensor, Element, Error, Family, IndexStatus,
    Layout, Operand, Operation, PeerEngine, PeerLink, PeerRoute, PeerShape, Plan, TensorPlan,
};
use half::{bf16, f16};
use rand::Rng;

// ---- Everywhere (no GPU needed): routes from facts given by hand. ----

#[test]
fn peer_routes_plan_and_print_from_facts_alone() {
    let h200 = cute_copy::DeviceInfo::new(60 << 20, 132, (9, 0));
    let sub = Operand {
        rows: 16384,
        cols: 16384,
        ld: 16392,
        offset_bytes: 0,
    };
    let mut p =
        Plan::for_device(DType::F16, sub, Operand::packed(16384, 16384), None, &h200).unwrap();
    p.peer = PeerRoute::choose(DevicePair::new(0, 1, 1, true), PeerShape::of_plan(&p)).unwrap();
    let route = p.peer.unwrap();
    assert_eq!(route.engine, PeerEngine::CopyEngine2D);
    let text = p.to_string();
    assert!(
        text.contains("on the copy engine") && text.contains("cuMemcpy3DPeerAsync"),
        "{text}"
    );
    // a transpose between devices: the transpose family on the stream's device, pulling
    let src = Layout::row_major(&[4096, 4096])
        .unwrap()
        .permute(&[1, 0])
        .unwrap();
    let mut t = TensorPlan::new(
        DType::F32,
        src,
        Layout::row_major(&[4096, 4096]).unwrap(),
        (0, 0),
    )
    .unwrap();
    t.peer = PeerRoute::choose(DevicePair::new(0, 1, 1, true), PeerShape::of_tensor(&t)).unwrap();
    assert_eq!(t.peer.unwrap().engine, PeerEngine::Kernel);
    assert!(t.to_string().contains("pulls"), "{t}");
    // and without peer access: refused before anything is launched
    let e = PeerRoute::choose(DevicePair::new(0, 1, 1, false), PeerShape::of_tensor(&t));
    assert!(matches!(e, Err(Error::NoPeerAccess { .. })), "{e:?}");
}

// ---- One GPU: nothing changes within a device. ----

#[test]
fn peer_copies_within_one_gpu_carry_no_route_and_copy_as_before() {
    let Some(stream) = gpu() else { return };
    let ctx = stream.context();
    let pair = DevicePair::of(ctx, ctx, ctx).unwrap();
    assert_eq!(pair.link, PeerLink::SameDevice);
    let mut r = rng(250);
    for case in [
        Case::copy(1000, 1000),
        Case::copy(300, 301).lds(1927, 305).at((1, 3), (0, 1)),
        Case::copy(127, 250).lds(256, 264).pad_to(128, 256),
    ] {
        let plan = check::<u8>(&stream, case, &mut r);
        assert_eq!(plan.peer, None);
        assert!(!plan.to_string().contains("between devices"), "{plan}");
    }
    let src = Layout::row_major(&[64, 96])
        .unwrap()
        .permute(&[1, 0])
        .unwrap();
    let plan = common::tensor::check::<f32>(
        &stream,
        Side::packed(src),
        Side::packed(Layout::row_major(&[96, 64]).unwrap()),
        &mut r,
    );
    assert_eq!(plan.peer, None);
    assert!(!plan.to_string().contains("between devices"), "{plan}");
    let (_, plan) = blocks_between(&stream, &stream, &stream, (32, 24), 128, &mut r);
    assert_eq!(plan.peer, None);
}

// ---- Two GPUs. ----

/// Which device's stream runs a copy between devices.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum On {
    /// The source's: the copy pushes.
    Src,
    /// The destination's: it pulls.
    Dst,
}

const BOTH: [On; 2] = [On::Src, On::Dst];

fn on<'a>(which: On, s: &'a Arc<CudaStream>, d: &'a Arc<CudaStream>) -> &'a Arc<CudaStream> {
    match which {
        On::Src => s,
        On::Dst => d,
    }
}

/// `case` with its source allocated on `s`'s device, its destination on `d`'s, the copy on a stream
/// of `which` side; the whole destination allocation read back on its own stream (so the copy
/// must be ordered before that stream's later work) and compared with the host reference.
fn check_between<T: Element>(
    s: &Arc<CudaStream>,
    d: &Arc<CudaStream>,
    which: On,
    case: Case,
    r: &mut impl Rng,
) -> Plan {
    let what = format!("{case:?} {} on {which:?}", T::DTYPE);
    let src_rows = case.src_at.0 + case.rows + 1;
    let dst_rows = case.dst_at.0 + case.dst_shape.0 + 1;
    let host: Vec<T> = random_elements(src_rows * case.ld_src, r.random());
    let src = DeviceMatrix::from_host(s, src_rows, case.ld_src, case.ld_src, &host).unwrap();
    let sview = src
        .view()
        .sub(case.src_at.0, case.src_at.1, case.rows, case.cols)
        .unwrap();
    let mut dst = DeviceMatrix::<T>::zeros(d, dst_rows, case.ld_dst, case.ld_dst).unwrap();
    let dgeo = dst
        .view_mut()
        .sub_mut(
            case.dst_at.0,
            case.dst_at.1,
            case.dst_shape.0,
            case.dst_shape.1,
        )
        .unwrap()
        .geometry()
        .unwrap();
    let sgeo = sview.geometry().unwrap();
    let before = poisoned_destination(&host, sgeo, dgeo, r.random());
    dst.upload(d, &before).unwrap();
    let plan = {
        let mut whole = dst.view_mut();
        let mut dview = whole
            .sub_mut(
                case.dst_at.0,
                case.dst_at.1,
                case.dst_shape.0,
                case.dst_shape.1,
            )
            .unwrap();
        let stream = on(which, s, d);
        let pad = case.dst_shape != (case.rows, case.cols);
        match (case.atom, pad) {
            (None, false) => cute_copy::copy(&sview, &mut dview, stream),
            (Some(a), false) => cute_copy::copy_with(a, &sview, &mut dview, stream),
            (None, true) => cute_copy::pad(&sview, &mut dview, stream),
            (Some(a), true) => cute_copy::pad_with(a, &sview, &mut dview, stream),
        }
        .unwrap_or_else(|e| panic!("{what}: {e}"))
    };
    let after = dst.to_host(d).unwrap();
    let op = if case.dst_shape != (case.rows, case.cols) {
        Operation::Pad
    } else {
        Operation::Copy
    };
    let want = expected_destination(&host, sgeo, &before, dgeo, op);
    let (bad, first) = compare(&want, &after);
    assert_eq!(bad, 0, "{what}: first mismatch {first:?}\n{plan}");
    let route = plan
        .peer
        .unwrap_or_else(|| panic!("{what}: no route\n{plan}"));
    assert_eq!(route.pair.stream, on(which, s, d).context().ordinal());
    assert!(plan.to_string().contains("between devices"), "{plan}");
    plan
}

#[test]
fn peer_every_2d_family_copies_exact_both_ways_on_either_stream() {
    let Some((a, b)) = two_gpus() else { return };
    let mut r = rng(251);
    for (s, d) in [(&a, &b), (&b, &a)] {
        for which in BOTH {
            // one run: the copy engine (cuMemcpyPeerAsync)
            let p = check_between::<f32>(s, d, which, Case::copy(1000, 1000), &mut r);
            assert_eq!(p.peer.unwrap().engine, PeerEngine::CopyEngine, "{p}");
            // a sub-matrix with long rows at a pitch: the copy engine (cuMemcpy3DPeerAsync)
            let case = Case::copy(1000, 1000).lds(1032, 1000).at((2, 8), (0, 0));
            let p = check_between::<f16>(s, d, which, case, &mut r);
            assert_eq!(p.peer.unwrap().engine, PeerEngine::CopyEngine2D, "{p}");
            // a u8 crop at odd offsets, rows of 301 B: the realign kernel
            let case = Case::copy(300, 301).lds(1927, 305).at((1, 3), (0, 1));
            let p = check_between::<u8>(s, d, which, case, &mut r);
            assert_eq!(p.peer.unwrap().engine, PeerEngine::Kernel, "{p}");
            assert_eq!(p.atom, Atom::Realign128, "{p}");
            // 16-byte rows of 256 B: the tile engine
            let case = Case::copy(200, 64).lds(64, 80);
            let p = check_between::<f32>(s, d, which, case, &mut r);
            assert_eq!(
                (p.peer.unwrap().engine, p.atom),
                (PeerEngine::Kernel, Atom::Universal128),
                "{p}"
            );
            // a pad: the kernel writes the zeros
            let case = Case::copy(127, 250).lds(256, 264).pad_to(128, 256);
            let p = check_between::<bf16>(s, d, which, case, &mut r);
            assert_eq!(p.peer.unwrap().engine, PeerEngine::Kernel, "{p}");
        }
    }
}

#[test]
fn peer_every_named_atom_runs_its_kernel_between_devices() {
    let Some((a, b)) = two_gpus() else { return };
    let mut r = rng(252);
    for atom in Atom::all() {
        if atom.family() == Family::Transpose || atom.values_for(DType::F16).is_err() {
            continue;
        }
        for (s, d, which) in [(&a, &b, On::Dst), (&b, &a, On::Src)] {
            let case = Case::copy(131, 1000).lds(1024, 1040).atom(atom);
            let p = check_between::<f16>(s, d, which, case, &mut r);
            assert_eq!(p.peer.unwrap().engine, PeerEngine::Kernel, "{p}");
        }
    }
}

/// A tensor copy from `src` (on `s`'s device) into `dst` (on `d`'s), on `which` side's stream,
/// compared whole with the host reference after a read on the destination's own stream.
fn check_tensor_between<T: Element>(
    (s, d): (&Arc<CudaStream>, &Arc<CudaStream>),
    which: On,
    src: Side,
    dst: Side,
    r: &mut impl Rng,
) -> TensorPlan {
    let host: Vec<T> = random_elements(src.alloc, r.random());
    let (sa, da) = ((src.offset, &src.layout), (dst.offset, &dst.layout));
    let before = poisoned_tensor_destination(&host, sa, dst.alloc, da, r.random());
    let want = expected_tensor_copy(&host, sa, &before, da);
    let all = |n| Layout::new(&[n], &[1]).unwrap();
    let sbuf = DeviceTensor::from_host(s, all(src.alloc), &host).unwrap();
    let mut dbuf = DeviceTensor::from_host(d, all(dst.alloc), &before).unwrap();
    let plan = {
        let sv = sbuf.view_at(src.offset, src.layout).unwrap();
        let mut dv = dbuf.view_at_mut(dst.offset, dst.layout).unwrap();
        cute_copy::copy_tensor(&sv, &mut dv, on(which, s, d))
            .unwrap_or_else(|e| panic!("{src:?} -> {dst:?} on {which:?}: {e}"))
    };
    let got = dbuf.to_host(d).unwrap();
    let (bad, first) = compare(&want, &got);
    assert_eq!(bad, 0, "{src:?} -> {dst:?} on {which:?}: {first:?}\n{plan}");
    assert!(plan.peer.is_some(), "{plan}");
    plan
}

#[test]
fn peer_every_tensor_route_copies_exact_both_ways_on_either_stream() {
    let Some((a, b)) = two_gpus() else { return };
    let mut r = rng(253);
    let rm = |s: &[usize]| Layout::row_major(s).unwrap();
    let frames = rm(&[2, 3, 37, 61]);
    let crop = Layout::new(&[2, 3, 30, 50], frames.stride()).unwrap();
    for (s, d) in [(&a, &b), (&b, &a)] {
        for which in BOTH {
            let pair = (s, d);
            // a transpose: the transpose family
            let t = rm(&[1000, 777]).permute(&[1, 0]).unwrap();
            let p = check_tensor_between::<f32>(
                pair,
                which,
                Side::placed(3, t, 5),
                Side::packed(rm(&[777, 1000])),
                &mut r,
            );
            assert_eq!(p.peer.unwrap().engine, PeerEngine::Kernel, "{p}");
            // a head permute and a crop of an NCHW batch to NHWC at an odd offset
            let x = rm(&[2, 16, 65, 80]).permute(&[0, 2, 1, 3]).unwrap();
            check_tensor_between::<bf16>(
                pair,
                which,
                Side::packed(x),
                Side::packed(rm(&[2, 65, 16, 80])),
                &mut r,
            );
            check_tensor_between::<u8>(
                pair,
                which,
                Side::placed(3 * 61 + 5, crop.permute(&[0, 2, 3, 1]).unwrap(), 7),
                Side::packed(rm(&[2, 30, 50, 3])),
                &mut r,
            );
            // matrices at item strides: the realign rows route
            let items = Layout::new(&[6, 33, 37], &[1500, 40, 1]).unwrap();
            check_tensor_between::<u8>(
                pair,
                which,
                Side::packed(items),
                Side::packed(rm(&[6, 33, 37])),
                &mut r,
            );
            // packed on both sides: one run on the copy engine; a strided matrix: pitched rows
            let p = check_tensor_between::<f16>(
                pair,
                which,
                Side::packed(rm(&[4, 8, 16, 32])),
                Side::placed(9, rm(&[4, 8, 16, 32]), 3),
                &mut r,
            );
            assert_eq!(p.peer.unwrap().engine, PeerEngine::CopyEngine, "{p}");
            let m = Layout::new(&[300, 1000], &[1030, 1]).unwrap();
            let p = check_tensor_between::<f32>(
                pair,
                which,
                Side::placed(1, m, 40),
                Side::packed(rm(&[300, 1000])),
                &mut r,
            );
            assert_eq!(p.peer.unwrap().engine, PeerEngine::CopyEngine2D, "{p}");
        }
    }
}

/// A block-table copy from a pool of `pools.0` blocks on `s`'s device into one of `pools.1` on
/// `d`'s (blocks of 16 rows x `cols` f16, pitched rows when `cols` is not 128), the table and the
/// status on `stream`'s device; returns the mismatches and the plan.
fn blocks_between(
    s: &Arc<CudaStream>,
    d: &Arc<CudaStream>,
    stream: &Arc<CudaStream>,
    (src_blocks, dst_blocks): (usize, usize),
    cols: usize,
    r: &mut impl Rng,
) -> (usize, cute_copy::BatchPlan) {
    let (br, ld) = (16, cols + if cols == 128 { 0 } else { 8 });
    let host: Vec<f16> = random_elements(src_blocks * br * ld, r.random());
    let src = DeviceMatrix::from_host(s, src_blocks * br, cols, ld, &host).unwrap();
    let before: Vec<f16> = random_elements(dst_blocks * br * ld, r.random());
    let mut dst = DeviceMatrix::from_host(d, dst_blocks * br, cols, ld, &before).unwrap();
    // every destination block once, in a random order, from random source blocks; some skipped
    let mut pairs = Vec::new();
    for k in 0..dst_blocks {
        let from = if k % 7 == 3 {
            -1
        } else {
            r.random_range(0..src_blocks) as i32
        };
        pairs.extend([from, k as i32]);
    }
    let table = cute_copy::upload_block_table(stream, &pairs, src_blocks, dst_blocks).unwrap();
    let mut status = IndexStatus::new(stream).unwrap();
    let plan = cute_copy::copy_blocks(
        &src.view(),
        &mut dst.view_mut(),
        br,
        &table,
        &mut status,
        stream,
    )
    .unwrap();
    status.check(stream).unwrap();
    let mut want = before.clone();
    for p in pairs.chunks(2) {
        if p[0] < 0 {
            continue;
        }
        for row in 0..br {
            let (so, dof) = (
                (p[0] as usize * br + row) * ld,
                (p[1] as usize * br + row) * ld,
            );
            want[dof..dof + cols].copy_from_slice(&host[so..so + cols]);
        }
    }
    let got = dst.to_host(d).unwrap();
    (compare(&want, &got).0, plan)
}

#[test]
fn peer_block_tables_copy_between_pools_on_two_devices_in_one_launch() {
    let Some((a, b)) = two_gpus() else { return };
    let mut r = rng(254);
    for (s, d) in [(&a, &b), (&b, &a)] {
        for which in BOTH {
            for cols in [128, 200] {
                let stream = on(which, s, d);
                let (bad, plan) = blocks_between(s, d, stream, (300, 257), cols, &mut r);
                assert_eq!(bad, 0, "{which:?} cols {cols}\n{plan}");
                let route = plan.peer.expect("a route");
                assert_eq!(route.engine, PeerEngine::Kernel);
                assert_eq!(route.pair.pulls(), which == On::Dst);
                assert!(plan.to_string().contains("between devices"), "{plan}");
            }
        }
    }
}

#[test]
fn peer_row_gathers_read_a_table_on_another_device() {
    let Some((a, b)) = two_gpus() else { return };
    let mut r = rng(255);
    let host: Vec<f32> = random_elements(500 * 260, r.random());
    let table = DeviceMatrix::from_host(&a, 500, 257, 260, &host).unwrap();
    let mut out = DeviceMatrix::<f32>::from_host(&b, 64, 257, 257, &[0.5; 64 * 257]).unwrap();
    let idx: Vec<i64> = (0..64).map(|i| (i * 37 % 500) as i64).collect();
    let dev_idx = cute_copy::upload_indices(&b, &idx, 500).unwrap();
    let mut status = IndexStatus::new(&b).unwrap();
    let plan = cute_copy::gather_rows(
        &table.view(),
        &dev_idx,
        &mut out.view_mut(),
        &mut status,
        &b,
    )
    .unwrap();
    status.check(&b).unwrap();
    assert!(plan.peer.is_some_and(|p| p.pair.pulls()), "{plan}");
    let got = out.to_host(&b).unwrap();
    for (i, &k) in idx.iter().enumerate() {
        let k = k as usize;
        assert_eq!(
            got[i * 257..(i + 1) * 257],
            host[k * 260..k * 260 + 257],
            "row {i}"
        );
    }
}

#[test]
fn peer_copies_each_way_at_once_are_each_correct() {
    let Some((a, b)) = two_gpus() else { return };
    // two more streams per device, so that cudarc's event tracking is on
    let (a2, b2) = (
        a.context().new_stream().unwrap(),
        b.context().new_stream().unwrap(),
    );
    let mut r = rng(256);
    struct Job {
        host: Vec<f16>,
        src: DeviceMatrix<f16>,
        dst: DeviceMatrix<f16>,
        before: Vec<f16>,
        home: Arc<CudaStream>,
        on: Arc<CudaStream>,
    }
    let mut jobs = Vec::new();
    // push and pull each way: rows of 2 KiB at a pitch (the copy engine) and rows of 258 B at
    // a pitch (the realign kernel), on the second stream of either device
    for (k, (s, d, run)) in [(&a, &b, &a2), (&b, &a, &b2), (&a, &b, &b2), (&b, &a, &a2)]
        .into_iter()
        .enumerate()
    {
        let (rows, cols, ld) = if k % 2 == 0 {
            (777, 1024, 1030)
        } else {
            (1500, 129, 133)
        };
        let host: Vec<f16> = random_elements(rows * ld, r.random());
        let src = DeviceMatrix::from_host(s, rows, cols, ld, &host).unwrap();
        let mut dst = DeviceMatrix::<f16>::zeros(d, rows, cols, cols).unwrap();
        let before = poisoned_destination(
            &host,
            src.view().geometry().unwrap(),
            dst.view_mut().geometry().unwrap(),
            r.random(),
        );
        dst.upload(d, &before).unwrap();
        jobs.push(Job {
            host,
            src,
            dst,
            before,
            home: d.clone(),
            on: run.clone(),
        });
    }
    // everything enqueued before anything is waited for
    for _ in 0..3 {
        for j in jobs.iter_mut() {
            cute_copy::copy(&j.src.view(), &mut j.dst.view_mut(), &j.on).unwrap();
        }
    }
    for j in jobs.iter_mut() {
        let after = j.dst.to_host(&j.home).unwrap();
        let want = expected_destination(
            &j.host,
            j.src.view().geometry().unwrap(),
            &j.before,
            j.dst.view_mut().geometry().unwrap(),
            Operation::Copy,
        );
        let (bad, first) = compare(&want, &after);
        assert_eq!(bad, 0, "first mismatch {first:?}");
    }
}

#[test]
fn peer_kept_plans_launch_on_their_side_and_are_refused_on_the_other() {
    let Some((a, b)) = two_gpus() else { return };
    let host: Vec<u32> = (0..40 * 72).map(|i| i as u32).collect();
    let src = DeviceMatrix::from_host(&a, 40, 70, 72, &host).unwrap();
    let poison = vec![0xdead_beef_u32; 40 * 70];
    let mut dst = DeviceMatrix::from_host(&b, 40, 70, 70, &poison).unwrap();
    let plan = cute_copy::plan(&src.view(), &dst.view_mut(), None).unwrap();
    let route = plan.peer.expect("a route");
    assert_eq!(
        (route.pair.src, route.pair.dst, route.pair.stream),
        (0, 1, 0)
    );
    // a stream of the destination's device: another route, another plan
    let e = cute_copy::launch(&plan, &src.view(), &mut dst.view_mut(), &b).unwrap_err();
    assert!(matches!(e, Error::PlanMismatch), "{e}");
    assert_eq!(dst.to_host(&b).unwrap(), poison, "a refusal writes nothing");
    cute_copy::launch(&plan, &src.view(), &mut dst.view_mut(), &a).unwrap();
    let got = dst.to_host(&b).unwrap();
    for row in 0..40 {
        assert_eq!(got[row * 70..row * 70 + 70], host[row * 72..row * 72 + 70]);
    }
}

#[test]
fn peer_refusals_are_typed_and_write_nothing() {
    let Some((a, b)) = two_gpus() else { return };
    // both buffers on device 0, the stream on device 1: not a copy between devices
    let src = DeviceMatrix::<f32>::zeros(&a, 4, 4, 4).unwrap();
    let mut dst = DeviceMatrix::from_host(&a, 4, 4, 4, &[3.0f32; 16]).unwrap();
    let e = cute_copy::copy(&src.view(), &mut dst.view_mut(), &b).unwrap_err();
    assert!(matches!(e, Error::WrongContext { .. }), "{e}");
    // a block table on the other device than the stream's
    let mut far = DeviceMatrix::from_host(&b, 4, 4, 4, &[3.0f32; 16]).unwrap();
    let table = cute_copy::upload_block_table(&b, &[0i32, 0], 4, 4).unwrap();
    let mut status = IndexStatus::new(&a).unwrap();
    let e = cute_copy::copy_blocks(&src.view(), &mut far.view_mut(), 1, &table, &mut status, &a)
        .unwrap_err();
    assert!(
        matches!(
            e,
            Error::WrongContext {
                what: "indices",
                ..
            }
        ),
        "{e}"
    );
    assert_eq!(dst.to_host(&a).unwrap(), vec![3.0; 16]);
    assert_eq!(far.to_host(&b).unwrap(), vec![3.0; 16]);
    // a stream of a third device
    if cute_copy::device_count() >= 3 {
        let c = cute_copy::stream(2).unwrap();
        let e = cute_copy::copy(&src.view(), &mut far.view_mut(), &c).unwrap_err();
        assert!(matches!(e, Error::StreamOnThirdDevice { .. }), "{e}");
        assert_eq!(far.to_host(&b).unwrap(), vec![3.0; 16]);
    } else {
        eprintln!("skipped: the third-device refusal needs 3 GPUs");
    }
    // H200 pairs always have peer access: the pair's facts say so
    let pair = DevicePair::of(a.context(), b.context(), b.context()).unwrap();
    assert_eq!(pair.link, PeerLink::Peer, "{pair:?}");
}

#[test]
fn peer_raw_views_on_two_devices_copy_on_either_engine() {
    let Some((a, b)) = two_gpus() else { return };
    let (rows, cols, ld) = (300usize, 700usize, 704usize);
    let host: Vec<u16> = (0..rows * ld).map(|i| (i * 7 + 1) as u16).collect();
    let src = DeviceMatrix::from_host(&a, rows, cols, ld, &host).unwrap();
    let poison = vec![0xbeef_u16; rows * cols];
    let dst = DeviceMatrix::from_host(&b, rows, cols, cols, &poison).unwrap();
    let back = DeviceMatrix::from_host(&b, cols, rows, rows, &poison).unwrap();
    let addr = |m: &DeviceMatrix<u16>, s: &Arc<CudaStream>| -> u64 {
        use cute_copy::cudarc::driver::DevicePtr;
        let (p, _guard) = m.as_slice().device_ptr(s);
        p
    };
    let (sp, dp, bp) = (addr(&src, &a), addr(&dst, &b), addr(&back, &b));
    // raw views are the caller's to order: everything written so far is finished
    a.synchronize().unwrap();
    b.synchronize().unwrap();
    // SAFETY: each address holds its matrix's whole allocation on that stream's device, alive
    // for the test; nothing else runs on them while the copies do (synchronized around them).
    let (s, mut d, mut t) = unsafe {
        (
            cute_copy::RawMatrix::new(sp, rows * ld, DType::U16, rows, cols, ld, &a).unwrap(),
            cute_copy::RawMatrix::new(dp, rows * cols, DType::U16, rows, cols, cols, &b).unwrap(),
            cute_copy::RawMatrix::new(bp, rows * cols, DType::U16, cols, rows, rows, &b).unwrap(),
        )
    };
    // pitched rows of 1400 B: the copy engine, pulled
    let plan = cute_copy::copy_raw(&s, &mut d, None, &b).unwrap();
    assert_eq!(
        plan.peer.unwrap().engine,
        PeerEngine::CopyEngine2D,
        "{plan}"
    );
    // a transpose: the transpose family, pushed
    let tp = cute_copy::copy_tensor_raw(&s.permute(&[1, 0]).unwrap(), &mut t, &a).unwrap();
    assert_eq!(tp.peer.unwrap().engine, PeerEngine::Kernel, "{tp}");
    a.synchronize().unwrap();
    b.synchronize().unwrap();
    let (got, tr) = (dst.to_host(&b).unwrap(), back.to_host(&b).unwrap());
    for r in 0..rows {
        for c in 0..cols {
            assert_eq!(got[r * cols + c], host[r * ld + c], "({r}, {c})");
            assert_eq!(tr[c * rows + r], host[r * ld + c], "transposed ({c}, {r})");
        }
    }
}

#[test]
fn peer_a_batch_of_copies_runs_between_devices_on_either_stream() {
    let Some((a, b)) = two_gpus() else { return };
    let mut r = rng(257);
    let (sld, dld, srows, drows) = (1000usize, 900usize, 400usize, 300usize);
    let host: Vec<f16> = random_elements(srows * sld, r.random());
    let src = DeviceMatrix::from_host(&a, srows, sld, sld, &host).unwrap();
    let before: Vec<f16> = random_elements(drows * dld, r.random());
    let mut dst = DeviceMatrix::from_host(&b, drows, dld, dld, &before).unwrap();
    let mut batch = cute_copy::Batch::<f16>::new();
    let mut want = before.clone();
    // 40 copies of random shapes at random (odd) offsets, in disjoint bands of the destination
    for k in 0..40 {
        let (rows, cols) = (r.random_range(1..7), r.random_range(1..800));
        let (sr, sc) = (
            r.random_range(0..srows - rows),
            r.random_range(0..sld - cols),
        );
        let (dr, dc) = (k * 7, r.random_range(0..dld - cols));
        batch
            .push(
                cute_copy::Region::at(sr, sc, rows, cols, sld),
                cute_copy::Region::at(dr, dc, rows, cols, dld),
            )
            .unwrap();
        for i in 0..rows {
            let (so, dof) = ((sr + i) * sld + sc, (dr + i) * dld + dc);
            want[dof..dof + cols].copy_from_slice(&host[so..so + cols]);
        }
    }
    // on the destination's stream (pull), then again on the source's (push: uploaded again there)
    for stream in [&b, &a] {
        batch
            .launch(&src.view(), &mut dst.view_mut(), stream)
            .unwrap();
        let got = dst.to_host(&b).unwrap();
        let (bad, first) = compare(&want, &got);
        assert_eq!(
            bad,
            0,
            "on device {}: {first:?}",
            stream.context().ordinal()
        );
    }
}
