"""Tests for adplace/framework/meta_graph.py and adplace/train/meta_graphs.py: export_meta_graph/import_meta_graph
with collections and the saver, `.meta` files written by Saver.save, fresh processes, bad files."""
import json
import logging
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import adplace as tf
from adplace.lib import protos


def _model():
    """A linear model trained by gradient descent, with its pieces in the collections TF1 scripts use."""
    x = tf.placeholder(tf.float32, [None, 2], name="x")
    y = tf.placeholder(tf.float32, [None, 1], name="y")
    with tf.device("/cpu:0"):
        w = tf.Variable([[1.0], [-1.0]], name="w")
        b = tf.Variable(0.5, name="b")
    step = tf.Variable(0, name="global_step", trainable=False)
    tf.add_to_collection(tf.GraphKeys.GLOBAL_STEP, step)
    prediction = tf.add(tf.matmul(x, w), b, name="prediction")
    loss = tf.reduce_mean(tf.square(prediction - y), name="loss")
    tf.add_to_collection(tf.GraphKeys.LOSSES, loss)
    train_op = tf.train.GradientDescentOptimizer(0.1).minimize(loss, global_step=step, name="train")  # TRAIN_OP too
    tf.add_to_collection("numbers", 3)
    tf.add_to_collection("ratios", 0.25)
    tf.add_to_collection("words", b"hello")
    return x, y, w, b, loss, train_op


FEED_X, FEED_Y = np.array([[1.0, 2.0], [3.0, -1.0]], np.float32), np.array([[1.0], [0.0]], np.float32)


def test_collections_and_saver_def_round_trip_into_a_fresh_graph():
    x, y, w, b, loss, train_op = _model()
    saver = tf.train.Saver()
    meta = tf.train.export_meta_graph(saver_def=saver.as_saver_def())
    assert meta.saver_def.restore_op_name == saver.as_saver_def().restore_op_name
    assert meta.meta_info_def.stripped_op_list.op, "the op list a reader needs is filled in"
    assert set(meta.collection_def) >= {"variables", "trainable_variables", "train_op", "losses", "global_step",
                                        "numbers", "ratios", "words"}
    assert list(meta.collection_def["train_op"].node_list.value) == ["train"]
    assert list(meta.collection_def["numbers"].int64_list.value) == [3]
    with tf.Graph().as_default() as g:
        restored = tf.train.import_meta_graph(meta)
        assert isinstance(restored, tf.train.Saver)
        variables = tf.global_variables()
        assert [v.op.name for v in variables] == ["w", "b", "global_step"]
        trainable = tf.trainable_variables()
        assert [v.op.name for v in trainable] == ["w", "b"] and trainable[0] is variables[0]  # one object each
        assert g.get_collection(tf.GraphKeys.TRAIN_OP) == [g.get_operation_by_name("train")]
        assert g.get_collection("numbers") == [3] and g.get_collection("ratios") == [0.25]
        assert g.get_collection("words") == [b"hello"]
        assert g.get_collection(tf.GraphKeys.LOSSES) == [g.get_tensor_by_name("loss:0")]
        assert g.get_operation_by_name("w").device == "/device:CPU:0"
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            before = sess.run("loss:0", {"x:0": FEED_X, "y:0": FEED_Y})
            sess.run(g.get_collection(tf.GraphKeys.TRAIN_OP)[0], {"x:0": FEED_X, "y:0": FEED_Y})
            assert sess.run("loss:0", {"x:0": FEED_X, "y:0": FEED_Y}) < before
            assert sess.run(g.get_collection(tf.GraphKeys.GLOBAL_STEP)[0]) == 1


def test_import_scope_prefixes_names_and_clear_devices_drops_them():
    _model()
    meta = tf.train.export_meta_graph()
    with tf.Graph().as_default() as g:
        tf.train.import_meta_graph(meta, import_scope="copy", clear_devices=True)
        assert [v.op.name for v in tf.global_variables()] == ["copy/w", "copy/b", "copy/global_step"]
        assert g.get_operation_by_name("copy/w").device == ""
        assert g.get_collection(tf.GraphKeys.TRAIN_OP) == [g.get_operation_by_name("copy/train")]


def test_export_scope_keeps_only_that_scope_and_strips_its_name():
    with tf.variable_scope("tower"):
        v = tf.Variable(2.0, name="v")
        doubled = tf.multiply(v, 2.0, name="doubled")
    tf.Variable(5.0, name="outside")
    meta = tf.train.export_meta_graph(export_scope="tower")
    names = {node.name for node in meta.graph_def.node}
    assert "v" in names and "doubled" in names and not any(n.startswith("outside") for n in names)
    assert [protos.variable_pb2.VariableDef.FromString(s).variable_name
            for s in meta.collection_def["variables"].bytes_list.value] == ["v:0"]
    with tf.Graph().as_default():
        tf.train.import_meta_graph(meta, import_scope="again")
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            assert sess.run("again/doubled:0") == 4.0
    del doubled


