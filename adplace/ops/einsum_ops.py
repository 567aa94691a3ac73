"""tf.einsum (an Einsum op of one or two inputs, longer equations contracted pairwise) and tf.tensordot (TF's
composite of transpose, reshape and MatMul).

    tf.einsum("ij,jk->ik", a, b)        # a @ b; gradients are einsums too: "ik,jk->ij" for a
    tf.tensordot(a, b, [[1], [0]])      # the same product, as Tensordot/MatMul between two reshapes
"""
from __future__ import annotations

import math

from adplace.framework import dtypes as _dtypes
from adplace.framework.conversion import convert_to_tensor
from adplace.framework.default_graph import name_scope
from adplace.framework.operation import Tensor
from adplace.framework.registry import RegisterGradient, register_op
from adplace.framework.tensor_shape import TensorShape, dims_text, unknown_shape
from adplace.ops import array_ops, math_ops, reduction_ops, slicing_ops
from adplace.ops.math_grad import sum_to_shape_of
from adplace.ops.op_builder import apply_op_1, broadcast_dims, check_dtype, check_same_dtype, shapes_text

EINSUM_TYPES = _dtypes.FLOATING | _dtypes.COMPLEX | {_dtypes.int32, _dtypes.int64}
ELLIPSIS = "..."


# --- equations ----------------------------------------------------------------------------------------------------
def parse_equation(equation: str, num_inputs: int) -> tuple[list[str], str]:
    """(input subscripts, output subscripts) of an einsum equation; an implicit output lists the labels that appear
    once, in alphabetical order, after any ellipsis (NumPy's rule). Each '...' is kept as the text '...'."""
    equation = equation.replace(" ", "")
    lhs, arrow, rhs = equation.partition("->")
    inputs = lhs.split(",")
    if len(inputs) != num_inputs:
        raise ValueError(f"Input equation '{equation}' has {len(inputs)} input subscripts but {num_inputs} "
                         f"tensors were given")
    for sub in inputs + ([rhs] if arrow else []):
        if not sub.replace(ELLIPSIS, "").isalpha() and sub.replace(ELLIPSIS, ""):
            raise ValueError(f"Subscripts '{sub}' of einsum equation '{equation}' must be letters and at most one "
                             f"'...'")
        if sub.count(ELLIPSIS) > 1:
            raise ValueError(f"Subscripts '{sub}' of einsum equation '{equation}' have more than one '...'")
    if not arrow:
        letters = "".join(s.replace(ELLIPSIS, "") for s in inputs)
        once = "".join(sorted(c for c in set(letters) if letters.count(c) == 1))
        rhs = (ELLIPSIS if any(ELLIPSIS in s for s in inputs) else "") + once
    unknown = set(rhs.replace(ELLIPSIS, "")) - set("".join(inputs))
    if unknown:
        raise ValueError(f"Output subscripts of einsum equation '{equation}' name {sorted(unknown)}, which no input "
                         f"has")
    return inputs, rhs


def _labels(sub: str) -> list[str]:
    """A subscript as a list of labels, '...' being one."""
    before, dots, after = sub.partition(ELLIPSIS)
    return list(before) + ([ELLIPSIS] if dots else []) + list(after)


def _einsum_infer(inputs, attrs, name):
    dtype = check_same_dtype("Einsum", inputs, ("inputs",))
    check_dtype("Einsum", "inputs", dtype, EINSUM_TYPES)
    subs, out_sub = parse_equation(attrs["equation"], len(inputs))
    sizes: dict = {}
    batch: tuple | None = ()
    for t, sub in zip(inputs, subs):
        dims, labels = t._shape.as_tuple(), _labels(sub)
        named = [c for c in labels if c != ELLIPSIS]
        if dims is None:
            if ELLIPSIS in labels:
                batch = None
            continue
        if len(dims) < len(named) or (ELLIPSIS not in labels and len(dims) != len(named)):
            raise ValueError(f"Expected input of rank {len(named)} for subscripts '{sub}' but got rank {len(dims)} "
                             f"for '{name}' (op: 'Einsum') with input shapes: {shapes_text(inputs)}.")
        at = 0
        for c in labels:
            if c == ELLIPSIS:
                width = len(dims) - len(named)
                part = dims[at:at + width]
                batch = None if batch is None else broadcast_dims(batch, part, name, "Einsum", inputs)
                at += width
                continue
            d, known = dims[at], sizes.get(c)
            if d is not None and known is not None and d != known:
                raise ValueError(f"Expected dimension {known} at axis {at} of the input shaped {dims_text(dims)} but got "
                                 f"dimension {d} for '{name}' (op: 'Einsum') with input shapes: "
                                 f"{shapes_text(inputs)}.")
            sizes[c] = known if d is None else d
            at += 1
    out = []
    for c in _labels(out_sub):
        if c == ELLIPSIS:
            if batch is None:
                return [(dtype, unknown_shape())]
            out.extend(batch)
        else:
            out.append(sizes.get(c))
    return [(dtype, TensorShape(out))]


