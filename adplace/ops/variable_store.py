"""The variable store behind tf.get_variable: one per graph (collection `("__variable_store",)`: full name ->
Variable or PartitionedVariable), creating a variable the first time its name is asked for and returning it again
under reuse, with TF's checks (shape, dtype, partitioning) and errors. Scopes (adplace/ops/variable_scope.py) decide
the names and the reuse mode; this module only keeps the variables.
"""
from __future__ import annotations

import enum
import functools
import inspect
import logging

from adplace.framework import dtypes as _dtypes
from adplace.framework.conversion import convert_to_tensor
from adplace.framework.default_graph import colocate_with, control_dependencies, name_scope
from adplace.framework.graph import GraphKeys, get_default_graph
from adplace.framework.operation import Tensor
from adplace.framework.tensor_shape import as_shape
from adplace.ops import init_ops
from adplace.ops.partitioned_variables import PartitionedVariable, call_partitioner, iter_slices, slice_dim_and_num_slices
from adplace.ops.partitioned_variables import PartitionInfo as _PartitionInfo
from adplace.ops.slicing_ops import slice_
from adplace.ops.variables import Variable, validate_synchronization_aggregation_trainable

_log = logging.getLogger("adplace")

_VARSTORE_KEY = ("__variable_store",)


class _ReuseMode(enum.Enum):
    """`reuse=tf.AUTO_REUSE`: get the variable if it exists, create it otherwise."""

    AUTO_REUSE = 1


AUTO_REUSE = _ReuseMode.AUTO_REUSE


def _needs_no_arguments(fn) -> bool:
    """Whether `fn()` can be called: every parameter has a default (TF's test for a value-making initializer)."""
    try:
        parameters = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):
        return False
    return all(p.default is not p.empty or p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD) for p in parameters)


def _accepts_keyword(fn, keyword: str) -> bool:
    try:
        parameters = inspect.signature(fn).parameters
    except (TypeError, ValueError):
        return False
    return keyword in parameters or any(p.kind is p.VAR_KEYWORD for p in parameters.values())


