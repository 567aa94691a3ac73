"""Tests for adplace.train.saver: tf.train.Saver round trips, checkpoint state, max_to_keep, restore errors that
leave every variable unchanged, and atomic saves."""
import os
import threading

import numpy as np
import pytest

import adplace as tf
from adplace import errors
from adplace.lib.io import tensor_bundle
from adplace.train import checkpoint_management

VALUES = {
    "w": np.arange(6, dtype=np.float32).reshape(2, 3),
    "scope/b": np.array([1.5, -2.5], dtype=np.float64),
    "count": np.array(7, dtype=np.int32),
    "ids": np.array([[1, 2], [3, 4]], dtype=np.int64),
    "mask": np.array([True, False, True]),
    "half": np.array([0.5, 4.0], dtype=np.float16),
    "words": np.array([b"alpha", b"", b"\xce\xbb"], dtype=object),
}


def _build(values):
    """One Variable per entry, named by its key (a "scope/" prefix becomes a name scope)."""
    variables = {}
    for key, value in values.items():
        scope, _, name = key.rpartition("/")
        with tf.name_scope(scope or None):
            variables[key] = tf.Variable(value, name=name)
    return variables


def _init(sess):
    sess.run([v.initializer for v in tf.global_variables()])


def _scramble(sess, variables):
    """Overwrite every variable with a value different from VALUES."""
    for key, var in variables.items():
        value = VALUES[key]
        if value.dtype == object:
            new = np.array([b"x"] * value.size, dtype=object).reshape(value.shape)
        elif value.dtype == bool:
            new = ~value
        else:
            new = value + 1
        var.load(new, sess)


def _values(sess, variables):
    return sess.run({key: var for key, var in variables.items()})


def _assert_values_equal(actual, expected):
    assert actual.keys() == expected.keys()
    for key in expected:
        assert np.asarray(actual[key]).dtype == np.asarray(expected[key]).dtype, key
        np.testing.assert_array_equal(actual[key], expected[key], err_msg=key)


# --- round trips -------------------------------------------------------------------------------------------------

def test_round_trip_all_dtypes_same_session(tmp_path):
    variables = _build(VALUES)
    saver = tf.train.Saver()
    with tf.Session() as sess:
        _init(sess)
        path = saver.save(sess, str(tmp_path / "model"))
        assert path == str(tmp_path / "model")
        assert os.path.isfile(path + ".index") and os.path.isfile(path + ".data-00000-of-00001")
        assert os.path.isfile(path + ".meta")  # the MetaGraphDef, as TF's Saver writes by default
        _scramble(sess, variables)
        assert not np.array_equal(sess.run(variables["w"]), VALUES["w"])
        saver.restore(sess, path)
        _assert_values_equal(_values(sess, variables), VALUES)


def test_restore_into_fresh_graph_without_initializing(tmp_path):
    _build(VALUES)
    saver = tf.train.Saver()
    with tf.Session() as sess:
        _init(sess)
        path = saver.save(sess, str(tmp_path / "model"))
    tf.reset_default_graph()
    variables = _build({key: np.zeros_like(v) if v.dtype != object else v for key, v in VALUES.items()})
    saver = tf.train.Saver()
    with tf.Session() as sess:
        saver.restore(sess, path)  # restoring initializes: no initializer runs
        _assert_values_equal(_values(sess, variables), VALUES)


def test_restore_ops_are_built_once_under_save_scope_colocated_with_variables():
    w, b = tf.Variable([1.0], name="w"), tf.Variable([2.0], name="b")
    tf.train.Saver()
    second = tf.train.Saver([w])
    names = [op.name for op in tf.get_default_graph().get_operations()]
    assert {"save/Assign", "save/Assign_1", "save/restore_all", "save_1/Assign", "save_1/restore_all"} <= set(names)
    assign = tf.get_default_graph().get_operation_by_name("save_1/Assign")
    assert assign.inputs[0].op is w.op
    assert assign.colocation_groups() == [b"loc:@w"]
    assert second.last_checkpoints == []
    assert b is not None


