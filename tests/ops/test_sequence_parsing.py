"""tf.parse_single_sequence_example and tf.io.parse_sequence_example (TF 1.15's ParseSingleSequenceExample and
ParseSequenceExample ops): values and shapes against hand-written expectations and against real TensorFlow (in a
subprocess: tf_sequence_parsing_peer.py), errors naming the feature, and GraphDefs that TF runs."""
import importlib.util
import json
from pathlib import Path

import numpy as np
import pytest

import adplace as tf
from adplace.framework.registry import get_gradient_function
from tf_peer import needs_tf, run_peer

PEER = Path(__file__).with_name("tf_sequence_parsing_peer.py")
_spec = importlib.util.spec_from_file_location("tf_sequence_parsing_peer", PEER)
peer = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(peer)

FULL = {"context": {"length": ["int64", [3]], "weights": ["float", [0.5, 1.5]], "id": ["bytes", ["6964"]]},
        "lists": {"tokens": [["int64", [1, 2]], ["int64", [3, 4]], ["int64", [5, 6]]],
                  "tags": [["bytes", ["61"]], ["bytes", []], ["bytes", ["62", "63"]]],
                  "scores": [["float", [0.25]], ["float", [0.75]]]}}
SHORT = {"context": {"length": ["int64", [1]]},
         "lists": {"tokens": [["int64", [9, 8]]], "tags": [["bytes", ["78", "79", "7a"]]]}}
WRONG_TYPE = {"context": {"length": ["float", [1.0]]}, "lists": {}}
WRONG_COUNT = {"context": {"length": ["int64", [1]]}, "lists": {"tokens": [["int64", [1, 2, 3]]]}}
EXAMPLES = [FULL, SHORT, WRONG_TYPE, WRONG_COUNT]

CONTEXT = {"length": ["fixed", [], "int64", None], "weights": ["var", "float32"],
           "id": ["fixed", [], "string", "none"]}
SEQUENCE = {"tokens": ["seq", [2], "int64", False], "tags": ["var", "string"], "scores": ["seq", [], "float32", True]}
CASES = [
    {"single": True, "examples": [0], "context": CONTEXT, "sequence": SEQUENCE},
    {"single": True, "examples": [1], "context": CONTEXT, "sequence": SEQUENCE, "names": "short"},
    {"single": False, "examples": [0, 1], "context": CONTEXT, "sequence": SEQUENCE},
    {"single": False, "examples": [1, 0], "context": {}, "sequence": {"tags": ["var", "string"]},
     "names": ["a", "b"]},
    {"single": True, "examples": [2], "context": CONTEXT, "sequence": {}},             # length: float, not int64
    {"single": True, "examples": [1], "context": {"absent": ["fixed", [], "int64", None]}, "sequence": {}},
    {"single": True, "examples": [3], "context": {}, "sequence": {"tokens": ["seq", [2], "int64", False]}},
    {"single": False, "examples": [0, 1], "context": {}, "sequence": {"scores": ["seq", [], "float32", False]}},
]
BAD_FEATURE = {4: "length", 5: "absent", 6: "tokens", 7: "scores"}  # case: the feature its error must name


def serialize(spec: dict) -> bytes:
    return peer.sequence_example(tf, spec).SerializeToString(deterministic=True)


def fetch(build):
    with tf.Graph().as_default(), tf.Session() as sess:
        return sess.run(build())


def outcome(case: dict) -> dict:
    serialized = [serialize(e) for e in EXAMPLES]
    try:
        return {"value": peer.encode(tf, fetch(lambda: peer.parse(tf, case, serialized)))}
    except tf.errors.OpError as e:
        return {"error": f"{type(e).__name__}: {e.message}"}


