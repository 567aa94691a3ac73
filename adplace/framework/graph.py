"""Graph, Operation, Tensor, NodeDef: the dataflow graph and the stacks used while building it.

An op's `device` is its *requested* device (canonical form, e.g. "/device:GPU:0"); where it actually runs is decided
by the placer at session run time and never written back here.

    g = Graph()
    with g.as_default(), g.name_scope("tower_0"), g.device("/gpu:1"):
        op = g.create_op("NoOp", [], name="sync")   # op.name == "tower_0/sync", op.device == "/device:GPU:1"
"""
from __future__ import annotations

import contextlib
import logging
import re
import threading
from typing import Callable, Iterable

from adplace.framework import dtypes as _dtypes
from adplace.framework.device_spec import DeviceSpec, canonical_name, merge_device
from adplace.framework.registry import get_op_def
from adplace.framework.tensor_shape import TensorShape, as_shape

_log = logging.getLogger("adplace")
_VALID_OP_NAME = re.compile(r"^[A-Za-z0-9.][A-Za-z0-9_.\\/>-]*$")
_VALID_SCOPE_NAME = re.compile(r"^[A-Za-z0-9_.\\/>-]*$")


class GraphKeys:
    """Standard collection names (tf.GraphKeys)."""

    GLOBAL_VARIABLES = "variables"
    VARIABLES = GLOBAL_VARIABLES
    LOCAL_VARIABLES = "local_variables"
    MODEL_VARIABLES = "model_variables"
    TRAINABLE_VARIABLES = "trainable_variables"
    UPDATE_OPS = "update_ops"
    SUMMARIES = "summaries"
    QUEUE_RUNNERS = "queue_runners"
    LOSSES = "losses"
    REGULARIZATION_LOSSES = "regularization_losses"
    GLOBAL_STEP = "global_step"
    INIT_OP = "init_op"
    TRAIN_OP = "train_op"
    SAVERS = "savers"


class NodeDef:
    """The light record a device function may receive: name, op (type string), device, attr, input."""

    __slots__ = ("name", "op", "device", "attr", "input")

    def __init__(self, name: str = "", op: str = "", device: str = "", attr: dict | None = None,
                 input: list | None = None):  # noqa: A002 - NodeDef's field name
        self.name, self.op, self.device = name, op, device
        self.attr = {} if attr is None else attr
        self.input = [] if input is None else input

    def __repr__(self) -> str:
        return f"NodeDef(name={self.name!r}, op={self.op!r}, device={self.device!r})"


class Tensor:
    """A symbolic output of an Operation: (op, index), dtype and static shape. Values exist only in Session.run."""

    # __slots__: a graph holds up to millions of these; slots halve their memory and speed attribute access.
    __slots__ = ("_op", "_value_index", "_dtype", "_shape", "__weakref__")
    __array_priority__ = 100  # so ndarray + Tensor defers to Tensor.__radd__

    def __init__(self, op: "Operation", value_index: int, dtype: _dtypes.DType, shape: TensorShape):
        self._op, self._value_index, self._dtype, self._shape = op, value_index, dtype, shape

    op = property(lambda self: self._op)
    value_index = property(lambda self: self._value_index)
    dtype = property(lambda self: self._dtype)
    graph = property(lambda self: self._op._graph)
    shape = property(lambda self: self._shape)
    device = property(lambda self: self._op._device)

    @property
    def name(self) -> str:
        return f"{self._op._name}:{self._value_index}"

    def get_shape(self) -> TensorShape:
        return self._shape

    def set_shape(self, shape) -> None:
        """Refine the static shape; ValueError if incompatible."""
        self._shape = self._shape.merge_with(as_shape(shape))

    def consumers(self) -> list["Operation"]:
        return [op for op in self._op._consumers if any(t is self for t in op._inputs)]

    def eval(self, feed_dict=None, session=None):
        """The value of this tensor in `session` (default: the default session)."""
        return _session_for(self._op._graph, session, "evaluate tensor").run(self, feed_dict)

    def _as_node_def_input(self) -> str:
        return self._op._name if self._value_index == 0 else f"{self._op._name}:{self._value_index}"

    def __repr__(self) -> str:
        return f"<tf.Tensor '{self.name}' shape={self._shape} dtype={self._dtype.name}>"

    def __str__(self) -> str:
        return f'Tensor("{self.name}", shape={self._shape}, dtype={self._dtype.name})'

    def __bool__(self):
        raise TypeError(f"Using a `tf.Tensor` as a Python `bool` is not allowed: {self.name!r} has no value until "
                        "Session.run. Use `if t is not None:` to test for None, or tf.cond to branch on its value.")


    def __iter__(self):
        dims = self._shape.as_tuple()
        if dims is None or not dims or dims[0] is None:
            raise TypeError(f"Tensor {self.name!r} is not iterable: its first dimension is not statically known "
                            f"(shape {self._shape}).")
        from adplace.ops import array_ops  # ops register the indexing op; framework must not import ops at load
        return iter(array_ops.unstack(self, num=dims[0]))

    def __len__(self):
        raise TypeError(f"len is not well defined for symbolic Tensors ({self.name!r}). Use tf.shape(x)[0].")

    def __array__(self, dtype=None, copy=None):
        raise NotImplementedError(f"Cannot convert a symbolic Tensor ({self.name}) to a numpy array: "
                                  "run it with Session.run first.")

    __hash__ = object.__hash__


