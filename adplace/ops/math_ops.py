"""Math ops: elementwise unary/binary ops with broadcasting, matmul, add_n, cast, range, cumsum/cumprod, and the
Python operators on Tensor (+ - * / // % ** @, unary -, abs, comparisons). Reductions live in reduction_ops.py,
logical and bitwise ops (with & | ^ ~) in logical_ops.py, segment ops in segment_ops.py."""
from __future__ import annotations

import numpy as np

from adplace.framework import dtypes as _dtypes
from adplace.framework.composite import CompositeTensor
from adplace.framework.conversion import convert_to_tensor
from adplace.framework.default_graph import name_scope
from adplace.framework.operation import Tensor
from adplace.framework.registry import register_op
from adplace.framework.tensor_shape import TensorShape, unknown_shape
from adplace.ops.array_ops import identity
from adplace.ops.op_builder import (apply_op_1, broadcast_dims, check_dtype, check_same_dtype,
                                    constant_value, int_const, merged_shape, shapes_text, to_tensors)

FLOAT = _dtypes.FLOATING
FLOAT_COMPLEX = _dtypes.FLOATING | _dtypes.COMPLEX
SIGNED = FLOAT_COMPLEX | {_dtypes.int8, _dtypes.int16, _dtypes.int32, _dtypes.int64}
NUMERIC = _dtypes.NUMERIC
REAL = _dtypes.FLOATING | _dtypes.INTEGER


# --- unary ----------------------------------------------------------------------------------------------------
def unary_infer(op_type, allowed):
    """Shape inference of an elementwise unary op: output dtype and shape are the input's."""
    def infer(inputs, attrs, name):
        x = inputs[0]
        check_dtype(op_type, "x", x._dtype, allowed)
        return [(x._dtype.base_dtype, x._shape)]
    return infer


UNARY_OPS = {  # op type -> (allowed dtypes, public name)
    "Neg": (SIGNED, "negative"), "Abs": (SIGNED, "abs"), "Sign": (SIGNED, "sign"), "Square": (NUMERIC, "square"),
    "Sqrt": (FLOAT_COMPLEX, "sqrt"), "Rsqrt": (FLOAT_COMPLEX, "rsqrt"), "Reciprocal": (FLOAT_COMPLEX, "reciprocal"),
    "Exp": (FLOAT_COMPLEX, "exp"), "Log": (FLOAT_COMPLEX, "log"), "Log1p": (FLOAT_COMPLEX, "log1p"),
    "Sin": (FLOAT_COMPLEX, "sin"), "Cos": (FLOAT_COMPLEX, "cos"), "Tan": (FLOAT_COMPLEX, "tan"),
    "Tanh": (FLOAT_COMPLEX, "tanh"), "Sigmoid": (FLOAT_COMPLEX, "sigmoid"), "Relu": (REAL, "relu"),
    "Floor": (FLOAT, "floor"), "Ceil": (FLOAT, "ceil"),
    "Round": (SIGNED, "round"), "Rint": (FLOAT, "rint"), "Atan": (FLOAT_COMPLEX, "atan"),
    "Asin": (FLOAT_COMPLEX, "asin"), "Acos": (FLOAT_COMPLEX, "acos"), "Sinh": (FLOAT_COMPLEX, "sinh"),
    "Cosh": (FLOAT_COMPLEX, "cosh"), "Asinh": (FLOAT_COMPLEX, "asinh"), "Acosh": (FLOAT_COMPLEX, "acosh"),
    "Atanh": (FLOAT_COMPLEX, "atanh"), "Expm1": (FLOAT_COMPLEX, "expm1"), "Erf": (FLOAT, "erf"),
    "Erfc": (FLOAT, "erfc"), "Lgamma": (FLOAT, "lgamma"), "Digamma": (FLOAT, "digamma"),
}
for _op_type, (_allowed, _) in UNARY_OPS.items():
    register_op(_op_type, unary_infer(_op_type, _allowed))


def build_unary(op_type: str, x, name: str | None) -> Tensor:
    """Build an elementwise unary op named `name` (default: the op type)."""
    x = convert_to_tensor(x)
    return apply_op_1(op_type, [x], {"T": x.dtype.base_dtype}, name=name or op_type)


