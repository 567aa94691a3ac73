"""Kernels of the TensorArray ops (adplace.ops.tensor_array_ops): a TensorArrayV3 makes a fresh store each run, and
the other ops find it through the handle, a 2-element object array [b"_tensor_arrays", store] that Identity and
transfers pass along unchanged (a copy of the array still holds the same store).

The store keeps what TF's TensorArray resource keeps (tensorflow/core/kernels/tensor_array.h): per index the value,
its shape and whether it was written, read or cleared; the element shape it infers from writes; a closed flag; and
the gradient stores TensorArrayGradV3 made for it, one per gradient `source`. Errors are TF's InvalidArgumentError
with TF's messages ("TensorArray TensorArray_0: Could not write to TensorArray index 0 because it has already been
written to."); the handle's name is the op's (or `tensor_array_name`) plus a process-wide counter, as in TF.

Values are kept as the writing kernel got them (NumPy, or CuPy on a CUDA GPU); a kernel reading them moves them to
its own device first, so a TensorArray whose ops the placer split between devices still works.
"""
from __future__ import annotations

import itertools
import threading

import numpy as np

from adplace.framework import dtypes as _dtypes
from adplace.framework.errors import InvalidArgumentError, UnimplementedError
from adplace.framework.tensor_shape import dims_text
from adplace.kernels.gpu import to_host
from adplace.kernels.registration import GPU_FLOAT, fixed, kernel

CONTAINER = b"_tensor_arrays"
_COUNTER = itertools.count()
_CPU_TYPES = _dtypes.ALL
_GPU_TYPES = GPU_FLOAT | {_dtypes.int64}  # TF's GPU TensorArray kernels: no int32 (host memory), bool or string


def tf_type_name(dtype) -> str:
    """TF's DataTypeString of a dtype: float, double, half, int32, ..."""
    name = dtype.base_dtype.name
    return {"float32": "float", "float64": "double", "float16": "half"}.get(name, name)


def partial_text(shape) -> str:
    """TF's PartialTensorShape::DebugString: <unknown> for an unknown rank, else [2,?]."""
    return "<unknown>" if shape is None else dims_text(shape)


def _compatible(partial, shape: tuple) -> bool:
    return partial is None or (len(partial) == len(shape) and all(p is None or p == d for p, d in zip(partial, shape)))


def _merged(a, b):
    """PartialTensorShape::MergeWith; None for an unknown rank; InvalidArgumentError when incompatible."""
    if a is None:
        return b
    if b is None:
        return a
    if len(a) != len(b) or not all(x is None or y is None or x == y for x, y in zip(a, b)):
        raise InvalidArgumentError(None, None, f"Incompatible shapes during merge: {partial_text(a)} vs. "
                                   f"{partial_text(b)}")
    return tuple(x if x is not None else y for x, y in zip(a, b))


def on_device(xp, value):
    """`value` as an array of the kernel's array module: downloaded for NumPy kernels, uploaded for CuPy ones."""
    return np.asarray(to_host(value)) if xp is np else xp.asarray(value)


class _Entry:
    __slots__ = ("value", "shape", "written", "read", "cleared")

    def __init__(self):
        self.value, self.shape, self.written, self.read, self.cleared = None, None, False, False, False


