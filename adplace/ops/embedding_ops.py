"""Embedding lookups (TF's embedding_ops): tf.nn.embedding_lookup over one table or a table sharded in rows across
several tensors or variables (a list, or a PartitionedVariable), and tf.nn.embedding_lookup_sparse, which combines
the embeddings of each row of a SparseTensor of ids.

Each shard's gather is built in `colocate_with(shard)`, as TF does, so a table sharded over parameter servers is
read where its shards live and only the rows looked up travel; its gradient is an IndexedSlices per shard.

    with tf.device("/job:ps/task:0"): w0 = tf.Variable(tf.zeros([5, 4]))
    with tf.device("/job:ps/task:1"): w1 = tf.Variable(tf.ones([5, 4]))
    e = tf.nn.embedding_lookup([w0, w1], [3, 0])   # rows w1[1] ("mod": id 3 -> shard 1, row 1) and w0[0]
    # its gathers are on /job:ps/task:0 and /job:ps/task:1
"""
from __future__ import annotations

from adplace.framework import dtypes as _dtypes
from adplace.framework.conversion import convert_to_tensor
from adplace.framework.default_graph import colocate_with, name_scope
from adplace.framework.operation import Tensor
from adplace.framework.sparse_tensor import SparseTensor
from adplace.framework.tensor_shape import TensorShape, unknown_shape
from adplace.ops import (array_ops, clip_ops, data_flow_ops, math_ops, reduction_ops, segment_ops, sort_ops,
                         sparse_ops)
from adplace.ops.broadcast_ops import tile
from adplace.ops.selection_ops import where
from adplace.ops.slicing_ops import gather, slice_


def _shards(params) -> list:
    """The shards of `params`: a list or tuple as it is, a PartitionedVariable's variables, else the one table."""
    if params is None:
        raise ValueError("params must be specified")
    if isinstance(params, (list, tuple)):
        if not params:
            raise ValueError("Need at least one param")
        return list(params)
    if hasattr(params, "_get_variable_list"):
        return list(params._get_variable_list())
    return [params]


def _clip(values: Tensor, ids: Tensor, max_norm) -> Tensor:
    """Each embedding (the dims of `values` after those of `ids`) scaled down to an L2 norm of at most max_norm."""
    if max_norm is None:
        return values
    ids_rank, values_rank = ids.shape.ndims, values.shape.ndims
    if ids_rank is not None and values_rank is not None:
        axes = list(range(ids_rank, values_rank))
    else:
        axes = math_ops.range(array_ops.rank(ids), array_ops.rank(values))
    return clip_ops.clip_by_norm(values, max_norm, axes=axes)


