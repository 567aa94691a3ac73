"""Kernels of the variable ops (adplace.ops.state_ops: VariableV2, Assign, AssignAdd, ...) and the training ops
(adplace.ops.training_ops: ApplyGradientDescent, ApplyAdam, ...). Every store goes through the variable's cell,
journaled, so a failed step can be undone; same conventions as adplace.kernels.cpu. The sparse writes (Scatter*,
SparseApply*, CountUpTo) build on `storing_kernel` and `_training_kernel` in adplace.kernels.scatter."""
from __future__ import annotations

import functools
import time

import numpy as np

from adplace.framework import dtypes as _dtypes
from adplace.framework.errors import FailedPreconditionError, InvalidArgumentError
from adplace.framework.operation import ref_variable
from adplace.framework.tensor_shape import dims_text
from adplace.kernels import cpu_fusion, fused_updates
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
def _training_kernel(ref_names: tuple, value_names: tuple, update, grad_name: str = "grad", by_rows=None,
                     fused=None, scalar_rules: dict | None = None):
    """A training-op kernel (ApplyAdam, ...): check the var/slot cells and the inputs as training_ops.cc does, compute
    `update(xp, attrs, *ref values, *values) -> new ref values` with the device's array module, then store the new
    arrays, as `storing_kernel` does. A sparse op (SparseApplyAdagrad, ...) passes `by_rows(xp, op, step) -> step`,
    which applies the dense step to the rows its `indices` input names and checks the gradient's shape itself.

    With `fused(attrs, outs, *ref values, *values)`, the same update written as NumPy `out=` calls into `outs` (one
    fresh array per ref, never an input), a dense NumPy kernel (not bfloat16) computes into buffers its cells
    recycle (`VariableCell.take_spare`: the arrays the previous step replaced, once nothing refers to them), so a
    step allocates at most a scratch array; a sparse one runs it on the gathered rows. `scalar_rules` maps a scalar
    input to (error text, test of its value) where TF checks more than the rank (FTRL: "lr is not a positive
    scalar"). Returns the variable's new value."""
    n_refs = len(ref_names)
    grad_at = value_names.index(grad_name)
    rules = scalar_rules or {}
    scalars = tuple((i, *rules.get(arg, (f"{arg} is not a scalar", None))) for i, arg in enumerate(value_names)
                    if arg not in (grad_name, "indices"))
    same_shape_names = ref_names[1:] + ((grad_name,) if by_rows is None else ())
    scalar_at = tuple(i for i, _, _ in scalars)
    validated = tuple((i, valid) for i, _, valid in scalars if valid is not None)

    def _well_formed(olds, values) -> bool:
        """The checks below' common outcome in a few attribute reads (no comprehension: a frame each, ~0.4 us on a
        slow core); False for anything they must look at (an uninitialized variable, a Python number, a shape)."""
        try:
            var_shape = olds[0].shape
            for i in scalar_at:
                if values[i].shape:
                    return False
            for old in olds:
                if old.shape != var_shape:
                    return False
            if by_rows is None and values[grad_at].shape != var_shape:
                return False
        except AttributeError:
            return False
        for i, valid in validated:
            if not valid(values[i]):
                return False
        return True

    def factory(op, ctx):
        ref_ops = [ref_variable(t) for t in op._inputs[:n_refs]]
        xp = ctx.xp
        bfloat16 = op._attrs["T"] is _dtypes.bfloat16
        in_place = fused is not None and xp is np and not bfloat16
        if in_place and by_rows is None:
            step = functools.partial(fused, op._attrs)
        elif in_place:
            step = functools.partial(_into_new, functools.partial(fused, op._attrs), n_refs)
        else:
            step = functools.partial(update, xp, op._attrs)
        if bfloat16:  # NumPy promotes bfloat16 * 0.5 to float32: store bfloat16 again
            step = functools.partial(_rounded_to, _dtypes.bfloat16.as_numpy_dtype, step)
        if by_rows is not None:
            step = by_rows(xp, op, step)

        def checked(olds, values):
            if _well_formed(olds, values):
                return
            for var_op, old in zip(ref_ops, olds):
                if old is None:
                    raise FailedPreconditionError(None, op, f"Attempting to use uninitialized variables: {var_op.name}")
            for i, text, valid in scalars:
                value = values[i]
                if _shape(xp, value) != () or (valid is not None and not valid(value)):
                    raise InvalidArgumentError(None, op, f"{text}: {dims_text(xp.shape(value))}")
            var_shape = _shape(xp, olds[0])
            for arg, value in zip(same_shape_names, olds[1:] + [values[grad_at]]):
                if _shape(xp, value) != var_shape:
                    raise InvalidArgumentError(None, op, f"var and {arg} do not have the same shape"
                                               f"{dims_text(var_shape)} {dims_text(xp.shape(value))}")

        if by_rows is not None:
            def new_rows(olds, values, targets):
                checked(olds, values)
                return step(targets, *olds, *values)
            return storing_kernel(op, ctx, ref_ops, new_rows, rows=True)
        if in_place:
            expression = functools.partial(update, np, op._attrs)
            small = getattr(fused, "small", None)

            def new_in_place(olds, values, buffers):
                checked(olds, values)
                var = olds[0]  # a scalar variable (NumPy's `out=` calls on 0-d inputs give scalars), or one so small
                if var.ndim == 0 or var.size < RECYCLE_MIN_ELEMENTS:  # that fewer keywords beat fewer arrays
                    news = None if small is None or var.ndim == 0 else small(op._attrs, olds, values)
                    return expression(*olds, *values) if news is None else news
                return step(buffers(olds), *olds, *values)
            applied = storing_kernel(op, ctx, ref_ops, new_in_place, recycle=True)
            plan_in_place = getattr(fused, "in_place", None)
            var_shape = op._inputs[0]._shape
            if plan_in_place is not None and cpu_fusion.available() and not _use_locking(op, default=False) and \
                    var_shape.is_fully_defined() and var_shape.num_elements() >= fused_updates.LOOP_MIN_ELEMENTS:
                applied.commit_later = _committing_later(op, ctx, ref_ops, applied, checked, new_in_place,
                                                         plan_in_place)
            return applied

        def new_values(olds, values):
            checked(olds, values)
            return step(*olds, *values)
        return storing_kernel(op, ctx, ref_ops, new_values)
    return factory


