"""cute_copy: CUTLASS/CuTe copy kernels for PyTorch, CuPy and JAX arrays.

Every call reads its arrays through DLPack (or ``__cuda_array_interface__``) without copying them,
launches on the caller's current stream (PyTorch's or CuPy's current stream, or ``stream=``) and
never synchronizes. Functions that return a new array allocate it with the input's own framework
(``torch.empty``, ``cupy.empty``; JAX outputs are allocated by torch or CuPy and handed to JAX
through DLPack).

Errors: ``ValueError`` for shape, dtype, layout and alignment problems, ``TypeError`` for arrays
that are not CUDA device memory (the message names the device), ``RuntimeError`` for CUDA
failures, ``IndexError`` from :meth:`IndexStatus.check`. A refused call writes nothing.

With torch, the ops are also registered as ``torch.ops.cute_copy.*`` (with fake kernels), and the
functions below route through them inside ``torch.compile``, so ``fullgraph=True`` holds.
"""

from __future__ import annotations

import sys

from . import _cute_copy as _ext
from ._cute_copy import (
    IndexStatus,
    describe,
    device_count,
    explain,
    explain_layout,
    index_status,
    plan,
)

__version__ = _ext.__version__

__all__ = [
    "IndexStatus",
    "contiguous",
    "copy_",
    "copy_blocks",
    "describe",
    "device_count",
    "explain",
    "explain_layout",
    "gather_rows",
    "index_status",
    "pad",
    "permute",
    "plan",
    "register_torch_ops",
    "scatter_rows",
]


def _framework(x) -> str:
    """The top-level package of x's type: 'torch', 'cupy', 'jaxlib', 'numpy', ..."""
    return type(x).__module__.partition(".")[0]


def _current_stream(x, device: int) -> int:
    """The current stream of x's framework on `device`, as a CUstream handle (0: legacy default).

    Asked by the extension for arrays that do not name their stream themselves (torch tensors
    do, through the DLPack C exchange API)."""
    fw = _framework(x)
    if fw == "torch":
        import torch

        return torch.cuda.current_stream(device).cuda_stream
    if fw == "cupy":
        import cupy

        return cupy.cuda.get_current_stream().ptr
    return 0


_ext._set_stream_hook(_current_stream)


# ---- torch integration (lazy: the package imports without torch) ---------------------------

_torch = None


def _not_compiling() -> bool:
    return False


_compiling = _not_compiling


def register_torch_ops():
    """Register ``torch.ops.cute_copy.*`` (done at import when torch is already imported, and on
    the first call with a torch tensor). Call it yourself if torch is imported after cute_copy and
    the first call is inside ``torch.compile``."""
    global _torch, _compiling
    if _torch is not None:
        return
    import torch

    from . import _torch_ops

    _torch = torch  # tried once: a failure is not retried on every call
    _torch_ops.register(torch, _ext)
    _compiling = torch.compiler.is_compiling


if "torch" in sys.modules:
    try:
        register_torch_ops()
    except Exception as e:  # the direct calls work without the torch ops: import must not fail
        import warnings

        warnings.warn(f"cute_copy: torch.ops.cute_copy could not be registered: {e!r}", stacklevel=2)


# ---- allocation by the input's framework --------------------------------------------------

_TORCH_DTYPES = {
    "float16": "float16",
    "bfloat16": "bfloat16",
    "float32": "float32",
    "float64": "float64",
    "int8": "int8",
    "uint8": "uint8",
    "int16": "int16",
    "uint16": "uint16",
    "int32": "int32",
    "uint32": "uint32",
    "int64": "int64",
    "uint64": "uint64",
    "bool": "bool",
    "complex64": "complex64",
}


