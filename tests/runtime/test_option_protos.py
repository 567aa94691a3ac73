"""ConfigProto, RunOptions, RunMetadata and step stats are TF's own protocol buffers: they behave as protobuf
messages, every option adplace honours is still honoured, and TF's own Timeline reads adplace's run metadata."""
import importlib.util
import json
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import adplace as tf
from adplace.client import timeline
from adplace.lib import protos
from adplace.runtime import options
from adplace.runtime.step_stats import copied_tensor, transfers

CPU = "/job:localhost/replica:0/task:0/device:CPU:0"
GPU0 = "/job:localhost/replica:0/task:0/device:GPU:0"
FULL_TRACE = tf.RunOptions.FULL_TRACE


# --- protobuf behaviour -------------------------------------------------------------------------------------------

def test_the_option_classes_are_tfs_protos():
    assert tf.ConfigProto is protos.config_pb2.ConfigProto and tf.RunMetadata is protos.config_pb2.RunMetadata
    assert tf.RewriterConfig is protos.rewriter_config_pb2.RewriterConfig
    assert options.CallableOptions is protos.config_pb2.CallableOptions
    assert type(tf.RunMetadata().step_stats) is protos.step_stats_pb2.StepStats
    assert (tf.RunOptions.FULL_TRACE, tf.RewriterConfig.OFF) == (3, 2)
    with pytest.raises(AttributeError, match="no attribute 'Bogus'"):
        tf.Bogus  # noqa: B018


def test_import_adplace_loads_no_option_protos_until_one_is_used():
    code = ("import sys, adplace as tf\n"
            "assert 'tensorboard.compat.proto.config_pb2' not in sys.modules\n"
            "tf.ConfigProto()\n"
            "assert 'tensorboard.compat.proto.config_pb2' in sys.modules\n")
    subprocess.run([sys.executable, "-c", code], check=True)


def test_has_field_is_for_message_fields_only_as_in_proto3():
    config = tf.ConfigProto()
    assert not config.HasField("gpu_options")
    config.gpu_options.allow_growth = True
    assert config.HasField("gpu_options")
    with pytest.raises(ValueError, match="does not have presence"):
        config.HasField("allow_soft_placement")
    with pytest.raises(ValueError, match='has no "bogus" field'):
        config.HasField("bogus")


def test_unknown_fields_raise_as_protobuf_does():
    with pytest.raises(ValueError, match='Protocol message ConfigProto has no "bogus" field'):
        tf.ConfigProto(bogus=1)
    with pytest.raises(AttributeError):
        tf.ConfigProto().bogus = 1
    with pytest.raises(TypeError):
        tf.ConfigProto(allow_soft_placement="yes")


def test_copy_equality_serialization_and_text_form():
    config = tf.ConfigProto(allow_soft_placement=True, device_count={"GPU": 0, "CPU": 2},
                            gpu_options=tf.GPUOptions(per_process_gpu_memory_fraction=0.5))
    config.device_filters.extend(["/job:localhost", "/job:ps"])
    config.graph_options.rewrite_options.remapping = tf.RewriterConfig.OFF
    copy = tf.ConfigProto()
    copy.CopyFrom(config)
    assert copy == config and copy is not config and copy != tf.ConfigProto()
    parsed = tf.ConfigProto.FromString(config.SerializeToString())
    assert parsed == config and dict(parsed.device_count) == {"GPU": 0, "CPU": 2}
    assert 'device_filters: "/job:ps"\n' in str(config) and "remapping: OFF" in str(config)
    assert str(tf.ConfigProto()) == ""


def test_map_and_repeated_fields():
    config = tf.ConfigProto(device_count={"GPU": 0})
    config.device_count["CPU"] = 2
    assert config.device_count["GPU"] == 0 and "CPU" in config.device_count and len(config.device_count) == 2
    pool = config.session_inter_op_thread_pool.add(num_threads=2, global_name="shared")
    assert config.session_inter_op_thread_pool[0] == pool == tf.ConfigProto().session_inter_op_thread_pool.add(
        num_threads=2, global_name="shared")
    with pytest.raises(TypeError):
        config.device_filters.append(3)