class TensorArrayStore:
    """One TensorArray's state for one run (TF's TensorArray resource): thread-safe, as kernels may run in
    parallel. `is_grad` stores (made by TensorArrayGradV3) add up repeated writes to an index."""

    def __init__(self, name: str, dtype, size: int, element_shape, identical: bool, dynamic_size: bool,
                 clear_after_read: bool, is_grad: bool = False, marked_size: int = -1):
        self.name, self.dtype, self.element_shape = name, dtype, element_shape
        self.identical, self.dynamic_size, self.clear_after_read = identical, dynamic_size, clear_after_read
        self.is_grad, self.marked_size = is_grad, marked_size
        self.entries = [_Entry() for _ in range(size)]
        self.closed = False
        self.gradients_disallowed = False
        self.grads: dict = {}
        self.lock = threading.RLock()

    # --- state ------------------------------------------------------------------------------------------------
    def _fail(self, message: str) -> InvalidArgumentError:
        return InvalidArgumentError(None, None, f"TensorArray {self.name}: {message}")

    def _check_open(self) -> None:
        if self.closed:
            raise InvalidArgumentError(None, None, f"TensorArray {self.name} has already been closed.")

    def size(self) -> int:
        with self.lock:
            self._check_open()
            return len(self.entries)

    def pack_size(self) -> int:
        """How many elements concat reads: a gradient array's forward size as split or unstack left it."""
        with self.lock:
            self._check_open()
            return self.marked_size if self.is_grad and self.marked_size >= 0 else len(self.entries)

    def mark_size(self, size: int) -> None:
        with self.lock:
            self._check_open()
            if not self.is_grad:
                self.marked_size = size

    def close(self) -> None:
        with self.lock:
            self.entries = []
            self.closed = True

    def merge_element_shape(self, shape) -> None:
        with self.lock:
            self.element_shape = _merged(self.element_shape, shape)

    # --- writes -----------------------------------------------------------------------------------------------
    def write_many(self, xp, indices, values, dtype) -> None:
        """Write (or, for gradient arrays, add) values[i] at indices[i], in order; TF's checks per write."""
        with self.lock:
            for index, value in zip(indices, values):
                self._write(xp, int(index), value, dtype)

    def _write(self, xp, index: int, value, dtype) -> None:
        self._check_open()
        if index < 0 or (not self.dynamic_size and index >= len(self.entries)):
            raise self._fail(f"Tried to write to index {index} but array is not resizeable and size is: "
                             f"{len(self.entries)}")
        if index >= len(self.entries):
            self.entries.extend(_Entry() for _ in range(index + 1 - len(self.entries)))
        entry = self.entries[index]
        if dtype is not self.dtype:
            raise self._fail(f"Could not write to TensorArray index {index} because the value dtype is "
                             f"{tf_type_name(dtype)} but TensorArray dtype is {tf_type_name(self.dtype)}.")
        if not hasattr(value, "shape"):  # a string element unstacked from an object array is a bare `bytes`
            value = np.asarray(value, dtype=object)
        shape = tuple(value.shape)
        if not _compatible(self.element_shape, shape):
            raise self._fail(f"Could not write to TensorArray index {index} because the value shape is "
                             f"{dims_text(shape)} which is incompatible with the TensorArray's inferred element "
                             f"shape: {partial_text(self.element_shape)} (consider setting infer_shape=False).")
        if self.identical and (self.element_shape is None or None in self.element_shape):
            self.element_shape = shape
        if entry.read:
            raise self._fail(f"Could not write to TensorArray index {index} because it has already been read.")
        if entry.written and not self.is_grad:
            raise self._fail(f"Could not write to TensorArray index {index} because it has already been written "
                             f"to.")
        if not entry.written:
            entry.value, entry.shape, entry.written = value, shape, True
            return
        if shape != entry.shape:
            raise self._fail(f"Could not aggregate to TensorArray index {index} because the existing shape is "
                             f"{dims_text(entry.shape)} but the new input shape is {dims_text(shape)}.")
        if entry.value is None or not entry.value.size:  # only a shape was known (zeros): take the value
            entry.value = value
            return
        entry.value = on_device(xp, entry.value) + value  # a new array: written values are never changed
        self.gradients_disallowed = True

    # --- reads ------------------------------------------------------------------------------------------------
    def read_many(self, xp, indices) -> list:
        with self.lock:
            return [self._read(xp, int(i)) for i in indices]

    def _read(self, xp, index: int):
        self._check_open()
        size = len(self.entries)
        if index < 0 or (not self.is_grad and index >= size):
            raise InvalidArgumentError(None, None, f"Tried to read from index {index} but array size is: {size}")
        if index >= size or not self.entries[index].written:
            # An unwritten index reads as zeros when its shape is known (a gradient array knows the forward
            # array's shapes; TF does this for gradients that stop_gradient never wrote).
            if self.is_grad and index < size and self.entries[index].shape:
                shape = self.entries[index].shape
            elif self.element_shape is None or None in self.element_shape:
                raise self._fail(
                    f"Could not read from TensorArray index {index}.  Furthermore, the element shape is not fully "
                    f"defined: {partial_text(self.element_shape)}.  It is possible you are working with a resizeable "
                    f"TensorArray and stop_gradients is not allowing the gradients to be written.  If you set the "
                    f"full element_shape property on the forward TensorArray, the proper all-zeros tensor will be "
                    f"returned instead of incurring this error.")
            else:
                shape = self.element_shape
            if index >= size:
                self.entries.extend(_Entry() for _ in range(index + 1 - size))
            for entry in self.entries[size if index >= size else index:index + 1]:
                entry.shape, entry.written = shape, True
        entry = self.entries[index]
        if entry.cleared:
            raise self._fail(f"Could not read index {index} twice because it was cleared after a previous read "
                             f"(perhaps try setting clear_after_read = false?).")
        if entry.value is None:
            entry.value = _zeros(xp, entry.shape, self.dtype)
        value = on_device(xp, entry.value)
        if self.clear_after_read:
            entry.value, entry.cleared = None, True
        entry.read = True
        return value

    # --- gradients --------------------------------------------------------------------------------------------
    def grad(self, source: str) -> "TensorArrayStore":
        """The gradient store for `source`, made on first use: this array's size and shapes (unread zeros), no
        longer resizeable."""
        with self.lock:
            self.dynamic_size = False
            size = self.size()
            if self.gradients_disallowed:
                raise InvalidArgumentError(
                    None, None, f"Unable to create a gradients TensorArray for {self.name}.  Perhaps you used the "
                    f"multiple_writes_aggregate flag on a previous write?  Gradient calculation is impossible when "
                    f"multiple writes are performed to the same index.")
            store = self.grads.get(source)
            if store is None:
                store = self.grads[source] = TensorArrayStore(
                    f"{self.name}@{source}", self.dtype, size, self.element_shape, self.identical, False, True,
                    is_grad=True, marked_size=self.marked_size)
                for mine, theirs in zip(store.entries, self.entries):
                    if theirs.written:
                        mine.shape, mine.written = theirs.shape, True
            return store


