"""TF1's queues (tf.FIFOQueue, tf.RandomShuffleQueue, tf.PaddingFIFOQueue, tf.PriorityQueue, tf.QueueBase, also as
tf.queue.*): stores of element tuples that live across steps and sessions, fed and drained by graph ops.

    q = tf.FIFOQueue(capacity=10, dtypes=[tf.float32, tf.int32], shapes=[[2], []])
    enq = q.enqueue_many(([[1., 2.], [3., 4.]], [7, 8]))
    x, label = q.dequeue()            # blocks while empty; OutOfRangeError once closed and drained
    batch = q.dequeue_many(2)         # two elements at once: [2, 2] and [2]

The ops are TF's (FIFOQueueV2, ..., QueueEnqueueV2, QueueDequeueManyV2, QueueCloseV2, ...) with TF's attrs, so
GraphDefs go both ways; their semantics (arrival order, close, min_after_dequeue, padding, priorities, sharing by
`shared_name`) are described in kernels/queue_store.py, the kernels in kernels/queues.py. A blocked op honours the
step's deadline (RunOptions.timeout_in_ms, ConfigProto.operation_timeout_in_ms: DeadlineExceededError) and
Session.close() (CancelledError), and a dequeue that fails takes nothing.

Graph-construction errors are TF's: a value of another dtype than the queue's is a ValueError from the conversion,
a static shape incompatible with the queue's a ValueError naming both shapes.
"""
from __future__ import annotations

import functools
import hashlib

from adplace.framework import dtypes as _dtypes
from adplace.framework.conversion import convert_to_tensor
from adplace.framework.default_graph import name_scope
from adplace.framework.random_seed import get_seed
from adplace.framework.registry import NotDifferentiable, register_op
from adplace.framework.tensor_shape import TensorShape, as_shape, unknown_shape
from adplace.ops.array_ops import stack
from adplace.ops.op_builder import SCALAR, apply_op, constant_value, int_const
from adplace.ops.slicing_ops import gather

# --- op definitions -----------------------------------------------------------------------------------------------
CREATION_OPS = ("FIFOQueueV2", "RandomShuffleQueueV2", "PaddingFIFOQueueV2", "PriorityQueueV2")


def _outputs_per_component(inputs, attrs, name):
    return [(_dtypes.as_dtype(d).base_dtype, unknown_shape()) for d in attrs.get("component_types") or []]


for _op_type in CREATION_OPS:
    register_op(_op_type, lambda inputs, attrs, name: [(_dtypes.resource, SCALAR)], is_stateful=True)
register_op("QueueEnqueueV2", lambda inputs, attrs, name: [], is_stateful=True)
register_op("QueueEnqueueManyV2", lambda inputs, attrs, name: [], is_stateful=True)
register_op("QueueDequeueV2", _outputs_per_component, is_stateful=True)
register_op("QueueDequeueManyV2", _outputs_per_component, is_stateful=True)
register_op("QueueDequeueUpToV2", _outputs_per_component, is_stateful=True)
register_op("QueueCloseV2", lambda inputs, attrs, name: [], is_stateful=True)
register_op("QueueSizeV2", lambda inputs, attrs, name: [(_dtypes.int32, SCALAR)], is_stateful=True)
register_op("QueueIsClosedV2", lambda inputs, attrs, name: [(_dtypes.bool, SCALAR)], is_stateful=True)
for _op_type in (*CREATION_OPS, "QueueEnqueueV2", "QueueEnqueueManyV2", "QueueDequeueV2", "QueueDequeueManyV2",
                 "QueueDequeueUpToV2", "QueueCloseV2", "QueueSizeV2", "QueueIsClosedV2"):
    NotDifferentiable(_op_type)


# --- argument checks (TF's data_flow_ops helpers) -----------------------------------------------------------------
def _as_type_list(dtypes) -> list:
    dtypes = list(dtypes) if isinstance(dtypes, (list, tuple)) else [dtypes]
    return [_dtypes.as_dtype(d).base_dtype for d in dtypes]


