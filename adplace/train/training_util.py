"""The global step (tf.train.get_global_step and friends): an int64 scalar Variable named "global_step", in the
GLOBAL_STEP collection, that apply_gradients(global_step=...) increments once per training step.

    step = tf.train.get_or_create_global_step()    # 'global_step:0', int64, not trainable, follows device scopes
    train = opt.minimize(loss, global_step=step)
    tf.train.global_step(sess, step)               # 0 before the first run of `train`, then 1, 2, ...
"""
from __future__ import annotations

import logging

from adplace.framework import dtypes as _dtypes
from adplace.framework.graph import Graph, GraphKeys, get_default_graph
from adplace.framework.operation import Tensor
from adplace.ops import array_ops, state_ops
from adplace.ops.variables import Variable

_log = logging.getLogger(__name__)

# The collection caching one read of the global step per graph (TF's name), shared by hooks and increments.
GLOBAL_STEP_READ_KEY = "global_step_read_op_cache"


def global_step(sess, global_step_tensor) -> int:
    """The current value of the global step, as a Python int (tf.train.global_step).

    Args:
      sess: the Session to read it in.
      global_step_tensor: the global step Variable or Tensor, or its name.
    """
    return int(sess.run(global_step_tensor))


def get_global_step(graph: Graph | None = None):
    """The graph's global step: the one member of the GLOBAL_STEP collection, else the tensor 'global_step:0',
    else None (also, with an error logged, when the collection holds several).

    Raises:
      TypeError: the global step found is not an integer scalar Variable or Tensor.
    """
    graph = graph or get_default_graph()
    found = graph.get_collection(GraphKeys.GLOBAL_STEP)
    if len(found) == 1:
        step = found[0]
    elif not found:
        try:
            step = graph.get_tensor_by_name("global_step:0")
        except KeyError:
            return None
    else:
        _log.error("Multiple tensors in global_step collection.")
        return None
    assert_global_step(step)
    return step


def create_global_step(graph: Graph | None = None) -> Variable:
    """Create the global step Variable (int64 scalar, zeros, not trainable) at the root name scope.

    Raises:
      ValueError: the graph already has a global step.
    """
    graph = graph or get_default_graph()
    if get_global_step(graph) is not None:
        raise ValueError('"global_step" already exists.')
    with graph.as_default(), graph.name_scope(None):
        return Variable(lambda: array_ops.zeros([], dtype=_dtypes.int64), trainable=False, name=GraphKeys.GLOBAL_STEP,
                        dtype=_dtypes.int64, collections=[GraphKeys.GLOBAL_VARIABLES, GraphKeys.GLOBAL_STEP])


def get_or_create_global_step(graph: Graph | None = None):
    """The graph's global step, created first when it has none."""
    graph = graph or get_default_graph()
    step = get_global_step(graph)
    return create_global_step(graph) if step is None else step


def assert_global_step(global_step_tensor) -> None:
    """Raise TypeError unless `global_step_tensor` is an integer scalar Variable or Tensor."""
    if not isinstance(global_step_tensor, (Variable, Tensor)):
        raise TypeError(f'Existing "global_step" must be a Variable or Tensor: {global_step_tensor}.')
    if not global_step_tensor.dtype.base_dtype.is_integer:
        raise TypeError(f'Existing "global_step" does not have integer type: {global_step_tensor.dtype!r}')
    shape = global_step_tensor.get_shape()
    if shape.ndims != 0 and shape.is_fully_defined():
        raise TypeError(f'Existing "global_step" is not scalar: {shape}')


def _get_global_step_read(graph: Graph | None = None):
    """The cached read of the global step (None before one is made). RuntimeError if the cache holds several."""
    cached = (graph or get_default_graph()).get_collection(GLOBAL_STEP_READ_KEY)
    if len(cached) > 1:
        raise RuntimeError(f"There are multiple items in collection {GLOBAL_STEP_READ_KEY}. "
                           "There should be only one.")
    return cached[0] if cached else None


def _get_or_create_global_step_read(graph: Graph | None = None):
    """A tensor reading the global step once per step, built once per graph under '<global_step>/' and cached.

    Its value is the step before any `_increment_global_step` in the same run, since each increment waits for it.
    None when the graph has no global step.
    """
    graph = graph or get_default_graph()
    cached = _get_global_step_read(graph)
    if cached is not None:
        return cached
    step = get_global_step(graph)
    if step is None:
        return None
    with graph.as_default(), graph.name_scope(None), graph.name_scope(step.op.name + "/"):
        value = step.initialized_value() if isinstance(step, Variable) else step
        graph.add_to_collection(GLOBAL_STEP_READ_KEY, value + 0)
    return _get_global_step_read(graph)


def _increment_global_step(increment, graph: Graph | None = None):
    """An op adding `increment` to the global step after the step's cached read (see above).

    Raises:
      ValueError: the graph has no global step.
    """
    graph = graph or get_default_graph()
    step = get_global_step(graph)
    if step is None:
        raise ValueError("Global step tensor should be created by tf.train.get_or_create_global_step before "
                         "calling increment.")
    read = _get_or_create_global_step_read(graph)
    with graph.as_default(), graph.name_scope(None), graph.name_scope(step.op.name + "/"), \
            graph.control_dependencies([read]):
        return state_ops.assign_add(step, increment)
