"""tf.python_io's record-file API (tf.io.TFRecordWriter, tf.python_io.tf_record_iterator, TFRecordOptions), over
the framing and compression of tf_record.py:

    with TFRecordWriter("/tmp/x.tfrecord", TFRecordOptions(TFRecordCompressionType.GZIP)) as w:
        w.write(b"one")
    list(tf_record_iterator("/tmp/x.tfrecord", "GZIP"))      # [b'one']

Options are TF's: a TFRecordOptions, a TFRecordCompressionType value (NONE, ZLIB, GZIP) or a string ("", "ZLIB",
"GZIP"); None means no compression. Files are TF's byte for byte without compression.
"""
from __future__ import annotations

from typing import Iterator

from adplace.framework import errors
from adplace.lib.io import tf_record


class TFRecordCompressionType:
    """The compression of a record file (tf.python_io.TFRecordCompressionType)."""

    NONE = 0
    ZLIB = 1
    GZIP = 2


class TFRecordOptions:
    """How a record file is compressed (tf.io.TFRecordOptions); the zlib parameters left None take TF's defaults.
    `input_buffer_size` and `output_buffer_size` are accepted for TF's signature (Python's zlib buffers itself)."""

    compression_type_map = {TFRecordCompressionType.ZLIB: "ZLIB", TFRecordCompressionType.GZIP: "GZIP",
                            TFRecordCompressionType.NONE: ""}

    def __init__(self, compression_type=None, flush_mode: int | None = None, input_buffer_size: int | None = None,
                 output_buffer_size: int | None = None, window_bits: int | None = None,
                 compression_level: int | None = None, compression_method: int | None = None,
                 mem_level: int | None = None, compression_strategy: int | None = None):
        self.get_compression_type_string(compression_type)  # ValueError for a bad type, as TF
        self.compression_type = compression_type
        self.flush_mode, self.window_bits, self.compression_level = flush_mode, window_bits, compression_level
        self.input_buffer_size, self.output_buffer_size = input_buffer_size, output_buffer_size
        self.compression_method, self.mem_level = compression_method, mem_level
        self.compression_strategy = compression_strategy

    @classmethod
    def get_compression_type_string(cls, options) -> str:
        """"ZLIB", "GZIP" or "" for a TFRecordOptions, a TFRecordCompressionType value or a string."""
        if not options:
            return ""
        if isinstance(options, TFRecordOptions):
            return cls.get_compression_type_string(options.compression_type)
        if isinstance(options, int) and options in cls.compression_type_map:
            return cls.compression_type_map[options]
        if options in cls.compression_type_map.values():
            return options
        raise ValueError(f'Not a valid compression_type: "{options}"')

    def _zlib_options(self) -> tf_record.ZlibOptions:
        return tf_record.ZlibOptions(self.flush_mode, self.window_bits, self.compression_level,
                                     self.compression_method, self.mem_level, self.compression_strategy)


class TFRecordWriter:
    """Writes records to a TFRecord file (tf.io.TFRecordWriter): created or truncated now (NotFoundError for a
    missing directory), written as records come, finished by close() or the end of a `with` block."""

    def __init__(self, path, options=None):
        if not isinstance(options, TFRecordOptions):
            options = TFRecordOptions(compression_type=options)
        compression = TFRecordOptions.get_compression_type_string(options)
        self._writer = tf_record.RecordWriter(path, compression=compression, zlib_options=options._zlib_options())
        self._closed = False

    def __enter__(self) -> TFRecordWriter:
        return self

    def __exit__(self, *exc_info) -> None:
        self.close()

    def _check_open(self) -> None:
        if self._closed:
            raise errors.FailedPreconditionError(None, None, f"Writer is closed: {self._writer.path}")

    def write(self, record) -> None:
        """Append one record (bytes, or str written as UTF-8)."""
        self._check_open()
        self._writer.write(record.encode() if isinstance(record, str) else record)

    def flush(self) -> None:
        """Make what was written so far readable."""
        self._check_open()
        self._writer.flush()

    def close(self) -> None:
        """Flush and close the file; closing twice is harmless."""
        self._closed = True
        self._writer.close()


def tf_record_iterator(path, options=None) -> Iterator[bytes]:
    """The records of a TFRecord file, in order (tf.python_io.tf_record_iterator). NotFoundError for a missing file
    and DataLossError (naming the file and offset) for a corrupt or truncated record, raised as iteration reaches
    them."""
    compression = TFRecordOptions.get_compression_type_string(options)
    yield from tf_record.read_records(path, compression=compression)
