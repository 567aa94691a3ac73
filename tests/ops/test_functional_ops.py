"""Tests for adplace/ops/functional_ops.py: tf.map_fn, tf.scan, tf.foldl and tf.foldr (values against NumPy, nested
structures, the dtype argument, reverse and initializer forms), their gradients through the while loop and the
TensorArrays, TF's errors, and a map_fn GraphDef run by real TensorFlow (a subprocess; skipped without it)."""
import json
import pathlib
import sys
from collections import namedtuple

import numpy as np
import pytest

import adplace as tf
from graph_run import gradient_error, run

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))
from tf_peer import needs_tf, run_peer  # noqa: E402

PEER = pathlib.Path(__file__).with_name("tf_tensor_array_peer.py")  # imports graph.pb, runs fetches.json's tensors
Pair = namedtuple("Pair", "left right")


# --- map_fn ---------------------------------------------------------------------------------------------------------
def test_map_fn_applies_fn_to_each_element_and_builds_tf_names():
    x = tf.constant([1.0, 2.0, 3.0])
    squares = tf.map_fn(lambda v: v * v, x)
    assert squares.name == "map/TensorArrayStack/TensorArrayGatherV3:0"
    assert squares.shape.as_list() == [3] and squares.dtype == tf.float32
    names = {op.name for op in tf.get_default_graph().get_operations()}
    assert {"map/TensorArray", "map/TensorArray_1", "map/while/LoopCond", "map/while/TensorArrayReadV3",
            "map/while/Exit_2", "map/TensorArrayUnstack/TensorArrayScatter/TensorArrayScatterV3"} <= names
    np.testing.assert_allclose(run(squares), [1.0, 4.0, 9.0])


def test_map_fn_over_the_rows_of_a_matrix_and_a_name():
    m = np.arange(12.0).reshape(4, 3)
    rows = tf.map_fn(lambda r: tf.reduce_sum(r) * r, tf.constant(m), name="rows")
    assert rows.name.startswith("rows/") and rows.shape.as_list() == [4, 3]
    np.testing.assert_allclose(run(rows), m.sum(axis=1, keepdims=True) * m)


def test_map_fn_with_an_unknown_length_runs_any_number_of_elements():
    p = tf.placeholder(tf.float32, [None, 2])
    doubled = tf.map_fn(lambda r: r * 2.0, p)
    assert doubled.shape.as_list() == [None, 2]
    for n in (5, 1, 0):
        value = np.arange(2.0 * n, dtype=np.float32).reshape(n, 2)
        np.testing.assert_allclose(run(doubled, {p: value}), value * 2.0)


def test_map_fn_nested_elems_give_fn_the_same_nest_and_return_it_without_dtype():
    a, b, c = np.array([1.0, 2.0]), np.array([[1.0, 2.0], [3.0, 4.0]]), np.array([5, 6])
    out = tf.map_fn(lambda e: (e[0] + 1.0, [tf.reduce_sum(e[1][0]) * e[0], e[1][1] * 2]), (a, [b, c]))
    assert isinstance(out, tuple) and isinstance(out[1], list) and out[1][1].dtype == tf.int64
    first, (second, third) = run([out[0], out[1]])
    np.testing.assert_allclose(first, a + 1.0)
    np.testing.assert_allclose(second, b.sum(axis=1) * a)
    np.testing.assert_array_equal(third, c * 2)


def test_map_fn_dtype_gives_a_different_output_structure_and_type():
    x = np.array([1, 2, 3], dtype=np.int64)
    pos, neg = tf.map_fn(lambda v: (v, -v), x, dtype=(tf.int64, tf.int64))
    product = tf.map_fn(lambda e: e[0] * e[1], (x, -x), dtype=tf.int64)
    as_float = tf.map_fn(lambda v: tf.cast(v, tf.float32) / 2.0, x, dtype=tf.float32)
    named = tf.map_fn(lambda v: Pair(v, v * 10), x, dtype=Pair(tf.int64, tf.int64))
    assert as_float.dtype == tf.float32 and isinstance(named, Pair)
    values = run([pos, neg, product, as_float, named.left, named.right])
    for got, want in zip(values, [x, -x, -x * x, x / 2.0, x, x * 10]):
        np.testing.assert_allclose(got, want)


def test_map_fn_dict_elems():
    out = tf.map_fn(lambda d: {"sum": d["a"] + d["b"], "diff": d["a"] - d["b"]},
                    {"a": tf.constant([3.0, 4.0]), "b": tf.constant([1.0, 1.5])},
                    dtype={"sum": tf.float32, "diff": tf.float32})
    total, diff = run([out["sum"], out["diff"]])
    np.testing.assert_allclose(total, [4.0, 5.5])
    np.testing.assert_allclose(diff, [2.0, 2.5])


