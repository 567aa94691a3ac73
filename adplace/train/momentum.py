"""tf.train.MomentumOptimizer: accum = momentum * accum + grad; var -= lr * accum (or its Nesterov form)."""
from __future__ import annotations

from adplace.framework.indexed_slices import IndexedSlices
from adplace.framework.operation import Operation, Tensor
from adplace.ops import math_ops, training_ops
from adplace.ops.variables import Variable
from adplace.train.optimizer import Optimizer


class MomentumOptimizer(Optimizer):
    """Momentum (tf.train.MomentumOptimizer); one slot, "momentum" (named "<var>/Momentum").

        opt = tf.train.MomentumOptimizer(0.1, momentum=0.9, use_nesterov=True)
    """

    def __init__(self, learning_rate, momentum, use_locking: bool = False, name: str = "Momentum",
                 use_nesterov: bool = False):
        super().__init__(use_locking, name)
        self._learning_rate = learning_rate
        self._momentum = momentum
        self._use_nesterov = use_nesterov
        self._learning_rate_tensor: Tensor | None = None
        self._momentum_tensor: Tensor | None = None

    def _create_slots(self, var_list: list) -> None:
        for v in var_list:
            self._zeros_slot(v, "momentum", self._name)

    def _prepare(self) -> None:
        self._learning_rate_tensor = self._hyper_tensor(self._learning_rate, "learning_rate")
        self._momentum_tensor = self._hyper_tensor(self._momentum, "momentum")

    def _apply_dense(self, grad: Tensor, var: Variable) -> Operation:
        dtype = var.dtype.base_dtype
        return training_ops.apply_momentum(
            var, self.get_slot(var, "momentum"), math_ops.cast(self._learning_rate_tensor, dtype), grad,
            math_ops.cast(self._momentum_tensor, dtype), use_locking=self._use_locking,
            use_nesterov=self._use_nesterov).op

    def _apply_sparse(self, grad: IndexedSlices, var: Variable) -> Operation:
        dtype = var.dtype.base_dtype
        return training_ops.sparse_apply_momentum(
            var, self.get_slot(var, "momentum"), math_ops.cast(self._learning_rate_tensor, dtype), grad.values,
            grad.indices, math_ops.cast(self._momentum_tensor, dtype), use_locking=self._use_locking,
            use_nesterov=self._use_nesterov).op