def _as_shape_list(shapes, unknown_dim_allowed: bool = False) -> list | None:
    """`shapes` as a list of TensorShapes (one shape may be given alone); fully defined unless `unknown_dim_allowed`
    (PaddingFIFOQueue, which still needs every rank)."""
    if unknown_dim_allowed and (not isinstance(shapes, (list, tuple)) or not shapes
                                or any(s is None or isinstance(s, int) for s in shapes)):
        raise ValueError("When providing partial shapes, a list of shapes must be provided.")
    if shapes is None:
        return None
    if isinstance(shapes, TensorShape):
        shapes = [shapes]
    if not isinstance(shapes, (list, tuple)):
        raise TypeError("shapes must be a TensorShape or a list or tuple of TensorShapes.")
    if all(s is None or isinstance(s, int) for s in shapes):
        shapes = [shapes]
    shapes = [as_shape(s) for s in shapes]
    if not unknown_dim_allowed and any(not s.is_fully_defined() for s in shapes):
        raise ValueError(f"All shapes must be fully defined: {shapes}")
    if any(s.ndims is None for s in shapes):
        raise ValueError(f"All shapes must have a defined rank: {shapes}")
    return shapes


def _as_name_list(names, dtypes: list) -> list | None:
    if names is None:
        return None
    names = list(names) if isinstance(names, (list, tuple)) else [names]
    if len(names) != len(dtypes):
        raise ValueError("List of names must have the same length as the list of dtypes")
    return names


def _shape_common(a: TensorShape, b: TensorShape) -> TensorShape:
    """The most specific shape both `a` and `b` have (dims that differ become unknown)."""
    a, b = as_shape(a), as_shape(b)
    if a.ndims is None or b.ndims is None or a.ndims != b.ndims:
        return unknown_shape()
    return TensorShape([x if x is not None and x == y else None for x, y in zip(a.as_list(), b.as_list())])


