"""Tests for tf.python_io / tf.io record files (adplace/lib/io/tf_record_io.py over tf_record.py's framing and
compression): TFRecordWriter, tf_record_iterator, TFRecordOptions and TFRecordCompressionType with NONE, ZLIB and
GZIP; files exchanged with real TensorFlow in a subprocess both ways (NONE byte for byte, compressed ones by their
inflated bytes); corrupt, truncated and missing files; writer state."""
import gzip
import json
import pathlib
import zlib

import pytest

import adplace as tf
from adplace.lib.io import crc, tf_record
from tests.tf_peer import needs_tf, run_peer

PEER = pathlib.Path(__file__).with_name("tf_record_peer.py")
RECORDS = [b"one", b"", bytes(range(256)), b"x" * 300_000, "\u00e9".encode()]
KINDS = {"NONE": "", "ZLIB": "ZLIB", "GZIP": "GZIP"}
WINDOW_BITS = {"ZLIB": 15, "GZIP": 31}


def _write(path, records, options=None):
    with tf.python_io.TFRecordWriter(str(path), options) as writer:
        for record in records:
            writer.write(record)


def _framed(records) -> bytes:
    out = b""
    for r in records:
        length = len(r).to_bytes(8, "little")
        out += (length + crc.mask(crc.crc32c(length)).to_bytes(4, "little") + r
                + crc.mask(crc.crc32c(r)).to_bytes(4, "little"))
    return out


@pytest.mark.parametrize("kind", list(KINDS))
def test_round_trip_and_file_contents(tmp_path, kind):
    path = tmp_path / "x.tfrecord"
    _write(path, RECORDS, tf.python_io.TFRecordOptions(KINDS[kind]))
    assert list(tf.python_io.tf_record_iterator(str(path), KINDS[kind])) == RECORDS
    data = path.read_bytes()
    if kind == "NONE":
        assert data == _framed(RECORDS)
    else:
        assert zlib.decompress(data, WINDOW_BITS[kind]) == _framed(RECORDS)
        assert len(data) < 10_000  # really compressed
    if kind == "GZIP":
        assert gzip.decompress(data) == _framed(RECORDS)


@needs_tf
def test_files_exchanged_with_tensorflow(tmp_path):
    for kind, compression in KINDS.items():
        _write(tmp_path / f"adplace_{kind}.tfrecord", RECORDS, compression)
    records_file = tmp_path / "records.json"
    records_file.write_text(json.dumps([r.hex() for r in RECORDS]))
    read_by_tf = json.loads(run_peer(PEER, tmp_path, records_file))
    for kind, compression in KINDS.items():
        assert [bytes.fromhex(r) for r in read_by_tf[kind]] == RECORDS, kind
        tf_file = tmp_path / f"tf_{kind}.tfrecord"
        assert list(tf.io.tf_record_iterator(str(tf_file), compression)) == RECORDS, kind
        ours, theirs = (tmp_path / f"adplace_{kind}.tfrecord").read_bytes(), tf_file.read_bytes()
        if kind == "NONE":
            assert ours == theirs
        else:
            assert zlib.decompress(ours, WINDOW_BITS[kind]) == zlib.decompress(theirs, WINDOW_BITS[kind])


def test_options_and_compression_types():
    Options, Type = tf.python_io.TFRecordOptions, tf.python_io.TFRecordCompressionType
    assert (Type.NONE, Type.ZLIB, Type.GZIP) == (0, 1, 2)
    get = Options.get_compression_type_string
    assert [get(None), get(""), get(Type.NONE), get(Type.ZLIB), get(Type.GZIP)] == ["", "", "", "ZLIB", "GZIP"]
    assert [get("GZIP"), get(Options("ZLIB")), get(Options(Type.GZIP)), get(Options())] == ["GZIP", "ZLIB", "GZIP", ""]
    with pytest.raises(ValueError, match='Not a valid compression_type: "BZIP2"'):
        Options("BZIP2")
    with pytest.raises(ValueError, match="Not a valid compression_type"):
        tf.io.TFRecordWriter("/tmp/never-written.tfrecord", "gzip")
    assert tf.io.TFRecordWriter is tf.python_io.TFRecordWriter


