"""Kernels of the FTRL-proximal training ops (adplace.ops.training_ops): ApplyFtrl, ApplyFtrlV2 (with L2 shrinkage)
and their sparse forms, with TF's math and order of operations (training_ops.cc):

    new_accum = accum + grad * grad
    linear += grad' - (new_accum ** -lr_power - accum ** -lr_power) / lr * var    (sqrt for lr_power = -0.5)
    var = (l1 * sign(linear) - linear) / (new_accum ** -lr_power / lr + 2 * l2) where |linear| > l1, else 0
    accum = new_accum

grad' is grad, or grad + 2 * l2_shrinkage * var for the V2 ops. With `multiply_linear_by_lr` (TF 2.x) linear holds
lr * linear: linear += grad' * lr - (...) * var; var = (l1 * lr * sign(linear) - linear) / (new_accum ** -lr_power +
2 * l2 * lr) where |linear| > l1 * lr. Stored as the other training kernels store (adplace.kernels.state); on NumPy
the update is one compiled loop where it applies (adplace.kernels.fused_updates), equal to `_ftrl_into`.
"""
from __future__ import annotations

import numpy as np

from adplace.framework import dtypes as _dtypes
from adplace.kernels import fused_updates
from adplace.kernels.registration import GPU_FLOATING, kernel
from adplace.kernels.scatter import _rows_of
from adplace.kernels.state import _training_kernel

_FTRL_TYPES = frozenset({_dtypes.float16, _dtypes.bfloat16, _dtypes.float32, _dtypes.float64})


def _power(xp, accum, lr_power):
    """accum ** -lr_power, as TF computes it: a square root for lr_power = -0.5."""
    return xp.sqrt(accum) if lr_power == -0.5 else xp.power(accum, -lr_power)


def _ftrl_reference(xp, attrs, var, accum, linear, grad, shrunk, lr, l1, l2, lr_power):
    """One FTRL step as whole-array expressions (bfloat16, CuPy, multiply_linear_by_lr); `shrunk` is grad'."""
    new_accum = accum + grad * grad
    new_power = _power(xp, new_accum, lr_power)
    if attrs.get("multiply_linear_by_lr"):
        linear = linear + (shrunk * lr - (new_power - _power(xp, accum, lr_power)) * var)
        l1, quadratic = l1 * lr, new_power + 2 * l2 * lr
    else:
        linear = linear + (shrunk - (new_power - _power(xp, accum, lr_power)) / lr * var)
        quadratic = new_power / lr + 2 * l2
    shrunk_var = (l1 * xp.sign(linear) - linear) / quadratic
    return xp.where(xp.abs(linear) > l1, shrunk_var, xp.zeros_like(var)), new_accum, linear


def _ftrl(xp, attrs, var, accum, linear, grad, lr, l1, l2, lr_power):
    return _ftrl_reference(xp, attrs, var, accum, linear, grad, grad, lr, l1, l2, lr_power)


def _ftrl_v2(xp, attrs, var, accum, linear, grad, lr, l1, l2, l2_shrinkage, lr_power):
    return _ftrl_reference(xp, attrs, var, accum, linear, grad, grad + 2 * l2_shrinkage * var, lr, l1, l2,
                           lr_power)


def _ftrl_into(attrs, out, var, accum, linear, grad, lr, l1, l2, lr_power, l2_shrinkage=None):
    """`_ftrl_reference` as NumPy `out=` calls into `out` (new var, accum, linear), with one scratch array and a
    boolean mask; equal to it bit for bit."""
    if attrs.get("multiply_linear_by_lr"):
        shrunk = grad if l2_shrinkage is None else grad + 2 * l2_shrinkage * var
        return _ftrl_reference(np, attrs, var, accum, linear, grad, shrunk, lr, l1, l2, lr_power)
    new_var, new_accum, new_linear = out
    np.multiply(grad, grad, out=new_accum)
    np.add(accum, new_accum, out=new_accum)
    _power_into(new_var, new_accum, lr_power)
    new_var -= _power_into(new_linear, accum, lr_power)
    new_var /= lr
    new_var *= var  # sigma * var
    if l2_shrinkage is None:
        scratch = np.subtract(grad, new_var)
    else:
        scratch = np.multiply(var, 2 * l2_shrinkage)
        scratch += grad
        scratch -= new_var
    np.add(linear, scratch, out=new_linear)
    np.sign(new_linear, out=scratch)
    scratch *= l1
    scratch -= new_linear
    _power_into(new_var, new_accum, lr_power)
    new_var /= lr
    new_var += 2 * l2
    scratch /= new_var
    kept = np.greater(np.abs(new_linear, out=new_var), l1)
    new_var.fill(0)
    np.copyto(new_var, scratch, where=kept)
    return new_var, new_accum, new_linear


def _power_into(out, accum, lr_power):
    return np.sqrt(accum, out=out) if lr_power == -0.5 else np.power(accum, -lr_power, out=out)


def _ftrl_v2_into(attrs, out, var, accum, linear, grad, lr, l1, l2, l2_shrinkage, lr_power):
    return _ftrl_into(attrs, out, var, accum, linear, grad, lr, l1, l2, lr_power, l2_shrinkage)


def _positive(value) -> bool:
    return bool(value > 0)


def _non_negative(value) -> bool:
    return bool(value >= 0)


def _non_positive(value) -> bool:
    return bool(value <= 0)


_RULES = {"lr": ("lr is not a positive scalar", _positive),
          "l1": ("l1 regularization strength is not a non-negative scalar", _non_negative),
          "l2": ("l2 regularization strength is not a non-negative scalar", _non_negative),
          "l2_shrinkage": ("l2 shrinkage regularization strength is not a non-negative scalar", _non_negative),
          "lr_power": ("lr_power is not a non-positive scalar", _non_positive)}
_REFS = ("var", "accum", "linear")

for _op_type, _values, _update, _fused in (
        ("ApplyFtrl", ("grad", "lr", "l1", "l2", "lr_power"), _ftrl, fused_updates.compiled_ftrl(_ftrl_into)),
        ("ApplyFtrlV2", ("grad", "lr", "l1", "l2", "l2_shrinkage", "lr_power"), _ftrl_v2,
         fused_updates.compiled_ftrl_v2(_ftrl_v2_into))):
    kernel(_op_type, _FTRL_TYPES, GPU_FLOATING)(_training_kernel(_REFS, _values, _update, fused=_fused,
                                                                 scalar_rules=_RULES))
    _sparse_values = _values[:1] + ("indices",) + _values[1:]
    kernel(f"Sparse{_op_type}", _FTRL_TYPES, GPU_FLOATING)(_training_kernel(
        _REFS, _sparse_values, _update, by_rows=_rows_of(len(_REFS), 0, 1), fused=_fused, scalar_rules=_RULES))
