"""The placer: picks a device for every op of a graph, as TF's placer does, in time linear in the graph.

1. Colocation groups by union-find over `_class` constraints and reference edges (a variable and its Assign ops).
2. Per group: merge the requested devices, intersect the device types with a kernel for every member's dtype.
3. Pick: the first matching, supported device by (type priority GPU > CPU, name). A missing device or a type with no
   kernel raises InvalidArgumentError naming the op, the request and the devices, unless soft placement is on; then
   the op falls back (same type any index, then any type) and the log says so.
4. Generators (no inputs, one output, e.g. a Const) go to their consumers' device when they all agree (TF's
   heuristic A), so a constant feeding a GPU op does not cost a transfer; Shape/Size/Rank stay on their input's
   device (heuristic B).

Placement never changes `op.device`; the result lives in the session's PlacementTable.
"""
from __future__ import annotations

import logging
import sys

from adplace.devices import DEVICE_TYPE_PRIORITY, Device
from adplace.framework.device_spec import DeviceSpec
from adplace.framework.errors import InvalidArgumentError
from adplace.framework.operation import is_variable_op
from adplace.framework.registry import kernel_device_types, kernel_dtype, registered_kernels_text

_log = logging.getLogger("adplace.placement")
_METADATA_OPS = frozenset({"Shape", "Size", "Rank"})  # TF's heuristic B (tensorflow/core/graph/graph.cc)


class PlacementTable:
    """Where each op of a graph was placed, by op id; grows as the graph grows."""

    def __init__(self, devices: list[Device]):
        self.devices = devices
        self.device_by_op_id: list[Device] = []
        self.notes: dict[int, str] = {}

    def __len__(self) -> int:
        return len(self.device_by_op_id)

    def device_of(self, op) -> Device:
        return self.device_by_op_id[op._id]


class _Failure(Exception):
    """A group that could not be placed: the message detail and the op to name."""


