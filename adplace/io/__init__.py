"""tf.io: TF's file and record I/O names (tf.io.gfile, TFRecord files, Example parsing, CSV and raw decoding)."""
from adplace.io import gfile
from adplace.ops.file_ops import matching_files
from adplace.ops.sequence_parsing_ops import parse_sequence_example, parse_single_sequence_example
from adplace.train.input import match_filenames_once
from adplace.lib.io.tf_record_io import TFRecordCompressionType, TFRecordOptions, TFRecordWriter, tf_record_iterator
from adplace.ops.parsing_ops import (FixedLenFeature, FixedLenSequenceFeature, SparseFeature, VarLenFeature,
                                     decode_compressed, decode_csv, decode_raw, parse_example, parse_single_example)

__all__ = ["gfile", "match_filenames_once", "matching_files", "parse_sequence_example",
           "parse_single_sequence_example"]
__all__ += ["TFRecordCompressionType", "TFRecordOptions", "TFRecordWriter", "tf_record_iterator"]
__all__ += ["FixedLenFeature", "FixedLenSequenceFeature", "SparseFeature", "VarLenFeature", "decode_compressed",
            "decode_csv", "decode_raw", "parse_example", "parse_single_example"]
