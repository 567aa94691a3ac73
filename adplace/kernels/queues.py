"""Kernels of TF's queue ops (adplace/ops/queue_ops.py), CPU only as in TF: values enqueued from a GPU reach them
through the plan's device-to-host transfer.

A creation op (FIFOQueueV2, ...) finds or makes its queue (kernels/queue_store.py) in the session's resources
(`ctx.resources`, runtime/resources.py) on its first run and outputs the same handle on every run: a 0-d object
array holding the queue, which Identity and transfers pass along. With a `shared_name` the queue is the one every
session on the target shares, checked against the op's attrs as TF's MatchesNodeDef does; without, it is this op's
own in this session. The other ops take the handle; blocking ones wait through `ctx.waits` (runtime/waits.py).
"""
from __future__ import annotations

import numpy as np

from adplace.framework import dtypes as _dtypes
from adplace.framework.errors import InvalidArgumentError
from adplace.kernels import queue_store
from adplace.kernels.queue_store import UNBOUNDED, PaddingFIFOQueue, PriorityQueue, Queue, RandomShuffleQueue
from adplace.kernels.registration import NO_GPU, handle_of, kernel, object_scalar


def _shapes(attrs) -> list | None:
    """The `shapes` attr as tuples (None dims unknown), or None when it is empty (shapes unconstrained)."""
    shapes = attrs.get("shapes") or []
    return [tuple(s.as_tuple()) if hasattr(s, "as_tuple") else tuple(s) for s in shapes] or None


def _capacity(attrs) -> int:
    capacity = int(attrs.get("capacity", -1))
    return UNBOUNDED if capacity < 0 else capacity


def _shape_list_text(shapes) -> str:
    return "[" + ", ".join(queue_store._shape_text(s) for s in shapes or ()) + "]"


def _check_matches(queue: Queue, op, kind: str, dtypes: list, shapes, extra: list) -> None:
    """TF's MatchesNodeDef: a shared queue made again must be asked for with the same type and attrs."""
    name = queue.name
    if queue.kind != kind:
        raise InvalidArgumentError(None, op, f"Shared queue '{name}' is a {queue.kind} but op '{op.name}' asks for "
                                   f"a {kind} ({op.type})")
    capacity = _capacity(op._attrs)
    if capacity != queue.capacity:
        raise InvalidArgumentError(None, op, f"Shared queue '{name}' has capacity {queue.capacity} but requested "
                                   f"capacity was {capacity}")
    for what, field, asked in extra:  # the kind's own attrs
        have = getattr(queue, field)
        if have != asked:
            raise InvalidArgumentError(None, op, f"Shared queue '{name}' has {what} {have} but requested {what} "
                                       f"was {asked}.")
    if [d.name for d in dtypes] != [d.name for d in queue.dtypes]:
        have = ", ".join(d.name for d in queue.dtypes)
        raise InvalidArgumentError(None, op, f"Shared queue '{name}' has component types {have} but requested "
                                   f"component types were {', '.join(d.name for d in dtypes)}")
    if shapes != queue.shapes:
        raise InvalidArgumentError(None, op, f"Shared queue '{name}' has component shapes "
                                   f"{_shape_list_text(queue.shapes)} but requested component shapes were "
                                   f"{_shape_list_text(shapes)}")


def _creation(kind: str, make, extra=lambda attrs: []):
    """The factory of a creation op: `make(name, dtypes, shapes, capacity, attrs, op)` builds the queue; `extra(attrs)`
    lists the kind's own attrs a shared queue must match, as (what, queue attribute, requested value)."""
    def factory(op, ctx):
        attrs = op._attrs
        dtypes = [_dtypes.as_dtype(d).base_dtype for d in attrs.get("component_types") or []]
        shapes = _shapes(attrs)
        if kind == "PriorityQueue":  # TF's PriorityQueueOp: the int64 priority comes first
            dtypes = [_dtypes.int64, *dtypes]
            shapes = None if shapes is None else [(), *shapes]
        capacity = _capacity(attrs)
        shared_name = attrs.get("shared_name") or ""
        name = ctx.resource_name(op, shared_name)
        handle = None

        def create() -> Queue:
            if not dtypes:
                raise InvalidArgumentError(None, op, f"Empty component types for queue {name}")
            if shapes is not None and len(shapes) != len(dtypes):
                raise InvalidArgumentError(None, op, f"Different number of component types.  Types: "
                                           f"{', '.join(d.name for d in dtypes)}, Shapes: "
                                           f"{_shape_list_text(shapes)}")
            if kind != "PaddingFIFOQueue" and shapes is not None and any(None in s for s in shapes):
                raise InvalidArgumentError(None, op, f"{kind} '{name}' needs fully defined shapes, got "
                                           f"{_shape_list_text(shapes)}")
            return make(name, dtypes, shapes, capacity, attrs, op)

        def run():
            nonlocal handle
            if handle is None:
                queue = ctx.resources.lookup_or_create(
                    attrs.get("container") or "", name, bool(shared_name), create,
                    lambda q: _check_matches(q, op, kind, dtypes, shapes, extra(attrs)))
                handle = object_scalar(queue)
            return handle
        return run
    return factory


def _random_shuffle(name, dtypes, shapes, capacity, attrs, op) -> RandomShuffleQueue:
    min_after = int(attrs.get("min_after_dequeue", 0))
    if min_after < 0:
        raise InvalidArgumentError(None, op, f"min_after_dequeue {min_after} must be >= 0")
    if min_after >= capacity:
        raise InvalidArgumentError(None, op, f"min_after_dequeue {min_after} must be < capacity {capacity}")
    return RandomShuffleQueue(name, dtypes, shapes, capacity, min_after, int(attrs.get("seed", 0)),
                              int(attrs.get("seed2", 0)))