def test_single_sequence_example_values_and_shapes():
    with tf.Graph().as_default():
        context, sequence = tf.parse_single_sequence_example(
            serialize(FULL), context_features={"length": tf.FixedLenFeature([], tf.int64),
                                               "weights": tf.VarLenFeature(tf.float32),
                                               "missing": tf.FixedLenFeature([2], tf.float32, default_value=[1, 2])},
            sequence_features={"tokens": tf.FixedLenSequenceFeature([2], tf.int64),
                               "tags": tf.VarLenFeature(tf.string),
                               "absent": tf.FixedLenSequenceFeature([], tf.float32, allow_missing=True),
                               "none": tf.VarLenFeature(tf.int64)})
        assert context["length"].shape.as_list() == [] and sequence["tokens"].shape.as_list() == [None, 2]
        assert sequence["tags"].indices.shape.as_list() == [None, 2]
        assert context["length"].op.type == "ParseSingleSequenceExample"
        with tf.Session() as sess:
            context, sequence = sess.run((context, sequence))
    assert context["length"] == 3 and context["missing"].tolist() == [1.0, 2.0]
    assert context["weights"].indices.tolist() == [[0], [1]] and context["weights"].values.tolist() == [0.5, 1.5]
    assert sequence["tokens"].tolist() == [[1, 2], [3, 4], [5, 6]] and sequence["tokens"].dtype == np.int64
    tags = sequence["tags"]
    assert tags.indices.tolist() == [[0, 0], [2, 0], [2, 1]] and tags.values.tolist() == [b"a", b"b", b"c"]
    assert tags.dense_shape.tolist() == [3, 2]
    assert sequence["absent"].shape == (0,) and sequence["none"].dense_shape.tolist() == [0, 0]


def test_sequence_example_batch_pads_and_reports_lengths():
    with tf.Graph().as_default():
        context, sequence, lengths = tf.io.parse_sequence_example(
            [serialize(FULL), serialize(SHORT)], context_features={"length": tf.FixedLenFeature([], tf.int64)},
            sequence_features={"tokens": tf.FixedLenSequenceFeature([2], tf.int64),
                               "tags": tf.VarLenFeature(tf.string)})
        assert sequence["tokens"].shape.as_list() == [2, None, 2] and lengths["tokens"].shape.as_list() == [2]
        assert sequence["tags"].indices.op.type == "ParseSequenceExample" and set(lengths) == {"tokens"}
        with tf.Session() as sess:
            context, sequence, lengths = sess.run((context, sequence, lengths))
    assert context["length"].tolist() == [3, 1] and lengths["tokens"].tolist() == [3, 1]
    assert sequence["tokens"].tolist() == [[[1, 2], [3, 4], [5, 6]], [[9, 8], [0, 0], [0, 0]]]
    tags = sequence["tags"]
    assert tags.indices.tolist() == [[0, 0, 0], [0, 2, 0], [0, 2, 1], [1, 0, 0], [1, 0, 1], [1, 0, 2]]
    assert tags.dense_shape.tolist() == [2, 3, 3]


@pytest.mark.parametrize("case, message", [
    (4, "Context feature: length.  Data types don't match. Expected type: int64"),
    (5, "Name: , Context feature 'absent' is required but could not be found."),
    (6, "Key: tokens, Index: 0.  Number of int64 values != expected.  values size: 3 but output shape: [2]"),
    (7, "Name: <unknown>, Feature list 'scores' is required but could not be found."),
])
def test_bad_input_is_invalid_argument_naming_the_feature(case, message):
    result = outcome(CASES[case])
    assert result["error"].startswith("InvalidArgumentError") and message in result["error"]


def test_sequence_list_type_mismatch_names_the_list_and_step():
    spec = {"lists": {"tags": [["bytes", []], ["int64", [1]]]}}
    with tf.Graph().as_default():
        _, sequence = tf.parse_single_sequence_example(serialize(spec), sequence_features={
            "tags": tf.VarLenFeature(tf.string)}, example_name="ex")
        with tf.Session() as sess, pytest.raises(tf.errors.InvalidArgumentError,
                                                  match="Name: ex, Feature List: tags, Index: 1.  Data types"):
            sess.run(sequence["tags"].values)
        with tf.Session() as sess, pytest.raises(tf.errors.InvalidArgumentError, match="Could not parse example"):
            sess.run(tf.parse_single_sequence_example(b"\x0a\x03abc", {"a": tf.VarLenFeature(tf.int64)})[0]["a"].values)


