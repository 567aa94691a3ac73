"""Tests for adplace/summary (FileWriter, FileWriterCache, the event file writer, summary_iterator): event files that
TensorBoard's own readers load (scalars, histograms, images, text, graphs with devices, run metadata), TF's file
naming and first event, background flushing, concurrency, closing and reopening."""
import glob
import os
import re
import socket
import subprocess
import sys
import threading
import time
import warnings

import numpy as np
import pytest

import adplace as tf
from adplace.lib.io import tf_record
from adplace.summary import event_file

pytest.importorskip("tensorboard")
from tensorboard.backend.event_processing import event_file_loader  # noqa: E402
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator  # noqa: E402


def _events(path):
    return list(event_file_loader.LegacyEventFileLoader(path).Load())


def _only_file(logdir):
    files = glob.glob(os.path.join(str(logdir), "events.out.tfevents.*"))
    assert len(files) == 1, files
    return files[0]


def _accumulator(logdir):
    acc = EventAccumulator(str(logdir), size_guidance={"scalars": 0, "histograms": 0, "images": 0, "tensors": 0})
    acc.Reload()
    return acc


def _model():
    with tf.device("/cpu:0"):
        x = tf.placeholder(tf.float32, [None, 3], name="x")
        w = tf.Variable(tf.ones([3, 2]), name="w")
    loss = tf.reduce_sum(tf.matmul(x, w, name="y"), name="total")
    return x, w, loss


def test_file_name_and_first_event(tmp_path):
    before = int(time.time())
    writer = tf.summary.FileWriter(str(tmp_path / "run"), filename_suffix=".v2")
    path = _only_file(tmp_path / "run")  # the file exists, with its version event, before any event is added
    writer.close()
    name = os.path.basename(path)
    match = re.fullmatch(r"events\.out\.tfevents\.(\d{10})\.(.+)\.v2", name)
    assert match and match.group(2) == socket.gethostname() and int(match.group(1)) >= before
    first = _events(path)[0]
    assert first.file_version == "brain.Event:2" and first.wall_time == int(match.group(1))
    assert writer.get_logdir() == str(tmp_path / "run")


def test_scalars_histograms_images_text_read_back_by_tensorboard(tmp_path):
    x, w, loss = _model()
    tf.summary.scalar("loss", loss)
    tf.summary.histogram("weights", w)
    tf.summary.image("img", tf.reshape(x, [-1, 1, 3, 1]), max_outputs=1)
    tf.summary.text("note", tf.constant("hello *world*"))
    merged = tf.summary.merge_all()
    with tf.Session() as sess, tf.summary.FileWriter(str(tmp_path)) as writer:
        sess.run(tf.global_variables_initializer())
        for step in range(3):
            writer.add_summary(sess.run(merged, {x: np.full([2, 3], step, np.float32)}), global_step=step)
    acc = _accumulator(tmp_path)
    tags = acc.Tags()
    assert tags["scalars"] == ["loss"] and tags["histograms"] == ["weights"] and tags["images"] == ["img/image"]
    assert "note" in tags["tensors"]
    assert [(e.step, e.value) for e in acc.Scalars("loss")] == [(0, 0.0), (1, 12.0), (2, 24.0)]
    histo = acc.Histograms("weights")[-1].histogram_value
    assert (histo.num, histo.min, histo.max, histo.sum) == (6, 1, 1, 6)
    image = acc.Images("img/image")[0]
    assert (image.width, image.height) == (3, 1) and image.encoded_image_string.startswith(b"\x89PNG")
    assert acc.Tensors("note")[0].tensor_proto.string_val == [b"hello *world*"]


def test_the_text_plugins_metadata_is_written_with_the_first_value_only(tmp_path):
    text = tf.summary.text("note", tf.constant("a"))
    with tf.Session() as sess, tf.summary.FileWriter(str(tmp_path)) as writer:
        value = sess.run(text)
        writer.add_summary(value, 1)
        writer.add_summary(tf.summary.Summary.FromString(value), 2)
    values = [e.summary.value[0] for e in _events(_only_file(tmp_path)) if e.HasField("summary")]
    assert [v.HasField("metadata") for v in values] == [True, False]


