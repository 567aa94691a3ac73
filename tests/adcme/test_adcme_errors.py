"""Tests for adplace/adcme/errors.py: error_parts, the (class, message, op) that ADPlace.jl's PyError shows."""
import numpy as np
import pytest

import adplace as tf
from adplace import adcme
from adplace.adcme import error_parts
from adplace.errors import InvalidArgumentError, OpError


def failure(fetch, feed_dict=None) -> BaseException:
    with tf.Session() as sess, pytest.raises(Exception) as info:
        sess.run(fetch, feed_dict)
    return info.value


def test_an_out_of_range_fed_index_names_the_gather():
    x = tf.constant(np.arange(4.0))
    i = tf.placeholder(tf.int32, [None])
    y = adcme.getindex(x, i)
    exc = failure(y, {i: [1, 9]})
    assert isinstance(exc, InvalidArgumentError)
    kind, message, op = error_parts(exc)
    assert kind == "InvalidArgumentError" and message == str(exc)
    assert op == y.op.name and y.op.type.startswith("Gather")


def test_check_numerics_names_its_op():
    x = tf.placeholder(tf.float64, [2])
    checked = tf.debugging.check_numerics(tf.log(x), "log went bad", name="LogCheck")
    exc = failure(checked, {x: [1.0, -1.0]})
    kind, message, op = error_parts(exc)
    assert kind == "InvalidArgumentError" and "log went bad" in message
    assert op == checked.op.name == "LogCheck"


def test_a_value_error_has_no_op():
    try:
        adcme.getindex(tf.zeros([2, 2], name="Z"), 5, 1)
    except ValueError as e:
        parts = error_parts(e)
    assert parts[0] == "ValueError" and parts[2] is None
    assert "index 5 is out of bounds for dimension 1 of Z" in parts[1]


def test_other_exceptions():
    assert error_parts(TypeError("bad")) == ("TypeError", "bad", None)
    assert error_parts(KeyError("k")) == ("KeyError", "'k'", None)


def test_an_op_error_without_an_op_uses_its_node_def():
    class NodeDef:
        name = "MatMul_3"

    exc = InvalidArgumentError(NodeDef(), None, "shapes do not match")
    assert error_parts(exc) == ("InvalidArgumentError", "shapes do not match", "MatMul_3")
    assert error_parts(OpError(None, None, "no node", 13)) == ("OpError", "no node", None)
