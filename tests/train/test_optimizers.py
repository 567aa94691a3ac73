"""Tests for adplace/ops/training_ops.py, the training kernels of adplace/kernels/state.py, and the TF1 optimizers of
adplace/train (optimizer.py, slot_creator.py, gradient_descent.py, momentum.py, adam.py, rmsprop.py, adagrad.py,
training_util.py).

Each optimizer runs a few steps with fed gradients and is checked against a NumPy re-implementation of TF's update
rule (tensorflow/core/kernels/training_ops.cc). Python hyper-parameters become float32 constants cast to the
variable's dtype, as in TF, so the float64 references round them through float32 too.
"""
import numpy as np
import pytest

import adplace as tf
from adplace.framework import registry
from adplace.ops import training_ops

VAR0 = np.array([[1.0, -2.0], [3.0, 0.5]])
GRADS = [np.array([[0.5, -1.0], [2.0, 0.25]]), np.array([[-0.3, 0.8], [1.5, -2.0]]),
         np.array([[0.1, 0.1], [-0.7, 0.9]]), np.array([[1.2, -0.4], [0.0, 0.6]])]
TOLERANCE = {np.float32: 1e-6, np.float64: 1e-12}


def _hyper(value, dtype):
    """A Python hyper-parameter as the kernel sees it: a float32 Const cast to the variable's dtype."""
    return dtype(np.float32(value))


# --- NumPy references of training_ops.cc --------------------------------------------------------------------------

def np_gradient_descent(dtype, lr):
    lr = _hyper(lr, dtype)

    def run(var, grads):
        for g in grads:
            var = var - g * lr
        return var, {}
    return run


def np_momentum(dtype, lr, momentum, use_nesterov=False):
    lr, momentum = _hyper(lr, dtype), _hyper(momentum, dtype)

    def run(var, grads):
        accum = np.zeros_like(var)
        for g in grads:
            accum = accum * momentum + g
            var = var - (g * lr + accum * momentum * lr if use_nesterov else accum * lr)
        return var, {"momentum": accum}
    return run


def np_adam(dtype, lr=0.001, beta1=0.9, beta2=0.999, epsilon=1e-8):
    b1, b2 = np.float32(beta1), np.float32(beta2)  # beta1_power, beta2_power are float32 variables

    def run(var, grads):
        m, v = np.zeros_like(var), np.zeros_like(var)
        b1_power, b2_power = b1, b2
        one = dtype(1)
        for g in grads:
            alpha = _hyper(lr, dtype) * np.sqrt(one - dtype(b2_power)) / (one - dtype(b1_power))
            m = m + (g - m) * (one - _hyper(beta1, dtype))
            v = v + (g * g - v) * (one - _hyper(beta2, dtype))
            var = var - (m * alpha) / (np.sqrt(v) + _hyper(epsilon, dtype))
            b1_power, b2_power = b1_power * b1, b2_power * b2
        return var, {"m": m, "v": v}
    return run


def np_rmsprop(dtype, lr, decay=0.9, momentum=0.0, epsilon=1e-10, centered=False):
    lr, rho, mu, eps = (_hyper(x, dtype) for x in (lr, decay, momentum, epsilon))

    def run(var, grads):
        ms, mom, mg = np.ones_like(var), np.zeros_like(var), np.zeros_like(var)
        for g in grads:
            ms = ms + (g * g - ms) * (dtype(1) - rho)
            if centered:
                mg = mg + (g - mg) * (dtype(1) - rho)
            mom = mom * mu + (g * lr) / np.sqrt(ms - mg * mg + eps)
            var = var - mom
        slots = {"rms": ms, "momentum": mom}
        if centered:
            slots["mg"] = mg
        return var, slots
    return run


def np_adagrad(dtype, lr, initial_accumulator_value=0.1):
    lr = _hyper(lr, dtype)

    def run(var, grads):
        accum = np.full_like(var, initial_accumulator_value)
        for g in grads:
            accum = accum + g * g
            var = var - g * lr / np.sqrt(accum)
        return var, {"accumulator": accum}
    return run


