"""tf.train.AdadeltaOptimizer: steps scaled by the ratio of running RMS of past updates to running RMS of gradients
(Zeiler, 2012), so no learning-rate schedule is needed (TF keeps a learning rate, 0.001 by default, on top)."""
from __future__ import annotations

from adplace.framework.indexed_slices import IndexedSlices
from adplace.framework.operation import Operation, Tensor
from adplace.ops import math_ops, training_ops
from adplace.ops.variables import Variable
from adplace.train.optimizer import Optimizer


class AdadeltaOptimizer(Optimizer):
    """Adadelta (tf.train.AdadeltaOptimizer), with TF1's defaults; slots "accum" and "accum_update" (zeros, named
    "<var>/Adadelta" and "<var>/Adadelta_1").

        opt = tf.train.AdadeltaOptimizer(1.0, rho=0.95, epsilon=1e-6)
        train = opt.minimize(loss)        # ApplyAdadelta per variable (SparseApplyAdadelta for gathered rows)
    """

    def __init__(self, learning_rate=0.001, rho=0.95, epsilon=1e-08, use_locking: bool = False,
                 name: str = "Adadelta"):
        super().__init__(use_locking, name)
        self._lr, self._rho, self._epsilon = learning_rate, rho, epsilon
        self._lr_t = self._rho_t = self._epsilon_t = None

    def _create_slots(self, var_list: list) -> None:
        for v in var_list:
            self._zeros_slot(v, "accum", self._name)
            self._zeros_slot(v, "accum_update", self._name)

    def _prepare(self) -> None:
        self._lr_t = self._hyper_tensor(self._lr, "lr")
        self._rho_t = self._hyper_tensor(self._rho, "rho")
        self._epsilon_t = self._hyper_tensor(self._epsilon, "epsilon")

    def _slots_and_hyper(self, var: Variable) -> list:
        dtype = var.dtype.base_dtype
        return [self.get_slot(var, "accum"), self.get_slot(var, "accum_update"),
                *(math_ops.cast(t, dtype) for t in (self._lr_t, self._rho_t, self._epsilon_t))]

    def _apply_dense(self, grad: Tensor, var: Variable) -> Operation:
        return training_ops.apply_adadelta(var, *self._slots_and_hyper(var), grad, use_locking=self._use_locking).op

    def _apply_sparse(self, grad: IndexedSlices, var: Variable) -> Operation:
        return training_ops.sparse_apply_adadelta(var, *self._slots_and_hyper(var), grad.values, grad.indices,
                                                  use_locking=self._use_locking).op
