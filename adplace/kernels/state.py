"""Kernels of the variable ops (adplace.ops.state_ops: VariableV2, Assign, AssignAdd, ...) and the training ops
(adplace.ops.training_ops: ApplyGradientDescent, ApplyAdam, ...). Every store goes through the variable's cell,
journaled, so a failed step can be undone; same conventions as adplace.kernels.cpu. The sparse writes (Scatter*,
SparseApply*, CountUpTo) build on `storing_kernel` and `_training_kernel` in adplace.kernels.scatter."""
from __future__ import annotations

import functools
import time


from adplace.framework import dtypes as _dtypes
from adplace.framework.errors import FailedPreconditionError, InvalidArgumentError
from adplace.framework.operation import ref_variable
from adplace.framework.tensor_shape import dims_text
from adplace.kernels.registration import GPU_FLOAT, GPU_VARIABLE, kernel


# --- state_ops ------------------------------------------------------------------------------------------------------
def _uninitialized(op, var_op) -> FailedPreconditionError:
    return FailedPreconditionError(None, op, f"Attempting to use uninitialized value {var_op.name}")


@kernel("VariableV2", gpu_types=GPU_VARIABLE)
def _variable(op, ctx):
    cell = ctx.variable(op)

    def read():
        value = cell.read()
        if value is None:
            raise _uninitialized(op, op)
        return value
    return read


@kernel("Assign", gpu_types=GPU_VARIABLE)
def _assign(op, ctx):
    """Store a copy of the value under the variable's lock, journaled so a failed step can undo it. Reading nothing
    old, it is the same with or without `use_locking`: a store is always whole."""
    var_op = ref_variable(op._inputs[0])
    cell = ctx.variable(var_op)
    steps, xp = ctx.steps, ctx.xp
    static = var_op._attrs["shape"]
    check_shape = op._attrs.get("validate_shape", True) and static.is_fully_defined()
    static_dims = tuple(static.as_list()) if check_shape else None

    def assign(value):
        if check_shape and xp.shape(value) != static_dims:
            raise InvalidArgumentError(None, op, f"Assign requires shapes of both tensors to match. lhs shape= "
                                       f"{dims_text(static_dims)} rhs shape= {dims_text(xp.shape(value))}")
        new = xp.array(value, copy=True)  # the variable owns its buffer: no fetch or feed aliases it
        cell.write(new, steps.slot.journal)
        return new
    return assign


def _update_family(update: str):
    """AssignAdd/AssignSub: `update(old value, input)`, stored under the variable's lock, journaled. With
    `use_locking` the lock is held from reading the old value to storing the new one, an atomic update; without it
    (TF's default) only the store is, and concurrent updates may be lost (Hogwild)."""
    def factory(op, ctx):
        var_op = ref_variable(op._inputs[0])
        cell = ctx.variable(var_op)
        steps, xp = ctx.steps, ctx.xp
        combine = getattr(xp, update)

        def checked_update(old, value):
            if old is None:
                raise _uninitialized(op, var_op)
            if xp.shape(value) != xp.shape(old):
                raise InvalidArgumentError(None, op, f"Cannot update variable with shape "
                                           f"{dims_text(xp.shape(old))} using a Tensor with shape "
                                           f"{dims_text(xp.shape(value))}, shapes must be equal.")
            return combine(old, value)

        if _use_locking(op, default=False):
            def locked_update(value):  # runs with the lock held: no row write can be under way
                return checked_update(cell.value, value)

            def update_locked(value):
                return cell.update(locked_update, value, steps.slot.journal)
            return update_locked

        def update_unlocked(value):
            new = checked_update(cell.read(), value)
            cell.write(new, steps.slot.journal)
            return new
        return update_unlocked
    return factory


def _use_locking(op, default: bool) -> bool:
    locking = op._attrs.get("use_locking")
    return default if locking is None else bool(locking)


kernel("AssignAdd", gpu_types=GPU_VARIABLE)(_update_family("add"))
kernel("AssignSub", gpu_types=GPU_VARIABLE)(_update_family("subtract"))


@kernel("IsVariableInitialized", gpu_types=GPU_VARIABLE)
def _is_initialized(op, ctx):
    cell, xp = ctx.variable(ref_variable(op._inputs[0])), ctx.xp
    return lambda: xp.asarray(cell.value is not None)


