"""Checkpoints exchanged with real TensorFlow (run in a subprocess: tests/train/tf_checkpoint_peer.py): one saved by
TF's tf.compat.v1.train.Saver restores in adplace with equal values, and one saved by adplace restores in TF and
lists the same names, shapes and dtypes in TF's NewCheckpointReader; TF reads adplace's `checkpoint` state file.
Skipped without TensorFlow."""
import importlib.util
import json
import os
from pathlib import Path

import numpy as np

import adplace as tf
from tf_peer import needs_tf, run_peer

pytestmark = needs_tf

PEER = Path(__file__).with_name("tf_checkpoint_peer.py")
_spec = importlib.util.spec_from_file_location("tf_checkpoint_peer", PEER)
peer = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(peer)  # only its VARIABLES and encode(): it imports TensorFlow inside main() alone


def _run_peer(mode: str, prefix: str) -> dict:
    return json.loads(run_peer(PEER, mode, prefix))


def _build(parts: int, initial: bool) -> dict:
    """adplace variables named and typed as the peer's; "part" partitioned in `parts`."""
    variables = {}
    for name, (dtype, value) in peer.VARIABLES.items():
        if name == "part":
            variables[name] = tf.get_variable(name, shape=value.shape, dtype=tf.as_dtype(dtype),
                                              initializer=tf.zeros_initializer(),
                                              partitioner=tf.fixed_size_partitioner(parts))
        elif dtype == "string":
            init = value if initial else np.array([b""] * value.size, dtype=object)
            variables[name] = tf.Variable(init, dtype=tf.string, name=name)
        else:
            variables[name] = tf.Variable(value if initial else np.zeros_like(value), dtype=tf.as_dtype(dtype),
                                          name=name)
    return variables


def _values(sess, variables) -> dict:
    fetched = sess.run({name: (v.as_tensor() if name == "part" else v) for name, v in variables.items()})
    return {name: peer.encode(value) for name, value in fetched.items()}


def _expected() -> dict:
    return {name: peer.encode(value) for name, (_, value) in peer.VARIABLES.items()}


def test_a_tf_checkpoint_restores_in_adplace(tmp_path):
    prefix = str(tmp_path / "tf_model")
    saved_by_tf = _run_peer("save", prefix)
    assert saved_by_tf == _expected()
    reader = tf.train.NewCheckpointReader(prefix)
    assert reader.get_variable_to_shape_map() == {name: list(np.shape(value))
                                                  for name, (_, value) in peer.VARIABLES.items()}
    assert {n: d.name for n, d in reader.get_variable_to_dtype_map().items()} == {
        name: dtype for name, (dtype, _) in peer.VARIABLES.items()}
    variables = _build(parts=2, initial=False)  # TF saved "part" in 3 parts
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        tf.train.Saver().restore(sess, prefix)
        assert _values(sess, variables) == saved_by_tf


def test_an_adplace_checkpoint_restores_in_tf(tmp_path):
    variables = _build(parts=3, initial=True)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        for part in variables["part"]:
            info = part._get_save_slice_info()
            start, rows = int(info.var_offset[0]), int(info.var_shape[0])
            part.load(peer.VARIABLES["part"][1][start:start + rows], sess)
        saver = tf.train.Saver()
        saver.save(sess, str(tmp_path / "adplace_model"), global_step=1)
        prefix = saver.save(sess, str(tmp_path / "adplace_model"), global_step=2)
    assert _run_peer("state", str(tmp_path)) == {"latest": prefix, "all": [prefix[:-1] + "1", prefix]}
    listed = _run_peer("read", prefix)
    assert {name: (entry["dtype"], entry["shape"]) for name, entry in listed.items()} == {
        name: (dtype, list(np.shape(value))) for name, (dtype, value) in peer.VARIABLES.items()}
    assert {name: entry["values"] for name, entry in listed.items()} == _expected()
    assert _run_peer("restore", prefix) == _expected()  # TF restores "part" into 2 parts


def test_a_sharded_adplace_checkpoint_reads_in_tf(tmp_path, gpus):
    with tf.device("/gpu:0"):
        a = tf.Variable(np.float32([1, 2]), name="a")
    with tf.device("/gpu:1"):
        tf.Variable(np.float64([[3]]), name="b")
    tf.Variable(np.array([b"x"], dtype=object), name="c")
    with tf.Session(config=tf.ConfigProto(allow_soft_placement=True)) as sess:
        sess.run(tf.global_variables_initializer())
        sess.run(a.assign([5.0, 6.0]))
        prefix = tf.train.Saver(sharded=True).save(sess, str(tmp_path / "sharded"))
    assert len([f for f in os.listdir(tmp_path) if ".data-" in f]) == 3
    listed = _run_peer("read", prefix)
    assert {name: entry["values"] for name, entry in listed.items()} == {"a": [5.0, 6.0], "b": [3.0], "c": ["x"]}
