"""tf.contrib.opt.ExternalOptimizerInterface / ScipyOptimizerInterface: packing, callbacks, bounds, constraints, the
single write-back at the end, and agreement with scipy.optimize.minimize run directly on the same function."""
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

import adplace as tf

scipy_optimize = pytest.importorskip("scipy.optimize")
opt = tf.contrib.opt
REPO = Path(__file__).resolve().parents[2]


class NewtonStep(opt.ExternalOptimizerInterface):
    """One exact step x - grad (the optimum of sum((x - t)**2) / 2), recording what minimize handed over. Keyword-only
    arguments: minimize must call _minimize by keyword, as ADCME's CustomOptimizer subclasses expect."""

    def _minimize(self, *, initial_val, loss_grad_func, equality_funcs, equality_grad_funcs, inequality_funcs,
                  inequality_grad_funcs, packed_bounds, step_callback, optimizer_kwargs):
        self.seen = dict(initial_val=initial_val.copy(), packed_bounds=packed_bounds, kwargs=optimizer_kwargs,
                         equalities=[f(initial_val) for f in equality_funcs],
                         equality_grads=[g(initial_val) for g in equality_grad_funcs],
                         inequalities=[f(initial_val) for f in inequality_funcs])
        loss, grad = loss_grad_func(initial_val)
        self.seen.update(loss=loss, grad=grad)
        step_callback(initial_val)
        return initial_val - grad


def _session():
    sess = tf.Session()
    sess.run(tf.global_variables_initializer())
    return sess


def _three_variables(dtype):
    s = tf.Variable(np.float64(5.0).astype(dtype), name="s")
    v = tf.Variable(np.array([7.0, -2.0], dtype), name="v")
    m = tf.Variable(np.arange(6, dtype=dtype).reshape(2, 3) * 10, name="m")
    target = np.arange(9, dtype=dtype)
    loss = (tf.reduce_sum(tf.square(v - target[:2])) + tf.square(s - target[2])
            + tf.reduce_sum(tf.square(m - target[3:].reshape(2, 3)))) / 2.0
    return s, v, m, loss


# --- the base class: packing, evaluation, write-back -----------------------------------------------------------------
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_packing_order_gradient_and_write_back(dtype):
    s, v, m, loss = _three_variables(dtype)
    optimizer = NewtonStep(loss, var_list=[v, s, m])
    with _session() as sess:
        optimizer.minimize(sess)
        seen = optimizer.seen
        np.testing.assert_array_equal(seen["initial_val"], [7, -2, 5, 0, 10, 20, 30, 40, 50])
        assert seen["initial_val"].dtype == np.float64 and seen["grad"].dtype == np.float64
        np.testing.assert_array_equal(seen["grad"], [7, -3, 3, -3, 6, 15, 24, 33, 42])
        assert seen["loss"] == (49 + 9 + 9 + 9 + 36 + 225 + 576 + 1089 + 1764) / 2
        assert seen["packed_bounds"] is None and seen["kwargs"] == {}
        assert sess.run(s) == 2 and sess.run(s).dtype == dtype
        np.testing.assert_array_equal(sess.run(v), [0, 1])
        np.testing.assert_array_equal(sess.run(m), [[3, 4, 5], [6, 7, 8]])


def test_ops_are_built_with_the_optimizer_and_minimize_adds_none():
    v = tf.Variable([6.0, -2.0], name="v")
    optimizer = NewtonStep(tf.reduce_sum(tf.square(v)) / 2)
    reset = v.assign([4.0, 4.0])
    with _session() as sess:
        count = len(tf.get_default_graph().get_operations())
        optimizer.minimize(sess)
        sess.run(reset)
        optimizer.minimize(sess)
        assert len(tf.get_default_graph().get_operations()) == count
        np.testing.assert_array_equal(sess.run(v), [0, 0])


def test_var_list_defaults_to_trainable_variables_and_others_are_untouched():
    a = tf.Variable(4.0, name="a")
    frozen = tf.Variable(9.0, name="frozen", trainable=False)
    loss = tf.square(a - 1.0) / 2 + tf.square(frozen) / 2
    optimizer = NewtonStep(loss)
    assert optimizer._vars == [a]
    with _session() as sess:
        optimizer.minimize(sess)
        assert sess.run([a, frozen]) == [1.0, 9.0]


