"""CPU kernels of the SequenceExample parsing ops (adplace.ops.sequence_parsing_ops): ParseSingleSequenceExample
and ParseSequenceExample (TF 1.15's batch op). TF runs them on the CPU only; so does adplace.

Errors are TF's InvalidArgumentError with TF's wording, naming the example and the feature ("Name: <unknown>,
Context feature 'length' is required but could not be found.", "..., Feature list: tokens, Index: 2.  Data types
don't match. Expected type: int64").
"""
from __future__ import annotations

import numpy as np

from adplace.framework import dtypes as _dtypes
from adplace.framework.errors import InvalidArgumentError
from adplace.framework.tensor_shape import as_shape
from adplace.kernels.parsing import _KINDS, _TYPE_NAMES, _VALUE_NAMES, _keys, _np_type, _shape_text, _sparse_outputs
from adplace.kernels.parsing import _text, batch_inputs
from adplace.kernels.registration import NO_GPU, kernel, multi_output
from adplace.lib import protos


class _Spec:
    """One parsed key: its name, dtype, block shape and (context dense) default."""

    def __init__(self, key: str, dtype, shape=(), default=None):
        self.key, self.dtype, self.dims = key, _dtypes.as_dtype(dtype), as_shape(shape).as_tuple()
        self.stride = int(np.prod(self.dims, dtype=np.int64))
        self.default = None if default is None else np.asarray(default)

    def empty(self, rows: int = 0) -> np.ndarray:
        return np.zeros((rows,) + self.dims, _np_type(self.dtype)) if self.dtype != _dtypes.string else \
            np.full((rows,) + self.dims, b"", dtype=object)


class _Parsed:
    """One SequenceExample's values: context sparse vectors and dense arrays, per feature list the vectors of its
    steps (sparse) or a [steps] + shape array (dense)."""

    def __init__(self, context_sparse, context_dense, list_sparse, list_dense):
        self.context_sparse, self.context_dense = context_sparse, context_dense
        self.list_sparse, self.list_dense = list_sparse, list_dense


