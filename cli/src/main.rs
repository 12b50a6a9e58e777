//! `cute-copy`: see what a CuTe TiledCopy does, and run it.
//!
//!   cute-copy demo [--m 4096 --n 4096]   the tutorial TiledCopy explained, then run and verified
//!   cute-copy explain --dtype f16 --rows 130 --cols 130 [--thread T] [--json] [--svg FILE]
//!                                        the plan, TiledCopy, partition and masks (no GPU needed)
//!   cute-copy svg (--tutorial | --atom NAME --dtype D) [--valid R,C] FILE
//!                                        a TiledCopy's thread-value map as an SVG picture
//!   cute-copy run --dtype f16 --rows R --cols C [--iters N]
//!                                        one copy or pad on the GPU: verified, timed, vs D2D memcpy
//!   cute-copy bench [--quick]            a small verified bandwidth suite
//!   cute-copy blocks [--pool 4096 --block-rows 16 --cols 128 --count 300]
//!                                        a paged-cache block gather in one launch: verified, timed
//!   cute-copy batch [--copies 10000 --max-rows 64 --max-cols 512]
//!                                        many random 2D copies in one launch: verified, timed
//!   cute-copy tensor --dtype f16 --shape 8,32,4096,128 --permute 0,2,1,3 [--run] [--svg FILE]
//!                                        a copy between layouts of any rank: explained, run
//!   cute-copy tensor --dtype u8 --to f32 --shape 64,224,224,3 --permute 0,3,1,2 --normalize 1 \
//!     --mean 123.675,116.28,103.53 --std 58.395,57.12,57.375 [--run]
//!                                        the same, converting (and normalizing) on the way

use std::process::ExitCode;

use clap::{Parser, Subcommand};

#[macro_use]
mod output;
mod batch;
mod bench;
mod convert;
mod demo;
mod explain;
mod flags;
mod run;
mod svg;
mod tensor;

use explain::ExplainArgs;
use run::RunArgs;
use svg::SvgArgs;

/// What every subcommand returns: any error, printed as `error: ...` with exit status 1.
pub(crate) type CliResult<T = ()> = Result<T, Box<dyn std::error::Error>>;

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
    /// Explain a copy or pad without running it (no GPU needed): the plan and the reason for each
    /// choice, the kernel's TiledCopy, one thread's partition, which tiles are predicated, and the
    /// lane masks of the boundary vectors.
    Explain(ExplainArgs),
    /// Draw a TiledCopy's thread-value map as SVG: `--tutorial` for the CuTe tutorial's
    /// (UniversalCopy on f32, threads (32,4), values (1,1), 32x32 tile), or `--atom A --dtype D`
    /// for the compiled kernel of that atom. (`explain --svg` draws the chosen kernel's boundary
    /// tile for a given shape.)
    Svg(SvgArgs),
    /// Run one copy or pad on the GPU: random source, poisoned destination, verified bit for bit
    /// against the host reference, then timed (CUDA events) against a device-to-device memcpy of
    /// the same bytes.
    Run(RunArgs),
    /// A quick verified bandwidth suite (no criterion needed): a handful of shapes through `run`'s
    /// machinery, as a table of GB/s and the ratio to a D2D memcpy.
    Bench {
        /// Skip the two 16384x16384 shapes (slow to verify on the host) and time 5 iterations
        /// instead of 20.
        #[arg(long)]
        quick: bool,
    },
    /// A block-table copy (paged KV-cache gather) in one launch: random pool and table on the
    /// GPU, verified against the host, timed against a D2D memcpy of the same bytes.
    Blocks(batch::BlocksArgs),
    /// Many random 2D copies (mixed shapes, offsets, alignments) in one launch: verified, timed
    /// against a D2D memcpy of the same bytes.
    Batch(batch::BatchArgs),
    /// A copy between layouts of any rank (a transpose, a permute, NCHW -> NHWC): the layouts
    /// before and after coalescing, the route and why, the shared-memory tile and its swizzle, one
    /// thread's work (no GPU needed); with --run, verified and timed against a D2D memcpy. With
    /// --to (and --scale, --normalize), a copy that converts the element type on the way.
    Tensor(tensor::TensorArgs),
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result: CliResult = match cli.command {
        Command::Demo { m, n } => demo::demo(m, n).map_err(Into::into),
        Command::Explain(args) => explain::explain(&args),
        Command::Svg(args) => svg::svg(&args),
        Command::Run(args) => run::run(&args),
        Command::Bench { quick } => bench::bench(quick),
        Command::Blocks(args) => batch::blocks(&args),
        Command::Batch(args) => batch::batch(&args),
        Command::Tensor(args) => tensor::tensor(&args),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}
