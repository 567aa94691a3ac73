"""Tests for adplace/ops/tensor_array_ops.py, tensor_array_grad.py and kernels/tensor_array.py: tf.TensorArray in
straight-line graphs (values, static shapes, TF's errors and messages), its gradients, and its GraphDefs in real
TensorFlow (a subprocess; skipped without TensorFlow)."""
import json
import pathlib
import sys

import numpy as np
import pytest

import adplace as tf
from adplace.ops.op_builder import apply_op_1
from graph_run import gradient_error, run

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))
from tf_peer import needs_tf, run_peer  # noqa: E402

TA_NAME = r"TensorArray \S+"  # TensorArray_<n>: the op's name and a process-wide counter, as in TF


def _errors(fetches, error, pattern, feed_dict=None):
    with pytest.raises(error, match=pattern):
        run(fetches, feed_dict)


# --- values ---------------------------------------------------------------------------------------------------------
def test_write_read_stack_and_size():
    ta = tf.TensorArray(tf.float32, size=3, clear_after_read=False)
    ta = ta.write(0, [1.0, 2.0]).write(1, [3.0, 4.0]).write(2, [5.0, 6.0])
    first, stacked, size = run([ta.read(0), ta.stack(), ta.size()])
    np.testing.assert_array_equal(first, [1.0, 2.0])
    np.testing.assert_array_equal(stacked, [[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]])
    assert size == 3 and stacked.dtype == np.float32


def test_each_write_returns_a_new_object_with_a_new_flow_and_the_same_handle():
    ta = tf.TensorArray(tf.int32, size=2, name="arr")
    written = ta.write(0, 7)
    assert written is not ta and written.handle is ta.handle and written.flow is not ta.flow
    assert ta.handle.op.type == "TensorArrayV3" and ta.handle.op.name == "arr"
    assert ta.handle.dtype == tf.resource and ta.handle.shape.as_list() == [2]
    assert ta.flow.dtype == tf.float32 and written.flow.op.type == "TensorArrayWriteV3"
    assert written.flow.op.name == "TensorArrayWrite/TensorArrayWriteV3"
    assert ta.dtype == tf.int32 and written.dtype == tf.int32


def test_unstack_gather_scatter_concat_split():
    m = np.arange(12.0, dtype=np.float32).reshape(4, 3)
    rows = tf.TensorArray(tf.float32, size=4).unstack(m)
    picked = tf.TensorArray(tf.float32, size=4, clear_after_read=False).unstack(m)
    scattered = tf.TensorArray(tf.float32, size=4).scatter([3, 0, 2, 1], m)
    pieces = tf.TensorArray(tf.float32, size=3, infer_shape=False).split(np.arange(6.0, dtype=np.float32), [1, 2, 3])
    got = run([rows.read(2), picked.gather([3, 1]), picked.gather([1]), scattered.stack(), pieces.concat(),
               pieces.identity().size()])
    np.testing.assert_array_equal(got[0], m[2])
    np.testing.assert_array_equal(got[1], m[[3, 1]])
    np.testing.assert_array_equal(got[2], m[[1]])
    np.testing.assert_array_equal(got[3], m[[1, 3, 2, 0]])
    np.testing.assert_array_equal(got[4], np.arange(6.0))
    assert got[5] == 3


def test_split_elements_keep_their_lengths():
    ta = tf.TensorArray(tf.float32, size=3, infer_shape=False).split([[1.0], [2.0], [3.0]], [2, 0, 1])
    first, empty, last = run([ta.read(0), ta.read(1), ta.read(2)])
    np.testing.assert_array_equal(first, [[1.0], [2.0]])
    assert empty.shape == (0, 1)
    np.testing.assert_array_equal(last, [[3.0]])


def test_dynamic_size_grows_on_writes_and_unwritten_elements_read_as_zeros():
    ta = tf.TensorArray(tf.float32, size=1, dynamic_size=True).write(3, [1.0, 2.0])
    size, stacked = run([ta.size(), ta.stack()])
    assert size == 4
    np.testing.assert_array_equal(stacked, [[0.0, 0.0]] * 3 + [[1.0, 2.0]])
    grown = tf.TensorArray(tf.int32, size=0, dynamic_size=True).unstack([5, 6, 7])
    assert run(grown.size()) == 3
    np.testing.assert_array_equal(run(grown.stack()), [5, 6, 7])


