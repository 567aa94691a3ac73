"""Timeline: a traced run's step stats as Chrome trace JSON, event for event as TF's client/timeline.py writes it.

    md = tf.RunMetadata()
    sess.run(y, options=tf.RunOptions(trace_level=tf.RunOptions.FULL_TRACE), run_metadata=md)
    trace = timeline.Timeline(md.step_stats).generate_chrome_trace_format()
    open("timeline.json", "w").write(trace)      # load in chrome://tracing or https://ui.perfetto.dev

Processes: pid 0 "Allocators", then per device "<device> Compute" (1, 3, ...) and "<device> Tensors" (2, 4, ...).
Threads are lanes: each op takes the first lane whose last op ended strictly before it starts, so no two ops on one
lane overlap. Flow arrows join a tensor's producer to each consumer on another pid or lane. A cross-device copy is a
`_Recv` op on the destination device whose label names the source tensor, so its arrow crosses from the source
device's process to the destination's.

Two deliberate differences from TF, neither visible in the output of a single call: lanes are kept beside the step
stats instead of overwriting each NodeExecStats.thread_id (TF mutates the caller's proto), and every call to
analyze_step_stats starts from a clean state (TF appends to the events of earlier calls on the same Timeline).
"""
from __future__ import annotations

import collections
import copy
import json
import logging
import re
from typing import Any

_log = logging.getLogger("adplace")
_OP_LABEL = re.compile(r"(.*) = (.*)\((.*)\)")


class AllocationMaximum(collections.namedtuple("AllocationMaximum", ("timestamp", "num_bytes", "tensors"))):
    """An allocator's peak: when it was reached (epoch micros), the bytes in use, and the names of the live tensors."""


class StepStatsAnalysis(collections.namedtuple("StepStatsAnalysis", ("chrome_trace", "allocator_maximums"))):
    """analyze_step_stats' result: the _ChromeTraceFormatter and a dict allocator name -> AllocationMaximum."""


class _ChromeTraceFormatter:
    """Collects Chrome trace events (metadata first on output) and formats them as JSON."""

    def __init__(self, show_memory: bool = False) -> None:
        self._show_memory = show_memory
        self._events: list[dict] = []
        self._metadata: list[dict] = []

    def _create_event(self, ph: str, category: str, name: str, pid: int, tid: int, timestamp: int) -> dict:
        return {"ph": ph, "cat": category, "name": name, "pid": pid, "tid": tid, "ts": timestamp}

    def emit_pid(self, name: str, pid: int) -> None:
        self._metadata.append({"name": "process_name", "ph": "M", "pid": pid, "args": {"name": name}})

    def emit_tid(self, name: str, pid: int, tid: int) -> None:
        self._metadata.append({"name": "thread_name", "ph": "M", "pid": pid, "tid": tid, "args": {"name": name}})

    def emit_region(self, timestamp: int, duration: int, pid: int, tid: int, category: str, name: str,
                    args: dict[str, Any]) -> None:
        event = self._create_event("X", category, name, pid, tid, timestamp)
        event["dur"], event["args"] = duration, args
        self._events.append(event)

    def emit_obj_create(self, category: str, name: str, timestamp: int, pid: int, tid: int, object_id: int) -> None:
        event = self._create_event("N", category, name, pid, tid, timestamp)
        event["id"] = object_id
        self._events.append(event)

    def emit_obj_delete(self, category: str, name: str, timestamp: int, pid: int, tid: int, object_id: int) -> None:
        event = self._create_event("D", category, name, pid, tid, timestamp)
        event["id"] = object_id
        self._events.append(event)

    def emit_obj_snapshot(self, category: str, name: str, timestamp: int, pid: int, tid: int, object_id: int,
                          snapshot: dict[str, Any]) -> None:
        event = self._create_event("O", category, name, pid, tid, timestamp)
        event["id"], event["args"] = object_id, {"snapshot": snapshot}
        self._events.append(event)

    def emit_flow_start(self, name: str, timestamp: int, pid: int, tid: int, flow_id: int) -> None:
        event = self._create_event("s", "DataFlow", name, pid, tid, timestamp)
        event["id"] = flow_id
        self._events.append(event)

    def emit_flow_end(self, name: str, timestamp: int, pid: int, tid: int, flow_id: int) -> None:
        event = self._create_event("t", "DataFlow", name, pid, tid, timestamp)
        event["id"] = flow_id
        self._events.append(event)

    def emit_counter(self, category: str, name: str, pid: int, timestamp: int, counter: str, value: int) -> None:
        event = self._create_event("C", category, name, pid, 0, timestamp)
        event["args"] = {counter: value}
        self._events.append(event)

    def emit_counters(self, category: str, name: str, pid: int, timestamp: int, counters: dict) -> None:
        event = self._create_event("C", category, name, pid, 0, timestamp)
        event["args"] = counters.copy()
        self._events.append(event)

    def format_to_string(self, pretty: bool = False) -> str:
        """The trace as `{"traceEvents": [metadata..., events...]}`; pretty: 4-space indent, as TF writes files."""
        trace = {"traceEvents": self._metadata + self._events}
        if pretty:
            return json.dumps(trace, indent=4, separators=(",", ": "))
        return json.dumps(trace, separators=(",", ":"))


