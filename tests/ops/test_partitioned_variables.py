"""Tests for adplace/ops/partitioned_variables.py and the partitioned path of get_variable: TF's partitioners and
their shard counts, part shapes and names, slice specs, reuse rules, partition_info for initializers, the
PartitionedVariable container, create_partitioned_variables, and placing parts with replica_device_setter."""
import numpy as np
import pytest

import adplace as tf
from adplace.ops.partitioned_variables import PartitionInfo
from adplace.ops.variable_scope import _get_default_variable_store, _PartitionInfo


def _partitions(partitioner, shape, dtype=tf.float32, name="v"):
    with tf.variable_scope("root", partitioner=partitioner):
        pv = tf.get_variable(name, dtype=dtype, shape=shape)
    return len(pv._get_variable_list()), list(pv._get_partitions())


def _run(fetches):
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        return sess.run(fetches)


def _iota(shape, dtype=tf.float32, partition_info=None):
    """Row i of a part is 10**i times [0, 1, ...]: each part restarts at row 0, so the parts are told apart."""
    row = np.arange(shape[-1], dtype=np.float32)
    return np.stack([row * 10.0 ** i for i in range(shape[0])]) if len(shape) == 2 else row


# --- partitioners --------------------------------------------------------------------------------------------
def test_fixed_size_partitioner():
    assert _partitions(tf.fixed_size_partitioner(5, axis=0), (10, 10)) == (5, [5, 1])
    assert _partitions(tf.fixed_size_partitioner(4), [20], dtype=tf.int64, name="i") == (4, [4])
    assert _partitions(tf.fixed_size_partitioner(5, axis=1), (4, 3), name="cols") == (3, [1, 3])  # <= the rows


@pytest.mark.parametrize("name, axis, max_shard_bytes, max_shards, expected", [
    ("v0", 0, 131072, None, [1, 1, 1, 1]),   # 4 slices of 16384 bytes fit in one shard
    ("v1", 1, 65536, None, [1, 1, 1, 1]),    # exactly one shard
    ("v2", 2, 32768, None, [1, 1, 2, 1]),    # 8 slices of 4096 bytes per shard
    ("v3a", 3, 2048, None, [1, 1, 1, 32]),   # one slice per shard
    ("v3b", 3, 1024, None, [1, 1, 1, 32]),   # a slice over the limit still makes one shard
    ("v3c", 3, 1024, 33, [1, 1, 1, 32]),
    ("v3d", 3, 1024, 2, [1, 1, 1, 2]),       # max_shards wins over max_shard_bytes
])
def test_variable_axis_size_partitioner(name, axis, max_shard_bytes, max_shards, expected):
    partitioner = tf.variable_axis_size_partitioner(max_shard_bytes=max_shard_bytes, axis=axis,
                                                    max_shards=max_shards)
    assert _partitions(partitioner, (4, 8, 16, 32), name=name) == (int(np.prod(expected)), expected)


def test_variable_axis_size_partitioner_sizes_strings_by_bytes_per_string_element():
    partitioner = tf.variable_axis_size_partitioner(axis=3, max_shard_bytes=32768, bytes_per_string_element=8)
    with tf.variable_scope("root", partitioner=partitioner):
        pv = tf.get_variable("s", initializer=np.array([""] * 4 * 8 * 16 * 32).reshape(4, 8, 16, 32),
                             dtype=tf.string, shape=(4, 8, 16, 32))
    assert len(pv._get_variable_list()) == 4 and pv._get_partitions() == [1, 1, 1, 4]


def test_variable_axis_size_partitioner_errors():
    with pytest.raises(ValueError, match="must be positive"):
        tf.variable_axis_size_partitioner(0)
    with pytest.raises(ValueError, match="must be positive"):
        tf.variable_axis_size_partitioner(10, bytes_per_string_element=0)
    with pytest.raises(ValueError, match="max_shards must be positive"):
        tf.variable_axis_size_partitioner(10, max_shards=-1)
    partitioner = tf.variable_axis_size_partitioner(10)
    with pytest.raises(ValueError, match="shape is not a TensorShape"):
        partitioner(shape=[4], dtype=tf.float32)
    with pytest.raises(ValueError, match="shape is not fully defined"):
        partitioner(shape=tf.TensorShape([None]), dtype=tf.float32)
    with pytest.raises(ValueError, match="dtype is not a DType"):
        partitioner(shape=tf.TensorShape([4]), dtype="float32")