def test_graph_and_meta_graph_with_devices(tmp_path):
    x, w, loss = _model()
    graph = tf.get_default_graph()
    with tf.summary.FileWriter(str(tmp_path), graph):
        pass
    acc = _accumulator(tmp_path)
    assert acc.Tags()["graph"]
    nodes = {n.name: n for n in acc.Graph().node}
    assert nodes["x"].op == "Placeholder" and nodes["x"].device == "/device:CPU:0"
    assert nodes["y"].op == "MatMul" and nodes["y"].input[:] == ["x", "w/read"]
    assert "_output_shapes" in nodes["y"].attr  # written with add_shapes=True, as TF's FileWriter
    if acc.Tags()["meta_graph"]:
        assert {n.name for n in acc.MetaGraph().graph_def.node} == set(nodes)


def test_a_graph_def_proto_is_written_as_it_is(tmp_path):
    from adplace.lib import protos

    graph_def = protos.graph_pb2.GraphDef()
    graph_def.node.add(name="a", op="Const", device="/job:localhost/replica:0/task:0/device:GPU:1")
    with tf.summary.FileWriter(str(tmp_path)) as writer:
        writer.add_graph(graph_def)
        with pytest.raises(ValueError, match="only graph, or graph_def"):
            writer.add_graph(graph_def, graph_def=graph_def)
        with pytest.raises(TypeError, match="instance of `Graph`"):
            writer.add_graph("not a graph")
    assert [(n.name, n.device) for n in _accumulator(tmp_path).Graph().node] == \
        [("a", "/job:localhost/replica:0/task:0/device:GPU:1")]


def test_run_metadata_carries_step_stats(tmp_path):
    x, w, loss = _model()
    with tf.Session() as sess, tf.summary.FileWriter(str(tmp_path)) as writer:
        sess.run(tf.global_variables_initializer())
        metadata = tf.RunMetadata()
        sess.run(loss, {x: np.ones([2, 3])}, options=tf.RunOptions(trace_level=tf.RunOptions.FULL_TRACE),
                 run_metadata=metadata)
        writer.add_run_metadata(metadata, "step1", global_step=1)
        with pytest.raises(ValueError, match="tag was already used"):
            writer.add_run_metadata(metadata, "step1", global_step=2)
        with pytest.raises(TypeError, match="RunMetadata proto"):
            writer.add_run_metadata(object(), "step3")
    acc = _accumulator(tmp_path)
    assert acc.Tags()["run_metadata"] == ["step1"]
    stats = acc.RunMetadata("step1").step_stats
    devices = [d.device for d in stats.dev_stats]
    assert any(d.endswith("device:CPU:0") for d in devices)
    node_names = {n.node_name for d in stats.dev_stats for n in d.node_stats}
    assert {"y", "total"} <= node_names


def test_session_logs_and_raw_events(tmp_path):
    with tf.summary.FileWriter(str(tmp_path)) as writer:
        writer.add_session_log(tf.summary.SessionLog(status=tf.summary.SessionLog.START), 5)
        writer.add_event(tf.summary.Event(step=6, wall_time=123.0, file_version="custom"))
    events = _events(_only_file(tmp_path))
    assert events[1].session_log.status == tf.summary.SessionLog.START and events[1].step == 5
    assert (events[2].step, events[2].wall_time, events[2].file_version) == (6, 123.0, "custom")


def test_events_are_flushed_in_the_background(tmp_path):
    writer = tf.summary.FileWriter(str(tmp_path), flush_secs=0.2)
    writer.add_summary(tf.summary.Summary(value=[tf.summary.Summary.Value(tag="t", simple_value=1.0)]), 1)
    path = _only_file(tmp_path)
    deadline = time.time() + 10
    while time.time() < deadline:
        if len(list(tf_record.read_records(path, partial_tail_ok=True))) == 2:
            break
        time.sleep(0.05)
    assert len(list(tf_record.read_records(path))) == 2  # written with no flush() or close()
    writer.close()


