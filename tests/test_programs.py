"""The programs of issue 2, verbatim (`import adplace as tf`), with what TF1 gives for each.

Each program runs on its own fresh default graph (conftest) with two virtual GPUs standing in for real ones.
"""

import numpy as np
import pytest

import adplace as tf
from adplace.errors import InvalidArgumentError
from placement_log import CPU0, GPU0, GPU1, placement_lines


pytestmark = pytest.mark.usefixtures("virtual_gpus_only")


def test_random_uniform_add_under_devicespec_scope(gpus):
    with tf.device(tf.DeviceSpec(device_type='CPU', device_index=0)):
        a = tf.random_uniform([1000, 100])
        b = tf.random_uniform([1000, 100])
        c = a + b
    result = tf.Session().run(c)

    assert result.shape == (1000, 100) and result.dtype == np.float32
    assert 0.0 <= result.min() and result.max() < 2.0
    assert result.std() > 0.1  # really random, not a constant
    assert a.device == b.device == c.device == "/device:CPU:0"
    sess = tf.Session()
    assert {sess.placement(t) for t in (a, b, c)} == {CPU0}


def test_matmul_of_cpu_constants_lands_on_gpu_and_logs_one_line_per_op(gpus, capsys):
    with tf.device('/cpu:0'):
        a = tf.constant([1.0, 2.0, 3.0, 4.0], shape=[2, 2], name='a')
        b = tf.constant([1.0, 2.0, 3.0, 4.0], shape=[2, 2], name='b')
    c = tf.matmul(a, b)          # no request: lands on GPU:0 when a GPU exists
    sess = tf.Session(config=tf.ConfigProto(log_device_placement=True))
    print(sess.run(c))           # prints one placement line per op, then [[7, 10], [15, 22]]

    out = capsys.readouterr().out
    assert placement_lines(out) == [("a", "Const", CPU0), ("b", "Const", CPU0), ("MatMul", "MatMul", GPU0)]
    assert "MatMul: (MatMul): /job:localhost/replica:0/task:0/device:GPU:0\n" in out
    assert out.index("MatMul: (MatMul)") < out.index("[[")  # the log comes before the printed value
    np.testing.assert_array_equal(sess.run(c), [[7.0, 10.0], [15.0, 22.0]])
    assert sess.placement(c) == GPU0
    assert c.device == ""  # placement never writes the request


def test_placement_log_is_printed_once_per_placement_not_per_run(gpus, capsys):
    with tf.device('/cpu:0'):
        a = tf.constant([1.0, 2.0, 3.0, 4.0], shape=[2, 2], name='a')
    c = tf.matmul(a, a)
    sess = tf.Session(config=tf.ConfigProto(log_device_placement=True))
    sess.run(c)
    sess.run(c)
    lines = placement_lines(capsys.readouterr().out)
    assert [name for name, _, _ in lines] == ["a", "MatMul"]


def test_multi_tower_matmuls_summed_on_cpu(gpus, capsys):
    c = []
    for d in ['/gpu:0', '/gpu:1']:
        with tf.device(d):
            a = tf.constant([1.0, 2.0, 3.0, 4.0], shape=[2, 2])
            b = tf.constant([1.0, 2.0, 3.0, 4.0], shape=[2, 2])
            c.append(tf.matmul(a, b))
    with tf.device('/cpu:0'):
        sum = tf.add_n(c)  # noqa: A001 - the program shadows the builtin, verbatim

    sess = tf.Session(config=tf.ConfigProto(log_device_placement=True))
    np.testing.assert_array_equal(sess.run(sum), [[14.0, 20.0], [30.0, 44.0]])
    assert placement_lines(capsys.readouterr().out) == [
        ("Const", "Const", GPU0), ("Const_1", "Const", GPU0), ("MatMul", "MatMul", GPU0),
        ("Const_2", "Const", GPU1), ("Const_3", "Const", GPU1), ("MatMul_1", "MatMul", GPU1),
        ("AddN", "AddN", CPU0)]
    assert [(t.tensor_name, t.src_device, t.dst_device) for t in sess.plan_for(sum).transfers] == [
        ("MatMul:0", GPU0, CPU0), ("MatMul_1:0", GPU1, CPU0)]


def test_device_function_puts_variables_on_cpu_and_the_rest_on_gpu(gpus):
    def variables_on_cpu(op):
        if op.type == "Variable" or op.type == "VariableV2":
            return "/cpu:0"
        return "/gpu:0"
    with tf.device(variables_on_cpu):
        a = tf.Variable(3.0)
        b = tf.constant(4.0)
        c = a * b

    sess = tf.Session()
    sess.run(tf.global_variables_initializer())
    assert sess.run(c) == 12.0
    assert a.device == "/cpu:0" and a.op.type == "VariableV2"  # a device function's strings are kept verbatim
    assert b.device == c.device == "/gpu:0"
    assert sess.placement(a) == CPU0
    assert sess.placement(a.value()) == CPU0  # the read snapshot stays with its variable
    assert sess.placement(b) == sess.placement(c) == GPU0


