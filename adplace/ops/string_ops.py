"""String ops (TF's string_ops): tf.string_split, TF1's StringSplit op splitting a vector of strings into a
SparseTensor of tokens. Kernel in adplace/kernels/parsing.py.

    tf.string_split(["a b", "c"]).values        # [b'a', b'b', b'c'], indices [[0, 0], [0, 1], [1, 0]]
"""
from __future__ import annotations

from adplace.framework import dtypes as _dtypes
from adplace.framework.conversion import convert_to_tensor
from adplace.framework.default_graph import name_scope
from adplace.framework.registry import NotDifferentiable, register_op
from adplace.framework.sparse_tensor import SparseTensor
from adplace.framework.tensor_shape import TensorShape
from adplace.ops.op_builder import apply_op, check_dtype, deprecated_argument_lookup


def _string_split_infer(inputs, attrs, name):
    source, delimiter = inputs
    check_dtype("StringSplit", "input", source._dtype, (_dtypes.string,))
    check_dtype("StringSplit", "delimiter", delimiter._dtype, (_dtypes.string,))
    source._shape.with_rank(1)
    delimiter._shape.with_rank(0)
    return [(_dtypes.int64, TensorShape([None, 2])), (_dtypes.string, TensorShape([None])),
            (_dtypes.int64, TensorShape([2]))]


register_op("StringSplit", _string_split_infer)
NotDifferentiable("StringSplit")


def string_split(source, sep=None, skip_empty: bool = True, delimiter=None, result_type: str = "SparseTensor",
                 name: str | None = None) -> SparseTensor:
    """Split each string of the vector `source` at every byte of `sep` (" " by default; "" splits into bytes) into a
    SparseTensor [len(source), most tokens] (tf.string_split); empty tokens are dropped unless `skip_empty=False`."""
    if result_type != "SparseTensor":
        raise ValueError("adplace's string_split returns a SparseTensor (result_type='SparseTensor'); it has no "
                         "RaggedTensor")
    sep = deprecated_argument_lookup("sep", sep, "delimiter", delimiter)
    with name_scope(name, "StringSplit", [source]):
        source = convert_to_tensor(source, dtype=_dtypes.string)
        sep = convert_to_tensor(" " if sep is None else sep, dtype=_dtypes.string)
        op = apply_op("StringSplit", [source, sep], {"skip_empty": bool(skip_empty)})
    return SparseTensor(*op._outputs)
