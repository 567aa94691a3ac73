"""tf.Variable: a VariableV2 op, its initial value, an Assign initializer and a `read` Identity colocated with it.

    with tf.device(tf.assign_to_device("/device:GPU:0")):
        a = tf.Variable(1.0)      # a.device == "/device:CPU:0": VariableV2 is a PS op
        b = tf.sin(a)             # b.device == "/device:GPU:0"; reads a/read, which is colocated with a
"""
from __future__ import annotations

import enum
import functools
import inspect

import numpy as np

from adplace.framework import dtypes as _dtypes
from adplace.framework import meta_graph as _meta_graph
from adplace.framework.conversion import convert_to_tensor, register_tensor_conversion_function
from adplace.framework.default_graph import add_to_collections, colocate_with, get_collection, name_scope
from adplace.framework.graph import GraphKeys, get_default_graph
from adplace.framework.indexed_slices import IndexedSlices
from adplace.framework.operation import Operation, Tensor
from adplace.framework.session_stack import session_for
from adplace.framework.tensor_shape import as_shape
from adplace.ops import array_ops, state_ops
from adplace.ops import math_ops, slicing_ops  # noqa: F401 - Tensor's operators, whose metadata Variable's copy
from adplace.ops.constant_op import constant
from adplace.ops.control_flow_ops import group, no_op
from adplace.ops.logical_ops import logical_not
from adplace.ops.op_builder import apply_op_1
from adplace.ops.selection_ops import boolean_mask
from adplace.ops import variable_def as _variable_def


class VariableSynchronization(enum.Enum):
    """When a distributed variable is aggregated (tf.VariableSynchronization); ON_READ variables default to
    non-trainable."""
    AUTO = 0
    NONE = 1
    ON_WRITE = 2
    ON_READ = 3


class VariableAggregationV2(enum.Enum):
    """How a distributed variable's updates combine (tf.VariableAggregation in TF2)."""
    NONE = 0
    SUM = 1
    MEAN = 2
    ONLY_FIRST_REPLICA = 3

    def __hash__(self) -> int:
        return hash(self.value)

    def __eq__(self, other) -> bool:
        if isinstance(other, (VariableAggregationV2, VariableAggregation)):
            return self.value == other.value
        return NotImplemented


class VariableAggregation(enum.Enum):
    """TF1's tf.VariableAggregation: VariableAggregationV2 plus the old alias ONLY_FIRST_TOWER; members of the two
    enums with the same value compare and hash equal."""
    NONE = 0
    SUM = 1
    MEAN = 2
    ONLY_FIRST_REPLICA = 3
    ONLY_FIRST_TOWER = 3  # noqa: PIE796 - TF's deprecated alias of ONLY_FIRST_REPLICA

    __hash__ = VariableAggregationV2.__hash__
    __eq__ = VariableAggregationV2.__eq__


def validate_synchronization_aggregation_trainable(synchronization, aggregation, trainable, name):
    """TF's defaults and checks: AUTO synchronization, NONE aggregation, and `trainable` unless ON_READ."""
    if aggregation is None:
        aggregation = VariableAggregation.NONE
    elif not isinstance(aggregation, (VariableAggregation, VariableAggregationV2)):
        try:
            aggregation = VariableAggregationV2(aggregation)
        except ValueError:
            raise ValueError(f"Invalid variable aggregation mode: {aggregation} for variable: {name}") from None
    if synchronization is None:
        synchronization = VariableSynchronization.AUTO
    else:
        try:
            synchronization = VariableSynchronization(synchronization)
        except ValueError:
            raise ValueError(f"Invalid variable synchronization mode: {synchronization} for variable: "
                             f"{name}") from None
    if trainable is None:
        trainable = synchronization != VariableSynchronization.ON_READ
    return synchronization, aggregation, trainable


def _scatter_method(scatter):
    """A Variable method writing the rows of an IndexedSlices with `scatter` (tf.scatter_add, ...), as TF1's."""
    def method(self, sparse_delta, use_locking=False, name=None):
        if not isinstance(sparse_delta, IndexedSlices):
            raise TypeError(f"sparse_delta is not IndexedSlices: {sparse_delta}")
        return scatter(self._variable, sparse_delta.indices, sparse_delta.values, use_locking=use_locking, name=name)
    method.__name__ = method.__qualname__ = scatter.__name__
    method.__doc__ = (f"tf.{scatter.__name__}(self, sparse_delta.indices, sparse_delta.values); returns the ref "
                      "after the write. Raises TypeError if `sparse_delta` is not an IndexedSlices.")
    return method