def test_variable_outside_var_list_keeps_its_value():
    a = tf.Variable(4.0, name="a")
    b = tf.Variable(-3.0, name="b")
    loss = tf.square(a - 1.0) + tf.square(b - 2.0)
    with _session() as sess:
        opt.ScipyOptimizerInterface(loss, var_list=[a]).minimize(sess)
        a_val, b_val = sess.run([a, b])
        assert b_val == -3.0
        assert abs(a_val - 1.0) < 1e-5


def test_gradient_of_an_unused_variable_is_zero():
    used = tf.Variable([3.0, 5.0], name="used")
    unused = tf.Variable([[8.0, 9.0]], name="unused")
    optimizer = NewtonStep(tf.reduce_sum(tf.square(used)) / 2, var_list=[unused, used])
    with _session() as sess:
        optimizer.minimize(sess)
        np.testing.assert_array_equal(optimizer.seen["grad"], [0, 0, 3, 5])
        np.testing.assert_array_equal(sess.run(unused), [[8, 9]])
        np.testing.assert_array_equal(sess.run(used), [0, 0])


def test_sparse_gradient_of_a_gathered_variable_is_densified():
    v = tf.Variable([3.0, 5.0, 7.0], name="v")
    optimizer = NewtonStep(tf.reduce_sum(tf.square(tf.gather(v, [2, 0]))) / 2)
    with _session() as sess:
        optimizer.minimize(sess)
        np.testing.assert_array_equal(optimizer.seen["grad"], [3, 0, 7])
        np.testing.assert_array_equal(sess.run(v), [0, 5, 0])


def test_callbacks_get_fetched_values_and_the_packed_vector():
    v = tf.Variable(np.array([7.0, -2.0], np.float32), name="v")
    loss = tf.reduce_sum(tf.square(v - np.array([0.0, 1.0], np.float32))) / 2
    steps, losses = [], []
    with _session() as sess:
        NewtonStep(loss).minimize(sess, fetches=[loss, v], step_callback=steps.append,
                                  loss_callback=lambda *vals: losses.append(vals))
        assert len(losses) == 1 and losses[0][0] == 29.0
        np.testing.assert_array_equal(losses[0][1], [7, -2])
        assert len(steps) == 1
        np.testing.assert_array_equal(steps[0], [7, -2])


def test_feed_dict_reaches_every_evaluation():
    target = tf.placeholder(tf.float64, [2], name="target")
    v = tf.Variable(np.zeros(2), name="v")
    loss = tf.reduce_sum(tf.square(v - target))
    with _session() as sess:
        opt.ScipyOptimizerInterface(loss).minimize(sess, feed_dict={target: [3.0, -1.0]})
        np.testing.assert_allclose(sess.run(v), [3, -1], atol=1e-8)


def test_default_session_is_used_and_missing_session_raises():
    v = tf.Variable(6.0, name="v")
    optimizer = NewtonStep(tf.square(v) / 2)
    with pytest.raises(ValueError, match="session"):
        optimizer.minimize()
    with _session() as sess, sess.as_default():
        optimizer.minimize()
        assert sess.run(v) == 0.0


def test_constraint_functions_return_one_element_lists():
    v = tf.Variable([2.0, 3.0], name="v")
    optimizer = NewtonStep(tf.reduce_sum(tf.square(v)), equalities=[v[0] * v[1] - 1.0], inequalities=[v[1] - 5.0])
    with _session() as sess:
        optimizer.minimize(sess)
    seen = optimizer.seen
    assert seen["equalities"] == [[5.0]] and seen["inequalities"] == [[-2.0]]
    (grad,), = seen["equality_grads"]
    np.testing.assert_array_equal(grad, [3, 2])


def test_base_class_is_abstract():
    v = tf.Variable(1.0, name="v")
    optimizer = opt.ExternalOptimizerInterface(tf.square(v))
    with _session() as sess, pytest.raises(NotImplementedError, match="_minimize"):
        optimizer.minimize(sess)


