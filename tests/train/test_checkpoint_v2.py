"""tf.train.Saver on TF's V2 checkpoint format (adplace/train/saver.py, ops/io_ops.py, kernels/io.py,
train/checkpoint_utils.py): the graph TF builds, the SaverDef, Saver(saver_def=...), sharded saves, partitioned
variables stored as slices, reshape, defer_build, atomic restores, checkpoint readers, init_from_checkpoint, and the
old `.npz` checkpoints still restoring."""
import logging
import os

import numpy as np
import pytest

import adplace as tf
from adplace import errors
from adplace.lib import protos
from adplace.lib.io import tensor_bundle
from adplace.train import checkpoint_management

SOFT = tf.ConfigProto(allow_soft_placement=True)


def _init(sess):
    sess.run(tf.global_variables_initializer())


def test_graph_nodes_and_saver_def_are_tfs(tmp_path):
    tf.Variable([1.0], name="w")
    saver = tf.train.Saver(max_to_keep=3, keep_checkpoint_every_n_hours=2.5)
    names = [op.name for op in tf.get_default_graph().get_operations() if op.name.startswith("save/")]
    for name in ("save/filename", "save/Const", "save/SaveV2", "save/SaveV2/tensor_names",
                 "save/SaveV2/shape_and_slices", "save/control_dependency", "save/RestoreV2", "save/Assign",
                 "save/restore_all"):
        assert name in names, name
    graph = tf.get_default_graph()
    assert graph.get_operation_by_name("save/SaveV2").type == "SaveV2"
    assert graph.get_operation_by_name("save/RestoreV2").type == "RestoreV2"
    saver_def = saver.as_saver_def()
    assert isinstance(saver_def, protos.saver_pb2.SaverDef) and saver_def is saver.saver_def
    assert (saver_def.filename_tensor_name, saver_def.save_tensor_name, saver_def.restore_op_name) == (
        "save/Const:0", "save/control_dependency:0", "save/restore_all")
    assert (saver_def.max_to_keep, saver_def.keep_checkpoint_every_n_hours, saver_def.sharded) == (3, 2.5, False)
    assert saver_def.version == protos.saver_pb2.SaverDef.V2
    tf.train.Saver(name="other")
    assert graph.get_operation_by_name("other/SaveV2").type == "SaveV2"


def test_files_written_are_a_v2_bundle_tf_names(tmp_path):
    tf.Variable(np.arange(6, dtype=np.float32).reshape(2, 3), name="w")
    tf.Variable("text", name="s")
    with tf.Session() as sess:
        _init(sess)
        path = tf.train.Saver().save(sess, str(tmp_path / "model"), global_step=12)
    assert path == str(tmp_path / "model-12")
    assert sorted(os.listdir(tmp_path)) == ["checkpoint", "model-12.data-00000-of-00001", "model-12.index",
                                            "model-12.meta"]
    reader = tensor_bundle.BundleReader(path)
    assert reader.tensor_names() == ["s", "w"]
    assert reader.read("s")[()] == b"text" and reader.read("w").tolist() == [[0, 1, 2], [3, 4, 5]]


def test_filename_is_the_default_of_the_filename_tensor(tmp_path):
    v = tf.Variable([4.0], name="v")
    saver = tf.train.Saver(filename=str(tmp_path / "default"))
    with tf.Session() as sess:
        _init(sess)
        assert sess.run(saver.saver_def.save_tensor_name) == str(tmp_path / "default").encode()
        assert tf.train.checkpoint_exists(str(tmp_path / "default"))
        v.load([0.0], sess)
        sess.run(saver.saver_def.restore_op_name)
        assert sess.run(v).tolist() == [4.0]


