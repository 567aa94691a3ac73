"""GraphDef both ways: Graph.as_graph_def / Operation.node_def write TF's protos, tf.import_graph_def reads them
back all or nothing, make_tensor_proto / make_ndarray convert tensors, tf.train.write_graph writes files."""
import os

import numpy as np
import pytest
from google.protobuf import text_format

import adplace as tf
from adplace.framework import graph_io
from adplace.lib import protos


def _node(graph_def, name):
    return next(n for n in graph_def.node if n.name == name)


def _graph_def_text(text: str):
    return text_format.Parse(text, protos.graph_pb2.GraphDef())


# --- export -------------------------------------------------------------------------------------------------------
def test_nodes_carry_tf_inputs_devices_and_typed_attrs():
    x = tf.placeholder(tf.float32, [None, 3], name="x")
    with tf.device("/gpu:1"):
        parts = tf.split(x, 3, axis=1, name="parts")
    with tf.control_dependencies([parts[0].op]):
        y = tf.identity(parts[1], name="y")
    s = tf.reduce_sum(tf.reshape(tf.cast(y, tf.int64), [-1]), name="s")
    graph_def = tf.get_default_graph().as_graph_def()
    assert [n.name for n in graph_def.node] == [op.name for op in tf.get_default_graph().get_operations()]
    assert graph_def.versions.producer == 134 and graph_def.versions.min_consumer == 0
    node = _node(graph_def, "y")
    assert list(node.input) == ["parts:1"]  # parts is a data input already: no control edge
    assert node.attr["T"].type == protos.types_pb2.DT_FLOAT
    assert _node(graph_def, "parts").device == "/device:GPU:1"
    assert _node(graph_def, "parts").attr["num_split"].i == 3
    cast = _node(graph_def, "Cast")
    assert set(cast.attr) == {"SrcT", "DstT"} and cast.attr["DstT"].type == protos.types_pb2.DT_INT64
    reshape = _node(graph_def, "Reshape")
    assert reshape.attr["T"].type == protos.types_pb2.DT_INT64
    assert reshape.attr["Tshape"].type == protos.types_pb2.DT_INT32
    assert _node(graph_def, "s").attr["Tidx"].type == protos.types_pb2.DT_INT32
    assert s.op.node_def == _node(graph_def, "s")
    placeholder = _node(graph_def, "x").attr["shape"].shape
    assert [d.size for d in placeholder.dim] == [-1, 3] and not placeholder.unknown_rank


def test_control_inputs_follow_data_inputs():
    a = tf.constant(1.0, name="a")
    b = tf.constant(2.0, name="b")
    with tf.control_dependencies([b]):
        c = tf.add(a, a, name="c")
    assert list(c.op.node_def.input) == ["a", "a", "^b"]


def test_const_values_unknown_shapes_and_lists_are_tf_protos():
    tf.constant(np.arange(6, dtype=np.float64).reshape(2, 3), name="table")
    tf.constant("text", name="word")
    tf.placeholder(tf.int32, None, name="anything")
    tf.nn.conv2d(tf.zeros([1, 4, 4, 1]), tf.zeros([2, 2, 1, 1]), [1, 2, 2, 1], "SAME", name="conv")
    graph_def = tf.get_default_graph().as_graph_def()
    table = _node(graph_def, "table").attr["value"].tensor
    assert table.tensor_content == np.arange(6, dtype="<f8").tobytes()
    assert [d.size for d in table.tensor_shape.dim] == [2, 3]
    assert list(_node(graph_def, "word").attr["value"].tensor.string_val) == [b"text"]
    assert _node(graph_def, "anything").attr["shape"].shape.unknown_rank
    conv = _node(graph_def, "conv")
    assert list(conv.attr["strides"].list.i) == [1, 2, 2, 1] and conv.attr["padding"].s == b"SAME"
    assert conv.attr["use_cudnn_on_gpu"].b is True


def test_adplace_only_attrs_are_dropped_and_type_lists_filled():
    a, b = tf.constant([1.0]), tf.constant([2], tf.int32)
    n = tf.identity_n([a, b], name="n")[0].op.node_def
    assert "dtypes" not in n.attr and list(n.attr["T"].list.type) == [1, 3]
    packed = tf.stack([a, a, a], name="packed").op.node_def
    assert packed.attr["N"].i == 3 and packed.attr["T"].type == 1
    uniform = tf.random_uniform([2], seed=1, name="u")
    node = tf.get_default_graph().as_graph_def()
    rand = next(x for x in node.node if x.op == "RandomUniform")
    assert rand.attr["T"].type == protos.types_pb2.DT_INT32 and rand.attr["dtype"].type == 1 and "Tout" not in rand.attr
    del uniform


