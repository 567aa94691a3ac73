"""Device functions: ADCME's `assign_to_device` and TF's `replica_device_setter`.

    with tf.device(tf.assign_to_device("/device:GPU:0")):
        a = tf.Variable(1.0)      # VariableV2 is a PS op: a.device == "/device:CPU:0"
        b = tf.sin(a)             # b.device == "/device:GPU:0"
"""
from __future__ import annotations

from typing import Callable

from adplace.framework.device_spec import DeviceSpec
from adplace.framework.operation import NodeDef

PS_OPS = ("Variable", "VariableV2", "AutoReloadVariable")
STANDARD_PS_OPS = ("Variable", "VariableV2", "AutoReloadVariable", "MutableHashTable", "MutableHashTableV2",
                   "MutableHashTableOfTensors", "MutableHashTableOfTensorsV2", "MutableDenseHashTable",
                   "MutableDenseHashTableV2", "VarHandleOp")


def assign_to_device(device: str, ps_device: str = "/device:CPU:0") -> Callable:
    """A device function: variables (PS_OPS) on `ps_device`, every other op on `device` (ADCME's closure).

    It accepts an Operation or a NodeDef, as ADCME's Julia closure does.
    """
    def _assign(op):
        op_type = op.op if isinstance(op, NodeDef) else op.type
        return ps_device if op_type in PS_OPS else device
    return _assign


class _RoundRobinStrategy:
    """Assigns ps ops to tasks 0, 1, ..., n-1, 0, ... in creation order (TF's default ps_strategy)."""

    def __init__(self, num_tasks: int):
        self._num_tasks, self._next_task = num_tasks, 0

    def __call__(self, unused_op) -> int:
        task = self._next_task
        self._next_task = (self._next_task + 1) % self._num_tasks
        return task


def replica_device_setter(ps_tasks: int = 0, ps_device: str = "/job:ps", worker_device: str = "/job:worker",
                          merge_devices: bool = True, cluster=None, ps_ops=None, ps_strategy=None):
    """TF's device function for between-graph replication: variables round-robin over ps tasks.

        with tf.device(tf.train.replica_device_setter(ps_tasks=2)):
            w, b = tf.Variable(1.0), tf.Variable(2.0)   # w -> /job:ps/task:0, b -> /job:ps/task:1
    """
    if cluster is not None:
        jobs = cluster.as_dict() if hasattr(cluster, "as_dict") else dict(cluster)
        ps_job = DeviceSpec.from_string(ps_device).job
        if ps_job not in jobs:
            return None
        tasks = jobs[ps_job]
        ps_tasks = len(tasks) if isinstance(tasks, (list, tuple, dict)) else int(tasks)
    if ps_tasks == 0:
        return None
    if ps_ops is None:
        ps_ops = list(STANDARD_PS_OPS)
    if not merge_devices:
        import logging
        logging.getLogger("adplace").warning(
            "DEPRECATION: It is recommended to set merge_devices=true in replica_device_setter")
    if ps_strategy is None:
        ps_strategy = _RoundRobinStrategy(ps_tasks)
    if not callable(ps_strategy):
        raise TypeError("ps_strategy must be callable")
    ps_spec = DeviceSpec.from_string(ps_device) if ps_device else None
    worker_spec = DeviceSpec.from_string(worker_device) if worker_device else None

    def device_function(op):
        if not merge_devices and op.device:
            return op.device
        current = DeviceSpec.from_string(op.device or "")
        op_type = op.op if isinstance(op, NodeDef) else op.type
        if ps_spec is not None and op_type in ps_ops:
            spec = ps_spec
            if spec.job and (current.job is None or current.job == spec.job):
                spec = spec.replace(task=ps_strategy(op))
            return spec.make_merged_spec(current).to_string()
        return (worker_spec.make_merged_spec(current) if worker_spec else current).to_string()
    return device_function