def test_saver_from_saver_def_drives_the_existing_ops(tmp_path):
    v = tf.Variable([1.0, 2.0], name="v")
    built = tf.train.Saver(max_to_keep=1)
    ops_before = len(tf.get_default_graph().get_operations())
    saver = tf.train.Saver(saver_def=built.as_saver_def())
    assert len(tf.get_default_graph().get_operations()) == ops_before  # nothing new built
    with tf.Session() as sess:
        _init(sess)
        first = saver.save(sess, str(tmp_path / "m"), global_step=1)
        v.load([7.0, 8.0], sess)
        second = saver.save(sess, str(tmp_path / "m"), global_step=2)
        assert not tf.train.checkpoint_exists(first)  # max_to_keep of the SaverDef
        v.load([0.0, 0.0], sess)
        saver.restore(sess, second)
        assert sess.run(v).tolist() == [7.0, 8.0]
        with pytest.raises(errors.NotFoundError, match="Restoring from checkpoint failed"):
            tf.Variable([1.0], name="unsaved")
            other = tf.train.Saver({"unsaved": tf.get_default_graph().get_tensor_by_name("unsaved:0")})
            tf.train.Saver(saver_def=other.as_saver_def()).restore(sess, second)


def test_saver_def_is_checked():
    with pytest.raises(ValueError, match="saver_def must be a saver_pb2.SaverDef"):
        tf.train.Saver(saver_def="nope")
    with pytest.raises(ValueError, match="must specify the save_tensor_name"):
        tf.train.Saver(saver_def=protos.saver_pb2.SaverDef(restore_op_name="x"))


def test_to_proto_and_from_proto_with_scopes(tmp_path):
    with tf.name_scope("outer"):
        v = tf.Variable([3.0], name="v")
        saver = tf.train.Saver()
    proto = saver.to_proto(export_scope="outer")
    assert proto.filename_tensor_name == "save/Const:0"
    restored = tf.train.Saver.from_proto(proto, import_scope="outer")
    with tf.Session() as sess:
        _init(sess)
        path = restored.save(sess, str(tmp_path / "m"))
        v.load([0.0], sess)
        restored.restore(sess, path)
        assert sess.run(v).tolist() == [3.0]


def test_var_list_as_dict_renames_in_the_checkpoint(tmp_path):
    a = tf.Variable([1.0], name="a")
    b = tf.Variable([2, 3], name="b")
    with tf.Session() as sess:
        _init(sess)
        path = tf.train.Saver({"renamed/a": a, "b2": b}).save(sess, str(tmp_path / "m"))
    assert [name for name, _ in tf.train.list_variables(path)] == ["b2", "renamed/a"]
    assert tf.train.load_variable(path, "b2").tolist() == [2, 3]


def test_partitioned_variables_are_saved_as_tf_slices(tmp_path):
    pv = tf.get_variable("emb", shape=[6, 2], initializer=tf.random_normal_initializer(),
                         partitioner=tf.fixed_size_partitioner(3))
    with tf.Session() as sess:
        _init(sess)
        value = sess.run(pv.as_tensor())
        path = tf.train.Saver().save(sess, str(tmp_path / "m"))
    reader = tensor_bundle.BundleReader(path)
    full = reader.entry("emb")
    assert [(e.start, e.length) for s in full.slices for e in s.extent] == [(0, 2), (0, 2), (2, 2), (0, 2), (4, 2),
                                                                          (0, 2)]
    assert reader.tensor_names() == ["emb"] and len(reader.entries) == 4
    np.testing.assert_array_equal(tf.train.load_variable(path, "emb"), value)
    with tf.Graph().as_default():  # into 2 partitions, then into one whole variable
        pv2 = tf.get_variable("emb", shape=[6, 2], partitioner=tf.fixed_size_partitioner(2))
        whole = tf.Variable(tf.zeros([6, 2]), name="whole")
        with tf.Session() as sess:
            _init(sess)
            tf.train.Saver([pv2]).restore(sess, path)
            tf.train.Saver({"emb": whole}).restore(sess, path)
            np.testing.assert_array_equal(sess.run(pv2.as_tensor()), value)
            np.testing.assert_array_equal(sess.run(whole), value)


