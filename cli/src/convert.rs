//! `tensor --to DTYPE` (with `--scale`, `--normalize MODE --mean .. --std ..`): explain (and with
//! `--run`, run) a copy that converts the element type on the way: the layouts before and after
//! coalescing, the route, each side's accesses, the rounding rule and the channel; verified against
//! the host model and timed against a D2D memcpy of the same bytes.

use cute_copy::reference::{expected_tensor_convert, for_each_pair, random_elements, same_value};
use cute_copy::{
    ChannelStage, Convert, ConvertPlan, ConvertRoute, DType, DeviceTensor, Element, Interleaved,
    Layout,
};
use rand::{Rng, SeedableRng};
use serde_json::json;

use crate::run::{gpu, with_element};
use crate::tensor::TensorArgs;
use crate::CliResult;

fn route_json(plan: &ConvertPlan) -> serde_json::Value {
    match &plan.route {
        ConvertRoute::Empty => json!({ "family": "none", "atom": null, "launched": false }),
        ConvertRoute::Elementwise {
            chunk,
            rows,
            chunks_per_row,
            vector_load,
            vector_store,
            blocks,
        } => json!({
            "family": "Convert", "atom": "Convert128", "kind": "elementwise", "chunk": chunk,
            "rows": rows, "chunks_per_row": chunks_per_row, "blocks": blocks,
            "load": if *vector_load { "vector" } else { "element" },
            "store": if *vector_store { "vector" } else { "element" },
            "lane_interleaved": plan.lane_interleaved(),
        }),
        ConvertRoute::Tile {
            mode_a,
            mode_b,
            tile,
            tiles,
        } => json!({
            "family": "Convert", "atom": "Convert128", "kind": "tile", "mode_a": mode_a,
            "mode_b": mode_b, "tile": [tile.1, tile.0], "tiles": tiles.2,
            "load": if plan.coalesced.0.stride()[*mode_a] == 1 { "vector" } else { "element" },
            "store": if plan.coalesced.1.stride()[*mode_b] == 1 { "vector" } else { "element" },
        }),
        ConvertRoute::Gather {
            vectors,
            locality,
            divided,
            blocks,
        } => json!({
            "family": "Convert", "atom": "Convert128", "kind": "gather", "vectors": vectors,
            "short_modes": { "elements": locality.0, "then_mode": locality.1 }, "blocks": blocks,
            "coordinates": if *divided { "divided" } else { "stepped" },
            "load": "element", "store": "vector",
        }),
        ConvertRoute::Channels {
            channel_mode,
            pixel_mode,
            interleaved,
            stage,
            tile,
            tiles,
        } => json!({
            "family": "Convert", "atom": "Convert128", "kind": "channels",
            "channel_mode": channel_mode, "pixel_mode": pixel_mode,
            "channels": plan.coalesced.0.shape()[*channel_mode],
            "interleaved": match interleaved { Interleaved::Source => "source", Interleaved::Destination => "destination" },
            "stage": match stage { ChannelStage::Shared => "shared", ChannelStage::Registers => "registers" },
            "tile": tile, "tiles_along_pixels": tiles.0, "tiles": tiles.1,
            "load": "vector", "store": "vector",
        }),
    }
}

/// Explain (and run) the converting copy `args` describes, of `src` into `dst`.
pub(crate) fn convert(
    args: &TensorArgs,
    to: DType,
    convert: &Convert,
    (src, dst): (Layout, Layout),
) -> CliResult {
    let plan = ConvertPlan::new(args.dtype, to, src, dst, convert)?;
    if args.json {
        let v = json!({
            "dtype": args.dtype.to_string(), "to": to.to_string(),
            "src": plan.src.to_string(), "dst": plan.dst.to_string(),
            "coalesced": [plan.coalesced.0.to_string(), plan.coalesced.1.to_string()],
            "rule": format!("{:?}", plan.rule),
            "channel": plan.channel.map(|(m, div)| json!({ "mode": m, "div": div })),
            "coefficients": plan.coefficients.as_ref().map(|(mean, mul)| json!({ "mean": mean, "mul": mul })),
            "route": route_json(&plan),
            "reasons": plan.reasons(),
            "bytes_moved": plan.bytes_moved(),
        });
        outln!("{}", serde_json::to_string_pretty(&v)?);
        return Ok(());
    }
    out!("{plan}");
    if args.run {
        with_element!(args.dtype, run_from(args, &plan, convert, to))?;
    }
    Ok(())
}

fn run_from<S: Element>(
    args: &TensorArgs,
    plan: &ConvertPlan,
    convert: &Convert,
    to: DType,
) -> CliResult {
    with_element!(to, run_convert::<S>(args, plan, convert))
}

fn run_convert<S: Element, D: Element>(
    args: &TensorArgs,
    plan: &ConvertPlan,
    convert: &Convert,
) -> CliResult {
    let stream = gpu()?;
    let (name, (major, minor)) = cute_copy::describe(stream.context())?;
    outln!("GPU: {name} (sm_{major}{minor})");
    let (src, dst) = (plan.src, plan.dst);
    let (so, dso) = (args.src_offset, args.dst_offset);
    let s_len = so + src.cosize()?.max(1);
    let d_len = dso + dst.cosize()?.max(1);
    let mut rng = rand::rngs::StdRng::seed_from_u64(0xc0de);
    let host: Vec<S> = random_elements(s_len, rng.random());
    let canaries: Vec<D> = random_elements(d_len, rng.random());
    let want = expected_tensor_convert(&host, (so, &src), &canaries, (dso, &dst), convert)?;
    let mut before = canaries;
    for_each_pair(&src, &dst, |_, d| {
        before[dso + d] = D::from_bits(!want[dso + d].to_bits())
    });
    let flat = |n: usize| Layout::new(&[n], &[1]);
    let sbuf = DeviceTensor::from_host(&stream, flat(s_len)?, &host)?;
    let mut dbuf = DeviceTensor::from_host(&stream, flat(d_len)?, &before)?;
    let sview = sbuf.view_at(so, src)?;
    let launch = |dbuf: &mut DeviceTensor<D>| -> cute_copy::Result<()> {
        let mut d = dbuf.view_at_mut(dso, dst)?;
        cute_copy::convert_tensor(&sview, &mut d, convert, &stream).map(|_| ())
    };
    launch(&mut dbuf)?;
    let got = dbuf.to_host(&stream)?;
    let bad = (0..d_len)
        .filter(|&i| !same_value(D::DTYPE, got[i].to_bits(), want[i].to_bits()))
        .count();
    if bad != 0 {
        return Err(
            format!("verification failed: {bad} of {d_len} destination elements differ").into(),
        );
    }
    outln!(
        "verified: all {} converted elements match the host model (NaNs as NaNs); the other {} elements of the destination allocation are untouched",
        src.size(),
        d_len - src.size()
    );
    crate::tensor::time_against_d2d(
        &stream,
        "convert_tensor",
        plan.bytes_moved(),
        args.iters,
        || launch(&mut dbuf),
    )
}
