"""Tests for adplace/ops/data_flow_ops.py and data_flow_grad.py: tf.dynamic_partition, tf.dynamic_stitch and
tf.parallel_dynamic_stitch (values, static shapes, TF's errors) and their gradients."""

import numpy as np
import pytest

import adplace as tf
from graph_run import gradient_error, run


# --- dynamic_partition ----------------------------------------------------------------------------------------------
def test_dynamic_partition_vector():
    parts = tf.dynamic_partition([10, 20, 30, 40, 50], [0, 0, 1, 1, 0], 2)
    assert len(parts) == 2 and parts[0].op.type == "DynamicPartition" and parts[0].op.name == "DynamicPartition"
    assert [p.shape.as_list() for p in parts] == [[None], [None]]
    got = run(parts)
    np.testing.assert_array_equal(got[0], [10, 20, 50])
    np.testing.assert_array_equal(got[1], [30, 40])


def test_dynamic_partition_matrix_rows_and_empty_partitions():
    data = np.arange(15.0).reshape(5, 3)
    parts = tf.dynamic_partition(data, [0, 3, 3, 0, 0], 4)
    assert [p.shape.as_list() for p in parts] == [[None, 3]] * 4
    got = run(parts)
    np.testing.assert_array_equal(got[0], data[[0, 3, 4]])
    assert got[1].shape == got[2].shape == (0, 3)
    np.testing.assert_array_equal(got[3], data[[1, 2]])


def test_dynamic_partition_higher_rank_partitions_and_scalar():
    data = np.arange(24).reshape(2, 3, 4)
    partitions = np.array([[1, 0, 1], [0, 0, 1]], np.int32)
    got = run(tf.dynamic_partition(data, partitions, 2))
    np.testing.assert_array_equal(got[0], data[partitions == 0])
    np.testing.assert_array_equal(got[1], data[partitions == 1])
    one = run(tf.dynamic_partition([10, 20], 1, 2))
    assert one[0].shape == (0, 2)
    np.testing.assert_array_equal(one[1], [[10, 20]])
    single = tf.dynamic_partition([1.0, 2.0], [0, 0], 1)
    np.testing.assert_array_equal(run(single)[0], [1.0, 2.0])


def test_dynamic_partition_errors():
    with pytest.raises(TypeError, match="partitions"):
        tf.dynamic_partition([1, 2], tf.constant([0, 1], tf.int64), 2)
    with pytest.raises(ValueError, match="Dimensions must be equal, but are 3 and 2"):
        tf.dynamic_partition([1, 2, 3], [0, 1], 2)
    with pytest.raises(ValueError, match="less than minimum 1"):
        tf.dynamic_partition([1, 2], [0, 0], 0)
    p = tf.placeholder(tf.int32)
    parts = tf.dynamic_partition(np.zeros((4, 2)), p, 3)
    with pytest.raises(tf.errors.InvalidArgumentError, match=r"partitions\[2\] = 5 is not in \[0, 3\)") as info:
        run(parts, {p: [0, 1, 5, 1]})
    assert info.value.op is parts[0].op
    with pytest.raises(tf.errors.InvalidArgumentError, match=r"partitions\[1,0\] = -1 is not in \[0, 3\)"):
        run(tf.dynamic_partition(np.zeros((2, 2)), p, 3), {p: [[0, 1], [-1, 2]]})
    with pytest.raises(tf.errors.InvalidArgumentError, match=r"data.shape must start with partitions.shape, got "
                                                             r"data.shape = \[4,2\], partitions.shape = \[3\]"):
        run(parts, {p: [0, 1, 2]})


def test_dynamic_partition_gradient_stitches_the_pieces_back():
    x = tf.placeholder(tf.float64, [5, 2])
    parts = tf.dynamic_partition(x, [1, 0, 2, 1, 0], 3)
    y = tf.concat([parts[0] * 1.0, parts[1] * 2.0, parts[2] * 3.0], 0)
    g, = tf.gradients(y, x)
    np.testing.assert_array_equal(run(g, {x: np.zeros((5, 2))}), np.repeat([[2.0], [1.0], [3.0], [2.0], [1.0]], 2, 1))
    only_first, = tf.gradients(tf.reduce_sum(parts[1]), x)  # the other partitions get zeros
    np.testing.assert_array_equal(run(only_first, {x: np.zeros((5, 2))}), np.repeat([[1.], [0.], [0.], [1.], [0.]], 2, 1))
    x0 = np.random.default_rng(0).standard_normal((5, 2))
    assert gradient_error(x, [5, 2], tf.concat(parts, 0), [5, 2], x_init_value=x0) < 1e-8


