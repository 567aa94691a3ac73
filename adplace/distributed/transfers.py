"""What a cluster step moves between tasks, and its traced report: the bytes of every value that crosses pieces, by
source and destination task, and the step stats of a traced step (RunOptions(trace_level=FULL_TRACE)).

    sess.run(train_op)
    sess._remote.last_step_transfers    # {("/job:ps/replica:0/task:0", "/job:worker/replica:0/task:0"): 4096, ...}

Each piece run reports `(output bytes, start ns, end ns, step stats)` (task.py): the bytes of each value it hands
on, when it ran on its task (epoch nanoseconds), and, when traced, the StepStats of its own run. A value moves once
per step and destination task; the client's feeds come from CLIENT and its fetches go to it.

A traced step's StepStats holds every task device's op nodes as the tasks traced them, and a `_Recv` node on the
destination device for each value crossing tasks, named and labelled as an in-process cross-device copy is
(runtime/step_stats.py): `<op>/_<k> = _Recv(<tensor>)`, timed from the end of the piece that made the value to the
start of the piece that took it, so `step_stats.transfers()`, the profiler and TF's Timeline show it as a transfer
between tasks. The pieces' placeholders are named after what they stand for in the labels of the ops that read them.
"""
from __future__ import annotations

import re
from typing import NamedTuple

import numpy as np

from adplace.lib import protos
from adplace.runtime.step_stats import _allocator_name, _device_name_parts, parse_label, tensor_label_name

CLIENT = "client"
_MEMORY_PREFIX = re.compile(r"(?:\[[^\]]*\] )*")


class PieceReport(NamedTuple):
    """What one piece run reports to the client (task.Task.run's done marker)."""

    sizes: list     # bytes of each output value
    start_ns: int   # epoch nanoseconds on the task
    end_ns: int
    stats: bytes    # its StepStats (serialized) when traced, else b""


def nbytes(value) -> int:
    """The bytes of a value a piece takes or hands on (an array, a scalar, bytes, an array of bytes)."""
    if isinstance(value, (bytes, str)):
        return len(value)
    array = value if hasattr(value, "nbytes") and hasattr(value, "dtype") else np.asarray(value)
    if array.dtype == object:
        return sum(len(v) if isinstance(v, (bytes, str)) else 8 for v in array.ravel().tolist())
    return int(array.nbytes)


def _moves(plan):
    """(piece index, input index, source) of each value a piece takes, once per source and destination task."""
    seen = set()
    for j, piece in enumerate(plan.pieces):
        for i, source in enumerate(piece.inputs):
            key = (tuple(source), piece.task)
            if key not in seen:
                seen.add(key)
                yield j, i, source


def step_transfers(plan, feeds: list, reports: list[PieceReport], fetched: list) -> dict[tuple[str, str], int]:
    """Bytes moved by one step, by (source task, destination task): values crossing pieces (same-task moves keyed
    (task, task)), the client's feeds (CLIENT, task) and its fetches (task, CLIENT)."""
    moved: dict[tuple[str, str], int] = {}

    def add(src: str, dst: str, size: int) -> None:
        moved[(src, dst)] = moved.get((src, dst), 0) + size

    for j, _, source in _moves(plan):
        if source[0] == "feed":
            add(CLIENT, plan.pieces[j].task, nbytes(feeds[source[1]]))
        else:
            add(plan.pieces[source[1]].task, plan.pieces[j].task, reports[source[1]].sizes[source[2]])
    for source, value in zip((s for s in plan.fetches if s is not None), fetched):
        if source[0] == "piece":
            add(plan.pieces[source[1]].task, CLIENT, nbytes(value))
    return moved


