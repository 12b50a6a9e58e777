//! `cute-copy`: see what a CuTe TiledCopy does, and run it.
//!
//!   cute-copy demo [--m 4096 --n 4096]   the tutorial TiledCopy explained, then run and verified

use std::process::ExitCode;

use clap::{Parser, Subcommand};
use cute_copy::reference::{compare, expected_destination, poisoned_destination, random_elements};
use cute_copy::{Atom, DType, DeviceMatrix, Operation, TiledCopySpec};
use rand::SeedableRng;

#[derive(Parser)]
#[command(
    name = "cute-copy",
    version,
    about = "CuTe TiledCopy data movement, explained and run"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// The CuTe tutorial TiledCopy: its layouts, thread 0's partition, the tile's owner map, then
    /// (with a GPU) a verified copy of a random M x N f32 matrix and its bandwidth.
    Demo {
        #[arg(long, default_value_t = 4096)]
        m: usize,
        #[arg(long, default_value_t = 4096)]
        n: usize,
    },
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Demo { m, n } => demo(m, n),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}

fn demo(m: usize, n: usize) -> Result<(), cute_copy::Error> {
    let spec = TiledCopySpec::new(Atom::Universal, DType::F32, (32, 4), (1, 1), (32, 32))?;
    println!("{spec}");
    println!();
    let coords = spec.thread_coords(0)?;
    let (cpy, cm, cn) = spec.partition_shape();
    println!(
        "thread 0: partition (CPY, CPY_M, CPY_N) = ({cpy}, {cm}, {cn}), CuTe layout {}",
        spec.thread_layout_string(0)?
    );
    let list: Vec<String> = coords.iter().map(|(r, c)| format!("({r},{c})")).collect();
    println!("thread 0 copies tile coordinates {}", list.join(" "));
    println!();
    println!("32x32 tile, owning thread of each element:");
    for row in spec.owner_grid()? {
        let cells: Vec<String> = row.iter().map(|t| format!("{t:4}")).collect();
        println!("  {}", cells.join(""));
    }
    println!();

    let stream = match cute_copy::stream(0) {
        Ok(s) => s,
        Err(e) => {
            println!("launch skipped: no GPU ({e})");
            return Ok(());
        }
    };
    let (name, (major, minor)) = cute_copy::describe(stream.context())?;
    println!("GPU: {name} (sm_{major}{minor})");
    let mut rng = rand::rngs::StdRng::seed_from_u64(0x5eed);
    let src_host: Vec<f32> = random_elements(m * n, &mut rng);
    let src = DeviceMatrix::from_host(&stream, m, n, n, &src_host)?;
    let mut dst = DeviceMatrix::<f32>::zeros(&stream, m, n, n)?;
    let (sg, dg) = (src.view().geometry(), dst.view_mut().geometry());
    let before = poisoned_destination(&src_host, sg, dg, &mut rng);
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
    println!(
        "tutorial copy {m}x{n} f32: all {} elements verified against the host",
        m * n
    );
    let ms = cute_copy::timing::time_launches(&stream, 3, 20, || {
        cute_copy::tutorial_copy(&src.view(), &mut dst.view_mut(), &stream)
    })?;
    let bytes = 2 * m * n * 4;
    println!(
        "bandwidth: {:.1} GB/s ({bytes} bytes read+written in {:.3} ms per copy, CUDA events, mean of 20)",
        cute_copy::timing::gbps(bytes, ms),
        ms
    );
    Ok(())
}