def _shard_assignments(params: list, flat_ids: Tensor, strategy: str) -> tuple[Tensor, Tensor]:
    """(shard of each id, its row in that shard). "mod": id % n and id // n. "div": contiguous blocks, the first
    (total rows % n) shards one row longer."""
    n = len(params)
    if strategy == "mod":
        return flat_ids % n, flat_ids // n
    if strategy != "div":
        raise ValueError(f"Unrecognized partition strategy: {strategy}")
    rows = [p.shape.as_list()[0] if p.shape.ndims else None for p in params]
    if None not in rows:
        total = convert_to_tensor(sum(rows), dtype=flat_ids.dtype.base_dtype)
    else:
        sizes = []
        for p, r in zip(params, rows):
            if r is not None:
                sizes.append(r)
                continue
            with colocate_with(p):
                sizes.append(array_ops.shape(p)[0])
        total = reduction_ops.reduce_sum(math_ops.cast(array_ops.stack(sizes), flat_ids.dtype.base_dtype))
    per_shard, extras = total // n, total % n
    shard = math_ops.maximum(flat_ids // (per_shard + 1), (flat_ids - extras) // per_shard)
    row = where(shard < extras, flat_ids % (per_shard + 1), (flat_ids - extras) % per_shard)
    return shard, row


def embedding_lookup(params, ids, partition_strategy: str = "mod", name: str | None = None,
                     validate_indices: bool = True, max_norm=None) -> Tensor:
    """The rows of `params` named by `ids` (tf.nn.embedding_lookup), shape ids.shape + params.shape[1:].

    `params` is one table (a Tensor or Variable), or its shards in rows: a list of them, or a PartitionedVariable.
    With n shards, id i lives in shard i % n at row i // n ("mod"), or in contiguous blocks ("div": 13 ids over 5
    shards are [0..2], [3..5], [6..8], [9, 10], [11, 12]). Each shard's gather is colocated with the shard; the
    results are put back in order with a ParallelDynamicStitch. With `max_norm`, each embedding is scaled down to
    that L2 norm. `validate_indices` is ignored, as in TF (ids are always checked on the CPU).

        tf.nn.embedding_lookup([[0., 1.], [2., 3.], [4., 5.]], [[2], [0]])   # [[[4., 5.]], [[0., 1.]]]

    Raises:
      ValueError: `params` is None or an empty list, or `partition_strategy` is not "mod" or "div".
    """
    del validate_indices  # TF ignores it too
    params = _shards(params)
    with name_scope(name, "embedding_lookup", params + [ids]) as scope:
        params = [convert_to_tensor(p, name="params") for p in params]
        ids = convert_to_tensor(ids, name="ids")
        if len(params) == 1:
            with colocate_with(params[0]):
                result = _clip(gather(params[0], ids, name=scope), ids, max_norm)
            return array_ops.identity(result)  # the result itself carries no colocation with the table
        dtypes = [p.dtype.base_dtype for p in params]
        if len(set(dtypes)) > 1:  # what the stitch of the shards' rows would report
            raise TypeError(f"Tensors in list passed to 'data' of 'ParallelDynamicStitch' Op have types "
                            f"[{', '.join(d.name for d in dtypes)}] that don't all agree.")
        flat_ids = array_ops.reshape(ids, [-1])
        positions = math_ops.range(array_ops.size(flat_ids))
        shard, row = _shard_assignments(params, flat_ids, partition_strategy)
        shard = math_ops.cast(shard, _dtypes.int32)
        rows_per_shard = data_flow_ops.dynamic_partition(row, shard, len(params))
        positions_per_shard = data_flow_ops.dynamic_partition(positions, shard, len(params))
        found = []
        for p, rows in zip(params, rows_per_shard):
            with colocate_with(p):
                found.append(gather(p, rows))
        stitched = data_flow_ops.parallel_dynamic_stitch(positions_per_shard, found, name=scope)
        element_shape = params[0].shape[1:]
        for p in params[1:]:
            element_shape = element_shape.merge_with(p.shape[1:])
        if element_shape.is_fully_defined():
            element_dims = element_shape.as_list()
        else:
            with colocate_with(params[0]):
                element_dims = array_ops.shape(params[0])[1:]
        result = array_ops.reshape(stitched, array_ops.concat([array_ops.shape(ids), element_dims], 0))
        result.set_shape(ids.shape.concatenate(element_shape))
        return _clip(result, ids, max_norm)


def embedding_lookup_sparse(params, sp_ids, sp_weights, partition_strategy: str = "mod", name: str | None = None,
                            combiner: str | None = None, max_norm=None) -> Tensor:
    """For each row of the SparseTensor `sp_ids`, the embeddings of its ids combined (tf.nn.embedding_lookup_sparse):
    weighted by `sp_weights` (a SparseTensor like sp_ids, or None for weight 1), then summed ("sum"), divided by
    the weight sum ("mean", the default) or by the root of the sum of squared weights ("sqrtn").

    The output has shape [rows of sp_ids] + params.shape[1:] (rows up to the last one with an id); each distinct
    id is looked up once (tf.unique), with embedding_lookup's `params`, `partition_strategy` and `max_norm`.

        ids = tf.SparseTensor([[0, 0], [0, 1], [1, 0]], [1, 3, 0], [2, 2])
        tf.nn.embedding_lookup_sparse(table, ids, None, combiner="sum")    # [table[1] + table[3], table[0]]

    Raises:
      TypeError: sp_ids is not a SparseTensor, or sp_weights is neither None nor a SparseTensor.
      ValueError: combiner is not "mean", "sqrtn" or "sum".
    """
    combiner = "mean" if combiner is None else combiner
    if combiner not in ("mean", "sqrtn", "sum"):
        raise ValueError("combiner must be one of 'mean', 'sqrtn' or 'sum'")
    params = _shards(params)
    if not isinstance(sp_ids, SparseTensor):
        raise TypeError("sp_ids must be SparseTensor")
    if sp_weights is not None:
        if not isinstance(sp_weights, SparseTensor):
            raise TypeError("sp_weights must be either None or SparseTensor")
        for a, b in ((sp_ids.values, sp_weights.values), (sp_ids.indices, sp_weights.indices),
                     (sp_ids.dense_shape, sp_weights.dense_shape)):
            a.shape.assert_is_compatible_with(b.shape)
    with name_scope(name, "embedding_lookup_sparse", params + [sp_ids]) as scope:
        segment_ids = math_ops.cast(sp_ids.indices[:, 0], _dtypes.int32)
        ids, idx = sort_ops.unique(sp_ids.values)
        embeddings = embedding_lookup(params, ids, partition_strategy=partition_strategy, max_norm=max_norm)
        if embeddings.dtype.base_dtype in (_dtypes.float16, _dtypes.bfloat16):
            embeddings = math_ops.cast(embeddings, _dtypes.float32)
        if sp_weights is None:
            reduce = {"sum": segment_ops.sparse_segment_sum, "mean": segment_ops.sparse_segment_mean,
                      "sqrtn": segment_ops.sparse_segment_sqrt_n}[combiner]
            return reduce(embeddings, idx, segment_ids, name=scope)
        weights = sp_weights.values
        if weights.dtype.base_dtype != embeddings.dtype.base_dtype:
            weights = math_ops.cast(weights, embeddings.dtype.base_dtype)
        embeddings = gather(embeddings, idx)
        ones = array_ops.fill(array_ops.expand_dims(array_ops.rank(embeddings) - 1, 0), 1)
        weights_shape = weights.shape
        weights = array_ops.reshape(weights, array_ops.concat([array_ops.shape(weights), ones], 0))
        if embeddings.shape.ndims is not None:
            weights.set_shape(weights_shape.concatenate(TensorShape([1] * (embeddings.shape.ndims - 1))))
        embeddings = embeddings * weights
        if combiner == "sum":
            return segment_ops.segment_sum(embeddings, segment_ids, name=scope)
        summed = segment_ops.segment_sum(embeddings, segment_ids)
        if combiner == "mean":
            return math_ops.divide(summed, segment_ops.segment_sum(weights, segment_ids), name=scope)
        weight_norm = math_ops.sqrt(segment_ops.segment_sum(math_ops.pow(weights, 2), segment_ids))
        return math_ops.divide(summed, weight_norm, name=scope)


def _prune(sparse_ids: SparseTensor, sparse_weights, keep: Tensor) -> tuple:
    """Both SparseTensors restricted to the entries where `keep` is True."""
    ids = sparse_ops.sparse_retain(sparse_ids, keep)
    return ids, None if sparse_weights is None else sparse_ops.sparse_retain(sparse_weights, keep)


def safe_embedding_lookup_sparse(embedding_weights, sparse_ids, sparse_weights=None, combiner: str = "mean",
                                 default_id=None, name: str | None = None, partition_strategy: str = "div",
                                 max_norm=None) -> Tensor:
    """embedding_lookup_sparse that tolerates bad input (tf.nn.safe_embedding_lookup_sparse): ids < 0 are dropped,
    and so (unless combiner is "sum") are ids whose weight is <= 0; a row left with no id gets the embedding of
    `default_id`, or zeros without one. Ids and weights of shape [d_0, ..., d_n] give a result of shape
    [d_0, ..., d_{n-1}] + the embedding shape: the last dimension is combined.

        ids = tf.SparseTensor([[0, 0], [0, 1], [2, 0]], [1, -1, 3], [3, 2])
        tf.nn.safe_embedding_lookup_sparse(table, ids)     # [table[1], zeros, table[3]]

    Raises:
      ValueError: `embedding_weights` is None or empty, or its shards cannot take the dtype of `sparse_weights`.
      TypeError: shards of different dtypes.
    """
    if embedding_weights is None or (isinstance(embedding_weights, (list, tuple)) and not embedding_weights):
        raise ValueError(f"Missing embedding_weights {embedding_weights}.")
    shards = _shards(embedding_weights)
    dtype = sparse_weights.dtype if sparse_weights is not None else None
    shards = [convert_to_tensor(w, dtype=dtype) for w in shards]
    with name_scope(name, "embedding_lookup", shards + [sparse_ids.values]) as scope:
        original_shape = sparse_ids.dense_shape
        static_rank = original_shape.shape.with_rank(1).as_tuple()[0]
        rank = array_ops.size(original_shape) if static_rank is None else static_rank
        sparse_ids = sparse_ops.sparse_reshape(sparse_ids, [
            reduction_ops.reduce_prod(slice_(original_shape, [0], [rank - 1])), gather(original_shape, rank - 1)])
        if sparse_weights is not None:
            sparse_weights = SparseTensor(sparse_ids.indices, sparse_weights.values, sparse_ids.dense_shape)
        sparse_ids, sparse_weights = _prune(sparse_ids, sparse_weights, math_ops.greater_equal(sparse_ids.values, 0))
        if combiner != "sum" and sparse_weights is not None:
            sparse_ids, sparse_weights = _prune(sparse_ids, sparse_weights, math_ops.greater(sparse_weights.values, 0))
        sparse_ids, is_row_empty = sparse_ops.sparse_fill_empty_rows(sparse_ids, default_id or 0)
        if sparse_weights is not None:
            sparse_weights, _ = sparse_ops.sparse_fill_empty_rows(sparse_weights, 1.0)
        result = embedding_lookup_sparse(shards, sparse_ids, sparse_weights, combiner=combiner,
                                         partition_strategy=partition_strategy,
                                         name=None if default_id is None else scope, max_norm=max_norm)
        if default_id is None:
            is_row_empty = tile(array_ops.reshape(is_row_empty, [-1, 1]),
                                array_ops.stack([1, array_ops.shape(result)[1]]))
            result = where(is_row_empty, array_ops.zeros_like(result), result, name=scope)
        final = array_ops.reshape(result, array_ops.concat([
            slice_(math_ops.cast(original_shape, _dtypes.int32), [0], [rank - 1]),
            slice_(array_ops.shape(result), [1], [-1])], 0))
        leading = unknown_shape(None if static_rank is None else static_rank - 1)
        final.set_shape(leading.concatenate(result.shape[1:]))
        return final


def safe_embedding_lookup_sparse_v2(embedding_weights, sparse_ids, sparse_weights=None, combiner: str = "mean",
                                    default_id=None, max_norm=None, name: str | None = None) -> Tensor:
    """safe_embedding_lookup_sparse with the "div" partition strategy (TF 2's tf.nn.safe_embedding_lookup_sparse)."""
    return safe_embedding_lookup_sparse(embedding_weights, sparse_ids, sparse_weights=sparse_weights,
                                        combiner=combiner, default_id=default_id, name=name,
                                        partition_strategy="div", max_norm=max_norm)
