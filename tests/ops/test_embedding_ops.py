"""Tests for adplace/ops/embedding_ops.py: tf.nn.embedding_lookup over one table and over shards ("mod" and "div",
uneven shards, Variables, a PartitionedVariable), max_norm, names, the colocation of each shard's gather, sparse
gradients, and tf.nn.embedding_lookup_sparse with its three combiners."""

import numpy as np
import pytest

import adplace as tf
from placement_log import CPU0, GPU0, GPU1

TABLE = np.arange(26.0).reshape(13, 2)
IDS = np.array([[3, 12, 0], [7, 7, 10]])


def run(fetches, feed_dict=None):
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        return sess.run(fetches, feed_dict)


def dense(value):
    """A fetched gradient as an array: an IndexedSlicesValue summed into its dense shape."""
    if hasattr(value, "indices"):
        out = np.zeros(value.dense_shape, dtype=value.values.dtype)
        np.add.at(out, value.indices, value.values)
        return out
    return np.asarray(value)


def mod_shards(n):
    return [TABLE[i::n] for i in range(n)]


def div_shards(n):
    return np.array_split(TABLE, n)  # the first len % n shards get one extra row, as TF's "div"


# --- lookups --------------------------------------------------------------------------------------------------------
def test_single_table_names_and_values():
    e = tf.nn.embedding_lookup(TABLE, IDS)
    assert e.op.type == "Identity" and e.op.name == "embedding_lookup/Identity"
    gather = e.op.inputs[0].op
    assert gather.type == "GatherV2" and gather.name == "embedding_lookup"
    assert e.shape.as_list() == [2, 3, 2]
    np.testing.assert_array_equal(run(e), TABLE[IDS])
    named = tf.nn.embedding_lookup(TABLE, [1], name="emb")
    assert named.op.name == "emb/Identity" and named.op.inputs[0].op.name == "emb"


@pytest.mark.parametrize("shards", [2, 3, 5])
@pytest.mark.parametrize("strategy", ["mod", "div"])
def test_sharded_tables(shards, strategy):
    pieces = (mod_shards if strategy == "mod" else div_shards)(shards)
    e = tf.nn.embedding_lookup([tf.constant(p) for p in pieces], IDS, partition_strategy=strategy)
    assert e.shape.as_list() == [2, 3, 2]
    assert [op.type for op in tf.get_default_graph().get_operations()].count("DynamicPartition") == 2
    np.testing.assert_array_equal(run(e), TABLE[IDS])


def test_div_with_shards_of_unknown_size_and_int64_ids():
    pieces = div_shards(5)
    holders = [tf.placeholder(tf.float64, [None, 2]) for _ in pieces]
    e = tf.nn.embedding_lookup(holders, tf.constant(IDS, tf.int64), partition_strategy="div")
    assert e.shape.as_list() == [2, 3, 2]
    np.testing.assert_array_equal(run(e, dict(zip(holders, pieces))), TABLE[IDS])
    unknown_row = tf.placeholder(tf.float64, [None, None])
    e2 = tf.nn.embedding_lookup([unknown_row, tf.constant(pieces[1])], [0, 3, 2], partition_strategy="div")
    assert e2.shape.as_list() == [3, 2]
    np.testing.assert_array_equal(run(e2, {unknown_row: pieces[0][:3]}), TABLE[[0, 3, 2]])


def test_variables_and_a_partitioned_variable():
    vs = [tf.Variable(p, name=f"shard{i}") for i, p in enumerate(mod_shards(3))]
    np.testing.assert_array_equal(run(tf.nn.embedding_lookup(vs, IDS)), TABLE[IDS])
    with tf.variable_scope("emb", partitioner=tf.fixed_size_partitioner(3)):
        w = tf.get_variable("w", initializer=tf.constant(TABLE))
    e = tf.nn.embedding_lookup(w, IDS, partition_strategy="div")
    gathers = [op for op in tf.get_default_graph().get_operations() if op.type == "GatherV2"
               and op.name.startswith("embedding_lookup_1/")]
    assert len(gathers) == 3
    np.testing.assert_array_equal(run(e), TABLE[IDS])


