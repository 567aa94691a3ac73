"""Tests for adplace/train/device_setter.py: replica_device_setter's TF devices (5 variables over 2 ps tasks, variable
scopes, clusters, merge rules), tf.contrib.training's GreedyLoadBalancingStrategy and byte_size_load_fn, and the
placement error for a graph that needs a cluster. The basic setter and assign_to_device cases live in
tests/test_train_device_setter.py."""
import numpy as np
import pytest

import adplace as tf
from adplace.errors import InvalidArgumentError

CLUSTER = {"ps": ["ps0:2222", "ps1:2222"], "worker": ["worker0:2222", "worker1:2222", "worker2:2222"]}
ROUND_ROBIN_5 = ["/job:ps/task:0", "/job:ps/task:1", "/job:ps/task:0", "/job:ps/task:1", "/job:ps/task:0"]


def tf_device_of(op, variable_devices: dict[str, str]) -> str:
    """What TF 1.x requests for `op` built under replica_device_setter: the ps task for a variable, its `read`
    (colocate_with copies the variable's device) and its Assign (a ref input: TF builds it in colocate_with(the
    variable)), nothing for a get_variable initializer (built under device(None) and colocated with the variable),
    /job:worker for every other op (initial values, the model)."""
    owner = op.name.rsplit("/", 1)[0]
    if op.type == "VariableV2":
        return variable_devices[op.name]
    if op.name.endswith("/read") or op.type == "Assign":
        return variable_devices[owner]
    return "" if "/Initializer/" in op.name else "/job:worker"


def five_variables() -> list:
    """Two tf.Variables and three tf.get_variables under nested variable scopes, plus a model using them all."""
    a = tf.Variable(tf.zeros([2]), name="a")
    b = tf.Variable(1.0, name="b")
    with tf.variable_scope("layer1"):
        w1 = tf.get_variable("w", [3, 2])
        with tf.variable_scope("inner"):
            w2 = tf.get_variable("w", [2], initializer=tf.zeros_initializer())
    with tf.variable_scope("layer2"):
        w3 = tf.get_variable("w", [2])
    tf.reduce_sum(tf.matmul(tf.ones([1, 3]), w1) + a + w2 + w3) * b
    return [a, b, w1, w2, w3]


@pytest.mark.parametrize("setter_args", [{"ps_tasks": 2}, {"cluster": CLUSTER}], ids=["ps_tasks", "cluster"])
def test_five_variables_round_robin_over_two_ps_tasks(setter_args):
    with tf.device(tf.train.replica_device_setter(**setter_args)):
        variables = five_variables()
    assert [v.op.type for v in variables] == ["VariableV2"] * 5
    assert [v.device for v in variables] == ROUND_ROBIN_5
    assert [v.name for v in variables] == ["a:0", "b:0", "layer1/w:0", "layer1/inner/w:0", "layer2/w:0"]
    variable_devices = dict(zip([v.op.name for v in variables], ROUND_ROBIN_5, strict=True))
    ops = tf.get_default_graph().get_operations()
    assert [op.device for op in ops] == [tf_device_of(op, variable_devices) for op in ops]
    assert {op.device for op in ops if op.type == "Assign"} == {"/job:ps/task:0", "/job:ps/task:1"}
    assert all(op.get_attr("_class") == [b"loc:@" + op.name.rsplit("/", 1)[0].encode()]
               for op in ops if op.type == "Assign")
    assert {op.device for op in ops if "/Initializer/" in op.name} == {""}


def test_cluster_spec_like_object_with_as_dict():
    class ClusterSpec:
        def as_dict(self):
            return {"ps": {0: "ps0:2222", 1: "ps1:2222", 2: "ps2:2222"}, "worker": ["w0:2222"]}

    with tf.device(tf.train.replica_device_setter(cluster=ClusterSpec())):
        variables = [tf.Variable(float(i)) for i in range(4)]
    assert [v.device for v in variables] == ["/job:ps/task:0", "/job:ps/task:1", "/job:ps/task:2", "/job:ps/task:0"]


@pytest.mark.parametrize("cluster", [["ps0:2222"], "ps0:2222"])
def test_cluster_that_is_not_a_dict_is_a_type_error(cluster):
    with pytest.raises(TypeError, match="`cluster` must be a dictionary"):
        tf.train.replica_device_setter(cluster=cluster)