def negative(x, name: str | None = None) -> Tensor: return build_unary("Neg", x, name)  # noqa: E704
def abs(x, name: str | None = None) -> Tensor: return build_unary("Abs", x, name)  # noqa: E704,A001 - TF's public name
def sign(x, name: str | None = None) -> Tensor: return build_unary("Sign", x, name)  # noqa: E704
def square(x, name: str | None = None) -> Tensor: return build_unary("Square", x, name)  # noqa: E704
def sqrt(x, name: str | None = None) -> Tensor: return build_unary("Sqrt", x, name)  # noqa: E704
def rsqrt(x, name: str | None = None) -> Tensor: return build_unary("Rsqrt", x, name)  # noqa: E704
def reciprocal(x, name: str | None = None) -> Tensor: return build_unary("Reciprocal", x, name)  # noqa: E704
def exp(x, name: str | None = None) -> Tensor: return build_unary("Exp", x, name)  # noqa: E704
def log(x, name: str | None = None) -> Tensor: return build_unary("Log", x, name)  # noqa: E704
def log1p(x, name: str | None = None) -> Tensor: return build_unary("Log1p", x, name)  # noqa: E704
def sin(x, name: str | None = None) -> Tensor: return build_unary("Sin", x, name)  # noqa: E704
def cos(x, name: str | None = None) -> Tensor: return build_unary("Cos", x, name)  # noqa: E704
def tan(x, name: str | None = None) -> Tensor: return build_unary("Tan", x, name)  # noqa: E704
def tanh(x, name: str | None = None) -> Tensor: return build_unary("Tanh", x, name)  # noqa: E704
def sigmoid(x, name: str | None = None) -> Tensor: return build_unary("Sigmoid", x, name)  # noqa: E704
def relu(features, name: str | None = None) -> Tensor: return build_unary("Relu", features, name)  # noqa: E704
def floor(x, name: str | None = None) -> Tensor: return build_unary("Floor", x, name)  # noqa: E704
def ceil(x, name: str | None = None) -> Tensor: return build_unary("Ceil", x, name)  # noqa: E704
def round(x, name: str | None = None) -> Tensor:  # noqa: A001 - TF's public name
    """Round to the nearest integer, halves to even ("banker's rounding", tf.round): [0.5, 1.5, 2.5] -> [0., 2., 2.].
    Integers are returned unchanged."""
    return build_unary("Round", x, name)


def rint(x, name: str | None = None) -> Tensor: return build_unary("Rint", x, name)  # noqa: E704
def atan(x, name: str | None = None) -> Tensor: return build_unary("Atan", x, name)  # noqa: E704
def asin(x, name: str | None = None) -> Tensor: return build_unary("Asin", x, name)  # noqa: E704
def acos(x, name: str | None = None) -> Tensor: return build_unary("Acos", x, name)  # noqa: E704
def sinh(x, name: str | None = None) -> Tensor: return build_unary("Sinh", x, name)  # noqa: E704
def cosh(x, name: str | None = None) -> Tensor: return build_unary("Cosh", x, name)  # noqa: E704
def asinh(x, name: str | None = None) -> Tensor: return build_unary("Asinh", x, name)  # noqa: E704
def acosh(x, name: str | None = None) -> Tensor: return build_unary("Acosh", x, name)  # noqa: E704
def atanh(x, name: str | None = None) -> Tensor: return build_unary("Atanh", x, name)  # noqa: E704
def expm1(x, name: str | None = None) -> Tensor: return build_unary("Expm1", x, name)  # noqa: E704
def erf(x, name: str | None = None) -> Tensor: return build_unary("Erf", x, name)  # noqa: E704
def erfc(x, name: str | None = None) -> Tensor: return build_unary("Erfc", x, name)  # noqa: E704


def lgamma(x, name: str | None = None) -> Tensor:
    """log|Gamma(x)| (tf.lgamma); +inf at 0 and the negative integers."""
    return build_unary("Lgamma", x, name)


def digamma(x, name: str | None = None) -> Tensor:
    """The derivative of lgamma (tf.digamma); NaN at 0 and the negative integers."""
    return build_unary("Digamma", x, name)


