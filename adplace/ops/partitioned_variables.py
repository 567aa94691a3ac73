"""Partitioned variables: the partitioners (tf.fixed_size_partitioner, ...), how a shape is cut into parts, and
the PartitionedVariable that get_variable(..., partitioner=...) returns.

A partitioner maps a variable's full shape and dtype to a number of parts per axis, more than one on at most one
axis. The variable becomes Variables `<name>/part_0`, `<name>/part_1`, ... ; along the split axis the first
`dim % n` parts get one extra row. Each part knows its place in the whole (`part._save_slice_info`), so a Saver
writes the whole variable under `<name>` and can restore it into any other partitioning, or none.

    with tf.variable_scope("emb", partitioner=tf.fixed_size_partitioner(3)):
        w = tf.get_variable("w", shape=[10, 4])   # parts emb/w/part_0..2 of 4, 3 and 3 rows
    tf.convert_to_tensor(w)                      # their concatenation, a [10, 4] tensor named "emb/w"

`create_partitioned_variables` and the store logic live in variable_scope.py, which imports this module.
"""
from __future__ import annotations

import math
from collections.abc import Sequence

from adplace.framework import dtypes as _dtypes
from adplace.framework.conversion import register_tensor_conversion_function
from adplace.framework.default_graph import control_dependencies, name_scope
from adplace.framework.operation import Tensor
from adplace.framework.tensor_shape import TensorShape, as_shape
from adplace.ops import array_ops


# --- partitioners ---------------------------------------------------------------------------------------------
def _element_nbytes(dtype, bytes_per_string_element: int) -> int:
    dtype = _dtypes.as_dtype(dtype)
    return bytes_per_string_element if dtype.base_dtype is _dtypes.string else dtype.size


def variable_axis_size_partitioner(max_shard_bytes: int, axis: int = 0, bytes_per_string_element: int = 16,
                                   max_shards: int | None = None):
    """A partitioner that cuts `axis` into as few parts as keep each under `max_shard_bytes` (at least one row
    per part, at most `max_shards` parts) (tf.variable_axis_size_partitioner).

        p = tf.variable_axis_size_partitioner(32768, axis=2)
        p(shape=tf.TensorShape([4, 8, 16, 32]), dtype=tf.float32)   # [1, 1, 2, 1]: rows of 4096 bytes, 8 a part

    Raises:
      ValueError: a byte count or `max_shards` is not positive; the partitioner raises it for a shape that is not
        a fully defined TensorShape or a dtype that is not a DType.
    """
    if max_shard_bytes < 1 or bytes_per_string_element < 1:
        raise ValueError("Both max_shard_bytes and bytes_per_string_element must be positive.")
    if max_shards and max_shards < 1:
        raise ValueError("max_shards must be positive.")

    def _partitioner(shape, dtype):
        if not isinstance(shape, TensorShape):
            raise ValueError(f"shape is not a TensorShape: {shape}")
        if not shape.is_fully_defined():
            raise ValueError(f"shape is not fully defined: {shape}")
        if not isinstance(dtype, _dtypes.DType):
            raise ValueError(f"dtype is not a DType: {dtype}")
        partitions = [1] * shape.ndims
        bytes_per_slice = shape.num_elements() / shape.as_list()[axis] * _element_nbytes(dtype,
                                                                                         bytes_per_string_element)
        slices_per_shard = max(1, math.floor(max_shard_bytes / bytes_per_slice))
        axis_shards = int(math.ceil(shape.as_list()[axis] / slices_per_shard))
        if max_shards:
            axis_shards = min(max_shards, axis_shards)
        partitions[axis] = axis_shards
        return partitions
    return _partitioner


def min_max_variable_partitioner(max_partitions: int = 1, axis: int = 0, min_slice_size: int = 256 << 10,
                                 bytes_per_string_element: int = 16):
    """A partitioner that gives each part at least `min_slice_size` bytes, in at most `max_partitions` parts and
    at most one row per part (tf.min_max_variable_partitioner).

        p = tf.min_max_variable_partitioner(max_partitions=100)
        p(shape=tf.TensorShape([2048, 1024]), dtype=tf.float32)     # [32, 1]: 8 MiB in parts of 256 KiB

    Raises (from the partitioner):
      ValueError: the variable has no axis `axis`.
    """
    def _partitioner(shape, dtype):
        shape = as_shape(shape)
        if axis >= len(shape):
            raise ValueError(f"Can not partition variable along axis {axis} when shape is only {shape}")
        total_nbytes = shape.num_elements() * _element_nbytes(dtype, bytes_per_string_element)
        partitions = [1] * len(shape)
        partitions[axis] = max(1, min(shape.as_list()[axis], max_partitions,
                                      int(math.ceil(total_nbytes / min_slice_size))))
        return partitions
    return _partitioner