@kernel("InitializedValue", gpu_types=GPU_VARIABLE)
def _initialized_value(op, ctx):
    cell = ctx.variable(ref_variable(op._inputs[0]))

    def initialized_value(initial):
        value = cell.read()  # read once: another thread may initialize it between a test and a second read
        return initial if value is None else value
    return initialized_value


# --- training_ops ---------------------------------------------------------------------------------------------------
def _training_kernel(ref_names: tuple, value_names: tuple, update, grad_name: str = "grad", by_rows=None):
    """A training-op kernel (ApplyAdam, ...): check the var/slot cells and the inputs as training_ops.cc does, compute
    `update(xp, attrs, *ref_values, *values) -> new ref values` with the device's array module, then store the new
    arrays, as `storing_kernel` does. A sparse op (SparseApplyAdagrad, ...) passes `by_rows(xp, op, step) -> step`,
    which applies the dense step to the rows its `indices` input names and checks the gradient's shape itself.
    Returns the variable's new value."""
    n_refs = len(ref_names)
    grad_at = value_names.index(grad_name)
    scalars = tuple((i, arg) for i, arg in enumerate(value_names) if arg not in (grad_name, "indices"))
    same_shape_names = ref_names[1:] + ((grad_name,) if by_rows is None else ())

    def factory(op, ctx):
        ref_ops = [ref_variable(t) for t in op._inputs[:n_refs]]
        xp = ctx.xp
        step = functools.partial(update, xp, op._attrs)
        if op._attrs["T"] is _dtypes.bfloat16:  # NumPy promotes bfloat16 * 0.5 to float32: store bfloat16 again
            step = functools.partial(_rounded_to, _dtypes.bfloat16.as_numpy_dtype, step)
        if by_rows is not None:
            step = by_rows(xp, op, step)

        def new_values(olds, values, targets=None):
            for var_op, old in zip(ref_ops, olds):
                if old is None:
                    raise FailedPreconditionError(None, op, f"Attempting to use uninitialized variables: {var_op.name}")
            for i, arg in scalars:
                if xp.ndim(values[i]) != 0:
                    raise InvalidArgumentError(None, op, f"{arg} is not a scalar: {dims_text(xp.shape(values[i]))}")
            var_shape = xp.shape(olds[0])
            for arg, value in zip(same_shape_names, olds[1:] + [values[grad_at]]):
                if xp.shape(value) != var_shape:
                    raise InvalidArgumentError(None, op, f"var and {arg} do not have the same shape"
                                               f"{dims_text(var_shape)} {dims_text(xp.shape(value))}")
            return step(*olds, *values) if by_rows is None else step(targets, *olds, *values)
        return storing_kernel(op, ctx, ref_ops, new_values, rows=by_rows is not None)
    return factory


def storing_kernel(op, ctx, ref_ops: list, new_values, rows: bool = False):
    """The kernel of an op that rewrites variables: `new_values(old values, inputs) -> new arrays`, one per variable
    of `ref_ops`, stored journaled (a failed step is undone) as new arrays, not written in place (fetched values may
    alias them; row writes, below, are the exception). With `use_locking` every variable's lock is held, in the cells' global order, from the first read to the
    last store (TF's MaybeLockVariableInputMutexesInOrder); without it each store is whole but updates may race
    (Hogwild). Returns the first variable's new value.

    A row write (`rows=True`: Scatter*, SparseApply*) is called as `new_values(olds, inputs, targets)` and asks
    `targets[i](old, rows, view_shape)` for the array to write variable i's rows into: the stored array itself when
    nothing else refers to it (`VariableCell.claim_in_place`; its old rows journaled), else a copy. So updating a few
    rows of a large table costs those rows, not the table. Row writes always hold their variables' locks."""
    cells = [ctx.variable(var_op) for var_op in ref_ops]
    steps = ctx.steps
    if rows or _use_locking(op, default=False):
        locks = [cell.lock for cell in sorted(set(cells), key=_cell_order)]
        update = ctx.write_rows if rows else _update_cells

        def apply_locked(*values):
            return _holding(locks, update, cells, new_values, values, steps.slot.journal)
        return apply_locked

    def apply(*values):
        news = new_values([cell.read() for cell in cells], values)
        journal = steps.slot.journal
        for cell, new in zip(cells, news):
            cell.write(new, journal)
        return news[0]
    return apply


