"""tf.train.GradientDescentOptimizer: var -= learning_rate * grad, one ApplyGradientDescent per variable."""
from __future__ import annotations

from adplace.framework.indexed_slices import IndexedSlices
from adplace.framework.operation import Operation, Tensor
from adplace.ops import math_ops, state_ops, training_ops
from adplace.ops.variables import Variable
from adplace.train.optimizer import Optimizer


class GradientDescentOptimizer(Optimizer):
    """Plain gradient descent (tf.train.GradientDescentOptimizer); no slots.

        train = tf.train.GradientDescentOptimizer(0.1).minimize(loss)   # w -= 0.1 * dloss/dw
    """

    def __init__(self, learning_rate, use_locking: bool = False, name: str = "GradientDescent"):
        super().__init__(use_locking, name)
        self._learning_rate = learning_rate
        self._learning_rate_tensor: Tensor | None = None

    def _prepare(self) -> None:
        self._learning_rate_tensor = self._hyper_tensor(self._learning_rate, "learning_rate")

    def _apply_dense(self, grad: Tensor, var: Variable) -> Operation:
        lr = math_ops.cast(self._learning_rate_tensor, var.dtype.base_dtype)
        return training_ops.apply_gradient_descent(var, lr, grad, use_locking=self._use_locking).op

    def _apply_sparse_duplicate_indices(self, grad: IndexedSlices, var: Variable) -> Operation:
        """var[indices] -= lr * values, repeated indices each applied (ScatterSub), as TF: no deduplication."""
        lr = math_ops.cast(self._learning_rate_tensor, var.dtype.base_dtype)
        return state_ops.scatter_sub(var, grad.indices, grad.values * lr, use_locking=self._use_locking).op
