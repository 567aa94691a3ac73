"""A NumPy-backed stand-in for CuPy, so the CuPy backend (adplace/kernels/gpu.py) can be tested without a GPU.

``install()`` puts a fresh fake ``cupy`` (with ``cupy.cuda``, ``cupy.cuda.runtime``, ``cupy.cuda.memory``,
``cupy.cuda.compiler``, ``cupy.random`` and ``cupy._util``) into ``sys.modules``; ``uninstall()`` restores what
was there.  Everything runs eagerly on the host; the fake mimics CuPy v13/v14 *interfaces and refusals* (checked
against CuPy's sources) and records what a GPU would have done in ``cupy.fake_log``, a list of tuples:

    ("launch", name, device_id, stream_ptr)   a computation: ufunc, module function, array method, kernel, copy
    ("sync", kind, device_id, stream_ptr)     kind: "stream", "event", "device" (stream_ptr None), "get"
                                              (get/asnumpy), "item", "tolist", "bool", "int", "float", "complex",
                                              "repr", "str", "format" (implicit syncs) or "shape" (an operation
                                              whose output size depends on data: mask indexing, nonzero, unique...)
    ("memcpy", kind, nbytes, pinned, device_id, stream_ptr)   kind: "HtoD", "DtoH", "DtoD", "peer" (or "HtoH");
                                              pinned: the host side lies in cuda.alloc_pinned_memory memory;
                                              device_id: the device side (the destination for DtoD/peer)
    ("wait", stream_ptr, event_ptr)           Stream.wait_event
    ("record", stream_ptr, event_ptr)         Event.record / Stream.record

Fake-only extras: ``cupy.fake_log``, ``cupy.fake_pinned_used_bytes()`` (real CuPy's PinnedMemoryPool has only
malloc/free_all_blocks/n_free_blocks) and ``fake_cupy.FakeUnsupportedError``.

Strictness worth knowing: host ``numpy.ndarray`` operands/arguments/index arrays raise TypeError, implicit conversion
to NumPy raises TypeError, CuPy has no scalars (reductions give 0-d arrays), ``ElementwiseKernel`` parameter dtypes
must match exactly, ``empty`` memory is NaN/0xA5 garbage, the runtime memcpy functions reject freed or out-of-bounds
device pointers, a kernel reading another device's array warns ``cupy._util.PerformanceWarning`` (CuPy's automatic
peer access), and memory is accounted per device in a CuPy-like pool (blocks cached per stream arena).
Only names of CuPy v13's top level are served: NumPy-2-only names (``acos``, ``concat``, ``pow``, ``permute_dims``,
``astype``, ``cumulative_sum``, ...) raise AttributeError, and so do CuPy-13 names NumPy 2.4 no longer has
(``asfarray``, ``trapz``, ``in1d``, ``alltrue``, ``sometrue``, ``product``, ``cumproduct``, ``round_``, ``msort``,
``byte_bounds``).

Limits: no asynchrony (work is done at once; streams/events are only recorded), type promotion follows NumPy 2
(NEP 50), not CuPy 13's value-based rules for scalars; no ``cupy.linalg``/``fft``/``cupyx``/``mgrid``/``c_``;
Raw/Reduction kernels and ``fuse`` raise FakeUnsupportedError; ``ElementwiseKernel`` evaluates only the small CUDA C
subset described at ``ElementwiseKernel`` (anything else raises FakeUnsupportedError, real CUDA errors raise
``cupy.cuda.compiler.CompileException``); pool blocks are split but never merged again.
"""
from __future__ import annotations

import bisect
import ctypes
import gc
import itertools
import math
import re
import sys
import threading
import time
import types
import warnings
import weakref

import numpy as np

__all__ = ["install", "uninstall", "FakeUnsupportedError"]

UNIT = 512  # CuPy's allocation unit (memory pool and pinned pool round sizes up to it)
_DEV_BASE = 0x7F00_0000_0000_0000  # fake device addresses: above every user-space host address
_handles = itertools.count(0x1000, 0x10)  # stream/event handles: nonzero, never 1 or 2 (legacy/per-thread)
_S = None  # state of the current install
_saved = None


# --------------------------------------------------------------------------------------------- errors
class FakeUnsupportedError(NotImplementedError):
    """Valid CUDA/CuPy that the fake cannot evaluate (so it cannot pass silently)."""


class OutOfMemoryError(MemoryError):
    def __init__(self, size, total, limit=0):  # same text as cupy/cuda/memory.pyx
        self._size, self._total, self._limit = size, total, limit
        if limit == 0:
            msg = f"Out of memory allocating {size:,} bytes" + (f" (allocated so far: {total:,} bytes)." if total != -1 else "")
        else:
            msg = f"Out of memory allocating {size:,} bytes (allocated so far: {total:,} bytes, limit set to: {limit:,} bytes)."
        super().__init__(msg)

    def __reduce__(self):
        return (type(self), (self._size, self._total, self._limit))


_CUDA_ERRORS = {1: ("cudaErrorInvalidValue", "invalid argument"), 2: ("cudaErrorMemoryAllocation", "out of memory"),
                101: ("cudaErrorInvalidDevice", "invalid device ordinal"),
                400: ("cudaErrorInvalidResourceHandle", "invalid resource handle"),
                704: ("cudaErrorPeerAccessAlreadyEnabled", "peer access is already enabled")}


class CUDARuntimeError(RuntimeError):
    def __init__(self, status):
        self.status = status
        name, msg = _CUDA_ERRORS.get(status, ("cudaErrorUnknown", "unknown error"))
        super().__init__(f"{name}: {msg}")


class CompileException(Exception):
    def __init__(self, msg, source, name, options, backend="nvrtc"):
        self._msg, self.source, self.name, self.options, self.backend = msg, source, name, options, backend
        super().__init__()

    def __str__(self):
        return self._msg

    __repr__ = __str__


class PerformanceWarning(RuntimeWarning):
    pass


# ---------------------------------------------------------------------------------- state and threads
class _State:
    def __init__(self, n, total, name, cc):
        self.n, self.total, self.name, self.cc = n, total, name, tuple(cc)
        self.log, self.tls, self.lock = [], threading.local(), threading.RLock()
        self.next_addr = [_DEV_BASE + (d << 44) for d in range(n)]
        self.reserved = [0] * n  # bytes held by pools on each device (memGetInfo)
        self.mems, self.pinned, self.peer, self.random_states = {}, {}, set(), {}


def _tls():
    t = _S.tls
    if not hasattr(t, "device"):  # CuPy: current device per thread (CUDA), current stream per thread and device
        t.device, t.current, t.stacks, t.dev_stack = 0, [Stream.null] * _S.n, [[Stream.null] for _ in range(_S.n)], []
    return t


def _cur_dev():
    return _tls().device


def _check_dev(d):
    if not 0 <= d < _S.n:
        raise CUDARuntimeError(101)
    return d


def _set_device(d):
    _tls().device = _check_dev(int(d))


def _sp(stream=None, dev=None):
    return stream.ptr if stream is not None else _tls().current[_cur_dev() if dev is None else dev].ptr


def _launch(name):
    d = _cur_dev()
    _S.log.append(("launch", name, d, _sp(dev=d)))


def _sync(kind, d=None):
    d = _cur_dev() if d is None else d
    _S.log.append(("sync", kind, d, _sp(dev=d)))


# ------------------------------------------------------------------------------------------ devices
class Device:
    def __init__(self, device=None):
        self.id = _cur_dev() if device is None else int(device)
        self._device_stack = []

    def __int__(self):
        return self.id

    def __enter__(self):
        cur = _cur_dev()
        self._device_stack.append(cur)
        if self.id != cur:
            self.use()
        return self

    def __exit__(self, *exc):
        _set_device(self._device_stack.pop())

    def __repr__(self):
        return f"<CUDA Device {self.id}>"

    def __eq__(self, other):
        return isinstance(other, Device) and self.id == other.id

    __hash__ = None  # CuPy's Device defines __richcmp__ only (uncertain: stricter to be unhashable)

    def use(self):
        _set_device(self.id)

    def synchronize(self):
        with self:
            _S.log.append(("sync", "device", self.id, None))

    @property
    def compute_capability(self):
        _check_dev(self.id)
        return "%d%d" % _S.cc

    @property
    def mem_info(self):
        with self:
            return memGetInfo()


# ------------------------------------------------------------------------------------ streams/events
class _BaseStream:
    def __init__(self, ptr, device_id):
        self.ptr, self.device_id = ptr, device_id

    def __eq__(self, other):
        return isinstance(other, _BaseStream) and self.ptr == other.ptr

    def __hash__(self):
        return self.ptr

    def __repr__(self):
        return f"<{type(self).__name__} {self.ptr} (device {self.device_id})>"

    def _check(self):
        cur = _cur_dev()
        if self.device_id not in (-1, cur):
            raise RuntimeError(f"The device that the stream is created on ({self.device_id}) "
                               f"does not match with the current device ({cur})")
        return cur

    def _dev(self):
        return _cur_dev() if self.device_id == -1 else self.device_id

    def __enter__(self):
        t, d = _tls(), self._check()
        t.stacks[d].append(self)
        t.dev_stack.append(d)
        t.current[d] = self
        return self

    def __exit__(self, *exc):
        t = _tls()
        d = t.dev_stack.pop()
        t.stacks[d].pop()
        t.current[d] = t.stacks[d][-1]

    def use(self):
        _tls().current[self._check()] = self
        return self

    @property
    def done(self):
        return True

    def synchronize(self):
        _S.log.append(("sync", "stream", self._dev(), self.ptr))

    def record(self, event=None):
        event = Event() if event is None else event
        event.record(self)
        return event

    def wait_event(self, event):
        _S.log.append(("wait", self.ptr, event.ptr))