def test_saver_save_writes_the_meta_file_that_restores_in_a_fresh_graph(tmp_path):
    x, y, w, b, loss, train_op = _model()
    saver = tf.train.Saver()
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        sess.run(train_op, {x: FEED_X, y: FEED_Y})
        trained = sess.run([w, b])
        path = saver.save(sess, str(tmp_path / "model"), global_step=1)
        saver.save(sess, str(tmp_path / "no_meta"), write_meta_graph=False)
    assert (tmp_path / "model-1.meta").is_file() and not (tmp_path / "no_meta.meta").exists()
    with tf.Graph().as_default() as g:
        restorer = tf.train.import_meta_graph(path + ".meta")
        with tf.Session() as sess:
            restorer.restore(sess, path)
            got = sess.run([g.get_tensor_by_name("w:0"), g.get_tensor_by_name("b:0")])
            for value, want in zip(got, trained):
                np.testing.assert_array_equal(value, want)


def test_a_fresh_process_restores_and_trains_on(tmp_path):
    x, y, w, b, loss, train_op = _model()
    saver = tf.train.Saver()
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        path = saver.save(sess, str(tmp_path / "model"))
        expected = sess.run(loss, {x: FEED_X, y: FEED_Y})
        sess.run(train_op, {x: FEED_X, y: FEED_Y})
        expected_next = sess.run(loss, {x: FEED_X, y: FEED_Y})
    script = textwrap.dedent(f"""
        import json, numpy as np, adplace as tf
        saver = tf.train.import_meta_graph({path + ".meta"!r})
        train_op = tf.get_collection(tf.GraphKeys.TRAIN_OP)[0]
        feed = {{"x:0": np.array({FEED_X.tolist()}, np.float32), "y:0": np.array({FEED_Y.tolist()}, np.float32)}}
        with tf.Session() as sess:
            saver.restore(sess, {path!r})
            first = float(sess.run("loss:0", feed))
            sess.run(train_op, feed)
            print(json.dumps([first, float(sess.run("loss:0", feed))]))
    """)
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    first, after = json.loads(out.stdout.strip().splitlines()[-1])
    assert first == pytest.approx(float(expected), rel=1e-6) and after == pytest.approx(float(expected_next), rel=1e-6)


def test_text_meta_files_read_back_and_corrupt_ones_are_data_loss(tmp_path):
    _model()
    tf.train.export_meta_graph(str(tmp_path / "m.meta.txt"), as_text=True)
    assert b"collection_def" in (tmp_path / "m.meta.txt").read_bytes()
    with tf.Graph().as_default():
        tf.train.import_meta_graph(str(tmp_path / "m.meta.txt"))
        assert len(tf.global_variables()) == 3
    (tmp_path / "bad.meta").write_bytes(b"\x0a\xff\xff\xff\xff\x0fgarbage that is no proto")
    with tf.Graph().as_default() as g:
        with pytest.raises(tf.errors.DataLossError, match="bad.meta"):
            tf.train.import_meta_graph(str(tmp_path / "bad.meta"))
        assert g.get_operations() == []
        with pytest.raises(tf.errors.NotFoundError, match="missing.meta"):
            tf.train.import_meta_graph(str(tmp_path / "missing.meta"))


def test_a_failing_import_leaves_graph_and_collections_as_they_were():
    _model()
    meta = tf.train.export_meta_graph()
    meta.collection_def["losses"].node_list.value.append("no_such_node:0")
    with tf.Graph().as_default() as g:
        kept = tf.Variable(1.0, name="kept")
        ops_before = g.get_operations()
        with pytest.raises(ValueError, match="no_such_node"):
            tf.train.import_meta_graph(meta)
        assert g.get_operations() == ops_before and tf.global_variables() == [kept]
        assert g.get_collection(tf.GraphKeys.LOSSES) == []


def test_collections_of_unsupported_items_are_left_out_with_tfs_warning(caplog):
    tf.Variable(1.0)
    tf.add_to_collection("objects", object())
    with caplog.at_level(logging.WARNING, logger="adplace"):
        meta = tf.train.export_meta_graph()
    assert "objects" not in meta.collection_def and "variables" in meta.collection_def
    assert "Issue encountered when serializing objects" in caplog.text


def test_a_graph_without_variables_gives_no_saver():
    tf.constant(1.0, name="c")
    meta = tf.train.export_meta_graph()
    with tf.Graph().as_default():
        assert tf.train.import_meta_graph(meta) is None