def _committing_later(op, ctx, ref_ops: list, applied, checked, new_values, plan_in_place):
    """The kernel's form for a step its plan commits after the plan's last step (runtime/deferred_updates.py
    chooses the steps): it reads and checks as `applied` does, raising the same errors in the same step, then queues
    (cells, their values read, `apply(arrays)` updating them in place, `out_of_place(olds)` giving new arrays, the
    op) on `steps.slot.deferred` for the session's commit (runtime/variable_state.py `commit_deferred`), which
    updates the arrays in place only where nothing else refers to them. A step updating in place needs no undo
    record: it runs only once the whole step has succeeded. Where the loop does not apply, or outside a committing
    step, it is `applied` itself, which reads and checks again (rare: the form is offered only where Numba is
    installed); its value (the new variable) is never read (the plan checks)."""
    cells = [ctx.variable(var_op) for var_op in ref_ops]
    steps, attrs = ctx.steps, op._attrs

    def commit_later(*values):
        deferred = steps.slot.deferred
        if deferred is None:
            return applied(*values)
        olds = [cell.read() for cell in cells]
        checked(olds, values)
        apply = plan_in_place(attrs, olds, values)
        if apply is None:
            return applied(*values)
        deferred.append((cells, olds, apply, functools.partial(_out_of_place, new_values, cells, values), op))
        return None
    return commit_later


def _out_of_place(new_values, cells: list, values: tuple, olds: list) -> list:
    """A queued update computed into new arrays (its cells' spares where free: the committer holds their locks)."""
    return new_values(olds, values, functools.partial(_buffers, cells, _spare_held))


def _shape(xp, value) -> tuple:
    """`value`'s shape: its attribute (arrays and array scalars), else the array module's answer (Python numbers)."""
    try:
        return value.shape
    except AttributeError:
        return xp.shape(value)


def _into_new(fused, n_refs: int, *olds_and_values) -> tuple:
    """`fused` computing into fresh arrays (a sparse op's gathered rows)."""
    return fused([np.empty_like(old) for old in olds_and_values[:n_refs]], *olds_and_values)