def test_map_fn_without_infer_shape_allows_differently_shaped_results():
    lengths = tf.constant([1, 3, 2])
    padded = tf.map_fn(lambda k: tf.reduce_sum(tf.range(k)), lengths, infer_shape=False)
    np.testing.assert_array_equal(run(padded), [0, 3, 1])


def test_map_fn_leaves_the_variable_scope_caching_device_as_it_was():
    seen = []

    def fn(v):
        seen.append(tf.get_variable_scope().caching_device)
        return v + 1.0

    tf.map_fn(fn, tf.constant([1.0]))
    assert callable(seen[0]) and tf.get_variable_scope().caching_device is None


# --- scan -----------------------------------------------------------------------------------------------------------
def test_scan_without_initializer_starts_from_the_first_element():
    x = np.array([1, 2, 3, 4, 5, 6])
    sums = tf.scan(lambda a, v: a + v, x)
    assert sums.name.startswith("scan/") and sums.shape.as_list() == [6]
    backwards = tf.scan(lambda a, v: a + v, x, reverse=True)
    got, back = run([sums, backwards])
    np.testing.assert_array_equal(got, np.cumsum(x))
    np.testing.assert_array_equal(back, np.cumsum(x[::-1])[::-1])


def test_scan_with_an_initializer_of_another_structure():
    x = np.array([1, 0, 0, 0, 0, 0])
    fib = tf.scan(lambda a, _: (a[1], a[0] + a[1]), x, initializer=(np.array(0), np.array(1)))
    one = tf.scan(lambda a, e: e[0] - e[1] + a, (x + 1, x), initializer=np.array(0), reverse=True)
    first, second, ones = run([fib[0], fib[1], one])
    np.testing.assert_array_equal(first, [1, 1, 2, 3, 5, 8])
    np.testing.assert_array_equal(second, [1, 2, 3, 5, 8, 13])
    np.testing.assert_array_equal(ones, [6, 5, 4, 3, 2, 1])


def test_scan_over_matrix_rows_with_a_matrix_accumulator():
    m = np.arange(1.0, 13.0).reshape(4, 3)
    outer = tf.scan(lambda acc, r: acc * 0.5 + r[:, None] * r[None, :], tf.constant(m), initializer=tf.zeros([3, 3],
                                                                                                         tf.float64))
    assert outer.shape.as_list() == [4, 3, 3]
    acc, want = np.zeros((3, 3)), []
    for r in m:
        acc = acc * 0.5 + np.outer(r, r)
        want.append(acc)
    np.testing.assert_allclose(run(outer), want)


def test_scan_reverse_with_an_initializer_and_an_unknown_length():
    p = tf.placeholder(tf.float32, [None])
    products = tf.scan(lambda a, v: a * v, p, initializer=tf.constant(1.0), reverse=True)
    value = np.array([2.0, 3.0, 4.0], dtype=np.float32)
    np.testing.assert_allclose(run(products, {p: value}), np.cumprod(value[::-1])[::-1])


# --- foldl / foldr --------------------------------------------------------------------------------------------------
def test_foldl_and_foldr_visit_the_elements_in_their_orders():
    x = tf.constant([1, 2, 3, 4])
    digits = lambda a, v: a * 10 + v  # noqa: E731
    left, right = tf.foldl(digits, x), tf.foldr(digits, x)
    left_init, right_init = tf.foldl(digits, x, initializer=9), tf.foldr(digits, x, initializer=9, name="fr")
    assert left.name.startswith("foldl/") and right.name.startswith("foldr/") and right_init.name.startswith("fr/")
    assert run([left, right, left_init, right_init]) == [1234, 4321, 91234, 94321]


def test_fold_nested_elems_and_accumulators_and_an_unknown_length():
    p = tf.placeholder(tf.float32, [None])
    q = tf.placeholder(tf.float32, [None, 2])
    total, rows = tf.foldl(lambda a, e: (a[0] + e[0], a[1] + e[1]), (p, q),
                           initializer=(tf.constant(0.0), tf.zeros([2])))
    last = tf.foldr(lambda a, e: {"x": e["x"] * 2.0 + a["x"]}, {"x": p})
    feed = {p: [1.0, 2.0, 3.0], q: [[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]]}
    got_total, got_rows, got_last = run([total, rows, last["x"]], feed)
    assert got_total == 6.0 and got_last == 3.0 + 2 * (2.0 + 1.0)
    np.testing.assert_allclose(got_rows, [9.0, 12.0])