def test_strided_slices_write_tf_masks_and_const_inputs():
    x = tf.placeholder(tf.float32, [None, 4, 5], name="x")
    y = x[:, 1:, ..., None, -1]
    graph_def = tf.get_default_graph().as_graph_def()
    node = _node(graph_def, y.op.name)
    assert list(node.input) == ["x", "strided_slice/stack", "strided_slice/stack_1", "strided_slice/stack_2"]
    assert (node.attr["begin_mask"].i, node.attr["end_mask"].i, node.attr["ellipsis_mask"].i,
            node.attr["new_axis_mask"].i, node.attr["shrink_axis_mask"].i) == (1, 3, 4, 8, 16)
    begin = tf.make_ndarray(_node(graph_def, "strided_slice/stack").attr["value"].tensor)
    assert begin.tolist() == [0, 1, 0, 0, -1]


@pytest.mark.parametrize("key", [(slice(None), 1), (Ellipsis, slice(None, None, -2)), (None, 0, slice(1, -1)),
                                 (slice(-3, None), Ellipsis, None), (-1,), ()])
def test_slice_specs_survive_the_masks(key):
    begin, end, strides, masks = graph_io.slice_spec_to_masks(key)
    assert graph_io.masks_to_slice_spec(begin, end, strides, masks) == tuple(
        slice(k.start, k.stop, 1 if k.step is None else k.step) if isinstance(k, slice) else k for k in key)


def test_colocation_and_output_shapes():
    v = tf.Variable(tf.zeros([2, 3]), name="v")
    with tf.colocate_with(v):
        near = tf.identity(tf.ones([2, 3]), name="near")
    graph_def = tf.get_default_graph().as_graph_def(add_shapes=True)
    assert list(_node(graph_def, "near").attr["_class"].list.s) == [b"loc:@v"]
    assert list(_node(graph_def, "v/Assign").attr["_class"].list.s) == [b"loc:@v"]
    shapes = _node(graph_def, "near").attr["_output_shapes"].list.shape
    assert [[d.size for d in s.dim] for s in shapes] == [[2, 3]]
    assert "_output_shapes" not in tf.get_default_graph().as_graph_def().node[0].attr
    del near


def test_from_version_writes_only_newer_ops():
    tf.constant(1.0, name="old")
    version = tf.get_default_graph().version
    tf.constant(2.0, name="new")
    assert [n.name for n in tf.get_default_graph().as_graph_def(from_version=version).node] == ["new"]


def test_node_def_is_the_proto_device_functions_see():
    seen = []

    def pick(op):
        seen.append((type(op.node_def), op.node_def.op, op.node_def.name))
        return "/cpu:0"

    with tf.device(pick):
        tf.constant(1.0, name="c")
    assert seen == [(tf.NodeDef, "Const", "c")]


def test_session_graph_def_and_versions():
    tf.constant(3.0, name="three")
    with tf.Session() as sess:
        assert [n.name for n in sess.graph_def.node] == ["three"]
    assert tf.get_default_graph().graph_def_versions.producer == 134


# --- TensorProto --------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("value", [np.arange(6, dtype=np.int64).reshape(2, 3), np.float32(1.5), np.array([True, False]),
                                   np.array([1 + 2j, 3j], np.complex64), np.array([0.5, 2.0], np.float16),
                                   np.array([b"a", b"bc"], dtype=object), np.zeros((0, 3), np.float32)])
def test_tensor_protos_round_trip(value):
    back = tf.make_ndarray(tf.make_tensor_proto(value))
    assert back.dtype == value.dtype and back.shape == value.shape
    np.testing.assert_array_equal(back, value)


