"""Every dense optimizer trains a scalar (0-d) variable as it trains the same value held in a [1] variable: NumPy's
`out=` calls give scalars for 0-d inputs, so the in-place kernels compute scalars with the plain expressions."""
import numpy as np
import pytest

import adplace as tf

OPTIMIZERS = {
    "sgd": lambda: tf.train.GradientDescentOptimizer(0.1),
    "momentum": lambda: tf.train.MomentumOptimizer(0.1, 0.9),
    "nesterov": lambda: tf.train.MomentumOptimizer(0.1, 0.9, use_nesterov=True),
    "adam": lambda: tf.train.AdamOptimizer(0.1),
    "rmsprop": lambda: tf.train.RMSPropOptimizer(0.1, momentum=0.5),
    "centered_rmsprop": lambda: tf.train.RMSPropOptimizer(0.1, momentum=0.5, centered=True),
    "adagrad": lambda: tf.train.AdagradOptimizer(0.1),
    "adadelta": lambda: tf.train.AdadeltaOptimizer(1.0),
    "ftrl": lambda: tf.train.FtrlOptimizer(0.1, l1_regularization_strength=0.01),
}


def _trained(make, init, steps: int = 3) -> float:
    with tf.Graph().as_default():
        v = tf.Variable(init)
        train = make().minimize(tf.reduce_sum(tf.square(v - 0.5)))
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            for _ in range(steps):
                sess.run(train)
            value = sess.run(v)
    assert np.shape(value) == np.shape(init)
    return float(np.ravel(value)[0])


@pytest.mark.parametrize("fusion", ["0", "1"])
@pytest.mark.parametrize("name", OPTIMIZERS)
def test_a_scalar_variable_trains_as_a_one_element_one(monkeypatch, name, fusion):
    monkeypatch.setenv("ADPLACE_CPU_FUSION", fusion)
    scalar = _trained(OPTIMIZERS[name], 2.0)
    assert scalar != 2.0
    assert scalar == _trained(OPTIMIZERS[name], [2.0])
