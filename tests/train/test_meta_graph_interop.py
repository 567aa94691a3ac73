"""`.meta` files and checkpoints exchanged with real TensorFlow (in a subprocess: tests/train/tf_meta_graph_peer.py):
TF's `saver.save` output is imported by `tf.train.import_meta_graph`, restored and trained on in adplace, and
adplace's is imported, restored and trained on in TF; both sides agree on the losses and the global step. Skipped
without TensorFlow."""
import importlib.util
import json
from pathlib import Path

import pytest

import adplace as tf
from tf_peer import needs_tf, run_peer

pytestmark = needs_tf

PEER = Path(__file__).with_name("tf_meta_graph_peer.py")
_spec = importlib.util.spec_from_file_location("tf_meta_graph_peer", PEER)
peer = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(peer)  # FEED_X, FEED_Y and build(): TensorFlow is imported inside main() alone


def _run_peer(mode: str, prefix: str) -> dict:
    return json.loads(run_peer(PEER, mode, prefix))


def _train_on(sess) -> dict:
    feed = {"x:0": peer.FEED_X, "y:0": peer.FEED_Y}
    at_checkpoint = float(sess.run("loss:0", feed))
    sess.run(tf.get_collection(tf.GraphKeys.TRAIN_OP)[0], feed)
    return {"at_checkpoint": at_checkpoint, "after": float(sess.run("loss:0", feed)),
            "step": int(sess.run(tf.train.get_global_step()))}


def test_tfs_meta_graph_and_checkpoint_restore_and_train_on_in_adplace(tmp_path):
    prefix = str(tmp_path / "tf_model")
    theirs = _run_peer("write", prefix)
    saver = tf.train.import_meta_graph(prefix + ".meta")
    graph = tf.get_default_graph()
    assert graph.get_operation_by_name("w1").device == "/device:CPU:0"
    assert [v.op.name for v in tf.trainable_variables()] == ["w1", "w2"]
    with tf.Session() as sess:
        saver.restore(sess, prefix)
        ours = _train_on(sess)
    assert ours["at_checkpoint"] == pytest.approx(theirs["at_checkpoint"], rel=1e-6)
    assert ours["step"] == 2 and ours["after"] < ours["at_checkpoint"]
    assert ours["after"] == pytest.approx(theirs["after"], rel=1e-5)


def test_adplaces_meta_graph_and_checkpoint_restore_and_train_on_in_tf(tmp_path):
    prefix = str(tmp_path / "adplace_model")
    peer.build(_TFNames())
    saver = tf.train.Saver()
    feed = {"x:0": peer.FEED_X, "y:0": peer.FEED_Y}
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        sess.run(tf.get_collection(tf.GraphKeys.TRAIN_OP)[0], feed)
        saver.save(sess, prefix)
        ours = _train_on(sess)
    theirs = _run_peer("read", prefix)
    assert theirs["at_checkpoint"] == pytest.approx(ours["at_checkpoint"], rel=1e-6)
    assert theirs["step"] == ours["step"] == 2
    assert theirs["after"] == pytest.approx(ours["after"], rel=1e-5)


class _TFNames:
    """adplace under the names the peer's build() uses (tf.compat.v1.*), so both sides build one model."""

    def __getattr__(self, name):
        return getattr(tf, name)

    @property
    def compat(self):
        return type("compat", (), {"v1": tf})
