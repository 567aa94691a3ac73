"""TF1's readers (tf.TextLineReader, tf.FixedLengthRecordReader, tf.TFRecordReader, tf.WholeFileReader,
tf.IdentityReader, tf.ReaderBase): records read from the files whose names a queue holds.

    files = tf.FIFOQueue(10, tf.string)                # fed with file names, then closed
    reader = tf.TextLineReader(skip_header_lines=1)
    key, line = reader.read(files)                     # b"a.csv:2", b"1,2,3"; OutOfRangeError when all is read
    keys, lines = reader.read_up_to(files, 100)        # up to 100 lines of one file

The ops are TF's V2 ones (TextLineReaderV2, ..., ReaderReadV2, ReaderReadUpToV2, ReaderNumRecordsProducedV2,
ReaderNumWorkUnitsCompletedV2, ReaderSerializeStateV2, ReaderRestoreStateV2, ReaderResetV2) on `resource` handles,
with TF's attrs, so GraphDefs go both ways; semantics are in kernels/reader_store.py, the kernels in
kernels/readers.py. None is differentiable.
"""
from __future__ import annotations

from adplace.framework import dtypes as _dtypes
from adplace.framework.conversion import convert_to_tensor
from adplace.framework.registry import NotDifferentiable, register_op
from adplace.framework.tensor_shape import TensorShape
from adplace.lib.io.tf_record_io import TFRecordOptions
from adplace.ops.op_builder import SCALAR, apply_op

CREATION_OPS = ("TextLineReaderV2", "FixedLengthRecordReaderV2", "TFRecordReaderV2", "WholeFileReaderV2",
                "IdentityReaderV2")
_VECTOR = TensorShape([None])
_OUTPUTS = {
    "ReaderReadV2": [(_dtypes.string, SCALAR), (_dtypes.string, SCALAR)],
    "ReaderReadUpToV2": [(_dtypes.string, _VECTOR), (_dtypes.string, _VECTOR)],
    "ReaderNumRecordsProducedV2": [(_dtypes.int64, SCALAR)],
    "ReaderNumWorkUnitsCompletedV2": [(_dtypes.int64, SCALAR)],
    "ReaderSerializeStateV2": [(_dtypes.string, SCALAR)],
    "ReaderRestoreStateV2": [],
    "ReaderResetV2": [],
    **{op_type: [(_dtypes.resource, SCALAR)] for op_type in CREATION_OPS},
}
for _op_type, _outputs in _OUTPUTS.items():
    register_op(_op_type, lambda inputs, attrs, name, _outputs=_outputs: list(_outputs), is_stateful=True)
    NotDifferentiable(_op_type)


def _queue_ref(queue):
    """A queue's handle: a QueueBase's queue_ref, or the handle tensor itself."""
    return getattr(queue, "queue_ref", queue)


class ReaderBase:
    """A reader reached through `reader_ref` (a resource handle): each read produces one (key, value) record,
    taking the next work unit (file name) from a queue when the current one is finished (tf.ReaderBase)."""

    def __init__(self, reader_ref, supports_serialize: bool = False):
        self._reader_ref = reader_ref
        self._supports_serialize = supports_serialize

    reader_ref = property(lambda self: self._reader_ref, doc="The reader's resource handle (a Tensor).")
    supports_serialize = property(lambda self: self._supports_serialize,
                                  doc="Whether serialize_state and restore_state work for this reader.")

    def _verb(self, op_type: str, inputs: list, name: str | None):
        return apply_op(op_type, [self._reader_ref, *inputs], {}, name=name or op_type)

    def read(self, queue, name: str | None = None):
        """(key, value), two string scalars: the next record, dequeuing a work unit from `queue` (a queue or its
        handle) when needed; OutOfRangeError once the queue is closed and empty."""
        return tuple(self._verb("ReaderReadV2", [_queue_ref(queue)], name).outputs)

    def read_up_to(self, queue, num_records, name: str | None = None):
        """(keys, values), two string vectors: up to `num_records` records, all from one work unit (fewer at its
        end)."""
        n = convert_to_tensor(num_records, dtype=_dtypes.int64, name="num_records")
        return tuple(self._verb("ReaderReadUpToV2", [_queue_ref(queue), n], name).outputs)

    def num_records_produced(self, name: str | None = None):
        """An int64 scalar: the records this reader produced (successful reads)."""
        return self._verb("ReaderNumRecordsProducedV2", [], name).outputs[0]

    def num_work_units_completed(self, name: str | None = None):
        """An int64 scalar: the work units this reader finished."""
        return self._verb("ReaderNumWorkUnitsCompletedV2", [], name).outputs[0]

    def serialize_state(self, name: str | None = None):
        """A string scalar encoding the reader's state (UnimplementedError for readers that cannot)."""
        return self._verb("ReaderSerializeStateV2", [], name).outputs[0]

    def restore_state(self, state, name: str | None = None):
        """The op restoring a state serialize_state produced (a bad state resets the reader and fails)."""
        return self._verb("ReaderRestoreStateV2", [convert_to_tensor(state, dtype=_dtypes.string, name="state")],
                          name)

    def reset(self, name: str | None = None):
        """The op returning the reader to its initial state: no work unit, counts 0."""
        return self._verb("ReaderResetV2", [], name)


def _make(op_type: str, name: str | None, **attrs):
    return apply_op(op_type, [], {**attrs, "container": "", "shared_name": ""}, name=name or op_type).outputs[0]


class WholeFileReader(ReaderBase):
    """Each file is one record: (file name, contents)."""

    def __init__(self, name: str | None = None):
        super().__init__(_make("WholeFileReaderV2", name), supports_serialize=True)


class TextLineReader(ReaderBase):
    """The lines of each file, without newlines, after `skip_header_lines` lines; keys b"<file>:<line>" (1-based)."""

    def __init__(self, skip_header_lines: int | None = None, name: str | None = None):
        super().__init__(_make("TextLineReaderV2", name, skip_header_lines=int(skip_header_lines or 0)))


class FixedLengthRecordReader(ReaderBase):
    """Records of `record_bytes` bytes, after a header and before a footer, `hop_bytes` apart (record_bytes when 0
    or None); `encoding` "ZLIB" or "GZIP" for compressed files; keys b"<file>:<record number>" (0-based)."""

    def __init__(self, record_bytes: int, header_bytes: int | None = None, footer_bytes: int | None = None,
                 hop_bytes: int | None = None, name: str | None = None, encoding: str | None = None):
        super().__init__(_make("FixedLengthRecordReaderV2", name, record_bytes=int(record_bytes),
                               header_bytes=int(header_bytes or 0), footer_bytes=int(footer_bytes or 0),
                               hop_bytes=int(hop_bytes or 0), encoding=encoding or ""))


class TFRecordReader(ReaderBase):
    """The records of TFRecord files, compressed as `options` says (a TFRecordOptions, a TFRecordCompressionType or
    "ZLIB"/"GZIP"); keys b"<file>:<offset>"."""

    def __init__(self, name: str | None = None, options=None):
        compression = TFRecordOptions.get_compression_type_string(options)
        super().__init__(_make("TFRecordReaderV2", name, compression_type=compression))


class IdentityReader(ReaderBase):
    """Each work unit is one record, both key and value."""

    def __init__(self, name: str | None = None):
        super().__init__(_make("IdentityReaderV2", name), supports_serialize=True)


__all__ = ["ReaderBase", "WholeFileReader", "TextLineReader", "FixedLengthRecordReader", "TFRecordReader",
           "IdentityReader"]