def fixed_size_partitioner(num_shards: int, axis: int = 0):
    """A partitioner that cuts `axis` into `num_shards` parts, or one per row if it has fewer rows
    (tf.fixed_size_partitioner).

        tf.fixed_size_partitioner(5)(shape=tf.TensorShape([3, 2]))   # [3, 1]
    """
    def _partitioner(shape, **unused_args):
        partitions = [1] * len(shape)
        partitions[axis] = min(num_shards, as_shape(shape).as_list()[axis])
        return partitions
    return _partitioner


# --- cutting a shape into parts -------------------------------------------------------------------------------
def call_partitioner(partitioner, shape: TensorShape, dtype) -> list[int]:
    """`partitioner(shape=, dtype=)`, checked: one count >= 1 per axis, more than 1 on at most one axis.

    Raises:
      ValueError: the shape is not fully defined or is a scalar, or the partitioner's answer breaks a rule above.
    """
    if not shape.is_fully_defined():
        raise ValueError(f"Shape of a new partitioned variable must be fully defined, but instead was {shape}.")
    if shape.ndims < 1:
        raise ValueError(f"A partitioned Variable must have rank at least 1, shape: {shape}")
    slicing = partitioner(shape=shape, dtype=dtype)
    if not isinstance(slicing, Sequence):
        raise ValueError(f"Partitioner must return a sequence, but saw: {slicing}")
    if len(slicing) != shape.ndims:
        raise ValueError(f"Partitioner returned a partition list that does not match the Variable's rank: "
                         f"{slicing} vs. {shape}")
    if any(p < 1 for p in slicing):
        raise ValueError(f"Partitioner returned zero partitions for some axes: {slicing}")
    if sum(p > 1 for p in slicing) > 1:
        raise ValueError(f"Can only slice a variable along one dimension: shape: {shape}, partitioning: {slicing}")
    return slicing


def slice_dim_and_num_slices(slicing) -> tuple[int, int]:
    """The axis that is split and into how many parts; (0, 1) when nothing is split."""
    for slice_dim, num_slices in enumerate(slicing):
        if num_slices > 1:
            return slice_dim, num_slices
    return 0, 1


def iter_slices(full_shape: list[int], num_slices: int, slice_dim: int):
    """(offset, shape) of each part, in order; the first `full_shape[slice_dim] % num_slices` get an extra row."""
    num_slices_with_excess = full_shape[slice_dim] % num_slices
    min_slice_len = full_shape[slice_dim] // num_slices
    offset = [0] * len(full_shape)
    for i in range(num_slices):
        shape = list(full_shape)
        shape[slice_dim] = min_slice_len + (1 if i < num_slices_with_excess else 0)
        yield list(offset), shape
        offset[slice_dim] += shape[slice_dim]


def _is_sequence(value) -> bool:
    return isinstance(value, Sequence) and not isinstance(value, (str, bytes))


