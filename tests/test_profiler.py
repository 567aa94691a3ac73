"""adplace/profiler.py: ADCME's run_profile/save_profile, step summaries, the Gantt chart and the placement DOT."""
import ast
import importlib.util
import json
import logging
import re
import sys
from pathlib import Path

import numpy as np
import pytest

import adplace as tf
from adplace import profiler
from adplace.lib import protos

CPU = "/job:localhost/replica:0/task:0/device:CPU:0"
GPU0 = "/job:localhost/replica:0/task:0/device:GPU:0"
GPU1 = "/job:localhost/replica:0/task:0/device:GPU:1"


def node(label: str, start: int, dur: int, nbytes: int = 0):
    """A NodeExecStats proto named from `label` ("name = Op(inputs)"), with one `cpu` output of `nbytes` if any."""
    ss = protos.step_stats_pb2
    outputs = [ss.NodeOutput(tensor_description={"allocation_description": {
        "requested_bytes": nbytes, "allocator_name": "cpu"}})] if nbytes else []
    return ss.NodeExecStats(node_name=label.split(" = ")[0], timeline_label=label, all_start_micros=start,
                            all_end_rel_micros=dur, all_start_nanos=start * 1000, output=outputs)


def step(**node_stats_by_device):
    """A StepStats proto: device -> its NodeExecStats, in order."""
    return protos.step_stats_pb2.StepStats(dev_stats=[{"device": d, "node_stats": n}
                                                      for d, n in node_stats_by_device.items()])


def tower_step():
    """x on the CPU, copied to both GPUs (400 bytes each); one Sum per GPU; both sums copied back (4 bytes each).
    Each copy's source device is where its tensor was produced."""
    def copy(tensor, nbytes, start, dur):
        return node(f"{tensor}/_0 = _Recv({tensor})", start, dur, nbytes)
    return step(**{
        CPU: [node("x = Const()", 0, 10, 400), copy("s0", 4, 38, 1), copy("s1", 4, 60, 2),
              node("out = Add(s0/_0, s1/_0)", 70, 3, 4)],
        GPU0: [copy("x", 400, 11, 5), node("s0 = Sum(x/_0)", 17, 20, 4)],
        GPU1: [copy("x", 400, 12, 6), node("s1 = Sum(x/_0)", 19, 40, 4)]})


# --- run_profile / save_profile ------------------------------------------------------------------------------------
class _SpySession:
    def __init__(self):
        self.calls = []

    def run(self, fetches, feed_dict=None, options=None, run_metadata=None):
        self.calls.append((fetches, feed_dict, options, run_metadata))
        return "result"


def test_run_profile_traces_fully_and_keeps_only_the_latest_metadata(monkeypatch):
    monkeypatch.setattr(profiler, "run_metadata", None)
    assert profiler.last_run_metadata() is None
    sess = _SpySession()
    assert profiler.run_profile(sess, "y", {"x": 1}) == "result"
    first = profiler.last_run_metadata()
    fetches, feeds, options, md = sess.calls[0]
    assert (fetches, feeds) == ("y", {"x": 1}) and options.trace_level == tf.RunOptions.FULL_TRACE
    assert md is first and isinstance(md, tf.RunMetadata)
    profiler.run_profile(sess, "y")
    assert profiler.last_run_metadata() is sess.calls[1][3] is not first


def test_run_profile_returns_the_sessions_values(monkeypatch):
    monkeypatch.setattr(profiler, "run_metadata", None)
    x = tf.placeholder(tf.float32, [2])
    y = tf.square(x)
    assert tf.run_profile is profiler.run_profile and tf.save_profile is profiler.save_profile
    np.testing.assert_allclose(tf.run_profile(tf.Session(), y, {x: [2.0, 3.0]}), [4.0, 9.0])
    assert isinstance(profiler.last_run_metadata(), tf.RunMetadata)


def test_save_profile_without_run_profile_names_the_fix(monkeypatch, tmp_path):
    monkeypatch.setattr(profiler, "run_metadata", None)
    with pytest.raises(RuntimeError, match="run_profile"):
        profiler.save_profile(str(tmp_path / "t.json"))
    assert not (tmp_path / "t.json").exists()