def test_max_norm_clips_each_embedding():
    table = np.array([[3.0, 4.0], [0.3, 0.4], [0.0, 0.0]])
    ids = [[0, 1], [2, 0]]
    expected = table[ids] / np.maximum(np.linalg.norm(table[ids], axis=-1, keepdims=True) / 1.0, 1.0)
    np.testing.assert_allclose(run(tf.nn.embedding_lookup(table, ids, max_norm=1.0)), expected)
    sharded = tf.nn.embedding_lookup([table[0::2], table[1::2]], ids, max_norm=1.0)
    np.testing.assert_allclose(run(sharded), expected)


def test_argument_errors():
    with pytest.raises(ValueError, match="params must be specified"):
        tf.nn.embedding_lookup(None, [0])
    with pytest.raises(ValueError, match="Need at least one param"):
        tf.nn.embedding_lookup([], [0])
    with pytest.raises(ValueError, match="Unrecognized partition strategy: bogus"):
        tf.nn.embedding_lookup([TABLE, TABLE], [0], partition_strategy="bogus")


def test_out_of_range_id_is_the_gathers_error():
    with pytest.raises(tf.errors.InvalidArgumentError, match=r"indices\[1\] = 13 is not in \[0, 13\)"):
        run(tf.nn.embedding_lookup(TABLE, [0, 13]))


# --- placement ------------------------------------------------------------------------------------------------------
def test_each_shards_gather_is_colocated_with_its_parameter_server():
    with tf.device("/job:ps/task:0"):
        w0 = tf.Variable(TABLE[0::2], name="w0")
    with tf.device("/job:ps/task:1"):
        w1 = tf.Variable(TABLE[1::2], name="w1")
    with tf.device("/job:worker"):
        e = tf.nn.embedding_lookup([w0, w1], IDS)
    devices = {op.name: op.device for op in tf.get_default_graph().get_operations()}
    assert devices["embedding_lookup/GatherV2"] == "/job:ps/task:0"
    assert devices["embedding_lookup/GatherV2_1"] == "/job:ps/task:1"
    assert devices["embedding_lookup"] == devices["embedding_lookup/DynamicPartition"] == "/job:worker"
    assert e.op.device == "/job:worker"
    g0, g1 = tf.gradients(tf.reduce_sum(e), [w0, w1])
    assert isinstance(g0, tf.IndexedSlices) and isinstance(g1, tf.IndexedSlices)


def test_gathers_run_on_the_shards_devices(gpus):
    with tf.device("/gpu:0"):
        w0 = tf.Variable(TABLE[0::2].astype(np.float32), name="w0")
    with tf.device("/gpu:1"):
        w1 = tf.Variable(TABLE[1::2].astype(np.float32), name="w1")
    with tf.device("/cpu:0"):
        e = tf.nn.embedding_lookup([w0, w1], IDS)
        single = tf.nn.embedding_lookup(w1, [1, 2])
    graph = tf.get_default_graph()
    sess = tf.Session()
    sess.run(tf.global_variables_initializer())
    np.testing.assert_array_equal(sess.run(e), TABLE[IDS])
    assert sess.placement(graph.get_tensor_by_name("embedding_lookup/GatherV2:0")) == GPU0
    assert sess.placement(graph.get_tensor_by_name("embedding_lookup/GatherV2_1:0")) == GPU1
    assert sess.placement(e) == CPU0
    assert sess.placement(single.op.inputs[0]) == GPU1 and sess.placement(single) == CPU0


# --- gradients ------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("strategy", ["mod", "div"])
def test_gradients_are_sparse_per_shard(strategy):
    pieces = (mod_shards if strategy == "mod" else div_shards)(3)
    vs = [tf.Variable(p) for p in pieces]
    weights = np.arange(12.0).reshape(2, 3, 2)
    e = tf.nn.embedding_lookup(vs, IDS, partition_strategy=strategy)
    grads = tf.gradients(tf.reduce_sum(e * weights), vs)
    assert all(isinstance(g, tf.IndexedSlices) for g in grads)
    expected = np.zeros_like(TABLE)
    np.add.at(expected, IDS.ravel(), weights.reshape(-1, 2))
    got = run(grads)
    whole = np.zeros_like(TABLE)
    order = np.arange(13)
    shard_rows = [order[i::3] for i in range(3)] if strategy == "mod" else np.array_split(order, 3)
    for rows, g in zip(shard_rows, got):
        whole[rows] = dense(g)
    np.testing.assert_array_equal(whole, expected)


