"""Device functions: ADCME's `assign_to_device`, TF's `replica_device_setter` and its ps strategies.

    with tf.device(tf.assign_to_device("/device:GPU:0")):
        a = tf.Variable(1.0)      # VariableV2 is a PS op: a.device == "/device:CPU:0"
        b = tf.sin(a)             # b.device == "/device:GPU:0"

`GreedyLoadBalancingStrategy` and `byte_size_load_fn` are TF's tf.contrib.training names (re-exported there).
"""
from __future__ import annotations

import logging
from typing import Callable

import numpy as np

from adplace.framework.device_spec import DeviceSpec
from adplace.framework.operation import Operation
from adplace.framework.tensor_shape import TensorShape

_log = logging.getLogger("adplace")

PS_OPS = ("Variable", "VariableV2", "AutoReloadVariable")
STANDARD_PS_OPS = ("Variable", "VariableV2", "AutoReloadVariable", "MutableHashTable", "MutableHashTableV2",
                   "MutableHashTableOfTensors", "MutableHashTableOfTensorsV2", "MutableDenseHashTable",
                   "MutableDenseHashTableV2", "VarHandleOp")


def _op_type(op) -> str:
    """The type of an Operation, or of a NodeDef proto (its `op` field)."""
    return op.type if isinstance(op, Operation) else op.op


def assign_to_device(device: str, ps_device: str = "/device:CPU:0") -> Callable:
    """A device function: variables (PS_OPS) on `ps_device`, every other op on `device` (ADCME's closure).

    It accepts an Operation or a NodeDef, as ADCME's Julia closure does.
    """
    def _assign(op):
        return ps_device if _op_type(op) in PS_OPS else device
    return _assign


class _RoundRobinStrategy:
    """Assigns ps ops to tasks 0, 1, ..., n-1, 0, ... in creation order (TF's default ps_strategy)."""

    def __init__(self, num_tasks: int):
        self._num_tasks, self._next_task = num_tasks, 0

    def __call__(self, unused_op) -> int:
        task = self._next_task
        self._next_task = (self._next_task + 1) % self._num_tasks
        return task


class GreedyLoadBalancingStrategy:
    """A ps_strategy that gives each ps op to the least-loaded task so far (ties: the lowest index).

    `load_fn(op)` measures an op's load (e.g. `byte_size_load_fn`); the chosen task's load grows by it. Greedy, so
    the result depends on the order variables are created (tf.contrib.training.GreedyLoadBalancingStrategy).

        greedy = tf.contrib.training.GreedyLoadBalancingStrategy(2, tf.contrib.training.byte_size_load_fn)
        with tf.device(tf.train.replica_device_setter(ps_tasks=2, ps_strategy=greedy)):
            big = tf.Variable(tf.zeros([100]))   # /job:ps/task:0 (loads: 400, 0 bytes)
            b1 = tf.Variable(tf.zeros([10]))     # /job:ps/task:1 (400, 40)
            b2 = tf.Variable(tf.zeros([10]))     # /job:ps/task:1 (400, 80); round robin would say task:0
    """

    def __init__(self, num_tasks: int, load_fn: Callable[[Operation], float]):
        self._num_tasks, self._load_fn = num_tasks, load_fn
        self._ps_loads = np.zeros(num_tasks)

    def __call__(self, op: Operation) -> int:
        task = int(np.argmin(self._ps_loads))  # argmin takes the first minimum: ties go to the lowest index
        self._ps_loads[task] += self._load_fn(op)
        return task


def byte_size_load_fn(op: Operation) -> int:
    """The bytes of `op`'s single output (a variable's storage): static element count times dtype size.

    The load function meant for GreedyLoadBalancingStrategy (tf.contrib.training.byte_size_load_fn). When the
    output's shape is not fully defined it falls back on the op's `shape` attr, as TF does for legacy Variables.

    Raises:
      ValueError: `op` does not have exactly one output, or neither its output nor its `shape` attr gives a fully
        defined shape.
    """
    if len(op.outputs) != 1:
        raise ValueError(f"Op {op.name!r} ({op.type}) must have a single output; it has {len(op.outputs)}.")
    output = op.outputs[0]
    shape = output.get_shape()
    if not shape.is_fully_defined():
        shape = TensorShape(op.get_attr("shape"))  # ValueError naming the op when it has no shape attr, as in TF
        if not shape.is_fully_defined():
            raise ValueError(f"Shape {shape} is not fully defined: byte_size_load_fn cannot size op {op.name!r} "
                             f"({op.type}). Give the variable a fully defined shape, or use another load_fn.")
    return shape.num_elements() * output.dtype.size