class PartitionInfo:
    """What an initializer learns about the part it fills: the full shape and the part's offset in it (TF's
    variable_scope._PartitionInfo, passed as `partition_info=`).

    Raises:
      TypeError: `full_shape` or `var_offset` is not a sequence.
      ValueError: their lengths differ, or an offset lies outside the full shape.
    """

    def __init__(self, full_shape, var_offset):
        if not _is_sequence(full_shape):
            raise TypeError("`full_shape` must be a sequence (like tuple or list) instead of "
                            + type(full_shape).__name__)
        if not _is_sequence(var_offset):
            raise TypeError("`var_offset` must be a sequence (like tuple or list) instead of "
                            + type(var_offset).__name__)
        if len(var_offset) != len(full_shape):
            raise ValueError(f"Expected equal length, but `var_offset` is of length {len(var_offset)} while "
                             f"full_shape is of length {len(full_shape)}.")
        for offset, dim in zip(var_offset, full_shape):
            if offset < 0 or offset >= dim:
                raise ValueError(f"Expected 0 <= offset < shape but found offset={offset}, shape={dim} for "
                                 f"var_offset={var_offset}, full_shape={full_shape}")
        self._full_shape, self._var_offset = full_shape, var_offset

    full_shape = property(lambda self: self._full_shape)
    var_offset = property(lambda self: self._var_offset)

    def single_offset(self, shape) -> int:
        """The offset along the one split axis (0 when nothing is split)."""
        slice_dim = self.single_slice_dim(shape)
        return 0 if slice_dim is None else self.var_offset[slice_dim]

    def single_slice_dim(self, shape) -> int | None:
        """The axis along which a part of `shape` is cut from the full shape; None if it is the whole.

        Raises:
          TypeError: `shape` is not a sequence.
          ValueError: `shape` has another rank, does not fit at the offset, or is cut along two axes.
        """
        if not _is_sequence(shape):
            raise TypeError("`shape` must be a sequence (like tuple or list) instead of " + type(shape).__name__)
        if len(shape) != len(self.full_shape):
            raise ValueError(f"Expected equal length, but received shape={shape} of length {len(shape)} while "
                             f"self.full_shape={self.full_shape} is of length {len(self.full_shape)}.")
        for i, dim in enumerate(shape):
            if self.var_offset[i] + dim > self.full_shape[i]:
                raise ValueError(f"With self.var_offset={self.var_offset}, a partition of shape={shape} would "
                                 f"exceed self.full_shape={self.full_shape} in dimension {i}.")
        slice_dim = None
        for i, dim in enumerate(shape):
            if dim == self.full_shape[i]:
                continue
            if slice_dim is not None:
                raise ValueError(f"Cannot use single_slice_dim() with shape={shape} and "
                                 f"self.full_shape={self.full_shape} since slice dim could be either dimension "
                                 f"{i} or {slice_dim}.")
            slice_dim = i
        return slice_dim


