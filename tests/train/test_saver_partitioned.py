"""Tests for saving and restoring partitioned variables with tf.train.Saver (adplace/train/saver.py and
adplace/train/saveables.py): each part is saved as a slice of the variable's full tensor, as TF saves it, so a variable
saved in one partitioning restores into another, or into an unpartitioned variable, and back; restores stay all or
nothing."""
import numpy as np
import pytest

import adplace as tf
from adplace import errors

FULL_SHAPE = [10, 3]
NAME = "my_var"


def _make(slices=None, partitioner=None, initial=None):
    """The variable `NAME` in a new graph: parts cut as `slices`, a partitioned variable, or one whole Variable.
    Returns (what to pass to the Saver in a list, what to pass as a dict value, the full-value tensor)."""
    initial = np.zeros(FULL_SHAPE, np.float32) if initial is None else initial
    if slices:
        parts = tf.create_partitioned_variables(FULL_SHAPE, slices, initial, name=NAME)
        axis = 0 if slices[0] != 1 else 1
        return parts, parts, tf.concat(parts, axis)
    if partitioner:
        pv = tf.get_variable(NAME, shape=FULL_SHAPE, initializer=initial, partitioner=partitioner)
        return [pv], pv, pv.as_tensor()
    var = tf.Variable(initial, name=NAME)
    return [var], var, var.value()


def _save(path, as_dict, **how):
    value = np.random.default_rng(len(str(how))).random(FULL_SHAPE).astype(np.float32)
    with tf.Graph().as_default():
        listed, single, _ = _make(initial=value, **how)
        saver = tf.train.Saver({NAME: single} if as_dict else listed)
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            assert saver.save(sess, path) == path
    return value


def _restore(path, as_dict, **how):
    with tf.Graph().as_default():
        listed, single, full = _make(**how)
        saver = tf.train.Saver({NAME: single} if as_dict else listed)
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            saver.restore(sess, path)
            return sess.run(full)


@pytest.mark.parametrize("as_dict", [False, True])
def test_restore_into_another_partitioning(tmp_path, as_dict):
    path = str(tmp_path / "ckpt")
    saved = _save(path, as_dict, partitioner=tf.fixed_size_partitioner(num_shards=2))
    np.testing.assert_array_equal(_restore(path, as_dict), saved)   # into one whole variable

    saved = _save(path, as_dict, slices=[10, 1])                     # 10 horizontal parts
    np.testing.assert_array_equal(_restore(path, as_dict), saved)
    np.testing.assert_array_equal(_restore(path, as_dict, slices=[2, 1]), saved)
    np.testing.assert_array_equal(_restore(path, as_dict, slices=[1, 3]), saved)   # 3 vertical parts
    np.testing.assert_array_equal(_restore(path, as_dict, partitioner=tf.fixed_size_partitioner(2)), saved)

    saved = _save(path, as_dict)                                     # a whole variable into parts
    np.testing.assert_array_equal(_restore(path, as_dict, slices=[1, 3]), saved)
    np.testing.assert_array_equal(_restore(path, as_dict, partitioner=tf.fixed_size_partitioner(3)), saved)


def test_the_checkpoint_holds_the_whole_tensor_under_the_full_name(tmp_path):
    path = str(tmp_path / "ckpt")
    saved = _save(path, False, partitioner=tf.fixed_size_partitioner(3))
    assert tf.train.list_variables(path) == [(NAME, FULL_SHAPE)]
    np.testing.assert_array_equal(tf.train.load_variable(path, NAME), saved)


def test_the_default_saver_groups_parts_with_other_variables(tmp_path):
    path = str(tmp_path / "ckpt")
    with tf.variable_scope("emb", partitioner=tf.fixed_size_partitioner(3)):
        pv = tf.get_variable("w", shape=[7, 2], dtype=tf.int32, initializer=tf.ones_initializer())
    step = tf.Variable(5, name="step")
    saver = tf.train.Saver()
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        sess.run(pv.assign(np.arange(14, dtype=np.int32).reshape(7, 2)))
        saver.save(sess, path)
        assert dict(tf.train.list_variables(path)) == {"emb/w": [7, 2], "step": []}
        sess.run([pv.assign(np.zeros((7, 2), np.int32)), step.assign(0)])
        saver.restore(sess, path)
        np.testing.assert_array_equal(sess.run(pv.as_tensor()), np.arange(14).reshape(7, 2))
        assert sess.run(step) == 5