class Stream(_BaseStream):
    null = ptds = None

    def __init__(self, null=False, non_blocking=False, ptds=False):
        if null:
            super().__init__(0, -1)
        elif ptds:
            super().__init__(2, -1)
        else:
            super().__init__(next(_handles), _cur_dev())


class ExternalStream(_BaseStream):
    def __init__(self, ptr, device_id=-1):
        super().__init__(ptr, device_id)


Stream.null, Stream.ptds = Stream(null=True), Stream(ptds=True)


def get_current_stream(device_id=None):
    return _tls().current[_cur_dev() if device_id in (None, -1) else _check_dev(device_id)]


class Event:
    def __init__(self, block=False, disable_timing=False, interprocess=False):
        if interprocess and not disable_timing:
            raise ValueError("Timing must be disabled for interprocess events")
        self.ptr, self._timing, self._time, self._where = next(_handles), not disable_timing, None, (None, None)

    @property
    def done(self):
        return True

    def record(self, stream=None):
        d = _cur_dev() if stream is None else stream._dev()
        self._time, self._where = time.perf_counter(), (d, _sp(stream, d))
        _S.log.append(("record", self._where[1], self.ptr))

    def synchronize(self):
        _S.log.append(("sync", "event", *self._where))


def get_elapsed_time(start_event, end_event):
    if not (start_event._timing and end_event._timing) or start_event._time is None or end_event._time is None:
        raise CUDARuntimeError(400)
    return (end_event._time - start_event._time) * 1e3


# ------------------------------------------------------------------------------------------- memory
class _Memory:
    """One device allocation: a host NumPy byte buffer standing behind a fake device address."""

    def __init__(self, size, device_id, release=None):
        self.size, self.device_id, self.ptr = size, device_id, 0
        self.buf = np.empty(size, np.uint8)
        self.addr = self.buf.ctypes.data
        if size:
            with _S.lock:
                self.ptr = _S.next_addr[device_id]
                _S.next_addr[device_id] += size + UNIT  # a gap: overruns do not land in a neighbour
            _S.mems[self.ptr] = weakref.ref(self)
            weakref.finalize(self, _forget, _S, self.ptr, release)


def _forget(st, ptr, release):
    st.mems.pop(ptr, None)
    if release is not None:
        release()


class MemoryPointer:
    def __init__(self, mem, offset):
        self.mem, self.ptr, self.device_id = mem, mem.ptr + offset, mem.device_id

    @property
    def device(self):
        return Device(self.device_id)

    def __int__(self):
        return self.ptr

    def __repr__(self):
        return f"<MemoryPointer 0x{self.ptr:x} device={self.device_id}>"

    def __add__(self, offset):
        return MemoryPointer(self.mem, self.ptr - self.mem.ptr + offset)

    __radd__ = __add__

    def __sub__(self, offset):
        return self + -offset

    # the synchronous variants use the legacy default stream (ptr 0), as CuPy documents
    def copy_from_device(self, src, size):
        _memcpy(self.ptr, src.ptr, size, 4, 0)

    def copy_from_device_async(self, src, size, stream=None):
        _memcpy(self.ptr, src.ptr, size, 4, _sp(stream))

    def copy_from_host(self, mem, size):
        _memcpy(self.ptr, _host_ptr(mem), size, 1, 0)

    def copy_from_host_async(self, mem, size, stream=None):
        _memcpy(self.ptr, _host_ptr(mem), size, 1, _sp(stream))

    def copy_to_host(self, mem, size):
        _memcpy(_host_ptr(mem), self.ptr, size, 2, 0)

    def copy_to_host_async(self, mem, size, stream=None):
        _memcpy(_host_ptr(mem), self.ptr, size, 2, _sp(stream))

    def copy_from(self, mem, size):
        (self.copy_from_device if isinstance(mem, MemoryPointer) else self.copy_from_host)(mem, size)

    def copy_from_async(self, mem, size, stream=None):
        f = self.copy_from_device_async if isinstance(mem, MemoryPointer) else self.copy_from_host_async
        f(mem, size, stream)

    def memset_async(self, value, size, stream=None):
        if size:
            ctypes.memset(_resolve(self.ptr, size)[0], value, size)
            _S.log.append(("launch", "memset", self.device_id, _sp(stream)))

    def memset(self, value, size):
        self.memset_async(value, size, Stream.null)


def _host_ptr(mem):
    return mem if isinstance(mem, int) else mem.value


def _resolve(ptr, size):
    """(host address, device id or None, pinned) of `size` bytes at a fake device or real host pointer."""
    if ptr >= _DEV_BASE:
        for start, ref in list(_S.mems.items()):
            m = ref()
            if m is not None and start <= ptr and ptr + size <= start + m.size:
                return m.addr + ptr - start, m.device_id, False
        raise CUDARuntimeError(1)  # not (or no longer) a live allocation, or out of its bounds
    return ptr, None, any(s <= ptr and ptr + size <= e for s, e in list(_S.pinned.values()))


def _memcpy(dst, src, size, kind, stream):
    if not size:
        return
    (rd, dd, dpin), (rs, sd, spin) = _resolve(dst, size), _resolve(src, size)
    expect = {0: (False, False), 1: (True, False), 2: (False, True), 3: (True, True)}.get(kind)
    if expect is not None and expect != (dd is not None, sd is not None):
        raise CUDARuntimeError(1)  # stricter than UVA-era CUDA: the kind must match the pointers
    ctypes.memmove(rd, rs, size)
    if dd is None and sd is None:
        ev = ("HtoH", False, _cur_dev())
    elif dd is None:
        ev = ("DtoH", dpin, sd)
    elif sd is None:
        ev = ("HtoD", spin, dd)
    else:
        ev = ("DtoD" if dd == sd else "peer", False, dd)
    _S.log.append(("memcpy", ev[0], size, ev[1], ev[2], stream))


