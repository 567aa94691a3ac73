"""GraphDefs between adplace and real TensorFlow: every op type adplace registers is written so that TF loads it
(and, for programs without feeds or randomness, computes adplace's values), and GraphDefs TF writes (an MLP with
gradients and an SGD step, a graph with devices and colocation) load into adplace and give TF's values.

TensorFlow runs only in a subprocess (tf_graph_def_peer.py); those tests skip without it. The adplace-only round
trip of every case (GraphDef -> import -> same values) runs everywhere.
"""
import atexit
import functools
import importlib.util
import json
import pathlib
import shutil
import sys
import tempfile

import numpy as np
import pytest

import adplace as tf
from adplace.framework.indexed_slices import IndexedSlices
from adplace.framework.registry import registered_op_types
from adplace.ops.sparse_math_ops import sparse_dense_cwise_add

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "gpu"))
import op_cases  # noqa: E402
from tf_peer import needs_tf, run_peer  # noqa: E402

PEER = pathlib.Path(__file__).with_name("tf_graph_def_peer.py")
# Op types TF does not have: adplace-only (InitializedValue is TF's Variable.initialized_value, a cond there).
NOT_IN_TF = {"InitializedValue"}
# Op types whose values differ between adplace and TF 2.x's CPU kernels, left to their owners.
KNOWN_DIFFERENCES = {"TruncateDiv": "on floats adplace divides exactly, TF 2.x truncates (TF 1.x has no float kernel)"}
# what TF's CPU kernels refuse to run (a case whose run TF refuses with one of these is not compared)
TF_CPU_LIMITS = ("only supports NHWC on device type CPU", "do not yet support dilation rates larger than 1")


def _sparse(dense_shape=(3, 4)):
    return tf.SparseTensor(indices=np.array([[0, 1], [1, 0], [2, 3]], np.int64),
                           values=np.array([1.0, -2.0, 3.0], np.float32), dense_shape=np.array(dense_shape, np.int64))


def _sparse_program(rng):
    """Sparse ops not in op_cases: add (and its gradient), concat, reorder, reshape, slice (and gradient), split,
    reductions, softmax, maximum/minimum, dense-sparse arithmetic and matmul, fill_empty_rows (and gradient)."""
    sp = _sparse()
    dense = tf.constant(op_cases._x(rng, 3, 4))
    scaled = tf.SparseTensor(sp.indices, sp.values * dense[0, 0], sp.dense_shape)  # gradients flow to `dense`
    added = tf.sparse.add(scaled, sp)
    filled, _ = tf.sparse_fill_empty_rows(tf.SparseTensor(sp.indices, scaled.values, [4, 4]), 0.0)
    sliced = tf.sparse.slice(scaled, [0, 0], [2, 4])
    grads = tf.gradients(tf.reduce_sum(added.values) + tf.reduce_sum(filled.values) + tf.reduce_sum(sliced.values),
                         dense)
    outs = [added.values, tf.sparse.concat(1, [sp, sp]).values, tf.sparse.reorder(sp).indices,
            tf.sparse.reshape(sp, [4, 3]).indices, sliced.values, tf.sparse.split(sp_input=sp, num_split=2, axis=1)[0].values,
            tf.sparse.reduce_sum(sp, 1), tf.sparse.reduce_max(sp, 1), tf.sparse.reduce_sum_sparse(sp, 1).values,
            tf.sparse_reduce_max_sparse(sp, 1).values, tf.sparse.softmax(sp).values,
            tf.sparse.maximum(sp, sp).values, tf.sparse.minimum(sp, sp).values, (sp * dense).values,
            (sp / (tf.abs(dense) + 1.0)).values, sparse_dense_cwise_add(sp, dense).values, tf.sparse.add(sp, dense),
            tf.sparse_tensor_dense_matmul(sp, tf.transpose(dense)), tf.sparse_to_dense(sp.indices, [3, 4], sp.values),
            filled.values]
    return outs + [g for g in grads if g is not None], {}