def test_string_parts_round_trip(tmp_path):
    path = str(tmp_path / "ckpt")
    words = np.array([b"a", b"bb", b"", b"ccc", b"d"], dtype=object)
    pv = tf.get_variable("words", initializer=tf.constant(words), partitioner=tf.fixed_size_partitioner(2))
    saver = tf.train.Saver([pv])
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        saver.save(sess, path)
        sess.run(pv.assign(np.array([b"x"] * 5, dtype=object)))
        saver.restore(sess, path)
        assert list(sess.run(pv.as_tensor())) == list(words)


def test_a_failed_restore_of_a_part_changes_no_variable(tmp_path):
    path = str(tmp_path / "ckpt")
    with tf.Graph().as_default():
        tf.Variable(np.ones([12, 3], np.float32), name=NAME)
        other = tf.Variable(1.0, name="other")
        saver = tf.train.Saver()
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            saver.save(sess, path)
    listed, _, full = _make(partitioner=tf.fixed_size_partitioner(2))
    other = tf.Variable(7.0, name="other")
    saver = tf.train.Saver(listed + [other])
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        with pytest.raises(errors.InvalidArgumentError, match=r"tensor_name = my_var; shape in shape_and_slice spec "
                                                              r"\[10,3\] does not match the shape stored in "
                                                              r"checkpoint: \[12,3\]"):
            saver.restore(sess, path)
        assert sess.run(other) == 7.0 and not sess.run(full).any()


def test_restoring_parts_checks_key_and_dtype(tmp_path):
    path = str(tmp_path / "ckpt")
    with tf.Graph().as_default():
        tf.Variable(np.ones(FULL_SHAPE, np.float64), name=NAME)
        with tf.Session() as sess:
            saver = tf.train.Saver()
            sess.run(tf.global_variables_initializer())
            saver.save(sess, path)
    listed, _, _ = _make(slices=[2, 1])
    missing = tf.get_variable("missing", shape=[4], partitioner=tf.fixed_size_partitioner(2))
    with tf.Session() as sess:
        with pytest.raises(errors.InvalidArgumentError, match="expected dtype float32 does not equal original dtype "
                                                              "float64"):
            tf.train.Saver(listed).restore(sess, path)
        with pytest.raises(errors.NotFoundError, match="Key missing not found in checkpoint"):
            tf.train.Saver([missing]).restore(sess, path)


def test_saver_var_list_errors():
    parts = tf.create_partitioned_variables([4], [2], tf.zeros_initializer(), name="p")
    other = tf.create_partitioned_variables([4], [2], tf.zeros_initializer(), name="q")
    whole = tf.Variable(np.zeros(4, np.float32), name="p_whole")
    with pytest.raises(ValueError, match="Cannot save 'p': its 1 slices cover 2 of its 4 elements"):
        tf.train.Saver(parts[:1])
    with pytest.raises(ValueError, match="Slices must all be slices"):
        tf.train.Saver({"p": [parts[0], whole]})
    with pytest.raises(ValueError, match="Slices must all be Variables"):
        tf.train.Saver({"p": [parts[0], tf.constant(1.0)]})
    with pytest.raises(ValueError, match="Slices must all be from the same tensor: p != q"):
        tf.train.Saver({"p": [parts[0], other[1]]})
    with pytest.raises(ValueError, match="The same saveable will be restored with two names"):
        tf.train.Saver({"a": parts, "b": parts[::-1]})
    pv = tf.get_variable("r", shape=[4], partitioner=tf.fixed_size_partitioner(2))
    with pytest.raises(ValueError, match="At least two variables have the same name: r"):
        tf.train.Saver([pv, pv])
    with pytest.raises(ValueError, match="Mixing slices and non-slices with the same name: r"):
        tf.train.Saver([pv, list(pv)[0]])


def test_a_single_part_in_a_dict_is_saved_whole(tmp_path):
    path = str(tmp_path / "ckpt")
    parts = tf.create_partitioned_variables([5], [2], tf.ones_initializer(), name="p")
    saver = tf.train.Saver({"first": parts[0]})
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        saver.save(sess, path)
    assert tf.train.list_variables(path) == [("first", [3])]
