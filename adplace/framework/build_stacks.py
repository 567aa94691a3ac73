"""What a Graph keeps while it is being built: the device, colocation and control-dependency stacks, the control-flow
context, and the per-thread name scope. TF shares the stacks between threads until `Graph.switch_to_thread_local()`."""
from __future__ import annotations

import threading
from typing import TYPE_CHECKING

from adplace.framework.device_spec import DeviceSpec, DeviceSpecV2, canonical_name, merge_device
from adplace.framework.operation import Operation

if TYPE_CHECKING:
    from adplace.framework.graph import Graph


class DeviceEntry:
    """One device-stack entry: a merge function (strings, DeviceSpecs), a user function, or None (stop)."""

    __slots__ = ("function", "is_null_merge", "is_user_function")

    def __init__(self, device):
        self.is_user_function = callable(device) and not isinstance(device, (str, DeviceSpecV2))
        spec_text = canonical_name(device) if isinstance(device, (str, DeviceSpecV2)) else None
        self.is_null_merge = spec_text == ""
        if device is None:
            self.function = None
        elif self.is_user_function:
            self.function = device
        elif isinstance(device, (str, DeviceSpecV2)):
            self.function = merge_device(DeviceSpec.from_string(spec_text))
        else:
            raise TypeError(f"tf.device() takes a string, a DeviceSpec, a function or None; got {device!r}")


class ControlDependencies:
    """One `control_dependencies` block: its control inputs and the ops created inside it."""

    def __init__(self, graph: "Graph", control_inputs: list | None):
        self._graph = graph
        self.control_inputs = [] if control_inputs is None else control_inputs
        self.new_stack = control_inputs is None
        self.seen_ids: set[int] = set()
        self._saved = None

    def __enter__(self):
        stacks = self._graph._stacks
        if self.new_stack:  # `control_dependencies(None)` also leaves any cond branch or loop body, as in TF
            self._saved = (stacks.control_stack, stacks.control_flow_context)
            stacks.control_stack, stacks.control_flow_context = [], None
        stacks.control_stack.append(self)
        return self

    def __exit__(self, *exc):
        stacks = self._graph._stacks
        stacks.control_stack.pop()
        if self.new_stack:
            stacks.control_stack, stacks.control_flow_context = self._saved
        return False


class BuildStacks:
    """The device, colocation and control-dependency stacks: one set per graph, or per thread after
    `Graph.switch_to_thread_local()` (TF's default shares them between threads)."""

    __slots__ = ("device_stack", "colocation_stack", "control_stack", "control_flow_context")

    def __init__(self, source: "BuildStacks | None" = None):
        self.device_stack: list[DeviceEntry] = list(source.device_stack) if source else []
        self.colocation_stack: list[Operation] = list(source.colocation_stack) if source else []
        self.control_stack: list[ControlDependencies] = list(source.control_stack) if source else []
        # the cond branch or while body being built (ops/control_flow_contexts.py); None outside control flow
        self.control_flow_context = source.control_flow_context if source else None


class ThreadState(threading.local):
    """Per thread: the name scope (always thread-local in TF) and, once switched, the thread's own stacks."""

    def __init__(self):
        self.name_stack = ""
        self.stacks: BuildStacks | None = None
        self.original_op = None  # the forward op whose gradient is being built (Graph._original_op)
        self.gradient_override_map: dict[str, str] = {}  # op type -> gradient registered under another name