def test_tensor_proto_fields_as_tf_writes_them():
    scalar = tf.make_tensor_proto(2.5)
    assert scalar.dtype == protos.types_pb2.DT_FLOAT and list(scalar.float_val) == [2.5] and not scalar.tensor_content
    splat = tf.make_tensor_proto(7, tf.int64, [2, 2])
    assert list(splat.int64_val) == [7]
    np.testing.assert_array_equal(tf.make_ndarray(splat), np.full((2, 2), 7, np.int64))
    array = tf.make_tensor_proto(np.array([1.0, 2.0], np.float32))
    assert array.tensor_content == np.array([1.0, 2.0], "<f4").tobytes()
    assert tf.make_tensor_proto([1, 2]).dtype == protos.types_pb2.DT_INT32
    half = tf.make_tensor_proto(np.float16(1.0))
    assert list(half.half_val) == [np.float16(1.0).view(np.uint16)]
    bf16 = tf.make_tensor_proto(np.array(1.0), tf.bfloat16)
    assert list(bf16.half_val) == [0x3F80]
    with pytest.raises(ValueError):
        tf.make_tensor_proto([1, 2, 3], shape=[2])


def test_make_ndarray_reads_typed_value_fields():
    proto = text_format.Parse('dtype: DT_INT32 tensor_shape { dim { size: 4 } } int_val: 1 int_val: 2',
                              protos.tensor_pb2.TensorProto())
    np.testing.assert_array_equal(tf.make_ndarray(proto), np.array([1, 2, 2, 2], np.int32))
    proto = text_format.Parse('dtype: DT_HALF tensor_shape { dim { size: 2 } } half_val: 15360',
                              protos.tensor_pb2.TensorProto())
    np.testing.assert_array_equal(tf.make_ndarray(proto), np.ones(2, np.float16))
    proto = text_format.Parse('dtype: DT_DOUBLE tensor_shape { dim { size: 2 } }', protos.tensor_pb2.TensorProto())
    np.testing.assert_array_equal(tf.make_ndarray(proto), np.zeros(2))
    assert tf.make_ndarray is graph_io.make_ndarray


# --- files --------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("as_text", [True, False])
def test_write_graph_writes_text_or_binary(tmp_path, as_text):
    tf.constant(1.0, name="one")
    path = tf.train.write_graph(tf.get_default_graph(), str(tmp_path / "logs"), "g.pb", as_text=as_text)
    assert path == str(tmp_path / "logs" / "g.pb") and os.listdir(tmp_path / "logs") == ["g.pb"]
    data = open(path, "rb").read()
    graph_def = (text_format.Parse(data.decode(), protos.graph_pb2.GraphDef()) if as_text
                 else graph_io.parse_graph_def(data))
    assert graph_def == tf.get_default_graph().as_graph_def()
    tf.train.write_graph(graph_def, str(tmp_path / "logs"), "g.pb", as_text=as_text)  # a GraphDef, over the old
    assert os.listdir(tmp_path / "logs") == ["g.pb"]


def test_malformed_bytes_are_data_loss():
    with pytest.raises(tf.errors.DataLossError, match="GraphDef"):
        graph_io.parse_graph_def(b"\xff\xff\xff")


# --- import -------------------------------------------------------------------------------------------------------
def _source_graph():
    """x (placeholder) -> split -> y = parts[1] * w, with a variable w on /cpu:0, an op colocated with it and a
    control dependency."""
    graph = tf.Graph()
    with graph.as_default():
        x = tf.placeholder(tf.float32, [2, 4], name="x")
        with tf.device("/cpu:0"):
            w = tf.Variable(np.full((2, 2), 3.0, np.float32), name="w")
        parts = tf.split(x, 2, axis=1, name="parts")
        with tf.colocate_with(w):
            scaled = tf.multiply(parts[1], w, name="scaled")
        summed = tf.reduce_sum(scaled)
        with tf.control_dependencies([parts[0].op]):
            tf.identity(summed, name="total")
        tf.global_variables_initializer()
    return graph


def test_import_prefixes_names_and_keeps_structure():
    graph_def = _source_graph().as_graph_def()
    tf.import_graph_def(graph_def)
    total, = tf.import_graph_def(graph_def, return_elements=["total:0"])
    graph = tf.get_default_graph()
    assert total.name == "import_1/total:0"
    assert graph.get_operation_by_name("import/scaled").colocation_groups() == [b"loc:@import/w"]
    assert graph.get_operation_by_name("import/w").device == "/device:CPU:0"
    assert graph.get_operation_by_name("import/scaled").device == "/device:CPU:0"  # from its colocation
    assert [c.name for c in total.op.control_inputs] == ["import_1/parts"]
    x = graph.get_tensor_by_name("import_1/x:0")
    with tf.Session() as sess:
        sess.run("import_1/init")
        value = sess.run(total, {x: np.ones((2, 4), np.float32)})
    assert value == 12.0


