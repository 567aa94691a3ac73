"""Kernels of tf.data's iterator ops (IteratorV2, MakeIterator, IteratorGetNext, OneShotIterator and string handles),
CPU only as in TF: an iterator is a session resource (runtime/resources.py) holding the current pass over a dataset.

- MakeIterator starts a new pass (closing the old one); IteratorGetNext returns the next element, OutOfRangeError
  at the end ("End of sequence") and FailedPreconditionError before the first MakeIterator.
- GetNext calls on one iterator take turns; a call waiting for its turn, or for a prefetched element, honours the
  step's deadline, Ctrl-C and Session.close (runtime/waits.py).
- OneShotIterator runs its dataset factory function once, on its first run.
- A string handle names the iterator in this session; Iterator.from_string_handle finds it by that name.
"""
from __future__ import annotations

import itertools
import threading

import numpy as np

from adplace.framework import dtypes as _dtypes
from adplace.framework import errors
from adplace.kernels.dataset_values import dataset_in
from adplace.kernels.registration import NO_GPU, handle_of, kernel, multi_output, object_scalar

_HANDLES = "_adplace_iterator_handles"  # the resource container of string handles
_numbers = itertools.count()


class IteratorResource:
    """An iterator's state: its element types and shapes, and the current pass (None before MakeIterator)."""

    def __init__(self, name: str, dtypes: list, shapes: list):
        self.name, self.dtypes, self.shapes = name, dtypes, shapes
        self.handle = f"adplace-iterator:{next(_numbers)}:{name}".encode()
        self._cond = threading.Condition()
        self._busy = False
        self._pass = None
        self.started = False  # a OneShotIterator's factory ran

    def _turn(self, waits, op):
        with self._cond:
            waits.wait(self._cond, lambda: not self._busy, op, "GetNext")
            self._busy = True

    def _done(self):
        with self._cond:
            self._busy = False
            self._cond.notify_all()

    def reset(self, dataset, waits, op) -> None:
        """Start a new pass over `dataset` (MakeIterator)."""
        self._turn(waits, op)
        try:
            old, self._pass = self._pass, dataset.make()
            if old is not None:
                old.close()
        finally:
            self._done()

    def get_next(self, waits, op) -> list:
        self._turn(waits, op)
        try:
            if self._pass is None:
                raise errors.FailedPreconditionError(
                    None, op, "GetNext() failed because the iterator has not been initialized. Ensure that you have "
                    "run the initializer operation for this iterator before getting the next element.")
            element = self._pass.next(lambda cond, ready: waits.wait(cond, ready, op, "GetNext"))
        except errors.OpError as exc:
            if exc.op is None:  # raised by a dataset's own code: reported at the GetNext op, as TF does
                raise type(exc)(None, op, exc.message) from exc
            raise
        finally:
            self._done()
        if element is None:
            raise errors.OutOfRangeError(None, op, "End of sequence")
        return element

    def close_resource(self) -> None:
        with self._cond:
            current, self._pass = self._pass, None
        if current is not None:
            current.close()


def _resource_in(handle, op) -> IteratorResource:
    return handle_of(handle, IteratorResource, op, "an iterator handle")


def _types_and_shapes(op) -> tuple[list, list]:
    attrs = op._attrs
    return ([_dtypes.as_dtype(d).base_dtype for d in attrs.get("output_types") or []],
            [s.as_tuple() for s in attrs.get("output_shapes") or []])


def _check_same(resource: IteratorResource, op, dtypes: list) -> None:
    if [d.name for d in dtypes] != [d.name for d in resource.dtypes]:
        raise errors.InvalidArgumentError(
            None, op, f"Iterator '{resource.name}' has output types [{', '.join(d.name for d in resource.dtypes)}] "
            f"but {op.name} expects [{', '.join(d.name for d in dtypes)}]")


