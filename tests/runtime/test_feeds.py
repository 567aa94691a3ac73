"""Tests for adplace/runtime/feeds.py: what Session.run accepts as a fed value, and TF's error for what it rejects.

Every rejection is TF's exception class with a message under 1 KB that names the fed tensor, raised before the step
runs (nothing changes), and NumPy's silent casts that lose data (None to NaN, complex to real) are refused.
"""
import warnings

import numpy as np
import pytest

import adplace as tf
from adplace.runtime.feeds import describe, feed_converter


def _feed_error(tensor, value, error=Exception):
    """Run identity(tensor) fed `value`; return the error, checking it names the tensor and stays under 1 KB."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a NumPy ComplexWarning/DeprecationWarning must not stand in for the error
        with pytest.raises(error) as info:
            tf.Session().run(tf.identity(tensor), {tensor: value})
    message = str(info.value)
    assert f"'{tensor.name}'" in message or f'"{tensor.name}"' in message
    assert len(message) < 1024
    return info.value


# --- complex values into real tensors -----------------------------------------------------------------------------

@pytest.mark.parametrize("value", [1 + 2j, [1.0, 2 + 1j], np.complex64(1 + 1j)])
def test_complex_scalar_or_list_into_a_float_tensor_is_a_type_error(value):
    x = tf.placeholder(tf.float32, None, name="x")
    error = _feed_error(x, value, TypeError)
    assert "complex" in str(error) and "float32" in str(error)


@pytest.mark.parametrize("dtype", [tf.float32, tf.float64, tf.int32, tf.bool])
def test_complex_array_into_a_real_tensor_is_a_type_error_not_a_dropped_imaginary_part(dtype):
    x = tf.placeholder(dtype, [None], name="x")
    error = _feed_error(x, np.array([1 + 2j, 3 - 1j]), TypeError)
    assert "imaginary part" in str(error) and "np.real(value)" in str(error)


def test_a_huge_complex_feed_is_described_not_printed():
    x = tf.placeholder(tf.float32, [None], name="x")
    error = _feed_error(x, np.zeros(2_000_000, dtype=np.complex128), TypeError)
    assert "array of shape (2000000,) and dtype complex128" in str(error)


def test_complex_values_feed_complex_tensors():
    c = tf.placeholder(tf.complex64, [2], name="c")
    fed = tf.Session().run(c, {c: np.array([1 + 2j, 3 - 1j])})
    assert fed.dtype == np.complex64 and fed.tolist() == [1 + 2j, 3 - 1j]
    assert tf.Session().run(c, {c: [1, 2.5]}).tolist() == [1 + 0j, 2.5 + 0j]


# --- None ---------------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", [tf.float32, tf.int32, tf.bool, tf.string])
def test_none_as_a_feed_value_is_a_type_error(dtype):
    x = tf.placeholder(dtype, None, name="x")
    error = _feed_error(x, None, TypeError)  # TF 1.x would feed NaN to float32 and False to bool
    assert "Cannot feed None for Tensor 'x:0'" in str(error)


# --- Python ints that do not fit -------------------------------------------------------------------------------

@pytest.mark.parametrize("value", [2**31, -2**31 - 1, [1, 2**40], 10**5000], ids=["max+1", "min-1", "list", "huge"])
def test_python_ints_out_of_int32_range_are_a_type_error(value):
    i = tf.placeholder(tf.int32, None, name="i")
    error = _feed_error(i, value, TypeError)
    assert "is not compatible with Tensor type <class 'numpy.int32'> of Tensor 'i:0' (int32)" in str(error) and "int64" in str(error)


def test_int32_range_limits_are_accepted():
    i = tf.placeholder(tf.int32, [2], name="i")
    assert tf.Session().run(i, {i: [2**31 - 1, -2**31]}).tolist() == [2**31 - 1, -2**31]
    assert tf.Session().run(tf.identity(i[0]), {i: np.array([7, 8], dtype=np.int64)}) == 7


def test_a_python_int_that_does_not_fit_a_bool_or_float_tensor_is_a_type_error():
    b = tf.placeholder(tf.bool, None, name="b")
    assert "Feed True or False" in str(_feed_error(b, 5, TypeError))
    assert tf.Session().run(b, {b: 1}) is np.True_
    f = tf.placeholder(tf.float32, None, name="f")
    assert "bits" in str(_feed_error(f, 10**400, TypeError))  # would be inf


def test_a_huge_list_with_an_out_of_range_int_is_described_by_its_length():
    i = tf.placeholder(tf.int32, [None], name="i")
    error = _feed_error(i, [1] * 2_000_000 + [2**40], TypeError)
    assert "list of 2000001 elements" in str(error)


# --- strings ------------------------------------------------------------------------------------------------------

def test_an_int_into_a_string_tensor_is_a_type_error():
    s = tf.placeholder(tf.string, None, name="s")
    assert "with type <class 'int'> is not compatible with Tensor type <class 'object'> of Tensor 's:0' (string)" in \
        str(_feed_error(s, 5, TypeError))


@pytest.mark.parametrize("value, where", [([b"a", 3], "element 1 of"), (1.5, "value 1.5"),
                                          ([["a"], [None]], "element 1 of")])
def test_non_string_elements_into_a_string_tensor_are_a_type_error(value, where):
    s = tf.placeholder(tf.string, None, name="s")
    error = _feed_error(s, value, TypeError)  # TF: InternalError "Unsupported object type" from its C conversion
    assert where in str(error) and "is not bytes or str" in str(error)


def test_strings_feed_string_tensors_as_bytes():
    s = tf.placeholder(tf.string, [None], name="s")
    fed = tf.Session().run(s, {s: ["h\u00e9", b"x", np.str_("y")]})
    assert fed.tolist() == ["h\u00e9".encode(), b"x", b"y"]
    assert tf.Session().run(s, {s: np.array(["a", "b"])}).tolist() == [b"a", b"b"]


def test_a_string_into_a_float_tensor_is_a_value_error():
    x = tf.placeholder(tf.float32, None, name="x")
    error = _feed_error(x, "abc", ValueError)
    assert "could not convert string to float: 'abc'" in str(error)
    error = _feed_error(x, ["1.5", "y" * 100_000], ValueError)  # NumPy's message quotes the string: clipped
    assert "..." in str(error)
    assert tf.Session().run(x, {x: "1.5"}) == np.float32(1.5)  # as TF: np.asarray parses numeric strings


# --- shapes -------------------------------------------------------------------------------------------------------

def test_a_wrong_shape_is_a_value_error_naming_both_shapes():
    x = tf.placeholder(tf.float32, [None, 2], name="x")
    error = _feed_error(x, np.ones(2_000_000, dtype=np.float32), ValueError)
    assert str(error) == "Cannot feed value of shape (2000000,) for Tensor 'x:0', which has shape '(?, 2)'"
    error = _feed_error(x, [[1.0] * 2_000_000], ValueError)
    assert "(1, 2000000)" in str(error)
    error = _feed_error(x, np.ones((3, 3)), ValueError)
    assert "shape (3, 3)" in str(error)


def test_a_ragged_list_is_a_value_error():
    x = tf.placeholder(tf.float32, None, name="x")
    assert "inhomogeneous" in str(_feed_error(x, [[1.0], [2.0, 3.0]], ValueError))


# --- graph elements as values -------------------------------------------------------------------------------------

def test_a_tensor_or_variable_as_a_feed_value_is_a_type_error():
    x = tf.placeholder(tf.float32, [], name="x")
    error = _feed_error(x, tf.constant(1.0, name="one"), TypeError)
    assert "The value of a feed cannot be a tf.Tensor object" in str(error) and "one:0" in str(error)
    v = tf.Variable(1.0, name="v")
    assert "cannot be a tf.Tensor" in str(_feed_error(x, v, TypeError))


# --- nothing changes ----------------------------------------------------------------------------------------------

def test_a_rejected_feed_changes_nothing():
    v = tf.Variable([1.0, 2.0], name="v")
    x = tf.placeholder(tf.float32, [2], name="x")
    step = tf.assign_add(v, x)
    sess = tf.Session()
    sess.run(v.initializer)
    for bad in (None, np.array([1j, 2j]), [1.0, 2.0, 3.0], "ab"):
        with pytest.raises((TypeError, ValueError)):
            sess.run(step, {x: bad})
    np.testing.assert_array_equal(sess.run(v), [1.0, 2.0])
    feed = np.array([1.0, 1.0])
    sess.run(step, {x: feed})
    np.testing.assert_array_equal(sess.run(v), [2.0, 3.0])
    assert feed.dtype == np.float64 and feed.tolist() == [1.0, 1.0]


def test_make_callable_rejects_the_same_values():
    x = tf.placeholder(tf.int32, [], name="x")
    run = tf.Session().make_callable(x + 1, [x])
    assert run(1) == 2
    with pytest.raises(TypeError, match="not compatible with Tensor type .* of Tensor 'x:0'"):
        run(2**33)


# --- the converter ------------------------------------------------------------------------------------------------

def test_the_ndarray_fast_path_copies_and_casts():
    x = tf.placeholder(tf.float32, [None, 2], name="x")
    convert = feed_converter(x)
    same = np.ones((3, 2), dtype=np.float32)
    out = convert(same)
    assert out is not same and not np.shares_memory(out, same) and out.dtype == np.float32
    strided = np.arange(12.0).reshape(3, 4)[:, ::2]
    np.testing.assert_array_equal(convert(strided), strided.astype(np.float32))
    assert convert(strided).dtype == np.float32


def test_describe_is_short_for_big_values():
    assert describe(np.zeros((1000, 2000))) == "array of shape (1000, 2000) and dtype float64"
    assert describe(list(range(10))) == "list of 10 elements"
    assert describe(10**10000) == "int of 33220 bits"
    assert len(describe([[list(range(1000))]])) < 100
    assert describe([1, 2]) == "[1, 2]"
