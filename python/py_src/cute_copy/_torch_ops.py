"""``torch.ops.cute_copy.*``: the copies as torch operators with fake (meta) kernels, so that
``torch.compile(fullgraph=True)`` traces them and ``torch.library.opcheck`` checks them.

Registered the cheap way (``Library.define`` + ``Library.impl``, as vLLM's
``direct_register_custom_op`` does) rather than through ``torch.library.custom_op``, whose Python
wrapper costs several microseconds per call. The CPU kernels are the CUDA ones: they raise the
extension's ``TypeError`` naming the device.
"""

from __future__ import annotations

_LIB = None

_SCHEMAS = {
    "copy_": "copy_(Tensor(a!) dst, Tensor src) -> ()",
    "contiguous": "contiguous(Tensor x) -> Tensor",
    "permute": "permute(Tensor x, int[] dims) -> Tensor",
    "pad": "pad(Tensor x, SymInt[] shape) -> Tensor",
    "gather_rows": "gather_rows(Tensor src, Tensor idx, ScalarType? dtype=None, float? scale=None) -> Tensor",
    "scatter_rows": "scatter_rows(Tensor src, Tensor idx, Tensor(a!) out, float? scale=None) -> ()",
    "copy_blocks": "copy_blocks(Tensor src, Tensor(a!) dst, Tensor pairs, float? scale=None) -> ()",
}


def register(torch, ext):
    global _LIB
    if _LIB is not None:
        return
    lib = torch.library.Library("cute_copy", "FRAGMENT")

    def copy_(dst, src):
        ext.copy_(dst, src, None)

    def contiguous(x):
        out = torch.empty(x.shape, dtype=x.dtype, device=x.device)
        ext.copy_(out, x, None)
        return out

    def permute(x, dims):
        r = x.dim()
        out = torch.empty(
            [x.shape[d + r if d < 0 else d] for d in dims] if len(dims) == r else x.shape,
            dtype=x.dtype,
            device=x.device,
        )
        ext.permute_into(out, x, list(dims), None)
        return out

    def pad(x, shape):
        out = torch.empty(list(shape), dtype=x.dtype, device=x.device)
        ext.pad_into(out, x, None)
        return out

    def gather_rows(src, idx, dtype=None, scale=None):
        out = torch.empty(
            (idx.shape[0],) + tuple(src.shape[1:]),
            dtype=src.dtype if dtype is None else dtype,
            device=src.device,
        )
        ext.gather_rows(src, idx, out, None, None, scale)
        return out

    def scatter_rows(src, idx, out, scale=None):
        ext.scatter_rows(src, idx, out, None, None, scale)

    def copy_blocks(src, dst, pairs, scale=None):
        ext.copy_blocks(src, dst, pairs, None, None, scale)

    kernels = {
        "copy_": copy_,
        "contiguous": contiguous,
        "permute": permute,
        "pad": pad,
        "gather_rows": gather_rows,
        "scatter_rows": scatter_rows,
        "copy_blocks": copy_blocks,
    }

    # Fake kernels: the output's metadata only (new outputs are row-major).
    def fake_none(*args):
        return None

    def fake_contiguous(x):
        return torch.empty_like(x, memory_format=torch.contiguous_format)

    def fake_permute(x, dims):
        r = x.dim()
        return x.new_empty([x.shape[d + r if d < 0 else d] for d in dims])

    def fake_pad(x, shape):
        return x.new_empty(list(shape))

    def fake_gather_rows(src, idx, dtype=None, scale=None):
        return src.new_empty((idx.shape[0],) + tuple(src.shape[1:]), dtype=dtype)

    fakes = {
        "copy_": fake_none,
        "contiguous": fake_contiguous,
        "permute": fake_permute,
        "pad": fake_pad,
        "gather_rows": fake_gather_rows,
        "scatter_rows": fake_none,
        "copy_blocks": fake_none,
    }

    for name, schema in _SCHEMAS.items():
        lib.define(schema)
        for key in ("CUDA", "CPU"):
            lib.impl(name, kernels[name], key)
        torch.library.register_fake(f"cute_copy::{name}", fakes[name], lib=lib)
    _LIB = lib
