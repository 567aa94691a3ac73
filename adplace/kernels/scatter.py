"""Kernels of the sparse variable writes: Scatter* and ScatterNd* (adplace.ops.state_ops), CountUpTo, and the
SparseApply* training ops (adplace.ops.training_ops). They store through the variable cells as the dense ones do
(adplace.kernels.state: journaled, copy then store, `use_locking` holds the locks from read to store).

Indices are checked on the host before anything is written, so an index out of range is TF's InvalidArgumentError
and leaves the variable unchanged (TF's CPU kernels may have written the rows before it). A repeated index is
applied once per occurrence, in the order of `indices`, as TF's CPU kernels loop: additions and min/max go through
the array module's unbuffered `ufunc.at`; the other writes run in rounds, round k writing every index's k-th
occurrence (one round when no index repeats).

Int64 indices of a CUDA GPU op are copied to the host for that check (one sync); int32 ones live there already.
"""
from __future__ import annotations

import numpy as np

from adplace.framework import dtypes as _dtypes
from adplace.framework.errors import InvalidArgumentError, OutOfRangeError
from adplace.framework.operation import ref_variable
from adplace.framework.tensor_shape import dims_text
from adplace.kernels import fused_updates
from adplace.kernels.gpu import to_host
from adplace.kernels.repeated_index import in_rounds, rounds, take_rows, ufunc_at
from adplace.kernels.registration import GPU_FLOAT, GPU_FLOATING, NO_GPU, kernel
from adplace.kernels.state import (_adadelta, _adadelta_into, _adagrad, _adagrad_into, _centered_rms_prop,
                                   _centered_rms_prop_into, _holding, _momentum, _momentum_into, _rms_prop,
                                   _rms_prop_into, _training_kernel, _uninitialized, storing_kernel)

_MIN_MAX_TYPES = frozenset({_dtypes.float16, _dtypes.bfloat16, _dtypes.float32, _dtypes.float64, _dtypes.int32,
                            _dtypes.int64})


def _index_text(shape: tuple, flat: int) -> str:
    """TF's SliceDebugString: the multi-index of element `flat` of an array of `shape` ("" for a scalar)."""
    return "[" + ",".join(str(int(i)) for i in np.unravel_index(flat, shape)) + "]" if shape else ""


def _accumulate(ufunc_name: str):
    """Add/Sub/Min/Max: one unbuffered ufunc.at where the backend has it, which applies every repeated index."""
    def write(xp, target, rows, updates):
        ufunc_at(xp, ufunc_name, target, rows, updates)
    return write


def _by_rounds(combine):
    """Update/Mul/Div: target[rows[i]] = combine(target[rows[i]], updates[i]) for each i in turn, a round at a time."""
    def write(xp, target, rows, updates):
        in_rounds(xp, combine, target, rows, updates)
    return write


def _divide(old, new):
    """TF's division: true division for floats, C's truncating division for integers (NumPy's // floors)."""
    if old.dtype.kind not in "iu":
        return old / new
    quotient = old // new
    return quotient + ((quotient < 0) & (quotient * new != old)).astype(quotient.dtype)


_WRITES = {
    "Update": _by_rounds(lambda old, new: new), "Mul": _by_rounds(lambda old, new: old * new),
    "Div": _by_rounds(_divide), "Add": _accumulate("add"), "Sub": _accumulate("subtract"),
    "Min": _accumulate("minimum"), "Max": _accumulate("maximum"),
}


def _indexed_write(new_value):
    """The kernel factory of an op writing its ref input from (indices, updates): `new_value(op, xp, old, host
    indices, updates)` checks them and returns the new array (a copy), stored as the dense writes store."""
    def factory(op, ctx):
        var_op, xp = ref_variable(op._inputs[0]), ctx.xp

        def new_values(olds, values, targets):
            old, (indices, updates) = olds[0], values
            if old is None:
                raise _uninitialized(op, var_op)
            return (new_value(op, xp, old, np.asarray(to_host(indices)), updates, targets[0]),)
        return storing_kernel(op, ctx, [var_op], new_values, rows=True)
    return factory