class _VariableMetaclass(type):
    """Routes `Variable(...)` through the graph's variable creators (tf.variable_creator_scope), innermost first;
    the last creator in the chain builds the variable."""

    def __call__(cls, *args, **kwargs):
        creators = get_default_graph()._variable_creator_stack
        if not creators:
            return super().__call__(*args, **kwargs)
        kwargs.update(zip(_VARIABLE_ARGS, args))

        def make(**kw):
            return type.__call__(cls, **kw)
        for creator in creators:
            make = functools.partial(creator, make)
        return make(**kwargs)


class Variable(metaclass=_VariableMetaclass):
    """A TF1 reference variable (RefVariable): state held by the session, on the variable's placed device."""

    def __init__(self, initial_value=None, trainable: bool | None = None, collections=None, validate_shape: bool = True,
                 caching_device=None, name: str | None = None, variable_def=None, dtype=None,
                 expected_shape=None, import_scope=None, constraint=None, use_resource=None,
                 synchronization=None, aggregation=None, shape=None):
        if variable_def is not None:  # a Variable over existing ops (Variable.from_proto)
            if initial_value is not None:
                raise ValueError("variable_def and initial_value are mutually exclusive.")
            _variable_def.init_from_proto(self, variable_def, import_scope,
                                          validate_synchronization_aggregation_trainable)
            return
        if initial_value is None:
            raise ValueError("initial_value must be specified.")
        if collections is None:
            collections = [GraphKeys.GLOBAL_VARIABLES]
        if not isinstance(collections, (list, tuple, set)):
            raise ValueError(f"collections argument to Variable constructor must be a list, tuple, or set. Got "
                             f"{collections} of type {type(collections)}")
        if constraint is not None and not callable(constraint):
            raise ValueError("The `constraint` argument must be a callable.")
        collections = list(collections)
        self._synchronization, self._aggregation, trainable = validate_synchronization_aggregation_trainable(
            synchronization, aggregation, trainable, name)
        if trainable and GraphKeys.TRAINABLE_VARIABLES not in collections:
            collections.append(GraphKeys.TRAINABLE_VARIABLES)
        self._trainable = trainable
        self._constraint = constraint
        dtype = None if dtype is None else _dtypes.as_dtype(dtype)
        graph = get_default_graph()
        with graph.control_dependencies(None), name_scope(name, "Variable") as scope:  # TF's init_scope
            if callable(initial_value):
                first_new_op = len(graph._ops)
                with name_scope("Initializer"), graph.device(None):
                    initial_value = convert_to_tensor(initial_value(), dtype=dtype)
                for op in graph._ops[first_new_op:]:  # joins the variable's colocation group, as in TF
                    op._colocation = (b"loc:@" + scope[:-1].encode(),)
            self._initial_value = convert_to_tensor(initial_value, dtype=dtype, name="initial_value")
            value_shape = self._initial_value.shape if validate_shape else as_shape(None)
            if shape is not None:
                value_shape = as_shape(shape)
            self._variable = state_ops.variable_op_v2(value_shape, self._initial_value.dtype.base_dtype, name=scope)
            self._initializer_op = state_ops.assign(self._variable, self._initial_value,
                                                    validate_shape=validate_shape, name="Assign").op
            if caching_device is not None:
                with get_default_graph().device(caching_device):
                    self._snapshot = array_ops.identity(self._variable, name="read")
            else:
                with colocate_with(self._variable.op):
                    self._snapshot = array_ops.identity(self._variable, name="read")
        add_to_collections(collections, self)

    # --- identity ---------------------------------------------------------------------------------------------
    name = property(lambda self: self._variable.name)
    op = property(lambda self: self._variable.op)
    graph = property(lambda self: self._variable.graph)
    device = property(lambda self: self._variable.device)
    dtype = property(lambda self: self._variable.dtype)
    shape = property(lambda self: self._variable.shape)
    initializer = property(lambda self: self._initializer_op)
    initial_value = property(lambda self: self._initial_value)
    trainable = property(lambda self: self._trainable)
    constraint = property(lambda self: self._constraint)
    synchronization = property(lambda self: self._synchronization)
    aggregation = property(lambda self: self._aggregation)
    _shared_name = property(lambda self: self._variable.op.name)
    _distribute_strategy = None  # no tf.distribute: a variable is never mirrored
    _colocation_op = property(lambda self: self._variable.op)

    def get_shape(self):
        return self.shape

    # --- slices of partitioned variables and VariableDef protos (adplace/ops/variable_def.py) -------------------
    SaveSliceInfo = _variable_def.SaveSliceInfo
    _save_slice_info = None  # a SaveSliceInfo when this variable is one part of a partitioned variable

    def _set_save_slice_info(self, save_slice_info) -> None:
        self._save_slice_info = save_slice_info

    def _get_save_slice_info(self):
        return self._save_slice_info

    def to_proto(self, export_scope: str | None = None):
        """This variable's VariableDef proto (op names without `export_scope`), or None when it is outside
        `export_scope`."""
        return _variable_def.variable_to_proto(self, export_scope)

    @staticmethod
    def from_proto(variable_def, import_scope: str | None = None) -> "Variable":
        """A Variable over the ops `variable_def` names in the default graph, prefixed by `import_scope`."""
        return Variable(variable_def=variable_def, import_scope=import_scope)

    def _ref(self) -> Tensor:
        return self._variable

    def _as_graph_element(self) -> Tensor:
        return self._variable

    def value(self) -> Tensor:
        """The snapshot (`<name>/read`) that ops reading this variable consume."""
        return self._snapshot

    def read_value(self) -> Tensor:
        return array_ops.identity(self._variable, name="read")

    def initialized_value(self) -> Tensor:
        """The variable's value, or its initial value when not yet initialized (no re-initialization)."""
        with colocate_with(self._variable.op):
            return apply_op_1("InitializedValue", [self._variable, self._initial_value], name="InitializedValue")

    # --- state ------------------------------------------------------------------------------------------------
    def assign(self, value, use_locking=False, name=None, read_value=True):
        return state_ops.assign(self._variable, value, use_locking=use_locking, name=name)

    def assign_add(self, delta, use_locking=False, name=None, read_value=True):
        return state_ops.assign_add(self._variable, delta, use_locking=use_locking, name=name)

    def assign_sub(self, delta, use_locking=False, name=None, read_value=True):
        return state_ops.assign_sub(self._variable, delta, use_locking=use_locking, name=name)

    scatter_update = _scatter_method(state_ops.scatter_update)
    scatter_add = _scatter_method(state_ops.scatter_add)
    scatter_sub = _scatter_method(state_ops.scatter_sub)
    scatter_mul = _scatter_method(state_ops.scatter_mul)
    scatter_div = _scatter_method(state_ops.scatter_div)
    scatter_min = _scatter_method(state_ops.scatter_min)
    scatter_max = _scatter_method(state_ops.scatter_max)
    batch_scatter_update = _scatter_method(state_ops.batch_scatter_update)

    def scatter_nd_update(self, indices, updates, name=None):
        return state_ops.scatter_nd_update(self._variable, indices, updates, use_locking=True, name=name)

    def scatter_nd_add(self, indices, updates, name=None):
        return state_ops.scatter_nd_add(self._variable, indices, updates, use_locking=True, name=name)

    def scatter_nd_sub(self, indices, updates, name=None):
        return state_ops.scatter_nd_sub(self._variable, indices, updates, use_locking=True, name=name)

    def count_up_to(self, limit):
        """tf.count_up_to(self, limit): this scalar int variable's value before an atomic increment."""
        return state_ops.count_up_to(self._variable, limit)

    def eval(self, session=None):
        return self._variable.eval(session=session)

    def load(self, value, session=None) -> None:
        """Assign `value` directly (tf.Variable.load), through the initializer's feed."""
        session = session_for(self.graph, session, "load variable")
        session.run(self._initializer_op, {self._initial_value: np.asarray(value)})

    def __iter__(self):
        raise TypeError(f"'Variable' object is not iterable ({self.name}): iterating over a variable is not "
                        "allowed in Graph mode; index it or use tf.unstack.")

    def __repr__(self) -> str:
        return f"<tf.Variable '{self.name}' shape={self.shape} dtype={self.dtype.name}>"

    __hash__ = object.__hash__


