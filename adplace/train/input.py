"""TF1's queue-based input pipelines (tf.train.string_input_producer, slice_input_producer, batch, shuffle_batch, ...):
producers fill a FIFOQueue from a tensor, batchers a queue from tensors, and queue runners (GraphKeys.QUEUE_RUNNERS)
keep them filled once tf.train.start_queue_runners() is called.

    filename_queue = tf.train.string_input_producer(["a.csv", "b.csv"], num_epochs=2)
    image, label = tf.train.slice_input_producer([images, labels], shuffle=False)
    images, labels = tf.train.shuffle_batch([image, label], batch_size=32, capacity=200, min_after_dequeue=100)

`num_epochs` makes a local variable (`epochs`, run tf.local_variables_initializer()) counted up by a CountUpTo op
per pass: after the last one the producer's enqueue raises OutOfRangeError, its runner closes the queue and readers
get OutOfRangeError once it drains. Each queue adds TF's `fraction_of_<capacity>_full` scalar summary
(`fraction_over_<min_after_dequeue>_of_<capacity - min_after_dequeue>_full` for shuffling batchers). As in TF,
batchers take a list or a dict of tensors and return the same kind (a list of one tensor gives the tensor); `keep_input` (the maybe_* variants) is a bool
scalar (enqueue all or nothing) or, with enqueue_many, a vector choosing examples. SparseTensor inputs come out as
SparseTensors with a batch dimension (through TF's SparseTensorsMap ops, input_sparse.py).
"""
from __future__ import annotations

from adplace.framework import dtypes as _dtypes
from adplace.framework.conversion import convert_to_tensor
from adplace.framework.default_graph import control_dependencies, name_scope
from adplace.framework.graph import GraphKeys
from adplace.framework.operation import Tensor
from adplace.framework.sparse_tensor import SparseTensor
from adplace.framework.tensor_shape import as_shape
from adplace.framework.tensor_util import constant_value
from adplace.ops import array_ops, math_ops, random_ops, state_ops
from adplace.ops.check_ops import Assert
from adplace.ops.constant_op import constant
from adplace.ops.control_flow_ops import no_op
from adplace.ops.control_flow_v1 import cond
from adplace.ops.data_flow_ops import dynamic_partition
from adplace.ops.queue_ops import FIFOQueue, PaddingFIFOQueue, RandomShuffleQueue
from adplace.ops.slicing_ops import gather
from adplace.ops.summary_ops import scalar as _scalar_summary
from adplace.ops.variables import Variable
from adplace.train import input_sparse
from adplace.train.queue_runner import QueueRunner, add_queue_runner


# --- producers ------------------------------------------------------------------------------------------------------
def match_filenames_once(pattern, name: str | None = None) -> Variable:
    """A local variable (run tf.local_variables_initializer()) holding the sorted names of the files that match
    `pattern` (a glob, or a list of them) when it is initialized, so later file additions do not change it."""
    from adplace.ops.file_ops import matching_files

    with name_scope(name, "matching_filenames", [pattern]) as scope:
        return Variable(matching_files(pattern), name=scope, trainable=False, validate_shape=False,
                        collections=[GraphKeys.LOCAL_VARIABLES])


def limit_epochs(tensor, num_epochs: int | None = None, name: str | None = None):
    """`tensor`, whose evaluation raises OutOfRangeError after `num_epochs` evaluations (counted by the local
    variable `epochs`); `tensor` itself when `num_epochs` is None.

    Raises:
      ValueError: `num_epochs` is not positive.
    """
    if num_epochs is None:
        return tensor
    if num_epochs <= 0:
        raise ValueError(f"num_epochs must be > 0 not {num_epochs}.")
    with name_scope(name, "limit_epochs", [tensor]) as scope:
        epochs = Variable(constant(0, dtype=_dtypes.int64), name="epochs", trainable=False,
                          collections=[GraphKeys.LOCAL_VARIABLES])
        counter = state_ops.count_up_to(epochs, num_epochs)
        with control_dependencies([counter]):
            return array_ops.identity(tensor, name=scope)


def _fraction_full(queue, capacity: int) -> None:
    _scalar_summary(f"fraction_of_{capacity}_full", math_ops.cast(queue.size(), _dtypes.float32) * (1. / capacity))