def test_short_debug_string_is_protobufs_one_line_form():
    config = tf.ConfigProto(allow_soft_placement=True, device_count={"GPU": 0},
                            gpu_options=tf.GPUOptions(allow_growth=True))
    assert options.short_debug_string(config) == ('device_count { key: "GPU" value: 0 } gpu_options { allow_growth: '
                                                  'true } allow_soft_placement: true')
    assert options.short_debug_string(tf.ConfigProto()) == ""


def test_session_errors_quote_the_config_on_one_line():
    config = tf.ConfigProto(allow_soft_placement=True)
    with pytest.raises(tf.errors.NotFoundError,
                       match='config: allow_soft_placement: true} Registered factories are {DirectSession, '
                             'ClusterSessionFactory}'):
        tf.Session("tcp://localhost:2222", config=config)


def test_the_config_must_be_a_config_proto():
    with pytest.raises(TypeError, match="config must be a tf.ConfigProto"):
        tf.Session(config={"allow_soft_placement": True})
    with pytest.raises(TypeError, match="options must be a tf.RunOptions"):
        tf.Session().run(tf.constant(1.0), options=tf.RunMetadata())


# --- the options adplace honours ----------------------------------------------------------------------------------

def test_allow_soft_placement_and_device_count_gpu_zero(gpus):
    with tf.device("/gpu:0"):
        x = tf.constant(1.0, name="x")
    with pytest.raises(tf.errors.InvalidArgumentError):
        tf.Session(config=tf.ConfigProto(device_count={"GPU": 0})).run(x)
    sess = tf.Session(config=tf.ConfigProto(device_count={"GPU": 0}, allow_soft_placement=True))
    assert sess.run(x) == 1.0
    assert [d.device_type for d in sess.list_devices()] == ["CPU"]


def test_device_count_cpu_and_visible_device_list(gpus):
    sess = tf.Session(config=tf.ConfigProto(device_count={"CPU": 2},
                                            gpu_options=tf.GPUOptions(visible_device_list="1")))
    assert [d.name.rsplit("device:", 1)[1] for d in sess.list_devices()] == ["CPU:0", "CPU:1", "GPU:0"]


def test_log_device_placement(capsys):
    x = tf.constant(1.0, name="logged")
    tf.Session(config=tf.ConfigProto(log_device_placement=True)).run(x)
    assert "logged" in capsys.readouterr().out


def test_thread_counts_and_remapping_reach_the_session():
    config = tf.ConfigProto(inter_op_parallelism_threads=3, intra_op_parallelism_threads=2)
    config.graph_options.rewrite_options.remapping = tf.RewriterConfig.OFF
    sess = tf.Session(config=config)
    assert (sess._runner.inter_threads, sess._runner.intra_threads) == (3, 2)
    assert not sess._ctx.fuse_elementwise and tf.Session()._ctx.fuse_elementwise


def test_operation_timeout_and_run_timeout(scratch_registry):
    import time

    from adplace.ops.op_builder import apply_op_1
    scratch_registry.register_op("Nap", lambda inputs, attrs, name: [(inputs[0]._dtype, inputs[0]._shape)],
                                 is_stateful=True)
    scratch_registry.register_kernel("Nap", "CPU")(lambda op, ctx: lambda x: (time.sleep(0.2), x)[1])
    nap = apply_op_1("Nap", [tf.constant(1.0)], name="nap")
    sess = tf.Session(config=tf.ConfigProto(operation_timeout_in_ms=20))
    with pytest.raises(tf.errors.DeadlineExceededError, match="ConfigProto.operation_timeout_in_ms"):
        sess.run(nap)
    with pytest.raises(tf.errors.DeadlineExceededError, match="RunOptions.timeout_in_ms"):
        tf.Session().run(nap, options=tf.RunOptions(timeout_in_ms=20))
    assert sess.run(nap, options=tf.RunOptions(timeout_in_ms=60_000)) == 1.0


def test_callable_options_run_options_trace_the_call():
    x = tf.placeholder(tf.float32, name="x")
    tf.multiply(x, 2.0, name="y")
    callable_options = options.CallableOptions(feed=["x:0"], fetch=["y:0"])
    callable_options.run_options.trace_level = FULL_TRACE
    step = tf.Session()._make_callable_from_options(callable_options)
    metadata = tf.RunMetadata()
    assert step(np.float32(3.0), run_metadata=metadata) == [6.0]
    assert [n.node_name for d in metadata.step_stats.dev_stats for n in d.node_stats] == ["y/y", "y"]


