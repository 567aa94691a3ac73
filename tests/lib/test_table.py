"""Tests for adplace/lib/io/table.py: TF's (LevelDB's) sorted string table, written and read; damaged tables raise
DataLossError naming the file, snappy blocks UnimplementedError."""
import io
import struct

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from adplace.framework import errors
from adplace.lib.io import crc, table


def _table_bytes(items, **kwargs) -> bytes:
    f = io.BytesIO()
    table.write_table(f, items, **kwargs)
    return f.getvalue()


def test_round_trip_with_prefix_compression_restarts_and_many_blocks():
    items = [(f"layer{i // 7:03d}/w{i:04d}".encode(), bytes([i % 256]) * (i % 50)) for i in range(500)]
    data = _table_bytes(items, block_size=1024)
    assert table.read_table(data, "t.index") == items
    assert len(data) < sum(len(k) + len(v) for k, v in items)  # shared key prefixes are stored once
    assert struct.unpack("<Q", data[-8:])[0] == table.MAGIC


def test_empty_table_and_empty_key():
    assert table.read_table(_table_bytes([]), "t") == []
    assert table.read_table(_table_bytes([(b"", b"header"), (b"a", b"")]), "t") == [(b"", b"header"), (b"a", b"")]


def test_layout_of_a_one_entry_table_is_leveldbs():
    data = _table_bytes([(b"k", b"v")])
    block = bytes([0, 1, 1]) + b"kv" + struct.pack("<II", 0, 1)  # shared 0, unshared 1, value 1, restarts [0], 1
    assert data.startswith(block + b"\0" + struct.pack("<I", crc.mask(crc.crc32c(block + b"\0"))))
    index_block = bytes([0, 1, 2]) + b"k" + bytes([0, len(block)]) + struct.pack("<II", 0, 1)  # "k" -> (0, 13)
    assert data[len(block) + 5 + 8 + 5:][:len(index_block)] == index_block  # after the empty metaindex block
    assert len(data) == len(block) + 5 + 8 + 5 + len(index_block) + 5 + table.FOOTER_SIZE


def test_keys_must_increase():
    with pytest.raises(ValueError, match="strictly increasing"):
        _table_bytes([(b"b", b""), (b"a", b"")])
    with pytest.raises(ValueError, match="strictly increasing"):
        _table_bytes([(b"a", b""), (b"a", b"")])


@pytest.mark.parametrize("content", [b"", b"short", bytes(48), bytes(100) + struct.pack("<Q", table.MAGIC)])
def test_not_a_table_is_data_loss_naming_the_file(content):
    with pytest.raises(errors.DataLossError, match="/x/model.index"):
        table.read_table(content, "/x/model.index")


def test_every_truncation_and_every_flipped_block_byte_is_data_loss():
    data = _table_bytes([(f"key{i:02d}".encode(), b"value" * i) for i in range(40)], block_size=200)
    for length in range(len(data)):
        with pytest.raises(errors.DataLossError, match="m.index"):
            table.read_table(data[:length], "m.index")
    blocks_end = len(data) - table.FOOTER_SIZE
    for position in range(blocks_end):
        damaged = bytearray(data)
        damaged[position] ^= 0x10
        with pytest.raises(errors.DataLossError, match="m.index"):
            table.read_table(bytes(damaged), "m.index")


@settings(max_examples=200, deadline=None)
@given(st.binary(min_size=1, max_size=400), st.data())
def test_random_damage_gives_data_loss_or_the_original_items(raw_value, data):
    items = [(b"a", raw_value), (b"b", raw_value[::-1])]
    content = bytearray(_table_bytes(items))
    position = data.draw(st.integers(0, len(content) - 1))
    content[position] = data.draw(st.integers(0, 255))
    try:
        assert table.read_table(bytes(content), "f") == items
    except errors.DataLossError as e:
        assert "f" in str(e)


def test_a_snappy_block_is_refused_clearly():
    data = bytearray(_table_bytes([(b"k", b"v")]))
    block_size = 3 + 2 + 8
    data[block_size] = 1  # the first data block's compression type: snappy
    data[block_size + 1:block_size + 5] = struct.pack("<I", crc.mask(crc.crc32c(bytes(data[:block_size + 1]))))
    with pytest.raises(errors.UnimplementedError, match="(?s)m.index.*snappy"):
        table.read_table(bytes(data), "m.index")


@given(st.lists(st.binary(max_size=30), unique=True, max_size=60), st.integers(64, 4096))
@settings(max_examples=100, deadline=None)
def test_round_trip_of_arbitrary_sorted_keys(keys, block_size):
    items = [(k, k[::-1] * 2) for k in sorted(keys)]
    assert table.read_table(_table_bytes(items, block_size=block_size), "t") == items