def input_producer(input_tensor, element_shape=None, num_epochs: int | None = None, shuffle: bool = True,
                   seed: int | None = None, capacity: int = 32, shared_name: str | None = None,
                   summary_name: str | None = None, name: str | None = None, cancel_op=None) -> FIFOQueue:
    """A FIFOQueue filled with the rows of `input_tensor` (shuffled per epoch with `shuffle`), `num_epochs` times or
    forever, by a QueueRunner added to the graph's queue runners.

    Raises:
      ValueError: the rows' shape is not fully defined by `input_tensor` and `element_shape`.
    """
    with name_scope(name, "input_producer", [input_tensor]):
        input_tensor = convert_to_tensor(input_tensor, name="input_tensor")
        element_shape = input_tensor.shape[1:].merge_with(as_shape(element_shape))
        if not element_shape.is_fully_defined():
            raise ValueError("Either `input_tensor` must have a fully defined shape or `element_shape` must be "
                             "specified")
        if shuffle:
            input_tensor = random_ops.random_shuffle(input_tensor, seed=seed)
        input_tensor = limit_epochs(input_tensor, num_epochs)
        queue = FIFOQueue(capacity=capacity, dtypes=[input_tensor.dtype.base_dtype], shapes=[element_shape],
                          shared_name=shared_name, name=name or "fifo_queue")
        add_queue_runner(QueueRunner(queue, [queue.enqueue_many([input_tensor])], cancel_op=cancel_op))
        if summary_name is not None:
            _scalar_summary(summary_name, math_ops.cast(queue.size(), _dtypes.float32) * (1. / capacity))
        return queue


def string_input_producer(string_tensor, num_epochs: int | None = None, shuffle: bool = True,
                          seed: int | None = None, capacity: int = 32, shared_name: str | None = None,
                          name: str | None = None, cancel_op=None) -> FIFOQueue:
    """A queue of the strings of the 1-D `string_tensor` (file names, typically) for a reader; an empty tensor
    fails when the producer runs (InvalidArgumentError from an Assert).

    Raises:
      ValueError: `string_tensor` is an empty Python list.
    """
    empty = "string_input_producer requires a non-null input tensor"
    if not isinstance(string_tensor, Tensor) and not len(string_tensor):
        raise ValueError(empty)
    with name_scope(name, "input_producer", [string_tensor]) as scope:
        string_tensor = convert_to_tensor(string_tensor, dtype=_dtypes.string)
        with control_dependencies([Assert(math_ops.greater(array_ops.size(string_tensor), 0), [empty])]):
            string_tensor = array_ops.identity(string_tensor)
        return input_producer(string_tensor, element_shape=[], num_epochs=num_epochs, shuffle=shuffle, seed=seed,
                              capacity=capacity, shared_name=shared_name, name=scope,
                              summary_name=f"fraction_of_{capacity}_full", cancel_op=cancel_op)


def range_input_producer(limit, num_epochs: int | None = None, shuffle: bool = True, seed: int | None = None,
                         capacity: int = 32, shared_name: str | None = None, name: str | None = None) -> FIFOQueue:
    """A queue of the int32 numbers 0 .. `limit` - 1."""
    with name_scope(name, "input_producer", [limit]) as scope:
        return input_producer(math_ops.range(limit), [], num_epochs, shuffle, seed, capacity, shared_name,
                              f"fraction_of_{capacity}_full", scope)


def slice_input_producer(tensor_list, num_epochs: int | None = None, shuffle: bool = True, seed: int | None = None,
                         capacity: int = 32, shared_name: str | None = None, name: str | None = None) -> list:
    """One row of every tensor of `tensor_list` (all with the same dim 0), the same row of each: the tensors are
    gathered at an index from a range_input_producer.

    Raises:
      ValueError: `tensor_list` is empty.
    """
    with name_scope(name, "input_producer", list(tensor_list)):
        tensor_list = _convert_all(tensor_list)
        if not tensor_list:
            raise ValueError("Expected at least one tensor in slice_input_producer().")
        rows = array_ops.shape(tensor_list[0])[0]
        index = range_input_producer(rows, num_epochs=num_epochs, shuffle=shuffle, seed=seed, capacity=capacity,
                                     shared_name=shared_name).dequeue()
        return [gather(t, index) for t in tensor_list]


