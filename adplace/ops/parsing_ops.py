"""Parsing ops (TF's parsing_ops): tf.Example protos into tensors, CSV records into columns, raw and compressed
bytes into tensors. The ops and their attrs are TF 1.15's (ParseExample, ParseSingleExample, DecodeCSV, DecodeRaw,
DecodeCompressed), so graphs travel to and from TF; kernels are in adplace/kernels/parsing.py (CPU only, as TF).

    features = {"age": tf.FixedLenFeature([], tf.int64, default_value=-1),
                "tags": tf.VarLenFeature(tf.string)}
    parsed = tf.parse_single_example(serialized, features)   # {"age": int64 scalar, "tags": SparseTensor}
    a, b = tf.decode_csv(lines, record_defaults=[[0], [""]])

Feature configs are TF's namedtuples; keys are handled in sorted order, as TF does, so the ops' inputs and attrs match
the graphs TF builds.
"""
from __future__ import annotations

import collections
import re

from adplace.framework import dtypes as _dtypes
from adplace.framework.conversion import convert_to_tensor
from adplace.framework.default_graph import name_scope
from adplace.framework.operation import Tensor
from adplace.framework.registry import NotDifferentiable, register_op
from adplace.framework.sparse_tensor import SparseTensor
from adplace.framework.tensor_shape import TensorShape, as_shape
from adplace.ops import array_ops, slicing_ops, sparse_ops
from adplace.ops.op_builder import apply_op, apply_op_1, check_dtype

PARSE_TYPES = (_dtypes.float32, _dtypes.int64, _dtypes.string)
CSV_TYPES = (_dtypes.float32, _dtypes.float64, _dtypes.int32, _dtypes.int64, _dtypes.string)
RAW_TYPES = (_dtypes.float16, _dtypes.float32, _dtypes.float64, _dtypes.int32, _dtypes.uint16, _dtypes.uint8,
             _dtypes.int16, _dtypes.int8, _dtypes.int64, _dtypes.complex64, _dtypes.complex128, _dtypes.bool)


# --- feature configurations ----------------------------------------------------------------------------------------
class VarLenFeature(collections.namedtuple("VarLenFeature", ["dtype"])):
    """A feature of any number of values, parsed into a SparseTensor (tf.io.VarLenFeature)."""


class FixedLenFeature(collections.namedtuple("FixedLenFeature", ["shape", "dtype", "default_value"])):
    """A feature of exactly prod(shape) values, parsed into a Tensor of `shape`; without a `default_value` an
    example lacking it is an error (tf.io.FixedLenFeature)."""

    def __new__(cls, shape, dtype, default_value=None):
        return super().__new__(cls, shape, dtype, default_value)


class FixedLenSequenceFeature(collections.namedtuple("FixedLenSequenceFeature",
                                                     ["shape", "dtype", "allow_missing", "default_value"])):
    """A feature of any number of blocks of `shape`, parsed into a Tensor [None] + shape ([batch, None] + shape,
    padded with `default_value`, for parse_example). Examples require allow_missing=True (tf.io.FixedLenSequenceFeature)."""

    def __new__(cls, shape, dtype, allow_missing: bool = False, default_value=None):
        return super().__new__(cls, shape, dtype, allow_missing, default_value)


class SparseFeature(collections.namedtuple("SparseFeature",
                                           ["index_key", "value_key", "dtype", "size", "already_sorted"])):
    """A SparseTensor of dense shape `size` built from an index feature and a value feature (tf.io.SparseFeature)."""

    def __new__(cls, index_key, value_key, dtype, size, already_sorted: bool = False):
        return super().__new__(cls, index_key, value_key, dtype, size, already_sorted)


def _add_sparse(keys: list, types: list, key: str, dtype) -> None:
    """Add one sparse key, once; a key asked for with two dtypes is TF's ValueError."""
    if key in keys:
        known = types[keys.index(key)]
        if known != dtype:
            raise ValueError(f"Conflicting type {known} vs {dtype} for feature {key}.")
        return
    keys.append(key)
    types.append(dtype)


