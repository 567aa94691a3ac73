"""tf.data.Dataset in TF1 graph mode: each dataset is a variant tensor made by TF's dataset ops
(adplace/ops/dataset_ops.py), with the structure of its elements; transformations make new ones.

    ds = tf.data.Dataset.from_tensor_slices((features, labels)).shuffle(100, seed=1).batch(32).repeat()
    x, y = ds.make_one_shot_iterator().get_next()        # OutOfRangeError at the end of the data

Functions (`map`, `filter`, `flat_map`, `interleave`) are traced once into function graphs
(framework/function_graph.py) and run on the CPU for each element; the tensors they use from the enclosing graph
are evaluated when the iterator is initialized. Iterators live on the CPU; their elements reach the devices of the
ops that consume them through the plan's transfers.
"""
from __future__ import annotations

import threading
from typing import Callable

import numpy as np

from adplace.data import structure
from adplace.data.structure import Spec
from adplace.framework import dtypes as _dtypes
from adplace.framework import function_graph
from adplace.framework.conversion import convert_to_tensor
from adplace.framework.default_graph import control_dependencies, name_scope
from adplace.framework.graph import get_default_graph
from adplace.framework.operation import Tensor
from adplace.framework.random_seed import get_seed
from adplace.framework.tensor_shape import Dimension, TensorShape, as_shape
from adplace.ops import array_ops, check_ops, file_ops, script_ops
from adplace.ops import dataset_ops as gen

AUTOTUNE = -1


def _int64(value, name: str) -> Tensor:
    return convert_to_tensor(value, _dtypes.int64, name=name)


def _attrs(spec, types_attr: str = "output_types") -> dict:
    """A dataset op's element attrs: its types (under `types_attr`: TF's ops that take components as inputs call it
    "Toutput_types") and its shapes."""
    flat = structure.flatten(spec)
    return {types_attr: [s.dtype for s in flat], "output_shapes": [s.shape for s in flat]}


