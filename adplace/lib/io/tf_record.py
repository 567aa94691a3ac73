"""TFRecord framing, as TF's event files and TFRecord files use it: each record is

    uint64 length (little-endian) | uint32 masked crc32c of those 8 bytes | data | uint32 masked crc32c of data

    with RecordWriter("/tmp/x.tfrecord") as w:
        w.write(b"one"); w.write(b"two")
    list(read_records("/tmp/x.tfrecord"))          # [b'one', b'two']

A corrupt record (a checksum that does not match) raises DataLossError naming the file and the offset; so does a
record cut short, unless the reader is told the file may still be growing (`partial_tail_ok=True`, TensorBoard's
case): then it stops before the partial record and `RecordReader.offset` says where to resume once it is complete.

A file may be compressed as a whole, as TF's "ZLIB" and "GZIP" record files are (`compression=`, with `ZlibOptions`
for the zlib parameters TF's TFRecordOptions expose); offsets then count uncompressed bytes.
"""
from __future__ import annotations

import dataclasses
import struct
import threading
import zlib
from typing import Iterator

from adplace.framework import errors
from adplace.lib.io import crc, file_io

_LENGTH = struct.Struct("<Q")
_CRC = struct.Struct("<I")
HEADER_SIZE = _LENGTH.size + _CRC.size
FOOTER_SIZE = _CRC.size
COMPRESSION_TYPES = ("", "ZLIB", "GZIP")
_WINDOW_BITS = {"ZLIB": zlib.MAX_WBITS, "GZIP": zlib.MAX_WBITS + 16}  # TF's defaults (zlib_compression_options.h)
_CHUNK = 256 << 10


@dataclasses.dataclass(frozen=True)
class ZlibOptions:
    """The zlib parameters of a compressed record file; None takes TF's default (zlib_compression_options.h: level
    Z_DEFAULT_COMPRESSION, mem_level 9, window bits 15, +16 for GZIP). A `flush_mode` other than Z_NO_FLUSH flushes
    the compressor after every record."""

    flush_mode: int | None = None
    window_bits: int | None = None
    compression_level: int | None = None
    compression_method: int | None = None
    mem_level: int | None = None
    compression_strategy: int | None = None

    def compressor(self, compression: str):
        def pick(value, default):
            return default if value is None else value
        try:
            return zlib.compressobj(pick(self.compression_level, zlib.Z_DEFAULT_COMPRESSION),
                                    pick(self.compression_method, zlib.DEFLATED),
                                    pick(self.window_bits, _WINDOW_BITS[compression]), pick(self.mem_level, 9),
                                    pick(self.compression_strategy, zlib.Z_DEFAULT_STRATEGY))
        except (ValueError, zlib.error) as e:
            raise errors.InvalidArgumentError(None, None, f"Invalid zlib options for {compression}: {e}") from None


def _check_compression(compression: str) -> str:
    if compression not in COMPRESSION_TYPES:
        raise ValueError(f'Not a valid compression_type: "{compression}"')
    return compression


def encode_record(data: bytes) -> bytes:
    """One framed record holding `data`."""
    header = _LENGTH.pack(len(data))
    return b"".join((header, _CRC.pack(crc.mask(crc.crc32c(header))), data, _CRC.pack(crc.mask(crc.crc32c(data)))))


class RecordWriter:
    """Writes framed records to a file (created or truncated; `append=True` adds to it), compressed as a whole with
    `compression` "ZLIB" or "GZIP" (zlib parameters from `zlib_options`). Thread-safe: each record is written whole.
    As TF's, it writes as it goes: flush() makes what was written readable (a compressed file then ends in a zlib
    partial flush), close() finishes the file."""

    def __init__(self, path, append: bool = False, compression: str = "", zlib_options: ZlibOptions | None = None):
        self._path = path
        self._compressor = None
        if _check_compression(compression):
            self._compressor = (zlib_options or ZlibOptions()).compressor(compression)
            self._flush_mode = (zlib_options or ZlibOptions()).flush_mode
        self._lock = threading.Lock()
        self._file = file_io.GFile(path, "ab" if append else "wb")
        try:
            self._file.write(b"")  # open (create) the file now, reporting a bad path here
        except BaseException:
            self._file.close()
            raise

    path = property(lambda self: self._path)

    def write(self, record: bytes) -> None:
        framed = encode_record(bytes(record))
        with self._lock:
            if self._file is None:
                raise ValueError(f"Writing to a closed record file: {self._path}")
            if self._compressor is None:
                self._file.write(framed)
                return
            self._file.write(self._compressor.compress(framed))
            if self._flush_mode not in (None, zlib.Z_NO_FLUSH):
                self._file.write(self._compressor.flush(self._flush_mode))

    def flush(self) -> None:
        with self._lock:
            if self._file is not None:
                if self._compressor is not None:
                    self._file.write(self._compressor.flush(zlib.Z_PARTIAL_FLUSH))
                self._file.flush()

    def close(self) -> None:
        """Flush, finish the compressed stream, and close; closing twice is harmless. The file is closed even when
        the last write fails."""
        with self._lock:
            f, self._file = self._file, None
        if f is None:
            return
        try:
            if self._compressor is not None:
                f.write(self._compressor.flush(zlib.Z_FINISH))
        finally:
            f.close()

    def __enter__(self) -> RecordWriter:
        return self

    def __exit__(self, *exc_info) -> None:
        self.close()