class Operation:
    """A node of the graph: type, inputs, control inputs, attrs, outputs and the requested device."""

    __slots__ = ("_graph", "_name", "_type", "_inputs", "_control_inputs", "_outputs", "_attrs", "_device",
                 "_id", "_colocation", "_consumers", "_control_outputs", "_op_def", "__weakref__")

    def __init__(self, graph: "Graph", op_type: str, name: str, inputs: tuple, attrs: dict, control_inputs: list,
                 output_specs: list, op_def):
        self._graph, self._type, self._name = graph, op_type, name
        self._inputs, self._attrs, self._op_def = inputs, attrs, op_def
        self._device, self._colocation = "", ()
        self._consumers: list[Operation] = []
        self._control_outputs: list[Operation] = []
        seen = {id(t._op) for t in inputs}
        self._control_inputs = []
        for c in control_inputs:
            if id(c) not in seen:
                seen.add(id(c))
                self._control_inputs.append(c)
        self._outputs = tuple(Tensor(self, i, dt, sh) for i, (dt, sh) in enumerate(output_specs))

    name = property(lambda self: self._name)
    type = property(lambda self: self._type)
    graph = property(lambda self: self._graph)
    outputs = property(lambda self: list(self._outputs))
    control_inputs = property(lambda self: list(self._control_inputs))
    device = property(lambda self: self._device)

    @property
    def inputs(self) -> tuple:
        return self._inputs

    @property
    def node_def(self) -> NodeDef:
        inputs = [t._as_node_def_input() for t in self._inputs] + ["^" + c._name for c in self._control_inputs]
        attr = dict(self._attrs)
        if self._colocation:
            attr["_class"] = list(self._colocation)
        return NodeDef(self._name, self._type, self._device, attr, inputs)

    def values(self) -> tuple:
        return self._outputs

    def get_attr(self, name: str):
        if name == "_class" and self._colocation:
            return list(self._colocation)
        try:
            return self._attrs[name]
        except KeyError:
            raise ValueError(f"Operation '{self._name}' has no attr named '{name}'.") from None

    def colocation_groups(self) -> list[bytes]:
        """The `loc:@name` groups this op must share a device with (its own name when none)."""
        return list(self._colocation) if self._colocation else [b"loc:@" + self._name.encode()]

    def run(self, feed_dict=None, session=None) -> None:
        """Run this op in `session` (default: the default session)."""
        _session_for(self._graph, session, "execute operation").run(self, feed_dict)

    def _set_device(self, device) -> None:
        self._device = canonical_name(device.to_string() if isinstance(device, DeviceSpec) else device)

    def __repr__(self) -> str:
        device = f" device={self._device}" if self._device else ""
        return f"<tf.Operation '{self._name}' type={self._type}{device}>"

    __hash__ = object.__hash__