class Placer:
    """Places the ops a graph gained since the last call, into a PlacementTable."""

    def __init__(self, table: PlacementTable, allow_soft_placement: bool = False, log_device_placement: bool = False,
                 stream=None, preferred_task: str | None = None):
        self.table = table
        self.allow_soft_placement = allow_soft_placement
        self.log_device_placement = log_device_placement
        self.stream = stream
        # A session on a cluster prefers its master task's devices for ops that name no task, as TF's master does.
        self._devices = sorted(table.devices, key=lambda d: (preferred_task is not None and d.task_name != preferred_task,
                                                             -DEVICE_TYPE_PRIORITY.get(d.device_type, 0), d.name))
        self._device_names = sorted(d.name for d in table.devices)
        self._candidates_cache: dict[tuple[str, frozenset], tuple] = {}
        self._merged_cache: dict[tuple, str] = {}

    # --- candidates -------------------------------------------------------------------------------------------
    def _candidates(self, request: str, types: frozenset) -> tuple:
        """Devices matching `request` whose type has a kernel (ordered by preference); cached per (request, types)."""
        key = (request, types)
        found = self._candidates_cache.get(key)
        if found is None:
            spec = DeviceSpec.from_string(request)
            found = tuple(d for d in self._devices if d.device_type in types and _matches(spec, d))
            self._candidates_cache[key] = found
        return found

    def _soft_candidates(self, request: str, types: frozenset) -> tuple:
        """Soft placement: same type any index, then any type; job/replica/task stay binding."""
        spec = DeviceSpec.from_string(request)
        for relaxed in (spec.replace(device_index=None), spec.replace(device_type=None, device_index=None)):
            found = self._candidates(relaxed.to_string(), types)
            if found:
                return found
        return ()

    # --- placing ----------------------------------------------------------------------------------------------
    def place(self, graph) -> list:
        """Place every op added since the last call; returns the newly placed ops in creation order.

        Other threads may add ops meanwhile: placement covers the ops present when it starts, ignores edges to
        later ones, and the next call places those.
        """
        table = self.table
        start = len(table.device_by_op_id)
        new_ops = graph._ops[start:]  # a copy: the snapshot of this round
        if not new_ops:
            return []
        if not table.devices:
            raise InvalidArgumentError(None, None, "No devices are registered")
        placed = table.device_by_op_id
        placed.extend([None] * len(new_ops))
        try:
            self._place_new(graph, new_ops, start)
        except BaseException:
            del placed[start:]
            raise
        if self.log_device_placement:
            self._log(new_ops)
        return new_ops

    def _place_new(self, graph, new_ops: list, start: int) -> None:
        placed, notes = self.table.device_by_op_id, self.table.notes
        end = start + len(new_ops)
        groups = self._colocation_groups(graph, new_ops, end)
        deferred, metadata = [], []
        candidates_for = self._candidates
        for op in new_ops:
            if placed[op._id] is not None:
                continue
            group = groups.get(op._id)
            if group is not None:
                self._place_group(group, start)
                continue
            types = _supported_types(op)
            candidates = candidates_for(op._device, types)
            device = candidates[0] if candidates else self._fallback([op], op._device, types, notes)
            if not op._inputs and len(op._outputs) == 1 and not is_variable_op(op):
                deferred.append((op, candidates or (device,)))
            elif op._type in _METADATA_OPS:
                metadata.append((op, candidates))
            placed[op._id] = device
        for op, candidates in deferred:  # heuristic A: generators follow their consumers
            consumers = [c for c in op._consumers + op._control_outputs if c._id < end]
            target = placed[consumers[0]._id] if consumers else None
            if target is not None and target in candidates and all(placed[c._id] is target for c in consumers):
                placed[op._id] = target
        for op, candidates in metadata:  # heuristic B: Shape/Size/Rank stay with their input (no copy to read a shape)
            source = placed[op._inputs[0]._op._id]
            if source in candidates:
                placed[op._id] = source

    def _colocation_groups(self, graph, new_ops: list, end: int) -> dict[int, list]:
        """Union-find over ops with `_class` or reference inputs; maps op id -> its group's members (ops below
        `end`, the placed snapshot)."""
        parent: dict[int, int] = {}

        def find(i: int) -> int:
            root = i
            while parent.get(root, root) != root:
                root = parent[root]
            while parent.get(i, i) != root:
                parent[i], i = root, parent[i]
            return root

        def union(a: int, b: int) -> None:
            ra, rb = find(a), find(b)
            if ra != rb:
                parent[max(ra, rb)] = min(ra, rb)
                parent.setdefault(min(ra, rb), min(ra, rb))

        by_id = graph._ops
        for op in new_ops:
            if op._colocation:
                parent.setdefault(op._id, op._id)
                for group in op._colocation:
                    other = graph._ops_by_name.get(group[5:].decode())
                    if other is not None and other._id < end:
                        union(op._id, other._id)
            for i in op._op_def.ref_inputs:
                parent.setdefault(op._id, op._id)
                union(op._id, op._inputs[i]._op._id)
        members: dict[int, list] = {}
        for i in parent:
            members.setdefault(find(i), []).append(by_id[i])
        groups = {}
        for group in members.values():
            group.sort(key=lambda o: o._id)
            for op in group:
                groups[op._id] = group
        return groups

    def _place_group(self, group: list, start: int) -> None:
        placed, notes = self.table.device_by_op_id, self.table.notes
        fixed = {placed[op._id] for op in group if op._id < start}
        types = frozenset.intersection(*[_supported_types(op) for op in group])
        if not types:
            a, b = group[0], next(op for op in group if not _supported_types(op) & _supported_types(group[0]))
            raise InvalidArgumentError(None, a, f"Cannot colocate nodes {a.name} and {b.name} because no device type "
                                       f"supports both of those nodes and the other nodes colocated with them."
                                       f"{_debug_info(group)}")
        request = self._merged_request(group, start)
        if fixed:
            device = next(iter(fixed))
            request_spec = DeviceSpec.from_string(request)
            if device.device_type not in types or not _matches(request_spec, device):
                if not self.allow_soft_placement:
                    raise InvalidArgumentError(None, group[0], f"Cannot assign a device for operation "
                                               f"{group[-1].name}: it is colocated with nodes already placed on "
                                               f"{device.name}, which does not satisfy '{request}'.")
        else:
            candidates = self._candidates(request, types)
            device = candidates[0] if candidates else self._fallback(group, request, types, notes)
        for op in group:
            if op._id >= start:
                placed[op._id] = device

    def _merged_request(self, group: list, start: int) -> str:
        """Merge members' requests field by field. A variable that requested a device, or was placed by an earlier
        run, overrides the requests of the ops writing it through a reference edge (TF 3.5)."""
        owners = [op for op in group if is_variable_op(op) and (op._device or op._id < start)]
        ref_consumers = {op._id for op in group if op._op_def.ref_inputs} if owners else set()
        key = tuple((op._device, op._id in ref_consumers) for op in group if op._device)
        merged = self._merged_cache.get(key)
        if merged is None:
            merged = self._merged_cache[key] = self._merge_requests(group, ref_consumers, owners)
        return merged

    def _merge_requests(self, group: list, ref_consumers: set, owners: list) -> str:
        merged, first = DeviceSpec(), None
        for op in group:
            if not op._device:
                continue
            if op._id in ref_consumers:
                if op._device != owners[0]._device:
                    _log.debug("Ignoring device specification %s for node '%s' because the input edge from '%s' is "
                               "a reference connection and already has a device", op._device, op.name, owners[0].name)
                continue
            spec = DeviceSpec.from_string(op._device)
            conflict = _conflicting_field(merged, spec)
            if conflict:
                if not self.allow_soft_placement or conflict in ("job", "replica", "task"):
                    raise InvalidArgumentError(None, op, f"Cannot colocate nodes {first.name} and {op.name}: Cannot "
                                               f"merge devices with incompatible {conflict}s: '{merged.to_string()}' "
                                               f"and '{spec.to_string()}'{_debug_info(group)}")
                merged = merged.replace(device_type=None, device_index=None)
                spec = spec.replace(device_type=None, device_index=None)
            merged, first = merged.make_merged_spec(spec), first or op
        return merged.to_string()

    def _fallback(self, group: list, request: str, types: frozenset, notes: dict) -> Device:
        """No device satisfies `request`: soft placement picks another, else TF's InvalidArgumentError."""
        op = next((o for o in group if o._device == request), group[0])
        if self.allow_soft_placement:
            candidates = self._soft_candidates(request, types)
            if candidates:
                device = candidates[0]
                reason = self._unsatisfied_reason(request, types)
                for member in group:
                    notes[member._id] = f"soft placement: requested {request}, {reason}; placed on {device.name}"
                _log.info("%s: soft placement moved it from %s to %s (%s)", op.name, request, device.name, reason)
                return device
        raise InvalidArgumentError(None, op, self._error_message(op, group, request, types))

    def _unsatisfied_reason(self, request: str, types: frozenset) -> str:
        spec = DeviceSpec.from_string(request)
        if not any(_matches(spec, d) for d in self._devices):
            return "which does not exist"
        return f"no {spec.device_type} kernel for this op and dtype"

    def _error_message(self, op, group: list, request: str, types: frozenset) -> str:
        spec = DeviceSpec.from_string(request)
        head = f"Cannot assign a device for operation {op.name}: "
        fix = (f"\nFix: put '{op.name}' under an existing device (for example tf.device('/cpu:0')) or set "
               f"allow_soft_placement=True in the session's ConfigProto.")
        if not types:
            return (f"{head}No OpKernel was registered to support Op '{op.type}' used by {{{{node {op.name}}}}} with "
                    f"these attrs: [{_attrs_text(op)}]\nRegistered devices: [{', '.join(_device_types(self._devices))}]"
                    f"\nRegistered kernels:\n{registered_kernels_text(op.type)}")
        if not any(_matches(spec, d) for d in self._devices):
            note = ""
            tasks = sorted({(d.job, d.task) for d in self._devices})
            if tasks != [("localhost", 0)] and spec.job is not None:  # a session on a cluster
                listed = ", ".join(f"/job:{j}/task:{t}" for j, t in tasks)
                note = (f" The cluster has no task {spec.job}:{spec.task}; its tasks are {listed}." if any(
                    j == spec.job for j, _ in tasks) else f" The cluster has no job '{spec.job}'; its tasks are "
                    f"{listed}.")
                fix = "\nFix: name a job and task of the cluster's ClusterSpec."
            elif spec.job not in (None, "localhost"):  # e.g. /job:ps from tf.train.replica_device_setter
                note = (f" The job '{spec.job}' does not exist in this process, which has only /job:localhost; "
                        f"running ops on /job:{spec.job} needs a session on a cluster (tf.train.Server tasks, "
                        f"tf.Session(server.target)).")
                fix = (f"\nFix: to run in this process, build the graph without /job:{spec.job} devices (for example "
                       f"without tf.train.replica_device_setter); allow_soft_placement never changes a job.")
            elif spec.device_type == "GPU" and not any(d.device_type == "GPU" for d in self._devices):
                note = (" The requested device appears to be a GPU, but no GPU exists here (set "
                        "ADPLACE_VIRTUAL_GPUS=N or adplace.config.set_virtual_gpus(N) for virtual GPUs).")
            return (f"{head}{{{{node {op.name}}}}} was explicitly assigned to {request} but available devices are "
                    f"[ {', '.join(self._device_names)} ]. Make sure the device specification refers to a valid "
                    f"device.{note}{fix}")
        kernel_dt = kernel_dtype(op)
        return (f"{head}Could not satisfy explicit device specification '{request}' because no supported kernel for "
                f"{spec.device_type} devices is available ({op.type} has no {spec.device_type} kernel for "
                f"{kernel_dt.name if kernel_dt else 'its dtype'}).{_debug_info(group)}\nOp: {op.type}\nNode attrs: "
                f"{_attrs_text(op)}\nRegistered kernels:\n{registered_kernels_text(op.type)}{fix}")

    # --- log --------------------------------------------------------------------------------------------------
    def _log(self, ops: list) -> None:
        """TF's placement log, one line per op, to Python's stdout so notebooks show it."""
        placed, notes = self.table.device_by_op_id, self.table.notes
        lines = []
        for op in ops:
            lines.append(f"{op.name}: ({op.type}): {placed[op._id].name}")
            if op._id in notes:
                lines.append(f"  ({notes[op._id]})")
        stream = self.stream or sys.stdout
        stream.write("\n".join(lines) + "\n")
        stream.flush()


