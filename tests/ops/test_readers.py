"""TF1's readers (ops/reader_ops.py, kernels/readers.py, kernels/reader_store.py): what each reads, keys as TF's,
counters, reset, state, sharing a filename queue, errors, and blocking reads that honour deadlines and close."""
from __future__ import annotations

import threading
import time

import numpy as np
import pytest

import adplace as tf


def _files_queue(names, close: bool = True):
    queue = tf.FIFOQueue(10, tf.string)
    ops = [queue.enqueue_many([[str(n) for n in names]])] if names else []
    if close:
        with tf.control_dependencies(ops):
            ops = [queue.close()]
    return queue, ops


def _drain(sess, fetches, limit: int = 100) -> list:
    out = []
    for _ in range(limit):
        try:
            value = sess.run(fetches)
            out.append(tuple(value) if isinstance(value, list) else value)
        except tf.errors.OutOfRangeError:
            return out
    raise AssertionError("the reader never ran out")


def test_csv_pipeline_through_a_shuffle_queue(tmp_path):
    a, b = tmp_path / "a.csv", tmp_path / "b.csv"
    a.write_bytes(b"1,x\n2,y\n")
    b.write_bytes(b"3,z\r\n4,w")  # CRLF and no final newline
    files, fill = _files_queue([a, b])
    key, line = tf.TextLineReader().read(files)
    number, word = tf.decode_csv(line, [[0], [""]])
    shuffle = tf.RandomShuffleQueue(10, 0, [tf.string, tf.int32, tf.string], shapes=[[], [], []], seed=1)
    enqueue = shuffle.enqueue([key, number, word])
    with tf.Session() as sess:
        sess.run(fill)
        _drain(sess, enqueue)
        sess.run(shuffle.close())
        got = _drain(sess, shuffle.dequeue())
    assert sorted((k, int(n), w) for k, n, w in got) == [
        (f"{a}:1".encode(), 1, b"x"), (f"{a}:2".encode(), 2, b"y"), (f"{b}:1".encode(), 3, b"z"),
        (f"{b}:2".encode(), 4, b"w")]


def test_skip_header_lines_counts_them_in_keys(tmp_path):
    a, short = tmp_path / "a.csv", tmp_path / "short.csv"
    a.write_bytes(b"head\n1\n2\n")
    short.write_bytes(b"only header\n")
    files, fill = _files_queue([short, a])
    reader = tf.TextLineReader(skip_header_lines=1)
    key, line = reader.read(files)
    with tf.Session() as sess:
        sess.run(fill)
        got = _drain(sess, [key, line])
        assert got == [(f"{a}:2".encode(), b"1"), (f"{a}:3".encode(), b"2")]
        assert sess.run([reader.num_records_produced(), reader.num_work_units_completed()]) == [2, 2]


def test_fixed_length_with_header_footer_and_hop(tmp_path):
    path = tmp_path / "f.bin"
    path.write_bytes(b"HH" + b"abcdefgh" + b"F")
    files, fill = _files_queue([path])
    key, value = tf.FixedLengthRecordReader(3, header_bytes=2, footer_bytes=1, hop_bytes=2).read(files)
    with tf.Session() as sess:
        sess.run(fill)
        got = _drain(sess, [key, value])
    assert got == [(f"{path}:{i}".encode(), v) for i, v in enumerate([b"abc", b"cde", b"efg", b"gh" + b"F"][:3])]


def test_fixed_length_reads_gzip_files(tmp_path):
    import gzip
    path = tmp_path / "f.gz"
    path.write_bytes(gzip.compress(b"abcdef"))
    files, fill = _files_queue([path])
    _, value = tf.FixedLengthRecordReader(2, encoding="GZIP").read(files)
    with tf.Session() as sess:
        sess.run(fill)
        assert _drain(sess, value) == [b"ab", b"cd", b"ef"]


@pytest.mark.parametrize("options", [None, tf.python_io.TFRecordOptions(tf.python_io.TFRecordCompressionType.GZIP)])
def test_tf_record_reader_reads_what_the_writer_wrote(tmp_path, options):
    paths = [tmp_path / "r0", tmp_path / "r1"]
    for i, path in enumerate(paths):
        with tf.python_io.TFRecordWriter(str(path), options) as w:
            w.write(f"rec{i}a".encode())
            w.write(f"rec{i}b".encode())
    files, fill = _files_queue(paths)
    key, value = tf.TFRecordReader(options=options).read(files)
    with tf.Session() as sess:
        sess.run(fill)
        got = _drain(sess, [key, value])
    assert got == [(f"{p}:{off}".encode(), f"rec{i}{c}".encode()) for i, p in enumerate(paths)
                   for off, c in ((0, "a"), (21, "b"))]


def test_whole_file_and_identity_readers(tmp_path):
    a = tmp_path / "a"
    a.write_bytes(b"all\nof it")
    files, fill = _files_queue([a])
    names, names_fill = _files_queue(["u1", "u2"])
    whole = tf.WholeFileReader().read(files)
    identity = tf.IdentityReader().read(names)
    with tf.Session() as sess:
        sess.run([fill, names_fill])
        assert _drain(sess, whole) == [(str(a).encode(), b"all\nof it")]
        assert _drain(sess, identity) == [(b"u1", b"u1"), (b"u2", b"u2")]


