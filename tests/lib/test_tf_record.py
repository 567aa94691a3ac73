"""Tests for adplace/lib/io/tf_record.py: TFRecord framing (length, masked crc32c of the length, data, masked crc32c
of the data), corruption and truncation reported as DataLossError naming the file, and a reader that follows a file
still being written. Interop: records read by TensorBoard's own reader."""
import struct
import threading

import pytest

import adplace as tf
from adplace.lib.io import crc, tf_record


def test_framing_is_tfs(tmp_path):
    framed = tf_record.encode_record(b"hello")
    length = struct.pack("<Q", 5)
    assert framed == (length + struct.pack("<I", crc.mask(crc.crc32c(length))) + b"hello"
                      + struct.pack("<I", crc.mask(crc.crc32c(b"hello"))))
    assert len(framed) == tf_record.HEADER_SIZE + 5 + tf_record.FOOTER_SIZE


def test_write_then_read(tmp_path):
    path = str(tmp_path / "r.tfrecord")
    records = [b"", b"one", bytes(range(256)) * 100]
    with tf_record.RecordWriter(path) as w:
        for r in records:
            w.write(r)
    assert list(tf_record.read_records(path)) == records
    with tf_record.RecordWriter(path, append=True) as w:
        w.write(b"more")
    assert list(tf_record.read_records(path)) == records + [b"more"]


def test_records_are_read_by_tensorboards_reader(tmp_path):
    from tensorboard.compat.tensorflow_stub.pywrap_tensorflow import PyRecordReader_New

    path = str(tmp_path / "r.tfrecord")
    with tf_record.RecordWriter(path) as w:
        w.write(b"first")
        w.write(b"second")
    reader = PyRecordReader_New(path.encode())
    seen = []
    for _ in range(2):
        reader.GetNext()
        seen.append(reader.record())
    assert seen == [b"first", b"second"]


@pytest.mark.parametrize("position, what", [(3, "length checksum"), (9, "length checksum"),
                                            (14, "data checksum"), (18, "data checksum")])
def test_a_flipped_byte_is_data_loss(tmp_path, position, what):
    path = tmp_path / "r.tfrecord"
    with tf_record.RecordWriter(str(path)) as w:
        w.write(b"hello")  # bytes 0-7 length, 8-11 its crc, 12-16 data, 17-20 data crc
    data = bytearray(path.read_bytes())
    data[position] ^= 0x40
    path.write_bytes(bytes(data))
    with pytest.raises(tf.errors.DataLossError, match=f"r.tfrecord: corrupted record .{what}.* at offset 0"):
        list(tf_record.read_records(str(path)))


def test_a_truncated_record_is_data_loss_unless_the_file_may_grow(tmp_path):
    path = tmp_path / "r.tfrecord"
    with tf_record.RecordWriter(str(path)) as w:
        w.write(b"complete")
        w.write(b"cut short")
    whole = path.read_bytes()
    first_end = tf_record.HEADER_SIZE + 8 + tf_record.FOOTER_SIZE
    for cut in (first_end + 5, len(whole) - 1):  # inside the header, inside the footer
        path.write_bytes(whole[:cut])
        with pytest.raises(tf.errors.DataLossError, match=f"truncated record at offset {first_end}"):
            list(tf_record.read_records(str(path)))
        assert list(tf_record.read_records(str(path), partial_tail_ok=True)) == [b"complete"]


def test_a_reader_resumes_where_a_growing_file_left_off(tmp_path):
    path = tmp_path / "r.tfrecord"
    second = tf_record.encode_record(b"second")
    path.write_bytes(tf_record.encode_record(b"first") + second[:7])
    reader = tf_record.RecordReader(str(path), partial_tail_ok=True)
    assert list(reader.records()) == [b"first"]
    assert list(reader.records()) == []
    with open(path, "ab") as f:
        f.write(second[7:])
    assert list(reader.records()) == [b"second"]
    assert reader.offset == path.stat().st_size


def test_concurrent_writers_never_interleave_a_record(tmp_path):
    path = str(tmp_path / "r.tfrecord")
    with tf_record.RecordWriter(path) as w:
        def write(k):
            for i in range(200):
                w.write(f"{k}:{i}".encode() * 50)
        threads = [threading.Thread(target=write, args=(k,)) for k in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    records = list(tf_record.read_records(path))
    assert sorted(records) == sorted(f"{k}:{i}".encode() * 50 for k in range(4) for i in range(200))


def test_writing_after_close_fails_and_close_twice_is_fine(tmp_path):
    w = tf_record.RecordWriter(str(tmp_path / "r.tfrecord"))
    w.close()
    w.close()
    with pytest.raises(ValueError, match="closed record file"):
        w.write(b"x")


def test_a_missing_file_is_not_found(tmp_path):
    with pytest.raises(tf.errors.NotFoundError):
        list(tf_record.read_records(str(tmp_path / "nope")))