@pytest.mark.parametrize("max_partitions, axis, min_slice_size, shape, expected", [
    (100, 0, 2 << 10, [2048], [4]),
    (100, 0, 256 << 10, [2048, 1024], [32, 1]),
    (16, 0, 256 << 10, [2048, 1024], [16, 1]),     # capped by max_partitions
    (1, 0, 256 << 10, [2048, 1024], [1, 1]),
    (100, 0, 128 << 10, [2048, 1024], [64, 1]),    # smaller slices, more parts
    (100, 0, 512 << 10, [2048, 1024], [16, 1]),
    (100, 1, 256 << 10, [64, 1024, 1, 3], [1, 3, 1, 1]),
    (100, 3, 256 << 10, [64, 1024, 1, 3], [1, 1, 1, 3]),  # capped by the axis' size
    (100, 0, 256 << 10, [16, 128, 1024], [16, 1, 1]),
    (100, 0, 256 << 10, [4, 512, 1024], [4, 1, 1]),
])
def test_min_max_variable_partitioner(max_partitions, axis, min_slice_size, shape, expected):
    partitioner = tf.min_max_variable_partitioner(max_partitions=max_partitions, axis=axis,
                                                  min_slice_size=min_slice_size)
    assert partitioner(shape=tf.TensorShape(shape), dtype=tf.float32) == expected


def test_min_max_variable_partitioner_rejects_a_missing_axis():
    with pytest.raises(ValueError, match="Can not partition variable along axis 2 when shape is only"):
        tf.min_max_variable_partitioner(axis=2)(shape=tf.TensorShape([4, 4]), dtype=tf.float32)


def test_partitioner_answers_are_checked():
    cases = [(lambda **_: 2, "Partitioner must return a sequence"),
             (lambda **_: [2], "does not match the Variable's rank"),
             (lambda **_: [0, 1], "zero partitions for some axes"),
             (lambda **_: [2, 2], "Can only slice a variable along one dimension")]
    for i, (partitioner, message) in enumerate(cases):
        with pytest.raises(ValueError, match=message):
            tf.get_variable(f"bad{i}", shape=[4, 4], partitioner=partitioner)
    with pytest.raises(ValueError, match="Partitioner must be callable, but received: 3"):
        tf.get_variable("bad", shape=[4, 4], partitioner=3)
    with pytest.raises(ValueError, match="must be fully defined"):
        tf.get_variable("unknown", initializer=lambda: tf.zeros([4]), partitioner=tf.fixed_size_partitioner(2),
                        validate_shape=False)


# --- get_variable with a partitioner -------------------------------------------------------------------------
def test_parts_are_named_and_sized_like_tf():
    with tf.variable_scope("scope0", partitioner=tf.fixed_size_partitioner(3)):
        pv = tf.get_variable("name0", shape=(10, 4), initializer=tf.ones_initializer())
    assert pv.name == "scope0/name0"
    assert [v.name for v in pv] == [f"scope0/name0/part_{i}:0" for i in range(3)]
    assert [v.shape.as_list() for v in pv] == [[4, 4], [3, 4], [3, 4]]  # the first 10 % 3 parts get a row more
    assert [v._save_slice_info.spec for v in pv] == ["10 4 0,4:0,4", "10 4 4,3:0,4", "10 4 7,3:0,4"]
    assert all(v._save_slice_info.full_name == "scope0/name0" for v in pv)
    names = [v.name for v in tf.global_variables()]
    assert names == [f"scope0/name0/part_{i}:0" for i in range(3)]
    assert tf.trainable_variables() == list(pv)
    concat = pv.as_tensor()
    assert concat.name == "scope0/name0:0" and concat.shape.as_list() == [10, 4]
    np.testing.assert_array_equal(_run(concat), np.ones((10, 4), np.float32))


def test_partitions_concatenate_along_the_split_axis():
    with tf.variable_scope("root"):
        v0 = tf.get_variable("n0", shape=(2, 2, 2), partitioner=lambda **_: (2, 1, 1))
        v1 = tf.get_variable("n1", shape=(2, 2, 2), partitioner=lambda **_: (1, 2, 1))
    assert v0.get_shape() == (2, 2, 2) and v1.shape == (2, 2, 2)
    assert [p.get_shape() for p in v0] == [(1, 2, 2), (1, 2, 2)]
    assert [p.get_shape() for p in v1] == [(2, 1, 2), (2, 1, 2)]
    assert v1.as_tensor().shape.as_list() == [2, 2, 2]