def test_strip_default_attrs_drops_attrs_equal_to_the_op_def_default_and_says_so():
    x = tf.placeholder(tf.float32, [2, 2], name="x")
    tf.nn.conv2d(tf.reshape(x, [1, 2, 2, 1]), tf.ones([1, 1, 1, 1]), [1, 1, 1, 1], "SAME", name="conv")
    kept = tf.train.export_meta_graph()
    stripped = tf.train.export_meta_graph(strip_default_attrs=True)
    conv_kept = next(n for n in kept.graph_def.node if n.name == "conv")
    conv_stripped = next(n for n in stripped.graph_def.node if n.name == "conv")
    assert conv_kept.attr["data_format"].s == b"NHWC" and "data_format" not in conv_stripped.attr  # the default
    assert conv_stripped.attr["padding"].s == b"SAME"  # no default: always kept
    assert stripped.meta_info_def.stripped_default_attrs and not kept.meta_info_def.stripped_default_attrs
    unknown = protos.graph_pb2.GraphDef()
    unknown.node.add(name="n", op="NoSuchOpType").attr["a"].i = 0
    meta = tf.train.export_meta_graph(graph_def=unknown, strip_default_attrs=True)
    assert meta.graph_def.node[0].attr["a"].i == 0  # no OpDef: nothing to compare with, nothing dropped
    with tf.Graph().as_default():
        tf.train.import_meta_graph(stripped)
        with tf.Session() as sess:
            out = sess.run("conv:0", {"x:0": [[1.0, 2.0], [3.0, 4.0]]})
    assert out.reshape(-1).tolist() == [1.0, 2.0, 3.0, 4.0]


def test_clear_extraneous_savers_keeps_only_the_exporting_savers_ops_and_entry():
    a, b = tf.Variable(1.0, name="a"), tf.Variable(2.0, name="b")
    first, second = tf.train.Saver([a], name="first"), tf.train.Saver([b], name="second")
    tf.add_to_collection(tf.GraphKeys.SAVERS, first)
    tf.add_to_collection(tf.GraphKeys.SAVERS, second)
    full = second.export_meta_graph()
    cleared = second.export_meta_graph(clear_extraneous_savers=True)
    names = {n.name for n in cleared.graph_def.node}
    assert any(n.startswith("first/") for n in (n.name for n in full.graph_def.node))
    assert not any(n.startswith("first/") for n in names) and "second/restore_all" in names
    assert len(full.collection_def["savers"].bytes_list.value) == 2
    (entry,) = cleared.collection_def["savers"].bytes_list.value
    assert protos.saver_pb2.SaverDef.FromString(entry).restore_op_name == "second/restore_all"


def test_import_scope_is_under_the_open_name_scope_and_made_unique():
    tf.Variable(1.0, name="v")
    meta = tf.train.export_meta_graph()
    with tf.Graph().as_default():
        with tf.name_scope("outer"):
            tf.train.import_meta_graph(meta, import_scope="inner")
            tf.train.import_meta_graph(meta)  # no import_scope: the open name scope is the prefix
        tf.train.import_meta_graph(meta, import_scope="again")
        tf.train.import_meta_graph(meta, import_scope="again")  # the second import lands in "again_1"
        assert [v.name for v in tf.global_variables()] == ["outer/inner/v:0", "outer/v:0", "again/v:0",
                                                           "again_1/v:0"]


def test_import_meta_graph_into_a_scope_restores_through_the_prefixed_saver(tmp_path):
    _model()
    saver = tf.train.Saver()
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        sess.run("w:0")
        path = saver.save(sess, str(tmp_path / "model"))
        expected = sess.run("w:0")
    with tf.Graph().as_default():
        restored = tf.train.import_meta_graph(path + ".meta", import_scope="net")
        assert restored.as_saver_def().restore_op_name == "net/save/restore_all"
        with tf.Session() as sess:
            restored.restore(sess, path)
            assert np.array_equal(sess.run("net/w:0"), expected)


def test_copy_scoped_meta_graph_copies_a_scope_into_another_graph():
    from adplace.framework import meta_graph

    with tf.variable_scope("tower"):
        v = tf.Variable(3.0, name="v")
        tf.multiply(v, 2.0, name="doubled")
    with pytest.raises(ValueError, match="need to be different"):
        meta_graph.copy_scoped_meta_graph("tower", "tower")
    with tf.Graph().as_default() as other:
        copied = meta_graph.copy_scoped_meta_graph("tower", "copy", from_graph=v.graph, to_graph=other)
        assert {k: var.name for k, var in copied.items()} == {"v:0": "copy/v:0"}
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            assert sess.run("copy/doubled:0") == 6.0