def test_save_profile_writes_the_chrome_trace_and_says_how_to_open_it(monkeypatch, tmp_path, caplog):
    monkeypatch.setattr(profiler, "run_metadata", tf.RunMetadata(step_stats=tower_step()))
    path = tmp_path / "timeline.json"
    with caplog.at_level(logging.INFO, logger="adplace"):
        assert profiler.save_profile(str(path)) == str(path)
    trace = json.loads(path.read_text())
    assert [e["args"]["name"] for e in trace["traceEvents"] if e["ph"] == "M"][:2] == ["Allocators", CPU + " Compute"]
    assert sum(e["ph"] == "X" for e in trace["traceEvents"]) == 8
    assert not any(e["ph"] == "C" for e in trace["traceEvents"])   # show_memory is off by default, as in TF
    message = caplog.records[-1].getMessage()
    assert message.startswith(f"Timeline information saved in {path}\n")
    assert "chrome://tracing" in message and "ui.perfetto.dev" in message and "Load the timeline file" in message
    profiler.save_profile(str(path), show_memory=True, show_dataflow=False)   # kwargs reach the Timeline
    phases = {e["ph"] for e in json.loads(path.read_text())["traceEvents"]}
    assert "C" in phases and "s" not in phases


def test_save_profile_defaults_to_adcmes_file_name(monkeypatch, tmp_path):
    monkeypatch.setattr(profiler, "run_metadata", tf.RunMetadata(step_stats=tower_step()))
    monkeypatch.chdir(tmp_path)
    profiler.save_profile()
    assert json.loads((tmp_path / "default_timeline.json").read_text())["traceEvents"]


# --- step_summary / format_comparison ------------------------------------------------------------------------------
def test_step_summary_counts_ops_time_and_transfers():
    summary = profiler.step_summary(tower_step())
    assert summary["devices"] == {
        CPU: {"ops": 2, "op_time_us": 13, "transfer_time_us": 3},
        GPU0: {"ops": 1, "op_time_us": 20, "transfer_time_us": 5},
        GPU1: {"ops": 1, "op_time_us": 40, "transfer_time_us": 6}}
    assert summary["transfers"] == 4 and summary["transfer_bytes"] == 808 and summary["wall_us"] == 73
    assert summary["transfer_list"] == [("x:0", CPU, GPU0, 400), ("x:0", CPU, GPU1, 400), ("s0:0", GPU0, CPU, 4),
                                        ("s1:0", GPU1, CPU, 4)]   # in start order, across devices


def test_step_summary_reads_a_copy_of_an_unrecorded_tensor_with_no_source_device():
    summary = profiler.step_summary(step(**{GPU0: [node("a/_3 = _Recv(a:1)", 5, 2, 64)]}))
    assert summary["transfer_list"] == [("a:1", "", GPU0, 64)] and summary["devices"][GPU0]["ops"] == 0
    assert profiler.step_summary(step()) == {"devices": {}, "transfers": 0, "transfer_bytes": 0,
                                                  "transfer_list": [], "wall_us": 0}


def test_format_comparison_aligns_one_row_per_run():
    one_gpu = step(**{GPU0: [node("s = Sum(x)", 0, 3)]})
    table = profiler.format_comparison({"colocate=True": profiler.step_summary(tower_step()),
                                        "off": profiler.step_summary(one_gpu)})
    assert table == ("run            CPU:0 ops  GPU:0 ops  GPU:1 ops  transfers  bytes\n"
                     "colocate=True          2          1          1          4    808\n"
                     "off                    0          1          0          0      0")


# --- plot_timeline -------------------------------------------------------------------------------------------------
def test_plot_timeline_writes_png_and_svg_without_touching_pyplot(tmp_path):
    matplotlib = pytest.importorskip("matplotlib", reason='plot_timeline needs matplotlib (pip install "adplace[plot]")')
    backend, had_pyplot = matplotlib.get_backend(), "matplotlib.pyplot" in sys.modules
    png = tmp_path / "t.png"
    assert profiler.plot_timeline(tf.RunMetadata(step_stats=tower_step()), str(png)) == str(png)
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and png.stat().st_size > 5000
    svg = tmp_path / "t.svg"
    profiler.plot_timeline(tower_step(), str(svg))
    text = svg.read_text()
    assert "<svg" in text and "GPU:1" in text and "CPU:0" in text
    assert matplotlib.get_backend() == backend and ("matplotlib.pyplot" in sys.modules) == had_pyplot


def test_plot_timeline_without_matplotlib_says_what_to_install(monkeypatch, tmp_path):
    monkeypatch.setitem(sys.modules, "matplotlib.figure", None)
    with pytest.raises(ImportError, match=re.escape('pip install "adplace[plot]"')):
        profiler.plot_timeline(tower_step(), str(tmp_path / "t.png"))


def test_plot_lanes_match_the_timeline():
    nodes = [node("p = A()", 100, 10), node("q = A()", 110, 5), node("r = A()", 111, 9), node("s = A()", 116, 1)]
    assert profiler._lanes(nodes) == [0, 1, 0, 1]


