"""Tests of tests/fake_cupy.py, the NumPy-backed stand-in for CuPy used to test the CuPy backend without a GPU."""
import gc
import operator
import sys
import threading

import numpy as np
import pytest

import fake_cupy


@pytest.fixture
def cp():
    module = fake_cupy.install(n_devices=2, total_memory=1 << 20)
    yield module
    fake_cupy.uninstall()


def events(cp, kind):
    return [e for e in cp.fake_log if e[0] == kind]


def test_install_registers_modules_and_uninstall_restores(cp):
    import cupy
    import cupy.cuda.memory
    import cupy.cuda.runtime

    assert cupy is cp and cupy.cuda.runtime.getDeviceCount() == 2
    assert issubclass(cupy.cuda.memory.OutOfMemoryError, MemoryError)
    assert cp.is_available() and cp.__version__.startswith("13.")
    fresh = fake_cupy.install()
    assert fresh is not cp and fresh.fake_log == [] and sys.modules["cupy"] is fresh
    fake_cupy.uninstall()
    assert "cupy" not in sys.modules or sys.modules["cupy"] is not fresh


def test_implicit_conversion_to_numpy_is_refused(cp):
    x = cp.arange(3.0)
    msg = "Implicit conversion to a NumPy array is not allowed. Please use `.get()` to construct a NumPy array explicitly."
    for convert in (np.asarray, np.array, lambda a: a.__array__()):
        with pytest.raises(TypeError) as err:
            convert(x)
        assert str(err.value) == msg
    assert x.get().tolist() == [0.0, 1.0, 2.0]
    assert cp.asnumpy(x).dtype == np.float64
    with pytest.raises(TypeError):
        operator.index(x[0])  # CuPy's ndarray has no __index__


def test_host_numpy_arrays_are_refused_as_operands(cp):
    x, host = cp.ones(3), np.ones(3)
    message = "Unsupported type <class 'numpy.ndarray'>"
    for bad in (lambda: x + host, lambda: host + x, lambda: x * host, lambda: cp.add(x, host),
                lambda: np.add(host, x), lambda: cp.maximum(host, 1), lambda: x.__setitem__(slice(None), host),
                lambda: x < host, lambda: cp.concatenate([x, host]), lambda: cp.where(x > 0, x, host)):
        with pytest.raises(TypeError, match=message):
            bad()
    assert (x + np.float32(2) + 1).get().tolist() == [4.0] * 3  # NumPy and Python scalars are fine
    x[1] = np.float64(5)
    assert x.get().tolist() == [1.0, 5.0, 1.0]


def test_reductions_and_scalars_are_zero_dim_device_arrays(cp):
    x = cp.asarray(np.arange(6.0).reshape(2, 3))
    for r in (x.sum(), cp.sum(x), x.max(), cp.mean(x), x.all(), cp.any(x > 4), x.argmax(), np.sum(x),
              cp.array_equal(x, x), cp.allclose(x, x), cp.add(1, 2), x[1, 2], cp.count_nonzero(x)):
        assert isinstance(r, cp.ndarray) and r.ndim == 0
    assert float(x.sum()) == 15.0 and x.sum(axis=0).shape == (3,)
    element = x[1, 2]  # a 0-d view, as in CuPy
    element += 10
    assert x.get()[1, 2] == 15.0
    assert bool(cp.array_equal(x, x)) and int(x.argmax()) == 5


def test_numpy_ufuncs_and_array_functions_dispatch_to_the_fake(cp):
    x = cp.arange(4.0)
    y = np.sin(x)
    assert isinstance(y, cp.ndarray) and np.allclose(y.get(), np.sin(np.arange(4.0)))
    assert np.add(x, 1, out=x) is x and x.get().tolist() == [1.0, 2.0, 3.0, 4.0]
    assert isinstance(np.concatenate([x, x]), cp.ndarray)
    out = cp.empty(4)
    assert cp.multiply(x, 2, out=out) is out and out.get().tolist() == [2.0, 4.0, 6.0, 8.0]
    assert float(cp.add.reduce(x)) == 10.0 and cp.multiply.accumulate(x).get().tolist() == [1, 2, 6, 24]
    with pytest.raises(NotImplementedError):
        cp.maximum.reduce(x)
    with pytest.raises(TypeError, match="Wrong arguments"):
        cp.add(x, x, where=x > 1)
    with pytest.raises(TypeError):
        np.linalg.norm(x)  # no cupy.linalg in the fake


