"""CUDA GPUs through CuPy: kernels, one stream per device, transfers, GPU memory options and CUDA-event timing.

The kernels themselves are those of adplace.kernels (cpu.py, math.py, state.py, ...), built with CuPy as their
array module: this module gives them a context whose `xp` is CuPy and runs each one on its device's stream. What is
GPU-specific lives here:

- TF's host-memory rule: int32 (and string) tensors of a GPU op stay in host memory as NumPy arrays, so shapes,
  axes and int32 arithmetic never cross the bus (TF's HostMemory kernels); every other value is a `cupy.ndarray`;
- one non-blocking CUDA stream per GPU (per process, as TF's compute stream); kernels are enqueued on it with no
  host synchronisation;
- transfers: host->GPU through a pinned staging buffer (or straight from pinned memory), GPU->host into pinned
  memory, GPU->GPU by peer copy ordered after the producer's event;
- `ResourceExhaustedError` naming the op, the device and the bytes when CuPy's pool is out of memory;
- `GPUOptions`: per_process_gpu_memory_fraction caps the pool, allow_growth or an up-front reservation;
- traced runs time GPU steps with CUDA events recorded on the stream.

CuPy is imported only when a session has a CUDA device, so the core runs without it.
"""
from __future__ import annotations

import os
import re
import sys
import threading
import time
from typing import Callable

import numpy as np

from adplace.framework import dtypes as _dtypes
from adplace.framework.errors import ResourceExhaustedError
from adplace.framework.registry import kernel_dtype, kernel_factory

HOST_MEMORY_DTYPES = frozenset({_dtypes.int32, _dtypes.string})  # TF keeps these in host memory on a GPU
GPU_INSTALL_HINT = 'pip install "adplace[gpu]"'


def cupy_module():
    """CuPy, imported on first use; a clear ImportError where it is missing."""
    try:
        import cupy
    except ImportError as e:
        raise ImportError(f"a CUDA GPU needs CuPy, which is not installed ({GPU_INSTALL_HINT}): {e}") from None
    return cupy


def on_host(dtype) -> bool:
    """Whether a GPU op's tensor of this dtype lives in host memory (TF's HostMemory rule for int32)."""
    return dtype is None or dtype.base_dtype in HOST_MEMORY_DTYPES


def is_device_array(value) -> bool:
    """Whether `value` is in GPU memory (a CuPy array: it has the CUDA array interface), without importing CuPy."""
    return type(value) is not np.ndarray and hasattr(value, "__cuda_array_interface__")


def to_host(value, stream=None):
    """A value as a NumPy array, others unchanged: a CuPy array is copied back once `stream` (default: the current
    one) has produced it. Pass the device's stream outside `with stream`: the null stream does not wait for it."""
    return value.get(stream=stream) if is_device_array(value) else value


# --- memory options -----------------------------------------------------------------------------------------------
_configured: dict[int, tuple] = {}   # physical id -> (limit bytes, reserve) applied to CuPy's pool
_streams: dict = {}                  # (CuPy module, physical id) -> the device's stream
_config_lock = threading.Lock()


def once(table: dict, key, make: Callable, lock: threading.Lock):
    """table[key], made by `make()` the first time, once even when threads ask together."""
    value = table.get(key)
    if value is None:
        with lock:
            value = table.get(key)
            if value is None:
                value = table[key] = make()
    return value


def device_stream(cp, physical_id: int):
    """The process's CUDA stream for a GPU: every session enqueues that GPU's work on it, as TF has one compute
    stream per GPU (CuPy's pool caches freed memory per stream, so one stream also shares one cache)."""
    def make():
        with cp.cuda.Device(physical_id):
            return cp.cuda.Stream(non_blocking=True)
    return once(_streams, (id(cp), physical_id), make, _config_lock)