def _zeros(xp, shape: tuple, dtype):
    if dtype is _dtypes.string:
        return np.full(shape, b"", dtype=object)
    return xp.zeros(shape, dtype=dtype.as_numpy_dtype)


def make_handle(store: TensorArrayStore) -> np.ndarray:
    handle = np.empty(2, dtype=object)
    handle[0], handle[1] = CONTAINER, store
    return handle


def _store(handle) -> TensorArrayStore:
    return handle[1]


def _index(op, index) -> int:
    index = np.asarray(to_host(index))
    if index.ndim:
        raise InvalidArgumentError(None, op, f"TensorArray index must be scalar, but had shape: "
                                   f"{dims_text(index.shape)}")
    return int(index)


def _vector(op, values, message: str) -> np.ndarray:
    values = np.asarray(to_host(values))
    if values.ndim != 1:
        raise InvalidArgumentError(None, op, f"{message}{dims_text(values.shape)}")
    return values


def _check_dtype(op, store: TensorArrayStore, dtype, writing: bool) -> None:
    if dtype is not store.dtype:
        doing = "is trying to write" if writing else "requested"
        raise InvalidArgumentError(None, op, f"TensorArray dtype is {tf_type_name(store.dtype)} but Op {doing} "
                                   f"dtype {tf_type_name(dtype)}.")


def _attr_shape(op, name: str):
    shape = op._attrs.get(name)
    return None if shape is None else shape.as_tuple()


