"""A log directory written by adplace, served by a real TensorBoard: its HTTP JSON endpoints list the run, the
scalar tags and values, the graph (with the devices of its nodes) and the traced run's metadata. TensorBoard runs in
a subprocess on a free local port and is stopped at the end; the test skips if it does not start within 60 s."""
import json
import os
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.parse
import urllib.request

import numpy as np
import pytest

import adplace as tf

pytest.importorskip("tensorboard")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _get(base: str, path: str, **query) -> bytes:
    url = base + path + ("?" + urllib.parse.urlencode(query) if query else "")
    with urllib.request.urlopen(url, timeout=10) as response:
        return response.read()


def _write_logdir(logdir: str) -> None:
    with tf.device("/cpu:0"):
        x = tf.placeholder(tf.float32, [None, 2], name="x")
        w = tf.Variable([[1.0], [2.0]], name="w")
    loss = tf.reduce_mean(tf.matmul(x, w, name="y"), name="mean")
    tf.summary.scalar("loss", loss)
    merged = tf.summary.merge_all()
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        with tf.summary.FileWriter(logdir, sess.graph) as writer:
            for step in range(3):
                metadata = tf.RunMetadata()
                summary = sess.run(merged, {x: np.full([1, 2], step, np.float32)},
                                   options=tf.RunOptions(trace_level=tf.RunOptions.FULL_TRACE),
                                   run_metadata=metadata)
                writer.add_summary(summary, step)
            writer.add_run_metadata(metadata, "step2", 2)


def _wait_for(base: str, process, deadline: float, ready) -> object:
    """The first truthy `ready(base)` before `deadline`; skips the test if TensorBoard never answers."""
    while time.time() < deadline:
        if process.poll() is not None:
            pytest.skip(f"TensorBoard exited with status {process.returncode} before serving")
        try:
            result = ready(base)
            if result:
                return result
        except (urllib.error.URLError, ConnectionError, OSError):
            pass
        time.sleep(0.5)
    pytest.skip("TensorBoard did not start serving the log directory within 60 s")


def test_tensorboard_serves_adplace_event_files(tmp_path):
    logdir = str(tmp_path / "logs")
    _write_logdir(logdir)
    port = _free_port()
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3")
    process = subprocess.Popen([sys.executable, "-m", "tensorboard.main", "--logdir", logdir, "--port", str(port),
                                "--host", "127.0.0.1", "--load_fast", "false", "--reload_interval", "1"],
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.time() + 60
        tags = _wait_for(base, process, deadline,
                         lambda b: json.loads(_get(b, "/data/plugin/scalars/tags")).get("."))
        assert json.loads(_get(base, "/data/runs")) == ["."]
        assert "loss" in tags
        values = json.loads(_get(base, "/data/plugin/scalars/scalars", run=".", tag="loss"))
        assert [(step, value) for _, step, value in values] == [(0, 0.0), (1, 3.0), (2, 6.0)]
        graph = _get(base, "/data/plugin/graphs/graph", run=".", conceptual="false").decode()
        assert 'name: "y"' in graph and 'op: "MatMul"' in graph
        assert 'device: "/device:CPU:0"' in graph
        info = json.loads(_get(base, "/data/plugin/graphs/info"))
        assert info["."]["run_graph"] and "step2" in info["."]["tags"]
        metadata = _get(base, "/data/plugin/graphs/run_metadata", run=".", tag="step2").decode()
        assert "step_stats" in metadata and "node_name" in metadata and "device:CPU:0" in metadata
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