def _variable_to_tensor(value: Variable, dtype=None, name=None, as_ref=False) -> Tensor:
    tensor = value._ref() if as_ref else value.value()
    if dtype is not None and not _dtypes.as_dtype(dtype).is_compatible_with(tensor.dtype):
        raise ValueError(f"Incompatible type conversion requested to type '{_dtypes.as_dtype(dtype).name}' for "
                         f"variable of type '{tensor.dtype.name}' ({value.name})")
    return tensor


register_tensor_conversion_function(Variable, _variable_to_tensor)


def _forward_to_snapshot(method: str):
    """Variable.<method>: Tensor.<method> on the snapshot, carrying the Tensor method's name and docstring."""
    def forward(self, *args):
        return getattr(self.value(), method)(*args)
    tensor_method = getattr(Tensor, method, None)
    return forward if tensor_method is None else functools.wraps(tensor_method)(forward)


for _method in ("__add__", "__radd__", "__sub__", "__rsub__", "__mul__", "__rmul__", "__truediv__",
                "__rtruediv__", "__floordiv__", "__rfloordiv__", "__mod__", "__rmod__", "__pow__", "__rpow__",
                "__matmul__", "__rmatmul__", "__neg__", "__abs__", "__getitem__", "__lt__", "__le__", "__gt__",
                "__ge__", "__and__", "__rand__", "__or__", "__ror__", "__xor__", "__rxor__", "__invert__"):
    setattr(Variable, _method, _forward_to_snapshot(_method))
