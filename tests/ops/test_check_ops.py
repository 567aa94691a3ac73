"""Tests for adplace.ops.check_ops and the Assert/CheckNumerics kernels: TF1's messages at run time, the static
checks taken while the graph is built, and a failed assertion leaving the step's variable writes undone."""

import numpy as np
import pytest

import adplace as tf
from adplace.kernels.checks import summarize_value

IAE = tf.errors.InvalidArgumentError


def run(fetches, feed_dict=None):
    with tf.Session() as sess:
        return sess.run(fetches, feed_dict)


# --- Assert ---------------------------------------------------------------------------------------------------------
def test_assert_passes_and_fails_with_tfs_message():
    p = tf.placeholder(tf.float32, [None])
    check = tf.Assert(tf.reduce_all(p > 0), ["p must be positive:", p], name="positive")
    assert check.type == "Assert" and check.name == "positive/Assert" and check.outputs == []
    assert run(check, {p: [1.0, 2.0]}) is None
    with pytest.raises(IAE, match=r"^assertion failed: \[p must be positive:\] \[1 -2 3\.\.\.\]\n.*positive/Assert"):
        run(check, {p: [1.0, -2.0, 3.0, 4.0]})


def test_assert_summarize_and_condition_checks():
    x = tf.constant(np.arange(6, dtype=np.int32).reshape(2, 3))
    with pytest.raises(IAE, match=r"assertion failed: \[\[0 1 2\]\[3 4 5\]\]"):
        run(tf.Assert(False, [x], summarize=-1))
    with pytest.raises(IAE, match=r"assertion failed: \[\[0 1\.\.\.\]\.\.\.\]"):
        run(tf.Assert(False, [x], summarize=2))
    with pytest.raises(IAE, match=r"In\[0\] should be a scalar: \[2\]"):
        run(tf.Assert(tf.constant([True, False]), [x]))
    with pytest.raises(TypeError, match="Input 'condition' of 'Assert' Op has type float32 that does not match "
                                        "expected type of bool"):
        tf.Assert(tf.constant(1.0), [x])


@pytest.mark.parametrize("value, summarize, text", [
    (np.array([1, 2, 3, 4]), 3, "1 2 3..."),
    (np.array([[1.0, 2.0], [3.0, 4.0]]), 3, "[1 2][3...]..."),
    (np.float32(0.1), 3, "0.1"),
    (np.float32(1.0 / 3.0), 3, "0.333333343"),
    (np.array([np.nan, np.inf, -np.inf]), 3, "nan inf -inf"),
    (np.array([True, False]), 3, "1 0"),
    (np.array([b"a\nb", b"c"], dtype=object), 3, "a\\nb c"),
    (np.zeros([0, 3]), 3, ""),
    (np.array(7, dtype=np.int64), 3, "7"),
    (np.array([1 + 2j]), 3, "?"),
])
def test_summarize_value_matches_tf1_text(value, summarize, text):
    assert summarize_value(value, summarize) == text


def test_failed_assert_in_a_step_leaves_variables_unchanged():
    v = tf.Variable([1.0, 2.0], name="v")
    new = tf.placeholder(tf.float32, [2])
    check = tf.assert_positive(new)
    with tf.control_dependencies([check]):
        update = tf.assign(v, new)
    with tf.Session() as sess:
        sess.run(v.initializer)
        sess.run(update, {new: [3.0, 4.0]})
        with pytest.raises(IAE, match="Condition x > 0 did not hold element-wise"):
            sess.run(update, {new: [5.0, -1.0]})
        np.testing.assert_array_equal(sess.run(v), [3.0, 4.0])


def test_assert_before_an_assign_in_the_same_step_rolls_the_assign_back():
    v = tf.Variable(0.0, name="counter")
    bump = tf.assign_add(v, 1.0)
    with tf.control_dependencies([bump]):
        check = tf.Assert(tf.less(tf.identity(v), 1.5), [v])
    with tf.Session() as sess:
        sess.run(v.initializer)
        sess.run(check)  # 1.0 < 1.5
        with pytest.raises(IAE, match="assertion failed"):
            sess.run(check)  # the bump to 2.0 is undone
        assert sess.run(v) == 1.0