def log_sigmoid(x, name: str | None = None) -> Tensor:
    """log(1 / (1 + exp(-x))), computed as -softplus(-x) so it neither overflows nor underflows (tf.log_sigmoid)."""
    from adplace.ops import nn_ops  # nn_ops builds on this module
    with name_scope(name, "LogSigmoid", [x]) as scope:
        x = convert_to_tensor(x, name="x")
        return negative(nn_ops.softplus(negative(x)), name=scope)


def _predicate_infer(op_type):
    def infer(inputs, attrs, name):
        check_dtype(op_type, "x", inputs[0]._dtype, FLOAT)
        return [(_dtypes.bool, inputs[0]._shape)]
    return infer


PREDICATE_OPS = ("IsFinite", "IsNan", "IsInf")
for _op_type in PREDICATE_OPS:
    register_op(_op_type, _predicate_infer(_op_type))


def is_finite(x, name: str | None = None) -> Tensor: return build_unary("IsFinite", x, name)  # noqa: E704
def is_nan(x, name: str | None = None) -> Tensor: return build_unary("IsNan", x, name)  # noqa: E704
def is_inf(x, name: str | None = None) -> Tensor: return build_unary("IsInf", x, name)  # noqa: E704


# --- gradients of unary ops: TF's TanhGrad etc., built by the gradient functions from the forward output ----------
def _unary_grad_infer(op_type, allowed, arg_names):
    """Both inputs of one dtype and one shape: these ops do not broadcast."""
    def infer(inputs, attrs, name):
        dtype = check_same_dtype(op_type, inputs, arg_names)
        check_dtype(op_type, arg_names[0], dtype, allowed)
        return [(dtype, merged_shape(op_type, name, inputs))]
    return infer


UNARY_GRAD_OPS = {  # op type -> (allowed dtypes, input names), as TF registers them
    "TanhGrad": (FLOAT_COMPLEX, ("y", "dy")), "SigmoidGrad": (FLOAT_COMPLEX, ("y", "dy")),
    "SqrtGrad": (FLOAT_COMPLEX, ("y", "dy")), "RsqrtGrad": (FLOAT_COMPLEX, ("y", "dy")),
    "ReciprocalGrad": (FLOAT_COMPLEX, ("y", "dy")), "ReluGrad": (REAL, ("gradients", "features")),
}
for _op_type, (_allowed, _arg_names) in UNARY_GRAD_OPS.items():
    register_op(_op_type, _unary_grad_infer(_op_type, _allowed, _arg_names))


def _unary_grad(op_type: str, a, b, name: str | None) -> Tensor:
    a, b = convert_pair(a, b)
    return apply_op_1(op_type, [a, b], {"T": a.dtype.base_dtype}, name=name or op_type)


def tanh_grad(y, dy, name: str | None = None) -> Tensor:
    """dy * (1 - y * y), the gradient of y = tanh(x) from its output (TF's gen_math_ops.tanh_grad)."""
    return _unary_grad("TanhGrad", y, dy, name)


def sigmoid_grad(y, dy, name: str | None = None) -> Tensor:
    """dy * y * (1 - y), the gradient of y = sigmoid(x) from its output (gen_math_ops.sigmoid_grad)."""
    return _unary_grad("SigmoidGrad", y, dy, name)


def sqrt_grad(y, dy, name: str | None = None) -> Tensor:
    """dy * 0.5 / y, the gradient of y = sqrt(x) from its output (gen_math_ops.sqrt_grad)."""
    return _unary_grad("SqrtGrad", y, dy, name)


def rsqrt_grad(y, dy, name: str | None = None) -> Tensor:
    """dy * -0.5 * y**3, the gradient of y = rsqrt(x) from its output (gen_math_ops.rsqrt_grad)."""
    return _unary_grad("RsqrtGrad", y, dy, name)


def reciprocal_grad(y, dy, name: str | None = None) -> Tensor:
    """-dy * y * y, the gradient of y = 1 / x from its output (gen_math_ops.reciprocal_grad)."""
    return _unary_grad("ReciprocalGrad", y, dy, name)


def relu_grad(gradients, features, name: str | None = None) -> Tensor:
    """gradients * (features > 0), the gradient of relu (gen_nn_ops.relu_grad); TF passes relu's output as
    `features`, which is positive exactly where the input is."""
    return _unary_grad("ReluGrad", gradients, features, name)