class _DevicePool:
    """CuPy's SingleDeviceMemoryPool: best-fit reuse of cached blocks per stream arena, blocks split (not merged)."""

    def __init__(self, dev):
        self.dev, self.limit, self.total, self.used, self.free, self.pending = dev, 0, 0, 0, {}, []

    def _drain(self):  # frees arrive from finalizers as (arena, size) appends, which are atomic
        while self.pending:
            arena, size = self.pending.pop()
            self.used -= size
            bisect.insort(self.free.setdefault(arena, []), size)

    def malloc(self, size):
        if size == 0:
            return MemoryPointer(_Memory(0, self.dev), 0)
        size = -(-size // UNIT) * UNIT
        with _S.lock:
            self._drain()
            arena = _sp(dev=self.dev)
            blocks = self.free.setdefault(arena, [])
            i = bisect.bisect_left(blocks, size)
            if i < len(blocks):
                rest = blocks.pop(i) - size
                if rest:
                    bisect.insort(blocks, rest)
            else:
                self._grow(size)
            self.used += size
        pending = self.pending
        return MemoryPointer(_Memory(size, self.dev, lambda: pending.append((arena, size))), 0)

    def _grow(self, size):
        if self.limit and size > self.limit:
            raise OutOfMemoryError(size, self.total, self.limit)
        for attempt in range(3):  # as CuPy: try, free cached blocks and retry, gc.collect and retry
            if attempt == 2:
                gc.collect()
            if attempt:
                self.free_all_blocks()
            if (not self.limit or self.total + size <= self.limit) and _S.reserved[self.dev] + size <= _S.total:
                self.total += size
                _S.reserved[self.dev] += size
                return
        raise OutOfMemoryError(size, self.total, self.limit)

    def free_all_blocks(self, stream=None):
        with _S.lock:
            self._drain()
            arenas = list(self.free) if stream is None else [stream.ptr]
            freed = sum(sum(self.free.pop(a, [])) for a in arenas)
            self.total -= freed
            _S.reserved[self.dev] -= freed


class MemoryPool:
    def __init__(self, allocator=None):
        self._pools = {}

    def device_pool(self):
        d = _cur_dev()
        if d not in self._pools:
            self._pools[d] = _DevicePool(d)
        return self._pools[d]

    def malloc(self, size):
        return self.device_pool().malloc(size)

    def free_all_blocks(self, stream=None):
        self.device_pool().free_all_blocks(stream)

    def n_free_blocks(self):
        p = self.device_pool()
        with _S.lock:
            p._drain()
            return sum(len(b) for b in p.free.values())

    def used_bytes(self):
        p = self.device_pool()
        with _S.lock:
            p._drain()
            return p.used

    def total_bytes(self):
        return self.device_pool().total

    def free_bytes(self):
        return self.total_bytes() - self.used_bytes()

    def set_limit(self, size=None, fraction=None):  # for the CURRENT device, as CuPy
        if size is None:
            if fraction is not None:
                if not 0 <= fraction <= 1:
                    raise ValueError(f"memory limit fraction out of range: {fraction}")
                size = fraction * memGetInfo()[1]
            return self.set_limit(size=0 if size is None else size)
        if fraction is not None:
            raise ValueError("size and fraction cannot be specified at one time")
        if size < 0:
            raise ValueError(f"memory limit size out of range: {size}")
        self.device_pool().limit = int(size)

    def get_limit(self):
        return self.device_pool().limit


class PinnedMemoryPointer(bytearray):
    """Pinned host memory; ``numpy.frombuffer(mem, dtype, count)`` views it as in CuPy's docs (its length is the
    size rounded up to 512, hence the count). Do not resize it."""

    def __init__(self, size):
        super().__init__(size)
        self.mem = self
        self.ptr = np.frombuffer(self, np.uint8).ctypes.data if size else 0

    def size(self):
        return len(self)

    def __int__(self):
        return self.ptr

    __hash__ = object.__hash__


class PinnedMemoryPool:
    def __init__(self, allocator=None):
        self._free, self._pending, self._used = [], [], 0

    def _drain(self):
        while self._pending:
            size = self._pending.pop()
            self._used -= size
            bisect.insort(self._free, size)

    def malloc(self, size):
        if size == 0:
            return PinnedMemoryPointer(0)
        size = -(-size // UNIT) * UNIT
        with _S.lock:
            self._drain()
            i = bisect.bisect_left(self._free, size)
            if i < len(self._free):
                rest = self._free.pop(i) - size
                if rest:
                    bisect.insort(self._free, rest)
            self._used += size
        mem = PinnedMemoryPointer(size)
        _S.pinned[id(mem)] = (mem.ptr, mem.ptr + size)
        weakref.finalize(mem, _forget_pinned, _S, id(mem), self._pending, size)
        return mem

    def free_all_blocks(self):
        with _S.lock:
            self._drain()
            self._free.clear()

    def n_free_blocks(self):
        with _S.lock:
            self._drain()
            return len(self._free)


def _forget_pinned(st, key, pending, size):
    st.pinned.pop(key, None)
    pending.append(size)


def alloc_pinned_memory(size):
    return _S.pinned_pool.malloc(size)


def _is_pinned(a):
    if not isinstance(a, np.ndarray) or not a.size:
        return False
    p = a.__array_interface__["data"][0]
    return any(s <= p < e for s, e in list(_S.pinned.values()))


# ------------------------------------------------------------------------------------------ runtime
def memGetInfo():
    return _S.total - _S.reserved[_cur_dev()], _S.total


def _device_properties(device):
    _check_dev(device)
    return {"name": _S.name.encode(), "totalGlobalMem": _S.total, "multiProcessorCount": 132, "major": _S.cc[0],
            "minor": _S.cc[1], "warpSize": 32, "maxThreadsPerBlock": 1024, "clockRate": 1980000,
            "sharedMemPerBlock": 49152, "pciBusID": device + 1, "pciDeviceID": 0, "pciDomainID": 0,
            "integrated": 0, "unifiedAddressing": 1, "concurrentKernels": 1}


def _enable_peer_access(peerDevice):
    cur = _cur_dev()
    if _check_dev(peerDevice) == cur:
        raise CUDARuntimeError(101)
    if (cur, peerDevice) in _S.peer:
        raise CUDARuntimeError(704)
    _S.peer.add((cur, peerDevice))


def _memcpy_peer(dst, dstDevice, src, srcDevice, size, stream=0):  # memcpyPeer and memcpyPeerAsync
    if size and (_resolve(dst, size)[1] != dstDevice or _resolve(src, size)[1] != srcDevice):
        raise CUDARuntimeError(1)
    _memcpy(dst, src, size, 4, stream)


def _runtime_module():
    return _submodule(
        "cupy.cuda.runtime", CUDARuntimeError=CUDARuntimeError, is_hip=False, _is_hip_environment=False,
        memcpyHostToHost=0, memcpyHostToDevice=1, memcpyDeviceToHost=2, memcpyDeviceToDevice=3, memcpyDefault=4,
        streamLegacy=1, streamPerThread=2, errorInvalidValue=1, errorMemoryAllocation=2,
        getDeviceCount=lambda: _S.n, getDevice=_cur_dev, setDevice=_set_device, memGetInfo=memGetInfo,
        getDeviceProperties=_device_properties, deviceEnablePeerAccess=_enable_peer_access,
        deviceCanAccessPeer=lambda device, peerDevice: int(_check_dev(device) != _check_dev(peerDevice)),
        deviceSynchronize=lambda: _S.log.append(("sync", "device", _cur_dev(), None)),
        streamSynchronize=lambda stream: _S.log.append(("sync", "stream", _cur_dev(), stream)),
        memcpy=lambda dst, src, size, kind: _memcpy(dst, src, size, kind, 0), memcpyAsync=_memcpy,
        memcpyPeer=_memcpy_peer, memcpyPeerAsync=_memcpy_peer,
        runtimeGetVersion=lambda: 12080, driverGetVersion=lambda: 12080)


# ------------------------------------------------------------------------------------------ arrays
def _check_dtype(dtype):
    dt = np.dtype(dtype)
    if dt.kind not in "biufc" or not dt.isnative:
        raise ValueError(f"Unsupported dtype {dt}")
    return dt


def _is_scalar(x):
    return isinstance(x, (bool, int, float, complex)) or isinstance(x, np.generic) and x.dtype.kind in "biufc"


def _check_arg(x):
    if isinstance(x, np.ndarray) or not (isinstance(x, ndarray) or _is_scalar(x)):
        raise TypeError(f"Unsupported type {type(x)}")


def _alloc(shape, dtype, order="C"):
    dtype = _check_dtype(dtype)
    shape = (int(shape),) if np.ndim(shape) == 0 else tuple(int(s) for s in shape)
    mem = _S.pool.malloc(math.prod(shape) * dtype.itemsize).mem
    return ndarray._view(np.ndarray(shape, dtype, buffer=mem.buf, order=order), mem, None)


def _from_host(h):
    h = np.asarray(h)
    a = _alloc(h.shape, h.dtype, "F" if h.flags.f_contiguous and not h.flags.c_contiguous else "C")
    np.copyto(a._array, h)
    return a


def _garbage(a):
    if a.dtype.kind in "fc":
        a.fill(np.nan)
    else:
        a.view(np.uint8).fill(0xA5) if a.flags.c_contiguous else a.fill(0)


def _peer_copy(a):
    new = _alloc(a.shape, a.dtype)
    new._array[...] = a._array
    _S.log.append(("memcpy", "peer", a.nbytes, False, _cur_dev(), _sp()))
    return new


class _Op:
    """One fake-GPU operation: unwraps fake arrays, refuses host arrays, wraps results (a result inside an input's
    allocation becomes a view of it), logs the launch and warns when a launch reads another device's array."""

    def __init__(self, name, force=False, host_ok=False, quiet=False):
        self.name, self.force, self.host_ok, self.quiet = name, force, host_ok, quiet
        self.dev, self.fakes, self.ident, self.new = _cur_dev(), [], {}, 0

    def unwrap(self, x):
        if isinstance(x, ndarray):
            self.fakes.append(x)
            self.ident[id(x._array)] = x
            return x._array
        if isinstance(x, np.ndarray) and not self.host_ok:
            raise TypeError(f"Unsupported type {type(x)}")
        if type(x) in (list, tuple):
            return type(x)(self.unwrap(v) for v in x)
        if type(x) is dict:
            return {k: self.unwrap(v) for k, v in x.items()}
        return x

    def wrap(self, r):
        if isinstance(r, np.ndarray):
            hit = self.ident.get(id(r))
            if hit is not None and hit._array is r:
                return hit
            if r.size:
                p = r.__array_interface__["data"][0]
                for f in self.fakes:  # a result inside an input's allocation is a view of it
                    if f._mem.size and f._mem.addr <= p < f._mem.addr + f._mem.size:
                        return ndarray._view(r, f._mem, f if f.base is None else f.base)
            self.new += 1
            return _from_host(r)
        if isinstance(r, np.generic):  # CuPy has no scalars
            self.new += 1
            return _from_host(np.asarray(r))
        if isinstance(r, (list, tuple)):
            return (type(r) if type(r) in (list, tuple) else tuple)(self.wrap(v) for v in r)
        return r

    def finish(self, r):
        out = self.wrap(r)
        if not self.quiet and (self.force or self.new or r is None):
            self.launch()
        return out

    def launch(self):
        for d in sorted({f._mem.device_id for f in self.fakes} - {self.dev}):  # what CuPy's kernels do
            warnings.warn(f"The device where the array resides ({d}) is different from the current device "
                          f"({self.dev}). Peer access has been activated automatically.", PerformanceWarning,
                          stacklevel=4)
        _launch(self.name)


class _Flags:
    def __init__(self, a):
        f = a._array.flags
        self.c_contiguous, self.f_contiguous, self.owndata = f.c_contiguous, f.f_contiguous, a.base is None

    def __getitem__(self, key):
        return getattr(self, {"C_CONTIGUOUS": "c_contiguous", "F_CONTIGUOUS": "f_contiguous"}.get(key, key).lower())


_METHODS = set("all any argmax argmin argpartition argsort choose clip compress conj conjugate cumprod cumsum diagonal "
               "dot fill flatten max mean min nonzero partition prod ptp put ravel repeat reshape round searchsorted "
               "sort squeeze std sum swapaxes take trace transpose var view".split())
_SHAPE_SYNC = {"nonzero", "argwhere", "flatnonzero", "unique", "extract", "compress"}


def _binop(name, reflected=False, inplace=False):
    def op(self, other):
        if isinstance(other, np.ndarray):
            raise TypeError(f"Unsupported type {type(other)}")
        if inplace:
            return _FUNCS[name](self, other, out=self)
        if not (isinstance(other, ndarray) or _is_scalar(other)):
            return NotImplemented
        return _FUNCS[name](other, self) if reflected else _FUNCS[name](self, other)
    return op


class ndarray:
    """Fake ``cupy.ndarray``: a NumPy view (``_array``) into a pool allocation (``_mem``) of one fake device."""

    __array_priority__ = 100
    __hash__ = None

    def __init__(self, shape, dtype=float, memptr=None, strides=None, order="C"):
        if memptr is None:
            a = _alloc(shape, dtype, order)
            _garbage(a._array)
            self._array, self._mem = a._array, a._mem
        else:
            shape = (shape,) if np.ndim(shape) == 0 else tuple(shape)
            self._array = np.ndarray(shape, _check_dtype(dtype), buffer=memptr.mem.buf,
                                     offset=memptr.ptr - memptr.mem.ptr, strides=strides, order=order)
            self._mem = memptr.mem
        self.base = None

    @classmethod
    def _view(cls, arr, mem, base):
        self = cls.__new__(cls)
        self._array, self._mem, self.base = arr, mem, base
        return self

    def __getattr__(self, name):
        if name not in _METHODS:
            raise AttributeError(f"'cupy.ndarray' object has no attribute '{name}'")
        impl = getattr(np.ndarray, name, None) or getattr(np, name)

        def method(*args, **kwargs):
            op = _Op(name, force=kwargs.get("out") is not None)
            me, a, k = op.unwrap(self), op.unwrap(args), op.unwrap(kwargs)
            with np.errstate(all="ignore"):
                r = op.finish(impl(me, *a, **k))
            if name in _SHAPE_SYNC:
                _sync("shape")
            return r
        method.__name__ = name
        return method

    # attributes
    shape = property(lambda self: self._array.shape)
    dtype = property(lambda self: self._array.dtype)
    ndim = property(lambda self: self._array.ndim)
    size = property(lambda self: self._array.size)
    nbytes = property(lambda self: self._array.nbytes)
    itemsize = property(lambda self: self._array.itemsize)
    strides = property(lambda self: self._array.strides)
    flags = property(_Flags)
    device = property(lambda self: Device(self._mem.device_id))

    @shape.setter
    def shape(self, value):
        self._array.shape = value

    @property
    def T(self):
        return self if self.ndim < 2 else ndarray._view(self._array.T, self._mem, self if self.base is None else self.base)

    @property
    def mT(self):
        if self.ndim < 2:
            raise ValueError("matrix transpose with ndim < 2 is undefined")
        return self.swapaxes(-1, -2)

    @property
    def real(self):
        return _Op("real").finish(self._array.real) if self.dtype.kind == "c" else self

    @property
    def imag(self):
        return _Op("imag").finish(self._array.imag)

    @property
    def data(self):
        off = self._array.__array_interface__["data"][0] - self._mem.addr if self._mem.size else 0
        return MemoryPointer(self._mem, off)

    @property
    def __cuda_array_interface__(self):
        sp = _sp()
        return {"shape": self.shape, "typestr": self.dtype.str, "descr": self.dtype.descr, "stream": sp or 1,
                "version": 3, "strides": None if self._array.flags.c_contiguous else self.strides,
                "data": (self.data.ptr if self.size else 0, False)}

    # transfers
    def get(self, stream=None, order="C", out=None, blocking=True):
        return self._download(stream, order, out, blocking, "get")

    def _download(self, stream, order, out, blocking, kind):
        d, sp = self._mem.device_id, _sp(stream)
        if out is not None:
            if not isinstance(out, np.ndarray):
                raise TypeError("Only numpy.ndarray can be obtained fromcupy.ndarray")
            if out.dtype != self.dtype:
                raise TypeError(f"{out.dtype} array cannot be obtained from {self.dtype} array")
            if out.shape != self.shape:
                raise ValueError(f"Shape mismatch. Expected shape: {self.shape}, actual shape: {out.shape}")
            if not (out.flags.c_contiguous or out.flags.f_contiguous):
                raise RuntimeError("`out` cannot be specified when copying to non-contiguous ndarray")
            layout = "C" if out.flags.c_contiguous else "F"
            out[...] = self._array
            host = out
        else:
            if self.size == 0:
                return np.ndarray(self.shape, dtype=self.dtype)
            layout = order.upper()
            if layout == "A":
                layout = "F" if self._array.flags.f_contiguous else "C"
            if layout not in ("C", "F"):
                raise ValueError(f"unsupported order: {order}")
            host = np.array(self._array, order=layout, copy=True)
        if not self._array.flags[layout + "_CONTIGUOUS"]:
            _S.log.append(("launch", "copy", d, sp))  # CuPy first makes a contiguous copy on the device
        _S.log.append(("memcpy", "DtoH", self.nbytes, _is_pinned(host), d, sp))
        if blocking:
            _S.log.append(("sync", kind, d, sp))
        return host

    def set(self, arr, stream=None):
        if not isinstance(arr, np.ndarray):
            raise TypeError("Only numpy.ndarray can be set to cupy.ndarray")
        if self.dtype != arr.dtype:
            raise TypeError(f"{arr.dtype} array cannot be set to {self.dtype} array")
        if self.shape != arr.shape:
            raise ValueError(f"Shape mismatch. Old shape: {self.shape}, new shape: {arr.shape}")
        if not (self._array.flags.c_contiguous or self._array.flags.f_contiguous):
            raise RuntimeError("Cannot set to non-contiguous array")
        self._array[...] = arr
        _S.log.append(("memcpy", "HtoD", self.nbytes, _is_pinned(arr), self._mem.device_id, _sp(stream)))

    def copy(self, order="C"):
        if self._mem.device_id != _cur_dev():  # CuPy copies onto the current device
            return _peer_copy(self)
        op = _Op("copy", force=True)
        return op.finish(np.array(op.unwrap(self), order=order, copy=True))

    def astype(self, dtype, order="K", casting=None, subok=None, copy=True):
        if casting is not None:
            raise TypeError("casting is not supported yet")
        if subok is not None:
            raise TypeError("subok is not supported yet")
        dt = _check_dtype(dtype)
        if dt == self.dtype and not copy:  # CuPy's public astype: copy=False never raises, it copies if it must
            return self
        op = _Op("astype", force=True)
        with np.errstate(all="ignore"):
            return op.finish(op.unwrap(self).astype(dt, order=order))

    def item(self):
        if self.size != 1:
            raise ValueError("can only convert an array of size 1 to a Python scalar")
        return self._download(None, "C", None, True, "item").item()

    def tolist(self):
        return self._download(None, "C", None, True, "tolist").tolist()

    def tobytes(self, order="C"):
        return self._download(None, "C", None, True, "get").tobytes(order)

    # conversions: all implicit syncs, as in CuPy (which has no __index__)
    def __array__(self, dtype=None, copy=None):
        raise TypeError("Implicit conversion to a NumPy array is not allowed. "
                        "Please use `.get()` to construct a NumPy array explicitly.")

    def __bool__(self):
        if self.size == 0:
            warnings.warn("The truth value of an empty array is ambiguous. Returning False, but in future this will "
                          "result in an error. Use `array.size > 0` to check that an array is not empty.",
                          DeprecationWarning, stacklevel=2)
            return False
        if self.size > 1:
            raise ValueError("The truth value of an array with more than one element is ambiguous. "
                             "Use a.any() or a.all()")
        return bool(self._download(None, "C", None, True, "bool"))

    def __int__(self):
        return int(self._download(None, "C", None, True, "int"))

    def __float__(self):
        return float(self._download(None, "C", None, True, "float"))

    def __complex__(self):
        return complex(self._download(None, "C", None, True, "complex"))

    def __repr__(self):
        return repr(self._download(None, "C", None, True, "repr"))

    def __str__(self):
        return str(self._download(None, "C", None, True, "str"))

    def __format__(self, spec):
        return format(self._download(None, "C", None, True, "format"), spec)

    def __copy__(self):
        return self.copy()

    def __deepcopy__(self, memo):
        with Device(self._mem.device_id):
            return self.copy()

    # containers
    def __len__(self):
        if self.ndim == 0:
            raise TypeError("len() of unsized object")
        return self.shape[0]

    def __iter__(self):
        if self.ndim == 0:
            raise TypeError("iteration over a 0-d array")
        return (self[i] for i in range(self.shape[0]))

    def _key(self, key, op):
        keys = key if isinstance(key, tuple) else (key,)
        for k in keys:
            if isinstance(k, np.ndarray):  # uncertain in CuPy: stricter to refuse host index arrays
                raise TypeError(f"Unsupported type {type(k)}")
        k = op.unwrap(key)
        mask = any(isinstance(v, np.ndarray) and v.dtype == bool for v in (k if isinstance(k, tuple) else (k,)))
        return k, mask

    def __getitem__(self, key):
        op = _Op("getitem")
        arr, (k, mask) = op.unwrap(self), self._key(key, op)
        r = arr[k]
        if isinstance(r, np.generic):  # CuPy gives a 0-d view
            r = arr[(k if isinstance(k, tuple) else (k,)) + (Ellipsis,)]
        r = op.finish(r)
        if mask:
            _sync("shape")
        return r

    def __setitem__(self, key, value):
        _check_arg(value)
        op = _Op("setitem", force=True)
        arr, (k, _) = op.unwrap(self), self._key(key, op)
        with np.errstate(all="ignore"):
            arr[k] = op.unwrap(value)
        op.finish(None)

    # NumPy interoperability
    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        f = _FUNCS.get(ufunc.__name__)
        if f is None:
            return NotImplemented
        outs = kwargs.get("out", ())
        if outs:
            if len(outs) != 1:
                raise ValueError("The 'out' parameter must have exactly one array value")
            kwargs["out"] = outs[0]
        for x in inputs + tuple(outs):
            if not (isinstance(x, (ndarray, np.ndarray)) or _is_scalar(x)):
                return NotImplemented
        if method == "__call__":
            return f(*inputs, **kwargs)
        if method in ("outer", "at", "reduce", "accumulate", "reduceat") and hasattr(f, method):
            return getattr(f, method)(*inputs, **kwargs)
        return NotImplemented

    def __array_function__(self, func, types, args, kwargs):
        impl = _FUNCS.get(func.__name__)
        if func.__module__ != "numpy" or impl is None:
            return NotImplemented
        if not all(issubclass(t, (ndarray, np.ndarray)) for t in types):
            return NotImplemented
        return impl(*args, **kwargs)

    # operators
    __add__, __radd__, __iadd__ = _binop("add"), _binop("add", True), _binop("add", inplace=True)
    __sub__, __rsub__, __isub__ = _binop("subtract"), _binop("subtract", True), _binop("subtract", inplace=True)
    __mul__, __rmul__, __imul__ = _binop("multiply"), _binop("multiply", True), _binop("multiply", inplace=True)
    __truediv__, __rtruediv__ = _binop("true_divide"), _binop("true_divide", True)
    __itruediv__ = _binop("true_divide", inplace=True)
    __floordiv__, __rfloordiv__ = _binop("floor_divide"), _binop("floor_divide", True)
    __ifloordiv__ = _binop("floor_divide", inplace=True)
    __mod__, __rmod__, __imod__ = _binop("remainder"), _binop("remainder", True), _binop("remainder", inplace=True)
    __pow__, __rpow__, __ipow__ = _binop("power"), _binop("power", True), _binop("power", inplace=True)
    __divmod__, __rdivmod__ = _binop("divmod"), _binop("divmod", True)
    __matmul__, __rmatmul__ = _binop("matmul"), _binop("matmul", True)
    __and__, __rand__, __iand__ = _binop("bitwise_and"), _binop("bitwise_and", True), _binop("bitwise_and", inplace=True)
    __or__, __ror__, __ior__ = _binop("bitwise_or"), _binop("bitwise_or", True), _binop("bitwise_or", inplace=True)
    __xor__, __rxor__, __ixor__ = _binop("bitwise_xor"), _binop("bitwise_xor", True), _binop("bitwise_xor", inplace=True)
    __lshift__, __rshift__ = _binop("left_shift"), _binop("right_shift")
    __lt__, __le__, __gt__, __ge__ = _binop("less"), _binop("less_equal"), _binop("greater"), _binop("greater_equal")

    def __eq__(self, other):  # CuPy: None and objects without __eq__ compare unequal; other non-arrays raise
        if other is None or type(other).__eq__ is object.__eq__:
            return _FUNCS["zeros"](self.shape, dtype=bool)
        _check_arg(other)
        return _FUNCS["equal"](self, other)

    def __ne__(self, other):
        if other is None or type(other).__eq__ is object.__eq__:
            return _FUNCS["ones"](self.shape, dtype=bool)
        _check_arg(other)
        return _FUNCS["not_equal"](self, other)

    def __neg__(self):
        return _FUNCS["negative"](self)

    def __pos__(self):
        return _FUNCS["positive"](self)

    def __abs__(self):
        return _FUNCS["absolute"](self)

    def __invert__(self):
        return _FUNCS["invert"](self)


# ----------------------------------------------------------------------------------- module functions
class ufunc:
    def __init__(self, npu):
        self._np, self.__name__, self.name = npu, npu.__name__, "cupy_" + npu.__name__
        self.nin, self.nout, self.nargs = npu.nin, npu.nout, npu.nargs

    def __repr__(self):
        return f"<ufunc '{self.name}'>"

    def __call__(self, *args, out=None, dtype=None, casting="same_kind", **kwargs):
        if kwargs:  # CuPy's ufuncs accept out, dtype and casting only
            raise TypeError(f"Wrong arguments {kwargs}")
        if not self.nin <= len(args) <= self.nargs:
            raise TypeError(f"Wrong number of arguments for {self.name!r}. It must be either {self.nin} or "
                            f"{self.nargs} (with outputs), but given {len(args)}.")
        ins, outs = args[:self.nin], args[self.nin:]
        if out is not None:
            if outs:
                raise ValueError("Cannot specify 'out' as both a positional and keyword argument")
            outs = out if isinstance(out, tuple) else (out,)
        for x in ins:
            _check_arg(x)
        if any(o is not None and not isinstance(o, ndarray) for o in outs):
            raise TypeError("Output arguments type must be cupy.ndarray")
        op = _Op(self.__name__, force=True)
        a, o = op.unwrap(tuple(ins)), op.unwrap(tuple(outs))
        kw = {"casting": casting, "dtype": dtype}
        if o:
            kw["out"] = o + (None,) * (self.nout - len(o))
        with np.errstate(all="ignore"):
            return op.finish(self._np(*a, **kw))

    def _only(self, method, allowed):
        if self.__name__ not in allowed:
            raise NotImplementedError(f"`{self.name}.{method}` is not supported yet")

    def reduce(self, array, axis=0, dtype=None, out=None, keepdims=False):
        self._only("reduce", ("add", "multiply"))
        return (array.sum if self.__name__ == "add" else array.prod)(axis=axis, dtype=dtype, out=out, keepdims=keepdims)

    def accumulate(self, array, axis=0, dtype=None, out=None):
        self._only("accumulate", ("add", "multiply"))
        return (array.cumsum if self.__name__ == "add" else array.cumprod)(axis=axis, dtype=dtype, out=out)

    def reduceat(self, array, indices, axis=0, dtype=None, out=None):
        self._only("reduceat", ("add",))
        op = _Op("add_reduceat", force=True)
        return op.finish(np.add.reduceat(op.unwrap(array), op.unwrap(indices), axis, dtype, op.unwrap(out)))

    def outer(self, A, B, **kwargs):
        return self(A.reshape(A.shape + (1,) * B.ndim), B.reshape((1,) * A.ndim + B.shape), **kwargs)

    def at(self, a, indices, b=None):
        self._only("at", ("add", "subtract", "maximum", "minimum", "bitwise_and", "bitwise_or", "bitwise_xor"))
        supported = _AT_DTYPES.get(self.__name__)
        if supported is not None and a.dtype.char not in supported:  # CUDA has no atomic for the rest
            names = ", ".join(np.dtype(c).name for c in supported)
            raise TypeError(f"cupy.{self.__name__}.at only supports {names}, as data type")
        op = _Op(self.__name__ + "_at", force=True)
        values = op.unwrap(b)
        if self.__name__ in ("maximum", "minimum") and a.dtype == np.float64:  # as CuPy 14.2 does on an H200
            values = np.asarray(values).astype(np.float32).astype(np.float64)
        self._np.at(op.unwrap(a), op.unwrap(indices), values)
        op.finish(None)


# The dtypes CuPy's ufunc.at takes (its atomics; CuPy's scatter tests and error messages), by ufunc. It takes float64
# for maximum and minimum but (seen on an H200, CuPy 14.2, 2026-11-26) rounds the values through float32 first.
_AT_DTYPES = {"add": "iILQefd", "subtract": "iI", "maximum": "iILQfd", "minimum": "iILQfd"}


# Top-level names of CuPy v13's cupy/__init__.py (routines only); served where NumPy 2 still has them.
_CUPY_NAMES = """
empty_like eye full full_like identity ones ones_like zeros zeros_like copy ascontiguousarray fromfile fromfunction
fromiter frombuffer fromstring loadtxt genfromtxt arange linspace logspace meshgrid diag diagflat tri tril triu vander
piecewise vectorize apply_along_axis put_along_axis copyto shape ravel reshape moveaxis rollaxis swapaxes transpose
atleast_1d atleast_2d atleast_3d broadcast_arrays broadcast_to expand_dims squeeze column_stack concatenate
dstack hstack stack vstack row_stack asarray_chkfinite asfarray asfortranarray require array_split dsplit hsplit split
vsplit repeat tile delete append resize unique trim_zeros flip fliplr flipud roll rot90 bitwise_and bitwise_or
bitwise_xor bitwise_not invert left_shift right_shift packbits unpackbits binary_repr can_cast common_type result_type
min_scalar_type indices ix_ mask_indices tril_indices tril_indices_from triu_indices triu_indices_from
ravel_multi_index unravel_index choose compress diagonal extract select take take_along_axis place put putmask
fill_diagonal diag_indices diag_indices_from load save savez savez_compressed array_repr array_str array2string
format_float_positional format_float_scientific savetxt base_repr einsum cross dot inner kron matmul outer tensordot
vdot trace allclose array_equal array_equiv isclose isfinite isinf isnan isneginf isposinf iscomplex iscomplexobj
isfortran isreal isrealobj in1d intersect1d isin setdiff1d setxor1d union1d isscalar logical_and logical_not logical_or
logical_xor equal greater greater_equal less less_equal not_equal all alltrue any sometrue poly polyadd polysub polymul
polyfit polyval roots arccos arcsin arctan arctan2 cos deg2rad degrees hypot rad2deg radians sin tan unwrap arccosh
arcsinh arctanh cosh sinh tanh around ceil fix floor rint round round_ trunc prod product sum cumprod cumproduct cumsum
ediff1d nancumprod nancumsum nansum nanprod diff gradient trapz bartlett blackman hamming hanning kaiser exp exp2 expm1
log log10 log1p log2 logaddexp logaddexp2 i0 sinc copysign frexp ldexp nextafter signbit gcd lcm add divide divmod
floor_divide float_power fmod modf multiply negative positive power reciprocal remainder mod subtract true_divide angle
conj conjugate imag real abs absolute cbrt clip fabs fmax fmin interp maximum minimum nan_to_num real_if_close sign
heaviside sqrt square convolve byte_bounds may_share_memory shares_memory pad count_nonzero argmax argmin argwhere
flatnonzero nanargmax nanargmin nonzero searchsorted where argpartition argsort lexsort msort sort_complex partition
sort corrcoef cov correlate amax max amin min nanmax nanmin percentile ptp quantile median average mean std var
nanmedian nanmean nanstd nanvar bincount digitize histogram histogram2d histogramdd size ndim
""".split()
_HOST_ONLY = set("shape ndim size isscalar iscomplexobj isrealobj isfortran result_type can_cast common_type "
                 "min_scalar_type binary_repr base_repr may_share_memory".split())
_UPLOAD = set("fromfile fromfunction fromiter frombuffer fromstring loadtxt genfromtxt load".split())
_DOWNLOAD = set("save savez savez_compressed savetxt array_repr array_str array2string".split())
_TO_ARRAY = {"array_equal", "array_equiv", "allclose"}  # NumPy gives Python bools, CuPy 0-d arrays


def _make_func(name, npf):
    def f(*args, **kwargs):
        if name in _UPLOAD:
            return _upload(npf(*args, **kwargs))
        op = _Op(name, force=kwargs.get("out") is not None, host_ok=name in _HOST_ONLY,
                 quiet=name in _HOST_ONLY or name in _DOWNLOAD)
        a, k = op.unwrap(args), op.unwrap(kwargs)
        with np.errstate(all="ignore"):
            r = npf(*a, **k)
        if name in _DOWNLOAD:
            for x in op.fakes:
                _S.log.append(("memcpy", "DtoH", x.nbytes, False, x._mem.device_id, _sp()))
                _sync("repr" if name.startswith("array") else "get", x._mem.device_id)
        r = op.finish(np.bool_(r) if name in _TO_ARRAY else r)
        if name in _SHAPE_SYNC or name == "where" and len(args) == 1:
            _sync("shape")
        return r
    f.__name__ = f.__qualname__ = name
    f.__module__ = "cupy"
    return f


def _make_empty(npf):
    def f(*args, **kwargs):
        op = _Op(npf.__name__, quiet=True)
        h = npf(*op.unwrap(args), **op.unwrap(kwargs))
        a = _alloc(h.shape, h.dtype, "F" if h.flags.f_contiguous and not h.flags.c_contiguous else "C")
        _garbage(a._array)
        return a
    f.__name__ = npf.__name__
    return f


_FUNCS = {"empty": _make_empty(np.empty), "empty_like": _make_empty(np.empty_like)}
for _n in _CUPY_NAMES:
    _f = getattr(np, _n, None)
    if _f is not None and _n not in _FUNCS:
        _FUNCS[_n] = ufunc(_f) if isinstance(_f, np.ufunc) and _n != "matmul" else _make_func(_n, _f)


def _upload(a, dtype=None, order=None, ndmin=0):
    h = np.array(a, dtype=dtype, copy=None, order=order if order in ("C", "F") else "K", ndmin=ndmin)
    r = _from_host(h)
    if h.nbytes:
        _S.log.append(("memcpy", "HtoD", h.nbytes, _is_pinned(h), _cur_dev(), _sp()))
    return r


def asarray(a, dtype=None, order=None, *, blocking=False):
    if isinstance(a, ndarray):
        if a._mem.device_id != _cur_dev():
            a = _peer_copy(a)
        return a if dtype is None or np.dtype(dtype) == a.dtype else a.astype(dtype)
    if isinstance(a, (list, tuple)) and any(isinstance(v, ndarray) for v in a):
        return array(a, dtype)
    return _upload(a, dtype, order)


def array(obj, dtype=None, copy=True, order="K", subok=False, ndmin=0, *, blocking=False):
    if isinstance(obj, ndarray):
        a = _peer_copy(obj) if obj._mem.device_id != _cur_dev() else None
        if a is None:
            a = obj.astype(obj.dtype if dtype is None else dtype, copy=True) if copy or dtype is not None else obj
        return a.reshape((1,) * (ndmin - a.ndim) + a.shape) if ndmin > a.ndim else a
    if isinstance(obj, (list, tuple)) and any(isinstance(v, ndarray) for v in obj):
        op = _Op("array", force=True)
        return op.finish(np.array(op.unwrap(obj), dtype=dtype, ndmin=ndmin))
    return _upload(obj, dtype, order, ndmin)


def asnumpy(a, stream=None, order="C", out=None, *, blocking=True):
    if isinstance(a, ndarray):
        return a.get(stream=stream, order=order, out=out, blocking=blocking)
    temp = np.asarray(a, order=order)
    if out is None:
        return temp
    out[...] = temp
    return out


def _unsupported(what):
    def f(*args, **kwargs):
        raise FakeUnsupportedError(f"fake_cupy does not implement {what}")
    return f


# ------------------------------------------------------------------------------------------- random
def _float(dtype):
    dt = np.dtype(dtype)
    if dt.char not in ("f", "d"):
        raise TypeError("cupy.random only supports float32 and float64")
    return dt


def _on_device(x):  # a distribution parameter given as a device array is read on the device (no sync)
    return x._array if isinstance(x, ndarray) else x


def _int_bounds(low, high, dtype, endpoint):
    """[lo, hi) as CuPy computes it: with int(), so device-array bounds are implicit syncs."""
    lo, hi1 = (0, int(low) - 1) if high is None else (int(low), int(high) - 1)
    if lo > hi1:
        raise ValueError("low >= high")
    info = np.iinfo(dtype)
    if lo < info.min:
        raise ValueError(f"low is out of bounds for {np.dtype(dtype).name}")
    if hi1 > info.max:
        raise ValueError(f"high is out of bounds for {np.dtype(dtype).name}")
    return lo, hi1 + 1 + bool(endpoint)


def _rand_out(name, host, dtype):
    a = _from_host(np.asarray(host).astype(dtype))
    _launch(name)
    return a


class RandomState:
    def __init__(self, seed=None, method=None):
        self._rs = np.random.RandomState(seed)

    def seed(self, seed=None):
        self._rs.seed(seed)

    def random_sample(self, size=None, dtype=float):
        return _rand_out("random_sample", self._rs.random_sample(size), _float(dtype))

    random = random_sample

    def rand(self, *size, dtype=float):
        return self.random_sample(size or None, dtype)

    def standard_normal(self, size=None, dtype=float):
        return _rand_out("standard_normal", self._rs.standard_normal(size), _float(dtype))

    def randn(self, *size, dtype=float):
        return self.standard_normal(size or None, dtype)

    def normal(self, loc=0.0, scale=1.0, size=None, dtype=float):  # loc/scale may be device arrays, as in CuPy
        return _rand_out("normal", self._rs.normal(_on_device(loc), _on_device(scale), size), _float(dtype))

    def uniform(self, low=0.0, high=1.0, size=None, dtype=float):
        return _rand_out("uniform", self._rs.uniform(_on_device(low), _on_device(high), size), _float(dtype))

    def randint(self, low, high=None, size=None, dtype=int):
        lo, hi = _int_bounds(low, high, dtype, False)
        return _rand_out("randint", self._rs.randint(lo, hi, size, dtype=np.int64), np.dtype(dtype))


class Generator:
    def __init__(self, seed=None):
        self._g = np.random.default_rng(seed)

    def _put(self, name, host, dtype, out):
        if out is None:
            return _rand_out(name, host, dtype)
        out._array[...] = host
        _launch(name)
        return out

    def random(self, size=None, dtype=np.float64, out=None):
        return self._put("random", self._g.random(size if out is None else out.shape), _float(dtype), out)

    def standard_normal(self, size=None, dtype=np.float64, out=None):
        return self._put("standard_normal", self._g.standard_normal(size if out is None else out.shape),
                         _float(dtype), out)

    def uniform(self, low=0.0, high=1.0, size=None, dtype=np.float64):
        return _rand_out("uniform", self._g.uniform(low, high, size), _float(dtype))

    def integers(self, low, high=None, size=None, dtype=np.int64, endpoint=False):
        lo, hi = _int_bounds(low, high, dtype, endpoint)
        return _rand_out("integers", self._g.integers(lo, hi, size, dtype=np.int64), dtype)


def get_random_state():
    return _S.random_states.setdefault(_cur_dev(), RandomState())


def _random_module():
    m = types.ModuleType("cupy.random")
    m.RandomState, m.Generator, m.get_random_state = RandomState, Generator, get_random_state
    m.default_rng = lambda seed=None: seed if isinstance(seed, Generator) else Generator(seed)
    m.seed = lambda seed=None: get_random_state().seed(seed)
    for n in "rand randn random random_sample standard_normal normal uniform randint".split():
        setattr(m, n, _global_random(n))
    return m


def _global_random(name):
    return lambda *args, **kwargs: getattr(get_random_state(), name)(*args, **kwargs)


# ------------------------------------------------------------------------------ ElementwiseKernel
_TOKEN = re.compile(r"\s*(?:(?P<num>(?:\d+\.\d*|\.\d+)(?:[eE][+-]?\d+)?|\d+[eE][+-]?\d+|\d+)"
                    r"|(?P<id>[A-Za-z_]\w*)|(?P<op><=|>=|==|!=|[-+*/()<>=,;]))")
_CTYPES = {"float": np.float32, "double": np.float64, "bool": np.bool_, "int": np.int32, "long long": np.int64}
_MATH = {"sin": (1, np.sin), "cos": (1, np.cos), "tan": (1, np.tan), "tanh": (1, np.tanh), "exp": (1, np.exp),
         "log": (1, np.log), "log1p": (1, np.log1p), "sqrt": (1, np.sqrt), "rsqrt": (1, lambda x: 1 / np.sqrt(x)),
         "floor": (1, np.floor), "ceil": (1, np.ceil), "fabs": (1, np.fabs), "fmax": (2, np.fmax),
         "fmin": (2, np.fmin), "pow": (2, np.power)}
_MATH.update({k + "f": v for k, v in list(_MATH.items())})
def _floordiv(x, y):  # as CUDA's floor(x / y) for floats (NumPy's floor_divide can differ: 1.0 // 0.1 == 9.0)
    return np.floor(x / y) if x.dtype.kind in "fc" else np.floor_divide(x, y)


_HELPERS = {"ad_relu": (1, lambda x: np.maximum(x, 0)), "ad_sigmoid": (1, lambda x: 1 / (1 + np.exp(-x))),
            "ad_sign": (1, np.sign), "ad_square": (1, lambda x: x * x), "ad_reciprocal": (1, lambda x: 1 / x),
            "ad_rsqrt": (1, lambda x: 1 / np.sqrt(x)), "ad_floordiv": (2, _floordiv),
            "ad_floormod": (2, np.remainder), "ad_sqdiff": (2, lambda x, y: (x - y) * (x - y)),
            "ad_max": (2, np.maximum), "ad_min": (2, np.minimum), "ad_pow": (2, np.power)}


def _c_promote(*dts):
    """C/C++ usual arithmetic conversions (integer promotion to int first)."""
    dts = [np.dtype(d) for d in dts]
    fl = [d for d in dts if d.kind in "fc"]
    if fl:
        best = max(fl, key=lambda d: (d.kind == "c", d.itemsize))
        return np.dtype(np.float32) if best.itemsize < 4 else best
    res = None
    for d in (np.dtype(np.int32) if d.itemsize < 4 else d for d in dts):
        if res is None or d == res:
            res = d
        elif (d.kind == "u") == (res.kind == "u"):
            res = max(res, d, key=lambda x: x.itemsize)
        else:
            u, s = (d, res) if d.kind == "u" else (res, d)
            res = u if u.itemsize >= s.itemsize else s
    return res


class _Param:
    def __init__(self, text, is_const):
        words = text.split()
        if len(words) < 2:
            raise Exception(f"Syntax error: {text}")
        t, self.name = words[-2:]
        self.raw, self.is_const = False, is_const
        for w in words[:-2]:
            if w == "raw":
                self.raw = True
            elif w == "_non_const":
                self.is_const = False
            else:
                raise Exception(f'Unknown keyword "{w}"')
        self.ctype, self.dtype = t, None
        if len(t) > 1:
            self.dtype = np.dtype(t)
            if self.dtype.name != t:
                raise ValueError(f"Wrong type {t}")


def _params(text, is_const):
    return () if len(text) == 0 else tuple(_Param(p, is_const) for p in text.strip().split(","))


class ElementwiseKernel:
    """Fake CuPy ElementwiseKernel. ``operation`` may only use this CUDA C subset, evaluated with NumPy under C
    typing rules: ``;``-separated statements ``<float|double|bool|int|long long> name = expr`` or
    ``<output> = expr``; expressions of parameters, earlier declarations, decimal literals (no suffix), ``( )``,
    binary ``+ - * /`` (integer ``/`` truncates), ``< <= > >= == !=``, unary ``-``, CUDA math
    ``sin cos tan tanh exp log log1p sqrt rsqrt floor ceil fabs fmax fmin pow`` and their ``f`` forms, and ``ad_*``
    helpers, which must be defined on a ``__device__`` line of ``preamble`` and are treated as
    ``template <typename T> T ad_x(T[, T])`` (both arguments of one type). Helpers evaluate as NumPy's NaN-propagating
    maximum/minimum/sign/relu, remainder for ``ad_floormod`` and ``floor(x / y)`` for float ``ad_floordiv``."""

    def __init__(self, in_params, out_params, operation, name="kernel", reduce_dims=True, preamble="",
                 no_return=False, return_tuple=False, **kwargs):
        if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name):
            raise ValueError(f'Invalid kernel name: "{name}"')
        self.in_params, self.out_params = _params(in_params, True), _params(out_params, False)
        self.nin, self.nout = len(self.in_params), len(self.out_params)
        self.nargs = self.nin + self.nout
        self.operation, self.name, self.__name__, self.reduce_dims = operation, name, name, reduce_dims
        self.preamble, self.no_return, self.return_tuple, self.kwargs = preamble, no_return, return_tuple, kwargs
        names = [p.name for p in self.in_params + self.out_params]
        if "i" in names:
            raise ValueError("Can not use 'i' as a parameter name")
        if any(p.raw for p in self.in_params + self.out_params) or kwargs.get("loop_prep") or kwargs.get("after_loop"):
            raise FakeUnsupportedError("fake_cupy does not support raw parameters, loop_prep or after_loop")

    def __call__(self, *args, **kwargs):
        size, _ = kwargs.pop("size", -1), kwargs.pop("stream", None)
        if kwargs.pop("block_size", 128) <= 0:
            raise ValueError("block_size must be greater than zero")
        if kwargs:
            raise TypeError(f"Wrong arguments {kwargs}")
        if len(args) not in (self.nin, self.nargs):
            raise TypeError(f"Wrong number of arguments for {self.name!r}. It must be either {self.nin} or "
                            f"{self.nargs} (with outputs), but given {len(args)}.")
        for a in args:
            _check_arg(a)
        ins, outs = args[:self.nin], args[self.nin:]
        if any(not isinstance(o, ndarray) for o in outs):
            raise TypeError("Output arguments type must be cupy.ndarray")
        arrays = [a for a in args if isinstance(a, ndarray)]
        if size != -1 and arrays:
            raise ValueError("Specified 'size' can be used only if all of the ndarray are 'raw'.")
        if size == -1 and not arrays:
            raise ValueError("Loop size is undecided.")
        shape = np.broadcast_shapes(*(a.shape for a in arrays)) if arrays else (size,)
        types_ = {}
        for p, a in list(zip(self.out_params, outs)) + list(zip(self.in_params, ins)):
            if not isinstance(a, ndarray):
                continue
            want = p.dtype if p.dtype is not None else types_.setdefault(p.ctype, a.dtype)
            if a.dtype != want:
                raise TypeError(f"Type is mismatched. {p.name} {a.dtype.type} {want.type}")

        def resolve(p):  # an unbound placeholder is a KeyError, as in CuPy
            return p.dtype if p.dtype is not None else np.dtype(types_[p.ctype])
        op = _Op(self.name, force=True)
        env, out_targets = {}, {}
        for p, a in zip(self.in_params, ins):
            if isinstance(a, ndarray):
                v = op.unwrap(a)
                if any(np.shares_memory(v, o._array) and o is not a for o in outs):
                    v = v.copy()  # CuPy copies inputs that overlap an output
                env[p.name] = v
            else:
                env[p.name] = np.asarray(a).astype(resolve(p))
        for p, o in zip(self.out_params, outs):
            if o.shape != shape:
                raise ValueError("Out shape is mismatched")
            out_targets[p.name] = op.unwrap(o)
            env[p.name] = out_targets[p.name]
        new = [(p, _alloc(shape, resolve(p))) for p in self.out_params[len(outs):]]
        for p, o in new:
            _garbage(o._array)
            out_targets[p.name] = o._array
        with np.errstate(all="ignore"):
            assigned = _Evaluator(self, env, out_targets).run(_tokenize(self.operation, self))
        missing = [p.name for p in self.out_params if p.name not in assigned]
        if missing:
            raise FakeUnsupportedError(f"kernel {self.name!r} never assigns output(s) {missing}")
        if 0 not in shape:
            op.launch()
        results = list(outs) + [o for _, o in new]
        if self.no_return:
            return None
        return results[0] if self.nout == 1 and not self.return_tuple else tuple(results)

    def _error(self, msg, cls=CompileException):
        text = f"fake_cupy: kernel {self.name!r}: {msg}\n  operation: {self.operation!r}"
        return cls(text, self.operation, self.name, ()) if cls is CompileException else cls(text)


def _tokenize(src, kern):
    toks, pos = [], 0
    while pos < len(src):
        m = _TOKEN.match(src, pos)
        if m is None:
            if not src[pos:].strip():
                break
            raise kern._error(f"unsupported construct at {src[pos:].strip()[:20]!r}", FakeUnsupportedError)
        kind = m.lastgroup
        text = m.group(kind)
        if kind == "num" and len(text) > 1 and text[0] == "0" and text[1].isdigit():
            raise kern._error(f"octal literal {text!r}", FakeUnsupportedError)
        toks.append((kind, text))
        pos = m.end()
    return toks


class _Evaluator:
    """Recursive-descent parser of the kernel subset that evaluates as it parses (there is no control flow)."""

    def __init__(self, kern, env, outs):
        self.k, self.env, self.outs, self.locals, self.assigned = kern, env, outs, set(), set()
        self.inputs = {p.name for p in kern.in_params}
        self.provided = set(env) - self.inputs

    def run(self, toks):
        self.toks, self.i = toks, 0
        while self.i < len(toks):
            if self.peek() != ";":
                self.statement()
            if self.i < len(toks):
                self.expect(";")
        return self.assigned

    def peek(self, k=0):
        return self.toks[self.i + k][1] if self.i + k < len(self.toks) else None

    def take(self):
        if self.i >= len(self.toks):
            raise self.k._error("unexpected end of operation", FakeUnsupportedError)
        self.i += 1
        return self.toks[self.i - 1]

    def expect(self, text):
        kind, got = self.take()
        if got != text:
            raise self.k._error(f"expected {text!r} but found {got!r}", FakeUnsupportedError)

    def statement(self):
        kind, word = self.take()
        if kind == "id" and word in ("float", "double", "bool", "int", "long"):
            if word == "long":
                self.expect("long")
                word = "long long"
            kind, name = self.take()
            if kind != "id":
                raise self.k._error(f"expected a variable name, found {name!r}", FakeUnsupportedError)
            if name in self.env or name in self.outs or name == "i" or name.startswith("_") or name in _CTYPES:
                raise self.k._error(f'"{name}" has already been declared or is reserved')
            self.expect("=")
            self.env[name] = self.expr().astype(_CTYPES[word])
            self.locals.add(name)
        elif kind == "id" and self.peek() == "=":
            self.take()
            if word in self.inputs:
                raise self.k._error(f'expression must be a modifiable lvalue (input "{word}" is const)')
            if word in self.locals:
                raise self.k._error(f"assignment to local {word!r} is outside the supported subset",
                                    FakeUnsupportedError)
            if word not in self.outs:
                raise self.k._error(f'identifier "{word}" is undefined')
            target = self.outs[word]
            target[...] = np.broadcast_to(self.expr(), target.shape).astype(target.dtype)
            self.env[word] = target
            self.assigned.add(word)
        else:
            raise self.k._error(f"statement starting with {word!r}: only `<ctype> name = expr` and "
                                "`<output> = expr` are supported", FakeUnsupportedError)

    def expr(self):
        return self.binary(0)

    _LEVELS = (("==", "!="), ("<", "<=", ">", ">="), ("+", "-"), ("*", "/"))

    def binary(self, level):
        if level == len(self._LEVELS):
            return self.unary()
        left = self.binary(level + 1)
        while self.peek() in self._LEVELS[level]:
            op = self.take()[1]
            right = self.binary(level + 1)
            t = _c_promote(left.dtype, right.dtype)
            a, b = np.asarray(left, t), np.asarray(right, t)
            if op in ("==", "!=", "<", "<=", ">", ">="):
                left = {"==": np.equal, "!=": np.not_equal, "<": np.less, "<=": np.less_equal,
                        ">": np.greater, ">=": np.greater_equal}[op](a, b)
            elif op == "/" and t.kind in "iu":  # C integer division truncates toward zero
                q = np.floor_divide(a, b)
                left = (q + ((a - q * b != 0) & ((a < 0) != (b < 0)))).astype(t)
            else:
                left = np.asarray({"+": np.add, "-": np.subtract, "*": np.multiply, "/": np.true_divide}[op](a, b), t)
        return left

    def unary(self):
        if self.peek() == "-":
            self.take()
            v = self.unary()
            return np.negative(np.asarray(v, _c_promote(v.dtype)))
        return self.primary()

    def primary(self):
        kind, text = self.take()
        if kind == "num":
            if any(c in text for c in ".eE"):
                return np.asarray(float(text), np.float64)
            return np.asarray(int(text), np.int32 if int(text) < 2**31 else np.int64)
        if text == "(":
            if self.peek() in ("float", "double", "bool", "int", "long"):
                raise self.k._error("casts are outside the supported subset", FakeUnsupportedError)
            v = self.expr()
            self.expect(")")
            return v
        if kind != "id":
            raise self.k._error(f"unexpected {text!r}", FakeUnsupportedError)
        if self.peek() == "(":
            return self.call(text)
        if text in self.env and (text not in self.outs or text in self.assigned or text in self.provided):
            return self.env[text]
        if text in self.outs:
            raise self.k._error(f"output {text!r} is read before it is assigned (undefined on a GPU)",
                                FakeUnsupportedError)
        raise self.k._error(f'identifier "{text}" is undefined')

    def call(self, name):
        self.expect("(")
        args = []
        while self.peek() != ")":
            args.append(self.expr())
            if self.peek() != ")":
                self.expect(",")
        self.take()
        if name.startswith("ad_") and name in _HELPERS:
            defined = any("__device__" in line and re.search(rf"\b{name}\s*\(", line)
                          for line in self.k.preamble.splitlines())
            if not defined:
                raise self.k._error(f'identifier "{name}" is undefined (no __device__ definition in the preamble)')
            nargs, fn = _HELPERS[name]
            if len({a.dtype for a in args}) > 1:
                raise self.k._error(f"no instance of function template {name} matches the argument list "
                                    f"(argument types are: {tuple(str(a.dtype) for a in args)})")
            t = args[0].dtype if args else None
        elif name in _MATH:
            nargs, fn = _MATH[name]
            kinds = {a.dtype for a in args}
            if name.endswith("f") and name[:-1] in _MATH:
                t = np.dtype(np.float32)
            elif np.dtype(np.float64) in kinds or not any(d.kind == "f" for d in kinds):
                t = np.dtype(np.float64)
            else:
                t = np.dtype(np.float32)
        else:
            raise self.k._error(f"function {name!r} is outside the supported subset", FakeUnsupportedError)
        if len(args) != nargs:
            raise self.k._error(f"too {'few' if len(args) < nargs else 'many'} arguments in call to {name}")
        return np.asarray(fn(*(np.asarray(a, t) for a in args)), t)


# ------------------------------------------------------------------------------------ install
_DTYPES = ("complexfloating floating generic inexact integer number signedinteger unsignedinteger bool_ byte short "
           "intc int_ longlong intp int8 int16 int32 int64 ubyte ushort uintc uint ulonglong uintp uint8 uint16 uint32 "
           "uint64 half single double float16 float32 float64 csingle cdouble complex64 complex128 dtype finfo iinfo "
           "promote_types issubdtype mintypecode typename index_exp ndindex s_ broadcast_shapes iterable "
           "get_printoptions set_printoptions printoptions e euler_gamma inf nan newaxis pi").split()


def _submodule(name, **attrs):
    m = types.ModuleType(name)
    m.__dict__.update(attrs)
    return m


def install(n_devices=1, total_memory=1 << 30, name="Fake GPU (NumPy)", compute_capability=(9, 0)):
    """Put a fresh fake ``cupy`` into ``sys.modules`` and return it."""
    global _S, _saved
    if _saved is not None:
        uninstall()
    _saved = {k: v for k, v in sys.modules.items() if k == "cupy" or k.startswith(("cupy.", "cupyx"))}
    for k in _saved:
        del sys.modules[k]
    _S = _State(n_devices, total_memory, name, compute_capability)
    _S.pool, _S.pinned_pool = MemoryPool(), PinnedMemoryPool()
    runtime = _runtime_module()
    memory = _submodule("cupy.cuda.memory", OutOfMemoryError=OutOfMemoryError, MemoryPointer=MemoryPointer,
                        MemoryPool=MemoryPool, alloc=lambda size: _S.pool.malloc(size))
    compiler = _submodule("cupy.cuda.compiler", CompileException=CompileException)
    cuda = _submodule(
        "cupy.cuda", runtime=runtime, memory=memory, compiler=compiler, Device=Device, Stream=Stream,
        ExternalStream=ExternalStream, Event=Event, get_elapsed_time=get_elapsed_time,
        get_current_stream=get_current_stream, MemoryPool=MemoryPool, MemoryPointer=MemoryPointer,
        PinnedMemoryPool=PinnedMemoryPool, PinnedMemoryPointer=PinnedMemoryPointer, alloc=memory.alloc,
        alloc_pinned_memory=alloc_pinned_memory, is_available=lambda: True, get_device_id=_cur_dev)
    util = _submodule("cupy._util", PerformanceWarning=PerformanceWarning)
    cp = _submodule("cupy", __doc__=__doc__, __version__="13.6.0+fake", cuda=cuda, random=_random_module(),
                    _util=util, ndarray=ndarray, ufunc=ufunc, ElementwiseKernel=ElementwiseKernel, asarray=asarray,
                    asanyarray=asarray, array=array, asnumpy=asnumpy, is_available=lambda: True,
                    get_default_memory_pool=lambda: _S.pool, get_default_pinned_memory_pool=lambda: _S.pinned_pool,
                    ReductionKernel=_unsupported("ReductionKernel"), RawKernel=_unsupported("RawKernel"),
                    RawModule=_unsupported("RawModule"), fuse=_unsupported("fuse"), float_=np.float64,
                    complex_=np.complex128, cfloat=np.complex128, singlecomplex=np.complex64, fake_log=_S.log,
                    fake_pinned_used_bytes=lambda: (_S.pinned_pool._drain(), _S.pinned_pool._used)[1],
                    **{n: getattr(np, n) for n in _DTYPES}, **_FUNCS)
    cp.get_array_module = lambda *args: cp if any(isinstance(a, ndarray) for a in args) else np

    def __getattr__(attr):
        raise AttributeError(f"module 'cupy' has no attribute {attr!r}")
    cp.__getattr__ = __getattr__
    for m in (cp, cuda, runtime, memory, compiler, cp.random, util):
        sys.modules[m.__name__] = m
    return cp


def uninstall():
    """Remove the fake ``cupy`` modules and restore whatever was there before ``install()``."""
    global _saved
    for k in [k for k in sys.modules if k == "cupy" or k.startswith(("cupy.", "cupyx"))]:
        del sys.modules[k]
    sys.modules.update(_saved or {})
    _saved = None
