"""tf.data in TF1 graph mode (adplace.data is tf.data): datasets, their transformations, and iterators.

    ds = tf.data.TextLineDataset("train.csv").skip(1).map(parse, num_parallel_calls=4).shuffle(1000).batch(32)
    x, y = tf.data.make_one_shot_iterator(ds).get_next()
"""
from adplace.data import experimental
from adplace.data.dataset_ops import AUTOTUNE, Dataset, DatasetV1
from adplace.data.experimental import make_initializable_iterator, make_one_shot_iterator
from adplace.data.iterator_ops import Iterator
from adplace.data.readers import FixedLengthRecordDataset, TextLineDataset, TFRecordDataset
from adplace.data.structure import classes as _classes
from adplace.data.structure import shapes as _shapes
from adplace.data.structure import types as _types

DatasetV2 = Dataset
TextLineDatasetV1, TFRecordDatasetV1, FixedLengthRecordDatasetV1 = TextLineDataset, TFRecordDataset, \
    FixedLengthRecordDataset


def get_output_types(dataset_or_iterator):
    return _types(dataset_or_iterator._spec)


def get_output_shapes(dataset_or_iterator):
    return _shapes(dataset_or_iterator._spec)


def get_output_classes(dataset_or_iterator):
    return _classes(dataset_or_iterator._spec)


__all__ = ["AUTOTUNE", "Dataset", "DatasetV1", "DatasetV2", "FixedLengthRecordDataset", "Iterator",
           "TFRecordDataset", "TextLineDataset", "experimental", "get_output_classes", "get_output_shapes",
           "get_output_types", "make_initializable_iterator", "make_one_shot_iterator"]
