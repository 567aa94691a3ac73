"""Values of tensors known while the graph is built (TF's framework/tensor_util.constant_value): shape functions,
IndexedSlices.shape and gradients read them without running anything."""
from __future__ import annotations

import numpy as np

from adplace.framework import dtypes as _dtypes
from adplace.framework.operation import Tensor
from adplace.framework.tensor_shape import TensorShape, unknown_shape


def constant_value(tensor: Tensor):
    """The value of `tensor` if it is known when the graph is built: a Const, the Shape of a static shape, or an
    Identity or Cast of such a value (TF's shape functions evaluate these small constant subgraphs too)."""
    op = tensor._op
    if op._type == "Const":
        return op._attrs["value"]
    if op._type == "Shape" and op._inputs[0]._shape.is_fully_defined():
        return np.array(op._inputs[0]._shape.as_list(), dtype=op._attrs["out_type"].as_numpy_dtype)
    if op._type == "ShapeN" and op._inputs[tensor._value_index]._shape.is_fully_defined():
        return np.array(op._inputs[tensor._value_index]._shape.as_list(), dtype=op._attrs["out_type"].as_numpy_dtype)
    if op._type == "Identity":
        return constant_value(op._inputs[0])
    if op._type == "Cast" and op._outputs[0]._dtype.base_dtype is not _dtypes.string:
        value = constant_value(op._inputs[0])
        return None if value is None else value.astype(op._outputs[0]._dtype.base_dtype.as_numpy_dtype)
    return None


def shape_from_tensor(tensor: Tensor) -> TensorShape:
    """The static shape a shape-valued tensor describes (unknown dims where its value is unknown)."""
    value = constant_value(tensor)
    if value is not None:
        return TensorShape([None if d < 0 else int(d) for d in np.reshape(value, [-1])])
    dims = tensor._shape.as_tuple()
    return unknown_shape(dims[0] if dims else None)
