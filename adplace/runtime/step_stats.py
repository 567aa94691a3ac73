"""Step stats: what a traced run records (TF's step_stats.proto messages), and how records become them.

    run_metadata.step_stats.dev_stats[0].device                 # '/job:localhost/replica:0/task:0/device:CPU:0'
    node = run_metadata.step_stats.dev_stats[0].node_stats[0]
    node.node_name, node.timeline_label                         # 'Sin', 'Sin = Sin(a/read)'
    node.all_start_micros, node.all_end_rel_micros              # epoch microseconds, duration in microseconds
    node.output[0].tensor_description.allocation_description.requested_bytes

A cross-device copy is a node of type `_Recv` on the destination device (TF's Send/Recv pair collapsed into the one
copy that does the work), named `<source op>/_<k>` as DirectSession names the nodes it inserts; its `transfer` field
(not in TF's proto) gives the tensor, the source and destination devices and the bytes moved. `StepStats.transfers()`
lists them all.
"""
from __future__ import annotations

import numpy as np

from adplace.framework import dtypes as _dtypes
from adplace.runtime.message import _Message


class AllocationDescription(_Message):
    _FIELDS = {"requested_bytes": 0, "allocated_bytes": 0, "allocator_name": "", "allocation_id": 0,
               "has_single_reference": False, "ptr": 0}


class TensorShapeDim(_Message):
    _FIELDS = {"size": 0, "name": ""}


class TensorShapeProto(_Message):
    _FIELDS = {"dim": [], "unknown_rank": False}


class TensorDescription(_Message):
    """An output's dtype (TF's DataType enum), shape and allocation."""

    _FIELDS = {"dtype": 0, "shape": TensorShapeProto(), "allocation_description": AllocationDescription()}

    def __str__(self) -> str:
        """Protobuf text format, as TF's timeline embeds it in memory snapshots."""
        dims = "".join(f"dim {{ size: {d.size} }} " for d in self.shape.dim)
        a = self.allocation_description
        return (f"dtype: {_enum_name(self.dtype)} shape {{ {dims}}} allocation_description {{ requested_bytes: "
                f"{a.requested_bytes} allocated_bytes: {a.allocated_bytes} allocator_name: \"{a.allocator_name}\" }}")


class NodeOutput(_Message):
    _FIELDS = {"slot": 0, "tensor_description": TensorDescription()}


class TransferStats(_Message):
    """One cross-device copy: which tensor, from where to where, how many bytes (adplace's addition to TF's proto)."""

    _FIELDS = {"tensor_name": "", "src_device": "", "dst_device": "", "bytes": 0}


class NodeExecStats(_Message):
    """One executed node: times in epoch/relative microseconds (and nanoseconds), its outputs, the thread it ran on.

    `transfer` (a copy's TransferStats) and `fused_nodes` (the ops a fused GPU kernel computed, root last) are
    adplace's additions to TF's message."""

    _FIELDS = {"node_name": "", "all_start_micros": 0, "op_start_rel_micros": 0, "op_end_rel_micros": 0,
               "all_end_rel_micros": 0, "memory": [], "output": [], "timeline_label": "", "scheduled_micros": 0,
               "thread_id": 0, "referenced_tensor": [], "all_start_nanos": 0, "op_start_rel_nanos": 0,
               "op_end_rel_nanos": 0, "all_end_rel_nanos": 0, "scheduled_nanos": 0, "transfer": None,
               "fused_nodes": []}


class DeviceStepStats(_Message):
    _FIELDS = {"device": "", "node_stats": [], "thread_names": {}}


class StepStats(_Message):
    """Per-device execution records of a traced run (RunMetadata.step_stats)."""

    _FIELDS = {"dev_stats": []}

    def transfers(self) -> list[TransferStats]:
        """Every cross-device copy of the step, in the order they ran."""
        found = [(n.all_start_nanos, n.transfer) for d in self.dev_stats for n in d.node_stats if n.transfer]
        return [t for _, t in sorted(found, key=lambda pair: pair[0])]


def _enum_name(enum: int) -> str:
    """TF's DataType enum name (DT_FLOAT for float32, DT_DOUBLE for float64, ...)."""
    for dtype in set(_dtypes._BY_NAME.values()):
        if dtype.as_datatype_enum == enum:
            base = _TF_ENUM_NAMES.get(dtype.base_dtype.name, dtype.base_dtype.name.upper())
            return f"DT_{base}_REF" if dtype.is_ref_dtype else f"DT_{base}"
    return "DT_INVALID"