register_op("Einsum", _einsum_infer)


def _einsum_op(equation: str, inputs: list, name: str | None) -> Tensor:
    return apply_op_1("Einsum", inputs, {"equation": equation, "N": len(inputs), "T": inputs[0].dtype.base_dtype},
                      name=name or "Einsum")


def _pair_output(left: str, right: str, later: str) -> str:
    """Subscripts of the contraction of two operands that keeps what later operands or the output still need."""
    keep = [c for c in _labels(left) + _labels(right) if c == ELLIPSIS or c in later]
    return "".join(dict.fromkeys(keep))


def einsum(equation: str, *inputs, **kwargs) -> Tensor:
    """Tensor contraction written in Einstein notation (tf.einsum).

        tf.einsum("ij,jk->ik", a, b)    # matmul;  tf.einsum("ij->ji", a): transpose;  "bij,bjk->bik": batch matmul
    """
    name = kwargs.pop("name", None)
    if kwargs:
        raise TypeError(f"invalid keyword arguments for this function: {', '.join(sorted(kwargs))}. Expected: name")
    if not inputs:
        raise ValueError("einsum needs at least one input tensor")
    subs, out_sub = parse_equation(equation, len(inputs))
    with name_scope(name, "einsum", list(inputs)) as scope:
        tensors = [convert_to_tensor(x, name="inputs") for x in inputs]
        if len(tensors) > 1:
            tensors[1:] = [convert_to_tensor(t, dtype=tensors[0].dtype.base_dtype) for t in tensors[1:]]
        while len(tensors) > 2:  # contract left to right, keeping the labels still needed
            later = "".join(subs[2:]) + out_sub
            mid = _pair_output(subs[0], subs[1], later)
            tensors[:2] = [_einsum_op(f"{subs[0]},{subs[1]}->{mid}", tensors[:2], None)]
            subs[:2] = [mid]
        return _einsum_op(f"{','.join(subs)}->{out_sub}", tensors, scope)


@RegisterGradient("Einsum")
def _einsum_grad(op, grad):
    """Each input's gradient is the einsum of the output gradient with the other input, onto the input's subscripts
    (labels only that input sums over are broadcast back; a broadcast '...' is summed back)."""
    subs, out_sub = parse_equation(op.get_attr("equation"), len(op.inputs))
    grads = []
    for i, (x, sub) in enumerate(zip(op.inputs, subs)):
        labels = _labels(sub)
        named = [c for c in labels if c != ELLIPSIS]
        if len(set(named)) != len(named):
            raise LookupError(f"No gradient for Einsum '{op.get_attr('equation')}' (op '{op.name}'): input {i} "
                              f"repeats a label; take diagonals with tf.matrix_diag_part first")
        others = [(t, s) for j, (t, s) in enumerate(zip(op.inputs, subs)) if j != i]
        reachable = out_sub + "".join(s for _, s in others)
        kept = "".join(c for c in labels if c == ELLIPSIS or c in reachable)
        g = _einsum_op(",".join([out_sub] + [s for _, s in others]) + "->" + kept, [grad] + [t for t, _ in others],
                       None)
        if kept != "".join(labels):  # labels only this input had were summed away: broadcast the gradient back
            g = _broadcast_back(g, x, labels, reachable)
        grads.append(sum_to_shape_of(g, x) if ELLIPSIS in labels else g)
    return grads


