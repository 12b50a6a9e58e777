#!/usr/bin/env python3
"""torch anchors for BENCHMARKS.md, measured in the same device call as the criterion run.

For every shape of the "Alignment" section: torch `copy_` between the same strided views the
criterion group `align_<name>_<dtype>` copies (same offsets, leading dimensions, dtype), and a D2D
copy of the same bytes (one contiguous `copy_`). For "Batches": torch's index_select/index_copy_
of the 300 paged blocks. Times are CUDA-event medians over back-to-back calls after warm-up; GB/s
count bytes read + written. Prints one table row per shape; `--json FILE` also writes the numbers.

For "Layouts": torch eager `copy_` of the permuted / strided views into packed tensors.

Usage (on the GPU host): python3 tools/torch_anchor.py [--layouts] [--json out.json]
"""
import json
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
RUST_DTYPE = {torch.uint8: "u8", torch.int16: "u16", torch.int32: "u32", torch.int64: "i64",
              torch.float16: "f16", torch.bfloat16: "bf16", torch.float32: "f32"}


def median_ms(fn, reps=30, warmup=5):
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(reps):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        fn()
        b.record()
        b.synchronize()
        times.append(a.elapsed_time(b))
    times.sort()
    return times[len(times) // 2]


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
        flat_a = torch.empty(nbytes // 2, dtype=torch.uint8, device="cuda")
        flat_b = torch.empty_like(flat_a)
        td = median_ms(lambda: flat_b.copy_(flat_a))
        rows.append({"group": f"align_{name}_{RUST_DTYPE[dt]}", "torch_gbps": nbytes / t / 1e6,
                     "d2d_gbps": nbytes / td / 1e6, "bytes": nbytes})
        del sbuf, dbuf, flat_a, flat_b
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


def layout_rows():
    """torch eager on the "Layouts" shapes: y.copy_(view) into a preallocated packed y (what
    `.contiguous()` does, without the allocation), and D2D of the same bytes."""
    rows = []
    for name, dt, shape, view in LAYOUTS:
        e = torch.empty((), dtype=dt).element_size()
        n = 1
        for d in shape:
            n *= d
        x = random_buffer(n, dt).view(shape)
        v = view(x)
        y = torch.empty(v.shape, dtype=dt, device="cuda")
        op = lambda: y.copy_(v)
        op()
        torch.cuda.synchronize()
        assert torch.equal(y, v.contiguous()), name
        nbytes = 2 * v.numel() * e
        t = median_ms(op, reps=20)
        flat_a = torch.empty(nbytes // 2, dtype=torch.uint8, device="cuda")
        flat_b = torch.empty_like(flat_a)
        td = median_ms(lambda: flat_b.copy_(flat_a), reps=20)
        rows.append({"group": f"layout_{name}_{RUST_DTYPE[dt]}", "torch_gbps": nbytes / t / 1e6,
                     "d2d_gbps": nbytes / td / 1e6, "bytes": nbytes})
        del x, v, y, flat_a, flat_b
        torch.cuda.empty_cache()
    return rows


def main():
    print(f"# torch {torch.__version__} on {torch.cuda.get_device_name()}")
    if "--layouts" in sys.argv:
        rows = layout_rows()
    else:
        rows = alignment_rows() + batch_rows() + layout_rows()
    print(f"{'group':58} {'torch GB/s':>10} {'D2D GB/s':>9} {'torch x D2D':>11}")
    for r in rows:
        d2d = r.get("d2d_gbps")
        ratio = f"{r['torch_gbps'] / d2d:.2f}" if d2d else "-"
        print(f"{r['group']:58} {r['torch_gbps']:10.0f} {d2d or 0:9.0f} {ratio:>11}")
    if "--json" in sys.argv:
        with open(sys.argv[sys.argv.index("--json") + 1], "w") as f:
            json.dump(rows, f, indent=1)


if __name__ == "__main__":
    main()
