"""The readers behind TF's reader ops (adplace/ops/reader_ops.py): objects that turn work units (file names) taken
from a queue into (key, value) records, kept as session resources (kernels/readers.py runs them).

Semantics are TF 1.15's (tensorflow/core/framework/reader_base.cc and kernels/*_reader_op.cc):
- A read takes the next work unit from the queue when the current one is finished (a blocking dequeue, so the
  step's deadline, cancellation and Session.close apply); a closed, empty queue is the queue's OutOfRangeError.
- Starting a unit opens its file: a missing file fails that read (NotFoundError naming it) and the next read moves on
  to the next unit. An error while reading (a corrupt TFRecord: DataLossError with file and offset) leaves the unit
  current, so later reads fail the same way, as TF's. WholeFileReader reads the file in the read itself, so a
  missing file is retried as TF does.
- read_up_to(n) returns at most n records, all from one unit (fewer at its end).
- `num_records_produced` counts records produced, `num_work_units_completed` units finished; reset() forgets the
  unit and both counts. WholeFileReader and IdentityReader serialize their state as TF's ReaderBaseState proto.
"""
from __future__ import annotations

import threading

import numpy as np

from adplace.framework import errors
from adplace.lib.io import file_io, tf_record


def _varint(value: int) -> bytes:
    value &= (1 << 64) - 1  # int64 as protobuf writes it
    out = bytearray()
    while True:
        byte, value = value & 0x7F, value >> 7
        out.append(byte | (0x80 if value else 0))
        if not value:
            return bytes(out)


def encode_state(started: int, finished: int, produced: int, work: bytes) -> bytes:
    """A ReaderBaseState message (fields 1-3 int64, 4 bytes; proto3 leaves zeros out)."""
    out = b"".join(_varint(tag << 3) + _varint(v) for tag, v in ((1, started), (2, finished), (3, produced)) if v)
    return out + (_varint(4 << 3 | 2) + _varint(len(work)) + work if work else b"")


def decode_state(data: bytes) -> dict | None:
    """The fields of a ReaderBaseState message, or None when `data` is not one."""
    fields, at = {1: 0, 2: 0, 3: 0, 4: b""}, 0

    def varint():
        nonlocal at
        value = shift = 0
        while True:
            if at >= len(data) or shift > 63:
                raise ValueError
            byte = data[at]
            at += 1
            value |= (byte & 0x7F) << shift
            shift += 7
            if not byte & 0x80:
                return value - (1 << 64) if value >> 63 else value
    try:
        while at < len(data):
            key = varint()
            tag, wire = key >> 3, key & 7
            if wire == 0 and tag in (1, 2, 3):
                fields[tag] = varint()
            elif wire == 2 and tag == 4:
                n = varint()
                if n < 0 or at + n > len(data):
                    return None
                fields[4], at = data[at:at + n], at + n
            else:
                return None
    except ValueError:
        return None
    return fields