def test_cluster_with_a_malformed_or_absent_ps_job():
    with pytest.raises(TypeError, match="tasks for job 'ps' must be a list"):
        tf.train.replica_device_setter(cluster={"ps": 2})
    assert tf.train.replica_device_setter(cluster={"ps": None, "worker": ["w:1"]}) is None
    assert tf.train.replica_device_setter(cluster={"ps": [], "worker": ["w:1"]}) is None
    assert tf.train.replica_device_setter(ps_device="/job:params", cluster=CLUSTER) is None


def test_counter_advances_when_an_inner_scope_names_the_ps_job():
    """TF calls the strategy whenever the op's job is unset or is the ps job, even if an inner task then wins."""
    with tf.device(tf.train.replica_device_setter(ps_tasks=2)):
        v0 = tf.Variable(0.0)
        with tf.device("/job:ps/task:0"):
            v1 = tf.Variable(1.0)        # strategy says task 1, the inner task:0 wins, the counter moves on
        with tf.device("/job:local"):
            v2 = tf.Variable(2.0)        # another job: the strategy is not asked
        v3 = tf.Variable(3.0)
    assert [v.device for v in (v0, v1, v2, v3)] == ["/job:ps/task:0", "/job:ps/task:0", "/job:local",
                                                    "/job:ps/task:0"]


def test_empty_ps_or_worker_device():
    with tf.device(tf.train.replica_device_setter(ps_tasks=2, ps_device="", worker_device="")):
        v = tf.Variable(1.0)
        with tf.device("/cpu:0"):
            y = v * 2.0
    assert v.device == "" and y.device == "/device:CPU:0"


def test_setter_result_none_clears_outer_scopes():
    with tf.device("/gpu:0"), tf.device(tf.train.replica_device_setter(ps_tasks=0)):
        v = tf.Variable(1.0)
    assert v.device == ""


# --- GreedyLoadBalancingStrategy, byte_size_load_fn ---------------------------------------------------------------

SHAPES = ([100], [10], [10], [50])  # float32: 400, 40, 40, 200 bytes


def variables_of_sizes(ps_strategy) -> list[str]:
    with tf.device(tf.train.replica_device_setter(ps_tasks=2, ps_strategy=ps_strategy)):
        return [tf.Variable(tf.zeros(shape)).device for shape in SHAPES]


def test_greedy_strategy_puts_each_variable_on_the_least_loaded_task():
    greedy = tf.contrib.training.GreedyLoadBalancingStrategy(2, tf.contrib.training.byte_size_load_fn)
    # loads after each variable: (400, 0), (400, 40), (400, 80), (400, 280)
    assert variables_of_sizes(greedy) == ["/job:ps/task:0", "/job:ps/task:1", "/job:ps/task:1", "/job:ps/task:1"]
    np.testing.assert_array_equal(greedy._ps_loads, [400, 280])
    tf.reset_default_graph()
    assert variables_of_sizes(None) == ["/job:ps/task:0", "/job:ps/task:1", "/job:ps/task:0", "/job:ps/task:1"]


def test_greedy_ties_go_to_the_lowest_task():
    ops = [tf.NodeDef(op="VariableV2") for _ in range(5)]
    assert [tf.contrib.training.GreedyLoadBalancingStrategy(3, lambda op: 1.0)(op) for op in ops] == [0] * 5
    equal = tf.contrib.training.GreedyLoadBalancingStrategy(3, lambda op: 1.0)
    assert [equal(op) for op in ops] == [0, 1, 2, 0, 1]
    nothing = tf.contrib.training.GreedyLoadBalancingStrategy(3, lambda op: 0.0)
    assert [nothing(op) for op in ops] == [0] * 5


def test_byte_size_of_variables_and_single_output_ops():
    size = tf.contrib.training.byte_size_load_fn
    assert size(tf.Variable(tf.zeros([3, 4])).op) == 48
    assert size(tf.Variable(np.float64(1.0)).op) == 8
    assert size(tf.get_variable("counts", [5], dtype=tf.int64).op) == 40
    assert size(tf.constant(np.ones([2, 2], np.int32)).op) == 16


