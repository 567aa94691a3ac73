"""Gradient functions of the math ops (TF's math_grad.py): `fn(op, *output_grads) -> one gradient per input`.

Formulas follow TF 1.x; where every shape is known when the graph is built, the shape arithmetic TF does with
Shape/BroadcastGradientArgs ops is done here instead (as TF 2 does), so a training step runs fewer ops.
"""
from __future__ import annotations

import numpy as np

from adplace.framework import dtypes as _dtypes
from adplace.framework.conversion import convert_to_tensor
from adplace.framework.indexed_slices import IndexedSlices
from adplace.framework.operation import Tensor
from adplace.framework.registry import NotDifferentiable, RegisterGradient
from adplace.framework.tensor_shape import broadcast_reduction_axes
from adplace.ops import array_ops, broadcast_ops, logical_ops, math_ops, reduction_ops
from adplace.ops.array_ops import reshape, shape, shape_internal
from adplace.ops.selection_ops import where
from adplace.ops.constant_op import constant
from adplace.ops.math_ops import BINARY_OPS, COMPARISON_OPS, UNARY_OPS, cast, matmul, multiply, negative, truediv
from adplace.ops.op_builder import apply_op_1, constant_value
from adplace.ops.reduction_ops import reduce_sum


def static_dims(t: Tensor) -> tuple | None:
    """The shape of `t` when every dimension is known, else None."""
    dims = t._shape.as_tuple()
    return None if dims is None or None in dims else dims


def _const_like(value, t: Tensor) -> Tensor:
    return constant(value, dtype=t.dtype.base_dtype)


# --- broadcasting ------------------------------------------------------------------------------------------------
def _sum_to(grad: Tensor | None, axes, target_shape) -> Tensor | None:
    """Sum `grad` over `axes` and reshape it to `target_shape` (static tuple or a shape tensor)."""
    if grad is None:
        return None
    if isinstance(target_shape, tuple):
        if axes:
            grad = reduce_sum(grad, list(axes))
        return grad if grad._shape.as_tuple() == target_shape else reshape(grad, list(target_shape))
    return reshape(reduce_sum(grad, axes), target_shape)


def unbroadcast(x: Tensor, y: Tensor, gx: Tensor | None, gy: Tensor | None) -> list:
    """Undo the broadcasting of x op y: each gradient summed over the axes its input was broadcast along."""
    sx, sy = static_dims(x), static_dims(y)
    if sx is not None and sy is not None:
        rx, ry = broadcast_reduction_axes(sx, sy)
        return [_sum_to(gx, rx, sx), _sum_to(gy, ry, sy)]
    shape_x, shape_y = shape(x), shape(y)
    rx, ry = broadcast_ops.broadcast_gradient_args(shape_x, shape_y)
    return [_sum_to(gx, rx, shape_x), _sum_to(gy, ry, shape_y)]


def sum_to_shape_of(grad: Tensor, x: Tensor) -> Tensor:
    """`grad`, of a shape `x` was broadcast to, summed back to x's shape."""
    sx, sg = static_dims(x), static_dims(grad)
    if sx is not None and sg is not None:
        return _sum_to(grad, broadcast_reduction_axes(sx, sg)[0], sx)
    shape_x = shape(x)
    return _sum_to(grad, broadcast_ops.broadcast_gradient_args(shape_x, shape(grad))[0], shape_x)


# --- unary -------------------------------------------------------------------------------------------------------
_WRITTEN_AS_OPERATOR = {"Abs", "Exp", "Log", "Log1p", "Sin", "Tan"}  # TF writes `grad * f(x)`: the product is "mul"


def _register_unary(op_type: str, local_grad) -> None:
    """Register grad * local_grad(x, y) for an elementwise op with input x and output y, named as TF names it."""
    name = "mul" if op_type in _WRITTEN_AS_OPERATOR else None
    RegisterGradient(op_type)(lambda op, grad: [multiply(grad, local_grad(op._inputs[0], op._outputs[0]), name=name)])