class Inflating:
    """The uncompressed bytes of a zlib or gzip stream (concatenated gzip members too), read like a file; corrupt
    compressed data raises DataLossError through `fail`."""

    def __init__(self, f, compression: str, fail):
        self._f, self._fail, self._compression = f, fail, compression
        self._inflater = self._new_inflater()
        self._buffer, self._at = b"", 0  # inflated bytes, and how many of them were read
        self._consumed = 0  # compressed bytes fed to the inflater

    def _new_inflater(self):
        return zlib.decompressobj(_WINDOW_BITS[self._compression])

    def _more(self) -> bool:
        """Inflate the next chunk onto the unread bytes; False at the end of the file."""
        chunk = self._inflater.unused_data if self._inflater.eof else b""
        if chunk:
            self._inflater = self._new_inflater()
        else:
            chunk = self._f.read(_CHUNK)
            if not chunk:
                return False
        try:
            inflated = self._inflater.decompress(chunk)
        except zlib.error as e:
            raise self._fail(f"corrupted {self._compression} data ({e})", self._consumed) from None
        self._buffer, self._at = self._buffer[self._at:] + inflated, 0
        self._consumed += len(chunk) - len(self._inflater.unused_data)
        return True

    def read(self, n: int) -> bytes:
        while len(self._buffer) - self._at < n and self._more():
            pass
        data = self._buffer[self._at:self._at + n]
        self._at += len(data)
        return data

    def seek(self, offset: int) -> None:
        while offset > 0:
            got = len(self.read(min(offset, _CHUNK)))
            if not got:
                return
            offset -= got


class RecordReader:
    """Reads the framed records of a file from `offset` on; `offset` advances past each record read, so a reader of a
    file still being written can call `records()` again later and get the records added since. A compressed file
    ("ZLIB", "GZIP") is inflated as it is read; `offset` counts uncompressed bytes."""

    def __init__(self, path, offset: int = 0, partial_tail_ok: bool = False, compression: str = ""):
        self._path = path
        self.offset = offset
        self._partial_tail_ok = partial_tail_ok
        self._compression = _check_compression(compression)

    def _fail(self, what: str, offset: int) -> errors.DataLossError:
        return errors.DataLossError(None, None, f"{file_io._text(self._path)}: {what} at offset {offset}")

    def records(self) -> Iterator[bytes]:
        """The records from `offset` to the end of the file."""
        with file_io.GFile(self._path, "rb") as raw:
            f = Inflating(raw, self._compression, self._fail) if self._compression else raw
            f.seek(self.offset)
            while True:
                start = self.offset
                header = f.read(HEADER_SIZE)
                if not header:
                    return
                if len(header) < HEADER_SIZE:
                    return self._partial(start)
                length, length_crc = _LENGTH.unpack_from(header)[0], _CRC.unpack_from(header, _LENGTH.size)[0]
                if crc.mask(crc.crc32c(header[:_LENGTH.size])) != length_crc:
                    raise self._fail("corrupted record (length checksum mismatch)", start)
                body = f.read(length + FOOTER_SIZE)
                if len(body) < length + FOOTER_SIZE:
                    return self._partial(start)
                data = body[:length]
                if crc.mask(crc.crc32c(data)) != _CRC.unpack_from(body, length)[0]:
                    raise self._fail("corrupted record (data checksum mismatch)", start)
                self.offset = start + HEADER_SIZE + length + FOOTER_SIZE
                yield data

    def _partial(self, start: int) -> None:
        if not self._partial_tail_ok:
            raise self._fail("truncated record", start)

    def __iter__(self) -> Iterator[bytes]:
        return self.records()


def read_records(path, partial_tail_ok: bool = False, compression: str = "") -> Iterator[bytes]:
    """The records of the file at `path`, in order (DataLossError on a corrupt or, unless `partial_tail_ok`, a
    truncated record; NotFoundError for a missing file, at the first record)."""
    return RecordReader(path, partial_tail_ok=partial_tail_ok, compression=compression).records()