def test_a_value_initializer_is_sliced_per_part():
    value = np.arange(30, dtype=np.float64).reshape(10, 3)
    with tf.variable_scope("s", partitioner=tf.fixed_size_partitioner(4)):
        from_array = tf.get_variable("a", shape=[10, 3], initializer=value)
        from_tensor = tf.get_variable("t", initializer=tf.constant(value))   # shape taken from the tensor
    assert from_array.dtype == tf.float32 and from_tensor.dtype == tf.float64
    assert all(p.dtype.base_dtype == tf.float64 for p in from_tensor)
    a, t, parts = _run([from_array.as_tensor(), tf.convert_to_tensor(from_tensor), list(from_tensor)])
    np.testing.assert_array_equal(a, value.astype(np.float32))
    np.testing.assert_array_equal(t, value)
    np.testing.assert_array_equal(parts[1], value[3:6])


def test_initializers_get_each_parts_shape_and_partition_info():
    seen = []

    def recording(shape, dtype=None, partition_info=None):
        seen.append((list(shape), partition_info.full_shape, partition_info.var_offset))
        return tf.zeros(shape, dtype)

    tf.get_variable("r", shape=[5, 2], partitioner=tf.fixed_size_partitioner(2), initializer=recording)
    assert seen == [([3, 2], [5, 2], [0, 0]), ([2, 2], [5, 2], [3, 0])]


def test_identity_initializer_slices_the_full_identity():
    pv = tf.get_variable("eye", shape=[4, 4], partitioner=tf.fixed_size_partitioner(3),
                         initializer=tf.initializers.identity())
    np.testing.assert_array_equal(_run(pv.as_tensor()), np.eye(4, dtype=np.float32))


def test_default_initializer_uses_the_full_shapes_fans():
    pv = tf.get_variable("g", shape=[600, 6], partitioner=tf.fixed_size_partitioner(300))
    limit = np.sqrt(6.0 / (600 + 6))   # a part alone, [2, 6], would allow sqrt(6 / 8)
    value = _run(pv.as_tensor())
    assert np.abs(value).max() <= limit and np.abs(value).max() > 0.9 * limit


def test_random_initializers_draw_per_part():
    a, b = tf.create_partitioned_variables([20, 12], [1, 2], tf.random_uniform_initializer())
    c, d = tf.create_partitioned_variables([20, 12], [1, 2], tf.random_uniform_initializer(seed=201))
    a, b, c, d = _run([a, b, c, d])
    assert np.linalg.norm(a - b) > 1e-6
    np.testing.assert_array_equal(c, d)   # TF: one op seed, so each part draws the same numbers


def test_reuse_returns_the_same_partitioned_variable():
    with tf.variable_scope("scope0", partitioner=tf.fixed_size_partitioner(2)) as scope:
        pv = tf.get_variable("name0", shape=(3, 1, 1))
        scope.reuse_variables()
        assert tf.get_variable("name0", shape=(3, 1, 1)) is pv
    with tf.variable_scope("scope0", reuse=True):
        assert tf.get_variable("name0") is pv     # no partitioner needed to reuse
    with tf.variable_scope("scope0", reuse=tf.AUTO_REUSE, partitioner=tf.fixed_size_partitioner(2)):
        assert tf.get_variable("name0", shape=(3, 1, 1)) is pv
    assert len(tf.global_variables()) == 2


