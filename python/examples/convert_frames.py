"""Copies that convert, from PyTorch: u8 NHWC camera frames into an f32 NCHW batch normalized with
ImageNet's mean and std (one launch instead of permute + float + sub + div), f32 activations to
bf16, f16 attention heads [B,H,S,D] to FP8 E4M3 [B,S,H,D] with a scale, and new bf16 keys written
into an FP8 KV-cache pool at a slot mapping with a scale (vLLM's reshape_and_cache, one launch).
Each result is checked against torch and timed with CUDA events.

    python3 python/examples/convert_frames.py

Without a CUDA device it says so and exits 0.
"""

import sys

import cute_copy as cc


def timed(torch, fn, reps=20):
    fn()
    a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    a.record()
    for _ in range(reps):
        fn()
    b.record()
    b.synchronize()
    return a.elapsed_time(b) / reps


def main():
    try:
        import torch
    except ImportError:
        print("no torch: this example needs PyTorch")
        return 0
    if not torch.cuda.is_available():
        print("no GPU: torch sees no CUDA device")
        return 0
    mean, std = [123.675, 116.28, 103.53], [58.395, 57.12, 57.375]

    frames = torch.randint(0, 256, (32, 224, 224, 3), dtype=torch.uint8, device="cuda")  # NHWC
    batch = torch.empty(32, 3, 224, 224, device="cuda")  # NCHW f32
    src = frames.permute(0, 3, 1, 2)
    run = lambda: cc.copy_(batch, src, mean=mean, std=std, dim=1)
    ms = timed(torch, run)
    m = torch.tensor(mean, device="cuda").view(1, 3, 1, 1)
    s = torch.tensor(std, device="cuda").view(1, 3, 1, 1)
    assert torch.allclose(batch, (src.float() - m) / s, rtol=1e-5, atol=1e-5)
    print(cc.plan(batch, src, mean=mean, std=std, dim=1))
    print(f"frames -> normalized NCHW: {ms * 1e3:.1f} us, {src.numel() * 5 / ms / 1e6:.0f} GB/s\n")

    x = torch.randn(4096, 4097, device="cuda")
    y = torch.empty(4096, 4097, dtype=torch.bfloat16, device="cuda")
    ms = timed(torch, lambda: cc.copy_(y, x))
    assert torch.equal(y, x.bfloat16())
    print(f"f32 -> bf16: {ms * 1e3:.1f} us, {x.numel() * 6 / ms / 1e6:.0f} GB/s")

    h = torch.randn(4, 16, 1025, 96, dtype=torch.float16, device="cuda")
    q = torch.empty(4, 1025, 16, 96, dtype=torch.float8_e4m3fn, device="cuda")
    hp = h.permute(0, 2, 1, 3)
    ms = timed(torch, lambda: cc.copy_(q, hp, scale=64.0))
    assert torch.equal(q.view(torch.uint8), (hp.float() * 64).clamp(-448, 448).to(torch.float8_e4m3fn).view(torch.uint8))
    print(f"f16 heads -> FP8 E4M3 [B,S,H,D], scale 64: {ms * 1e3:.1f} us, {h.numel() * 3 / ms / 1e6:.0f} GB/s")

    # the keys of a fused qkv projection (a strided view) into a float8 pool of 16-slot blocks
    tokens, heads, dim, k_scale = 4096, 8, 128, 0.05
    qkv = torch.randn(tokens, 3, heads, dim, device="cuda").to(torch.bfloat16)
    k = qkv[:, 1]
    pool = torch.zeros(2 * tokens, heads, dim, dtype=torch.float8_e4m3fn, device="cuda")
    blocks = torch.randperm(2 * tokens // 16, device="cuda")
    t = torch.arange(tokens, device="cuda")
    slots = blocks[t // 16] * 16 + t % 16
    ms = timed(torch, lambda: cc.scatter_rows(k, slots, pool, scale=1 / k_scale))
    cc.index_status(0).check()  # raises IndexError if a slot was out of range
    want = (k.float() * (1 / k_scale)).clamp(-448, 448).to(torch.float8_e4m3fn)
    assert torch.equal(pool[slots].view(torch.uint8), want.view(torch.uint8))
    print(f"KV-cache write, bf16 keys -> FP8 pool at a slot mapping: {ms * 1e3:.1f} us, {k.numel() * 3 / ms / 1e6:.0f} GB/s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