CASES = {
    "sgd": (lambda: tf.train.GradientDescentOptimizer(0.1), lambda d: np_gradient_descent(d, 0.1)),
    "momentum": (lambda: tf.train.MomentumOptimizer(0.1, 0.9), lambda d: np_momentum(d, 0.1, 0.9)),
    "nesterov": (lambda: tf.train.MomentumOptimizer(0.05, 0.8, use_nesterov=True),
                 lambda d: np_momentum(d, 0.05, 0.8, use_nesterov=True)),
    "adam": (lambda: tf.train.AdamOptimizer(0.1), lambda d: np_adam(d, 0.1)),
    "adam_defaults": (lambda: tf.train.AdamOptimizer(), lambda d: np_adam(d)),
    "rmsprop": (lambda: tf.train.RMSPropOptimizer(0.01), lambda d: np_rmsprop(d, 0.01)),
    "rmsprop_momentum": (lambda: tf.train.RMSPropOptimizer(0.01, decay=0.8, momentum=0.5, epsilon=1e-6),
                         lambda d: np_rmsprop(d, 0.01, 0.8, 0.5, 1e-6)),
    "rmsprop_centered": (lambda: tf.train.RMSPropOptimizer(0.01, momentum=0.3, centered=True),
                         lambda d: np_rmsprop(d, 0.01, momentum=0.3, centered=True)),
    "adagrad": (lambda: tf.train.AdagradOptimizer(0.2), lambda d: np_adagrad(d, 0.2)),
    "adagrad_initial": (lambda: tf.train.AdagradOptimizer(0.2, initial_accumulator_value=0.5),
                        lambda d: np_adagrad(d, 0.2, 0.5)),
}


def _run_steps(opt, dtype, steps, device=None):
    """Build w and a fed gradient (under `device`), apply `steps` gradients; returns w and the slots' values."""
    with tf.device(device):
        w = tf.Variable(VAR0.astype(dtype), name="w")
        g = tf.placeholder(tf.as_dtype(dtype), [2, 2], name="g")
    train = opt.apply_gradients([(g, w)])
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        for grad in GRADS[:steps]:
            sess.run(train, {g: grad.astype(dtype)})
        slots = {name: sess.run(opt.get_slot(w, name)) for name in opt.get_slot_names()}
        return sess.run(w), slots


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("case", sorted(CASES))
def test_updates_match_tf_rules(case, dtype):
    make_opt, reference = CASES[case]
    var, slots = _run_steps(make_opt(), dtype, steps=4)
    expected_var, expected_slots = reference(dtype)(VAR0.astype(dtype), [g.astype(dtype) for g in GRADS])
    assert var.dtype == dtype
    np.testing.assert_allclose(var, expected_var, rtol=TOLERANCE[dtype], atol=TOLERANCE[dtype])
    assert sorted(slots) == sorted(expected_slots)
    for name, value in expected_slots.items():
        assert slots[name].dtype == dtype
        np.testing.assert_allclose(slots[name], value, rtol=TOLERANCE[dtype], atol=TOLERANCE[dtype])


@pytest.mark.parametrize("case", ["sgd", "momentum", "adam", "rmsprop", "adagrad"])
def test_updates_on_a_virtual_gpu_match_the_cpu(gpus, case):
    make_opt, _ = CASES[case]
    on_cpu, _ = _run_steps(make_opt(), np.float32, 3, "/cpu:0")
    tf.reset_default_graph()
    on_gpu, _ = _run_steps(make_opt(), np.float32, 3, "/gpu:1")
    np.testing.assert_array_equal(on_gpu, on_cpu)


def test_tensor_hyper_parameters_are_cast_to_the_variable_dtype():
    lr = tf.placeholder(tf.float32, [], name="lr")
    momentum = tf.constant(0.5, tf.float64)
    w = tf.Variable(VAR0, name="w")  # float64
    g = tf.placeholder(tf.float64, [2, 2])
    train = tf.train.MomentumOptimizer(lr, momentum).apply_gradients([(g, w)])
    expected, accum = VAR0, np.zeros_like(VAR0)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        for step, grad in enumerate(GRADS[:3]):
            rate = 0.1 * (step + 1)
            sess.run(train, {g: grad, lr: rate})
            accum = accum * 0.5 + grad
            expected = expected - accum * np.float64(np.float32(rate))
        np.testing.assert_allclose(sess.run(w), expected, rtol=1e-12)