def test_read_up_to_stays_within_one_file(tmp_path):
    a, b = tmp_path / "a", tmp_path / "b"
    a.write_bytes(b"1\n2\n3\n")
    b.write_bytes(b"4\n")
    files, fill = _files_queue([a, b])
    reader = tf.TextLineReader()
    keys, values = reader.read_up_to(files, 2)
    assert keys.shape.as_list() == [None]
    with tf.Session() as sess:
        sess.run(fill)
        got = [list(v) for _, v in _drain(sess, [keys, values])]  # noqa: C416
        assert got == [[b"1", b"2"], [b"3"], [b"4"]]
        assert sess.run([reader.num_records_produced(), reader.num_work_units_completed()]) == [4, 2]


def test_reset_forgets_the_file_and_counts(tmp_path):
    a, b = tmp_path / "a", tmp_path / "b"
    a.write_bytes(b"1\n2\n")
    b.write_bytes(b"3\n")
    files, fill = _files_queue([a, b])
    reader = tf.TextLineReader()
    _, value = reader.read(files)
    with tf.Session() as sess:
        sess.run(fill)
        assert sess.run(value) == b"1"
        sess.run(reader.reset())
        assert sess.run([reader.num_records_produced(), reader.num_work_units_completed()]) == [0, 0]
        assert sess.run(value) == b"3"  # a's rest is gone: the next file comes


def test_state_round_trips_for_identity_and_fails_for_text_lines():
    names, fill = _files_queue(["u1", "u2", "u3"])
    reader = tf.IdentityReader()
    read = reader.read(names)
    state = reader.serialize_state()
    restore = reader.restore_state(state)
    bad = reader.restore_state(b"\xff")
    with tf.Session() as sess:
        sess.run(fill)
        sess.run(read)
        saved = sess.run(state)
        sess.run(read)
        sess.run(tf.IdentityReader().restore_state(saved))
        sess.run(reader.restore_state(saved))
        assert sess.run(reader.num_records_produced()) == 1
        sess.run(restore)
        with pytest.raises(tf.errors.InvalidArgumentError, match="Could not parse state"):
            sess.run(bad)
        assert sess.run(reader.num_records_produced()) == 0
        with pytest.raises(tf.errors.UnimplementedError, match="Reader SerializeState"):
            sess.run(tf.TextLineReader().serialize_state())


def test_two_readers_share_one_filename_queue(tmp_path):
    paths = [tmp_path / f"f{i}" for i in range(4)]
    for i, p in enumerate(paths):
        p.write_bytes(f"{i}\n".encode())
    files, fill = _files_queue(paths)
    reads = [tf.TextLineReader().read(files)[1] for _ in range(2)]
    with tf.Session() as sess:
        sess.run(fill)
        got = [v for r in reads for v in _drain(sess, r)]
    assert sorted(got) == [b"0", b"1", b"2", b"3"]


def test_a_missing_file_fails_naming_it_then_the_next_file_is_read(tmp_path):
    good = tmp_path / "good"
    good.write_bytes(b"ok\n")
    files, fill = _files_queue([tmp_path / "missing", good])
    _, value = tf.TextLineReader().read(files)
    with tf.Session() as sess:
        sess.run(fill)
        with pytest.raises(tf.errors.NotFoundError, match="missing"):
            sess.run(value)
        assert sess.run(value) == b"ok"


def test_a_corrupt_record_is_data_loss_with_file_and_offset_again_and_again(tmp_path):
    path = tmp_path / "bad"
    with tf.python_io.TFRecordWriter(str(path)) as w:
        w.write(b"first")
        w.write(b"second")
    data = bytearray(path.read_bytes())
    data[-6] ^= 0xFF  # inside the second record's data
    path.write_bytes(bytes(data))
    files, fill = _files_queue([path])
    _, value = tf.TFRecordReader().read(files)
    with tf.Session() as sess:
        sess.run(fill)
        assert sess.run(value) == b"first"
        for _ in range(2):  # as TF's: the reader stays at the corrupt record
            with pytest.raises(tf.errors.DataLossError, match=f"{path}.*offset 21"):
                sess.run(value)


def test_a_read_waiting_for_file_names_times_out_and_is_cancelled_by_close():
    files, _ = _files_queue([], close=False)
    _, value = tf.IdentityReader().read(files)
    sess = tf.Session()
    options = tf.RunOptions(timeout_in_ms=100)
    with pytest.raises(tf.errors.DeadlineExceededError):
        sess.run(value, options=options)
    failure = []

    def read():
        try:
            sess.run(value)
        except tf.errors.OpError as e:
            failure.append(e)
    thread = threading.Thread(target=read)
    thread.start()
    time.sleep(0.2)
    sess.close()
    thread.join(5)
    assert not thread.is_alive() and isinstance(failure[0], tf.errors.CancelledError)


def test_graph_construction():
    reader = tf.TextLineReader(name="lines")
    assert isinstance(reader, tf.ReaderBase) and reader.reader_ref.dtype == tf.resource
    assert reader.reader_ref.op.type == "TextLineReaderV2" and not reader.supports_serialize
    key, value = reader.read(tf.FIFOQueue(1, tf.string))
    assert key.op.type == "ReaderReadV2" and key.dtype == tf.string and key.shape.as_list() == []
    assert np.asarray(tf.WholeFileReader().supports_serialize)
