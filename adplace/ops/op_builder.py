"""How ops are built: `apply_op`, input conversion with TF's dtype rules, and the shape functions ops share.

Graph-construction errors use TF1's classes and wording: TypeError for dtypes, ValueError for shapes, each naming
the op, e.g. "Dimensions must be equal, but are 2 and 3 for 'add' (op: 'Add') with input shapes: [2], [3]."
"""
from __future__ import annotations

import numpy as np

from adplace.framework import dtypes as _dtypes
from adplace.framework import function_graph as _function_graph
from adplace.framework.conversion import convert_to_tensor
from adplace.framework.graph import get_default_graph
from adplace.framework.operation import Operation, Tensor
from adplace.framework.tensor_shape import TensorShape, dims_text
from adplace.framework.tensor_util import constant_value, shape_from_tensor  # noqa: F401 - ops import them from here

SCALAR = TensorShape([])


def apply_op(op_type: str, inputs, attrs: dict | None = None, name: str | None = None) -> Operation:
    """Create an op of a registered type in its inputs' graph (the default graph for ops without inputs, and while a
    function is traced, when its graph captures the outer inputs: framework/function_graph.py)."""
    graph = inputs[0]._op._graph if inputs and not _function_graph.tracing[0] else get_default_graph()
    return graph._create_op_internal(op_type, inputs, attrs, name)


def apply_op_1(op_type: str, inputs, attrs: dict | None = None, name: str | None = None) -> Tensor:
    """Create a single-output op and return its output."""
    return apply_op(op_type, inputs, attrs, name)._outputs[0]


def shapes_text(inputs) -> str:
    return ", ".join(dims_text(t._shape.as_tuple()) for t in inputs)


def check_dtype(op_type: str, arg: str, dtype: _dtypes.DType, allowed) -> None:
    if dtype.base_dtype not in allowed:
        names = ", ".join(sorted(d.name for d in allowed))
        raise TypeError(f"Value passed to parameter '{arg}' has DataType {dtype.base_dtype.name} not in list of "
                        f"allowed values: {names} (op: '{op_type}')")


def check_same_dtype(op_type: str, inputs, arg_names=("x", "y")) -> _dtypes.DType:
    first = inputs[0]._dtype.base_dtype
    for t, arg in zip(inputs[1:], arg_names[1:] if len(arg_names) > 1 else arg_names * len(inputs)):
        if t._dtype.base_dtype is not first:
            raise TypeError(f"Input '{arg}' of '{op_type}' Op has type {t._dtype.base_dtype.name} that does not "
                            f"match type {first.name} of argument '{arg_names[0]}'.")
    return first


def broadcast_dims(a, b, name: str, op_type: str, inputs) -> tuple | None:
    """NumPy broadcasting of static dims (None = unknown), raising TF's ValueError on a known mismatch."""
    if a is None or b is None:
        return None
    out = []
    for i in range(1, max(len(a), len(b)) + 1):
        da = a[-i] if i <= len(a) else 1
        db = b[-i] if i <= len(b) else 1
        if da == 1:
            out.append(db)
        elif db == 1:
            out.append(da)
        elif da is None:
            out.append(db)
        elif db is None or da == db:
            out.append(da)
        else:
            raise ValueError(f"Dimensions must be equal, but are {da} and {db} for '{name}' (op: '{op_type}') "
                             f"with input shapes: {shapes_text(inputs)}.")
    return tuple(reversed(out))


def merged_shape(op_type: str, name: str, inputs) -> TensorShape:
    """The one static shape all `inputs` must share (unknown dims filled from each other); ValueError otherwise."""
    merged = TensorShape(None)
    for t in inputs:
        if not merged.is_compatible_with(t._shape):
            raise ValueError(f"Shapes must be equal for '{name}' (op: '{op_type}') with input shapes: "
                             f"{shapes_text(inputs)}.")
        merged = merged.merge_with(t._shape)
    return merged


def normalize_axis(axis: int, rank: int, name: str, op_type: str) -> int:
    if not -rank <= axis < rank:
        raise ValueError(f"axis {axis} is out of range for a tensor of rank {rank} in '{name}' (op: '{op_type}'); "
                         f"expected -{rank} <= axis < {rank}")
    return axis % rank


def to_tensors(values, dtype=None, arg_name: str = "values") -> list[Tensor]:
    """Convert a list of values, the first Tensor deciding the dtype of Python values."""
    values = list(values)
    if dtype is None:
        for v in values:
            if isinstance(v, Tensor) or hasattr(v, "_as_graph_element"):
                dtype = convert_to_tensor(v).dtype.base_dtype
                break
    return [convert_to_tensor(v, dtype=dtype, name=f"{arg_name}_{i}") for i, v in enumerate(values)]


def int_const(value, name: str) -> Tensor:
    """An int32 tensor for axes, shapes and permutations: a Const, or the tf.stack of a list holding tensors
    (`tf.reshape(x, [tf.shape(x)[0], -1])`, int64 when its first tensor is); a Tensor is used as it is."""
    if isinstance(value, Tensor):
        return value
    if isinstance(value, (list, tuple)) and any(isinstance(v, Tensor) for v in value):
        first = next(v for v in value if isinstance(v, Tensor))  # TF packs to the first tensor's int type
        dtype = _dtypes.int64 if first.dtype.base_dtype == _dtypes.int64 else _dtypes.int32
        return convert_to_tensor(list(value), dtype=dtype, name=name)
    return convert_to_tensor(np.asarray(value, dtype=np.int32), name=name)


def deprecated_argument_lookup(new_name: str, new_value, old_name: str, old_value):
    """The value of an argument with a deprecated alias: TF's rule, giving both is a ValueError."""
    if old_value is not None:
        if new_value is not None:
            raise ValueError(f"Cannot specify both '{old_name}' and '{new_name}'")
        return old_value
    return new_value


def keepdims_value(keepdims, keep_dims) -> bool:
    """`keepdims`, or its TF1 alias `keep_dims` when `keepdims` is None (reductions and norms take both)."""
    return bool(keep_dims if keepdims is None else keepdims)
