"""SequenceExample parsing (TF's parsing_ops): tf.parse_single_sequence_example and tf.io.parse_sequence_example,
on TF 1.15's ops (ParseSingleSequenceExample, ParseSequenceExample) and attrs so that graphs travel to and from TF;
kernels in adplace/kernels/sequence_parsing.py (CPU only, as TF).

    context, sequence = tf.parse_single_sequence_example(
        serialized, context_features={"length": tf.FixedLenFeature([], tf.int64)},
        sequence_features={"tokens": tf.FixedLenSequenceFeature([], tf.int64),      # [steps]
                           "tags": tf.VarLenFeature(tf.string)})                     # SparseTensor [steps, max tags]

Context features are FixedLenFeature (a Tensor of its shape) or VarLenFeature (a SparseTensor); sequence features
are FixedLenSequenceFeature (a Tensor [steps] + shape; a missing list is an error unless allow_missing=True, then
empty) or VarLenFeature (a SparseTensor [steps, max values]). parse_sequence_example adds a batch dimension, pads
the dense lists with zeros and returns their lengths.
"""
from __future__ import annotations

from adplace.framework import dtypes as _dtypes
from adplace.framework.conversion import convert_to_tensor
from adplace.framework.default_graph import name_scope
from adplace.framework.registry import NotDifferentiable, register_op
from adplace.framework.sparse_tensor import SparseTensor
from adplace.framework.tensor_shape import TensorShape, as_shape
from adplace.ops.op_builder import apply_op, check_dtype
from adplace.ops.parsing_ops import (PARSE_TYPES, FixedLenFeature, FixedLenSequenceFeature, VarLenFeature,
                                     _dense_defaults, _raw_params)

_TYPE_ATTRS = ("context_sparse_types", "Tcontext_dense", "feature_list_sparse_types", "feature_list_dense_types")
_COUNTS = ("Ncontext_sparse", "Ncontext_dense", "Nfeature_list_sparse", "Nfeature_list_dense")
OP_TYPES = ("ParseSingleSequenceExample", "ParseSequenceExample")


def _outputs(attrs: dict, batch) -> list:
    """The outputs' (dtype, shape) in TF's order; `batch` is the batch size (None: unknown) or False for one
    SequenceExample (then no batch dimension)."""
    lead = () if batch is False else (batch,)
    out = []
    for steps, sparse_types, dense_types, dense_shapes in (
            ((), attrs["context_sparse_types"], attrs["Tcontext_dense"], attrs["context_dense_shapes"]),
            ((None,), attrs["feature_list_sparse_types"], attrs["feature_list_dense_types"],
             attrs["feature_list_dense_shapes"])):
        rank = len(lead) + len(steps) + 1
        out += [(_dtypes.int64, TensorShape([None, rank]))] * len(sparse_types)
        out += [(_dtypes.as_dtype(t), TensorShape([None])) for t in sparse_types]
        out += [(_dtypes.int64, TensorShape([rank]))] * len(sparse_types)
        out += [(_dtypes.as_dtype(t), TensorShape(lead + steps + as_shape(s).as_tuple()))
                for t, s in zip(dense_types, dense_shapes)]
    if batch is not False:
        out += [(_dtypes.int64, TensorShape([batch]))] * len(attrs["feature_list_dense_types"])
    return out


def _check(op_type: str, strings: list, attrs: dict, name: str) -> None:
    """TF's checks: parse types float/int64/string, counts equal to the type lists, `strings` of dtype string."""
    for arg in _TYPE_ATTRS:
        for dtype in attrs[arg]:
            check_dtype(op_type, arg, _dtypes.as_dtype(dtype), PARSE_TYPES)
    for count, arg in zip(_COUNTS, _TYPE_ATTRS):
        if count in attrs and attrs[count] != len(attrs[arg]):
            raise ValueError(f"'{name}' (op: '{op_type}') has {count}={attrs[count]} but {len(attrs[arg])} {arg}")
    for t in strings:
        check_dtype(op_type, "serialized", t._dtype, (_dtypes.string,))


def _single_infer(inputs, attrs, name):
    keys = sum(len(attrs[a]) for a in _TYPE_ATTRS)  # one key input per feature
    _check("ParseSingleSequenceExample", [*inputs[:2 + keys], inputs[-1]], attrs, name)
    inputs[0]._shape.with_rank(0)
    return _outputs(attrs, False)


def _batch_infer(inputs, attrs, name):
    _check("ParseSequenceExample", inputs[:2], attrs, name)
    return _outputs(attrs, inputs[0]._shape.with_rank(1).as_tuple()[0])


register_op("ParseSingleSequenceExample", _single_infer)
register_op("ParseSequenceExample", _batch_infer)
for _op_type in OP_TYPES:
    NotDifferentiable(_op_type)  # as in TF: string inputs


