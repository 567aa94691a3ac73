"""Kernels of TF's conditional accumulators (adplace/ops/accumulator_ops.py), CPU only as in TF.

The accumulator is a session resource (runtime/resources.py) named by its op's `shared_name` (shared by the sessions
on a target, and by every client of a cluster task) or, without one, private to the op. Its handle is a reference,
like a variable's, so the plan never runs the creating op: each kernel finds the accumulator from the op behind its
reference input. Semantics are TF 1.15's (core/kernels/conditional_accumulator_base.cc):
- a gradient applied with a local step below the accumulator's global step is dropped; others are summed;
- take_grad(n) waits (under the step's deadline, Ctrl-C and Session.close) until n were summed, returns their mean
  (or sum), clears the sum and advances the global step by one; n < 1 is InvalidArgumentError;
- a gradient of another shape than the accumulator's (or than the first one taken) is InvalidArgumentError.
"""
from __future__ import annotations

import threading

import numpy as np

from adplace.framework import dtypes as _dtypes
from adplace.framework import errors
from adplace.framework.operation import ref_variable
from adplace.kernels.registration import NO_GPU, kernel, multi_output, object_scalar


class Accumulator:
    """Sums of gradients (dense arrays, or rows by index for the sparse kind) with a count and a global step."""

    def __init__(self, name: str, dtype, shape, sparse: bool, mean: bool):
        self.name, self.dtype, self.shape, self.sparse, self.mean = name, dtype, shape, sparse, mean
        self.cond = threading.Condition()
        self.global_step = 0
        self.count = 0
        self.total = None      # dense: the sum; sparse: {row index: (sum of rows, how many)}
        self.dense_shape = None

    def _check_shape(self, shape: tuple, op) -> None:
        want = self.shape
        if want is not None and (len(want) != len(shape) or any(w is not None and w != s
                                                                 for w, s in zip(want, shape))):
            raise errors.InvalidArgumentError(None, op, f"Shape mismatch: expected {_text(want)}, got {_text(shape)} "
                                              f"for accumulator {self.name}")

    def apply_dense(self, local_step: int, grad: np.ndarray, op) -> None:
        with self.cond:
            self._check_shape(grad.shape, op)
            if self.total is not None and self.total.shape != grad.shape:
                raise errors.InvalidArgumentError(None, op, f"Shape mismatch: expected {_text(self.total.shape)}, "
                                                  f"got {_text(grad.shape)} for accumulator {self.name}")
            if local_step < self.global_step:
                return
            self.total = grad.astype(self.dtype, copy=True) if self.total is None else self.total + grad
            self.count += 1
            self.cond.notify_all()

    def apply_sparse(self, local_step: int, indices, values, shape, op) -> None:
        with self.cond:
            if len(indices) != len(values):
                raise errors.InvalidArgumentError(None, op, f"Shape mismatch: {len(indices)} indices but "
                                                  f"{len(values)} rows of values for accumulator {self.name}")
            if shape is not None:
                if self.dense_shape is not None and tuple(shape) != self.dense_shape:
                    raise errors.InvalidArgumentError(None, op, f"Shape mismatch: expected {_text(self.dense_shape)}"
                                                      f", got {_text(tuple(shape))} for accumulator {self.name}")
                self.dense_shape = tuple(int(s) for s in shape)
            if local_step < self.global_step:
                return
            rows = self.total if self.total is not None else {}
            for index, row in zip(indices.tolist(), values):
                held = rows.get(index)
                rows[index] = (row.astype(self.dtype, copy=True), 1) if held is None else (held[0] + row, held[1] + 1)
            self.total = rows
            self.count += 1
            self.cond.notify_all()

    def take(self, required: int, waits, op):
        """The mean (or sum) of `required` gradients, once they arrived; then a fresh sum and the next step."""
        if required < 1:
            raise errors.InvalidArgumentError(None, op, f"Argument num_required must be positive, but was "
                                              f"{required}")
        with self.cond:
            waits.wait(self.cond, lambda: self.count >= required, op, "TakeGrad")
            total, count = self.total, self.count
            self.total, self.count = None, 0
            self.global_step += 1
        if self.sparse:
            order = sorted(total)
            rows = [total[i][0] / (total[i][1] if self.mean else 1) for i in order]
            values = np.stack(rows).astype(self.dtype) if rows else np.zeros((0,), self.dtype)
            shape = np.asarray(self.dense_shape or (), np.int64)
            return multi_output([np.asarray(order, np.int64), values, shape])
        return (total / count).astype(self.dtype) if self.mean else total


