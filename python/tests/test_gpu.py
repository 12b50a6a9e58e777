"""GPU tests: against torch's own copies, bit for bit. Skipped without a CUDA device, torch, CuPy
or JAX (each test asks for the fixtures it needs), failed instead under CUTE_COPY_REQUIRE_GPU=1."""

import random

import pytest

import cute_copy as cc

DTYPES = [
    "float32",
    "float64",
    "float16",
    "bfloat16",
    "uint8",
    "int8",
    "uint16",
    "int16",
    "uint32",
    "int32",
    "uint64",
    "int64",
    "bool",
    "complex64",
]


def rand(torch, shape, dtype, gen=None):
    """Random bits of `dtype` (NaNs and all), on the GPU."""
    dt = getattr(torch, dtype)
    n = 1
    for s in shape:
        n *= s
    if dt == torch.bool:
        return torch.randint(0, 2, shape, device="cuda", generator=gen).bool()
    size = torch.empty(0, dtype=dt).element_size()
    raw = torch.randint(0, 256, (n * size,), dtype=torch.uint8, device="cuda", generator=gen)
    return raw.view(dt).view(shape)


def bits(t):
    """A tensor's elements as bytes, row-major: every dtype compared bit for bit with torch.equal
    (through the signed integer type of its width, which every torch copy supports)."""
    import torch

    signed = {1: torch.int8, 2: torch.int16, 4: torch.int32, 8: torch.int64}[t.element_size()]
    t = t.reshape(1) if t.dim() == 0 else t
    return t.view(signed).contiguous().view(torch.uint8)


def same_bits(a, b):
    import torch

    assert a.shape == b.shape, (a.shape, b.shape)
    assert torch.equal(bits(a), bits(b))


def random_view(torch, rng, shape, dtype):
    """A random strided view of `shape`: a permuted, sliced (steps and offsets) window of a larger
    random buffer."""
    rank = len(shape)
    perm = list(range(rank))
    rng.shuffle(perm)
    pre = [0] * rank  # the window's shape before the permute: view.permute(perm) has `shape`
    for i, p in enumerate(perm):
        pre[p] = shape[i]
    starts = [rng.randint(0, 2) for _ in range(rank)]
    steps = [rng.choice([1, 1, 1, 2, 3]) for _ in range(rank)]
    base_shape = [st + (n - 1) * sp + 1 + rng.randint(0, 2) for n, st, sp in zip(pre, starts, steps)]
    base = rand(torch, base_shape, dtype)
    view = base[tuple(slice(st, st + (n - 1) * sp + 1, sp) for n, st, sp in zip(pre, starts, steps))]
    return view.permute(perm)


def random_shape(rng, rank):
    if rank <= 2:
        return [rng.randint(1, 300) for _ in range(rank)]
    return [rng.randint(1, 9) for _ in range(rank)]


@pytest.mark.parametrize("rank", [1, 2, 3, 4, 5, 6])
@pytest.mark.parametrize("dtype", DTYPES)
def test_random_layouts_match_torch_contiguous_bit_for_bit(torch, rank, dtype):
    rng = random.Random(rank * 1000 + DTYPES.index(dtype))
    for _ in range(6):
        shape = random_shape(rng, rank)
        src = random_view(torch, rng, shape, dtype)
        dst = torch.empty(src.shape, dtype=src.dtype, device="cuda")
        assert cc.copy_(dst, src) is dst
        same_bits(dst, src)
        # and into a strided destination: a permuted window of a larger buffer
        out = random_view(torch, rng, shape, dtype)
        cc.copy_(out, src)
        same_bits(out, src)
    torch.cuda.synchronize()