# --- construction errors -----------------------------------------------------------------------------------------
def test_no_variables_raises():
    with pytest.raises(ValueError, match="No variables to optimize"):
        opt.ScipyOptimizerInterface(tf.constant(1.0))
    v = tf.Variable(1.0, name="v")
    with pytest.raises(ValueError, match="No variables to optimize"):
        opt.ScipyOptimizerInterface(tf.square(v), var_list=[])


def test_non_scalar_loss_raises_naming_it():
    v = tf.Variable([1.0, 2.0], name="v")
    with pytest.raises(ValueError, match="loss Square"):
        opt.ScipyOptimizerInterface(tf.square(v, name="Square"))


@pytest.mark.parametrize("bounds, match", [
    (([0.0, 1.0, 2.0], None), "variable w:0: .* does not broadcast"),
    ((0.0,), "variable w:0 must be a \\(low, high\\) pair"),
    ((3.0, 1.0), "variable w:0: low must be <= high"),
])
def test_bad_bounds_raise_naming_the_variable(bounds, match):
    w = tf.Variable(np.zeros((2, 2)), name="w")
    with pytest.raises(ValueError, match=match):
        opt.ScipyOptimizerInterface(tf.reduce_sum(w), var_to_bounds={w: bounds})


@pytest.mark.parametrize("kwarg", ["jac", "callback", "constraints", "bounds"])
def test_arguments_set_by_the_interface_cannot_be_injected(kwarg):
    v = tf.Variable(1.0, name="v")
    with pytest.raises(ValueError, match="var_to_bounds" if kwarg == "bounds" else f"'{kwarg}'"):
        opt.ScipyOptimizerInterface(tf.square(v), **{kwarg: None})


# --- bounds ---------------------------------------------------------------------------------------------------------
def test_packed_bounds_broadcast_per_variable_and_default_to_unbounded():
    m = tf.Variable(np.zeros((2, 3)), name="m")
    free = tf.Variable(np.zeros(2), name="free")
    s = tf.Variable(np.float64(0.0), name="s")
    optimizer = NewtonStep(tf.reduce_sum(m) + tf.reduce_sum(free) + s, var_list=[m, free, s],
                           var_to_bounds={m: (-np.inf, [[1], [2]]), s: (None, 4)})
    inf = np.inf
    assert optimizer._packed_bounds == [(-inf, 1), (-inf, 1), (-inf, 1), (-inf, 2), (-inf, 2), (-inf, 2),
                                        (-inf, inf), (-inf, inf), (-inf, 4)]


def test_scalar_bound_clips_the_optimum():
    v = tf.Variable([7.0, 7.0], name="v")
    with _session() as sess:
        opt.ScipyOptimizerInterface(tf.reduce_sum(tf.square(v)), var_to_bounds={v: (1.0, np.inf)}).minimize(sess)
        np.testing.assert_array_equal(sess.run(v), [1, 1])


def test_elementwise_bounds_with_none_and_an_unbounded_second_variable():
    v = tf.Variable([7.0, 7.0], name="v")
    w = tf.Variable(3.0, name="w")
    loss = tf.reduce_sum(tf.square(v)) + tf.square(w + 2.0)
    with _session() as sess:
        opt.ScipyOptimizerInterface(loss, var_to_bounds={v: ([None, 2.0], None)}).minimize(sess)
        v_val, w_val = sess.run([v, w])
        assert v_val[1] == 2.0 and abs(v_val[0]) < 1e-5 and abs(w_val + 2.0) < 1e-5


# --- scipy methods ----------------------------------------------------------------------------------------------------
def test_slsqp_equality_and_inequality_constraints():
    v = tf.Variable([7.0, 7.0], name="v")
    optimizer = opt.ScipyOptimizerInterface(tf.reduce_sum(tf.square(v)), equalities=[v[1] - 1.0],
                                            inequalities=[v[0] - 1.0], method="SLSQP")
    with _session() as sess:
        optimizer.minimize(sess)
        np.testing.assert_allclose(sess.run(v), [1, 1], atol=1e-6)
    assert optimizer.optimizer_kwargs == {"method": "SLSQP"}      # minimize does not consume `method`