# --- the container --------------------------------------------------------------------------------------------
class PartitionedVariable:
    """The parts of one partitioned variable, in offset order (tf.PartitionedVariable).

    Iterating gives the part Variables; converting it to a tensor (tf.convert_to_tensor, or passing it to an op)
    concatenates them along the split axis, into a tensor named like the variable.

    Raises:
      TypeError: `variable_list` or `partitions` is not a list or tuple.
      ValueError: no variables, a count below 1, or a part without slice info of this full shape.
    """

    def __init__(self, name: str, shape, dtype, variable_list, partitions):
        if not isinstance(variable_list, (list, tuple)):
            raise TypeError(f"variable_list is not a list or tuple: {variable_list}")
        if not isinstance(partitions, (list, tuple)):
            raise TypeError(f"partitions is not a list or tuple: {partitions}")
        if not all(p >= 1 for p in partitions):
            raise ValueError(f"partition values must be positive: {partitions}")
        if not variable_list:
            raise ValueError("variable_list may not be empty")
        if not all(v._get_save_slice_info() is not None for v in variable_list):
            raise ValueError(f"All variables must have a save_slice_info available: "
                             f"{[v.name for v in variable_list]}")
        full_shape = as_shape(shape)
        if len(full_shape) != len(partitions):
            raise ValueError(f"len(shape) != len(partitions): {shape} vs. {partitions}")
        for v in variable_list:
            if list(v._get_save_slice_info().full_shape) != full_shape.as_list():
                raise ValueError(f"All variables' full shapes must match shape: {shape}; but full shapes were: "
                                 f"{v._get_save_slice_info().full_shape}")
        self._variable_list = sorted(variable_list, key=lambda v: v._get_save_slice_info().var_offset)
        self._name, self._shape, self._dtype, self._partitions = name, full_shape, dtype, partitions

    def __iter__(self):
        return iter(list(self._variable_list))

    def __len__(self) -> int:
        num_partition_axes = len(self._partition_axes())
        if num_partition_axes > 1:
            raise ValueError(f"Cannot get a length for {num_partition_axes} > 1 partition axes")
        return len(self._variable_list)

    def _partition_axes(self) -> list[int]:
        if all(p == 1 for p in self._partitions):
            return [0]
        return [i for i, p in enumerate(self._partitions) if p > 1]

    def _concat(self) -> Tensor:
        """The parts concatenated, under the control dependencies of the caller's scope."""
        if len(self._variable_list) == 1:
            with name_scope(None):
                return array_ops.identity(self._variable_list[0], name=self._name)
        partition_axes = self._partition_axes()
        if len(partition_axes) > 1:
            raise NotImplementedError(f"Cannot concatenate along more than one dimension: {partition_axes}.  "
                                      "Multi-axis partition concat is not supported")
        with name_scope(self._name + "/ConcatPartitions/"):
            concatenated = array_ops.concat(self._variable_list, partition_axes[0])
        with name_scope(None):
            return array_ops.identity(concatenated, name=self._name)

    def as_tensor(self) -> Tensor:
        """The parts concatenated, free of the caller's control dependencies (like reading a Variable)."""
        with control_dependencies(None):
            return self._concat()

    name = property(lambda self: self._name)
    dtype = property(lambda self: self._dtype)
    shape = property(lambda self: self._shape)
    graph = property(lambda self: self._variable_list[0].graph)

    def get_shape(self) -> TensorShape:
        return self._shape

    def _get_variable_list(self) -> list:
        return self._variable_list

    def _get_partitions(self):
        return self._partitions

    def _apply_assign_fn(self, assign_fn, value) -> list:
        """assign_fn(part, its piece of `value`) per part; `value` is a tensor, a list of pieces or a
        PartitionedVariable."""
        partition_axes = self._partition_axes()
        if len(partition_axes) > 1:
            raise NotImplementedError(f"Cannot do assign action along more than one dimension: {partition_axes}.  "
                                      "Multi-axis partition assign action is not supported ")
        if isinstance(value, list):
            if len(value) != len(self._variable_list):
                raise ValueError(f"Assigning {len(value)} values to the {len(self._variable_list)} parts of "
                                 f"{self._name}: give one value per part.")
            pieces = value
        elif isinstance(value, PartitionedVariable):
            pieces = list(value)
        else:
            axis = partition_axes[0]
            sizes = [var.shape.as_list()[axis] for var in self._variable_list]
            pieces = array_ops.split(value, sizes, axis=axis)
        return [assign_fn(var, piece) for var, piece in zip(self._variable_list, pieces)]

    def _assign_each(self, method: str, value, use_locking: bool, name, read_value: bool) -> list:
        assigns = self._apply_assign_fn(
            lambda var, piece: getattr(var, method)(piece, use_locking=use_locking, name=name, read_value=read_value),
            value)
        return assigns if read_value else [a.op for a in assigns]

    def assign(self, value, use_locking: bool = False, name=None, read_value: bool = True) -> list:
        """Assign each part its piece of `value`; the parts' assign tensors (ops when `read_value` is False)."""
        return self._assign_each("assign", value, use_locking, name, read_value)

    def assign_add(self, value, use_locking: bool = False, name=None, read_value: bool = True) -> list:
        """Add to each part its piece of `value` (a tensor, a list of pieces or a PartitionedVariable).

            pv.assign_add(tf.ones([4]))   # with 2 parts: [part0 += ones[:2], part1 += ones[2:]]
        """
        return self._assign_each("assign_add", value, use_locking, name, read_value)

    def assign_sub(self, value, use_locking: bool = False, name=None, read_value: bool = True) -> list:
        """Subtract from each part its piece of `value`; the parts' new values (ops when `read_value` is False)."""
        return self._assign_each("assign_sub", value, use_locking, name, read_value)

    def __repr__(self) -> str:
        return (f"<tf.PartitionedVariable '{self._name}' shape={self._shape} dtype={_dtypes.as_dtype(self._dtype).name}"
                f" partitions={list(self._partitions)}>")


def _partitioned_variable_to_tensor(value: PartitionedVariable, dtype=None, name=None, as_ref=False) -> Tensor:
    if dtype is not None and not _dtypes.as_dtype(dtype).is_compatible_with(value.dtype):
        raise ValueError(f"Incompatible type conversion requested to type '{_dtypes.as_dtype(dtype).name}' for "
                         f"variable of type '{_dtypes.as_dtype(value.dtype).name}'")
    if as_ref:
        raise NotImplementedError("PartitionedVariable doesn't support being used as a reference.")
    return value.as_tensor()


register_tensor_conversion_function(PartitionedVariable, _partitioned_variable_to_tensor)