def _params(context_features, sequence_features) -> tuple:
    """The raw parameters (parsing_ops._raw_params) of the context and of the feature lists, checked as TF 1.15
    does: context features are VarLen/FixedLen, sequence features VarLen/FixedLenSequence without a default."""
    if not (context_features or sequence_features):
        raise ValueError("Missing features.")
    for features, allowed in ((context_features, (VarLenFeature, FixedLenFeature)),
                              (sequence_features, (VarLenFeature, FixedLenSequenceFeature))):
        for key, feature in (features or {}).items():
            if not isinstance(feature, allowed):
                raise ValueError(f"Unsupported {type(feature).__name__} {key}:{feature}.")
    context, lists = (_raw_params(f or {}) for f in (context_features, sequence_features))
    for key, default in lists[4].items():
        if default is not None:
            raise ValueError(f"Value feature_list_dense_defaults[{key}] must be None")
    for raw in (context, lists):
        if set(raw[0]) & set(raw[2]):
            raise ValueError(f"Dense and sparse keys must not intersect; intersection: {set(raw[0]) & set(raw[2])}")
    return context, lists


def _attrs(context: tuple, lists: tuple) -> dict:
    return {"Ncontext_sparse": len(context[0]), "Ncontext_dense": len(context[2]),
            "Nfeature_list_sparse": len(lists[0]), "Nfeature_list_dense": len(lists[2]),
            "context_sparse_types": [_dtypes.as_dtype(t) for t in context[1]],
            "Tcontext_dense": [_dtypes.as_dtype(t) for t in context[3]],
            "feature_list_sparse_types": [_dtypes.as_dtype(t) for t in lists[1]],
            "feature_list_dense_types": [_dtypes.as_dtype(t) for t in lists[3]],
            "context_dense_shapes": [as_shape(s) for s in context[5]],
            "feature_list_dense_shapes": [as_shape(s) for s in lists[5]]}


def _results(op, context: tuple, lists: tuple) -> tuple[dict, dict, list]:
    """({context key: value}, {feature list key: value}, [lengths]) from the op's outputs in TF's order."""
    outs, results = list(op._outputs), []
    for raw in (context, lists):
        n_sparse, n_dense = len(raw[0]), len(raw[2])
        sparse = [SparseTensor(outs[i], outs[n_sparse + i], outs[2 * n_sparse + i]) for i in range(n_sparse)]
        dense = outs[3 * n_sparse:3 * n_sparse + n_dense]
        outs = outs[3 * n_sparse + n_dense:]
        results.append(dict(zip(raw[0] + raw[2], sparse + dense)))
    return results[0], results[1], outs


def _keys(values, arg: str) -> list:
    return [convert_to_tensor(k, dtype=_dtypes.string, name=f"{arg}_{i}") for i, k in enumerate(values)]


def parse_single_sequence_example(serialized, context_features: dict | None = None,
                                  sequence_features: dict | None = None, example_name=None,
                                  name: str | None = None) -> tuple[dict, dict]:
    """Parse one serialized SequenceExample (a scalar) into (context dict, feature list dict) of Tensors and
    SparseTensors (tf.parse_single_sequence_example). A missing required feature, values of the wrong type or
    count are InvalidArgumentError naming the feature."""
    context, lists = _params(context_features, sequence_features)
    with name_scope(name, "ParseSingleSequenceExample", [serialized]):
        serialized = convert_to_tensor(serialized, dtype=_dtypes.string, name="serialized")
        defaults = _dense_defaults(context) if context[0] or context[2] else []
        missing = convert_to_tensor(list(lists[4]), dtype=_dtypes.string,
                                    name="feature_list_dense_missing_assumed_empty")
        keys = (_keys(context[0], "context_sparse_keys") + _keys(context[2], "context_dense_keys")
                + _keys(lists[0], "feature_list_sparse_keys") + _keys(lists[2], "feature_list_dense_keys"))
        debug_name = convert_to_tensor("" if example_name is None else example_name, dtype=_dtypes.string,
                                       name="debug_name")
        op = apply_op("ParseSingleSequenceExample", [serialized, missing, *keys, *defaults, debug_name],
                      _attrs(context, lists), name=name)
    return _results(op, context, lists)[:2]


def parse_sequence_example(serialized, context_features: dict | None = None, sequence_features: dict | None = None,
                           example_names=None, name: str | None = None) -> tuple[dict, dict, dict]:
    """Parse a batch (vector) of serialized SequenceExamples (tf.io.parse_sequence_example): (context dict with a
    batch dimension, feature list dict: dense lists [batch, longest] + shape padded with zeros, VarLen ones
    SparseTensors [batch, longest, max values], {dense feature list key: its lengths [batch]})."""
    context, lists = _params(context_features, sequence_features)
    with name_scope(name, "ParseSequenceExample", [serialized]):
        serialized = convert_to_tensor(serialized, dtype=_dtypes.string, name="serialized")
        defaults = _dense_defaults(context) if context[0] or context[2] else []
        debug_name = convert_to_tensor([] if example_names is None else example_names, dtype=_dtypes.string,
                                       name="debug_name")
        attrs = {**_attrs(context, lists), "context_sparse_keys": list(context[0]),
                 "context_dense_keys": list(context[2]), "feature_list_sparse_keys": list(lists[0]),
                 "feature_list_dense_keys": list(lists[2]),
                 "feature_list_dense_missing_assumed_empty": list(lists[4])}
        op = apply_op("ParseSequenceExample", [serialized, debug_name, *defaults], attrs, name=name)
    context_out, lists_out, lengths = _results(op, context, lists)
    return context_out, lists_out, dict(zip(lists[2], lengths))