class _DeviceEntry:
    """One device-stack entry: a merge function (strings, DeviceSpecs), a user function, or None (stop)."""

    __slots__ = ("function", "is_null_merge", "is_user_function")

    def __init__(self, device):
        self.is_user_function = callable(device) and not isinstance(device, (str, DeviceSpec))
        spec_text = canonical_name(device) if isinstance(device, (str, DeviceSpec)) else None
        self.is_null_merge = spec_text == ""
        if device is None:
            self.function = None
        elif self.is_user_function:
            self.function = device
        elif isinstance(device, (str, DeviceSpec)):
            self.function = merge_device(DeviceSpec.from_string(spec_text))
        else:
            raise TypeError(f"tf.device() takes a string, a DeviceSpec, a function or None; got {device!r}")


class _ControlDependencies:
    """One `control_dependencies` block: its control inputs and the ops created inside it."""

    def __init__(self, graph: "Graph", control_inputs: list | None):
        self._graph = graph
        self.control_inputs = [] if control_inputs is None else control_inputs
        self.new_stack = control_inputs is None
        self.seen_ids: set[int] = set()
        self._saved = None

    def __enter__(self):
        state = self._graph._state
        if self.new_stack:
            self._saved, state.control_stack = state.control_stack, []
        state.control_stack.append(self)
        return self

    def __exit__(self, *exc):
        state = self._graph._state
        state.control_stack.pop()
        if self.new_stack:
            state.control_stack = self._saved
        return False


class _BuildState(threading.local):
    """Per-thread build stacks of a graph, as in TF (name scope, devices, colocation, control dependencies)."""

    def __init__(self):
        self.name_stack = ""
        self.device_stack: list[_DeviceEntry] = []
        self.colocation_stack: list[Operation] = []
        self.control_stack: list[_ControlDependencies] = []