def storing_kernel(op, ctx, ref_ops: list, new_values, rows: bool = False, recycle: bool = False):
    """The kernel of an op that rewrites variables: `new_values(old values, inputs) -> new arrays`, one per variable
    of `ref_ops`, stored journaled (a failed step is undone) as new arrays, not written in place (fetched values may
    alias them; row writes, below, are the exception). With `use_locking` every variable's lock is held, in the
    cells' global order, from the first read to the last store (TF's MaybeLockVariableInputMutexesInOrder); without
    it each store is whole but updates may race (Hogwild). Returns the first variable's new value.

    A recycling write (`recycle=True`: the fused training kernels) is called as `new_values(olds, inputs, buffers)`,
    `buffers(olds)` giving one array per variable to compute its new value into: the array the variable's previous
    store replaced when nothing else refers to it (`VariableCell.take_spare`), else a new one. The journal keeps the
    old values, as for any store, so nothing is copied and an undo finds them intact.

    A row write (`rows=True`: Scatter*, SparseApply*) is called as `new_values(olds, inputs, targets)` and asks
    `targets[i](old, rows, view_shape[, old_rows])` for the array to write variable i's rows into: the stored array
    itself when nothing else refers to it (`VariableCell.claim_in_place`; its old rows journaled: `old_rows` when the
    caller gathered them already, as SparseApply* does), else a copy. So updating a few rows of a large table costs
    those rows, not the table. Row writes always hold their variables' locks."""
    cells = [ctx.variable(var_op) for var_op in ref_ops]
    steps = ctx.steps
    if rows or _use_locking(op, default=False):
        locks = [cell.lock for cell in sorted(set(cells), key=_cell_order)]
        if rows:
            update = ctx.write_rows
        elif recycle:
            update = functools.partial(_update_cells, buffers=functools.partial(_buffers, cells, _spare_held))
        else:
            update = _update_cells

        def apply_locked(*values):
            return _holding(locks, update, cells, new_values, values, steps.slot.journal)
        return apply_locked

    if recycle:
        buffers = functools.partial(_buffers, cells, _spare)

        def apply_recycling(*values):
            news = new_values([cell.read() for cell in cells], values, buffers)
            journal = steps.slot.journal
            for cell, new in zip(cells, news):
                cell.write(new, journal, True)
            return news[0]
        return apply_recycling

    def apply(*values):
        news = new_values([cell.read() for cell in cells], values)
        journal = steps.slot.journal
        for cell, new in zip(cells, news):
            cell.write(new, journal)
        return news[0]
    return apply


def _spare_held(cell, like):
    return cell.take_spare(like)  # the caller holds the cell's lock


def _spare(cell, like):
    return cell.spare_for(like)


RECYCLE_MIN_ELEMENTS = 1024  # a smaller variable takes the plain expressions (or their compiled small loop,
                             # fused_updates.small): cheaper than out= calls and the spare


def _buffers(cells: list, take, olds: list) -> list:
    """One output array per variable: its cell's spare (`take(cell, old)`) or a new array like its old value."""
    out = []
    for cell, old in zip(cells, olds):
        spare = take(cell, old)
        out.append(np.empty_like(old) if spare is None else spare)
    return out


def _cell_order(cell) -> int:
    return cell.order


def _update_cells(cells: list, new_values, values, journal, buffers=None):
    if buffers is None:
        news = new_values([cell.value for cell in cells], values)
    else:
        news = new_values([cell.value for cell in cells], values, buffers)
    recycle = buffers is not None
    for cell, new in zip(cells, news):
        cell.store(new, journal, recycle)
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
    lr, beta1, beta2, epsilon = lr[()], beta1[()], beta2[()], epsilon[()]  # array scalars: the same math, faster
    alpha = fused_updates.adam_alpha(xp, lr, beta1_power[()], beta2_power[()])
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


# The same updates as NumPy `out=` calls into `out` (one array per ref, none of them an input), in the reference
# expressions' order of operations (so float results are equal), with at most one scratch array.
def _gradient_descent_into(attrs, out, var, alpha, delta):
    new_var = np.multiply(delta, alpha, out=out[0])
    return (np.subtract(var, new_var, out=new_var),)


def _momentum_into(attrs, out, var, accum, lr, grad, momentum):
    new_var, new_accum = out
    np.multiply(accum, momentum, out=new_accum)
    new_accum += grad
    if attrs.get("use_nesterov"):
        scratch = np.multiply(grad, lr)
        np.multiply(new_accum, momentum, out=new_var)
        new_var *= lr
        scratch += new_var
        return np.subtract(var, scratch, out=new_var), new_accum
    np.multiply(new_accum, lr, out=new_var)
    return np.subtract(var, new_var, out=new_var), new_accum


def _adam_into(attrs, out, var, m, v, beta1_power, beta2_power, lr, beta1, beta2, epsilon, grad):
    new_var, new_m, new_v = out
    lr, beta1, beta2, epsilon = lr[()], beta1[()], beta2[()], epsilon[()]  # array scalars: the same float math, faster
    alpha = fused_updates.adam_alpha(np, lr, beta1_power[()], beta2_power[()])
    _toward(new_m, m, np.subtract(grad, m, out=new_m), 1 - beta1)
    _toward(new_v, v, _squared_minus(new_v, grad, v), 1 - beta2)
    if attrs.get("use_nesterov"):
        scratch = np.multiply(grad, 1 - beta1)
        scratch += np.multiply(new_m, beta1, out=new_var)
        scratch *= alpha
    else:
        scratch = np.multiply(new_m, alpha)
    np.sqrt(new_v, out=new_var)
    new_var += epsilon
    scratch /= new_var
    return np.subtract(var, scratch, out=new_var), new_m, new_v


def _toward(out, old, difference, rate):
    """out = old + difference * rate, `difference` being `out` itself (the moving averages' step)."""
    difference *= rate
    return np.add(old, difference, out=out)


