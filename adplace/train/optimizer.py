"""tf.train.Optimizer: the TF1 base class (compute_gradients, apply_gradients, minimize, slots).

A subclass fills in `_create_slots`, `_prepare`, `_apply_dense` and, when it keeps state beyond its slots, `_finish`.
apply_gradients builds each variable's update under "<name>/update_<var>" colocated with the variable, so updates
and slots sit on the variable's device (the CPU under tf.assign_to_device) while the gradients come from wherever
they were computed.

    opt = tf.train.AdamOptimizer(0.01)
    train = opt.minimize(loss, global_step=step)   # 'Adam': ApplyAdam per variable, then step += 1
    opt.get_slot(w, "m").op.name                   # 'w/Adam'
"""
from __future__ import annotations

from adplace.framework import dtypes as _dtypes
from adplace.framework.conversion import convert_to_tensor
from adplace.framework.default_graph import colocate_with, control_dependencies, get_collection_ref, name_scope
from adplace.framework.graph import GraphKeys, get_default_graph
from adplace.framework.operation import Operation, Tensor, ancestor_op_ids
from adplace.gradients import gradients
from adplace.framework.indexed_slices import IndexedSlices
from adplace.ops import array_ops, control_flow_ops, segment_ops, sort_ops, state_ops
from adplace.ops.indexed_slices_ops import convert_to_tensor_or_indexed_slices
from adplace.ops.variables import Variable, trainable_variables
from adplace.train import slot_creator

_VALID_DTYPES = (_dtypes.float16, _dtypes.bfloat16, _dtypes.float32, _dtypes.float64)


def _var_key(var: Variable) -> tuple:
    """Slots are keyed by (graph, variable op name), as in TF."""
    return var.op.graph, var.op.name


def _flatten(values) -> list:
    if isinstance(values, (list, tuple)):
        return [leaf for item in values for leaf in _flatten(item)]
    return [values]


def _deduplicate_indexed_slices(values: Tensor, indices: Tensor) -> tuple[Tensor, Tensor]:
    """(values summed per distinct index, the distinct indices): TF's Optimizer._deduplicate_indexed_slices."""
    unique_indices, new_index_positions = sort_ops.unique(indices)
    summed = segment_ops.unsorted_segment_sum(values, new_index_positions, array_ops.shape(unique_indices)[0])
    return summed, unique_indices


def _variables_used_by(loss: Tensor) -> list[Variable]:
    """The trainable variables `loss` reads, in trainable_variables order (what TF's tape would have watched)."""
    reached = ancestor_op_ids([loss])
    return [v for v in trainable_variables() if v.op._id in reached]


def _check_optimizable(var) -> Variable:
    if not isinstance(var, Variable):
        raise NotImplementedError(f"Trying to optimize unsupported type {var!r}: tf.train optimizers update "
                                  f"tf.Variable objects.")
    return var


