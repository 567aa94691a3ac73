"""tf.train.SyncReplicasOptimizer: synchronous data-parallel training of replicas that share variables (on ps tasks of
a cluster, or in one process), as TF 1.15 builds it.

    opt = tf.train.SyncReplicasOptimizer(tf.train.GradientDescentOptimizer(0.1), replicas_to_aggregate=2,
                                         total_num_replicas=2)
    train_op = opt.minimize(loss, global_step=global_step)
    hook = opt.make_session_run_hook(is_chief=(task_index == 0))
    with tf.train.MonitoredTrainingSession(master=server.target, is_chief=..., hooks=[hook]) as sess: ...

Each variable gets a ConditionalAccumulator (shared by name, on the variable's device). A replica's train op applies
its gradients, tagged with its local step, and then waits for a token from the `sync_token_q` queue. The chief's
queue runner takes the mean of `replicas_to_aggregate` gradients per variable, applies them with the wrapped
optimizer (advancing the global step), and puts one token per replica in the queue; each token carries the new
global step, which becomes the replica's local step, so gradients computed from older variables are dropped.
"""
from __future__ import annotations

from adplace.framework.default_graph import control_dependencies, device, name_scope
from adplace.framework.graph import GraphKeys
from adplace.framework.indexed_slices import IndexedSlices
from adplace.framework.operation import Tensor
from adplace.ops import array_ops, state_ops
from adplace.ops.accumulator_ops import ConditionalAccumulator, SparseConditionalAccumulator
from adplace.ops.control_flow_ops import group, no_op
from adplace.ops.queue_ops import FIFOQueue
from adplace.ops.variables import Variable, global_variables, report_uninitialized_variables
from adplace.train import session_manager
from adplace.train.optimizer import Optimizer
from adplace.train.queue_runner import QueueRunner
from adplace.train.session_run_hook import SessionRunHook


