"""adplace/kernels/fused_updates.py: the dense Adam, Momentum, RMSProp, centered RMSProp, Adagrad and Adadelta
and FTRL updates as one compiled Numba loop each give their NumPy reference's values exactly, and fall back to it where a loop does not apply."""
import numpy as np
import pytest

import adplace as tf
from adplace.kernels import fused_updates, ftrl, state

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
    monkeypatch.setattr(fused_updates, "_loop", lambda name, dtype, in_place=False: names.append(name) or
                        real(name, dtype, in_place))
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


def test_a_strided_vector_is_left_to_numpy_before_anything_is_written(calls):
    """A 1-D view with a step has no loop signature: Numba's dispatcher refuses it (no Python check does) and the
    NumPy reference computes the update, into the same outputs."""
    refs, inputs = _inputs("adam", np.float32, (8,))
    wide = np.repeat(inputs[-1], 2)
    strided = [*inputs[:-1], wide[::2]]
    assert not strided[-1].flags.c_contiguous
    fused, expected = _both("adam", {}, refs, strided)
    assert calls == ["adam"]  # the loop was looked up, then refused the array
    for a, b in zip(fused, expected, strict=True):
        np.testing.assert_array_equal(a, b)


def test_variables_under_the_size_threshold_take_the_numpy_form(monkeypatch, calls):
    monkeypatch.setattr(fused_updates, "LOOP_MIN_ELEMENTS", 4096)
    _both("adam", {}, *_inputs("adam", np.float32, (64, 63)))
    assert calls == []
    _both("adam", {}, *_inputs("adam", np.float32, (64, 64)))
    assert calls == ["adam"]


def _train(optimizer, steps: int, inputs: int = 8, units: int = 4) -> list:
    with tf.Graph().as_default():
        tf.set_random_seed(3)
        x = tf.placeholder(tf.float32, [16, inputs])
        w = tf.Variable(tf.random_normal([inputs, units]))
        loss = tf.reduce_mean(tf.square(tf.matmul(x, w)))
        train = optimizer().minimize(loss)
        feed = {x: np.linspace(-1, 1, 16 * inputs, dtype=np.float32).reshape(16, inputs)}
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


# --- FTRL (kernels/ftrl.py): square roots in the loop for lr_power -0.5, NumPy's np.power for any other power ---
def _ftrl_inputs(dtype, shape, lr_power, l1, shrinkage=None, seed=0):
    rng = np.random.default_rng(seed)
    refs = [rng.standard_normal(shape).astype(dtype), (np.abs(rng.standard_normal(shape)) + 0.1).astype(dtype),
            (rng.standard_normal(shape) * 0.1).astype(dtype)]
    scalars = (0.05, l1, 0.01) + (() if shrinkage is None else (shrinkage,)) + (lr_power,)
    return refs, [rng.standard_normal(shape).astype(dtype), *(np.asarray(x, dtype) for x in scalars)]


def _ftrl_both(attrs, refs, inputs, v2):
    reference = ftrl._ftrl_v2_into if v2 else ftrl._ftrl_into
    wrapper = fused_updates.compiled_ftrl_v2 if v2 else fused_updates.compiled_ftrl
    fused = wrapper(reference)(attrs, [np.empty_like(refs[0]) for _ in refs], *refs, *inputs)
    return fused, reference(attrs, [np.empty_like(refs[0]) for _ in refs], *refs, *inputs)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("lr_power", [-0.5, -0.7, -1.0, 0.0])
@pytest.mark.parametrize("l1", [0.0, 0.05])
@pytest.mark.parametrize("shrinkage", [None, 0.2], ids=["v1", "v2"])
@pytest.mark.parametrize("shape", [(1,), (300, 200)])
def test_ftrl_loops_equal_the_numpy_update_bit_for_bit(calls, dtype, lr_power, l1, shrinkage, shape):
    refs, inputs = _ftrl_inputs(dtype, shape, lr_power, l1, shrinkage)
    fused, expected = _ftrl_both({}, refs, inputs, shrinkage is not None)
    suffix = "" if shrinkage is None else "_v2"
    assert calls == [("ftrl" if lr_power == -0.5 else "ftrl_powers") + suffix]
    for a, b in zip(fused, expected, strict=True):
        assert a.dtype == dtype
        np.testing.assert_array_equal(a, b)
    if l1 and fused[0].size > 1:  # the l1 cut zeroes some weights and keeps others: both branches ran
        assert 0 < np.count_nonzero(fused[0]) < fused[0].size


@pytest.mark.filterwarnings("ignore:invalid value:RuntimeWarning")
def test_ftrl_special_values_propagate_as_in_numpy():
    refs, inputs = _ftrl_inputs(np.float32, (6,), -0.5, 0.05)
    inputs[0][:3] = [np.nan, np.inf, -np.inf]
    refs[2][3] = -0.0
    fused, expected = _ftrl_both({}, refs, inputs, False)
    for a, b in zip(fused, expected, strict=True):
        np.testing.assert_array_equal(a, b)
        np.testing.assert_array_equal(np.signbit(a), np.signbit(b))