@pytest.mark.parametrize("dtype", DTYPES)
def test_permute_and_contiguous_return_new_row_major_tensors(torch, dtype):
    x = rand(torch, (4, 6, 10, 8), dtype)
    p = cc.permute(x, (0, 2, 1, 3))
    assert p.is_contiguous() and p.dtype == x.dtype and p.device == x.device
    same_bits(p, x.permute(0, 2, 1, 3).contiguous())
    c = cc.contiguous(x.transpose(1, 3))
    assert c.is_contiguous()
    same_bits(c, x.transpose(1, 3).contiguous())
    assert cc.contiguous(x) is x
    same_bits(cc.permute(x, (-1, 0, 1, 2)), x.permute(3, 0, 1, 2).contiguous())


def test_layouts_shapes_of_the_benchmarks(torch):
    x = rand(torch, (1024, 768), "float32")
    same_bits(cc.permute(x, (1, 0)), x.t().contiguous())
    nchw = rand(torch, (4, 3, 224, 224), "float32")
    same_bits(cc.permute(nchw, (0, 2, 3, 1)), nchw.permute(0, 2, 3, 1).contiguous())
    kv = rand(torch, (2, 32, 256, 128), "float16")
    same_bits(cc.permute(kv, (0, 2, 1, 3)), kv.permute(0, 2, 1, 3).contiguous())


def test_sliced_views_crops_and_offsets(torch):
    x = rand(torch, (1023, 1029), "uint8")
    for view in [x[1:, 1:], x[3:-5, 7:-2], x[::2, ::3], x[:, 5], x[7]]:
        out = torch.empty(view.shape, dtype=view.dtype, device="cuda")
        cc.copy_(out, view)
        same_bits(out, view)
    # a crop into a window of another buffer
    big = torch.zeros(1100, 1100, dtype=torch.uint8, device="cuda")
    cc.copy_(big[10:1032, 20:1048], x[1:, 1:])
    same_bits(big[10:1032, 20:1048], x[1:, 1:])
    assert int(big[:10].sum()) == 0


def test_pad_matches_torch_pad(torch):
    x = rand(torch, (100, 130), "float16")
    p = cc.pad(x, (128, 136))
    ref = torch.nn.functional.pad(x, (0, 6, 0, 28))
    same_bits(p, ref)
    out = torch.full((101, 131), 7.0, dtype=torch.float16, device="cuda")
    cc.pad(x, None, out=out)
    same_bits(out, torch.nn.functional.pad(x, (0, 1, 0, 1)))
    with pytest.raises(ValueError):
        cc.pad(x.t(), (200, 200))


def test_rank_zero_and_empty_tensors(torch):
    a, b = torch.tensor(3.5, device="cuda"), torch.tensor(0.0, device="cuda")
    cc.copy_(b, a)
    assert float(b) == 3.5
    e = torch.empty(0, 5, device="cuda")
    cc.copy_(e, torch.empty(0, 5, device="cuda"))
    assert cc.permute(torch.empty(3, 0, device="cuda"), (1, 0)).shape == (0, 3)


def test_streams_follow_torch_current_stream_and_stream_argument(torch):
    x = rand(torch, (2048, 2048), "float32")
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        out = torch.empty(2048, 2048, device="cuda")
        cc.copy_(out, x.t())
    s.synchronize()
    same_bits(out, x.t())
    out2 = torch.empty(2048, 2048, device="cuda")
    cc.copy_(out2, x.t(), stream=s)
    cc.copy_(out2, x.t(), stream=s.cuda_stream)
    s.synchronize()
    same_bits(out2, x.t())


@pytest.mark.parametrize("mode", ["global", "thread_local"])
def test_cuda_graph_capture_and_replay(torch, mode):
    x = rand(torch, (512, 384), "float16")
    out = torch.empty(384, 512, dtype=torch.float16, device="cuda")
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):  # warm up outside the capture
        cc.copy_(out, x.t())
    torch.cuda.current_stream().wait_stream(s)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g, capture_error_mode=mode):
        cc.copy_(out, x.t())
    for _ in range(3):
        x.copy_(rand(torch, (512, 384), "float16"))
        out.zero_()
        g.replay()
        torch.cuda.synchronize()
        same_bits(out, x.t())


