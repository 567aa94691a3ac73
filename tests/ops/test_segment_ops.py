"""Tests for adplace/ops/segment_ops.py and segment_grad.py: sorted, unsorted and sparse segment reductions
(NumPy reference values, empty segments, static shapes, TF's run-time errors) and their gradients."""

import numpy as np
import pytest

import adplace as tf
from graph_run import gradient_error, run


def reference(kind, data, ids, num, empty):
    """The segment reduction in plain NumPy: one row per segment, `empty` where a segment has no rows."""
    out = np.full((num,) + data.shape[ids.ndim:], empty, dtype=np.float64)
    rows = data.reshape((ids.size,) + data.shape[ids.ndim:])
    for s in range(num):
        members = rows[ids.ravel() == s]
        if len(members):
            out[s] = {"sum": np.sum, "mean": np.mean, "max": np.max, "min": np.min, "prod": np.prod,
                      "sqrt_n": lambda m, axis: np.sum(m, axis) / np.sqrt(len(m))}[kind](members, axis=0)
    return out


DATA = np.array([[1.0, -2.0], [3.0, 5.0], [-4.0, 0.5], [6.0, 7.0], [2.0, -1.5], [0.25, 8.0]])


# --- sorted segment ops ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize("kind", ["sum", "mean", "max", "min", "prod"])
def test_sorted_segments_with_a_gap(kind):
    ids = np.array([0, 0, 2, 2, 2, 3])
    y = getattr(tf, f"segment_{kind}")(DATA, ids)
    assert y.op.type == f"Segment{kind.capitalize()}" and y.op.name == y.op.type
    assert y.shape.as_list() == [None, 2]
    np.testing.assert_allclose(run(y), reference(kind, DATA, ids, 4, 1.0 if kind == "prod" else 0.0))


def test_sorted_segment_integer_mean_truncates_and_dtypes():
    y = tf.segment_mean(tf.constant([7, -7, 2, 1, -2], tf.int32), [0, 0, 1, 1, 2])
    np.testing.assert_array_equal(run(y), [0, 1, -2])
    assert run(tf.segment_max(tf.constant([3, 9], tf.int64), [1, 1])).tolist() == [0, 9]
    with pytest.raises(TypeError, match="complex64"):
        tf.segment_max(tf.constant([1j], tf.complex64), [0])


def test_sorted_segment_static_shape_errors():
    with pytest.raises(ValueError, match=r"Shape must be rank 1 but is rank 2 for 'SegmentSum(_\d+)?'"):
        tf.segment_sum(DATA, [[0, 0, 0, 0, 0, 0]])
    with pytest.raises(TypeError, match="segment_ids"):
        tf.segment_sum(DATA, np.zeros(6, np.float32))


def test_sorted_segment_length_mismatch_is_a_run_time_error():
    y = tf.segment_sum(DATA, [0, 1])  # TF 1.x's shape function leaves it to the kernel
    assert y.shape.as_list() == [None, 2]
    with pytest.raises(tf.errors.InvalidArgumentError, match="segment_ids should be the same size as dimension 0"):
        run(y)


def test_negative_last_segment_id_is_reported_before_the_order():
    data = np.ones((4, 2), np.float32)
    for y in (tf.segment_sum(data, [0, 0, 0, -1]), tf.segment_max(data, [0, 0, 0, -2]),
              tf.sparse_segment_sum(data, [3, 2, 0, 1], [0, 0, 0, -1]),
              tf.sparse_segment_mean(data, [3, 2, 0, 1], [0, 0, 0, -1], num_segments=0)):
        with pytest.raises(tf.errors.InvalidArgumentError, match="segment ids must be >= 0"):
            run(y)
    with pytest.raises(tf.errors.InvalidArgumentError, match="segment ids are not increasing"):
        run(tf.segment_sum(data, [0, 0, -1, 1]))


def test_sorted_segment_run_time_errors():
    ids = tf.placeholder(tf.int32)
    y = tf.segment_sum(DATA, ids)
    cases = [([0, 0, 2, 1, 3, 3], "segment ids are not increasing"),
             ([-1, 0, 0, 1, 1, 1], r"Segment id -1 out of range \[0, 2\), possibly because 'segment_ids' input is "
                                   r"not sorted."),
             ([-3, -3, -3, -3, -2, -2], "segment ids must be >= 0"),
             ([0, 0, 0], "segment_ids should be the same size as dimension 0 of input."),
             ([[0, 0, 0, 0, 0, 0]], "segment_ids should be a vector.")]
    for value, message in cases:
        with pytest.raises(tf.errors.InvalidArgumentError, match=message) as info:
            run(y, {ids: value})
        assert info.value.op is y.op


def test_sorted_segment_empty_input():
    y = tf.segment_prod(np.zeros((0, 3)), np.zeros(0, np.int64))
    assert run(y).shape == (0, 3)


