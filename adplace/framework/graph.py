"""Graph: ops in creation order, unique scoped names, collections, and the stacks used while building it.

    g = Graph()
    with g.as_default(), g.name_scope("tower_0"), g.device("/gpu:1"):
        op = g.create_op("NoOp", [], name="sync")   # op.name == "tower_0/sync", op.device == "/device:GPU:1"
"""
from __future__ import annotations

import contextlib
import logging
import re
import threading
from typing import Iterable

from adplace.framework.device_spec import DeviceSpec, canonical_name, merge_device
from adplace.framework.operation import Operation, Tensor
from adplace.framework.registry import get_op_def

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
        """Create an op of a registered type: infer outputs, apply name scope, control deps, colocation, devices.

        An op with a reference input (Assign, AssignAdd, Apply*) is built inside `colocate_with(its ref inputs)`, as
        TF's op_def_library does: device scopes and functions are ignored and it takes its variable's device and
        `_class`. The op joins the graph only once complete: if inference or a device function raises, the graph
        (ops, names) is as it was, and threads placing or running the graph meanwhile never see a half-built op.
        """
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
            claimed: list = []  # name-counter entries to give back if the op is not built
            try:
                op = self._new_op(op_type, op_def, inputs, attrs, name, claimed)
            except BaseException:
                for key, previous in reversed(claimed):
                    if previous is None:
                        self._names_in_use.pop(key, None)
                    else:
                        self._names_in_use[key] = previous
                raise
            op._id = len(self._ops)  # ids are assigned under the lock: readers compare them to their snapshot
            for t in inputs:
                t._op._consumers.append(op)
            for c in op._control_inputs:
                c._control_outputs.append(op)
            for controller in self._state.control_stack:
                controller.seen_ids.add(id(op))
            self._ops_by_name[op._name] = op
            self._ops.append(op)  # last: placement in other threads reads the op list without the lock
        return op

    def _new_op(self, op_type: str, op_def, inputs: tuple, attrs: dict, name: str | None, claimed: list) -> Operation:
        """The op, complete (name, outputs, control inputs, device, colocation) but not yet in the graph."""
        # A name ending in "/" is a scope made for this op (TF's `with name_scope(...) as name`): taken as is.
        if name and name[-1] == "/":
            name = name[:-1]
            if name in self._ops_by_name:
                raise ValueError(f"Duplicate node name in graph: '{name}'")
            if name.lower() not in self._names_in_use:
                claimed.append((name.lower(), None))
                self._names_in_use[name.lower()] = 1
        else:
            name = self._unique_name(name or op_type, True, claimed)
        if not _VALID_OP_NAME.match(name):
            raise ValueError(f"'{name}' is not a valid node name")
        output_specs = op_def.infer(inputs, attrs, name)
        state = self._state
        control_inputs = self._control_inputs_for(inputs, state) if state.control_stack else []
        op = Operation(self, op_type, name, inputs, attrs, control_inputs, output_specs, op_def)
        device_stack, colocation_stack = state.device_stack, state.colocation_stack
        if op_def.ref_inputs:  # TF's _MaybeColocateWith(ref inputs): colocate_with clears the device stack
            device_stack = []
            colocation_stack = colocation_stack + [inputs[i]._op for i in op_def.ref_inputs if i < len(inputs)]
        if device_stack:
            self._apply_device_functions(op, device_stack)
        if colocation_stack:
            self._apply_colocation(op, colocation_stack)
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
            if result is not None and not isinstance(result, (str, DeviceSpec)):
                raise TypeError(f"Device function {_function_name(entry.function)} returned {_short_repr(result)} "
                                f"(type {type(result).__name__}) for op '{op.name}' ({op.type}); it must return a "
                                f"device string, a DeviceSpec or None (such as '/device:GPU:0'). The op was not "
                                f"added to the graph.")
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
                op._set_device(coloc_op._device_text)
            elif op._device != coloc_op._device and not self._warned_colocation:
                self._warned_colocation = True
                _log.warning("Tried to colocate op '%s' having device '%s' with op '%s' which had an incompatible "
                             "device '%s'. The placer will try to reconcile them (soft placement relaxes the "
                             "conflict); further conflicts in this graph are not reported.", op.name, op._device,
                             coloc_op.name, coloc_op._device)
        op._colocation = tuple(sorted(groups))

    def unique_name(self, name: str, mark_as_used: bool = True) -> str:
        """Scoped name made unique with _1, _2 suffixes (case-insensitively, as TF does)."""
        with self._lock:
            return self._unique_name(name, mark_as_used, [])

    def _unique_name(self, name: str, mark_as_used: bool, claimed: list) -> str:
        """unique_name, recording in `claimed` each (key, previous count or None) it changes."""
        name_stack = self._state.name_stack
        if name_stack:
            name = name_stack + "/" + name
        names_in_use = self._names_in_use
        name_key = name.lower()
        i = names_in_use.get(name_key, 0)
        if mark_as_used:
            claimed.append((name_key, i or None))
            names_in_use[name_key] = i + 1
        if i > 0:
            base_name_key = name_key
            while name_key in names_in_use:
                name_key = f"{base_name_key}_{i}"
                i += 1
            if mark_as_used:
                claimed.append((name_key, None))
                names_in_use[name_key] = 1
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
        if op is not None and op._graph is not self:
            raise ValueError(f"colocate_with: op '{op.name}' is from another graph than the one being built; build "
                             f"the block in op.graph (with op.graph.as_default()).")
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


def _function_name(function) -> str:
    name = getattr(function, "__qualname__", None) or getattr(function, "__name__", None)
    return repr(name) if name else _short_repr(function)


def _short_repr(value, limit: int = 120) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[:limit] + "..."


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


# --- the default graph ------------------------------------------------------------------------------------------
class _GraphStack(threading.local):
    def __init__(self):
        self.graphs: list[Graph] = []


_stack = _GraphStack()
_global_default_graph: Graph | None = None


def _graph_stack() -> list:
    return _stack.graphs


def get_default_graph() -> Graph:
    """The innermost graph of `as_default()` blocks, else the global default graph."""
    global _global_default_graph
    if _stack.graphs:
        return _stack.graphs[-1]
    if _global_default_graph is None:
        _global_default_graph = Graph()
    return _global_default_graph


def reset_default_graph() -> None:
    """Replace the global default graph with a new, empty one (tf.reset_default_graph)."""
    global _global_default_graph
    if _stack.graphs:
        raise AssertionError("Do not use tf.reset_default_graph() to clear nested graphs. If you need a cleared "
                             "graph, exit the nesting and create a new graph.")
    _global_default_graph = Graph()