def _lookup_or_create(op, ctx) -> IteratorResource:
    attrs = op._attrs
    dtypes, shapes = _types_and_shapes(op)
    shared_name = attrs.get("shared_name") or ""
    name = ctx.resource_name(op, shared_name)
    return ctx.resources.lookup_or_create(attrs.get("container") or "", name, bool(shared_name),
                                          lambda: IteratorResource(name, dtypes, shapes),
                                          lambda r: _check_same(r, op, dtypes))


@kernel("IteratorV2", cpu_types=None, gpu_types=NO_GPU)
def _iterator(op, ctx):
    made = []

    def run():
        if not made:
            made.append(object_scalar(_lookup_or_create(op, ctx)))
        return made[0]
    return run


@kernel("OneShotIterator", cpu_types=None, gpu_types=NO_GPU)
def _one_shot_iterator(op, ctx):
    lock, made = threading.Lock(), []
    waits = ctx.waits

    def run():
        with lock:
            if not made:
                resource = _lookup_or_create(op, ctx)
                if not resource.started:
                    dataset = dataset_in(ctx.function(op._attrs["dataset_factory"])([])[0])
                    resource.reset(dataset, waits, op)
                    resource.started = True
                made.append(object_scalar(resource))
            return made[0]
    return run


@kernel("MakeIterator", cpu_types=None, gpu_types=NO_GPU)
def _make_iterator(op, ctx):
    waits = ctx.waits
    return lambda dataset, handle: _resource_in(handle, op).reset(dataset_in(dataset), waits, op)


def _compatible(shape: tuple, expected) -> bool:
    return expected is None or (len(shape) == len(expected) and all(e is None or e == s
                                                                      for s, e in zip(shape, expected)))


def _shape_text(shape) -> str:
    return "[" + ",".join("?" if d is None else str(d) for d in shape) + "]"


@kernel("IteratorGetNext", cpu_types=None, gpu_types=NO_GPU)
def _get_next(op, ctx):
    waits = ctx.waits
    dtypes, shapes = _types_and_shapes(op)
    is_string = [d is _dtypes.string for d in dtypes]

    def get_next(handle):
        element = _resource_in(handle, op).get_next(waits, op)
        if len(element) != len(dtypes):
            raise errors.InvalidArgumentError(None, op, f"{op.name}: the element has {len(element)} components, "
                                              f"expected {len(dtypes)}")
        out = []
        for i, (value, string, expected) in enumerate(zip(element, is_string, shapes)):
            if not isinstance(value, np.ndarray):
                value = np.asarray(value, dtype=object) if string else np.asarray(value)
            if not _compatible(value.shape, expected):
                raise errors.InvalidArgumentError(None, op, f"Incompatible shapes at component {i}: expected "
                                                  f"{_shape_text(expected)} but got {_shape_text(value.shape)}.")
            out.append(value)
        return multi_output(out)
    return get_next


@kernel("IteratorToStringHandle", cpu_types=None, gpu_types=NO_GPU)
def _to_string_handle(op, ctx):
    def to_string_handle(handle):
        resource = _resource_in(handle, op)
        ctx.resources.lookup_or_create(_HANDLES, resource.handle.decode(), False, lambda: resource, lambda r: None)
        return object_scalar(resource.handle)
    return to_string_handle


@kernel("IteratorFromStringHandleV2", cpu_types=None, gpu_types=NO_GPU)
def _from_string_handle(op, ctx):
    dtypes = _types_and_shapes(op)[0]

    def missing(text):
        raise errors.NotFoundError(None, op, f"{op.name}: no iterator of this session has the string handle "
                                   f"{text!r}")

    def from_string_handle(string_handle):
        value = np.asarray(string_handle, dtype=object)[()]
        text = value.decode("utf-8", "replace") if isinstance(value, bytes) else str(value)
        resource = ctx.resources.lookup_or_create(_HANDLES, text, False, lambda: missing(text), lambda r: None)
        if dtypes:
            _check_same(resource, op, dtypes)
        return object_scalar(resource)
    return from_string_handle