# --- the queues -----------------------------------------------------------------------------------------------------
class QueueBase:
    """A queue reached through `queue_ref` (a resource handle), holding tuples of `dtypes` components with `shapes`;
    with `names`, elements are dicts enqueued and dequeued by those keys (tf.QueueBase)."""

    def __init__(self, dtypes, shapes, names, queue_ref):
        self._dtypes = dtypes
        if shapes is not None:
            if len(shapes) != len(dtypes):
                raise ValueError("Queue shapes must have the same length as dtypes")
            self._shapes = [TensorShape(s) for s in shapes]
        else:
            self._shapes = [unknown_shape() for _ in dtypes]
        if names is not None and len(names) != len(dtypes):
            raise ValueError("Queue names must have the same length as dtypes")
        self._names = names
        self._queue_ref = queue_ref
        self._name = queue_ref.op.name.split("/")[-1]

    @staticmethod
    def from_list(index, queues) -> "QueueBase":
        """The queue `queues[index]`, chosen when the graph runs (`index` may be a tensor): all must have the same
        dtypes and names; shapes are what they have in common."""
        if not queues or not isinstance(queues, list) or not all(isinstance(q, QueueBase) for q in queues):
            raise TypeError("A list of queues expected")
        dtypes = queues[0].dtypes
        if not all(dtypes == q.dtypes for q in queues[1:]):
            raise TypeError("Queues do not have matching component dtypes.")
        names = queues[0].names
        if not all(names == q.names for q in queues[1:]):
            raise TypeError("Queues do not have matching component names.")
        shapes = [functools.reduce(_shape_common, s) for s in zip(*[q.shapes for q in queues])]
        selected = gather(stack([q.queue_ref for q in queues]), index)
        return QueueBase(dtypes=dtypes, shapes=shapes, names=names, queue_ref=selected)

    queue_ref = property(lambda self: self._queue_ref, doc="The queue's resource handle (a Tensor).")
    name = property(lambda self: self._queue_ref.op.name, doc="The name of the queue's op.")
    dtypes = property(lambda self: self._dtypes, doc="The dtype of each component of an element.")
    shapes = property(lambda self: self._shapes, doc="The (static) shape of each component of an element.")
    names = property(lambda self: self._names, doc="The component names (dict keys), or None.")

    def _check_enqueue_dtypes(self, vals) -> list:
        """`vals` (a tensor, a list or tuple, or a dict keyed by the queue's names) as one tensor per component."""
        if isinstance(vals, dict):
            if not self._names:
                raise ValueError("Queue must have names to enqueue a dictionary")
            if sorted(self._names, key=str) != sorted(vals, key=str):
                raise ValueError(f"Keys in dictionary to enqueue do not match names of Queue.  Dictionary: "
                                 f"({sorted(vals, key=str)}), Queue: ({sorted(self._names, key=str)})")
            vals = [vals[k] for k in self._names]
        else:
            if self._names:
                raise ValueError("You must enqueue a dictionary in a Queue with names")
            if not isinstance(vals, (list, tuple)):
                vals = [vals]
        return [convert_to_tensor(v, dtype=d, name=f"component_{i}")
                for i, (v, d) in enumerate(zip(vals, self._dtypes))]

    @staticmethod
    def _scope_values(vals) -> list:
        if isinstance(vals, (list, tuple)):
            return list(vals)
        return list(vals.values()) if isinstance(vals, dict) else [vals]

    def _enqueue_op(self, op_type: str, tensors: list, scope: str):
        return apply_op(op_type, [self._queue_ref, *tensors],
                        {"Tcomponents": [t.dtype.base_dtype for t in tensors], "timeout_ms": -1}, name=scope)

    def enqueue(self, vals, name: str | None = None):
        """The op enqueuing one element; it blocks while the queue is full, and is CancelledError on a closed queue
        (or when the queue is closed with cancel_pending_enqueues, or the session closes, while it waits)."""
        with name_scope(name, f"{self._name}_enqueue", self._scope_values(vals)) as scope:
            tensors = self._check_enqueue_dtypes(vals)
            for t, shape in zip(tensors, self._shapes):
                t.shape.assert_is_compatible_with(shape)
            return self._enqueue_op("QueueEnqueueV2", tensors, scope)

    def enqueue_many(self, vals, name: str | None = None):
        """The op enqueuing the slices along dim 0 of `vals` as elements (all components share that dim)."""
        with name_scope(name, f"{self._name}_EnqueueMany", self._scope_values(vals)) as scope:
            tensors = self._check_enqueue_dtypes(vals)
            batch = tensors[0].shape.with_rank_at_least(1)[0]
            for t, shape in zip(tensors, self._shapes):
                batch = batch.merge_with(t.shape.with_rank_at_least(1)[0])
                if t.shape.ndims is not None:
                    TensorShape(t.shape.as_list()[1:]).assert_is_compatible_with(shape)
            return self._enqueue_op("QueueEnqueueManyV2", tensors, scope)

    def _dequeued(self, op, first_dim: list | None):
        """The dequeue op's outputs with the queue's shapes (after `first_dim` for batches), as a dict by names, a
        single tensor, or a list."""
        for t, shape in zip(op.outputs, self._shapes):
            t.set_shape(shape if first_dim is None else TensorShape(first_dim).concatenate(shape))
        tensors = list(op.outputs)
        if self._names:
            return {n: tensors[i] for i, n in enumerate(self._names)}
        return tensors[0] if len(tensors) == 1 else tensors

    def dequeue(self, name: str | None = None):
        """One element; blocks while the queue is empty; OutOfRangeError once it is closed and empty."""
        op = apply_op("QueueDequeueV2", [self._queue_ref], {"component_types": list(self._dtypes),
                                                            "timeout_ms": -1}, name=name or f"{self._name}_Dequeue")
        return self._dequeued(op, None)

    def dequeue_many(self, n, name: str | None = None):
        """`n` elements stacked along a new dim 0, taken all at once; blocks until there are `n`; OutOfRangeError
        when the queue is closed with fewer."""
        n = int_const(n, "n")
        op = apply_op("QueueDequeueManyV2", [self._queue_ref, n],
                      {"component_types": list(self._dtypes), "timeout_ms": -1},
                      name=name or f"{self._name}_DequeueMany")
        value = constant_value(n)
        return self._dequeued(op, [None if value is None else int(value)])

    def dequeue_up_to(self, n, name: str | None = None):
        """Like dequeue_many, but on a closed queue with fewer than `n` (and more than 0) elements it returns them."""
        op = apply_op("QueueDequeueUpToV2", [self._queue_ref, int_const(n, "n")],
                      {"component_types": list(self._dtypes), "timeout_ms": -1},
                      name=name or f"{self._name}_DequeueUpTo")
        return self._dequeued(op, [None])

    def close(self, cancel_pending_enqueues: bool = False, name: str | None = None):
        """The op closing the queue: later enqueues fail, dequeues drain what is left, then fail with
        OutOfRangeError; with `cancel_pending_enqueues`, enqueues waiting now fail too (CancelledError)."""
        return apply_op("QueueCloseV2", [self._queue_ref], {"cancel_pending_enqueues": bool(cancel_pending_enqueues)},
                        name=name or f"{self._name}_Close")

    def is_closed(self, name: str | None = None):
        """A bool scalar: whether the queue is closed."""
        return apply_op("QueueIsClosedV2", [self._queue_ref], {}, name=name or f"{self._name}_Is_Closed").outputs[0]

    def size(self, name: str | None = None):
        """An int32 scalar: the number of elements in the queue."""
        return apply_op("QueueSizeV2", [self._queue_ref], {}, name=name or f"{self._name}_Size").outputs[0]


