"""The graph ops of tf.data (TF's op types and attrs): dataset ops output a scalar `variant` that holds a dataset,
iterator ops make and drive iterators over them. adplace/data/ builds them (tf.data.Dataset, tf.data.Iterator);
adplace/kernels/datasets.py and kernels/iterators.py run them, on the CPU only, as TF does.

    ds = dataset_op("RangeDataset", [start, stop, step], {"output_types": [tf.int64], "output_shapes": [[]]})
    it = iterator_op("IteratorV2", [], {...})     # a resource handle
    values = get_next(it, dtypes, shapes)         # IteratorGetNext's outputs

Functions (map's `f`, filter's `predicate`, ...) are traced function graphs (framework/function_graph.py) held in
function attrs; the tensors they capture are the ops' `other_arguments` inputs.
"""
from __future__ import annotations

from adplace.framework import dtypes as _dtypes
from adplace.framework.registry import NotDifferentiable, register_op
from adplace.framework.tensor_shape import as_shape
from adplace.ops.op_builder import SCALAR, apply_op

DATASET_OPS = ("TensorDataset", "TensorSliceDataset", "RangeDataset", "ZipDataset", "ConcatenateDataset",
               "MapDataset", "ParallelMapDataset", "FilterDataset", "FlatMapDataset", "InterleaveDataset",
               "ParallelInterleaveDatasetV2", "BatchDatasetV2", "PaddedBatchDatasetV2", "ShuffleDataset",
               "RepeatDataset", "TakeDataset", "SkipDataset", "PrefetchDataset", "CacheDataset", "TextLineDataset",
               "TFRecordDataset", "FixedLengthRecordDatasetV2", "GeneratorDataset", "ShardDataset")
ITERATOR_OPS = ("IteratorV2", "OneShotIterator", "IteratorFromStringHandleV2")


def _variant(inputs, attrs, name):
    return [(_dtypes.variant, SCALAR)]


def _components(inputs, attrs, name):
    return [(_dtypes.as_dtype(d).base_dtype, as_shape(s))
            for d, s in zip(attrs.get("output_types") or [], attrs.get("output_shapes") or [])]


for _op_type in DATASET_OPS:
    # Stateful: a dataset holds files, generators and random streams, so a plan never folds or merges its ops.
    register_op(_op_type, _variant, is_stateful=True)
for _op_type in ITERATOR_OPS:
    register_op(_op_type, lambda inputs, attrs, name: [(_dtypes.resource, SCALAR)], is_stateful=True)
register_op("MakeIterator", lambda inputs, attrs, name: [], is_stateful=True)
register_op("IteratorGetNext", _components, is_stateful=True)
register_op("IteratorToStringHandle", lambda inputs, attrs, name: [(_dtypes.string, SCALAR)], is_stateful=True)
for _op_type in (*DATASET_OPS, *ITERATOR_OPS, "MakeIterator", "IteratorGetNext", "IteratorToStringHandle"):
    NotDifferentiable(_op_type)


def dataset_op(op_type: str, inputs: list, attrs: dict, name: str | None = None):
    """A dataset op's variant output."""
    return apply_op(op_type, inputs, attrs, name)._outputs[0]


def iterator_op(op_type: str, inputs: list, attrs: dict, name: str | None = None):
    """An iterator op's resource handle."""
    return apply_op(op_type, inputs, attrs, name)._outputs[0]


def make_iterator(dataset, iterator, name: str | None = None):
    """MakeIterator: (re)start `iterator` on `dataset` when run."""
    return apply_op("MakeIterator", [dataset, iterator], {}, name)


def get_next(iterator, output_types: list, output_shapes: list, name: str | None = None) -> list:
    """IteratorGetNext's outputs: the iterator's next element; OutOfRangeError at its end."""
    return list(apply_op("IteratorGetNext", [iterator], {"output_types": list(output_types),
                                                         "output_shapes": [as_shape(s) for s in output_shapes]},
                         name)._outputs)


def string_handle(iterator, name: str | None = None):
    """IteratorToStringHandle: a string naming the iterator, for Iterator.from_string_handle."""
    return apply_op("IteratorToStringHandle", [iterator], {}, name)._outputs[0]