_TF_ENUM_NAMES = {"float32": "FLOAT", "float64": "DOUBLE", "float16": "HALF"}


def _nbytes(value) -> int:
    return int(value.nbytes if hasattr(value, "nbytes") else np.asarray(value).nbytes)  # NumPy or CuPy arrays


def _describe(value, allocator: str) -> TensorDescription:
    array = value if hasattr(value, "nbytes") else np.asarray(value)  # NumPy or CuPy arrays, else scalars
    try:
        enum = _dtypes.as_dtype(array.dtype).as_datatype_enum
    except TypeError:
        enum = 0
    size = int(array.nbytes)
    return TensorDescription(
        dtype=enum, shape=TensorShapeProto(dim=[TensorShapeDim(size=int(d)) for d in array.shape]),
        allocation_description=AllocationDescription(requested_bytes=size, allocated_bytes=size,
                                                     allocator_name=allocator))


def _allocator_name(device_type: str, index: int) -> str:
    return "cpu" if device_type == "CPU" else f"{device_type}_{index}_bfc"


def tensor_label_name(tensor) -> str:
    """A tensor as TF's timeline labels name it: the op for output 0, `op:k` for the others."""
    return tensor.op.name if tensor.value_index == 0 else f"{tensor.op.name}:{tensor.value_index}"



def _step_names(plan) -> tuple[list, dict]:
    """(node name, op type) per step, and the label of each slot, as TF's timeline names nodes and inputs."""
    labels = {slot: tensor_label_name(t) for slot, t in zip(plan.feed_slots, plan.feed_tensors)}
    names = []
    for index, op in enumerate(plan.ops):
        transfer = plan.transfer_steps.get(index)
        if transfer is not None:
            name = f"{transfer.tensor_name.rsplit(':', 1)[0]}/_{index}"
            names.append((name, "_Recv"))
            outputs = [name]
        elif index in plan.fused:
            names.append((op.name, "_FusedElementwise"))
            outputs = [tensor_label_name(op.outputs[0])]
        else:
            names.append((op.name, op.type))
            outputs = [tensor_label_name(t) for t in op.outputs]
        for slot, label in zip(_as_tuple(plan.outs[index]), outputs):
            if slot is not None:
                labels[slot] = label
    return names, labels


def _as_tuple(slots) -> tuple:
    return (slots,) if type(slots) is int else slots


def build_step_stats(plan, records: list, devices: list, epoch_ns: int, perf_ns: int) -> StepStats:
    """StepStats from a traced run's records: (step, start, end, thread, kernel result), perf_counter nanoseconds.

    `epoch_ns`/`perf_ns` are time.time_ns() and time.perf_counter_ns() read together, to turn perf-counter times
    into the epoch times TF reports. Devices appear in `devices` order.
    """
    names, labels = _step_names(plan)
    threads: dict[int, int] = {}
    by_device: dict[str, list] = {d.name: [] for d in devices}
    for index, start, end, ident, result in records:
        op, device, transfer = plan.ops[index], plan.devices[index], plan.transfer_steps.get(index)
        name, op_type = names[index]
        n_outputs = 1 if transfer is not None else len(op.outputs)
        values = [result] if n_outputs == 1 else list(result or ())
        allocator = _allocator_name(device.device_type, device.index)
        start_ns, duration = epoch_ns + (start - perf_ns), end - start
        inputs = ", ".join(labels[s] for s in _as_tuple(plan.ins[index]))
        node = NodeExecStats(
            node_name=name, timeline_label=f"{name} = {op_type}({inputs})",
            thread_id=threads.setdefault(ident, len(threads)), all_start_micros=start_ns // 1000,
            op_end_rel_micros=duration // 1000, all_end_rel_micros=duration // 1000, all_start_nanos=start_ns,
            op_end_rel_nanos=duration, all_end_rel_nanos=duration, scheduled_micros=start_ns // 1000,
            scheduled_nanos=start_ns,
            output=[NodeOutput(slot=k, tensor_description=_describe(v, allocator))
                    for k, v in enumerate(values) if v is not None])
        if index in plan.fused:
            node.fused_nodes = list(plan.fused[index])
        if transfer is not None:
            node.transfer = TransferStats(tensor_name=transfer.tensor_name, src_device=transfer.src_device,
                                          dst_device=transfer.dst_device, bytes=_nbytes(result))
        by_device.setdefault(device.name, []).append(node)
    return StepStats(dev_stats=[DeviceStepStats(device=name, node_stats=nodes)
                                for name, nodes in by_device.items() if nodes])
