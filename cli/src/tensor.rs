//! `tensor`: explain (and with `--run`, run) a copy between layouts of any rank: the layouts
//! before and after coalescing, the route and why, the shared-memory tile and its swizzle, what one
//! thread moves; verified against the host and timed against a D2D memcpy of the same bytes.

use std::path::PathBuf;

use clap::Args;
use cute_copy::reference::{expected_tensor_copy, poisoned_tensor_destination, random_elements};
use cute_copy::timing::{gbps, time_launches};
use cute_copy::{DType, DeviceTensor, Element, Layout, TensorPlan, TensorRoute};
use rand::{Rng, SeedableRng};
use serde_json::json;

use crate::flags::parse_dtype;
use crate::run::{gpu, with_element};
use crate::CliResult;

fn parse_layout(s: &str) -> Result<Layout, String> {
    s.parse::<Layout>().map_err(|e| e.to_string())
}

#[derive(Args)]
pub(crate) struct TensorArgs {
    /// Element type (of the source, with --to).
    #[arg(long, value_parser = parse_dtype)]
    pub(crate) dtype: DType,
    /// The source view's layout in CuTe notation, e.g. "(8,4096,32,128):(16777216,128,524288,1)".
    #[arg(long, value_parser = parse_layout, required_unless_present = "shape", conflicts_with = "shape")]
    src: Option<Layout>,
    /// Or: a packed row-major source of this shape (e.g. 8,32,4096,128) ...
    #[arg(long, value_delimiter = ',')]
    shape: Option<Vec<usize>>,
    /// ... seen with its modes permuted as torch's permute (e.g. 0,2,1,3).
    #[arg(long, value_delimiter = ',', requires = "shape")]
    permute: Option<Vec<usize>>,
    /// The destination layout (default: packed row-major of the source view's shape).
    #[arg(long, value_parser = parse_layout)]
    dst: Option<Layout>,
    /// Element offset of the source view in its allocation (alignment depends on it).
    #[arg(long, default_value_t = 0)]
    pub(crate) src_offset: usize,
    /// Element offset of the destination view in its allocation.
    #[arg(long, default_value_t = 0)]
    pub(crate) dst_offset: usize,
    /// The thread whose work is shown.
    #[arg(long, default_value_t = 0)]
    thread: usize,
    /// Print the same facts as one JSON object, and nothing else.
    #[arg(long)]
    pub(crate) json: bool,
    /// Write the shared-memory tile with its swizzle as an SVG picture (transpose-family plans).
    #[arg(long, value_name = "FILE")]
    svg: Option<PathBuf>,
    /// Run it on the GPU: random source, poisoned destination, verified, timed against D2D.
    #[arg(long)]
    pub(crate) run: bool,
    /// Timed iterations with --run (after 3 warm-up launches).
    #[arg(long, default_value_t = 20)]
    pub(crate) iters: usize,
    /// Convert to this element type on the way (the convert family).
    #[arg(long, value_parser = parse_dtype)]
    to: Option<DType>,
    /// Multiply every value by this (after a normalization; an FP8 scale).
    #[arg(long)]
    scale: Option<f32>,
    /// Normalize per channel along this mode of the copy's shape: (x - mean[c]) / std[c].
    #[arg(long, requires_all = ["mean", "std"])]
    normalize: Option<usize>,
    /// The channels' means, e.g. 123.675,116.28,103.53.
    #[arg(long, value_delimiter = ',', requires = "normalize")]
    mean: Option<Vec<f32>>,
    /// The channels' standard deviations.
    #[arg(long, value_delimiter = ',', requires = "normalize")]
    std: Option<Vec<f32>>,
}

impl TensorArgs {
    fn layouts(&self) -> CliResult<(Layout, Layout)> {
        let src = match (&self.src, &self.shape) {
            (Some(l), _) => *l,
            (None, Some(shape)) => {
                let storage = Layout::row_major(shape)?;
                match &self.permute {
                    Some(p) => storage.permute(p)?,
                    None => storage,
                }
            }
            (None, None) => return Err("give --src LAYOUT or --shape".into()),
        };
        let dst = match self.dst {
            Some(l) => l,
            None => Layout::row_major(src.shape())?,
        };
        Ok((src, dst))
    }
}