def _make_queue(op_type: str, dtypes: list, shapes, capacity: int, shared_name, name: str, **attrs):
    return apply_op(op_type, [], {"component_types": list(dtypes), "shapes": list(shapes or []),
                                  "capacity": int(capacity), "container": "", "shared_name": shared_name or "",
                                  **attrs}, name=name).outputs[0]


class FIFOQueue(QueueBase):
    """A queue dequeuing in first-in first-out order (tf.FIFOQueue). Without `shapes`, elements may have any shapes,
    but dequeue_many and dequeue_up_to need them."""

    def __init__(self, capacity: int, dtypes, shapes=None, names=None, shared_name: str | None = None,
                 name: str = "fifo_queue"):
        dtypes = _as_type_list(dtypes)
        shapes = _as_shape_list(shapes)
        names = _as_name_list(names, dtypes)
        ref = _make_queue("FIFOQueueV2", dtypes, shapes, capacity, shared_name, name)
        super().__init__(dtypes, shapes, names, ref)


class PaddingFIFOQueue(QueueBase):
    """A FIFOQueue whose `shapes` (required) may have None dims: elements may differ there, and dequeue_many pads
    each component with zeros to the largest in the batch (tf.PaddingFIFOQueue)."""

    def __init__(self, capacity: int, dtypes, shapes, names=None, shared_name: str | None = None,
                 name: str = "padding_fifo_queue"):
        dtypes = _as_type_list(dtypes)
        shapes = _as_shape_list(shapes, unknown_dim_allowed=True)
        names = _as_name_list(names, dtypes)
        if len(dtypes) != len(shapes):
            raise ValueError(f"Shapes must be provided for all components, but received {len(dtypes)} dtypes and "
                             f"{len(shapes)} shapes.")
        ref = _make_queue("PaddingFIFOQueueV2", dtypes, shapes, capacity, shared_name, name)
        super().__init__(dtypes, shapes, names, ref)


class RandomShuffleQueue(QueueBase):
    """A queue dequeuing elements in random order, keeping at least `min_after_dequeue` elements after each dequeue
    until it is closed, so that what comes out is well mixed (tf.RandomShuffleQueue). `seed` follows the graph
    seed rules of random ops; with `shared_name` and no op seed, the shared name picks the second seed, as in TF."""

    def __init__(self, capacity: int, min_after_dequeue: int, dtypes, shapes=None, names=None, seed=None,
                 shared_name: str | None = None, name: str = "random_shuffle_queue"):
        dtypes = _as_type_list(dtypes)
        shapes = _as_shape_list(shapes)
        names = _as_name_list(names, dtypes)
        seed1, seed2 = get_seed(seed)
        if seed1 is None and seed2 is None:
            seed1, seed2 = 0, 0
        elif seed is None and shared_name is not None:
            digest = hashlib.md5((str(seed1) + shared_name).encode("utf-8")).hexdigest()  # noqa: S324 - a seed
            seed2 = int(digest[:8], 16) & 0x7FFFFFFF
        ref = _make_queue("RandomShuffleQueueV2", dtypes, shapes, capacity, shared_name, name,
                          min_after_dequeue=int(min_after_dequeue), seed=int(seed1), seed2=int(seed2))
        super().__init__(dtypes, shapes, names, ref)


class PriorityQueue(QueueBase):
    """A queue dequeuing the element with the smallest priority first (tf.PriorityQueue). Elements carry an extra
    first component, the int64 priority (a scalar for enqueue, a vector for enqueue_many), which dequeues return
    too; `types` and `shapes` describe the other components."""

    def __init__(self, capacity: int, types, shapes=None, names=None, shared_name: str | None = None,
                 name: str = "priority_queue"):
        types = _as_type_list(types)
        shapes = _as_shape_list(shapes)
        ref = _make_queue("PriorityQueueV2", types, shapes, capacity, shared_name, name)
        super().__init__([_dtypes.int64, *types], [TensorShape([]), *shapes] if shapes else shapes, names, ref)


__all__ = ["QueueBase", "FIFOQueue", "PaddingFIFOQueue", "RandomShuffleQueue", "PriorityQueue"]