# --- Scatter* -------------------------------------------------------------------------------------------------------
def _scatter(write):
    """ScatterX(ref, indices, updates): rows indices[...] of ref get `write`, updates being indices.shape +
    ref.shape[1:] or a scalar for every row named (scatter_op.cc)."""
    def new_value(op, xp, old, indices, updates, target):
        shape = xp.shape(old)
        if not shape:
            raise InvalidArgumentError(None, op, f"params must be at least 1-D, got shape {dims_text(shape)}")
        up_shape = xp.shape(updates)
        if up_shape and up_shape != indices.shape + shape[1:]:
            raise InvalidArgumentError(None, op, f"Must have updates.shape = indices.shape + params.shape[1:] or "
                                       f"updates.shape = [], got updates.shape {dims_text(up_shape)}, "
                                       f"indices.shape {dims_text(indices.shape)}, params.shape {dims_text(shape)}")
        rows = indices.ravel()
        bad = np.flatnonzero((rows < 0) | (rows >= shape[0]))
        if bad.size:
            raise InvalidArgumentError(None, op, f"indices{_index_text(indices.shape, bad[0])} = {rows[bad[0]]} "
                                       f"is not in [0, {shape[0]})")
        new = target(old, rows, shape)
        updates = xp.broadcast_to(xp.asarray(updates, dtype=new.dtype), indices.shape + shape[1:])
        write(xp, new, rows, updates.reshape((rows.size,) + shape[1:]))
        return new
    return _indexed_write(new_value)


for _name, _write in _WRITES.items():
    _cpu = _dtypes.ALL if _name == "Update" else _MIN_MAX_TYPES if _name in ("Min", "Max") else _dtypes.NUMERIC
    kernel(f"Scatter{_name}", _cpu, GPU_FLOATING)(_scatter(_write))


# --- ScatterNd* -----------------------------------------------------------------------------------------------------
def _scatter_nd(write):
    """ScatterNdX(ref, indices, updates): indices [..., K] address elements (K = rank) or slices of ref; updates is
    indices.shape[:-1] + ref.shape[K:] (scatter_nd_op.cc), written through a view of ref as rows of slices."""
    def new_value(op, xp, old, indices, updates, target):
        shape, up_shape = xp.shape(old), xp.shape(updates)
        if not shape:
            raise InvalidArgumentError(None, op, f"Output must be at least 1-D, got shape: {dims_text(shape)}")
        if not indices.ndim:
            raise InvalidArgumentError(None, op, "indices must be at least 1-D, got shape: []")
        k = indices.shape[-1]
        if k > len(shape) or up_shape != indices.shape[:-1] + shape[k:]:
            raise InvalidArgumentError(None, op, f"Must have updates.shape = indices.shape[:batch_dim] + "
                                       f"params_shape[slice_dim:], got updates.shape: {dims_text(up_shape)}, "
                                       f"indices.shape: {dims_text(indices.shape)}, params_shape: "
                                       f"{dims_text(shape)}, slice_dim: {k}, and batch_dim: {indices.ndim - 1}")
        coordinates = indices.reshape(-1, k)
        bad = np.flatnonzero(((coordinates < 0) | (coordinates >= np.array(shape[:k], np.int64))).any(axis=1))
        if bad.size:
            raise InvalidArgumentError(None, op, f"indices{_index_text(indices.shape[:-1], bad[0])} = "
                                       f"[{', '.join(str(c) for c in coordinates[bad[0]])}] does not index into "
                                       f"shape {dims_text(shape)}")
        rows = np.ravel_multi_index(tuple(coordinates.T), shape[:k]) if k else np.zeros(len(coordinates), np.int64)
        view_shape = (int(np.prod(shape[:k], dtype=np.int64)),) + shape[k:]
        new = target(old, rows, view_shape)
        slices = new.reshape(view_shape)  # a view (C order): writes reach `new`
        write(xp, slices, rows, xp.asarray(updates).reshape((rows.size,) + shape[k:]))
        return new
    return _indexed_write(new_value)


for _name in ("Update", "Add", "Sub"):
    kernel(f"ScatterNd{_name}", _dtypes.ALL if _name == "Update" else _dtypes.NUMERIC,
           GPU_FLOATING)(_scatter_nd(_WRITES[_name]))


# --- CountUpTo ------------------------------------------------------------------------------------------------------
@kernel("CountUpTo", (_dtypes.int32, _dtypes.int64), NO_GPU)
def _count_up_to(op, ctx):
    """Always atomic (TF's kernel takes the variable's lock whatever the attrs): the value before the increment, or
    OutOfRangeError at the limit with nothing written."""
    var_op, limit = ref_variable(op._inputs[0]), op._attrs["limit"]
    cell, steps = ctx.variable(var_op), ctx.steps

    def increment():
        old = cell.value
        if old is None:
            raise _uninitialized(op, var_op)
        if np.ndim(old) != 0:
            raise InvalidArgumentError(None, op, f"input is not a scalar: {dims_text(np.shape(old))}")
        if old >= limit:
            raise OutOfRangeError(None, op, f"Reached limit of {limit}")
        cell.store(np.array(old + 1, dtype=old.dtype), steps.slot.journal)
        return old

    return lambda: _holding([cell.lock], increment)