def test_clear_after_read_false_allows_many_reads():
    ta = tf.TensorArray(tf.float32, size=1, clear_after_read=False).write(0, 2.0)
    a = ta.read(0)
    with tf.control_dependencies([a]):
        b = ta.read(0)
    assert run([a, b]) == [2.0, 2.0]


def test_each_run_gets_a_fresh_array():
    x = tf.placeholder(tf.float32, [])
    ta = tf.TensorArray(tf.float32, size=2).write(0, x).write(1, x * 2.0)
    stacked = ta.stack()
    with tf.Session() as sess:
        np.testing.assert_array_equal(sess.run(stacked, {x: 1.0}), [1.0, 2.0])
        np.testing.assert_array_equal(sess.run(stacked, {x: 3.0}), [3.0, 6.0])


def test_strings_and_int64():
    words = tf.TensorArray(tf.string, size=2).write(0, "a").write(1, "bc")
    counts = tf.TensorArray(tf.int64, size=2).unstack(np.array([4, 5], np.int64))
    got = run([words.stack(), counts.stack()])
    assert list(got[0]) == [b"a", b"bc"]
    assert got[1].dtype == np.int64 and list(got[1]) == [4, 5]


def test_zero_size_stack_and_concat_with_a_known_element_shape():
    empty = tf.TensorArray(tf.float32, size=0, element_shape=[2, 3])
    stacked, joined = run([empty.stack(), empty.concat()])
    assert stacked.shape == (0, 2, 3) and joined.shape == (0, 3)


# --- static shapes --------------------------------------------------------------------------------------------------
def test_element_shape_is_inferred_from_writes():
    ta = tf.TensorArray(tf.float32, size=2)
    assert ta.element_shape == tf.TensorShape(None)
    ta = ta.write(0, tf.placeholder(tf.float32, [None, 3]))
    assert ta.element_shape.as_list() == [None, 3]
    ta = ta.write(1, tf.zeros([2, 3]))
    assert ta.element_shape.as_list() == [2, 3]
    assert ta.read(0).shape.as_list() == [2, 3]
    assert ta.stack().shape.as_list() == [2, 2, 3]
    assert ta.gather([0]).shape.as_list() == [None, 2, 3]
    assert ta.concat().shape.as_list() == [4, 3]


def test_element_shape_argument_and_conflicting_writes():
    ta = tf.TensorArray(tf.float32, size=2, element_shape=[3])
    assert ta.read(0).shape.as_list() == [3]
    assert ta.handle.op.get_attr("element_shape").as_list() == [3]
    with pytest.raises(ValueError, match=r"Inconsistent shapes: saw \(2,\) but expected \(3,\)"):
        ta.write(0, [1.0, 2.0])
    loose = tf.TensorArray(tf.float32, size=2, infer_shape=False).write(0, [1.0]).write(1, [1.0, 2.0])
    assert loose.element_shape == tf.TensorShape(None)
    np.testing.assert_array_equal(run(loose.concat()), [1.0, 1.0, 2.0])


def test_graph_construction_errors_name_the_op():
    with pytest.raises(ValueError, match=r"Shape must be rank 0 but is rank 1 for 'TensorArray' \(op: "
                                         r"'TensorArrayV3'\) with input shapes: \[1\]"):
        tf.TensorArray(tf.float32, size=[3])
    ta = tf.TensorArray(tf.float32, size=3)
    with pytest.raises(ValueError, match="Shape must be rank 0 but is rank 1 for 'TensorArrayReadV3'"):
        ta.read([0])
    with pytest.raises(ValueError, match="Shape must be rank 1 but is rank 2 for 'TensorArraySplit/"):
        ta.split([1.0, 2.0, 3.0], [[1, 2]])
    shaped = tf.TensorArray(tf.float32, size=3, element_shape=[2], infer_shape=False)
    with pytest.raises(ValueError, match=r"Dimension 0 in both shapes must be equal, but are 2 and 3\. Shapes are "
                                         r"\[2\] and \[3\]\. for 'TensorArrayWriteV3'"):
        apply_op_1("TensorArrayWriteV3", [shaped.handle, tf.constant(0), tf.constant([1.0, 2.0, 3.0]),
                                          shaped.flow], {"T": tf.float32})