def _raw_params(features: dict) -> tuple:
    """(sparse_keys, sparse_types, dense_keys, dense_types, dense_defaults, dense_shapes) of a feature dict, keys in
    sorted order; ValueError for a config TF rejects."""
    sparse_keys, sparse_types, dense_keys, dense_types, dense_shapes = [], [], [], [], []
    dense_defaults: dict = {}
    for key in sorted(features):
        feature = features[key]
        if not isinstance(feature, (VarLenFeature, SparseFeature, FixedLenFeature, FixedLenSequenceFeature)):
            raise ValueError(f"Invalid feature {key}:{feature}.")
        if not feature.dtype:
            raise ValueError(f"Missing type for feature {key}.")
        if isinstance(feature, VarLenFeature):
            _add_sparse(sparse_keys, sparse_types, key, feature.dtype)
        elif isinstance(feature, SparseFeature):
            if not feature.index_key:
                raise ValueError(f"Missing index_key for SparseFeature {feature}.")
            if not feature.value_key:
                raise ValueError(f"Missing value_key for SparseFeature {feature}.")
            index_keys = [feature.index_key] if isinstance(feature.index_key, str) else feature.index_key
            for index_key in sorted(index_keys):
                _add_sparse(sparse_keys, sparse_types, index_key, _dtypes.int64)
            _add_sparse(sparse_keys, sparse_types, feature.value_key, feature.dtype)
        else:
            if feature.shape is None:
                raise ValueError(f"Missing shape for feature {key}.")
            shape = as_shape(feature.shape)
            if isinstance(feature, FixedLenFeature):
                if shape.ndims and shape.dims[0].value is None:
                    raise ValueError(f"First dimension of shape for feature {key} unknown. Consider using "
                                     f"FixedLenSequenceFeature.")
                if not shape.is_fully_defined():
                    raise ValueError(f"All dimensions of shape for feature {key} need to be known but received "
                                     f"{feature.shape}.")
            elif feature.allow_missing:
                dense_defaults[key] = None
            dense_keys.append(key)
            dense_shapes.append(shape)
            dense_types.append(feature.dtype)
            if feature.default_value is not None:
                dense_defaults[key] = feature.default_value
    return sparse_keys, sparse_types, dense_keys, dense_types, dense_defaults, dense_shapes


def _prepend_none_dimension(features: dict) -> dict:
    """FixedLenSequenceFeature shapes with their variable first dimension; Examples need allow_missing=True."""
    out = dict(features)
    for key, feature in features.items():
        if isinstance(feature, FixedLenSequenceFeature):
            if not feature.allow_missing:
                raise ValueError("Unsupported: FixedLenSequenceFeature requires allow_missing to be True.")
            out[key] = feature._replace(shape=[None] + list(feature.shape))
    return out


def _key_name(prefix: str, key: str) -> str:
    return prefix + re.sub(r"[^A-Za-z0-9_.\-/]", "_", key)


def _dense_defaults(raw: tuple) -> list[Tensor]:
    """One default tensor per dense key: the padding scalar of a variable-length feature, else the default
    reshaped to the feature's shape, or an empty tensor for a required feature."""
    sparse_keys, _, dense_keys, dense_types, dense_defaults, dense_shapes = raw
    if not sparse_keys and not dense_keys:
        raise ValueError("Must provide at least one sparse key or dense key")
    if set(sparse_keys) & set(dense_keys):
        raise ValueError(f"Dense and sparse keys must not intersect; intersection: "
                         f"{set(sparse_keys) & set(dense_keys)}")
    out = []
    for key, dtype, shape in zip(dense_keys, dense_types, dense_shapes):
        default = dense_defaults.get(key)
        if shape.ndims and shape.dims[0].value is None:
            if default is None:
                default = convert_to_tensor("" if dtype == _dtypes.string else 0, dtype=dtype)
            else:
                default = array_ops.reshape(convert_to_tensor(default, dtype=dtype, name=_key_name("padding_", key)),
                                            [])
        elif default is None:
            default = convert_to_tensor([], dtype=dtype)
        elif not isinstance(default, Tensor):
            default = array_ops.reshape(convert_to_tensor(default, dtype=dtype, name=_key_name("key_", key)),
                                        shape.as_list())
        out.append(default)
    return out