class Dataset:
    """A dataset: its variant tensor and the structure of its elements (TF 1.15's DatasetV1 API)."""

    def __init__(self, variant: Tensor, spec):
        self._variant_tensor = variant
        self._spec = spec

    # --- what an element looks like -----------------------------------------------------------------------------
    output_types = property(lambda self: structure.types(self._spec), doc="The dtypes of an element's components.")
    output_shapes = property(lambda self: structure.shapes(self._spec), doc="Their static shapes.")
    output_classes = property(lambda self: structure.classes(self._spec), doc="Their classes (Tensor).")

    def __repr__(self) -> str:
        return f"<{type(self).__name__} shapes: {self.output_shapes}, types: {self.output_types}>"

    def _unary(self, op_type: str, inputs: list, spec, extra: dict | None = None, name: str | None = None):
        attrs = {**_attrs(spec), **(extra or {})}
        return Dataset(gen.dataset_op(op_type, [self._variant_tensor, *inputs], attrs, name), spec)

    # --- sources ------------------------------------------------------------------------------------------------
    @staticmethod
    def from_tensors(tensors) -> "Dataset":
        """One element: `tensors`."""
        with name_scope(None, "TensorDataset"):
            tensors = structure.normalize(tensors)
            spec = structure.structure_of(tensors)
            return Dataset(gen.dataset_op("TensorDataset", structure.flatten(tensors), _attrs(spec, "Toutput_types")),
                           spec)

    @staticmethod
    def from_tensor_slices(tensors) -> "Dataset":
        """One element per row of `tensors` (every component sliced along its first dimension)."""
        with name_scope(None, "TensorSliceDataset"):
            tensors = structure.normalize(tensors)
            flat = structure.flatten(tensors)
            if not flat:
                raise ValueError("from_tensor_slices needs at least one component.")
            rows = Dimension(None)
            for t in flat:
                if t.shape.ndims == 0:
                    raise ValueError(f"Shape must be at least rank 1 but is rank 0 for component {t.name!r} of "
                                     f"from_tensor_slices.")
                if t.shape.ndims is not None:
                    if not rows.is_compatible_with(t.shape[0]):
                        raise ValueError(f"Dimension 0 in both shapes must be equal, but are {rows.value} and "
                                         f"{t.shape[0].value} (from_tensor_slices).")
                    rows = rows.merge_with(t.shape[0])
            spec = structure.map_structure(
                lambda t: Spec(t.dtype, TensorShape(None) if t.shape.ndims is None else t.shape[1:]), tensors)
            return Dataset(gen.dataset_op("TensorSliceDataset", flat, _attrs(spec, "Toutput_types")), spec)

    @staticmethod
    def range(*args) -> "Dataset":
        """int64 elements like Python's range: range(stop), range(start, stop), range(start, stop, step)."""
        if not 1 <= len(args) <= 3:
            raise ValueError(f"Invalid arguments to Dataset.range: {args}.")
        start, stop, step = (0, args[0], 1) if len(args) == 1 else (*args, 1)[:3]
        with name_scope(None, "RangeDataset"):
            inputs = [_int64(start, "start"), _int64(stop, "stop"), _int64(step, "step")]
            spec = Spec(_dtypes.int64, [])
            return Dataset(gen.dataset_op("RangeDataset", inputs, _attrs(spec)), spec)

    @staticmethod
    def zip(datasets) -> "Dataset":
        """Elements of several datasets side by side (a tuple or dict of datasets, nested), as long as the shortest."""
        flat = structure.flatten(datasets)
        for d in flat:
            if not isinstance(d, Dataset):
                raise TypeError(f"The argument to Dataset.zip() must be a (nested) structure of Dataset objects, "
                                f"got {type(d).__name__}.")
        spec = structure.pack(datasets, [d._spec for d in flat])
        with name_scope(None, "ZipDataset"):
            return Dataset(gen.dataset_op("ZipDataset", [d._variant_tensor for d in flat],
                                          {**_attrs(spec), "N": len(flat)}), spec)

    @staticmethod
    def from_generator(generator: Callable, output_types, output_shapes=None, args=None) -> "Dataset":
        """Elements that `generator(*args)` yields (called anew by each iterator), converted to `output_types`
        and checked against `output_shapes`."""
        return _from_generator(generator, output_types, output_shapes, args)

    @staticmethod
    def list_files(file_pattern, shuffle=None, seed=None) -> "Dataset":
        """The file names matching `file_pattern` (a glob, or a list of them), shuffled unless shuffle=False;
        InvalidArgumentError when the iterator starts and nothing matches."""
        with name_scope(None, "list_files"):
            pattern = convert_to_tensor(file_pattern, _dtypes.string, name="file_pattern")
            names = file_ops.matching_files(pattern)
            found = check_ops.Assert(array_ops.size(names) > 0, ["No files matched pattern: ", pattern],
                                     name="assert_not_empty")
            with control_dependencies([found]):
                names = array_ops.identity(names)
            dataset = Dataset.from_tensor_slices(names)
            return dataset.shuffle(1 << 31 - 1, seed=seed) if shuffle is not False else dataset

    # --- functions of elements ----------------------------------------------------------------------------------
    def map(self, map_func: Callable, num_parallel_calls: int | None = None) -> "Dataset":
        """map_func(element) for each element; `num_parallel_calls` of them at once (results in order)."""
        traced = _Traced("Dataset_map", map_func, self._spec)
        if num_parallel_calls is None:
            return self._unary("MapDataset", traced.captured, traced.output_spec, traced.attrs("f"))
        parallel = convert_to_tensor(num_parallel_calls, _dtypes.int32, name="num_parallel_calls")
        return self._unary("ParallelMapDataset", [*traced.captured, parallel], traced.output_spec,
                           traced.attrs("f"))

    def filter(self, predicate: Callable) -> "Dataset":
        """The elements for which `predicate(element)` is True."""
        traced = _Traced("Dataset_filter", predicate, self._spec)
        out = structure.flatten(traced.output_spec)
        if len(out) != 1 or out[0].dtype != _dtypes.bool or not out[0].shape.is_compatible_with([]):
            raise ValueError(f"`predicate` must return a scalar boolean tensor, got {traced.output_spec}.")
        return self._unary("FilterDataset", traced.captured, self._spec, traced.attrs("predicate"))

    def flat_map(self, map_func: Callable) -> "Dataset":
        """The elements of the dataset map_func(element) returns, for each element in turn."""
        traced = _Traced("Dataset_flat_map", map_func, self._spec, returns_dataset=True)
        return self._unary("FlatMapDataset", traced.captured, traced.output_spec, traced.attrs("f"))

    def interleave(self, map_func: Callable, cycle_length=AUTOTUNE, block_length: int = 1,
                   num_parallel_calls: int | None = None) -> "Dataset":
        """The datasets map_func makes of `cycle_length` input elements, read `block_length` elements at a time in
        turn (TF's order, also with num_parallel_calls)."""
        traced = _Traced("Dataset_interleave", map_func, self._spec, returns_dataset=True)
        inputs = [*traced.captured, _int64(cycle_length, "cycle_length"), _int64(block_length, "block_length")]
        if num_parallel_calls is None:
            return self._unary("InterleaveDataset", inputs, traced.output_spec, traced.attrs("f"))
        inputs.append(_int64(num_parallel_calls, "num_parallel_calls"))
        return self._unary("ParallelInterleaveDatasetV2", inputs, traced.output_spec,
                           {**traced.attrs("f"), "sloppy": False})

    # --- grouping, order, count ---------------------------------------------------------------------------------
    def batch(self, batch_size, drop_remainder: bool = False) -> "Dataset":
        """`batch_size` consecutive elements stacked; the last batch may be smaller unless `drop_remainder`."""
        size = _int64(batch_size, "batch_size")
        known = _constant_int(size) if drop_remainder else None
        spec = structure.map_structure(lambda s: Spec(s.dtype, TensorShape([known]).concatenate(s.shape)),
                                       self._spec)
        drop = convert_to_tensor(bool(drop_remainder), _dtypes.bool, name="drop_remainder")
        return self._unary("BatchDatasetV2", [size, drop], spec, {"parallel_copy": False})

    def padded_batch(self, batch_size, padded_shapes, padding_values=None, drop_remainder: bool = False):
        """Batches of elements padded to `padded_shapes` (None or -1 dims: the longest in the batch) with
        `padding_values` (0 and b"" by default)."""
        flat_spec = structure.flatten(self._spec)
        flat_shapes = structure._flatten_up_to(self._spec, padded_shapes)
        flat_values = ([None] * len(flat_spec) if padding_values is None
                       else structure._flatten_up_to(self._spec, padding_values))
        shapes_in, values_in, out = [], [], []
        size = _int64(batch_size, "batch_size")
        known = _constant_int(size) if drop_remainder else None
        for s, padded, value in zip(flat_spec, flat_shapes, flat_values):
            padded = as_shape(padded) if not isinstance(padded, Tensor) else TensorShape(None)
            if padded.ndims is None:
                raise ValueError("padded_shapes must be fully known in rank (use -1 or None for dimensions to pad "
                                 "to the longest element).")
            if s.shape.ndims is not None and not s.shape.is_compatible_with(
                    TensorShape([None] * padded.ndims)):
                raise ValueError(f"The padded shape {padded} is not compatible with the corresponding input "
                                 f"component shape {s.shape}.")
            if not padded.is_compatible_with(s.shape) and s.shape.ndims is not None:
                for want, have in zip(padded.as_tuple(), s.shape.as_tuple()):
                    if want is not None and have is not None and have > want:
                        raise ValueError(f"The padded shape {padded} is not compatible with the corresponding "
                                         f"input component shape {s.shape}.")
            dims = [-1 if d is None else d for d in padded.as_tuple()]
            shapes_in.append(convert_to_tensor(np.asarray(dims, np.int64), name="padded_shapes"))
            fill = (b"" if s.dtype == _dtypes.string else 0) if value is None else value
            values_in.append(convert_to_tensor(fill, s.dtype, name="padding_value"))
            out.append(Spec(s.dtype, TensorShape([known]).concatenate(padded)))
        spec = structure.pack(self._spec, out)
        drop = convert_to_tensor(bool(drop_remainder), _dtypes.bool, name="drop_remainder")
        attrs = {**_attrs(spec, "Toutput_types"), "N": len(out), "parallel_copy": False}
        return Dataset(gen.dataset_op("PaddedBatchDatasetV2", [self._variant_tensor, size, *shapes_in,
                                                               *values_in, drop], attrs), spec)

    def shuffle(self, buffer_size, seed=None, reshuffle_each_iteration=None) -> "Dataset":
        """Elements in random order, drawn from a buffer of `buffer_size`; a new order each epoch unless
        reshuffle_each_iteration=False."""
        seed, seed2 = get_seed(seed)
        inputs = [_int64(buffer_size, "buffer_size"), _int64(seed or 0, "seed"), _int64(seed2 or 0, "seed2")]
        reshuffle = True if reshuffle_each_iteration is None else bool(reshuffle_each_iteration)
        return self._unary("ShuffleDataset", inputs, self._spec, {"reshuffle_each_iteration": reshuffle})

    def repeat(self, count=None) -> "Dataset":
        """The elements `count` times (forever when None or -1)."""
        return self._unary("RepeatDataset", [_int64(-1 if count is None else count, "count")], self._spec)

    def take(self, count) -> "Dataset":
        """The first `count` elements (all when -1)."""
        return self._unary("TakeDataset", [_int64(count, "count")], self._spec)

    def skip(self, count) -> "Dataset":
        """All but the first `count` elements (none when -1)."""
        return self._unary("SkipDataset", [_int64(count, "count")], self._spec)

    def shard(self, num_shards, index) -> "Dataset":
        """Every num_shards-th element from the index-th on (one worker's share of the input)."""
        return self._unary("ShardDataset", [_int64(num_shards, "num_shards"), _int64(index, "index")], self._spec,
                           {"require_non_empty": False})

    def unbatch(self) -> "Dataset":
        """The rows of each element (batch's inverse): tf.data.experimental.unbatch()."""
        for s in structure.flatten(self._spec):
            if s.shape.ndims == 0:
                raise ValueError("Cannot unbatch an input with scalar components.")
        spec = structure.map_structure(lambda s: Spec(s.dtype, s.shape[1:] if s.shape.ndims else s.shape),
                                       self._spec)
        flat = self.flat_map(lambda *element: Dataset.from_tensor_slices(
            element if len(element) > 1 or isinstance(self._spec, tuple) else element[0]))
        return Dataset(flat._variant_tensor, structure.pack(self._spec, structure.flatten(spec)))

    def prefetch(self, buffer_size) -> "Dataset":
        """The same elements, up to `buffer_size` of them made ahead by a background thread."""
        return self._unary("PrefetchDataset", [_int64(buffer_size, "buffer_size")], self._spec)

    def cache(self, filename="") -> "Dataset":
        """The same elements, read from the input once: in memory, or in the file `filename`."""
        name = convert_to_tensor(filename, _dtypes.string, name="filename")
        return self._unary("CacheDataset", [name], self._spec)

    def concatenate(self, dataset: "Dataset") -> "Dataset":
        """This dataset's elements, then `dataset`'s (same structure and types)."""
        if not structure.same_structure(self._spec, dataset._spec) or \
                structure.flatten(self.output_types) != structure.flatten(dataset.output_types):
            raise TypeError(f"Two datasets to concatenate have different types {self.output_types} and "
                            f"{dataset.output_types}")
        spec = structure.pack(self._spec, [Spec(a.dtype, a.shape.most_specific_compatible_shape(b.shape))
                                           for a, b in zip(structure.flatten(self._spec),
                                                           structure.flatten(dataset._spec))])
        return Dataset(gen.dataset_op("ConcatenateDataset", [self._variant_tensor, dataset._variant_tensor],
                                      _attrs(spec)), spec)

    def apply(self, transformation_func: Callable) -> "Dataset":
        """transformation_func(self), which must return a Dataset."""
        dataset = transformation_func(self)
        if not isinstance(dataset, Dataset):
            raise TypeError("`transformation_func` must return a Dataset.")
        return dataset

    # --- iterators ----------------------------------------------------------------------------------------------
    def make_one_shot_iterator(self):
        """An iterator that needs no initialization (the dataset may not depend on placeholders or variables)."""
        from adplace.data.iterator_ops import one_shot_iterator
        return one_shot_iterator(self)

    def make_initializable_iterator(self, shared_name: str | None = None):
        """An iterator whose `initializer` (re)starts it on this dataset (after feeding its placeholders)."""
        from adplace.data.iterator_ops import Iterator
        iterator = Iterator.from_structure(self.output_types, self.output_shapes, shared_name)
        iterator._initializer = iterator.make_initializer(self)
        return iterator

    def __iter__(self):
        raise RuntimeError("dataset.__iter__() is only supported when eager execution is enabled; in graph mode "
                           "use make_one_shot_iterator() or make_initializable_iterator().")


