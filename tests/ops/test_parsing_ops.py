"""Tests for adplace/ops/parsing_ops.py, string_ops.py and their kernels (adplace/kernels/parsing.py): tf.train.Example
protos, parse_example / parse_single_example with FixedLenFeature, VarLenFeature, FixedLenSequenceFeature and
SparseFeature, decode_csv, decode_raw, decode_compressed and string_split. Exact values, static shapes, TF's op types
and error messages; Examples serialized and parsed by real TensorFlow (in a subprocess) compared with adplace's;
a property test of decode_csv against Python's csv module."""
import csv
import gzip
import io
import json
import pathlib
import zlib

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import adplace as tf
from tests.ops.graph_run import run
from example_spec import example
from tests.tf_peer import needs_tf, run_peer

PEER = pathlib.Path(__file__).with_name("tf_parsing_peer.py")


def make_example(spec: dict) -> "tf.train.Example":
    return example(tf, spec)


def serialize(spec: dict) -> bytes:
    return make_example(spec).SerializeToString(deterministic=True)


def parse(serialized, features, **kwargs):
    if np.ndim(serialized) == 0:
        return run(tf.parse_single_example(serialized, features, **kwargs))
    return run(tf.parse_example(serialized, features, **kwargs))


def error_of(fn) -> str:
    with pytest.raises(tf.errors.InvalidArgumentError) as info:
        fn()
    return info.value.message.split("\n")[0]


EX = {"age": ["int64", [42]], "scores": ["float", [1.5, -2.0]], "tags": ["bytes", ["61", "6263"]],
      "seq": ["float", [1, 2, 3, 4]]}
EX2 = {"age": ["int64", [7]], "scores": ["float", [0.5, 0.25]], "tags": ["bytes", []], "empty": ["none", []]}


# --- Example protos ------------------------------------------------------------------------------------------------
def test_example_protos_are_tfs_messages():
    ex = make_example(EX)
    assert ex.features.feature["age"].int64_list.value == [42]
    assert ex.features.feature["scores"].WhichOneof("kind") == "float_list"
    again = tf.train.Example.FromString(ex.SerializeToString())
    assert again == ex
    seq = tf.train.SequenceExample(context=ex.features)
    seq.feature_lists.feature_list["f"].feature.add().int64_list.value.append(3)
    assert tf.train.SequenceExample.FromString(seq.SerializeToString()) == seq
    # TF's wire format: packed floats (field 1, length 8) inside FloatList
    assert tf.train.FloatList(value=[1.0, 2.0]).SerializeToString() == b"\n\x08\x00\x00\x80?\x00\x00\x00@"
    assert tf.train.Int64List(value=[1, 300]).SerializeToString() == b"\n\x03\x01\xac\x02"


# --- parse_single_example ----------------------------------------------------------------------------------------
def test_parse_single_example_values_and_shapes():
    features = {"age": tf.FixedLenFeature([], tf.int64), "scores": tf.FixedLenFeature([2], tf.float32),
                "tags": tf.VarLenFeature(tf.string), "missing": tf.FixedLenFeature([2], tf.int64, default_value=[5, 6]),
                "seq": tf.FixedLenSequenceFeature([2], tf.float32, allow_missing=True)}
    parsed = tf.parse_single_example(serialize(EX), features)
    assert parsed["age"].op.type == "ParseSingleExample"
    assert [parsed[k].shape.as_list() for k in ("age", "scores", "missing")] == [[], [2], [2]]
    assert parsed["seq"].shape.as_list() == [None, 2]
    assert isinstance(parsed["tags"], tf.SparseTensor)
    out = run(parsed)
    assert out["age"] == 42 and out["age"].dtype == np.int64
    np.testing.assert_array_equal(out["scores"], np.float32([1.5, -2.0]))
    np.testing.assert_array_equal(out["missing"], [5, 6])
    np.testing.assert_array_equal(out["seq"], np.float32([[1, 2], [3, 4]]))
    np.testing.assert_array_equal(out["tags"].indices, [[0], [1]])
    assert list(out["tags"].values) == [b"a", b"bc"]
    np.testing.assert_array_equal(out["tags"].dense_shape, [2])