def _broadcast_back(g: Tensor, x: Tensor, labels: list, reachable: str) -> Tensor:
    """`g`, missing the axes of the labels of x outside `reachable`, expanded there and broadcast to x's shape.
    Axes left of a '...' are counted from the front, those right of it from the back (its width may be unknown)."""
    split = labels.index(ELLIPSIS) if ELLIPSIS in labels else len(labels)
    for axis in range(split):
        if labels[axis] not in reachable:
            g = array_ops.expand_dims(g, axis)
    for axis in range(len(labels) - 1, split, -1):
        if labels[axis] not in reachable:
            g = array_ops.expand_dims(g, axis - len(labels))
    return g * array_ops.ones_like(x)


# --- tensordot ----------------------------------------------------------------------------------------------------
def _tensordot_axes(a: Tensor, axes) -> tuple[list, list]:
    """tensordot's `axes` argument as (axes of a, axes of b)."""
    if isinstance(axes, int):
        if axes < 0:
            raise ValueError("'axes' must be at least 0.")
        rank = a.shape.ndims
        if rank is None:
            raise ValueError(f"tensordot with an integer 'axes' needs the rank of {a} to be known")
        if axes > rank:
            raise ValueError(f"'axes' must not be larger than the number of dimensions of tensor {a}.")
        return list(range(rank - axes, rank)), list(range(axes))
    if isinstance(axes, Tensor):
        raise TypeError("adplace's tensordot needs 'axes' as Python values, not a Tensor")
    axes = list(axes)
    if len(axes) != 2:
        raise ValueError("'axes' must be an integer or have length 2.")
    a_axes, b_axes = ([x] if isinstance(x, int) else list(x) for x in axes)
    if len(a_axes) != len(b_axes):
        raise ValueError(f"Different number of contraction axes 'a' and 'b', {len(a_axes)} != {len(b_axes)}.")
    return a_axes, b_axes


def _tensordot_reshape(a: Tensor, axes: list, flipped: bool = False) -> tuple[Tensor, list | Tensor]:
    """`a` transposed and reshaped to a matrix [free, contracted] ([contracted, free] when flipped), and its free
    dims (a list when static, else an int32 tensor)."""
    rank = a.shape.ndims
    if rank is None:
        raise ValueError(f"tensordot needs the rank of {a} to be known")
    axes = [i if i >= 0 else i + rank for i in axes]
    free = [i for i in range(rank) if i not in axes]
    perm = axes + free if flipped else free + axes
    a_trans = a if perm == list(range(rank)) else array_ops.transpose(a, perm=perm)
    dims = a.shape.as_list()
    if all(dims[i] is not None for i in range(rank)):
        free_dims = [dims[i] for i in free]
        prod_free, prod_axes = math.prod(free_dims), math.prod(dims[i] for i in axes)
        new_shape = [prod_axes, prod_free] if flipped else [prod_free, prod_axes]
        return (a_trans if a_trans.shape.as_list() == new_shape else array_ops.reshape(a_trans, new_shape)), free_dims
    shape_a = array_ops.shape(a)
    free_dims = slicing_ops.gather(shape_a, free)
    prod_free = reduction_ops.reduce_prod(free_dims)
    prod_axes = reduction_ops.reduce_prod(slicing_ops.gather(shape_a, axes))
    new_shape = array_ops.stack([prod_axes, prod_free] if flipped else [prod_free, prod_axes])
    return array_ops.reshape(a_trans, new_shape), free_dims


def tensordot(a, b, axes, name: str | None = None) -> Tensor:
    """Sum of a * b over the paired `axes` (an int N: a's last N with b's first N; or [a_axes, b_axes])
    (tf.tensordot).

        tf.tensordot(a, b, 1)               # a @ b for matrices;  axes=0: the outer product
    """
    with name_scope(name, "Tensordot", [a, b, axes]) as scope:
        a = convert_to_tensor(a, name="a")
        b = convert_to_tensor(b, name="b")
        a_axes, b_axes = _tensordot_axes(a, axes)
        a_matrix, a_free = _tensordot_reshape(a, a_axes)
        b_matrix, b_free = _tensordot_reshape(b, b_axes, True)
        product = math_ops.matmul(a_matrix, b_matrix)
        if isinstance(a_free, list) and isinstance(b_free, list):
            return array_ops.reshape(product, a_free + b_free, name=scope)
        a_free = a_free if isinstance(a_free, Tensor) else convert_to_tensor(a_free, dtype=_dtypes.int32)
        b_free = b_free if isinstance(b_free, Tensor) else convert_to_tensor(b_free, dtype=_dtypes.int32)
        return array_ops.reshape(product, array_ops.concat([a_free, b_free], 0), name=scope)
