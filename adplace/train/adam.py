"""tf.train.AdamOptimizer (Kingma & Ba): slots m and v per variable, and two shared accumulators beta1_power and
beta2_power that _finish multiplies by beta1 and beta2 after every step."""
from __future__ import annotations

from adplace.framework.default_graph import colocate_with, control_dependencies
from adplace.framework.graph import get_default_graph
from adplace.framework.indexed_slices import IndexedSlices
from adplace.framework.operation import Operation, Tensor
from adplace.ops import control_flow_ops, math_ops, state_ops, training_ops
from adplace.ops.variables import Variable
from adplace.train.optimizer import Optimizer


class AdamOptimizer(Optimizer):
    """Adam (tf.train.AdamOptimizer), with TF1's defaults.

    Slots "m" and "v" are named "<var>/Adam" and "<var>/Adam_1"; beta1_power and beta2_power are created once,
    colocated with the first variable by name, so every worker finds them on the same device.

        opt = tf.train.AdamOptimizer(0.01)
        train = opt.minimize(loss)        # ApplyAdam per variable, then beta1_power *= beta1, beta2_power *= beta2
    """

    def __init__(self, learning_rate=0.001, beta1=0.9, beta2=0.999, epsilon=1e-08, use_locking: bool = False,
                 name: str = "Adam"):
        super().__init__(use_locking, name)
        self._lr, self._beta1, self._beta2, self._epsilon = learning_rate, beta1, beta2, epsilon
        self._lr_t = self._beta1_t = self._beta2_t = self._epsilon_t = None

    def _get_beta_accumulators(self) -> tuple[Variable, Variable]:
        graph = get_default_graph()
        return self._get_non_slot_variable("beta1_power", graph), self._get_non_slot_variable("beta2_power", graph)

    def _create_slots(self, var_list: list) -> None:
        first_var = min(var_list, key=lambda v: v.name)
        self._create_non_slot_variable(self._beta1, "beta1_power", first_var)
        self._create_non_slot_variable(self._beta2, "beta2_power", first_var)
        for v in var_list:
            self._zeros_slot(v, "m", self._name)
            self._zeros_slot(v, "v", self._name)

    def _prepare(self) -> None:
        self._lr_t = self._hyper_tensor(self._lr, "learning_rate")
        self._beta1_t = self._hyper_tensor(self._beta1, "beta1")
        self._beta2_t = self._hyper_tensor(self._beta2, "beta2")
        self._epsilon_t = self._hyper_tensor(self._epsilon, "epsilon")

    def _apply_dense(self, grad: Tensor, var: Variable) -> Operation:
        dtype = var.dtype.base_dtype
        beta1_power, beta2_power = self._get_beta_accumulators()
        return training_ops.apply_adam(
            var, self.get_slot(var, "m"), self.get_slot(var, "v"), math_ops.cast(beta1_power, dtype),
            math_ops.cast(beta2_power, dtype), math_ops.cast(self._lr_t, dtype), math_ops.cast(self._beta1_t, dtype),
            math_ops.cast(self._beta2_t, dtype), math_ops.cast(self._epsilon_t, dtype), grad,
            use_locking=self._use_locking).op

    def _apply_sparse(self, grad: IndexedSlices, var: Variable) -> Operation:
        """TF1's non-lazy sparse Adam: every row of m and v decays (m *= beta1, v *= beta2) and the gradient rows
        are added to theirs (ScatterAdd), then the whole variable moves, so rows without a gradient still step."""
        dtype = var.dtype.base_dtype
        beta1_power, beta2_power = (math_ops.cast(p, dtype) for p in self._get_beta_accumulators())
        lr_t, beta1_t, beta2_t, epsilon_t = (math_ops.cast(t, dtype) for t in (self._lr_t, self._beta1_t,
                                                                               self._beta2_t, self._epsilon_t))
        lr = lr_t * math_ops.sqrt(1 - beta2_power) / (1 - beta1_power)
        m, v = self.get_slot(var, "m"), self.get_slot(var, "v")
        m_t = state_ops.assign(m, m * beta1_t, use_locking=self._use_locking)
        with control_dependencies([m_t]):
            m_t = state_ops.scatter_add(m, grad.indices, grad.values * (1 - beta1_t), use_locking=self._use_locking)
        v_t = state_ops.assign(v, v * beta2_t, use_locking=self._use_locking)
        with control_dependencies([v_t]):
            v_t = state_ops.scatter_add(v, grad.indices, (grad.values * grad.values) * (1 - beta2_t),
                                        use_locking=self._use_locking)
        var_update = state_ops.assign_sub(var, lr * m_t / (math_ops.sqrt(v_t) + epsilon_t),
                                          use_locking=self._use_locking)
        return control_flow_ops.group(var_update, m_t, v_t)

    def _finish(self, update_ops: list, name_scope: str) -> Operation:
        with control_dependencies(update_ops):
            beta1_power, beta2_power = self._get_beta_accumulators()
            with colocate_with(beta1_power):
                update_beta1 = beta1_power.assign(beta1_power * self._beta1_t, use_locking=self._use_locking)
                update_beta2 = beta2_power.assign(beta2_power * self._beta2_t, use_locking=self._use_locking)
        return control_flow_ops.group(*update_ops, update_beta1, update_beta2, name=name_scope)