def _matches(spec: DeviceSpec, device: Device) -> bool:
    return ((spec.job is None or spec.job == device.job) and (spec.replica is None or spec.replica == device.replica)
            and (spec.task is None or spec.task == device.task)
            and (spec.device_type is None or spec.device_type == device.device_type)
            and (spec.device_index is None or spec.device_index == device.index))


def _supported_types(op) -> frozenset:
    return kernel_device_types(op._type, kernel_dtype(op))


def _conflicting_field(a: DeviceSpec, b: DeviceSpec) -> str | None:
    for field in ("job", "replica", "task", "device_type", "device_index"):
        x, y = getattr(a, field), getattr(b, field)
        if x is not None and y is not None and x != y:
            return {"device_type": "type", "device_index": "id"}.get(field, field)
    return None


def _device_types(devices) -> list[str]:
    return sorted({d.device_type for d in devices})


def _attrs_text(op) -> str:
    parts = []
    for key, value in sorted(op._attrs.items()):
        if key == "value":
            continue
        parts.append(f"{key}=DT_{value.name.upper()}" if hasattr(value, "as_numpy_dtype") else f"{key}={value}")
    return ", ".join(parts)


def _debug_info(group: list) -> str:
    """TF's 'Colocation Debug Info' block: the group's op types, supported devices and requested devices."""
    lines = ["\nColocation Debug Info:", "Colocation group had the following types and supported devices: "]
    for op_type in dict.fromkeys(op.type for op in group):
        members = [op for op in group if op.type == op_type]
        lines.append(f"{op_type}: {' '.join(sorted(_supported_types(members[0])))} ")
    lines.append("Colocation members, user-requested devices, and framework assigned devices, if any:")
    lines += [f"  {op.name} ({op.type}) {op._device}" for op in group]
    return "\n".join(lines)