def test_only_names_cupy_exports_are_served(cp):
    for name in ("asfarray", "acos", "concat", "permute_dims", "insert", "trapezoid", "fromregex", "mgrid"):
        with pytest.raises(AttributeError):
            getattr(cp, name)
    assert cp.delete is not None and cp.float32 is np.float32 and cp.newaxis is None
    assert cp.get_array_module(cp.ones(1)) is cp and cp.get_array_module(np.ones(1)) is np


def test_views_share_memory_and_pointers(cp):
    x = cp.zeros((4, 4), dtype=cp.float32)
    row = x[1]
    assert row.data.ptr == x.data.ptr + 16 and row.base is x and row.device == x.device
    row[...] = 7
    assert x.get()[1].tolist() == [7.0] * 4
    t = x.T
    assert t.data.ptr == x.data.ptr and not t.flags.c_contiguous
    assert x.reshape(16).data.ptr == x.data.ptr
    log_before = len(cp.fake_log)
    x[:, 1:]  # basic indexing launches nothing
    assert len(cp.fake_log) == log_before
    assert x[cp.asarray([0, 2])].data.ptr != x.data.ptr  # advanced indexing copies


def test_transfers_are_logged_with_syncs(cp):
    host = np.arange(8, dtype=np.float32)
    x = cp.asarray(host)
    assert events(cp, "memcpy") == [("memcpy", "HtoD", 32, False, 0, 0)]
    cp.fake_log.clear()
    x.get()
    float(x[0])
    assert bool(x[1])
    x.tolist()
    assert cp.fake_log == [("memcpy", "DtoH", 32, False, 0, 0), ("sync", "get", 0, 0),
                           ("memcpy", "DtoH", 4, False, 0, 0), ("sync", "float", 0, 0),
                           ("memcpy", "DtoH", 4, False, 0, 0), ("sync", "bool", 0, 0),
                           ("memcpy", "DtoH", 32, False, 0, 0), ("sync", "tolist", 0, 0)]
    with pytest.raises(ValueError, match="ambiguous"):
        bool(x)
    with pytest.raises(TypeError):
        x.set(host.astype(np.float64))
    x.set(host[::-1].copy())
    assert x.get()[0] == 7.0
    assert cp.asarray(x) is x


def test_memory_pool_counts_rounded_bytes_and_gives_them_back(cp):
    pool = cp.get_default_memory_pool()
    x = cp.zeros(10, dtype=cp.float32)
    assert pool.used_bytes() == 512 and pool.total_bytes() == 512
    view = x[2:]
    del x
    assert pool.used_bytes() == 512  # the view keeps the allocation alive
    del view
    gc.collect()
    assert pool.used_bytes() == 0 and pool.total_bytes() == 512 and pool.n_free_blocks() == 1
    y = cp.ones(100, dtype=cp.int8)  # reuses the cached block
    assert pool.total_bytes() == 512 and pool.n_free_blocks() == 0
    del y
    pool.free_all_blocks()
    assert pool.total_bytes() == 0 and cp.cuda.Device(0).mem_info == (1 << 20, 1 << 20)


def test_memory_limit_raises_out_of_memory_with_cupys_message(cp):
    pool = cp.get_default_memory_pool()
    pool.set_limit(size=4096)
    a, b = cp.zeros(256, cp.float32), cp.zeros(256, cp.float32)
    with pytest.raises(cp.cuda.memory.OutOfMemoryError) as err:
        cp.zeros(1024, cp.float32)
    assert str(err.value) == ("Out of memory allocating 4,096 bytes (allocated so far: 2,048 bytes, "
                              "limit set to: 4,096 bytes).")
    assert isinstance(err.value, MemoryError)
    del a, b  # cached blocks are released and retried before giving up, as in CuPy
    cp.zeros(1024, cp.float32)
    assert pool.total_bytes() == 4096 and pool.get_limit() == 4096
    with cp.cuda.Device(1):  # the limit is per device
        assert pool.get_limit() == 0
        cp.zeros(2048, cp.float32)
        pool.set_limit(fraction=0.5)
        assert pool.get_limit() == 1 << 19


def test_device_memory_without_limit_is_bounded_by_total_memory():
    cp = fake_cupy.install(total_memory=8192)
    try:
        keep = [cp.empty(4096, cp.uint8), cp.empty(4096, cp.uint8)]
        with pytest.raises(cp.cuda.memory.OutOfMemoryError,
                           match=r"^Out of memory allocating 512 bytes \(allocated so far: 8,192 bytes\)\.$"):
            cp.empty(1, cp.uint8)
        assert cp.cuda.runtime.memGetInfo() == (0, 8192)
        del keep
        cp.get_default_memory_pool().free_all_blocks()
        assert cp.cuda.runtime.memGetInfo() == (8192, 8192) and np.isnan(cp.empty(3).get()).all()
    finally:
        fake_cupy.uninstall()