def _empty(x, shape, dtype=None):
    """A new row-major array of `shape`, `dtype` (default: x's) on x's device, from x's
    framework."""
    shape = tuple(int(n) for n in shape)
    fw = _framework(x)
    if fw == "torch":
        if _torch is None:
            register_torch_ops()
        return x.new_empty(shape, dtype=dtype)
    if fw == "cupy":
        import cupy

        with x.device:
            return cupy.empty(shape, dtype=x.dtype if dtype is None else dtype)
    if fw in ("jax", "jaxlib"):
        return _jax_empty(x, shape, dtype)
    raise TypeError(
        f"cute_copy allocates outputs with torch, CuPy or JAX; {type(x).__name__} is none of them: pass out="
    )


def _jax_empty(x, shape, dtype=None):
    """JAX arrays are immutable: allocate with torch (else CuPy), fill, then hand it to JAX."""
    device = x.__dlpack_device__()[1]
    name = str(x.dtype if dtype is None else dtype)
    try:
        import torch

        buf = torch.empty(shape, dtype=getattr(torch, _TORCH_DTYPES[name]), device=f"cuda:{device}")
    except (ImportError, KeyError):
        import cupy

        with cupy.cuda.Device(device):
            buf = cupy.empty(shape, dtype=x.dtype if dtype is None else dtype)
    return _JaxOut(buf)


class _JaxOut:
    """A buffer to fill and then give to JAX (`.finish()`)."""

    def __init__(self, buf):
        self.buf = buf

    def __dlpack__(self, *args, **kwargs):
        return self.buf.__dlpack__(*args, **kwargs)

    def __dlpack_device__(self):
        return self.buf.__dlpack_device__()

    def finish(self):
        import jax

        return jax.dlpack.from_dlpack(self.buf)


def _finish(out):
    return out.finish() if isinstance(out, _JaxOut) else out


def _target(out):
    return out.buf if isinstance(out, _JaxOut) else out


def _is_contiguous(x) -> bool:
    fw = _framework(x)
    if fw == "torch":
        return x.is_contiguous()
    if fw == "cupy":
        return x.flags.c_contiguous
    if fw in ("jax", "jaxlib"):
        return True
    d = describe(x)
    stride, want = d["strides"], 1
    for n, s in zip(reversed(d["shape"]), reversed(stride)):
        if n != 1 and s != want:
            return False
        want *= n
    return True


# ---- the API ----------------------------------------------------------------------------------


def copy_(dst, src, *, scale=None, mean=None, std=None, dim=None, stream=None):
    """Copy ``src`` into ``dst`` (``dst[...] = src``), like ``Tensor.copy_``: any layouts of one
    shape (transposes, permutes, slices, NCHW <-> NHWC, crops), one launch on the caller's current
    stream (or ``stream``: a handle, a ``torch.cuda.Stream`` or a CuPy stream). Returns ``dst``.

    When the dtypes differ the elements are converted on the way, rounded once to nearest even
    (float8 saturates to its largest finite value; float to integer rounds and clamps, NaN -> 0;
    integers clamp). ``scale`` multiplies every value, and ``mean`` / ``std`` normalize along
    ``dim`` (``(x - mean[c]) / std[c] * scale``, torchvision's ``Normalize``), computed in float32,
    in the same launch: ``copy_(out_f32_nchw, frames_u8_nhwc.permute(0, 3, 1, 2), mean=m, std=s,
    dim=1)``."""
    plain = scale is None and mean is None and std is None and dim is None
    if _compiling() and plain:
        _torch.ops.cute_copy.copy_(dst, src)
        return dst
    if plain:
        _ext.copy_(dst, src, stream)
    else:
        mean = None if mean is None else [float(v) for v in mean]
        std = None if std is None else [float(v) for v in std]
        _ext.copy_(dst, src, stream, None if scale is None else float(scale), mean, std,
                   None if dim is None else int(dim))
    return dst


def contiguous(x, *, stream=None):
    """``x`` if it is row-major contiguous, else a new row-major copy of it (x's framework)."""
    if _compiling():
        return x if x.is_contiguous() else _torch.ops.cute_copy.contiguous(x)
    if _is_contiguous(x):
        return x
    out = _empty(x, x.shape)
    _ext.copy_(_target(out), x, stream)
    return _finish(out)