class Graph:
    """A TF1 dataflow graph: ops in creation order (a valid topological order), names, collections, build stacks."""

    def __init__(self):
        self._ops: list[Operation] = []
        self._ops_by_name: dict[str, Operation] = {}
        self._names_in_use: dict[str, int] = {}
        self._collections: dict[str, list] = {}
        self._state = _BuildState()
        self._finalized = False
        self.seed = None
        self._warned_colocation = False
        self._lock = threading.RLock()

    # --- building --------------------------------------------------------------------------------------------
    def create_op(self, op_type: str, inputs: Iterable, attrs: dict | None = None, name: str | None = None) -> Operation:
        """Create an op of a registered type: infer outputs, apply name scope, control deps, colocation, devices."""
        if self._finalized:
            raise RuntimeError("Graph is finalized and cannot be modified.")
        op_def = get_op_def(op_type)
        inputs = tuple(inputs)
        for t in inputs:
            if not isinstance(t, Tensor):
                raise TypeError(f"Input to op {op_type!r} must be a Tensor, got {t!r}")
            if t._op._graph is not self:
                raise ValueError(f"Tensor {t.name!r} must be from the same graph as op {op_type!r}.")
        attrs = {} if attrs is None else attrs
        with self._lock:
            # A name ending in "/" is a scope made for this op (TF's `with name_scope(...) as name`): taken as is.
            if name and name[-1] == "/":
                name = name[:-1]
                if name in self._ops_by_name:
                    raise ValueError(f"Duplicate node name in graph: '{name}'")
                self._names_in_use.setdefault(name.lower(), 1)
            else:
                name = self.unique_name(name or op_type)
            if not _VALID_OP_NAME.match(name):
                raise ValueError(f"'{name}' is not a valid node name")
            output_specs = op_def.infer(inputs, attrs, name)
            state = self._state
            control_inputs = self._control_inputs_for(inputs, state) if state.control_stack else []
            op = Operation(self, op_type, name, inputs, attrs, control_inputs, output_specs, op_def)
            op._id = len(self._ops)
            self._ops.append(op)
            self._ops_by_name[name] = op
            for t in inputs:
                t._op._consumers.append(op)
            for c in op._control_inputs:
                c._control_outputs.append(op)
            for controller in state.control_stack:
                controller.seen_ids.add(id(op))
            if state.device_stack:
                self._apply_device_functions(op, state.device_stack)
            if state.colocation_stack:
                self._apply_colocation(op, state.colocation_stack)
        return op

    def _control_inputs_for(self, inputs: tuple, state: _BuildState) -> list:
        input_ops = [t._op for t in inputs]
        ret = []
        for controller in state.control_stack:
            if not any(id(op) in controller.seen_ids for op in input_ops):
                ret.extend(c for c in controller.control_inputs if c not in input_ops)
        return ret

    @staticmethod
    def _apply_device_functions(op: Operation, device_stack: list) -> None:
        """Apply device scopes innermost first, as TF does; a None entry shuts out the scopes outside it."""
        for entry in reversed(device_stack):
            if entry.is_null_merge:
                continue
            if entry.function is None:
                break
            result = entry.function(op)
            op._set_device("" if result is None else result)

    def _apply_colocation(self, op: Operation, colocation_stack: list) -> None:
        """Record `_class` and take the first stacked device; a device set inside the block is kept (TF 1.x) and
        the conflict is logged once per graph, not once per op."""
        groups = set()
        for coloc_op in colocation_stack:
            groups.update(coloc_op.colocation_groups())
            if not coloc_op._device:
                continue
            if not op._device:
                op._device = coloc_op._device
            elif op._device != coloc_op._device and not self._warned_colocation:
                self._warned_colocation = True
                _log.warning("Tried to colocate op '%s' having device '%s' with op '%s' which had an incompatible "
                             "device '%s'. The placer will try to reconcile them (soft placement relaxes the "
                             "conflict); further conflicts in this graph are not reported.", op.name, op._device,
                             coloc_op.name, coloc_op._device)
        op._colocation = tuple(sorted(groups))

    def unique_name(self, name: str, mark_as_used: bool = True) -> str:
        """Scoped name made unique with _1, _2 suffixes (case-insensitively, as TF does)."""
        name_stack = self._state.name_stack
        if name_stack:
            name = name_stack + "/" + name
        name_key = name.lower()
        i = self._names_in_use.get(name_key, 0)
        if mark_as_used:
            self._names_in_use[name_key] = i + 1
        if i > 0:
            base_name_key = name_key
            while name_key in self._names_in_use:
                name_key = f"{base_name_key}_{i}"
                i += 1
            if mark_as_used:
                self._names_in_use[name_key] = 1
            name = f"{name}_{i - 1}"
        return name

    def get_name_scope(self) -> str:
        return self._state.name_stack

    @contextlib.contextmanager
    def name_scope(self, name: str | None):
        """Push a name scope; yields the scope with a trailing '/'. '' or None resets to the root scope."""
        state = self._state
        old = state.name_stack
        if not name:
            new_stack = ""
        elif name.endswith("/"):
            if not _VALID_SCOPE_NAME.match(name):
                raise ValueError(f"'{name}' is not a valid scope name")
            new_stack = name[:-1]
        else:
            if not _VALID_SCOPE_NAME.match(name):
                raise ValueError(f"'{name}' is not a valid scope name")
            new_stack = self.unique_name(name)
        state.name_stack = new_stack
        try:
            yield "" if not new_stack else new_stack + "/"
        finally:
            state.name_stack = old

    @contextlib.contextmanager
    def device(self, device_name_or_function):
        """Requested device for ops created in the block: a string, DeviceSpec, function of the op, or None."""
        state = self._state
        state.device_stack.append(_DeviceEntry(device_name_or_function))
        depth = len(state.device_stack)
        try:
            yield
        finally:
            if len(state.device_stack) != depth:
                raise RuntimeError("Exiting device scope without proper scope nesting.")
            state.device_stack.pop()

    @contextlib.contextmanager
    def colocate_with(self, op, ignore_existing: bool = False):
        """Colocate ops created in the block with `op`; device scopes outside the block are ignored inside it."""
        if op is None and not ignore_existing:
            raise ValueError("Trying to reset colocation (op is None) but ignore_existing is not True")
        op = _as_operation(op) if op is not None else None
        state = self._state
        saved_devices, state.device_stack = state.device_stack, []
        saved_colocation = state.colocation_stack
        if ignore_existing:
            state.colocation_stack = []
        if op is not None:
            state.colocation_stack = state.colocation_stack + [op]
        try:
            yield
        finally:
            state.device_stack, state.colocation_stack = saved_devices, saved_colocation

    def control_dependencies(self, control_inputs) -> _ControlDependencies:
        """Ops created in the block run after `control_inputs` (Operations or Tensors); None clears outer blocks."""
        if control_inputs is None:
            return _ControlDependencies(self, None)
        ops = []
        state = self._state
        current = {id(c) for controller in state.control_stack for c in controller.control_inputs}
        for c in control_inputs:
            if hasattr(c, "_as_graph_element") and not isinstance(c, (Tensor, Operation)):
                c = c._as_graph_element()
            if isinstance(c, Tensor):
                c = c._op
            if not isinstance(c, Operation):
                raise TypeError(f"Control input must be Operation or Tensor: {c}")
            if c._graph is not self:
                raise ValueError(f"Control input {c.name!r} must be from the same graph.")
            if id(c) not in current:
                current.add(id(c))
                ops.append(c)
        return _ControlDependencies(self, ops)

    # --- lookup ----------------------------------------------------------------------------------------------
    def get_operations(self) -> list[Operation]:
        return list(self._ops)

    def get_operation_by_name(self, name: str) -> Operation:
        if not isinstance(name, str):
            raise TypeError(f"Operation names are strings (or similar), not {type(name).__name__}.")
        return self.as_graph_element(name, allow_tensor=False, allow_operation=True)

    def get_tensor_by_name(self, name: str) -> Tensor:
        if not isinstance(name, str):
            raise TypeError(f"Tensor names are strings (or similar), not {type(name).__name__}.")
        return self.as_graph_element(name, allow_tensor=True, allow_operation=False)

    def as_graph_element(self, obj, allow_tensor: bool = True, allow_operation: bool = True):
        """Resolve a Tensor, Operation, Variable or name ("op", "op:0") to an element of this graph."""
        if hasattr(obj, "_as_graph_element") and not isinstance(obj, (Tensor, Operation)):
            obj = obj._as_graph_element()
        if isinstance(obj, (Tensor, Operation)):
            if obj.graph is not self:
                raise ValueError(f"{type(obj).__name__} {obj!r} is not an element of this graph.")
            if isinstance(obj, Tensor) and not allow_tensor:
                raise TypeError(f"Can not convert a Tensor into an Operation: {obj.name}")
            if isinstance(obj, Operation) and not allow_operation:
                raise TypeError(f"Can not convert an Operation into a Tensor: {obj.name}")
            return obj
        if not isinstance(obj, str):
            raise TypeError(f"Can not convert a {type(obj).__name__} into a graph element.")
        wanted = " or ".join(k for k, ok in (("Tensor", allow_tensor), ("Operation", allow_operation)) if ok)
        if ":" in obj and not allow_tensor:
            raise ValueError(f"Name {obj!r} appears to refer to a Tensor, not a {wanted}.")
        if ":" in obj:
            op_name, _, index = obj.rpartition(":")
            try:
                index = int(index)
            except ValueError:
                raise ValueError(f"The name {obj!r} looks a like a Tensor name, but is not a valid one. "
                                 "Tensor names must be of the form \"<op_name>:<output_index>\".") from None
            if op_name not in self._ops_by_name:
                raise KeyError(f"The name {obj!r} refers to a Tensor which does not exist. "
                               f"The operation, {op_name!r}, does not exist in the graph.")
            op = self._ops_by_name[op_name]
            if not 0 <= index < len(op._outputs):
                raise KeyError(f"The name {obj!r} refers to a Tensor which does not exist. The operation, "
                               f"{op_name!r}, exists but only has {len(op._outputs)} outputs.")
            return op._outputs[index]
        if not allow_operation:
            if obj in self._ops_by_name:
                raise ValueError(f"The name {obj!r} refers to an Operation, not a {wanted}. Tensor names must be of "
                                 f"the form \"<op_name>:<output_index>\".")
            raise ValueError(f"The name {obj!r} looks like an (invalid) Operation name, not a {wanted}. Tensor names "
                             f"must be of the form \"<op_name>:<output_index>\".")
        if obj not in self._ops_by_name:
            raise KeyError(f"The name {obj!r} refers to an Operation not in the graph.")
        return self._ops_by_name[obj]

    # --- collections -----------------------------------------------------------------------------------------
    def add_to_collection(self, name: str, value) -> None:
        self._collections.setdefault(name, []).append(value)

    def add_to_collections(self, names, value) -> None:
        for name in ([names] if isinstance(names, str) else set(names)):
            self.add_to_collection(name, value)

    def get_collection_ref(self, name: str) -> list:
        return self._collections.setdefault(name, [])

    def get_collection(self, name: str, scope: str | None = None) -> list:
        """A copy of a collection, optionally filtered to items whose name matches `scope` (re.match)."""
        items = self._collections.get(name, [])
        if scope is None:
            return list(items)
        pattern = re.compile(scope)
        return [item for item in items if getattr(item, "name", None) is not None and pattern.match(item.name)]

    def get_all_collection_keys(self) -> list[str]:
        return [k for k, v in self._collections.items() if v]

    def clear_collection(self, name: str) -> None:
        self._collections.pop(name, None)

    # --- misc ------------------------------------------------------------------------------------------------
    def finalize(self) -> None:
        self._finalized = True

    finalized = property(lambda self: self._finalized)
    version = property(lambda self: len(self._ops))

    @contextlib.contextmanager
    def as_default(self):
        """Make this the default graph inside the block."""
        _graph_stack().append(self)
        try:
            yield self
        finally:
            _graph_stack().pop()

    def __len__(self) -> int:
        return len(self._ops)