DatasetV1 = Dataset


def _constant_int(tensor: Tensor) -> int | None:
    from adplace.framework.tensor_util import constant_value
    value = constant_value(tensor)
    return None if value is None else int(value)


# --- functions ---------------------------------------------------------------------------------------------------
def _should_unpack(element) -> bool:
    return type(element) is tuple  # TF: a plain tuple is spread over the arguments; a namedtuple is not


class _Traced:
    """A user function of one element traced into a function graph: its attrs, captured tensors, output spec."""

    def __init__(self, name: str, fn: Callable, spec, returns_dataset: bool = False):
        if not callable(fn):
            raise TypeError(f"`{name.split('_', 1)[1]}` expects a callable, got {type(fn).__name__}.")
        flat_spec = structure.flatten(spec)
        self._result_spec = None

        def call(*args):
            element = structure.pack(spec, args)
            return fn(*element) if _should_unpack(element) else fn(element)

        def finish(graph, result):
            if returns_dataset:
                if not isinstance(result, Dataset):
                    raise TypeError(f"`map_func` must return a `Dataset` object, got {type(result).__name__}.")
                self._result_spec = result._spec
                return [result._variant_tensor]
            if type(result) is list:  # TF 1.15: a list returned by the function is a tuple of components
                result = tuple(result)
            result = structure.normalize(result)
            self._result_spec = structure.structure_of(result)
            return structure.flatten(result)

        self.function, _ = function_graph.trace(name + "_" + getattr(fn, "__name__", "fn"), call,
                                                [(s.dtype, s.shape) for s in flat_spec], get_default_graph(),
                                                finish)
        self.captured = self.function.captured_inputs
        self.output_spec = self._result_spec

    def attrs(self, attr: str) -> dict:
        return {attr: self.function, "Targuments": [t.dtype.base_dtype for t in self.captured]}