def test_sharded_saves_one_data_file_per_device_then_merges(tmp_path, gpus):
    with tf.device("/gpu:0"):
        a = tf.Variable([1.0, 2.0], name="a")
    with tf.device("/gpu:1"):
        b = tf.Variable([[3.0]], name="b")
    c = tf.Variable(5, name="c")
    saver = tf.train.Saver(sharded=True)
    assert saver.saver_def.sharded and saver.saver_def.save_tensor_name == "save/Identity:0"
    graph = tf.get_default_graph()
    assert {op.type for op in graph.get_operations() if op.name.startswith("save/")} >= {
        "ShardedFilename", "MergeV2Checkpoints", "SaveV2", "RestoreV2", "StringJoin"}
    with tf.Session(config=SOFT) as sess:
        _init(sess)
        path = saver.save(sess, str(tmp_path / "m"))
        assert path == str(tmp_path / "m")
        assert sorted(os.listdir(tmp_path)) == ["checkpoint", "m.data-00000-of-00003", "m.data-00001-of-00003",
                                                "m.data-00002-of-00003", "m.index", "m.meta"]  # no _temp left
        reader = tensor_bundle.BundleReader(path)
        assert reader.num_shards == 3 and len({reader.entry(n).shard_id for n in "abc"}) == 3
        sess.run([a.assign([0.0, 0.0]), b.assign([[0.0]]), c.assign(0)])
        saver.restore(sess, path)
        assert sess.run(a).tolist() == [1.0, 2.0] and sess.run(b).tolist() == [[3.0]] and sess.run(c) == 5


def test_reshape_restores_into_another_shape(tmp_path):
    tf.Variable(np.arange(6, dtype=np.float32), name="v")
    with tf.Session() as sess:
        _init(sess)
        path = tf.train.Saver().save(sess, str(tmp_path / "m"))
    with tf.Graph().as_default():
        v = tf.Variable(tf.zeros([2, 3]), name="v")
        with tf.Session() as sess:
            _init(sess)
            with pytest.raises(errors.InvalidArgumentError, match=r"lhs shape= \[2,3\] rhs shape= \[6\]"):
                tf.train.Saver().restore(sess, path)
            tf.train.Saver(reshape=True).restore(sess, path)
            assert sess.run(v).tolist() == [[0, 1, 2], [3, 4, 5]]
    with tf.Graph().as_default():
        tf.Variable(tf.zeros([4]), name="v")
        with tf.Session() as sess:
            _init(sess)
            with pytest.raises(errors.InvalidArgumentError, match="6 values"):
                tf.train.Saver(reshape=True).restore(sess, path)


def test_defer_build(tmp_path):
    saver = tf.train.Saver(defer_build=True)
    v = tf.Variable([1.0], name="v")
    with tf.Session() as sess:
        _init(sess)
        with pytest.raises(RuntimeError, match="build"):
            saver.save(sess, str(tmp_path / "m"))
        saver.build()
        saver.save(sess, str(tmp_path / "m"))
    assert tf.train.load_variable(str(tmp_path / "m"), "v").tolist() == [1.0]
    with pytest.raises(ValueError, match="cannot be deferred"):
        tf.train.Saver([v], defer_build=True)


def test_write_version_v1_warns_and_writes_v2(tmp_path, caplog):
    tf.Variable([1.0], name="v")
    with caplog.at_level(logging.WARNING, logger="adplace"):
        saver = tf.train.Saver(write_version=1)
    assert "writes only the V2" in caplog.text
    with tf.Session() as sess:
        _init(sess)
        saver.save(sess, str(tmp_path / "m"))
    assert (tmp_path / "m.index").exists()


def test_save_relative_paths_and_state_file(tmp_path):
    tf.Variable([1.0], name="v")
    saver = tf.train.Saver(save_relative_paths=True)
    with tf.Session() as sess:
        _init(sess)
        saver.save(sess, str(tmp_path / "m"), global_step=1)
    text = (tmp_path / "checkpoint").read_text()
    assert 'model_checkpoint_path: "m-1"' in text and str(tmp_path) not in text
    assert tf.train.latest_checkpoint(str(tmp_path)) == str(tmp_path / "m-1")
    assert tf.train.get_checkpoint_state(str(tmp_path)).all_model_checkpoint_paths == [str(tmp_path / "m-1")]
    assert len(tf.train.get_checkpoint_mtimes([str(tmp_path / "m-1"), str(tmp_path / "none")])) == 1