_UNARY_GRADS = {
    "Abs": lambda x, y: math_ops.sign(x),
    "Square": lambda x, y: multiply(x, _const_like(2, x)),
    "Exp": lambda x, y: y,
    "Log": lambda x, y: math_ops.reciprocal(x),
    "Log1p": lambda x, y: math_ops.reciprocal(1 + x),
    "Sin": lambda x, y: math_ops.cos(x),
    "Tan": lambda x, y: math_ops.square(math_ops.reciprocal(math_ops.cos(x))),
    "Atan": lambda x, y: math_ops.reciprocal(1 + math_ops.square(x)),
    "Asin": lambda x, y: math_ops.rsqrt(1 - math_ops.square(x)),
    "Acos": lambda x, y: negative(math_ops.rsqrt(1 - math_ops.square(x))),
    "Sinh": lambda x, y: math_ops.cosh(x),
    "Cosh": lambda x, y: math_ops.sinh(x),
    "Asinh": lambda x, y: math_ops.reciprocal(math_ops.cosh(y)),
    "Acosh": lambda x, y: math_ops.reciprocal(math_ops.sinh(y)),
    "Atanh": lambda x, y: math_ops.reciprocal(1 - math_ops.square(x)),
    "Expm1": lambda x, y: math_ops.exp(x),
    "Erf": lambda x, y: _const_like(2 / np.sqrt(np.pi), x) * math_ops.exp(negative(math_ops.square(x))),
    "Erfc": lambda x, y: _const_like(-2 / np.sqrt(np.pi), x) * math_ops.exp(negative(math_ops.square(x))),
    "Lgamma": lambda x, y: math_ops.digamma(x),
    "Digamma": lambda x, y: math_ops.polygamma(_const_like(1, x), x),
}
for _op_type, _local in _UNARY_GRADS.items():
    _register_unary(_op_type, _local)
RegisterGradient("Cos")(lambda op, grad: [multiply(negative(grad), math_ops.sin(op._inputs[0]), name="mul")])  # -grad*sin
RegisterGradient("Neg")(lambda op, grad: [negative(grad)])
RegisterGradient("Sign")(lambda op, grad: [array_ops.zeros_like(op._inputs[0])])
RegisterGradient("Floor")(lambda op, grad: [None])
RegisterGradient("Ceil")(lambda op, grad: [None])
RegisterGradient("Round")(lambda op, grad: [None])
RegisterGradient("Rint")(lambda op, grad: [None])


# --- unary ops whose gradient is an op of its own, fed the forward output: one kernel instead of a chain -----------
_GRAD_OPS = {"Tanh": math_ops.tanh_grad, "Sigmoid": math_ops.sigmoid_grad, "Sqrt": math_ops.sqrt_grad,
             "Rsqrt": math_ops.rsqrt_grad, "Reciprocal": math_ops.reciprocal_grad}
for _op_type, _grad_op in _GRAD_OPS.items():
    RegisterGradient(_op_type)(lambda op, grad, _grad_op=_grad_op: [_grad_op(op._outputs[0], grad)])
RegisterGradient("Relu")(lambda op, grad: [math_ops.relu_grad(grad, op._outputs[0])])
assert set(UNARY_OPS) == set(_UNARY_GRADS) | set(_GRAD_OPS) | {"Cos", "Neg", "Sign", "Floor", "Ceil", "Round", "Rint",
                                                               "Relu"}


# Their second derivatives, as TF's math_grad.py/nn_grad.py write them (a: the forward output, b: its gradient).
def _minus_two_b_a_grad_grad(grad_op):
    """TanhGrad's and ReciprocalGrad's second derivative, which TF writes alike: (grad * -2 * b * a, grad_op(a, grad))."""
    def grad_fn(op, grad):
        a, b = op._inputs
        return [grad * -2.0 * b * a, grad_op(a, grad)]
    return grad_fn


