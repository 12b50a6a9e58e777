"""cute_copy against torch eager, torch.compile and CuPy, timed with CUDA events in one process.

    python bench.py [--no-compile] [--no-cupy] [--reps N]

Each large copy is timed over `reps` launches between two CUDA events (after warm-up) and shown
in microseconds and as "x D2D": the time of a device-to-device memcpy of the same bytes divided by
the copy's own time (1.0x is memcpy speed). Every result is checked bit for bit once. The small
copy's cost is host time per call (no synchronization inside the loop). Prints markdown tables.
"""

from __future__ import annotations

import argparse
import sys
import time

import torch

import cute_copy as cc


def cuda_time_us(fn, reps):
    for _ in range(3):
        fn()
    torch.cuda.synchronize()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(reps):
        fn()
    end.record()
    end.synchronize()
    return start.elapsed_time(end) * 1000.0 / reps


def same_bits(a, b):
    signed = {1: torch.int8, 2: torch.int16, 4: torch.int32, 8: torch.int64}[a.element_size()]
    return a.shape == b.shape and torch.equal(
        a.view(signed).contiguous().view(-1), b.view(signed).contiguous().view(-1)
    )


def as_torch(x):
    """A CuPy result as a torch tensor (outside the timed loop)."""
    return x if isinstance(x, torch.Tensor) else torch.from_dlpack(x)


def rand(shape, dtype):
    n = 1
    for s in shape:
        n *= s
    size = torch.empty(0, dtype=dtype).element_size()
    return torch.randint(0, 256, (n * size,), dtype=torch.uint8, device="cuda").view(dtype).view(shape)


class Case:
    """One copy: `src` a view, `dst` a preallocated destination; the reference is `ref()`."""

    def __init__(self, name, src, nbytes, torch_eager, compiled_fn, cupy_fn, cute_fn, ref):
        self.name, self.src, self.nbytes = name, src, nbytes
        self.torch_eager, self.compiled_fn, self.cupy_fn, self.cute_fn, self.ref = (
            torch_eager,
            compiled_fn,
            cupy_fn,
            cute_fn,
            ref,
        )


def layout_case(name, shape, dtype, view, cupy, torch_name="copy_"):
    base = rand(shape, dtype)
    src = view(base)
    dst = torch.empty(src.shape, dtype=dtype, device="cuda")
    ref = src.contiguous()
    nbytes = ref.numel() * ref.element_size()

    def cute():
        cc.copy_(dst, src)
        return dst

    def eager():
        dst.copy_(src)
        return dst

    def compiled():
        f = torch.compile(lambda b: view(b).contiguous(), fullgraph=True)
        return lambda: f(base)

    def cupy_fn():
        cb = cupy.from_dlpack(base)
        cv = view_cupy(cb, view, base)
        return lambda: cupy.ascontiguousarray(cv)

    return Case(
        name, src, nbytes, (torch_name, eager), compiled, cupy_fn if cupy else None, cute, lambda: ref
    )


def view_cupy(cb, view, base):
    """The same view of a CuPy alias of `base`, through its strides."""
    import cupy

    v = view(base)
    e = base.element_size()
    return cupy.lib.stride_tricks.as_strided(
        cb.ravel()[v.storage_offset() :], shape=v.shape, strides=[s * e for s in v.stride()]
    )


def kv_case(cupy):
    # 1500 blocks of 64 KiB ([16, 16, 128] f16) from a pool of 4096 to a pool of 4096, by index.
    blk = (16, 16, 128)
    src = rand((4096,) + blk, torch.float16)
    dst = torch.zeros_like(src)
    g = torch.Generator(device="cpu").manual_seed(0)
    s = torch.randperm(4096, generator=g)[:1500].cuda()
    d = torch.randperm(4096, generator=g)[:1500].cuda()
    pairs = torch.stack([s, d], dim=1).contiguous()
    nbytes = 1500 * 16 * 16 * 128 * 2
    expect = dst.clone()
    expect[d] = src[s]

    def cute():
        cc.copy_blocks(src, dst, pairs)
        return dst

    def eager():
        dst[d] = src[s]
        return dst

    def compiled():
        def f(src, dst, s, d):
            dst[d] = src[s]
            return dst

        fc = torch.compile(f, fullgraph=True)
        return lambda: fc(src, dst, s, d)

    def cupy_fn():
        cs, cd = cupy.from_dlpack(src), cupy.from_dlpack(dst)
        si, di = cupy.from_dlpack(s), cupy.from_dlpack(d)

        def run():
            cd[di] = cs[si]
            return dst

        return run

    return Case(
        "1500 KV blocks of 64 KiB by index",
        src,
        nbytes,
        ("dst[d]=src[s]", eager),
        compiled,
        cupy_fn if cupy else None,
        cute,
        lambda: expect,
    )


def d2d_us(nbytes, reps):
    a = torch.empty(nbytes, dtype=torch.uint8, device="cuda")
    b = torch.empty_like(a)
    return cuda_time_us(lambda: b.copy_(a), reps)