def test_parse_single_example_with_a_name_uses_parse_example():
    parsed = tf.parse_single_example(serialize(EX), {"tags": tf.VarLenFeature(tf.string),
                                                     "age": tf.FixedLenFeature([1], tf.int64)}, example_names="ex0")
    assert parsed["age"].op.type == "Squeeze"
    out = run(parsed)
    np.testing.assert_array_equal(out["age"], [42])
    np.testing.assert_array_equal(out["tags"].indices, [[0], [1]])
    np.testing.assert_array_equal(out["tags"].dense_shape, [2])
    message = error_of(lambda: parse(serialize(EX), {"age": tf.FixedLenFeature([], tf.float32)},
                                     example_names="ex0"))
    assert message.startswith("Name: ex0, Key: age, Index: 0.  Data types don't match.")


# --- parse_example -----------------------------------------------------------------------------------------------
def test_parse_example_batches_and_pads():
    features = {"age": tf.FixedLenFeature([], tf.int64), "tags": tf.VarLenFeature(tf.string),
                "seq": tf.FixedLenSequenceFeature([], tf.float32, allow_missing=True, default_value=-1.0),
                "scores": tf.FixedLenFeature([2], tf.float32)}
    serialized = tf.placeholder(tf.string, [None])
    parsed = tf.parse_example(serialized, features)
    assert parsed["age"].op.type == "ParseExample" and parsed["age"].op.name == "ParseExample/ParseExample"
    assert parsed["seq"].shape.as_list() == [None, None] and parsed["scores"].shape.as_list() == [None, 2]
    with tf.Session() as sess:
        out = sess.run(parsed, {serialized: [serialize(EX), serialize(EX2)]})
    np.testing.assert_array_equal(out["age"], [42, 7])
    np.testing.assert_array_equal(out["seq"], np.float32([[1, 2, 3, 4], [-1, -1, -1, -1]]))
    np.testing.assert_array_equal(out["scores"], np.float32([[1.5, -2.0], [0.5, 0.25]]))
    np.testing.assert_array_equal(out["tags"].indices, [[0, 0], [0, 1]])
    np.testing.assert_array_equal(out["tags"].dense_shape, [2, 2])
    empty = parse(np.array([], dtype=object), {"tags": tf.VarLenFeature(tf.int64),
                                               "age": tf.FixedLenFeature([3], tf.int64, default_value=[0, 0, 0])})
    assert empty["age"].shape == (0, 3) and empty["tags"].indices.shape == (0, 2)
    np.testing.assert_array_equal(empty["tags"].dense_shape, [0, 0])


def test_sparse_feature_merges_index_and_value():
    ex = serialize({"ix": ["int64", [3, 1]], "val": ["float", [10, 20]]})
    out = parse([ex], {"sp": tf.SparseFeature("ix", "val", tf.float32, 5)})
    assert list(out) == ["sp"]
    np.testing.assert_array_equal(out["sp"].indices, [[0, 1], [0, 3]])
    np.testing.assert_array_equal(out["sp"].values, np.float32([20, 10]))
    np.testing.assert_array_equal(out["sp"].dense_shape, [1, 5])