# --- RunMetadata: step stats and partition graphs -----------------------------------------------------------------

def _two_device_graph():
    with tf.device("/cpu:0"):
        x = tf.placeholder(tf.float32, [3], name="x")
        a = tf.square(x, name="a")
    with tf.device("/gpu:0"):
        b = tf.sin(a, name="b")
    with tf.device("/cpu:0"):
        c = tf.reduce_sum(b, name="c")
    return x, c


def _traced(fetch, feed_dict=None, **run_options):
    metadata = tf.RunMetadata()
    value = tf.Session().run(fetch, feed_dict, options=tf.RunOptions(**run_options), run_metadata=metadata)
    return value, metadata


def test_step_stats_are_filled_as_tfs_executor_fills_them(gpus):
    x, c = _two_device_graph()
    _, metadata = _traced(c, {x: np.arange(3, dtype=np.float32)}, trace_level=FULL_TRACE)
    assert metadata.HasField("step_stats") and not metadata.partition_graphs
    assert [d.device for d in metadata.step_stats.dev_stats] == [CPU, GPU0]
    nodes = {n.node_name: n for d in metadata.step_stats.dev_stats for n in d.node_stats}
    square = nodes["a"]
    assert square.timeline_label == "a = Square(x)"
    assert square.all_start_micros == square.all_start_nanos // 1000 > 1.6e15
    assert 0 <= square.all_end_rel_micros == square.all_end_rel_nanos // 1000
    description = square.output[0].tensor_description
    assert description.dtype == protos.types_pb2.DT_FLOAT and [d.size for d in description.shape.dim] == [3]
    assert (description.allocation_description.requested_bytes, description.allocation_description.allocator_name
            ) == (12, "cpu")
    assert [(m.allocator_name, m.total_bytes) for m in square.memory] == [("cpu", 12)]
    copies = [n for n in nodes.values() if copied_tensor(n) is not None]
    assert sorted(n.timeline_label.split("/_")[0] + n.timeline_label.split(" = ")[1] for n in copies) == [
        "a_Recv(a)", "b_Recv(b)"]   # `<op>/_<k> = _Recv(<op>)`, on the consumer's device
    assert [(t.tensor_name, t.src_device, t.dst_device, t.bytes) for t in transfers(metadata.step_stats)] == [
        ("a:0", CPU, GPU0, 12), ("b:0", GPU0, CPU, 12)]
    assert all(n.referenced_tensor for n in copies)
    main = metadata.step_stats.dev_stats[0].thread_names[square.thread_id]
    assert main  # the Python thread that ran the op


def test_a_large_output_leads_its_label_with_the_allocators_megabytes():
    big = tf.zeros([512, 256], name="big")  # 0.5 MB of float32
    _, metadata = _traced(big * 2.0, trace_level=FULL_TRACE)
    labels = [n.timeline_label for d in metadata.step_stats.dev_stats for n in d.node_stats]
    assert "[cpu 0.5MB 0.5MB] mul = Mul(big, mul/y)" in labels


def test_a_later_run_replaces_the_metadata_as_tf_does():
    c = tf.constant(1.0)
    sess, metadata = tf.Session(), tf.RunMetadata()
    sess.run(c, options=tf.RunOptions(trace_level=FULL_TRACE), run_metadata=metadata)
    assert metadata.HasField("step_stats")
    sess.run(c, run_metadata=metadata)
    assert metadata == tf.RunMetadata()
    sess.run(c, options=tf.RunOptions(trace_level=tf.RunOptions.NO_TRACE), run_metadata=metadata)
    assert not metadata.HasField("step_stats")


def test_trace_with_every_value_fed_still_has_step_stats():
    x = tf.placeholder(tf.float32, name="x")
    _, metadata = _traced(x, {x: 1.0}, trace_level=tf.RunOptions.SOFTWARE_TRACE)
    assert metadata.HasField("step_stats") and not metadata.step_stats.dev_stats


