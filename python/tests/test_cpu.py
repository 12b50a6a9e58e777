"""CPU-only tests: they run in CI, with numpy arrays (DLPack on the CPU) standing in for device
arrays. Nothing here touches a GPU: the arrays are read and refused before any CUDA call."""

import re

import numpy as np
import pytest

import cute_copy as cc


class Wrapped:
    """A plain object implementing the DLPack protocol with a numpy array behind it."""

    def __init__(self, a, device=None):
        self.a = a
        self.device = device

    def __dlpack__(self, stream=None, max_version=None, **kw):
        if max_version is None:
            return self.a.__dlpack__()
        return self.a.__dlpack__(max_version=max_version)

    def __dlpack_device__(self):
        return self.device or self.a.__dlpack_device__()


class Legacy:
    """A pre-DLPack-1.0 producer: __dlpack__ knows no max_version, the capsule is legacy."""

    def __init__(self, a):
        self.a = a

    def __dlpack__(self, stream=None):
        return self.a.__dlpack__()

    def __dlpack_device__(self):
        return self.a.__dlpack_device__()


def test_imports_with_a_version_and_its_api():
    assert re.fullmatch(r"\d+\.\d+\.\d+", cc.__version__)
    for name in cc.__all__:
        assert callable(getattr(cc, name)), name


def test_device_count_is_a_number_even_without_a_driver():
    assert isinstance(cc.device_count(), int)
    assert cc.device_count() >= 0


@pytest.mark.parametrize(
    "call",
    [
        lambda a, b: cc.copy_(a, b),
        lambda a, b: cc._cute_copy.permute_into(a, b, [1, 0]),
        lambda a, b: cc._cute_copy.pad_into(a, b),
        lambda a, b: cc._cute_copy.gather_rows(b, np.zeros(4, np.int64), a),
    ],
    ids=["copy_", "permute_into", "pad_into", "gather_rows"],
)
def test_cpu_arrays_are_a_type_error_naming_the_device(call):
    a = np.zeros((4, 4), np.float32)
    with pytest.raises(TypeError, match=r"CUDA device memory; the destination is on cpu"):
        call(a, a.copy())


def test_cpu_source_named_when_the_destination_is_not_the_problem():
    # The destination claims CUDA and is refused only after the source: its capsule says CPU.
    dst = Wrapped(np.zeros(3, np.float32), device=(2, 0))
    with pytest.raises(TypeError, match=r"the destination is on cpu"):
        cc.copy_(dst, np.zeros(3, np.float32))


def test_plain_dlpack_object_on_cpu_is_a_type_error():
    w = Wrapped(np.zeros(8, np.uint8))
    with pytest.raises(TypeError, match="cpu"):
        cc.copy_(w, w)


def test_other_devices_are_named():
    w = Wrapped(np.zeros(8, np.uint8), device=(10, 1))
    with pytest.raises(TypeError, match=r"rocm:1"):
        cc.copy_(w, w)


def test_non_arrays_are_a_type_error():
    with pytest.raises(TypeError, match=r"__dlpack__ or __cuda_array_interface__.*list"):
        cc.copy_([1, 2, 3], [1, 2, 3])
    with pytest.raises(TypeError):
        cc.describe(3.0)


def test_describe_reads_shape_strides_in_elements_and_the_byte_offset():
    a = np.zeros((4, 6), np.float32)
    d = cc.describe(a)
    assert d["shape"] == [4, 6] and d["strides"] == [6, 1]
    assert d["dtype"] == "float32" and d["kernel_dtype"] == "f32"
    assert d["device"].startswith("cpu") and not d["cuda"]
    t = cc.describe(a.T[1:, 2:])
    assert t["shape"] == [5, 2] and t["strides"] == [1, 6]
    assert t["ptr"] == d["ptr"] + (1 + 2 * 6) * 4


@pytest.mark.parametrize(
    "dtype,kernel",
    [
        (np.float16, "f16"),
        (np.float32, "f32"),
        (np.float64, "f64"),
        (np.int8, "i8"),
        (np.uint8, "u8"),
        (np.int16, "i16"),
        (np.uint16, "u16"),
        (np.int32, "i32"),
        (np.uint32, "u32"),
        (np.int64, "i64"),
        (np.uint64, "u64"),
        (np.bool_, "u8"),
        (np.complex64, "u64"),
    ],
)
def test_every_dtype_maps_to_a_kernel_width(dtype, kernel):
    assert cc.describe(np.zeros(3, dtype))["kernel_dtype"] == kernel


def test_sixteen_byte_elements_are_refused():
    with pytest.raises(ValueError, match="1, 2, 4 or 8 bytes.*complex128"):
        cc.describe(np.zeros(3, np.complex128))


def test_negative_strides_are_read_signed():
    a = np.zeros((4, 6), np.float32)
    assert cc.describe(a[::-1])["strides"] == [-6, 1]
    assert cc.describe(a[:, ::-2])["strides"] == [6, -2]


def test_read_only_arrays_are_marked():
    a = np.zeros(4, np.float32)
    a.flags.writeable = False
    assert cc.describe(a)["read_only"]


def test_legacy_capsules_are_read():
    a = np.arange(12, dtype=np.int32).reshape(3, 4)[:, 1:]
    d = cc.describe(Legacy(a))
    assert d["shape"] == [3, 3] and d["strides"] == [4, 1]


def test_scalars_are_rank_zero():
    d = cc.describe(np.array(1.5, np.float32))
    assert d["shape"] == [] and d["strides"] == []


