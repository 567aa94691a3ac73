"""Segment reductions: rows of `data` reduced into the segments their ids name. Sorted (SegmentSum/Mean/Max/Min/Prod:
ids sorted, output rows = last id + 1), unsorted (UnsortedSegmentSum/Max/Min/Prod: any order, `num_segments` rows,
negative ids dropped) and sparse (SparseSegmentSum/Mean/SqrtN: the rows `data[indices]`, sorted ids), with TF's
compositions tf.unsorted_segment_mean and tf.unsorted_segment_sqrt_n. Gradients are in segment_grad.py.

    tf.segment_sum([[1, 2], [3, 4], [5, 6]], [0, 0, 1])              # [[4, 6], [5, 6]]
    tf.unsorted_segment_max([1, 5, 3], [1, 0, 1], num_segments=2)    # [5, 3]
    tf.sparse_segment_mean([[2.], [4.], [8.]], [0, 2, 1], [0, 0, 1])  # [[5.], [4.]]
"""
from __future__ import annotations

from adplace.framework import dtypes as _dtypes
from adplace.framework.conversion import convert_to_tensor
from adplace.framework.default_graph import name_scope
from adplace.framework.operation import Tensor
from adplace.framework.registry import register_op
from adplace.framework.tensor_shape import TensorShape, unknown_shape
from adplace.ops import array_ops, math_ops
from adplace.ops.op_builder import apply_op_1, check_dtype, constant_value, shapes_text
from adplace.ops.state_ops import merge_error

INDEX_TYPES = (_dtypes.int32, _dtypes.int64)
REAL = _dtypes.FLOATING | _dtypes.INTEGER
_DATA_TYPES = {"Sum": _dtypes.NUMERIC, "Mean": _dtypes.NUMERIC, "Prod": _dtypes.NUMERIC, "Max": REAL, "Min": REAL,
               "SqrtN": _dtypes.FLOATING}


def _where(name: str, op_type: str, inputs) -> str:
    return f" for '{name}' (op: '{op_type}') with input shapes: {shapes_text(inputs)}."


def _require_rank(t: Tensor, rank: int, at_least: bool, where: str) -> None:
    ndims = t._shape.ndims
    if ndims is not None and (ndims < rank if at_least else ndims != rank):
        raise ValueError(f"Shape must be {'at least ' if at_least else ''}rank {rank} but is rank {ndims}{where}")


def _require_equal(a, b, where: str) -> None:
    if a is not None and b is not None and a != b:
        raise ValueError(f"Dimensions must be equal, but are {a} and {b}{where}")


def _rows_then_rest(rows, data: Tensor) -> TensorShape:
    dims = data._shape.as_tuple()
    return unknown_shape() if dims is None else TensorShape((rows,) + dims[1:])


def _check_num_segments(op_type: str, num_t: Tensor, where: str) -> None:
    check_dtype(op_type, "num_segments", num_t._dtype, INDEX_TYPES)
    _require_rank(num_t, 0, False, where)


def _num_segments(num_t: Tensor, where: str, negative: str):
    """The constant value of `num_segments` (None if unknown); ValueError `negative` + `where` if it is < 0."""
    num = constant_value(num_t)
    if num is not None and int(num) < 0:
        raise ValueError(negative.format(int(num)) + where)
    return None if num is None else int(num)


# --- SegmentSum, SegmentMean, SegmentMax, SegmentMin, SegmentProd (sorted ids) ---------------------------------------
def _segment_infer(op_type: str, allowed):
    def infer(inputs, attrs, name):
        data, ids = inputs
        check_dtype(op_type, "data", data._dtype, allowed)
        check_dtype(op_type, "segment_ids", ids._dtype, INDEX_TYPES)
        where = _where(name, op_type, inputs)
        _require_rank(data, 1, True, where)
        _require_rank(ids, 1, False, where)  # as TF 1.x, a length mismatch is the kernel's error when it runs
        return [(data._dtype.base_dtype, _rows_then_rest(None, data))]
    return infer


