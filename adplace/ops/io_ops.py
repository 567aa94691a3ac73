"""The checkpoint ops tf.train.Saver builds (TF's io_ops): SaveV2, RestoreV2, MergeV2Checkpoints, ShardedFilename,
ShardedFilespec, and StringJoin for the sharded save's temporary prefix. Kernels: adplace.kernels.io (CPU only).

    save = save_v2("/tmp/m", ["w"], [""], [w])                 # when run: /tmp/m.index + /tmp/m.data-00000-of-00001
    (w_value,) = restore_v2("/tmp/m", ["w"], [""], [tf.float32])

`shape_and_slices[i]` is "" for a whole tensor, or "<full shape> <slice>" as SaveSliceInfo.spec writes it
("10 4 0,5:0,4"): SaveV2 then stores that slice of the full tensor, RestoreV2 reads that slice back, assembled from
whatever slices the checkpoint holds.
"""
from __future__ import annotations

from adplace.framework import dtypes as _dtypes
from adplace.framework.conversion import convert_to_tensor
from adplace.framework.default_graph import name_scope
from adplace.framework.operation import Operation, Tensor
from adplace.framework.registry import NotDifferentiable, register_op
from adplace.framework.tensor_shape import TensorShape
from adplace.lib.io.tensor_bundle import parse_shape_and_slice
from adplace.ops.op_builder import SCALAR, apply_op, apply_op_1, constant_value


def _restore_shapes(inputs, attrs) -> list[TensorShape]:
    """Each output's static shape: the slice's shape when the specs are a known constant, else unknown."""
    specs = constant_value(inputs[2])
    shapes = []
    for i in range(len(attrs["dtypes"])):
        spec = specs.reshape(-1)[i] if specs is not None and specs.size == len(attrs["dtypes"]) else b""
        spec = spec.decode() if isinstance(spec, bytes) else str(spec)
        if not spec:
            shapes.append(TensorShape(None))
            continue
        try:
            full, extents = parse_shape_and_slice(spec)
        except ValueError:
            shapes.append(TensorShape(None))
            continue
        shapes.append(TensorShape([dim if length < 0 else length for dim, (_, length) in zip(full, extents)]))
    return shapes


register_op("SaveV2", lambda inputs, attrs, name: [], is_stateful=True)
register_op("RestoreV2", lambda inputs, attrs, name: list(zip(attrs["dtypes"], _restore_shapes(inputs, attrs))),
            is_stateful=True)
register_op("MergeV2Checkpoints", lambda inputs, attrs, name: [], is_stateful=True)
register_op("ShardedFilename", lambda inputs, attrs, name: [(_dtypes.string, SCALAR)])
register_op("ShardedFilespec", lambda inputs, attrs, name: [(_dtypes.string, SCALAR)])
register_op("StringJoin", lambda inputs, attrs, name: [(_dtypes.string, inputs[0].shape if inputs else SCALAR)])
for _op_type in ("SaveV2", "RestoreV2", "MergeV2Checkpoints", "ShardedFilename", "ShardedFilespec", "StringJoin"):
    NotDifferentiable(_op_type)


def _strings(value, name: str) -> Tensor:
    return convert_to_tensor(value, dtype=_dtypes.string, name=name)


def save_v2(prefix, tensor_names, shape_and_slices, tensors, name: str | None = None) -> Operation:
    """An op writing `tensors` as the V2 checkpoint `prefix` under `tensor_names` (TF's io_ops.save_v2)."""
    with name_scope(name, "SaveV2") as scope:
        tensors = [convert_to_tensor(t) for t in tensors]
        inputs = [_strings(prefix, "prefix"), _strings(tensor_names, "tensor_names"),
                  _strings(shape_and_slices, "shape_and_slices")] + tensors
        return apply_op("SaveV2", inputs, {"dtypes": [t.dtype.base_dtype for t in tensors]}, name=scope)


def restore_v2(prefix, tensor_names, shape_and_slices, dtypes, name: str | None = None) -> list[Tensor]:
    """Tensors read from the V2 checkpoint `prefix` (TF's io_ops.restore_v2)."""
    with name_scope(name, "RestoreV2") as scope:
        inputs = [_strings(prefix, "prefix"), _strings(tensor_names, "tensor_names"),
                  _strings(shape_and_slices, "shape_and_slices")]
        op = apply_op("RestoreV2", inputs, {"dtypes": [_dtypes.as_dtype(d).base_dtype for d in dtypes]}, name=scope)
        return list(op.outputs)


def merge_v2_checkpoints(checkpoint_prefixes, destination_prefix, delete_old_dirs: bool = True,
                         name: str | None = None) -> Operation:
    """An op merging single-shard checkpoints into one sharded checkpoint (TF's MergeV2Checkpoints)."""
    with name_scope(name, "MergeV2Checkpoints") as scope:
        inputs = [_strings(checkpoint_prefixes, "checkpoint_prefixes"),
                  _strings(destination_prefix, "destination_prefix")]
        return apply_op("MergeV2Checkpoints", inputs, {"delete_old_dirs": bool(delete_old_dirs)}, name=scope)


def sharded_filename(basename, shard, num_shards, name: str | None = None) -> Tensor:
    """`basename-0000<shard>-of-0000<num_shards>` (TF's ShardedFilename)."""
    with name_scope(name, "ShardedFilename") as scope:
        inputs = [_strings(basename, "basename"), convert_to_tensor(shard, dtype=_dtypes.int32, name="shard"),
                  convert_to_tensor(num_shards, dtype=_dtypes.int32, name="num_shards")]
        return apply_op_1("ShardedFilename", inputs, {}, name=scope)


def sharded_filespec(basename, num_shards, name: str | None = None) -> Tensor:
    """`basename-?????-of-0000<num_shards>` (TF's ShardedFilespec)."""
    with name_scope(name, "ShardedFilespec") as scope:
        inputs = [_strings(basename, "basename"), convert_to_tensor(num_shards, dtype=_dtypes.int32,
                                                                     name="num_shards")]
        return apply_op_1("ShardedFilespec", inputs, {}, name=scope)


def string_join(inputs, separator: str = "", name: str | None = None) -> Tensor:
    """The element-wise concatenation of string tensors (tf.strings.join; scalars broadcast)."""
    with name_scope(name, "StringJoin") as scope:
        tensors = [_strings(t, "inputs") for t in inputs]
        return apply_op_1("StringJoin", tensors, {"N": len(tensors), "separator": separator}, name=scope)