class _SequenceParser:
    """Parses serialized SequenceExamples for the keys of one op; `batch` selects ParseSequenceExample's messages."""

    def __init__(self, op, specs: list, missing_assumed_empty: set, batch: bool):
        self.op, self.batch = op, batch
        self.context_sparse, self.context_dense, self.list_sparse, self.list_dense = specs
        self.missing_assumed_empty = missing_assumed_empty

    def _error(self, message: str) -> InvalidArgumentError:
        return InvalidArgumentError(None, self.op, message)

    def _values(self, feature, spec: _Spec, where: str) -> np.ndarray | None:
        """The values of `feature` (None when it holds no list), which must be of the spec's dtype."""
        kind = feature.WhichOneof("kind")
        if kind is None:
            return None
        if _KINDS[kind] != spec.dtype:
            raise self._error(f"{where}.  Data types don't match. Expected type: {_TYPE_NAMES[spec.dtype]}")
        values = getattr(feature, kind).value
        return np.array(list(values), dtype=object) if spec.dtype == _dtypes.string else \
            np.asarray(values, dtype=_np_type(spec.dtype))

    def _block(self, values: np.ndarray | None, spec: _Spec, name: str, index: int) -> np.ndarray:
        """`values` reshaped to the spec's block, which must hold exactly that many."""
        size = 0 if values is None else values.size
        if size != spec.stride:
            what = f"{_VALUE_NAMES[spec.dtype]} values" if not self.batch else "values"
            raise self._error(f"Name: {name}, Key: {spec.key}, Index: {index}.  Number of {what} != expected.  values "
                              f"size: {size} but output shape: {_shape_text(spec.dims)}")
        return (spec.empty(1)[0] if values is None else values).reshape(spec.dims)

    def parse(self, serialized: bytes, name: str, index: int) -> _Parsed:
        example = protos.example_pb2.SequenceExample()
        try:
            example.ParseFromString(serialized)
        except Exception:  # protobuf's DecodeError and the C++ parser's errors
            if self.batch:
                raise self._error(f"Invalid protocol message input, example id: {name}") from None
            raise self._error(f"Could not parse example input, value: '{_text(serialized)}'") from None
        context, lists = example.context.feature, example.feature_lists.feature_list
        context_sparse = []
        for spec in self.context_sparse:
            values = self._values(context[spec.key], spec, f"Name: {name}, Context feature: {spec.key}") \
                if spec.key in context else None
            context_sparse.append(spec.empty() if values is None else values)
        context_dense = []
        for spec in self.context_dense:
            values = self._values(context[spec.key], spec, f"Name: {name}, Context feature: {spec.key}") \
                if spec.key in context else None
            if values is None:
                if spec.default is None or spec.default.size == 0:
                    raise self._error(f"Name: {name}, Context feature '{spec.key}' is required but could not be "
                                      f"found.")
                context_dense.append(spec.default.reshape(spec.dims))
            else:
                context_dense.append(self._block(values, spec, name, index))
        list_sparse = []
        for spec in self.list_sparse:
            steps = lists[spec.key].feature if spec.key in lists else []
            per_step = [self._values(f, spec, f"Name: {name}, Feature List: {spec.key}, Index: {t}")
                        for t, f in enumerate(steps)]
            list_sparse.append([spec.empty() if v is None else v for v in per_step])
        list_dense = []
        for spec in self.list_dense:
            if spec.key not in lists:
                if spec.key not in self.missing_assumed_empty:
                    raise self._error(f"Name: {name}, Feature list '{spec.key}' is required but could not be found.  "
                                      f"Did you mean to include it in feature_list_dense_missing_assumed_empty or "
                                      f"feature_list_dense_defaults?")
                list_dense.append(spec.empty())
                continue
            blocks = [self._block(self._values(f, spec, f"Name: {name}, Feature list: {spec.key}, Index: {t}"),
                                  spec, name, t) for t, f in enumerate(lists[spec.key].feature)]
            list_dense.append(np.stack(blocks).astype(_np_type(spec.dtype), copy=False) if blocks else spec.empty())
        return _Parsed(context_sparse, context_dense, list_sparse, list_dense)


def _list_sparse_output(per_example: list, dtype, batch: bool) -> tuple:
    """(indices, values, dense_shape) of one sparse feature list from each example's per-step values: indices
    [example,] step, position; shape [examples,] longest list, most values in a step."""
    indices, values = [], []
    for b, steps in enumerate(per_example):
        for t, v in enumerate(steps):
            lead = [b, t] if batch else [t]
            indices.extend(lead + [j] for j in range(len(v)))
            values.extend(v.tolist())
    width = 3 if batch else 2
    steps = max((len(s) for s in per_example), default=0)
    most = max((len(v) for s in per_example for v in s), default=0)
    shape = [len(per_example), steps, most] if batch else [steps, most]
    out = np.empty(len(values), dtype=object) if dtype == _dtypes.string else np.asarray(values, _np_type(dtype))
    if dtype == _dtypes.string:
        out[:] = values
    return np.asarray(indices, np.int64).reshape(-1, width), out, np.asarray(shape, np.int64)