def test_import_without_prefix_input_map_and_return_elements():
    graph_def = _source_graph().as_graph_def()
    feed = tf.constant(np.arange(8, dtype=np.float32).reshape(2, 4), name="feed")
    gate = tf.no_op(name="gate")
    total, parts_op, second = tf.import_graph_def(graph_def, input_map={"x:0": feed, "^parts": gate},
                                                  return_elements=["total:0", "parts", "parts:1"], name="")
    assert total.name == "total:0" and isinstance(parts_op, tf.Operation) and second is parts_op.outputs[1]
    assert parts_op.inputs[1] is feed and gate in total.op.control_inputs
    with tf.Session() as sess:
        sess.run("init")
        assert sess.run(total) == 3.0 * (2 + 3 + 6 + 7)


def test_imported_graphs_differentiate_and_train():
    graph = tf.Graph()
    with graph.as_default():
        w = tf.Variable([1.0, -2.0], name="w")
        loss = tf.reduce_sum(tf.square(w) * tf.constant([1.0, 3.0]), name="loss")
        tf.train.GradientDescentOptimizer(0.1).minimize(loss, name="step")
        tf.global_variables_initializer()
    tf.import_graph_def(graph.as_graph_def(), name="copy")
    g = tf.get_default_graph()
    w_copy = g.get_tensor_by_name("copy/w:0")
    grad, = tf.gradients(g.get_tensor_by_name("copy/loss:0"), w_copy)
    with tf.Session() as sess:
        sess.run("copy/init")
        np.testing.assert_allclose(sess.run(grad), [2.0, -12.0])
        sess.run("copy/step")
        np.testing.assert_allclose(sess.run(w_copy), [0.8, -0.8], rtol=1e-6)


def test_import_sorts_nodes_given_in_any_order():
    graph_def = _source_graph().as_graph_def()
    shuffled = protos.graph_pb2.GraphDef()
    shuffled.node.extend(reversed(graph_def.node))
    tf.import_graph_def(shuffled, name="")
    names = [op.name for op in tf.get_default_graph().get_operations()]
    assert names.index("w") < names.index("w/Assign") and names.index("x") < names.index("parts")
    assert sorted(names) == sorted(n.name for n in graph_def.node)


def _unchanged(error, match: str, function, *args, **kwargs):
    """`function(*args, **kwargs)` raises `error` matching `match` on a graph with ops, and leaves the graph, its
    names and its name counters as they were."""
    graph = tf.get_default_graph()
    tf.constant(1.0, name="import")
    before = ([op.name for op in graph.get_operations()], dict(graph._names_in_use))
    following = graph.unique_name("import", mark_as_used=False)
    with pytest.raises(error, match=match):
        function(*args, **kwargs)
    assert ([op.name for op in graph.get_operations()], dict(graph._names_in_use)) == before
    assert all(all(c in graph.get_operations() for c in op._consumers) for op in graph.get_operations())
    assert tf.constant(2.0, name="import").op.name == following


def test_unknown_op_types_are_not_found_and_change_nothing():
    graph_def = _graph_def_text('node { name: "a" op: "NoOp" } node { name: "b" op: "Frobnicate" }')
    _unchanged(tf.errors.NotFoundError, "'Frobnicate'.*node 'b'", tf.import_graph_def, graph_def)


def test_bad_references_cycles_and_duplicates_are_value_errors():
    cases = [('node { name: "a" op: "Identity" input: "zz:0" attr { key: "T" value { type: DT_FLOAT } } }',
              "Node 'a': Unknown input node 'zz:0'"),
             ('node { name: "a" op: "NoOp" input: "^b" } node { name: "b" op: "NoOp" input: "^a" }',
              "2 nodes in a cycle"),
             ('node { name: "a" op: "NoOp" } node { name: "a" op: "NoOp" }', "Node 'a' is not unique")]
    for text, message in cases:
        _unchanged(ValueError, message, tf.import_graph_def, _graph_def_text(text))