def test_reuse_errors():
    with tf.variable_scope("scope0", partitioner=tf.fixed_size_partitioner(2)):
        tf.get_variable("name0", shape=(3, 1, 1))
        with pytest.raises(ValueError, match="Partitioned variable with name scope0/name0 already exists"):
            tf.get_variable("name0", shape=(3, 1, 1))
    for shards in (3, 1):
        with tf.variable_scope("scope0", partitioner=tf.fixed_size_partitioner(shards), reuse=True):
            with pytest.raises(ValueError, match=r"Trying to reuse partitioned variable scope0/name0, but specified "
                                                 rf"partitions \[{shards}, 1, 1\] and found partitions \[2, 1, 1\]"):
                tf.get_variable("name0", shape=(3, 1, 1))
    with tf.variable_scope("scope0", reuse=True):
        with pytest.raises(ValueError, match="but specified shape .* and found shape"):
            tf.get_variable("name0", shape=(4, 1, 1))
        with pytest.raises(ValueError, match="but specified dtype int32 and found dtype float32"):
            tf.get_variable("name0", dtype=tf.int32)
    with tf.variable_scope("scope0", partitioner=tf.fixed_size_partitioner(2), reuse=True):
        with pytest.raises(ValueError, match="PartitionedVariable scope0/missing does not exist"):
            tf.get_variable("missing", shape=(3, 1))


def test_partitioned_and_unpartitioned_variables_of_one_name_clash():
    tf.get_variable("whole", shape=[4])
    with pytest.raises(ValueError, match="unpartitioned version of the variable was found: whole"):
        tf.get_variable("whole", shape=[4], partitioner=tf.fixed_size_partitioner(2))
    tf.get_variable("split", shape=[4], partitioner=tf.fixed_size_partitioner(2))
    with pytest.raises(ValueError, match="No partitioner was provided, but a partitioned version of the variable "
                                         "was found: split/part_0"):
        tf.get_variable("split", shape=[4])


def test_parts_created_outside_the_store_must_match_the_partitioning():
    store = _get_default_variable_store()
    store.get_variable("x/part_0", shape=[2])
    with pytest.raises(ValueError, match="Partitioner returned 3 shards, and shard x/part_0 was found, but "
                                         "x/part_2 was not"):
        tf.get_variable("x", shape=[6], partitioner=tf.fixed_size_partitioner(3))
    store.get_variable("y/part_0", shape=[2])
    store.get_variable("y/part_1", shape=[2])
    with pytest.raises(ValueError, match="so was the extra shard y/part_1"):
        tf.get_variable("y", shape=[6], partitioner=tf.fixed_size_partitioner(1))


def test_get_local_variable_with_a_partitioner():
    pv = tf.get_local_variable("loc", shape=[4, 2], partitioner=tf.fixed_size_partitioner(2))
    assert tf.local_variables() == list(pv) and tf.trainable_variables() == []
    with tf.Session() as sess:
        sess.run(tf.local_variables_initializer())
        assert sess.run(pv.as_tensor()).shape == (4, 2)


def test_each_part_is_regularized():
    tf.get_variable("reg", shape=[4], partitioner=tf.fixed_size_partitioner(2), initializer=tf.ones_initializer(),
                    regularizer=tf.reduce_sum)
    losses = tf.get_collection(tf.GraphKeys.REGULARIZATION_LOSSES)
    assert len(losses) == 2 and _run(losses) == [2.0, 2.0]


def test_custom_getter_sees_the_partitioner():
    seen = []

    def getter(getter, name, *args, **kwargs):
        seen.append(kwargs["partitioner"])
        return getter(name, *args, **kwargs)

    partitioner = tf.fixed_size_partitioner(2)
    pv = tf.get_variable("c", shape=[4], partitioner=partitioner, custom_getter=getter)
    assert seen == [partitioner] and isinstance(pv, tf.PartitionedVariable)


# --- the container -------------------------------------------------------------------------------------------
def test_partitioned_variable_container_api():
    pv = tf.get_variable("pv", shape=[5, 3], dtype=tf.float64, partitioner=tf.fixed_size_partitioner(2))
    parts = pv._get_variable_list()
    assert list(pv) == parts and len(pv) == 2
    assert pv.dtype == tf.float64 and pv.get_shape().as_list() == [5, 3] and pv.shape == pv.get_shape()
    assert pv.graph is tf.get_default_graph()
    assert repr(pv) == "<tf.PartitionedVariable 'pv' shape=(5, 3) dtype=float64 partitions=[2, 1]>"
    assert tf.matmul(pv, tf.ones([3, 1], tf.float64)).shape.as_list() == [5, 1]
    with pytest.raises(ValueError, match="Incompatible type conversion requested to type 'int32'"):
        tf.convert_to_tensor(pv, dtype=tf.int32)
    with pytest.raises(NotImplementedError, match="doesn't support being used as a reference"):
        tf.convert_to_tensor(pv, as_ref=True)