def test_callable_learning_rate_is_called_when_gradients_are_applied():
    w = tf.Variable([1.0, 2.0], name="w")
    train = tf.train.GradientDescentOptimizer(lambda: tf.constant(0.5)).apply_gradients([(tf.constant([1.0, 4.0]), w)])
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        sess.run(train)
        np.testing.assert_allclose(sess.run(w), [0.5, 0.0])


def test_scalar_variable_updates():
    w = tf.Variable(2.0, name="w")
    train = tf.train.AdamOptimizer(0.1).apply_gradients([(tf.constant(3.0), w)])
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        sess.run(train)
        sess.run(train)
        expected, _ = np_adam(np.float32, 0.1)(np.float32(2.0), [np.float32(3.0)] * 2)
        np.testing.assert_allclose(sess.run(w), expected, rtol=1e-6)


# --- training ops -------------------------------------------------------------------------------------------------

def test_training_op_outputs_the_updated_variable_and_fetches_do_not_alias_it():
    w = tf.Variable([1.0, 2.0], name="w")
    out = training_ops.apply_gradient_descent(w, 0.5, tf.constant([2.0, 2.0]))
    assert out.op.type == "ApplyGradientDescent" and out.dtype == tf.float32_ref
    assert [t.name for t in out.op.inputs][0] == "w:0"
    with tf.Session() as sess:
        sess.run(w.initializer)
        first = sess.run(out)
        second = sess.run(out)
        np.testing.assert_allclose(first, [0.0, 1.0])
        np.testing.assert_allclose(second, [-1.0, 0.0])
        np.testing.assert_allclose(sess.run(w), [-1.0, 0.0])


def test_nesterov_adam_op_follows_training_ops_cc():
    var0, m0, v0 = np.array([1.0, -1.0]), np.array([0.1, -0.2]), np.array([0.3, 0.4])
    w, m, v = (tf.Variable(x, name=n) for x, n in ((var0, "w"), (m0, "m"), (v0, "v")))
    grad = np.array([0.5, 2.0])
    out = training_ops.apply_adam(w, m, v, 0.9, 0.999, 0.01, 0.9, 0.999, 1e-8, grad, use_nesterov=True)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        result = sess.run(out)
        m1, v1 = sess.run([m, v])
    alpha = 0.01 * np.sqrt(1 - 0.999) / (1 - 0.9)
    np.testing.assert_allclose(m1, m0 + (grad - m0) * (1 - 0.9), rtol=1e-12)
    np.testing.assert_allclose(v1, v0 + (grad * grad - v0) * (1 - 0.999), rtol=1e-12)
    expected = var0 - ((grad * (1 - 0.9) + 0.9 * m1) * alpha) / (np.sqrt(v1) + 1e-8)
    np.testing.assert_allclose(result, expected, rtol=1e-12)


@pytest.mark.parametrize("op_type", ["ApplyGradientDescent", "ApplyMomentum", "ApplyAdam", "ApplyRMSProp",
                                     "ApplyCenteredRMSProp", "ApplyAdagrad"])
def test_training_ops_are_not_differentiable_and_have_float_kernels(op_type):
    assert op_type in registry.registered_op_types()
    assert registry._GRADIENTS[op_type] is None
    for device_type in ("CPU", "GPU"):
        assert registry.has_kernel(op_type, device_type, tf.float32)
        assert registry.has_kernel(op_type, device_type, tf.float64)
        assert not registry.has_kernel(op_type, device_type, tf.int32)


