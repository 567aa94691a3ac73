"""tf.train.AdagradOptimizer: per-coordinate steps lr / sqrt(sum of squared gradients) (Duchi et al., 2011)."""
from __future__ import annotations

from adplace.framework.indexed_slices import IndexedSlices
from adplace.framework.operation import Operation, Tensor
from adplace.ops import array_ops, init_ops, math_ops, training_ops
from adplace.ops.constant_op import constant
from adplace.ops.variables import Variable
from adplace.train.optimizer import Optimizer


class AdagradOptimizer(Optimizer):
    """Adagrad (tf.train.AdagradOptimizer); one slot, "accumulator" ("<var>/Adagrad"), starting at
    `initial_accumulator_value`.

        opt = tf.train.AdagradOptimizer(0.1, initial_accumulator_value=0.1)
    """

    def __init__(self, learning_rate, initial_accumulator_value=0.1, use_locking: bool = False,
                 name: str = "Adagrad"):
        if initial_accumulator_value <= 0.0:
            raise ValueError(f"initial_accumulator_value must be positive: {initial_accumulator_value}")
        super().__init__(use_locking, name)
        self._learning_rate = learning_rate
        self._initial_accumulator_value = initial_accumulator_value
        self._learning_rate_tensor: Tensor | None = None

    def _create_slots(self, var_list: list) -> None:
        for v in var_list:
            init = constant_slot_initializer(v, self._initial_accumulator_value)
            self._get_or_make_slot_with_initializer(v, init, v.get_shape(), v.dtype.base_dtype, "accumulator",
                                                    self._name)

    def _prepare(self) -> None:
        self._learning_rate_tensor = self._hyper_tensor(self._learning_rate, "learning_rate")

    def _apply_dense(self, grad: Tensor, var: Variable) -> Operation:
        lr = math_ops.cast(self._learning_rate_tensor, var.dtype.base_dtype)
        return training_ops.apply_adagrad(var, self.get_slot(var, "accumulator"), lr, grad,
                                          use_locking=self._use_locking).op

    def _apply_sparse(self, grad: IndexedSlices, var: Variable) -> Operation:
        lr = math_ops.cast(self._learning_rate_tensor, var.dtype.base_dtype)
        return training_ops.sparse_apply_adagrad(var, self.get_slot(var, "accumulator"), lr, grad.values,
                                                 grad.indices, use_locking=self._use_locking).op


def constant_slot_initializer(v, value: float):
    """The initializer of a slot of `v` filled with `value`: a constant, or a fill of v's run-time shape when its
    static shape is not fully known (Adagrad's and Ftrl's accumulators)."""
    dtype = v.dtype.base_dtype
    if v.get_shape().is_fully_defined():
        return init_ops.constant_initializer(value, dtype=dtype)
    return array_ops.fill(array_ops.shape(v.initialized_value()), constant(value, dtype=dtype))