def test_constructor_argument_errors():
    ta = tf.TensorArray(tf.float32, size=1)
    with pytest.raises(ValueError, match="Size must be provided if handle is not provided"):
        tf.TensorArray(tf.float32)
    with pytest.raises(ValueError, match="Cannot construct with both handle and tensor_array_name"):
        tf.TensorArray(tf.float32, handle=ta.handle, flow=ta.flow, tensor_array_name="t")
    with pytest.raises(ValueError, match="Cannot provide both a handle and size at the same time"):
        tf.TensorArray(tf.float32, handle=ta.handle, flow=ta.flow, size=1)
    with pytest.raises(ValueError, match="flow must not be None if handle is not None."):
        tf.TensorArray(tf.float32, handle=ta.handle)
    with pytest.raises(TypeError, match="Handle must be a Tensor"):
        tf.TensorArray(tf.float32, handle="h", flow=ta.flow)


# --- run-time errors, with TF's messages ----------------------------------------------------------------------------
def test_read_errors():
    ta = tf.TensorArray(tf.float32, size=3)
    _errors(ta.read(5), tf.errors.InvalidArgumentError, "Tried to read from index 5 but array size is: 3")
    _errors(ta.read(-1), tf.errors.InvalidArgumentError, "Tried to read from index -1 but array size is: 3")
    _errors(ta.read(1), tf.errors.InvalidArgumentError,
            TA_NAME + r": Could not read from TensorArray index 1\.  Furthermore, the element shape is not fully "
                      r"defined: <unknown>\.")
    written = ta.write(0, 1.0)
    a = written.read(0)
    with tf.control_dependencies([a]):
        b = written.read(0)
    _errors(b, tf.errors.InvalidArgumentError,
            TA_NAME + r": Could not read index 0 twice because it was cleared after a previous read \(perhaps try "
                      r"setting clear_after_read = false\?\)\.")
    wrong = apply_op_1("TensorArrayReadV3", [written.handle, tf.constant(0), written.flow], {"dtype": tf.int32})
    _errors(wrong, tf.errors.InvalidArgumentError, "TensorArray dtype is float but Op requested dtype int32.")


def test_write_errors():
    def fresh(dtype=tf.float32, **kwargs):
        return tf.TensorArray(dtype, size=3, **kwargs)
    _errors(fresh().write(0, 1.0).write(0, 2.0).flow, tf.errors.InvalidArgumentError,
            TA_NAME + ": Could not write to TensorArray index 0 because it has already been written to.")
    _errors(fresh().write(5, 1.0).flow, tf.errors.InvalidArgumentError,
            TA_NAME + ": Tried to write to index 5 but array is not resizeable and size is: 3")
    _errors(fresh(tf.int32).write(0, 1.5).flow, tf.errors.InvalidArgumentError,
            "TensorArray dtype is int32 but Op is trying to write dtype float.")
    x = tf.placeholder(tf.float32, [None])
    _errors(fresh().write(0, x).write(1, x[:1]).flow, tf.errors.InvalidArgumentError,
            TA_NAME + r": Could not write to TensorArray index 1 because the value shape is \[1\] which is "
                      r"incompatible with the TensorArray's inferred element shape: \[2\] \(consider setting "
                      r"infer_shape=False\)\.", {x: [1.0, 2.0]})
    kept = fresh(clear_after_read=False).write(0, 1.0)
    r = kept.read(0)
    with tf.control_dependencies([r]):
        again = kept.write(0, 2.0)
    _errors(again.flow, tf.errors.InvalidArgumentError,
            TA_NAME + ": Could not write to TensorArray index 0 because it has already been read.")


def test_closed_array_errors():
    ta = tf.TensorArray(tf.float32, size=2, dynamic_size=True).write(0, 1.0)
    closed = ta.close()
    assert closed.type == "TensorArrayCloseV3"
    with tf.control_dependencies([closed]):
        late = [ta.read(0), ta.size(), ta.write(1, 2.0).flow]
    for t in late:
        _errors(t, tf.errors.InvalidArgumentError, TA_NAME + " has already been closed.")