def test_parse_errors_name_the_feature_and_example():
    ex = serialize(EX)
    assert error_of(lambda: parse([ex, serialize({})], {"age": tf.FixedLenFeature([], tf.int64)})) == (
        "Name: <unknown>, Feature: age (data type: int64) is required but could not be found.")
    assert error_of(lambda: parse(serialize({}), {"age": tf.FixedLenFeature([], tf.int64)})) == (
        "Feature: age (data type: int64) is required but could not be found.")
    assert error_of(lambda: parse([serialize(EX2), ex], {"age": tf.FixedLenFeature([], tf.float32)},
                                  example_names=["a", "b"])) == (
        "Name: a, Key: age, Index: 0.  Data types don't match. Data type: int64 but expected type: float")
    assert error_of(lambda: parse([ex], {"scores": tf.FixedLenFeature([3], tf.float32)})) == (
        "Name: <unknown>, Key: scores, Index: 0.  Number of float values != expected.  Values size: 2 but output "
        "shape: [3]")
    assert error_of(lambda: parse(ex, {"scores": tf.FixedLenFeature([3], tf.float32)})) == (
        "Key: scores.  Can't parse serialized Example.")
    assert error_of(lambda: parse(ex, {"scores": tf.FixedLenFeature([], tf.int64)})) == (
        "Key: scores.  Data types don't match. Data type: float but expected type: int64")
    assert error_of(lambda: parse([ex], {"seq": tf.FixedLenSequenceFeature([], tf.int64, allow_missing=True)})) == (
        "Name: <unknown>, Key: seq, Index: 0.  Data types don't match. Expected type: int64")
    assert error_of(lambda: parse([ex], {"tags": tf.VarLenFeature(tf.int64)})) == (
        "Name: <unknown>, Key: tags, Index: 0.  Data types don't match. Expected type: int64, Actual type: string")
    assert error_of(lambda: parse([ex], {"seq": tf.FixedLenSequenceFeature([3], tf.float32, allow_missing=True)})) \
        == ("Name: <unknown>, Key: seq, Index: 0.  Number of float values is not a multiple of stride length. "
            "Saw 4 values but output shape is: [?,3]")
    assert error_of(lambda: parse([b"\xff\xff"], {"a": tf.VarLenFeature(tf.int64)})).startswith(
        "Could not parse example input, value: '")


def test_parse_config_errors_are_value_errors():
    with pytest.raises(ValueError, match="Missing: features was"):
        tf.parse_example([b""], {})
    with pytest.raises(ValueError, match="requires allow_missing to be True"):
        tf.parse_example([b""], {"a": tf.FixedLenSequenceFeature([], tf.float32)})
    with pytest.raises(ValueError, match="First dimension of shape for feature a unknown"):
        tf.parse_example([b""], {"a": tf.FixedLenFeature([None], tf.float32)})
    with pytest.raises(TypeError, match="DataType int32 not in list of allowed values"):
        tf.parse_example([b""], {"a": tf.VarLenFeature(tf.int32)})
    with pytest.raises(ValueError):
        tf.parse_example(b"", {"a": tf.VarLenFeature(tf.int64)})  # ParseExample needs a vector
    with pytest.raises(ValueError, match="Dense and sparse keys must not intersect"):
        tf.parse_example([b""], {"a": tf.FixedLenFeature([], tf.float32), "s": tf.SparseFeature("i", "a", tf.float32, 3)})


def test_parse_graph_round_trips_through_graph_def():
    serialized = tf.placeholder(tf.string, [None], name="serialized")
    tf.parse_example(serialized, {"age": tf.FixedLenFeature([], tf.int64, default_value=-1),
                                  "tags": tf.VarLenFeature(tf.string)})
    graph_def = tf.get_default_graph().as_graph_def()
    node = next(n for n in graph_def.node if n.op == "ParseExample")
    assert (node.attr["Nsparse"].i, node.attr["Ndense"].i) == (1, 1)
    assert list(node.attr["Tdense"].list.type) == [tf.int64.as_datatype_enum]
    with tf.Graph().as_default():
        tf.import_graph_def(graph_def, name="")
        g = tf.get_default_graph()
        fetch = [g.get_tensor_by_name("ParseExample/ParseExample:1"), g.get_tensor_by_name("ParseExample/ParseExample:3")]
        with tf.Session() as sess:
            values, age = sess.run(fetch, {"serialized:0": [serialize(EX), serialize({})]})
    assert list(values) == [b"a", b"bc"]
    np.testing.assert_array_equal(age, [42, -1])


# --- interop with TensorFlow -----------------------------------------------------------------------------------------
EXAMPLES = [EX, EX2, {"age": ["int64", [-(2 ** 40)]], "scores": ["float", [3.25, 1e-3]], "tags": ["bytes", ["ff00"]],
                      "seq": ["float", [9, 8]]}]
