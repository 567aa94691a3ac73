"""N-d indexing of dense tensors: GatherNd reads elements or slices at index tuples, ScatterNd adds slices into
zeros, TensorScatterUpdate/Add/Sub write them into a copy of a tensor (TF's array_ops; the in-place variable writes
ScatterNd* are in state_ops.py). Each op's gradient sits below it: GatherNd and ScatterNd are each other's.

An index tuple is the last dimension of `indices`: with K = indices.shape[-1], indices[i...] names the slice
params[indices[i...]] of shape params.shape[K:].

    tf.gather_nd([[1, 2], [3, 4]], [[1, 0], [0, 1]])         # [3, 2]
    tf.scatter_nd([[1], [3], [1]], [5., 6., 7.], [4])      # [0., 12., 0., 6.]: repeats add up
"""
from __future__ import annotations

from adplace.framework import dtypes as _dtypes
from adplace.framework.conversion import convert_to_tensor
from adplace.framework.default_graph import name_scope
from adplace.framework.indexed_slices import IndexedSlices
from adplace.framework.operation import Tensor
from adplace.framework.registry import RegisterGradient, register_op
from adplace.framework.tensor_shape import TensorShape, dims_text, unknown_shape
from adplace.ops import array_ops
from adplace.ops.op_builder import apply_op_1, check_dtype, check_same_dtype, shape_from_tensor, shapes_text
from adplace.ops.state_ops import scatter_nd_shape

INDEX_TYPES = (_dtypes.int32, _dtypes.int64)


def _where(name: str, op_type: str, inputs) -> str:
    return f" for '{name}' (op: '{op_type}') with input shapes: {shapes_text(inputs)}."


def _at_least_rank_1(where: str, *tensors: Tensor) -> None:
    for t in tensors:
        if t._shape.ndims == 0:
            raise ValueError("Shape must be at least rank 1 but is rank 0" + where)


# --- GatherNd -------------------------------------------------------------------------------------------------------
def _gather_nd_infer(inputs, attrs, name):
    params, indices = inputs
    check_dtype("GatherNd", "Tindices", indices._dtype, INDEX_TYPES)
    where = _where(name, "GatherNd", inputs)
    _at_least_rank_1(where, params, indices)
    p_dims, i_dims = params._shape.as_tuple(), indices._shape.as_tuple()
    if p_dims is None or i_dims is None or i_dims[-1] is None:
        return [(params._dtype.base_dtype, unknown_shape())]
    if i_dims[-1] > len(p_dims):
        raise ValueError(f"indices.shape[-1] must be <= params.rank, but saw indices shape: {dims_text(i_dims)} and "
                         f"params shape: {dims_text(p_dims)}{where}")
    return [(params._dtype.base_dtype, TensorShape(i_dims[:-1] + p_dims[i_dims[-1]:]))]


register_op("GatherNd", _gather_nd_infer)


@RegisterGradient("GatherNd")
def _gather_nd_grad(op, grad):
    """ScatterNd of the gradient into zeros of params' shape; for indices [N, 1] (whole rows) an IndexedSlices."""
    params, indices = op._inputs
    params_shape = array_ops.shape(params, out_type=indices.dtype.base_dtype)
    if indices._shape.ndims == 2 and indices._shape.as_tuple()[-1] == 1:
        return [IndexedSlices(convert_to_tensor(grad), array_ops.squeeze(indices, axis=[-1]), params_shape), None]
    return [scatter_nd(indices, grad, params_shape), None]


def gather_nd(params, indices, name: str | None = None, batch_dims: int = 0) -> Tensor:
    """The elements or slices of `params` at the index tuples in the last dimension of `indices` (tf.gather_nd).

    The output has shape indices.shape[:-1] + params.shape[indices.shape[-1]:]. An index out of range is TF's
    InvalidArgumentError when it runs ("indices[1] = [5, 0] does not index into param shape [3,2]").

        tf.gather_nd([[1, 2], [3, 4]], [[1], [0]])   # [[3, 4], [1, 2]]: whole rows
    """
    if batch_dims != 0:
        raise NotImplementedError(f"tf.gather_nd with batch_dims={batch_dims} is not supported; only batch_dims=0")
    with name_scope(name, "GatherNd", [params, indices]) as scope:
        params = convert_to_tensor(params, name="params")
        indices = convert_to_tensor(indices, name="indices")
        return apply_op_1("GatherNd", [params, indices],
                          {"Tparams": params.dtype.base_dtype, "Tindices": indices.dtype.base_dtype}, name=scope)


# --- ScatterNd, TensorScatterUpdate/Add/Sub -------------------------------------------------------------------------
def _scatter_nd_infer(inputs, attrs, name):
    indices, updates, shape_t = inputs
    check_dtype("ScatterNd", "Tindices", indices._dtype, INDEX_TYPES)
    check_same_dtype("ScatterNd", [indices, shape_t], ("indices", "shape"))
    out = shape_from_tensor(shape_t)
    scatter_nd_shape(out, indices, updates, _where(name, "ScatterNd", inputs), out_name="output")
    return [(updates._dtype.base_dtype, out)]