def test_config_errors_are_value_errors():
    with tf.Graph().as_default():
        with pytest.raises(ValueError, match="Missing features"):
            tf.parse_single_sequence_example("", {}, {})
        with pytest.raises(ValueError, match="Unsupported FixedLenSequenceFeature"):
            tf.parse_single_sequence_example("", {"a": tf.FixedLenSequenceFeature([], tf.int64)})
        with pytest.raises(ValueError, match="Unsupported FixedLenFeature"):
            tf.io.parse_sequence_example([""], None, {"a": tf.FixedLenFeature([], tf.int64)})
        with pytest.raises(ValueError, match=r"feature_list_dense_defaults\[a\] must be None"):
            tf.parse_single_sequence_example("", None, {"a": tf.FixedLenSequenceFeature([], tf.int64, True, 0)})
        with pytest.raises(ValueError, match="rank"):
            tf.parse_single_sequence_example(["x"], {"a": tf.VarLenFeature(tf.int64)})
        with pytest.raises(TypeError, match="float64"):
            tf.parse_single_sequence_example("", {"a": tf.VarLenFeature(tf.float64)})


def test_ops_are_not_differentiable_and_round_trip_through_graph_def():
    graph, fetches = exported_graph()
    assert {op.type for op in graph.get_operations()} >= {"ParseSingleSequenceExample", "ParseSequenceExample"}
    assert all(get_gradient_function(graph.get_tensor_by_name(f).op) is None for f in fetches)
    with tf.Session(graph=graph) as sess:
        expected = sess.run(fetches)
    copy = tf.Graph()
    with copy.as_default():
        tf.import_graph_def(graph.as_graph_def(), name="")
    with tf.Session(graph=copy) as sess:
        got = sess.run(fetches)
    assert peer.encode(tf, got) == peer.encode(tf, expected)


def exported_graph():
    """A graph of both ops on FULL and SHORT, and the names of all their outputs."""
    graph = tf.Graph()
    with graph.as_default():
        serialized = [serialize(FULL), serialize(SHORT)]
        cases = [peer.parse(tf, {**CASES[0], "examples": [0]}, serialized),
                 peer.parse(tf, {**CASES[2], "names": ["first", "second"]}, serialized)]
    flat = []
    for parsed in cases:
        for part in parsed:
            for value in part.values():
                flat += [value.indices, value.values, value.dense_shape] if isinstance(value, tf.SparseTensor) \
                    else [value]
    return graph, [t.name for t in flat]


@pytest.fixture(scope="module")
def tf_results(tmp_path_factory):
    if importlib.util.find_spec("tensorflow") is None:
        pytest.skip("TensorFlow is not installed")
    graph, fetches = exported_graph()
    job = tmp_path_factory.mktemp("sequence_parsing") / "job.json"
    job.write_text(json.dumps({"examples": EXAMPLES, "cases": CASES, "graph": {
        "graph_def": graph.as_graph_def().SerializeToString().hex(), "fetches": fetches}}))
    with tf.Session(graph=graph) as sess:
        ours = peer.encode(tf, sess.run(fetches))
    return {**json.loads(run_peer(PEER, job)), "adplace_graph": ours}


@needs_tf
def test_sequence_examples_serialize_as_tensorflows(tf_results):
    assert tf_results["serialized"] == [serialize(e).hex() for e in EXAMPLES]


@needs_tf
@pytest.mark.parametrize("index", range(len(CASES)))
def test_parsing_matches_tensorflow(tf_results, index):
    theirs, ours = tf_results["cases"][index], outcome(CASES[index])
    if "value" in theirs:
        assert ours == theirs
    else:
        assert ours["error"].split(":")[0] == theirs["error"].split(":")[0] == "InvalidArgumentError"
        assert BAD_FEATURE[index] in ours["error"] and BAD_FEATURE[index] in theirs["error"]


@needs_tf
def test_tensorflow_runs_adplaces_graph(tf_results):
    assert tf_results["graph"] == tf_results["adplace_graph"]