def _segments_and_unique(rng):
    data = tf.constant(op_cases._x(rng, 4, 3))
    idx, seg = tf.constant([0, 1, 3], tf.int32), tf.constant([0, 0, 1], tf.int32)
    outs = [tf.sparse_segment_sum(data, idx, seg), tf.sparse_segment_mean(data, idx, seg),
            tf.sparse_segment_sqrt_n(data, idx, seg), tf.sparse_segment_sum(data, idx, seg, num_segments=3),
            tf.sparse_segment_mean(data, idx, seg, num_segments=3), tf.sparse_segment_sqrt_n(data, idx, seg,
                                                                                            num_segments=3)]
    return outs + list(tf.unique(tf.constant([3, 1, 3, 2]))), {}


def _linalg(rng):
    a = op_cases._x(rng, 3, 3)
    spd = tf.constant(a @ a.T + 3 * np.eye(3, dtype=np.float32))
    rhs = tf.constant(op_cases._x(rng, 3, 2))
    return [tf.cholesky(spd), tf.matrix_determinant(spd), tf.matrix_inverse(spd), tf.matrix_solve(spd, rhs),
            tf.matrix_triangular_solve(tf.cholesky(spd), rhs), tf.self_adjoint_eig(spd)[0]], {}


def _checks(rng):
    x = tf.constant(op_cases._x(rng, 2, 3))
    assertion = tf.Assert(tf.reduce_all(x > -10.0), [x])
    with tf.control_dependencies([assertion]):
        return [tf.Print(x, [x], message="x: ")], {}


def _scripts(rng):
    x = tf.constant(op_cases._x(rng, 2, 3))
    return [tf.py_func(lambda v: v * 2, [x], tf.float32, stateful=False), tf.py_func(lambda v: v + 1, [x], tf.float32)], {}


def _counters(rng):
    v = tf.Variable(0, name="counter")
    init = tf.global_variables_initializer()
    return init, [tf.count_up_to(v, 5)], {}


def _sampling(rng):
    true = tf.constant(np.array([[1], [4]], np.int64))
    logits = tf.constant(op_cases._x(rng, 2, 5))
    sampled = tf.nn.uniform_candidate_sampler(true, 1, 3, True, 10)
    hits = tf.nn.compute_accidental_hits(true, sampled[0], 1)
    return [*sampled, *hits, *tf.nn.log_uniform_candidate_sampler(true, 1, 3, True, 10),
            *tf.nn.fixed_unigram_candidate_sampler(true, 1, 3, True, 5, unigrams=[1.0, 2.0, 3.0, 4.0, 5.0]),
            tf.multinomial(logits, 4), tf.random_shuffle(tf.range(6))], {}


def _saver(rng):
    """A sharded Saver's graph (SaveV2, RestoreV2, MergeV2Checkpoints, ShardedFilename, StringJoin) and
    ShardedFilespec."""
    from adplace.ops import io_ops
    v = tf.Variable(op_cases._x(rng, 2), name="v")
    tf.train.Saver([v], sharded=True)
    return [io_ops.sharded_filespec("ckpt", 2)], {}


def _summaries(rng):
    x = tf.constant(op_cases._x(rng, 1, 4, 4, 3, low=0.0, high=1.0))
    tf.summary.scalar("s", tf.reduce_sum(x))
    tf.summary.histogram("h", x)
    tf.summary.image("i", x)
    tf.summary.audio("a", tf.zeros([1, 10]), 8000.0)
    tf.summary.tensor_summary("t", x)
    return [tf.summary.merge_all()], {}


def _parsing(rng):
    """Parsing ops (parsing_ops.py, string_ops.py): ParseExample, ParseSingleExample, DecodeCSV, DecodeRaw,
    DecodeCompressed, StringSplit. Numbers are fetched (the peer saves values with np.save, no object arrays); the
    string values are compared with TF's in tests/ops/test_parsing_ops.py."""
    import zlib
    example = tf.train.Example(features=tf.train.Features(feature={
        "a": tf.train.Feature(float_list=tf.train.FloatList(value=op_cases._x(rng, 2).tolist())),
        "b": tf.train.Feature(bytes_list=tf.train.BytesList(value=[b"x", b"yz"]))})).SerializeToString()
    features = {"a": tf.FixedLenFeature([2], tf.float32), "b": tf.VarLenFeature(tf.string),
                "c": tf.FixedLenSequenceFeature([], tf.int64, allow_missing=True)}
    single, batch = tf.parse_single_example(example, features), tf.parse_example([example, example], features)
    split = tf.string_split(["a b", "c"])
    inflated = tf.decode_raw(tf.io.decode_compressed([zlib.compress(b"\x00\x01")], "ZLIB"), tf.int16)
    return [single["a"], single["b"].indices, single["c"], batch["a"], batch["b"].indices, batch["c"],
            tf.decode_csv(["1,\"x,y\"", ",z"], [[5], [""]])[0], inflated, split.indices, split.dense_shape], {}


