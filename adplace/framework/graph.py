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

from adplace.framework.build_stacks import BuildStacks, ControlDependencies, DeviceEntry, ThreadState
from adplace.framework.device_spec import DeviceSpecV2
from adplace.framework.dtypes import as_dtype
from adplace.framework.operation import Operation, Tensor
from adplace.framework.registry import get_op_def

_log = logging.getLogger("adplace")
_VALID_OP_NAME = re.compile(r"^[A-Za-z0-9.][A-Za-z0-9_.\\/>-]*$")
_VALID_SCOPE_NAME = re.compile(r"^[A-Za-z0-9_.\\/>-]*$")


class GraphKeys:
    """Standard collection names (tf.GraphKeys), TF 1.15's names and values."""

    GLOBAL_VARIABLES = "variables"
    VARIABLES = GLOBAL_VARIABLES
    LOCAL_VARIABLES = "local_variables"
    METRIC_VARIABLES = "metric_variables"
    MODEL_VARIABLES = "model_variables"
    TRAINABLE_VARIABLES = "trainable_variables"
    TRAINABLE_RESOURCE_VARIABLES = "trainable_resource_variables"
    MOVING_AVERAGE_VARIABLES = "moving_average_variables"
    CONCATENATED_VARIABLES = "concatenated_variables"
    UPDATE_OPS = "update_ops"
    SUMMARIES = "summaries"
    QUEUE_RUNNERS = "queue_runners"
    TABLE_INITIALIZERS = "table_initializer"
    ASSET_FILEPATHS = "asset_filepaths"
    RESOURCES = "resources"
    LOCAL_RESOURCES = "local_resources"
    SAVEABLE_OBJECTS = "saveable_objects"
    LOSSES = "losses"
    REGULARIZATION_LOSSES = "regularization_losses"
    GLOBAL_STEP = "global_step"
    EVAL_STEP = "eval_step"
    INIT_OP = "init_op"
    LOCAL_INIT_OP = "local_init_op"
    READY_OP = "ready_op"
    READY_FOR_LOCAL_INIT_OP = "ready_for_local_init_op"
    SUMMARY_OP = "summary_op"
    TRAIN_OP = "train_op"
    SAVERS = "savers"
    WEIGHTS = "weights"
    BIASES = "biases"
    ACTIVATIONS = "activations"
    COND_CONTEXT = "cond_context"
    WHILE_CONTEXT = "while_context"
    _SUMMARY_COLLECTION = "_SUMMARY_V2"
    _STREAMING_MODEL_PORTS = "streaming_model_ports"
    _VARIABLE_COLLECTIONS = [GLOBAL_VARIABLES, LOCAL_VARIABLES, METRIC_VARIABLES, MODEL_VARIABLES,
                             TRAINABLE_VARIABLES, MOVING_AVERAGE_VARIABLES, CONCATENATED_VARIABLES,
                             TRAINABLE_RESOURCE_VARIABLES]