def test_round_trip_on_virtual_gpus(gpus, tmp_path):
    values = {"gpu1/w": np.arange(4, dtype=np.float32).reshape(2, 2), "ps/v": np.ones(3, dtype=np.float32),
              "cpu/counter": np.array(3, dtype=np.int32)}

    def build():
        with tf.device("/gpu:1"):
            w = tf.Variable(values["gpu1/w"], name="gpu1/w")
        with tf.device(tf.assign_to_device("/device:GPU:0")):
            v = tf.Variable(values["ps/v"], name="ps/v")
            y = tf.sin(v)
        with tf.device("/cpu:0"):
            counter = tf.Variable(values["cpu/counter"], name="cpu/counter")
        return {"gpu1/w": w, "ps/v": v, "cpu/counter": counter}, y

    variables, y = build()
    saver = tf.train.Saver()
    with tf.Session() as sess:
        _init(sess)
        assert sess.placement(variables["gpu1/w"]).endswith("/device:GPU:1")
        assert sess.placement(variables["ps/v"]).endswith("/device:CPU:0")
        assert sess.placement(y).endswith("/device:GPU:0")
        for key, var in variables.items():  # each restore Assign lands on its variable's device
            assign = next(op for op in tf.get_default_graph().get_operations()
                          if op.name.startswith("save/Assign") and op.inputs[0].op is var.op)
            assert sess.placement(assign) == sess.placement(var), key
        path = saver.save(sess, str(tmp_path / "towers"), global_step=1)
    tf.reset_default_graph()
    variables, _ = build()
    saver = tf.train.Saver()
    with tf.Session() as sess:
        _init(sess)
        for var in variables.values():
            var.load(np.zeros(var.shape.as_list()), sess)
        saver.restore(sess, path)
        _assert_values_equal(_values(sess, variables), values)


def test_dict_var_list_uses_custom_keys(tmp_path):
    w = tf.Variable([1.0, 2.0], name="w")
    saver = tf.train.Saver({"model/weights": w})
    with tf.Session() as sess:
        _init(sess)
        path = saver.save(sess, str(tmp_path / "m"))
    assert tf.train.list_variables(path) == [("model/weights", [2])]
    np.testing.assert_array_equal(tf.train.load_variable(path, "model/weights:0"), [1.0, 2.0])
    tf.reset_default_graph()
    other = tf.Variable([0.0, 0.0], name="renamed")
    with tf.Session() as sess:
        tf.train.Saver({"model/weights": other}).restore(sess, path)
        np.testing.assert_array_equal(sess.run(other), [1.0, 2.0])


def test_var_list_of_variables_only_saves_those(tmp_path):
    w, b = tf.Variable(1.0, name="w"), tf.Variable(2.0, name="b")
    saver = tf.train.Saver([w])
    with tf.Session() as sess:
        _init(sess)
        path = saver.save(sess, str(tmp_path / "m"))
    assert tf.train.list_variables(path) == [("w", [])]
    assert b.name == "b:0"


# --- checkpoint state, global_step, max_to_keep ------------------------------------------------------------------

def test_global_step_names_and_checkpoint_state(tmp_path):
    step = tf.Variable(42, name="global_step")
    tf.Variable(1.0, name="w")
    saver = tf.train.Saver()
    prefix = str(tmp_path / "model.ckpt")
    with tf.Session() as sess:
        _init(sess)
        first = saver.save(sess, prefix, global_step=3)
        second = saver.save(sess, prefix, global_step=step)
    assert (first, second) == (prefix + "-3", prefix + "-42")
    state_text = (tmp_path / "checkpoint").read_text()
    assert f'model_checkpoint_path: "{prefix}-42"' in state_text.splitlines()
    assert [line for line in state_text.splitlines() if line.startswith("all_model_checkpoint_paths")] == [
        f'all_model_checkpoint_paths: "{prefix}-3"', f'all_model_checkpoint_paths: "{prefix}-42"']
    state = tf.train.get_checkpoint_state(str(tmp_path))
    assert state.model_checkpoint_path == second
    assert state.all_model_checkpoint_paths == [first, second]
    assert tf.train.latest_checkpoint(str(tmp_path)) == second
    assert tf.train.checkpoint_exists(first) and not tf.train.checkpoint_exists(prefix)
    assert saver.last_checkpoints == [first, second]


def test_pad_step_number_and_no_state(tmp_path):
    tf.Variable(1.0, name="w")
    saver = tf.train.Saver(pad_step_number=True)
    with tf.Session() as sess:
        _init(sess)
        path = saver.save(sess, str(tmp_path / "m"), global_step=12, write_state=False)
    assert path == str(tmp_path / "m-00000012")
    assert not (tmp_path / "checkpoint").exists()
    assert tf.train.get_checkpoint_state(str(tmp_path)) is None
    assert tf.train.latest_checkpoint(str(tmp_path)) is None


