"""tf.GraphKeys holds TF 1.15's collection names (checked against real TensorFlow in a subprocess), and a finalized
graph reports it (Graph.finalized) and can be made writable again (Graph._unsafe_unfinalize, as TF's)."""
import json

import pytest

import adplace as tf
from tf_peer import needs_tf, run_peer


def _keys() -> dict:
    return {k: getattr(tf.GraphKeys, k) for k in dir(tf.GraphKeys) if k.lstrip("_").isupper()}


def test_graph_keys_name_the_scaffold_collections():
    keys = tf.GraphKeys
    assert (keys.READY_OP, keys.READY_FOR_LOCAL_INIT_OP, keys.LOCAL_INIT_OP, keys.SUMMARY_OP, keys.INIT_OP) == (
        "ready_op", "ready_for_local_init_op", "local_init_op", "summary_op", "init_op")
    assert keys.TABLE_INITIALIZERS == "table_initializer" and keys.SAVEABLE_OBJECTS == "saveable_objects"
    assert keys.GLOBAL_VARIABLES in keys._VARIABLE_COLLECTIONS and keys.GLOBAL_STEP not in keys._VARIABLE_COLLECTIONS


def test_monitored_session_fills_the_graph_keys_collections():
    with tf.Graph().as_default() as graph:
        tf.Variable(1.0, name="v")
        scaffold = tf.train.Scaffold()
        scaffold.finalize()
        for key in (tf.GraphKeys.INIT_OP, tf.GraphKeys.READY_OP, tf.GraphKeys.READY_FOR_LOCAL_INIT_OP,
                    tf.GraphKeys.LOCAL_INIT_OP):
            assert len(graph.get_collection(key)) == 1, key


@needs_tf
def test_graph_keys_are_tensorflows(tmp_path):
    script = tmp_path / "keys.py"
    script.write_text("import json, tensorflow as tf\nG = tf.compat.v1.GraphKeys\n"
                      "print(json.dumps({k: getattr(G, k) for k in dir(G) if k.lstrip('_').isupper()}))\n")
    assert _keys() == json.loads(run_peer(script))


def test_finalized_and_unsafe_unfinalize():
    with tf.Graph().as_default() as graph:
        tf.constant(1.0, name="a")
        assert not graph.finalized
        graph.finalize()
        assert graph.finalized
        with pytest.raises(RuntimeError, match="finalized"):
            tf.constant(2.0, name="b")
        with pytest.raises(RuntimeError, match="finalized"):
            graph.add_to_collection("c", 1)
        assert [op.name for op in graph.get_operations()] == ["a"]
        graph._unsafe_unfinalize()
        assert not graph.finalized
        tf.constant(2.0, name="b")
        graph.add_to_collection("c", 1)
        assert [op.name for op in graph.get_operations()] == ["a", "b"] and graph.get_collection("c") == [1]


def test_monitored_session_unfinalizes_a_graph_it_finalized():
    with tf.Graph().as_default() as graph:
        tf.Variable(1.0, name="v")
        with tf.train.MonitoredSession() as sess:
            assert graph.finalized
            sess.run("v:0")
        assert not graph.finalized
        graph.finalize()
        with tf.train.MonitoredSession():
            pass
        assert graph.finalized  # finalized before: left so