def _queues(rng):
    """Every queue op: four queues filled, then drained (after the fills), then one closed (after the drains)."""
    fifo = tf.FIFOQueue(4, tf.float32, shapes=[[2]])
    pad = tf.PaddingFIFOQueue(4, tf.int32, shapes=[[None]])
    shuffle = tf.RandomShuffleQueue(4, 0, tf.int32, shapes=[[]], seed=3)
    priority = tf.PriorityQueue(4, (tf.int32,), shapes=((),))
    first = pad.enqueue(([1, 2],))
    with tf.control_dependencies([first]):
        second = pad.enqueue(([3],))
    fill = [fifo.enqueue_many((op_cases._x(rng, 2, 2),)), second, shuffle.enqueue(5),
            priority.enqueue_many(([2, 1], [20, 10]))]
    with tf.control_dependencies(fill):
        taken = [fifo.dequeue(), pad.dequeue_many(2), shuffle.dequeue_up_to(1), *priority.dequeue()]
    with tf.control_dependencies([t.op for t in taken]):
        close = fifo.close()
    with tf.control_dependencies([close]):
        return [*taken, fifo.size(), fifo.is_closed()], {}


def _readers(rng):
    """Every reader op: an IdentityReader reads work units from a queue (no files needed); the file readers are
    made but not run. Only the counts are fetched (strings are compared in tests/ops/test_readers.py)."""
    units = tf.FIFOQueue(4, tf.string)
    fill = units.enqueue_many([["a", "b", "c"]])
    reader = tf.IdentityReader()
    others = [tf.TextLineReader(1), tf.FixedLengthRecordReader(4, 1, 1, 2), tf.TFRecordReader(options="GZIP"),
              tf.WholeFileReader()]
    with tf.control_dependencies([fill]):
        first = reader.read(units)
    with tf.control_dependencies(list(first)):
        rest = reader.read_up_to(units, 2)
    with tf.control_dependencies(list(rest)):
        restored = reader.restore_state(reader.serialize_state())
    with tf.control_dependencies([restored]):
        counts = [reader.num_records_produced(), reader.num_work_units_completed()]
    with tf.control_dependencies(counts):
        reset = reader.reset()
    del others
    return [*counts, reset], {}


EXTRA_CASES = {"queues": _queues, "readers": _readers, "saver": _saver, "summaries": _summaries, "sparse": _sparse_program, "segments_unique": _segments_and_unique,
               "linalg": _linalg, "checks": _checks, "scripts": _scripts, "counters": _counters,
               "sampling": _sampling}
EXTRA_CASES["parsing"] = _parsing


def _matching_files(rng):
    """MatchingFiles: how many files of this folder match a pattern (names are compared in test_matching_files.py)."""
    return [tf.size(tf.io.matching_files(str(pathlib.Path(__file__).resolve().with_name("tf_graph_def_p*.py"))))], {}


EXTRA_CASES["matching_files"] = _matching_files


def _sequence_parsing(rng):
    """ParseSingleSequenceExample and ParseSequenceExample (numbers only; strings in tests/ops/test_sequence_parsing.py)."""
    lists = tf.train.FeatureLists(feature_list={"f": tf.train.FeatureList(feature=[
        tf.train.Feature(float_list=tf.train.FloatList(value=op_cases._x(rng, 2).tolist())) for _ in range(3)])})
    example = tf.train.SequenceExample(context=tf.train.Features(feature={
        "c": tf.train.Feature(int64_list=tf.train.Int64List(value=[4, 5]))}), feature_lists=lists).SerializeToString()
    context, sequence = {"c": tf.VarLenFeature(tf.int64)}, {"f": tf.FixedLenSequenceFeature([2], tf.float32)}
    single_context, single = tf.parse_single_sequence_example(example, context, sequence)
    batch_context, batch, lengths = tf.io.parse_sequence_example([example, example], context, sequence)
    return [single_context["c"].indices, single_context["c"].values, single["f"], batch_context["c"].dense_shape,
            batch["f"], lengths["f"]], {}