# --- batchers: argument handling --------------------------------------------------------------------------------------
def _convert_all(tensors) -> list:
    if any(isinstance(t, SparseTensor) for t in tensors):
        raise TypeError("SparseTensor inputs to input producers are not supported (TF's neither)")
    return [convert_to_tensor(t) for t in tensors]


def _as_list(tensors) -> list:
    """The tensors of a list, or of a dict in the order of its keys as strings (TF's order)."""
    return [tensors[k] for k in sorted(tensors, key=str)] if isinstance(tensors, dict) else list(tensors)


def _as_lists(tensors_list) -> list:
    if not tensors_list:
        raise ValueError("Expected at least one set of tensors")
    if isinstance(tensors_list[0], dict):
        keys = set(tensors_list[0])
        if any(set(t) != keys for t in tensors_list[1:]):
            raise ValueError("All dictionaries in tensors_list must have the same keys")
    return [_as_list(t) for t in tensors_list]


def _as_given(original, dequeued):
    """The dequeued tensors as the caller gave them: a dict by the same keys; else, as TF's dequeue gives them, a
    list, or the tensor itself when there is one (tf.train.batch([image], 32) is a Tensor)."""
    if isinstance(original, dict):
        if not isinstance(dequeued, (list, tuple)):
            dequeued = [dequeued]
        return {k: dequeued[i] for i, k in enumerate(sorted(original, key=str))}
    return dequeued


def _keep_input(keep_input, enqueue_many: bool) -> Tensor:
    keep_input = convert_to_tensor(keep_input)
    ndims = keep_input.shape.ndims
    if ndims is None:
        raise ValueError("`keep_input` dimensions must be known at graph construction.")
    if not enqueue_many and ndims == 1:
        raise ValueError("`keep_input` cannot be a vector when `enqueue_many=False`.")
    if ndims > 1:
        raise ValueError("`keep_input` must be 0 or 1 dimensions.")
    return keep_input


def _common_dtypes(lists: list) -> list:
    first = [t.dtype for t in lists[0]]
    for other in lists[1:]:
        if [t.dtype for t in other] != first:
            raise TypeError(f"Expected types to be consistent: {', '.join(d.name for d in first)} vs. "
                            f"{', '.join(t.dtype.name for t in other)}.")
    return first


def _element_shapes(lists: list, shapes, enqueue_many: bool) -> list:
    """`shapes`, or each component's shape (less dim 0 with enqueue_many) from the first list, which the others'
    must be compatible with (TF keeps the first's dims)."""
    if shapes is not None:
        return shapes
    for tensors in lists:
        for t in tensors:
            if t.shape.ndims is None:
                raise ValueError(f"Cannot infer Tensor's rank: {t}")
    found = []
    for i in range(len(lists[0])):
        each = [t[i].shape.with_rank_at_least(1)[1:] if enqueue_many else t[i].shape for t in lists]
        for s in each[1:]:
            each[0].merge_with(s)
        found.append(each[0].as_list())
    return found


def _enqueue_ops(queue, lists: list, enqueue_many: bool, keep_input: Tensor) -> list:
    """One enqueue op per tensor list, enqueuing what `keep_input` keeps."""
    enqueue = queue.enqueue_many if enqueue_many else queue.enqueue
    if keep_input.shape.ndims == 1:
        chosen = math_ops.cast(keep_input, _dtypes.int32)
        return [enqueue([dynamic_partition(t, chosen, num_partitions=2)[1] for t in tensors]) for tensors in lists]
    keep = constant_value(keep_input)
    if keep is not None:
        return [enqueue(tensors) if bool(keep) else no_op() for tensors in lists]
    return [cond(keep_input, lambda tensors=tensors: enqueue(tensors), no_op) for tensors in lists]


def _dequeue(queue, batch_size, allow_smaller_final_batch: bool, name: str):
    if allow_smaller_final_batch:
        return queue.dequeue_up_to(batch_size, name=name)
    return queue.dequeue_many(batch_size, name=name)


