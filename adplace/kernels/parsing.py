"""CPU kernels of the parsing ops (adplace.ops.parsing_ops, string_ops): ParseExample, ParseSingleExample,
DecodeCSV, DecodeRaw, DecodeCompressed and StringSplit. TF runs them on the CPU only; so does adplace.

Strings are NumPy object arrays of bytes. Errors are TF's InvalidArgumentError with TF's wording, naming the feature
and the example ("Name: <unknown>, Key: age, Index: 1.  Data types don't match. ...") or the CSV record.
"""
from __future__ import annotations

import re
import zlib

import numpy as np

from adplace.framework import dtypes as _dtypes
from adplace.framework.errors import InvalidArgumentError
from adplace.framework.tensor_shape import as_shape
from adplace.kernels.registration import NO_GPU, kernel, multi_output
from adplace.lib import protos

_KINDS = {"bytes_list": _dtypes.string, "float_list": _dtypes.float32, "int64_list": _dtypes.int64}
_TYPE_NAMES = {_dtypes.string: "string", _dtypes.float32: "float", _dtypes.float64: "double",
               _dtypes.int32: "int32", _dtypes.int64: "int64"}
_VALUE_NAMES = {_dtypes.string: "bytes", _dtypes.float32: "float", _dtypes.int64: "int64"}


def _text(data: bytes) -> str:
    return data.decode("utf-8", "backslashreplace")


def _np_type(dtype: _dtypes.DType):
    return object if dtype == _dtypes.string else dtype.as_numpy_dtype


def _shape_text(dims) -> str:
    return "[" + ",".join("?" if d is None else str(d) for d in dims) + "]"


# --- Example parsing ---------------------------------------------------------------------------------------------
class _Dense:
    """One dense key: its dtype, shape (first dim None: variable length), default and values per example."""

    def __init__(self, key: str, dtype, shape, default: np.ndarray):
        self.key, self.dtype, self.dims = key, _dtypes.as_dtype(dtype), as_shape(shape).as_tuple()
        self.variable = bool(self.dims) and self.dims[0] is None
        self.block = tuple(self.dims[1:] if self.variable else self.dims)
        self.stride = int(np.prod(self.block, dtype=np.int64))
        self.default = np.asarray(default)


