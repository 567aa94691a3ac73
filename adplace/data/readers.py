"""tf.data's datasets of files: TextLineDataset (lines), TFRecordDataset (records), FixedLengthRecordDataset
(fixed-size records), each with optional GZIP/ZLIB compression and `num_parallel_reads` files read in turn.

    lines = tf.data.TextLineDataset(["a.csv", "b.csv"]).skip(1)
    rows = lines.map(lambda line: tf.decode_csv(line, [[0.0], [0]]))
"""
from __future__ import annotations

from adplace.data.dataset_ops import Dataset
from adplace.data.structure import Spec
from adplace.framework import dtypes as _dtypes
from adplace.framework.conversion import convert_to_tensor
from adplace.framework.default_graph import name_scope
from adplace.ops import dataset_ops as gen

_RECORD = Spec(_dtypes.string, [])


def _filenames(filenames):
    names = convert_to_tensor(filenames, _dtypes.string, name="filenames")
    if names.shape.ndims is not None and names.shape.ndims > 1:
        raise ValueError(f"`filenames` must be a scalar or a vector, got shape {names.shape}.")
    return names


def _string(value, name: str):
    return convert_to_tensor("" if value is None else value, _dtypes.string, name=name)


def _int64(value, default: int, name: str):
    return convert_to_tensor(default if value is None else value, _dtypes.int64, name=name)


def _files_dataset(cls, filenames, num_parallel_reads, make):
    """make(names) for `filenames`, or, with num_parallel_reads, the files read in turn by an interleave."""
    if num_parallel_reads is None:
        with name_scope(None, cls.__name__):
            variant = make(_filenames(filenames))
        return Dataset(variant, _RECORD)
    names = Dataset.from_tensor_slices(_filenames(filenames))
    return names.interleave(lambda name: Dataset(make(name), _RECORD), cycle_length=num_parallel_reads,
                            block_length=1, num_parallel_calls=num_parallel_reads)


class TextLineDataset(Dataset):
    """The lines of text files, without line endings."""

    def __init__(self, filenames, compression_type=None, buffer_size=None, num_parallel_reads=None):
        def make(names):
            return gen.dataset_op("TextLineDataset", [names, _string(compression_type, "compression_type"),
                                                      _int64(buffer_size, 256 * 1024, "buffer_size")], {})
        dataset = _files_dataset(TextLineDataset, filenames, num_parallel_reads, make)
        super().__init__(dataset._variant_tensor, dataset._spec)


class TFRecordDataset(Dataset):
    """The records of TFRecord files."""

    def __init__(self, filenames, compression_type=None, buffer_size=None, num_parallel_reads=None):
        def make(names):
            return gen.dataset_op("TFRecordDataset", [names, _string(compression_type, "compression_type"),
                                                      _int64(buffer_size, 0, "buffer_size")], {})
        dataset = _files_dataset(TFRecordDataset, filenames, num_parallel_reads, make)
        super().__init__(dataset._variant_tensor, dataset._spec)


class FixedLengthRecordDataset(Dataset):
    """Records of `record_bytes` bytes from files with `header_bytes` before them and `footer_bytes` after."""

    def __init__(self, filenames, record_bytes, header_bytes=None, footer_bytes=None, buffer_size=None,
                 compression_type=None, num_parallel_reads=None):
        def make(names):
            return gen.dataset_op("FixedLengthRecordDatasetV2", [
                names, _int64(header_bytes, 0, "header_bytes"), _int64(record_bytes, 0, "record_bytes"),
                _int64(footer_bytes, 0, "footer_bytes"), _int64(buffer_size, 256 * 1024, "buffer_size"),
                _string(compression_type, "compression_type")], {})
        dataset = _files_dataset(FixedLengthRecordDataset, filenames, num_parallel_reads, make)
        super().__init__(dataset._variant_tensor, dataset._spec)
