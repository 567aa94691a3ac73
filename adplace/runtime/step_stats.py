"""Step stats: what a traced run records, as TF's step_stats.proto messages (RunMetadata.step_stats).

    run_metadata.step_stats.dev_stats[0].device                 # '/job:localhost/replica:0/task:0/device:CPU:0'
    node = run_metadata.step_stats.dev_stats[0].node_stats[0]
    node.node_name, node.timeline_label                         # 'Sin', 'Sin = Sin(a/read)'
    node.all_start_micros, node.all_end_rel_micros              # epoch microseconds, duration in microseconds
    node.output[0].tensor_description.allocation_description.requested_bytes

Each node is filled as TF's executor fills it: times in epoch micros and nanos relative to the node's start, its
outputs (dtype, shape, allocation), the allocator memory it used, its thread, and a timeline label `name = Op(in1,
in2)` led by `[allocator total peak] ` when an allocator took 0.1 MB or more. A fused GPU kernel is one node named
after the chain's root, of type `_FusedElementwise`.

An optimizer update that the step commits after its last kernel (runtime/deferred_updates.py) has a second node of
its op, with the same label and no outputs, timing that commit: the update's memory traffic is reported where it is
spent (on a large model, most of the update's time).

A cross-device copy is a `_Recv` node on the destination device (TF's Send/Recv pair collapsed into the one copy that
does the work), named `<source op>/_<k>` as DirectSession names the nodes it inserts, its label's one input the
tensor it copies, so that TF's Timeline draws an arrow from the producer's device to the copy; its
`referenced_tensor` is the buffer it reads (on the source device's allocator). `transfers()` lists them.
"""
from __future__ import annotations

import re
import threading
from typing import NamedTuple

import numpy as np

from adplace.framework import dtypes as _dtypes
from adplace.lib import protos
from adplace.runtime.plan_slots import as_tuple as _as_tuple

_MB = 1048576.0
_LABEL = re.compile(r"(?:\[[^\]]*\] )*(.*) = (.*)\((.*)\)")


class Transfer(NamedTuple):
    """One cross-device copy of a traced step: the tensor (`op:k`), source and destination devices, bytes moved."""

    tensor_name: str
    src_device: str
    dst_device: str
    bytes: int


def tensor_label_name(tensor) -> str:
    """A tensor as TF's timeline labels name it: the op for output 0, `op:k` for the others."""
    return tensor.op.name if tensor.value_index == 0 else f"{tensor.op.name}:{tensor.value_index}"


def parse_label(label: str) -> tuple[str, str, list[str]] | None:
    """(node name, op type, inputs) of a timeline label `[mem] name = Op(in1, in2)`, or None when it is not one."""
    match = _LABEL.match(label)
    if match is None:
        return None
    name, op, inputs = match.groups()
    return name, op, inputs.split(", ") if inputs else []


def copied_tensor(node_stats) -> str | None:
    """The tensor label (`op` or `op:k`) a `_Recv` node copies, or None for any other node."""
    parsed = parse_label(node_stats.timeline_label)
    if parsed is None or parsed[1] != "_Recv":
        return None
    return parsed[2][0] if parsed[2] else node_stats.node_name


def transfers(step_stats) -> list[Transfer]:
    """Every cross-device copy of a traced step, in the order they started."""
    produced_on = {}
    for dev in step_stats.dev_stats:
        for ns in dev.node_stats:
            for k in range(len(ns.output)):
                produced_on.setdefault(ns.node_name if k == 0 else f"{ns.node_name}:{k}", dev.device)
    found = []
    for dev in step_stats.dev_stats:
        for ns in dev.node_stats:
            label = copied_tensor(ns)
            if label is None:
                continue
            name = label if ":" in label else f"{label}:0"
            nbytes = sum(o.tensor_description.allocation_description.requested_bytes for o in ns.output)
            source = produced_on.get(label) or (_device_of_allocator(ns.referenced_tensor[0].allocator_name,
                                                                     dev.device) if ns.referenced_tensor else "")
            found.append(((ns.all_start_micros, ns.all_start_nanos), Transfer(name, source, dev.device, nbytes)))
    return [t for _, t in sorted(found, key=lambda pair: pair[0])]


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


def _allocator_name(device_type: str, index: int) -> str:
    """The allocator TF names for a device's tensors: "cpu" (every CPU), "GPU_<k>_bfc"."""
    return "cpu" if device_type == "CPU" else f"{device_type}_{index}_bfc"


def _device_of_allocator(allocator: str, near: str) -> str:
    """The device whose tensors `allocator` holds, in the job and task of device `near` ("cpu": its CPU:0)."""
    prefix = near.rpartition("/device:")[0]
    if allocator == "cpu":
        return f"{prefix}/device:CPU:0"
    parts = allocator.split("_")
    return f"{prefix}/device:{parts[0]}:{parts[1]}" if len(parts) == 3 and parts[1].isdigit() else ""


def _device_name_parts(name: str) -> tuple[str, int]:
    """("GPU", 1) for '/job:localhost/replica:0/task:0/device:GPU:1'."""
    device_type, _, index = name.rpartition("/device:")[2].partition(":")
    return device_type, int(index or 0)