def test_relative_save_path_is_recorded_relative_to_its_directory(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "run").mkdir()
    tf.Variable(1.0, name="w")
    saver = tf.train.Saver()
    with tf.Session() as sess:
        _init(sess)
        path = saver.save(sess, os.path.join("run", "m"), global_step=1)
    assert path == os.path.join("run", "m-1")
    assert 'model_checkpoint_path: "m-1"' in (tmp_path / "run" / "checkpoint").read_text()
    assert tf.train.latest_checkpoint("run") == os.path.join("run", "m-1")


def test_max_to_keep_deletes_oldest_files(tmp_path):
    v = tf.Variable(0.0, name="v")
    saver = tf.train.Saver(max_to_keep=2)
    prefix = str(tmp_path / "m")
    with tf.Session() as sess:
        _init(sess)
        for step in range(4):
            v.load(float(step), sess)
            saver.save(sess, prefix, global_step=step)
    assert sorted(f for f in os.listdir(tmp_path) if f.startswith("m-")) == [
        "m-2.data-00000-of-00001", "m-2.index", "m-2.meta", "m-3.data-00000-of-00001", "m-3.index", "m-3.meta"]
    assert saver.last_checkpoints == [prefix + "-2", prefix + "-3"]
    assert tf.train.get_checkpoint_state(str(tmp_path)).all_model_checkpoint_paths == [prefix + "-2", prefix + "-3"]
    assert tf.train.load_variable(str(tmp_path), "v") == 3.0


@pytest.mark.parametrize("max_to_keep", [None, 0])
def test_max_to_keep_none_or_zero_keeps_everything(tmp_path, max_to_keep):
    tf.Variable(0.0, name="v")
    saver = tf.train.Saver(max_to_keep=max_to_keep)
    with tf.Session() as sess:
        _init(sess)
        for step in range(7):
            saver.save(sess, str(tmp_path / "m"), global_step=step)
    assert len([f for f in os.listdir(tmp_path) if f.endswith(".index")]) == 7
    assert tf.train.latest_checkpoint(str(tmp_path)) == str(tmp_path / "m-6")


def test_saving_the_same_prefix_twice_keeps_one_entry(tmp_path):
    tf.Variable(0.0, name="v")
    saver = tf.train.Saver(max_to_keep=2)
    with tf.Session() as sess:
        _init(sess)
        for step in (1, 2, 1):
            saver.save(sess, str(tmp_path / "m"), global_step=step)
    assert saver.last_checkpoints == [str(tmp_path / "m-2"), str(tmp_path / "m-1")]
    assert tf.train.checkpoint_exists(str(tmp_path / "m-2"))


# --- construction errors -----------------------------------------------------------------------------------------

def test_no_variables_to_save(tmp_path):
    with pytest.raises(ValueError, match="^No variables to save$"):
        tf.train.Saver()
    assert tf.train.Saver(allow_empty=True).save(tf.Session(), str(tmp_path / "empty")) is None
    assert sorted(os.listdir(tmp_path)) == ["empty.meta"]  # as TF: no checkpoint, but the meta graph


def test_duplicate_keys_and_bad_entries():
    w = tf.Variable(1.0, name="w")
    with pytest.raises(ValueError, match="At least two variables have the same name: w"):
        tf.train.Saver([w, w])
    with pytest.raises(ValueError, match="The same saveable will be restored with two names"):
        tf.train.Saver({"a": w, "b": w})
    with pytest.raises(TypeError, match="Variable to save is not a Variable"):
        tf.train.Saver([tf.constant(1.0)])
    with pytest.raises(TypeError, match="should be passed in a dict or a list"):
        tf.train.Saver(w)


# --- save errors -------------------------------------------------------------------------------------------------

def test_missing_parent_directory(tmp_path):
    tf.Variable(1.0, name="w")
    saver = tf.train.Saver()
    path = str(tmp_path / "missing" / "model")
    with tf.Session() as sess:
        _init(sess)
        with pytest.raises(ValueError, match="^Parent directory of .*missing/model doesn't exist, can't save.$"):
            saver.save(sess, path)
    assert not (tmp_path / "missing").exists()


def test_saving_uninitialized_variable_writes_nothing(tmp_path):
    tf.Variable(1.0, name="w")
    saver = tf.train.Saver()
    with tf.Session() as sess:
        with pytest.raises(errors.FailedPreconditionError, match="w"):
            saver.save(sess, str(tmp_path / "m"))
    assert os.listdir(tmp_path) == []


# --- restore errors leave every variable unchanged ---------------------------------------------------------------