# --- binary and sign assertions ----------------------------------------------------------------------------------------
@pytest.mark.parametrize("fn, sym, good, bad", [
    (tf.assert_equal, "==", [1, 2], [1, 3]),
    (tf.assert_none_equal, "!=", [3, 4], [1, 0]),
    (tf.assert_less, "<", [2, 3], [0, 3]),
    (tf.assert_less_equal, "<=", [1, 3], [0, 3]),
    (tf.assert_greater, ">", [0, 1], [1, 1]),
    (tf.assert_greater_equal, ">=", [1, 2], [3, 2]),
])
def test_binary_assertions(fn, sym, good, bad):
    x = tf.constant([1, 2])
    p = tf.placeholder(tf.int32, [2], name="y_in")
    check = fn(x, p, message="msg")
    assert check.type == "Assert" and check.name.startswith(fn.__name__ + "/")
    run(check, {p: good})
    with pytest.raises(IAE, match=rf"assertion failed: \[msg\] \[Condition x {sym} y did not hold element-wise:\] "
                                  rf"\[x \(Const(_\d+)?:0\) = \] \[1 2\] \[y \(y_in:0\) = \]"):
        run(check, {p: bad})


def test_binary_assertion_on_constants_is_decided_when_built():
    with pytest.raises(IAE, match="^\nCondition x == y did not hold element-wise:\nx \\(assert_equal/x:0\\) = \n"
                                  "\\[1 2\\]\ny \\(assert_equal/y:0\\) = \n\\[1 3\\]$"):
        tf.assert_equal([1, 2], [1, 3])
    with pytest.raises(IAE, match="^hi\nCondition x < y"):
        tf.assert_less(tf.constant(2.0), tf.constant(1.0), message="hi")
    assert tf.assert_equal([1, 2], [1, 2]).type == "Assert"  # passing constants still give the op


@pytest.mark.parametrize("fn, sym, good, bad", [
    (tf.assert_positive, "> 0", [1.0, 2.0], [1.0, 0.0]),
    (tf.assert_negative, "< 0", [-1.0, -2.0], [-1.0, 0.0]),
    (tf.assert_non_negative, ">= 0", [0.0, 2.0], [-1.0, 0.0]),
    (tf.assert_non_positive, "<= 0", [0.0, -2.0], [1.0, 0.0]),
])
def test_sign_assertions(fn, sym, good, bad):
    p = tf.placeholder(tf.float32, [2], name="values")
    check = fn(p)
    run(check, {p: good})
    with pytest.raises(IAE, match=rf"\[\] \[Condition x {sym} did not hold element-wise:\] \[x \(values:0\) = \]"):
        run(check, {p: bad})


def test_assert_near():
    p = tf.placeholder(tf.float64, [2])
    check = tf.assert_near(p, np.array([1.0, 2.0]), rtol=1e-3, atol=0.0)
    run(check, {p: [1.0005, 2.001]})
    with pytest.raises(IAE, match="x and y not equal to tolerance"):
        run(check, {p: [1.01, 2.0]})


# --- ranks, types, scalars ------------------------------------------------------------------------------------------------
def test_rank_assertions_decided_statically():
    x = tf.zeros([2, 3])
    assert tf.assert_rank(x, 2).name == "assert_rank/static_checks_determined_all_ok"
    assert tf.assert_rank(x, 2).type == "NoOp"
    assert tf.assert_rank_at_least(x, 1).type == "NoOp"
    assert tf.assert_rank_in(x, [1, 2]).type == "NoOp"
    with pytest.raises(ValueError, match=r"^m\.  Tensor zeros:0 must have rank 3\.  Received rank 2, shape \(2, 3\)$"):
        tf.assert_rank(x, 3, message="m")
    with pytest.raises(ValueError, match="must have rank at least 3.  Received rank 2"):
        tf.assert_rank_at_least(x, 3)
    with pytest.raises(ValueError, match=r"must have rank in \(0, 1\).  Received rank 2"):
        tf.assert_rank_in(x, [0, 1])
    with pytest.raises(ValueError, match="Rank must be a scalar."):
        tf.assert_rank(x, [2])
    with pytest.raises(TypeError, match="must be of type"):
        tf.assert_rank(x, tf.constant(2, tf.int64))


def test_rank_assertion_at_run_time():
    p = tf.placeholder(tf.float32, name="unknown_rank")
    check = tf.assert_rank(p, 2)
    assert check.type == "Assert"
    run(check, {p: np.zeros([1, 2])})
    with pytest.raises(IAE, match=r"assertion failed: \[\] \[Tensor unknown_rank:0 must have rank\] \[2\] "
                                  r"\[Received shape: \] \[3\]"):
        run(check, {p: np.zeros([3])})
    with pytest.raises(IAE, match="must have rank at least"):
        run(tf.assert_rank_at_least(p, 3), {p: np.zeros([3])})


