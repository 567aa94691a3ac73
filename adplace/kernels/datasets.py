"""Kernels of tf.data's dataset ops (adplace/ops/dataset_ops.py), CPU only as in TF: each makes a dataset value
(kernels/dataset_values.py, kernels/dataset_files.py) from its inputs and outputs it in a 0-d object array (a
`variant`). Functions in the ops' function attrs run through the session's runners (`ctx.function`).

Running a dataset op makes a new dataset value, so running an iterator's initializer again starts afresh (a new
shuffle order, an empty cache), as in TF.
"""
from __future__ import annotations

import numpy as np

from adplace.framework.errors import InvalidArgumentError
from adplace.kernels import dataset_files as files
from adplace.kernels import dataset_values as values
from adplace.kernels.dataset_values import dataset_in
from adplace.kernels.registration import NO_GPU, kernel, object_scalar


def _int(value) -> int:
    return int(np.asarray(value))


def _text(value) -> str:
    value = np.asarray(value, dtype=object)[()]
    return value.decode() if isinstance(value, bytes) else str(value)


def _dataset_kernel(op_type: str):
    """Register `make(op, ctx, *inputs) -> Dataset` as the op's kernel (the inputs as the kernel receives them)."""
    def decorate(make):
        @kernel(op_type, cpu_types=None, gpu_types=NO_GPU)
        def factory(op, ctx):
            return lambda *inputs: object_scalar(make(op, ctx, *inputs))
        return make
    return decorate


def _positive(op, what: str, value: int, allow_autotune: bool = False) -> int:
    if value <= 0 and not (allow_autotune and value == values.AUTOTUNE):
        raise InvalidArgumentError(None, op, f"{what} must be greater than zero, got {value} ({op.name}).")
    return value


# --- sources -----------------------------------------------------------------------------------------------------
@_dataset_kernel("TensorDataset")
def _tensors(op, ctx, *components):
    return values.Tensors([np.asarray(c) for c in components])


@_dataset_kernel("TensorSliceDataset")
def _tensor_slices(op, ctx, *components):
    components = [np.asarray(c) for c in components]
    sizes = {c.shape[0] if c.ndim else None for c in components}
    if None in sizes:
        raise InvalidArgumentError(None, op, f"{op.name}: every component must have at least one dimension to slice.")
    if len(sizes) > 1:
        raise InvalidArgumentError(None, op, f"{op.name}: all components must have the same size in the 0th "
                                   f"dimension, got {sorted(sizes)}.")
    return values.TensorSlices(components)


@_dataset_kernel("RangeDataset")
def _range(op, ctx, start, stop, step):
    if _int(step) == 0:
        raise InvalidArgumentError(None, op, f"step must be a non-zero integer ({op.name}).")
    dtype = op._attrs["output_types"][0].as_numpy_dtype
    return values.Range(_int(start), _int(stop), _int(step), dtype)


@_dataset_kernel("ZipDataset")
def _zip(op, ctx, *datasets):
    return values.Zip([dataset_in(d) for d in datasets])


@_dataset_kernel("ConcatenateDataset")
def _concatenate(op, ctx, first, second):
    return values.Concatenate(dataset_in(first), dataset_in(second))


# --- functions of elements ---------------------------------------------------------------------------------------
@_dataset_kernel("MapDataset")
def _map(op, ctx, dataset, *captured):
    return values.Map(dataset_in(dataset), ctx.function(op._attrs["f"]), captured)


@_dataset_kernel("ParallelMapDataset")
def _parallel_map(op, ctx, dataset, *rest):
    parallel = _positive(op, "num_parallel_calls", _int(rest[-1]), allow_autotune=True)
    return values.Map(dataset_in(dataset), ctx.function(op._attrs["f"]), rest[:-1], parallel)


@_dataset_kernel("FilterDataset")
def _filter(op, ctx, dataset, *captured):
    return values.Filter(dataset_in(dataset), ctx.function(op._attrs["predicate"]), captured)


@_dataset_kernel("FlatMapDataset")
def _flat_map(op, ctx, dataset, *captured):
    return values.Interleave(dataset_in(dataset), ctx.function(op._attrs["f"]), captured, 1, 1)


@_dataset_kernel("InterleaveDataset")
def _interleave(op, ctx, dataset, *rest):
    cycle = _positive(op, "cycle_length", _int(rest[-2]), allow_autotune=True)
    block = _positive(op, "block_length", _int(rest[-1]))
    return values.Interleave(dataset_in(dataset), ctx.function(op._attrs["f"]), rest[:-2], cycle, block)