class Reader:
    """TF's ReaderBase: the work unit in progress and the counts. Subclasses read records of the current unit."""

    kind = "Reader"
    serializable = False
    settings: tuple = ()  # the attrs a shared reader must be asked for with again
    one_record_per_unit = False  # each unit is one record: it is finished as that record is produced

    def __init__(self, node_name: str):
        self.name = f"{self.kind} '{node_name}'"
        self.cond = threading.Condition(threading.Lock())
        self._busy = False  # a read, reset or restore holds the reader (TF's mutex, but one a deadline can stop)
        self._clear()

    def _clear(self) -> None:
        self.work, self.started, self.finished, self.produced = b"", 0, 0, 0
        self._close_unit()

    # --- per unit (overridden) -------------------------------------------------------------------------------------
    def _open_unit(self) -> None:
        """Start reading `self.work` (OnWorkStartedLocked)."""

    def _close_unit(self) -> None:
        """Let go of the unit's file (OnWorkFinishedLocked, ResetLocked)."""

    def _next(self) -> tuple[bytes, bytes] | None:
        """The unit's next (key, value), or None at its end."""
        raise NotImplementedError

    # --- holding the reader ----------------------------------------------------------------------------------------
    def _hold(self, waits, op, action: str) -> None:
        with self.cond:
            waits.wait(self.cond, lambda: not self._busy, op, action)
            self._busy = True

    def _release(self) -> None:
        with self.cond:
            self._busy = False
            self.cond.notify_all()

    def _next_work(self, queue, waits, op) -> bytes:
        if len(queue.dtypes) != 1:
            raise errors.InvalidArgumentError(None, op, "Expected single component queue")
        if queue.dtypes[0].name != "string":
            raise errors.InvalidArgumentError(None, op, "Expected queue with single string component")
        [(unit,)] = queue.dequeue(1, False, waits, op)
        if np.size(unit) != 1:
            raise errors.InvalidArgumentError(None, op, "Expected to dequeue a one-element string tensor")
        unit = np.asarray(unit, dtype=object).reshape(-1)[0]
        return unit.encode() if isinstance(unit, str) else bytes(unit)

    def read_up_to(self, n: int, queue, waits, op) -> tuple[list, list]:
        """Up to `n` records (at least one unless n is 0), all from one work unit (TF's ReaderBase::ReadUpTo)."""
        keys, values = [], []
        self._hold(waits, op, "Read")
        try:
            while len(keys) < n:
                try:
                    if self.finished >= self.started:  # no unit in progress
                        self.work = self._next_work(queue, waits, op)
                        self._open_unit()
                        self.started += 1
                    record = self._next()
                except errors.OpError as e:
                    if e.op is not None:
                        raise
                    raise type(e)(None, op, e.message) from None
                if record is None:
                    self._close_unit()
                    self.finished = self.started
                    if keys:
                        break
                    continue
                keys.append(record[0])
                values.append(record[1])
                self.produced += 1
                if self.one_record_per_unit:  # TF's at_end with the record: the unit is done now
                    self._close_unit()
                    self.finished = self.started
                    break
        finally:
            self._release()
        return keys, values

    def counts(self) -> tuple[int, int]:
        """(records produced, work units completed)."""
        with self.cond:
            return self.produced, self.finished

    def reset(self, waits, op) -> None:
        self._hold(waits, op, "Reset")
        try:
            self._clear()
        finally:
            self._release()

    def serialize_state(self, op) -> bytes:
        if not self.serializable:
            raise errors.UnimplementedError(None, op, "Reader SerializeState")
        with self.cond:
            return encode_state(self.started, self.finished, self.produced, self.work)

    def restore_state(self, state: bytes, waits, op) -> None:
        """TF's RestoreState: a state that does not parse or is inconsistent resets the reader and fails."""
        if not self.serializable:
            raise errors.UnimplementedError(None, op, "Reader RestoreState")
        self._hold(waits, op, "Restore")
        try:
            fields = decode_state(state)
            problem = None
            if fields is None:
                problem = f"Could not parse state for {self.name}: {state!r}"
            elif min(fields[1], fields[2], fields[3]) < 0:
                problem = f"Unexpected negative value when restoring in {self.name}"
            elif fields[1] > fields[2]:
                problem = f"Inconsistent work started vs. finished when restoring in {self.name}"
            if problem:
                self._clear()
                raise errors.InvalidArgumentError(None, op, problem)
            self.started, self.finished, self.produced, self.work = fields[1], fields[2], fields[3], fields[4]
        finally:
            self._release()

    def close_resource(self) -> None:
        self._close_unit()

    def _key(self, suffix) -> bytes:
        return self.work + b":" + str(suffix).encode()

    def _open(self) -> file_io.GFile:
        """The unit's file, opened now: NotFoundError naming it when missing."""
        return open_now(self.work.decode("utf-8", "surrogateescape"))


class IdentityReader(Reader):
    """Each work unit is one record, both key and value."""

    kind, serializable, one_record_per_unit = "IdentityReader", True, True

    def _next(self):
        return self.work, self.work


class WholeFileReader(IdentityReader):
    """Each file is one record: its name and its contents."""

    kind = "WholeFileReader"

    def _next(self):
        with self._open() as f:
            return self.work, f.read()


class _FileReader(Reader):
    """A reader holding the current unit's open file in `self._file`."""

    _file = None

    def _close_unit(self) -> None:
        f, self._file = self._file, None
        if f is not None:
            f.close()


