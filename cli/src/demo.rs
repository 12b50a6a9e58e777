//! `demo`: the CuTe tutorial TiledCopy explained on the host, then (with a GPU) run and verified.

use cute_copy::reference::{compare, expected_destination, poisoned_destination, random_elements};
use cute_copy::{Atom, DType, DeviceMatrix, Operation, TiledCopySpec};
use rand::{Rng, SeedableRng};

pub(crate) fn demo(m: usize, n: usize) -> Result<(), cute_copy::Error> {
    let spec = TiledCopySpec::new(Atom::Universal, DType::F32, (32, 4), (1, 1), (32, 32))?;
    outln!("{spec}");
    outln!();
    let coords = spec.thread_coords(0)?;
    let (cpy, cm, cn) = spec.partition_shape();
    outln!(
        "thread 0: partition (CPY, CPY_M, CPY_N) = ({cpy}, {cm}, {cn}), CuTe layout {}",
        spec.thread_layout_string(0)?
    );
    let list: Vec<String> = coords.iter().map(|(r, c)| format!("({r},{c})")).collect();
    outln!("thread 0 copies tile coordinates {}", list.join(" "));
    outln!();
    outln!("32x32 tile, owning thread of each element:");
    for row in spec.owner_grid()? {
        let cells: Vec<String> = row.iter().map(|t| format!("{t:4}")).collect();
        outln!("  {}", cells.join(""));
    }
    outln!();

    let stream = match cute_copy::stream(0) {
        Ok(s) => s,
        Err(e) => {
            outln!("launch skipped: no GPU ({e})");
            return Ok(());
        }
    };
    let (name, (major, minor)) = cute_copy::describe(stream.context())?;
    outln!("GPU: {name} (sm_{major}{minor})");
    let mut rng = rand::rngs::StdRng::seed_from_u64(0x5eed);
    let src_host: Vec<f32> = random_elements(m * n, rng.random());
    let src = DeviceMatrix::from_host(&stream, m, n, n, &src_host)?;
    let mut dst = DeviceMatrix::<f32>::zeros(&stream, m, n, n)?;
    let (sg, dg) = (src.view().geometry()?, dst.view_mut().geometry()?);
    let before = poisoned_destination(&src_host, sg, dg, rng.random());
    dst.upload(&stream, &before)?;
    cute_copy::tutorial_copy(&src.view(), &mut dst.view_mut(), &stream)?;
    let after = dst.to_host(&stream)?;
    let (bad, first) = compare(
        &expected_destination(&src_host, sg, &before, dg, Operation::Copy),
        &after,
    );
    if bad != 0 {
        return Err(cute_copy::Error::Unsupported(format!(
            "verification failed: {bad} elements differ, first {first:?}"
        )));
    }
    outln!(
        "tutorial copy {m}x{n} f32: all {} elements verified against the host",
        m * n
    );
    let ms = cute_copy::timing::time_launches(&stream, 3, 20, || {
        cute_copy::tutorial_copy(&src.view(), &mut dst.view_mut(), &stream)
    })?;
    let bytes = 2 * m * n * 4;
    outln!(
        "bandwidth: {:.1} GB/s ({bytes} bytes read+written in {:.3} ms per copy, CUDA events, mean of 20)",
        cute_copy::timing::gbps(bytes, ms),
        ms
    );
    Ok(())
}
