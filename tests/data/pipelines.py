"""tf.data pipelines written once for both adplace and TensorFlow (tf.compat.v1): each function takes the `tf`
module and a directory of input files (files.py writes them) and returns a dataset. test_datasets.py runs each in
adplace and, through tf_data_peer.py, in TensorFlow, and compares every element."""
import numpy as np


def slices_tuple(tf, d):
    return tf.data.Dataset.from_tensor_slices((np.arange(6, dtype=np.float32).reshape(3, 2), [b"a", b"b", b"c"]))


def slices_dict_map(tf, d):
    ds = tf.data.Dataset.from_tensor_slices({"x": np.arange(5), "y": np.arange(5) * 10})
    return ds.map(lambda e: {"s": e["x"] + e["y"], "x": e["x"]})


def list_is_one_component(tf, d):
    return tf.data.Dataset.from_tensor_slices([[1, 2], [3, 4]]).map(lambda row: tf.reduce_sum(row))


def tensors_repeat(tf, d):
    return tf.data.Dataset.from_tensors(([1.0, 2.0], 7)).repeat(3)


def range_forms(tf, d):
    return tf.data.Dataset.range(3).concatenate(tf.data.Dataset.range(10, 4, -2)).concatenate(
        tf.data.Dataset.range(2, 9, 3))


def zip_nested(tf, d):
    a, b = tf.data.Dataset.range(5), tf.data.Dataset.range(100, 103)
    return tf.data.Dataset.zip((a, {"b": b, "c": a.map(lambda v: v * 2)}))


def map_captures(tf, d):
    scale = tf.constant(3.0)
    offset = tf.constant([1.0, -1.0]) * 2.0
    return tf.data.Dataset.from_tensor_slices(np.arange(8, dtype=np.float32).reshape(4, 2)).map(
        lambda v: v * scale + offset)


def map_parallel_in_order(tf, d):
    return tf.data.Dataset.range(40).map(lambda v: (v, tf.square(v)), num_parallel_calls=4)


def map_returns_list(tf, d):
    return tf.data.Dataset.range(3).map(lambda v: [v, v + 1])


def filter_then_batch(tf, d):
    return tf.data.Dataset.range(20).filter(lambda v: tf.equal(v % 3, 0)).batch(3)


def batch_drop_remainder(tf, d):
    return tf.data.Dataset.range(10).batch(4, drop_remainder=True)


def padded_batch_default_and_values(tf, d):
    ds = tf.data.Dataset.range(1, 6).map(lambda n: (tf.fill([n], n), tf.fill([2, n], b"s")))
    return ds.padded_batch(2, padded_shapes=([None], [2, 6]), padding_values=(tf.constant(-1, tf.int64),
                                                                                 tf.constant(b"-")))


def flat_map_files(tf, d):
    names = [f"{d}/lines_{k}.txt" for k in range(3)]
    return tf.data.Dataset.from_tensor_slices(names).flat_map(lambda f: tf.data.TextLineDataset(f).skip(1))


def interleave_blocks(tf, d):
    return tf.data.Dataset.range(1, 6).interleave(
        lambda v: tf.data.Dataset.from_tensors(v).repeat(v), cycle_length=2, block_length=2)


def interleave_parallel(tf, d):
    return tf.data.Dataset.range(1, 6).interleave(
        lambda v: tf.data.Dataset.range(v * 10, v * 10 + v), cycle_length=3, block_length=1, num_parallel_calls=2)


def take_skip_repeat(tf, d):
    return tf.data.Dataset.range(10).skip(2).take(5).repeat(2).skip(0).take(-1)


def skip_all(tf, d):
    return tf.data.Dataset.range(4).skip(-1).concatenate(tf.data.Dataset.range(7, 9))


def repeat_empty_ends(tf, d):
    return tf.data.Dataset.range(0).repeat().concatenate(tf.data.Dataset.range(2))


def prefetch_and_cache(tf, d):
    return tf.data.Dataset.range(6).map(lambda v: v * 2).cache().repeat(2).prefetch(3)


def text_lines_crlf_and_gzip(tf, d):
    return tf.data.TextLineDataset([f"{d}/crlf.txt"]).concatenate(
        tf.data.TextLineDataset(f"{d}/lines.gz", compression_type="GZIP"))


def tf_records(tf, d):
    return tf.data.TFRecordDataset([f"{d}/a.tfrecord"]).concatenate(
        tf.data.TFRecordDataset(f"{d}/b.tfrecord.zlib", compression_type="ZLIB"))


def fixed_length(tf, d):
    ds = tf.data.FixedLengthRecordDataset(f"{d}/fixed.bin", record_bytes=3, header_bytes=2, footer_bytes=1)
    return ds.map(lambda r: tf.decode_raw(r, tf.uint8))


def csv_pipeline(tf, d):
    names = [f"{d}/data_{k}.csv" for k in range(2)]
    ds = tf.data.TextLineDataset(names, num_parallel_reads=2).filter(
        lambda line: tf.not_equal(line, "x,header,line"))
    return ds.map(lambda line: tf.decode_csv(line, [[0.0], [0.0], [0]]), num_parallel_calls=2).batch(4)


def generator_args(tf, d):
    def gen(n):
        for i in range(int(n)):
            yield i, [float(i)] * (i % 3)
    return tf.data.Dataset.from_generator(gen, (tf.int64, tf.float32), ((), (None,)), args=(5,)).padded_batch(
        2, ((), (None,)))


def apply_transformation(tf, d):
    return tf.data.Dataset.range(5).apply(lambda ds: ds.map(lambda v: v + 100).take(3))


def shard_and_unbatch(tf, d):
    ds = tf.data.Dataset.range(10).shard(3, 1).batch(2)
    return ds.apply(tf.data.experimental.unbatch()).concatenate(
        tf.data.Dataset.from_tensor_slices(([[1, 2], [3, 4]], [[b"a", b"b"], [b"c", b"d"]])).apply(
            tf.data.experimental.unbatch()).map(lambda n, s: tf.cast(n, tf.int64) * 0 + 99))


def experimental_compositions(tf, d):
    ds = tf.data.Dataset.range(7).apply(tf.data.experimental.map_and_batch(lambda v: v * 2, 3))
    return ds.concatenate(tf.data.Dataset.range(1, 4).apply(tf.data.experimental.parallel_interleave(
        lambda v: tf.data.Dataset.range(v).batch(3), cycle_length=2)))


def py_func_in_map(tf, d):
    return tf.data.Dataset.range(4).map(lambda v: tf.py_func(lambda a: a * 7 + 1, [v], tf.int64))


PIPELINES = {name: fn for name, fn in dict(globals()).items() if callable(fn) and not name.startswith("_")
             and name not in ("np",)}