@pytest.mark.parametrize("make_opt", [
    lambda **kw: tf.train.GradientDescentOptimizer(0.1, **kw),
    lambda **kw: tf.train.MomentumOptimizer(0.1, 0.9, **kw),
    lambda **kw: tf.train.AdamOptimizer(**kw),
    lambda **kw: tf.train.RMSPropOptimizer(0.1, momentum=0.5, **kw),
    lambda **kw: tf.train.RMSPropOptimizer(0.1, centered=True, **kw),
    lambda **kw: tf.train.AdagradOptimizer(0.1, **kw),
], ids=["sgd", "momentum", "adam", "rmsprop", "centered_rmsprop", "adagrad"])
@pytest.mark.parametrize("use_locking", [None, False, True])
def test_update_ops_carry_the_optimizers_use_locking(make_opt, use_locking):
    """TF: each Apply* op (and Adam's beta-power updates) gets the optimizer's use_locking, False by default."""
    w = tf.Variable(VAR0.astype(np.float32), name="w")
    graph = tf.get_default_graph()
    before = len(graph.get_operations())
    opt = make_opt() if use_locking is None else make_opt(use_locking=use_locking)
    opt.minimize(tf.reduce_sum(w * w))
    new_ops = graph.get_operations()[before:]
    updates = [op for op in new_ops if op.type.startswith("Apply")]
    updates += [op for op in new_ops if op.type == "Assign" and op.name.startswith(opt.get_name() + "/")]
    assert len([op for op in updates if op.type.startswith("Apply")]) == 1
    assert [op.get_attr("use_locking") for op in updates] == [bool(use_locking)] * len(updates)


def test_training_op_static_shape_and_dtype_errors():
    w = tf.Variable(np.zeros([3, 1], np.float32), name="w")
    with pytest.raises(ValueError, match=r"Dimension 0 in both shapes must be equal, but are 3 and 2\. Shapes are "
                                         r"\[3,1\] and \[2,1\]\. for 'ApplyGradientDescent'"):
        training_ops.apply_gradient_descent(w, 0.1, np.zeros([2, 1], np.float32))
    with pytest.raises(ValueError, match=r"Shapes must be equal rank, but are 2 and 1 for 'ApplyGradientDescent_1' "
                                         r"\(op: 'ApplyGradientDescent'\) with input shapes: \[3,1\], \[\], \[2\]\."):
        training_ops.apply_gradient_descent(w, 0.1, np.zeros([2], np.float32))
    with pytest.raises(ValueError, match=r"Shape must be rank 0 but is rank 1 for 'ApplyGradientDescent_2'"):
        training_ops.apply_gradient_descent(w, [0.1, 0.2], np.zeros([3, 1], np.float32))
    with pytest.raises(TypeError, match="Input 'delta' of 'ApplyGradientDescent' Op has type float64 that does not "
                                        "match type float32 of argument 'var'"):
        training_ops.apply_gradient_descent(w, 0.1, tf.constant(np.zeros([3, 1]), tf.float64))
    with pytest.raises(TypeError, match="requires that input 'var' be a mutable tensor"):
        training_ops.apply_gradient_descent(w.value(), 0.1, np.zeros([3, 1], np.float32))


def test_training_op_runtime_shape_and_scalar_errors():
    w = tf.Variable(np.zeros([3, 1], np.float32), name="w")
    g = tf.placeholder(tf.float32, None, name="g")
    lr = tf.placeholder(tf.float32, None, name="lr")
    out = training_ops.apply_gradient_descent(w, lr, g)
    with tf.Session() as sess:
        sess.run(w.initializer)
        with pytest.raises(tf.errors.InvalidArgumentError, match=r"var and delta do not have the same shape\[3,1\] "
                                                                 r"\[2\]"):
            sess.run(out, {g: np.zeros([2], np.float32), lr: 0.1})
        with pytest.raises(tf.errors.InvalidArgumentError, match=r"alpha is not a scalar: \[2\]"):
            sess.run(out, {g: np.zeros([3, 1], np.float32), lr: [0.1, 0.2]})
        np.testing.assert_array_equal(sess.run(w), np.zeros([3, 1]))