class Optimizer:
    """Base class of the TF1 optimizers; never built directly (tf.train.Optimizer).

    Args:
      use_locking: passed on to the update ops (updates are atomic per op here in any case).
      name: the optimizer's name: the default name scope of apply_gradients and the suffix of slot names.
    """

    GATE_NONE = 0
    GATE_OP = 1
    GATE_GRAPH = 2

    def __init__(self, use_locking: bool, name: str):
        if not name:
            raise ValueError("Must specify the optimizer name")
        self._use_locking = use_locking
        self._name = name
        self._slots: dict[str, dict] = {}
        self._non_slot_dict: dict[tuple, Variable] = {}

    def get_name(self) -> str:
        return self._name

    # --- public API ---------------------------------------------------------------------------------------------
    def minimize(self, loss, global_step=None, var_list=None, gate_gradients: int = GATE_OP, aggregation_method=None,
                 colocate_gradients_with_ops: bool = False, name: str | None = None, grad_loss=None) -> Operation:
        """compute_gradients then apply_gradients: the train op.

        Raises:
          ValueError: when no variable receives a gradient from `loss`.
        """
        grads_and_vars = self.compute_gradients(
            loss, var_list=var_list, gate_gradients=gate_gradients, aggregation_method=aggregation_method,
            colocate_gradients_with_ops=colocate_gradients_with_ops, grad_loss=grad_loss)
        if not [v for g, v in grads_and_vars if g is not None]:
            raise ValueError(f"No gradients provided for any variable, check your graph for ops that do not support "
                             f"gradients, between variables {[str(v) for _, v in grads_and_vars]} and loss {loss}.")
        return self.apply_gradients(grads_and_vars, global_step=global_step, name=name)

    def compute_gradients(self, loss, var_list=None, gate_gradients: int = GATE_OP, aggregation_method=None,
                          colocate_gradients_with_ops: bool = False, grad_loss=None) -> list[tuple]:
        """The gradients of `loss` for each variable of `var_list` (default: the trainable variables).

        Returns:
          A list of (gradient or None, variable) pairs, in `var_list` order.

        Raises:
          ValueError: bad `gate_gradients`, no variables, or a loss/variable that is not a float type.
        """
        if callable(loss):  # TF builds the loss under a tape; in a graph, calling it builds the loss ops
            loss = loss()
            if var_list is None:
                var_list = _variables_used_by(loss)
        if gate_gradients not in (Optimizer.GATE_NONE, Optimizer.GATE_OP, Optimizer.GATE_GRAPH):
            raise ValueError(f"gate_gradients must be one of: Optimizer.GATE_NONE, Optimizer.GATE_OP, "
                             f"Optimizer.GATE_GRAPH.  Not {gate_gradients}")
        loss = convert_to_tensor(loss)
        self._assert_valid_dtypes([loss])
        if grad_loss is not None:
            grad_loss = convert_to_tensor(grad_loss)
            self._assert_valid_dtypes([grad_loss])
        var_list = trainable_variables() if var_list is None else _flatten(var_list)
        if not var_list:
            raise ValueError("No variables to optimize.")
        var_refs = [_check_optimizable(v)._ref() for v in var_list]
        grads = gradients(loss, var_refs, grad_ys=grad_loss, gate_gradients=(gate_gradients == Optimizer.GATE_OP),
                          aggregation_method=aggregation_method,
                          colocate_gradients_with_ops=colocate_gradients_with_ops)
        if gate_gradients == Optimizer.GATE_GRAPH:
            grads = control_flow_ops.tuple(grads)
        grads_and_vars = list(zip(grads, var_list))
        self._assert_valid_dtypes([v for g, v in grads_and_vars if g is not None])
        return grads_and_vars

    def apply_gradients(self, grads_and_vars, global_step=None, name: str | None = None) -> Operation:
        """Apply each (gradient, variable) update; with `global_step`, increment it once all updates ran.

        Args:
          grads_and_vars: (gradient, variable) pairs, as compute_gradients returns; None gradients are skipped.
          global_step: an integer Variable to increment by one after the updates (optional).
          name: the name scope of the update ops (default: the optimizer's name).

        Returns:
          The train op: the AssignAdd of `global_step` when given, else the group of all updates.

        Raises:
          TypeError: a gradient that cannot become a Tensor.
          ValueError: no variables, or no gradient for any of them.
        """
        grads_and_vars = tuple(grads_and_vars)
        if not grads_and_vars:
            raise ValueError("No variables provided.")
        converted = []
        for g, v in grads_and_vars:
            if g is not None:
                try:
                    g = convert_to_tensor_or_indexed_slices(g)
                except TypeError as e:
                    raise TypeError(f"Gradient must be convertible to a Tensor or IndexedSlices, or None: {g}") from e
            converted.append((g, _check_optimizable(v)))
        var_list = [v for g, v in converted if g is not None]
        if not var_list:
            raise ValueError(f"No gradients provided for any variable: {[str(v) for _, v in converted]}.")
        graph = var_list[0].op.graph
        with graph.as_default():
            with control_dependencies(None):  # TF's init_scope: slots never wait on the caller's control inputs
                self._create_slots(var_list)
            update_ops = []
            with name_scope(name, self._name) as scope:
                self._prepare()
                for grad, var in converted:
                    if grad is None:
                        continue
                    with name_scope("update_" + var.op.name), colocate_with(var):
                        update_ops.append(self._update_op(grad, var))
                if global_step is None:
                    apply_updates = self._finish(update_ops, scope)
                else:
                    with control_dependencies([self._finish(update_ops, "update")]), colocate_with(global_step):
                        apply_updates = state_ops.assign_add(global_step, 1, name=scope).op
            if isinstance(apply_updates, Tensor):
                apply_updates = apply_updates.op
            train_ops = get_collection_ref(GraphKeys.TRAIN_OP)
            if apply_updates not in train_ops:
                train_ops.append(apply_updates)
        return apply_updates

    def get_slot(self, var: Variable, name: str) -> Variable | None:
        """The slot `name` ("m", "momentum", ...) made for `var`, or None."""
        named_slots = self._slots.get(name)
        if not named_slots:
            return None
        return named_slots.get(_var_key(var))

    def get_slot_names(self) -> list[str]:
        """The names of the slots this optimizer creates, sorted."""
        return sorted(self._slots)

    def variables(self) -> list[Variable]:
        """The optimizer's variables in the default graph (slots and non-slot state), sorted by name."""
        graph = get_default_graph()
        found = [v for (_, g), v in self._non_slot_dict.items() if g is graph]
        found += [slot for named_slots in self._slots.values() for slot in named_slots.values()
                  if slot.op.graph is graph]
        return sorted(found, key=lambda v: v.name)

    # --- for subclasses -----------------------------------------------------------------------------------------
    def _valid_dtypes(self) -> set:
        """The dtypes of losses, variables and gradients this optimizer supports."""
        return set(_VALID_DTYPES)

    def _assert_valid_dtypes(self, tensors) -> None:
        valid = self._valid_dtypes()
        for t in tensors:
            dtype = t.dtype.base_dtype
            if dtype not in valid:
                raise ValueError(f"Invalid type {dtype!r} for {t.name}, expected: "
                                 f"{sorted(valid, key=lambda d: d.name)}.")

    def _create_slots(self, var_list: list) -> None:
        """Create the slots of each variable (called once per apply_gradients, outside control dependencies)."""

    def _prepare(self) -> None:
        """Convert the hyper-parameters to tensors, inside the apply_gradients name scope."""

    def _apply_dense(self, grad: Tensor, var: Variable) -> Operation:
        raise NotImplementedError(f"{type(self).__name__} does not implement _apply_dense")

    def _finish(self, update_ops: list, name_scope: str) -> Operation:
        """The op that completes a step once `update_ops` ran (subclasses add their own state updates)."""
        return control_flow_ops.group(*update_ops, name=name_scope)

    def _apply_sparse_duplicate_indices(self, grad: IndexedSlices, var: Variable) -> Operation:
        """Sum the rows of repeated indices, then _apply_sparse (which may assume unique indices)."""
        values, indices = _deduplicate_indexed_slices(grad.values, grad.indices)
        return self._apply_sparse(IndexedSlices(values, indices, grad.dense_shape), var)

    def _apply_sparse(self, grad: IndexedSlices, var: Variable) -> Operation:
        """Update only the rows `grad.indices` of `var` (unique indices); subclasses with slots implement it."""
        raise NotImplementedError(f"{type(self).__name__} does not implement _apply_sparse")

    def _update_op(self, grad, var: Variable) -> Operation:
        if isinstance(grad, IndexedSlices):
            if var.constraint is not None:
                raise RuntimeError("Cannot use a constraint function on a sparse variable.")
            return self._apply_sparse_duplicate_indices(grad, var)
        update_op = self._apply_dense(grad, var)
        if var.constraint is None:
            return update_op
        with control_dependencies([update_op]):
            return var.assign(var.constraint(var)).op

    @staticmethod
    def _call_if_callable(param):
        return param() if callable(param) else param

    def _hyper_tensor(self, param, name: str) -> Tensor:
        """A hyper-parameter (number, Tensor, or callable returning one) as a Tensor, for _prepare."""
        return convert_to_tensor(self._call_if_callable(param), name=name)

    # --- slots --------------------------------------------------------------------------------------------------
    def _slot_dict(self, slot_name: str) -> dict:
        return self._slots.setdefault(slot_name, {})

    def _slot(self, var: Variable, slot_name: str, create) -> Variable:
        """The slot `slot_name` of `var`, made by `create()` the first time it is asked for."""
        named_slots = self._slot_dict(slot_name)
        key = _var_key(var)
        if key not in named_slots:
            named_slots[key] = create()
        return named_slots[key]

    def _get_or_make_slot(self, var: Variable, val: Tensor, slot_name: str, op_name: str) -> Variable:
        return self._slot(var, slot_name, lambda: slot_creator.create_slot(var, val, op_name))

    def _get_or_make_slot_with_initializer(self, var: Variable, initializer, shape, dtype, slot_name: str,
                                           op_name: str) -> Variable:
        return self._slot(var, slot_name, lambda: slot_creator.create_slot_with_initializer(
            var, initializer, shape, dtype, op_name))

    def _zeros_slot(self, var: Variable, slot_name: str, op_name: str) -> Variable:
        return self._slot(var, slot_name, lambda: slot_creator.create_zeros_slot(var, op_name))

    def _create_non_slot_variable(self, initial_value, name: str, colocate_with: Variable) -> Variable:
        """A variable of the optimizer's own (Adam's beta1_power), once per graph, placed with `colocate_with`."""
        graph = colocate_with.op.graph
        key = (name, graph)
        v = self._non_slot_dict.get(key)
        if v is None:
            with graph.as_default(), control_dependencies(None), graph.colocate_with(colocate_with):
                v = Variable(initial_value, name=name, trainable=False)
            self._non_slot_dict[key] = v
        return v

    def _get_non_slot_variable(self, name: str, graph=None) -> Variable | None:
        return self._non_slot_dict.get((name, graph or get_default_graph()))

