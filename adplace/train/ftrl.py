"""tf.train.FtrlOptimizer: FTRL-proximal (McMahan et al., 2013) with online L2 and L2 shrinkage, TF 1.15's API."""
from __future__ import annotations

from adplace.framework.indexed_slices import IndexedSlices
from adplace.framework.operation import Operation, Tensor
from adplace.ops import math_ops, training_ops
from adplace.ops.variables import Variable
from adplace.train.adagrad import constant_slot_initializer
from adplace.train.optimizer import Optimizer


class FtrlOptimizer(Optimizer):
    """FTRL (tf.train.FtrlOptimizer); two slots per variable, "accum" (starting at `initial_accumulator_value`) and
    "linear" (zeros), named "<var>/<name>" and "<var>/<name>_1" unless `accum_name`/`linear_name` say otherwise.
    A positive `l2_shrinkage_regularization_strength` uses the V2 ops.

        opt = tf.train.FtrlOptimizer(0.1, l1_regularization_strength=0.01)
    """

    def __init__(self, learning_rate, learning_rate_power=-0.5, initial_accumulator_value=0.1,
                 l1_regularization_strength=0.0, l2_regularization_strength=0.0, use_locking: bool = False,
                 name: str = "Ftrl", accum_name: str | None = None, linear_name: str | None = None,
                 l2_shrinkage_regularization_strength=0.0):
        super().__init__(use_locking, name)
        for value, text, valid in (
                (initial_accumulator_value, "initial_accumulator_value", "positive or zero"),
                (learning_rate_power, "learning_rate_power", "negative or zero"),
                (l1_regularization_strength, "l1_regularization_strength", "positive or zero"),
                (l2_regularization_strength, "l2_regularization_strength", "positive or zero"),
                (l2_shrinkage_regularization_strength, "l2_shrinkage_regularization_strength", "positive or zero")):
            if (value > 0.0) if valid == "negative or zero" else (value < 0.0):
                raise ValueError(f"{text} {value:f} needs to be {valid}")
        self._learning_rate = learning_rate
        self._learning_rate_power = learning_rate_power
        self._initial_accumulator_value = initial_accumulator_value
        self._l1 = l1_regularization_strength
        self._l2 = l2_regularization_strength
        self._l2_shrinkage = l2_shrinkage_regularization_strength
        self._accum_name, self._linear_name = accum_name, linear_name
        self._tensors: dict[str, Tensor] = {}

    def _create_slots(self, var_list: list) -> None:
        for v in var_list:
            init = constant_slot_initializer(v, self._initial_accumulator_value)
            self._get_or_make_slot_with_initializer(v, init, v.get_shape(), v.dtype.base_dtype, "accum",
                                                    self._accum_name or self._name)
            self._zeros_slot(v, "linear", self._linear_name or self._name)

    def _prepare(self) -> None:
        self._tensors = {name: self._hyper_tensor(value, name) for name, value in (
            ("learning_rate", self._learning_rate), ("l1_regularization_strength", self._l1),
            ("l2_regularization_strength", self._l2),
            ("l2_shrinkage_regularization_strength", self._l2_shrinkage),
            ("learning_rate_power", self._learning_rate_power))}

    def _hypers(self, var: Variable) -> list:
        """lr, l1, l2, [l2_shrinkage when positive], lr_power in var's dtype, as the FTRL ops take them."""
        names = ["learning_rate", "l1_regularization_strength", "l2_regularization_strength"]
        if self._l2_shrinkage > 0.0:
            names.append("l2_shrinkage_regularization_strength")
        names.append("learning_rate_power")
        return [math_ops.cast(self._tensors[name], var.dtype.base_dtype) for name in names]

    def _apply_dense(self, grad: Tensor, var: Variable) -> Operation:
        apply = training_ops.apply_ftrl_v2 if self._l2_shrinkage > 0.0 else training_ops.apply_ftrl
        return apply(var, self.get_slot(var, "accum"), self.get_slot(var, "linear"), grad, *self._hypers(var),
                     use_locking=self._use_locking).op

    def _apply_sparse(self, grad: IndexedSlices, var: Variable) -> Operation:
        apply = training_ops.sparse_apply_ftrl_v2 if self._l2_shrinkage > 0.0 else training_ops.sparse_apply_ftrl
        return apply(var, self.get_slot(var, "accum"), self.get_slot(var, "linear"), grad.values, grad.indices,
                     *self._hypers(var), use_locking=self._use_locking).op
