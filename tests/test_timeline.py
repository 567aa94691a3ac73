"""adplace/client/timeline.py: TF's Chrome trace output, event for event, on hand-built and traced step stats."""
import json

import numpy as np

import adplace as tf
from adplace.client import timeline
from adplace.lib import protos

CPU = "/job:localhost/replica:0/task:0/device:CPU:0"
GPU = "/job:localhost/replica:0/task:0/device:GPU:0"


def node(label: str, start: int, dur: int, outputs=()):
    """A NodeExecStats proto named from `label` ("name = Op(inputs)"), with (allocator, bytes) float outputs of
    shape [n/4]."""
    return protos.step_stats_pb2.NodeExecStats(
        node_name=label.split(" = ")[0], timeline_label=label, all_start_micros=start, all_end_rel_micros=dur,
        op_end_rel_micros=dur, all_start_nanos=start * 1000, all_end_rel_nanos=dur * 1000,
        output=[{"slot": i, "tensor_description": {
            "dtype": 1, "shape": {"dim": [{"size": nbytes // 4}]},
            "allocation_description": {"requested_bytes": nbytes, "allocated_bytes": nbytes,
                                       "allocator_name": allocator}}}
                for i, (allocator, nbytes) in enumerate(outputs)])


def StepStats(dev_stats=()):  # noqa: N802 - reads as the proto's constructor
    return protos.step_stats_pb2.StepStats(dev_stats=dev_stats)


def DeviceStepStats(device: str, node_stats):  # noqa: N802
    return protos.step_stats_pb2.DeviceStepStats(device=device, node_stats=node_stats)


def two_device_step():
    """a, b (two outputs) and c = Add(a, b:1) on the CPU; c copied to the GPU as c/_0; d = Sin(c/_0); e = Mul(d, c/_1)
    where c/_1 has no record of its own (TF's Send/Recv without logging: the timeline credits c)."""
    cpu = [node("a = Const()", 1000, 5, [("cpu", 8)]),
           node("b = Split()", 1002, 4, [("cpu", 8), ("cpu", 8)]),  # overlaps a: second lane
           node("c = Add(a, b:1)", 1010, 3, [("cpu", 8)])]
    gpu = [node("c/_0 = _Recv(c)", 1014, 6, [("GPU_0_bfc", 8)]),
           node("d = Sin(c/_0)", 1021, 2, [("GPU_0_bfc", 8)]),
           node("e = Mul(d, c/_1)", 1024, 1, [("GPU_0_bfc", 8)])]
    return StepStats(dev_stats=[DeviceStepStats(device=CPU, node_stats=cpu), DeviceStepStats(device=GPU,
                                                                                              node_stats=gpu)])


def validate_chrome_trace(text: str) -> dict:
    """Check `text` against the Chrome trace event format as TF writes it; returns the parsed trace."""
    trace = json.loads(text)
    assert set(trace) == {"traceEvents"} and isinstance(trace["traceEvents"], list)
    events = trace["traceEvents"]
    for e in events:
        assert isinstance(e.get("ph"), str) and len(e["ph"]) == 1, e
        if e["ph"] == "M":
            assert e["name"] == "process_name" and isinstance(e["pid"], int) and isinstance(e["args"]["name"], str)
        elif e["ph"] == "X":
            assert {"ts", "dur", "pid", "tid", "name", "cat", "args"} <= set(e), e
            assert isinstance(e["ts"], (int, float)) and isinstance(e["dur"], (int, float)) and e["dur"] >= 0, e
            assert isinstance(e["pid"], int) and isinstance(e["tid"], int) and e["cat"] == "Op"
    metadata_count = sum(e["ph"] == "M" for e in events)
    assert all(e["ph"] == "M" for e in events[:metadata_count]), "metadata events come first"
    named_pids = {e["pid"] for e in events if e["ph"] == "M"}
    assert {e["pid"] for e in events if e["ph"] != "M"} <= named_pids, "every pid is named"
    starts = {e["id"]: e for e in events if e["ph"] == "s"}
    ends = [e for e in events if e["ph"] == "t"]
    assert len(starts) == sum(e["ph"] == "s" for e in events), "flow ids are unique"
    assert sorted(e["id"] for e in ends) == sorted(starts), "every flow s has exactly one t"
    for t in ends:
        s = starts[t["id"]]
        assert t["ts"] >= s["ts"] and t["name"] == s["name"] and t["cat"] == s["cat"] == "DataFlow", (s, t)
    by_track: dict = {}
    for e in events:
        if e["ph"] == "X":
            by_track.setdefault((e["pid"], e["tid"]), []).append((e["ts"], e["ts"] + e["dur"], e["args"]["name"]))
    for track, spans in by_track.items():
        spans.sort()
        for i, (_, e0, n0) in enumerate(spans):
            for s1, e1, n1 in spans[i + 1:]:   # s1 >= s0: disjoint or nested, never half inside
                assert s1 >= e0 or e1 <= e0, f"{n0} and {n1} partially overlap on {track}"
    return trace


def events_of(trace: dict, ph: str) -> list[dict]:
    return [e for e in trace["traceEvents"] if e["ph"] == ph]


def test_exact_tf_output_for_two_devices():
    text = timeline.Timeline(two_device_step()).generate_chrome_trace_format()
    trace = validate_chrome_trace(text)
    assert text == json.dumps(trace, indent=4, separators=(",", ": "))
    assert text.startswith('{\n    "traceEvents": [\n        {\n            "name": "process_name",')

    def x(name, op, pid, tid, ts, dur, *inputs):
        return {"ph": "X", "cat": "Op", "name": op, "pid": pid, "tid": tid, "ts": ts, "dur": dur,
                "args": {"name": name, "op": op, **{f"input{i}": n for i, n in enumerate(inputs)}}}

    def flow(ph, name, pid, tid, ts, flow_id):
        return {"ph": ph, "cat": "DataFlow", "name": name, "pid": pid, "tid": tid, "ts": ts, "id": flow_id}

    assert trace["traceEvents"] == [
        {"name": "process_name", "ph": "M", "pid": 0, "args": {"name": "Allocators"}},
        {"name": "process_name", "ph": "M", "pid": 1, "args": {"name": CPU + " Compute"}},
        {"name": "process_name", "ph": "M", "pid": 2, "args": {"name": CPU + " Tensors"}},
        {"name": "process_name", "ph": "M", "pid": 3, "args": {"name": GPU + " Compute"}},
        {"name": "process_name", "ph": "M", "pid": 4, "args": {"name": GPU + " Tensors"}},
        x("a", "Const", 1, 0, 1000, 5),
        x("b", "Split", 1, 1, 1002, 4),
        x("c", "Add", 1, 0, 1010, 3, "a", "b:1"),
        flow("s", "b:1", 1, 1, 1006, 0), flow("t", "b:1", 1, 0, 1010, 0),   # a: same lane, no arrow
        x("c/_0", "_Recv", 3, 0, 1014, 6, "c"),
        flow("s", "c", 1, 0, 1013, 1), flow("t", "c", 3, 0, 1014, 1),       # the copy: CPU process -> GPU process
        x("d", "Sin", 3, 0, 1021, 2, "c/_0"),
        x("e", "Mul", 3, 0, 1024, 1, "d", "c/_1"),
        flow("s", "c", 1, 0, 1013, 2), flow("t", "c", 3, 0, 1024, 2),       # c/_1 unrecorded: `/_1` stripped
    ]


def test_transfer_flow_crosses_from_source_to_destination_device():
    trace = validate_chrome_trace(timeline.Timeline(two_device_step()).generate_chrome_trace_format())
    pid_of = {e["args"]["name"]: e["pid"] for e in events_of(trace, "M")}
    crossing = [(s, t) for s in events_of(trace, "s") for t in events_of(trace, "t") if s["id"] == t["id"]
                and s["pid"] == pid_of[CPU + " Compute"] and t["pid"] == pid_of[GPU + " Compute"]]
    recv = next(e for e in events_of(trace, "X") if e["name"] == "_Recv")
    assert any(t["ts"] == recv["ts"] and s["name"] == "c" for s, t in crossing)


def test_no_dataflow_means_no_flow_events():
    trace = validate_chrome_trace(timeline.Timeline(two_device_step()).generate_chrome_trace_format(
        show_dataflow=False))
    assert not events_of(trace, "s") and not events_of(trace, "t") and len(events_of(trace, "X")) == 6


def test_lanes_need_a_strictly_later_start_and_are_reused():
    step = StepStats(dev_stats=[DeviceStepStats(device=CPU, node_stats=[
        node("p = Const()", 100, 10), node("q = Const()", 110, 5),   # q starts exactly at p's end: new lane
        node("r = Const()", 111, 9), node("s = Const()", 116, 1),     # r after p: lane 0; s: lane 0 busy, q done
        node("t = Const()", 117, 1)])])                                # t starts at s's end: neither lane 0 nor 1
    trace = validate_chrome_trace(timeline.Timeline(step).generate_chrome_trace_format())
    assert [(e["args"]["name"], e["tid"]) for e in events_of(trace, "X")] == [("p", 0), ("q", 1), ("r", 0), ("s", 1),
                                                                              ("t", 2)]


def test_unparsable_labels_recv_tensor_and_empty_inputs():
    step = StepStats(dev_stats=[DeviceStepStats(device=CPU, node_stats=[
        node("weird label", 1, 1), node("RecvTensor = x(y)", 5, 1), node("z = NoOp()", 9, 1)])])
    step.dev_stats[0].node_stats[0].node_name = "weird"
    step.dev_stats[0].node_stats[1].node_name = "RecvTensor"
    args = [e["args"] for e in events_of(json.loads(timeline.Timeline(step).generate_chrome_trace_format()), "X")]
    assert args == [{"name": "weird", "op": "unknown"}, {"name": "RecvTensor", "op": "RecvTensor"},
                    {"name": "z", "op": "NoOp"}]


def test_memory_events_and_allocator_maximums():
    analysis = timeline.Timeline(two_device_step()).analyze_step_stats()
    assert isinstance(analysis, timeline.StepStatsAnalysis)
    cpu_max, gpu_max = analysis.allocator_maximums["cpu"], analysis.allocator_maximums["GPU_0_bfc"]
    # cpu: a, b, b:1 live at 1002 (24 bytes); at 1010 b is gone and c is born: 24 again, not a new maximum
    assert cpu_max == timeline.AllocationMaximum(timestamp=1002, num_bytes=24, tensors={"a", "b", "b:1"})
    assert gpu_max == timeline.AllocationMaximum(timestamp=1021, num_bytes=16, tensors={"c/_0", "d"})
    trace = validate_chrome_trace(analysis.chrome_trace.format_to_string(pretty=True))
    created = events_of(trace, "N")
    assert [(e["name"], e["pid"], e["ts"], e["id"]) for e in created] == [
        ("a", 2, 1000, 0), ("b", 2, 1002, 1), ("b:1", 2, 1002, 2), ("c", 2, 1010, 3), ("c/_0", 4, 1014, 4),
        ("d", 4, 1021, 5), ("e", 4, 1024, 6)]
    snapshot = next(e for e in events_of(trace, "O") if e["name"] == "c/_0")
    assert snapshot["ts"] == 1019 and snapshot["args"]["snapshot"]["tensor_description"] == (
        "dtype: DT_FLOAT\nshape {\n  dim {\n    size: 2\n  }\n}\nallocation_description {\n  requested_bytes: 8\n"
        "  allocated_bytes: 8\n  allocator_name: GPU_0_bfc\n}\n")   # the proto's text format, as TF's str() gives
    deleted = {e["name"]: (e["ts"], e["tid"]) for e in events_of(trace, "D")}
    assert deleted["c"] == (1024, 0) and deleted["b"] == (1006, 0) and deleted["c/_0"] == (1022, 0)
    counters = [(e["name"], e["ts"], e["args"]) for e in events_of(trace, "C")]
    assert all(e["pid"] == 0 and e["cat"] == "Memory" for e in events_of(trace, "C"))
    assert counters[:3] == [("cpu", 1000, {"cpu": 8}), ("cpu", 1002, {"cpu": 16}), ("cpu", 1002, {"cpu": 24})]
    assert counters[-1] == ("GPU_0_bfc", 1025, {"GPU_0_bfc": 0})


def test_memory_is_off_by_default_in_the_chrome_trace():
    trace = json.loads(timeline.Timeline(two_device_step()).generate_chrome_trace_format())
    assert not {"N", "O", "D", "C"} & {e["ph"] for e in trace["traceEvents"]}
    trace = json.loads(timeline.Timeline(two_device_step()).generate_chrome_trace_format(show_memory=True))
    assert {"N", "O", "D", "C"} <= {e["ph"] for e in trace["traceEvents"]}


def test_op_time_gpu_and_all_use_stream_kernels_on_a_copy():
    step = StepStats(dev_stats=[
        DeviceStepStats(device=GPU, node_stats=[node("d = Sin(c)", 1021, 2)]),
        DeviceStepStats(device=GPU + "/stream:all", node_stats=[node("k = kernel", 1030, 10)])])
    step.dev_stats[1].node_stats[0].timeline_label = "void sin_kernel() @@d:Sin#id=1#"
    spans = {}
    for op_time in ("schedule", "gpu", "all"):
        trace = json.loads(timeline.Timeline(step).generate_chrome_trace_format(op_time=op_time))
        spans[op_time] = [(e["args"]["name"], e["args"]["op"], e["ts"], e["dur"]) for e in events_of(trace, "X")]
    assert spans["schedule"] == [("d", "Sin", 1021, 2), ("d", "Sin", 1030, 10)]  # the kernel, named from its label
    assert spans["gpu"][0] == ("d", "Sin", 1030, 10)
    assert spans["all"][0] == ("d", "Sin", 1021, 19)
    assert step.dev_stats[0].node_stats[0].all_start_micros == 1021  # the caller's step stats are untouched


def test_repeated_calls_agree_and_leave_thread_ids_alone():
    step = two_device_step()
    tl = timeline.Timeline(step)
    assert tl.generate_chrome_trace_format() == tl.generate_chrome_trace_format()
    assert all(ns.thread_id == 0 for d in step.dev_stats for ns in d.node_stats)


def test_empty_step_stats_give_only_the_allocators_process():
    trace = validate_chrome_trace(timeline.Timeline(StepStats()).generate_chrome_trace_format())
    assert trace["traceEvents"] == [{"name": "process_name", "ph": "M", "pid": 0, "args": {"name": "Allocators"}}]


def _traced_run(fetch, feed_dict=None) -> tf.RunMetadata:
    md = tf.RunMetadata()
    tf.Session().run(fetch, feed_dict, options=tf.RunOptions(trace_level=tf.RunOptions.FULL_TRACE), run_metadata=md)
    assert md.step_stats.dev_stats, "a FULL_TRACE run must fill RunMetadata.step_stats"
    return md


def test_traced_run_on_cpu_and_gpu_shows_the_copy(gpus):
    with tf.device("/cpu:0"):
        x = tf.placeholder(tf.float32, [3], name="x")
        a = tf.square(x, name="in/a")
    with tf.device("/gpu:0"):
        b = tf.sin(a, name="layer/sin")
    with tf.device("/cpu:0"):
        c = tf.reduce_sum(b, name="out/sum")
    md = _traced_run(c, {x: np.arange(3, dtype=np.float32)})
    trace = validate_chrome_trace(timeline.Timeline(md.step_stats).generate_chrome_trace_format(show_memory=True))
    compute_pid = {e["args"]["name"].rsplit(" ", 1)[0]: e["pid"] for e in events_of(trace, "M")
                   if e["args"]["name"].endswith(" Compute")}
    assert {CPU, GPU} <= set(compute_pid)
    names = {(e["pid"], e["args"]["name"]) for e in events_of(trace, "X")}
    assert (compute_pid[CPU], "in/a") in names and (compute_pid[GPU], "layer/sin") in names
    flows = {e["id"]: e for e in events_of(trace, "s")}
    crossings = {(flows[t["id"]]["pid"], t["pid"]) for t in events_of(trace, "t")}
    assert (compute_pid[CPU], compute_pid[GPU]) in crossings and (compute_pid[GPU], compute_pid[CPU]) in crossings
    assert any(e["name"] == "_Recv" and e["pid"] == compute_pid[GPU] for e in events_of(trace, "X"))