def test_parts_are_sorted_by_offset():
    parts = tf.create_partitioned_variables([4], [2], tf.zeros_initializer())
    pv = tf.PartitionedVariable("PartitionedVariable", [4], tf.float32, parts[::-1], [2])
    assert list(pv) == parts


def test_partitioned_variable_constructor_checks():
    part = tf.create_partitioned_variables([4], [2], tf.zeros_initializer())[0]
    with pytest.raises(TypeError, match="variable_list is not a list or tuple"):
        tf.PartitionedVariable("p", [4], tf.float32, part, [2])
    with pytest.raises(TypeError, match="partitions is not a list or tuple"):
        tf.PartitionedVariable("p", [4], tf.float32, [part], 2)
    with pytest.raises(ValueError, match="partition values must be positive"):
        tf.PartitionedVariable("p", [4], tf.float32, [part], [0])
    with pytest.raises(ValueError, match="variable_list may not be empty"):
        tf.PartitionedVariable("p", [4], tf.float32, [], [2])
    with pytest.raises(ValueError, match="must have a save_slice_info available"):
        tf.PartitionedVariable("p", [4], tf.float32, [tf.Variable([1.0])], [2])
    with pytest.raises(ValueError, match="full shapes must match shape"):
        tf.PartitionedVariable("p", [5], tf.float32, [part], [2])


def test_reading_ignores_and_concat_keeps_the_callers_control_dependencies():
    pv = tf.get_variable("x", shape=[2], initializer=tf.ones_initializer(),
                         partitioner=tf.variable_axis_size_partitioner(4))
    c = tf.constant(1.0)
    graph = tf.get_default_graph()
    with tf.control_dependencies([c]):
        before = set(graph.get_operations())
        read = pv.as_tensor()
        reading_ops = [op for op in graph.get_operations() if op not in before]
        before = set(graph.get_operations())
        pv._concat()
        concat_ops = [op for op in graph.get_operations() if op not in before]
    assert reading_ops and all(op.control_inputs == [] for op in reading_ops)
    assert any(c.op in op.control_inputs for op in concat_ops)
    np.testing.assert_array_equal(_run(read), [1.0, 1.0])


def test_one_part_reads_through_an_identity_named_like_the_variable():
    pv = tf.get_variable("single", shape=[3], partitioner=tf.fixed_size_partitioner(1))
    assert len(pv) == 1 and pv.as_tensor().name == "single:0" and pv.as_tensor().op.type == "Identity"


def test_assign_splits_the_value_over_the_parts():
    pv = tf.get_variable("a", shape=[5, 2], partitioner=tf.fixed_size_partitioner(2))
    value = np.arange(10, dtype=np.float32).reshape(5, 2)
    assigns = pv.assign(value)
    ops = pv.assign(np.zeros((5, 2), np.float32), read_value=False)
    assert len(assigns) == 2 and all(isinstance(op, tf.Operation) for op in ops)
    with pytest.raises(ValueError, match="Assigning 3 values to the 2 parts of a"):
        pv.assign([1.0, 2.0, 3.0])
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        sess.run(assigns)
        np.testing.assert_array_equal(sess.run(pv.as_tensor()), value)
        sess.run(ops)
        assert sess.run(pv.as_tensor()).sum() == 0




def test_assign_add_and_sub_update_each_part_with_its_piece():
    with tf.variable_scope("s", partitioner=tf.fixed_size_partitioner(2)):
        pv = tf.get_variable("pv", shape=[4], initializer=tf.zeros_initializer())
        other = tf.get_variable("other", shape=[4], initializer=tf.constant_initializer(5.0))
    plus = pv.assign_add(tf.constant([1.0, 2.0, 3.0, 4.0]))
    minus = pv.assign_sub([tf.constant([10.0, 10.0]), tf.constant([20.0, 20.0])])
    minus_other = pv.assign_sub(other, read_value=False)
    assert [t.op.type for t in plus] == ["AssignAdd"] * 2 and [t.op.type for t in minus] == ["AssignSub"] * 2
    assert all(isinstance(op, tf.Operation) for op in minus_other)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        assert [p.tolist() for p in sess.run(plus)] == [[1.0, 2.0], [3.0, 4.0]]
        assert [p.tolist() for p in sess.run(minus)] == [[-9.0, -8.0], [-17.0, -16.0]]
        sess.run(minus_other)
        assert sess.run(pv.as_tensor()).tolist() == [-14.0, -13.0, -22.0, -21.0]