def _text(shape) -> str:
    return "[" + ",".join("?" if d is None else str(d) for d in shape) + "]"


def _accumulator(op, ctx) -> Accumulator:
    """The accumulator behind the reference input of `op` (made on first use)."""
    acc_op = ref_variable(op.inputs[0])
    attrs = acc_op._attrs
    shared_name = attrs.get("shared_name") or ""
    name = ctx.resource_name(acc_op, shared_name)
    dtype = _dtypes.as_dtype(attrs["dtype"]).as_numpy_dtype
    shape = attrs.get("shape")
    dims = None if shape is None or shape.ndims is None else tuple(shape.as_tuple())
    sparse = acc_op.type == "SparseConditionalAccumulator"
    mean = (attrs.get("reduction_type") or "MEAN") == "MEAN"

    def check(existing: Accumulator) -> None:
        if existing.sparse != sparse or existing.dtype != dtype:
            raise errors.InvalidArgumentError(None, op, f"Shared accumulator '{name}' exists with another kind or "
                                              f"dtype than {acc_op.name} asks for")
    return ctx.resources.lookup_or_create(attrs.get("container") or "", name, bool(shared_name),
                                          lambda: Accumulator(name, dtype, dims, sparse, mean), check)


def _int(value) -> int:
    return int(np.asarray(value))


@kernel("AccumulatorNumAccumulated", cpu_types=None, gpu_types=NO_GPU)
def _num_accumulated(op, ctx):
    return lambda: np.asarray(_accumulator(op, ctx).count, np.int32)


@kernel("AccumulatorSetGlobalStep", cpu_types=None, gpu_types=NO_GPU)
def _set_global_step(op, ctx):
    def set_global_step(step):
        acc = _accumulator(op, ctx)
        with acc.cond:
            acc.global_step = _int(step)
    return set_global_step


@kernel("AccumulatorApplyGradient", cpu_types=None, gpu_types=NO_GPU)
def _apply_gradient(op, ctx):
    return lambda local_step, grad: _accumulator(op, ctx).apply_dense(_int(local_step), np.asarray(grad), op)


@kernel("AccumulatorTakeGradient", cpu_types=None, gpu_types=NO_GPU)
def _take_gradient(op, ctx):
    waits = ctx.waits
    return lambda required: _accumulator(op, ctx).take(_int(required), waits, op)


@kernel("SparseAccumulatorApplyGradient", cpu_types=None, gpu_types=NO_GPU)
def _sparse_apply_gradient(op, ctx):
    known = bool(op._attrs.get("has_known_shape"))

    def apply(local_step, indices, values, shape):
        _accumulator(op, ctx).apply_sparse(_int(local_step), np.asarray(indices).reshape(-1), np.asarray(values),
                                           np.asarray(shape).reshape(-1) if known else None, op)
    return apply


@kernel("SparseAccumulatorTakeGradient", cpu_types=None, gpu_types=NO_GPU)
def _sparse_take_gradient(op, ctx):
    waits = ctx.waits
    return lambda required: _accumulator(op, ctx).take(_int(required), waits, op)


@kernel("ConditionalAccumulator", cpu_types=None, gpu_types=NO_GPU)
@kernel("SparseConditionalAccumulator", cpu_types=None, gpu_types=NO_GPU)
def _creation(op, ctx):
    """Only when the handle itself is fetched (the plan does not run it for its consumers): TF's string handle."""
    return lambda: object_scalar(op.name.encode())