@pytest.fixture
def saved_ab(tmp_path):
    """A checkpoint with a=[1,2] (float32) and b=[3,4] (float32); returns its prefix."""
    tf.Variable([1.0, 2.0], name="a")
    tf.Variable([3.0, 4.0], name="b")
    saver = tf.train.Saver()
    with tf.Session() as sess:
        _init(sess)
        path = saver.save(sess, str(tmp_path / "ab"))
    tf.reset_default_graph()
    return path


def _restore_must_fail(b_value, path, error, match):
    """Build a=[9,9] and b=`b_value`, restore `path` expecting `error`, and check neither variable changed."""
    variables = {"a": tf.Variable([9.0, 9.0], name="a"), "b": tf.Variable(b_value, name="b")}
    saver = tf.train.Saver()
    with tf.Session() as sess:
        _init(sess)
        before = _values(sess, variables)
        with pytest.raises(error, match=match):
            saver.restore(sess, path)
        after = _values(sess, variables)
    _assert_values_equal(after, before)


def test_restore_wrong_shape(saved_ab):
    _restore_must_fail(np.zeros((3, 1), np.float32), saved_ab, errors.InvalidArgumentError,
                       r"(?s)mismatch between the current graph.*Assign requires shapes of both tensors to match. "
                       r"lhs shape= \[3,1\] rhs shape= \[2\].*variable 'b', checkpoint .*ab")


def test_restore_wrong_dtype(saved_ab):
    _restore_must_fail(np.zeros(2, np.float64), saved_ab, errors.InvalidArgumentError,
                       "tensor_name = b; expected dtype float64 does not equal original dtype float32")


def test_restore_missing_key(saved_ab):
    variables = {"a": tf.Variable([9.0, 9.0], name="a"), "c": tf.Variable(5, name="c")}
    saver = tf.train.Saver()
    with tf.Session() as sess:
        _init(sess)
        with pytest.raises(errors.NotFoundError, match=r"(?s)Variable name or other graph key that is missing.*"
                           r"Key c not found in checkpoint.*variable 'c', checkpoint .*ab"):
            saver.restore(sess, saved_ab)
        _assert_values_equal(_values(sess, variables), {"a": np.float32([9, 9]), "c": np.int32(5)})


def test_restore_missing_file_and_none_path(tmp_path):
    v = tf.Variable([9.0], name="v")
    saver = tf.train.Saver()
    with tf.Session() as sess:
        _init(sess)
        missing = str(tmp_path / "nothing")
        with pytest.raises(ValueError, match=f"^The passed save_path is not a valid checkpoint: {missing}$"):
            saver.restore(sess, missing)
        with pytest.raises(ValueError, match="^Can't load save_path when it is None.$"):
            saver.restore(sess, None)
        assert sess.run(v).tolist() == [9.0]


def test_restore_corrupt_file_is_data_loss(tmp_path):
    v = tf.Variable([9.0], name="v")
    (tmp_path / "bad.index").write_bytes(b"not a table")
    with tf.Session() as sess:
        _init(sess)
        with pytest.raises(errors.DataLossError, match="bad.index"):
            tf.train.Saver().restore(sess, str(tmp_path / "bad"))
        assert sess.run(v).tolist() == [9.0]


# --- atomic saves ------------------------------------------------------------------------------------------------

def _crash_partway(target, *args, **kwargs):
    """A stand-in for table.write_table (the index, written after the data) or os.replace that writes some bytes,
    then dies (a full disk)."""
    if hasattr(target, "write"):
        target.write(b"half an index")
    raise OSError(28, "No space left on device")


@pytest.mark.parametrize("patch", ["write_table", "replace"])
def test_crash_mid_save_keeps_previous_checkpoint(tmp_path, monkeypatch, patch):
    v = tf.Variable([1.0, 2.0], name="v")
    saver = tf.train.Saver()
    prefix = str(tmp_path / "m")
    with tf.Session() as sess:
        _init(sess)
        saver.save(sess, prefix)
        state_before = (tmp_path / "checkpoint").read_text()
        v.load([5.0, 6.0], sess)
        if patch == "write_table":
            monkeypatch.setattr(tensor_bundle.table, "write_table", _crash_partway)
        else:
            monkeypatch.setattr(checkpoint_management.os, "replace", _crash_partway)
        with pytest.raises(errors.UnknownError, match=r"(?s)Failed to write checkpoint .*m.*No space left"):
            saver.save(sess, prefix)
        monkeypatch.undo()
        assert sorted(os.listdir(tmp_path)) == ["checkpoint", "m.data-00000-of-00001", "m.index", "m.meta"]  # no temp
        assert (tmp_path / "checkpoint").read_text() == state_before
        saver.restore(sess, prefix)
        assert sess.run(v).tolist() == [1.0, 2.0]


