"""GPU tests skip without a CUDA device (or without the framework they need) unless
CUTE_COPY_REQUIRE_GPU=1, which turns every such skip into a failure: on the GPU host a missing
GPU, torch, CuPy or JAX must not pass quietly."""

import importlib
import os

import pytest

# JAX would take 75% of the GPU at its first array; torch shares the device in these tests.
os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")

REQUIRE_GPU = os.environ.get("CUTE_COPY_REQUIRE_GPU") == "1"


def _missing(why):
    if REQUIRE_GPU:
        pytest.fail(f"CUTE_COPY_REQUIRE_GPU=1 but {why}", pytrace=False)
    pytest.skip(why)


def need(module):
    """Import `module` for a GPU test, or skip (fail under CUTE_COPY_REQUIRE_GPU=1)."""
    try:
        return importlib.import_module(module)
    except ImportError as e:
        _missing(f"{module} is not installed ({e})")


@pytest.fixture
def torch():
    import cute_copy

    t = need("torch")
    if not t.cuda.is_available() or cute_copy.device_count() == 0:
        _missing("no CUDA device")
    cute_copy.register_torch_ops()
    return t


@pytest.fixture
def cupy(torch):
    return need("cupy")


@pytest.fixture
def jax(torch):
    j = need("jax")
    if not any(d.platform == "gpu" for d in j.devices()):
        _missing("JAX sees no GPU")
    return j