EXTRA_CASES["sequence_parsing"] = _sequence_parsing


@functools.lru_cache(maxsize=None)
def _dataset_files() -> dict:
    """Input files of the dataset readers, in a folder this test process keeps until it exits (the TF peer reads
    them too)."""
    folder = pathlib.Path(tempfile.mkdtemp(prefix="adplace_datasets_"))
    atexit.register(shutil.rmtree, folder, True)
    (folder / "lines.txt").write_bytes(b"one\ntwo\nthree\n")
    (folder / "fixed.bin").write_bytes(b"HH" + bytes(range(12)) + b"F")
    with tf.io.TFRecordWriter(str(folder / "records.tfrecord")) as writer:
        for record in (b"a", b"bb", b"ccc", b"dddd"):
            writer.write(record)
    return {"text": str(folder / "lines.txt"), "fixed": str(folder / "fixed.bin"),
            "records": str(folder / "records.tfrecord")}


def _datasets(rng):
    """Every dataset and iterator op: pipelines whose functions (map, filter, flat_map, interleave, a one-shot
    iterator's factory holding them) travel in the GraphDef's library, each read whole as one batch; the readers'
    records counted; from_generator built, not run (its py_funcs stay behind, as in TF); an initializable iterator
    (the case's init op) read directly and through a string handle."""
    files = _dataset_files()
    scale = tf.constant(3, tf.int64, name="scale")
    numbers = tf.data.Dataset.range(12)
    whole = []

    def read_whole(dataset):
        whole.append(dataset.batch(64).make_one_shot_iterator().get_next())

    read_whole(numbers.map(lambda v: v * scale).filter(lambda v: tf.equal(v % 2, 0)))
    read_whole(numbers.map(lambda v: (v, v + scale), num_parallel_calls=3).map(lambda a, b: a * b))
    read_whole(tf.data.Dataset.range(4).flat_map(lambda v: tf.data.Dataset.range(v)))
    repeated = (lambda v: tf.data.Dataset.from_tensors(v).repeat(v))
    read_whole(tf.data.Dataset.range(1, 5).interleave(repeated, cycle_length=2, block_length=2))
    read_whole(tf.data.Dataset.range(1, 5).interleave(repeated, cycle_length=3, num_parallel_calls=2))
    slices = tf.data.Dataset.from_tensor_slices((op_cases._x(rng, 3, 2), np.array([1, 2, 3], np.int32)))
    read_whole(tf.data.Dataset.zip((slices, tf.data.Dataset.from_tensors(np.float32(1.5)).repeat())))
    read_whole(tf.data.Dataset.range(1, 4).map(lambda n: tf.fill([n], n)).padded_batch(3, padded_shapes=[None]))
    read_whole(numbers.concatenate(tf.data.Dataset.range(100, 103)).skip(2).take(9).cache("").prefetch(2)
               .repeat(2).shard(2, 1))
    shuffled = tf.data.Dataset.range(6).shuffle(6, seed=5).batch(6).make_one_shot_iterator().get_next()
    counts = [tf.size(tf.data.TextLineDataset(files["text"]).batch(10).make_one_shot_iterator().get_next()),
              tf.size(tf.data.TFRecordDataset(files["records"]).batch(10).make_one_shot_iterator().get_next()),
              tf.size(tf.data.FixedLengthRecordDataset(files["fixed"], 4, header_bytes=2, footer_bytes=1).batch(10)
                      .make_one_shot_iterator().get_next())]
    tf.data.Dataset.from_generator(lambda: iter([1, 2]), tf.int64, []).make_one_shot_iterator()
    direct = tf.data.make_initializable_iterator(numbers.map(lambda v: v + scale).take(3))
    by_handle = tf.data.make_initializable_iterator(numbers.skip(5))
    via = tf.data.Iterator.from_string_handle(by_handle.string_handle(), tf.int64, [])
    init = tf.group(direct.initializer, by_handle.initializer)
    return init, [*whole, tf.reduce_sum(shuffled), *counts, direct.get_next(), via.get_next()], {}