def _batch_queue(tensors_list, given, keep_input, *, default_name: str, batch_size, capacity: int,
                 enqueue_many: bool, shapes, allow_smaller_final_batch: bool, name: str | None, make_queue,
                 threads: int = 1, summary=_fraction_full):
    """What every batcher does: a queue from `make_queue(dtypes, shapes)` filled from each tensor list of
    `tensors_list` (`threads` runner threads for a single list), its summary, and the batch dequeued from it,
    shaped as `given` (a list or dict)."""
    lists = _as_lists(tensors_list)
    flat = [t for tensors in lists for t in tensors]
    with name_scope(name, default_name, flat + [keep_input]) as scope:
        lists = [input_sparse.convert(tensors) for tensors in lists]
        if not lists[0]:
            raise ValueError(f"Expected at least one tensor in {default_name}().")
        keep_input = _keep_input(keep_input, enqueue_many)
        lists, sparse_infos = input_sparse.store_lists(lists, enqueue_many, keep_input)
        queue = make_queue(_common_dtypes(lists), _element_shapes(lists, shapes, enqueue_many))
        ops = _enqueue_ops(queue, lists, enqueue_many, keep_input)
        add_queue_runner(QueueRunner(queue, ops * threads if len(ops) == 1 else ops))
        summary(queue, capacity)
        dequeued = _dequeue(queue, batch_size, allow_smaller_final_batch, scope)
        return _as_given(given, input_sparse.restore(dequeued, sparse_infos))


def _fifo(capacity: int, dynamic_pad: bool, shared_name: str | None):
    kind = PaddingFIFOQueue if dynamic_pad else FIFOQueue
    return lambda dtypes, shapes: kind(capacity=capacity, dtypes=dtypes, shapes=shapes, shared_name=shared_name)


def _shuffling(capacity: int, min_after_dequeue: int, seed, shared_name: str | None):
    if capacity <= min_after_dequeue:
        raise ValueError(f"capacity {capacity} must be bigger than min_after_dequeue {min_after_dequeue}.")

    def make(dtypes, shapes):
        return RandomShuffleQueue(capacity=capacity, min_after_dequeue=min_after_dequeue, seed=seed, dtypes=dtypes,
                                  shapes=shapes, shared_name=shared_name)

    def summary(queue, capacity):
        over = math_ops.cast(math_ops.maximum(0, queue.size() - min_after_dequeue), _dtypes.float32)
        _scalar_summary(f"fraction_over_{min_after_dequeue}_of_{capacity - min_after_dequeue}_full",
                        over * (1. / (capacity - min_after_dequeue)))
    return make, summary


# --- batchers -------------------------------------------------------------------------------------------------------
def maybe_batch(tensors, keep_input, batch_size, num_threads: int = 1, capacity: int = 32, enqueue_many: bool = False,
                shapes=None, dynamic_pad: bool = False, allow_smaller_final_batch: bool = False,
                shared_name: str | None = None, name: str | None = None):
    """tf.train.batch of the examples `keep_input` keeps."""
    return _batch_queue([tensors], tensors, keep_input, default_name="batch", batch_size=batch_size,
                        capacity=capacity, enqueue_many=enqueue_many, shapes=shapes,
                        allow_smaller_final_batch=allow_smaller_final_batch, name=name,
                        make_queue=_fifo(capacity, dynamic_pad, shared_name), threads=num_threads)


def batch(tensors, batch_size, num_threads: int = 1, capacity: int = 32, enqueue_many: bool = False, shapes=None,
          dynamic_pad: bool = False, allow_smaller_final_batch: bool = False, shared_name: str | None = None,
          name: str | None = None):
    """Batches of `batch_size` examples of `tensors` (a list or dict of tensors: one example, or with
    `enqueue_many` a batch of them along dim 0), in arrival order, through a FIFOQueue filled by `num_threads`
    threads; with `dynamic_pad` a PaddingFIFOQueue pads each batch to its longest example; with
    `allow_smaller_final_batch` the last batch may be smaller (its dim 0 is then unknown statically)."""
    return maybe_batch(tensors, True, batch_size, num_threads, capacity, enqueue_many, shapes, dynamic_pad,
                       allow_smaller_final_batch, shared_name, name)