def test_slsqp_equality_constraint_on_the_line():
    x = tf.Variable(np.array([4.0, -3.0]), name="x")
    optimizer = opt.ScipyOptimizerInterface(tf.reduce_sum(tf.square(x)), equalities=[x[0] + x[1] - 2.0],
                                            method="SLSQP", options={"ftol": 1e-12})
    with _session() as sess:
        optimizer.minimize(sess)
        np.testing.assert_allclose(sess.run(x), [1, 1], atol=1e-9)


def _rosenbrock_graph(x):
    return tf.reduce_sum(100.0 * tf.square(x[1:] - tf.square(x[:-1])) + tf.square(1.0 - x[:-1]))


def _rosenbrock(x):
    return np.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2)


def _rosenbrock_grad(x):
    g = np.zeros_like(x)
    g[:-1] = -400.0 * x[:-1] * (x[1:] - x[:-1] ** 2) - 2.0 * (1.0 - x[:-1])
    g[1:] += 200.0 * (x[1:] - x[:-1] ** 2)
    return g


@pytest.fixture
def scipy_results(monkeypatch):
    """The OptimizeResult of every scipy.optimize.minimize call the interface makes."""
    results, minimize = [], scipy_optimize.minimize

    def recording(*args, **kwargs):
        results.append(minimize(*args, **kwargs))
        return results[-1]

    monkeypatch.setattr(scipy_optimize, "minimize", recording)
    return results


@pytest.mark.parametrize("method", ["L-BFGS-B", "BFGS", "CG", "SLSQP"])
def test_callback_counts_are_scipys_and_the_result_matches_scipy_run_directly(method, scipy_results):
    """ADCME's call: options maxiter/ftol/gtol, fetches=[loss, vars...]. One step_callback per SciPy iteration, one
    loss_callback per evaluation, and the optimum of scipy.optimize.minimize run on the NumPy function itself."""
    x0 = np.array([-1.2, 1.0, 0.5, -0.3])
    x = tf.Variable(x0, name="x")
    loss = _rosenbrock_graph(x)
    options = {"maxiter": 500}
    if method in ("L-BFGS-B", "SLSQP"):
        options["ftol"] = 1e-12
    if method == "L-BFGS-B":
        options["gtol"] = 1e-12
    steps, losses = [], []
    optimizer = opt.ScipyOptimizerInterface(loss, method=method, options=options)
    with _session() as sess:
        optimizer.minimize(sess, fetches=[loss, x], step_callback=steps.append,
                           loss_callback=lambda value, x_value: losses.append((value, x_value)))
        found = sess.run(x)
    (result,) = scipy_results
    assert result.success and len(steps) == result.nit > 10 and len(losses) == result.nfev
    assert losses[0][0] == _rosenbrock(x0)
    np.testing.assert_array_equal(losses[0][1], x0)
    np.testing.assert_array_equal(found, result.x)
    direct = scipy_optimize.minimize(lambda z: (_rosenbrock(z), _rosenbrock_grad(z)), x0, jac=True, method=method,
                                     options=options)
    np.testing.assert_allclose(found, direct.x, atol=1e-5)
    np.testing.assert_allclose(found, np.ones(4), atol=1e-4)


@pytest.mark.parametrize("method", ["Nelder-Mead", "Powell"])
def test_gradient_free_methods(method):
    x = tf.Variable(np.zeros(2), name="x")
    optimizer = opt.ScipyOptimizerInterface(tf.reduce_sum(tf.square(x - [1.0, -2.0])), method=method,
                                            options={"xatol": 1e-8, "fatol": 1e-12} if method == "Nelder-Mead"
                                            else {"xtol": 1e-8, "ftol": 1e-12})
    with _session() as sess, pytest.warns(RuntimeWarning, match="does not use gradient"):
        optimizer.minimize(sess)
        np.testing.assert_allclose(sess.run(x), [1, -2], atol=1e-6)


