"""Kernels of the checkpoint ops (adplace.ops.io_ops), CPU only as in TF: SaveV2 writes a tensor bundle atomically,
RestoreV2 reads tensors (or slices of them) back with TF's checks and errors, MergeV2Checkpoints merges the shards
of a sharded save; ShardedFilename, ShardedFilespec and StringJoin build file names.

RestoreV2 also reads the one-file `.npz` checkpoints that adplace wrote before it wrote V2 bundles.
"""
from __future__ import annotations

import numpy as np

from adplace.framework import dtypes as _dtypes
from adplace.framework import errors
from adplace.framework.tensor_shape import dims_text
from adplace.kernels.registration import NO_GPU, kernel, multi_output

_C_NAMES = {_dtypes.float32: "float", _dtypes.float64: "double", _dtypes.float16: "half"}  # TF's DataTypeString


def _text(value) -> str:
    value = np.asarray(value, dtype=object).reshape(()).item() if np.ndim(value) == 0 else value
    return value.decode() if isinstance(value, bytes) else str(value)


def _texts(values) -> list[str]:
    return [v.decode() if isinstance(v, bytes) else str(v) for v in np.asarray(values, dtype=object).reshape(-1)]


def _os_error(op, what: str, path: str, e: OSError) -> errors.OpError:
    error_class = errors.PermissionDeniedError if isinstance(e, PermissionError) else (
        errors.NotFoundError if isinstance(e, FileNotFoundError) else errors.UnknownError)
    return error_class(None, op, f"Failed to {what} {path}: {e}")


def _checked_names(op, names, specs, count: int) -> None:
    if len(names) != count or len(specs) != count:
        raise errors.InvalidArgumentError(None, op, f"Expected {count} tensor names and shape_and_slices; got "
                                          f"{len(names)} and {len(specs)}")


@kernel("SaveV2", None, NO_GPU)
def _save_v2(op, ctx):
    from adplace.lib.io import tensor_bundle
    dtypes = op._attrs["dtypes"]

    def save_v2(prefix, tensor_names, shape_and_slices, *tensors):
        prefix, names, specs = _text(prefix), _texts(tensor_names), _texts(shape_and_slices)
        _checked_names(op, names, specs, len(tensors))
        writer = tensor_bundle.BundleWriter(prefix)
        for name, spec, value, dtype in zip(names, specs, tensors, dtypes):
            if not spec:
                writer.add(name, value, dtype)
                continue
            try:
                full_shape, extents = tensor_bundle.parse_shape_and_slice(spec)
            except ValueError as e:
                raise errors.InvalidArgumentError(None, op, f"{e} (tensor {name})") from None
            want = [dim if length < 0 else length for dim, (_, length) in zip(full_shape, extents)]
            if list(np.shape(value)) != want:
                raise errors.InvalidArgumentError(None, op, f"Slice {spec} of {name} has shape {dims_text(want)}, "
                                                  f"but the tensor saved for it has {dims_text(np.shape(value))}")
            writer.add_slice(name, full_shape, extents, value, dtype)
        try:
            writer.finish()
        except OSError as e:
            raise _os_error(op, "write checkpoint", prefix, e) from e
    return save_v2


def _type_name(dtype: _dtypes.DType) -> str:
    return _C_NAMES.get(dtype, dtype.name)


@kernel("RestoreV2", None, NO_GPU)
def _restore_v2(op, ctx):
    from adplace.lib.io import tensor_bundle
    from adplace.train.checkpoint_management import open_checkpoint
    dtypes = op._attrs["dtypes"]

    def restore_v2(prefix, tensor_names, shape_and_slices):
        prefix, names, specs = _text(prefix), _texts(tensor_names), _texts(shape_and_slices)
        _checked_names(op, names, specs, len(dtypes))
        reader = open_checkpoint(prefix, op)
        values = []
        for name, spec, dtype in zip(names, specs, dtypes):
            if not reader.has_tensor(name):
                raise errors.NotFoundError(None, op, f"Key {name} not found in checkpoint")
            stored_dtype, stored_shape = reader.dtype(name), reader.shape(name)
            if stored_dtype is not dtype:
                raise errors.InvalidArgumentError(None, op, f"tensor_name = {name}; expected dtype "
                                                  f"{_type_name(dtype)} does not equal original dtype "
                                                  f"{_type_name(stored_dtype)}")
            if not spec:
                values.append(reader.read(name))
                continue
            try:
                full_shape, extents = tensor_bundle.parse_shape_and_slice(spec)
            except ValueError as e:
                raise errors.InvalidArgumentError(None, op, f"{e} (tensor {name})") from None
            if full_shape != list(stored_shape):
                raise errors.InvalidArgumentError(None, op, f"tensor_name = {name}; shape in shape_and_slice spec "
                                                  f"{dims_text(full_shape)} does not match the shape stored in "
                                                  f"checkpoint: {dims_text(stored_shape)}")
            values.append(reader.read_slice(name, extents))
        return multi_output(tuple(values)) if values else None
    return restore_v2


@kernel("MergeV2Checkpoints", None, NO_GPU)
def _merge_v2_checkpoints(op, ctx):
    from adplace.lib.io import tensor_bundle
    delete_old_dirs = op._attrs.get("delete_old_dirs", True)

    def merge(checkpoint_prefixes, destination_prefix):
        destination = _text(destination_prefix)
        try:
            tensor_bundle.merge_bundles(_texts(checkpoint_prefixes), destination, delete_old_dirs)
        except OSError as e:
            raise _os_error(op, "merge checkpoint shards into", destination, e) from e
    return merge


@kernel("ShardedFilename", None, NO_GPU)
def _sharded_filename(op, ctx):
    def sharded_filename(basename, shard, num_shards):
        return np.array(f"{_text(basename)}-{int(shard):05d}-of-{int(num_shards):05d}".encode(), dtype=object)
    return sharded_filename


@kernel("ShardedFilespec", None, NO_GPU)
def _sharded_filespec(op, ctx):
    def sharded_filespec(basename, num_shards):
        return np.array(f"{_text(basename)}-?????-of-{int(num_shards):05d}".encode(), dtype=object)
    return sharded_filespec


@kernel("StringJoin", None, NO_GPU)
def _string_join(op, ctx):
    separator = op._attrs.get("separator", "").encode()

    def string_join(*inputs):
        arrays = np.broadcast_arrays(*[np.asarray(x, dtype=object) for x in inputs])
        out = np.empty(arrays[0].shape, dtype=object)
        out.reshape(-1)[:] = [separator.join(parts) for parts in zip(*(a.reshape(-1) for a in arrays))]
        return out
    return string_join