# --- UnsortedSegmentSum, UnsortedSegmentMax, UnsortedSegmentMin, UnsortedSegmentProd ---------------------------------
def _unsorted_infer(op_type: str, allowed):
    def infer(inputs, attrs, name):
        data, ids, num_t = inputs
        check_dtype(op_type, "data", data._dtype, allowed)
        check_dtype(op_type, "segment_ids", ids._dtype, INDEX_TYPES)
        where = _where(name, op_type, inputs)
        _check_num_segments(op_type, num_t, where)
        d_dims, i_dims = data._shape.as_tuple(), ids._shape.as_tuple()
        if i_dims is None:
            return [(data._dtype.base_dtype, unknown_shape())]
        if d_dims is not None:
            if len(d_dims) < len(i_dims):
                raise ValueError(f"Shape must be at least rank {len(i_dims)} but is rank {len(d_dims)}{where}")
            for d, i in zip(d_dims, i_dims):
                _require_equal(d, i, where)
        rows = _num_segments(num_t, where, "Dimension size, given by scalar input 2, must be non-negative but is {}")
        if d_dims is None:
            return [(data._dtype.base_dtype, unknown_shape())]
        return [(data._dtype.base_dtype, TensorShape((rows,) + d_dims[len(i_dims):]))]
    return infer


# --- SparseSegmentSum, SparseSegmentMean, SparseSegmentSqrtN (and their WithNumSegments forms) ------------------------
def _sparse_infer(op_type: str, allowed):
    def infer(inputs, attrs, name):
        data, indices, ids = inputs[:3]
        check_dtype(op_type, "data", data._dtype, allowed)
        check_dtype(op_type, "indices", indices._dtype, INDEX_TYPES)
        check_dtype(op_type, "segment_ids", ids._dtype, INDEX_TYPES)
        where = _where(name, op_type, inputs)
        _require_rank(data, 1, True, where)
        _require_rank(indices, 1, False, where)
        _require_rank(ids, 1, False, where)
        if not indices._shape.is_compatible_with(ids._shape):
            raise ValueError(merge_error(indices._shape, ids._shape) + where)
        rows = None
        if len(inputs) == 4:
            _check_num_segments(op_type, inputs[3], where)
            rows = _num_segments(inputs[3], where, "Cannot specify a negative value for num_segments")
        return [(data._dtype.base_dtype, _rows_then_rest(rows, data))]
    return infer


SORTED_KINDS = ("Sum", "Mean", "Max", "Min", "Prod")
UNSORTED_KINDS = ("Sum", "Max", "Min", "Prod")
SPARSE_KINDS = ("Sum", "Mean", "SqrtN")
for _kind in SORTED_KINDS:
    register_op(f"Segment{_kind}", _segment_infer(f"Segment{_kind}", _DATA_TYPES[_kind]))
for _kind in UNSORTED_KINDS:
    register_op(f"UnsortedSegment{_kind}", _unsorted_infer(f"UnsortedSegment{_kind}", _DATA_TYPES[_kind]))
for _kind in SPARSE_KINDS:
    _allowed = REAL if _kind == "Sum" else _dtypes.FLOATING
    register_op(f"SparseSegment{_kind}", _sparse_infer(f"SparseSegment{_kind}", _allowed))
    register_op(f"SparseSegment{_kind}WithNumSegments", _sparse_infer(f"SparseSegment{_kind}WithNumSegments",
                                                                      _allowed))


def _segment_op(op_type: str, data, segment_ids, name: str | None) -> Tensor:
    with name_scope(name, op_type, [data, segment_ids]) as scope:
        data = convert_to_tensor(data, name="data")
        ids = convert_to_tensor(segment_ids, name="segment_ids")
        return apply_op_1(op_type, [data, ids], {"T": data.dtype.base_dtype, "Tindices": ids.dtype.base_dtype},
                          name=scope)