# --- devices and dtypes ------------------------------------------------------------------------------------------------
def test_float32_and_float64_variables_on_virtual_gpus(gpus):
    with tf.device("/gpu:0"):
        a = tf.Variable(np.array([5.0, -4.0], np.float32), name="a")
    with tf.device("/gpu:1"):
        b = tf.Variable(np.array([[3.0]], np.float64), name="b")
    loss = tf.reduce_sum(tf.square(a - [1.0, 2.0])) + tf.cast(tf.reduce_sum(tf.square(b + 0.5)), tf.float32)
    optimizer = opt.ScipyOptimizerInterface(loss, var_to_bounds={b: (0.0, None)},
                                            options={"ftol": 1e-12, "gtol": 1e-10})
    with _session() as sess:
        optimizer.minimize(sess)
        assert sess.placement(a.op).endswith("/device:GPU:0") and sess.placement(b.op).endswith("/device:GPU:1")
        a_val, b_val = sess.run([a, b])
    assert a_val.dtype == np.float32 and b_val.dtype == np.float64
    np.testing.assert_allclose(a_val, [1, 2], atol=1e-5)
    np.testing.assert_array_equal(b_val, [[0.0]])


# --- interruption: variables change once, at the end, or not at all ----------------------------------------------------
def _interruptible():
    x = tf.Variable(np.array([-1.2, 1.0, 0.5]), name="x")
    y = tf.Variable(np.float32(2.0), name="y")
    loss = _rosenbrock_graph(x) + tf.cast(tf.square(y), tf.float64)
    return x, y, opt.ScipyOptimizerInterface(loss)


def test_keyboard_interrupt_in_step_callback_leaves_variables_untouched():
    x, y, optimizer = _interruptible()
    calls = []

    def step(xk):
        calls.append(xk)
        if len(calls) == 3:
            raise KeyboardInterrupt

    with _session() as sess:
        with pytest.raises(KeyboardInterrupt):
            optimizer.minimize(sess, step_callback=step)
        np.testing.assert_array_equal(sess.run(x), [-1.2, 1.0, 0.5])
        assert sess.run(y) == 2.0
    assert len(calls) == 3


def test_error_in_loss_callback_leaves_variables_untouched():
    x, y, optimizer = _interruptible()
    count = []

    def on_loss(*unused):
        count.append(1)
        if len(count) == 4:
            raise RuntimeError("stop")

    with _session() as sess:
        with pytest.raises(RuntimeError, match="stop"):
            optimizer.minimize(sess, loss_callback=on_loss)
        np.testing.assert_array_equal(sess.run(x), [-1.2, 1.0, 0.5])


def test_stop_iteration_in_step_callback_writes_back_the_point_it_was_given():
    x, y, optimizer = _interruptible()
    calls = []

    def step(xk):
        calls.append(xk.copy())
        if len(calls) == 3:
            raise StopIteration

    with _session() as sess:
        optimizer.minimize(sess, step_callback=step)
        np.testing.assert_array_equal(sess.run(x), calls[-1][:3])
        assert sess.run(y) == np.float32(calls[-1][3])
    assert len(calls) == 3


def test_wrong_length_from_minimize_writes_nothing():
    class Broken(opt.ExternalOptimizerInterface):
        def _minimize(self, initial_val, **unused):
            return np.zeros(initial_val.size - 1)

    a = tf.Variable(1.0, name="a")
    b = tf.Variable([2.0, 3.0], name="b")
    with _session() as sess:
        with pytest.raises(ValueError, match="2 values for 3"):
            Broken(tf.square(a) + tf.reduce_sum(b)).minimize(sess)
        assert sess.run(a) == 1.0
        np.testing.assert_array_equal(sess.run(b), [2, 3])


# --- SciPy is optional --------------------------------------------------------------------------------------------------
def test_adplace_imports_without_scipy_and_the_optimizer_names_the_extra():
    code = textwrap.dedent("""
        import sys
        sys.modules['scipy'] = None            # any `import scipy` now raises ImportError
        import adplace as tf
        import adplace.contrib
        assert 'scipy.optimize' not in sys.modules
        v = tf.Variable(1.0)
        try:
            tf.contrib.opt.ScipyOptimizerInterface(tf.square(v))
        except ImportError as exc:
            print(exc)
    """)
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, cwd=str(REPO))
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip().endswith('pip install "adplace[scipy]"')