def fill_step_stats(step_stats, plan, fed: list, reports: list[PieceReport], device_of) -> None:
    """Fill `step_stats` (empty) from a traced step's piece reports (see the module); `fed` are the step's fed
    tensors, `device_of(op)` the client's placement."""
    devices: dict[str, object] = {}
    produced: dict[tuple[str, int], object] = {}  # (op name, output) -> the producing node's output description
    parsed = []
    for report in reports:
        stats = protos.step_stats_pb2.StepStats()
        stats.ParseFromString(report.stats)
        parsed.append(stats)
        for dev in stats.dev_stats:
            for ns in dev.node_stats:
                for k, out in enumerate(ns.output):
                    produced.setdefault((ns.node_name, k), out)
    edges, recvs = 0, {}  # (source, destination task) -> its _Recv node's name: once per step and task
    for j, (piece, stats) in enumerate(zip(plan.pieces, parsed)):
        names = {}  # the piece's placeholder -> the label of what it stands for
        for i, source in enumerate(piece.inputs):
            placeholder = piece.input_names[i].rsplit(":", 1)[0]
            if source[0] == "feed":
                names[placeholder] = tensor_label_name(fed[source[1]])
                continue
            producer = plan.pieces[source[1]]
            tensor = producer.outputs[source[2]]
            if producer.task == piece.task:
                names[placeholder] = tensor_label_name(tensor)
                continue
            key = (tuple(source), piece.task)
            if key not in recvs:
                edges += 1
                dst = device_of(piece.ops[0]).name
                dev = devices.get(dst) or devices.setdefault(dst, step_stats.dev_stats.add(device=dst))
                recvs[key] = _add_recv(dev, tensor, edges, reports[source[1]].end_ns, reports[j].start_ns,
                                       reports[source[1]].sizes[source[2]], device_of(tensor.op).name,
                                       produced.get((tensor.op.name, tensor.value_index)))
            names[placeholder] = recvs[key]
        for piece_dev in stats.dev_stats:
            dev = devices.get(piece_dev.device) or devices.setdefault(
                piece_dev.device, step_stats.dev_stats.add(device=piece_dev.device))
            for ns in piece_dev.node_stats:
                _rename_inputs(ns, names)
                dev.node_stats.add().CopyFrom(ns)


def _add_recv(dev, tensor, k: int, start_ns: int, end_ns: int, size: int, src_device: str, produced) -> str:
    """A `_Recv` node on `dev` for `tensor` arriving from `src_device`; its name."""
    name = f"{tensor.op.name}/_{k}"
    duration = max(0, end_ns - start_ns)
    node = dev.node_stats.add(node_name=name, all_start_micros=start_ns // 1000, all_start_nanos=start_ns,
                              op_end_rel_micros=duration // 1000, all_end_rel_micros=duration // 1000,
                              op_end_rel_nanos=duration, all_end_rel_nanos=duration,
                              scheduled_micros=start_ns // 1000, scheduled_nanos=start_ns)
    output = node.output.add(slot=0)
    allocator = _allocator_name(*_device_name_parts(dev.device))
    if produced is not None:
        output.tensor_description.CopyFrom(produced.tensor_description)
    else:
        output.tensor_description.dtype = tensor.dtype.base_dtype.as_datatype_enum
    allocation = output.tensor_description.allocation_description
    allocation.requested_bytes = allocation.allocated_bytes = size
    allocation.allocator_name = allocator
    node.memory.add(allocator_name=allocator, total_bytes=size, peak_bytes=size, live_bytes=size)
    node.referenced_tensor.add(requested_bytes=size, allocated_bytes=size,
                               allocator_name=_allocator_name(*_device_name_parts(src_device)))
    node.timeline_label = f"{name} = _Recv({tensor_label_name(tensor)})"
    return name


def _rename_inputs(node_stats, names: dict) -> None:
    """Name a piece's placeholders in a node's timeline label after what they stand for."""
    label = parse_label(node_stats.timeline_label)
    if label is None or not any(i in names for i in label[2]):
        return
    head = _MEMORY_PREFIX.match(node_stats.timeline_label).group(0)
    inputs = ", ".join(names.get(i, i) for i in label[2])
    node_stats.timeline_label = f"{head}{label[0]} = {label[1]}({inputs})"


def add_partition_graphs(run_metadata, plan) -> None:
    """RunMetadata.partition_graphs of a cluster step: each piece's GraphDef as its task ran it (a value from another
    piece enters as a Placeholder `adplace_piece/input_<k>`)."""
    for piece in plan.pieces:
        graph_def = run_metadata.partition_graphs.add()
        graph_def.ParseFromString(piece.graph_def)