def test_stack_gather_concat_errors():
    loose = tf.TensorArray(tf.float32, size=2, infer_shape=False).write(0, [1.0]).write(1, [1.0, 2.0])
    _errors(loose.stack(), tf.errors.InvalidArgumentError,
            r"TensorArray has inconsistent shapes.  Index 0 has shape: \[1\] but index 1 has shape: \[2\]")
    scalars = tf.TensorArray(tf.float32, size=2, infer_shape=False).write(0, 1.0).write(1, 2.0)
    _errors(scalars.concat(), tf.errors.InvalidArgumentError,
            "Concat saw a scalar shape at index 0 but requires at least vectors.  Did you mean to call pack?")
    mixed = tf.TensorArray(tf.float32, size=2, infer_shape=False).write(0, [1.0]).write(1, [[1.0, 2.0]])
    _errors(mixed.concat(), tf.errors.InvalidArgumentError,
            r"Index 0 has \(excepting dimension 0\) shape: \[\] but index 1 has \(excepting dimension 0\) shape: \[2\]")
    empty = tf.TensorArray(tf.float32, size=0)
    _errors(empty.stack(), tf.errors.UnimplementedError,
            "TensorArray has size zero, but element shape <unknown> is not fully defined.")
    _errors(empty.concat(), tf.errors.UnimplementedError,
            "TensorArray has size zero, but element_shape_except0 <unknown> is not fully defined.")
    _errors(tf.TensorArray(tf.float32, size=2).write(0, [1.0]).gather([0, 5]), tf.errors.InvalidArgumentError,
            "Tried to read from index 5 but array size is: 2")


def test_scatter_split_and_size_errors():
    def fresh(**kwargs):
        return tf.TensorArray(tf.float32, size=2, **kwargs)
    _errors(fresh().scatter([0, 5], [[1.0], [2.0]]).flow, tf.errors.InvalidArgumentError,
            r"Max scatter index must be < array size \(5 vs. 2\)")
    _errors(fresh().unstack([1.0, 2.0, 3.0]).flow, tf.errors.InvalidArgumentError,
            r"Max scatter index must be < array size \(2 vs. 2\)")
    _errors(fresh(infer_shape=False).split([1.0, 2.0, 3.0], [1, 1]).flow, tf.errors.InvalidArgumentError,
            r"Expected sum of lengths to be equal to values.shape\[0\], but sum of lengths is 2 and value's shape "
            r"is: \[3\]")
    _errors(fresh(infer_shape=False).split([1.0, 2.0, 3.0], [1, 2, 0]).flow, tf.errors.InvalidArgumentError,
            r"TensorArray's size is not equal to the size of lengths \(2 vs. 3\), and the TensorArray is not marked "
            r"as dynamically resizeable")
    _errors(fresh(infer_shape=False).split(1.0, [1]).flow, tf.errors.InvalidArgumentError,
            r"Expected value to be at least a vector, but received shape: \[\]")
    _errors(tf.TensorArray(tf.float32, size=-1).flow, tf.errors.InvalidArgumentError, "Size should be >= 0.")


# --- gradients ------------------------------------------------------------------------------------------------------
def test_gradient_through_write_and_read():
    x = tf.constant([1.0, 2.0])
    y = tf.constant(3.0)
    ta = tf.TensorArray(tf.float32, size=2, element_shape=[2]).write(0, x).write(1, x * y)
    loss = tf.reduce_sum(ta.read(0) * 2.0) + tf.reduce_sum(ta.read(1) ** 2)
    gx, gy = tf.gradients(loss, [x, y])
    grad_ops = {op.type for op in tf.get_default_graph().get_operations() if op.name.startswith("gradients/")}
    assert {"TensorArrayGradV3", "TensorArrayWriteV3", "TensorArrayReadV3"} <= grad_ops
    got_x, got_y = run([gx, gy])
    np.testing.assert_allclose(got_x, 2.0 + 2 * (3.0 * np.array([1.0, 2.0])) * 3.0)
    np.testing.assert_allclose(got_y, np.sum(2 * 3.0 * np.array([1.0, 2.0]) ** 2))


def test_gradient_through_unstack_and_stack_matches_numeric():
    x = tf.placeholder(tf.float64, [3, 2])
    ta = tf.TensorArray(tf.float64, size=3).unstack(tf.sin(x))
    y = ta.stack() * tf.constant([[1.0, 2.0]], tf.float64)
    assert gradient_error(x, [3, 2], y, [3, 2], x_init_value=np.arange(6.0).reshape(3, 2) / 7) < 1e-6