def _as_operation(obj) -> Operation:
    if hasattr(obj, "_as_graph_element") and not isinstance(obj, (Tensor, Operation)):
        obj = obj._as_graph_element()
    if hasattr(obj, "_colocation_op"):
        return obj._colocation_op
    if isinstance(obj, Tensor):
        return obj._op
    if isinstance(obj, Operation):
        return obj
    raise TypeError(f"Expected an Operation, Tensor or Variable to colocate with, got {obj!r}")


# --- default graph and default session ------------------------------------------------------------------------
class _DefaultStacks(threading.local):
    def __init__(self):
        self.graphs: list[Graph] = []
        self.sessions: list = []


_stacks = _DefaultStacks()
_global_default_graph: Graph | None = None


def _graph_stack() -> list:
    return _stacks.graphs


def get_default_graph() -> Graph:
    """The innermost graph of `as_default()` blocks, else the global default graph."""
    global _global_default_graph
    if _stacks.graphs:
        return _stacks.graphs[-1]
    if _global_default_graph is None:
        _global_default_graph = Graph()
    return _global_default_graph


def reset_default_graph() -> None:
    """Replace the global default graph with a new, empty one (tf.reset_default_graph)."""
    global _global_default_graph
    if _stacks.graphs:
        raise AssertionError("Do not use tf.reset_default_graph() to clear nested graphs. If you need a cleared "
                             "graph, exit the nesting and create a new graph.")
    _global_default_graph = Graph()