def permute(x, dims, *, stream=None):
    """A new row-major array holding ``x.permute(dims)`` (torch's ``permute(...).contiguous()``,
    NumPy's ``ascontiguousarray(x.transpose(dims))``), allocated by x's framework."""
    dims = [int(d) for d in dims]
    if _compiling():
        return _torch.ops.cute_copy.permute(x, dims)
    shape = x.shape
    r = len(shape)
    out = _empty(x, [shape[d + r if d < 0 else d] for d in dims] if len(dims) == r else shape)
    _ext.permute_into(_target(out), x, dims, stream)
    return _finish(out)


def pad(x, shape, *, out=None, stream=None):
    """Zero-pad a 2D (or 1D) array into the top-left corner of a new ``shape`` array (or ``out``):
    ``out[:r, :c] = x``, the rest zeros, in one launch. Rows of ``x`` must be row-major."""
    if out is None and _compiling():
        return _torch.ops.cute_copy.pad(x, [int(n) for n in shape])
    o = _empty(x, shape) if out is None else out
    _ext.pad_into(_target(o), x, stream)
    return _finish(o) if out is None else out


def gather_rows(src, idx, out=None, *, dtype=None, scale=None, status=None, stream=None):
    """``out[i] = src[idx[i]]`` for every row ``i``: rows are ``src[k]``, ``idx`` a 1D int32/int64
    device array. Negative indices leave their row of ``out`` untouched; indices past the end are
    skipped and counted in ``status`` (default: ``index_status(device)``; ``status.check()``
    raises ``IndexError``). When ``out``'s dtype (or ``dtype``, for a new ``out``) differs from
    ``src``'s, or ``scale`` is given, each element is converted (``y = dtype(x * scale)``, as
    ``copy_`` converts) on the way, rows of any strides; otherwise each row must be contiguous.
    Returns ``out`` (new when not given)."""
    if out is None and _compiling():
        return _torch.ops.cute_copy.gather_rows(src, idx, dtype, scale)
    if out is None:
        o = _empty(src, (idx.shape[0],) + tuple(src.shape[1:]), dtype)
    else:
        o = out
    _ext.gather_rows(src, idx, _target(o), status, stream, scale)
    return _finish(o) if out is None else out


def scatter_rows(src, idx, out, *, scale=None, status=None, stream=None):
    """``out[idx[i]] = src[i]`` for every row ``i`` of ``src``; negative indices skip, indices
    past the end of ``out`` are skipped and counted in ``status``. Converting (and scaling by
    ``scale``) when the dtypes differ or ``scale`` is given: a KV-cache write of bf16 keys into a
    float8 pool at a slot mapping is ``scatter_rows(k, slot_mapping, pool.view(-1, h, d),
    scale=1 / k_scale)``. Returns ``out``."""
    if _compiling():
        _torch.ops.cute_copy.scatter_rows(src, idx, out, scale)
        return out
    _ext.scatter_rows(src, idx, out, status, stream, scale)
    return out


def copy_blocks(src, dst, pairs, *, scale=None, status=None, stream=None):
    """Block-table copy (paged KV cache copy/swap): ``dst[pairs[k, 1]] = src[pairs[k, 0]]`` for
    every row ``k`` of the ``[n, 2]`` int32/int64 device array ``pairs``; a block is ``src[b]``
    (e.g. ``[num_blocks, block_size, heads, dim]``; each block contiguous unless converting).
    Negative entries skip the pair; entries past the last block are skipped and counted in
    ``status``. Converting (and scaling by ``scale``) when the dtypes differ or ``scale`` is
    given. Returns ``dst``."""
    if _compiling():
        _torch.ops.cute_copy.copy_blocks(src, dst, pairs, scale)
        return dst
    _ext.copy_blocks(src, dst, pairs, status, stream, scale)
    return dst
