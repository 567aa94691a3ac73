"""tf.python_io: TFRecord files (TFRecordWriter, tf_record_iterator, TFRecordOptions, TFRecordCompressionType)."""
from adplace.lib.io.tf_record_io import TFRecordCompressionType, TFRecordOptions, TFRecordWriter, tf_record_iterator

__all__ = ["TFRecordCompressionType", "TFRecordOptions", "TFRecordWriter", "tf_record_iterator"]