RegisterGradient("TanhGrad")(_minus_two_b_a_grad_grad(math_ops.tanh_grad))
RegisterGradient("ReciprocalGrad")(_minus_two_b_a_grad_grad(math_ops.reciprocal_grad))


@RegisterGradient("SigmoidGrad")
def _sigmoid_grad_grad(op, grad):
    a, b = op._inputs
    gb = grad * b
    return [gb - 2.0 * gb * a, math_ops.sigmoid_grad(a, grad)]


@RegisterGradient("SqrtGrad")
def _sqrt_grad_grad(op, grad):
    ga = grad / op._inputs[0]
    return [-ga * op._outputs[0], 0.5 * ga]  # SqrtGrad(a, b) = 0.5 * b / a is its own output y: d/da = -y / a


@RegisterGradient("RsqrtGrad")
def _rsqrt_grad_grad(op, grad):
    a, b = op._inputs
    return [-1.5 * grad * b * math_ops.square(a), math_ops.rsqrt_grad(a, grad)]


@RegisterGradient("ReluGrad")
def _relu_grad_grad(op, grad):
    x = op._inputs[1]  # ReluGrad(gradients, features): linear in the gradients, flat in the features
    return [math_ops.relu_grad(grad, x), array_ops.zeros(shape=shape(x), dtype=x.dtype)]


# --- binary ------------------------------------------------------------------------------------------------------
def _register_binary(op_type: str, local_grads) -> None:
    """Register a broadcasting binary op's gradient from `local_grads(x, y, z, grad) -> (gx, gy)` before reduction."""
    def grad_fn(op, grad):
        x, y = op._inputs
        if isinstance(grad, IndexedSlices):  # (a gather of `m + 0.0`): dense, as TF's binary gradients make it
            grad = convert_to_tensor(grad)
        return unbroadcast(x, y, *local_grads(x, y, op._outputs[0], grad))
    RegisterGradient(op_type)(grad_fn)


def _pow_grads(x, y, z, grad):
    gx = multiply(grad, multiply(y, math_ops.pow(x, math_ops.subtract(y, _const_like(1, y)))))
    log_x = where(math_ops.greater(x, _const_like(0, x)), math_ops.log(x), array_ops.zeros_like(x))
    return gx, multiply(grad, multiply(z, log_x))


def _extremum_grads(selector):
    def local(x, y, z, grad):
        zeros = array_ops.zeros_like(grad)
        x_mask = selector(x, y)
        return where(x_mask, grad, zeros), where(x_mask, zeros, grad)
    return local


def _squared_difference_grads(x, y, z, grad):
    gx = multiply(_const_like(2, grad), multiply(grad, math_ops.subtract(x, y)))
    return gx, negative(gx)


_BINARY_GRADS = {
    "Add": lambda x, y, z, grad: (grad, grad),
    "Sub": lambda x, y, z, grad: (grad, negative(grad)),
    "Mul": lambda x, y, z, grad: (multiply(grad, y), multiply(x, grad)),
    "RealDiv": lambda x, y, z, grad: (truediv(grad, y), multiply(grad, truediv(truediv(negative(x), y), y))),
    "FloorMod": lambda x, y, z, grad: (grad, multiply(grad, negative(math_ops.floordiv(x, y)))),
    "Pow": _pow_grads,
    "Maximum": _extremum_grads(math_ops.greater_equal),
    "Minimum": _extremum_grads(math_ops.less_equal),
    "SquaredDifference": _squared_difference_grads,
    "Atan2": lambda y, x, z, grad: _atan2_grads(y, x, grad),
    "Polygamma": lambda a, x, z, grad: (None, multiply(grad, math_ops.polygamma(a + 1, x))),
    "DivNoNan": lambda x, y, z, grad: (math_ops.div_no_nan(grad, y),
                                       multiply(grad, math_ops.div_no_nan(math_ops.div_no_nan(negative(x), y), y))),
}