PARSE_CASES = [
    {"examples": [0, 1, 2], "single": False, "names": None, "features": {
        "age": ["fixed", [], "int64", None], "scores": ["fixed", [2], "float32", None], "tags": ["var", "string"],
        "seq": ["seq", [], "float32", 0.5], "missing": ["fixed", [2], "int64", [8, 9]]}},
    {"examples": [0], "single": True, "names": None, "features": {
        "seq": ["seq", [2], "float32", None], "tags": ["var", "string"], "age": ["fixed", [1], "int64", None]}},
    {"examples": [0, 1], "single": False, "names": ["x", "y"], "features": {"empty": ["fixed", [], "float32", None]}},
    {"examples": [0], "single": False, "names": None, "features": {"age": ["fixed", [], "float32", None]}},
    {"examples": [1], "single": True, "names": None, "features": {"scores": ["fixed", [3], "float32", None]}},
]
CSV_CASES = [
    {"records": ["1,2.5,\"a,\"\"b\"\"\",x", ",,,", "-7,1e3,\"\",y"], "defaults": [[0], [1.5], ["d"], [""]],
     "kwargs": {}},
    {"records": ["a;NA;3", "b;;4"], "defaults": [[""], [9], [0.0]], "kwargs": {"field_delim": ";", "na_value": "NA"}},
    {"records": ["1,2,3,4", "5,6,7,8"], "defaults": [[0], [0]], "kwargs": {"select_cols": [1, 3]}},
    {"records": ["1,2"], "defaults": [[0], []], "kwargs": {}},
    {"records": [",3"], "defaults": [[], [0]], "kwargs": {}},
    {"records": ["1,x"], "defaults": [[0], [0]], "kwargs": {}},
    {"records": ["1,2,3"], "defaults": [[0], [0]], "kwargs": {}},
    {"records": ["a\"b,1"], "defaults": [[""], [0]], "kwargs": {}},
    {"records": ["a\"b,1"], "defaults": [[""], [0]], "kwargs": {"use_quote_delim": False}},
    {"records": [" 12 , 0x1A,inf"], "defaults": [[0], [0.0], [0.0]], "kwargs": {}},
    {"records": ["2147483648"], "defaults": [[0]], "kwargs": {}},
]


def encode(value) -> dict:
    """A fetched value as the peer encodes it."""
    if isinstance(value, tf.SparseTensorValue):
        return {"indices": encode(value.indices), "values": encode(value.values), "shape": encode(value.dense_shape)}
    value = np.asarray(value)
    flat = [v.hex() if isinstance(v, bytes) else v for v in value.reshape(-1).tolist()]
    return {"dtype": "string" if value.dtype == object else value.dtype.name, "shape": list(value.shape),
            "values": flat}


def outcome(build, *args, **kwargs) -> dict:
    """The encoded result of running `build(*args, **kwargs)` in a fresh graph, or its error."""
    try:
        with tf.Graph().as_default():
            fetched = run(build(*args, **kwargs))
    except tf.errors.OpError as e:
        return {"error": type(e).__name__ + ": " + e.message.split("\n")[0]}
    if isinstance(fetched, dict):
        return {"value": {k: encode(v) for k, v in fetched.items()}}
    return {"value": [encode(v) for v in fetched]}


def feature(spec):
    if spec[0] == "var":
        return tf.VarLenFeature(tf.as_dtype(spec[1]))
    if spec[0] == "fixed":
        return tf.FixedLenFeature(spec[1], tf.as_dtype(spec[2]), default_value=spec[3])
    return tf.FixedLenSequenceFeature(spec[1], tf.as_dtype(spec[2]), allow_missing=True, default_value=spec[3])


def exported_graph() -> tuple:
    """A graph of every parsing op on constants, as (GraphDef, fetched tensor names, adplace's fetched values)."""
    with tf.Graph().as_default() as graph:
        ex = [serialize(e) for e in EXAMPLES]
        single = tf.parse_single_example(ex[0], {"tags": tf.VarLenFeature(tf.string),
                                                 "seq": tf.FixedLenSequenceFeature([2], tf.float32, allow_missing=True)})
        batch = tf.parse_example(ex, {"age": tf.FixedLenFeature([], tf.int64),
                                      "missing": tf.FixedLenFeature([2], tf.float32, default_value=[1.0, 2.0]),
                                      "seq": tf.FixedLenSequenceFeature([], tf.float32, allow_missing=True,
                                                                        default_value=-1.0)})
        split = tf.string_split(["a b", "c"])
        fetches = [single["tags"].values, single["tags"].dense_shape, single["seq"], batch["age"], batch["missing"],
                   batch["seq"], *tf.decode_csv(["1,\"x,y\"", ",z"], [[5], [""]]),
                   tf.decode_raw([b"\x00\x01"], tf.int16, little_endian=False), split.indices, split.values,
                   tf.io.decode_compressed([zlib.compress(b"abc")], "ZLIB")]
        values = [encode(v) for v in run(fetches)]
        return graph.as_graph_def(), [t.name for t in fetches], values