# --- from_generator ----------------------------------------------------------------------------------------------
class _GeneratorState:
    """The generators of one from_generator dataset, one per iterator, by the id its init function returned."""

    def __init__(self, generator: Callable, flat_spec: list, spec):
        self._generator, self._flat_spec, self._spec = generator, flat_spec, spec
        self._lock = threading.Lock()
        self._running: dict[int, object] = {}
        self._next_id = 0

    def start(self, *args) -> np.ndarray:
        running = iter(self._generator(*[_text_or(a) for a in args]))  # NumPy arrays; bytes for string scalars
        with self._lock:
            self._next_id += 1
            self._running[self._next_id] = running
            return np.asarray(self._next_id, np.int64)

    def next(self, ident) -> list:
        running = self._running[int(ident)]
        value = next(running)  # StopIteration: the py_func's OutOfRangeError, the dataset's end
        flat = structure.flatten(value) if isinstance(self._spec, (tuple, dict)) else [value]
        if len(flat) != len(self._flat_spec):
            raise TypeError(f"`generator` yielded an element that did not match the expected structure. The "
                            f"expected structure was {structure.types_text(self._spec)}, but the yielded element "
                            f"was {value!r}.")
        out = []
        for item, s in zip(flat, self._flat_spec):
            try:
                array = np.asarray(item, dtype=object if s.dtype == _dtypes.string else s.dtype.as_numpy_dtype)
            except (TypeError, ValueError) as exc:
                raise TypeError(f"`generator` yielded an element that could not be converted to the expected type. "
                                f"The expected type was {s.dtype.name}, but the yielded element was {item!r}.") \
                    from exc
            if not s.shape.is_compatible_with(array.shape):
                raise ValueError(f"`generator` yielded an element of shape {array.shape} where an element of shape "
                                 f"{s.shape} was expected.")
            out.append(array)
        return out

    def finish(self, ident) -> np.ndarray:
        with self._lock:
            self._running.pop(int(ident), None)
        return np.asarray(0, np.int64)