def _atan2_grads(y, x, grad):
    """d atan2(y, x) = (x dy - y dx) / (x^2 + y^2)."""
    scaled = truediv(grad, math_ops.add(math_ops.square(x), math_ops.square(y)))
    return multiply(x, scaled), multiply(negative(y), scaled)


for _op_type, _local in _BINARY_GRADS.items():
    _register_binary(_op_type, _local)
for _op_type in ("FloorDiv", "TruncateDiv", "TruncateMod"):
    RegisterGradient(_op_type)(lambda op, grad: [None, None])
assert set(BINARY_OPS) == set(_BINARY_GRADS) | {"FloorDiv", "TruncateDiv", "TruncateMod"}
for _op_type in COMPARISON_OPS + ("Range",):
    NotDifferentiable(_op_type)


# --- matmul ------------------------------------------------------------------------------------------------------
RegisterGradient("Conj")(lambda op, grad: [math_ops.conj(grad)])


@RegisterGradient("MatMul")
def _matmul_grad(op, grad):
    a, b = math_ops.conj(op._inputs[0]), math_ops.conj(op._inputs[1])  # as TF: a no-op for real inputs
    ta, tb = op._attrs["transpose_a"], op._attrs["transpose_b"]
    if not ta and not tb:
        return [matmul(grad, b, transpose_b=True), matmul(a, grad, transpose_a=True)]
    if not ta:
        return [matmul(grad, b), matmul(grad, a, transpose_a=True)]
    if not tb:
        return [matmul(b, grad, transpose_b=True), matmul(a, grad)]
    return [matmul(b, grad, transpose_a=True, transpose_b=True), matmul(grad, a, transpose_a=True, transpose_b=True)]


def _batch_matmul(x: Tensor, y: Tensor, adj_x: bool, adj_y: bool) -> Tensor:
    return apply_op_1("BatchMatMulV2", [x, y], {"adj_x": adj_x, "adj_y": adj_y, "T": x.dtype.base_dtype},
                      name="MatMul")


@RegisterGradient("BatchMatMulV2")
def _batch_matmul_grad(op, grad):
    x, y = op._inputs
    adj_x, adj_y = op._attrs["adj_x"], op._attrs["adj_y"]
    if not adj_x and not adj_y:
        gx, gy = _batch_matmul(grad, y, False, True), _batch_matmul(x, grad, True, False)
    elif not adj_x:
        gx, gy = _batch_matmul(grad, y, False, False), _batch_matmul(grad, x, True, False)
    elif not adj_y:
        gx, gy = _batch_matmul(y, grad, False, True), _batch_matmul(x, grad, False, False)
    else:
        gx, gy = _batch_matmul(y, grad, True, True), _batch_matmul(grad, x, True, True)
    dx, dy = x._shape.as_tuple(), y._shape.as_tuple()
    if dx is not None and dy is not None and None not in dx[:-2] + dy[:-2] and dx[:-2] == dy[:-2]:
        return [gx, gy]  # same batch dims: nothing was broadcast
    sx, sy = shape(x), shape(y)
    rx, ry = broadcast_ops.broadcast_gradient_args(sx[:-2], sy[:-2])
    return [_sum_to(gx, rx, sx), _sum_to(gy, ry, sy)]


# --- reductions --------------------------------------------------------------------------------------------------
def _static_axes(op) -> list | None:
    """The reduced axes, normalised, when the input's rank and the axes are known when the graph is built."""
    x, axes_t = op._inputs
    rank, axes = x._shape.ndims, constant_value(axes_t)
    if rank is None or axes is None:
        return None
    return sorted({int(a) % rank for a in np.reshape(axes, [-1])}) if rank else []


