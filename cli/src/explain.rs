//! `explain`: the plan, the kernel's TiledCopy, one thread's partition, the predicated tiles and
//! the boundary lane masks of a copy, without running it (no GPU needed), as text or JSON.

use std::path::PathBuf;

use clap::Args;
use cute_copy::{DevicePair, Operand, Operation, PeerRoute, PeerShape, Plan, TiledCopySpec};
use serde_json::json;

use crate::flags::{Case, ShapeArgs};
use crate::svg::write_svg;
use crate::CliResult;

#[derive(Args)]
pub(crate) struct ExplainArgs {
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
    /// A copy between GPUs: the source's, the destination's and the stream's devices
    /// (`0,1,1`: pulled by device 1); the route the rule picks is printed first.
    #[arg(long, value_name = "SRC,DST,STREAM", value_parser = parse_devices)]
    between: Option<(usize, usize, usize)>,
    /// With `--between`: the stream's device has no peer access to the other.
    #[arg(long, requires = "between")]
    no_peer: bool,
}

fn parse_devices(s: &str) -> Result<(usize, usize, usize), String> {
    let v: Vec<usize> = s
        .split(',')
        .map(|x| {
            x.trim()
                .parse::<usize>()
                .map_err(|e| format!("'{x}' in '{s}': {e}"))
        })
        .collect::<Result<_, _>>()?;
    match v[..] {
        [a, b, c] => Ok((a, b, c)),
        _ => Err(format!("'{s}' is not SRC,DST,STREAM")),
    }
}

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
    fn new(case: &Case, thread: usize, between: Option<DevicePair>) -> CliResult<Self> {
        let mut plan = case.plan()?;
        if let Some(pair) = between {
            plan.peer = PeerRoute::choose(pair, PeerShape::of_plan(&plan))?;
        }
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
        out!("{p}");
        outln!();
        if p.peer.is_some_and(|r| r.copy_engine()) {
            outln!("(the copy engine moves this copy between devices; below, the kernel a kernel route would run)");
        }
        outln!("{spec}");
        if p.lean_run() {
            outln!("  (the general realign kernel's TiledCopy and partition; this run copies on the lean run kernel: its tiles and thread layout are in the plan above)");
        }
        outln!();
        let (cpy, cm, cn) = spec.partition_shape();
        outln!(
            "thread {}: partition (CPY, CPY_M, CPY_N) = ({cpy}, {cm}, {cn}), CuTe layout {}",
            self.thread,
            self.layout
        );
        let calls: Vec<String> = self.coords.chunks(cpy.max(1)).map(call_string).collect();
        outln!(
            "thread {} copies, one atom call each, tile coordinates {}",
            self.thread,
            calls.join(" ")
        );
        outln!();
        let (h, w) = p.config.tile;
        outln!(
            "tiles: {} x {} = {} blocks of {h}x{w} over the {}x{} destination",
            p.tiles.0,
            p.tiles.1,
            p.blocks(),
            p.dst.rows,
            p.dst.cols
        );
        let pr = &self.predicated;
        if pr.count == 0 {
            outln!("predicated tiles: none (every tile is interior)");
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
            outln!("{line}");
        }
        if !self.masks.is_empty() {
            outln!(
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
                outln!(
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
                "family": format!("{:?}", p.atom.family()),
                "explicit": p.explicit,
                "coalesced": p.coalesced(),
                "lean_run": p.lean_run(),
                "launched": {"src": operand(&p.launched.0), "dst": operand(&p.launched.1)},
                "src_bits": p.src_bits,
                "dst_bits": p.dst_bits,
                "config": {
                    "threads": p.config.threads,
                    "thr_layout": p.config.thr_layout,
                    "val_layout": p.config.val_layout,
                    "tile": p.config.tile,
                    "smem_bytes": p.config.smem_bytes,
                },
                // (tiles_m, tiles_n) of the tile engine; (rows, segments) of warp tasks for realign.
                "tiles": p.tiles,
                "blocks": p.blocks(),
                "bytes_moved": p.bytes_moved(),
                "predicated_last_row": p.predicated_last_row,
                "predicated_last_col": p.predicated_last_col,
            },
            "reasons": p.reasons(),
            "peer": p.peer.map(|r| json!({
                "src_device": r.pair.src,
                "dst_device": r.pair.dst,
                "stream_device": r.pair.stream,
                "link": format!("{:?}", r.pair.link),
                "engine": format!("{:?}", r.engine),
                "reasons": r.reasons(),
            })),
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

pub(crate) fn explain(args: &ExplainArgs) -> CliResult {
    let case = args.shape.case()?;
    let between = args
        .between
        .map(|(s, d, on)| DevicePair::new(s, d, on, !args.no_peer));
    let ex = Explanation::new(&case, args.thread, between)?;
    if let Some(file) = &args.svg {
        let valid = ex.boundary_tile.map(|(_, v)| v);
        write_svg(file, &ex.spec, valid)?;
    }
    if args.json {
        outln!(
            "{}",
            serde_json::to_string_pretty(&ex.to_json(args.svg.as_ref()))?
        );
        return Ok(());
    }
    ex.print_text();
    if let Some(file) = &args.svg {
        match ex.boundary_tile {
            Some(((m, n), (vr, vc))) => outln!(
                "\nwrote {}: tile ({m},{n}), the boundary tile; its top-left {vr}x{vc} is inside the source",
                file.display()
            ),
            None => outln!("\nwrote {}: an interior tile", file.display()),
        }
    }
    Ok(())
}