def test_a_failure_late_in_the_import_removes_every_imported_op():
    graph_def = _source_graph().as_graph_def()
    bad = graph_def.node.add(name="zz_bad", op="MatMul", input=["x", "x"])  # (2, 4) x (2, 4): inference fails
    bad.attr["T"].type = protos.types_pb2.DT_FLOAT
    x = tf.placeholder(tf.float32, [2, 4], name="x")
    _unchanged(ValueError, "zz_bad", tf.import_graph_def, graph_def)
    assert x.consumers() == []


def test_input_map_and_return_element_errors():
    graph_def = _source_graph().as_graph_def()
    feed = tf.zeros([2, 4])
    _unchanged(ValueError, r"not found in graph_def: \[nope:0\]", tf.import_graph_def, graph_def,
               input_map={"nope:0": feed})
    _unchanged(ValueError, "return node 'nope'", tf.import_graph_def, graph_def, return_elements=["nope"])
    with pytest.raises(TypeError, match="GraphDef proto"):
        tf.import_graph_def(b"bytes")
    with pytest.raises(TypeError, match="input_map"):
        tf.import_graph_def(graph_def, input_map=[feed])


def test_strided_slices_with_computed_bounds_are_refused():
    graph_def = _graph_def_text('''
        node { name: "x" op: "Const" attr { key: "dtype" value { type: DT_INT32 } }
               attr { key: "value" value { tensor { dtype: DT_INT32 tensor_shape { dim { size: 3 } } int_val: 1 } } } }
        node { name: "b" op: "Identity" input: "x" attr { key: "T" value { type: DT_INT32 } } }
        node { name: "s" op: "StridedSlice" input: "x" input: "b" input: "b" input: "b"
               attr { key: "T" value { type: DT_INT32 } } attr { key: "Index" value { type: DT_INT32 } } }''')
    _unchanged(ValueError, "'s'.*constant begin", tf.import_graph_def, graph_def)


def test_a_graph_def_past_protobufs_size_limit_is_tfs_value_error(monkeypatch):
    tf.constant(np.arange(64, dtype=np.float32), name="big")  # 64 distinct values: 256 bytes
    monkeypatch.setattr(graph_io, "MAX_GRAPH_DEF_BYTES", 100)  # a 2 GB graph costs too much memory for a test
    with pytest.raises(ValueError, match="GraphDef cannot be larger than 2GB"):
        tf.get_default_graph().as_graph_def()
    monkeypatch.setattr(graph_io, "MAX_GRAPH_DEF_BYTES", 1 << 31)
    assert [n.name for n in tf.get_default_graph().as_graph_def().node] == ["big"]

    class PastTwoGigabytes:  # a node protobuf cannot even size (what a >2 GB Const gives)
        def ByteSize(self):
            from google.protobuf.message import EncodeError
            raise EncodeError("Failed to serialize proto")
    monkeypatch.setattr(graph_io, "node_def", lambda *args: PastTwoGigabytes())
    with pytest.raises(ValueError, match="GraphDef cannot be larger than 2GB"):
        tf.get_default_graph().as_graph_def()


def test_import_fills_in_the_op_def_defaults_a_stripped_node_leaves_out():
    graph_def = _graph_def_text("""
        node { name: "x" op: "Placeholder" attr { key: "dtype" value { type: DT_FLOAT } }
               attr { key: "shape" value { shape { dim { size: 3 } } } } }
        node { name: "m" op: "Mean" input: "x" input: "axis"
               attr { key: "T" value { type: DT_FLOAT } } attr { key: "Tidx" value { type: DT_INT32 } } }
        node { name: "axis" op: "Const" attr { key: "dtype" value { type: DT_INT32 } }
               attr { key: "value" value { tensor { dtype: DT_INT32 int_val: 0 } } } }
    """)  # Mean without keep_dims (default false)
    (mean,) = tf.import_graph_def(graph_def, return_elements=["m:0"], name="")
    assert mean.op.get_attr("keep_dims") is False and mean.shape.as_list() == []
    with tf.Session() as sess:
        assert sess.run(mean, {"x:0": [1.0, 2.0, 6.0]}) == 3.0