def test_gradient_through_scatter_and_gather():
    x = tf.constant(np.arange(8.0, dtype=np.float32).reshape(4, 2))
    ta = tf.TensorArray(tf.float32, size=4, clear_after_read=False).scatter([2, 0, 3, 1], x)
    picked = ta.gather([1, 1, 0])  # index 1 twice: its gradient adds up in the gradient array
    gx, = tf.gradients(tf.reduce_sum(picked * tf.constant([[1.0], [2.0], [5.0]])), x)
    expected = np.zeros((4, 2), np.float32)
    expected[3] = 3.0  # x[3] went to index 1
    expected[1] = 5.0  # x[1] went to index 0
    np.testing.assert_allclose(run(gx), expected)


def test_gradient_through_split_and_concat():
    x = tf.placeholder(tf.float64, [6])
    ta = tf.TensorArray(tf.float64, size=3, infer_shape=False).split(x * x, [1, 2, 3])
    y = ta.concat() * tf.range(1.0, 7.0, dtype=tf.float64)
    assert gradient_error(x, [6], y, [6], x_init_value=np.linspace(-1.0, 1.0, 6)) < 1e-6
    gx, = tf.gradients(tf.reduce_sum(y), x)
    value = np.linspace(-1.0, 1.0, 6)
    with tf.Session() as sess:
        np.testing.assert_allclose(sess.run(gx, {x: value}), 2 * value * np.arange(1.0, 7.0))


def test_repeated_reads_add_their_gradients_and_unread_elements_get_zeros():
    x = tf.constant([1.0, 2.0, 3.0])
    ta = tf.TensorArray(tf.float32, size=3, clear_after_read=False).unstack(x)
    a = ta.read(1)
    with tf.control_dependencies([a]):
        b = ta.read(1)
    gx, = tf.gradients(a * 2.0 + b * 5.0, x)
    np.testing.assert_allclose(run(gx), [0.0, 7.0, 0.0])


def test_two_gradient_calls_use_separate_gradient_arrays():
    x = tf.constant([1.0, 2.0])
    ta = tf.TensorArray(tf.float32, size=2, clear_after_read=False).unstack(x)
    y = ta.read(0) * 3.0 + ta.read(1)
    g1, = tf.gradients(y, x)
    g2, = tf.gradients(y * 2.0, x)
    sources = {op.get_attr("source") for op in tf.get_default_graph().get_operations()
               if op.type == "TensorArrayGradV3"}
    assert sources == {"gradients", "gradients_1"}
    got1, got2 = run([g1, g2])
    np.testing.assert_allclose(got1, [3.0, 1.0])
    np.testing.assert_allclose(got2, [6.0, 2.0])


def test_grad_array_of_the_class_and_its_source_check():
    ta = tf.TensorArray(tf.float32, size=2).unstack([1.0, 2.0])
    g = ta.grad("gradients")
    assert g.handle.op.type == "TensorArrayGradV3" and g.handle.op.get_attr("source") == "gradients"
    assert g.flow.op.name.endswith("gradient_flow") and g.element_shape.as_list() == []
    np.testing.assert_array_equal(run(g.write(0, 4.0).stack()), [4.0, 0.0])  # unwritten: zeros of the forward shape
    from adplace.ops.tensor_array_grad import grad_source
    with pytest.raises(ValueError, match="Expected op/tensor name to start with gradients"):
        grad_source(ta.flow)
    assert grad_source(tf.identity(ta.flow, name="gradients_2/flow")) == "gradients_2"


# --- GraphDefs ------------------------------------------------------------------------------------------------------
def _program():
    """A TensorArray graph with every op type, and a gradient: (fetches, names of the fetched tensors)."""
    x = tf.constant(np.arange(6.0, dtype=np.float32).reshape(3, 2), name="x")
    ta = tf.TensorArray(tf.float32, size=3, clear_after_read=False).unstack(x * 2.0)
    extra = tf.TensorArray(tf.float32, size=1, dynamic_size=True).write(0, [7.0, 8.0]).write(1, [9.0, 1.0])
    pieces = tf.TensorArray(tf.float32, size=2, infer_shape=False).split(tf.reshape(x, [6]), [2, 4])
    scattered = tf.TensorArray(tf.float32, size=3, element_shape=[2]).scatter([2, 0, 1], x)
    stacked, picked, joined = ta.stack(), ta.gather([2, 0]), pieces.concat()
    loss = tf.reduce_sum(stacked * stacked) + tf.reduce_sum(picked) + tf.reduce_sum(joined * 3.0)
    gx, = tf.gradients(loss, x)
    with tf.control_dependencies([joined, gx]):  # after everything that uses the array (TF runs ops in any order)
        closed = pieces.close()
    with tf.control_dependencies([closed]):
        done = tf.identity(tf.constant(1.0), name="done")
    fetches = [stacked, picked, joined, extra.stack(), extra.size(), scattered.stack(), ta.read(1), gx, done]
    return fetches