@_dataset_kernel("ParallelInterleaveDatasetV2")
def _parallel_interleave(op, ctx, dataset, *rest):
    """The order of InterleaveDataset's (deterministic); the elements are made one at a time."""
    cycle = _positive(op, "cycle_length", _int(rest[-3]), allow_autotune=True)
    block = _positive(op, "block_length", _int(rest[-2]))
    return values.Interleave(dataset_in(dataset), ctx.function(op._attrs["f"]), rest[:-3], cycle, block)


@_dataset_kernel("GeneratorDataset")
def _generator(op, ctx, *args):
    attrs = op._attrs
    n_init, n_next = len(attrs["Tinit_func_args"]), len(attrs["Tnext_func_args"])
    return values.Generator(ctx.function(attrs["init_func"]), ctx.function(attrs["next_func"]),
                            ctx.function(attrs["finalize_func"]), list(args[:n_init]),
                            list(args[n_init:n_init + n_next]), list(args[n_init + n_next:]))


# --- grouping, order, count --------------------------------------------------------------------------------------
@_dataset_kernel("BatchDatasetV2")
def _batch(op, ctx, dataset, batch_size, drop_remainder):
    size = _positive(op, "Batch size", _int(batch_size))
    return values.Batch(dataset_in(dataset), size, bool(np.asarray(drop_remainder)))


@_dataset_kernel("PaddedBatchDatasetV2")
def _padded_batch(op, ctx, dataset, batch_size, *rest):
    n = (len(rest) - 1) // 2
    size = _positive(op, "Batch size", _int(batch_size))
    shapes = [[int(d) for d in np.asarray(s).reshape(-1)] for s in rest[:n]]
    return values.Batch(dataset_in(dataset), size, bool(np.asarray(rest[-1])), shapes,
                        [np.asarray(v) for v in rest[n:2 * n]])


@_dataset_kernel("ShuffleDataset")
def _shuffle(op, ctx, dataset, buffer_size, seed, seed2):
    size = _positive(op, "buffer_size", _int(buffer_size))
    return values.Shuffle(dataset_in(dataset), size, _int(seed), _int(seed2),
                          bool(op._attrs.get("reshuffle_each_iteration", True)))


@_dataset_kernel("RepeatDataset")
def _repeat(op, ctx, dataset, count):
    return values.Repeat(dataset_in(dataset), _int(count))


@_dataset_kernel("TakeDataset")
def _take(op, ctx, dataset, count):
    return values.Take(dataset_in(dataset), _int(count))


@_dataset_kernel("SkipDataset")
def _skip(op, ctx, dataset, count):
    return values.Skip(dataset_in(dataset), _int(count))


@_dataset_kernel("ShardDataset")
def _shard(op, ctx, dataset, num_shards, index):
    n, i = _positive(op, "Number of shards", _int(num_shards)), _int(index)
    if not 0 <= i < n:
        raise InvalidArgumentError(None, op, f"Index must be between 0 and {n - 1} (currently index = {i}).")
    return values.Shard(dataset_in(dataset), n, i, bool(op._attrs.get("require_non_empty", False)))


@_dataset_kernel("PrefetchDataset")
def _prefetch(op, ctx, dataset, buffer_size):
    size = _int(buffer_size)
    if size < 0 and size != values.AUTOTUNE:
        raise InvalidArgumentError(None, op, f"buffer_size must be >= 0 or AUTOTUNE, got {size} ({op.name}).")
    return values.Prefetch(dataset_in(dataset), size)


@_dataset_kernel("CacheDataset")
def _cache(op, ctx, dataset, filename):
    name = _text(filename)
    store = files.FileStore(name, op._attrs["output_types"]) if name else values.MemoryStore()
    return values.Cache(dataset_in(dataset), store)


# --- files -------------------------------------------------------------------------------------------------------
@_dataset_kernel("TextLineDataset")
def _text_line(op, ctx, filenames, compression_type, buffer_size):
    return files.text_line_dataset(filenames, _text(compression_type))


@_dataset_kernel("TFRecordDataset")
def _tf_record(op, ctx, filenames, compression_type, buffer_size):
    return files.tf_record_dataset(filenames, _text(compression_type))


@_dataset_kernel("FixedLengthRecordDatasetV2")
def _fixed_length_record(op, ctx, filenames, header_bytes, record_bytes, footer_bytes, buffer_size, compression):
    record = _positive(op, "record_bytes", _int(record_bytes))
    return files.fixed_length_record_dataset(filenames, _int(header_bytes), record, _int(footer_bytes),
                                             _text(compression))
