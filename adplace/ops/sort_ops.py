"""Ops that rank or deduplicate values: tf.nn.top_k (TopKV2) and tf.unique (Unique)."""
from __future__ import annotations

from collections import namedtuple

from adplace.framework import dtypes as _dtypes
from adplace.framework.conversion import convert_to_tensor
from adplace.framework.default_graph import name_scope
from adplace.framework.registry import register_op
from adplace.framework.tensor_shape import TensorShape, unknown_shape
from adplace.ops.op_builder import apply_op, check_dtype, constant_value, shapes_text

TopKV2 = namedtuple("TopKV2", ["values", "indices"])
Unique = namedtuple("Unique", ["y", "idx"])


# --- TopKV2 ---------------------------------------------------------------------------------------------------------
def _top_k_infer(inputs, attrs, name):
    x, k_t = inputs
    check_dtype("TopKV2", "input", x._dtype, _dtypes.FLOATING | _dtypes.INTEGER)
    check_dtype("TopKV2", "k", k_t._dtype, _INDEX_TYPES)
    where_text = f" for '{name}' (op: 'TopKV2') with input shapes: {shapes_text(inputs)}."
    if k_t._shape.ndims not in (None, 0):
        raise ValueError(f"Shape must be rank 0 but is rank {k_t._shape.ndims}{where_text}")
    dims, k = x._shape.as_tuple(), constant_value(k_t)
    k = None if k is None else int(k)
    if k is not None and k < 0:
        raise ValueError(f"Dimension size, given by scalar input 1, must be non-negative but is {k}{where_text}")
    index_type = attrs.get("index_type", _dtypes.int32)
    if dims is None:
        return [(x._dtype.base_dtype, unknown_shape()), (index_type, unknown_shape())]
    if not dims:
        raise ValueError(f"Shape must be at least rank 1 but is rank 0{where_text}")
    if k is not None and dims[-1] is not None and dims[-1] < k:
        raise ValueError(f"input must have last dimension >= k = {k} but is {dims[-1]}{where_text}")
    out = TensorShape(dims[:-1] + (k,))
    return [(x._dtype.base_dtype, out), (index_type, out)]


_INDEX_TYPES = (_dtypes.int16, _dtypes.int32, _dtypes.int64)
register_op("TopKV2", _top_k_infer)


def top_k(input, k=1, sorted: bool = True, name: str | None = None,  # noqa: A002 - TF's argument names
          index_type=_dtypes.int32) -> TopKV2:
    """The k largest entries along the last axis and their indices, as `index_type` (int16, int32 or int64)
    (tf.nn.top_k, tf.math.top_k), largest first; of equal values the lower index comes first, as in TF.
    `sorted=False` may return them in any order (here they are always sorted).

        values, indices = tf.nn.top_k([1, 5, 3, 5], k=2)   # [5, 5], [1, 3]

    The gradient flows to the input positions the values were taken from.
    """
    index_type = _dtypes.as_dtype(index_type).base_dtype
    check_dtype("TopKV2", "index_type", index_type, _INDEX_TYPES)
    x = convert_to_tensor(input, name="input")
    k_t = convert_to_tensor(k, preferred_dtype=_dtypes.int32, name="k")
    op = apply_op("TopKV2", [x, k_t], {"sorted": bool(sorted), "T": x.dtype.base_dtype, "Tk": k_t.dtype.base_dtype,
                                       "index_type": index_type}, name=name or "TopKV2")
    return TopKV2(*op.outputs)


# --- Unique ---------------------------------------------------------------------------------------------------------
def _unique_infer(inputs, attrs, name):
    x = inputs[0]
    if x._shape.ndims not in (None, 1):
        raise ValueError(f"Shape must be rank 1 but is rank {x._shape.ndims} for '{name}' (op: 'Unique') with input "
                         f"shapes: {shapes_text(inputs)}.")
    return [(x._dtype.base_dtype, unknown_shape(1)), (attrs["out_idx"], x._shape if x._shape.ndims else
                                                      unknown_shape(1))]


register_op("Unique", _unique_infer)


def unique(x, out_idx=_dtypes.int32, name: str | None = None) -> Unique:
    """The distinct values of the vector x in order of first appearance, and for each element of x the index of its
    value in them (tf.unique): x == tf.gather(y, idx).

        y, idx = tf.unique([1, 1, 2, 4, 4, 4, 7, 8, 8])   # y: [1, 2, 4, 7, 8], idx: [0, 0, 1, 2, 2, 2, 3, 4, 4]
    """
    out_idx = _dtypes.as_dtype(out_idx).base_dtype
    check_dtype("Unique", "out_idx", out_idx, (_dtypes.int32, _dtypes.int64))
    with name_scope(name, "Unique", [x]) as scope:
        x = convert_to_tensor(x, name="x")
        op = apply_op("Unique", [x], {"T": x.dtype.base_dtype, "out_idx": out_idx}, name=scope)
        return Unique(*op.outputs)