class _TensorTracker:
    """One tensor's lifetime: creation, references and unreferences, its allocator and size."""

    def __init__(self, name: str, object_id: int, timestamp: int, pid: int, allocator: str, num_bytes: int) -> None:
        self.name, self.object_id, self.create_time, self.pid = name, object_id, timestamp, pid
        self.allocator, self.num_bytes = allocator, num_bytes
        self._ref_times: list[int] = []
        self._unref_times: list[int] = []

    @property
    def last_unref(self) -> int:
        return max(self._unref_times)

    def add_ref(self, timestamp: int) -> None:
        self._ref_times.append(timestamp)

    def add_unref(self, timestamp: int) -> None:
        self._unref_times.append(timestamp)


class Timeline:
    """Turns StepStats (RunMetadata.step_stats of a FULL_TRACE run) into Chrome trace format (tf.Timeline)."""

    def __init__(self, step_stats, graph=None) -> None:
        """Args: step_stats: the StepStats recording execution times. graph: (optional) the graph that ran."""
        self._origin_step_stats = step_stats
        self._step_stats = None
        self._graph = graph
        self._reset()

    def _reset(self) -> None:
        self._chrome_trace = _ChromeTraceFormatter()
        self._next_pid = 0
        self._device_pids: dict[str, int] = {}  # device name -> pid for compute activity
        self._tensor_pids: dict[str, int] = {}  # device name -> pid for tensors
        self._tensors: dict[str, _TensorTracker] = {}
        self._next_flow_id = 0
        self._flow_starts: dict[str, tuple[int, int, int]] = {}  # tensor name -> (timestamp, pid, tid)
        self._allocator_maximums: dict[str, AllocationMaximum] = {}
        self._lanes: list[list[int]] = []  # per device, per node: its lane (TF writes it into thread_id)

    def _alloc_pid(self) -> int:
        pid, self._next_pid = self._next_pid, self._next_pid + 1
        return pid

    def _alloc_flow_id(self) -> int:
        flow_id, self._next_flow_id = self._next_flow_id, self._next_flow_id + 1
        return flow_id

    @staticmethod
    def _parse_op_label(label: str) -> tuple[str, str, list[str]]:
        """(name, op type, inputs) from a label `name = Op(in1, in2)`; ("unknown", "unknown", []) otherwise."""
        match = _OP_LABEL.match(label)
        if match is None:
            return "unknown", "unknown", []
        name, op, inputs = match.groups()
        return name, op, inputs.split(", ") if inputs else []

    @staticmethod
    def _parse_kernel_label(label: str, node_name: str) -> tuple[str, str]:
        """(op name, op type) of a GPU-tracer kernel: from `retval (arg) detail @@name:op#...`, else the node name."""
        start, end = label.find("@@"), label.find("#")
        if start >= 0 and end >= 0 and start + 2 < end:
            node_name = label[start + 2:end]
        name, op = (node_name.split(":") + ["unknown"])[:2]
        return name, op

    def _assign_lanes(self) -> None:
        """Give every node the first lane of its device whose last op ended strictly before the node starts."""
        for device_stats in self._step_stats.dev_stats:
            lanes, of_node = [0], []
            self._lanes.append(of_node)
            for ns in device_stats.node_stats:
                end = ns.all_start_micros + ns.all_end_rel_micros
                lane = next((i for i, lane_end in enumerate(lanes) if ns.all_start_micros > lane_end), len(lanes))
                if lane == len(lanes):
                    lanes.append(end)
                else:
                    lanes[lane] = end
                of_node.append(lane)

    def _emit_op(self, nodestats, pid: int, tid: int, is_gputrace: bool) -> None:
        """One X event: name = op type, args = node name, op type and input0..N from the label."""
        node_name, inputs = nodestats.node_name, []
        if is_gputrace:
            node_name, op = self._parse_kernel_label(nodestats.timeline_label, node_name)
        elif node_name == "RecvTensor":  # RPC tracing does not use the standard label format
            op = "RecvTensor"
        else:
            _, op, inputs = self._parse_op_label(nodestats.timeline_label)
        args = {"name": node_name, "op": op}
        for i, input_name in enumerate(inputs):
            args[f"input{i}"] = input_name
        self._chrome_trace.emit_region(nodestats.all_start_micros, nodestats.all_end_rel_micros, pid, tid, "Op", op,
                                       args)

    def _emit_tensor_snapshot(self, tensor: _TensorTracker, timestamp: int, pid: int, tid: int, value) -> None:
        snapshot = {"tensor_description": str(value.tensor_description).replace('"', "")}
        self._chrome_trace.emit_obj_snapshot("Tensor", tensor.name, timestamp, pid, tid, tensor.object_id, snapshot)

    def _produce_tensor(self, name: str, timestamp: int, tensors_pid: int, allocator: str,
                        num_bytes: int) -> _TensorTracker:
        tensor = _TensorTracker(name, len(self._tensors), timestamp, tensors_pid, allocator, num_bytes)
        self._tensors[name] = tensor
        return tensor

    @staticmethod
    def _is_gputrace_device(device_name: str) -> bool:
        return "/stream:" in device_name or "/memcpy" in device_name

    def _allocate_pids(self) -> None:
        """pid 0 for allocators, then a compute pid and a tensors pid per device, in step-stats order."""
        self._allocators_pid = self._alloc_pid()
        self._chrome_trace.emit_pid("Allocators", self._allocators_pid)
        for dev_stats in self._step_stats.dev_stats:
            device_pid, tensors_pid = self._alloc_pid(), self._alloc_pid()
            self._device_pids[dev_stats.device] = device_pid
            self._tensor_pids[dev_stats.device] = tensors_pid
            self._chrome_trace.emit_pid(dev_stats.device + " Compute", device_pid)
            self._chrome_trace.emit_pid(dev_stats.device + " Tensors", tensors_pid)

    def _analyze_tensors(self, show_memory: bool) -> None:
        """Track every recorded output (`node` for output 0, `node:k` otherwise) as a tensor and a flow start."""
        for dev_stats, lanes in zip(self._step_stats.dev_stats, self._lanes):
            device_pid = self._device_pids[dev_stats.device]
            tensors_pid = self._tensor_pids[dev_stats.device]
            for node_stats, tid in zip(dev_stats.node_stats, lanes):
                node_name = node_stats.node_name
                start_time = node_stats.all_start_micros
                end_time = start_time + node_stats.all_end_rel_micros
                for index, output in enumerate(node_stats.output):
                    output_name = f"{node_name}:{index}" if index else node_name
                    allocation = output.tensor_description.allocation_description
                    tensor = self._produce_tensor(output_name, start_time, tensors_pid, allocation.allocator_name,
                                                  allocation.requested_bytes)
                    tensor.add_ref(start_time)
                    tensor.add_unref(end_time)
                    self._flow_starts[output_name] = (end_time, device_pid, tid)
                    if show_memory:
                        self._chrome_trace.emit_obj_create("Tensor", output_name, start_time, tensors_pid, tid,
                                                           tensor.object_id)
                        self._emit_tensor_snapshot(tensor, end_time - 1, tensors_pid, tid, output)

    def _show_compute(self, show_dataflow: bool) -> None:
        """Emit every op, and a flow (s at the producer's end, t at the consumer's start) per input on another lane."""
        for dev_stats, lanes in zip(self._step_stats.dev_stats, self._lanes):
            device_pid = self._device_pids[dev_stats.device]
            is_gputrace = self._is_gputrace_device(dev_stats.device)
            for node_stats, tid in zip(dev_stats.node_stats, lanes):
                start_time = node_stats.all_start_micros
                end_time = start_time + node_stats.all_end_rel_micros
                self._emit_op(node_stats, device_pid, tid, is_gputrace)
                if is_gputrace or node_stats.node_name == "RecvTensor":
                    continue
                for input_name in self._parse_op_label(node_stats.timeline_label)[2]:
                    if input_name not in self._tensors:
                        # A copy inserted by partitioning (`op/_N`) without its own record: credit the original op.
                        index = input_name.rfind("/_")
                        if index > 0:
                            input_name = input_name[:index]
                    if input_name not in self._tensors:
                        _log.debug("Can't find tensor %s - removed by CSE?", input_name)
                        continue
                    tensor = self._tensors[input_name]
                    tensor.add_ref(start_time)
                    tensor.add_unref(end_time - 1)
                    if show_dataflow:
                        create_time, create_pid, create_tid = self._flow_starts[input_name]
                        # Same pid and lane: no arrow, horizontal ones only clutter the view.
                        if create_pid != device_pid or create_tid != tid:
                            flow_id = self._alloc_flow_id()
                            self._chrome_trace.emit_flow_start(input_name, create_time, create_pid, create_tid,
                                                               flow_id)
                            self._chrome_trace.emit_flow_end(input_name, start_time, device_pid, tid, flow_id)

    def _show_memory_counters(self) -> None:
        """Emit each tensor's D event and, per allocator, a cumulative bytes counter; record each allocator's peak."""
        allocations: dict[str, list] = {}
        for name, tensor in self._tensors.items():
            self._chrome_trace.emit_obj_delete("Tensor", name, tensor.last_unref, tensor.pid, 0, tensor.object_id)
            allocations.setdefault(tensor.allocator, []).extend(
                [(tensor.create_time, tensor.num_bytes, name), (tensor.last_unref, -tensor.num_bytes, name)])
        alloc_maxes = {}
        for allocator, alloc_list in allocations.items():
            alloc_list.sort()
            total_bytes, live = 0, set()
            alloc_maxes[allocator] = AllocationMaximum(timestamp=0, num_bytes=0, tensors=set())
            for time, num_bytes, name in sorted(alloc_list, key=lambda allocation: allocation[0]):
                total_bytes += num_bytes
                if num_bytes < 0:
                    live.discard(name)
                else:
                    live.add(name)
                if total_bytes > alloc_maxes[allocator].num_bytes:
                    alloc_maxes[allocator] = AllocationMaximum(timestamp=time, num_bytes=total_bytes,
                                                               tensors=copy.deepcopy(live))
                self._chrome_trace.emit_counter("Memory", allocator, self._allocators_pid, time, allocator,
                                                total_bytes)
        self._allocator_maximums = alloc_maxes

    def _preprocess_op_time(self, op_time: str) -> None:
        """For op_time "gpu" or "all", stretch each op over its GPU kernels (from `/stream:all` devices).

        "schedule" (default) keeps the recorded times; "gpu" shows an op from its first kernel's start to its end;
        "all" from its scheduling to the end of its last kernel. Works on a copy, never on the caller's step stats.
        """
        if op_time == "schedule":
            self._step_stats = self._origin_step_stats
            return
        self._step_stats = copy.deepcopy(self._origin_step_stats)
        stream_all_stats = [s for s in self._step_stats.dev_stats if "/stream:all" in s.device]
        job_stats = [s for s in self._step_stats.dev_stats if "/stream:all" not in s.device and "/job" in s.device]
        op_gpu_start: dict[str, int] = {}
        op_gpu_end: dict[str, int] = {}
        for stats in stream_all_stats:
            for kernel in stats.node_stats:
                name, _ = self._parse_kernel_label(kernel.timeline_label, kernel.node_name)
                start, end = kernel.all_start_micros, kernel.all_start_micros + kernel.all_end_rel_micros
                op_gpu_start[name] = min(op_gpu_start.get(name, start), start)
                op_gpu_end[name] = max(op_gpu_end.get(name, end), end)
        for stats in job_stats:
            for op in stats.node_stats:
                if op.node_name in op_gpu_start:
                    end = max(op_gpu_end[op.node_name], op.all_start_micros + op.all_end_rel_micros)
                    if op_time == "gpu":
                        op.all_start_micros = op_gpu_start[op.node_name]
                    op.all_end_rel_micros = end - op.all_start_micros

    def analyze_step_stats(self, show_dataflow: bool = True, show_memory: bool = True,
                           op_time: str = "schedule") -> StepStatsAnalysis:
        """Analyze the step stats into Chrome trace events and per-allocator memory peaks.

        Args:
          show_dataflow: add flow events joining producers to consumers on other pids or lanes.
          show_memory: add tensor object events (N/O/D) and allocator memory counters (C).
          op_time: "schedule" (recorded times), "gpu" (GPU kernel times) or "all" (scheduling to last kernel).

        Returns:
          A StepStatsAnalysis(chrome_trace, allocator_maximums).
        """
        self._reset()
        self._preprocess_op_time(op_time)
        self._allocate_pids()
        self._assign_lanes()
        self._analyze_tensors(show_memory)
        self._show_compute(show_dataflow)
        if show_memory:
            self._show_memory_counters()
        return StepStatsAnalysis(chrome_trace=self._chrome_trace, allocator_maximums=self._allocator_maximums)

    def generate_chrome_trace_format(self, show_dataflow: bool = True, show_memory: bool = False,
                                     op_time: str = "schedule") -> str:
        """The step as a Chrome trace JSON string (4-space indented), for chrome://tracing or Perfetto.

        Args:
          show_dataflow: add flow arrows from producers to consumers on other pids or lanes.
          show_memory: add tensor lifetimes and allocator memory counters.
          op_time: "schedule", "gpu" or "all" (see analyze_step_stats).

        Returns:
          A JSON-formatted string in Chrome trace format.
        """
        analysis = self.analyze_step_stats(show_dataflow=show_dataflow, show_memory=show_memory, op_time=op_time)
        return analysis.chrome_trace.format_to_string(pretty=True)