class _VariableStore:
    """The variables made by get_variable in one graph, by full name."""

    def __init__(self):
        self._vars: dict[str, Variable] = {}
        self._partitioned_vars: dict[str, PartitionedVariable] = {}

    def get_variable(self, name: str, shape=None, dtype=_dtypes.float32, initializer=None, regularizer=None,
                     reuse=None, trainable=None, collections=None, caching_device=None, partitioner=None,
                     validate_shape=True, use_resource=None, custom_getter=None, constraint=None,
                     synchronization=None, aggregation=None) -> Variable:
        """The variable `name`, created or reused according to `reuse`; see `get_variable`."""
        if custom_getter is not None and not callable(custom_getter):
            raise ValueError(f"Passed a custom_getter which is not callable: {custom_getter}")
        dtype = _dtypes.as_dtype(dtype).base_dtype
        synchronization, aggregation, trainable = validate_synchronization_aggregation_trainable(
            synchronization, aggregation, trainable, name)
        getter_kwargs = {"name": name, "shape": shape, "dtype": dtype, "initializer": initializer,
                         "regularizer": regularizer, "reuse": reuse, "trainable": trainable,
                         "collections": collections, "caching_device": caching_device, "partitioner": partitioner,
                         "validate_shape": validate_shape, "use_resource": use_resource,
                         "synchronization": synchronization, "aggregation": aggregation}
        if custom_getter is None:
            return self._true_getter(**getter_kwargs, constraint=constraint)
        if _accepts_keyword(custom_getter, "constraint"):
            getter_kwargs["constraint"] = constraint
        return custom_getter(getter=self._true_getter, **getter_kwargs)

    def _true_getter(self, name, shape=None, dtype=_dtypes.float32, initializer=None, regularizer=None, reuse=None,
                     trainable=None, collections=None, caching_device=None, partitioner=None, validate_shape=True,
                     use_resource=None, constraint=None, synchronization=None, aggregation=None):
        kwargs = {"shape": shape, "dtype": dtype, "initializer": initializer, "regularizer": regularizer,
                  "reuse": reuse, "trainable": trainable, "collections": collections,
                  "caching_device": caching_device, "validate_shape": validate_shape, "constraint": constraint,
                  "synchronization": synchronization, "aggregation": aggregation}
        is_scalar = shape is not None and as_shape(shape).ndims == 0  # a scalar cannot be split: no partitioner
        if partitioner is not None and not is_scalar:
            if not callable(partitioner):
                raise ValueError(f"Partitioner must be callable, but received: {partitioner}")
            with name_scope(None):
                return self._get_partitioned_variable(name, partitioner, **kwargs)
        if reuse is True and partitioner is None and name in self._partitioned_vars:
            return self._get_partitioned_variable(name, None, **kwargs)
        if f"{name}/part_0" in self._vars:
            raise ValueError(f"No partitioner was provided, but a partitioned version of the variable was found: "
                             f"{name}/part_0. Perhaps a variable of the same name was already created with "
                             "partitioning?")
        return self._get_single_variable(name, **kwargs)

    def _get_partitioned_variable(self, name: str, partitioner, shape=None, dtype=_dtypes.float32, initializer=None,
                                  reuse=None, **kwargs) -> PartitionedVariable:
        """The PartitionedVariable `name`: its parts `name/part_<i>` created, or the stored one on reuse.

        A callable initializer is called per part with the part's shape and a `partition_info`; a value (tensor,
        array) is the whole variable's, sliced per part.
        """
        if name in self._vars:
            raise ValueError(f"A partitioner was provided, but an unpartitioned version of the variable was found: "
                             f"{name}.  Perhaps a variable of the same name was already created without "
                             "partitioning?")
        dtype = _dtypes.as_dtype(dtype)
        shape = as_shape(shape)
        if isinstance(initializer, Tensor):
            shape = shape.merge_with(initializer.get_shape())
        partitions = call_partitioner(partitioner, shape, dtype) if not reuse or partitioner else None
        if name in self._partitioned_vars:
            return self._existing_partitioned_variable(name, shape, dtype, partitions, reuse)
        if reuse is True:
            raise ValueError(f"PartitionedVariable {name} does not exist, or was not created with tf.get_variable(). "
                             "Did you mean to set reuse=False or reuse=tf.AUTO_REUSE in VarScope?")
        slice_dim, num_slices = slice_dim_and_num_slices(partitions)
        if f"{name}/part_0" in self._vars:
            found = (f"Partitioner returned a different partitioning than what was already found.  Partitioner "
                     f"returned {num_slices} shards, and shard {name}/part_0 was found, but")
            if f"{name}/part_{num_slices - 1}" not in self._vars:
                raise ValueError(f"{found} {name}/part_{num_slices - 1} was not.")
            if f"{name}/part_{num_slices}" in self._vars:
                raise ValueError(f"{found} so was the extra shard {name}/part_{num_slices}.")
        parts = []
        for i, (var_offset, var_shape) in enumerate(iter_slices(shape.as_list(), num_slices, slice_dim)):
            partition_info = _PartitionInfo(full_shape=shape.as_list(), var_offset=var_offset)
            part_name = f"{name}/part_{i}"
            init, init_shape = initializer, var_shape
            if initializer is not None and not callable(initializer):  # the whole value: this part's slice of it
                with name_scope(part_name + "/PartitionedInitializer"):
                    whole = initializer if isinstance(initializer, Tensor) else convert_to_tensor(initializer, dtype)
                    init, init_shape = slice_(whole, var_offset, var_shape), None
                    dtype = init.dtype.base_dtype
            with name_scope(None):
                part = self._get_single_variable(part_name, shape=init_shape, dtype=dtype, initializer=init,
                                                 partition_info=partition_info, reuse=reuse, **kwargs)
            part._set_save_slice_info(Variable.SaveSliceInfo(name, shape.as_list(), var_offset, var_shape))
            parts.append(part)
        partitioned = PartitionedVariable(name=name, shape=shape, dtype=dtype, variable_list=parts,
                                          partitions=partitions)
        self._partitioned_vars[name] = partitioned
        return partitioned

    def _existing_partitioned_variable(self, name, shape, dtype, partitions, reuse) -> PartitionedVariable:
        """The stored PartitionedVariable `name`, after TF's checks against what this call asked for."""
        if reuse is False:
            raise ValueError(f"Partitioned variable with name {name} already exists. Did you mean to set reuse=True "
                             "or reuse=tf.AUTO_REUSE in VarScope?")
        existing = self._partitioned_vars[name]
        if not shape.is_compatible_with(existing.get_shape()):
            raise ValueError(f"Trying to reuse partitioned variable {name}, but specified shape {shape} and found "
                             f"shape {existing.get_shape()}.")
        if not dtype.is_compatible_with(_dtypes.as_dtype(existing.dtype)):
            raise ValueError(f"Trying to reuse partitioned variable {name}, but specified dtype {dtype.name} and "
                             f"found dtype {_dtypes.as_dtype(existing.dtype).name}.")
        if partitions is not None and list(existing._get_partitions()) != list(partitions):
            raise ValueError(f"Trying to reuse partitioned variable {name}, but specified partitions {partitions} "
                             f"and found partitions {existing._get_partitions()}.")
        return existing

    def _get_single_variable(self, name, shape=None, dtype=_dtypes.float32, initializer=None, regularizer=None,
                             partition_info=None, reuse=None, trainable=None, collections=None, caching_device=None,
                             validate_shape=True, constraint=None, synchronization=None, aggregation=None,
                             **_unused) -> Variable:
        initializing_from_value = initializer is not None and not callable(initializer)
        if shape is not None and initializing_from_value:
            raise ValueError("If initializer is a constant, do not specify shape.")
        dtype = _dtypes.as_dtype(dtype)
        shape = as_shape(shape)
        if name in self._vars:
            found = self._vars[name]
            if reuse is False:
                raise ValueError(f"Variable {name} already exists, disallowed. Did you mean to set reuse=True or "
                                 "reuse=tf.AUTO_REUSE in VarScope?")
            if not shape.is_compatible_with(found.get_shape()):
                raise ValueError(f"Trying to share variable {name}, but specified shape {shape} and found shape "
                                 f"{found.get_shape()}.")
            if not dtype.is_compatible_with(found.dtype.base_dtype):
                raise ValueError(f"Trying to share variable {name}, but specified dtype {dtype.name} and found "
                                 f"dtype {found.dtype.base_dtype.name}.")
            return found
        if reuse is True:
            raise ValueError(f"Variable {name} does not exist, or was not created with tf.get_variable(). Did you "
                             "mean to set reuse=tf.AUTO_REUSE in VarScope?")
        if initializer is None:
            initializer = _default_initializer(name, dtype)
        variable_dtype = None
        if initializing_from_value:
            init_val = initializer
        else:
            if inspect.isclass(initializer):
                initializer = initializer()
            if shape.is_fully_defined():
                extra = {"partition_info": partition_info} if _accepts_keyword(initializer, "partition_info") else {}
                init_val = functools.partial(initializer, shape.as_list(), dtype=dtype, **extra)
                variable_dtype = dtype.base_dtype
            elif _needs_no_arguments(initializer):
                init_val = initializer
            else:
                raise ValueError("The initializer passed is not valid. It should be a callable with no arguments "
                                 "and the shape should not be provided or an instance of "
                                 "`tf.keras.initializers.*' and `shape` should be fully defined.")
        variable = Variable(initial_value=init_val, name=name, trainable=trainable, collections=collections,
                            caching_device=caching_device, dtype=variable_dtype, validate_shape=validate_shape,
                            constraint=constraint, synchronization=synchronization, aggregation=aggregation)
        self._vars[name] = variable
        if regularizer:
            with colocate_with(variable), name_scope(name + "/Regularizer/"), control_dependencies(None):
                loss = regularizer(variable)
            if loss is not None:
                get_default_graph().add_to_collection(GraphKeys.REGULARIZATION_LOSSES, loss)
        return variable


def _default_initializer(name: str, dtype: _dtypes.DType):
    """TF1's default: Glorot-uniform for floats, zeros for integers, bools and strings."""
    if dtype.is_floating:
        return init_ops.glorot_uniform_initializer()
    if dtype.is_integer or dtype.is_unsigned or dtype.is_bool or dtype is _dtypes.string:
        return init_ops.zeros_initializer()
    raise ValueError(f"An initializer for variable {name} of {dtype.base_dtype} is required")