def test_plan_of_a_transpose_needs_no_gpu():
    src = np.zeros((64, 48), np.float16).T
    dst = np.zeros((48, 64), np.float16)
    text = cc.plan(dst, src)
    assert text.startswith("tensor copy f16: (48,64):(1,48) -> (48,64):(64,1)")
    e = cc.explain(dst, src)
    assert e["route"] == "transpose"
    assert e["src"] == "(48,64):(1,48)" and e["dst"] == "(48,64):(64,1)"
    assert e["bytes"] == 2 * 48 * 64 * 2  # read and written
    assert e["reasons"] and e["text"] == text


def test_plan_of_a_contiguous_copy_is_the_matrix_route():
    a = np.zeros((32, 64), np.float32)
    e = cc.explain(a, a.copy())
    assert e["route"] == "matrix"
    assert e["coalesced"] == ("(2048):(1)", "(2048):(1)")


def test_explain_layout_plans_from_layouts_alone():
    e = cc.explain_layout("f16", [16384, 16384], src_strides=[1, 16384])
    assert e["route"] == "transpose" and e["dtype"] == "f16"
    e = cc.explain_layout("u8", [8191, 8191], src_strides=[8192, 1], src_offset_bytes=8193)
    assert e["offset_bytes"] == (8193 % 256, 0)
    p = cc.explain_layout("f16", [8, 32, 4096, 128], src_strides=[16777216, 128, 524288, 1])
    assert p["src"] == "(8,32,4096,128):(16777216,128,524288,1)"


def test_explain_layout_refuses_unknown_dtypes_and_bad_layouts():
    with pytest.raises(ValueError, match=r"unknown dtype \"f8\": one of f32"):
        cc.explain_layout("f8", [4])
    with pytest.raises(ValueError):
        cc.explain_layout("f32", [4, 4], src_strides=[1])
    with pytest.raises(ValueError, match="writes some elements twice"):
        cc.explain_layout("f32", [4, 4], dst_strides=[0, 1])


def test_plan_of_a_converting_copy_says_how_it_rounds():
    a = np.zeros((4, 6), np.float32)
    text = cc.plan(a, a.astype(np.float16).T.copy().T)
    assert text.startswith("convert copy f16 -> f32"), text
    assert "exact" in text
    text = cc.plan(a.astype(np.float16), a, mean=[0.5] * 6, std=[2.0] * 6, dim=1)
    assert "normalized per channel" in text and "round to nearest even" in text.lower(), text
    with pytest.raises(ValueError, match="mean, std and dim go together"):
        cc.plan(a, a, mean=[0.0] * 6)
    with pytest.raises(ValueError, match="normalize: mode 1 has 6 channels"):
        cc.plan(a, a, mean=[0.0], std=[1.0], dim=1)
    with pytest.raises(ValueError, match="no conversion from i64 to f16"):
        cc.plan(a.astype(np.float16), a.astype(np.int64))


def test_plan_refuses_mismatched_pairs_with_value_errors():
    a = np.zeros((4, 6), np.float32)
    with pytest.raises(ValueError, match="dtype mismatch: source f16, destination f32"):
        cc.explain(a, a.astype(np.float16))
    with pytest.raises(ValueError, match=r"shape mismatch: source \[6, 4\], destination \[4, 6\]"):
        cc.plan(a, a.T.copy())
    ro = a.copy()
    ro.flags.writeable = False
    with pytest.raises(ValueError, match="read-only"):
        cc.plan(ro, a)


def test_negative_strides_on_one_side_are_a_clear_value_error():
    a = np.zeros((4, 6), np.float32)
    with pytest.raises(ValueError, match=r"negative strides: the source's mode 0 has stride -6"):
        cc.plan(a.copy(), a[::-1])


def test_negative_strides_alike_on_both_sides_are_read_from_the_other_end():
    a, b = np.zeros((4, 6), np.float32), np.zeros((4, 6), np.float32)
    e = cc.explain(b[::-1], a[::-1])
    assert e["route"] == "matrix" and e["coalesced"] == ("(24):(1)", "(24):(1)")


def test_ranks_above_six_merge_when_they_can():
    a = np.zeros((2,) * 8, np.uint8)
    e = cc.explain(a, a.copy())
    assert e["coalesced"][0] == "(256):(1)"
    with pytest.raises(ValueError, match="does not merge into 6 modes"):
        cc.plan(a.copy(), a.transpose(7, 6, 5, 4, 3, 2, 1, 0))


def test_allocating_calls_refuse_foreign_frameworks():
    with pytest.raises(TypeError):
        cc.permute(np.zeros((2, 3), np.float32), (1, 0))


def test_contiguous_returns_contiguous_inputs_unchanged():
    a = np.zeros((4, 6), np.float32)
    assert cc.contiguous(a) is a


def test_stream_arguments_of_unknown_kinds_are_a_type_error():
    a = np.zeros(4, np.float32)
    with pytest.raises(TypeError, match="stream must be"):
        cc.copy_(a, a, stream="default")


def test_the_package_imports_without_torch():
    import sys

    if "torch" in sys.modules:
        pytest.skip("torch is imported in this process")
    assert cc._torch is None


def test_cuda_array_interface_of_host_memory_is_refused_not_crashed():
    # No device owns a host pointer: TypeError on a GPU machine, RuntimeError (no CUDA driver)
    # on one without; never a crash.
    a = np.zeros((4, 4), np.float32)

    class HostCAI:
        __cuda_array_interface__ = {
            "shape": (4, 4),
            "typestr": "<f4",
            "data": (a.ctypes.data, False),
            "version": 3,
            "strides": None,
        }

    with pytest.raises((TypeError, RuntimeError)):
        cc.copy_(HostCAI(), HostCAI())


def test_cuda_array_interface_typestrs_are_checked():
    class BigEndian:
        __cuda_array_interface__ = {"shape": (4,), "typestr": ">f4", "data": (0, False), "version": 3}

    with pytest.raises(ValueError, match="big-endian"):
        cc.describe(BigEndian())