def _unsorted_op(op_type: str, data, segment_ids, num_segments, name: str | None) -> Tensor:
    with name_scope(name, op_type, [data, segment_ids, num_segments]) as scope:
        data = convert_to_tensor(data, name="data")
        ids = convert_to_tensor(segment_ids, name="segment_ids")
        num_t = convert_to_tensor(num_segments, name="num_segments")
        return apply_op_1(op_type, [data, ids, num_t],
                          {"T": data.dtype.base_dtype, "Tindices": ids.dtype.base_dtype,
                           "Tnumsegments": num_t.dtype.base_dtype}, name=scope)


def _sparse_op(kind: str, data, indices, segment_ids, name: str | None, num_segments) -> Tensor:
    op_type = f"SparseSegment{kind}" + ("" if num_segments is None else "WithNumSegments")
    with name_scope(name, op_type, [data, indices, segment_ids]) as scope:
        inputs = [convert_to_tensor(data, name="data"),  # TF's default index type: [] becomes int32
                  convert_to_tensor(indices, name="indices", preferred_dtype=_dtypes.int32),
                  convert_to_tensor(segment_ids, name="segment_ids", preferred_dtype=_dtypes.int32)]
        attrs = {"T": inputs[0].dtype.base_dtype, "Tidx": inputs[1].dtype.base_dtype}
        if num_segments is not None:
            inputs.append(convert_to_tensor(num_segments, name="num_segments"))
            attrs["Tnumsegments"] = inputs[3].dtype.base_dtype
        return apply_op_1(op_type, inputs, attrs, name=scope)


def segment_sum(data, segment_ids, name: str | None = None) -> Tensor:
    """output[i] = sum of the rows data[j] with segment_ids[j] == i (tf.segment_sum); ids sorted, missing ones 0.

    The output has last id + 1 rows; an unsorted or negative id is TF's InvalidArgumentError when it runs.

        tf.segment_sum([1, 2, 3, 4], [0, 0, 2, 2])   # [3, 0, 7]
    """
    return _segment_op("SegmentSum", data, segment_ids, name)


def segment_mean(data, segment_ids, name: str | None = None) -> Tensor:
    """The mean of each segment's rows (tf.segment_mean); ids sorted, an empty segment is 0."""
    return _segment_op("SegmentMean", data, segment_ids, name)


def segment_max(data, segment_ids, name: str | None = None) -> Tensor:
    """The elementwise max of each segment's rows (tf.segment_max); ids sorted, an empty segment is 0."""
    return _segment_op("SegmentMax", data, segment_ids, name)


def segment_min(data, segment_ids, name: str | None = None) -> Tensor:
    """The elementwise min of each segment's rows (tf.segment_min); ids sorted, an empty segment is 0."""
    return _segment_op("SegmentMin", data, segment_ids, name)


def segment_prod(data, segment_ids, name: str | None = None) -> Tensor:
    """The elementwise product of each segment's rows (tf.segment_prod); ids sorted, an empty segment is 1."""
    return _segment_op("SegmentProd", data, segment_ids, name)


def unsorted_segment_sum(data, segment_ids, num_segments, name: str | None = None) -> Tensor:
    """output[i] = sum of data[j...] over the j... with segment_ids[j...] == i (tf.unsorted_segment_sum).

    `segment_ids` has the shape of a prefix of data's; the output has shape [num_segments] + the rest of data's.
    Negative ids are dropped; an id >= num_segments is an InvalidArgumentError, as in TF.

        tf.unsorted_segment_sum([1., 2., 3.], [1, 0, 1], 2)   # [2., 4.]
    """
    return _unsorted_op("UnsortedSegmentSum", data, segment_ids, num_segments, name)


def unsorted_segment_max(data, segment_ids, num_segments, name: str | None = None) -> Tensor:
    """The elementwise max per segment, ids in any order (tf.unsorted_segment_max); an empty segment is the
    dtype's lowest value, as in TF."""
    return _unsorted_op("UnsortedSegmentMax", data, segment_ids, num_segments, name)


