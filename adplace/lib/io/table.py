"""TF's immutable sorted string table (tensorflow/core/lib/io/table*, LevelDB's SSTable format): the `.index` file
of a V2 checkpoint maps each key to a serialized message.

Layout: data blocks, a metaindex block, an index block, then a 48-byte footer. A block holds entries
`varint32 shared, varint32 unshared, varint32 value_size, key[shared:], value` (keys prefix-compressed against the
previous key, reset at a restart point every 16 entries), then the restart offsets (uint32 each) and their count;
each block is followed by a 1-byte compression type and the masked CRC-32C of block + type. The index block maps a
key >= every key of a data block (here: its last key) to that block's handle (varint64 offset, varint64 size); the
footer holds the metaindex and index handles, zero padding to 40 bytes, and the magic number.

    with open("m.index", "wb") as f:
        write_table(f, [(b"", header), (b"w", entry)])
    read_table(open("m.index", "rb").read(), "m.index")     # [(b"", header), (b"w", entry)]

TF writes uncompressed blocks (type 0), which is all this reader accepts: a snappy-compressed block (type 1) is
refused with UnimplementedError. Damaged or truncated tables raise DataLossError naming the file, as TF does.
"""
from __future__ import annotations

import struct
from collections.abc import Iterable
from typing import IO

from adplace.framework import errors
from adplace.lib.io import crc

MAGIC = 0xDB4775248B80FB57
FOOTER_SIZE = 48
BLOCK_TRAILER_SIZE = 5
BLOCK_SIZE = 262144  # TF's table::Options::block_size
RESTART_INTERVAL = 16
_NO_COMPRESSION, _SNAPPY = 0, 1


# --- varints -----------------------------------------------------------------------------------------------------
def put_varint(out: bytearray, value: int) -> None:
    while value >= 0x80:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)


def get_varint(data, pos: int, limit: int, bits: int = 64) -> tuple[int, int]:
    """(value, next position) of the varint at `pos`; ValueError if it is cut off by `limit` or too long."""
    value = shift = 0
    while pos < limit and shift < bits:
        byte = data[pos]
        pos += 1
        value |= (byte & 0x7F) << shift
        if byte < 0x80:
            return value, pos
        shift += 7
    raise ValueError("bad varint")


# --- writing -----------------------------------------------------------------------------------------------------
class _BlockBuilder:
    def __init__(self, restart_interval: int):
        self.buffer = bytearray()
        self.restarts = [0]
        self.count = 0
        self.last_key = b""
        self.restart_interval = restart_interval

    def add(self, key: bytes, value: bytes) -> None:
        shared = 0
        if self.count < self.restart_interval:
            limit = min(len(key), len(self.last_key))
            while shared < limit and key[shared] == self.last_key[shared]:
                shared += 1
        else:
            self.restarts.append(len(self.buffer))
            self.count = 0
        put_varint(self.buffer, shared)
        put_varint(self.buffer, len(key) - shared)
        put_varint(self.buffer, len(value))
        self.buffer += key[shared:]
        self.buffer += value
        self.last_key = key
        self.count += 1

    def size_estimate(self) -> int:
        return len(self.buffer) + 4 * len(self.restarts) + 4

    def finish(self) -> bytes:
        return bytes(self.buffer) + struct.pack(f"<{len(self.restarts)}I", *self.restarts) + struct.pack(
            "<I", len(self.restarts))


def _write_block(f: IO[bytes], offset: int, contents: bytes) -> tuple[int, int]:
    """Write a block and its trailer at `offset`; returns (its handle's offset and size)."""
    trailer = bytes([_NO_COMPRESSION])
    checksum = crc.mask(crc.crc32c(trailer, crc.crc32c(contents)))
    f.write(contents)
    f.write(trailer + struct.pack("<I", checksum))
    return offset, len(contents)


def _handle(offset: int, size: int) -> bytes:
    out = bytearray()
    put_varint(out, offset)
    put_varint(out, size)
    return bytes(out)