# --- PartitionInfo -------------------------------------------------------------------------------------------
def test_partition_info_checks_and_offsets():
    assert _PartitionInfo is PartitionInfo
    for full_shape, var_offset in ((None, [0, 1]), ([0, 1], None), ("foo", [0, 1]), ([0, 1], "foo")):
        with pytest.raises(TypeError, match="must be a sequence"):
            PartitionInfo(full_shape=full_shape, var_offset=var_offset)
    with pytest.raises(ValueError, match="Expected equal length"):
        PartitionInfo(full_shape=[1, 2], var_offset=[0])
    with pytest.raises(ValueError, match="Expected 0 <= offset < shape but found offset=2, shape=2"):
        PartitionInfo(full_shape=[3, 2], var_offset=[0, 2])
    info = PartitionInfo(full_shape=[9, 3], var_offset=[4, 0])
    assert info.full_shape == [9, 3] and info.var_offset == [4, 0]
    assert info.single_slice_dim([3, 3]) == 0 and info.single_offset([3, 3]) == 4
    assert PartitionInfo(full_shape=[9, 3], var_offset=[0, 0]).single_offset([9, 3]) == 0
    with pytest.raises(TypeError, match="`shape` must be a sequence"):
        info.single_slice_dim(None)
    with pytest.raises(ValueError, match="would exceed self.full_shape"):
        info.single_slice_dim([6, 3])
    with pytest.raises(ValueError, match="slice dim could be either dimension 1 or 0"):
        info.single_slice_dim([2, 2])


# --- create_partitioned_variables ----------------------------------------------------------------------------
@pytest.mark.parametrize("slices, specs", [
    (1, ["20 43 0,20:0,43"]),
    (2, ["20 43 0,20:0,22", "20 43 0,20:22,21"]),
    (3, ["20 43 0,20:0,15", "20 43 0,20:15,14", "20 43 0,20:29,14"]),
    (4, ["20 43 0,20:0,11", "20 43 0,20:11,11", "20 43 0,20:22,11", "20 43 0,20:33,10"]),
    (5, ["20 43 0,20:0,9", "20 43 0,20:9,9", "20 43 0,20:18,9", "20 43 0,20:27,8", "20 43 0,20:35,8"]),
])
def test_create_partitioned_variables_uneven_slices(slices, specs):
    value = np.random.default_rng(slices).random((20, 43))
    rnd = tf.Variable(value)
    vs = tf.create_partitioned_variables(rnd.get_shape(), [1, slices], rnd.initialized_value())
    assert [v._save_slice_info.spec for v in vs] == specs
    assert [v.dtype.base_dtype for v in vs] == [tf.float64] * slices
    np.testing.assert_array_equal(_run(tf.concat(vs, 1)), value)


def test_create_partitioned_variables_constant_and_callable_initializers():
    vec = tf.create_partitioned_variables([4], [4], tf.constant([1, 2, 3, 4]))
    mat = tf.create_partitioned_variables([2, 4], [1, 2], tf.constant([[1, 2, 3, 4], [5, 6, 7, 8]]))
    iota = tf.create_partitioned_variables([13, 5], [3, 1], _iota)
    assert [v._save_slice_info.spec for v in vec] == ["4 0,1", "4 1,1", "4 2,1", "4 3,1"]
    assert [v._save_slice_info.spec for v in mat] == ["2 4 0,2:0,2", "2 4 0,2:2,2"]
    assert [v._save_slice_info.spec for v in iota] == ["13 5 0,5:0,5", "13 5 5,4:0,5", "13 5 9,4:0,5"]
    assert [v.dtype.base_dtype for v in vec + mat] == [tf.int32] * 6
    v, m, i = _run([tf.concat(vec, 0), tf.concat(mat, 1), tf.concat(iota, 0)])
    np.testing.assert_array_equal(v, [1, 2, 3, 4])
    np.testing.assert_array_equal(m, [[1, 2, 3, 4], [5, 6, 7, 8]])
    np.testing.assert_array_equal(i, np.concatenate([_iota([5, 5]), _iota([4, 5]), _iota([4, 5])]))