def _outputs(parser: _SequenceParser, parsed: list, batch: bool):
    """The op's outputs in TF's order from each example's parse (a batch of one for the single op)."""
    context_sparse = [_sparse_outputs([p.context_sparse[k] for p in parsed], s.dtype, batch)
                      for k, s in enumerate(parser.context_sparse)]
    list_sparse = [_list_sparse_output([p.list_sparse[k] for p in parsed], s.dtype, batch)
                   for k, s in enumerate(parser.list_sparse)]
    if batch:
        context_dense = [np.stack([p.context_dense[k] for p in parsed]).astype(_np_type(s.dtype), copy=False)
                         if parsed else s.empty() for k, s in enumerate(parser.context_dense)]
        list_dense, lengths = [], []
        for k, spec in enumerate(parser.list_dense):
            per_example = [p.list_dense[k] for p in parsed]
            lengths.append(np.asarray([len(v) for v in per_example], np.int64))
            rows = max(lengths[-1], default=0)
            padded = np.stack([spec.empty(rows) for _ in per_example]) if per_example else \
                spec.empty().reshape((0, 0) + spec.dims)
            for b, v in enumerate(per_example):
                padded[b, :len(v)] = v
            list_dense.append(padded)
    else:
        context_dense = [v.astype(_np_type(s.dtype), copy=False) for v, s in zip(parsed[0].context_dense,
                                                                                 parser.context_dense)]
        list_dense, lengths = parsed[0].list_dense, []
    pieces = []
    for sparse, dense in ((context_sparse, context_dense), (list_sparse, list_dense)):
        pieces += [s[0] for s in sparse] + [s[1] for s in sparse] + [s[2] for s in sparse] + list(dense)
    return multi_output(pieces + lengths)


def _specs(attrs: dict, keys: list, defaults) -> list:
    """The _Specs of the context sparse, context dense, feature list sparse and dense keys."""
    context_sparse, context_dense, list_sparse, list_dense = keys
    return [[_Spec(k, t) for k, t in zip(context_sparse, attrs["context_sparse_types"])],
            [_Spec(k, t, s, d) for k, t, s, d in zip(context_dense, attrs["Tcontext_dense"],
                                                     attrs["context_dense_shapes"], defaults)],
            [_Spec(k, t) for k, t in zip(list_sparse, attrs["feature_list_sparse_types"])],
            [_Spec(k, t, s) for k, t, s in zip(list_dense, attrs["feature_list_dense_types"],
                                               attrs["feature_list_dense_shapes"])]]


@kernel("ParseSingleSequenceExample", None, NO_GPU)
def _parse_single_sequence_example(op, ctx):
    attrs = op._attrs
    counts = [len(attrs[a]) for a in ("context_sparse_types", "Tcontext_dense", "feature_list_sparse_types",
                                      "feature_list_dense_types")]

    def parse_single_sequence_example(serialized, missing_assumed_empty, *rest):
        keys, position = [], 0
        for count in counts:
            keys.append(_keys(rest[position:position + count]))
            position += count
        defaults, debug_name = rest[position:-1], rest[-1]
        serialized = np.asarray(serialized, dtype=object)
        if serialized.ndim != 0:
            raise InvalidArgumentError(None, op, f"Expected serialized to be a scalar, got shape: "
                                                 f"{_shape_text(serialized.shape)}")
        missing = set(_keys(np.asarray(missing_assumed_empty, dtype=object).reshape(-1)))
        parser = _SequenceParser(op, _specs(attrs, keys, defaults), missing, batch=False)
        name = _text(np.asarray(debug_name, dtype=object).reshape(()).item())
        return _outputs(parser, [parser.parse(serialized.item(), name, 0)], batch=False)
    return parse_single_sequence_example


@kernel("ParseSequenceExample", None, NO_GPU)
def _parse_sequence_example(op, ctx):
    attrs = op._attrs
    keys = [[_text(k) if isinstance(k, bytes) else k for k in attrs[a]] for a in ("context_sparse_keys", "context_dense_keys", "feature_list_sparse_keys",
                                     "feature_list_dense_keys")]
    missing = {_text(k) if isinstance(k, bytes) else k for k in attrs["feature_list_dense_missing_assumed_empty"]}

    def parse_sequence_example(serialized, debug_name, *defaults):
        serialized, names = batch_inputs(op, serialized, debug_name, "debug_name")
        parser = _SequenceParser(op, _specs(attrs, keys, defaults), missing, batch=True)
        parsed = [parser.parse(s, _text(names[i]) if names.size else "<unknown>", i) for i, s in enumerate(serialized)]
        return _outputs(parser, parsed, batch=True)
    return parse_sequence_example