def test_byte_size_falls_back_on_the_shape_attr_and_otherwise_raises():
    size = tf.contrib.training.byte_size_load_fn
    with pytest.raises(ValueError, match=r"Shape <unknown> is not fully defined.*'Placeholder'"):
        size(tf.placeholder(tf.float32).op)
    with pytest.raises(ValueError, match=r"Shape \(\?, 3\) is not fully defined"):
        size(tf.placeholder(tf.float32, [None, 3]).op)
    with pytest.raises(ValueError, match="Operation 'Identity' has no attr named 'shape'"):
        size(tf.identity(tf.placeholder(tf.float32)).op)
    with pytest.raises(ValueError, match=r"Op 'split' \(Split\) must have a single output; it has 2"):
        size(tf.split(tf.zeros([4]), 2)[0].op)
    with pytest.raises(ValueError, match="must have a single output; it has 0"):
        size(tf.no_op())


def test_greedy_strategy_is_tf_contrib_training():
    from adplace.train import device_setter
    assert tf.contrib.training.GreedyLoadBalancingStrategy is device_setter.GreedyLoadBalancingStrategy
    assert tf.contrib.training.byte_size_load_fn is device_setter.byte_size_load_fn


# --- running needs a cluster ----------------------------------------------------------------------------------------

@pytest.mark.parametrize("soft", [False, True])
def test_running_a_replicated_graph_fails_at_placement_naming_the_job(soft):
    with tf.device(tf.train.replica_device_setter(cluster=CLUSTER)):
        variables = five_variables()
    assert [v.device for v in variables] == ROUND_ROBIN_5  # building and inspecting need no cluster
    sess = tf.Session(config=tf.ConfigProto(allow_soft_placement=soft))
    with pytest.raises(InvalidArgumentError, match=r"^Cannot assign a device for operation zeros: "
                       r"\{\{node zeros\}\} was explicitly assigned to /job:worker but available devices "
                       r"are \[ /job:localhost/replica:0/task:0/device:CPU:0 \]\. .*The job 'worker' does not exist in "
                       r"this process.*needs a session on a cluster"):
        sess.run(tf.global_variables_initializer())


def test_a_ps_job_fails_at_placement_naming_the_variable():
    with tf.device(tf.train.replica_device_setter(ps_tasks=2, worker_device="")):
        v = tf.Variable(1.0, name="v")
        y = v * 2.0
    sess = tf.Session()
    with pytest.raises(InvalidArgumentError) as failure:
        sess.run(y)
    message = str(failure.value)
    assert message.startswith("Cannot assign a device for operation v: {{node v}} was explicitly assigned to "
                              "/job:ps/task:0 but available devices are")
    assert "The job 'ps' does not exist in this process" in message
    assert "tf.Session(server.target)" in message and "without tf.train.replica_device_setter" in message


# --- ops on a variable sit with it (TF builds them in colocate_with(the variable)) ---------------------------------

def _canonical(device: str) -> str:
    return tf.DeviceSpec.from_string(device).to_string()


def _variable_of(op) -> "tf.Operation":
    """The VariableV2 an Assign or Apply* op writes (its first input, by reference)."""
    return op.inputs[0].op


def _assert_sits_with_its_variable(op) -> None:
    """Same device as its variable, and the variable's colocation group: `loc:@<variable>`, or for a slot (itself
    colocated with its primary variable) `loc:@<primary>`, as TF's colocate_with(op) takes op's groups."""
    var = _variable_of(op)
    assert var.type == "VariableV2", op.name
    assert _canonical(op.device) == _canonical(var.device), op.name
    assert op.get_attr("_class") == var.colocation_groups(), op.name


def _model_with_updates(make_opt):
    """Two variables, a loss, an optimizer's minimize, and explicit updates of each variable."""
    w = tf.Variable(np.ones([3], np.float32), name="w")
    b = tf.Variable(np.zeros([3], np.float32), name="b")
    loss = tf.reduce_sum(tf.square(w * 2.0 + b))
    opt = make_opt()
    train = opt.minimize(loss)
    updates = [tf.assign(w, tf.zeros([3])), w.assign_add(tf.ones([3])), b.assign_sub(tf.ones([3])),
               tf.assign_add(b, tf.ones([3]))]
    return w, b, opt, train, updates


def _greedy():
    return tf.contrib.training.GreedyLoadBalancingStrategy(2, tf.contrib.training.byte_size_load_fn)