def configure_memory(devices: list, gpu_options) -> None:
    """Apply GPUOptions to CuPy's memory pool for each CUDA device, as TF's GPU allocator does at first use.

    per_process_gpu_memory_fraction f > 0 caps the pool at f of the device's memory. Without allow_growth (and
    without $TF_FORCE_GPU_ALLOW_GROWTH=true) the pool reserves its cap up front, as TF's BFC allocator does (all
    free memory when no fraction is given); with it, memory is taken as ops ask for it. Like TF, the first session
    of the process decides: later, different options are ignored.
    """
    fraction = float(gpu_options.per_process_gpu_memory_fraction or 0.0)
    if fraction < 0:
        raise ValueError(f"per_process_gpu_memory_fraction must be non-negative, got {fraction}")
    grow = gpu_options.allow_growth or os.environ.get("TF_FORCE_GPU_ALLOW_GROWTH", "").lower() == "true"
    cuda = [d for d in devices if d.is_cuda]
    if not cuda:
        return
    cp = cupy_module()
    pool = cp.get_default_memory_pool()
    for device in cuda:
        if device.physical_id in _configured:
            continue
        stream = device_stream(cp, device.physical_id)
        with _config_lock, cp.cuda.Device(device.physical_id), stream:  # reserved in the stream's cache
            if device.physical_id in _configured:
                continue
            free, total = cp.cuda.runtime.memGetInfo()
            limit = int(total * fraction) if fraction > 0 else 0
            if limit:
                pool.set_limit(size=limit)
            _configured[device.physical_id] = (limit, not grow)
            if not grow:
                reserve = min(limit or free, free) - (free // 20 if not limit else 0)  # TF leaves ~5% when all
                if reserve > 0:
                    try:
                        block = pool.malloc(reserve)
                    except cp.cuda.memory.OutOfMemoryError:
                        block = None  # another process holds the memory: grow on demand instead
                    del block  # freed into the pool, which keeps it cached and splits it for later allocations


def memory_limit(device) -> int:
    """The pool cap applied to a CUDA device in bytes (0: none)."""
    return _configured.get(device.physical_id, (0, False))[0]


_OOM_BYTES = re.compile(r"allocating ([\d,]+) bytes")


def resource_exhausted(op, device, error: BaseException) -> ResourceExhaustedError:
    """TF's OOM error for a CuPy OutOfMemoryError: the op, the device, the bytes asked for and the pool's limit."""
    match = _OOM_BYTES.search(str(error))
    asked = match.group(1).replace(",", "") if match else "?"
    limit = memory_limit(device)
    limit_text = f"{limit} bytes (per_process_gpu_memory_fraction)" if limit else "the device's free memory"
    return ResourceExhaustedError(None, op, f"OOM when allocating {asked} bytes for op '{op.name}' ({op.type}) on "
                                  f"{device.name}: the memory pool is limited to {limit_text}. CuPy said: {error}")


# --- per-device state ---------------------------------------------------------------------------------------------
class DeviceState:
    """One CUDA device in one session: its CuPy device, its stream, and the events of a traced run."""

    def __init__(self, device, cp):
        self.device, self.cp = device, cp
        self.cuda = cp.cuda.Device(device.physical_id)
        self.stream = device_stream(cp, device.physical_id)
        self.timings: dict | None = None   # kernel -> (start event, end event) while a traced run records
        self.rngs: dict = {}

    def begin_trace(self) -> None:
        """Time GPU steps with CUDA events from now on; the anchor event ties event times to the host clock."""
        with self.cuda:
            self.stream.synchronize()
            self.anchor = self.stream.record()
            self.anchor.synchronize()
            self.anchor_ns = time.perf_counter_ns()
        self.timings = {}

    def end_trace(self) -> dict:
        """Stop timing; {kernel: (start ns, end ns)} on the perf_counter clock, after waiting for the stream."""
        timings, self.timings = self.timings or {}, None
        with self.cuda:
            self.stream.synchronize()
        elapsed = self.cp.cuda.get_elapsed_time
        return {k: (self.anchor_ns + int(elapsed(self.anchor, a) * 1e6), self.anchor_ns + int(elapsed(self.anchor, b)
                                                                                              * 1e6))
                for k, (a, b) in timings.items()}

    def launcher(self, fn: Callable, op) -> Callable:
        """`fn` run with this device and its stream current, timed by events when traced, OOM made TF's error."""
        cuda, stream, oom = self.cuda, self.stream, self.cp.cuda.memory.OutOfMemoryError
        state = self

        def run(*args):
            with cuda, stream:
                try:
                    if state.timings is None:
                        return fn(*args)
                    start = stream.record()
                    result = fn(*args)
                    state.timings[run] = (start, stream.record())
                    return result
                except oom as e:
                    raise resource_exhausted(op, state.device, e) from None
        run.__qualname__ = f"gpu:{op.name}"
        return run


class GPUKernelContext:
    """What a kernel factory sees for a CUDA device: the session's context with CuPy as the array module."""

    def __init__(self, base, state: DeviceState):
        self._base, self._state, self.xp = base, state, state.cp

    def __getattr__(self, name):  # variable(), steps, gate: the session's own
        return getattr(self._base, name)

    def to_device(self, value):
        """A Const's host value as the GPU holds it: uploaded once, unless it is host memory (int32, strings)."""
        array = np.asarray(value)
        return value if on_host(_dtypes.as_dtype(array.dtype)) else self.xp.asarray(array)

    def random_generator(self, op):
        """A CuPy random stream per op, seeded from (seed, seed2) when the graph sets them, as on the CPU."""
        rng = self._state.rngs.get(op._id)
        if rng is None:
            seed, seed2 = op._attrs.get("seed", 0), op._attrs.get("seed2", 0)
            mixed = ((seed * 0x9E3779B1) ^ seed2) & 0xFFFFFFFF  # one 32-bit seed, accepted by every CuPy version
            rng = self._state.rngs[op._id] = _Generator(self.xp.random.RandomState(mixed if seed or seed2 else None))
        return rng


class _Generator:
    """NumPy's Generator methods (random, standard_normal, integers) over a CuPy RandomState."""

    def __init__(self, state):
        self._state = state

    def random(self, size, dtype=np.float64):
        return self._state.random_sample(size=size, dtype=dtype)

    def standard_normal(self, size, dtype=np.float64):
        return self._state.standard_normal(size=size, dtype=dtype)

    def integers(self, low, high, size, dtype):
        return self._state.randint(low, high, size=size, dtype=dtype)


def build_kernel(op, state: DeviceState, base_ctx) -> Callable:
    """The kernel of `op` on a CUDA device: the array kernel built with CuPy, launched on the device's stream.

    Ops selected by a host-memory dtype (int32 shapes and arithmetic) run the NumPy kernel on host values, as TF's
    HostMemory kernels do; device inputs they get are copied back first, and their outputs of device dtypes (an
    int32 cast to int64, a comparison's bool) are uploaded, so GPU consumers always get CuPy arrays.
    """
    factory = kernel_factory(op._type, "GPU")
    if on_host(kernel_dtype(op)):
        host_fn = factory(op, base_ctx)
        uploads = {i: upload_kernel(state) for i, t in enumerate(op._outputs) if not on_host(t._dtype)}
        stream = state.stream
        if not uploads:
            return lambda *args: host_fn(*[to_host(a, stream) for a in args])
        return _uploading_outputs(host_fn, uploads, len(op._outputs), stream)
    with state.cuda, state.stream:
        fn = factory(op, GPUKernelContext(base_ctx, state))
    return state.launcher(fn, op)


def _uploading_outputs(host_fn: Callable, uploads: dict, n_outputs: int, stream) -> Callable:
    def run(*args):
        result = host_fn(*[to_host(a, stream) for a in args])
        if n_outputs == 1:
            return uploads[0](result)
        return tuple(uploads[i](value) if i in uploads else value for i, value in enumerate(result))
    return run


# --- transfers ----------------------------------------------------------------------------------------------------
def is_pinned(array: np.ndarray, cp) -> bool:
    """Whether a NumPy array views CuPy pinned (page-locked) host memory."""
    base = array
    while base is not None:
        if isinstance(base, cp.cuda.PinnedMemoryPointer):
            return True
        base = getattr(base, "obj", None) if isinstance(base, memoryview) else getattr(base, "base", None)
    return False


def in_pinned_memory(array: np.ndarray) -> bool:
    """Whether `array` views CuPy pinned memory (False while CuPy is not imported: then none exists)."""
    cp = sys.modules.get("cupy")
    return cp is not None and is_pinned(array, cp)


def pinned_empty(shape, dtype) -> np.ndarray:
    """A NumPy array in page-locked host memory from CuPy's pinned pool: the fastest source or target of copies."""
    cp = cupy_module()
    dtype = np.dtype(dtype)
    count = int(np.prod(shape, dtype=np.int64))
    memory = cp.cuda.alloc_pinned_memory(max(count * dtype.itemsize, 1))
    return np.frombuffer(memory, dtype, count).reshape(shape)


class _Staging:
    """A transfer step's pinned host buffer, reused each run once the copy that last read it has finished. Threads
    running the same plan share it: `lock` is held from the fill until the copy out of it is enqueued."""

    __slots__ = ("buffer", "done", "lock")

    def __init__(self):
        self.buffer, self.done, self.lock = None, None, threading.Lock()

    def fill(self, value: np.ndarray) -> np.ndarray:
        if self.done is not None:
            self.done.synchronize()   # the previous run's copy out of this buffer has finished
        if self.buffer is None or self.buffer.nbytes < value.nbytes:
            self.buffer = pinned_empty((value.nbytes,), np.uint8)
        view = self.buffer[:value.nbytes].view(value.dtype).reshape(value.shape)
        np.copyto(view, value)
        return view


def upload_kernel(state: DeviceState) -> Callable:
    """A host->GPU copy on `state`'s stream: from pinned memory as it is, else through a pinned staging buffer.

    Host-memory values (int32) stay on the host, as TF keeps them.
    """
    cp, cuda, stream, staging = state.cp, state.cuda, state.stream, _Staging()

    def upload(value):
        value = np.asarray(value)
        if value.dtype.kind not in "biufc" or on_host(_dtypes.as_dtype(value.dtype)):
            return value.copy()
        if not value.flags.c_contiguous:
            value = np.ascontiguousarray(value)
        with cuda, stream:
            out = cp.empty(value.shape, value.dtype)
            if is_pinned(value, cp):
                out.set(value, stream=stream)
                return out
            with staging.lock:
                out.set(staging.fill(value), stream=stream)
                staging.done = stream.record()
        return out
    return upload


def download_kernel(state: DeviceState) -> Callable:
    """A GPU->host copy into pinned memory, waiting for `state`'s stream only (not the whole device)."""
    cuda, stream = state.cuda, state.stream

    def download(value):
        if not is_device_array(value):
            return np.array(value, copy=True)
        with cuda, stream:
            if not value.flags.c_contiguous:
                value = value.copy()  # a view (a transpose) is packed on the GPU first
            out = pinned_empty(value.shape, value.dtype)
            value.get(stream=stream, out=out)   # blocking: synchronises this stream up to the copy
        return out
    return download


def peer_kernel(src: DeviceState, dst: DeviceState) -> Callable:
    """A GPU->GPU copy: the destination stream waits for the producer's event, then copies peer to peer."""
    cp = src.cp
    runtime = cp.cuda.runtime

    def peer_copy(value):
        if not is_device_array(value):
            return np.array(value, copy=True)
        with src.cuda, src.stream:
            if not value.flags.c_contiguous:
                value = value.copy()
            produced = src.stream.record()
        with dst.cuda, dst.stream:
            out = cp.empty(value.shape, value.dtype)
            dst.stream.wait_event(produced)
            runtime.memcpyPeerAsync(out.data.ptr, dst.device.physical_id, value.data.ptr, src.device.physical_id,
                                    value.nbytes, dst.stream.ptr)
            copied = dst.stream.record()
        src.stream.wait_event(copied)  # the source's memory is not handed to a later op before the copy has read it
        return out
    return peer_copy