def test_ftrl_takes_numpy_where_the_loop_does_not_apply(monkeypatch, calls):
    refs, inputs = _ftrl_inputs(np.float32, (8, 4), -0.5, 0.05)
    for attrs, case_refs, case_inputs in (
            ({"multiply_linear_by_lr": True}, refs, inputs),                            # TF 2.x's linear: NumPy
            ({}, refs, [np.asfortranarray(inputs[0]), *inputs[1:]]),                    # not C-contiguous
            ({}, *_ftrl_inputs(np.float16, (8, 4), -0.5, 0.05))):                       # float16
        fused, expected = _ftrl_both(attrs, case_refs, case_inputs, False)
        for a, b in zip(fused, expected, strict=True):
            np.testing.assert_array_equal(a, b)
    assert calls == []
    monkeypatch.setattr(fused_updates, "LOOP_MIN_ELEMENTS", 33)
    _ftrl_both({}, *_ftrl_inputs(np.float32, (8, 4), -0.5, 0.05), False)
    assert calls == []


@pytest.mark.parametrize("optimizer", [
    lambda: tf.train.FtrlOptimizer(0.1, l1_regularization_strength=0.01, l2_regularization_strength=0.01),
    lambda: tf.train.FtrlOptimizer(0.1, learning_rate_power=-0.7, l2_shrinkage_regularization_strength=0.1)],
    ids=["ftrl", "ftrl_v2_power"])
def test_ftrl_training_with_the_loops_equals_training_without_them(monkeypatch, calls, optimizer):
    fused = _train(optimizer, 5, 64, 32)  # 2,048 weights: over RECYCLE_MIN_ELEMENTS, so the fused form runs
    assert calls and all(name.startswith("ftrl") for name in calls)
    monkeypatch.setenv("ADPLACE_CPU_FUSION", "0")
    for a, b in zip(fused, _train(optimizer, 5, 64, 32), strict=True):
        np.testing.assert_array_equal(a, b)


def _small(name, attrs, refs, inputs):
    """The small-variable loop's new arrays, once compiled (the first call starts its compile in a thread and leaves
    the update to NumPy), and the reference's values."""
    wrapper, reference, *_ = CASES[name]
    small = wrapper(reference).small
    small(attrs, refs, inputs)
    assert fused_updates.wait_small_loops(300)
    expected = reference(attrs, [np.empty_like(r) for r in refs], *refs, *inputs)
    return small(attrs, refs, inputs), expected


@pytest.mark.filterwarnings("ignore:invalid value:RuntimeWarning")  # centered RMSProp's NaNs, in the reference too
@pytest.mark.parametrize("name", CASES)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("shape", [(1,), (7, 5), (3, 1, 2)])
def test_each_small_variable_loop_equals_its_numpy_update_bit_for_bit(name, dtype, shape):
    refs, inputs = _inputs(name, dtype, shape)
    kept = [r.copy() for r in refs]
    news, expected = _small(name, {}, refs, inputs)
    assert len(news) == len(refs)
    for new, want, ref, old in zip(news, expected, refs, kept, strict=True):
        assert new.dtype == dtype and new.shape == shape and new is not ref
        np.testing.assert_array_equal(new, want)
        np.testing.assert_array_equal(ref, old)  # new arrays: the inputs are left as they were


def test_a_small_variable_loop_leaves_what_it_does_not_take_to_numpy(monkeypatch):
    refs, inputs = _inputs("adam", np.float32, (6, 5))
    assert _small("adam", {}, refs, inputs)[0] is not None
    small = fused_updates.compiled_adam(state._adam_into).small
    assert small({"use_nesterov": True}, refs, inputs) is None                      # no loop for nesterov
    assert small({}, refs, [*inputs[:-1], np.asfortranarray(inputs[-1])]) is None   # not C-contiguous
    assert small({}, refs, [*inputs[:-1], inputs[-1][:, :4].copy()]) is None        # another size
    assert small({}, [r.astype(np.float16) for r in refs], inputs) is None          # float16
    monkeypatch.setenv("ADPLACE_CPU_FUSION", "0")
    assert small({}, refs, inputs) is None                                          # turned off
    monkeypatch.delenv("ADPLACE_CPU_FUSION")
    monkeypatch.setattr(fused_updates, "SMALL_LOOPS", False)
    rank4 = [r[..., None, None] for r in refs], [*inputs[:-1], inputs[-1][..., None, None]]
    assert small({}, *rank4) is None and ("adam", "f", 4) not in fused_updates._small  # not compiled, nor started


def test_training_small_variables_with_their_loops_equals_training_without(monkeypatch):
    monkeypatch.setattr(fused_updates, "LOOP_MIN_ELEMENTS", 4096)  # the 8x4 weights' updates stay in their steps
    adam = lambda: tf.train.AdamOptimizer(0.05)  # noqa: E731
    _train(adam, 2)  # starts the compile of the 2-D float32 loop
    assert fused_updates.wait_small_loops(300)
    ran = []
    small_loop = fused_updates._small_loop
    monkeypatch.setattr(fused_updates, "_small_loop", lambda name, var: ran.append(var.size) or small_loop(name, var))
    with_loops = _train(adam, 5)
    assert ran and set(ran) == {32}  # the 8x4 weights, each step (under RECYCLE_MIN_ELEMENTS: the small path)
    monkeypatch.setenv("ADPLACE_CPU_FUSION", "0")
    for a, b in zip(with_loops, _train(adam, 5), strict=True):
        np.testing.assert_array_equal(a, b)