# --- creation -------------------------------------------------------------------------------------------------------
@kernel("TensorArrayV3", _CPU_TYPES, _GPU_TYPES)
def _tensor_array(op, ctx):
    attrs = op._attrs
    dtype, base_name = attrs["dtype"].base_dtype, attrs.get("tensor_array_name") or op.name
    element_shape, identical = _attr_shape(op, "element_shape"), bool(attrs.get("identical_element_shapes", False))
    dynamic, clear = bool(attrs.get("dynamic_size", False)), bool(attrs.get("clear_after_read", True))
    flow = ctx.xp.zeros((), dtype=np.float32)

    def tensor_array(size):
        size = np.asarray(to_host(size))
        if size.ndim:
            raise InvalidArgumentError(None, op, f"TensorArray size must be scalar, but had shape: "
                                       f"{dims_text(size.shape)}")
        if int(size) < 0:
            raise InvalidArgumentError(None, op, "Size should be >= 0.")
        store = TensorArrayStore(f"{base_name}_{next(_COUNTER)}", dtype, int(size), element_shape, identical,
                                 dynamic, clear)
        return make_handle(store), flow
    return tensor_array


@kernel("TensorArrayGradV3", None, None)
def _tensor_array_grad(op, ctx):
    source, flow = op._attrs["source"], ctx.xp.zeros((), dtype=np.float32)
    return lambda handle, flow_in: (make_handle(_store(handle).grad(source)), flow)


# --- writes ---------------------------------------------------------------------------------------------------------
@kernel("TensorArrayWriteV3", _CPU_TYPES, _GPU_TYPES)
def _write(op, ctx):
    xp, dtype = ctx.xp, op._attrs["T"].base_dtype

    def write(handle, index, value, flow_in):
        index, store = _index(op, index), _store(handle)
        _check_dtype(op, store, dtype, writing=True)
        store.write_many(xp, (index,), (xp.asarray(value),), dtype)
        return flow_in
    return write


@kernel("TensorArrayScatterV3", _CPU_TYPES, _GPU_TYPES)
def _scatter(op, ctx):
    xp, dtype = ctx.xp, op._attrs["T"].base_dtype

    def scatter(handle, indices, value, flow_in):
        store, value = _store(handle), xp.asarray(value)
        _check_dtype(op, store, dtype, writing=True)
        if not value.ndim:
            raise InvalidArgumentError(None, op, f"Input value for unpack must be at least a vector but received "
                                       f"shape: {dims_text(value.shape)}")
        size = store.size()
        indices = _vector(op, indices, "Expected indices to be a vector, but received shape: ")
        if indices.size != value.shape[0]:
            raise InvalidArgumentError(None, op, f"Expected len(indices) == values.shape[0], but saw: "
                                       f"{indices.size} vs. {value.shape[0]}")
        max_index = int(indices.max(initial=-1))
        if store.dynamic_size:
            size = max(size, max_index + 1)
        if max_index >= size:
            raise InvalidArgumentError(None, op, f"Max scatter index must be < array size ({max_index} vs. {size})")
        store.write_many(xp, indices.tolist(), list(value), dtype)
        return flow_in
    return scatter


@kernel("TensorArraySplitV3", _CPU_TYPES, _GPU_TYPES)
def _split(op, ctx):
    xp, dtype = ctx.xp, op._attrs["T"].base_dtype

    def split(handle, value, lengths, flow_in):
        store, value = _store(handle), xp.asarray(value)
        lengths = _vector(op, lengths, "Expected lengths to be a vector, received shape: ")
        if not value.ndim:
            raise InvalidArgumentError(None, op, f"Expected value to be at least a vector, but received shape: "
                                       f"{dims_text(value.shape)}")
        total = int(lengths.sum())
        if total != value.shape[0] or (lengths < 0).any():
            raise InvalidArgumentError(None, op, f"Expected sum of lengths to be equal to values.shape[0], but sum "
                                       f"of lengths is {total} and value's shape is: {dims_text(value.shape)}")
        size = store.size()
        if store.dynamic_size:
            size = max(size, lengths.size)
        if size != lengths.size:
            raise InvalidArgumentError(None, op, f"TensorArray's size is not equal to the size of lengths ({size} "
                                       f"vs. {lengths.size}), and the TensorArray is not marked as dynamically "
                                       f"resizeable")
        _check_dtype(op, store, dtype, writing=True)
        ends = np.cumsum(lengths).tolist()
        pieces = [value[start:end] for start, end in zip([0] + ends[:-1], ends)]
        store.mark_size(size)
        store.write_many(xp, range(size), pieces, dtype)
        return flow_in
    return split