def _random_shuffle_extra(attrs) -> list:
    seeds = (int(attrs.get("seed", 0)), int(attrs.get("seed2", 0)))
    found = [("min_after_dequeue", "min_after_dequeue", int(attrs.get("min_after_dequeue", 0)))]
    if seeds != (0, 0):  # TF: seeds (0, 0) accept any shared queue's
        found.append(("random seeds", "seeds", seeds))
    return found


def _plain(cls):
    """`make` for the kinds with no attrs of their own."""
    return lambda name, dtypes, shapes, capacity, attrs, op: cls(name, dtypes, shapes, capacity)


kernel("FIFOQueueV2", cpu_types=None, gpu_types=NO_GPU)(_creation("FIFOQueue", _plain(Queue)))
kernel("PaddingFIFOQueueV2", cpu_types=None, gpu_types=NO_GPU)(_creation("PaddingFIFOQueue", _plain(PaddingFIFOQueue)))
kernel("PriorityQueueV2", cpu_types=None, gpu_types=NO_GPU)(_creation("PriorityQueue", _plain(PriorityQueue)))
kernel("RandomShuffleQueueV2", cpu_types=None, gpu_types=NO_GPU)(
    _creation("RandomShuffleQueue", _random_shuffle, _random_shuffle_extra))


def queue_of(handle, op) -> Queue:
    """The Queue behind a queue handle (as kernels receive it); InvalidArgumentError naming `op` for anything else."""
    return handle_of(handle, Queue, op, "a queue handle")


def _component_types(op, attr: str) -> list:
    return [_dtypes.as_dtype(d).base_dtype for d in op._attrs.get(attr) or []]


def _enqueued_types(op) -> list:
    """The dtypes an enqueue op hands the queue: its Tcomponents attr, else those of its component inputs."""
    return _component_types(op, "Tcomponents") or [t.dtype.base_dtype for t in op._inputs[1:]]


@kernel("QueueEnqueueV2", cpu_types=None, gpu_types=NO_GPU)
def _enqueue(op, ctx):
    dtypes, waits = _enqueued_types(op), ctx.waits

    def enqueue(handle, *components):
        queue = queue_of(handle, op)
        queue.check_types(dtypes, "enqueue to")
        element = [np.array(c, copy=True) for c in components]  # the queue's own copy, whatever the caller does
        queue.check_element(element)
        queue.enqueue([tuple(element)], waits, op)
    return enqueue


@kernel("QueueEnqueueManyV2", cpu_types=None, gpu_types=NO_GPU)
def _enqueue_many(op, ctx):
    dtypes, waits = _enqueued_types(op), ctx.waits

    def enqueue_many(handle, *components):
        queue = queue_of(handle, op)
        queue.check_types(dtypes, "enqueue_many to")
        batch = [np.array(c, copy=True) for c in components]
        n = queue.check_batch(batch)
        if n:
            queue.enqueue([tuple(c[k] for c in batch) for k in range(n)], waits, op)
    return enqueue_many


def _outputs(values: list):
    return values[0] if len(values) == 1 else tuple(values)


@kernel("QueueDequeueV2", cpu_types=None, gpu_types=NO_GPU)
def _dequeue(op, ctx):
    dtypes, waits = _component_types(op, "component_types"), ctx.waits

    def dequeue(handle):
        queue = queue_of(handle, op)
        queue.check_types(dtypes, "dequeue from")
        [element] = queue.dequeue(1, False, waits, op)
        return _outputs(list(element))
    return dequeue


def _dequeue_batch(allow_small_batch: bool):
    def factory(op, ctx):
        dtypes, waits = _component_types(op, "component_types"), ctx.waits
        what = "DequeueUpToOp" if allow_small_batch else "DequeueManyOp"

        def dequeue_many(handle, n):
            queue = queue_of(handle, op)
            queue.check_types(dtypes, "dequeue from")
            n = int(np.asarray(n))
            if n < 0:
                raise InvalidArgumentError(None, op, f"{what} requested {n} < 0 elements")
            queue.check_dequeue_many()
            return _outputs(queue.batch(queue.dequeue(n, allow_small_batch, waits, op)))
        return dequeue_many
    return factory


kernel("QueueDequeueManyV2", cpu_types=None, gpu_types=NO_GPU)(_dequeue_batch(False))
kernel("QueueDequeueUpToV2", cpu_types=None, gpu_types=NO_GPU)(_dequeue_batch(True))


@kernel("QueueCloseV2", cpu_types=None, gpu_types=NO_GPU)
def _close(op, ctx):
    cancel, waits = bool(op._attrs.get("cancel_pending_enqueues", False)), ctx.waits

    def close(handle):
        queue_of(handle, op).close(cancel, waits, op)
    return close


@kernel("QueueSizeV2", cpu_types=None, gpu_types=NO_GPU)
def _size(op, ctx):
    def size(handle):
        queue = queue_of(handle, op)
        with queue.cond:
            return np.asarray(queue.size(), dtype=np.int32)
    return size


@kernel("QueueIsClosedV2", cpu_types=None, gpu_types=NO_GPU)
def _is_closed(op, ctx):
    return lambda handle: np.asarray(queue_of(handle, op).closed)