SETTERS = pytest.mark.parametrize("setter_args", [
    {"ps_tasks": 2}, {"cluster": CLUSTER}, {"ps_tasks": 2, "ps_strategy": "greedy"},
], ids=["ps_tasks", "cluster", "greedy"])
OPTIMIZERS = pytest.mark.parametrize("make_opt, apply_type, slot_names", [
    (lambda: tf.train.AdamOptimizer(), "ApplyAdam", ["m", "v"]),
    (lambda: tf.train.GradientDescentOptimizer(0.1), "ApplyGradientDescent", []),
], ids=["adam", "sgd"])


@SETTERS
@OPTIMIZERS
def test_initializers_updates_slots_and_apply_ops_get_their_variables_ps_task(setter_args, make_opt, apply_type,
                                                                              slot_names):
    if setter_args.get("ps_strategy") == "greedy":
        setter_args = dict(setter_args, ps_strategy=_greedy())
    with tf.device(tf.train.replica_device_setter(**setter_args)):
        w, b, opt, train, updates = _model_with_updates(make_opt)
    assert (w.device, b.device) == ("/job:ps/task:0", "/job:ps/task:1")
    ops = tf.get_default_graph().get_operations()
    applies = [op for op in ops if op.type == apply_type]
    assert sorted(_variable_of(op).name for op in applies) == ["b", "w"]
    for op in [w.initializer, b.initializer] + [t.op for t in updates] + applies:
        _assert_sits_with_its_variable(op)
    for var in (w, b):
        assert var.initializer.device == var.device
        for name in slot_names:
            slot = opt.get_slot(var, name)
            assert slot.device == var.device, (var.op.name, name)
            assert slot.op.colocation_groups() == [b"loc:@" + var.op.name.encode()]
            _assert_sits_with_its_variable(slot.initializer)
    model = [op for op in ops if op.type in ("Square", "Sum") or op.name.startswith("gradients/")]
    assert model and {op.device for op in model} == {"/job:worker"}  # the rest follows the worker


def test_beta_accumulators_sit_with_the_first_variable_by_name():
    with tf.device(tf.train.replica_device_setter(ps_tasks=2)):
        w, b, opt, _, _ = _model_with_updates(tf.train.AdamOptimizer)
    beta1, beta2 = opt._get_non_slot_variable("beta1_power"), opt._get_non_slot_variable("beta2_power")
    for beta in (beta1, beta2):
        assert beta.device == b.device == "/job:ps/task:1"  # "b" < "w"
        assert beta.op.colocation_groups() == [b"loc:@b"]
    for op in tf.get_default_graph().get_operations():
        if op.type == "Assign" and op.name.startswith("Adam/"):  # the beta-power updates of each step
            assert op.device == "/job:ps/task:1" and op.get_attr("_class") == [b"loc:@b"]


def test_inner_device_scopes_move_neither_updates_nor_apply_ops():
    """TF's testCPUOverride, then updates built under other scopes still follow their variable."""
    with tf.device(tf.train.replica_device_setter(cluster=CLUSTER)):
        with tf.device("/cpu:0"):
            v = tf.Variable([1.0, 2.0], name="v")
        w = tf.Variable([2.0, 1.0], name="w")
        with tf.device("/cpu:0"):
            a = v + w
        with tf.device("/job:worker/task:1/device:GPU:0"):
            train = tf.train.AdamOptimizer().minimize(tf.reduce_sum(a * a))
            with tf.device("/cpu:0"):
                updates = [tf.assign(v, [0.0, 0.0]), w.assign_add([1.0, 1.0])]
    assert _canonical(v.device) == _canonical(v.initializer.device) == "/job:ps/task:0/device:CPU:0"
    assert _canonical(w.device) == _canonical(w.initializer.device) == "/job:ps/task:1"
    assert _canonical(a.device) == "/job:worker/device:CPU:0"
    ops = tf.get_default_graph().get_operations()
    applies = [op for op in ops if op.type == "ApplyAdam"]
    assert len(applies) == 2
    for op in applies + [t.op for t in updates]:
        _assert_sits_with_its_variable(op)
    assert train.type == "NoOp"