def test_numeric_gradient_of_a_sharded_lookup_with_max_norm():
    x = tf.placeholder(tf.float64, [7, 2])
    e = tf.nn.embedding_lookup([x, tf.constant(TABLE[1::2] / 10)], [[0, 5], [12, 4]], max_norm=0.8)
    with tf.Session():
        error = tf.test.compute_gradient_error(x, [7, 2], e, [2, 2, 2], x_init_value=TABLE[0::2] / 10)
    assert error < 1e-5  # max_norm's scaling is curved: central differences are only that close


# --- embedding_lookup_sparse ----------------------------------------------------------------------------------------
SP_INDICES = [[0, 0], [0, 1], [1, 0], [3, 0], [3, 1], [3, 2]]
SP_IDS = [1, 3, 0, 1, 1, 12]
SP_WEIGHTS = [2.0, 0.5, 1.0, 3.0, 1.0, 0.25]


def sparse_reference(combiner, weights, empty_row):
    rows = np.array([i for i, _ in SP_INDICES])
    out = np.zeros((4, 2))
    for r in range(4):
        members = rows == r
        if not members.any():
            out[r] = empty_row
            continue
        w = np.asarray(weights)[members]
        total = (TABLE[np.array(SP_IDS)[members]] * w[:, None]).sum(axis=0)
        out[r] = {"sum": total, "mean": total / w.sum(), "sqrtn": total / np.sqrt((w ** 2).sum())}[combiner]
    return out


@pytest.mark.parametrize("combiner", ["sum", "mean", "sqrtn"])
@pytest.mark.parametrize("weighted", [False, True])
def test_embedding_lookup_sparse(combiner, weighted):
    sp_ids = tf.SparseTensor(SP_INDICES, tf.constant(SP_IDS, tf.int64), [4, 3])
    sp_weights = tf.SparseTensor(SP_INDICES, SP_WEIGHTS, [4, 3]) if weighted else None
    params = [tf.constant(p) for p in mod_shards(3)]
    y = tf.nn.embedding_lookup_sparse(params, sp_ids, sp_weights, combiner=combiner)
    assert y.op.name == "embedding_lookup_sparse"
    # a row without ids: weighted mean and sqrtn divide 0 by 0, as TF's do (its docs assume no empty rows)
    empty_row = np.nan if weighted and combiner != "sum" else 0.0
    expected = sparse_reference(combiner, SP_WEIGHTS if weighted else [1.0] * len(SP_IDS), empty_row)
    np.testing.assert_allclose(run(y), expected)


def test_embedding_lookup_sparse_argument_errors_and_gradient():
    sp_ids = tf.SparseTensor(SP_INDICES, tf.constant(SP_IDS, tf.int64), [4, 3])
    with pytest.raises(TypeError, match="sp_ids must be SparseTensor"):
        tf.nn.embedding_lookup_sparse(TABLE, [1, 2], None)
    with pytest.raises(TypeError, match="sp_weights must be either None or SparseTensor"):
        tf.nn.embedding_lookup_sparse(TABLE, sp_ids, [1.0])
    with pytest.raises(ValueError, match="combiner must be one of 'mean', 'sqrtn' or 'sum'"):
        tf.nn.embedding_lookup_sparse(TABLE, sp_ids, None, combiner="max")
    x = tf.placeholder(tf.float64, [13, 2])
    y = tf.nn.embedding_lookup_sparse(x, sp_ids, None, combiner="sqrtn")
    with tf.Session():
        assert tf.test.compute_gradient_error(x, [13, 2], y, [4, 2], x_init_value=TABLE) < 1e-8


# --- safe_embedding_lookup_sparse -----------------------------------------------------------------------------------
SAFE_TABLE = np.arange(12.0).reshape(4, 3)
SAFE_INDICES = [[0, 0], [0, 1], [0, 2], [1, 0], [3, 0], [4, 0], [4, 1]]
SAFE_IDS = [0, 1, -1, -1, 2, 0, 1]            # row 1: only an invalid id; row 2: nothing
SAFE_WEIGHTS = [1.0, 2.0, 1.0, 1.0, 3.0, 0.0, -0.5]   # row 4: no positive weight