def _with_sparse_features(features: dict, parsed: dict) -> dict:
    """The parse result with each SparseFeature merged from its index and value SparseTensors (tf.sparse_merge), and
    the keys only those needed dropped."""
    parsed = dict(parsed)
    for key in sorted(features):
        feature = features[key]
        if isinstance(feature, SparseFeature):
            index_keys = feature.index_key
            ids = parsed[index_keys] if isinstance(index_keys, str) else [parsed[k] for k in index_keys]
            parsed[key] = sparse_ops.sparse_merge(ids, parsed[feature.value_key], vocab_size=feature.size,
                                                  already_sorted=feature.already_sorted)
    return {k: v for k, v in parsed.items() if k in features}


def _split_outputs(op, num_sparse: int, num_dense: int) -> tuple[list, list]:
    outs = op._outputs
    sparse = [SparseTensor(outs[i], outs[num_sparse + i], outs[2 * num_sparse + i]) for i in range(num_sparse)]
    return sparse, list(outs[3 * num_sparse:3 * num_sparse + num_dense])


# --- ParseExample / ParseSingleExample -------------------------------------------------------------------------------
def _check_parse_types(op_type: str, attrs: dict) -> None:
    for arg in ("sparse_types", "Tdense"):
        for dtype in attrs[arg]:
            check_dtype(op_type, arg, _dtypes.as_dtype(dtype), PARSE_TYPES)


def _parsed_outputs(attrs: dict, batch, num_sparse: int) -> list:
    """The outputs' (dtype, shape): indices, values, dense shapes of the sparse keys, then the dense values; `batch`
    is the batch size (None: unknown) or False for a single example."""
    lead = () if batch is False else (batch,)
    rank = len(lead) + 1
    out = [(_dtypes.int64, TensorShape([None, rank]))] * num_sparse
    out += [(_dtypes.as_dtype(t), TensorShape([None])) for t in attrs["sparse_types"]]
    out += [(_dtypes.int64, TensorShape([rank]))] * num_sparse
    for dtype, shape in zip(attrs["Tdense"], attrs["dense_shapes"]):
        out.append((_dtypes.as_dtype(dtype), TensorShape(lead + as_shape(shape).as_tuple())))
    return out


def _parse_example_infer(inputs, attrs, name):
    num_sparse, num_dense = attrs["Nsparse"], attrs["Ndense"]
    if len(inputs) != 2 + num_sparse + 2 * num_dense:
        raise ValueError(f"'{name}' (op: 'ParseExample') expects {2 + num_sparse + 2 * num_dense} inputs, got "
                         f"{len(inputs)}")
    _check_parse_types("ParseExample", attrs)
    for t, arg in zip(inputs[:2 + num_sparse + num_dense], ["serialized", "names"] + ["keys"] * (len(inputs) - 2)):
        check_dtype("ParseExample", arg, t._dtype, (_dtypes.string,))
    dims = inputs[0]._shape.with_rank(1).as_tuple()
    return _parsed_outputs(attrs, dims[0], num_sparse)


def _parse_single_example_infer(inputs, attrs, name):
    check_dtype("ParseSingleExample", "serialized", inputs[0]._dtype, (_dtypes.string,))
    _check_parse_types("ParseSingleExample", attrs)
    inputs[0]._shape.with_rank(0)
    return _parsed_outputs(attrs, False, attrs["num_sparse"])


register_op("ParseExample", _parse_example_infer)
register_op("ParseSingleExample", _parse_single_example_infer)


def _shape_attrs(raw: tuple) -> dict:
    return {"sparse_types": [_dtypes.as_dtype(t) for t in raw[1]], "Tdense": [_dtypes.as_dtype(t) for t in raw[3]],
            "dense_shapes": list(raw[5])}


def _parse_example_op(serialized, names, features: dict, name) -> dict:
    """The ParseExample op of a batch (TF's _parse_example_raw): the parsed dict, SparseFeatures not yet merged."""
    raw = _raw_params(features)
    sparse_keys, dense_keys = raw[0], raw[2]
    with name_scope(name, "ParseExample", [serialized, names]):
        defaults = _dense_defaults(raw)
        serialized = convert_to_tensor(serialized, dtype=_dtypes.string, name="serialized")
        names = convert_to_tensor([] if names is None else names, dtype=_dtypes.string, name="names")
        keys = [convert_to_tensor(k, dtype=_dtypes.string, name=f"{kind}_keys_{i}")
                for kind, group in (("sparse", sparse_keys), ("dense", dense_keys)) for i, k in enumerate(group)]
        attrs = {"Nsparse": len(sparse_keys), "Ndense": len(dense_keys), **_shape_attrs(raw)}
        op = apply_op("ParseExample", [serialized, names, *keys, *defaults], attrs, name=name)
    sparse, dense = _split_outputs(op, len(sparse_keys), len(dense_keys))
    return dict(zip(sparse_keys + dense_keys, sparse + dense))