# --- binary (broadcasting) -------------------------------------------------------------------------------------
def binary_infer(op_type, allowed, out_dtype=None):
    """Shape inference of a broadcasting binary op: same dtypes, broadcast shape; `out_dtype` for comparisons."""
    def infer(inputs, attrs, name):
        dtype = check_same_dtype(op_type, inputs)
        check_dtype(op_type, "x", dtype, allowed)
        dims = broadcast_dims(inputs[0]._shape.as_tuple(), inputs[1]._shape.as_tuple(), name, op_type, inputs)
        return [(out_dtype or dtype, TensorShape(dims))]
    return infer


BINARY_OPS = {  # op type -> allowed dtypes
    "Add": NUMERIC | {_dtypes.string}, "Sub": NUMERIC, "Mul": NUMERIC, "RealDiv": FLOAT_COMPLEX,
    "FloorDiv": REAL, "FloorMod": REAL, "Pow": FLOAT_COMPLEX | {_dtypes.int32, _dtypes.int64},
    "Maximum": REAL, "Minimum": REAL, "SquaredDifference": SIGNED, "Atan2": FLOAT, "TruncateDiv": NUMERIC,
    "TruncateMod": REAL, "DivNoNan": FLOAT_COMPLEX, "Polygamma": FLOAT,
}
COMPARISON_OPS = ("Less", "LessEqual", "Greater", "GreaterEqual", "Equal", "NotEqual")
for _op_type, _allowed in BINARY_OPS.items():
    register_op(_op_type, binary_infer(_op_type, _allowed))
for _op_type in COMPARISON_OPS:
    register_op(_op_type, binary_infer(_op_type, _dtypes.ALL, out_dtype=_dtypes.bool))


def build_binary(op_type: str, x, y, name: str | None, scope: str | None = None) -> Tensor:
    """Build a binary op; Python values take the dtype of the Tensor operand, as TF's operator wrappers do."""
    with name_scope(name, scope or op_type, [x, y]) as op_name:
        x, y = convert_pair(x, y)
        return apply_op_1(op_type, [x, y], {"T": x.dtype.base_dtype}, name=op_name)


def convert_pair(x, y) -> tuple[Tensor, Tensor]:
    """Both operands as Tensors (named x and y in the current scope); a Python value takes the other's dtype."""
    if isinstance(x, Tensor) or not isinstance(y, Tensor):
        x = convert_to_tensor(x, name="x")
        return x, _convert_like(y, x, "y")
    y = convert_to_tensor(y, name="y")
    return _convert_like(x, y, "x"), y


def _convert_like(value, other: Tensor, name: str) -> Tensor:
    """A Python value takes `other`'s dtype; a Tensor keeps its own, so inference reports a mismatch (TypeError)."""
    if isinstance(value, Tensor) or hasattr(value, "_as_graph_element"):
        return convert_to_tensor(value)
    return convert_to_tensor(value, dtype=other.dtype.base_dtype, name=name)


def add(x, y, name: str | None = None) -> Tensor: return build_binary("Add", x, y, name)  # noqa: E704
def subtract(x, y, name: str | None = None) -> Tensor: return build_binary("Sub", x, y, name)  # noqa: E704
def multiply(x, y, name: str | None = None) -> Tensor: return build_binary("Mul", x, y, name)  # noqa: E704
def maximum(x, y, name: str | None = None) -> Tensor: return build_binary("Maximum", x, y, name)  # noqa: E704
def minimum(x, y, name: str | None = None) -> Tensor: return build_binary("Minimum", x, y, name)  # noqa: E704
def pow(x, y, name: str | None = None) -> Tensor: return build_binary("Pow", x, y, name)  # noqa: E704,A001
def floordiv(x, y, name: str | None = None) -> Tensor: return build_binary("FloorDiv", x, y, name, "floordiv")  # noqa: E704
def floormod(x, y, name: str | None = None) -> Tensor: return build_binary("FloorMod", x, y, name, "mod")  # noqa: E704
def squared_difference(x, y, name: str | None = None) -> Tensor: return build_binary("SquaredDifference", x, y, name)  # noqa: E704
def less(x, y, name: str | None = None) -> Tensor: return build_binary("Less", x, y, name)  # noqa: E704
def less_equal(x, y, name: str | None = None) -> Tensor: return build_binary("LessEqual", x, y, name)  # noqa: E704
def greater(x, y, name: str | None = None) -> Tensor: return build_binary("Greater", x, y, name)  # noqa: E704
def greater_equal(x, y, name: str | None = None) -> Tensor: return build_binary("GreaterEqual", x, y, name)  # noqa: E704
def equal(x, y, name: str | None = None) -> Tensor: return build_binary("Equal", x, y, name)  # noqa: E704
def not_equal(x, y, name: str | None = None) -> Tensor: return build_binary("NotEqual", x, y, name)  # noqa: E704
def realdiv(x, y, name: str | None = None) -> Tensor: return build_binary("RealDiv", x, y, name)  # noqa: E704
def atan2(y, x, name: str | None = None) -> Tensor: return build_binary("Atan2", y, x, name)  # noqa: E704