fn route_json(plan: &TensorPlan) -> serde_json::Value {
    match &plan.route {
        TensorRoute::Empty => json!({ "family": "none", "atom": null, "launched": false }),
        TensorRoute::Matrix(p) => json!({
            "family": format!("{:?}", p.atom.family()), "atom": format!("{:?}", p.atom),
            "rows": p.src.rows, "cols": p.src.cols, "ld": [p.src.ld, p.dst.ld],
        }),
        TensorRoute::Rows {
            plan: p,
            items,
            item_stride,
        } => json!({
            "family": "Realign", "atom": format!("{:?}", p.atom), "items": items,
            "item_stride": [item_stride.0, item_stride.1], "rows": p.src.rows, "cols": p.src.cols,
        }),
        TensorRoute::Transpose(t) => json!({
            "family": "Transpose", "atom": "Transpose128", "kind": format!("{:?}", t.kind),
            "stage": format!("{:?}", t.stage),
            "mode_a": t.mode_a, "mode_b": t.mode_b, "tile": [t.tile.1, t.tile.0],
            "tiles": t.tiles.2, "load": format!("{:?}", t.load).to_lowercase(), "store": format!("{:?}", t.store).to_lowercase(),
            "swizzle": t.swizzle.map(|(b, m, s)| format!("Swizzle<{b},{m},{s}>")),
            "smem_bytes": t.config.smem_bytes, "threads": t.config.threads,
            "threads_per_tile": t.group_threads(),
            "transposed_read_wavefronts": t.transposed_read_ways(plan.dtype),
            "exchange_ways": t.exchange_ways(),
        }),
    }
}

pub(crate) fn tensor(args: &TensorArgs) -> CliResult {
    let (src, dst) = args.layouts()?;
    let mut convert = cute_copy::Convert::new();
    if let Some(s) = args.scale {
        convert = convert.scale(s);
    }
    if let (Some(m), Some(mean), Some(std)) = (args.normalize, &args.mean, &args.std) {
        convert = convert.normalize(m, mean, std);
    }
    let to = args.to.unwrap_or(args.dtype);
    if to != args.dtype || !convert.is_identity() {
        return crate::convert::convert(args, to, &convert, (src, dst));
    }
    let e = args.dtype.size_bytes();
    let offsets = (args.src_offset * e, args.dst_offset * e);
    let plan = match crate::flags::device() {
        Some(d) => TensorPlan::for_device(args.dtype, src, dst, offsets, &d)?,
        None => TensorPlan::new(args.dtype, src, dst, offsets)?,
    };
    let work = match &plan.route {
        TensorRoute::Transpose(t) => {
            if args.thread >= t.config.threads {
                return Err(format!(
                    "--thread {} is past the tile's {} threads",
                    args.thread, t.config.threads
                )
                .into());
            }
            Some(t.thread_work(args.dtype, args.thread)?)
        }
        _ => None,
    };
    if let Some(file) = &args.svg {
        let svg = cute_copy::svg::smem_tile_svg(&plan)?;
        std::fs::write(file, svg).map_err(|e| format!("writing {}: {e}", file.display()))?;
    }
    if args.json {
        let v = json!({
            "dtype": args.dtype.to_string(),
            "src": plan.src.to_string(), "dst": plan.dst.to_string(),
            "coalesced": [plan.coalesced.0.to_string(), plan.coalesced.1.to_string()],
            "route": route_json(&plan),
            "thread": args.thread,
            "thread_loads": work.as_ref().map(|w| w.loads.clone()),
            "thread_stores": work.as_ref().map(|w| w.stores.clone()),
            "reasons": plan.reasons(),
            "bytes_moved": plan.bytes_moved(),
        });
        outln!("{}", serde_json::to_string_pretty(&v)?);
        return Ok(());
    }
    out!("{plan}");
    if let (TensorRoute::Transpose(t), Some(w)) = (&plan.route, &work) {
        let v = 16 / e;
        if let Some(ways) = t.transposed_read_ways(args.dtype) {
            outln!("  transposed read: warp 0 touches at most {ways} word(s) per bank per instruction (1 = conflict-free; 2 for 8-byte elements is the minimum)");
        }
        let loads: Vec<String> = w
            .loads
            .iter()
            .map(|(r, c)| format!("({r},{c}..{})", c + v))
            .collect();
        outln!(
            "  thread {} loads {} vectors (tile row, columns): {}",
            args.thread,
            loads.len(),
            loads.join(" ")
        );
        let stores: Vec<String> = w
            .stores
            .iter()
            .map(|(r, c, nr, nc)| format!("rows {r}..{} x cols {c}..{}", r + nr, c + nc))
            .collect();
        outln!("  thread {} stores: {}", args.thread, stores.join("; "));
    }
    if let Some(file) = &args.svg {
        outln!("wrote {}", file.display());
    }
    if args.run {
        with_element!(args.dtype, run_tensor(args, &plan))?;
    }
    Ok(())
}

