"""File-system ops (TF's io_ops): MatchingFiles, the sorted names of the files matching glob patterns, with TF's op
type so that GraphDefs travel both ways; its kernel is in adplace/kernels/files.py (CPU only, as TF).

    names = tf.matching_files("/data/train-*.tfrecord")   # a 1-D string tensor, when run
"""
from __future__ import annotations

from adplace.framework import dtypes as _dtypes
from adplace.framework.conversion import convert_to_tensor
from adplace.framework.registry import NotDifferentiable, register_op
from adplace.framework.tensor_shape import TensorShape
from adplace.ops.op_builder import apply_op_1, check_dtype


def _matching_files_infer(inputs, attrs, name):
    check_dtype("MatchingFiles", "pattern", inputs[0]._dtype, (_dtypes.string,))
    rank = inputs[0]._shape.ndims
    if rank is not None and rank > 1:
        raise ValueError(f"Shape must be at most rank 1 but is rank {rank} for '{name}' (op: 'MatchingFiles')")
    return [(_dtypes.string, TensorShape([None]))]


register_op("MatchingFiles", _matching_files_infer)
NotDifferentiable("MatchingFiles")


def matching_files(pattern, name: str | None = None):
    """The names of the files matching `pattern` (a string, or a 1-D tensor of them), sorted, as a 1-D string
    tensor (tf.io.matching_files): "*" and "?" never match "/", "[...]" a character of a set, "\\c" c itself."""
    return apply_op_1("MatchingFiles", [convert_to_tensor(pattern, dtype=_dtypes.string, name="pattern")], {},
                      name=name or "MatchingFiles")
