"""Datasets of files (TextLineDataset, TFRecordDataset, FixedLengthRecordDataset) and Cache's file store, as TF 1.15
reads them (tensorflow/core/kernels/data/reader_dataset_ops.cc, cache_dataset_ops.cc).

Files are read in order, each opened when the one before it ends. A file that is missing fails that element
(NotFoundError naming it) and a corrupt record fails its element (DataLossError naming file and offset); either
way the next element comes from the next file. "GZIP" and "ZLIB" files are inflated as they are read.
"""
from __future__ import annotations

import os

import numpy as np

from adplace.framework import dtypes as _dtypes
from adplace.framework import errors
from adplace.kernels.dataset_values import Dataset, Iterator
from adplace.kernels.reader_store import open_now
from adplace.kernels.registration import object_scalar
from adplace.lib.io import tensor_bundle, tf_record


def _path(name) -> str:
    return name.decode("utf-8", "surrogateescape") if isinstance(name, bytes) else str(name)


def _stream(f, path: str, compression: str):
    if compression in ("GZIP", "ZLIB"):
        return tf_record.Inflating(f, compression, lambda what, at: errors.DataLossError(
            None, None, f"{path}: {what} at offset {at}"))
    return f


def text_lines(path: str, compression: str):
    """The lines of a file without their "\\n" (or "\\r\\n")."""
    with open_now(path) as raw:
        f = _stream(raw, path, compression)
        pending = b""
        while True:
            chunk = f.read(1 << 16)
            if not chunk:
                break
            lines = (pending + chunk).split(b"\n")
            pending = lines.pop()
            for line in lines:
                yield line[:-1] if line.endswith(b"\r") else line
        if pending:
            yield pending[:-1] if pending.endswith(b"\r") else pending


def fixed_length_records(path: str, header: int, record: int, footer: int, compression: str):
    """Records of `record` bytes after `header` bytes, as long as `record + footer` bytes remain."""
    with open_now(path) as raw:
        if not compression:
            body = os.path.getsize(path) - header - footer
            if body % record:
                raise errors.InvalidArgumentError(
                    None, None, f"Excluding the header ({header} bytes) and footer ({footer} bytes), input file "
                    f"\"{path}\" has body length {body} bytes, which is not an exact multiple of the record length "
                    f"({record} bytes).")
        f = _stream(raw, path, compression)
        f.read(header)
        pending = b""
        while True:
            chunk = f.read(1 << 16)
            pending += chunk
            whole = max(0, (len(pending) - footer) // record)
            for i in range(whole):
                yield pending[i * record:(i + 1) * record]
            pending = pending[whole * record:]
            if not chunk:
                return


class Files(Dataset):
    """The records of `filenames`, in order; `records(path)` yields one file's records (bytes)."""

    def __init__(self, filenames, records):
        self.filenames = [_path(n) for n in np.asarray(filenames, dtype=object).reshape(-1)]
        self.records = records

    def make(self):
        return _FilesIterator(self)


class _FilesIterator(Iterator):
    def __init__(self, dataset: Files):
        self._dataset, self._index, self._records = dataset, 0, None

    def next(self, wait):
        dataset = self._dataset
        while self._index < len(dataset.filenames):
            if self._records is None:
                self._records = dataset.records(dataset.filenames[self._index])
            try:
                record = next(self._records, None)
            except BaseException:
                self._finish_file()
                raise
            if record is not None:
                return [object_scalar(record)]
            self._finish_file()
        return None

    def _finish_file(self):
        records, self._records = self._records, None
        self._index += 1
        if records is not None:
            records.close()

    def close(self):
        if self._records is not None:
            self._records.close()


def text_line_dataset(filenames, compression: str) -> Files:
    return Files(filenames, lambda path: text_lines(path, compression))


def tf_record_dataset(filenames, compression: str) -> Files:
    return Files(filenames, lambda path: tf_record.read_records(path, compression=compression))


def fixed_length_record_dataset(filenames, header: int, record: int, footer: int, compression: str) -> Files:
    if record <= 0:
        raise errors.InvalidArgumentError(None, None, f"record_bytes must be greater than zero, got {record}")
    return Files(filenames, lambda path: fixed_length_records(path, header, record, footer, compression))


class FileStore:
    """Cache's store in a file: a tensor bundle at `prefix` (TF's `<filename>.index` and data shard) holding each
    element's components and the element count, written atomically once a first pass ends."""

    def __init__(self, prefix: str, dtypes: list):
        self.prefix, self.dtypes = prefix, [_dtypes.as_dtype(d) for d in dtypes]

    def load(self) -> list | None:
        if not os.path.exists(tensor_bundle.index_filename(self.prefix)):
            return None
        reader = tensor_bundle.BundleReader(self.prefix)
        count = int(reader.read("count"))
        return [[reader.read(f"{i:010d}/{c}") for c in range(len(self.dtypes))] for i in range(count)]

    def save(self, elements: list) -> None:
        if os.path.exists(tensor_bundle.index_filename(self.prefix)):
            return
        writer = tensor_bundle.BundleWriter(self.prefix)
        writer.add("count", np.asarray(len(elements), np.int64), _dtypes.int64)
        for i, element in enumerate(elements):
            for c, (value, dtype) in enumerate(zip(element, self.dtypes)):
                writer.add(f"{i:010d}/{c}", value, dtype)
        writer.finish()