def test_keep_checkpoint_every_n_hours_preserves_old_checkpoints(tmp_path, monkeypatch):
    import adplace.train.saver as saver_module
    clock = [1000.0]
    monkeypatch.setattr(saver_module.time, "time", lambda: clock[0])
    tf.Variable([1.0], name="v")
    saver = tf.train.Saver(max_to_keep=1, keep_checkpoint_every_n_hours=1)
    with tf.Session() as sess:
        _init(sess)
        for step in range(4):
            clock[0] += 1900  # a bit over half an hour per save
            saver.save(sess, str(tmp_path / "m"), global_step=step)
    kept = sorted(f[:-len(".index")] for f in os.listdir(tmp_path) if f.endswith(".index"))
    assert kept == ["m-1", "m-3"]  # m-1 passed the one-hour mark; m-0 and m-2 were deleted


def test_save_writes_the_meta_graph_unless_asked_not_to(tmp_path):
    tf.Variable([1.0], name="v")
    saver = tf.train.Saver()
    with tf.Session() as sess:
        _init(sess)
        saver.save(sess, str(tmp_path / "m"), global_step=3)
        saver.save(sess, str(tmp_path / "m"), global_step=4, write_meta_graph=False)
    assert sorted(f for f in os.listdir(tmp_path) if f.endswith(".meta")) == ["m-3.meta"]
    with tf.Graph().as_default():
        restorer = tf.train.import_meta_graph(str(tmp_path / "m-3.meta"))
        assert restorer.saver_def == saver.saver_def


# --- atomic restores ---------------------------------------------------------------------------------------------
@pytest.fixture
def saved(tmp_path):
    """Checkpoint with w=[1,2,3] float32 and s=b"x"; returns its prefix."""
    with tf.Graph().as_default():
        tf.Variable([1.0, 2.0, 3.0], name="w")
        tf.Variable("x", name="s")
        with tf.Session() as sess:
            _init(sess)
            return tf.train.Saver().save(sess, str(tmp_path / "m"))


@pytest.mark.parametrize("case", ["missing", "shape", "dtype"])
def test_failed_restore_names_the_variable_and_changes_nothing(saved, case):
    w = tf.Variable([9.0, 9.0, 9.0], name="w")
    s = tf.Variable("keep", name="s")
    other = {"missing": lambda: tf.Variable([9.0], name="absent"),
             "shape": lambda: tf.Variable([9.0, 9.0], name="w2"),
             "dtype": lambda: tf.Variable([9, 9, 9], name="w3")}[case]()
    key = {"missing": "absent", "shape": "w", "dtype": "w"}[case]
    saver = tf.train.Saver({"w": w, "s": s, key + "_": other} if case == "missing" else {"w": other, "s": s})
    error, pattern = {"missing": (errors.NotFoundError, "Key absent_ not found in checkpoint"),
                      "shape": (errors.InvalidArgumentError, r"(?s)lhs shape= \[2\] rhs shape= \[3\].*'w2'"),
                      "dtype": (errors.InvalidArgumentError, "expected dtype int32 does not equal original dtype "
                                                             "float32")}[case]
    with tf.Session() as sess:
        _init(sess)
        before = sess.run([w, s, other])
        with pytest.raises(error, match=pattern) as info:
            saver.restore(sess, saved)
        assert "Restoring from checkpoint failed" in str(info.value)
        after = sess.run([w, s, other])
    assert [np.asarray(x).tolist() for x in after] == [np.asarray(x).tolist() for x in before]


