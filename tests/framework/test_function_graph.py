"""Function graphs (framework/function_graph.py): a Python function traced into a graph of its own, capturing the
tensors of enclosing graphs as placeholders, registered in the outer graph's library only when tracing succeeds."""
import numpy as np
import pytest

import adplace as tf
from adplace.framework import function_graph


def _trace(fn, specs, graph):
    return function_graph.trace("f", fn, specs, graph)[0]


def test_arguments_come_first_then_one_placeholder_per_captured_tensor():
    graph = tf.Graph()
    with graph.as_default():
        scale = tf.constant(3.0, name="scale")
        fn = _trace(lambda x: [scale * x + scale], [(tf.float32, [2])], graph)
    body = fn.graph
    assert body.outer_graph is graph and body.building_function and not graph.building_function
    assert [t.op.type for t in body.inputs] == ["Placeholder", "Placeholder"]
    assert body.inputs[0].shape.as_list() == [2] and body.inputs[1].op.name == "captured_scale"
    assert fn.captured_inputs == [scale]  # captured once though used twice
    assert all(op.graph is body for op in body.get_operations())
    assert graph._get_function(fn.name) is fn and graph._is_function(fn.name)
    assert fn.output_dtypes == [tf.float32] and fn.output_shapes[0].as_list() == [2]


def test_ops_whose_first_input_is_outer_are_made_in_the_function_graph():
    graph = tf.Graph()
    with graph.as_default():
        outer = tf.constant([1, 2], name="outer")
        fn = _trace(lambda x: [tf.add(outer, x), tf.stack([outer, x])], [(tf.int32, [2])], graph)
    ops_before = len(graph.get_operations())
    assert ops_before == 1  # nothing of the body leaked into the outer graph
    with tf.Session(graph=fn.graph) as sess:
        added, stacked = sess.run(fn.graph.outputs, {fn.graph.inputs[0]: [10, 20], fn.graph.inputs[1]: [1, 2]})
    assert added.tolist() == [11, 22] and stacked.tolist() == [[1, 2], [10, 20]]


def test_nested_functions_capture_through_the_function_between():
    graph = tf.Graph()
    with graph.as_default():
        outer = tf.constant(5, name="outer")

        def middle(x):
            inner = _trace(lambda y: [y * outer], [(tf.int32, [])], tf.get_default_graph())
            return [x + 1, inner.captured_inputs[0]]
        fn = _trace(middle, [(tf.int32, [])], graph)
    assert fn.captured_inputs == [outer]  # the middle graph captured it for the inner one
    inner = next(iter(fn.graph._functions.values()))
    assert inner.captured_inputs[0].graph is fn.graph


def test_a_function_that_raises_registers_nothing_and_changes_no_graph():
    graph = tf.Graph()
    with graph.as_default():
        tf.constant(1.0)

        def broken(x):
            x * 2.0
            raise RuntimeError("broken body")
        with pytest.raises(RuntimeError, match="broken body"):
            _trace(broken, [(tf.float32, [])], graph)
    assert graph._functions == {} and len(graph.get_operations()) == 1
    assert function_graph.tracing[0] == 0


def test_tensors_of_unrelated_graphs_are_refused():
    other = tf.Graph()
    with other.as_default():
        stranger = tf.constant(1.0)
    graph = tf.Graph()
    with graph.as_default(), pytest.raises(ValueError, match="same graph|not from the graph"):
        _trace(lambda x: [x + stranger], [(tf.float32, [])], graph)


def test_py_funcs_in_a_function_graph_run_there():
    graph = tf.Graph()
    with graph.as_default():
        outer = tf.constant(np.array([1.0, 2.0]))
        fn = _trace(lambda x: [tf.py_func(lambda a, b: a * b, [outer, x], tf.float64)], [(tf.float64, [2])], graph)
    with tf.Session(graph=fn.graph) as sess:
        out = sess.run(fn.graph.outputs[0], {fn.graph.inputs[0]: [3.0, 4.0], fn.graph.inputs[1]: [1.0, 2.0]})
    assert out.tolist() == [3.0, 8.0]