def reduced_shape(op):
    """(kept-dims shape, tile multiples) of a reduction's input: static lists when known, else tensors."""
    x, axes_t = op._inputs
    dims, axes = static_dims(x), _static_axes(op)
    if dims is not None and axes is not None:
        kept = [1 if i in axes else d for i, d in enumerate(dims)]
        return kept, [d if i in axes else 1 for i, d in enumerate(dims)]
    partial = x._shape.as_tuple()
    if axes is not None and all(d is not None for i, d in enumerate(partial) if i not in axes):
        kept = [1 if i in axes else d for i, d in enumerate(partial)]  # static: every unknown dim is reduced
        multiples = shape(x)
        return kept, multiples if all(k == 1 for k in kept) else math_ops.floordiv(multiples, kept)
    input_shape, reduced = _reduced_mask(x, axes_t)
    kept = where(reduced, array_ops.ones_like(input_shape), input_shape)
    return kept, math_ops.floordiv(input_shape, math_ops.maximum(kept, 1))


def _reduced_mask(x: Tensor, axes_t: Tensor) -> tuple[Tensor, Tensor]:
    """(shape(x), a bool vector over x's axes that is True where a reduction reduces), computed at run time."""
    input_shape = shape(x)
    rank = array_ops.size(input_shape)
    axes_t = math_ops.floormod(math_ops.add(reshape(cast(axes_t, _dtypes.int32), [-1]), rank), rank)
    hit = math_ops.equal(array_ops.expand_dims(math_ops.range(0, rank), 1), array_ops.expand_dims(axes_t, 0))
    return input_shape, math_ops.greater(reduce_sum(cast(hit, _dtypes.int32), 1), 0)


def _reduces_every_dim_in_order(op) -> bool:
    """TF's fast path of _SumGrad: the input's rank is known and the axes are exactly 0..rank-1 (axis=None)."""
    x, axes_t = op._inputs
    axes = constant_value(axes_t)
    return x._shape.ndims is not None and axes is not None and np.array_equal(axes, np.arange(x._shape.ndims))


@RegisterGradient("Sum")
def _sum_grad(op, grad):
    x = op._inputs[0]
    if _reduces_every_dim_in_order(op):  # as TF: Reshape to all ones, Tile by a Const shape (or a Shape op)
        dims = x._shape.as_list()
        grad = reshape(grad, [1] * len(dims))
        return [broadcast_ops.tile(grad, constant(dims, dtype=_dtypes.int32) if None not in dims else shape(x)), None]
    kept, multiples = reduced_shape(op)
    grad = reshape(grad, kept)
    if isinstance(multiples, list) and all(m == 1 for m in multiples):
        return [grad, None]
    return [broadcast_ops.tile(grad, multiples), None]