@pytest.fixture(scope="module")
def tf_results(tmp_path_factory):
    job = tmp_path_factory.mktemp("parsing") / "job.json"
    graph_def, fetches, values = exported_graph()
    job.write_text(json.dumps({"examples": EXAMPLES, "parse": PARSE_CASES, "csv": CSV_CASES,
                               "graph": {"graph_def": graph_def.SerializeToString().hex(), "fetches": fetches}}))
    return {**json.loads(run_peer(PEER, job)), "adplace_graph": values}


@needs_tf
def test_graphs_of_parsing_ops_run_in_tensorflow(tf_results):
    assert tf_results["graph"] == tf_results["adplace_graph"]


@needs_tf
def test_examples_serialized_by_tensorflow_parse_the_same(tf_results):
    serialized = [bytes.fromhex(s) for s in tf_results["serialized"]]
    assert serialized == [serialize(e) for e in EXAMPLES]  # the same bytes for the same Example
    for case, expected in zip(PARSE_CASES, tf_results["parse"]):
        features = {k: feature(v) for k, v in case["features"].items()}
        data = [serialized[i] for i in case["examples"]]
        if case["single"]:
            got = outcome(tf.parse_single_example, data[0], features)
        else:
            got = outcome(tf.parse_example, data, features, example_names=case["names"])
        if "error" in expected and "error" in got:  # TF 2 adds details after TF 1.15's message
            assert expected["error"].startswith(got["error"].rstrip(".")), case
        else:
            assert got == expected, case


@needs_tf
def test_decode_csv_matches_tensorflow(tf_results):
    for case, expected in zip(CSV_CASES, tf_results["csv"]):
        got = outcome(tf.decode_csv, case["records"], case["defaults"], **case["kwargs"])
        if "error" in expected and "error" in got:  # adplace adds the record to TF's message
            assert got["error"].startswith(expected["error"]), case
        else:
            assert got == expected, case


# --- decode_csv ----------------------------------------------------------------------------------------------------
def test_decode_csv_types_defaults_and_quotes():
    cols = tf.decode_csv(["1,2.5,\"a,\"\"b\",7,x", ",,,,"],
                         [[0], tf.constant([0.5], tf.float64), ["d"], tf.constant([9], tf.int64), [""]])
    assert [c.dtype for c in cols] == [tf.int32, tf.float64, tf.string, tf.int64, tf.string]
    assert cols[0].op.type == "DecodeCSV" and cols[0].shape.as_list() == [2]
    a, b, c, d, e = run(cols)
    np.testing.assert_array_equal(a, np.int32([1, 0]))
    np.testing.assert_array_equal(b, [2.5, 0.5])
    assert list(c) == [b'a,"b', b"d"] and list(e) == [b"x", b""]
    np.testing.assert_array_equal(d, np.int64([7, 9]))
    scalar = run(tf.decode_csv("3", [[1.0]]))[0]
    assert scalar.shape == () and scalar == 3.0


def test_decode_csv_errors_name_the_record():
    assert error_of(lambda: run(tf.decode_csv(["1,2", ",3"], [[], [0]]))) == (
        "Field 0 is required but missing in record 1!")
    assert error_of(lambda: run(tf.decode_csv(["1,2,3"], [[0], [0]]))) == "Expect 2 fields but have 3 in record 0"
    assert error_of(lambda: run(tf.decode_csv(["1,x"], [[0], [0]]))) == "Field 1 in record 0 is not a valid int32: x"
    assert error_of(lambda: run(tf.decode_csv(["ok", "a\"b"], [[""]]))) == (
        "Unquoted fields cannot have quotes/CRLFs inside (record 1: 'a\"b')")
    assert error_of(lambda: run(tf.decode_csv(["\"ab\"c"], [[""]]))) == (
        "Quote inside a string has to be escaped by another quote (record 0: '\"ab\"c')")
    assert error_of(lambda: run(tf.decode_csv(["\"ab"], [[""]]))) == (
        "Quoted field has to end with quote followed by delim or end (record 0: '\"ab')")
    with pytest.raises(ValueError, match="select_cols is not strictly increasing"):
        tf.decode_csv(["1"], [[0], [0]], select_cols=[1, 1])
    with pytest.raises(TypeError, match="DataType bool not in list"):
        tf.decode_csv(["1"], [[True]])


