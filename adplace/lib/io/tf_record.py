"""TFRecord framing, as TF's event files and TFRecord files use it: each record is

    uint64 length (little-endian) | uint32 masked crc32c of those 8 bytes | data | uint32 masked crc32c of data

    with RecordWriter("/tmp/x.tfrecord") as w:
        w.write(b"one"); w.write(b"two")
    list(read_records("/tmp/x.tfrecord"))          # [b'one', b'two']

A corrupt record (a checksum that does not match) raises DataLossError naming the file and the offset; so does a
record cut short, unless the reader is told the file may still be growing (`partial_tail_ok=True`, TensorBoard's
case): then it stops before the partial record and `RecordReader.offset` says where to resume once it is complete.
"""
from __future__ import annotations

import struct
import threading
from typing import Iterator

from adplace.framework import errors
from adplace.lib.io import crc, file_io

_LENGTH = struct.Struct("<Q")
_CRC = struct.Struct("<I")
HEADER_SIZE = _LENGTH.size + _CRC.size
FOOTER_SIZE = _CRC.size


def encode_record(data: bytes) -> bytes:
    """One framed record holding `data`."""
    header = _LENGTH.pack(len(data))
    return b"".join((header, _CRC.pack(crc.mask(crc.crc32c(header))), data, _CRC.pack(crc.mask(crc.crc32c(data)))))


class RecordWriter:
    """Writes framed records to a file (created or truncated; `append=True` adds to it). Thread-safe: each record is
    written whole."""

    def __init__(self, path, append: bool = False):
        self._path = path
        self._file = file_io.GFile(path, "ab" if append else "wb")
        self._lock = threading.Lock()
        self._file.write(b"")  # open (create) the file now, reporting a bad path here

    path = property(lambda self: self._path)

    def write(self, record: bytes) -> None:
        framed = encode_record(bytes(record))
        with self._lock:
            if self._file is None:
                raise ValueError(f"Writing to a closed record file: {self._path}")
            self._file.write(framed)

    def flush(self) -> None:
        with self._lock:
            if self._file is not None:
                self._file.flush()

    def close(self) -> None:
        """Flush and close; closing twice is harmless."""
        with self._lock:
            f, self._file = self._file, None
        if f is not None:
            f.close()

    def __enter__(self) -> RecordWriter:
        return self

    def __exit__(self, *exc_info) -> None:
        self.close()


class RecordReader:
    """Reads the framed records of a file from `offset` on; `offset` advances past each record read, so a reader of a
    file still being written can call `records()` again later and get the records added since."""

    def __init__(self, path, offset: int = 0, partial_tail_ok: bool = False):
        self._path = path
        self.offset = offset
        self._partial_tail_ok = partial_tail_ok

    def _fail(self, what: str, offset: int) -> errors.DataLossError:
        return errors.DataLossError(None, None, f"{file_io._text(self._path)}: {what} at offset {offset}")

    def records(self) -> Iterator[bytes]:
        """The records from `offset` to the end of the file."""
        with file_io.GFile(self._path, "rb") as f:
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


def read_records(path, partial_tail_ok: bool = False) -> Iterator[bytes]:
    """The records of the file at `path`, in order (DataLossError on a corrupt or, unless `partial_tail_ok`, a
    truncated record)."""
    return RecordReader(path, partial_tail_ok=partial_tail_ok).records()