# --- placement_dot -------------------------------------------------------------------------------------------------
def _split_graph():
    with tf.device("/cpu:0"):
        x = tf.constant([1.0, 2.0], name="in/x")
        parts = tf.split(tf.constant([1.0, 2.0, 3.0, 4.0], name="in/y"), 2, name="in/split")
    with tf.device("/gpu:0"):
        h = tf.sin(x, name="tower_0/sin")
        with tf.control_dependencies([parts[0].op]):
            out = tf.add(h, tf.cos(h, name="tower_0/cos"), name="tower_0/out")
    with tf.device("/gpu:1"):
        tf.multiply(parts[1], 2.0, name="tower_1/mul")
    return out


def test_placement_dot_colours_quotes_and_edge_styles(gpus, tmp_path):
    _split_graph()
    sess = tf.Session()
    path = tmp_path / "placement.dot"
    dot = profiler.placement_dot(tf.get_default_graph(), sess, str(path))
    assert path.read_text() == dot and dot.startswith("digraph placement {") and dot.rstrip().endswith("}")
    fill = dict(re.findall(r'^\s*"([^"]+)" \[label="[^"]*", fillcolor="([^"]+)"\];$', dot, re.M))
    assert set(fill) == {op.name for op in tf.get_default_graph().get_operations()}
    assert fill["in/x"] == fill["in/split"] != fill["tower_0/sin"] == fill["tower_0/out"] != fill["tower_1/mul"]
    assert fill["tower_1/mul"] != fill["in/x"]
    clusters = re.findall(r'subgraph "cluster_\d+" \{\n\s*label="([^"]+)"; style=rounded; color="([^"]+)"', dot)
    assert dict(clusters) == {CPU: fill["in/x"], GPU0: fill["tower_0/sin"], GPU1: fill["tower_1/mul"]}
    assert '"in/split" -> "tower_0/cos" [style=dashed];' in dot   # control edge (the block's first op)
    assert '"tower_0/sin" -> "tower_0/cos";' in dot   # same device: plain solid edge
    assert ('"in/split" -> "tower_1/mul" [style=bold, color="red", fontcolor="red", '
            'label="transfer in/split:1\\nCPU:0 -> GPU:1"];') in dot
    assert '"in/x" -> "tower_0/sin" [style=bold' in dot
    for line in dot.splitlines()[3:]:   # every node and edge statement names its nodes with quoted IDs
        if "->" in line or "[label=" in line:
            assert re.match(r'^\s*"[^"]+"( -> "[^"]+")? \[|^\s*"[^"]+" -> "[^"]+";$', line), line


def test_dot_ids_escape_quotes_and_backslashes():
    assert profiler._dot_id('a"b\\c/d:0') == '"a\\"b\\\\c/d:0"'
    assert profiler._dot_id("name\nOp") == '"name\\nOp"'


# --- layering ------------------------------------------------------------------------------------------------------
def test_the_core_never_imports_the_observe_layer():
    package = Path(profiler.__file__).resolve().parent
    offenders = []
    for sub in ("framework", "ops", "runtime", "kernels"):
        for path in (package / sub).rglob("*.py"):
            for n in ast.walk(ast.parse(path.read_text())):
                names = [a.name for a in n.names] if isinstance(n, (ast.Import, ast.ImportFrom)) else []
                module = n.module or "" if isinstance(n, ast.ImportFrom) else ""
                if any(x.startswith(("adplace.profiler", "adplace.client")) or
                       (module == "adplace" and x in ("profiler", "client")) for x in names + [module]):
                    offenders.append(str(path))
    assert offenders == []


# --- a real traced run ---------------------------------------------------------------------------------------------
def test_profiled_run_on_two_devices_summarises_its_transfers(gpus, monkeypatch, tmp_path):
    monkeypatch.setattr(profiler, "run_metadata", None)
    with tf.device("/cpu:0"):
        x = tf.placeholder(tf.float32, [4], name="x")
    with tf.device("/gpu:0"):
        y = tf.reduce_sum(tf.square(x, name="sq"), name="total")
    value = profiler.run_profile(tf.Session(), y, {x: np.ones(4, np.float32)})
    assert value == pytest.approx(4.0)
    step_stats = profiler.last_run_metadata().step_stats
    assert GPU0 in [d.device for d in step_stats.dev_stats]   # the fed placeholder runs nothing on the CPU
    summary = profiler.step_summary(step_stats)
    assert summary["transfers"] >= 1 and summary["transfer_bytes"] >= 16
    assert any(src == CPU and dst == GPU0 for _, src, dst, _ in summary["transfer_list"])
    assert summary["devices"][GPU0]["ops"] >= 2
    profiler.save_profile(str(tmp_path / "t.json"))
    assert json.loads((tmp_path / "t.json").read_text())["traceEvents"]
    if importlib.util.find_spec("matplotlib"):
        assert Path(profiler.plot_timeline(profiler.last_run_metadata(), str(tmp_path / "t.png"))).stat().st_size