fn run_tensor<T: Element>(args: &TensorArgs, plan: &TensorPlan) -> CliResult {
    let stream = gpu()?;
    let (name, (major, minor)) = cute_copy::describe(stream.context())?;
    outln!("GPU: {name} (sm_{major}{minor})");
    let (src, dst) = (plan.src, plan.dst);
    let s_len = args.src_offset + src.cosize()?.max(1);
    let d_len = args.dst_offset + dst.cosize()?.max(1);
    let mut rng = rand::rngs::StdRng::seed_from_u64(0x7e45);
    let host: Vec<T> = random_elements(s_len, rng.random());
    let before = poisoned_tensor_destination(
        &host,
        (args.src_offset, &src),
        d_len,
        (args.dst_offset, &dst),
        rng.random(),
    );
    let flat = |n: usize| Layout::new(&[n], &[1]);
    let sbuf = DeviceTensor::from_host(&stream, flat(s_len)?, &host)?;
    let mut dbuf = DeviceTensor::from_host(&stream, flat(d_len)?, &before)?;
    let sview = sbuf
        .view()
        .slice(&[args.src_offset], &[s_len - args.src_offset])?
        .relayout(src)?;
    let launch = |dbuf: &mut DeviceTensor<T>| -> cute_copy::Result<()> {
        let mut d = dbuf.view_mut();
        let mut d = d.slice_mut(&[args.dst_offset], &[d_len - args.dst_offset])?;
        let mut d = d.relayout_mut(dst)?;
        cute_copy::copy_tensor(&sview, &mut d, &stream).map(|_| ())
    };
    launch(&mut dbuf)?;
    let got = dbuf.to_host(&stream)?;
    let want = expected_tensor_copy(
        &host,
        (args.src_offset, &src),
        &before,
        (args.dst_offset, &dst),
    );
    let bad = got
        .iter()
        .zip(&want)
        .filter(|(g, w)| g.to_bits() != w.to_bits())
        .count();
    if bad != 0 {
        return Err(
            format!("verification failed: {bad} of {d_len} destination elements differ").into(),
        );
    }
    outln!(
        "verified: all {} copied elements match the host reference bit for bit; the other {} elements of the destination allocation are untouched",
        src.size(),
        d_len - src.size()
    );
    time_against_d2d(
        &stream,
        "copy_tensor",
        plan.bytes_moved(),
        args.iters,
        || launch(&mut dbuf),
    )
}

/// Time `launch` (3 warm-up calls, then the mean of `iters`) and a D2D memcpy of the same bytes
/// (half each way), and print both with their ratio: `tensor --run`'s last lines, with or
/// without `--to`.
pub(crate) fn time_against_d2d(
    stream: &std::sync::Arc<cute_copy::cudarc::driver::CudaStream>,
    name: &str,
    bytes: usize,
    iters: usize,
    mut launch: impl FnMut() -> cute_copy::Result<()>,
) -> CliResult {
    let iters = iters.max(1);
    let ms = time_launches(stream, 3, iters, &mut launch)?;
    outln!("{name}: {:.1} GB/s ({bytes} bytes read+written in {ms:.4} ms per launch; CUDA events, mean of {iters} after 3 warm-up)", gbps(bytes, ms));
    if bytes > 0 {
        let a = stream.alloc_zeros::<u8>(bytes / 2)?;
        let mut b = stream.alloc_zeros::<u8>(bytes / 2)?;
        let dms = time_launches(stream, 3, iters, || Ok(stream.memcpy_dtod(&a, &mut b)?))?;
        outln!(
            "D2D memcpy of the same bytes: {:.1} GB/s; ratio to D2D memcpy: {:.2}",
            gbps(bytes, dms),
            dms / ms
        );
    }
    Ok(())
}