def maybe_batch_join(tensors_list, keep_input, batch_size, capacity: int = 32, enqueue_many: bool = False,
                     shapes=None, dynamic_pad: bool = False, allow_smaller_final_batch: bool = False,
                     shared_name: str | None = None, name: str | None = None):
    """tf.train.batch_join of the examples `keep_input` keeps."""
    return _batch_queue(tensors_list, tensors_list[0] if tensors_list else [], keep_input,
                        default_name="batch_join", batch_size=batch_size, capacity=capacity,
                        enqueue_many=enqueue_many, shapes=shapes, allow_smaller_final_batch=allow_smaller_final_batch,
                        name=name, make_queue=_fifo(capacity, dynamic_pad, shared_name))


def batch_join(tensors_list, batch_size, capacity: int = 32, enqueue_many: bool = False, shapes=None,
               dynamic_pad: bool = False, allow_smaller_final_batch: bool = False, shared_name: str | None = None,
               name: str | None = None):
    """tf.train.batch over several lists (or dicts) of tensors with the same dtypes, one runner thread each (e.g.
    one reader each): batches mix their examples."""
    return maybe_batch_join(tensors_list, True, batch_size, capacity, enqueue_many, shapes, dynamic_pad,
                            allow_smaller_final_batch, shared_name, name)


def maybe_shuffle_batch(tensors, batch_size, capacity: int, min_after_dequeue: int, keep_input,
                        num_threads: int = 1, seed=None, enqueue_many: bool = False, shapes=None,
                        allow_smaller_final_batch: bool = False, shared_name: str | None = None,
                        name: str | None = None):
    """tf.train.shuffle_batch of the examples `keep_input` keeps."""
    make, summary = _shuffling(capacity, min_after_dequeue, seed, shared_name)
    return _batch_queue([tensors], tensors, keep_input, default_name="shuffle_batch", batch_size=batch_size,
                        capacity=capacity, enqueue_many=enqueue_many, shapes=shapes,
                        allow_smaller_final_batch=allow_smaller_final_batch, name=name, make_queue=make,
                        threads=num_threads, summary=summary)


def shuffle_batch(tensors, batch_size, capacity: int, min_after_dequeue: int, num_threads: int = 1, seed=None,
                  enqueue_many: bool = False, shapes=None, allow_smaller_final_batch: bool = False,
                  shared_name: str | None = None, name: str | None = None):
    """tf.train.batch through a RandomShuffleQueue: batches draw at random among the queued examples, of which at
    least `min_after_dequeue` stay after each batch (until the input ends).

    Raises:
      ValueError: `capacity` is not above `min_after_dequeue`.
    """
    return maybe_shuffle_batch(tensors, batch_size, capacity, min_after_dequeue, True, num_threads, seed,
                               enqueue_many, shapes, allow_smaller_final_batch, shared_name, name)


def maybe_shuffle_batch_join(tensors_list, batch_size, capacity: int, min_after_dequeue: int, keep_input, seed=None,
                             enqueue_many: bool = False, shapes=None, allow_smaller_final_batch: bool = False,
                             shared_name: str | None = None, name: str | None = None):
    """tf.train.shuffle_batch_join of the examples `keep_input` keeps."""
    make, summary = _shuffling(capacity, min_after_dequeue, seed, shared_name)
    return _batch_queue(tensors_list, tensors_list[0] if tensors_list else [], keep_input,
                        default_name="shuffle_batch_join", batch_size=batch_size, capacity=capacity,
                        enqueue_many=enqueue_many, shapes=shapes, allow_smaller_final_batch=allow_smaller_final_batch,
                        name=name, make_queue=make, summary=summary)


def shuffle_batch_join(tensors_list, batch_size, capacity: int, min_after_dequeue: int, seed=None,
                       enqueue_many: bool = False, shapes=None, allow_smaller_final_batch: bool = False,
                       shared_name: str | None = None, name: str | None = None):
    """tf.train.shuffle_batch over several lists (or dicts) of tensors, one runner thread each."""
    return maybe_shuffle_batch_join(tensors_list, batch_size, capacity, min_after_dequeue, True, seed, enqueue_many,
                                    shapes, allow_smaller_final_batch, shared_name, name)


__all__ = ["batch", "batch_join", "input_producer", "limit_epochs", "maybe_batch", "maybe_batch_join",
           "maybe_shuffle_batch", "maybe_shuffle_batch_join", "range_input_producer", "shuffle_batch",
           "shuffle_batch_join", "slice_input_producer", "string_input_producer"]