def polygamma(a, x, name: str | None = None) -> Tensor:
    """The a-th derivative of digamma at x, for integer-valued a >= 0 of x's float dtype (tf.polygamma)."""
    return build_binary("Polygamma", a, x, name)


def truncatediv(x, y, name: str | None = None) -> Tensor:
    """x / y rounded toward zero for integers (C's `/`: -7 / 2 = -3); plain division for floats, as in TF
    (tf.truncatediv). An integer division by zero is an InvalidArgumentError."""
    return build_binary("TruncateDiv", x, y, name)


def truncatemod(x, y, name: str | None = None) -> Tensor:
    """The remainder of truncatediv, with the sign of x (C's `%` and fmod: -7 mod 2 = -1) (tf.truncatemod)."""
    return build_binary("TruncateMod", x, y, name)


def div_no_nan(x, y, name: str | None = None) -> Tensor:
    """x / y, but 0 wherever y is 0, even for x = 0 or inf (tf.div_no_nan)."""
    with name_scope(name, "div_no_nan", [x, y]) as scope:
        x = convert_to_tensor(x, name="x")
        y = convert_to_tensor(y, dtype=x.dtype.base_dtype, name="y")
        return apply_op_1("DivNoNan", [x, y], {"T": x.dtype.base_dtype}, name=scope)


def truediv(x, y, name: str | None = None) -> Tensor:
    """x / y; integer inputs are cast to floating point first, as in TF (int32 -> float64). A Python `x` takes the
    dtype of a Tensor `y`, as TF's `1.0 / y` and `tf.divide(1.0, y)` do."""
    with name_scope(name, "truediv", [x, y]) as scope:
        x, y = convert_pair(x, y)
        if x.dtype.is_integer:
            target = _dtypes.float32 if x.dtype.size <= 2 else _dtypes.float64
            x, y = cast(x, target), cast(y, target)
        return apply_op_1("RealDiv", [x, y], {"T": x.dtype.base_dtype}, name=scope)


divide = truediv


def div(x, y, name: str | None = None) -> Tensor:
    """TF1's Python-2 division: floor division for integers, true division for floats (tf.div)."""
    with name_scope(name, "div", [x, y]) as scope:
        x = convert_to_tensor(x, name="x")
        y = _convert_like(y, x, "y")
        op_type = "FloorDiv" if x.dtype.is_integer else "RealDiv"
        return apply_op_1(op_type, [x, y], {"T": x.dtype.base_dtype}, name=scope)


# --- MatMul ---------------------------------------------------------------------------------------------------
def _matmul_infer(inputs, attrs, name):
    a, b = inputs
    dtype = check_same_dtype("MatMul", inputs, ("a", "b"))
    check_dtype("MatMul", "a", dtype, FLOAT_COMPLEX | {_dtypes.int32, _dtypes.int64})
    da, db = a._shape.as_tuple(), b._shape.as_tuple()
    for dims in (da, db):
        if dims is not None and len(dims) != 2:
            raise ValueError(f"Shape must be rank 2 but is rank {len(dims)} for '{name}' (op: 'MatMul') with input "
                             f"shapes: {shapes_text(inputs)}.")
    da, db = da or (None, None), db or (None, None)
    m, ka = (da[1], da[0]) if attrs["transpose_a"] else da
    kb, n = (db[1], db[0]) if attrs["transpose_b"] else db
    if ka is not None and kb is not None and ka != kb:
        raise ValueError(f"Dimensions must be equal, but are {ka} and {kb} for '{name}' (op: 'MatMul') with input "
                         f"shapes: {shapes_text(inputs)}.")
    return [(dtype, TensorShape([m, n]))]