def _fill_output(output, slot: int, value, allocator: str) -> int:
    """Describe `value` (a NumPy or CuPy array, or a scalar) as TF's Tensor::FillDescription does; returns its
    bytes."""
    array = value if hasattr(value, "nbytes") else np.asarray(value)
    output.slot = slot
    description = output.tensor_description
    try:
        description.dtype = _dtypes.as_dtype(array.dtype).as_datatype_enum
    except TypeError:
        pass  # DT_INVALID: a value with no TF dtype
    description.shape.dim.extend(protos.tensor_shape_pb2.TensorShapeProto.Dim(size=int(d)) for d in array.shape)
    size = int(array.nbytes)
    allocation = description.allocation_description
    allocation.requested_bytes = allocation.allocated_bytes = size
    allocation.allocator_name = allocator
    return size


def _memory_prefix(allocator: str, total: int) -> str:
    """TF's label prefix for an allocator that took at least 0.1 MB: `[name total peak] ` in MB."""
    return f"[{allocator} {total / _MB:.1f}MB {total / _MB:.1f}MB] " if total >= 0.1 * _MB else ""


def _folded_node(dev, op, device, values, start_ns: int) -> None:
    """The node of an op whose step constant folding dropped: no time, at the step's start, its outputs described
    when the plan holds them, so that a traced step lists the ops it would list unfolded."""
    allocator = _allocator_name(device.device_type, device.index)
    node = dev.node_stats.add(node_name=op.name, all_start_micros=start_ns // 1000, all_start_nanos=start_ns,
                              scheduled_micros=start_ns // 1000, scheduled_nanos=start_ns)
    total = sum(_fill_output(node.output.add(), k, v, allocator) for k, v in enumerate(values or ()))
    if node.output:
        node.memory.add(allocator_name=allocator, total_bytes=total, peak_bytes=total, live_bytes=total)
    inputs = ", ".join(tensor_label_name(t) for t in op.inputs)
    node.timeline_label = f"{_memory_prefix(allocator, total)}{op.name} = {op.type}({inputs})"


def fill_step_stats(step_stats, plan, records: list, devices: list, epoch_ns: int, perf_ns: int) -> None:
    """Fill the StepStats proto `step_stats` from a traced run's records: (step, start, end, thread ident, kernel
    result), perf_counter nanoseconds.

    `epoch_ns`/`perf_ns` are time.time_ns() and time.perf_counter_ns() read together, to turn perf-counter times
    into the epoch times TF reports. Devices appear in `devices` order, those that ran nothing left out.
    """
    names, labels = _step_names(plan)
    threads: dict[int, int] = {}
    thread_names = {t.ident: t.name for t in threading.enumerate()}
    by_device: dict[str, list] = {d.name: [] for d in devices}
    for record in records:
        by_device.setdefault(plan.devices[record[0]].name, []).append(record)
    folded: dict[str, list] = {}  # ops computed when the plan was built (runtime/constant_folding.py)
    for op, device, values in plan.folded_nodes:
        folded.setdefault(device.name, []).append((op, device, values))
    first_ns = epoch_ns + (min((r[1] for r in records), default=perf_ns) - perf_ns)
    for device_name, device_records in by_device.items():
        if not device_records and device_name not in folded:
            continue
        dev = step_stats.dev_stats.add(device=device_name)
        for op, device, values in folded.get(device_name, ()):
            _folded_node(dev, op, device, values, first_ns)
        for index, start, end, ident, result in device_records:
            op, device = plan.ops[index], plan.devices[index]
            name, op_type = names[index]
            values = [result] if index in plan.transfer_steps or len(op.outputs) == 1 else list(result or ())
            allocator = _allocator_name(device.device_type, device.index)
            start_ns, duration = epoch_ns + (start - perf_ns), end - start
            tid = threads.setdefault(ident, len(threads))
            node = dev.node_stats.add(node_name=name, thread_id=tid, all_start_micros=start_ns // 1000,
                                      op_end_rel_micros=duration // 1000, all_end_rel_micros=duration // 1000,
                                      all_start_nanos=start_ns, op_end_rel_nanos=duration,
                                      all_end_rel_nanos=duration, scheduled_micros=start_ns // 1000,
                                      scheduled_nanos=start_ns)
            total = sum(_fill_output(node.output.add(), k, v, allocator) for k, v in enumerate(values) if v is not None)
            if node.output:
                node.memory.add(allocator_name=allocator, total_bytes=total, peak_bytes=total, live_bytes=total)
            transfer = plan.transfer_steps.get(index)
            if transfer is not None:  # the source buffer the copy reads
                node.referenced_tensor.add(requested_bytes=total, allocated_bytes=total,
                                           allocator_name=_allocator_name(*_device_name_parts(transfer.src_device)))
            inputs = ", ".join(labels[s] for s in _as_tuple(plan.ins[index]))
            node.timeline_label = f"{_memory_prefix(allocator, total)}{name} = {op_type}({inputs})"
            if tid not in dev.thread_names and ident in thread_names:
                dev.thread_names[tid] = thread_names[ident]