# --- unsorted segment ops -------------------------------------------------------------------------------------------
def test_unsorted_max_min_prod_with_empty_and_dropped_segments():
    ids = np.array([2, 0, -1, 2, 0, 2])
    for kind, empty in (("max", np.finfo(np.float32).min), ("min", np.finfo(np.float32).max), ("prod", 1.0)):
        y = getattr(tf, f"unsorted_segment_{kind}")(DATA.astype(np.float32), ids, 4)
        assert y.op.type == f"UnsortedSegment{kind.capitalize()}" and y.shape.as_list() == [4, 2]
        np.testing.assert_allclose(run(y), reference(kind, DATA, ids, 4, empty).astype(np.float32), rtol=1e-6)
    ints = run(tf.unsorted_segment_max(tf.constant([1, 5, 3], tf.int32), [1, 0, 1], num_segments=3))
    assert ints.tolist() == [5, 3, np.iinfo(np.int32).min]
    complex_prod = run(tf.unsorted_segment_prod(tf.constant([1j, 2.0, 3j], tf.complex64), [0, 1, 0], 3))
    np.testing.assert_array_equal(complex_prod, [-3, 2, 1])


def test_unsorted_segments_with_matrix_ids():
    data = np.arange(24.0).reshape(2, 3, 4)
    ids = np.array([[0, 1, 0], [2, 1, 1]])
    y = tf.unsorted_segment_max(data, ids, 3)
    assert y.shape.as_list() == [3, 4]
    np.testing.assert_array_equal(run(y), reference("max", data, ids, 3, 0.0))


def test_unsorted_mean_and_sqrt_n_are_compositions():
    ids = np.array([1, 0, 1, 1, 3, -1])
    mean, sqrt_n = tf.unsorted_segment_mean(DATA, ids, 4), tf.unsorted_segment_sqrt_n(DATA, ids, 4)
    assert mean.op.name.startswith("UnsortedSegmentMean/") and sqrt_n.op.name.startswith("UnsortedSegmentSqrtN/")
    np.testing.assert_allclose(run(mean), reference("mean", DATA, ids, 4, 0.0))
    np.testing.assert_allclose(run(sqrt_n), reference("sqrt_n", DATA, ids, 4, 0.0))
    assert mean.shape.as_list() == sqrt_n.shape.as_list() == [4, 2]
    unknown_num = tf.unsorted_segment_mean(DATA, ids, tf.placeholder(tf.int32, []))
    assert unknown_num.shape.as_list() == [None, 2]
    matrix_ids = tf.unsorted_segment_sqrt_n(np.ones((2, 3, 4)), [[0, 1, 0], [2, 1, 1]], 3)
    assert matrix_ids.shape.as_list() == [3, 4]


def test_unsorted_segment_errors():
    ids = tf.placeholder(tf.int32)
    y = tf.unsorted_segment_prod(DATA, ids, 3)
    with pytest.raises(tf.errors.InvalidArgumentError, match=r"segment_ids\[4\] = 3 is out of range \[0, 3\)"):
        run(y, {ids: [0, 1, 2, 0, 3, 1]})
    with pytest.raises(tf.errors.InvalidArgumentError, match=r"data.shape = \[6,2\] does not start with "
                                                             r"segment_ids.shape = \[4\]"):
        run(y, {ids: [0, 1, 2, 0]})
    with pytest.raises(ValueError, match="Shape must be rank 0 but is rank 1"):
        tf.unsorted_segment_max(DATA, [0] * 6, [3])


# --- sparse segment ops ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize("kind", ["sum", "mean", "sqrt_n"])
def test_sparse_segments(kind):
    indices, ids = np.array([0, 5, 2, 2, 4]), np.array([0, 0, 1, 1, 3])
    fn = getattr(tf, f"sparse_segment_{kind}")
    y = fn(DATA, indices, ids)
    assert y.op.type == "SparseSegment" + {"sum": "Sum", "mean": "Mean", "sqrt_n": "SqrtN"}[kind]
    assert y.shape.as_list() == [None, 2]
    np.testing.assert_allclose(run(y), reference(kind, DATA[indices], ids, 4, 0.0))
    with_num = fn(DATA, indices, ids, num_segments=6)
    assert with_num.op.type == y.op.type + "WithNumSegments" and with_num.shape.as_list() == [6, 2]
    np.testing.assert_allclose(run(with_num), reference(kind, DATA[indices], ids, 6, 0.0))


def test_sparse_segment_errors():
    indices, ids = tf.placeholder(tf.int32), tf.placeholder(tf.int32)
    y = tf.sparse_segment_sum(DATA, indices, ids)
    cases = [(([0, 1, 9], [0, 1, 1]), r"Bad: indices\[2\] == 9 out of range \[0, 6\)"),
             (([0, 1, 2], [0, 2, 1]), "segment ids are not increasing"),
             (([0, 1], [0, 1, 1]), "segment_ids and indices should have same size."),
             (([[0, 1]], [0, 1]), "indices should be a vector.")]
    for (i, s), message in cases:
        with pytest.raises(tf.errors.InvalidArgumentError, match=message):
            run(y, {indices: i, ids: s})
    with pytest.raises(tf.errors.InvalidArgumentError, match="segment ids must be < num_segments"):
        run(tf.sparse_segment_mean(DATA, [0, 1], [0, 3], num_segments=2))
    with pytest.raises(ValueError, match=r"Dimension 0 in both shapes must be equal, but are 2 and 3\. Shapes are "
                                         r"\[2\] and \[3\]\. for 'SparseSegmentSum(_\d+)?'"):
        tf.sparse_segment_sum(DATA, [0, 1], [0, 0, 1])