def parse_example(serialized, features: dict, name: str | None = None, example_names=None) -> dict:
    """Parse a batch (vector) of serialized Example protos into a dict of Tensors and SparseTensors
    (tf.parse_example): FixedLenFeature -> [batch] + shape, FixedLenSequenceFeature -> [batch, None] + shape padded
    with its default, VarLenFeature -> SparseTensor [batch, max count]. A bad example is InvalidArgumentError
    naming the key and the example ("Name: <unknown>, Key: a, Index: 1.  ...")."""
    if not features:
        raise ValueError(f"Missing: features was {features}.")
    features = _prepend_none_dimension(features)
    return _with_sparse_features(features, _parse_example_op(serialized, example_names, features, name))


def parse_single_example(serialized, features: dict, name: str | None = None, example_names=None) -> dict:
    """Parse one serialized Example (a scalar) as parse_example does a batch, without the batch dimension
    (tf.parse_single_example): TF's ParseSingleExample op, or ParseExample on a batch of one when `example_names`
    is given."""
    if not features:
        raise ValueError(f"Missing: features was {features}.")
    features = _prepend_none_dimension(features)
    if example_names is not None:
        return _with_sparse_features(features, _single_via_batch(serialized, example_names, features, name))
    raw = _raw_params(features)
    sparse_keys, dense_keys = raw[0], raw[2]
    with name_scope(name, "ParseSingleExample", [serialized]):
        serialized = convert_to_tensor(serialized, dtype=_dtypes.string, name="serialized")
        defaults = _dense_defaults(raw)
        attrs = {"num_sparse": len(sparse_keys), "sparse_keys": list(sparse_keys), "dense_keys": list(dense_keys),
                 **_shape_attrs(raw)}
        op = apply_op("ParseSingleExample", [serialized, *defaults], attrs, name=name)
    sparse, dense = _split_outputs(op, len(sparse_keys), len(dense_keys))
    return _with_sparse_features(features, dict(zip(sparse_keys + dense_keys, sparse + dense)))


def _single_via_batch(serialized, example_names, features: dict, name) -> dict:
    """parse_single_example with an example name: ParseExample on a batch of one, the batch dimension removed."""
    with name_scope(name, "ParseSingleExample", [serialized, example_names]):
        serialized = array_ops.reshape(convert_to_tensor(serialized, dtype=_dtypes.string), [1])
        names = array_ops.reshape(convert_to_tensor(example_names, dtype=_dtypes.string), [1])
        parsed = _parse_example_op(serialized, names, features, None)
        out = {}
        for key, value in parsed.items():
            if isinstance(value, SparseTensor):
                out[key] = SparseTensor(slicing_ops.slice_(value.indices, [0, 1], [-1, -1]), value.values,
                                        slicing_ops.slice_(value.dense_shape, [1], [-1]))
            else:
                out[key] = array_ops.squeeze(value, [0])
        return out


# --- DecodeCSV -------------------------------------------------------------------------------------------------------
def _decode_csv_infer(inputs, attrs, name):
    records, defaults = inputs[0], inputs[1:]
    check_dtype("DecodeCSV", "records", records._dtype, (_dtypes.string,))
    if len(defaults) != len(attrs["OUT_TYPE"]):
        raise ValueError(f"'{name}' (op: 'DecodeCSV') has {len(defaults)} record_defaults for "
                         f"{len(attrs['OUT_TYPE'])} output types")
    for t in defaults:
        check_dtype("DecodeCSV", "record_defaults", t._dtype, CSV_TYPES)
        dims = t._shape.as_tuple()
        if dims is not None and len(dims) > 1:
            raise ValueError(f"Shape must be at most rank 1 but is rank {len(dims)} for '{name}' (op: 'DecodeCSV')")
    if len(attrs["field_delim"]) != 1:
        raise ValueError(f"field_delim should be only 1 char for '{name}' (op: 'DecodeCSV')")
    return [(t._dtype.base_dtype, records._shape) for t in defaults]