def test_restore_fails_atomically_when_data_is_damaged(saved):
    w = tf.Variable([9.0, 9.0, 9.0], name="w")
    s = tf.Variable("keep", name="s")
    path = saved + ".data-00000-of-00001"
    content = bytearray(open(path, "rb").read())
    content[-1] ^= 0xFF  # the last tensor ("w") is damaged, "s" is fine
    open(path, "wb").write(bytes(content))
    with tf.Session() as sess:
        _init(sess)
        with pytest.raises(errors.DataLossError, match=path):
            tf.train.Saver().restore(sess, saved)
        assert sess.run(w).tolist() == [9.0, 9.0, 9.0] and sess.run(s) == b"keep"


def test_restore_op_errors_without_a_python_precheck_are_wrapped(saved):
    tf.Variable([9.0], name="w")
    built = tf.train.Saver()
    saver = tf.train.Saver(saver_def=built.as_saver_def())  # no variable list: only the op's checks
    with tf.Session() as sess:
        _init(sess)
        with pytest.raises(errors.InvalidArgumentError, match="(?s)Restoring from checkpoint failed.*shape"):
            saver.restore(sess, saved)


# --- readers -----------------------------------------------------------------------------------------------------
def test_checkpoint_reader_api(saved):
    reader = tf.train.NewCheckpointReader(saved)
    assert reader.has_tensor("w") and not reader.has_tensor("nope")
    assert reader.get_variable_to_shape_map() == {"w": [3], "s": []}
    assert reader.get_variable_to_dtype_map() == {"w": tf.float32, "s": tf.string}
    assert reader.get_tensor("w").tolist() == [1.0, 2.0, 3.0] and reader.get_tensor("s") == b"x"
    assert reader.debug_string() == b"s (DT_STRING) []\nw (DT_FLOAT) [3]\n"
    with pytest.raises(errors.NotFoundError, match="Key nope not found"):
        reader.get_tensor("nope")
    assert tf.train.load_variable(os.path.dirname(saved), "w:0").tolist() == [1.0, 2.0, 3.0]
    assert tf.train.list_variables(saved) == [("s", []), ("w", [3])]
    with pytest.raises(errors.NotFoundError, match="Failed to find any matching files"):
        tf.train.NewCheckpointReader(saved + "-absent")


def test_checkpoint_management_for_v2_files(saved, tmp_path):
    assert tf.train.checkpoint_exists(saved) and not tf.train.checkpoint_exists(saved + "x")
    assert tf.train.latest_checkpoint(str(tmp_path)) == saved
    (tmp_path / "m.meta").write_bytes(b"")
    tf.train.remove_checkpoint(saved)
    assert sorted(os.listdir(tmp_path)) == ["checkpoint"]


def test_init_from_checkpoint_one_to_one_scopes_and_partitions(tmp_path):
    with tf.Graph().as_default():
        with tf.variable_scope("enc"):
            tf.get_variable("w", initializer=np.float32([[1, 2], [3, 4]]))
            tf.get_variable("b", initializer=np.float32([5]))
        tf.get_variable("emb", initializer=np.arange(8, dtype=np.float32).reshape(4, 2))
        with tf.Session() as sess:
            _init(sess)
            path = tf.train.Saver().save(sess, str(tmp_path / "m"))
    with tf.variable_scope("new"):
        w = tf.get_variable("w", shape=[2, 2])
        b = tf.get_variable("b", shape=[1])
    emb = tf.get_variable("emb2", shape=[4, 2], partitioner=tf.fixed_size_partitioner(2))
    single = tf.get_variable("single", shape=[1])
    tf.train.init_from_checkpoint(path, {"enc/": "new/", "emb": "emb2", "enc/b": single})
    with tf.Session() as sess:
        _init(sess)
        assert sess.run(w).tolist() == [[1, 2], [3, 4]] and sess.run(b).tolist() == [5]
        assert sess.run(emb.as_tensor()).tolist() == np.arange(8).reshape(4, 2).tolist()
        assert sess.run(single).tolist() == [5]
    with pytest.raises(ValueError, match="Tensor nope is not found"):
        tf.train.init_from_checkpoint(path, {"nope": single})
    with pytest.raises(ValueError, match="Shape of variable"):
        tf.train.init_from_checkpoint(path, {"enc/w": single})
    with pytest.raises(ValueError, match="should map to scope only"):
        tf.train.init_from_checkpoint(path, {"enc/w": "new/"})


