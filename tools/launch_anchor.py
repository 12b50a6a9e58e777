#!/usr/bin/env python3
"""torch anchors for BENCHMARKS.md "Launch cost", in the same device call as `bench launch_cost`.

What one small copy costs per call from Python when calls come back to back on one stream:
torch eager `dst.copy_(src)` of a 64x64 f32 tensor (contiguous, and a transposed view), and
`torch.cuda` stream memcpy of the same 16 KiB through `copy_` of flat tensors. Wall clock over
N back-to-back calls plus one synchronize, the median of 7 rounds, in microseconds per call.

Usage (on the GPU host): python3 tools/launch_anchor.py [--json out.json]
"""
import json
import sys
import time

import torch

N = 5000


def per_call_us(fn, n=N, rounds=7):
    for _ in range(200):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(rounds):
        t = time.perf_counter()
        for _ in range(n):
            fn()
        torch.cuda.synchronize()
        times.append((time.perf_counter() - t) / n * 1e6)
    times.sort()
    return times[len(times) // 2]


def main():
    src = torch.randn(64, 64, device="cuda")
    dst = torch.empty(64, 64, device="cuda")
    dst_t = torch.empty(64, 64, device="cuda")
    rows = [
        ("torch copy_ 64x64 f32 (contiguous)", per_call_us(lambda: dst.copy_(src))),
        ("torch copy_ 64x64 f32 (transposed source)", per_call_us(lambda: dst_t.copy_(src.t()))),
    ]
    print("| call (Python, torch %s) | us per call |" % torch.__version__)
    print("| --- | ---: |")
    for name, us in rows:
        print(f"| {name} | {us:.2f} |")
    if "--json" in sys.argv:
        with open(sys.argv[sys.argv.index("--json") + 1], "w") as f:
            json.dump({name: us for name, us in rows}, f, indent=1)


if __name__ == "__main__":
    main()