def test_torch_compile_fullgraph(torch):
    def f(x, out):
        y = cc.permute(x, (0, 2, 1, 3))
        cc.copy_(out, x.transpose(1, 2))
        return y * 2

    x = torch.randn(2, 8, 64, 32, device="cuda")
    out = torch.empty(2, 64, 8, 32, device="cuda")
    g = torch.compile(f, fullgraph=True)
    y = g(x, out)
    torch.cuda.synchronize()
    assert torch.equal(y, x.permute(0, 2, 1, 3).contiguous() * 2)
    assert torch.equal(out, x.transpose(1, 2))


def test_opcheck_on_permuted_and_sliced_layouts(torch):
    ops = torch.ops.cute_copy
    x = torch.randn(6, 40, 24, device="cuda")
    sliced = x[1:, 3:35:2, :20]
    for src in [x.permute(2, 0, 1), sliced, sliced.transpose(0, 2)]:
        dst = torch.empty(src.shape, device="cuda")
        torch.library.opcheck(ops.copy_.default, (dst, src))
        torch.library.opcheck(ops.contiguous.default, (src,))
        torch.library.opcheck(ops.permute.default, (src, [2, 0, 1]))
    torch.library.opcheck(ops.pad.default, (x[0], [48, 32]))
    table = torch.randn(100, 64, device="cuda")
    idx = torch.tensor([5, 0, 99, 7], device="cuda")
    torch.library.opcheck(ops.gather_rows.default, (table, idx))
    torch.library.opcheck(ops.scatter_rows.default, (table[:4].clone(), idx, table.clone()))
    pairs = torch.tensor([[0, 1], [2, 3]], device="cuda")
    torch.library.opcheck(ops.copy_blocks.default, (table.clone(), table.clone(), pairs))


def test_torch_ops_match_the_direct_calls(torch):
    x = torch.randn(33, 65, device="cuda")
    assert torch.equal(torch.ops.cute_copy.permute(x, [1, 0]), x.t().contiguous())
    out = torch.empty(65, 33, device="cuda")
    torch.ops.cute_copy.copy_(out, x.t())
    assert torch.equal(out, x.t())


def test_bad_input_leaves_the_destination_untouched(torch):
    x = rand(torch, (64, 96), "float32")
    dst = torch.full((96, 64), 1234.5, device="cuda")
    before = dst.clone()
    cases = [
        (ValueError, lambda: cc.copy_(dst, x)),  # shape
        (ValueError, lambda: cc.copy_(dst, x.t(), mean=[0.0], std=[1.0], dim=0)),  # 96 channels
        (ValueError, lambda: cc.copy_(dst, x.t(), mean=[0.0] * 96, std=[1.0] * 96)),  # no dim
        (ValueError, lambda: cc.copy_(dst[:, :32], dst[:, 32:])),  # overlap (byte ranges)
        (ValueError, lambda: cc.copy_(dst.as_strided((96, 64), (0, 1)), x.t())),  # not injective
        (TypeError, lambda: cc.copy_(dst, x.t().cpu())),
        (TypeError, lambda: cc.copy_(dst.cpu(), x.t())),
        (TypeError, lambda: torch.ops.cute_copy.copy_(dst.cpu(), x.t().cpu())),
    ]
    for exc, call in cases:
        with pytest.raises(exc):
            call()
    torch.cuda.synchronize()
    assert torch.equal(dst, before)


def test_cupy_sources_and_destinations(torch, cupy):
    a = cupy.random.random((300, 200)).astype(cupy.float32)
    out = cupy.empty((200, 300), dtype=cupy.float32)
    cc.copy_(out, a.T)
    assert bool((out == a.T).all())
    p = cc.permute(a, (1, 0))
    assert isinstance(p, cupy.ndarray) and p.flags.c_contiguous
    assert bool((p == a.T).all())
    t = torch.empty(200, 300, device="cuda")
    cc.copy_(t, a.T)  # CuPy into torch
    torch.cuda.synchronize()
    assert torch.equal(t, torch.from_dlpack(a.T.copy()))
    with cupy.cuda.Stream():
        o2 = cupy.empty((200, 300), dtype=cupy.float32)
        cc.copy_(o2, a.T)  # on CuPy's current stream
        cupy.cuda.get_current_stream().synchronize()
    assert bool((o2 == a.T).all())