Variable.__array_priority__ = 100
_VARIABLE_ARGS = tuple(inspect.signature(Variable.__init__).parameters)[1:]
VariableV1 = RefVariable = Variable


def is_resource_variable(var) -> bool:
    """Whether `var` is a resource variable (TF's resource_variable_ops.is_resource_variable). adplace has only
    reference variables, so this is False for every adplace Variable; TF code uses it to pick an update path."""
    return bool(getattr(var, "_should_act_as_resource_variable", False))


def global_variables(scope: str | None = None) -> list[Variable]:
    return get_collection(GraphKeys.GLOBAL_VARIABLES, scope)


all_variables = global_variables


def trainable_variables(scope: str | None = None) -> list[Variable]:
    return get_collection(GraphKeys.TRAINABLE_VARIABLES, scope)


def local_variables(scope: str | None = None) -> list[Variable]:
    return get_collection(GraphKeys.LOCAL_VARIABLES, scope)


def variables_initializer(var_list, name: str = "init") -> Operation:
    """One op that runs the initializers of `var_list` (tf.variables_initializer)."""
    if var_list:
        return group(*[v.initializer for v in var_list], name=name)
    return no_op(name=name)


def global_variables_initializer() -> Operation:
    return variables_initializer(global_variables())


initialize_all_variables = global_variables_initializer


def local_variables_initializer() -> Operation:
    return variables_initializer(local_variables())


is_variable_initialized = state_ops.is_variable_initialized


def report_uninitialized_variables(var_list=None, name: str = "report_uninitialized_variables") -> Tensor:
    """A 1-D string tensor naming the variables of `var_list` (default: global and local variables) that are not
    initialized when it runs; empty when all are (tf.report_uninitialized_variables).

        v = tf.Variable(1.0, name="v")
        sess.run(tf.report_uninitialized_variables())   # [b"v"]; [] after sess.run(v.initializer)
    """
    if var_list is None:
        var_list = global_variables() + local_variables()
    with name_scope(name):
        if not var_list:
            return constant([], dtype=_dtypes.string)
        is_uninitialized = logical_not(array_ops.stack([is_variable_initialized(v) for v in var_list]))
        names = constant([v.op.name for v in var_list])
        return boolean_mask(names, is_uninitialized)


def assert_variables_initialized(var_list=None):
    """An op that fails with FailedPreconditionError when run while a variable of `var_list` (default: global and
    local variables) is uninitialized; None when there are no variables (tf.assert_variables_initialized). It reads
    each variable's rank, so running it reads every variable."""
    if var_list is None:
        var_list = global_variables() + local_variables()
    if not var_list:
        return None
    ranks = []
    for var in var_list:
        with colocate_with(var.op):
            ranks.append(apply_op_1("Rank", [var._ref()], name="Rank"))
    return ranks[0] if len(ranks) == 1 else array_ops.stack(ranks)


def _variable_to_proto(variable: Variable, export_scope: str | None = None):
    return variable.to_proto(export_scope=export_scope)


def _variable_from_proto(variable_def, import_scope: str | None = None) -> Variable:
    return Variable.from_proto(variable_def, import_scope=import_scope)


for _key in (GraphKeys.GLOBAL_VARIABLES, GraphKeys.TRAINABLE_VARIABLES, "moving_average_variables",
             GraphKeys.LOCAL_VARIABLES, GraphKeys.MODEL_VARIABLES, GraphKeys.GLOBAL_STEP, GraphKeys.METRIC_VARIABLES):
    _meta_graph.register_proto_function(_key, lambda: _variable_def.variable_pb2().VariableDef, _variable_to_proto,
                                        _variable_from_proto)