def _squared_minus(out, grad, old):
    np.multiply(grad, grad, out=out)
    return np.subtract(out, old, out=out)


def _momentum_step(new_var, new_mom, var, mom, momentum, lr, grad):
    """RMSProp's tail, new_var holding the denominator d: mom = mom * momentum + grad * lr / d; var -= mom."""
    scratch = np.multiply(grad, lr)
    scratch /= new_var
    np.multiply(mom, momentum, out=new_mom)
    new_mom += scratch
    np.subtract(var, new_mom, out=new_var)


def _rms_prop_into(attrs, out, var, ms, mom, lr, rho, momentum, epsilon, grad):
    new_var, new_ms, new_mom = out
    _toward(new_ms, ms, _squared_minus(new_ms, grad, ms), 1 - rho)
    np.add(new_ms, epsilon, out=new_var)
    np.sqrt(new_var, out=new_var)
    _momentum_step(new_var, new_mom, var, mom, momentum, lr, grad)
    return new_var, new_ms, new_mom


def _centered_rms_prop_into(attrs, out, var, mg, ms, mom, lr, rho, momentum, epsilon, grad):
    new_var, new_mg, new_ms, new_mom = out
    _toward(new_ms, ms, _squared_minus(new_ms, grad, ms), 1 - rho)
    _toward(new_mg, mg, np.subtract(grad, mg, out=new_mg), 1 - rho)
    np.multiply(new_mg, new_mg, out=new_var)
    np.subtract(new_ms, new_var, out=new_var)
    new_var += epsilon
    np.sqrt(new_var, out=new_var)
    _momentum_step(new_var, new_mom, var, mom, momentum, lr, grad)
    return new_var, new_mg, new_ms, new_mom


def _adagrad_into(attrs, out, var, accum, lr, grad):
    new_var, new_accum = out
    if attrs.get("update_slots", True):
        np.multiply(grad, grad, out=new_accum)
        np.add(accum, new_accum, out=new_accum)
    else:
        new_accum = accum
    scratch = np.multiply(grad, lr)
    scratch /= np.sqrt(new_accum, out=new_var)
    return np.subtract(var, scratch, out=new_var), new_accum


def _adadelta_into(attrs, out, var, accum, accum_update, lr, rho, epsilon, grad):
    new_var, new_accum, new_update = out
    np.multiply(accum, rho, out=new_accum)
    scratch = np.multiply(grad, grad)
    scratch *= 1 - rho
    new_accum += scratch
    np.add(accum_update, epsilon, out=scratch)
    np.sqrt(scratch, out=scratch)
    np.add(new_accum, epsilon, out=new_var)
    scratch /= np.sqrt(new_var, out=new_var)
    scratch *= grad  # the update
    np.multiply(scratch, lr, out=new_var)
    np.subtract(var, new_var, out=new_var)
    scratch *= scratch
    scratch *= 1 - rho
    np.multiply(accum_update, rho, out=new_update)
    new_update += scratch
    return new_var, new_accum, new_update


for _op_type, _refs, _values, _update, _fused, _grad in (
        ("ApplyGradientDescent", ("var",), ("alpha", "delta"), _gradient_descent, _gradient_descent_into, "delta"),
        ("ApplyMomentum", ("var", "accum"), ("lr", "grad", "momentum"), _momentum,
         fused_updates.compiled_momentum(_momentum_into), "grad"),
        ("ApplyAdam", ("var", "m", "v"), ("beta1_power", "beta2_power", "lr", "beta1", "beta2", "epsilon", "grad"),
         _adam, fused_updates.compiled_adam(_adam_into), "grad"),
        ("ApplyRMSProp", ("var", "ms", "mom"), ("lr", "rho", "momentum", "epsilon", "grad"), _rms_prop,
         fused_updates.compiled_rms_prop(_rms_prop_into), "grad"),
        ("ApplyCenteredRMSProp", ("var", "mg", "ms", "mom"), ("lr", "rho", "momentum", "epsilon", "grad"),
         _centered_rms_prop, fused_updates.compiled_centered_rms_prop(_centered_rms_prop_into), "grad"),
        ("ApplyAdagrad", ("var", "accum"), ("lr", "grad"), _adagrad, fused_updates.compiled_adagrad(_adagrad_into),
         "grad"),
        ("ApplyAdadelta", ("var", "accum", "accum_update"), ("lr", "rho", "epsilon", "grad"), _adadelta,
         fused_updates.compiled_adadelta(_adadelta_into), "grad")):
    kernel(_op_type, GPU_FLOAT | {_dtypes.bfloat16}, GPU_FLOAT)(_training_kernel(_refs, _values, _update, _grad,
                                                                                 fused=_fused))
