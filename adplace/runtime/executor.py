"""Plans: what one (fetches, feeds) signature of Session.run compiles to, and the code that runs it.

A plan is built once: prune to the ops the fetches need (creation order is a topological order), bind one kernel per
op, insert one transfer per (tensor, destination device) at each cross-device edge, and free every intermediate after
its last use. Running it then does no graph work at all. Small plans are compiled into straight-line Python (one
line per step, locals for values, `del` after last use), so the per-op cost is one call, as in hand-written NumPy;
large plans run in a tight interpreter loop, and switch to straight-line code once they have run a few times.
"""
from __future__ import annotations

from typing import Callable

import numpy as np

from adplace.framework import errors
from adplace.framework.registry import kernel_factory
from adplace.framework.tensor_shape import dims_text

CODEGEN_MAX_STEPS = 20000  # larger plans stay interpreted: compiling a million-line function costs seconds
TIER_UP_AFTER_RUNS = 2     # interpreted runs before a plan is compiled to straight-line code


class VariableCell:
    """A variable's value in one session, on the variable's placed device."""

    __slots__ = ("value", "name", "device")

    def __init__(self, name: str, device):
        self.value, self.name, self.device = None, name, device


class Transfer:
    """One cross-device copy in a plan: the tensor, where it comes from and where it goes."""

    __slots__ = ("tensor_name", "src_device", "dst_device")

    def __init__(self, tensor_name: str, src_device: str, dst_device: str):
        self.tensor_name, self.src_device, self.dst_device = tensor_name, src_device, dst_device

    def __repr__(self) -> str:
        return f"Transfer({self.tensor_name!r}: {self.src_device} -> {self.dst_device})"


class Step:
    """One plan step: a kernel, its input slots, its output slots (None where unused), and what it frees."""

    __slots__ = ("kernel", "in_slots", "out_slots", "frees", "op", "device", "transfer")

    def __init__(self, kernel, in_slots, out_slots, op, device, transfer=None):
        self.kernel, self.in_slots, self.out_slots = kernel, in_slots, out_slots
        self.op, self.device, self.transfer, self.frees = op, device, transfer, ()


def _copy_between_devices(value):
    """A transfer on NumPy-backed devices: a real copy, so the destination owns its buffer."""
    return value.copy()


def _fetch_value(value):
    return value[()] if type(value) is np.ndarray and value.ndim == 0 else value


def _fetch_copy(value):
    return _fetch_value(np.array(value, copy=True))


class Plan:
    """A compiled (fetches, feeds) signature: steps, transfers, and the callable that runs them."""

    def __init__(self, steps: list, n_slots: int, feed_slots: list, fetch_slots: list, fetch_copies: list,
                 transfers: list, has_writes: bool):
        self.steps, self.n_slots, self.feed_slots = steps, n_slots, feed_slots
        self.fetch_slots, self.fetch_copies = fetch_slots, fetch_copies
        self.transfers, self.has_writes = tuple(transfers), has_writes
        self.num_transfers = len(transfers)
        self.runs = 0
        self._code = None
        self._first_line = 0
        self.fn: Callable = self._interpreter() if len(steps) > 64 else self._compile()

    @property
    def is_compiled(self) -> bool:
        return self._code is not None

    def tier_up(self) -> None:
        """Switch a hot interpreted plan to straight-line code (when it is not too large to compile)."""
        if self._code is None and len(self.steps) <= CODEGEN_MAX_STEPS:
            self.fn = self._compile()

    def _fetch_expr(self, i: int, slot: int) -> str:
        return f"{'_fetch_copy' if self.fetch_copies[i] else '_fetch_value'}(v{slot})"

    def _compile(self) -> Callable:
        """Straight-line code: one line per step (so a traceback line names the step), values in locals."""
        lines = ["def run(feeds):"]
        if self.feed_slots:
            lines.append(f"    {', '.join(f'v{s}' for s in self.feed_slots)}, = feeds")
        namespace = {"_fetch_value": _fetch_value, "_fetch_copy": _fetch_copy}
        self._first_line = len(lines) + 1
        for i, step in enumerate(self.steps):
            namespace[f"k{i}"] = step.kernel
            call = f"k{i}({', '.join(f'v{s}' for s in step.in_slots)})"
            outs = step.out_slots
            if not outs or all(s is None for s in outs):
                line = call
            elif len(outs) == 1:
                line = f"v{outs[0]} = {call}"
            else:
                line = f"{', '.join('_' if s is None else f'v{s}' for s in outs)}, = {call}"
            if step.frees:
                line += "; del " + ", ".join(f"v{s}" for s in step.frees)
            lines.append("    " + line)
        fetches = ", ".join(self._fetch_expr(i, s) for i, s in enumerate(self.fetch_slots))
        lines.append(f"    return [{fetches}]")
        code = compile("\n".join(lines), "<adplace plan>", "exec")
        exec(code, namespace)  # noqa: S102 - the source is generated above from integers and fixed names
        self._code = namespace["run"].__code__
        return namespace["run"]

    def _interpreter(self) -> Callable:
        """A loop over prebuilt tuples, for plans too large (or too new) to be worth compiling."""
        program = tuple((s.kernel, s.in_slots, s.out_slots, s.frees) for s in self.steps)
        n_slots, feed_slots = self.n_slots, self.feed_slots
        fetches = tuple(zip(self.fetch_slots, (_fetch_copy if c else _fetch_value for c in self.fetch_copies)))

        def run(feeds):
            slots = [None] * n_slots
            for slot, value in zip(feed_slots, feeds):
                slots[slot] = value
            for kernel, in_slots, out_slots, frees in program:
                result = kernel(*[slots[i] for i in in_slots])
                if len(out_slots) == 1:
                    slots[out_slots[0]] = result
                elif out_slots:
                    for slot, value in zip(out_slots, result):
                        if slot is not None:
                            slots[slot] = value
                for slot in frees:
                    slots[slot] = None
            return [convert(slots[slot]) for slot, convert in fetches]
        return run

    def failed_step(self, exc: BaseException) -> Step | None:
        """The step whose kernel raised `exc`, from the traceback (no bookkeeping on the hot path)."""
        tb = exc.__traceback__
        frames = []
        while tb is not None:
            frames.append(tb)
            tb = tb.tb_next
        for tb in frames:
            code = tb.tb_frame.f_code
            if code is self._code:
                index = tb.tb_lineno - self._first_line
                return self.steps[index] if 0 <= index < len(self.steps) else None
            if code.co_name == "run" and "program" in tb.tb_frame.f_locals:
                kernel = tb.tb_frame.f_locals.get("kernel")
                return next((s for s in self.steps if s.kernel is kernel), None)
        return None


