"""Shared fixtures: a fresh default graph per test, and virtual GPUs that never leak between tests.

    def test_matmul_goes_to_gpu(gpus):            # 2 virtual GPUs
    @pytest.mark.parametrize("gpus", [4], indirect=True)
    def test_four_towers(gpus): ...               # 4 virtual GPUs
"""
import os
import sys

import pytest

import adplace as tf
from adplace import devices
from adplace.framework import registry


def _no_real_gpus() -> tuple:
    """devices.cuda_gpus while a test hides the machine's CUDA GPUs."""
    return ()


_no_real_gpus.cache_clear = lambda: None


def _hide_real_gpus(monkeypatch) -> None:
    monkeypatch.setattr(devices, "cuda_gpus", _no_real_gpus)
    monkeypatch.setattr(tf.config, "cuda_gpus", _no_real_gpus)


@pytest.fixture(autouse=True)
def _fresh_graph_and_devices(request, monkeypatch):
    """Every test starts on an empty default graph with no virtual GPUs unless it asks for some; on a real GPU the
    memory pool grows on demand instead of reserving the card (TF_FORCE_GPU_ALLOW_GROWTH, as TF reads it).

    The machine's CUDA GPUs are hidden, so a test means on a GPU machine what it means in CI (the default device of an
    op is the CPU, and CPU kernels' errors apply), except in tests marked `gpu`, tests on fake GPUs or probing CuPy
    itself, and every test when ADPLACE_TEST_REAL_GPUS=1 (a search for what differs on the card)."""
    monkeypatch.delenv("ADPLACE_VIRTUAL_GPUS", raising=False)
    monkeypatch.setenv("TF_FORCE_GPU_ALLOW_GROWTH", "true")
    if not (request.node.get_closest_marker("gpu") or {"fake_gpu", "no_cupy"} & set(request.fixturenames)
            or os.environ.get("ADPLACE_TEST_REAL_GPUS") == "1"):
        _hide_real_gpus(monkeypatch)
    tf.config.set_virtual_gpus(None)
    tf.reset_default_graph()
    yield
    tf.config.set_virtual_gpus(None)


@pytest.fixture
def fast_switching():
    """Threads switch every microsecond instead of every 5 ms, so races land inside kernels and placement rounds."""
    previous = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    yield
    sys.setswitchinterval(previous)


@pytest.fixture
def gpus(request) -> int:
    """Turn on `n` virtual GPUs (default 2; parametrize indirectly for another count); returns n."""
    count = getattr(request, "param", 2)
    tf.config.set_virtual_gpus(count)
    return count


@pytest.fixture
def virtual_gpus_only(monkeypatch):
    """Hide real CUDA GPUs (CuPy on a GPU machine would list them first and shift every index), also with
    ADPLACE_TEST_REAL_GPUS=1."""
    _hide_real_gpus(monkeypatch)


@pytest.fixture
def no_cupy(monkeypatch):
    """Pretend CuPy is not installed (and forget any cached discovery before and after)."""
    monkeypatch.setitem(sys.modules, "cupy", None)  # `import cupy` raises ImportError
    devices.cuda_gpus.cache_clear()
    yield
    devices.cuda_gpus.cache_clear()


@pytest.fixture
def scratch_registry(monkeypatch):
    """The op registry (adplace.framework.registry), with op types, kernels and gradients registered during the test
    forgotten after it, so a throwaway op type cannot leak into tests that inspect every registered type."""
    for table in ("_OP_DEFS", "_KERNELS", "_GRADIENTS"):
        monkeypatch.setattr(registry, table, dict(getattr(registry, table)))
    yield registry
    registry.kernel_device_types.cache_clear()


@pytest.fixture
def fake_gpu(request, monkeypatch):
    """A NumPy-backed CuPy (tests/fake_cupy.py) with `n` fake CUDA GPUs (default 1; parametrize indirectly), so the
    CuPy backend runs without a GPU; yields the fake module, whose `fake_log` records launches, copies and syncs."""
    import fake_cupy
    from adplace.kernels import fusion, gpu

    count = getattr(request, "param", 1)
    cp = fake_cupy.install(n_devices=count)
    devices.cuda_gpus.cache_clear()
    monkeypatch.setattr(gpu, "_configured", {})
    monkeypatch.setattr(gpu, "_streams", {})
    monkeypatch.setattr(fusion, "_cache", {})
    try:
        yield cp
    finally:
        fake_cupy.uninstall()
        devices.cuda_gpus.cache_clear()