register_op("MatMul", _matmul_infer)


def _batch_matmul_infer(inputs, attrs, name):
    a, b = inputs
    dtype = check_same_dtype("BatchMatMulV2", inputs, ("x", "y"))
    check_dtype("BatchMatMulV2", "x", dtype, FLOAT_COMPLEX | {_dtypes.int32, _dtypes.int64})
    da, db = a._shape.as_tuple(), b._shape.as_tuple()
    if da is None or db is None:
        return [(dtype, unknown_shape())]
    if len(da) < 2 or len(db) < 2:
        raise ValueError(f"Shape must be at least rank 2 for '{name}' (op: 'BatchMatMulV2') with input shapes: "
                         f"{shapes_text(inputs)}.")
    m, ka = (da[-1], da[-2]) if attrs["adj_x"] else (da[-2], da[-1])
    kb, n = (db[-1], db[-2]) if attrs["adj_y"] else (db[-2], db[-1])
    if ka is not None and kb is not None and ka != kb:
        raise ValueError(f"Dimensions must be equal, but are {ka} and {kb} for '{name}' (op: 'BatchMatMulV2') "
                         f"with input shapes: {shapes_text(inputs)}.")
    batch = broadcast_dims(da[:-2], db[:-2], name, "BatchMatMulV2", inputs)
    return [(dtype, TensorShape(batch + (m, n)))]


register_op("BatchMatMulV2", _batch_matmul_infer)


def matmul(a, b, transpose_a: bool = False, transpose_b: bool = False, adjoint_a: bool = False,
           adjoint_b: bool = False, a_is_sparse: bool = False, b_is_sparse: bool = False,
           name: str | None = None) -> Tensor:
    """Matrix product with optional transposes or adjoints (conjugate transposes) (tf.matmul); rank > 2 multiplies
    batches of matrices (BatchMatMulV2, batch dims broadcast). The sparsity hints are accepted and ignored.

    As in TF, MatMul only transposes, so an adjoint conjugates first; BatchMatMulV2 only takes adjoints, so a
    transpose conjugates first (tf.conj is a no-op on real tensors).

        tf.matmul([[1.0, 2.0]], [[3.0, 4.0]], transpose_b=True)   # [[11.0]]
    """
    del a_is_sparse, b_is_sparse
    if transpose_a and adjoint_a:
        raise ValueError("Only one of transpose_a and adjoint_a can be True.")
    if transpose_b and adjoint_b:
        raise ValueError("Only one of transpose_b and adjoint_b can be True.")
    with name_scope(name, "MatMul", [a, b]) as scope:
        a = convert_to_tensor(a, name="a")
        b = _convert_like(b, a, "b")
        ranks = (a.shape.ndims, b.shape.ndims)
        if None not in ranks and max(ranks) <= 2:  # TF1's rule: unknown rank or rank > 2 -> BatchMatMulV2
            a, b = (conj(a) if adjoint_a else a), (conj(b) if adjoint_b else b)
            return apply_op_1("MatMul", [a, b], {"transpose_a": bool(transpose_a or adjoint_a),
                                                 "transpose_b": bool(transpose_b or adjoint_b),
                                                 "T": a.dtype.base_dtype}, name=scope)
        a, b = (conj(a) if transpose_a else a), (conj(b) if transpose_b else b)
        return apply_op_1("BatchMatMulV2", [a, b], {"adj_x": bool(transpose_a or adjoint_a),
                                                    "adj_y": bool(transpose_b or adjoint_b),
                                                    "T": a.dtype.base_dtype}, name=scope)


register_op("Conj", lambda inputs, attrs, name: [
    (check_dtype("Conj", "input", inputs[0]._dtype, _dtypes.COMPLEX) or inputs[0]._dtype.base_dtype,
     inputs[0]._shape)])


