"""nvrtc_check compiles ElementwiseKernel-shaped CUDA C++ with NVRTC, and rejects code NVRTC rejects."""
import pytest

import nvrtc_check

needs_nvrtc = pytest.mark.skipif(not nvrtc_check.available(), reason=nvrtc_check.reason() or "NVRTC unavailable")


@needs_nvrtc
def test_valid_operation_with_device_helper_compiles_to_ptx_with_the_kernel_entry():
    preamble = "__device__ float softplus(float v) { return v > 20.f ? v : log1pf(expf(v)); }"
    op = "float t = softplus(x0) * x1;\ny = fmaxf(t, 0.f) + rsqrtf(1.f + x1 * x1);\nz = sinf(t)"
    ptx = nvrtc_check.compile_elementwise("float32 x0, float32 x1", "float32 y, float32 z", op, "fused_sp_relu",
                                          preamble)
    assert ".visible .entry fused_sp_relu(" in ptx


@needs_nvrtc
@pytest.mark.parametrize("operation, expect", [
    ("y = x0 + undeclared_thing", "undeclared_thing"),
    ("float t = x0 * 2.f\ny = t", "error"),
    ("y = x0 +", "error"),
])
def test_broken_operation_raises_compile_error_with_the_nvrtc_log(operation, expect):
    with pytest.raises(nvrtc_check.CompileError) as info:
        nvrtc_check.compile_elementwise("float32 x0", "float32 y", operation, "broken")
    err = info.value
    assert "error" in err.log and expect in err.log
    assert err.log in str(err) and operation.splitlines()[0] in str(err)
    assert err.source.count("broken(") == 1


@needs_nvrtc
def test_host_helper_without_device_qualifier_is_rejected_as_in_cupy():
    with pytest.raises(nvrtc_check.CompileError, match="host function"):
        nvrtc_check.compile_elementwise("float32 x", "float32 y", "y = twice(x)", "k",
                                        preamble="float twice(float v) { return 2 * v; }")


@needs_nvrtc
def test_inputs_are_const_and_outputs_are_references():
    with pytest.raises(nvrtc_check.CompileError):
        nvrtc_check.compile_elementwise("float32 x", "float32 y", "x = 1.f; y = x", "k")
    ptx = nvrtc_check.compile_elementwise("float32 x", "float32 y", "y = x; y += 1.f", "k")
    assert "st.global.f32" in ptx


@needs_nvrtc
def test_float64_int_and_bool_params():
    ptx = nvrtc_check.compile_elementwise("float64 a, bool c, int64 n, int32 k", "float64 out, bool flag",
                                          "out = c ? exp(a) * n : a / k; flag = !c && isnan(a)", "mixed")
    assert ".visible .entry mixed(" in ptx and ".f64" in ptx


@needs_nvrtc
def test_type_placeholders_index_and_cupy_constants():
    ptx = nvrtc_check.compile_elementwise("T x", "T y", "y = x * (T)M_PI + (T)_ind.size() + (T)i + CUDART_INF", "tk",
                                          type_map={"T": "float64"})
    assert ".visible .entry tk(" in ptx


@pytest.mark.parametrize("in_params, type_map", [
    ("float33 x", None), ("complex64 x", None), ("float16 x", None), ("T x", None), ("float32", None),
    ("raw float32 x", None), ("float32 i", None), ("T x", {"T": "nonsense"}),
])
def test_unknown_or_unmodelled_params_raise_value_error(in_params, type_map):
    with pytest.raises(ValueError):
        nvrtc_check.compile_elementwise(in_params, "float32 y", "y = 0", "k", type_map=type_map)


def test_invalid_kernel_name_raises_value_error():
    with pytest.raises(ValueError, match="kernel name"):
        nvrtc_check.compile_elementwise("float32 x", "float32 y", "y = x", "not-a-name")


def test_bad_adplace_nvrtc_path_reports_unavailable(monkeypatch, tmp_path):
    monkeypatch.setenv("ADPLACE_NVRTC", str(tmp_path / "libnvrtc.so.missing"))
    nvrtc_check._load.cache_clear()
    try:
        assert not nvrtc_check.available()
        assert "libnvrtc.so.missing" in nvrtc_check.reason()
        with pytest.raises(RuntimeError, match="NVRTC"):
            nvrtc_check.compile_elementwise("float32 x", "float32 y", "y = x", "k")
    finally:
        monkeypatch.delenv("ADPLACE_NVRTC")
        nvrtc_check._load.cache_clear()