# --- slots --------------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("make_opt, slot_names", [
    (lambda: tf.train.GradientDescentOptimizer(0.1), {}),
    (lambda: tf.train.MomentumOptimizer(0.1, 0.9), {"momentum": "w/Momentum"}),
    (lambda: tf.train.AdamOptimizer(), {"m": "w/Adam", "v": "w/Adam_1"}),
    (lambda: tf.train.RMSPropOptimizer(0.1), {"rms": "w/RMSProp", "momentum": "w/RMSProp_1"}),
    (lambda: tf.train.RMSPropOptimizer(0.1, centered=True),
     {"rms": "w/RMSProp", "mg": "w/RMSProp_1", "momentum": "w/RMSProp_2"}),
    (lambda: tf.train.AdagradOptimizer(0.1), {"accumulator": "w/Adagrad"}),
])
def test_slot_names_and_trainability(make_opt, slot_names):
    with tf.name_scope("outer"):  # slot names ignore the caller's name scope, as TF's variable_scope
        w = tf.Variable(VAR0.astype(np.float32), name="w")
    assert w.op.name == "outer/w"
    opt = make_opt()
    opt.apply_gradients([(tf.constant(GRADS[0], tf.float32), w)])
    assert opt.get_slot_names() == sorted(slot_names)
    for slot_name, op_name in slot_names.items():
        slot = opt.get_slot(w, slot_name)
        assert slot.op.name == "outer/" + op_name
        assert not slot.trainable
        assert slot in tf.global_variables() and slot not in tf.trainable_variables()
        assert slot.dtype.base_dtype == tf.float32 and slot.shape.as_list() == [2, 2]
    assert opt.get_slot(w, "nonexistent") is None
    assert tf.trainable_variables() == [w]


def test_second_optimizer_of_the_same_name_gets_unique_slot_names():
    w = tf.Variable(VAR0, name="w")
    first, second = tf.train.AdamOptimizer(), tf.train.AdamOptimizer()
    first.apply_gradients([(tf.constant(GRADS[0]), w)])
    train = second.apply_gradients([(tf.constant(GRADS[0]), w)])
    assert [first.get_slot(w, n).op.name for n in ("m", "v")] == ["w/Adam", "w/Adam_1"]
    assert [second.get_slot(w, n).op.name for n in ("m", "v")] == ["w/Adam_2", "w/Adam_3"]
    assert train.name == "Adam_1"


def test_adam_variables_and_beta_accumulators():
    b = tf.Variable([1.0], name="b")
    a = tf.Variable([2.0], name="a")
    opt = tf.train.AdamOptimizer(0.1, beta1=0.5, beta2=0.75)
    train = opt.apply_gradients([(tf.constant([1.0]), b), (tf.constant([1.0]), a)])
    assert [v.op.name for v in opt.variables()] == ["a/Adam", "a/Adam_1", "b/Adam", "b/Adam_1", "beta1_power",
                                                    "beta2_power"]
    beta1_power = opt._get_non_slot_variable("beta1_power")
    assert beta1_power.op.colocation_groups() == [b"loc:@a"]  # the first variable by name
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        for _ in range(3):
            sess.run(train)
        assert sess.run([beta1_power, opt._get_non_slot_variable("beta2_power")]) == pytest.approx([0.5 ** 4,
                                                                                                   0.75 ** 4])


def test_slots_follow_their_variable_device(gpus):
    with tf.device("/gpu:1"):
        w1 = tf.Variable(VAR0, name="w1")
    with tf.device("/gpu:0"):
        w0 = tf.Variable(VAR0, name="w0")
    with tf.device("/gpu:0"):  # the device scope in force at apply time does not move slots or updates
        opt = tf.train.AdamOptimizer()
        train = opt.apply_gradients([(tf.constant(GRADS[0]), w1), (tf.constant(GRADS[1]), w0)])
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        sess.run(train)
        gpu0, gpu1 = "/job:localhost/replica:0/task:0/device:GPU:0", "/job:localhost/replica:0/task:0/device:GPU:1"
        for name in ("m", "v"):
            assert sess.placement(opt.get_slot(w1, name)) == gpu1
            assert sess.placement(opt.get_slot(w0, name)) == gpu0
        assert sess.placement("Adam/update_w1/ApplyAdam") == gpu1
        assert sess.placement("Adam/update_w0/ApplyAdam") == gpu0
        assert sess.placement("beta1_power") == gpu0  # colocated with w0, first by name