def test_sparse_segment_empty_lists_are_int32():
    data = np.zeros((0, 4), np.float32)
    for y in (tf.sparse.segment_sum(data, [], []), tf.sparse.segment_mean(data, [], [], num_segments=5)):
        assert [t.dtype for t in y.op.inputs[1:3]] == [tf.int32, tf.int32]
    y = tf.sparse.segment_sum(data, [], [], num_segments=5)
    assert y.shape.as_list() == [5, 4]
    np.testing.assert_array_equal(run(y), np.zeros((5, 4)))


def test_negative_num_segments():
    with pytest.raises(ValueError, match="Cannot specify a negative value for num_segments for "
                                         "'SparseSegmentSumWithNumSegments'"):
        tf.sparse_segment_sum(DATA, [0, 1], [0, 1], num_segments=-2)
    with pytest.raises(ValueError, match="Dimension size, given by scalar input 2, must be non-negative but is -2 "
                                         "for 'UnsortedSegmentMax'"):
        tf.unsorted_segment_max(DATA, [0] * 6, -2)
    num = tf.placeholder(tf.int32, [])
    for unsorted in (tf.unsorted_segment_prod, tf.unsorted_segment_sum):
        with pytest.raises(tf.errors.InvalidArgumentError, match="Input num_segments == -2 must not be negative."):
            run(unsorted(DATA, [0] * 6, num), {num: -2})
    with pytest.raises(tf.errors.InvalidArgumentError, match="segment ids must be >= 0"):
        run(tf.sparse_segment_sqrt_n(DATA, [0, 1], [0, 1], num_segments=num), {num: -2})


# --- gradients ------------------------------------------------------------------------------------------------------
X0 = np.array([[0.5, -1.2], [1.7, 2.1], [-0.3, 0.9], [2.5, -2.2], [1.1, 0.4], [-1.9, 1.4]])


@pytest.mark.parametrize("kind", ["sum", "mean", "max", "min", "prod"])
def test_sorted_segment_gradients(kind):
    x = tf.placeholder(tf.float64, [6, 2])
    y = getattr(tf, f"segment_{kind}")(x, [0, 0, 1, 3, 3, 3])
    assert gradient_error(x, [6, 2], y, [4, 2], x_init_value=X0) < 1e-8


@pytest.mark.parametrize("kind", ["sum", "max", "min", "prod", "mean", "sqrt_n"])
def test_unsorted_segment_gradients(kind):
    x = tf.placeholder(tf.float64, [6, 2])
    y = getattr(tf, f"unsorted_segment_{kind}")(x, [3, 0, -1, 3, 0, 3], 4)
    assert gradient_error(x, [6, 2], y, [4, 2], x_init_value=X0) < 1e-8


@pytest.mark.parametrize("kind", ["sum", "mean", "sqrt_n"])
@pytest.mark.parametrize("num_segments", [None, 5])
def test_sparse_segment_gradients(kind, num_segments):
    x = tf.placeholder(tf.float64, [6, 2])
    y = getattr(tf, f"sparse_segment_{kind}")(x, [0, 3, 3, 5, 1], [0, 0, 2, 2, 2], num_segments=num_segments)
    rows = 3 if num_segments is None else num_segments
    assert gradient_error(x, [6, 2], y, [rows, 2], x_init_value=X0) < 1e-8


def test_max_gradient_is_shared_between_ties_and_prod_gradient_with_zeros():
    x = tf.constant([1.0, 3.0, 3.0, 2.0])
    g, = tf.gradients(tf.segment_max(x, [0, 0, 0, 1]), x)
    np.testing.assert_array_equal(run(g), [0, 0.5, 0.5, 1])
    z = tf.constant([2.0, 0.0, 5.0, 0.0, 0.0, 4.0])
    gp, = tf.gradients(tf.unsorted_segment_prod(z, [0, 0, 0, 1, 1, 2], 3), z)
    np.testing.assert_array_equal(run(gp), [0, 10, 0, 0, 0, 1])  # one zero: its partner product; two: nothing


def test_unsorted_segment_sum_gradient_drops_negative_ids():
    x = tf.constant([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]])
    g, = tf.gradients(tf.unsorted_segment_sum(x, [1, -1, 0], 2), x, grad_ys=tf.constant([[1.0, 2.0], [3.0, 4.0]]))
    np.testing.assert_array_equal(run(g), [[3, 4], [0, 0], [1, 2]])


@pytest.mark.filterwarnings("ignore:Converting sparse IndexedSlices")  # TF warns too: the dense shape is not static
def test_segment_gradient_of_an_indexed_slices():
    x = tf.constant([1.0, 2.0, 3.0])
    g, = tf.gradients(tf.reduce_sum(tf.gather(tf.segment_sum(x, [0, 0, 1]), [1, 1])), x)
    np.testing.assert_array_equal(run(g), [0, 0, 2])