@RegisterGradient("Mean")
def _mean_grad(op, grad):
    sum_grad = _sum_grad(op, grad)[0]
    in_dims, out_dims = static_dims(op._inputs[0]), static_dims(op._outputs[0])
    if in_dims is not None and out_dims is not None:
        factor = _const_like(int(np.prod(in_dims)) // max(int(np.prod(out_dims)), 1), sum_grad)
    elif out_dims is not None:  # e.g. a mean to a scalar of a batch of unknown size: the input's size
        out_size = max(int(np.prod(out_dims)), 1)
        factor = array_ops.size(op._inputs[0])
        factor = cast(factor if out_size == 1 else math_ops.floordiv(factor, out_size), sum_grad.dtype.base_dtype)
    else:
        factor = math_ops.floordiv(reduction_ops.reduce_prod(shape(op._inputs[0])),
                                   math_ops.maximum(reduction_ops.reduce_prod(shape(op._outputs[0])), 1))
        factor = cast(factor, sum_grad.dtype.base_dtype)
    return [truediv(sum_grad, factor), None]


def _extremum_reduction_grad(op, grad):
    """Max/Min: the gradient goes to the selected elements, split evenly between ties (as TF)."""
    x, axes_t = op._inputs
    kept, _ = reduced_shape(op)
    y = reshape(op._outputs[0], kept)
    grad = reshape(grad, kept)
    indicators = cast(math_ops.equal(y, x), grad.dtype.base_dtype)
    num_selected = reshape(reduce_sum(indicators, axes_t), kept)
    return [multiply(truediv(indicators, num_selected), grad), None]


RegisterGradient("Max")(_extremum_reduction_grad)
RegisterGradient("Min")(_extremum_reduction_grad)


@RegisterGradient("EuclideanNorm")
def _euclidean_norm_grad(op, grad):
    """d|x|/dx = x / |x|, with the norm and `grad` reshaped to keep the reduced axes."""
    output = op._outputs[0]
    if not op._attrs["keep_dims"]:
        kept, _ = reduced_shape(op)
        output, grad = reshape(output, kept), reshape(grad, kept)
    return [truediv(op._inputs[0], truediv(output, grad)), None]


def _prod_permutation(op) -> tuple:
    """(perm moving the reduced axes first, its inverse, reduced element count, other element count)."""
    x, axes_t = op._inputs
    axes = _static_axes(op)
    if axes is not None:
        rank = x._shape.ndims
        input_shape = shape(x)
        reduced = constant(np.isin(np.arange(rank), axes))
        perm = axes + [i for i in range(rank) if i not in axes]
        inverse = list(np.argsort(perm))
    else:  # rank or axes known only at run time (TF's setdiff1d path)
        input_shape, reduced = _reduced_mask(x, axes_t)
        not_reduced = math_ops.equal(reduced, False)
        perm = array_ops.concat([reshape(cast(where(m), _dtypes.int32), [-1]) for m in (reduced, not_reduced)], 0)
        inverse = array_ops.invert_permutation(perm)
    ones = array_ops.ones_like(input_shape)
    return (perm, inverse, reduction_ops.reduce_prod(where(reduced, input_shape, ones)),
            reduction_ops.reduce_prod(where(reduced, ones, input_shape)))


@RegisterGradient("Prod")
def _prod_grad(op, grad):
    """The product of all other elements, via exclusive cumulative products both ways (exact with zeros, as TF)."""
    x = op._inputs[0]
    kept, multiples = reduced_shape(op)
    grad = broadcast_ops.tile(reshape(grad, kept), multiples)
    perm, inverse, reduced_num, other_num = _prod_permutation(op)
    permuted = array_ops.transpose(x, perm)
    flat = reshape(permuted, array_ops.stack([reduced_num, other_num]))
    left = math_ops.cumprod(flat, axis=0, exclusive=True)
    right = math_ops.cumprod(flat, axis=0, exclusive=True, reverse=True)
    y = reshape(multiply(left, right), shape(permuted))
    out = multiply(grad, array_ops.transpose(y, inverse))
    return [reshape(out, shape_internal(x)), None]


@RegisterGradient("Cumsum")
def _cumsum_grad(op, grad):
    attrs = op._attrs
    return [math_ops.cumsum(grad, op._inputs[1], exclusive=attrs["exclusive"], reverse=not attrs["reverse"]), None]


@RegisterGradient("Cumprod")
def _cumprod_grad(op, grad):
    x, axis = op._inputs
    exclusive, reverse = op._attrs["exclusive"], op._attrs["reverse"]
    prod = math_ops.cumprod(x, axis, exclusive=exclusive, reverse=reverse)
    out = math_ops.cumsum(multiply(prod, grad), axis, exclusive=exclusive, reverse=not reverse)
    return [truediv(out, x), None]


# --- AddN, Cast ----------------------------------------------------------------------------------------------------
RegisterGradient("AddN")(lambda op, grad: [grad] * len(op._inputs))


@RegisterGradient("Cast")
def _cast_grad(op, grad):
    src, dst = op._attrs["SrcT"], op._attrs["DstT"]
    differentiable = _dtypes.FLOATING | _dtypes.COMPLEX
    return [cast(grad, src) if src in differentiable and dst in differentiable else None]


for _op_type in (("ArgMax", "ArgMin", "LogicalNot", "Invert", "Any", "All") + logical_ops.LOGICAL_BINARY_OPS +
                 logical_ops.BITWISE_BINARY_OPS + math_ops.PREDICATE_OPS):
    NotDifferentiable(_op_type)