class SyncReplicasOptimizer(Optimizer):
    """Aggregates the gradients of `replicas_to_aggregate` replicas per update of the wrapped optimizer `opt`."""

    def __init__(self, opt: Optimizer, replicas_to_aggregate: int, total_num_replicas: int | None = None,
                 variable_averages=None, variables_to_average=None, use_locking: bool = False,
                 name: str = "sync_replicas"):
        super().__init__(use_locking, name)
        self._opt = opt
        self._replicas_to_aggregate = replicas_to_aggregate
        self._total_num_replicas = replicas_to_aggregate if total_num_replicas is None else total_num_replicas
        self._tokens_per_step = max(self._total_num_replicas, replicas_to_aggregate)
        self._variable_averages, self._variables_to_average = variable_averages, variables_to_average
        if variable_averages is not None and variables_to_average is None:
            raise ValueError("variables_to_average must be given with variable_averages.")
        self._gradients_applied = False
        self._global_step = None
        self._sync_token_queue = None
        self._chief_queue_runner = None
        self._accumulator_list: list = []
        self._local_step = None
        self.local_step_init_op = self.chief_init_op = self.ready_for_local_init_op = None

    def compute_gradients(self, *args, **kwargs) -> list[tuple]:
        """The wrapped optimizer's gradients (aggregation happens in apply_gradients)."""
        return self._opt.compute_gradients(*args, **kwargs)

    def apply_gradients(self, grads_and_vars, global_step=None, name: str | None = None):
        """The replica's train op: apply its gradients to the accumulators, then wait for the next token."""
        grads_and_vars = list(grads_and_vars)
        if not grads_and_vars:
            raise ValueError("Must supply at least one variable")
        if global_step is None:
            raise ValueError("Global step is required to check staleness")
        self._global_step = global_step
        step_dtype = global_step.dtype.base_dtype
        local_anchor = no_op()
        with device(local_anchor.device or None):
            self._local_step = Variable(0, trainable=False, collections=[GraphKeys.LOCAL_VARIABLES],
                                        dtype=step_dtype, name="sync_rep_local_step")
        self.local_step_init_op = state_ops.assign(self._local_step, global_step)
        chief_init_ops = [self.local_step_init_op]
        self.ready_for_local_init_op = report_uninitialized_variables(global_variables())
        train_ops, aggregated, var_list = [], [], []
        with name_scope(None, self._name):
            for grad, var in grads_and_vars:
                var_list.append(var)
                with device(var.device or None):
                    if grad is None:
                        aggregated.append(None)
                        continue
                    if isinstance(grad, Tensor):
                        accumulator = ConditionalAccumulator(grad.dtype, shape=var.get_shape(),
                                                             shared_name=var.name + "/grad_accum")
                        train_ops.append(accumulator.apply_grad(grad, local_step=self._local_step))
                        aggregated.append(accumulator.take_grad(self._replicas_to_aggregate))
                    elif isinstance(grad, IndexedSlices):
                        accumulator = SparseConditionalAccumulator(grad.dtype, shape=(),
                                                                   shared_name=var.name + "/grad_accum")
                        train_ops.append(accumulator.apply_indexed_slices_grad(grad, local_step=self._local_step))
                        aggregated.append(accumulator.take_indexed_slices_grad(self._replicas_to_aggregate))
                    else:
                        raise ValueError("Unknown grad type!")
                    self._accumulator_list.append((accumulator, var.device))
            with device(global_step.device or None), name_scope(""):
                update_op = self._opt.apply_gradients(list(zip(aggregated, var_list)), global_step)
                self._sync_token_queue = FIFOQueue(-1, step_dtype, shapes=(), name="sync_token_q",
                                                   shared_name="sync_token_q")
                with control_dependencies(train_ops):
                    token = self._sync_token_queue.dequeue()
                train_op = state_ops.assign(self._local_step, token)
                with control_dependencies([update_op]):
                    tokens = array_ops.fill([self._tokens_per_step], global_step)
                    sync_op = self._sync_token_queue.enqueue_many((tokens,))
                if self._variable_averages is not None:
                    with control_dependencies([sync_op]), name_scope(""):
                        sync_op = self._variable_averages.apply(self._variables_to_average)
                self._chief_queue_runner = QueueRunner(self._sync_token_queue, [sync_op])
            for accumulator, dev in self._accumulator_list:
                with device(dev or None):
                    chief_init_ops.append(accumulator.set_global_step(global_step, name="SetGlobalStep"))
            self.chief_init_op = group(*chief_init_ops)
        self._gradients_applied = True
        return train_op

    def get_chief_queue_runner(self) -> QueueRunner:
        """The runner the chief starts: aggregate, apply, and hand out tokens."""
        if not self._gradients_applied:
            raise ValueError("Should be called after apply_gradients().")
        return self._chief_queue_runner

    def get_slot(self, *args, **kwargs):
        return self._opt.get_slot(*args, **kwargs)

    def get_slot_names(self, *args, **kwargs):
        return self._opt.get_slot_names(*args, **kwargs)

    def variables(self) -> list:
        return self._opt.variables()

    def get_init_tokens_op(self, num_tokens: int = -1):
        """The chief's op that puts the first tokens in the queue (replicas_to_aggregate of them by default)."""
        if not self._gradients_applied:
            raise ValueError("get_init_tokens_op() should be called after apply_gradients().")
        needed = self._replicas_to_aggregate - self._total_num_replicas
        if num_tokens == -1:
            num_tokens = self._replicas_to_aggregate
        elif num_tokens < needed:
            raise ValueError(f"Too few tokens to finish the first step: {num_tokens} (given) vs {needed} (needed)")
        if num_tokens <= 0:
            return no_op(name="no_init_tokens")
        with device(self._global_step.device or None), name_scope(""):
            return self._sync_token_queue.enqueue_many((array_ops.fill([num_tokens], self._global_step),))

    def make_session_run_hook(self, is_chief: bool, num_tokens: int = -1) -> SessionRunHook:
        """The hook that runs the init ops and, on the chief, starts the queue runner."""
        return _SyncReplicasOptimizerHook(self, is_chief, num_tokens)


class _SyncReplicasOptimizerHook(SessionRunHook):
    def __init__(self, sync_optimizer: SyncReplicasOptimizer, is_chief: bool, num_tokens: int):
        self._sync_optimizer, self._is_chief, self._num_tokens = sync_optimizer, is_chief, num_tokens

    def begin(self) -> None:
        opt = self._sync_optimizer
        if not opt._gradients_applied:
            raise ValueError("SyncReplicasOptimizer.apply_gradient should be called before using the hook.")
        self._ready_for_local_init_op = opt.ready_for_local_init_op
        if self._is_chief:
            self._local_init_op = opt.chief_init_op
            self._q_runner = opt.get_chief_queue_runner()
            self._init_tokens_op = opt.get_init_tokens_op(self._num_tokens)
        else:
            self._local_init_op = opt.local_step_init_op
            self._q_runner = self._init_tokens_op = None

    def after_create_session(self, session, coord) -> None:
        ready, message = session_manager._ready(self._ready_for_local_init_op, session,
                                                "Model is not ready for SyncReplicasOptimizer local init.")
        if not ready:
            raise RuntimeError(f"Init operations did not make model ready for SyncReplicasOptimizer local_init. "
                               f"Init op: {self._local_init_op.name}, error: {message}")
        session.run(self._local_init_op)
        if self._init_tokens_op is not None:
            session.run(self._init_tokens_op)
        if self._q_runner is not None:
            self._q_runner.create_threads(session, coord=coord, daemon=True, start=True)