def test_assign_to_device_puts_variables_slots_and_updates_on_the_cpu(gpus):
    with tf.device(tf.assign_to_device("/device:GPU:0")):
        w = tf.Variable(VAR0, name="w")
        x = tf.placeholder(tf.float64, [2, 2], name="x")
        grad = tf.sin(x * 2.0)
        opt = tf.train.RMSPropOptimizer(0.01, momentum=0.5)
        step = tf.train.get_or_create_global_step()
        train = opt.apply_gradients([(grad, w)], global_step=step)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        sess.run(train, {x: GRADS[0]})
        table = {name: placed for name, _, _, placed, _ in sess.placement_table()}
    cpu = "/job:localhost/replica:0/task:0/device:CPU:0"
    for name in ("w", "w/RMSProp", "w/RMSProp_1", "RMSProp/update_w/ApplyRMSProp", "global_step", "RMSProp"):
        assert table[name] == cpu, name
    assert table["Sin"].endswith("device:GPU:0")


# --- global step --------------------------------------------------------------------------------------------------

def test_global_step_increments_once_per_step():
    assert tf.train.get_global_step() is None
    step = tf.train.get_or_create_global_step()
    assert step.op.name == "global_step" and step.dtype.base_dtype == tf.int64 and not step.trainable
    assert tf.get_collection(tf.GraphKeys.GLOBAL_STEP) == [step]
    assert tf.train.get_or_create_global_step() is step and tf.train.get_global_step() is step
    w = tf.Variable(VAR0, name="w")
    train = tf.train.MomentumOptimizer(0.1, 0.9).apply_gradients([(tf.constant(GRADS[0]), w)], global_step=step)
    assert train.type == "AssignAdd" and train.name == "Momentum"
    assert train in tf.get_collection(tf.GraphKeys.TRAIN_OP)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        assert tf.train.global_step(sess, step) == 0
        for expected in (1, 2, 3):
            sess.run(train)
            assert tf.train.global_step(sess, step) == expected
        assert isinstance(tf.train.global_step(sess, "global_step:0"), int)


def test_global_step_creation_errors():
    with tf.name_scope("scope"):
        step = tf.train.create_global_step()
    assert step.op.name == "global_step"  # created at the root scope
    with pytest.raises(ValueError, match='"global_step" already exists.'):
        tf.train.create_global_step()
    tf.reset_default_graph()
    tf.Variable(1.5, name="global_step")
    with pytest.raises(TypeError, match='Existing "global_step" does not have integer type'):
        tf.train.get_global_step()


def test_global_step_on_the_default_device_follows_device_scopes(gpus):
    with tf.device("/gpu:1"):
        step = tf.train.create_global_step()  # TF1 graph mode pins no device: int64 variables have GPU kernels
    assert step.device == "/device:GPU:1"


# --- failures -----------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("make_opt", [lambda: tf.train.AdamOptimizer(0.1), lambda: tf.train.MomentumOptimizer(0.1, 0.9),
                                      lambda: tf.train.RMSPropOptimizer(0.1, centered=True)])
def test_a_failed_step_leaves_variables_and_slots_unchanged(make_opt):
    w1 = tf.Variable(VAR0, name="w1")
    w2 = tf.Variable(VAR0, name="w2")
    g1 = tf.constant(GRADS[0])
    g2 = tf.placeholder(tf.float64, None, name="g2")
    step = tf.train.get_or_create_global_step()
    opt = make_opt()
    train = opt.apply_gradients([(g1, w1), (g2, w2)], global_step=step)
    state = [w1, w2, step] + opt.variables()
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        sess.run(train, {g2: GRADS[1]})
        before = sess.run(state)
        with pytest.raises(tf.errors.InvalidArgumentError, match=r"var and grad do not have the same shape\[2,2\] "
                                                                 r"\[3\]"):
            sess.run(train, {g2: np.zeros(3)})  # w1's update ran first: it is rolled back too
        after = sess.run(state)
    for name, old, new in zip([v.op.name for v in state], before, after):
        np.testing.assert_array_equal(new, old, err_msg=name)


def test_uninitialized_slot_is_a_failed_precondition():
    w = tf.Variable(VAR0, name="w")
    train = tf.train.MomentumOptimizer(0.1, 0.9).apply_gradients([(tf.constant(GRADS[0]), w)])
    with tf.Session() as sess:
        sess.run(w.initializer)
        with pytest.raises(tf.errors.FailedPreconditionError,
                           match="Attempting to use uninitialized variables: w/Momentum"):
            sess.run(train)
        np.testing.assert_array_equal(sess.run(w), VAR0)


