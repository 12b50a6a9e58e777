"""Type stubs for cute_copy (see the module docstring for streams, errors and torch integration)."""

from typing import Any, Dict, List, Optional, Protocol, Sequence, Tuple, TypeVar, Union

__version__: str

class _DLPackArray(Protocol):
    def __dlpack__(self, *args: Any, **kwargs: Any) -> Any: ...
    def __dlpack_device__(self) -> Tuple[int, int]: ...

Array = Any
"""A torch.Tensor, CuPy or JAX array, or any object with ``__dlpack__``/``__dlpack_device__``
or ``__cuda_array_interface__`` on a CUDA device."""

Stream = Union[int, Any, None]
"""A CUstream handle (int), a ``torch.cuda.Stream``, a CuPy stream, an object with
``__cuda_stream__``, or None for the framework's current stream."""

A = TypeVar("A")

class IndexStatus:
    """A device counter of out-of-range indices, for gather_rows / scatter_rows / copy_blocks."""

    def __init__(self, device: int = 0) -> None: ...
    @property
    def device(self) -> int: ...
    def check(self, stream: Stream = None) -> None:
        """Wait for the last copy's stream; raise IndexError if an index was out of range. Clears."""

def copy_(
    dst: A,
    src: Array,
    *,
    scale: Optional[float] = None,
    mean: Optional[Sequence[float]] = None,
    std: Optional[Sequence[float]] = None,
    dim: Optional[int] = None,
    stream: Stream = None,
) -> A:
    """``dst[...] = src``: any layouts of one shape, on the caller's stream, converting when the
    dtypes differ (and scaling / normalizing along ``dim``). Returns dst."""

def contiguous(x: A, *, stream: Stream = None) -> A:
    """``x`` if row-major contiguous, else a new row-major copy (x's framework)."""

def permute(x: A, dims: Sequence[int], *, stream: Stream = None) -> A:
    """A new row-major array holding ``x.permute(dims)``."""

def pad(x: A, shape: Optional[Sequence[int]], *, out: Optional[A] = None, stream: Stream = None) -> A:
    """Zero-pad a 2D/1D array into the top-left corner of a ``shape`` array (or ``out``)."""

def gather_rows(
    src: A,
    idx: Array,
    out: Optional[A] = None,
    *,
    dtype: Any = None,
    scale: Optional[float] = None,
    status: Optional[IndexStatus] = None,
    stream: Stream = None,
) -> A:
    """``out[i] = src[idx[i]]``; negative indices skip, indices past the end are counted in status;
    converting (``y = dtype(x * scale)``) when the dtypes differ or ``scale`` is given."""

def scatter_rows(
    src: Array,
    idx: Array,
    out: A,
    *,
    scale: Optional[float] = None,
    status: Optional[IndexStatus] = None,
    stream: Stream = None,
) -> A:
    """``out[idx[i]] = src[i]``; negative indices skip, indices past the end are counted in status;
    converting when the dtypes differ or ``scale`` is given (a KV-cache write into a float8 pool)."""

def copy_blocks(
    src: Array,
    dst: A,
    pairs: Array,
    *,
    scale: Optional[float] = None,
    status: Optional[IndexStatus] = None,
    stream: Stream = None,
) -> A:
    """``dst[pairs[k, 1]] = src[pairs[k, 0]]`` for every pair (blocks are ``src[b]``); converting
    when the dtypes differ or ``scale`` is given."""

def plan(dst: Array, src: Array) -> str:
    """The plan's text for ``copy_(dst, src)``; launches nothing, any device."""

def explain(dst: Array, src: Array) -> Dict[str, Any]:
    """The plan as a dict: dtype, src, dst, coalesced, offset_bytes, route, atom, bytes, reasons, text."""

def explain_layout(
    dtype: str,
    shape: Sequence[int],
    src_strides: Optional[Sequence[int]] = None,
    dst_strides: Optional[Sequence[int]] = None,
    src_offset_bytes: int = 0,
    dst_offset_bytes: int = 0,
) -> Dict[str, Any]:
    """The plan of a copy described by layouts alone (dtype 'f16', 'bf16', 'u8', ...); no GPU."""

def describe(x: Array) -> Dict[str, Any]:
    """What cute_copy reads from an array: ptr, shape, strides (elements), dtype, device, read_only."""

def device_count() -> int:
    """CUDA devices (0 without a driver; never raises)."""

def index_status(device: int = 0) -> IndexStatus:
    """The status copies without ``status=`` count into, one per device."""

def register_torch_ops() -> None:
    """Register torch.ops.cute_copy.* (automatic when torch is imported before cute_copy)."""

__all__: List[str]