def test_names_the_graph_already_has_are_made_unique_without_a_prefix():
    graph_def = _graph_def_text("""
        node { name: "a" op: "Const" attr { key: "dtype" value { type: DT_FLOAT } }
               attr { key: "value" value { tensor { dtype: DT_FLOAT float_val: 2.0 } } } }
        node { name: "b" op: "Neg" input: "a" attr { key: "T" value { type: DT_FLOAT } }
               attr { key: "_class" value { list { s: "loc:@a" } } } }
    """)
    first = tf.import_graph_def(graph_def, return_elements=["a", "b"], name="")
    second = tf.import_graph_def(graph_def, return_elements=["a", "b"], name="")
    assert [op.name for op in first] == ["a", "b"] and [op.name for op in second] == ["a_1", "b_1"]
    assert list(second[1].inputs) == [second[0].outputs[0]]
    assert second[1].colocation_groups() == [b"loc:@a_1"]  # colocation follows the renamed node
    with tf.name_scope("c"):
        pass  # a name scope without ops does not take the name
    with tf.name_scope("d"):
        tf.constant(1.0, name="inside")  # a scope with ops does
    renamed = _graph_def_text("""
        node { name: "c" op: "NoOp" } node { name: "d" op: "NoOp" } node { name: "d_1" op: "NoOp" }
    """)
    c, d, d_1 = tf.import_graph_def(renamed, return_elements=["c", "d", "d_1"], name="")
    assert (c.name, d.name, d_1.name) == ("c", "d_2", "d_1")  # "d_1" is the GraphDef's own name: skipped
    with tf.Session() as sess:
        assert sess.run(second[1].outputs[0]) == -2.0


def test_input_map_may_replace_a_missing_source_or_an_output_nothing_reads():
    feed = tf.constant(3.0, name="feed")
    reads_missing = _graph_def_text("""
        node { name: "b" op: "Neg" input: "absent:0" attr { key: "T" value { type: DT_FLOAT } } }
    """)
    (b,) = tf.import_graph_def(reads_missing, input_map={"absent:0": feed}, return_elements=["b"])
    assert list(b.inputs) == [feed]
    lonely = _graph_def_text("""
        node { name: "a" op: "Const" attr { key: "dtype" value { type: DT_FLOAT } }
               attr { key: "value" value { tensor { dtype: DT_FLOAT float_val: 1.0 } } } }
    """)
    tf.import_graph_def(lonely, input_map={"a:0": feed}, name="unread")  # a real output nobody reads
    _unchanged(ValueError, r"not found in graph_def: \[a:1\]", tf.import_graph_def, lonely,
               input_map={"a:1": feed})


def test_colocation_with_a_node_the_graph_def_lacks_is_an_error():
    graph_def = _graph_def_text("""
        node { name: "b" op: "NoOp" attr { key: "_class" value { list { s: "loc:@nowhere" } } } }
    """)
    _unchanged(ValueError, "Node 'b' expects to be colocated with unknown node 'nowhere'", tf.import_graph_def,
               graph_def)


@pytest.mark.parametrize("versions, match", [
    ("producer: -1", "producer version -1 below min producer 0"),
    ("producer: 134 min_consumer: 1000000", "min consumer version 1000000 above current version 134"),
    ("producer: 134 bad_consumers: 134", "disallows consumer version 134"),
])
def test_graph_def_versions_adplace_cannot_read_are_refused(versions, match):
    graph_def = _graph_def_text(f'versions {{ {versions} }} node {{ name: "n" op: "NoOp" }}')
    _unchanged(ValueError, match, tf.import_graph_def, graph_def)


def test_a_constant_of_one_repeated_value_is_written_as_tf_writes_a_splat():
    """tf.constant(1.5, shape=...) holds the whole array here, but its GraphDef holds the value once, as TF's does, and
    reads back whole; an array of distinct values is written element by element."""
    tf.constant(1.5, shape=[1000, 1000], name="splat")
    tf.constant([[1, 2], [3, 4]], name="distinct")
    graph_def = tf.get_default_graph().as_graph_def()
    splat, distinct = (node.attr["value"].tensor for node in graph_def.node)
    assert list(splat.float_val) == [1.5] and not splat.tensor_content
    assert [d.size for d in splat.tensor_shape.dim] == [1000, 1000] and graph_def.ByteSize() < 200
    assert distinct.tensor_content and not distinct.int_val
    with tf.Graph().as_default():
        value, = tf.import_graph_def(graph_def, return_elements=["splat:0"])
        np.testing.assert_array_equal(tf.Session().run(value), np.full([1000, 1000], 1.5, np.float32))
