"""Tests for adplace/train/device_setter.py: TF's replica_device_setter and ADCME's assign_to_device."""
import logging

import pytest

import adplace as tf


def devices_by_name() -> dict[str, str]:
    return {op.name: op.device for op in tf.get_default_graph().get_operations()}


def test_variables_round_robin_over_ps_tasks_and_the_rest_on_workers():
    with tf.device(tf.train.replica_device_setter(ps_tasks=2)):
        w = tf.Variable(1.0, name="w")
        b = tf.Variable(2.0, name="b")
        c = tf.Variable(3.0, name="c")
        y = w * b + c
    assert [v.op.type for v in (w, b, c)] == ["VariableV2"] * 3
    assert [v.op.device for v in (w, b, c)] == ["/job:ps/task:0", "/job:ps/task:1", "/job:ps/task:0"]
    devices = devices_by_name()
    assert devices["w/read"] == "/job:ps/task:0"  # read is colocated with its variable
    assert devices["w/Assign"] == "/job:ps/task:0"  # a ref input: built in colocate_with(w), as TF's op_def_library
    assert devices["w/initial_value"] == "/job:worker"
    assert y.op.device == devices["mul"] == "/job:worker"


def test_ps_tasks_zero_gives_none():
    assert tf.train.replica_device_setter(ps_tasks=0) is None
    assert tf.train.replica_device_setter() is None


def test_cluster_dict_sets_the_number_of_ps_tasks():
    setter = tf.train.replica_device_setter(cluster={"ps": ["h1:2222", "h2:2222", "h3:2222"], "worker": ["w:2222"]})
    variable = tf.NodeDef(op="VariableV2")
    assert [setter(variable) for _ in range(4)] == ["/job:ps/task:0", "/job:ps/task:1", "/job:ps/task:2",
                                                    "/job:ps/task:0"]
    assert setter(tf.NodeDef(op="Add")) == "/job:worker"


def test_cluster_without_the_ps_job_gives_none():
    assert tf.train.replica_device_setter(cluster={"worker": ["w:2222"]}) is None


def test_ps_and_worker_devices_merge_with_the_request():
    setter = tf.train.replica_device_setter(ps_tasks=2, ps_device="/job:ps/device:CPU:0",
                                            worker_device="/job:worker/task:3/device:GPU:0")
    assert setter(tf.NodeDef(op="VariableV2")) == "/job:ps/task:0/device:CPU:0"
    assert setter(tf.NodeDef(op="Mul")) == "/job:worker/task:3/device:GPU:0"


def test_inner_device_scope_is_kept_on_top():
    with tf.device(tf.train.replica_device_setter(ps_tasks=2)):
        with tf.device("/gpu:0"):
            w = tf.Variable(1.0, name="w")
            y = w * 2.0
    assert w.op.device == "/job:ps/task:0/device:GPU:0"
    assert y.op.device == "/job:worker/device:GPU:0"


def test_custom_ps_strategy_and_ps_ops():
    with tf.device(tf.train.replica_device_setter(ps_tasks=3, ps_strategy=lambda op: 2)):
        w = tf.Variable(1.0, name="w")
    assert w.op.device == "/job:ps/task:2"
    setter = tf.train.replica_device_setter(ps_tasks=2, ps_ops=["Const"])
    assert setter(tf.NodeDef(op="Const")) == "/job:ps/task:0"
    assert setter(tf.NodeDef(op="VariableV2")) == "/job:worker"


def test_non_callable_strategy_is_a_type_error():
    with pytest.raises(TypeError, match="ps_strategy must be callable"):
        tf.train.replica_device_setter(ps_tasks=2, ps_strategy=3)


def test_merge_devices_false_keeps_an_existing_device(caplog):
    with caplog.at_level(logging.WARNING):
        setter = tf.train.replica_device_setter(ps_tasks=2, merge_devices=False)
    assert "merge_devices=true" in caplog.text
    assert setter(tf.NodeDef(op="VariableV2", device="/job:foo")) == "/job:foo"
    assert setter(tf.NodeDef(op="VariableV2")) == "/job:ps/task:0"


def test_standard_ps_ops():
    assert tf.train.STANDARD_PS_OPS[:3] == ("Variable", "VariableV2", "AutoReloadVariable")
    assert "VarHandleOp" in tf.train.STANDARD_PS_OPS


# --- assign_to_device (ADCME) ------------------------------------------------------------------------------------

def test_assign_to_device_with_nodedef_input():
    place = tf.assign_to_device("/device:GPU:0")
    assert place(tf.NodeDef(op="VariableV2")) == "/device:CPU:0"
    assert place(tf.NodeDef(op="Variable")) == "/device:CPU:0"
    assert place(tf.NodeDef(op="Add")) == "/device:GPU:0"
    assert tf.assign_to_device("/device:GPU:1", ps_device="/cpu:0")(tf.NodeDef(op="VariableV2")) == "/cpu:0"


def test_assign_to_device_with_operations():
    with tf.device(tf.assign_to_device("/device:GPU:1")):
        a = tf.Variable(1.0, name="a")
        b = tf.sin(a)
    assert a.device == a.op.device == "/device:CPU:0"
    assert b.device == "/device:GPU:1"
    assert devices_by_name()["a/Assign"] == "/device:CPU:0"  # with its variable (TF: ref inputs colocate)
    assert tf.PS_OPS == tf.train.PS_OPS == ("Variable", "VariableV2", "AutoReloadVariable")