class _ExampleParser:
    """Parses serialized Examples for the sparse keys (name, dtype) and _Dense keys of one op; `batch` selects TF's
    ParseExample messages (naming the example) over ParseSingleExample's."""

    def __init__(self, op, sparse: list, dense: list, batch: bool):
        self.op, self.sparse, self.dense, self.batch = op, sparse, dense, batch

    def _error(self, message: str) -> InvalidArgumentError:
        return InvalidArgumentError(None, self.op, message)

    def _values(self, feature, key: str, dtype, variable: bool, where: tuple):
        """The values of a present feature (None when it holds no list), checked to be of `dtype`."""
        kind = feature.WhichOneof("kind")
        if kind is None:
            return None
        actual = _KINDS[kind]
        if actual != dtype:
            if not variable or (not self.batch and where[2] == "dense"):
                detail = f"Data type: {_TYPE_NAMES[actual]} but expected type: {_TYPE_NAMES[dtype]}"
            elif self.batch and where[2] == "dense":
                detail = f"Expected type: {_TYPE_NAMES[dtype]}"
            else:
                detail = f"Expected type: {_TYPE_NAMES[dtype]}, Actual type: {_TYPE_NAMES[actual]}"
            raise self._key_error(key, where, f"Data types don't match. {detail}")
        values = getattr(feature, kind).value
        return np.array(list(values), dtype=object) if dtype == _dtypes.string else \
            np.asarray(values, dtype=_np_type(dtype))

    def _key_error(self, key: str, where: tuple, message: str) -> InvalidArgumentError:
        name, index = where[:2]
        prefix = f"Name: {name}, Key: {key}, Index: {index}.  " if self.batch else f"Key: {key}.  "
        return self._error(prefix + message)

    def parse(self, serialized: bytes, name: str, index: int) -> tuple[list, list]:
        """(sparse values, dense values) of one example: a vector per sparse key, and per dense key an array of
        its shape (variable length: [rows] + block)."""
        example = protos.example_pb2.Example()
        try:
            example.ParseFromString(serialized)
        except Exception:  # protobuf's DecodeError and the C++ parser's errors
            raise self._error(f"Could not parse example input, value: '{_text(serialized)}'") from None
        features = example.features.feature
        sparse = []
        for key, dtype in self.sparse:
            values = self._values(features[key], key, dtype, True, (name, index, "sparse")) \
                if key in features else None
            sparse.append(np.zeros(0, _np_type(dtype)) if values is None else values)
        dense = [self._dense(d, features, name, index) for d in self.dense]
        return sparse, dense

    def _dense(self, d: _Dense, features, name: str, index: int) -> np.ndarray:
        values = self._values(features[d.key], d.key, d.dtype, d.variable, (name, index, "dense")) \
            if d.key in features else None
        if d.variable:
            values = np.zeros(0, _np_type(d.dtype)) if values is None else values
            if d.stride and values.size % d.stride:
                raise self._count_error(d, name, index, f"Number of {_VALUE_NAMES[d.dtype]} values is not a "
                                        f"multiple of stride length. Saw {values.size} values but output shape is: "
                                        f"{_shape_text(d.dims)}")
            return values.reshape((values.size // d.stride if d.stride else 0,) + d.block)
        if values is None:
            if d.default.size == 0:
                where = f"Name: {name}, " if self.batch else ""
                raise self._error(f"{where}Feature: {d.key} (data type: {_TYPE_NAMES[d.dtype]}) is required but "
                                  f"could not be found.")
            return d.default.reshape(d.dims)
        if values.size != d.stride:
            raise self._count_error(d, name, index, f"Number of {_VALUE_NAMES[d.dtype]} values != expected.  "
                                    f"Values size: {values.size} but output shape: {_shape_text(d.dims)}")
        return values.reshape(d.dims)

    def _count_error(self, d: _Dense, name: str, index: int, batch_message: str) -> InvalidArgumentError:
        """A dense feature with the wrong number of values: ParseExample says how many, ParseSingleExample only
        that the Example cannot be parsed (TF 1.15's wording)."""
        return self._key_error(d.key, (name, index),
                               batch_message if self.batch else "Can't parse serialized Example.")


def _sparse_outputs(per_example: list, dtype, batch: bool) -> tuple:
    """(indices, values, dense_shape) of one sparse key from its values in each example."""
    longest = max((len(v) for v in per_example), default=0)
    rows = [np.stack([np.full(len(v), b), np.arange(len(v))], axis=1) if batch else np.arange(len(v))[:, None]
            for b, v in enumerate(per_example)]
    width = 2 if batch else 1
    indices = np.concatenate(rows).astype(np.int64) if rows else np.zeros((0, width), np.int64)
    values = np.concatenate(per_example) if per_example else np.zeros(0, _np_type(dtype))
    if dtype == _dtypes.string:
        values = values.astype(object)
    shape = np.asarray([len(per_example), longest] if batch else [longest], np.int64)
    return indices.reshape(-1, width), values.astype(_np_type(dtype), copy=False), shape


def _dense_output(d: _Dense, per_example: list) -> np.ndarray:
    """A dense key's batch output: the examples stacked, variable-length ones padded with the default scalar."""
    if not d.variable:
        return np.stack(per_example).astype(_np_type(d.dtype), copy=False) if per_example else \
            np.zeros((0,) + d.dims, _np_type(d.dtype))
    rows = max((len(v) for v in per_example), default=0)
    out = np.empty((len(per_example), rows) + d.block, _np_type(d.dtype))
    out[...] = d.default.reshape(())
    for b, v in enumerate(per_example):
        out[b, :len(v)] = v
    return out


def _keys(values) -> list[str]:
    return [_text(np.asarray(v).reshape(()).item()) for v in values]


def batch_inputs(op, serialized, names, names_arg: str) -> tuple[np.ndarray, np.ndarray]:
    """A batch parser's `serialized` vector and its names (none, or one per record), checked as TF checks them."""
    serialized, names = np.asarray(serialized, dtype=object), np.asarray(names, dtype=object)
    if serialized.ndim != 1:
        raise InvalidArgumentError(None, op, f"Expected serialized to be a vector, got shape: "
                                             f"{_shape_text(serialized.shape)}")
    if names.size and names.shape != serialized.shape:
        raise InvalidArgumentError(None, op, f"Expected len({names_arg}) == len(serialized), but got: {names.size} "
                                             f"vs. {serialized.size}")
    return serialized, names


@kernel("ParseExample", None, NO_GPU)
def _parse_example(op, ctx):
    attrs = op._attrs
    num_sparse, num_dense = attrs["Nsparse"], attrs["Ndense"]

    def parse_example(serialized, names, *rest):
        sparse_keys, dense_keys = _keys(rest[:num_sparse]), _keys(rest[num_sparse:num_sparse + num_dense])
        defaults = rest[num_sparse + num_dense:]
        serialized, names = batch_inputs(op, serialized, names, "names")
        dense = [_Dense(k, t, s, v) for k, t, s, v in zip(dense_keys, attrs["Tdense"], attrs["dense_shapes"],
                                                            defaults)]
        parser = _ExampleParser(op, list(zip(sparse_keys, map(_dtypes.as_dtype, attrs["sparse_types"]))), dense,
                                batch=True)
        parsed = [parser.parse(s, _text(names[i]) if names.size else "<unknown>", i)
                  for i, s in enumerate(serialized)]
        return _assemble(parser, parsed, batch=True)
    return parse_example


@kernel("ParseSingleExample", None, NO_GPU)
def _parse_single_example(op, ctx):
    attrs = op._attrs

    def parse_single_example(serialized, *defaults):
        serialized = np.asarray(serialized, dtype=object)
        if serialized.ndim != 0:
            raise InvalidArgumentError(None, op, f"Expected `serialized` to be a scalar, got shape: "
                                                 f"{_shape_text(serialized.shape)}")
        dense = [_Dense(k, t, s, v) for k, t, s, v in zip(attrs["dense_keys"], attrs["Tdense"],
                                                            attrs["dense_shapes"], defaults)]
        parser = _ExampleParser(op, list(zip(attrs["sparse_keys"], map(_dtypes.as_dtype, attrs["sparse_types"]))),
                                dense, batch=False)
        return _assemble(parser, [parser.parse(serialized.item(), "", 0)], batch=False)
    return parse_single_example


def _assemble(parser: _ExampleParser, parsed: list, batch: bool):
    """The op's outputs from each example's parse: sparse indices, values and shapes, then the dense values."""
    sparse = [_sparse_outputs([p[0][k] for p in parsed], dtype, batch) for k, (_, dtype) in enumerate(parser.sparse)]
    if batch:
        dense = [_dense_output(d, [p[1][k] for p in parsed]) for k, d in enumerate(parser.dense)]
    else:
        dense = [parsed[0][1][k].astype(_np_type(d.dtype), copy=False) for k, d in enumerate(parser.dense)]
    return multi_output([s[0] for s in sparse] + [s[1] for s in sparse] + [s[2] for s in sparse] + dense)


# --- DecodeCSV ---------------------------------------------------------------------------------------------------
_SPACE = b" \t\n\v\f\r"
_INT = re.compile(rb"[ \t\n\v\f\r]*(-?[0-9]+)[ \t\n\v\f\r]*\Z")
_FLOAT = re.compile(rb"[ \t\n\v\f\r]*([+-]?(?:(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?|inf|nan|"
                    rb"0x[0-9a-f]+))[ \t\n\v\f\r]*\Z", re.IGNORECASE)
_INT_RANGES = {_dtypes.int32: (-2 ** 31, 2 ** 31 - 1), _dtypes.int64: (-2 ** 63, 2 ** 63 - 1)}


def _number(field: bytes, dtype):
    """TF's safe_strto32/64 and safe_strtof/d: surrounding whitespace allowed, nothing else; None if invalid."""
    if dtype in _INT_RANGES:
        match = _INT.match(field)
        if match is None:
            return None
        value = int(match.group(1))
        low, high = _INT_RANGES[dtype]
        return value if low <= value <= high else None
    match = _FLOAT.match(field) if len(field) < 32 else None
    if match is None:
        return None
    text = match.group(1).lower()
    sign, digits = (text[:1], text[1:]) if text[:1] in (b"+", b"-") else (b"", text)
    if digits.startswith(b"0x"):
        return float(int(sign + digits[2:], 16))
    return float(text)


class _CsvSplitter:
    """Splits one record into its (selected) fields exactly as TF's DecodeCSV does, raising its errors."""

    def __init__(self, delim: bytes, use_quote: bool, select_cols: list):
        self.delim, self.use_quote, self.select = delim[0], use_quote, select_cols

    def split(self, line: bytes) -> list[bytes]:
        fields: list[bytes] = []
        pos, parsed, n = 0, 0, len(line)
        quote, delim, select = ord('"'), self.delim, self.select
        if not line:
            return fields
        while pos < n:
            if line[pos] in (10, 13):
                pos += 1
                continue
            include = not select or select[len(fields)] == parsed
            field = bytearray()
            if self.use_quote and line[pos] == quote:
                pos += 1
                while pos < n - 1 and (line[pos] != quote or line[pos + 1] != delim):
                    if line[pos] != quote:
                        field.append(line[pos])
                        pos += 1
                        continue
                    if line[pos + 1] != quote:
                        raise ValueError("Quote inside a string has to be escaped by another quote")
                    field.append(quote)
                    pos += 2
                if not (pos < n and line[pos] == quote and (pos == n - 1 or line[pos + 1] == delim)):
                    raise ValueError("Quoted field has to end with quote followed by delim or end")
                pos += 2
            else:
                while pos < n and line[pos] != delim:
                    if (self.use_quote and line[pos] == quote) or line[pos] in (10, 13):
                        raise ValueError("Unquoted fields cannot have quotes/CRLFs inside")
                    field.append(line[pos])
                    pos += 1
                pos += 1
            parsed += 1
            if include:
                fields.append(bytes(field))
                if select and len(fields) == len(select):
                    return fields
        if (not select or select[len(fields)] == parsed) and line[-1] == delim:
            fields.append(b"")
        return fields


@kernel("DecodeCSV", None, NO_GPU)
def _decode_csv(op, ctx):
    attrs = op._attrs
    types = [_dtypes.as_dtype(t) for t in attrs["OUT_TYPE"]]
    na_value = attrs["na_value"].encode() if isinstance(attrs["na_value"], str) else bytes(attrs["na_value"])
    delim = attrs["field_delim"].encode() if isinstance(attrs["field_delim"], str) else bytes(attrs["field_delim"])
    select = [int(c) for c in attrs.get("select_cols") or []]
    splitter = _CsvSplitter(delim, bool(attrs.get("use_quote_delim", True)), select)

    def decode_csv(records, *defaults):
        records = np.asarray(records, dtype=object)
        for i, d in enumerate(defaults):
            d = np.asarray(d)
            if d.ndim > 1:
                raise InvalidArgumentError(None, op, "Each record default should be at most rank 1")
            if d.size > 1:
                raise InvalidArgumentError(None, op, f"There should only be 1 default per field but field {i} has "
                                                     f"{d.size}")
        outs = [np.empty(records.shape, _np_type(t)) for t in types]
        flat_outs = [o.reshape(-1) for o in outs]
        for i, record in enumerate(records.reshape(-1)):
            try:
                fields = splitter.split(record)
            except ValueError as e:
                raise InvalidArgumentError(None, op, f"{e} (record {i}: '{_text(record)}')") from None
            if len(fields) != len(types):
                raise InvalidArgumentError(None, op, f"Expect {len(types)} fields but have {len(fields)} in record "
                                                     f"{i}")
            for f, (field, dtype) in enumerate(zip(fields, types)):
                flat_outs[f][i] = _csv_value(op, field, dtype, np.asarray(defaults[f]), f, i, na_value)
        return multi_output(outs)
    return decode_csv


def _csv_value(op, field: bytes, dtype, default: np.ndarray, f: int, i: int, na_value: bytes):
    if not field or field == na_value:
        if default.size != 1:
            raise InvalidArgumentError(None, op, f"Field {f} is required but missing in record {i}!")
        return default.reshape(()).item()
    if dtype == _dtypes.string:
        return field
    value = _number(field, dtype)
    if value is None:
        raise InvalidArgumentError(None, op, f"Field {f} in record {i} is not a valid {_TYPE_NAMES[dtype]}: "
                                             f"{_text(field)}")
    return value


# --- DecodeRaw, DecodeCompressed, StringSplit ------------------------------------------------------------------------
@kernel("DecodeRaw", None, NO_GPU)
def _decode_raw(op, ctx):
    out_type = _dtypes.as_dtype(op._attrs["out_type"])
    np_type = np.dtype(out_type.as_numpy_dtype).newbyteorder("<" if op._attrs.get("little_endian", True) else ">")

    def decode_raw(data):
        data = np.asarray(data, dtype=object)
        flat = data.reshape(-1)
        size = len(flat[0]) if flat.size else 0
        for i, s in enumerate(flat):
            if len(s) != size:
                raise InvalidArgumentError(None, op, f"DecodeRaw requires input strings to all be the same size, "
                                                     f"but element {i} has size {size} != {len(s)}")
        if size == 0:
            return np.zeros(data.shape + (0,), out_type.as_numpy_dtype)
        if size % np_type.itemsize:
            raise InvalidArgumentError(None, op, f"Input to DecodeRaw has length {size} that is not a multiple of "
                                                 f"{np_type.itemsize}, the size of {_TYPE_NAMES.get(out_type, out_type.name)}")
        out = np.frombuffer(b"".join(flat), dtype=np_type).astype(out_type.as_numpy_dtype)
        return out.reshape(data.shape + (size // np_type.itemsize,))
    return decode_raw


@kernel("DecodeCompressed", None, NO_GPU)
def _decode_compressed(op, ctx):
    compression = op._attrs.get("compression_type", "")
    window_bits = {"ZLIB": zlib.MAX_WBITS, "GZIP": zlib.MAX_WBITS + 16}.get(compression)

    def decode_compressed(data):
        data = np.asarray(data, dtype=object)
        if window_bits is None:
            return data
        out = np.empty(data.shape, object)
        flat = out.reshape(-1)
        for i, s in enumerate(data.reshape(-1)):
            try:
                flat[i] = zlib.decompressobj(window_bits).decompress(s)
            except zlib.error as e:
                raise InvalidArgumentError(None, op, f"Corrupt {compression} data in element {i}: {e}") from None
        return out
    return decode_compressed


def _split(text: bytes, sep: bytes, skip_empty: bool) -> list[bytes]:
    """TF's StringSplit of one string: into bytes for an empty `sep`, else at every byte of `sep`."""
    if not text:
        return []
    if not sep:
        return [text[i:i + 1] for i in range(len(text))]
    tokens = re.split(b"[" + re.escape(sep) + b"]", text) if len(sep) > 1 else text.split(sep)
    return [t for t in tokens if t] if skip_empty else tokens


@kernel("StringSplit", None, NO_GPU)
def _string_split(op, ctx):
    skip_empty = bool(op._attrs.get("skip_empty", True))

    def string_split(source, delimiter):
        source, delimiter = np.asarray(source, dtype=object), np.asarray(delimiter, dtype=object)
        if source.ndim != 1:
            raise InvalidArgumentError(None, op, f"input must be a vector, got shape: {_shape_text(source.shape)}")
        if delimiter.ndim != 0:
            raise InvalidArgumentError(None, op, f"delimiter must be a scalar, got shape: "
                                                 f"{_shape_text(delimiter.shape)}")
        tokens = [_split(s, delimiter.item(), skip_empty) for s in source]
        indices, values, shape = _sparse_outputs([np.array(t, dtype=object) for t in tokens], _dtypes.string, True)
        return indices, values, shape
    return string_split
