"""tf.Variable: a VariableV2 op, its initial value, an Assign initializer and a `read` Identity colocated with it.

    with tf.device(tf.assign_to_device("/device:GPU:0")):
        a = tf.Variable(1.0)      # a.device == "/device:CPU:0": VariableV2 is a PS op
        b = tf.sin(a)             # b.device == "/device:GPU:0"; reads a/read, which is colocated with a
"""
from __future__ import annotations

import numpy as np

from adplace.framework import dtypes as _dtypes
from adplace.framework.conversion import convert_to_tensor, register_tensor_conversion_function
from adplace.framework.default_graph import add_to_collections, colocate_with, get_collection, name_scope
from adplace.framework.graph import GraphKeys, get_default_graph
from adplace.framework.operation import Operation, Tensor
from adplace.framework.session_stack import session_for
from adplace.framework.tensor_shape import as_shape
from adplace.ops import array_ops, state_ops
from adplace.ops.control_flow_ops import group, no_op
from adplace.ops.op_builder import apply_op_1


class Variable:
    """A TF1 reference variable (RefVariable): state held by the session, on the variable's placed device."""

    def __init__(self, initial_value=None, trainable: bool = True, collections=None, validate_shape: bool = True,
                 caching_device=None, name: str | None = None, variable_def=None, dtype=None,
                 expected_shape=None, import_scope=None, constraint=None, use_resource=None,
                 synchronization=None, aggregation=None, shape=None):
        if initial_value is None:
            raise ValueError("initial_value must be specified.")
        if variable_def is not None:
            raise NotImplementedError("Variable(variable_def=...) is not supported: build variables in Python.")
        if collections is None:
            collections = [GraphKeys.GLOBAL_VARIABLES]
        if not isinstance(collections, (list, tuple, set)):
            raise ValueError(f"collections argument to Variable constructor must be a list, tuple, or set. Got "
                             f"{collections} of type {type(collections)}")
        if constraint is not None and not callable(constraint):
            raise ValueError("The `constraint` argument must be a callable.")
        collections = list(collections)
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
    _colocation_op = property(lambda self: self._variable.op)

    def get_shape(self):
        return self.shape

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

    def eval(self, session=None):
        return self._variable.eval(session=session)

    def load(self, value, session=None) -> None:
        """Assign `value` directly (tf.Variable.load), through the initializer's feed."""
        session = session_for(self.graph, session, "load variable")
        session.run(self._initializer_op, {self._initial_value: np.asarray(value)})

    def __iter__(self):
        raise TypeError(f"'Variable' object is not iterable ({self.name}); index it or use tf.unstack.")

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
    def forward(self, *args):
        return getattr(self.value(), method)(*args)
    return forward


for _method in ("__add__", "__radd__", "__sub__", "__rsub__", "__mul__", "__rmul__", "__truediv__",
                "__rtruediv__", "__floordiv__", "__rfloordiv__", "__mod__", "__rmod__", "__pow__", "__rpow__",
                "__matmul__", "__rmatmul__", "__neg__", "__abs__", "__getitem__", "__lt__", "__le__", "__gt__",
                "__ge__", "__and__", "__rand__", "__or__", "__ror__", "__xor__", "__rxor__", "__invert__"):
    setattr(Variable, _method, _forward_to_snapshot(_method))
Variable.__array_priority__ = 100
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
