#!/usr/bin/env python3
"""torch anchors for BENCHMARKS.md, measured in the same device call as the criterion run.

For every shape of the "Alignment" section: torch `copy_` between the same strided views the
criterion group `align_<name>_<dtype>` copies (same offsets, leading dimensions, dtype), and a D2D
copy of the same bytes (one contiguous `copy_`). For "Batches": torch's index_select/index_copy_
of the 300 paged blocks. Times are CUDA-event medians over back-to-back calls after warm-up; GB/s
count bytes read + written. Prints one table row per shape; `--json FILE` also writes the numbers.

For "Layouts" (`--layouts`) and "Layouts at any shape" (`--any-shape`, groups `layout_any_*`): the
permuted / strided / cropped view copied into a preallocated packed tensor by torch eager
(`y.copy_(view)`) and by `torch.compile` of the same function, and D2D of the same bytes. Eager
and compiled copies are timed from CUDA-graph replays (100 calls captured into one graph, CUDA-event
median of 20 replays, per call): the GPU's time per call, as criterion's back-to-back launches give
for cute-copy. A compiled call costs 45-70 us of host time (dynamo's guards, the wrapper; H200
host, torch 2.11), more than its kernel on most of these shapes, so timing it from stream calls
measures the host; that figure is kept too, as `compile_stream_gbps`. D2D is timed from stream
calls (10 back-to-back per event pair): captured into a graph, the flat copy_ becomes a memcpy node
that ran at 2.7 TB/s against 4.2 TB/s from the stream for 1 GiB each way (H200, torch 2.11).

For "Conversions" (`--convert`, groups `convert_*` of benches/convert.rs): torch eager and
torch.compile of the same expression (cast, scale, normalize, with the same permute or crop) into
a preallocated output, graph-timed, and D2D of the same bytes.

Usage (on the GPU host): python3 tools/torch_anchor.py [--layouts] [--any-shape] [--convert] [--json out.json]
"""
import json
import math
import sys

import torch

# name, dtype, rows, cols, ld_src, ld_dst, src_at, dst_at, pad_to (must match benches/copy.rs)
SHAPES = [
    ("8191x8191_at1_1_ld8192_to_ld8192", torch.uint8, 8191, 8191, 8192, 8192, (1, 1), (0, 0), None),
    ("2000x7001_at5_3_ld11520_to_0_1_ld7168", torch.uint8, 2000, 7001, 11520, 7168, (5, 3), (0, 1), None),
    ("47999x45999_at1_1_ld46000_to_0_1", torch.uint8, 47999, 45999, 46000, 46000, (1, 1), (0, 1), None),
    ("12000x12001_contiguous", torch.int16, 12000, 12001, 12001, 12001, (0, 0), (0, 0), None),
    ("8191x8191_ld8193_to_packed", torch.int32, 8191, 8191, 8193, 8191, (0, 0), (0, 0), None),
    ("3000x2999_at1_1_ld3001_to_0_1_ld3000", torch.int64, 3000, 2999, 3001, 3000, (1, 1), (0, 1), None),
    ("16384x16380_ld16388_to_packed", torch.float16, 16384, 16380, 16388, 16380, (0, 0), (0, 0), None),
    ("8192x8192_dense", torch.uint8, 8192, 8192, 8192, 8192, (0, 0), (0, 0), None),
    ("4096x4096_dense", torch.uint8, 4096, 4096, 4096, 4096, (0, 0), (0, 0), None),
    ("16383x16383_ld16383_to_ld16384", torch.float16, 16383, 16383, 16383, 16384, (0, 0), (0, 0), None),
    ("pad_16384x16380_ld16388_to_16384", torch.bfloat16, 16384, 16380, 16388, 16384, (0, 0), (0, 0), (16384, 16384)),
    ("4096x4096_dense", torch.float32, 4096, 4096, 4096, 4096, (0, 0), (0, 0), None),
    ("4096x4096_dense", torch.bfloat16, 4096, 4096, 4096, 4096, (0, 0), (0, 0), None),
    ("16384x16384_dense", torch.float16, 16384, 16384, 16384, 16384, (0, 0), (0, 0), None),
    ("16383x16383_ld16384", torch.float16, 16383, 16383, 16384, 16384, (0, 0), (0, 0), None),
]
RUST_DTYPE = {torch.float8_e4m3fn: "f8e4m3", torch.uint8: "u8", torch.int16: "u16", torch.int32: "u32", torch.int64: "i64",
              torch.float16: "f16", torch.bfloat16: "bf16", torch.float32: "f32", torch.float64: "f64"}