EXTRA_CASES["datasets"] = _datasets


def _sparse_tensors_map(rng):
    """AddSparseToTensorsMap, AddManySparseToTensorsMap (into the first's map), TakeManySparseFromTensorsMap."""
    from adplace.ops import sparse_tensors_map_ops as maps
    first = maps.add_sparse_to_tensors_map(tf.SparseTensor(np.array([[1]], np.int64), [5.0], np.array([2], np.int64)))
    rows = maps.add_many_sparse_to_tensors_map(_sparse((3, 4)), shared_name=first.op.name)
    taken = maps.take_many_sparse_from_tensors_map(first.op, tf.concat([[first], rows], 0))
    return [taken.indices, taken.values, taken.dense_shape], {}


EXTRA_CASES["sparse_tensors_map"] = _sparse_tensors_map


def _accumulators(rng):
    """Every accumulator op: two gradients applied in turn (one stale after set_global_step), then taken."""
    dense = tf.ConditionalAccumulator(tf.float32, shape=[2], shared_name="interop_acc")
    sparse = tf.SparseConditionalAccumulator(tf.float32, shared_name="interop_sparse_acc")
    first = [dense.apply_grad(op_cases._x(rng, 2)), sparse.apply_grad([1], [[2.0, 4.0]], [3, 2])]
    with tf.control_dependencies(first):
        second = [dense.apply_grad(op_cases._x(rng, 2)), sparse.apply_grad([1, 2], [[1.0, 1.0], [3.0, 3.0]], [3, 2])]
    with tf.control_dependencies(second):
        count = dense.num_accumulated()
    with tf.control_dependencies([count]):
        taken = [dense.take_grad(2), *sparse.take_grad(2)]
    with tf.control_dependencies(taken):
        reset = dense.set_global_step(7)
    with tf.control_dependencies([reset]):
        stale = dense.apply_grad(op_cases._x(rng, 2), local_step=3)
    with tf.control_dependencies([stale]):
        return [count, *taken, dense.num_accumulated()], {}


EXTRA_CASES["accumulators"] = _accumulators
RANDOM = op_cases.RANDOM_CASES | {"sampling"}
NO_VALUES = {"scripts", "summaries"}  # Python callbacks stay behind; Summary bytes are not compared here
ALL_CASES = {**op_cases.CASES, **EXTRA_CASES}


def _build(name: str):
    """(graph, init op or None, fetched Tensors and Operations, feed_dict) of case `name`."""
    graph = tf.Graph()
    with graph.as_default():
        built = ALL_CASES[name](np.random.default_rng(0))
    init, (fetches, feeds) = (built[0], built[1:]) if len(built) == 3 else (None, built)
    return graph, init, list(_flat(fetches)), feeds


def _flat(values):
    if isinstance(values, (list, tuple)):
        for v in values:
            yield from _flat(v)
    elif isinstance(values, IndexedSlices):
        yield from (values.values, values.indices)
    elif isinstance(values, tf.SparseTensor):
        yield from (values.indices, values.values)
    elif values is not None:
        yield values


def _run(graph, init, fetches, feeds):
    with tf.Session(graph=graph) as sess:
        if init is not None:
            sess.run(init)
        return sess.run(fetches, feed_dict=feeds)


def _assert_same(actual, expected, rtol=1e-5):
    assert len(actual) == len(expected)
    for a, e in zip(actual, expected):
        if a is None or e is None:  # a fetched Operation
            assert a is None and e is None
            continue
        a, e = np.asarray(a), np.asarray(e)
        assert a.shape == e.shape and a.dtype == e.dtype, (a, e)
        if a.dtype.kind in "fc":
            np.testing.assert_allclose(a, e, rtol=rtol, atol=1e-6)
        else:
            np.testing.assert_array_equal(a, e)


def test_the_cases_cover_every_registered_op_type():
    covered = set()
    for name in ALL_CASES:
        covered |= {op.type for op in _build(name)[0].get_operations()}
    assert set(registered_op_types()) - covered == set()


