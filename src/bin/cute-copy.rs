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

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use clap::{Args, Parser, Subcommand};
use cute_copy::cudarc::driver::CudaStream;
use cute_copy::reference::{compare, expected_destination, poisoned_destination, random_elements};
use cute_copy::timing::{gbps, time_launches};
use cute_copy::{
    Atom, DType, DeviceMatrix, Element, Geometry, Operand, Operation, Plan, TiledCopySpec,
};
use rand::SeedableRng;
use serde_json::json;

type CliResult<T = ()> = Result<T, Box<dyn std::error::Error>>;

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
}

/// The copy both `explain` and `run` describe.
#[derive(Args, Clone, Debug)]
struct ShapeArgs {
    /// Element type: f32 f64 f16 bf16 u8 i8 u16 i16 u32 i32 u64 i64.
    #[arg(long, value_parser = parse_dtype)]
    dtype: DType,
    /// Source rows.
    #[arg(long)]
    rows: usize,
    /// Source columns.
    #[arg(long)]
    cols: usize,
    /// Source leading dimension in elements [default: --cols].
    #[arg(long)]
    ld_src: Option<usize>,
    /// Destination leading dimension in elements [default: the destination's cols].
    #[arg(long)]
    ld_dst: Option<usize>,
    /// Bytes from a 256-byte-aligned allocation start to source element (0,0); a multiple of the
    /// element size.
    #[arg(long, default_value_t = 0)]
    offset_src: usize,
    /// Bytes from a 256-byte-aligned allocation start to destination element (0,0).
    #[arg(long, default_value_t = 0)]
    offset_dst: usize,
    /// Destination rows [default: --rows]; larger than the source makes a pad (zeros outside).
    #[arg(long)]
    dst_rows: Option<usize>,
    /// Destination cols [default: --cols]; larger than the source makes a pad.
    #[arg(long)]
    dst_cols: Option<usize>,
    /// Use this atom instead of the planner's choice: a CLI name (universal-128,
    /// cp-async-zfill-32, ...) or a variant name (Universal128); an unknown name lists them all.
    #[arg(long, value_parser = parse_atom)]
    atom: Option<Atom>,
}

#[derive(Args)]
struct ExplainArgs {
    #[command(flatten)]
    shape: ShapeArgs,
    /// The thread whose partition is shown.
    #[arg(long, default_value_t = 0)]
    thread: usize,
    /// Print the same facts as one JSON object, and nothing else.
    #[arg(long)]
    json: bool,
    /// Write the chosen kernel's tile as an SVG thread-value map; the boundary tile of this shape
    /// (cells outside the matrix hatched) when any tile is predicated.
    #[arg(long, value_name = "FILE")]
    svg: Option<PathBuf>,
}

#[derive(Args)]
struct SvgArgs {
    /// Draw the CuTe tutorial TiledCopy: UniversalCopy<float>, thread layout (32,4), value layout
    /// (1,1), 32x32 tile.
    #[arg(long, conflicts_with_all = ["atom", "dtype"])]
    tutorial: bool,
    /// Draw the compiled kernel's TiledCopy of this atom (with --dtype).
    #[arg(long, value_parser = parse_atom, required_unless_present = "tutorial", requires = "dtype")]
    atom: Option<Atom>,
    /// The element type of --atom's kernel.
    #[arg(long, value_parser = parse_dtype, requires = "atom")]
    dtype: Option<DType>,
    /// Draw it as a boundary tile: the top-left ROWS,COLS of the tile are inside the matrix, the
    /// rest are masked lanes.
    #[arg(long, value_name = "ROWS,COLS", value_parser = parse_pair)]
    valid: Option<(usize, usize)>,
    /// The SVG file to write.
    file: PathBuf,
}

#[derive(Args)]
struct RunArgs {
    #[command(flatten)]
    shape: ShapeArgs,
    /// Timed iterations (after 3 warm-up launches).
    #[arg(long, default_value_t = 20)]
    iters: usize,
}

fn parse_dtype(s: &str) -> Result<DType, String> {
    DType::from_name(s).ok_or_else(|| {
        let names: Vec<&str> = DType::ALL.iter().map(|d| d.name()).collect();
        format!("unknown dtype '{s}' (one of: {})", names.join(" "))
    })
}