def median_ms(fn, reps=30, warmup=5, calls=1):
    """Median over `reps` of the CUDA-event time of `calls` back-to-back calls, per call (ms)."""
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(reps):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        for _ in range(calls):
            fn()
        b.record()
        b.synchronize()
        times.append(a.elapsed_time(b) / calls)
    times.sort()
    return times[len(times) // 2]


def d2d_gbps(nbytes, time_ms=median_ms):
    """GB/s of one contiguous uint8 `copy_` of nbytes / 2 (read + written = nbytes), timed by
    time_ms (median_ms: CUDA events around each call; stream_ms: around 10 back-to-back calls)."""
    flat_a = torch.empty(nbytes // 2, dtype=torch.uint8, device="cuda")
    flat_b = torch.empty_like(flat_a)
    return nbytes / time_ms(lambda: flat_b.copy_(flat_a)) / 1e6


def random_buffer(n, dtype):
    if dtype.is_floating_point:
        return torch.randn(n, device="cuda").to(dtype)
    return torch.randint(0, 120, (n,), device="cuda", dtype=torch.int64).to(dtype)


def alignment_rows():
    rows = []
    for name, dt, r, c, lds, ldd, sat, dat, pad in SHAPES:
        e = torch.empty((), dtype=dt).element_size()
        drows, dcols = pad if pad else (r, c)
        sbuf = random_buffer((sat[0] + r) * lds, dt)
        dbuf = torch.zeros((dat[0] + drows) * ldd, dtype=dt, device="cuda")
        s = sbuf.as_strided((r, c), (lds, 1), sat[0] * lds + sat[1])
        d = dbuf.as_strided((drows, dcols), (ldd, 1), dat[0] * ldd + dat[1])
        if pad:
            # torch's pad: F.pad into a new tensor, then into the destination (what users write)
            op = lambda: d.copy_(torch.nn.functional.pad(s, (0, dcols - c, 0, drows - r)))
        else:
            op = lambda: d.copy_(s)
        op()
        torch.cuda.synchronize()
        if not pad:
            assert torch.equal(d, s), name
        nbytes = (r * c + drows * dcols) * e
        t = median_ms(op)
        rows.append({"group": f"align_{name}_{RUST_DTYPE[dt]}", "torch_gbps": nbytes / t / 1e6,
                     "d2d_gbps": d2d_gbps(nbytes), "bytes": nbytes})
        del sbuf, dbuf
        torch.cuda.empty_cache()
    return rows


def batch_rows():
    rows = []
    pool = torch.randn(4096, 16, 128, device="cuda").half()
    idx = torch.tensor([(k * 13 + 7) % 4096 for k in range(300)], device="cuda")
    out = torch.empty(300, 16, 128, device="cuda", dtype=torch.half)
    nbytes = 2 * 300 * 16 * 128 * 2
    t = median_ms(lambda: torch.index_select(pool, 0, idx, out=out), reps=200)
    rows.append({"group": "batch_gather_300x4KiB_f16", "torch_gbps": nbytes / t / 1e6, "torch_us": t * 1e3,
                 "bytes": nbytes})
    pool = torch.randn(4096, 16, 2048, device="cuda").half()
    idx = torch.tensor([(k * 2654435761) % 4096 for k in range(4096)], device="cuda")
    out = torch.empty_like(pool)
    nbytes = 2 * pool.numel() * 2
    t = median_ms(lambda: torch.index_select(pool, 0, idx, out=out))
    rows.append({"group": "batch_blocks_4096x64KiB_f16", "torch_gbps": nbytes / t / 1e6, "bytes": nbytes})
    return rows


# name, dtype, storage shape, how the source view is made from it (must match benches/copy.rs)
LAYOUTS = [
    ("transpose_16384x16384", torch.float32, (16384, 16384), lambda x: x.permute(1, 0)),
    ("transpose_16384x16384", torch.float16, (16384, 16384), lambda x: x.permute(1, 0)),
    ("transpose_8192x8192", torch.uint8, (8192, 8192), lambda x: x.permute(1, 0)),
    ("permute_8x32x4096x128_0213", torch.float16, (8, 32, 4096, 128), lambda x: x.permute(0, 2, 1, 3)),
    ("nchw_to_nhwc_64x3x224x224", torch.float32, (64, 3, 224, 224), lambda x: x.permute(0, 2, 3, 1)),
    ("batched_64x1024x1023_ld1024_to_packed", torch.float16, (64, 1024, 1024), lambda x: x[:, :, :1023]),
]


# "Layouts at any shape" (must match any_shape_benches in benches/copy.rs): extents that are no
# multiple of any tile, a cropped NCHW -> NHWC frame batch, narrow inner modes.
ANY_SHAPE = [
    ("any_transpose_10000x7001", torch.float32, (10000, 7001), lambda x: x.permute(1, 0)),
    ("any_transpose_9001x5003", torch.float16, (9001, 5003), lambda x: x.permute(1, 0)),
    ("any_transpose_9999x8191", torch.uint8, (9999, 8191), lambda x: x.permute(1, 0)),
    ("any_transpose_5001x3003", torch.float64, (5001, 3003), lambda x: x.permute(1, 0)),
    # 8 frames of 1088x1928 cropped at (row 3, col 5) to 1080x1920, then NCHW -> NHWC
    ("any_crop_nchw_to_nhwc_8x3x1080x1920", torch.uint8, (8, 3, 1088, 1928),
     lambda x: x[:, :, 3:1083, 5:1925].permute(0, 2, 3, 1)),
    ("any_items_131072x3x5_021", torch.float32, (131072, 3, 5), lambda x: x.permute(0, 2, 1)),
    ("any_permute_8x16x1025x80_0213", torch.bfloat16, (8, 16, 1025, 80), lambda x: x.permute(0, 2, 1, 3)),
    ("any_permute_2x2048x32x128_0231", torch.float16, (2, 2048, 32, 128), lambda x: x.permute(0, 2, 3, 1)),
    # the mirror image: packed NHWC frames into the same crop of padded NCHW planes (a destination
    # view: the two extra fields are the destination's storage shape and its view)
    ("any_nhwc_to_crop_nchw_8x3x1080x1920", torch.uint8, (8, 1080, 1920, 3), lambda x: x.permute(0, 3, 1, 2),
     (8, 3, 1088, 1928), lambda y: y[:, :, 3:1083, 5:1925]),
]

# "Conversions" (must match benches/convert.rs): (name, source dtype, storage shape, the expression,
# destination dtype). FP8 is clamped to +-448 first: cute-copy saturates (cvt.rn.satfinite), torch's
# cast would give NaN past 448.
IMAGENET_MEAN, IMAGENET_STD = (123.675, 116.28, 103.53), (58.395, 57.12, 57.375)


_NORM = {}


def _norm(x, shape):
    # mean and std made once, outside any graph capture (a host -> device copy cannot be captured)
    key = tuple(shape)
    if key not in _NORM:
        _NORM[key] = (torch.tensor(IMAGENET_MEAN, device="cuda").view(shape),
                      torch.tensor(IMAGENET_STD, device="cuda").view(shape))
    mean, std = _NORM[key]
    return (x.float() - mean) / std


CONVERT = [
    ("16384x16384", torch.float32, (16384, 16384), lambda x: x.to(torch.bfloat16), torch.bfloat16),
    ("transpose_16384x16384", torch.float32, (16384, 16384), lambda x: x.permute(1, 0).to(torch.bfloat16),
     torch.bfloat16),
    ("permute_8x32x4096x128_0213_scaled", torch.float16, (8, 32, 4096, 128),
     lambda x: (x.permute(0, 2, 1, 3).float() * (448.0 / 6.0)).clamp(-448, 448).to(torch.float8_e4m3fn),
     torch.float8_e4m3fn),
    ("batched_64x1024x1023_ld1024", torch.bfloat16, (64, 1024, 1024), lambda x: x[:, :, :1023].float(),
     torch.float32),
    ("nhwc_to_nchw_64x224x224x3_normalized", torch.uint8, (64, 224, 224, 3),
     lambda x: _norm(x.permute(0, 3, 1, 2), (1, 3, 1, 1)), torch.float32),
    ("crop_nchw_to_nhwc_8x3x1080x1920_normalized", torch.uint8, (8, 3, 1088, 1928),
     lambda x: _norm(x[:, :, 3:1083, 5:1925].permute(0, 2, 3, 1), (1, 1, 1, 3)).to(torch.bfloat16),
     torch.bfloat16),
]


def stream_ms(fn):
    """Per-call time of fn from 10 back-to-back calls on the stream per event pair (ms)."""
    return median_ms(fn, reps=20, calls=10)


def graph_ms(fn, calls=100, reps=20):
    """Per-call GPU time of fn (ms): `calls` calls captured into one CUDA graph, the CUDA-event
    median of `reps` replays. fn must not allocate (its buffers are preallocated)."""
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):  # warm-up off the capture, as torch.cuda.graph asks
        for _ in range(3):
            fn()
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        for _ in range(calls):
            fn()
    return median_ms(graph.replay, reps=reps, warmup=2) / calls


def compiled_copy(view):
    """torch.compile of `y.copy_(view(x))`: Inductor writes the mutated input y in place (one
    kernel, like eager's copy_ into the preallocated y), so no output is allocated per call. A
    fresh dynamo cache per shape: every shape's function shares this code object, and the
    recompile limit would otherwise send later shapes back to eager."""
    torch._dynamo.reset()

    def copy_into(x, y):
        y.copy_(view(x))

    return torch.compile(copy_into, dynamic=False, fullgraph=True)


def checked(name, op, y, want):
    """Run op once (compiling it, for torch.compile) into a zeroed y and check y == want."""
    y.zero_()
    op()
    torch.cuda.synchronize()
    assert torch.equal(y, want), name
    return op


def layout_rows(shapes):
    """torch on layout-change shapes: eager y.copy_(view) into a preallocated packed y (what
    `.contiguous()` does, without the allocation), torch.compile of the same, D2D of the bytes.
    An entry with two more fields (the destination's storage shape and its view of it) copies into
    that view instead."""
    rows = []
    for name, dt, shape, view, *into in shapes:
        x = random_buffer(math.prod(shape), dt).view(shape)
        v = view(x)
        want = v.contiguous()
        if into:
            y = into[1](torch.zeros(into[0], dtype=dt, device="cuda"))
        else:
            y = torch.empty(v.shape, dtype=dt, device="cuda")
        nbytes = 2 * v.numel() * v.element_size()
        eager = checked(name, lambda: y.copy_(v), y, want)
        row = {"group": f"layout_{name}_{RUST_DTYPE[dt]}", "torch_gbps": nbytes / graph_ms(eager) / 1e6}
        try:
            fn = compiled_copy(view)
            op = checked(name + " (compiled)", lambda: fn(x, y), y, want)
            row["compile_gbps"] = nbytes / graph_ms(op) / 1e6
            row["compile_stream_gbps"] = nbytes / stream_ms(op) / 1e6
        except AssertionError:
            raise
        except Exception as e:  # no working Inductor: keep the eager and D2D columns
            print(f"# {name}: torch.compile failed: {type(e).__name__}: {e}", file=sys.stderr)
        row |= {"d2d_gbps": d2d_gbps(nbytes, stream_ms), "bytes": nbytes}
        rows.append(row)
        del x, v, want, y
        torch.cuda.empty_cache()
    return rows


def convert_rows():
    """torch on the conversion shapes: eager y.copy_(expr(x)) into a preallocated y, torch.compile
    of the same (checked close to eager: the two may round the normalization differently), D2D of
    half the bytes read plus written each way."""
    rows = []
    for name, dt, shape, expr, out in CONVERT:
        if dt.is_floating_point:
            x = torch.randn(shape, device="cuda").to(dt)
        else:
            x = torch.randint(0, 256, shape, device="cuda", dtype=dt)
        want = expr(x)  # also makes the normalization's mean and std, before any capture
        y = torch.empty(want.shape, dtype=out, device="cuda")
        nbytes = want.numel() * (x.element_size() + y.element_size())
        eager = lambda: y.copy_(expr(x))
        row = {"group": f"convert_{name}_{RUST_DTYPE[dt]}_to_{RUST_DTYPE[out]}",
               "torch_gbps": nbytes / graph_ms(eager) / 1e6}
        try:
            fn = compiled_copy(expr)
            op = lambda: fn(x, y)
            y.zero_()
            op()
            torch.cuda.synchronize()
            assert torch.allclose(y.float(), want.float(), rtol=0.07, atol=1e-2), name
            row["compile_gbps"] = nbytes / graph_ms(op) / 1e6
        except AssertionError:
            raise
        except Exception as e:
            print(f"# {name}: torch.compile failed: {type(e).__name__}: {e}", file=sys.stderr)
        row |= {"d2d_gbps": d2d_gbps(nbytes, stream_ms), "bytes": nbytes}
        rows.append(row)
        del x, want, y
        torch.cuda.empty_cache()
    return rows


def kv_scatter_row(tokens=65536, heads=8, head_dim=128, block=16, scale=448.0 / 6.0):
    """The KV-cache write into an FP8 pool (benches/convert.rs bench_kv_scatter): bf16 keys
    [tokens, heads, head_dim] scaled, cast to float8_e4m3fn and written at a slot mapping of
    16-slot blocks in random order into a pool of 2 * tokens slots. Eager: the cast, then
    index_copy_ (through uint8 views where torch has no float8 index_copy_); torch.compile of the
    same, one Inductor kernel."""
    fp8, slots = torch.float8_e4m3fn, 2 * tokens
    x = torch.randn(tokens, heads, head_dim, device="cuda").to(torch.bfloat16)
    pool = torch.zeros(slots, heads, head_dim, device="cuda", dtype=fp8)
    blocks = torch.randperm(slots // block, device="cuda")
    t = torch.arange(tokens, device="cuda")
    mapping = blocks[t // block] * block + t % block

    def write(x, pool, mapping):
        q = (x.float() * scale).clamp(-448, 448).to(fp8)
        pool.view(torch.uint8).index_copy_(0, mapping, q.view(torch.uint8))

    want = torch.zeros_like(pool)
    want.view(torch.uint8)[mapping] = (x.float() * scale).clamp(-448, 448).to(fp8).view(torch.uint8)
    nbytes = x.numel() * (x.element_size() + 1)
    name = f"convert_kv_scatter_{tokens}x{heads}x{head_dim}_scaled_bf16_to_f8e4m3"
    eager = lambda: write(x, pool, mapping)
    pool.zero_()
    eager()
    torch.cuda.synchronize()
    assert torch.equal(pool.view(torch.uint8), want.view(torch.uint8)), name
    row = {"group": name, "torch_gbps": nbytes / graph_ms(eager) / 1e6}
    try:
        torch._dynamo.reset()
        fn = torch.compile(write, dynamic=False, fullgraph=True)
        op = lambda: fn(x, pool, mapping)
        pool.zero_()
        op()
        torch.cuda.synchronize()
        assert torch.equal(pool.view(torch.uint8), want.view(torch.uint8)), name + " (compiled)"
        row["compile_gbps"] = nbytes / graph_ms(op) / 1e6
    except AssertionError:
        raise
    except Exception as e:
        print(f"# {name}: torch.compile failed: {type(e).__name__}: {e}", file=sys.stderr)
    row |= {"d2d_gbps": d2d_gbps(nbytes, stream_ms), "bytes": nbytes}
    del x, pool, want
    torch.cuda.empty_cache()
    return row


def ratio(a, b):
    return f"{a / b:.2f}" if a and b else "-"


def gbps(v):
    return f"{v:.0f}" if v else "-"


def print_table(rows):
    cols = ("eager GB/s", "compile GB/s", "D2D GB/s", "eager x D2D", "compile x D2D")
    print(f"{'group':58} " + " ".join(f"{c:>13}" for c in cols))
    for r in rows:
        t, c, d = r.get("torch_gbps"), r.get("compile_gbps"), r.get("d2d_gbps")
        cells = (gbps(t), gbps(c), gbps(d), ratio(t, d), ratio(c, d))
        print(f"{r['group']:58} " + " ".join(f"{x:>13}" for x in cells))


def main():
    print(f"# torch {torch.__version__} on {torch.cuda.get_device_name()}")
    layouts, any_shape = "--layouts" in sys.argv, "--any-shape" in sys.argv
    if "--convert" in sys.argv:
        rows = convert_rows() + [kv_scatter_row()]
    elif layouts or any_shape:
        rows = (layout_rows(LAYOUTS) if layouts else []) + (layout_rows(ANY_SHAPE) if any_shape else [])
    else:
        rows = alignment_rows() + batch_rows() + layout_rows(LAYOUTS)
    print_table(rows)
    if "--json" in sys.argv:
        with open(sys.argv[sys.argv.index("--json") + 1], "w") as f:
            json.dump(rows, f, indent=1)


if __name__ == "__main__":
    main()