def test_current_device_and_stream_are_per_thread_and_per_device(cp):
    seen = {}
    s = cp.cuda.Stream()
    assert s.ptr not in (0, 1, 2) and cp.cuda.Stream.null.ptr == 0
    go, done = threading.Event(), threading.Event()

    def other_thread():
        go.wait()
        seen["device"] = cp.cuda.runtime.getDevice()
        seen["stream"] = cp.cuda.get_current_stream()
        done.set()

    t = threading.Thread(target=other_thread)
    t.start()
    with cp.cuda.Device(1):
        assert cp.cuda.Device().id == 1
        with pytest.raises(RuntimeError, match="does not match with the current device"):
            with s:
                pass
        with cp.cuda.Device(0), s:
            go.set()
            done.wait()
            assert cp.cuda.get_current_stream() is s and cp.cuda.get_current_stream(1) is cp.cuda.Stream.null
            cp.ones(2)
        assert cp.cuda.get_current_stream(0) is cp.cuda.Stream.null
        cp.ones(2)
    t.join()
    assert seen == {"device": 0, "stream": cp.cuda.Stream.null}
    launches = events(cp, "launch")
    assert launches == [("launch", "ones", 0, s.ptr), ("launch", "ones", 1, 0)]
    s.synchronize()
    cp.cuda.Device(1).synchronize()
    assert cp.fake_log[-2:] == [("sync", "stream", 0, s.ptr), ("sync", "device", 1, None)]
    with pytest.raises(cp.cuda.runtime.CUDARuntimeError, match="invalid device ordinal"):
        cp.cuda.Device(2).use()


def test_arrays_remember_their_device_and_cross_device_use_warns(cp):
    with cp.cuda.Device(1):
        x = cp.ones(3)
    assert x.device.id == 1 and cp.cuda.runtime.getDevice() == 0
    with pytest.warns(cp._util.PerformanceWarning, match="Peer access"):
        y = x + 1
    assert y.device.id == 0
    z = cp.asarray(x)  # a copy onto the current device
    assert z.device.id == 0 and events(cp, "memcpy")[-1] == ("memcpy", "peer", 24, False, 0, 0)


def test_pinned_memory_is_detected_in_the_memcpy_log(cp):
    x = cp.arange(6, dtype=cp.float32).reshape(2, 3)
    mem = cp.cuda.alloc_pinned_memory(x.nbytes)
    assert len(mem) == 512 and cp.fake_pinned_used_bytes() == 512
    pinned = np.frombuffer(mem, np.float32, x.size).reshape(x.shape)
    s = cp.cuda.Stream()
    x.get(stream=s, out=pinned, blocking=False)
    assert pinned.tolist() == [[0, 1, 2], [3, 4, 5]]
    cp.asarray(pinned[1])
    cp.asarray(pinned.copy())
    assert events(cp, "memcpy") == [("memcpy", "DtoH", 24, True, 0, s.ptr), ("memcpy", "HtoD", 12, True, 0, 0),
                                    ("memcpy", "HtoD", 24, False, 0, 0)]
    assert not events(cp, "sync")  # blocking=False
    del mem, pinned
    gc.collect()
    assert cp.fake_pinned_used_bytes() == 0 and cp.get_default_pinned_memory_pool().n_free_blocks() == 1