# --- SparseApply* ---------------------------------------------------------------------------------------------------
def _rows_of(n_refs: int, grad_at: int, indices_at: int):
    """`by_rows` for _training_kernel: check grad and indices as training_ops.cc does, then run the dense step on the
    rows named, one occurrence of each index per round, into the arrays `targets` gives (the variables themselves
    or copies: see storing_kernel)."""
    def by_rows(xp, op, step):
        def sparse_step(targets, *olds_and_values):
            olds, values = olds_and_values[:n_refs], list(olds_and_values[n_refs:])
            grad, indices = values[grad_at], np.asarray(to_host(values.pop(indices_at)))
            var_shape, grad_shape = xp.shape(olds[0]), xp.shape(grad)
            if not var_shape:
                raise InvalidArgumentError(None, op, "var must be at least 1 dimensional")
            if indices.ndim != 1:
                raise InvalidArgumentError(None, op, "indices must be one-dimensional")
            for d in range(1, len(var_shape)):
                if d >= len(grad_shape) or var_shape[d] != grad_shape[d]:
                    raise InvalidArgumentError(None, op, f"var and grad must match in dimension {d}")
            if len(grad_shape) != len(var_shape) or grad_shape[0] != indices.size:
                raise InvalidArgumentError(None, op, "grad must be the same size as indices in the first dimension.")
            bad = np.flatnonzero((indices < 0) | (indices >= var_shape[0]))
            if bad.size:
                raise InvalidArgumentError(None, op, f"Index {indices[bad[0]]} at offset {bad[0]} in indices is out "
                                           f"of range")
            plan = rounds(indices)
            rows = plan[0][1] if plan else indices  # the first round names every row once
            at = xp.asarray(rows)
            # the first round's inputs, and the undo records of in-place writes
            old_rows = [take_rows(old, at) for old in olds]
            news = [target(old, rows, xp.shape(old), before) for target, old, before in zip(targets, olds, old_rows)]
            for k, (positions, distinct) in enumerate(plan):
                if k:
                    at = xp.asarray(distinct)
                values[grad_at] = grad if len(plan) == 1 else take_rows(grad, xp.asarray(positions))
                inputs = old_rows if k == 0 else [take_rows(new, at) for new in news]
                for new, row_values in zip(news, step(*inputs, *values)):
                    new[at] = row_values
            return news
        return sparse_step
    return by_rows


# The gathered rows are plain C-contiguous arrays: from LOOP_MIN_ELEMENTS elements on, the compiled loops of
# kernels/fused_updates.py update them in one pass (the same values as the `*_into` forms).
for _op_type, _refs, _values, _update, _fused in (
        ("SparseApplyMomentum", ("var", "accum"), ("lr", "grad", "indices", "momentum"), _momentum,
         fused_updates.compiled_momentum(_momentum_into)),
        ("SparseApplyAdagrad", ("var", "accum"), ("lr", "grad", "indices"), _adagrad,
         fused_updates.compiled_adagrad(_adagrad_into)),
        ("SparseApplyAdadelta", ("var", "accum", "accum_update"), ("lr", "rho", "epsilon", "grad", "indices"),
         _adadelta, fused_updates.compiled_adadelta(_adadelta_into)),
        ("SparseApplyRMSProp", ("var", "ms", "mom"), ("lr", "rho", "momentum", "epsilon", "grad", "indices"),
         _rms_prop, fused_updates.compiled_rms_prop(_rms_prop_into)),
        ("SparseApplyCenteredRMSProp", ("var", "mg", "ms", "mom"),
         ("lr", "rho", "momentum", "epsilon", "grad", "indices"), _centered_rms_prop,
         fused_updates.compiled_centered_rms_prop(_centered_rms_prop_into))):
    _by_rows = _rows_of(len(_refs), _values.index("grad"), _values.index("indices"))
    kernel(_op_type, GPU_FLOAT | {_dtypes.bfloat16}, GPU_FLOAT)(_training_kernel(_refs, _values, _update,
                                                                                 by_rows=_by_rows, fused=_fused))