def test_cupy_negative_strides(torch, cupy):
    a = cupy.arange(24, dtype=cupy.int32).reshape(4, 6)
    with pytest.raises(ValueError, match="negative strides"):
        cc.copy_(cupy.empty((4, 6), dtype=cupy.int32), a[::-1])
    out = cupy.zeros((4, 6), dtype=cupy.int32)
    cc.copy_(out[::-1], a[::-1])  # flipped alike on both sides
    assert bool((out == a).all())


def test_cuda_array_interface_fallback(torch, cupy):
    class CAI:
        def __init__(self, a):
            self.__cuda_array_interface__ = a.__cuda_array_interface__

    a = cupy.arange(12, dtype=cupy.float32).reshape(3, 4)
    out = cupy.empty((4, 3), dtype=cupy.float32)
    cc.copy_(CAI(out), CAI(a.T))
    cupy.cuda.get_current_stream().synchronize()
    assert bool((out == a.T).all())


def test_jax_sources(torch, jax):
    import jax.numpy as jnp
    import numpy as np

    x = jnp.arange(2 * 3 * 4 * 5, dtype=jnp.float32).reshape(2, 3, 4, 5)
    y = cc.permute(x, (0, 2, 1, 3))
    assert isinstance(y, jax.Array)
    assert np.array_equal(np.asarray(y), np.asarray(jnp.transpose(x, (0, 2, 1, 3))))
    t = torch.empty(2, 3, 4, 5, device="cuda")
    cc.copy_(t, x)
    assert np.array_equal(t.cpu().numpy(), np.asarray(x))
    b = jnp.ones((8, 8), dtype=jnp.bfloat16)
    assert np.array_equal(np.asarray(cc.permute(b, (1, 0))).astype(np.float32), np.ones((8, 8), np.float32))


@pytest.mark.parametrize("index_dtype", ["int32", "int64"])
def test_gather_scatter_and_blocks_with_out_of_range_indices(torch, index_dtype):
    idt = getattr(torch, index_dtype)
    table = rand(torch, (100, 40), "float16")
    idx = torch.tensor([3, -1, 99, 150, 0], dtype=idt, device="cuda")
    out = torch.full((5, 40), 7.0, dtype=torch.float16, device="cuda")
    status = cc.IndexStatus()
    cc.gather_rows(table, idx, out, status=status)
    with pytest.raises(IndexError, match=r"1 index\(es\) out of range; the first at item 3"):
        status.check()
    status.check()  # cleared
    same_bits(out[[0, 2, 4]], table[[3, 99, 0]])
    assert bool((out[[1, 3]] == 7.0).all())  # skipped rows untouched
    g = cc.gather_rows(table, torch.tensor([5, 6], dtype=idt, device="cuda"))
    same_bits(g, table[5:7])

    pool = torch.zeros(10, 40, dtype=torch.float16, device="cuda")
    rows = rand(torch, (3, 40), "float16")
    cc.scatter_rows(rows, torch.tensor([9, 2, 10], dtype=idt, device="cuda"), pool, status=status)
    with pytest.raises(IndexError):
        status.check()
    same_bits(pool[[9, 2]], rows[:2])

    blocks = rand(torch, (16, 4, 8, 8), "bfloat16")  # [num_blocks, block_size, heads, dim]
    dst = torch.zeros_like(blocks)
    pairs = torch.tensor([[1, 0], [15, 3], [2, -1], [20, 4]], dtype=idt, device="cuda")
    cc.copy_blocks(blocks, dst, pairs, status=status)
    with pytest.raises(IndexError, match="first at item 3"):
        status.check()
    same_bits(dst[0], blocks[1])
    same_bits(dst[3], blocks[15])
    assert int(dst[4].view(torch.int16).abs().sum()) == 0