def test_a_variable_pinned_to_another_job_keeps_its_ops():
    """TF's testPS2TasksPinVariableToJob: an explicit job wins; an explicit ps job still gets a task."""
    with tf.device(tf.train.replica_device_setter(cluster=CLUSTER)):
        v = tf.Variable([1, 2], name="v")
        with tf.device("/job:moon"):
            w = tf.Variable([2, 1], name="w")
            with tf.device("/job:ps"):
                x = tf.Variable([0, 1], name="x")
        a = v + w + x
        updates = [v.assign([0, 0]), tf.assign_add(w, [1, 1]), x.assign_sub([1, 1])]
    assert [(var.device, var.initializer.device) for var in (v, w, x)] == [
        ("/job:ps/task:0", "/job:ps/task:0"), ("/job:moon", "/job:moon"), ("/job:ps/task:1", "/job:ps/task:1")]
    assert a.device == "/job:worker"
    for update in updates:
        _assert_sits_with_its_variable(update.op)


def test_a_cpu_ps_device():
    """TF's testPS2TasksUseCpuForPS."""
    with tf.device(tf.train.replica_device_setter(ps_tasks=1, ps_device="/cpu:0")):
        v = tf.Variable([1, 2], name="v")
        with tf.device("/job:moon"):
            w = tf.Variable([2, 1], name="w")
        a = v + w
        update = w.assign([3, 3])
    assert _canonical(v.device) == _canonical(v.initializer.device) == "/device:CPU:0"
    assert _canonical(w.device) == _canonical(w.initializer.device) == "/job:moon/device:CPU:0"
    assert a.device == "/job:worker"
    _assert_sits_with_its_variable(update.op)


def test_assign_to_device_keeps_updates_and_apply_ops_on_the_variables_cpu():
    with tf.device(tf.assign_to_device("/gpu:0")):
        w, b, opt, _, updates = _model_with_updates(tf.train.AdamOptimizer)
    ops = tf.get_default_graph().get_operations()
    applies = [op for op in ops if op.type == "ApplyAdam"]
    assert w.device == b.device == "/device:CPU:0"
    for op in applies + [t.op for t in updates] + [w.initializer, b.initializer]:
        _assert_sits_with_its_variable(op)
        assert op.device == "/device:CPU:0"
    for var in (w, b):
        assert [opt.get_slot(var, name).device for name in ("m", "v")] == ["/device:CPU:0"] * 2
    assert {op.device for op in ops if op.type == "Square"} == {"/gpu:0"}


@pytest.mark.parametrize("scope", ["device_scopes", "assign_to_device"])
def test_placement_log_puts_every_update_on_its_variables_device(gpus, capsys, scope):
    from placement_log import CPU0, GPU0, GPU1, placement_lines
    if scope == "device_scopes":
        with tf.device("/gpu:1"):
            w = tf.Variable(np.ones([2], np.float32), name="w")
        with tf.device("/cpu:0"):
            b = tf.Variable(np.zeros([2], np.float32), name="b")
        with tf.device("/gpu:0"):
            loss = tf.reduce_sum(tf.square(w * 2.0 + b))
            train = tf.train.AdamOptimizer().minimize(loss)
            updates = tf.group(tf.assign(w, tf.ones([2])), b.assign_add(tf.ones([2])))
        expected = {"w": GPU1, "b": CPU0}
    else:
        with tf.device(tf.assign_to_device("/gpu:0")):
            w, b, _, train, update_list = _model_with_updates(tf.train.AdamOptimizer)
            updates = tf.group(*update_list)
        expected = {"w": CPU0, "b": CPU0}
    sess = tf.Session(config=tf.ConfigProto(log_device_placement=True))
    sess.run(tf.global_variables_initializer())
    sess.run([train, updates])
    lines = placement_lines(capsys.readouterr().out)
    graph = tf.get_default_graph()
    logged = {name: device for name, _, device in lines}
    checked = 0
    for name, op_type, device in lines:
        if op_type in ("Assign", "AssignAdd", "AssignSub") or op_type.startswith("Apply"):
            var = _variable_of(graph.get_operation_by_name(name))
            assert device == logged[var.name] == sess.placement(var), name
            if var.name in expected:
                assert device == expected[var.name], name
            checked += 1
    assert checked >= 8  # initializers (w, b, 4 slots, 2 beta powers), 2 ApplyAdam, 2 beta updates, 2 updates
    assert logged["Adam/update_w/ApplyAdam"] == expected["w"] and logged["Adam/update_b/ApplyAdam"] == expected["b"]
    if scope == "device_scopes":
        assert logged["Square"] == GPU0