def _cell_order(cell) -> int:
    return cell.order


def _update_cells(cells: list, new_values, values, journal):
    news = new_values([cell.value for cell in cells], values)
    for cell, new in zip(cells, news):
        cell.store(new, journal)
    return news[0]


def _holding(locks: list, fn, *args):
    """fn(*args) with every lock of `locks` held, taken in order by nested `with` blocks (released on any error);
    before blocking on a held one it gives up the GIL once, as VariableCell.write does (no lock convoy)."""
    if not locks:
        return fn(*args)
    if locks[0].locked():
        time.sleep(0)
    with locks[0]:
        return _holding(locks[1:], fn, *args)


def _rounded_to(dtype, update, *values) -> tuple:
    return tuple(v.astype(dtype, copy=False) for v in update(*values))


def _gradient_descent(xp, attrs, var, alpha, delta):
    return (var - delta * alpha,)


def _momentum(xp, attrs, var, accum, lr, grad, momentum):
    accum = accum * momentum + grad
    if attrs.get("use_nesterov"):
        return var - (grad * lr + accum * momentum * lr), accum
    return var - accum * lr, accum


def _adam(xp, attrs, var, m, v, beta1_power, beta2_power, lr, beta1, beta2, epsilon, grad):
    alpha = lr * xp.sqrt(1 - beta2_power) / (1 - beta1_power)
    m = m + (grad - m) * (1 - beta1)
    v = v + (grad * grad - v) * (1 - beta2)
    if attrs.get("use_nesterov"):
        return var - ((grad * (1 - beta1) + beta1 * m) * alpha) / (xp.sqrt(v) + epsilon), m, v
    return var - (m * alpha) / (xp.sqrt(v) + epsilon), m, v


def _rms_prop(xp, attrs, var, ms, mom, lr, rho, momentum, epsilon, grad):
    ms = ms + (grad * grad - ms) * (1 - rho)
    mom = mom * momentum + (grad * lr) / xp.sqrt(ms + epsilon)
    return var - mom, ms, mom


def _centered_rms_prop(xp, attrs, var, mg, ms, mom, lr, rho, momentum, epsilon, grad):
    ms = ms + (grad * grad - ms) * (1 - rho)
    mg = mg + (grad - mg) * (1 - rho)
    mom = mom * momentum + (grad * lr) / xp.sqrt((ms - mg * mg) + epsilon)
    return var - mom, mg, ms, mom


def _adagrad(xp, attrs, var, accum, lr, grad):
    if attrs.get("update_slots", True):
        accum = accum + grad * grad
    return var - grad * lr / xp.sqrt(accum), accum


def _adadelta(xp, attrs, var, accum, accum_update, lr, rho, epsilon, grad):
    accum = accum * rho + grad * grad * (1 - rho)
    update = xp.sqrt(accum_update + epsilon) / xp.sqrt(accum + epsilon) * grad
    return var - update * lr, accum, accum_update * rho + update * update * (1 - rho)


for _op_type, _refs, _values, _update, _grad in (
        ("ApplyGradientDescent", ("var",), ("alpha", "delta"), _gradient_descent, "delta"),
        ("ApplyMomentum", ("var", "accum"), ("lr", "grad", "momentum"), _momentum, "grad"),
        ("ApplyAdam", ("var", "m", "v"), ("beta1_power", "beta2_power", "lr", "beta1", "beta2", "epsilon", "grad"),
         _adam, "grad"),
        ("ApplyRMSProp", ("var", "ms", "mom"), ("lr", "rho", "momentum", "epsilon", "grad"), _rms_prop, "grad"),
        ("ApplyCenteredRMSProp", ("var", "mg", "ms", "mom"), ("lr", "rho", "momentum", "epsilon", "grad"),
         _centered_rms_prop, "grad"),
        ("ApplyAdagrad", ("var", "accum"), ("lr", "grad"), _adagrad, "grad"),
        ("ApplyAdadelta", ("var", "accum", "accum_update"), ("lr", "rho", "epsilon", "grad"), _adadelta, "grad")):
    kernel(_op_type, GPU_FLOAT | {_dtypes.bfloat16}, GPU_FLOAT)(_training_kernel(_refs, _values, _update, _grad))