register_op("ScatterNd", _scatter_nd_infer)


@RegisterGradient("ScatterNd")
def _scatter_nd_grad(op, grad):
    return [None, gather_nd(grad, op._inputs[0]), None]


def scatter_nd(indices, updates, shape, name: str | None = None) -> Tensor:
    """Zeros of `shape` with the slices `updates` added at the index tuples of `indices` (tf.scatter_nd); repeated
    indices add up. updates.shape = indices.shape[:-1] + shape[indices.shape[-1]:].

        tf.scatter_nd([[0, 1], [2, 0]], [5, 6], [3, 2])   # [[0, 5], [0, 0], [6, 0]]
    """
    with name_scope(name, "ScatterNd", [indices, updates, shape]) as scope:
        indices = convert_to_tensor(indices, name="indices")
        updates = convert_to_tensor(updates, name="updates")
        shape_t = convert_to_tensor(shape, dtype=indices.dtype.base_dtype, name="shape")
        return apply_op_1("ScatterNd", [indices, updates, shape_t],
                          {"T": updates.dtype.base_dtype, "Tindices": indices.dtype.base_dtype}, name=scope)


def _tensor_scatter_infer(op_type: str):
    def infer(inputs, attrs, name):
        tensor, indices, updates = inputs
        dtype = check_same_dtype(op_type, [tensor, updates], ("tensor", "updates"))
        check_dtype(op_type, "Tindices", indices._dtype, INDEX_TYPES)
        scatter_nd_shape(tensor._shape, indices, updates, _where(name, op_type, inputs))
        return [(dtype, tensor._shape)]
    return infer


for _op_type in ("TensorScatterUpdate", "TensorScatterAdd", "TensorScatterSub"):
    register_op(_op_type, _tensor_scatter_infer(_op_type))


@RegisterGradient("TensorScatterUpdate")
def _tensor_scatter_update_grad(op, grad):
    """The overwritten slices get no gradient; the updates get theirs."""
    _, indices, updates = op._inputs
    tensor_grad = tensor_scatter_update(array_ops.identity(grad), indices,
                                        array_ops.zeros_like(updates, dtype=grad.dtype.base_dtype))
    return [tensor_grad, None, gather_nd(grad, indices)]


@RegisterGradient("TensorScatterAdd")
def _tensor_scatter_add_grad(op, grad):
    return [array_ops.identity(grad), None, gather_nd(grad, op._inputs[1])]


@RegisterGradient("TensorScatterSub")
def _tensor_scatter_sub_grad(op, grad):
    return [array_ops.identity(grad), None, -gather_nd(grad, op._inputs[1])]


def _tensor_scatter(op_type: str, tensor, indices, updates, name: str | None) -> Tensor:
    with name_scope(name, op_type, [tensor, indices, updates]) as scope:
        tensor = convert_to_tensor(tensor, name="tensor")
        indices = convert_to_tensor(indices, name="indices")
        dtype = None if isinstance(updates, Tensor) else tensor.dtype.base_dtype  # a Tensor's dtype is checked
        updates = convert_to_tensor(updates, dtype=dtype, name="updates")
        return apply_op_1(op_type, [tensor, indices, updates],
                          {"T": tensor.dtype.base_dtype, "Tindices": indices.dtype.base_dtype}, name=scope)


def tensor_scatter_update(tensor, indices, updates, name: str | None = None) -> Tensor:
    """A copy of `tensor` with the slices at `indices` replaced by `updates` (tf.tensor_scatter_update, also
    tf.tensor_scatter_nd_update); `tensor` itself is unchanged.

        tf.tensor_scatter_update([1, 2, 3, 4], [[3], [0]], [9, 8])   # [8, 2, 3, 9]
    """
    return _tensor_scatter("TensorScatterUpdate", tensor, indices, updates, name)


def tensor_scatter_add(tensor, indices, updates, name: str | None = None) -> Tensor:
    """A copy of `tensor` with `updates` added at `indices`, repeats adding up (tf.tensor_scatter_add, also
    tf.tensor_scatter_nd_add)."""
    return _tensor_scatter("TensorScatterAdd", tensor, indices, updates, name)


def tensor_scatter_sub(tensor, indices, updates, name: str | None = None) -> Tensor:
    """A copy of `tensor` with `updates` subtracted at `indices` (tf.tensor_scatter_sub, also
    tf.tensor_scatter_nd_sub)."""
    return _tensor_scatter("TensorScatterSub", tensor, indices, updates, name)


tensor_scatter_nd_update = tensor_scatter_update
tensor_scatter_nd_add = tensor_scatter_add
tensor_scatter_nd_sub = tensor_scatter_sub