def compile_plan(graph, placement, ctx, fetch_elements: list, feed_tensors: list) -> Plan:
    """Build the Plan for fetching `fetch_elements` (Tensors and Operations) with `feed_tensors` fed."""
    fed = set(feed_tensors)  # Tensors hash by identity: they key dicts and sets without id() calls
    ops = graph._ops
    order = _needed_ops(fetch_elements, fed, len(ops))
    device_of = placement.device_by_op_id
    slot_of: dict = {}                 # tensor -> slot
    where: list = []                   # slot -> device the value lives on
    for t in feed_tensors:
        slot_of[t] = len(where)
        where.append(device_of[t._op._id])
    feed_slots = list(range(len(where)))
    steps: list[Step] = []
    transfers: list[Transfer] = []
    copies: dict[tuple[int, object], int] = {}
    has_writes = False
    for op in order:
        device = device_of[op._id]
        ref_inputs = op._op_def.ref_inputs
        inputs = op._inputs
        if ref_inputs:
            inputs = [t for k, t in enumerate(inputs) if k not in ref_inputs]
            has_writes = has_writes or op._op_def.is_stateful
        in_slots = []
        for t in inputs:
            if t._dtype._is_ref:  # a variable read by value: read its cell now, when the consumer runs (TF refs)
                var_device = device_of[t._op._id]
                steps.append(Step(ctx.kernel(t._op, var_device), (), (len(where),), t._op, var_device))
                where.append(var_device)
                slot = len(where) - 1
            else:
                slot = slot_of[t]
            if where[slot] is not device:
                key = (slot, device)
                if key not in copies:
                    copies[key] = len(where)
                    transfer = Transfer(t.name, where[slot].name, device.name)
                    transfers.append(transfer)
                    steps.append(Step(_copy_between_devices, (slot,), (len(where),), op, device, transfer))
                    where.append(device)
                slot = copies[key]
            in_slots.append(slot)
        outputs = op._outputs
        if len(outputs) == 1 and outputs[0] not in fed:
            out_slots = (len(where),)
            slot_of[outputs[0]] = len(where)
            where.append(device)
        else:
            out_slots = []
            for t in outputs:
                if t in fed:
                    out_slots.append(None)
                else:
                    slot_of[t] = len(where)
                    out_slots.append(len(where))
                    where.append(device)
            out_slots = tuple(out_slots)
        steps.append(Step(ctx.kernel(op, device), tuple(in_slots), out_slots, op, device))

    fetch_slots, fetch_copies = [], []
    for element in fetch_elements:
        if hasattr(element, "_value_index"):
            fetch_slots.append(slot_of[element])
            fetch_copies.append(element not in fed and element._op._op_def.is_view)
    _schedule_frees(steps, set(fetch_slots), len(where))
    return Plan(steps, len(where), feed_slots, fetch_slots, fetch_copies, transfers, has_writes)