def test_apply_gradients_errors():
    w = tf.Variable(VAR0, name="w")
    opt = tf.train.GradientDescentOptimizer(0.1)
    with pytest.raises(ValueError, match="No variables provided."):
        opt.apply_gradients([])
    with pytest.raises(ValueError, match=r"No gradients provided for any variable: \["):
        opt.apply_gradients([(None, w)])
    with pytest.raises(TypeError, match="Gradient must be convertible to a Tensor"):
        opt.apply_gradients([(object(), w)])
    with pytest.raises(NotImplementedError, match="Trying to optimize unsupported type"):
        opt.apply_gradients([(tf.constant(1.0), tf.constant(2.0))])
    with pytest.raises(TypeError, match="Input 'delta' of 'ApplyGradientDescent' Op has type float32"):
        opt.apply_gradients([(tf.constant(GRADS[0], tf.float32), w)])
    with pytest.raises(ValueError, match="Must specify the optimizer name"):
        tf.train.GradientDescentOptimizer(0.1, name="")
    with pytest.raises(ValueError, match="initial_accumulator_value must be positive: 0.0"):
        tf.train.AdagradOptimizer(0.1, initial_accumulator_value=0.0)


def test_none_gradients_are_skipped():
    w = tf.Variable(VAR0, name="w")
    frozen = tf.Variable(VAR0, name="frozen")
    train = tf.train.GradientDescentOptimizer(1.0).apply_gradients([(tf.constant(GRADS[0]), w), (None, frozen)])
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        sess.run(train)
        np.testing.assert_allclose(sess.run(w), VAR0 - GRADS[0])
        np.testing.assert_array_equal(sess.run(frozen), VAR0)


# --- compute_gradients / minimize ---------------------------------------------------------------------------------

def _quadratic(dtype=tf.float32):
    """loss = sum((w - target)**2) + 0 * b, so d/dw = 2 (w - target)."""
    w = tf.Variable(VAR0.astype(dtype.as_numpy_dtype), name="w")
    target = tf.constant(GRADS[0].astype(dtype.as_numpy_dtype))
    return w, tf.reduce_sum(tf.square(w - target))


@pytest.mark.parametrize("gate", [tf.train.Optimizer.GATE_NONE, tf.train.Optimizer.GATE_OP])
def test_minimize_takes_gradient_steps(gate):
    w, loss = _quadratic(tf.float64)
    step = tf.train.get_or_create_global_step()
    train = tf.train.GradientDescentOptimizer(0.25).minimize(loss, global_step=step, gate_gradients=gate)
    expected = VAR0
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        for _ in range(3):
            sess.run(train)
            expected = expected - np.float64(np.float32(0.25)) * 2 * (expected - GRADS[0])
        np.testing.assert_allclose(sess.run(w), expected, rtol=1e-12)
        assert tf.train.global_step(sess, step) == 3


def test_compute_gradients_pairs_gradients_with_variables():
    w, loss = _quadratic()
    unused = tf.Variable(1.0, name="unused")
    opt = tf.train.AdamOptimizer()
    grads_and_vars = opt.compute_gradients(loss)
    assert [v for _, v in grads_and_vars] == [w, unused]
    assert grads_and_vars[1][0] is None
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        np.testing.assert_allclose(sess.run(grads_and_vars[0][0]), 2 * (VAR0 - GRADS[0]), rtol=1e-6)
    only_w = opt.compute_gradients(loss, var_list=[w])
    assert [v for _, v in only_w] == [w]


def test_minimize_with_colocated_gradients_on_gpus(gpus):
    with tf.device(tf.assign_to_device("/device:GPU:1")):
        w, loss = _quadratic()
        train = tf.train.AdamOptimizer(0.1).minimize(loss, colocate_gradients_with_ops=True)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        sess.run(train)
        table = {name: placed for name, _, _, placed, _ in sess.placement_table()}
        expected, _ = np_adam(np.float32, 0.1)(VAR0.astype(np.float32), [2 * (VAR0 - GRADS[0]).astype(np.float32)])
        np.testing.assert_allclose(sess.run(w), expected, rtol=1e-6)
    assert table["w/Adam"].endswith("CPU:0") and table["Adam/update_w/ApplyAdam"].endswith("CPU:0")
    square_grads = [name for name in table if name.startswith("gradients/Square_grad/")]
    assert square_grads and all(table[name].endswith("GPU:1") for name in square_grads)