# --- gradients ------------------------------------------------------------------------------------------------------
def test_map_fn_gradient_for_the_elems_and_a_captured_weight():
    x = tf.constant([1.0, 2.0, 3.0], tf.float64)
    w = tf.constant(2.0, tf.float64)
    y = tf.map_fn(lambda v: v * w, x)
    gx, gw = tf.gradients(tf.reduce_sum(y * y), [x, w])
    got_x, got_w = run([gx, gw])
    np.testing.assert_allclose(got_x, 2 * 2.0 * 2.0 * np.array([1.0, 2.0, 3.0]))  # d/dx sum (wx)^2 = 2w^2 x
    np.testing.assert_allclose(got_w, 2 * 2.0 * 14.0)  # d/dw = 2w sum x^2


def test_map_fn_gradient_matches_finite_differences_for_a_matrix_weight():
    x0 = np.array([[0.1, -0.3], [0.5, 0.2], [-0.4, 0.7]])
    w0 = np.array([[0.3, -0.2], [0.6, 0.1]])
    layer = lambda x, w: tf.map_fn(lambda r: tf.tanh(tf.matmul(tf.expand_dims(r, 0), w)), x)  # noqa: E731
    x = tf.placeholder(tf.float64, [3, 2])
    assert gradient_error(x, [3, 2], layer(x, tf.constant(w0)), [3, 1, 2], x_init_value=x0) < 1e-6
    w = tf.placeholder(tf.float64, [2, 2])
    assert gradient_error(w, [2, 2], layer(tf.constant(x0), w), [3, 1, 2], x_init_value=w0) < 1e-6


def test_scan_gradients_of_cumulative_sums_and_products_in_closed_form():
    x0 = np.array([1.0, 2.0, 3.0, 4.0])
    x = tf.constant(x0)
    sums = tf.scan(lambda a, v: a + v, x)
    products = tf.scan(lambda a, v: a * v, x)
    g_sums, = tf.gradients(tf.reduce_sum(sums * sums), x)
    g_products, = tf.gradients(tf.reduce_sum(products), x)
    got_sums, got_products = run([g_sums, g_products])
    c = np.cumsum(x0)
    np.testing.assert_allclose(got_sums, np.cumsum((2 * c)[::-1])[::-1])  # dx_j = sum_{k>=j} 2 c_k
    want = [sum(np.prod(x0[:k + 1]) / x0[j] for k in range(j, 4)) for j in range(4)]
    np.testing.assert_allclose(got_products, want)


@pytest.mark.parametrize("reverse", [False, True])
def test_scan_gradient_with_an_initializer_matches_finite_differences(reverse):
    x0 = np.array([0.3, -1.2, 0.8, 2.0])
    scan = lambda x, a0: tf.scan(lambda a, v: a * tf.sin(v) + v, x, initializer=a0, reverse=reverse)  # noqa: E731
    x = tf.placeholder(tf.float64, [4])
    assert gradient_error(x, [4], scan(x, tf.constant(0.7, tf.float64)), [4], x_init_value=x0) < 1e-6
    a0 = tf.placeholder(tf.float64, [])
    assert gradient_error(a0, [], scan(tf.constant(x0), a0), [4], x_init_value=np.array(0.7)) < 1e-6


def test_fold_gradients_match_finite_differences():
    x = tf.placeholder(tf.float64, [4])
    init = np.array([0.5, -1.0, 1.5, 0.25])
    left = tf.foldl(lambda a, v: a * v + tf.square(v), x)
    right = tf.foldr(lambda a, v: a * v + tf.square(v), x, initializer=tf.constant(0.3, tf.float64))
    assert gradient_error(x, [4], left, [], x_init_value=init) < 1e-6
    assert gradient_error(x, [4], right, [], x_init_value=init) < 1e-6


def test_back_prop_false_stops_the_gradient():
    x = tf.constant([1.0, 2.0])
    assert tf.gradients(tf.reduce_sum(tf.map_fn(lambda v: v * v, x, back_prop=False)), x) == [None]


# --- errors ---------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("function", [tf.map_fn, tf.scan, tf.foldl, tf.foldr])
def test_fn_must_be_callable(function):
    with pytest.raises(TypeError, match="fn must be callable"):
        function(3, tf.constant([1.0]))


@pytest.mark.parametrize("function", [lambda e: tf.map_fn(lambda v: v, e), lambda e: tf.scan(lambda a, v: a, e),
                                      lambda e: tf.foldl(lambda a, v: a, e)])