class TextLineReader(_FileReader):
    """The lines of each file without "\\n" (nor a "\\r" before it), after `skip_header_lines`; keys
    "<file>:<line number>", counting from 1 and counting the header lines."""

    kind = "TextLineReader"

    def __init__(self, node_name: str, skip_header_lines: int):
        super().__init__(node_name)
        self.skip_header_lines = skip_header_lines
        self.settings = (skip_header_lines,)

    def _line(self) -> bytes | None:
        line = self._file.readline()
        ended = line.endswith(b"\n")
        line = line[:-1] if ended else line
        line = line[:-1] if line.endswith(b"\r") else line
        return line if ended or line else None

    def _open_unit(self) -> None:
        self._line_number = 0
        self._file = self._open()
        while self._line_number < self.skip_header_lines and self._line() is not None:
            self._line_number += 1

    def _next(self):
        line = self._line()
        self._line_number += 1
        return None if line is None else (self._key(self._line_number), line)


class FixedLengthRecordReader(_FileReader):
    """Records of `record_bytes` bytes after `header_bytes`, starting `hop_bytes` apart (record_bytes when 0), as
    long as `record_bytes + footer_bytes` bytes remain; keys "<file>:<record number>" from 0. `encoding` "ZLIB" or
    "GZIP" reads a compressed file."""

    kind = "FixedLengthRecordReader"

    def __init__(self, node_name: str, record_bytes: int, header_bytes: int, footer_bytes: int, hop_bytes: int,
                 encoding: str):
        super().__init__(node_name)
        self.record_bytes, self.header_bytes, self.footer_bytes = record_bytes, header_bytes, footer_bytes
        self.hop_bytes = hop_bytes or record_bytes
        self.encoding = encoding
        self.settings = (record_bytes, header_bytes, footer_bytes, self.hop_bytes, encoding)

    def _open_unit(self) -> None:
        self._number, self._cache = 0, b""
        self._file = self._open()
        self._stream = self._file
        if self.encoding in ("ZLIB", "GZIP"):
            path = self.work.decode("utf-8", "surrogateescape")
            self._stream = tf_record.Inflating(self._file, self.encoding, lambda what, at: errors.DataLossError(
                None, None, f"{path}: {what} at offset {at}"))
        if len(self._stream.read(self.header_bytes)) < self.header_bytes:
            raise errors.OutOfRangeError(None, None, f"{self.name}: {path_text(self.work)} is shorter than its "
                                         f"header ({self.header_bytes} bytes)")

    def _next(self):
        if self._number:
            if self.hop_bytes <= len(self._cache):
                self._cache = self._cache[self.hop_bytes:]
            else:
                skip = self.hop_bytes - len(self._cache)
                self._cache = b""
                if len(self._stream.read(skip)) < skip:
                    return None
        wanted = self.record_bytes + self.footer_bytes - len(self._cache)
        data = self._stream.read(wanted)
        if len(data) < wanted:
            return None
        self._cache += data
        key = self._key(self._number)
        self._number += 1
        return key, self._cache[:self.record_bytes]


class TFRecordReader(Reader):
    """The records of TFRecord files ("ZLIB", "GZIP" compressed with `compression_type`); keys "<file>:<offset>"
    (the record's uncompressed offset)."""

    kind = "TFRecordReader"
    _reader = _records = None

    def __init__(self, node_name: str, compression_type: str):
        super().__init__(node_name)
        self.compression_type = compression_type
        self.settings = (compression_type,)

    def _open_unit(self) -> None:
        self._open().close()
        path = self.work.decode("utf-8", "surrogateescape")
        self._reader = tf_record.RecordReader(path, compression=self.compression_type)
        self._records = None

    def _close_unit(self) -> None:
        if self._records is not None:
            self._records.close()
        self._reader = self._records = None

    def _next(self):
        key = self._key(self._reader.offset)
        if self._records is None:
            self._records = self._reader.records()
        try:
            return key, next(self._records)
        except StopIteration:
            return None
        except BaseException:
            self._records = None  # resume at the same offset: the next read meets the same error, as TF's
            raise


def open_now(path: str) -> file_io.GFile:
    """`path` opened for reading now (GFile opens on first use): NotFoundError naming it when missing."""
    f = file_io.GFile(path, "rb")
    try:
        f.read(0)
    except BaseException:
        f.close()
        raise
    return f


def path_text(work: bytes) -> str:
    return work.decode("utf-8", "replace")
