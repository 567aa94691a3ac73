"""Logical ops (LogicalAnd, LogicalOr, LogicalNot, logical_xor) and bitwise ops (BitwiseAnd, ..., Invert), and the
Tensor operators & | ^ ~, which are logical for bool tensors and bitwise for integers, as in TF."""
from __future__ import annotations

from adplace.framework import dtypes as _dtypes
from adplace.framework.default_graph import name_scope
from adplace.framework.operation import Tensor
from adplace.framework.registry import register_op
from adplace.ops.math_ops import binary_infer, build_binary, build_unary, convert_pair, unary_infer


LOGICAL_BINARY_OPS = ("LogicalAnd", "LogicalOr")
BITWISE_BINARY_OPS = ("BitwiseAnd", "BitwiseOr", "BitwiseXor", "LeftShift", "RightShift")
for _op_type in LOGICAL_BINARY_OPS:
    register_op(_op_type, binary_infer(_op_type, {_dtypes.bool}))
for _op_type in BITWISE_BINARY_OPS:
    register_op(_op_type, binary_infer(_op_type, _dtypes.INTEGER))
register_op("LogicalNot", unary_infer("LogicalNot", {_dtypes.bool}))
register_op("Invert", unary_infer("Invert", _dtypes.INTEGER))


def logical_and(x, y, name: str | None = None) -> Tensor: return build_binary("LogicalAnd", x, y, name)  # noqa: E704
def logical_or(x, y, name: str | None = None) -> Tensor: return build_binary("LogicalOr", x, y, name)  # noqa: E704
def logical_not(x, name: str | None = None) -> Tensor: return build_unary("LogicalNot", x, name)  # noqa: E704
def bitwise_and(x, y, name: str | None = None) -> Tensor: return build_binary("BitwiseAnd", x, y, name)  # noqa: E704
def bitwise_or(x, y, name: str | None = None) -> Tensor: return build_binary("BitwiseOr", x, y, name)  # noqa: E704
def bitwise_xor(x, y, name: str | None = None) -> Tensor: return build_binary("BitwiseXor", x, y, name)  # noqa: E704
def left_shift(x, y, name: str | None = None) -> Tensor: return build_binary("LeftShift", x, y, name)  # noqa: E704
def right_shift(x, y, name: str | None = None) -> Tensor: return build_binary("RightShift", x, y, name)  # noqa: E704
def invert(x, name: str | None = None) -> Tensor: return build_unary("Invert", x, name)  # noqa: E704


def logical_xor(x, y, name: str = "LogicalXor") -> Tensor:
    """x XOR y elementwise for bool tensors (tf.logical_xor), composed as TF composes it:
    (x OR y) AND NOT (x AND y)."""
    return logical_and(logical_or(x, y), logical_not(logical_and(x, y)), name=name)


def _bool_or_bitwise(logical, bitwise):
    """The `&`-style operator of TF's Tensor: logical for bool tensors, bitwise for integers (TypeError for
    others, from the bitwise op's dtype check)."""
    def op(x: Tensor, y: Tensor, name: str | None = None) -> Tensor:
        return logical(x, y, name) if x.dtype.base_dtype is _dtypes.bool else bitwise(x, y)
    return op


and_ = _bool_or_bitwise(logical_and, bitwise_and)
or_ = _bool_or_bitwise(logical_or, bitwise_or)
xor_ = _bool_or_bitwise(logical_xor, bitwise_xor)


def invert_(x: Tensor, name: str | None = None) -> Tensor:
    """`~x`: logical NOT for bool tensors, bitwise inversion for integers."""
    return logical_not(x, name=name) if x.dtype.base_dtype is _dtypes.bool else invert(x, name=name)


def _operator(fn, scope: str, reverse: bool = False):
    """A Python operator as TF's binary_op_wrapper builds it: under a scope named for the operator, the Python
    operand converted to the Tensor's dtype."""
    def wrapper(self, other):
        x, y = (other, self) if reverse else (self, other)
        with name_scope(None, scope, [x, y]) as op_name:
            x, y = convert_pair(x, y)
            return fn(x, y, name=op_name)
    return wrapper


def _install_operators() -> None:
    """Tensor's & | ^ (and reflected forms) and ~, as TF's `_override_operator` installs them."""
    for dunder, fn in (("and", and_), ("or", or_), ("xor", xor_)):
        setattr(Tensor, f"__{dunder}__", _operator(fn, dunder))
        setattr(Tensor, f"__r{dunder}__", _operator(fn, dunder, reverse=True))
    Tensor.__invert__ = lambda self: invert_(self)


_install_operators()