def conj(x, name: str | None = None) -> Tensor:
    """The complex conjugate (tf.conj); a real or integer tensor is returned as it is, as in TF.

        tf.conj(tf.constant([1 + 2j]))   # [1 - 2j]
    """
    if isinstance(x, Tensor) and (x.dtype.is_floating or x.dtype.is_integer):
        return x
    with name_scope(name, "Conj", [x]) as scope:
        x = convert_to_tensor(x, name="x")
        if x.dtype.is_complex:
            return apply_op_1("Conj", [x], {"T": x.dtype.base_dtype}, name=scope)
        if x.dtype.is_floating or x.dtype.is_integer:
            return x
        raise TypeError(f"Expected numeric or variant tensor, got dtype {x.dtype!r}")


# --- AddN, Cast, Range, Rank -------------------------------------------------------------------------------------
def _add_n_infer(inputs, attrs, name):
    return [(check_same_dtype("AddN", inputs, ("inputs",)), merged_shape("AddN", name, inputs))]


register_op("AddN", _add_n_infer)


def add_n(inputs, name: str | None = None) -> Tensor:
    """Elementwise sum of a list of same-shape tensors (tf.add_n)."""
    if not inputs or not isinstance(inputs, (list, tuple)):
        raise ValueError("inputs must be a non-empty list of tensors with the same dtype and shape")
    inputs = to_tensors(inputs, arg_name="inputs")
    if len(inputs) == 1:  # TF: one input is returned as it is (an Identity when named)
        return inputs[0] if name is None else identity(inputs[0], name=name)
    return apply_op_1("AddN", inputs, {"N": len(inputs), "T": inputs[0].dtype.base_dtype}, name=name or "AddN")


register_op("Cast", lambda inputs, attrs, name: [(attrs["DstT"], inputs[0]._shape)])


def cast(x, dtype, name: str | None = None) -> Tensor:
    """Convert to `dtype` (tf.cast); returns `x` itself when it already has that dtype."""
    dtype = _dtypes.as_dtype(dtype).base_dtype
    x = convert_to_tensor(x)
    if x.dtype.base_dtype is dtype:
        return x
    return apply_op_1("Cast", [x], {"SrcT": x.dtype.base_dtype, "DstT": dtype, "T": x.dtype.base_dtype},
                      name=name or "Cast")


def to_float(x, name: str = "ToFloat") -> Tensor:
    """cast(x, float32) under TF1's op name "ToFloat" (tf.to_float)."""
    return cast(x, _dtypes.float32, name=name)


def to_double(x, name: str = "ToDouble") -> Tensor:
    """cast(x, float64), op named "ToDouble" (tf.to_double)."""
    return cast(x, _dtypes.float64, name=name)


def to_int32(x, name: str = "ToInt32") -> Tensor:
    """cast(x, int32), op named "ToInt32" (tf.to_int32); floats are truncated toward zero."""
    return cast(x, _dtypes.int32, name=name)


def to_int64(x, name: str = "ToInt64") -> Tensor:
    """cast(x, int64), op named "ToInt64" (tf.to_int64)."""
    return cast(x, _dtypes.int64, name=name)


def saturate_cast(value, dtype, name: str | None = None) -> Tensor:
    """cast(value, dtype) after clipping value to dtype's range, so out-of-range values saturate instead of wrapping
    (tf.saturate_cast): saturate_cast([300., -5.], tf.uint8) -> [255, 0]."""
    with name_scope(name, "saturate_cast", [value]) as scope:
        value = convert_to_tensor(value, name="value")
        dtype = _dtypes.as_dtype(dtype).base_dtype
        if value.dtype.min < dtype.min:
            value = maximum(value, convert_to_tensor(dtype.min, dtype=value.dtype.base_dtype, name="min"))
        if value.dtype.max > dtype.max:
            value = minimum(value, convert_to_tensor(dtype.max, dtype=value.dtype.base_dtype, name="max"))
        return cast(value, dtype, name=scope)


def _range_infer(inputs, attrs, name):
    values = [constant_value(t) for t in inputs]
    dtype = check_same_dtype("Range", inputs, ("start", "limit", "delta"))
    if any(v is None for v in values):
        return [(dtype, unknown_shape(1))]
    start, limit, delta = (v.item() for v in values)
    if delta == 0:
        raise ValueError(f"Requires delta != 0 for '{name}' (op: 'Range')")
    return [(dtype, TensorShape([len(np.arange(start, limit, delta))]))]