def test_memcpy_peer_async_copies_between_devices(cp):
    a = cp.arange(5, dtype=cp.int32)
    with cp.cuda.Device(1):
        b = cp.zeros(5, dtype=cp.int32)
        s = cp.cuda.Stream()
    rt = cp.cuda.runtime
    assert rt.deviceCanAccessPeer(0, 1) == 1
    rt.memcpyPeerAsync(b.data.ptr, 1, a.data.ptr, 0, a.nbytes, s.ptr)
    assert b.get().tolist() == [0, 1, 2, 3, 4]
    assert events(cp, "memcpy")[0] == ("memcpy", "peer", 20, False, 1, s.ptr)
    rt.memcpyAsync(b[1:].data.ptr, a.data.ptr, 8, rt.memcpyDefault, 0)
    assert b.get().tolist() == [0, 0, 1, 3, 4]
    with pytest.raises(rt.CUDARuntimeError):
        rt.memcpyPeerAsync(b.data.ptr, 0, a.data.ptr, 0, a.nbytes, 0)  # b is not on device 0
    stale = cp.ones(4).data.ptr
    gc.collect()
    with pytest.raises(rt.CUDARuntimeError, match="invalid argument"):
        rt.memcpyAsync(b.data.ptr, stale, 16, rt.memcpyDeviceToDevice, 0)
    host = np.zeros(5, np.int32)
    b.data.copy_to_host_async(host.ctypes.data, b.nbytes)
    assert host.tolist() == [0, 0, 1, 3, 4]
    rt.deviceEnablePeerAccess(1)
    with pytest.raises(rt.CUDARuntimeError, match="already enabled"):
        rt.deviceEnablePeerAccess(1)


def test_events_record_wait_and_elapsed_time(cp):
    s = cp.cuda.Stream()
    start = cp.cuda.Event()
    start.record()
    end = s.record()
    s.wait_event(start)
    end.synchronize()
    elapsed = cp.cuda.get_elapsed_time(start, end)
    assert isinstance(elapsed, float) and elapsed >= 0 and end.done
    assert cp.fake_log == [("record", 0, start.ptr), ("record", s.ptr, end.ptr), ("wait", s.ptr, start.ptr),
                           ("sync", "event", 0, s.ptr)]
    with pytest.raises(cp.cuda.runtime.CUDARuntimeError):
        cp.cuda.get_elapsed_time(start, cp.cuda.Event())
    untimed = cp.cuda.Event(disable_timing=True)
    untimed.record()
    with pytest.raises(cp.cuda.runtime.CUDARuntimeError):
        cp.cuda.get_elapsed_time(start, untimed)
    with pytest.raises(ValueError):
        cp.cuda.Event(interprocess=True)


def test_random_state_is_reproducible(cp):
    a = cp.random.RandomState(7).standard_normal((3, 2), dtype=cp.float32)
    b = cp.random.RandomState(7).standard_normal((3, 2), dtype=cp.float32)
    c = cp.random.RandomState(8).standard_normal((3, 2), dtype=cp.float32)
    assert isinstance(a, cp.ndarray) and a.dtype == np.float32 and a.shape == (3, 2)
    assert (a.get() == b.get()).all() and not (a.get() == c.get()).all()
    rs = cp.random.RandomState(1)
    assert rs.random_sample().ndim == 0 and rs.randint(0, 5, size=4).dtype == np.int64
    assert 0 <= float(rs.uniform(2.0, 3.0)) < 3.0 and rs.normal(size=(2,)).shape == (2,)
    with pytest.raises(TypeError, match="float32 and float64"):
        rs.random_sample(3, dtype=np.int32)
    cp.random.seed(3)
    first = cp.random.rand(2).get()
    cp.random.seed(3)
    assert (cp.random.rand(2).get() == first).all()
    g = cp.random.default_rng(5)
    assert (g.random(3).get() == cp.random.default_rng(5).random(3).get()).all()


PREAMBLE = """
template <typename T> __device__ T ad_relu(T x) { return x > T(0) ? x : T(0); }
template <typename T> __device__ T ad_sqdiff(T x, T y) { return (x - y) * (x - y); }
template <typename T> __device__ T ad_floormod(T x, T y) { T r = fmod(x, y); return r; }
"""


def test_elementwise_kernel_evaluates_multi_statement_code_with_helpers(cp):
    k = cp.ElementwiseKernel("float32 x0, float32 x1", "float32 y",
                             "float t = ad_relu(x0 - x1); double u = expf(-t) * 0.5; "
                             "y = ad_sqdiff(x0, x1) + u / (1 + t) - sqrtf(fabsf(x1)) + ad_floormod(x0, x1);",
                             name="fused", preamble=PREAMBLE)
    rng = np.random.default_rng(0)
    h0, h1 = rng.standard_normal((4, 3)).astype(np.float32), rng.standard_normal((4, 3)).astype(np.float32)
    y = k(cp.asarray(h0), cp.asarray(h1))
    t = np.maximum(h0 - h1, 0)
    want = (h0 - h1) ** 2 + np.exp(-t) * 0.5 / (1 + t) - np.sqrt(np.abs(h1)) + np.remainder(h0, h1)
    assert y.dtype == np.float32 and y.shape == (4, 3) and np.allclose(y.get(), want, rtol=1e-5)
    assert events(cp, "launch")[-1] == ("launch", "fused", 0, 0)