# --- the old .npz format -----------------------------------------------------------------------------------------
def test_old_npz_checkpoints_still_restore(tmp_path):
    prefix = str(tmp_path / "old")
    whole = np.arange(8, dtype=np.float32).reshape(4, 2)
    checkpoint_management.write_data_file(prefix, {"w": whole, "s": np.array([b"a", b"b"], object)},
                                          {"w": tf.float32, "s": tf.string})
    pv = tf.get_variable("w", shape=[4, 2], partitioner=tf.fixed_size_partitioner(2))
    s = tf.Variable([b"", b""], name="s")
    saver = tf.train.Saver()
    with tf.Session() as sess:
        _init(sess)
        saver.restore(sess, prefix)
        assert sess.run(pv.as_tensor()).tolist() == whole.tolist()
        assert sess.run(s).tolist() == [b"a", b"b"]
        new = saver.save(sess, str(tmp_path / "new"))  # saves in V2
    assert os.path.exists(new + ".index")
    assert tf.train.NewCheckpointReader(prefix).get_variable_to_shape_map() == {"w": [4, 2], "s": [2]}
    assert tf.train.checkpoint_exists(prefix)


# --- the ops -----------------------------------------------------------------------------------------------------
def test_save_v2_and_restore_v2_ops_with_slices(tmp_path):
    from adplace.ops import io_ops
    prefix = str(tmp_path / "ops")
    whole = np.arange(12, dtype=np.float32).reshape(4, 3)
    save = io_ops.save_v2(prefix, ["a", "a", "s"], ["4 3 0,2:0,3", "4 3 2,2:0,3", ""],
                          [whole[:2], whole[2:], tf.constant([b"x", b"y"])])
    middle, full, strings = io_ops.restore_v2(prefix, ["a", "a", "s"], ["4 3 1,2:1,2", "", ""],
                                              [tf.float32, tf.float32, tf.string])
    assert middle.shape.as_list() == [2, 2] and save.type == "SaveV2" and not save.outputs
    with tf.Session() as sess:
        sess.run(save)
        got = sess.run([middle, full, strings])
        assert got[0].tolist() == whole[1:3, 1:3].tolist() and got[1].tolist() == whole.tolist()
        assert got[2].tolist() == [b"x", b"y"]
        for names, specs, dtype, error, pattern in (
                (["nope"], [""], tf.float32, errors.NotFoundError, "Key nope not found in checkpoint"),
                (["a"], [""], tf.int32, errors.InvalidArgumentError,
                 "tensor_name = a; expected dtype int32 does not equal original dtype float"),
                (["a"], ["5 3 0,1:0,3"], tf.float32, errors.InvalidArgumentError,
                 r"shape in shape_and_slice spec \[5,3\] does not match the shape stored in checkpoint: \[4,3\]")):
            with pytest.raises(error, match=pattern):
                sess.run(io_ops.restore_v2(prefix, names, specs, [dtype]))
        with pytest.raises(errors.NotFoundError, match="Failed to find any matching files"):
            sess.run(io_ops.restore_v2(str(tmp_path / "absent"), ["a"], [""], [tf.float32]))
        bad = io_ops.save_v2(prefix, ["a"], ["4 3 0,2:0,3"], [whole])
        with pytest.raises(errors.InvalidArgumentError, match=r"has shape \[2,3\], but the tensor saved for it has"):
            sess.run(bad)


def test_io_ops_are_cpu_only_and_soft_placed(tmp_path, gpus):
    from adplace.ops import io_ops
    with tf.device("/gpu:0"):
        v = tf.Variable([1.0], name="v")
        save = io_ops.save_v2(str(tmp_path / "m"), ["v"], [""], [v])
    with tf.Session(config=SOFT) as sess:
        _init(sess)
        sess.run(save)
    assert tf.train.load_variable(str(tmp_path / "m"), "v").tolist() == [1.0]
    with tf.Session() as sess:
        with pytest.raises(errors.InvalidArgumentError, match="SaveV2"):
            sess.run(save)