def test_output_partition_graphs_cut_cross_device_edges_into_send_and_recv(gpus):
    x, c = _two_device_graph()
    value, metadata = _traced(c, {x: np.ones(3, np.float32)}, output_partition_graphs=True)
    assert value == pytest.approx(3 * np.sin(1.0))
    assert not metadata.HasField("step_stats")
    cpu, gpu = metadata.partition_graphs
    assert {n.device for n in cpu.node} == {CPU} and {n.device for n in gpu.node} == {GPU0}
    cpu_nodes, gpu_nodes = {n.name: n for n in cpu.node}, {n.name: n for n in gpu.node}
    assert list(cpu_nodes["a"].input) == ["_recv_x_0"] and cpu_nodes["_recv_x_0"].attr["client_terminated"].b
    send = next(n for n in cpu.node if n.op == "_Send")
    recv = gpu_nodes[gpu_nodes["b"].input[0]]
    assert list(send.input) == ["a"] and recv.op == "_Recv"
    assert send.attr["tensor_name"].s == recv.attr["tensor_name"].s
    assert (recv.attr["send_device"].s, recv.attr["recv_device"].s) == (CPU.encode(), GPU0.encode())
    assert recv.attr["tensor_type"].type == protos.types_pb2.DT_FLOAT
    assert cpu_nodes[cpu_nodes["c"].input[0]].op == "_Recv"
    assert cpu.versions.producer > 0


# --- TF's own Timeline on adplace's run metadata ------------------------------------------------------------------

_TF_TIMELINE = textwrap.dedent("""
    import json, sys
    from tensorflow.core.protobuf import config_pb2
    from tensorflow.python.client import timeline
    from tensorflow.python.framework import op_def_registry
    metadata = config_pb2.RunMetadata()
    with open(sys.argv[1], "rb") as f:
        metadata.ParseFromString(f.read())
    trace = timeline.Timeline(metadata.step_stats).generate_chrome_trace_format(show_memory=True, show_dataflow=True)
    missing = [(n.name, a.name) for g in metadata.partition_graphs for n in g.node
               for a in op_def_registry.get(n.op).attr if not a.HasField("default_value") and a.name not in n.attr]
    with open(sys.argv[2], "w") as f:
        json.dump({"trace": json.loads(trace), "missing_attrs": missing}, f)
""")


@pytest.mark.skipif(importlib.util.find_spec("tensorflow") is None, reason="TensorFlow is not installed")
def test_tfs_timeline_reads_adplaces_run_metadata_as_adplaces_timeline_does(gpus, tmp_path):
    x, c = _two_device_graph()
    with tf.device("/gpu:0"):
        d = tf.reduce_max(c * tf.ones([2, 2]), name="d")
    _, metadata = _traced([c, d], {x: np.arange(3, dtype=np.float32)}, trace_level=FULL_TRACE,
                          output_partition_graphs=True)
    (tmp_path / "metadata.pb").write_bytes(metadata.SerializeToString())
    (tmp_path / "tf_timeline.py").write_text(_TF_TIMELINE)
    subprocess.run([sys.executable, str(tmp_path / "tf_timeline.py"), str(tmp_path / "metadata.pb"),
                    str(tmp_path / "out.json")], check=True, capture_output=True,
                   env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"}, timeout=300)
    from_tf = json.loads((tmp_path / "out.json").read_text())
    ours = json.loads(timeline.Timeline(metadata.step_stats).generate_chrome_trace_format(show_memory=True,
                                                                                           show_dataflow=True))
    assert from_tf["trace"] == ours
    events = ours["traceEvents"]
    assert any(e["ph"] == "X" and e["name"] == "_Recv" for e in events)
    assert any(e["ph"] == "O" and "DT_FLOAT" in e["args"]["snapshot"]["tensor_description"] for e in events)
    pids = {e["args"]["name"]: e["pid"] for e in events if e["ph"] == "M"}
    flows = {e["id"]: e["pid"] for e in events if e["ph"] == "s"}
    crossing = {(flows[e["id"]], e["pid"]) for e in events if e["ph"] == "t"}
    assert (pids[CPU + " Compute"], pids[GPU0 + " Compute"]) in crossing   # the copy's arrow crosses devices
    assert from_tf["missing_attrs"] == []   # every partition node has the attrs TF's OpDef requires