def test_type_integer_and_scalar_assertions():
    x = tf.constant([1.0], name="floats")
    assert tf.assert_type(x, tf.float32).name == "assert_type/statically_determined_correct_type"
    with pytest.raises(TypeError, match="floats:0 must be of type"):
        tf.assert_type(x, tf.int32)
    assert tf.assert_integer(tf.constant([1])).type == "NoOp"
    with pytest.raises(TypeError, match='Expected "x" to be integer type.  Found: floats:0 of dtype'):
        tf.assert_integer(x)
    s = tf.assert_scalar(3.0)
    assert s.shape.ndims == 0 and run(s) == 3.0
    with pytest.raises(ValueError, match=r"Expected scalar shape for floats:0, saw shape: \(1,\)."):
        tf.assert_scalar(x)


def test_numeric_and_monotonic_predicates():
    assert tf.is_numeric_tensor(tf.constant([1.0])) and not tf.is_numeric_tensor(tf.constant(["a"]))
    assert not tf.is_numeric_tensor(np.array([1.0]))
    got = run([tf.is_non_decreasing([1, 1, 3]), tf.is_non_decreasing([3, 1]), tf.is_strictly_increasing([1, 2, 5]),
               tf.is_strictly_increasing([1, 1]), tf.is_strictly_increasing([4]), tf.is_non_decreasing([[1, 2], [2, 3]])])
    assert [bool(v) for v in got] == [True, False, True, False, True, True]
    with pytest.raises(TypeError, match="Expected x to be numeric"):
        tf.is_non_decreasing(["a", "b"])


# --- CheckNumerics ----------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("values, status", [([1.0, np.nan], "NaN"), ([np.inf, 1.0], "Inf"),
                                            ([np.nan, -np.inf], "Inf and NaN")])
def test_check_numerics_messages(values, status):
    p = tf.placeholder(tf.float32, [2])
    y = tf.check_numerics(p, "loss")
    assert y.op.type == "CheckNumerics" and y.shape.as_list() == [2]
    np.testing.assert_array_equal(run(y, {p: [1.0, 2.0]}), [1.0, 2.0])
    with pytest.raises(IAE, match=rf"^loss : Tensor had {status} values\n.*CheckNumerics"):
        run(y, {p: values})


def test_check_numerics_gradient_passes_through_and_checks_the_gradient():
    p = tf.placeholder(tf.float64, [3])
    y = tf.check_numerics(p, "root")
    g, = tf.gradients(tf.reduce_sum(tf.sqrt(y)), p)  # the gradient reaching y is 0.5 / sqrt(p): inf at 0
    np.testing.assert_allclose(run(g, {p: [1.0, 4.0, 9.0]}), 0.5 / np.sqrt([1.0, 4.0, 9.0]))
    with pytest.raises(IAE, match="Not a number \\(NaN\\) or infinity \\(Inf\\) values detected in gradient. root"):
        run(g, {p: [0.0, 4.0, 9.0]})
    with pytest.raises(TypeError, match="DataType int32 not in list of allowed values"):
        tf.check_numerics(tf.constant([1]), "ints")


def test_verify_tensor_all_finite_and_add_check_numerics_ops():
    p = tf.placeholder(tf.float32, [2])
    y = tf.verify_tensor_all_finite(p * 2.0, "doubled")
    np.testing.assert_array_equal(run(y, {p: [1.0, 2.0]}), [2.0, 4.0])
    with pytest.raises(IAE, match="doubled : Tensor had Inf values"):
        run(y, {p: [np.inf, 2.0]})
    with tf.Graph().as_default():
        q = tf.placeholder(tf.float32, [2], name="q")
        tf.log(q, name="logq")
        checks = tf.add_check_numerics_ops()
        with tf.Session() as sess:
            sess.run(checks, {q: [1.0, 2.0]})
            with pytest.raises(IAE, match="logq:0 : Tensor had NaN values"):
                sess.run(checks, {q: [-1.0, 2.0]})


def test_debugging_namespace():
    assert tf.debugging.assert_equal is tf.assert_equal and tf.debugging.Assert is tf.Assert
    assert tf.debugging.check_numerics is tf.check_numerics
    assert tf.debugging.assert_all_finite is tf.verify_tensor_all_finite
    for name in tf.debugging.__all__:
        assert callable(getattr(tf.debugging, name)), name