def test_file_name_ops():
    from adplace.ops import io_ops
    with tf.Session() as sess:
        assert sess.run([io_ops.sharded_filename("/d/p", 1, 3), io_ops.sharded_filespec("/d/p", 3),
                         io_ops.string_join(["a", "b", "c"], separator="/")]) == [
            b"/d/p-00001-of-00003", b"/d/p-?????-of-00003", b"a/b/c"]


def test_generate_checkpoint_state_proto_relative_to_a_relative_save_dir():
    state = tf.train.generate_checkpoint_state_proto("run", os.path.join("run", "model-3"),
                                                     [os.path.join("run", "model-1")])
    assert state.model_checkpoint_path == "model-3"
    assert state.all_model_checkpoint_paths == ["model-1", "model-3"]
    absolute = tf.train.generate_checkpoint_state_proto("/abs/run", "/abs/run/model-3")
    assert absolute.model_checkpoint_path == "/abs/run/model-3"
    assert absolute.all_model_checkpoint_paths == ["/abs/run/model-3"]
    assert checkpoint_management.meta_graph_filename("/d/model-7") == "/d/model-7.meta"
    assert checkpoint_management.meta_graph_filename("/d/model-7-?????-of-00004", "mg") == "/d/model-7.mg"


def test_checkpoints_iterator_yields_each_new_checkpoint_then_stops_at_the_timeout(tmp_path):
    from adplace.train import checkpoint_utils

    assert checkpoint_utils.wait_for_new_checkpoint(str(tmp_path), timeout=0, seconds_to_sleep=0.01) is None
    assert list(tf.train.checkpoints_iterator(str(tmp_path), timeout=0)) == []
    tf.Variable(1.0, name="v")
    saver = tf.train.Saver()
    with tf.Session() as sess:
        _init(sess)
        first = saver.save(sess, str(tmp_path / "model"), global_step=1)
        seen = []
        polls = []

        def save_another_once():  # timeout_fn: False means "keep waiting"
            polls.append(1)
            if len(polls) == 1:
                saver.save(sess, str(tmp_path / "model"), global_step=2)
                return False
            return True
        for path in tf.train.checkpoints_iterator(str(tmp_path), timeout=0.05, timeout_fn=save_another_once):
            seen.append(path)
    assert seen == [first, str(tmp_path / "model-2")] and len(polls) == 2
    assert checkpoint_utils.wait_for_new_checkpoint(str(tmp_path), last_checkpoint=first, timeout=0) == seen[1]


def test_save_and_restore_accept_a_file_url(tmp_path):
    v = tf.Variable([1.0, 2.0], name="v")
    saver = tf.train.Saver()
    with tf.Session() as sess:
        _init(sess)
        path = saver.save(sess, "file://" + str(tmp_path / "model"))
        assert path == str(tmp_path / "model") and os.path.exists(path + ".index")
        sess.run(v.assign([0.0, 0.0]))
        saver.restore(sess, "file://" + path)
        assert sess.run(v).tolist() == [1.0, 2.0]


def test_saver_from_a_saver_def_with_a_name_drives_the_ops_under_that_scope(tmp_path):
    with tf.name_scope("net"):
        v = tf.Variable(5.0, name="v")
        built = tf.train.Saver()
    unscoped = protos.saver_pb2.SaverDef()
    unscoped.CopyFrom(built.as_saver_def())
    for field in ("filename_tensor_name", "save_tensor_name", "restore_op_name"):
        setattr(unscoped, field, getattr(unscoped, field)[len("net/"):])
    saver = tf.train.Saver(saver_def=unscoped, name="net")
    assert saver.as_saver_def().restore_op_name == built.as_saver_def().restore_op_name
    assert unscoped.restore_op_name == "save/restore_all"  # the caller's proto is not changed
    with tf.Session() as sess:
        _init(sess)
        path = saver.save(sess, str(tmp_path / "m"))
        sess.run(v.assign(0.0))
        saver.restore(sess, path)
        assert sess.run(v) == 5.0