@pytest.mark.parametrize("name", sorted(ALL_CASES))
def test_every_case_round_trips_through_a_graph_def(name):
    """adplace -> GraphDef bytes -> adplace: the imported graph gives the original's values (shapes and dtypes for
    random programs)."""
    graph, init, fetches, feeds = _build(name)
    data = graph.as_graph_def().SerializeToString()
    copy = tf.Graph()
    with copy.as_default():
        tf.import_graph_def(tf.GraphDef.FromString(data), name="")
    def same(x):
        return copy.as_graph_element(x.name)
    expected = _run(graph, init, fetches, feeds)
    copied = (None if init is None else same(init), [same(t) for t in fetches], {same(k): v for k, v in feeds.items()})
    if name == "scripts":  # the Python functions stay with the graph that made them, as in TF
        with pytest.raises(tf.errors.UnknownError, match="callback .* is not found"):
            _run(copy, *copied)
        return
    actual = _run(copy, *copied)
    if name in RANDOM:  # values (and, for samplers, sizes) differ from run to run
        assert [np.asarray(a).dtype for a in actual] == [np.asarray(e).dtype for e in expected]
    else:
        _assert_same(actual, expected)


def _peer(command: str, folder: pathlib.Path) -> None:
    run_peer(PEER, command, folder, timeout=600)


@needs_tf
def test_tensorflow_loads_every_op_type_adplace_writes(tmp_path):
    """Each case's GraphDef imports into TF (attrs as TF's OpDefs declare them): every registered op type but the
    adplace-only ones loads; TF's values equal adplace's for the cases without feeds or randomness; and each graph as
    TF writes it back loads in adplace and computes what adplace's own did."""
    ours = {}
    for name in ALL_CASES:
        graph, init, fetches, feeds = _build(name)
        graph_def = graph.as_graph_def()
        left_out = {n.name for n in graph_def.node if n.op in NOT_IN_TF}  # fetched only, never read by other nodes
        kept = [n for n in graph_def.node if n.name not in left_out]
        del graph_def.node[:]
        graph_def.node.extend(kept)
        fetches = [f for f in fetches if f.name.split(":")[0] not in left_out]
        (tmp_path / f"{name}.pb").write_bytes(graph_def.SerializeToString())
        updates = any(op.op_def.ref_inputs for op in graph.get_operations())  # read-and-update order is free
        if not feeds and not updates and name not in RANDOM | NO_VALUES:
            ours[name] = [None if getattr(f, "op", f).type in KNOWN_DIFFERENCES else value
                          for f, value in zip(fetches, _run(graph, init, fetches, feeds))]
            spec = {"init": [] if init is None else [init.name], "fetches": [t.name for t in fetches]}
            (tmp_path / f"{name}.json").write_text(json.dumps(spec))
    _peer("load", tmp_path)
    results = json.loads((tmp_path / "results.json").read_text())
    assert {case: error for case, error in results["load"].items() if error != "ok"} == {}
    loaded = {op.type for name in ALL_CASES for op in _build(name)[0].get_operations()} - NOT_IN_TF
    assert loaded == set(registered_op_types()) - NOT_IN_TF
    for name, values in ours.items():
        if results["run"][name] != "ok":  # TF's CPU kernels lack NCHW pooling gradients, and without oneDNN (CPUs
            # without AVX-512) dilated convolution gradients: not the GraphDef's fault
            assert any(limit in results["run"][name] for limit in TF_CPU_LIMITS), results["run"][name]
            continue
        theirs = [None if v is None else np.load(tmp_path / f"{name}.tf.{i}.npy", allow_pickle=False)
                  for i, v in enumerate(values)]  # None: a fetched op, or an op type in KNOWN_DIFFERENCES
        _assert_same(values, theirs, rtol=1e-4)
    # The same graphs as TF writes them (its default attrs filled in) load in adplace, and give adplace's values.
    reloaded_types = set()
    for name in ALL_CASES:
        graph = tf.Graph()
        with graph.as_default():
            tf.import_graph_def(tf.GraphDef.FromString((tmp_path / f"{name}.tf.pbtf").read_bytes()), name="")
        reloaded_types |= {op.type for op in graph.get_operations()}
        if name in ours:
            spec = json.loads((tmp_path / f"{name}.json").read_text())
            with tf.Session(graph=graph) as sess:
                for init_name in spec["init"]:
                    sess.run(init_name)
                again = sess.run([graph.as_graph_element(f) for f in spec["fetches"]])
            _assert_same([None if v is None else a for v, a in zip(ours[name], again)], ours[name])
    assert set(registered_op_types()) - NOT_IN_TF - reloaded_types == set()