# --- dynamic_stitch -------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("fn", [tf.dynamic_stitch, tf.parallel_dynamic_stitch])
def test_stitch_interleaves_rows(fn):
    indices = [tf.constant([6]), [4, 1], [[5, 2], [0, 3]]]
    data = [[[61.0, 62.0]], [[41.0, 42.0], [11.0, 12.0]], [[[51.0, 52.0], [21.0, 22.0]], [[1.0, 2.0], [31.0, 32.0]]]]
    s = fn(indices, data)
    assert s.op.type == ("DynamicStitch" if fn is tf.dynamic_stitch else "ParallelDynamicStitch")
    assert s.shape.as_list() == [7, 2]
    np.testing.assert_array_equal(run(s), [[1, 2], [11, 12], [21, 22], [31, 32], [41, 42], [51, 52], [61, 62]])


def test_stitch_last_write_wins_and_unknown_shapes():
    s = tf.dynamic_stitch([[0, 1, 2], [1, 3]], [[1, 2, 3], [20, 40]])
    np.testing.assert_array_equal(run(s), [1, 20, 3, 40])
    p = tf.placeholder(tf.int32, [None])
    unknown = tf.dynamic_stitch([p, [2]], [tf.placeholder(tf.float32, [None, 3]), [[1.0, 2.0, 3.0]]])
    assert unknown.shape.as_list() == [None, 3]
    assert tf.dynamic_stitch([tf.placeholder(tf.int32)], [[1.0]]).shape.ndims is None



@pytest.mark.parametrize("fn", [tf.dynamic_stitch, tf.parallel_dynamic_stitch])
def test_stitch_row_count_is_unknown_unless_every_index_is_a_constant(fn):
    p = tf.placeholder(tf.int32)  # unknown rank: contributes no row shape, but still no constant
    for indices in ([p, tf.constant(1)], [tf.constant(1), p]):
        s = fn(indices, [tf.constant(40), tf.constant(60)])
        assert s.shape.as_list() == [None]
    s = fn([p, tf.constant(1)], [tf.constant(40), tf.constant(60)])
    assert run(s, {p: 5}).tolist() == [0, 60, 0, 0, 0, 40]
    assert fn([tf.constant(0), tf.constant(1)], [tf.constant(40), tf.constant(60)]).shape.as_list() == [2]

def test_stitch_errors():
    with pytest.raises(ValueError, match="must match length 2 of argument 'indices'"):
        tf.dynamic_stitch([[0], [1]], [[1.0]])
    with pytest.raises(ValueError, match="Dimensions must be equal, but are 3 and 2"):
        tf.dynamic_stitch([[0, 1]], [[1.0, 2.0, 3.0]])
    i0, i1 = tf.placeholder(tf.int32), tf.placeholder(tf.int32)
    d0, d1 = tf.placeholder(tf.float32), tf.placeholder(tf.float32)
    s = tf.dynamic_stitch([i0, i1], [d0, d1])
    feed = {i0: [0, 4, 7], i1: [1, 6, 2, 3, 5], d0: [0.0, 40.0, 70.0], d1: np.ones((1, 5))}
    with pytest.raises(tf.errors.InvalidArgumentError, match=r"data\[1\].shape = \[1,5\] does not start with "
                                                             r"indices\[1\].shape = \[5\]") as info:
        run(s, feed)
    assert info.value.op is s.op
    feed.update({i1: [1, 6, 2, 3], d0: np.zeros((3, 1)), d1: np.zeros((4, 2))})
    with pytest.raises(tf.errors.InvalidArgumentError, match=r"Need data\[0\].shape\[1:\] = data\[1\].shape\[1:\], "
                                                             r"got data\[0\].shape = \[3,1\], data\[1\].shape = \[4,2\]"):
        run(s, feed)
    feed.update({i1: [1, -6, 2, 3], d1: np.zeros((4, 1))})
    with pytest.raises(tf.errors.InvalidArgumentError, match=r"indices\[1\] is out of range"):
        run(s, feed)


def test_stitch_gradient_gathers_the_output_gradient():
    a, b = tf.placeholder(tf.float64, [2, 2]), tf.placeholder(tf.float64, [3, 2])
    s = tf.dynamic_stitch([[3, 0], [1, 4, 2]], [a, b])
    dy = tf.constant(np.arange(10.0).reshape(5, 2))
    ga, gb = tf.gradients(s, [a, b], grad_ys=dy)
    got = run([ga, gb], {a: np.zeros((2, 2)), b: np.zeros((3, 2))})
    np.testing.assert_array_equal(got[0], [[6, 7], [0, 1]])
    np.testing.assert_array_equal(got[1], [[2, 3], [8, 9], [4, 5]])
    assert gradient_error(b, [3, 2], tf.dynamic_stitch([[3, 0], [1, 4, 2]], [tf.zeros([2, 2], tf.float64), b]),
                          [5, 2], x_init_value=np.ones((3, 2))) < 1e-8


def test_stitch_gradient_of_an_indexed_slices_is_densified():
    a = tf.constant([[1.0, 2.0], [3.0, 4.0]])
    s = tf.parallel_dynamic_stitch([[1, 0]], [a])
    g, = tf.gradients(tf.reduce_sum(tf.gather(s, [0, 0])), a)  # the gather's gradient is an IndexedSlices
    np.testing.assert_array_equal(run(g), [[0, 0], [2, 2]])