# --- reads ----------------------------------------------------------------------------------------------------------
@kernel("TensorArrayReadV3", _CPU_TYPES, _GPU_TYPES)
def _read(op, ctx):
    xp, dtype = ctx.xp, op._attrs["dtype"].base_dtype

    def read(handle, index, flow_in):
        index, store = _index(op, index), _store(handle)
        _check_dtype(op, store, dtype, writing=False)
        return store.read_many(xp, (index,))[0]
    return read


@kernel("TensorArrayGatherV3", _CPU_TYPES, _GPU_TYPES)
def _gather(op, ctx):
    xp, dtype, element_shape = ctx.xp, op._attrs["dtype"].base_dtype, _attr_shape(op, "element_shape")

    def gather(handle, indices, flow_in):
        store = _store(handle)
        _check_dtype(op, store, dtype, writing=False)
        store.merge_element_shape(element_shape)
        indices = _vector(op, indices, "Expected indices to be a vector, but received shape: ")
        if not indices.size:
            if element_shape is None or None in element_shape:
                raise UnimplementedError(None, op, f"TensorArray has size zero, but element shape "
                                         f"{partial_text(element_shape)} is not fully defined. Currently only static "
                                         f"shapes are supported when packing zero-size TensorArrays.")
            return _zeros(xp, (0,) + element_shape, dtype)
        values = store.read_many(xp, indices.tolist())
        first = values[0].shape
        if not _compatible(element_shape, first):
            raise InvalidArgumentError(None, op, f"TensorArray was passed element_shape {partial_text(element_shape)} "
                                       f"which does not match the Tensor at index 0: {dims_text(first)}")
        for i, v in enumerate(values[1:], 1):
            if v.shape != first:
                raise InvalidArgumentError(None, op, f"TensorArray has inconsistent shapes.  Index 0 has shape: "
                                           f"{dims_text(first)} but index {i} has shape: {dims_text(v.shape)}")
        return xp.stack(values)
    return gather


@kernel("TensorArrayConcatV3", _CPU_TYPES, _GPU_TYPES)
def _concat(op, ctx):
    xp, dtype, except0 = ctx.xp, op._attrs["dtype"].base_dtype, _attr_shape(op, "element_shape_except0")

    def concat(handle, flow_in):
        store = _store(handle)
        _check_dtype(op, store, dtype, writing=False)
        size = store.pack_size()
        if not size:
            if except0 is None or None in except0:
                raise UnimplementedError(None, op, f"TensorArray has size zero, but element_shape_except0 "
                                         f"{partial_text(except0)} is not fully defined. Currently only static shapes "
                                         f"are supported when concatenating zero-size TensorArrays.")
            return _zeros(xp, (0,) + except0, dtype), xp.zeros(0, dtype=np.int64)
        values = store.read_many(xp, range(size))
        for i, v in enumerate(values):
            if not v.ndim:
                raise InvalidArgumentError(None, op, f"Concat saw a scalar shape at index {i} but requires at least "
                                           f"vectors.  Did you mean to call pack?")
            rest = v.shape[1:]
            if not i and not _compatible(except0, rest):
                raise InvalidArgumentError(None, op, f"TensorArray was passed element_shape_except0 "
                                           f"{partial_text(except0)} but index 0 has (excepting dimension 0) shape: "
                                           f"{dims_text(rest)} which does not match.")
            if i and rest != values[0].shape[1:]:
                raise InvalidArgumentError(None, op, f"TensorArray has inconsistent shapes.  Index 0 has (excepting "
                                           f"dimension 0) shape: {dims_text(values[0].shape[1:])} but index {i} has "
                                           f"(excepting dimension 0) shape: {dims_text(rest)}")
        lengths = np.array([v.shape[0] for v in values], dtype=np.int64)
        return xp.concatenate(values), xp.asarray(lengths)
    return concat


# --- size, close ----------------------------------------------------------------------------------------------------
kernel("TensorArraySizeV3", None, None)(fixed(lambda handle, flow_in: np.int32(_store(handle).size())))
kernel("TensorArrayCloseV3", None, None)(fixed(lambda handle: _store(handle).close()))