def test_int32_variable_on_gpu_fails_at_run_without_soft_placement(gpus):
    with tf.device("/gpu:0"):
        i = tf.Variable(3)        # int32: no GPU kernel -> InvalidArgumentError at run,

    sess = tf.Session()
    with pytest.raises(InvalidArgumentError, match=r"operation Variable\b") as info:
        sess.run(i.initializer)
    message = str(info.value)
    assert "GPU" in message and "int32" in message
    assert "allow_soft_placement" in message  # the fix is named


def test_int32_variable_on_gpu_falls_back_to_cpu_with_soft_placement(gpus, capsys):
    with tf.device("/gpu:0"):
        i = tf.Variable(3)
    config = tf.ConfigProto()     # unless allow_soft_placement, which falls back to /cpu:0
    config.allow_soft_placement = True

    config.log_device_placement = True
    sess = tf.Session(config=config)
    sess.run(i.initializer)
    value = sess.run(i)
    assert value == 3 and value.dtype == np.int32
    assert sess.placement(i) == CPU0
    assert i.device == "/device:GPU:0"  # the request is kept
    out = capsys.readouterr().out
    assert ("Variable", "VariableV2", CPU0) in placement_lines(out)
    assert "soft placement" in out
    notes = {name: note for name, _, _, _, note in sess.placement_table()}
    assert "soft placement" in notes["Variable"] and "GPU:0" in notes["Variable"]


def test_control_dependencies_on_tensors(gpus):
    a = tf.constant(1.0); b = a + 2.0  # noqa: E702 - verbatim
    with tf.control_dependencies([a, b]):
        x = tf.constant(3.0); y = tf.constant(4.0)  # noqa: E702 - verbatim
    z = x + y

    assert x.op.control_inputs == [a.op, b.op] and y.op.control_inputs == [a.op, b.op]
    assert z.op.control_inputs == []  # outside the block: no control inputs
    sess = tf.Session()
    assert sess.run(z) == 7.0
    plan_ops = {step.op.name for step in sess.plan_for(z).steps}
    assert {a.op.name, b.op.name} <= plan_ops  # the control inputs run too


def test_adcme_assign_to_device_example(gpus):
    PS_OPS = ["Variable", "VariableV2", "AutoReloadVariable"]  # noqa: N806, F841 - verbatim
    with tf.device(tf.assign_to_device("/device:GPU:0")):   # also a user-written closure that takes an op or a NodeDef
        a = tf.Variable(1.0)
        b = tf.sin(a)
    assert a.device == "/device:CPU:0" and b.device == "/device:GPU:0"

    sess = tf.Session()
    sess.run(a.initializer)
    assert sess.run(b) == pytest.approx(np.sin(1.0))
    assert sess.placement(a) == CPU0 and sess.placement(b) == GPU0


def test_adcme_user_closure_taking_op_or_nodedef(gpus):
    ps_ops = ["Variable", "VariableV2", "AutoReloadVariable"]

    def assign_to_device(device, ps_device="/device:CPU:0"):
        def _assign(op):
            node_def = op if isinstance(op, tf.NodeDef) else op.node_def
            return ps_device if node_def.op in ps_ops else device
        return _assign
    with tf.device(assign_to_device("/device:GPU:0")):
        a = tf.Variable(1.0)
        b = tf.sin(a)
    assert a.device == "/device:CPU:0" and b.device == "/device:GPU:0"
    assert tf.Session().placement(b) == GPU0


def test_without_gpus_matmul_lands_on_cpu():
    tf.config.set_virtual_gpus(0)
    with tf.device('/cpu:0'):
        a = tf.constant([1.0, 2.0, 3.0, 4.0], shape=[2, 2], name='a')
        b = tf.constant([1.0, 2.0, 3.0, 4.0], shape=[2, 2], name='b')
    c = tf.matmul(a, b)
    sess = tf.Session()
    np.testing.assert_array_equal(sess.run(c), [[7.0, 10.0], [15.0, 22.0]])
    assert sess.placement(c) == CPU0
    assert [d.name for d in sess.list_devices()] == [CPU0]


def test_without_gpus_a_gpu_request_names_the_cpu_as_the_only_device():
    tf.config.set_virtual_gpus(0)
    with tf.device('/gpu:0'):
        c = tf.constant(1.0, name="c")
    with pytest.raises(InvalidArgumentError, match=r"operation c\b") as info:
        tf.Session().run(c)
    message = str(info.value)
    assert f"available devices are [ {CPU0} ]" in message
    assert "GPU:0" in message and "device:GPU:0 ]" not in message