def test_graph_def_round_trip_runs_in_adplace():
    graph = tf.Graph()
    with graph.as_default():
        fetches = _program()
    expected = _run_in(graph, fetches)
    copy = tf.Graph()
    with copy.as_default():
        tf.import_graph_def(graph.as_graph_def(), name="")
    again = _run_in(copy, [copy.as_graph_element(t.name) for t in fetches])
    for a, e in zip(again, expected):
        np.testing.assert_allclose(a, e)
    stacked = copy.get_tensor_by_name(fetches[5].name)  # its shape from the TensorArrayV3's element_shape
    assert stacked.shape.as_list() == [3, 2]


def _run_in(graph, fetches):
    with tf.Session(graph=graph) as sess:
        return sess.run(fetches)


PEER = pathlib.Path(__file__).with_name("tf_tensor_array_peer.py")


@needs_tf
def test_graph_def_runs_in_tensorflow_with_the_same_values(tmp_path):
    graph = tf.Graph()
    with graph.as_default():
        fetches = _program()
    (tmp_path / "graph.pb").write_bytes(graph.as_graph_def().SerializeToString())
    (tmp_path / "fetches.json").write_text(json.dumps([t.name for t in fetches]))
    expected = _run_in(graph, fetches)
    run_peer(PEER, tmp_path)
    for i, value in enumerate(expected):
        theirs = np.load(tmp_path / f"value_{i}.npy", allow_pickle=False)
        assert theirs.shape == np.shape(value) and theirs.dtype == np.asarray(value).dtype
        np.testing.assert_allclose(theirs, value, rtol=1e-6)


# --- GPUs (the fake CuPy of tests/fake_cupy.py) ---------------------------------------------------------------------
GPU0 = "/job:localhost/replica:0/task:0/device:GPU:0"
CPU0 = "/job:localhost/replica:0/task:0/device:CPU:0"


def _run_placed(config, device_of_writes, device_of_reads):
    """(values, {op type: devices}) of a TensorArray program whose writes and reads are pinned where asked."""
    graph = tf.Graph()
    with graph.as_default():
        with tf.device(device_of_writes):
            x = tf.constant(np.arange(6.0, dtype=np.float32).reshape(3, 2))
            ta = tf.TensorArray(tf.float32, size=4, clear_after_read=False).scatter([0, 1, 2], tf.sin(x))
            ta = ta.write(3, tf.cos(x[0]))
        with tf.device(device_of_reads):
            stacked, one = ta.stack(), ta.read(3) * 2.0
            loss = tf.reduce_sum(stacked * stacked) + tf.reduce_sum(one)
        gx, = tf.gradients(loss, x)
        with tf.Session(graph=graph, config=config) as sess:
            values = sess.run([stacked, one, gx])
            placed: dict = {}
            for _, op_type, _, device, _ in sess.placement_table():
                placed.setdefault(op_type, set()).add(device)
    return values, placed


@pytest.mark.parametrize("reads", ["/gpu:0", "/cpu:0"])
def test_gpu_kernels_match_the_cpu_and_values_follow_the_reader(fake_gpu, reads):
    soft, cpu_only = tf.ConfigProto(allow_soft_placement=True), tf.ConfigProto(device_count={"GPU": 0})
    gpu_values, placed = _run_placed(soft, "/gpu:0", reads)
    cpu_values, _ = _run_placed(cpu_only, "", "")
    assert placed["TensorArrayScatterV3"] == {GPU0} and placed["TensorArrayWriteV3"] >= {GPU0}
    assert placed["TensorArrayGatherV3"] == {GPU0}  # stack() is colocated with the handle, as in TF
    assert placed["TensorArrayReadV3"] >= ({GPU0} if reads == "/gpu:0" else {CPU0})  # reads a GPU array
    for g, c in zip(gpu_values, cpu_values):
        assert type(g) is np.ndarray and g.dtype == c.dtype
        np.testing.assert_allclose(g, c, rtol=1e-5, atol=1e-6)