def _ps_task_count(cluster, ps_device: str) -> int | None:
    """Tasks of the ps job of `cluster` (a dict or a ClusterSpec-like object with `as_dict`); None if it has none."""
    if hasattr(cluster, "as_dict"):
        cluster = cluster.as_dict()
    if not isinstance(cluster, dict):
        raise TypeError(f"`cluster` must be a dictionary mapping one or more job names to lists of network "
                        f"addresses, or a ClusterSpec; got {cluster!r}")
    ps_job = DeviceSpec.from_string(ps_device or "").job
    tasks = cluster.get(ps_job)
    if tasks is not None and not isinstance(tasks, (list, tuple, dict)):
        raise TypeError(f"The tasks for job {ps_job!r} must be a list or a dictionary from integers to strings; got "
                        f"{tasks!r}")
    return None if tasks is None else len(tasks)


def replica_device_setter(ps_tasks: int = 0, ps_device: str = "/job:ps", worker_device: str = "/job:worker",
                          merge_devices: bool = True, cluster=None, ps_ops=None,
                          ps_strategy: Callable | None = None) -> Callable | None:
    """TF's device function for between-graph replication: ps ops (variables) on ps tasks, the rest on workers.

    The default strategy is round robin, one step per ps op created; `tf.contrib.training.
    GreedyLoadBalancingStrategy` balances by size. Ops keep the fields their own (inner) device scopes set. Running
    the result needs a cluster: in one process, placement rejects /job:ps and /job:worker.

        with tf.device(tf.train.replica_device_setter(ps_tasks=2)):
            w, b = tf.Variable(1.0), tf.Variable(2.0)   # w -> /job:ps/task:0, b -> /job:ps/task:1
            y = w * b                                   # /job:worker

    Args:
      ps_tasks: number of ps tasks; ignored when `cluster` is given.
      ps_device: the ps device; "" or None: no op goes to a ps.
      worker_device: the device of every other op; "" or None: leave them as they are.
      merge_devices: False: an op with a device keeps it unchanged (deprecated, as in TF).
      cluster: a dict {job: [addresses]} or an object with `as_dict()`; sets ps_tasks to its ps job's task count.
      ps_ops: the op types to put on ps tasks (default STANDARD_PS_OPS).
      ps_strategy: op -> ps task index (default round robin).

    Returns:
      A function for `tf.device`, or None (no ps tasks, or no ps job in `cluster`; tf.device(None) then clears
      the outer device scopes).

    Raises:
      TypeError: `cluster` is not a dict or ClusterSpec-like, or `ps_strategy` is not callable.
    """
    if cluster is not None:
        ps_tasks = _ps_task_count(cluster, ps_device)
        if ps_tasks is None:
            return None
    if ps_tasks == 0:
        return None
    if ps_ops is None:
        ps_ops = list(STANDARD_PS_OPS)
    if not merge_devices:
        _log.warning("DEPRECATION: It is recommended to set merge_devices=true in replica_device_setter")
    if ps_strategy is None:
        ps_strategy = _RoundRobinStrategy(ps_tasks)
    if not callable(ps_strategy):
        raise TypeError("ps_strategy must be callable")
    ps_spec = DeviceSpec.from_string(ps_device) if ps_device else None
    worker_spec = DeviceSpec.from_string(worker_device or "")

    def device_function(op) -> str:
        if not merge_devices and op.device:
            return op.device
        current = DeviceSpec.from_string(op.device or "")
        if ps_spec is not None and _op_type(op) in ps_ops:
            spec = ps_spec
            if spec.job and (not current.job or current.job == spec.job):
                spec = spec.replace(task=ps_strategy(op))
            return spec.make_merged_spec(current).to_string()
        return worker_spec.make_merged_spec(current).to_string()
    return device_function