def _text_or(value):
    if isinstance(value, np.ndarray) and value.dtype == object and value.ndim == 0:
        return value[()]
    return value


def _from_generator(generator, output_types, output_shapes, args) -> Dataset:
    if not callable(generator):
        raise TypeError("`generator` must be callable.")
    spec = structure.from_types_and_shapes(output_types, output_shapes)
    flat_spec = structure.flatten(spec)
    state = _GeneratorState(generator, flat_spec, spec)
    with name_scope(None, "from_generator"):
        arg_tensors = [convert_to_tensor(a, name="generator_arg") for a in (args or ())]
        int64_scalar = [(_dtypes.int64, [])]

        def init(*a):
            return [script_ops.py_func(state.start, list(a), _dtypes.int64, stateful=True)]

        def next_fn(ident):
            values = script_ops.py_func(state.next, [ident], [s.dtype for s in flat_spec], stateful=True)
            return [_with_shape(v, s.shape) for v, s in zip(values, flat_spec)]

        def finalize(ident):
            return [script_ops.py_func(state.finish, [ident], _dtypes.int64, stateful=True)]

        outer = get_default_graph()
        init_fn, _ = function_graph.trace("generator_init", init, [(t.dtype, t.shape) for t in arg_tensors], outer)
        next_f, _ = function_graph.trace("generator_next", next_fn, int64_scalar, outer)
        final_f, _ = function_graph.trace("generator_finalize", finalize, int64_scalar, outer)
        inputs = [*arg_tensors, *init_fn.captured_inputs, *next_f.captured_inputs, *final_f.captured_inputs]
        attrs = {**_attrs(spec), "init_func": init_fn, "next_func": next_f, "finalize_func": final_f,
                 "Tinit_func_args": [t.dtype.base_dtype for t in [*arg_tensors, *init_fn.captured_inputs]],
                 "Tnext_func_args": [t.dtype.base_dtype for t in next_f.captured_inputs],
                 "Tfinalize_func_args": [t.dtype.base_dtype for t in final_f.captured_inputs]}
        return Dataset(gen.dataset_op("GeneratorDataset", inputs, attrs), spec)


def _with_shape(tensor: Tensor, shape: TensorShape) -> Tensor:
    """`tensor` with the static shape the generator promises (a py_func's outputs have none)."""
    tensor.set_shape(shape)
    return tensor