def test_many_threads_add_summaries_each_written_once(tmp_path):
    writer = tf.summary.FileWriter(str(tmp_path), max_queue=3)

    def add(thread):
        for i in range(150):
            summary = tf.summary.Summary(value=[tf.summary.Summary.Value(tag=f"t{thread}", simple_value=i)])
            writer.add_summary(summary.SerializeToString(), global_step=i)
            if i % 50 == 0:
                writer.flush()

    threads = [threading.Thread(target=add, args=(k,)) for k in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    writer.close()
    seen = [(e.summary.value[0].tag, e.step) for e in _events(_only_file(tmp_path)) if e.HasField("summary")]
    assert sorted(seen) == sorted((f"t{k}", i) for k in range(6) for i in range(150))
    assert all(v.simple_value == e.step for e in _events(_only_file(tmp_path)) for v in e.summary.value)


def test_close_is_idempotent_and_a_closed_writer_writes_nothing(tmp_path):
    writer = tf.summary.FileWriter(str(tmp_path))
    writer.close()
    writer.close()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        writer.add_session_log(tf.summary.SessionLog(status=tf.summary.SessionLog.STOP))
        writer.flush()
    assert len(caught) == 2 and "closed FileWriter" in str(caught[0].message)
    assert len(_events(_only_file(tmp_path))) == 1


def test_reopen_starts_a_new_file(tmp_path):
    writer = tf.summary.FileWriter(str(tmp_path))
    writer.add_session_log(tf.summary.SessionLog(status=tf.summary.SessionLog.START), 1)
    writer.close()
    writer.reopen()
    writer.add_session_log(tf.summary.SessionLog(status=tf.summary.SessionLog.START), 2)
    writer.close()
    files = sorted(glob.glob(str(tmp_path / "events.out.tfevents.*")))
    assert len(files) == 2
    assert [[e.step for e in _events(f) if e.HasField("session_log")] for f in files] == [[1], [2]]


def test_a_deleted_event_file_is_recreated(tmp_path):
    writer = tf.summary.FileWriter(str(tmp_path))
    os.remove(_only_file(tmp_path))
    writer.flush()
    writer.add_session_log(tf.summary.SessionLog(status=tf.summary.SessionLog.START), 3)
    writer.close()
    events = _events(_only_file(tmp_path))
    assert events[0].file_version == "brain.Event:2" and events[-1].step == 3


def test_a_failed_write_is_raised_to_the_caller(tmp_path, monkeypatch):
    writer = tf.summary.FileWriter(str(tmp_path))

    def broken(self, data):
        raise OSError(28, "No space left on device")
    monkeypatch.setattr(event_file._EventFile, "write", broken)
    writer.add_session_log(tf.summary.SessionLog(status=tf.summary.SessionLog.START))
    with pytest.raises(OSError, match="No space left"):
        writer.flush()
    writer.close()


def test_file_writer_cache(tmp_path):
    first = tf.summary.FileWriterCache.get(str(tmp_path))
    assert tf.summary.FileWriterCache.get(str(tmp_path)) is first
    tf.summary.FileWriterCache.clear()
    assert first._closed and tf.summary.FileWriterCache.get(str(tmp_path)) is not first
    tf.summary.FileWriterCache.clear()


def test_summary_iterator_reads_events_back(tmp_path):
    with tf.summary.FileWriter(str(tmp_path)) as writer:
        writer.add_summary(tf.summary.Summary(value=[tf.summary.Summary.Value(tag="a", simple_value=2.0)]), 7)
    events = list(tf.train.summary_iterator(_only_file(tmp_path)))
    assert events[0].file_version == "brain.Event:2"
    assert (events[1].step, events[1].summary.value[0].tag, events[1].summary.value[0].simple_value) == (7, "a", 2)


def test_events_still_queued_at_exit_are_written(tmp_path):
    script = ("import sys, adplace as tf\n"
              "w = tf.summary.FileWriter(sys.argv[1], flush_secs=3600)\n"
              "for step in range(5):\n"
              "    w.add_session_log(tf.summary.SessionLog(status=tf.summary.SessionLog.START), step)\n")
    done = subprocess.run([sys.executable, "-c", script, str(tmp_path)], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert [e.step for e in _events(_only_file(tmp_path)) if e.HasField("session_log")] == list(range(5))


def test_a_graph_that_cannot_be_written_leaves_no_writer_behind(tmp_path):
    threads_before = set(threading.enumerate())  # compared as sets: another test's background thread may end now
    with pytest.raises(TypeError, match="instance of `Graph`"):
        tf.summary.FileWriter(str(tmp_path), graph="not a graph")
    assert os.listdir(tmp_path) == [] and not set(threading.enumerate()) - threads_before


def test_add_meta_graph_takes_a_meta_graph_def_only(tmp_path):
    from adplace.lib import protos

    meta = protos.meta_graph_pb2.MetaGraphDef()
    meta.graph_def.node.add(name="n", op="NoOp", device="/device:CPU:0")
    with tf.summary.FileWriter(str(tmp_path)) as writer:
        writer.add_meta_graph(meta, global_step=4)
        with pytest.raises(TypeError, match="must be type MetaGraphDef"):
            writer.add_meta_graph(meta.graph_def)
    acc = _accumulator(tmp_path)
    assert [n.name for n in acc.MetaGraph().graph_def.node] == ["n"]