def _needed_ops(fetch_elements: list, fed: set, n_ops: int) -> list:
    """The ops the fetches need, in creation (= topological) order, not crossing fed tensors or reference edges.

    An unfed Placeholder among them is an error, raised before anything runs.
    """
    needed = bytearray(n_ops)
    stack = []
    for element in fetch_elements:
        if hasattr(element, "_value_index"):
            if element not in fed:
                stack.append(element._op)
        else:
            stack.append(element)
    order = []
    while stack:
        op = stack.pop()
        if needed[op._id]:
            continue
        needed[op._id] = 1
        order.append(op)
        for t in op._inputs:  # a ref input is read (or written) by its consumer: the variable op itself never runs
            if not needed[t._op._id] and t not in fed and not t._dtype._is_ref:
                stack.append(t._op)
        for c in op._control_inputs:
            if not needed[c._id]:
                stack.append(c)
        if op._type == "Placeholder" and any(t not in fed for t in op._outputs):
            raise errors.InvalidArgumentError(
                None, op, f"You must feed a value for placeholder tensor '{op.name}' with dtype "
                f"{op._attrs['dtype'].name} and shape {dims_text(op._attrs['shape'].as_tuple())}\n\t "
                f"[[{{{{node {op.name}}}}}]]")
    order.sort(key=lambda op: _schedule_key(op, needed))
    return order


def _schedule_key(op, needed: bytearray) -> tuple:
    """Creation order, except that a stateless read of a variable runs just before its first consumer.

    So a read never sees a value older than the ops ordered before its consumer: `tf.identity(v)` under
    `control_dependencies([assign])` sees the assignment, as TF1 users expect.
    """
    if not op._op_def.is_stateful and any(t._dtype._is_ref for t in op._inputs):
        users = [c._id for c in op._consumers + op._control_outputs if needed[c._id]]
        if users:
            return (min(users), 0, op._id)
    return (op._id, 1, 0)


def _schedule_frees(steps: list, keep: set, n_slots: int) -> None:
    """Free each slot right after the step that reads it last; drop outputs nobody reads (never fetched ones)."""
    last_reader = [-1] * n_slots
    for index, step in enumerate(steps):
        for slot in step.in_slots:
            last_reader[slot] = index
    frees: dict[int, list] = {}
    for step in steps:
        outs = step.out_slots
        if len(outs) == 1:
            if last_reader[outs[0]] < 0 and outs[0] not in keep:
                step.out_slots = ()
        elif any(s is not None and last_reader[s] < 0 and s not in keep for s in outs):
            step.out_slots = tuple(None if s is None or (last_reader[s] < 0 and s not in keep) else s for s in outs)
    for slot, index in enumerate(last_reader):
        if index >= 0 and slot not in keep:
            frees.setdefault(index, []).append(slot)
    for index, slots in frees.items():
        steps[index].frees = tuple(slots)


class KernelContext:
    """What kernel factories may ask of the session: variable cells, per-op random streams, the undo journal."""

    def __init__(self, placement):
        self._placement = placement
        self._cells: dict[int, VariableCell] = {}
        self._rngs: dict[int, np.random.Generator] = {}
        self._kernels: dict[int, Callable] = {}
        self.journal: list = []

    def variable(self, op) -> VariableCell:
        cell = self._cells.get(op._id)
        if cell is None:
            cell = self._cells[op._id] = VariableCell(op.name, self._placement.device_by_op_id[op._id])
        return cell

    def random_generator(self, op) -> np.random.Generator:
        rng = self._rngs.get(op._id)
        if rng is None:
            seed, seed2 = op._attrs.get("seed", 0), op._attrs.get("seed2", 0)
            rng = np.random.default_rng([seed, seed2] if seed or seed2 else None)
            self._rngs[op._id] = rng
        return rng

    def kernel(self, op, device) -> Callable:
        """The op's kernel in this session, built once and shared by every plan that runs the op."""
        kernel = self._kernels.get(op._id)
        if kernel is None:
            kernel = self._kernels[op._id] = kernel_factory(op._type, device.device_type)(op, self)
        return kernel

    def rollback(self) -> None:
        """Undo every variable write journaled since the last commit, newest first."""
        journal = self.journal
        for cell, old in reversed(journal):
            cell.value = old
        journal.clear()
