"""tf.train.RMSPropOptimizer: divide the step by a running root mean square of the gradient (Hinton's lecture 6e),
optionally centred (by the running mean of the gradient) and with momentum."""
from __future__ import annotations

from adplace.framework.indexed_slices import IndexedSlices
from adplace.framework.operation import Operation, Tensor
from adplace.ops import array_ops, init_ops, math_ops, training_ops
from adplace.ops.variables import Variable
from adplace.train.optimizer import Optimizer


class RMSPropOptimizer(Optimizer):
    """RMSProp (tf.train.RMSPropOptimizer), with TF1's defaults.

    Slots: "rms" (initialised to ones, "<var>/RMSProp"), "mg" when centred, then "momentum" ("<var>/RMSProp_1",
    or "_2" when centred).

        opt = tf.train.RMSPropOptimizer(0.01, decay=0.9, momentum=0.5, centered=True)
    """

    def __init__(self, learning_rate, decay=0.9, momentum=0.0, epsilon=1e-10, use_locking: bool = False,
                 centered: bool = False, name: str = "RMSProp"):
        super().__init__(use_locking, name)
        self._learning_rate, self._decay, self._momentum, self._epsilon = learning_rate, decay, momentum, epsilon
        self._centered = centered
        self._learning_rate_tensor = self._decay_tensor = self._momentum_tensor = self._epsilon_tensor = None

    def _create_slots(self, var_list: list) -> None:
        for v in var_list:
            if v.get_shape().is_fully_defined():
                init_rms = init_ops.ones_initializer(dtype=v.dtype.base_dtype)
            else:
                init_rms = array_ops.ones_like(v)
            self._get_or_make_slot_with_initializer(v, init_rms, v.get_shape(), v.dtype.base_dtype, "rms",
                                                    self._name)
            if self._centered:
                self._zeros_slot(v, "mg", self._name)
            self._zeros_slot(v, "momentum", self._name)

    def _prepare(self) -> None:
        self._learning_rate_tensor = self._hyper_tensor(self._learning_rate, "learning_rate")
        self._decay_tensor = self._hyper_tensor(self._decay, "decay")
        self._momentum_tensor = self._hyper_tensor(self._momentum, "momentum")
        self._epsilon_tensor = self._hyper_tensor(self._epsilon, "epsilon")

    def _hyper(self, dtype) -> list:
        return [math_ops.cast(t, dtype) for t in (self._learning_rate_tensor, self._decay_tensor,
                                                  self._momentum_tensor, self._epsilon_tensor)]

    def _apply_dense(self, grad: Tensor, var: Variable) -> Operation:
        hyper = self._hyper(var.dtype.base_dtype)
        rms, mom = self.get_slot(var, "rms"), self.get_slot(var, "momentum")
        if self._centered:
            return training_ops.apply_centered_rms_prop(var, self.get_slot(var, "mg"), rms, mom, *hyper, grad,
                                                        use_locking=self._use_locking).op
        return training_ops.apply_rms_prop(var, rms, mom, *hyper, grad, use_locking=self._use_locking).op

    def _apply_sparse(self, grad: IndexedSlices, var: Variable) -> Operation:
        hyper = self._hyper(var.dtype.base_dtype)
        rms, mom = self.get_slot(var, "rms"), self.get_slot(var, "momentum")
        if self._centered:
            return training_ops.sparse_apply_centered_rms_prop(
                var, self.get_slot(var, "mg"), rms, mom, *hyper, grad.values, grad.indices,
                use_locking=self._use_locking).op
        return training_ops.sparse_apply_rms_prop(var, rms, mom, *hyper, grad.values, grad.indices,
                                                  use_locking=self._use_locking).op
