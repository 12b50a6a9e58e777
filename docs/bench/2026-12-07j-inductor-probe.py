#!/usr/bin/env python3
"""What Inductor runs for the copies where torch.compile is ahead of cute-copy (issues 21, 24).

    python3 2026-12-07j-inductor-probe.py CASE [--profile]

Compiles `y.copy_(expr(x))` for CASE as tools/torch_anchor.py does (fullgraph, static shapes,
preallocated y), runs it until compiled and tuned, then runs it once more between
cudaProfilerStart / Stop (`--profile`: for `ncu --profile-from-start off`). With TRITON_CACHE_DIR
set, the cache keeps each kernel's PTX and its launch metadata (num_warps), which is what the
session reads back. Prints the GPU time per call (graph replays) and the D2D ratio.
"""
import sys

import torch

MEAN, STD = [0.485 * 255, 0.456 * 255, 0.406 * 255], [0.229 * 255, 0.224 * 255, 0.225 * 255]


def norm(x, shape):
    mean = torch.tensor(MEAN, device="cuda").view(shape)
    std = torch.tensor(STD, device="cuda").view(shape)
    return lambda v: (v.float() - mean) / std


def cases():
    n1, n3 = norm(None, (1, 3, 1, 1)), norm(None, (1, 1, 1, 3))
    return {
        "items": (torch.float32, (131072, 3, 5), lambda x: x.permute(0, 2, 1)),
        "strided_bf16_f32": (torch.bfloat16, (64, 1024, 1024), lambda x: x[:, :, :1023].float()),
        "nhwc_norm": (torch.uint8, (64, 224, 224, 3), lambda x: n1(x.permute(0, 3, 1, 2))),
        "crop_bf16": (torch.uint8, (8, 3, 1088, 1928),
                      lambda x: n3(x[:, :, 3:1083, 5:1925].permute(0, 2, 3, 1)).to(torch.bfloat16)),
        "u8_transpose": (torch.uint8, (9999, 8191), lambda x: x.t()),
        "f16_transpose": (torch.float16, (9001, 5003), lambda x: x.t()),
        "u8_crop_nhwc": (torch.uint8, (8, 3, 1088, 1928), lambda x: x[:, :, 3:1083, 5:1925].permute(0, 2, 3, 1)),
    }


def main():
    name = sys.argv[1]
    dt, shape, expr = cases()[name]
    if dt.is_floating_point:
        x = torch.randn(shape, device="cuda").to(dt)
    else:
        x = torch.randint(0, 256, shape, device="cuda", dtype=dt)
    want = expr(x).contiguous()
    y = torch.empty_like(want)

    def copy_into(x, y):
        y.copy_(expr(x))

    fn = torch.compile(copy_into, dynamic=False, fullgraph=True)
    for _ in range(5):
        fn(x, y)
    torch.cuda.synchronize()
    assert torch.allclose(y.float(), want.float(), rtol=0.07, atol=1e-2), name
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        for _ in range(50):
            fn(x, y)
    s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    times = []
    for _ in range(10):
        s.record()
        g.replay()
        e.record()
        e.synchronize()
        times.append(s.elapsed_time(e) / 50)
    ms = sorted(times)[5]
    nbytes = want.numel() * (x.element_size() + y.element_size())
    a = torch.empty(nbytes // 2, dtype=torch.uint8, device="cuda")
    b = torch.empty_like(a)
    s.record()
    for _ in range(20):
        b.copy_(a)
    e.record()
    e.synchronize()
    d2d = s.elapsed_time(e) / 20
    print(f"{name}: {ms * 1e3:.1f} us per call, {nbytes / ms / 1e6:.0f} GB/s, {d2d / ms:.3f} x D2D")
    if "--profile" in sys.argv:
        torch.cuda.synchronize()
        torch.cuda.profiler.start()
        fn(x, y)
        torch.cuda.synchronize()
        torch.cuda.profiler.stop()


if __name__ == "__main__":
    main()
