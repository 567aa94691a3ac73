"""SparseTensorsMap ops (TF's sparse_ops): how TF1's batchers put SparseTensors through queues. A SparseTensor (or
each row of a minibatch of them) is stored in a map held by the session, and its int64 handle travels through the
queue; after the dequeue TakeManySparseFromTensorsMap takes the handles' SparseTensors out of the map as one batch.
TF's op types and attrs (AddSparseToTensorsMap, AddManySparseToTensorsMap, TakeManySparseFromTensorsMap), so
GraphDefs travel both ways; kernels in adplace/kernels/sparse_tensors_map.py (CPU only, as TF).

    handle = add_sparse_to_tensors_map(st)                      # int64 scalar, when run
    batch = take_many_sparse_from_tensors_map(handle.op, [h1, h2, ...])   # SparseTensor [2] + max of their shapes

The map is named by the storing op's `shared_name`, or else by the op's own name; the taking op names it so.
"""
from __future__ import annotations

from adplace.framework import dtypes as _dtypes
from adplace.framework.conversion import convert_to_tensor
from adplace.framework.default_graph import colocate_with
from adplace.framework.operation import Operation
from adplace.framework.registry import NotDifferentiable, register_op
from adplace.framework.sparse_tensor import SparseTensor
from adplace.framework.tensor_shape import TensorShape
from adplace.ops.op_builder import SCALAR, apply_op, apply_op_1, check_dtype

STORE_OPS = ("AddSparseToTensorsMap", "AddManySparseToTensorsMap")


def _check_sparse(op_type: str, inputs) -> None:
    indices, _, shape = inputs
    for t, arg, rank in ((indices, "sparse_indices", 2), (inputs[1], "sparse_values", 1), (shape, "sparse_shape", 1)):
        if arg != "sparse_values":
            check_dtype(op_type, arg, t._dtype, (_dtypes.int64,))
        t._shape.with_rank(rank)


def _add_infer(inputs, attrs, name):
    _check_sparse("AddSparseToTensorsMap", inputs)
    return [(_dtypes.int64, SCALAR)]


def _add_many_infer(inputs, attrs, name):
    _check_sparse("AddManySparseToTensorsMap", inputs)
    return [(_dtypes.int64, TensorShape([None]))]


def _take_many_infer(inputs, attrs, name):
    check_dtype("TakeManySparseFromTensorsMap", "sparse_handles", inputs[0]._dtype, (_dtypes.int64,))
    inputs[0]._shape.with_rank(1)
    return [(_dtypes.int64, TensorShape([None, None])), (_dtypes.as_dtype(attrs["dtype"]), TensorShape([None])),
            (_dtypes.int64, TensorShape([None]))]


register_op("AddSparseToTensorsMap", _add_infer, is_stateful=True)
register_op("AddManySparseToTensorsMap", _add_many_infer, is_stateful=True)
register_op("TakeManySparseFromTensorsMap", _take_many_infer, is_stateful=True)
for _op_type in (*STORE_OPS, "TakeManySparseFromTensorsMap"):
    NotDifferentiable(_op_type)


def _store(op_type: str, sp_input: SparseTensor, container: str | None, shared_name: str | None, name):
    inputs = [convert_to_tensor(sp_input.indices, dtype=_dtypes.int64), convert_to_tensor(sp_input.values),
              convert_to_tensor(sp_input.dense_shape, dtype=_dtypes.int64)]
    attrs = {"T": inputs[1].dtype.base_dtype, "container": container or "", "shared_name": shared_name or ""}
    return apply_op_1(op_type, inputs, attrs, name=name or op_type)


def add_sparse_to_tensors_map(sp_input: SparseTensor, container: str | None = None, shared_name: str | None = None,
                              name: str | None = None):
    """Store `sp_input` in the session's SparseTensorsMap when run; its handle (an int64 scalar)."""
    return _store("AddSparseToTensorsMap", sp_input, container, shared_name, name)


def add_many_sparse_to_tensors_map(sp_input: SparseTensor, container: str | None = None,
                                   shared_name: str | None = None, name: str | None = None):
    """Store each row (along dim 0) of the minibatch `sp_input` (rank > 1) as a SparseTensor of one rank less when
    run; their handles (an int64 vector, one per row)."""
    return _store("AddManySparseToTensorsMap", sp_input, container, shared_name, name)


def take_many_sparse_from_tensors_map(sparse_map_op: Operation, sparse_handles, rank: int | None = None,
                                      name: str | None = None) -> SparseTensor:
    """The SparseTensors of `sparse_handles` (stored by `sparse_map_op`), taken out of the map as one SparseTensor
    of one more rank: row i is handle i's, the shape [len(handles)] + the largest of each dim. With `rank` (the
    result's, as TF's code uses it) the result's static shapes say so.

    Raises:
      TypeError: `sparse_map_op` is not an AddSparseToTensorsMap or AddManySparseToTensorsMap op.
    """
    if not isinstance(sparse_map_op, Operation):
        raise TypeError("sparse_map_op be an Operation")
    if sparse_map_op.type not in STORE_OPS:
        raise TypeError(f"sparse_map_op must be one of AddSparseToTensorsMap or AddSparseToTensorsMap. Instead, "
                        f"found `{sparse_map_op.type}`.")
    with colocate_with(sparse_map_op):
        attrs = {"dtype": _dtypes.as_dtype(sparse_map_op.get_attr("T")),
                 "container": sparse_map_op.get_attr("container"),
                 "shared_name": sparse_map_op.get_attr("shared_name") or sparse_map_op.name}
        handles = convert_to_tensor(sparse_handles, dtype=_dtypes.int64, name="sparse_handles")
        op = apply_op("TakeManySparseFromTensorsMap", [handles], attrs, name=name or "TakeManySparseFromTensorsMap")
    indices, values, shape = op._outputs
    if rank is not None:
        indices.set_shape([None, rank])
        shape.set_shape([rank])
    return SparseTensor(indices, values, shape)