register_op("DecodeCSV", _decode_csv_infer)


def decode_csv(records, record_defaults, field_delim: str = ",", use_quote_delim: bool = True,
               name: str | None = None, na_value: str = "", select_cols=None) -> list[Tensor]:
    """Split CSV `records` (a string tensor, one line each) into one tensor per column, shaped like `records`
    (tf.decode_csv). Each column's type and default come from `record_defaults` ([value] or [] for a required
    column); empty fields and `na_value` take the default. Fields in double quotes may hold the delimiter and
    doubled quotes (unless `use_quote_delim=False`). `select_cols` picks (sorted) columns to return."""
    if select_cols is not None and any(a >= b for a, b in zip(select_cols, select_cols[1:])):
        raise ValueError("select_cols is not strictly increasing.")
    if select_cols is not None and select_cols[0] < 0:
        raise ValueError("select_cols contains negative values.")
    if select_cols is not None and len(select_cols) != len(record_defaults):
        raise ValueError("Length of select_cols and record_defaults do not match.")
    with name_scope(name, "DecodeCSV", [records]):
        records = convert_to_tensor(records, dtype=_dtypes.string, name="records")
        defaults = [convert_to_tensor(d, name=f"record_defaults_{i}") for i, d in enumerate(record_defaults)]
        attrs = {"OUT_TYPE": [d._dtype.base_dtype for d in defaults], "field_delim": field_delim,
                 "use_quote_delim": bool(use_quote_delim), "na_value": na_value,
                 "select_cols": [int(c) for c in select_cols or []]}
        return list(apply_op("DecodeCSV", [records, *defaults], attrs, name=name)._outputs)


# --- DecodeRaw / DecodeCompressed ----------------------------------------------------------------------------------
def _decode_raw_infer(inputs, attrs, name):
    check_dtype("DecodeRaw", "bytes", inputs[0]._dtype, (_dtypes.string,))
    out_type = _dtypes.as_dtype(attrs["out_type"])
    check_dtype("DecodeRaw", "out_type", out_type, RAW_TYPES)
    dims = inputs[0]._shape.as_tuple()
    return [(out_type, TensorShape(None if dims is None else dims + (None,)))]


register_op("DecodeRaw", _decode_raw_infer)


def decode_raw(input_bytes=None, out_type=None, little_endian: bool = True, name: str | None = None,
               bytes=None) -> Tensor:  # noqa: A002 - TF1's deprecated argument name
    """Reinterpret each string of `input_bytes` as a vector of `out_type` (tf.decode_raw): the output has one more
    dimension than the input, all strings must have the same length, a multiple of the type's size."""
    if bytes is not None:
        if input_bytes is not None:
            raise ValueError("Cannot specify both 'bytes' and 'input_bytes'")
        input_bytes = bytes
    if out_type is None:
        raise TypeError("decode_raw_v1() missing 1 positional argument: 'out_type'")
    input_bytes = convert_to_tensor(input_bytes, dtype=_dtypes.string, name="bytes")
    attrs = {"out_type": _dtypes.as_dtype(out_type), "little_endian": bool(little_endian)}
    return apply_op_1("DecodeRaw", [input_bytes], attrs, name=name)


def _decode_compressed_infer(inputs, attrs, name):
    check_dtype("DecodeCompressed", "bytes", inputs[0]._dtype, (_dtypes.string,))
    if attrs["compression_type"] not in ("", "ZLIB", "GZIP"):
        raise ValueError("Only ZLIB, GZIP or NONE are supported compressions")
    return [(_dtypes.string, inputs[0]._shape)]


register_op("DecodeCompressed", _decode_compressed_infer)
for _op_type in ("ParseExample", "ParseSingleExample", "DecodeCSV", "DecodeRaw", "DecodeCompressed"):
    NotDifferentiable(_op_type)  # as in TF: string inputs


def decode_compressed(bytes, compression_type: str = "", name: str | None = None) -> Tensor:  # noqa: A002
    """Inflate each string of `bytes`, compressed as "ZLIB" or "GZIP" ("" leaves them as they are)
    (tf.io.decode_compressed)."""
    return apply_op_1("DecodeCompressed", [convert_to_tensor(bytes, dtype=_dtypes.string, name="bytes")],
                      {"compression_type": compression_type}, name=name)