def test_elementwise_kernel_broadcasts_scalars_and_uses_c_typing(cp):
    k = cp.ElementwiseKernel("T x0, T x1", "T y", "y = x0 * x1 + 7 / 2", name="axpy")
    x = cp.arange(6, dtype=cp.float64).reshape(2, 3)
    assert k(x, 2.0).get().tolist() == [[3.0, 5.0, 7.0], [9.0, 11.0, 13.0]]  # 7 / 2 is an int division
    row = cp.asarray(np.array([1.0, 2.0, 3.0]))
    assert k(x, row).shape == (2, 3)
    out = cp.zeros((2, 3))
    assert k(x, 1.0, out) is out and out.get()[1, 2] == 8.0
    trunc = cp.ElementwiseKernel("int32 a, int32 b", "int32 q", "q = a / b", name="trunc")
    assert trunc(cp.asarray(np.array([-7, 7], np.int32)), 2).get().tolist() == [-3, 3]
    with pytest.raises(TypeError, match="Type is mismatched"):
        cp.ElementwiseKernel("float32 x", "float32 y", "y = x", name="k")(cp.ones(2))  # float64 array
    with pytest.raises(ValueError, match="Loop size is undecided"):
        k(1.0, 2.0)
    with pytest.raises(TypeError, match="Unsupported type"):
        k(np.ones(2), 1.0)


def test_elementwise_kernel_rejects_missing_helpers_and_unsupported_code(cp):
    x = cp.ones(3, dtype=cp.float32)
    missing = cp.ElementwiseKernel("float32 x0", "float32 y", "y = ad_sigmoid(x0)", name="k", preamble=PREAMBLE)
    with pytest.raises(cp.cuda.compiler.CompileException, match="ad_sigmoid"):
        missing(x)
    for operation in ("y = x0 ? x0 : x0", "y = x0 && x0", "y = 1.0f * x0", "y = (float)x0", "y += x0",
                      "if (x0 > 0) y = x0", "y = x0 % 2", "float t = x0; t = 2; y = t", "y = max(x0, 0)", "y = y"):
        k = cp.ElementwiseKernel("float32 x0", "float32 y", operation, name="bad", preamble=PREAMBLE)
        with pytest.raises(fake_cupy.FakeUnsupportedError):
            k(x)
    for operation in ("y = z", "x0 = 1; y = x0", "y = ad_sqdiff(x0, 1.0)", "float x0 = 1; y = x0"):
        k = cp.ElementwiseKernel("float32 x0", "float32 y", operation, name="bad", preamble=PREAMBLE)
        with pytest.raises(cp.cuda.compiler.CompileException):
            k(x)
    with pytest.raises(ValueError, match="Wrong type"):
        cp.ElementwiseKernel("float x0", "float32 y", "y = x0")


def test_data_dependent_shapes_and_device_scalars_synchronise(cp):
    x = cp.asarray(np.array([3.0, -1.0, 2.0]))
    cp.fake_log.clear()
    x[x > 0]
    cp.nonzero(x)
    assert [e for e in cp.fake_log if e[0] == "sync"] == [("sync", "shape", 0, 0)] * 2
    cp.fake_log.clear()
    r = cp.random.RandomState(0).randint(cp.asarray(2), cp.asarray(5), size=100)  # CuPy calls int() on the bounds
    assert 2 <= int(r.min()) and int(r.max()) < 5
    assert events(cp, "sync")[:2] == [("sync", "int", 0, 0), ("sync", "int", 0, 0)]
    with pytest.raises(ValueError, match="low >= high"):
        cp.random.RandomState(0).randint(3, 3)
    assert np.isnan(cp.empty((2, 2)).get()).all() and np.isnan(cp.empty_like(x).get()).all()
    assert (cp.empty(4, dtype=cp.int32).get() == np.frombuffer(b"\xa5" * 4, np.int32)[0]).all()


def test_elementwise_floordiv_helper_follows_cuda_floor_of_quotient(cp):
    preamble = "__device__ double ad_floordiv(double x, double y) { return floor(x / y); }"
    k = cp.ElementwiseKernel("float64 a, float64 b", "float64 y", "y = ad_floordiv(a, b)", name="fd", preamble=preamble)
    assert k(cp.asarray([1.0, -7.0]), 0.1).get().tolist() == [10.0, -70.0]  # numpy.floor_divide(1.0, 0.1) == 9.0