def test_gathers_scatters_and_block_tables_convert_like_torch(torch):
    fp8 = torch.float8_e4m3fn
    # a KV-cache write: bf16 keys (a strided slice of a qkv projection) into a float8 pool at a
    # slot mapping, padding tokens -1, with a scale
    qkv = torch.randn(37, 3, 4, 80, device="cuda").to(torch.bfloat16)
    k = qkv[:, 1]
    pool = torch.zeros(64, 4, 80, dtype=fp8, device="cuda")
    slots = torch.randperm(64, device="cuda")[:37]
    slots[::5] = -1
    scale = 1 / 0.031
    cc.scatter_rows(k, slots, pool, scale=scale)
    keep = slots >= 0
    want = torch.zeros_like(pool)
    want[slots[keep]] = (k[keep].float() * scale).clamp(-448, 448).to(fp8)
    same_bits(pool, want)
    # a gather into a new bf16 array, and into a given one with a scale
    table = torch.randn(100, 3, 24, device="cuda")
    idx = torch.tensor([5, 0, 99, 7], device="cuda")
    g = cc.gather_rows(table, idx, dtype=torch.bfloat16)
    assert g.dtype == torch.bfloat16
    same_bits(g, table[idx].to(torch.bfloat16))
    out = torch.empty(4, 3, 24, dtype=torch.float16, device="cuda")
    cc.gather_rows(table, idx, out, scale=0.5)
    same_bits(out, (table[idx] * 0.5).to(torch.float16))
    # blocks of a paged pool, f16 -> f32
    blocks = torch.randn(9, 16, 2, 8, device="cuda").to(torch.float16)
    dst = torch.zeros(5, 16, 2, 8, device="cuda")
    pairs = torch.tensor([[8, 0], [2, 4], [3, -1]], device="cuda", dtype=torch.int32)
    cc.copy_blocks(blocks, dst, pairs)
    same_bits(dst[0], blocks[8].float())
    same_bits(dst[4], blocks[2].float())
    assert int(dst[1:4].abs().sum()) == 0
    # under torch.compile, through the operators
    pool.zero_()
    torch.compile(lambda: cc.scatter_rows(k, slots, pool, scale=scale), fullgraph=True)()
    same_bits(pool, want)
    ops = torch.ops.cute_copy
    torch.library.opcheck(ops.gather_rows.default, (table, idx, torch.bfloat16, 2.0))
    # (opcheck compares a float8 output with arithmetic torch does not have for float8)
    half_pool = torch.zeros(64, 4, 80, dtype=torch.float16, device="cuda")
    torch.library.opcheck(ops.scatter_rows.default, (k, slots, half_pool, 0.25))
    # refused: a scale that is not finite, a pair without a conversion, rows of other shapes
    with pytest.raises(ValueError, match="scale"):
        cc.scatter_rows(k, slots, pool, scale=float("inf"))
    with pytest.raises(ValueError):
        cc.gather_rows(torch.zeros(10, 4, dtype=torch.int64, device="cuda"), idx, dtype=fp8)
    with pytest.raises(ValueError):
        cc.scatter_rows(k, slots, torch.zeros(64, 4, 81, dtype=fp8, device="cuda"), scale=1.0)


def test_index_arrays_are_checked(torch):
    table = torch.zeros(10, 4, device="cuda")
    with pytest.raises(ValueError, match="int32 or int64"):
        cc.gather_rows(table, torch.zeros(3, device="cuda"))
    with pytest.raises(ValueError, match="contiguous"):
        cc.gather_rows(table, torch.zeros(6, dtype=torch.int64, device="cuda")[::2])
    with pytest.raises(TypeError, match="cpu"):
        cc.gather_rows(table, torch.zeros(3, dtype=torch.int64))