@pytest.fixture(scope="module")
def tf_written(tmp_path_factory):
    if importlib.util.find_spec("tensorflow") is None:
        pytest.skip("TensorFlow is not installed")
    folder = tmp_path_factory.mktemp("tf_written")
    _peer("write", folder)
    return folder


def _load(folder: pathlib.Path, graph_name: str):
    names = json.loads((folder / f"{graph_name}.json").read_text())
    graph = tf.Graph()
    with graph.as_default():
        tf.import_graph_def(tf.GraphDef.FromString((folder / f"{graph_name}.pb").read_bytes()), name="")
    return graph, names, lambda key: np.load(folder / f"{graph_name}.{key}.npy", allow_pickle=False)


@needs_tf
def test_a_tf_written_mlp_trains_in_adplace_as_in_tf(tf_written):
    graph, names, ref = _load(tf_written, "mlp")
    feed = {names["x"]: ref("x"), names["y"]: ref("y")}
    with tf.Session(graph=graph) as sess:
        sess.run(names["init"])
        before = sess.run([names["loss"]] + names["grads"], feed)
        sess.run(names["train"], feed)
        after = sess.run([names["loss"]] + names["variables"], feed)
    _assert_same(before, [ref("loss_before")] + [ref(f"grad{i}") for i in range(4)])
    _assert_same(after, [ref("loss_after")] + [ref(f"var{i}") for i in range(4)])
    # and adplace differentiates the imported forward graph itself, to TF's gradients
    with graph.as_default():
        variables = [graph.get_tensor_by_name(n) for n in names["variables"]]
        ours = tf.gradients(graph.get_tensor_by_name(names["loss"]), variables)
    with tf.Session(graph=graph) as sess:
        sess.run(names["init"])
        _assert_same(sess.run(ours, feed), [ref(f"grad{i}") for i in range(4)])


@needs_tf
def test_a_tf_written_graph_keeps_devices_and_colocation(tf_written):
    graph, names, ref = _load(tf_written, "placed")
    near, v, a = (graph.get_operation_by_name(names[k]) for k in ("near", "v", "a"))
    assert v.device == "/device:CPU:0" and a.device == "/job:localhost/replica:0/task:0/device:CPU:0"
    assert near.colocation_groups() == [b"loc:@" + names["v"].encode()] and near.device == "/device:CPU:0"
    total = graph.get_tensor_by_name(names["total"])
    assert total.op.control_inputs == [graph.get_operation_by_name(names["marker"])]
    with tf.Session(graph=graph) as sess:
        sess.run(names["init"])
        got = sess.run([total] + [graph.get_tensor_by_name(n) for n in names["parts"]])
        placed = {op_name: device for op_name, _, _, device, _ in sess.placement_table()}
    _assert_same(got, [ref("total"), ref("part0"), ref("part1")])
    assert placed[names["near"]] == placed[names["v"]]


@needs_tf
def test_a_tf_written_loop_and_its_gradients_run_in_adplace_as_in_tf(tf_written):
    """TF's own while loop (a cond and a TensorArray in the body) and TF's backward loop for its gradients (stacks,
    pops inside the cond's gradient) import and compute TF's values."""
    graph, names, ref = _load(tf_written, "loops")
    assert {"Enter", "Exit", "NextIteration", "LoopCond", "StackPushV2", "StackPopV2", "TensorArrayWriteV3"} <= \
        {op.type for op in graph.get_operations()}
    with tf.Session(graph=graph) as sess:
        sess.run(names["init"])
        got = sess.run([names["loss"]] + names["grads"], {names["x"]: ref("x")})
    _assert_same(got, [ref("loss"), ref("gx"), ref("gw")], rtol=1e-10)