def host_us(fn, n=5000):
    for _ in range(200):
        fn()
    torch.cuda.synchronize()
    t = time.perf_counter()
    for _ in range(n):
        fn()
    el = time.perf_counter() - t
    torch.cuda.synchronize()
    return el * 1e6 / n


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--no-compile", action="store_true")
    ap.add_argument("--no-cupy", action="store_true")
    ap.add_argument("--reps", type=int, default=20)
    args = ap.parse_args()
    cupy = None
    if not args.no_cupy:
        try:
            import cupy
        except ImportError:
            print("(CuPy not installed: no CuPy column)", file=sys.stderr)
    print(
        f"cute_copy {cc.__version__}, torch {torch.__version__}, CuPy {getattr(cupy, '__version__', '-')}, "
        f"{torch.cuda.get_device_name()}\n"
    )

    cases = [
        layout_case("transpose 16384² f32", (16384, 16384), torch.float32, lambda b: b.t(), cupy),
        layout_case("transpose 16384² f16", (16384, 16384), torch.float16, lambda b: b.t(), cupy),
        layout_case("transpose 8192² u8", (8192, 8192), torch.uint8, lambda b: b.t(), cupy),
        layout_case(
            "permute [8,32,4096,128] (0,2,1,3) f16",
            (8, 32, 4096, 128),
            torch.float16,
            lambda b: b.permute(0, 2, 1, 3),
            cupy,
        ),
        layout_case(
            "NCHW -> NHWC [64,3,224,224] f32",
            (64, 3, 224, 224),
            torch.float32,
            lambda b: b.permute(0, 2, 3, 1),
            cupy,
        ),
        layout_case("u8 8191² at (1,1) -> packed", (8192, 8192), torch.uint8, lambda b: b[1:, 1:], cupy),
        kv_case(cupy),
    ]

    rows = []
    for c in cases:
        row = {"copy": c.name}
        d2d = d2d_us(c.nbytes, args.reps)
        row["D2D"] = d2d
        impls = [("cute_copy", c.cute_fn), (f"torch eager", c.torch_eager[1])]
        if not args.no_compile:
            impls.append(("torch.compile", None))
        if c.cupy_fn is not None:
            impls.append(("CuPy", None))
        for label, fn in impls:
            try:
                if label == "torch.compile":
                    fn = c.compiled_fn()
                elif label == "CuPy":
                    fn = c.cupy_fn()
                out = fn()
                torch.cuda.synchronize()
                ok = same_bits(as_torch(out), c.ref())
                us = cuda_time_us(fn, args.reps)
                row[label] = (us, d2d / us, ok)
            except Exception as e:  # one failing column must not hide the others
                row[label] = f"error: {type(e).__name__}: {str(e)[:60]}"
        row["eager_name"] = c.torch_eager[0]
        rows.append(row)
        print(f"  done: {c.name}", file=sys.stderr)
        del c
        torch.cuda.empty_cache()

    cols = ["cute_copy", "torch eager", "torch.compile", "CuPy"]
    print("| copy | D2D µs | " + " | ".join(cols) + " |")
    print("| --- | ---: | " + " | ".join("---:" for _ in cols) + " |")
    for r in rows:
        cells = []
        for col in cols:
            v = r.get(col, "–")
            if isinstance(v, tuple):
                us, x, ok = v
                cells.append(f"{us:.1f} µs {x:.2f}x" + ("" if ok else " WRONG"))
            else:
                cells.append(str(v))
        if r["eager_name"] != "copy_":
            cells[1] += f" (`{r['eager_name']}`)"
        print(f"| {r['copy']} | {r['D2D']:.1f} | " + " | ".join(cells) + " |")

    # The small copy: host cost per call.
    s = torch.randn(64, 64, device="cuda")
    d = torch.empty_like(s)
    op = torch.ops.cute_copy.copy_
    small = [
        ("cute_copy.copy_(d, s) (direct)", lambda: cc.copy_(d, s)),
        ("cute_copy._cute_copy.copy_(d, s, None) (extension, no shim)", lambda: cc._cute_copy.copy_(d, s, None)),
        ("torch.ops.cute_copy.copy_(d, s) (torch.library op)", lambda: op(d, s)),
        ("torch.ops.cute_copy.copy_.default(d, s) (the overload a graph calls)", lambda: op.default(d, s)),
        ("d.copy_(s) (torch)", lambda: d.copy_(s)),
    ]
    print("\n| 64x64 f32 copy | host µs per call |")
    print("| --- | ---: |")
    for name, fn in small:
        try:
            print(f"| {name} | {host_us(fn):.2f} |")
        except Exception as e:
            print(f"| {name} | error: {type(e).__name__}: {e} |")
    if not args.no_compile:
        fc = torch.compile(lambda x: cc.permute(x, (1, 0)), fullgraph=True)
        ft = torch.compile(lambda x: x.t().contiguous(), fullgraph=True)
        print(f"| torch.compile'd cute_copy.permute (64x64) | {host_us(lambda: fc(s), 2000):.2f} |")
        print(f"| torch.compile'd x.t().contiguous() (64x64) | {host_us(lambda: ft(s), 2000):.2f} |")


if __name__ == "__main__":
    main()