def test_create_partitioned_variables_names():
    value = tf.constant([[1, 2, 3, 4], [5, 6, 7, 8]])
    with tf.variable_scope("hi"):
        vs1 = tf.create_partitioned_variables([2, 4], [1, 2], value)
        vs2 = tf.create_partitioned_variables([2, 4], [1, 2], value)
    assert [v.name for v in vs1 + vs2] == ["hi/PartitionedVariable/part_0:0", "hi/PartitionedVariable/part_1:0",
                                           "hi/PartitionedVariable_1/part_0:0", "hi/PartitionedVariable_1/part_1:0"]
    assert vs2[0]._save_slice_info.full_name == "hi/PartitionedVariable_1"
    with tf.variable_scope("hola") as scope:
        first = tf.create_partitioned_variables([2, 4], [1, 2], value, dtype=tf.int32)
    with tf.variable_scope(scope, reuse=True):
        again = tf.create_partitioned_variables([2, 4], [1, 2], value, dtype=tf.int32)
    assert again == first and first[0]._save_slice_info.full_name == "hola/PartitionedVariable"
    with tf.name_scope("ola"):   # the name scope plays no part in the names
        named = tf.create_partitioned_variables([2, 4], [1, 2], value, name="mine")
    assert [v.name for v in named] == ["mine/part_0:0", "mine/part_1:0"]


@pytest.mark.parametrize("shape, slicing", [
    ([10], [1, 1]), ([10, 20], [1]), ([10, 43], [1]), ([10, 43], [1, 2, 3]),
    ([10, 43], [11, 1]), ([10, 43], [20, 1]), ([10, 43], [1, 50]), ([], []),
])
def test_create_partitioned_variables_errors(shape, slicing):
    with pytest.raises(ValueError):
        tf.create_partitioned_variables(shape, slicing, tf.zeros_initializer())


def test_create_partitioned_variables_refuses_a_custom_getter_scope():
    with tf.variable_scope("g", custom_getter=lambda getter, *a, **k: getter(*a, **k)):
        with pytest.raises(ValueError, match="Private access to _get_partitioned_variable is not allowed"):
            tf.create_partitioned_variables([4], [2], tf.zeros_initializer())


# --- placing parts on parameter servers ----------------------------------------------------------------------
@pytest.mark.parametrize("ps_tasks, tasks", [(2, [0, 1, 0]), (3, [0, 1, 2])])
def test_replica_device_setter_spreads_parts_round_robin(ps_tasks, tasks):
    with tf.device(tf.train.replica_device_setter(ps_tasks=ps_tasks)):
        pv = tf.get_variable("emb", shape=[10, 4], partitioner=tf.fixed_size_partitioner(3))
        y = tf.reduce_sum(pv.as_tensor())
    assert [p.device for p in pv] == [f"/job:ps/task:{t}" for t in tasks]
    assert all(p.initializer.device == p.device for p in pv)   # the Assign sits with its part
    assert y.device == "/job:worker"


def test_greedy_load_balancing_weighs_parts_by_bytes():
    greedy = tf.contrib.training.GreedyLoadBalancingStrategy(2, tf.contrib.training.byte_size_load_fn)
    with tf.device(tf.train.replica_device_setter(ps_tasks=2, ps_strategy=greedy)):
        pv = tf.get_variable("emb", shape=[10, 4], partitioner=tf.fixed_size_partitioner(3))  # 64, 48, 48 bytes
        bias = tf.get_variable("b", shape=[8])                                                 # 32 bytes
    assert [p.device for p in pv] + [bias.device] == ["/job:ps/task:0", "/job:ps/task:1", "/job:ps/task:1",
                                                      "/job:ps/task:0"]


def test_an_optimizer_trains_every_part():
    pv = tf.get_variable("w", shape=[5, 2], initializer=tf.ones_initializer(), partitioner=tf.fixed_size_partitioner(2))
    loss = tf.reduce_sum(pv.as_tensor() * np.arange(10, dtype=np.float32).reshape(5, 2))
    step = tf.train.GradientDescentOptimizer(0.5).minimize(loss)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        sess.run(step)
        np.testing.assert_allclose(sess.run(pv.as_tensor()), 1.0 - 0.5 * np.arange(10).reshape(5, 2))
