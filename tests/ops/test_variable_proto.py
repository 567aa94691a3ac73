"""Tests for adplace/ops/variable_def.py: Variable.to_proto / Variable.from_proto with TF's VariableDef (from
TensorBoard's protos), export and import scopes, SaveSliceInfo and its protos."""
import numpy as np
import pytest

import adplace as tf
from adplace.lib import protos
from adplace.ops import variable_def


def _variable_pb2():
    return protos.variable_pb2


def test_save_slice_info_spec_and_fields():
    assert tf.Variable.SaveSliceInfo is variable_def.SaveSliceInfo
    info = tf.Variable.SaveSliceInfo("emb/w", [10, 4], [5, 0], [5, 4])
    assert info.spec == "10 4 5,5:0,4"
    assert tf.Variable.SaveSliceInfo("v", [4], [3], [1]).spec == "4 3,1"
    assert repr(info) == "<SaveSliceInfo 'emb/w' '10 4 5,5:0,4'>"
    var = tf.Variable(1.0)
    assert var._get_save_slice_info() is None
    var._set_save_slice_info(info)
    assert var._save_slice_info is info


@pytest.mark.parametrize("name, scope, expected", [
    ("outer/v:0", "outer", "v:0"), ("outer/v:0", "outer/", "v:0"), ("^outer/v", "outer", "^v"),
    ("loc:@outer/v", "outer", "loc:@v"), ("other/v:0", "outer", "other/v:0"), ("v:0", None, "v:0"),
])
def test_strip_and_prepend_name_scope(name, scope, expected):
    assert variable_def.strip_name_scope(name, scope) == expected
    if scope and expected != name:
        assert variable_def.prepend_name_scope(expected, scope) == name


def test_to_proto_fields():
    _variable_pb2()
    v = tf.Variable(np.ones(3, np.float32), name="v", trainable=False)
    proto = v.to_proto()
    assert (proto.variable_name, proto.initial_value_name, proto.initializer_name, proto.snapshot_name) == (
        "v:0", "v/initial_value:0", "v/Assign", "v/read:0")
    assert not proto.trainable and not proto.is_resource and not proto.HasField("save_slice_info_def")
    assert proto.synchronization == tf.VariableSynchronization.AUTO.value


def test_to_proto_strips_the_export_scope():
    _variable_pb2()
    with tf.name_scope("outer"):
        v = tf.Variable(1.0, name="v")
    proto = v.to_proto(export_scope="outer")
    assert (proto.variable_name, proto.initializer_name, proto.snapshot_name) == ("v:0", "v/Assign", "v/read:0")
    assert v.to_proto(export_scope="other") is None


def test_from_proto_round_trip_shares_the_ops():
    _variable_pb2()
    v = tf.Variable(np.arange(3, dtype=np.float32), name="v")
    w = tf.Variable.from_proto(v.to_proto())
    assert isinstance(w, tf.Variable) and w is not v
    assert (w.name, w.op, w.initializer, w.value(), w.initial_value) == (v.name, v.op, v.initializer, v.value(),
                                                                          v.initial_value)
    assert w.trainable and w._save_slice_info is None and w.constraint is None
    assert tf.global_variables() == [v]   # from_proto adds nothing to collections
    with tf.Session() as sess:
        sess.run(w.initializer)
        np.testing.assert_array_equal(sess.run(w), [0.0, 1.0, 2.0])


def test_from_proto_with_an_import_scope():
    _variable_pb2()
    with tf.name_scope("imported"):
        v = tf.Variable(2.0, name="v")
    proto = v.to_proto(export_scope="imported")
    assert proto.variable_name == "v:0"
    assert tf.Variable.from_proto(proto, import_scope="imported").op is v.op
    with pytest.raises(KeyError):
        tf.Variable.from_proto(proto)   # no "v" at the top level


def test_slice_info_round_trips_through_the_proto():
    _variable_pb2()
    pv = tf.get_variable("emb", shape=[10, 4], partitioner=tf.fixed_size_partitioner(2))
    part = list(pv)[1]
    proto = part.to_proto()
    assert proto.save_slice_info_def.full_name == "emb"
    assert list(proto.save_slice_info_def.var_offset) == [5, 0]
    copy = tf.Variable.from_proto(proto)
    assert copy._save_slice_info.spec == "10 4 5,5:0,4" and copy._save_slice_info.full_name == "emb"
    info = tf.Variable.SaveSliceInfo("outer/emb", [4], [0], [2])
    assert info.to_proto(export_scope="outer").full_name == "emb"
    assert info.to_proto(export_scope="other") is None
    imported = tf.Variable.SaveSliceInfo(save_slice_info_def=info.to_proto(), import_scope="x")
    assert (imported.full_name, imported.full_shape, imported.var_offset, imported.var_shape) == (
        "x/outer/emb", [4], [0], [2])


def test_from_proto_errors():
    variable_pb2 = _variable_pb2()
    v = tf.Variable(1.0, name="v")
    with pytest.raises(ValueError, match="variable_def and initial_value are mutually exclusive"):
        tf.Variable(1.0, variable_def=v.to_proto())
    with pytest.raises(TypeError, match="variable_def must be a VariableDef proto, got SaveSliceInfoDef"):
        tf.Variable.from_proto(variable_pb2.SaveSliceInfoDef(full_name="v"))
