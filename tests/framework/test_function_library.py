"""Functions in GraphDefs (framework/function_def.py): tf.data's functions export as TF's FunctionDefs in the
GraphDef's library and import back into function graphs, all or nothing; GraphDefs TensorFlow writes with tf.data
import and run to TF's values (tf_function_library_peer.py, in a subprocess)."""
import json
import pathlib

import numpy as np
import pytest

import adplace as tf
from adplace.lib import protos
from tf_peer import needs_tf, run_peer

PEER = pathlib.Path(__file__).with_name("tf_function_library_peer.py")


def _mapped_graph():
    graph = tf.Graph()
    with graph.as_default():
        scale = tf.constant(3, tf.int64, name="scale")
        dataset = tf.data.Dataset.range(8).map(lambda v: tf.split(tf.stack([v, v * scale]), 2)[1][0] + 1)
        iterator = dataset.filter(lambda v: tf.equal(v % 2, 0)).batch(10).make_one_shot_iterator()
        iterator.get_next(name="next")
    return graph


def _functions(graph_def) -> dict:
    return {f.signature.name: f for f in graph_def.library.function}


def _run_all(graph, name="next:0") -> list:
    out = []
    with tf.Session(graph=graph) as sess:
        while True:
            try:
                out.append(sess.run(name).tolist())
            except tf.errors.OutOfRangeError:
                return out


def test_a_map_function_exports_as_a_function_def_with_tf_names():
    graph = _mapped_graph()
    graph_def = graph.as_graph_def()
    functions = _functions(graph_def)
    map_name = next(n for n in functions if n.startswith("Dataset_map"))
    factory = next(n for n in functions if n.startswith("make_dataset"))
    assert len(functions) == 3  # the map and filter functions, reached through the one-shot iterator's factory
    fn = functions[map_name]
    # the element, then the captured `scale` (its placeholder is made at the top level of the function graph)
    assert [(a.name, a.type) for a in fn.signature.input_arg] == [("args_0", tf.int64.as_datatype_enum),
                                                                   ("captured_scale", tf.int64.as_datatype_enum)]
    assert [a.type for a in fn.signature.output_arg] == [tf.int64.as_datatype_enum]
    assert not fn.signature.is_stateful
    nodes = {n.name: n for n in fn.node_def}
    assert "args_0" not in nodes  # arguments are no nodes
    assert list(nodes["mul"].input) == ["args_0", "captured_scale"]
    assert list(nodes["add"].input) == ["strided_slice:output:0", "add/y:output:0"]
    split = next(n for n in fn.node_def if n.op == "Split")
    reader = next(n for n in fn.node_def if any(i.startswith(split.name + ":") for i in n.input))
    assert f"{split.name}:output:1" in reader.input  # the second tensor of Split's list output
    assert fn.ret[fn.signature.output_arg[0].name].endswith(":z:0")  # the Add
    shapes = fn.arg_attr[0].attr["_output_shapes"].list.shape
    assert len(shapes) == 1 and not shapes[0].dim and not shapes[0].unknown_rank
    # The factory rebuilt the map and filter datasets: its nodes name the functions; the top graph has only the
    # iterator, whose attr names the factory. A dataset factory holds stateful (dataset) ops in TF too.
    iterator = next(n for n in graph_def.node if n.op == "OneShotIterator")
    assert iterator.attr["dataset_factory"].func.name == factory
    body = {n.op: n for n in functions[factory].node_def}
    assert body["MapDataset"].attr["f"].func.name == map_name
    assert body["BatchDatasetV2"].input[0] == "FilterDataset:handle:0"
    assert functions[factory].signature.is_stateful


def test_a_function_with_a_stateful_op_is_marked_stateful():
    graph = tf.Graph()
    with graph.as_default():
        tf.data.Dataset.range(3).map(lambda v: tf.random_uniform([]) + tf.cast(v, tf.float32))
    (fn,) = graph.as_graph_def().library.function
    assert fn.signature.is_stateful


def test_import_into_a_fresh_graph_runs_the_dataset_to_the_same_values():
    graph = _mapped_graph()
    expected = _run_all(graph)
    assert expected == [[4, 10, 16, 22]]
    graph_def = graph.as_graph_def()
    data = graph_def.SerializeToString(deterministic=True)
    copy = tf.Graph()
    with copy.as_default():
        tf.import_graph_def(graph_def, name="")
    assert graph_def.SerializeToString(deterministic=True) == data  # the GraphDef is read, not changed
    assert sorted(copy._functions) == sorted(_functions(graph_def))
    assert _run_all(copy) == expected