def get_default_session():
    """The innermost session of `as_default()` blocks, or None."""
    return _stacks.sessions[-1] if _stacks.sessions else None


@contextlib.contextmanager
def default_session(session):
    _stacks.sessions.append(session)
    try:
        yield session
    finally:
        _stacks.sessions.remove(session)


def _session_for(graph: Graph, session, what: str):
    session = session or get_default_session()
    if session is None:
        raise ValueError(f"Cannot {what} using `eval()`/`run()`: No default session is registered. Use "
                         "`with sess.as_default()` or pass an explicit session to `eval(session=sess)`")
    if session.graph is not graph:
        raise ValueError(f"Cannot use the given session to {what}: the element's graph is different from the "
                         "session's graph.")
    return session


# --- conversion ---------------------------------------------------------------------------------------------
_conversion_functions: list[tuple[int, type, Callable]] = []


def register_tensor_conversion_function(base_type, conversion_func: Callable, priority: int = 100) -> None:
    """Register `conversion_func(value, dtype=None, name=None, as_ref=False) -> Tensor` for `base_type`; lower
    `priority` values are tried first, as in TF."""
    _conversion_functions.append((priority, base_type, conversion_func))
    _conversion_functions.sort(key=lambda entry: entry[0])


def convert_to_tensor(value, dtype=None, name: str | None = None, preferred_dtype=None, as_ref: bool = False) -> Tensor:
    """Convert a Tensor, Variable, NumPy array or Python value to a Tensor (new Const ops for constants)."""
    dtype = None if dtype is None else _dtypes.as_dtype(dtype)
    if isinstance(value, Tensor):
        if dtype is not None and not dtype.is_compatible_with(value._dtype):
            raise ValueError(f"Tensor conversion requested dtype {dtype.name} for Tensor with dtype "
                             f"{value._dtype.name}: {value!r}")
        return value
    for _, base_type, fn in _conversion_functions:
        if isinstance(value, base_type):
            if dtype is None and preferred_dtype is not None:
                try:
                    return fn(value, dtype=_dtypes.as_dtype(preferred_dtype), name=name, as_ref=as_ref)
                except (TypeError, ValueError):
                    pass
            return fn(value, dtype=dtype, name=name, as_ref=as_ref)
    raise TypeError(f"Failed to convert object of type {type(value)} to Tensor. Contents: {value!r}.")