def test_scalar_elems_are_rejected_as_tf_words_it(function):
    with pytest.raises(ValueError, match=r"^elems must be a 1\+ dimensional Tensor, not a scalar$"):
        function(tf.constant(1.0))
    with pytest.raises(ValueError, match=r"^elements in elems must be 1\+ dimensional Tensors, not scalars$"):
        function((tf.constant(1.0), tf.constant([1.0])))


def test_elems_without_tensors_and_with_different_lengths():
    with pytest.raises(ValueError, match="does not contain any Tensors"):
        tf.map_fn(lambda v: v, [])
    with pytest.raises(ValueError, match="Dimensions 3 and 2 are not compatible"):
        tf.map_fn(lambda e: e[0], (tf.zeros([3]), tf.zeros([2])), dtype=tf.float32)
    with pytest.raises(ValueError, match="Dimensions 3 and 2 are not compatible"):
        tf.scan(lambda a, e: a, (tf.zeros([3]), tf.zeros([2])))


def test_fn_results_must_have_the_structure_of_dtype_or_initializer():
    x = tf.constant([1.0, 2.0])
    with pytest.raises(ValueError, match=r"same (nested structure|number of elements)"):
        tf.map_fn(lambda v: (v, v), x)
    with pytest.raises(ValueError, match=r"same (nested structure|number of elements)"):
        tf.map_fn(lambda v: v, x, dtype=(tf.float32, tf.float32))
    with pytest.raises(ValueError, match=r"same (nested structure|number of elements)"):
        tf.scan(lambda a, v: a[0], x, initializer=(0.0, 1.0))


def test_fn_results_must_keep_the_accumulator_shape():
    with pytest.raises(ValueError, match="enters the loop with shape"):
        tf.foldl(lambda a, v: tf.stack([a, v]), tf.constant([1.0, 2.0]))


def test_sparse_elems_are_refused():
    st = tf.SparseTensor([[0, 0]], [1.0], [2, 2])
    with pytest.raises(TypeError, match="To perform a map on the values of a sparse tensor"):
        tf.map_fn(lambda v: v, st)


def test_run_time_errors_name_the_tensor_array_op():
    p, q = tf.placeholder(tf.float32, [None]), tf.placeholder(tf.float32, [None])
    both = tf.map_fn(lambda e: e[0] + e[1], (p, q), dtype=tf.float32)
    with pytest.raises(tf.errors.InvalidArgumentError, match=r"Max scatter index must be < array size \(3 vs. 3\)"):
        run(both, {p: [1.0, 2.0, 3.0], q: [1.0, 2.0, 3.0, 4.0]})
    wrong = tf.map_fn(lambda v: v * 2.0, p, dtype=tf.int32)
    with pytest.raises(tf.errors.InvalidArgumentError,
                       match="TensorArray dtype is int32 but Op is trying to write dtype float"):
        run(wrong, {p: [1.0]})


# --- GraphDef in real TensorFlow ------------------------------------------------------------------------------------
def _map_program():
    """map_fn, scan and foldl with gradients: (fetches)."""
    x = tf.constant(np.arange(6.0, dtype=np.float32).reshape(3, 2) / 4.0, name="x")
    w = tf.constant([[1.0, -0.5], [0.25, 2.0]], name="w")
    rows = tf.map_fn(lambda r: tf.tanh(tf.matmul(tf.expand_dims(r, 0), w)), x)
    pair = tf.map_fn(lambda r: (tf.reduce_sum(r), tf.cast(tf.reduce_max(r) > 0.3, tf.int32)), x, dtype=(tf.float32, tf.int32))
    sums = tf.scan(lambda a, r: a * 0.5 + r, x, reverse=True)
    total = tf.foldl(lambda a, r: a + tf.reduce_prod(r), x, initializer=tf.constant(1.0))
    loss = tf.reduce_sum(rows * rows) + tf.reduce_sum(sums) + total
    gx, gw = tf.gradients(loss, [x, w])
    return [rows, pair[0], pair[1], sums, total, gx, gw]


@needs_tf
def test_map_fn_graph_def_runs_in_tensorflow_with_the_same_values(tmp_path):
    graph = tf.Graph()
    with graph.as_default():
        fetches = _map_program()
        expected = run(fetches)
    (tmp_path / "graph.pb").write_bytes(graph.as_graph_def().SerializeToString())
    (tmp_path / "fetches.json").write_text(json.dumps([t.name for t in fetches]))
    run_peer(PEER, tmp_path)
    for i, value in enumerate(expected):
        theirs = np.load(tmp_path / f"value_{i}.npy", allow_pickle=False)
        assert theirs.shape == np.shape(value) and theirs.dtype == np.asarray(value).dtype
        np.testing.assert_allclose(theirs, value, rtol=1e-5, atol=1e-6)