def write_table(f: IO[bytes], items: Iterable[tuple[bytes, bytes]], block_size: int = BLOCK_SIZE) -> None:
    """Write `items` ((key, value) pairs, keys strictly increasing bytewise) as a table to the binary file `f`.

    Raises:
      ValueError: the keys are not strictly increasing.
    """
    offset = 0
    block = _BlockBuilder(RESTART_INTERVAL)
    index = _BlockBuilder(1)
    last_key = None
    for key, value in items:
        if last_key is not None and key <= last_key:
            raise ValueError(f"table keys must be strictly increasing: {key!r} after {last_key!r}")
        block.add(key, value)
        last_key = key
        if block.size_estimate() >= block_size:
            handle = _write_block(f, offset, block.finish())
            offset += handle[1] + BLOCK_TRAILER_SIZE
            index.add(last_key, _handle(*handle))
            block = _BlockBuilder(RESTART_INTERVAL)
    if block.count or block.buffer:
        handle = _write_block(f, offset, block.finish())
        offset += handle[1] + BLOCK_TRAILER_SIZE
        index.add(last_key, _handle(*handle))
    metaindex = _write_block(f, offset, _BlockBuilder(RESTART_INTERVAL).finish())
    offset += metaindex[1] + BLOCK_TRAILER_SIZE
    index_handle = _write_block(f, offset, index.finish())
    footer = (_handle(*metaindex) + _handle(*index_handle)).ljust(FOOTER_SIZE - 8, b"\0")
    f.write(footer + struct.pack("<II", MAGIC & 0xFFFFFFFF, MAGIC >> 32))


# --- reading -----------------------------------------------------------------------------------------------------
class _Corrupt(Exception):
    pass


def _block(data: bytes, handle_bytes: bytes, pos: int, filename: str) -> tuple[memoryview, int]:
    """The contents of the block whose handle starts at handle_bytes[pos]; (contents, position after the handle)."""
    try:
        offset, pos = get_varint(handle_bytes, pos, len(handle_bytes))
        size, pos = get_varint(handle_bytes, pos, len(handle_bytes))
    except ValueError:
        raise _Corrupt("bad block handle") from None
    end = offset + size + BLOCK_TRAILER_SIZE
    if end > len(data) - FOOTER_SIZE:
        raise _Corrupt(f"truncated block read (block at {offset} of {size} bytes; the file has {len(data)})")
    view = memoryview(data)
    contents, kind = view[offset:offset + size], data[offset + size]
    (stored,) = struct.unpack_from("<I", data, offset + size + 1)
    if crc.unmask(stored) != crc.crc32c(bytes(view[offset:offset + size + 1])):
        raise _Corrupt(f"block checksum mismatch (block at {offset})")
    if kind == _SNAPPY:
        raise errors.UnimplementedError(None, None, f"{filename}: the table has a snappy-compressed block; adplace "
                                        "reads only uncompressed tables (TF writes them uncompressed)")
    if kind != _NO_COMPRESSION:
        raise _Corrupt(f"bad block type {kind}")
    return contents, pos


def _entries(block: memoryview) -> list[tuple[bytes, bytes]]:
    size = len(block)
    if size < 4:
        raise _Corrupt("bad block contents (too short)")
    (num_restarts,) = struct.unpack_from("<I", block, size - 4)
    limit = size - 4 - 4 * num_restarts
    if num_restarts < 1 or limit < 0:
        raise _Corrupt("bad block contents (restart array)")
    out = []
    pos, key = 0, b""
    try:
        while pos < limit:
            shared, pos = get_varint(block, pos, limit, 32)
            unshared, pos = get_varint(block, pos, limit, 32)
            value_size, pos = get_varint(block, pos, limit, 32)
            if shared > len(key) or pos + unshared + value_size > limit:
                raise _Corrupt("bad entry in block")
            key = key[:shared] + bytes(block[pos:pos + unshared])
            pos += unshared
            out.append((key, bytes(block[pos:pos + value_size])))
            pos += value_size
    except ValueError:
        raise _Corrupt("bad entry in block") from None
    return out


def read_table(data: bytes, filename: str) -> list[tuple[bytes, bytes]]:
    """Every (key, value) of the table `data` (the whole file's bytes), in key order.

    Raises:
      DataLossError: `data` is not a whole, undamaged table (naming `filename`).
      UnimplementedError: a block is snappy-compressed.
    """
    try:
        if len(data) < FOOTER_SIZE:
            raise _Corrupt(f"file is too short ({len(data)} bytes) to be an sstable")
        low, high = struct.unpack_from("<II", data, len(data) - 8)
        if (high << 32 | low) != MAGIC:
            raise _Corrupt("not an sstable (bad magic number)")
        footer = data[len(data) - FOOTER_SIZE:len(data) - 8]
        _, pos = _block(data, footer, 0, filename)  # the metaindex: checked, unused (TF writes no filters)
        index, _ = _block(data, footer, pos, filename)
        items: list[tuple[bytes, bytes]] = []
        for last_key, handle in _entries(index):
            block, _ = _block(data, handle, 0, filename)
            for key, value in _entries(block):
                if (items and key <= items[-1][0]) or key > last_key:
                    raise _Corrupt("keys out of order")
                items.append((key, value))
        return items
    except _Corrupt as e:
        raise errors.DataLossError(None, None, f"Unable to read table {filename}: {e}. The file is truncated or "
                                   "corrupted.") from None