register_op("Range", _range_infer)


def range(start, limit=None, delta=1, dtype=None, name: str = "range") -> Tensor:  # noqa: A001 - TF's name
    """[start, start + delta, ...) up to `limit` (tf.range)."""
    if limit is None:
        start, limit = 0, start
    with name_scope(name) as scope:
        named = ((start, "start"), (limit, "limit"), (delta, "delta"))
        values = [v if isinstance(v, Tensor) else convert_to_tensor(v, dtype=dtype, name=n) for v, n in named]
        target = _dtypes.as_dtype(dtype).base_dtype if dtype is not None else \
            max((t.dtype.base_dtype for t in values), key=lambda d: (d.is_floating, d.size))
        tensors = [t if t.dtype.base_dtype is target else cast(t, target) for t in values]  # TF's promotion
        return apply_op_1("Range", tensors, {"Tidx": target}, name=scope)


def _cumulative_infer(op_type):
    def infer(inputs, attrs, name):
        x = inputs[0]
        check_dtype(op_type, "x", x._dtype, NUMERIC)
        return [(x._dtype.base_dtype, x._shape)]
    return infer


for _op_type in ("Cumsum", "Cumprod"):
    register_op(_op_type, _cumulative_infer(_op_type))


def _cumulative(op_type: str, x, axis, exclusive: bool, reverse: bool, name: str | None) -> Tensor:
    with name_scope(name, op_type, [x]) as scope:
        x = convert_to_tensor(x, name="x")
        return apply_op_1(op_type, [x, int_const(axis, name="axis")], {"exclusive": bool(exclusive),
                                                                       "reverse": bool(reverse),
                                                                       "T": x.dtype.base_dtype}, name=scope)


def cumsum(x, axis=0, exclusive: bool = False, reverse: bool = False, name: str | None = None) -> Tensor:
    """Running sums along `axis` (tf.cumsum); `exclusive` leaves out each element itself, `reverse` runs backwards."""
    return _cumulative("Cumsum", x, axis, exclusive, reverse, name)


def cumprod(x, axis=0, exclusive: bool = False, reverse: bool = False, name: str | None = None) -> Tensor:
    """Running products along `axis` (tf.cumprod)."""
    return _cumulative("Cumprod", x, axis, exclusive, reverse, name)


# --- Python operators on Tensor -------------------------------------------------------------------------------
def _install_operators() -> None:
    binary = {"add": ("Add", "add"), "sub": ("Sub", "sub"), "mul": ("Mul", "mul"), "pow": ("Pow", "pow"),
              "floordiv": ("FloorDiv", "floordiv"), "mod": ("FloorMod", "mod")}
    for dunder, (op_type, scope) in binary.items():
        def forward(self, other, _t=op_type, _s=scope, _reflected=f"__r{dunder}__"):
            if isinstance(other, CompositeTensor) and hasattr(type(other), _reflected):
                return NotImplemented  # a SparseTensor's own reflected operator; IndexedSlices become dense here
            return build_binary(_t, self, other, None, _s)

        def reverse(self, other, _t=op_type, _s=scope):
            return build_binary(_t, other, self, None, _s)
        setattr(Tensor, f"__{dunder}__", forward)
        setattr(Tensor, f"__r{dunder}__", reverse)
    Tensor.__matmul__ = lambda self, other: matmul(self, other, name="matmul")
    Tensor.__rmatmul__ = lambda self, other: matmul(other, self, name="matmul")
    Tensor.__truediv__ = lambda self, other: truediv(self, other)
    Tensor.__rtruediv__ = lambda self, other: truediv(other, self)
    Tensor.__neg__ = lambda self: negative(self, name="Neg")
    Tensor.__abs__ = lambda self: abs(self, name="Abs")
    Tensor.__lt__ = lambda self, other: build_binary("Less", self, other, None)
    Tensor.__le__ = lambda self, other: build_binary("LessEqual", self, other, None)
    Tensor.__gt__ = lambda self, other: build_binary("Greater", self, other, None)
    Tensor.__ge__ = lambda self, other: build_binary("GreaterEqual", self, other, None)


_install_operators()