def test_importing_the_same_library_twice_reuses_its_functions_and_a_clash_gets_a_new_name():
    graph_def = _mapped_graph().as_graph_def()
    target = tf.Graph()
    with target.as_default():
        tf.import_graph_def(graph_def, name="a")
        tf.import_graph_def(graph_def, name="b")
    assert len(target._functions) == 3
    # a different function under a clashing name: imported as <name>_1, and the op names it
    other = tf.Graph()
    with other.as_default():
        tf.data.Dataset.range(3).map(lambda v: v * 100).make_one_shot_iterator().get_next(name="next")
    other_def = other.as_graph_def()
    map_name = next(n for n in _functions(graph_def) if n.startswith("Dataset_map"))
    (clash,) = [f for f in other_def.library.function if f.signature.name.startswith("Dataset_map")]
    old = clash.signature.name
    clash.signature.name = map_name
    for node in [*other_def.node, *(n for f in other_def.library.function for n in f.node_def)]:
        if "f" in node.attr and node.attr["f"].func.name == old:
            node.attr["f"].func.name = map_name
    with target.as_default():
        tf.import_graph_def(other_def, name="c")
    assert f"{map_name}_1" in target._functions and len(target._functions) == 5
    assert _run_all(target, "c/next:0") == [0, 100, 200]
    assert _run_all(target, "a/next:0") == [[4, 10, 16, 22]]
    exported = _functions(target.as_graph_def())
    assert any(n.attr["f"].func.name == f"{map_name}_1" for f in exported.values() for n in f.node_def
               if "f" in n.attr)  # the copy's factory calls the renamed function


def _assert_unchanged(graph, before_ops, before_functions):
    assert [op.name for op in graph.get_operations()] == before_ops
    assert dict(graph._functions) == before_functions


@pytest.mark.parametrize("damage", ["unknown op type", "bad ret", "unknown function"])
def test_a_failed_import_leaves_graph_and_library_unchanged(damage):
    graph_def = _mapped_graph().as_graph_def()
    functions = _functions(graph_def)
    factory = next(f for n, f in functions.items() if n.startswith("make_dataset"))
    if damage == "unknown op type":
        factory.node_def[-1].op = "NoSuchOp"
        error = tf.errors.NotFoundError
    elif damage == "bad ret":  # the factory is built last, after the map and filter functions were registered
        factory.ret[factory.signature.output_arg[0].name] = "BatchDatasetV2:nothing:0"
        error = ValueError
    else:
        next(n for n in graph_def.node if n.op == "OneShotIterator").attr["dataset_factory"].func.name = "nowhere"
        error = ValueError
    target = tf.Graph()
    with target.as_default():
        tf.constant(1.0, name="kept")
        tf.data.Dataset.range(2).map(lambda v: v + 1)
    before_ops, before_functions = [op.name for op in target.get_operations()], dict(target._functions)
    with target.as_default(), pytest.raises(error):
        tf.import_graph_def(graph_def, name="x")
    _assert_unchanged(target, before_ops, before_functions)
    with target.as_default():  # and the graph still imports a sound GraphDef
        tf.import_graph_def(_mapped_graph().as_graph_def(), name="x")
    assert _run_all(target, "x/next:0") == [[4, 10, 16, 22]]


def test_a_meta_graph_keeps_the_library_and_lists_the_op_types_of_function_bodies(tmp_path):
    graph = _mapped_graph()
    with graph.as_default():
        meta = tf.train.export_meta_graph(str(tmp_path / "model.meta"))
    assert len(meta.graph_def.library.function) == 3
    listed = {op.name for op in meta.meta_info_def.stripped_op_list.op}
    assert {"Split", "FloorMod", "MapDataset", "OneShotIterator"} <= listed  # Split: only in a function body
    copy = tf.Graph()
    with copy.as_default():
        tf.train.import_meta_graph(str(tmp_path / "model.meta"))
    assert _run_all(copy) == [[4, 10, 16, 22]]


def test_func_attrs_convert_both_ways():
    from adplace.framework import graph_io
    graph = _mapped_graph()
    function = next(iter(graph._functions.values()))
    proto = graph_io.attr_value(function)
    assert isinstance(proto, protos.attr_value_pb2.AttrValue) and proto.func.name == function.name
    assert graph_io.python_attr(proto, {function.name: function}) is function
    with pytest.raises(ValueError, match="library"):
        graph_io.python_attr(proto, {})


@pytest.fixture(scope="module")
def tf_written(tmp_path_factory):
    folder = tmp_path_factory.mktemp("tf_functions")
    run_peer(PEER, "write", folder)
    return folder


def _tf_values(folder: pathlib.Path, i: int) -> list:
    return [np.load(p, allow_pickle=False).tolist()
            for p in sorted(folder.glob(f"datasets.{i}.*.npy"), key=lambda p: int(p.name.split(".")[2]))]


def _imported(folder: pathlib.Path):
    graph = tf.Graph()
    with graph.as_default():
        tf.import_graph_def(tf.GraphDef.FromString((folder / "datasets.pb").read_bytes()), name="")
    return graph, json.loads((folder / "datasets.json").read_text())["next"]


@needs_tf
def test_a_tf_written_map_filter_batch_pipeline_runs_in_adplace_as_in_tf(tf_written):
    graph, nexts = _imported(tf_written)
    assert any(f.startswith("_make_dataset") for f in graph._functions)
    assert _run_all(graph, nexts[0]) == _tf_values(tf_written, 0) == [[0, 6], [12, 18], [24]]


@needs_tf
def test_a_tf_written_nested_flat_map_runs_in_adplace_as_in_tf(tf_written):
    graph, nexts = _imported(tf_written)
    assert _run_all(graph, nexts[1]) == _tf_values(tf_written, 1)
