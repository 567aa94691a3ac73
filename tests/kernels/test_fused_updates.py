"""adplace/kernels/fused_updates.py: the dense Adam, Momentum, RMSProp, centered RMSProp, Adagrad and Adadelta
updates as one compiled Numba loop each give their NumPy reference's values exactly, and fall back to it where a loop does not apply."""
import numpy as np
import pytest

import adplace as tf
from adplace.kernels import fused_updates, state

pytestmark = pytest.mark.skipif(not fused_updates.cpu_fusion.available(), reason="needs Numba (the jit extra)")


@pytest.fixture(autouse=True)
def loops_for_every_size(monkeypatch):
    """The loops also run for the small arrays these tests use (by default they start at LOOP_MIN_ELEMENTS)."""
    monkeypatch.setattr(fused_updates, "LOOP_MIN_ELEMENTS", 1)

# name -> (compiled wrapper, reference, slots, scalar inputs before/after the gradient)
CASES = {
    "adam": (fused_updates.compiled_adam, state._adam_into, 2, (0.9 ** 3, 0.999 ** 3, 0.01, 0.9, 0.999, 1e-7), ()),
    "momentum": (fused_updates.compiled_momentum, state._momentum_into, 1, (0.05,), (0.9,)),
    "rms_prop": (fused_updates.compiled_rms_prop, state._rms_prop_into, 2, (0.01, 0.9, 0.5, 1e-6), ()),
    "adagrad": (fused_updates.compiled_adagrad, state._adagrad_into, 1, (0.1,), ()),
    "centered_rms_prop": (fused_updates.compiled_centered_rms_prop, state._centered_rms_prop_into, 3,
                          (0.01, 0.9, 0.5, 1e-6), ()),
    "adadelta": (fused_updates.compiled_adadelta, state._adadelta_into, 2, (1.0, 0.95, 1e-6), ()),
}


def _inputs(name, dtype, shape, seed=0):
    _, _, slots, before, after = CASES[name]
    rng = np.random.default_rng(seed)
    refs = [rng.standard_normal(shape).astype(dtype)] + [np.abs(rng.standard_normal(shape)).astype(dtype) + 0.1
                                                         for _ in range(slots)]
    grad = rng.standard_normal(shape).astype(dtype)
    return refs, [*(np.asarray(x, dtype) for x in before), grad, *(np.asarray(x, dtype) for x in after)]


def _both(name, attrs, refs, inputs):
    wrapper, reference, *_ = CASES[name]
    fused = [np.empty_like(refs[0]) for _ in refs]
    expected = [np.empty_like(refs[0]) for _ in refs]
    fused = wrapper(reference)(attrs, fused, *refs, *inputs)
    expected = reference(attrs, expected, *refs, *inputs)
    return fused, expected


@pytest.mark.parametrize("name", CASES)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("shape", [(1,), (7, 5), (300, 200)])  # 0-d: test_scalar_variable_updates.py
def test_each_loop_equals_its_numpy_update_bit_for_bit(name, dtype, shape):
    fused, expected = _both(name, {}, *_inputs(name, dtype, shape))
    for a, b in zip(fused, expected, strict=True):
        assert a.dtype == dtype
        np.testing.assert_array_equal(a, b)


@pytest.mark.filterwarnings("ignore:invalid value:RuntimeWarning")  # NumPy's reference warns of its NaNs
@pytest.mark.parametrize("name", CASES)
def test_special_values_propagate_as_in_numpy(name):
    refs, inputs = _inputs(name, np.float32, (6,))
    grad = next(x for x in inputs if x.ndim == 1)
    grad[:3] = [np.nan, np.inf, -np.inf]
    refs[-1][3] = 0.0
    fused, expected = _both(name, {}, refs, inputs)
    for a, b in zip(fused, expected, strict=True):
        np.testing.assert_array_equal(a, b)


@pytest.fixture
def calls(monkeypatch) -> list:
    """The names of the loops the updates run, in order."""
    names, real = [], fused_updates._loop
    monkeypatch.setattr(fused_updates, "_loop", lambda name, dtype: names.append(name) or real(name, dtype))
    return names


def test_a_loop_runs_for_plain_arrays_and_not_elsewhere(monkeypatch, calls):
    refs, inputs = _inputs("adam", np.float32, (8, 4))
    _both("adam", {}, refs, inputs)
    assert calls == ["adam"]
    _both("adam", {"use_nesterov": True}, refs, inputs)                             # nesterov: NumPy
    _both("momentum", {"use_nesterov": True}, *_inputs("momentum", np.float32, (8, 4)))
    _both("adagrad", {"update_slots": False}, *_inputs("adagrad", np.float32, (8, 4)))
    _both("adam", {}, refs, [*inputs[:-1], np.asfortranarray(inputs[-1])])           # not C-contiguous: NumPy
    _both("adam", {}, *_inputs("adam", np.float16, (8, 4)))                          # float16: NumPy
    monkeypatch.setenv("ADPLACE_CPU_FUSION", "0")
    fused, expected = _both("adam", {}, refs, inputs)                                # turned off: NumPy
    assert calls == ["adam"]
    for a, b in zip(fused, expected, strict=True):
        np.testing.assert_array_equal(a, b)


def test_variables_under_the_size_threshold_take_the_numpy_form(monkeypatch, calls):
    monkeypatch.setattr(fused_updates, "LOOP_MIN_ELEMENTS", 4096)
    _both("adam", {}, *_inputs("adam", np.float32, (64, 63)))
    assert calls == []
    _both("adam", {}, *_inputs("adam", np.float32, (64, 64)))
    assert calls == ["adam"]


def _train(optimizer, steps: int) -> list:
    with tf.Graph().as_default():
        tf.set_random_seed(3)
        x = tf.placeholder(tf.float32, [16, 8])
        w = tf.Variable(tf.random_normal([8, 4]))
        loss = tf.reduce_mean(tf.square(tf.matmul(x, w)))
        train = optimizer().minimize(loss)
        feed = {x: np.linspace(-1, 1, 128, dtype=np.float32).reshape(16, 8)}
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            for _ in range(steps):
                sess.run(train, feed)
            return sess.run(tf.global_variables())


@pytest.mark.parametrize("optimizer", [lambda: tf.train.AdamOptimizer(0.05), lambda: tf.train.MomentumOptimizer(0.1, 0.9),
                                       lambda: tf.train.RMSPropOptimizer(0.01, momentum=0.5),
                                       lambda: tf.train.AdagradOptimizer(0.1),
                                       lambda: tf.train.RMSPropOptimizer(0.01, momentum=0.5, centered=True),
                                       lambda: tf.train.AdadeltaOptimizer(1.0)],
                         ids=["adam", "momentum", "rmsprop", "adagrad", "centered_rmsprop", "adadelta"])
def test_training_with_the_loops_equals_training_without_them(monkeypatch, optimizer):
    fused = _train(optimizer, 5)
    monkeypatch.setenv("ADPLACE_CPU_FUSION", "0")
    for a, b in zip(fused, _train(optimizer, 5), strict=True):
        np.testing.assert_array_equal(a, b)