FIELD = st.text(alphabet=",\" ab1", max_size=6)


@settings(max_examples=40, deadline=None)
@given(st.lists(st.lists(FIELD, min_size=3, max_size=3), min_size=1, max_size=4))
def test_decode_csv_agrees_with_the_csv_module(rows):
    lines = []
    for row in rows:
        buffer = io.StringIO()
        csv.writer(buffer, lineterminator="").writerow(row)
        lines.append(buffer.getvalue())
    expected = [[f or "<NA>" for f in next(csv.reader([line]))] for line in lines]
    with tf.Graph().as_default():
        cols = run(tf.decode_csv(lines, [["<NA>"]] * 3))
    got = [[cols[c][r].decode() for c in range(3)] for r in range(len(rows))]
    assert got == expected


# --- decode_raw, decode_compressed, string_split ------------------------------------------------------------------
def test_decode_raw():
    data = np.array([[1, -2], [3, 4]], dtype="<i4")
    out = tf.decode_raw([data[0].tobytes(), data[1].tobytes()], tf.int32)
    assert out.op.type == "DecodeRaw" and out.shape.as_list() == [2, None]
    np.testing.assert_array_equal(run(out), data)
    big = run(tf.decode_raw(np.float32([1.5]).astype(">f4").tobytes(), tf.float32, little_endian=False))
    np.testing.assert_array_equal(big, np.float32([1.5]))
    np.testing.assert_array_equal(run(tf.decode_raw(bytes=[b"\x01\x02"], out_type=tf.uint8)), [[1, 2]])
    assert run(tf.decode_raw([b"", b""], tf.float64)).shape == (2, 0)
    assert error_of(lambda: run(tf.decode_raw([b"abcd", b"ab"], tf.int16))) == (
        "DecodeRaw requires input strings to all be the same size, but element 1 has size 4 != 2")
    assert error_of(lambda: run(tf.decode_raw([b"abc"], tf.int16))) == (
        "Input to DecodeRaw has length 3 that is not a multiple of 2, the size of int16")


def test_decode_compressed():
    text = b"hello " * 50
    out = run([tf.io.decode_compressed([zlib.compress(text)], "ZLIB"),
               tf.io.decode_compressed(gzip.compress(text), "GZIP"), tf.io.decode_compressed([b"raw"])])
    assert list(out[0]) == [text] and out[1] == text and list(out[2]) == [b"raw"]
    assert error_of(lambda: run(tf.io.decode_compressed([b"not zlib"], "ZLIB"))).startswith("Corrupt ZLIB data")


def test_string_split():
    st_ = tf.string_split(["hello world", "", "a  b c"])
    assert st_.indices.op.type == "StringSplit"
    out = run(st_)
    np.testing.assert_array_equal(out.indices, [[0, 0], [0, 1], [2, 0], [2, 1], [2, 2]])
    assert list(out.values) == [b"hello", b"world", b"a", b"b", b"c"]
    np.testing.assert_array_equal(out.dense_shape, [3, 3])
    kept = run(tf.string_split(["a  b"], skip_empty=False))
    assert list(kept.values) == [b"a", b"", b"b"]
    assert list(run(tf.string_split(["a,b;c"], delimiter=",;")).values) == [b"a", b"b", b"c"]
    chars = run(tf.string_split(["ab", "c"], ""))
    assert list(chars.values) == [b"a", b"b", b"c"]
    np.testing.assert_array_equal(chars.dense_shape, [2, 2])
    with pytest.raises(ValueError):
        tf.string_split("not a vector")