def test_compute_gradients_errors():
    w, loss = _quadratic()
    opt = tf.train.GradientDescentOptimizer(0.1)
    with pytest.raises(ValueError, match="gate_gradients must be one of"):
        opt.compute_gradients(loss, gate_gradients=7)
    with pytest.raises(ValueError, match="No variables to optimize."):
        opt.compute_gradients(loss, var_list=[])
    with pytest.raises(ValueError, match=r"Invalid type tf.int32 for Const.*, expected: \[tf.bfloat16, tf.float16, "
                                         r"tf.float32, tf.float64\]\."):
        opt.compute_gradients(tf.constant(1))
    with pytest.raises(ValueError, match="Invalid type tf.int32 for grad_loss"):
        opt.compute_gradients(loss, grad_loss=tf.constant(1, name="grad_loss"))
    unconnected = tf.Variable(1.0, name="unconnected")
    with pytest.raises(ValueError, match=r"No gradients provided for any variable, check your graph for ops that do "
                                         r"not support gradients, between variables \[.*unconnected.*\] and loss"):
        opt.minimize(loss, var_list=[unconnected])


def test_gate_graph_gates_all_gradients():
    w, loss = _quadratic(tf.float64)
    b = tf.Variable(1.0, name="b")
    loss = loss + tf.square(tf.cast(b, tf.float64))
    opt = tf.train.GradientDescentOptimizer(0.5)
    grads_and_vars = opt.compute_gradients(loss, gate_gradients=tf.train.Optimizer.GATE_GRAPH)
    gates = [set(g.op.control_inputs) for g, _ in grads_and_vars]
    assert gates[0] and gates[0] == gates[1]  # both gradients wait for one op that waits for every gradient
    train = opt.apply_gradients(grads_and_vars)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        sess.run(train)
        np.testing.assert_allclose(sess.run(w), VAR0 - np.float64(np.float32(0.5)) * 2 * (VAR0 - GRADS[0]))


@pytest.mark.parametrize("case", ["momentum", "rmsprop_centered", "adagrad", "adam"])
def test_slots_of_a_variable_with_unknown_shape(case):
    make_opt, reference = CASES[case]
    w = tf.Variable(tf.constant(VAR0), validate_shape=False, name="w")
    assert w.shape.ndims is None
    g = tf.placeholder(tf.float64, None, name="g")
    opt = make_opt()
    train = opt.apply_gradients([(g, w)])
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        for grad in GRADS[:2]:
            sess.run(train, {g: grad})
        expected, slots = reference(np.float64)(VAR0, GRADS[:2])
        np.testing.assert_allclose(sess.run(w), expected, rtol=1e-12)
        for name, value in slots.items():
            np.testing.assert_allclose(sess.run(opt.get_slot(w, name)), value, rtol=1e-12)


# --- the cached global-step read and is_resource_variable --------------------------------------------------------

def test_global_step_read_is_cached_and_taken_before_increments():
    from adplace.train import training_util
    with tf.Graph().as_default():
        assert training_util._get_or_create_global_step_read() is None       # no global step yet
        tf.train.create_global_step()
        read = training_util._get_or_create_global_step_read()
        assert read is training_util._get_or_create_global_step_read()
        assert read.op.name.startswith("global_step/")
        inc1, inc3 = training_util._increment_global_step(1), training_util._increment_global_step(3)
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            assert sess.run([read, inc1])[0] == 0
            assert sess.run([read, inc3])[0] == 1
            assert sess.run(read) == 4


def test_increment_global_step_needs_a_global_step():
    from adplace.train import training_util
    with tf.Graph().as_default():
        with pytest.raises(ValueError, match="Global step tensor should be created"):
            training_util._increment_global_step(1)


def test_is_resource_variable_is_false_for_reference_variables():
    from adplace.ops.variables import is_resource_variable
    with tf.Graph().as_default():
        assert is_resource_variable(tf.Variable(1.0)) is False
        assert is_resource_variable(tf.constant(1.0)) is False