def graph_of(values) -> Graph:
    """The graph of the first Tensor/Operation/Variable in `values`, else the default graph."""
    for v in values or ():
        graph = getattr(v, "graph", None)
        if isinstance(graph, Graph):
            return graph
    return get_default_graph()


@contextlib.contextmanager
def name_scope(name: str | None, default_name: str | None = None, values=None):
    """tf.name_scope(name, default_name=None, values=None): a scope in the graph of `values` (made the default)."""
    graph = graph_of(values)
    if graph is get_default_graph():
        with graph.name_scope(default_name if name is None else name) as scope:
            yield scope
    else:
        with graph.as_default(), graph.name_scope(default_name if name is None else name) as scope:
            yield scope


def device(device_name_or_function):
    """tf.device on the default graph: string, DeviceSpec, function of the op, or None."""
    return get_default_graph().device(device_name_or_function)


def colocate_with(op, ignore_existing: bool = False):
    """Put ops created in this block on whatever device `op` ends up on.

    Keeps a variable's assign and read ops next to it, so a step never copies a variable.

        with tf.colocate_with(v):
            inc = tf.assign_add(v, 1)     # placed where v is placed
    """
    return get_default_graph().colocate_with(op, ignore_existing)


def control_dependencies(control_inputs):
    """tf.control_dependencies on the default graph: only ops created in the block wait for `control_inputs`."""
    return get_default_graph().control_dependencies(control_inputs)


def add_to_collection(name: str, value) -> None:
    get_default_graph().add_to_collection(name, value)


def add_to_collections(names, value) -> None:
    get_default_graph().add_to_collections(names, value)


def get_collection(key: str, scope: str | None = None) -> list:
    return get_default_graph().get_collection(key, scope)


def get_collection_ref(key: str) -> list:
    return get_default_graph().get_collection_ref(key)


def get_seed(op_seed):
    """(graph seed, op seed) for a random op, TF's rules: both None means nondeterministic."""
    graph = get_default_graph()
    if graph.seed is not None:
        return graph.seed, (len(graph._ops) if op_seed is None else op_seed)
    if op_seed is not None:
        return 87654321, op_seed
    return None, None


def set_random_seed(seed: int) -> None:
    """Graph-level seed: with it, every random op gets a reproducible stream (tf.set_random_seed)."""
    get_default_graph().seed = seed