def test_checkpoint_reader(tmp_path):
    tf.Variable(np.ones((2, 2), np.float32), name="w")
    with tf.Session() as sess:
        _init(sess)
        path = tf.train.Saver().save(sess, str(tmp_path / "m"))
    (tmp_path / "empty").mkdir()
    reader = tf.train.load_checkpoint(path)
    assert reader.has_tensor("w") and not reader.has_tensor("x")
    assert reader.get_variable_to_shape_map() == {"w": [2, 2]}
    assert reader.get_variable_to_dtype_map() == {"w": tf.float32}
    with pytest.raises(errors.NotFoundError, match="Key x not found in checkpoint"):
        reader.get_tensor("x")
    with pytest.raises(ValueError, match="Couldn't find 'checkpoint' file"):
        tf.train.list_variables(str(tmp_path / "empty"))


# --- saving and restoring while other threads train ---------------------------------------------------------------

JOIN_S = 60.0  # a bound for training threads that must stop: only a hang reaches it


def _two_counter_step():
    """a += 1, some work, b += 1 in one step (locked, so no increment is lost): between steps a == b."""
    a, b = tf.Variable(0.0, name="a"), tf.Variable(0.0, name="b")
    inc_a = tf.assign_add(a, 1.0, use_locking=True)
    with tf.control_dependencies([inc_a]):
        x = tf.constant(np.eye(48, dtype=np.float32) * 0.5)
        slow = tf.reduce_sum(tf.tanh(tf.matmul(tf.matmul(x, x), tf.sin(x)) + tf.cos(x)))
    with tf.control_dependencies([slow]):
        inc_b = tf.assign_add(b, 1.0, use_locking=True)
    return a, b, inc_b.op


class _Trainers:
    """`n` threads running `step` in one session until stopped; each counts its steps."""

    def __init__(self, sess, step, n: int = 4):
        self.stop, self.counts, self.errors = threading.Event(), [0] * n, []
        self.started = [threading.Event() for _ in range(n)]
        self.threads = [threading.Thread(target=self._train, args=(sess, step, i), daemon=True) for i in range(n)]

    def _train(self, sess, step, i: int) -> None:
        try:
            while not self.stop.is_set():
                sess.run(step)
                self.counts[i] += 1
                self.started[i].set()
        except BaseException as e:  # noqa: BLE001 - reported by the test
            self.errors.append(e)
            self.started[i].set()

    def __enter__(self):
        for thread in self.threads:
            thread.start()
        for event in self.started:
            assert event.wait(JOIN_S)
        return self

    def __exit__(self, *exc):
        self.stop.set()
        for thread in self.threads:
            thread.join(JOIN_S)
            assert not thread.is_alive()
        assert self.errors == []
        return False


def test_every_checkpoint_saved_while_four_threads_train_holds_whole_steps(tmp_path):
    a, b, step = _two_counter_step()
    saver = tf.train.Saver([a, b], max_to_keep=None)
    sess = tf.Session()
    sess.run([a.initializer, b.initializer])
    saved = []
    with _Trainers(sess, step) as trainers:
        for i in range(30):
            reader = tf.train.load_checkpoint(saver.save(sess, str(tmp_path / "model"), global_step=i))
            saved.append((float(reader.get_tensor("a")), float(reader.get_tensor("b"))))
    half_steps = [(i, pair) for i, pair in enumerate(saved) if pair[0] != pair[1]]
    assert half_steps == [], f"{len(half_steps)} of 30 checkpoints hold half a step: {half_steps[:5]}"
    assert [x for x, _ in saved] == sorted(x for x, _ in saved) and saved[-1][0] > 0
    assert sess.run([a, b]) == [float(sum(trainers.counts))] * 2


def test_restores_while_four_threads_train_leave_whole_steps(tmp_path):
    a, b, step = _two_counter_step()
    saver = tf.train.Saver([a, b])
    sess = tf.Session()
    sess.run([a.initializer, b.initializer])
    for _ in range(3):
        sess.run(step)
    path = saver.save(sess, str(tmp_path / "three_steps"))
    after_restore = []
    with _Trainers(sess, step):
        for i in range(20):
            saver.restore(sess, path)
            reader = tf.train.load_checkpoint(saver.save(sess, str(tmp_path / "check"), global_step=i,
                                                         write_state=False))
            after_restore.append((float(reader.get_tensor("a")), float(reader.get_tensor("b"))))
    assert all(x == y >= 3.0 for x, y in after_restore), after_restore
    final_a, final_b = sess.run([a, b])
    assert final_a == final_b >= 3.0