fn parse_atom(s: &str) -> Result<Atom, String> {
    Atom::from_name(s).ok_or_else(|| {
        let names: Vec<String> = Atom::all().map(|a| a.cli_name()).collect();
        format!("unknown atom '{s}' (one of: {})", names.join(" "))
    })
}

fn parse_pair(s: &str) -> Result<(usize, usize), String> {
    let (a, b) = s
        .split_once([',', 'x'])
        .ok_or_else(|| format!("'{s}' is not ROWS,COLS"))?;
    let num = |x: &str| {
        x.trim()
            .parse::<usize>()
            .map_err(|e| format!("'{x}' in '{s}': {e}"))
    };
    Ok((num(a)?, num(b)?))
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result: CliResult = match cli.command {
        Command::Demo { m, n } => demo(m, n).map_err(Into::into),
        Command::Explain(args) => explain(&args),
        Command::Svg(args) => svg(&args),
        Command::Run(args) => run(&args),
        Command::Bench { quick } => bench(quick),
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

// ---------------------------------------------------------------------------------------------
// The copy a command describes.

/// One copy or pad: dtype, both operands (offsets in bytes) and the atom, if one was named.
#[derive(Clone, Copy, Debug)]
struct Case {
    dtype: DType,
    src: Operand,
    dst: Operand,
    atom: Option<Atom>,
}

impl ShapeArgs {
    fn case(&self) -> CliResult<Case> {
        let e = self.dtype.size_bytes();
        for (flag, offset) in [
            ("--offset-src", self.offset_src),
            ("--offset-dst", self.offset_dst),
        ] {
            if offset % e != 0 {
                return Err(format!(
                    "{flag} {offset} is not a multiple of the {} element size ({e} bytes): element (0,0) must start on an element",
                    self.dtype
                )
                .into());
            }
        }
        let (dst_rows, dst_cols) = (
            self.dst_rows.unwrap_or(self.rows),
            self.dst_cols.unwrap_or(self.cols),
        );
        Ok(Case {
            dtype: self.dtype,
            src: Operand {
                rows: self.rows,
                cols: self.cols,
                ld: self.ld_src.unwrap_or(self.cols),
                offset_bytes: self.offset_src,
            },
            dst: Operand {
                rows: dst_rows,
                cols: dst_cols,
                ld: self.ld_dst.unwrap_or(dst_cols),
                offset_bytes: self.offset_dst,
            },
            atom: self.atom,
        })
    }
}

impl Case {
    /// The plan the library makes for this case (no GPU: compute capability unchecked).
    fn plan(&self) -> cute_copy::Result<Plan> {
        Plan::new(self.dtype, self.src, self.dst, self.atom, None)
    }

    /// `16383x16383 ld 16384 -> ld 16384`, or `8x8 ld 8 -> 16x16 ld 16` for a pad.
    fn shape(&self) -> String {
        let (s, d) = (self.src, self.dst);
        if (s.rows, s.cols) == (d.rows, d.cols) {
            format!("{}x{} ld {} -> ld {}", s.rows, s.cols, s.ld, d.ld)
        } else {
            format!(
                "{}x{} ld {} -> {}x{} ld {}",
                s.rows, s.cols, s.ld, d.rows, d.cols, d.ld
            )
        }
    }
}

// ---------------------------------------------------------------------------------------------
// explain

/// Which tiles take the predicated path: those at or past the first tile row (column) that is not
/// wholly inside the source (the rule of `Plan::tile_is_predicated`).
struct PredicatedTiles {
    count: usize,
    /// Inclusive ranges of predicated tile rows / columns, if any.
    tile_rows: Option<(usize, usize)>,
    tile_cols: Option<(usize, usize)>,
}

/// The lane mask of one vector (atom call) at the matrix bound.
struct VectorMask {
    what: &'static str,
    row: usize,
    col: usize,
    tile: (usize, usize),
    thread: usize,
    mask: Vec<bool>,
}

/// Everything `explain` reports, computed once and printed as text or JSON.
struct Explanation {
    plan: Plan,
    spec: TiledCopySpec,
    thread: usize,
    coords: Vec<(usize, usize)>,
    layout: String,
    predicated: PredicatedTiles,
    masks: Vec<VectorMask>,
    /// The tile drawn by `--svg`: its index and the part of it inside the source.
    boundary_tile: Option<((usize, usize), (usize, usize))>,
}

impl Explanation {
    fn new(case: &Case, thread: usize) -> CliResult<Self> {
        let plan = case.plan()?;
        let spec = TiledCopySpec::for_kernel(plan.atom, plan.dtype)?;
        let coords = spec.thread_coords(thread)?;
        let layout = spec.thread_layout_string(thread)?;
        let (h, w) = plan.config.tile;
        let (rows, cols) = (plan.src.rows, plan.src.cols);
        // Tile rows (cols) before these are wholly inside the source.
        let (full_m, full_n) = ((rows / h).min(plan.tiles.0), (cols / w).min(plan.tiles.1));
        let range = |first: usize, end: usize| (first < end).then(|| (first, end - 1));
        let predicated = PredicatedTiles {
            count: plan.predicated_tiles(),
            tile_rows: range(full_m, plan.tiles.0),
            tile_cols: range(full_n, plan.tiles.1),
        };
        let any = predicated.count > 0 && rows > 0 && cols > 0;
        let boundary_tile = any.then(|| {
            let t = (full_m.min(plan.tiles.0 - 1), full_n.min(plan.tiles.1 - 1));
            let valid = (
                rows.saturating_sub(t.0 * h).min(h),
                cols.saturating_sub(t.1 * w).min(w),
            );
            (t, valid)
        });
        let masks = if any {
            boundary_masks(&plan, &spec)?
        } else {
            Vec::new()
        };
        Ok(Explanation {
            plan,
            spec,
            thread,
            coords,
            layout,
            predicated,
            masks,
            boundary_tile,
        })
    }

    fn print_text(&self) {
        let (p, spec) = (&self.plan, &self.spec);
        print!("{p}");
        println!();
        println!("{spec}");
        println!();
        let (cpy, cm, cn) = spec.partition_shape();
        println!(
            "thread {}: partition (CPY, CPY_M, CPY_N) = ({cpy}, {cm}, {cn}), CuTe layout {}",
            self.thread, self.layout
        );
        let calls: Vec<String> = self.coords.chunks(cpy.max(1)).map(call_string).collect();
        println!(
            "thread {} copies, one atom call each, tile coordinates {}",
            self.thread,
            calls.join(" ")
        );
        println!();
        let (h, w) = p.config.tile;
        println!(
            "tiles: {} x {} = {} blocks of {h}x{w} over the {}x{} destination",
            p.tiles.0,
            p.tiles.1,
            p.blocks(),
            p.dst.rows,
            p.dst.cols
        );
        let pr = &self.predicated;
        if pr.count == 0 {
            println!("predicated tiles: none (every tile is interior)");
        } else {
            let mut parts = Vec::new();
            for (what, range, n) in [
                ("row", pr.tile_rows, p.tiles.0),
                ("column", pr.tile_cols, p.tiles.1),
            ] {
                if let Some((a, b)) = range {
                    parts.push(match (a == b, b + 1 == n) {
                        (true, true) => format!("the last tile {what} ({what} {a})"),
                        (true, false) => format!("tile {what} {a}"),
                        (false, _) => format!("tile {what}s {a}..={b}"),
                    });
                }
            }
            let mut line = format!(
                "predicated tiles: {} of {}: {}",
                pr.count,
                p.blocks(),
                parts.join(" and ")
            );
            if pr.count <= 12 {
                let list: Vec<String> = (0..p.tiles.0)
                    .flat_map(|m| (0..p.tiles.1).map(move |n| (m, n)))
                    .filter(|&(m, n)| p.tile_is_predicated(m, n))
                    .map(|(m, n)| format!("({m},{n})"))
                    .collect();
                line += &format!(", tiles {}", list.join(" "));
            }
            println!("{line}");
        }
        if !self.masks.is_empty() {
            println!(
                "boundary vectors: lane k valid iff col + k < cols = {} (copy_mask) and row < rows = {}{}",
                p.src.cols,
                p.src.rows,
                match p.operation {
                    Operation::Copy => "",
                    Operation::Pad => "; masked lanes inside the destination are written as zeros",
                }
            );
            for m in &self.masks {
                let bits: Vec<&str> = m.mask.iter().map(|&b| if b { "1" } else { "0" }).collect();
                println!(
                    "  row {} ({}), tile ({},{}), thread {}: lanes 0..{} at col {}: [{}]",
                    m.row,
                    m.what,
                    m.tile.0,
                    m.tile.1,
                    m.thread,
                    m.mask.len() - 1,
                    m.col,
                    bits.join(" ")
                );
            }
        }
    }

    fn to_json(&self, svg: Option<&PathBuf>) -> serde_json::Value {
        let (p, spec) = (&self.plan, &self.spec);
        let operand = |o: &Operand| json!({"rows": o.rows, "cols": o.cols, "ld": o.ld, "offset_bytes": o.offset_bytes});
        let (thr, val, tv) = spec.cute_layouts();
        let pr = &self.predicated;
        json!({
            "plan": {
                "dtype": p.dtype.name(),
                "operation": match p.operation { Operation::Copy => "copy", Operation::Pad => "pad" },
                "src": operand(&p.src),
                "dst": operand(&p.dst),
                "atom": p.atom.cli_name(),
                "cute_op": p.atom.cute_op(),
                "explicit": p.explicit,
                "src_bits": p.src_bits,
                "dst_bits": p.dst_bits,
                "config": {
                    "threads": p.config.threads,
                    "thr_layout": p.config.thr_layout,
                    "val_layout": p.config.val_layout,
                    "tile": p.config.tile,
                    "smem_bytes": p.config.smem_bytes,
                },
                "tiles": p.tiles,
                "blocks": p.blocks(),
                "bytes_moved": p.bytes_moved(),
                "predicated_last_row": p.predicated_last_row,
                "predicated_last_col": p.predicated_last_col,
            },
            "reasons": p.reasons(),
            "tiled_copy": {
                "atom": spec.atom().cli_name(),
                "cute_op": spec.atom().cute_op(),
                "dtype": spec.dtype().name(),
                "values_per_call": spec.partition_shape().0,
                "threads": spec.num_threads(),
                "thr_layout": thr,
                "val_layout": val,
                "layout_tv": tv,
                "tiler": spec.tiler(),
                "tile": spec.tile(),
                "partition_shape": spec.partition_shape(),
            },
            "thread": {
                "index": self.thread,
                "partition_shape": spec.partition_shape(),
                "layout": self.layout,
                "coords": self.coords,
            },
            "predicated_tiles": {
                "count": pr.count,
                "tile_rows": pr.tile_rows,
                "tile_cols": pr.tile_cols,
            },
            "masks": self.masks.iter().map(|m| json!({
                "what": m.what,
                "row": m.row,
                "col": m.col,
                "tile": m.tile,
                "thread": m.thread,
                "lanes": m.mask.len(),
                "logical_cols": p.src.cols,
                "mask": m.mask,
            })).collect::<Vec<_>>(),
            "svg": svg.map(|f| json!({
                "file": f.display().to_string(),
                "tile": self.boundary_tile.map(|(t, _)| t),
                "valid": self.boundary_tile.map(|(_, v)| v),
            })),
        })
    }
}

/// One atom call's coordinates: `(r,c)`, or `(r,c0..c1)` for a run along a row.
fn call_string(v: &[(usize, usize)]) -> String {
    let (r0, c0) = v[0];
    let run = v
        .iter()
        .enumerate()
        .all(|(k, &(r, c))| r == r0 && c == c0 + k);
    match (v.len(), run) {
        (1, _) => format!("({r0},{c0})"),
        (n, true) => format!("({r0},{c0}..{})", c0 + n - 1),
        _ => {
            let list: Vec<String> = v.iter().map(|(r, c)| format!("({r},{c})")).collect();
            format!("[{}]", list.join(" "))
        }
    }
}

/// The vectors at the source's bound, with their lane masks: on the first row, the last vector
/// that touches the matrix and the one after it (when the grid has it); the same last vector on
/// the first row of the tile row that holds the source's last row, and on the first row past the
/// source (when the grid has it). Owners come from the kernel TiledCopy's CuTe partition.
fn boundary_masks(plan: &Plan, spec: &TiledCopySpec) -> CliResult<Vec<VectorMask>> {
    let lanes = spec.partition_shape().0;
    let (h, w) = plan.config.tile;
    let (rows, cols) = (plan.src.rows, plan.src.cols);
    let (grid_rows, grid_cols) = (plan.tiles.0 * h, plan.tiles.1 * w);
    let owners = spec.owner_grid()?;
    let last = (cols - 1) / lanes * lanes;
    let mut picks = vec![(0, last, "first row, last vector touching the matrix")];
    if last + lanes < grid_cols.min((last / w + 1) * w) {
        picks.push((0, last + lanes, "first row, the vector after it"));
    }
    let last_tile_row = (rows - 1) / h * h;
    if plan.predicated_last_row && last_tile_row != 0 {
        picks.push((last_tile_row, last, "first row of the last source tile row"));
    }
    if plan.predicated_last_row && rows < grid_rows {
        picks.push((rows, last, "first row past the source"));
    }
    Ok(picks
        .into_iter()
        .map(|(row, col, what)| VectorMask {
            what,
            row,
            col,
            tile: (row / h, col / w),
            thread: owners[row % h][col % w],
            mask: cute_copy::copy_mask(col, lanes, cols)
                .into_iter()
                .map(|b| b && row < rows)
                .collect(),
        })
        .collect())
}

fn explain(args: &ExplainArgs) -> CliResult {
    let case = args.shape.case()?;
    let ex = Explanation::new(&case, args.thread)?;
    if let Some(file) = &args.svg {
        let valid = ex.boundary_tile.map(|(_, v)| v);
        write_svg(file, &ex.spec, valid)?;
    }
    if args.json {
        println!(
            "{}",
            serde_json::to_string_pretty(&ex.to_json(args.svg.as_ref()))?
        );
        return Ok(());
    }
    ex.print_text();
    if let Some(file) = &args.svg {
        match ex.boundary_tile {
            Some(((m, n), (vr, vc))) => println!(
                "\nwrote {}: tile ({m},{n}), the boundary tile; its top-left {vr}x{vc} is inside the source",
                file.display()
            ),
            None => println!("\nwrote {}: an interior tile", file.display()),
        }
    }
    Ok(())
}

fn write_svg(file: &PathBuf, spec: &TiledCopySpec, valid: Option<(usize, usize)>) -> CliResult {
    let svg = cute_copy::svg::tiled_copy_svg(spec, valid)?;
    std::fs::write(file, svg).map_err(|e| format!("writing {}: {e}", file.display()))?;
    Ok(())
}

fn svg(args: &SvgArgs) -> CliResult {
    let spec = match (args.tutorial, args.atom, args.dtype) {
        (true, _, _) => TiledCopySpec::new(Atom::Universal, DType::F32, (32, 4), (1, 1), (32, 32))?,
        (false, Some(atom), Some(dtype)) => TiledCopySpec::for_kernel(atom, dtype)?,
        _ => return Err("svg needs --tutorial, or --atom and --dtype".into()),
    };
    let (h, w) = spec.tile();
    if let Some((vr, vc)) = args.valid {
        if vr > h || vc > w {
            return Err(format!("--valid {vr},{vc} is larger than the {h}x{w} tile").into());
        }
    }
    write_svg(&args.file, &spec, args.valid)?;
    println!(
        "wrote {}: {:?} on {}, {h}x{w} tile, {} threads",
        args.file.display(),
        spec.atom(),
        spec.dtype(),
        spec.num_threads()
    );
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// run and bench

/// Call `$f::<T>(args)` with the Rust element type of a run-time [`DType`].
macro_rules! with_element {
    ($dtype:expr, $f:ident($($arg:expr),* $(,)?)) => {
        match $dtype {
            DType::F32 => $f::<f32>($($arg),*),
            DType::F64 => $f::<f64>($($arg),*),
            DType::F16 => $f::<half::f16>($($arg),*),
            DType::BF16 => $f::<half::bf16>($($arg),*),
            DType::U8 => $f::<u8>($($arg),*),
            DType::I8 => $f::<i8>($($arg),*),
            DType::U16 => $f::<u16>($($arg),*),
            DType::I16 => $f::<i16>($($arg),*),
            DType::U32 => $f::<u32>($($arg),*),
            DType::I32 => $f::<i32>($($arg),*),
            DType::U64 => $f::<u64>($($arg),*),
            DType::I64 => $f::<i64>($($arg),*),
        }
    };
}

/// A verified, timed run.
struct Measurement {
    plan: Plan,
    /// Destination elements written, and allocation elements around them left untouched.
    written: usize,
    canaries: usize,
    ms: f64,
    /// The D2D memcpy of `plan.bytes_moved() / 2` bytes: (ms, GB/s); None for an empty copy.
    d2d: Option<(f64, f64)>,
}

impl Measurement {
    fn gbps(&self) -> f64 {
        gbps(self.plan.bytes_moved(), self.ms)
    }
    fn ratio(&self) -> Option<f64> {
        self.d2d.map(|(_, d)| self.gbps() / d)
    }
}

fn gpu() -> CliResult<Arc<CudaStream>> {
    cute_copy::stream(0).map_err(|e| format!("this command needs a GPU: {e}").into())
}

/// The allocation an operand lives in: element (0,0) `offset_bytes / size` elements after its
/// start, and `rows * ld` elements from there (at least one).
fn allocation(o: &Operand, elem: usize) -> Geometry {
    let offset = o.offset_bytes / elem;
    Geometry {
        offset,
        rows: o.rows,
        cols: o.cols,
        ld: o.ld,
        len: offset + (o.rows * o.ld).max(1),
    }
}

/// Allocate, fill, copy once, verify bit for bit against the host reference, then time the copy
/// and a D2D memcpy of the same bytes. `T` must be `case.dtype`'s element type.
fn measure<T: Element>(
    case: &Case,
    stream: &Arc<CudaStream>,
    iters: usize,
) -> CliResult<Measurement> {
    assert_eq!(T::DTYPE, case.dtype);
    case.plan()?; // shape and atom errors before any allocation
    let elem = std::mem::size_of::<T>();
    let (sg, dg) = (allocation(&case.src, elem), allocation(&case.dst, elem));
    let mut rng = rand::rngs::StdRng::seed_from_u64(0x5eed);
    let src_host: Vec<T> = random_elements(sg.len, &mut rng);
    let before = poisoned_destination(&src_host, sg, dg, &mut rng);
    // Each operand lives in a one-row allocation of `len` elements; `view_at` places element
    // (0,0) at any element offset in it (a byte offset a sub-view could not express).
    let src_buf = DeviceMatrix::from_host(stream, 1, sg.len, sg.len, &src_host)?;
    let mut dst_buf = DeviceMatrix::from_host(stream, 1, dg.len, dg.len, &before)?;
    // The first launch goes through the call a user makes (copy / copy_with / pad / pad_with).
    let plan = {
        let src = src_buf.view_at(sg.offset, sg.rows, sg.cols, sg.ld)?;
        let mut dst = dst_buf.view_at_mut(dg.offset, dg.rows, dg.cols, dg.ld)?;
        match (case.plan()?.operation, case.atom) {
            (Operation::Copy, None) => cute_copy::copy(&src, &mut dst, stream),
            (Operation::Copy, Some(a)) => cute_copy::copy_with(a, &src, &mut dst, stream),
            (Operation::Pad, None) => cute_copy::pad(&src, &mut dst, stream),
            (Operation::Pad, Some(a)) => cute_copy::pad_with(a, &src, &mut dst, stream),
        }?
    };
    let after = dst_buf.to_host(stream)?;
    let expected = expected_destination(&src_host, sg, &before, dg, plan.operation);
    let (bad, first) = compare(&expected, &after);
    if bad != 0 {
        return Err(format!(
            "verification failed for {} {}: {bad} elements differ, first {first:?}",
            case.dtype,
            case.shape()
        )
        .into());
    }
    drop((src_host, before, expected, after));
    // Timed: the same plan, launched back to back.
    let src = src_buf.view_at(sg.offset, sg.rows, sg.cols, sg.ld)?;
    let mut dst = dst_buf.view_at_mut(dg.offset, dg.rows, dg.cols, dg.ld)?;
    let ms = time_launches(stream, 3, iters, || {
        cute_copy::launch(&plan, &src, &mut dst, stream)
    })?;
    let n = plan.bytes_moved() / 2;
    let d2d = if n == 0 {
        None
    } else {
        let a = stream.alloc_zeros::<u8>(n)?;
        let mut b = stream.alloc_zeros::<u8>(n)?;
        let ms = time_launches(stream, 3, iters, || Ok(stream.memcpy_dtod(&a, &mut b)?))?;
        Some((ms, gbps(2 * n, ms)))
    };
    let written = dg.rows * dg.cols;
    Ok(Measurement {
        plan,
        written,
        canaries: dg.len - written,
        ms,
        d2d,
    })
}

fn run(args: &RunArgs) -> CliResult {
    let case = args.shape.case()?;
    case.plan()?; // a bad request is an error even without a GPU
    let stream = gpu()?;
    let (name, (major, minor)) = cute_copy::describe(stream.context())?;
    println!("GPU: {name} (sm_{major}{minor})");
    let iters = args.iters.max(1);
    let m = with_element!(case.dtype, measure(&case, &stream, iters))?;
    print!("{}", m.plan);
    let untouched = match m.canaries {
        0 => String::new(),
        n => format!("; the {n} other elements of its allocation are untouched"),
    };
    println!(
        "verified: all {} destination elements match the host reference bit for bit{untouched}",
        m.written
    );
    let bytes = m.plan.bytes_moved();
    println!(
        "{}: {:.1} GB/s ({bytes} bytes read+written in {:.4} ms per launch; CUDA events, mean of {iters} after 3 warm-up)",
        match m.plan.operation {
            Operation::Copy => "copy",
            Operation::Pad => "pad",
        },
        m.gbps(),
        m.ms
    );
    match (m.d2d, m.ratio()) {
        (Some((ms, g)), Some(ratio)) => {
            println!(
                "D2D memcpy of the same bytes ({} read + {} written, memcpy_dtod): {g:.1} GB/s ({ms:.4} ms)",
                bytes / 2,
                bytes / 2
            );
            println!("ratio to D2D memcpy: {ratio:.2}");
        }
        _ => println!("ratio to D2D memcpy: n/a (nothing moved)"),
    }
    Ok(())
}

fn bench_cases(quick: bool) -> Vec<Case> {
    let op = |rows, cols, ld| Operand {
        rows,
        cols,
        ld,
        offset_bytes: 0,
    };
    let case = |dtype, src, dst| Case {
        dtype,
        src,
        dst,
        atom: None,
    };
    let mut cases = Vec::new();
    if !quick {
        let dense = op(16384, 16384, 16384);
        cases.push(case(DType::F16, dense, dense));
        let odd = op(16383, 16383, 16384);
        cases.push(case(DType::F16, odd, odd));
    }
    cases.extend([
        case(DType::F16, op(8192, 130, 136), op(8192, 130, 130)),
        case(DType::F32, op(4096, 4096, 4096), op(4096, 4096, 4096)),
        case(DType::F16, op(130, 130, 130), op(130, 130, 130)),
        case(DType::F16, op(32, 32, 32), op(32, 32, 32)),
    ]);
    cases
}

fn bench(quick: bool) -> CliResult {
    let stream = gpu()?;
    let (name, (major, minor)) = cute_copy::describe(stream.context())?;
    let iters = if quick { 5 } else { 20 };
    let cases = bench_cases(quick);
    println!("GPU: {name} (sm_{major}{minor}); each shape verified once, then timed: mean of {iters} launches after 3 warm-up (CUDA events)");
    println!(
        "{:<34} {:<5} {:<14} {:>9} {:>9} {:>6}",
        "shape", "dtype", "atom", "GB/s", "D2D GB/s", "ratio"
    );
    for (i, case) in cases.iter().enumerate() {
        eprintln!(
            "[{}/{}] {} {}: verifying and timing",
            i + 1,
            cases.len(),
            case.dtype,
            case.shape()
        );
        let m = with_element!(case.dtype, measure(case, &stream, iters))?;
        let d2d = m.d2d.map_or("-".into(), |(_, g)| format!("{g:.1}"));
        let ratio = m.ratio().map_or("-".into(), |r| format!("{r:.2}"));
        println!(
            "{:<34} {:<5} {:<14} {:>9.1} {:>9} {:>6}",
            case.shape(),
            case.dtype,
            m.plan.atom.cli_name(),
            m.gbps(),
            d2d,
            ratio
        );
    }
    Ok(())
}