def test_plan_and_explain_of_device_tensors(torch):
    x = torch.empty(16384, 16384, dtype=torch.float16, device="cuda")
    y = torch.empty_like(x)
    e = cc.explain(y, x.t())
    assert e["route"] == "transpose"
    assert "transpose" in cc.plan(y, x.t())


def test_copy_converts_dtypes_like_torch(torch):
    rng = random.Random(7)
    # casts torch rounds as we do (to nearest even), on permuted and sliced views
    for src_dt, dst_dt in [
        ("float32", "bfloat16"),
        ("float32", "float16"),
        ("float16", "float32"),
        ("bfloat16", "float64"),
        ("uint8", "float32"),
        ("int16", "float32"),
        ("float64", "float32"),
        ("int8", "int32"),
        ("uint8", "int64"),
    ]:
        for rank in (2, 3, 4):
            shape = random_shape(rng, rank)
            v = random_view(torch, rng, shape, src_dt)
            out = torch.empty(shape, dtype=getattr(torch, dst_dt), device="cuda")
            want = torch.empty_like(out).copy_(v)  # torch's own converting copy, standard strides
            cc.copy_(out, v)
            if out.dtype.is_floating_point:
                both_nan = torch.isnan(out) & torch.isnan(want)
                assert torch.equal(torch.where(both_nan, 0, out), torch.where(both_nan, 0, want)), (src_dt, dst_dt)
            else:
                same_bits(out, want)


def test_float8_casts_saturate_and_match_torch_in_range(torch):
    x = torch.randn(64, 96, device="cuda") * 100
    for f8 in (torch.float8_e4m3fn, torch.float8_e5m2):
        big = torch.finfo(f8).max
        out = torch.empty(96, 64, dtype=f8, device="cuda")
        cc.copy_(out, x.t(), scale=0.5)
        want = (x.t() * 0.5).clamp(-big, big).to(f8)
        same_bits(out, want)
        back = torch.empty(96, 64, device="cuda")
        cc.copy_(back, out)
        assert torch.equal(back, out.float())


def test_normalize_u8_nhwc_frames_into_f32_nchw(torch):
    x = torch.randint(0, 256, (3, 37, 41, 3), dtype=torch.uint8, device="cuda")
    mean, std = [123.675, 116.28, 103.53], [58.395, 57.12, 57.375]
    out = torch.empty(3, 3, 37, 41, device="cuda")
    cc.copy_(out, x.permute(0, 3, 1, 2), mean=mean, std=std, dim=1)
    m = torch.tensor(mean, device="cuda").view(1, 3, 1, 1)
    s = torch.tensor(std, device="cuda").view(1, 3, 1, 1)
    want = (x.permute(0, 3, 1, 2).float() - m) * (1.0 / s)
    assert torch.allclose(out, want, rtol=1e-6, atol=1e-5)
    # bf16 NHWC output of a crop, the channel last
    crop = torch.randint(0, 256, (2, 3, 40, 50), dtype=torch.uint8, device="cuda")[:, :, 3:33, 5:45]
    out = torch.empty(2, 30, 40, 3, dtype=torch.bfloat16, device="cuda")
    cc.copy_(out, crop.permute(0, 2, 3, 1), mean=mean, std=std, dim=-1)
    want = ((crop.permute(0, 2, 3, 1).float() - m.view(1, 1, 1, 3)) * (1.0 / s.view(1, 1, 1, 3))).bfloat16()
    assert torch.allclose(out.float(), want.float(), rtol=1e-2)


def test_refused_conversions_are_value_errors_and_write_nothing(torch):
    x = torch.randint(0, 100, (8, 8), dtype=torch.int64, device="cuda")
    out = torch.full((8, 8), 7.0, dtype=torch.float16, device="cuda")
    with pytest.raises(ValueError, match="no conversion from i64 to f16"):
        cc.copy_(out, x)
    torch.cuda.synchronize()
    assert torch.equal(out, torch.full((8, 8), 7.0, dtype=torch.float16, device="cuda"))