def _safe_inputs(shape=(5, 4), indices=SAFE_INDICES):
    ids = tf.SparseTensor(indices, np.array(SAFE_IDS, np.int64), shape)
    weights = tf.SparseTensor(indices, np.array(SAFE_WEIGHTS, np.float32), shape)
    return ids, weights


def test_safe_lookup_prunes_bad_ids_and_weights_and_fills_empty_rows():
    table = SAFE_TABLE.astype(np.float32)
    ids, weights = _safe_inputs()
    mean_row0 = (table[0] + 2 * table[1]) / 3
    zeros = np.zeros(3)
    np.testing.assert_allclose(run(tf.nn.safe_embedding_lookup_sparse(table, ids, weights)),
                               [mean_row0, zeros, zeros, table[2], zeros], rtol=1e-6)
    np.testing.assert_allclose(run(tf.nn.safe_embedding_lookup_sparse(table, ids, weights, default_id=3)),
                               [mean_row0, table[3], table[3], table[2], table[3]], rtol=1e-6)
    unweighted = (table[0] + table[1]) / 2
    np.testing.assert_allclose(run(tf.nn.safe_embedding_lookup_sparse(table, ids)),
                               [unweighted, zeros, zeros, table[2], unweighted], rtol=1e-6)
    # "sum" keeps ids of weight <= 0
    np.testing.assert_allclose(run(tf.nn.safe_embedding_lookup_sparse(table, ids, weights, combiner="sum")),
                               [table[0] + 2 * table[1], zeros, zeros, 3 * table[2], -0.5 * table[1]], rtol=1e-6)


def test_safe_lookup_combines_the_last_dimension_of_higher_rank_ids_over_div_shards():
    table = SAFE_TABLE.astype(np.float32)
    indices = [[0, 0, 0], [0, 0, 1], [0, 0, 2], [0, 1, 0], [1, 0, 0], [1, 1, 0], [1, 1, 1]]
    ids, _ = _safe_inputs((2, 3, 4), indices)
    result = tf.nn.safe_embedding_lookup_sparse(np.array_split(table, 3), ids)
    assert result.shape.as_list() == [None, None, 3]
    unweighted, zeros = (table[0] + table[1]) / 2, np.zeros(3)
    np.testing.assert_allclose(run(result), [[unweighted, zeros, zeros], [table[2], unweighted, zeros]], rtol=1e-6)


@pytest.mark.filterwarnings("ignore:Converting sparse IndexedSlices")  # gather of a gather: TF densifies (and warns) too
def test_safe_lookup_gradient_reaches_only_the_rows_used():
    table = tf.Variable(SAFE_TABLE)
    ids, weights = _safe_inputs()
    weights = tf.SparseTensor(weights.indices, tf.cast(weights.values, tf.float64), weights.dense_shape)
    result = tf.nn.safe_embedding_lookup_sparse(table, ids, weights, default_id=3)
    grad, = tf.gradients(tf.reduce_sum(result), table)
    # row 0 -> ids 0, 1 with weights 1/3, 2/3; rows 1, 2, 4 -> default id 3; row 3 -> id 2
    np.testing.assert_allclose(dense(run(grad)), np.repeat([[1 / 3], [2 / 3], [1.0], [3.0]], 3, axis=1))


def test_safe_lookup_errors():
    ids, weights = _safe_inputs()
    with pytest.raises(ValueError, match=r"Missing embedding_weights \[\]"):
        tf.nn.safe_embedding_lookup_sparse([], ids)
    shards = [SAFE_TABLE[:2].astype(np.float32), SAFE_TABLE[2:]]
    with pytest.raises(TypeError, match="have types \\[float32, float64\\] that don't all agree"):
        tf.nn.safe_embedding_lookup_sparse(shards, ids)
    with pytest.raises(ValueError, match="float32"):
        tf.nn.safe_embedding_lookup_sparse([tf.constant(SAFE_TABLE)], ids, weights)