def test_zlib_options_change_the_stream(tmp_path):
    fast, best = tmp_path / "fast", tmp_path / "best"
    _write(fast, RECORDS, tf.python_io.TFRecordOptions("ZLIB", compression_level=0))
    _write(best, RECORDS, tf.python_io.TFRecordOptions("ZLIB", compression_level=9, mem_level=1))
    assert fast.stat().st_size > len(_framed(RECORDS)) > best.stat().st_size
    for path in (fast, best):
        assert list(tf.python_io.tf_record_iterator(str(path), "ZLIB")) == RECORDS


def test_writer_state(tmp_path):
    path = tmp_path / "w.tfrecord"
    writer = tf.python_io.TFRecordWriter(str(path), "GZIP")
    writer.write(b"first")
    writer.write("second")  # str is written as UTF-8
    writer.flush()  # readable before close: a zlib partial flush
    assert list(tf.python_io.tf_record_iterator(str(path), "GZIP")) == [b"first", b"second"]
    writer.close()
    writer.close()
    with pytest.raises(tf.errors.FailedPreconditionError, match="Writer is closed"):
        writer.write(b"late")
    assert list(tf.python_io.tf_record_iterator(str(path), "GZIP")) == [b"first", b"second"]
    with pytest.raises(tf.errors.NotFoundError):
        tf.python_io.TFRecordWriter(str(tmp_path / "no" / "dir" / "x.tfrecord"))


def _corrupt(tmp_path, offset: int, compression: str = ""):
    path = tmp_path / "c.tfrecord"
    _write(path, [b"good", b"payload"], compression)
    data = bytearray(path.read_bytes())
    data[offset] ^= 0xFF
    path.write_bytes(bytes(data))
    return path


def test_corrupt_truncated_and_missing_files(tmp_path):
    second = 12 + 4 + 4  # the second record's offset
    path = _corrupt(tmp_path, second + 2)  # its length
    records = tf.python_io.tf_record_iterator(str(path))
    assert next(records) == b"good"
    with pytest.raises(tf.errors.DataLossError, match=rf"c\.tfrecord: corrupted record \(length checksum mismatch\) "
                                                      rf"at offset {second}"):
        next(records)
    path = _corrupt(tmp_path, second + 12 + 3)  # its data
    with pytest.raises(tf.errors.DataLossError, match=f"data checksum mismatch.*at offset {second}"):
        list(tf.python_io.tf_record_iterator(str(path)))
    path.write_bytes(_framed([b"good", b"payload"])[:-3])
    with pytest.raises(tf.errors.DataLossError, match=f"truncated record at offset {second}"):
        list(tf.python_io.tf_record_iterator(str(path)))
    missing = tf.python_io.tf_record_iterator(str(tmp_path / "missing.tfrecord"))
    with pytest.raises(tf.errors.NotFoundError, match="missing.tfrecord"):
        next(missing)


def test_corrupt_compressed_files(tmp_path):
    path = _corrupt(tmp_path, 12, "GZIP")
    with pytest.raises(tf.errors.DataLossError, match=r"c\.tfrecord: "):
        list(tf.python_io.tf_record_iterator(str(path), "GZIP"))
    path = tmp_path / "t.tfrecord"
    _write(path, [b"a" * 1000, b"b" * 1000], "ZLIB")
    data = path.read_bytes()
    path.write_bytes(data[:len(data) // 2])
    with pytest.raises(tf.errors.DataLossError, match="truncated record"):
        list(tf.python_io.tf_record_iterator(str(path), "ZLIB"))


def test_compressed_reader_resumes_at_an_uncompressed_offset(tmp_path):
    path = tmp_path / "r.tfrecord"
    _write(path, [b"a", b"bb", b"ccc"], "ZLIB")
    reader = tf_record.RecordReader(str(path), compression="ZLIB")
    assert next(reader.records()) == b"a"
    assert reader.offset == 12 + 1 + 4
    assert list(tf_record.RecordReader(str(path), reader.offset, compression="ZLIB")) == [b"bb", b"ccc"]