def unsorted_segment_min(data, segment_ids, num_segments, name: str | None = None) -> Tensor:
    """The elementwise min per segment, ids in any order (tf.unsorted_segment_min); an empty segment is the
    dtype's highest value."""
    return _unsorted_op("UnsortedSegmentMin", data, segment_ids, num_segments, name)


def unsorted_segment_prod(data, segment_ids, num_segments, name: str | None = None) -> Tensor:
    """The elementwise product per segment, ids in any order (tf.unsorted_segment_prod); an empty segment is 1."""
    return _unsorted_op("UnsortedSegmentProd", data, segment_ids, num_segments, name)


def _segment_counts(data: Tensor, ids: Tensor, num_segments) -> Tensor:
    """How many rows each segment got (at least 1), shaped [num_segments, 1, ...] to broadcast against the sums.
    With known ranks the shape is a constant, so the result keeps the static shape of the sums, as in TF."""
    num_t = convert_to_tensor(num_segments)
    counts = unsorted_segment_sum(array_ops.ones_like(ids, dtype=data.dtype.base_dtype), ids, num_t)
    if data._shape.ndims is not None and ids._shape.ndims is not None:
        shape = [-1] + [1] * (data._shape.ndims - ids._shape.ndims)
    else:
        ones = array_ops.ones(array_ops.expand_dims(array_ops.rank(data) - array_ops.rank(ids), 0),
                              dtype=num_t.dtype.base_dtype)
        shape = array_ops.concat([array_ops.expand_dims(num_t, 0), ones], 0)
    return math_ops.maximum(array_ops.reshape(counts, shape), 1)


def unsorted_segment_mean(data, segment_ids, num_segments, name: str | None = None) -> Tensor:
    """The mean of each segment's rows, ids in any order (tf.unsorted_segment_mean); an empty segment is 0.

    TF composes it, as here: the UnsortedSegmentSum of the rows over that of ones (at least 1).
    """
    with name_scope(name, "UnsortedSegmentMean"):
        data, ids = convert_to_tensor(data), convert_to_tensor(segment_ids)
        counts = _segment_counts(data, ids, num_segments)
        return unsorted_segment_sum(data, ids, num_segments) / counts


def unsorted_segment_sqrt_n(data, segment_ids, num_segments, name: str | None = None) -> Tensor:
    """Each segment's sum over the square root of its row count (tf.unsorted_segment_sqrt_n), composed as TF does."""
    with name_scope(name, "UnsortedSegmentSqrtN"):
        data, ids = convert_to_tensor(data), convert_to_tensor(segment_ids)
        counts = _segment_counts(data, ids, num_segments)
        return unsorted_segment_sum(data, ids, num_segments) / math_ops.sqrt(counts)


def sparse_segment_sum(data, indices, segment_ids, name: str | None = None, num_segments=None) -> Tensor:
    """output[i] = sum of data[indices[j]] over the j with segment_ids[j] == i (tf.sparse.segment_sum, TF1
    tf.sparse_segment_sum); ids sorted. With `num_segments` the output has that many rows.

        tf.sparse_segment_sum([[1, 2], [3, 4], [5, 6]], [0, 2], [0, 0])   # [[6, 8]]
    """
    return _sparse_op("Sum", data, indices, segment_ids, name, num_segments)


def sparse_segment_mean(data, indices, segment_ids, name: str | None = None, num_segments=None) -> Tensor:
    """The mean of the rows data[indices[j]] per segment (tf.sparse.segment_mean); an empty segment is 0."""
    return _sparse_op("Mean", data, indices, segment_ids, name, num_segments)


def sparse_segment_sqrt_n(data, indices, segment_ids, name: str | None = None, num_segments=None) -> Tensor:
    """The sum of the rows data[indices[j]] per segment over the square root of their count
    (tf.sparse.segment_sqrt_n); an empty segment is 0."""
    return _sparse_op("SqrtN", data, indices, segment_ids, name, num_segments)