class Graph:
    """A TF1 dataflow graph: ops in creation order (a valid topological order), names, collections, build stacks."""

    def __init__(self):
        self._ops: list[Operation] = []
        self._ops_by_name: dict[str, Operation] = {}
        self._names_in_use: dict[str, int] = {}
        self._collections: dict[str, list] = {}
        self._state = ThreadState()
        self._shared_stacks = BuildStacks()
        self._stacks_are_thread_local = False
        self._finalized = False
        self.seed = None
        self._warned_colocation = False
        self._lock = threading.RLock()
        self._unfeedable_tensors: set[Tensor] = set()
        self._unfetchable_ops: set[Operation] = set()
        self._container = ""
        self._variable_creator_stack: tuple = ()  # variable_creator_scope's creators, innermost last
        self._functions: dict = {}  # name -> framework.function_graph.DefinedFunction (the graph's library)

    # --- build stacks ----------------------------------------------------------------------------------------
    @property
    def _stacks(self) -> BuildStacks:
        """The device/colocation/control stacks in effect for the calling thread."""
        if not self._stacks_are_thread_local:
            return self._shared_stacks
        state = self._state
        if state.stacks is None:  # a thread's first use after the switch starts from the shared stacks
            state.stacks = BuildStacks(self._shared_stacks)
        return state.stacks

    def _get_control_flow_context(self):
        """The cond branch or while body being built (TF's private Graph API); None outside control flow."""
        return self._stacks.control_flow_context

    def _set_control_flow_context(self, context) -> None:
        self._stacks.control_flow_context = context

    def switch_to_thread_local(self) -> None:
        """Make the device, colocation and control-dependency stacks thread-local (TF's
        Graph.switch_to_thread_local): each thread starts from the stacks as they were at the switch and
        its own blocks no longer affect other threads. Name scopes are always per thread."""
        self._stacks_are_thread_local = True

    # --- building --------------------------------------------------------------------------------------------
    def create_op(self, op_type: str, inputs, dtypes=None, input_types=None, name: str | None = None,
                  attrs: dict | None = None, op_def=None, compute_shapes: bool = True,
                  compute_device: bool = True) -> Operation:
        """Create an op of a registered type (tf.Graph.create_op, TF's signature).

        `attrs` are Python values keyed by attr name. `dtypes`, when given, must match the inferred output
        dtypes; `input_types`, when given, must be compatible with the inputs' dtypes (TypeError otherwise).
        `op_def` and `compute_shapes` are accepted for compatibility: the registry gives the op's definition
        and shapes are always inferred. `compute_device=False` skips the device scopes and functions.

            op = g.create_op("Identity", [x], name="copy")   # op.name == "copy", op.outputs[0].dtype == x.dtype
        """
        del op_def, compute_shapes
        inputs = list(inputs)
        for idx, a in enumerate(inputs):
            if not isinstance(a, Tensor):
                raise TypeError(f"Input #{idx} is not a tensor: {a}")
        return self._create_op_internal(op_type, inputs, attrs, name, compute_device=compute_device,
                                        output_dtypes=dtypes, input_types=input_types)

    def _create_op_internal(self, op_type: str, inputs: Iterable, attrs: dict | None = None,
                            name: str | None = None, *, compute_device: bool = True, output_dtypes=None,
                            input_types=None) -> Operation:
        """Create an op of a registered type: infer outputs, apply name scope, control deps, colocation, devices.

        The path op constructors take (ops/op_builder.apply_op). An op with a reference input (Assign,
        AssignAdd, Apply*) is built inside `colocate_with(its ref inputs)`, as TF's op_def_library does: device
        scopes and functions are ignored and it takes its variable's device and `_class`. The op joins the graph
        only once complete: if inference or a device function raises, the graph (ops, names) is as it was, and
        threads placing or running the graph meanwhile never see a half-built op.
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
        if isinstance(name, bytes):  # TF accepts bytes names and stores text (op.name is always str)
            name = name.decode()
        checks = (output_dtypes, input_types)
        context = self._stacks.control_flow_context
        given = inputs
        if context is not None:  # values from outside a cond branch or loop body come in through Switch/Enter ops
            inputs = context.enter_inputs(inputs)
        with self._lock:
            claimed: list = []  # name-counter entries to give back if the op is not built
            try:
                op = self._new_op(op_type, op_def, inputs, attrs, name, claimed, compute_device, checks)
                for t in given:  # a loop's tensor read outside its loop: its context says so (TF's ValueError)
                    source = t._op._control_flow_context
                    if source is not None and source is not context:
                        source.check_use(t, op, context)
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
            for controller in self._stacks.control_stack:
                controller.seen_ids.add(id(op))
            self._ops_by_name[op._name] = op
            self._ops.append(op)  # last: placement in other threads reads the op list without the lock
        if context is not None:
            context.added(op)
        return op

    def _new_op(self, op_type: str, op_def, inputs: tuple, attrs: dict, name: str | None, claimed: list,
                compute_device: bool = True, checks: tuple = (None, None)) -> Operation:
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
            name = self._unique_name(op_type if name is None else name, True, claimed)  # "" is invalid, as in TF
        if not _VALID_OP_NAME.match(name):
            raise ValueError(f"'{name}' is not a valid node name")
        output_dtypes, input_types = checks
        if input_types is not None:
            _check_input_types(name, inputs, input_types)
        output_specs = op_def.infer(inputs, attrs, name)
        if output_dtypes is not None:
            _check_output_dtypes(name, op_type, output_specs, output_dtypes)
        stacks = self._stacks
        control_inputs = self._control_inputs_for(inputs, stacks) if stacks.control_stack else []
        op = Operation(self, op_type, name, inputs, attrs, control_inputs, output_specs, op_def)
        op._control_flow_context = stacks.control_flow_context
        override = self._state.gradient_override_map.get(op_type)
        if override is not None:
            op._attrs = {**op._attrs, "_gradient_op_type": override}
        if self._container and op_def.is_stateful and op._attrs.get("container") == "":
            op._attrs = {**op._attrs, "container": self._container}
        device_stack, colocation_stack = stacks.device_stack if compute_device else [], stacks.colocation_stack
        if op_def.ref_inputs:  # TF's _MaybeColocateWith(ref inputs): colocate_with clears the device stack
            device_stack = []
            colocation_stack = colocation_stack + [inputs[i]._op for i in op_def.ref_inputs if i < len(inputs)]
        if device_stack:
            self._apply_device_functions(op, device_stack)
        if colocation_stack:
            self._apply_colocation(op, colocation_stack)
        return op

    def _control_inputs_for(self, inputs: tuple, stacks: BuildStacks) -> list:
        input_ops = [t._op for t in inputs]
        ret = []
        for controller in stacks.control_stack:
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
            if result is not None and not isinstance(result, (str, DeviceSpecV2)):
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
        """`name` under the current name scope, made unique with _1, _2 suffixes (tf.Graph.unique_name).

        Names are compared case-insensitively, as TF does, and keep the case they were given. With
        `mark_as_used=False` the name is only reported, not reserved.

            g.unique_name("foo")   # "foo"; again: "foo_1"; then g.unique_name("FOO") is "FOO_2"
        """
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
        """The current name scope without a trailing slash ("" at the top level)."""
        return self._state.name_stack

    @contextlib.contextmanager
    def gradient_override_map(self, op_type_map: dict):
        """Ops of the mapped types created in the block use the gradient registered under the mapped name
        (tf.Graph.gradient_override_map); the name is kept in the op's "_gradient_op_type" attr, as in TF.

            @tf.RegisterGradient("CustomSquare")
            def _custom_square_grad(op, grad): ...
            with g.gradient_override_map({"Square": "CustomSquare"}):
                s = tf.square(x)          # tf.gradients(s, x) calls _custom_square_grad
        """
        if not isinstance(op_type_map, dict) or not all(
                isinstance(k, str) and isinstance(v, str) for k, v in op_type_map.items()):
            raise TypeError("op_type_map must be a dictionary mapping strings to strings")
        state = self._state
        saved = state.gradient_override_map
        state.gradient_override_map = {**saved, **op_type_map}
        try:
            yield
        finally:
            state.gradient_override_map = saved

    @contextlib.contextmanager
    def _original_op(self, op: Operation):
        """Ops created in the block record `op` as their `_original_op` (TF: the forward op of a gradient)."""
        state = self._state
        saved, state.original_op = state.original_op, op
        try:
            yield
        finally:
            state.original_op = saved

    @contextlib.contextmanager
    def name_scope(self, name: str | None):
        """Push a name scope; yields the scope with a trailing '/' (tf.Graph.name_scope).

        '' or None resets to the top level (yields ""); a name ending in '/' is an existing scope, entered as is;
        any other name is made unique. At the top level a name must start with a letter, digit or '.'.

            with g.name_scope("a") as scope:   # scope == "a/"; a second "a" block gives "a_1/"
        """
        if isinstance(name, bytes):
            name = name.decode()
        if name:
            pattern = _VALID_SCOPE_NAME if self._state.name_stack else _VALID_OP_NAME
            if not pattern.match(name):
                raise ValueError(f"'{name}' is not a valid scope name")
        state = self._state
        old = state.name_stack
        if not name:
            new_stack = ""
            scope = ""
        elif name[-1] == "/":
            new_stack = name[:-1]
            scope = name
        else:
            new_stack = self.unique_name(name)
            scope = new_stack + "/"
        state.name_stack = new_stack
        try:
            yield scope
        finally:
            state.name_stack = old

    @contextlib.contextmanager
    def device(self, device_name_or_function):
        """Requested device for ops created in the block: a string, DeviceSpec, function of the op, or None."""
        entry = DeviceEntry(device_name_or_function)
        stacks = self._stacks
        stacks.device_stack = stacks.device_stack + [entry]  # a new list: stacks copied by other threads keep theirs
        try:
            yield
        finally:
            stacks = self._stacks
            if not stacks.device_stack or stacks.device_stack[-1] is not entry:
                raise RuntimeError("Exiting device scope without proper scope nesting.")
            stacks.device_stack = stacks.device_stack[:-1]

    @contextlib.contextmanager
    def colocate_with(self, op, ignore_existing: bool = False):
        """Colocate ops created in the block with `op`; device scopes outside the block are ignored inside it."""
        if op is None and not ignore_existing:
            raise ValueError("Trying to reset colocation (op is None) but ignore_existing is not True")
        op = _as_operation(op) if op is not None else None
        if op is not None and op._graph is not self:
            raise ValueError(f"colocate_with: op '{op.name}' is from another graph than the one being built; build "
                             f"the block in op.graph (with op.graph.as_default()).")
        stacks = self._stacks
        saved_devices, saved_colocation = stacks.device_stack, stacks.colocation_stack
        stacks.device_stack = []
        if ignore_existing:
            stacks.colocation_stack = []
        if op is not None:
            stacks.colocation_stack = stacks.colocation_stack + [op]
        try:
            yield
        finally:
            stacks = self._stacks
            stacks.device_stack, stacks.colocation_stack = saved_devices, saved_colocation

    def control_dependencies(self, control_inputs) -> ControlDependencies:
        """Ops created in the block run after `control_inputs` (Operations or Tensors); None clears outer blocks."""
        if control_inputs is None:
            return ControlDependencies(self, None)
        ops = []
        current = {id(c) for controller in self._stacks.control_stack for c in controller.control_inputs}
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
        return ControlDependencies(self, ops)

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
        """Resolve a Tensor, Operation, Variable or name ("op", "op:0") to an element of this graph.

        Raises TF's errors: TypeError for an object of the wrong kind, ValueError for a malformed name or an
        element of another graph, KeyError for a well-formed name that is not in the graph.
        """
        if allow_tensor and allow_operation:
            types_str = "Tensor or Operation"
        elif allow_tensor:
            types_str = "Tensor"
        elif allow_operation:
            types_str = "Operation"
        else:
            raise ValueError("allow_tensor and allow_operation can't both be False.")
        converter = getattr(obj, "_as_graph_element", None)
        if converter is not None and callable(converter) and not isinstance(obj, (Tensor, Operation)):
            obj = converter()
        if isinstance(obj, bytes):
            obj = obj.decode()
        if isinstance(obj, str):
            return self._element_by_name(obj, allow_tensor, allow_operation, types_str)
        if isinstance(obj, Tensor) and allow_tensor:
            if obj.graph is not self:
                raise ValueError(f"Tensor {obj} is not an element of this graph.")
            return obj
        if isinstance(obj, Operation) and allow_operation:
            if obj.graph is not self:
                raise ValueError(f"Operation {obj} is not an element of this graph.")
            return obj
        raise TypeError(f"Can not convert a {type(obj).__name__} into a {types_str}.")

    def _element_by_name(self, name: str, allow_tensor: bool, allow_operation: bool, types_str: str):
        if ":" in name and allow_tensor:
            try:
                op_name, out_n = name.split(":")
                out_n = int(out_n)
            except ValueError:
                raise ValueError(f"The name {name!r} looks a like a Tensor name, but is not a valid one. Tensor "
                                 "names must be of the form \"<op_name>:<output_index>\".") from None
            if op_name not in self._ops_by_name:
                raise KeyError(f"The name {name!r} refers to a Tensor which does not exist. The operation, "
                               f"{op_name!r}, does not exist in the graph.")
            outputs = self._ops_by_name[op_name]._outputs
            try:
                return outputs[out_n]
            except IndexError:
                raise KeyError(f"The name {name!r} refers to a Tensor which does not exist. The operation, "
                               f"{op_name!r}, exists but only has {len(outputs)} outputs.") from None
        if ":" in name:
            raise ValueError(f"Name {name!r} appears to refer to a Tensor, not a {types_str}.")
        if allow_operation:
            if name not in self._ops_by_name:
                raise KeyError(f"The name {name!r} refers to an Operation not in the graph.")
            return self._ops_by_name[name]
        if name in self._ops_by_name:
            message = f"The name {name!r} refers to an Operation, not a {types_str}."
        else:
            message = f"The name {name!r} looks like an (invalid) Operation name, not a {types_str}."
        raise ValueError(message + " Tensor names must be of the form \"<op_name>:<output_index>\".")

    # --- collections -----------------------------------------------------------------------------------------
    def add_to_collection(self, name: str, value) -> None:
        """Append `value` to collection `name` (RuntimeError on a finalized graph, as in TF)."""
        self._check_not_finalized()
        with self._lock:
            self._collections.setdefault(name, []).append(value)

    def add_to_collections(self, names, value) -> None:
        for name in ([names] if isinstance(names, str) else set(names)):
            self.add_to_collection(name, value)

    def get_collection_ref(self, name: str) -> list:
        """The live list of collection `name`, created empty if new."""
        with self._lock:
            return self._collections.setdefault(name, [])

    def get_collection(self, name: str, scope: str | None = None) -> list:
        """A copy of a collection, optionally filtered to items whose name matches `scope` (re.match)."""
        with self._lock:
            items = list(self._collections.get(name, ()))
        if scope is None:
            return items
        pattern = re.compile(scope)
        return [item for item in items if isinstance(getattr(item, "name", None), str) and pattern.match(item.name)]

    @property
    def collections(self) -> list:
        """The names of the collections known to this graph, empty ones included."""
        return list(self._collections)

    def get_all_collection_keys(self) -> list[str]:
        """The string-named collections of this graph (TF leaves out tuple-keyed internal stores)."""
        with self._lock:
            return [key for key in self._collections if isinstance(key, str)]

    def clear_collection(self, name: str) -> None:
        """Forget collection `name` (RuntimeError on a finalized graph)."""
        self._check_not_finalized()
        with self._lock:
            self._collections.pop(name, None)

    # --- feeding and fetching ---------------------------------------------------------------------------------
    def prevent_feeding(self, tensor: Tensor) -> None:
        """Mark `tensor` as not feedable: Session.run rejects it as a feed_dict key."""
        self._unfeedable_tensors.add(tensor)

    def is_feedable(self, tensor: Tensor) -> bool:
        """Whether `tensor` may be fed (True unless `prevent_feeding` was called on it)."""
        return tensor not in self._unfeedable_tensors

    def prevent_fetching(self, op: Operation) -> None:
        """Mark `op` (and so all its outputs) as not fetchable by Session.run."""
        self._unfetchable_ops.add(op)

    def is_fetchable(self, tensor_or_op) -> bool:
        """Whether a Tensor (judged by its op) or an Operation may be fetched."""
        op = tensor_or_op._op if isinstance(tensor_or_op, Tensor) else tensor_or_op
        return op not in self._unfetchable_ops

    # --- misc ------------------------------------------------------------------------------------------------
    @contextlib.contextmanager
    def container(self, container_name: str):
        """Stateful ops created inside (variables) get `container_name` as their resource container (TF's
        `Graph.container`); adplace keeps every variable in its session, so the name is recorded, not used."""
        original, self._container = self._container, container_name
        try:
            yield self._container
        finally:
            self._container = original

    def finalize(self) -> None:
        """Make the graph read-only: creating ops or changing collections raises RuntimeError from now on."""
        self._finalized = True

    def _unsafe_unfinalize(self) -> None:
        """Make a finalized graph writable again (TF's private escape hatch, used by MonitoredSession to undo
        Scaffold.finalize; unsafe while other threads rely on the graph not changing)."""
        self._finalized = False

    def _check_not_finalized(self) -> None:
        if self._finalized:
            raise RuntimeError("Graph is finalized and cannot be modified.")

    # --- GraphDef ---------------------------------------------------------------------------------------------
    def as_graph_def(self, from_version: int | None = None, add_shapes: bool = False):
        """This graph as TF's GraphDef proto (tf.Graph.as_graph_def); see graph_io.graph_to_graph_def."""
        from adplace.framework.graph_io import graph_to_graph_def
        return graph_to_graph_def(self, from_version, add_shapes)

    @property
    def graph_def_versions(self):
        """The VersionDef written into this graph's GraphDefs (producer and min_consumer)."""
        from adplace.framework.graph_io import versions
        return versions()

    def _checkpoint(self) -> tuple:
        """What `_roll_back` needs to undo every op added from now on (all-or-nothing imports)."""
        return len(self._ops), dict(self._names_in_use)

    def _roll_back(self, checkpoint: tuple) -> None:
        """Remove the ops added since `checkpoint` and restore the names in use, as if they were never built."""
        count, names_in_use = checkpoint
        with self._lock:
            added = self._ops[count:]
            gone = {id(op) for op in added}
            for op in added:
                for t in op._inputs:
                    t._op._consumers[:] = [c for c in t._op._consumers if id(c) not in gone]
                for c in op._control_inputs:
                    c._control_outputs[:] = [o for o in c._control_outputs if id(o) not in gone]
                self._ops_by_name.pop(op._name, None)
            del self._ops[count:]
            self._names_in_use.clear()
            self._names_in_use.update(names_in_use)

    finalized = property(lambda self: self._finalized, doc="True once finalize() was called.")
    version = property(lambda self: len(self._ops), doc="Grows by one with each op added to the graph.")
    building_function = property(lambda self: False, doc="False: not a function's body (a FuncGraph is).")

    def _add_function(self, function) -> None:
        """Register a traced function (framework/function_graph.py) in this graph's library, by its unique name."""
        self._check_not_finalized()
        self._functions[function.name] = function

    def _is_function(self, name: str) -> bool:
        return name in self._functions

    def _get_function(self, name: str):
        return self._functions.get(name)

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

    def __bool__(self) -> bool:
        """Always true, as in TF (whose Graph has no __len__): `graph or tf.get_default_graph()` must keep an
        empty graph."""
        return True


def _check_input_types(name: str, inputs: tuple, input_types) -> None:
    """create_op(input_types=...): each given type must be compatible with its input's dtype (TF's check)."""
    from_inputs = [t._dtype for t in inputs]
    expected = [as_dtype(x) for x in input_types]
    if len(expected) != len(inputs) or not all(x.is_compatible_with(d) for d, x in zip(from_inputs, expected)):
        raise TypeError(f"In op '{name}', input types ({from_inputs}) are not compatible with expected types "
                        f"({expected})")


def _check_output_dtypes(name: str, op_type: str, output_specs: list, dtypes) -> None:
    """create_op(dtypes=...): the requested output dtypes must be the ones the op's type produces."""
    inferred = [dtype for dtype, _ in output_specs]
    requested = [as_dtype(d) for d in dtypes]
    if [d.base_dtype for d in requested] != [d.base_dtype for d in inferred]:
        raise TypeError(f"create_op: op '{name}' ({op_type}) outputs {[d.name for d in inferred]}, but dtypes="
                        f"{[d.name for d in requested]} was requested. Pass dtypes=None to use the inferred ones.")


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
