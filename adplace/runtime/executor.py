"""Plans: what one (fetches, feeds) signature of Session.run compiles to, and the code that runs it.

A plan is built once: prune to the ops the fetches need (creation order is a topological order), bind one kernel per
op, insert one transfer per (tensor, destination device) at each cross-device edge, and free every intermediate after
its last use. Running it then does no graph work at all. Small plans are compiled into straight-line Python (one
line per step, locals for values, `del` after last use), so the per-op cost is one call, as in hand-written NumPy;
large plans run in a tight interpreter loop, and switch to straight-line code once they have run a few times.
"""
from __future__ import annotations

import copy
import threading
import time
from typing import Callable, NamedTuple

import numpy as np

from adplace.framework import errors
from adplace.framework.operation import is_variable_op, ref_variable
from adplace.kernels.cpu import unfed_placeholder_error
from adplace.kernels.forwarding import MIN_BYTES as _forwarding_min
from adplace.kernels.registration import forward as _forward
from adplace.runtime import buffer_forwarding as _buffer_forwarding
from adplace.runtime import constant_folding as _constant_folding
from adplace.runtime import control_flow as _control_flow
from adplace.runtime import deferred_updates as _deferred_updates
from adplace.runtime import dependency_optimizer as _dependency_optimizer
from adplace.runtime import fusion as _fusion
from adplace.runtime import shape_specialization as _shape_specialization
from adplace.runtime.plan_slots import as_tuple as _as_tuple

CODEGEN_MAX_STEPS = 20000  # larger plans stay interpreted: compiling a million-line function costs seconds
TIER_UP_AFTER_RUNS = 2     # interpreted runs before a plan is compiled to straight-line code


class Transfer:
    """One cross-device copy in a plan: the tensor, where it comes from and where it goes."""

    __slots__ = ("tensor_name", "src_device", "dst_device")

    def __init__(self, tensor_name: str, src_device: str, dst_device: str):
        self.tensor_name, self.src_device, self.dst_device = tensor_name, src_device, dst_device

    def __repr__(self) -> str:
        return f"Transfer({self.tensor_name!r}: {self.src_device} -> {self.dst_device})"


class Step(NamedTuple):
    """A read-only view of one plan step (for inspection; plans store steps as parallel lists)."""

    kernel: Callable
    in_slots: tuple
    out_slots: tuple
    frees: tuple
    op: object
    device: object
    transfer: Transfer | None


def _fetch_value(value):
    return value[()] if type(value) is np.ndarray and value.ndim == 0 else value


def _fetch_copy(value):
    return _fetch_value(np.array(value, copy=True))


def _fetch_raw(value):
    return value


_NOTHING = ()


class Deadline(NamedTuple):
    """When a run must end (time.perf_counter_ns), and the timeout it came from, for the error message."""

    at_ns: int
    timeout_ms: int
    source: str  # "RunOptions.timeout_in_ms" or "ConfigProto.operation_timeout_in_ms"


def deadline_exceeded(deadline: Deadline, op=None, device=None) -> errors.DeadlineExceededError:
    """TF's error for a step that outlived its deadline, naming the timeout and the op that was running."""
    where = "before any op ran" if op is None else \
        f"while op '{op.name}' ({op.type}) was running on {getattr(device, 'name', device)}"
    return errors.DeadlineExceededError(None, op, f"Timed out waiting for notification: the step passed its "
                                        f"{deadline.timeout_ms} ms deadline ({deadline.source}) {where}; no later "
                                        f"op started.")


def run_step(kernel, in_slots, out_slots, slots):
    """Run one step's kernel on its input slots and store its outputs; returns the kernel's result."""
    if type(in_slots) is int:
        result = kernel(slots[in_slots])
    else:
        result = kernel(*[slots[i] for i in in_slots])
    if type(out_slots) is int:
        slots[out_slots] = result
    elif out_slots:
        for slot, value in zip(out_slots, result):
            if slot is not None:
                slots[slot] = value
    return result


class Plan:
    """A compiled (fetches, feeds) signature and the callable that runs it.

    Steps are parallel lists (kernel, input slots, output slots, slots freed after it, op, device): a plan of a
    million-op graph then costs a few list entries per op, not an object per step.
    """

    def __init__(self, kernels: list, ins: list, outs: list, ops: list, devices: list, transfer_at: dict,
                 n_slots: int, feed_slots: list, fetch_slots: list, fetch_copies: list, has_writes: bool):
        self.kernels, self.ins, self.outs, self.ops, self.devices = kernels, ins, outs, ops, devices
        self.frees: list = [_NOTHING] * len(kernels)
        self._transfer_at = transfer_at
        self.n_slots, self.feed_slots = n_slots, feed_slots
        self.fetch_slots, self.fetch_copies = fetch_slots, fetch_copies
        self.transfers = tuple(transfer_at[i] for i in sorted(transfer_at))
        self.num_transfers, self.has_writes = len(transfer_at), has_writes
        self.feed_tensors: list = []
        self.fetch_via: dict = {}      # fetch index -> converter, for fetches living on a CUDA device
        self.fused: dict = {}          # step index -> names of the ops a fused kernel computes (runtime/fusion.py)
        self.fuse_on_cpu = False       # its CPU chains may fuse when it is hot (no dead-value tracking, not a loop's)
        self.forwards_buffers = False  # its sequential runners may compute into dying inputs (buffer_forwarding.py)
        self.folded_ops: list = []     # ops computed when the plan was built (runtime/constant_folding.py)
        self.keyed_ops: list = []      # ops computed once per shape of the run-time values they read (same)
        self.simplified_ops: list = []  # ops whose steps now alias their input or only reshape it (simplification)
        self.variants = None           # its plans for the shapes fed values take (shape_specialization.py)
        self.unread_ops: list = []     # ops whose values nothing reads: their steps only wait (dependency_optimizer)
        self.deferred_steps: list = []  # steps whose updates commit after the last step (runtime/deferred_updates.py)
        self.folded_nodes: list = []   # (op, device, stored values or None) of those whose steps were dropped
        self.mode = "sequential"       # or "parallel" (set by the session's StepRunner)
        self.parallel_run = None       # the threaded runner, when mode is "parallel"
        self.prediction = None         # (measured sequential ns, predicted parallel ns) when the cost model ran
        self.runs = 0
        self.raw_fetches = False       # a loop body's sub-plan: fetched values are returned as they are
        self.dead_fetches: dict = {}   # fetch index -> tensor name, for fetches a cond may leave dead
        self.has_loops = False         # a step runs a while loop (the plan then runs in turn, checking deadlines)
        self._code = None
        self._first_line = 0
        self.fn: Callable = _NOTHING          # what Session.run calls: `sequential`, or a parallel/limited wrapper
        self.sequential: Callable = _NOTHING  # the plan run in the caller's thread, step by step

    def finish(self) -> "Plan":
        """Pick how the plan runs: small plans compile to straight-line code at once, others start interpreted."""
        self.fn = self.sequential = self._interpreter() if len(self.kernels) > 64 else self._compile()
        return self

    def step(self, index: int) -> Step:
        return Step(self.kernels[index], _as_tuple(self.ins[index]), _as_tuple(self.outs[index]),
                    _as_tuple(self.frees[index]), self.ops[index], self.devices[index], self._transfer_at.get(index))

    @property
    def steps(self) -> list[Step]:
        return [self.step(i) for i in range(len(self.kernels))]

    @property
    def is_compiled(self) -> bool:
        return self._code is not None

    def tier_up(self) -> None:
        """Switch a hot interpreted plan to straight-line code (when it is not too large to compile)."""
        if self._code is None and len(self.kernels) <= CODEGEN_MAX_STEPS:
            self.fn = self.sequential = self._compile()

    def with_steps(self, lists: tuple, transfer_at: dict, fused: dict) -> "Plan":
        """A copy of this plan running other step lists (kernels, ins, outs, ops, devices) over the same slots, its
        frees scheduled and its runner built (CPU fusion's fused steps, swapped in by `adopt`)."""
        other = copy.copy(self)
        other.kernels, other.ins, other.outs, other.ops, other.devices = lists
        other.frees = [_NOTHING] * len(other.kernels)
        other._transfer_at, other.fused = transfer_at, fused
        other.transfers = tuple(transfer_at[i] for i in sorted(transfer_at))
        _schedule_frees(other, set(self.fetch_slots))  # as compile_plan does
        other._code = None
        other.fn = other.sequential = other._interpreter()
        other.tier_up()
        return other

    _STEP_STATE = ("kernels", "ins", "outs", "ops", "devices", "frees", "_transfer_at", "transfers", "fused", "_code",
                   "_first_line", "sequential", "fn")

    def adopt(self, other: "Plan") -> None:
        """Take `other`'s steps and runner in one dict update: a run in another thread sees either all old or all
        new (a run already under way keeps the runner it started with)."""
        vars(self).update({name: vars(other)[name] for name in self._STEP_STATE})

    def _fetch_expr(self, i: int, slot: int) -> str:
        if self.raw_fetches and i not in self.dead_fetches:
            return f"v{slot}"
        if i in self.fetch_via or i in self.dead_fetches:
            return f"f{i}(v{slot})"
        if self.fetch_copies[i]:
            return f"_fetch_copy(v{slot})"
        return f"(v{slot}[()] if type(v{slot}) is _ndarray and v{slot}.ndim == 0 else v{slot})"  # _fetch_value, inline

    def _converter(self, i: int) -> Callable:
        """How fetch `i` leaves the run: downloaded from a GPU, copied, unwrapped from 0-d, or as it is (a loop
        body's sub-plan); checked for a dead value when a cond may leave it dead."""
        if self.raw_fetches:
            convert = _fetch_raw
        else:
            convert = self.fetch_via.get(i) or (_fetch_copy if self.fetch_copies[i] else _fetch_value)
        name = self.dead_fetches.get(i)
        return convert if name is None else _control_flow.live_fetch(convert, i, name)

    def _compile(self) -> Callable:
        """Straight-line code: one line per step (so a traceback line names the step), values in locals."""
        lines = ["def run(feeds):"]
        if self.feed_slots:
            lines.append(f"    {', '.join(f'v{s}' for s in self.feed_slots)}, = feeds")
        namespace = {"_ndarray": np.ndarray, "_fetch_copy": _fetch_copy,
                     **{f"f{i}": self._converter(i) for i in (*self.fetch_via, *self.dead_fetches)}}
        self._first_line = len(lines) + 1
        forwarded = _buffer_forwarding.forwarding_kernels(self)
        for i, (kernel, ins, outs, frees) in enumerate(zip(self.kernels, self.ins, self.outs, self.frees)):
            namespace[f"k{i}"] = kernel
            ins, outs, frees = _as_tuple(ins), _as_tuple(outs), _as_tuple(frees)
            args = ', '.join(f'v{s}' for s in ins)
            call = f"k{i}({args})"
            if i in forwarded:  # into a dying input: always, or when its array is large enough to pay
                namespace[f"w{i}"], slot, always = forwarded[i]
                call = f"w{i}({args})" if always else \
                    f"(w{i} if type(v{slot}) is _ndarray and v{slot}.nbytes >= {_forwarding_min} else k{i})({args})"
            if hasattr(kernel, "constant"):  # a Const, a folded value, a NoOp: its value without a call
                namespace[f"c{i}"] = kernel.constant
                call = f"c{i}"
            elif kernel is _forward and len(ins) == 1:  # Identity: the value itself
                call = f"v{ins[0]}"
            if not outs or all(s is None for s in outs):
                line = "pass" if call == f"c{i}" else call
            elif len(outs) == 1:
                line = f"v{outs[0]} = {call}"
            else:
                line = f"{', '.join('_' if s is None else f'v{s}' for s in outs)}, = {call}"
            if frees:
                line += "; del " + ", ".join(f"v{s}" for s in frees)
            lines.append("    " + line)
        fetches = ", ".join(self._fetch_expr(i, s) for i, s in enumerate(self.fetch_slots))
        lines.append(f"    return [{fetches}]")
        code = compile("\n".join(lines), "<adplace plan>", "exec")
        exec(code, namespace)  # noqa: S102 - the source is generated above from integers and fixed names
        self._code = namespace["run"].__code__
        return namespace["run"]

    @property
    def transfer_steps(self) -> dict:
        """Step index -> Transfer, for the steps that copy a tensor between devices."""
        return self._transfer_at

    def fetch_converters(self) -> tuple:
        """(slot, convert) per fetched tensor: how a run turns its slots into fetched values."""
        return tuple((slot, self._converter(i)) for i, slot in enumerate(self.fetch_slots))

    def _interpreter(self) -> Callable:
        """A loop over the steps, for plans too large (or too new) to be worth compiling."""
        forwarded = _buffer_forwarding.forwarding_kernels(self)
        kernels = [forwarded[i].kernel if i in forwarded else k for i, k in enumerate(self.kernels)] if forwarded \
            else self.kernels
        program = (kernels, self.ins, self.outs, self.frees)
        n_slots, feed_slots = self.n_slots, self.feed_slots
        fetches = self.fetch_converters()

        def run(feeds):
            slots = [None] * n_slots
            for slot, value in zip(feed_slots, feeds):
                slots[slot] = value
            # run_step's body, inlined: a call per step would cost this loop ~15% on small ops
            for index, (kernel, in_slots, out_slots, frees) in enumerate(zip(*program)):  # noqa: B007 - failed_step reads `index`
                if type(in_slots) is int:
                    result = kernel(slots[in_slots])
                else:
                    result = kernel(*[slots[i] for i in in_slots])
                if type(out_slots) is int:
                    slots[out_slots] = result
                elif out_slots:
                    for slot, value in zip(out_slots, result):
                        if slot is not None:
                            slots[slot] = value
                if type(frees) is int:
                    slots[frees] = None
                else:
                    for slot in frees:
                        slots[slot] = None
            return [convert(slots[slot]) for slot, convert in fetches]
        return run

    def run_checked(self, feeds, deadline: Deadline | None = None, records: list | None = None) -> list:
        """A sequential run that checks a deadline after each step and/or records each step's timing.

        `records` gets (step, start ns, end ns, thread id, kernel result) per step. Once a step ends past the
        deadline no further step starts and DeadlineExceededError names that step's op.
        """
        if self.has_loops:  # a loop step checks the deadline after each iteration
            _control_flow.set_deadline(deadline)
            try:
                return self._run_checked(feeds, deadline, records)
            finally:
                _control_flow.set_deadline(None)
        return self._run_checked(feeds, deadline, records)

    def _run_checked(self, feeds, deadline: Deadline | None, records: list | None) -> list:
        slots = [None] * self.n_slots
        for slot, value in zip(self.feed_slots, feeds):
            slots[slot] = value
        clock, ident = time.perf_counter_ns, threading.get_ident()
        deadline_ns = None if deadline is None else deadline.at_ns
        if deadline_ns is not None and clock() > deadline_ns:
            raise deadline_exceeded(deadline)
        for index, (kernel, in_slots, out_slots, frees) in enumerate(zip(self.kernels, self.ins, self.outs,
                                                                        self.frees)):
            start = clock()
            result = run_step(kernel, in_slots, out_slots, slots)
            end = clock()
            if records is not None:
                records.append((index, start, end, ident, result))
            for slot in _as_tuple(frees):
                slots[slot] = None
            if deadline_ns is not None and end > deadline_ns:
                raise deadline_exceeded(deadline, self.ops[index], self.devices[index])
        return [convert(slots[slot]) for slot, convert in self.fetch_converters()]

    def failed_step(self, exc: BaseException) -> Step | None:
        """The step whose kernel raised `exc`, from the traceback (no bookkeeping on the hot path); inside a while
        loop's step, the step of the loop's predicate or body that raised it."""
        step = self._own_failed_step(exc)
        if step is not None:
            for sub in (getattr(step.kernel, "cond_plan", None), getattr(step.kernel, "body_plan", None),
                        getattr(step.kernel, "memo", None)):  # a loop's sub-plans; the steps a memo replaces
                inner = None if sub is None else sub.failed_step(exc)
                if inner is not None:
                    return inner
        return step

    def _own_failed_step(self, exc: BaseException) -> Step | None:
        tb = exc.__traceback__
        while tb is not None:
            frame = tb.tb_frame
            if frame.f_code is self._code:
                index = tb.tb_lineno - self._first_line
                return self.step(index) if 0 <= index < len(self.kernels) else None
            if frame.f_code.co_name == "run" and frame.f_locals.get("program", (None, None))[1] is self.ins:
                return self.step(frame.f_locals["index"])
            if frame.f_code.co_name in ("_run_checked", "chain") and frame.f_locals.get("index") is not None and \
                    (frame.f_locals.get("self") is self or frame.f_locals.get("kernels") is self.kernels):
                return self.step(frame.f_locals["index"])
            if frame.f_code.co_name == "_run_step" and frame.f_locals.get("plan") is self:  # a pipelined loop's
                return self.step(frame.f_locals["step"])
            tb = tb.tb_next
        return None


def compile_plan(graph, placement, ctx, fetch_elements: list, feed_tensors: list,
                 done_op_ids: frozenset | set = frozenset(), frame: tuple = (), aliases: dict | None = None,
                 feed_shapes: dict | None = None) -> Plan:
    """Build the Plan for fetching `fetch_elements` (Tensors and Operations) with `feed_tensors` fed.

    `done_op_ids`: ops that must not run again (a partial run's earlier steps); every output of theirs that the plan
    reads by value must be among `feed_tensors`. `frame`: a loop body's sub-plan (runtime/control_flow.py), whose
    feeds are already on their devices and whose fetches are returned as they are; `aliases` maps the loop
    invariants its consumers read from a variable when they run to that variable's op. `feed_shapes` (fed tensor
    -> TensorShape) specializes the plan to fed values of those shapes (runtime/shape_specialization.py).
    """
    fed = set(feed_tensors)  # Tensors hash by identity: they key dicts and sets without id() calls
    ops = graph._ops[:len(placement.device_by_op_id)]  # the placed ops: others may be added by other threads now
    order = needed_ops(fetch_elements, fed, ops, done_op_ids)
    device_of = placement.device_by_op_id
    fed_slot = {t: i for i, t in enumerate(feed_tensors)}
    first_slot = [-1] * len(ops)       # op id -> slot of its output 0 (outputs take consecutive slots)
    where = [device_of[t._op._id] for t in feed_tensors]  # slot -> device the value lives on
    feed_slots = list(range(len(where)))
    consumed_slot = dict(fed_slot)     # what consumers of a fed tensor read: its upload, on a CUDA device
    kernels, ins, outs, step_ops, step_devices = [], [], [], [], []
    transfer_at: dict[int, Transfer] = {}
    copies: dict[tuple[int, object], int] = {}
    has_writes = False
    kernel_for = ctx.kernel
    built = ctx.kernels_sized(len(ops))  # op id -> kernel already built in this session (None when not yet)
    fetched = {e for e in fetch_elements if hasattr(e, "_value_index")}
    loops = _control_flow.LoopIndex(order, frame, fed) if frame or any(op._type in _control_flow.ENTERS
                                                                       for op in order) else None
    if loops is not None:
        order = loops.order
        loops.check_fetches(fetch_elements)
    dead: set | None = set() if any(op._type in _control_flow.SWITCHES for op in order) else None
    token_slot: dict = {}  # op id -> the slot telling whether it ran (output 0, or a slot of its own)

    def add_step(kernel, in_slots, out_slots, op, device) -> None:
        kernels.append(kernel)
        ins.append(in_slots)
        outs.append(out_slots)
        step_ops.append(op)
        step_devices.append(device)

    def slot_for(t, device) -> int:
        """The slot holding `t`'s value on `device`: a variable read, a fed value or an output, copied if needed."""
        if fed and t in fed_slot:
            slot = consumed_slot[t]
        elif t._dtype._is_ref or aliases and t in aliases:  # a variable read by value: read its cell now, when the
            var_op = aliases[t] if aliases and t in aliases else ref_variable(t)  # consumer runs (TF refs)
            var_device = device_of[var_op._id]
            add_step(kernel_for(var_op, var_device), (), len(where), var_op, var_device)
            where.append(var_device)
            slot = len(where) - 1
        else:
            slot = first_slot[t._op._id] + t._value_index
        if where[slot] is not device:
            key = (slot, device)
            if key not in copies:
                copies[key] = len(where)
                transfer_at[len(kernels)] = Transfer(t.name, where[slot].name, device.name)
                transfer = ctx.transfer_kernel(where[slot], device)
                if dead is not None and slot in dead:
                    transfer = _control_flow.dead_aware(transfer, 1, 1, False)
                    dead.add(len(where))
                add_step(transfer, slot, len(where), t._op, device)
                where.append(device)
            slot = copies[key]
        return slot

    if frame == ():
        for t, slot in fed_slot.items():
            if where[slot].is_cuda:  # a fed value is a host array: upload it once for the device's consumers
                consumed_slot[t] = len(where)
                add_step(ctx.transfer_kernel(None, where[slot]), slot, len(where), t._op, where[slot])
                where.append(where[slot])

    for op in order:
        if loops is not None and op._id in loops.member:
            loop = loops.complete_at(op)
            if loop is not None:
                _add_loop_step(loop, slot_for, add_step, first_slot, where, dead, graph, placement, ctx)
                has_writes = has_writes or any(m._op_def.ref_inputs and m._op_def.is_stateful for m in loop.ops)
            continue
        device = device_of[op._id]
        ref_inputs = op._op_def.ref_inputs
        inputs = op._inputs
        if ref_inputs:
            inputs = [t for k, t in enumerate(inputs) if k not in ref_inputs]
            has_writes = has_writes or op._op_def.is_stateful
        in_slots = [slot_for(t, device) for t in inputs]
        n_out = len(op._outputs)
        first_slot[op._id] = len(where)
        if is_variable_op(op) and op._outputs[0] not in fetched:
            where.append(device)  # a variable run as a target (tf.group(v.op)) outputs a reference: nothing runs
            continue
        kernel = built[op._id] or kernel_for(op, device)
        if dead is not None and op._type != "ControlTrigger":  # TF's ControlTrigger runs even after dead inputs
            liveness = _liveness_slots(op, ref_inputs, first_slot, token_slot, dead)
            if liveness or op._type in _control_flow.MERGES or any(s in dead for s in in_slots):
                kernel = _control_flow.dead_aware(kernel, len(in_slots), n_out, op._type in _control_flow.MERGES)
                in_slots += liveness
                dead.update(range(len(where), len(where) + max(n_out, 1)))
                if n_out == 0:  # an op without outputs gets a slot for whether it ran
                    token_slot[op._id] = len(where)
                    first_slot[op._id] = -1
                    n_out = 1
                    where.append(device)
                    add_step(kernel, tuple(in_slots), len(where) - 1, op, device)
                    continue
            elif op._type in _control_flow.SWITCHES:
                dead.update(range(len(where), len(where) + n_out))
            if op._type in _control_flow.SWITCHES:  # a Switch ran when its input was live: one output is dead anyway
                if in_slots and in_slots[0] in dead:
                    token_slot[op._id] = in_slots[0]
            elif n_out:
                token_slot[op._id] = len(where)
        kernels.append(kernel)  # the common step, without a helper call
        ins.append(in_slots[0] if len(in_slots) == 1 else tuple(in_slots))
        outs.append(len(where) if n_out == 1 else tuple(range(len(where), len(where) + n_out)))
        step_ops.append(op)
        step_devices.append(device)
        where.extend([device] * n_out)

    fetch_slots, fetch_copies, dead_fetches = [], [], {}
    for element in fetch_elements:
        if hasattr(element, "_value_index"):
            is_fed = element in fed_slot
            slot = fed_slot[element] if is_fed else first_slot[element._op._id] + element._value_index
            if dead is not None and slot in dead:
                dead_fetches[len(fetch_slots)] = element.name
            fetch_slots.append(slot)
            fetch_copies.append(not is_fed and element._op._op_def.is_view)
    folded_ops, keyed_ops, folded_nodes, unread_ops = [], [], [], []
    fetched_ops = {getattr(e, "_op", e)._id for e in fetch_elements}  # fetched ops run, as grappler keeps them
    simplified_ops = []
    if frame == () and ctx.fold_constants:  # a loop's sub-plans run in its frame: nothing there is folded
        refiner = None if feed_shapes is None or dead is not None or loops is not None else \
            _shape_specialization.Refiner({fed_slot[t]: shape for t, shape in feed_shapes.items()})
        transfer_at, folded_ops, keyed_ops, simplified_ops, folded_nodes = _constant_folding.fold(
            (kernels, ins, outs, step_ops, step_devices), transfer_at, fetched_ops, dead, refiner)
    if frame == () and dead is None and ctx.optimize_dependencies:
        unread_ops = _dependency_optimizer.optimize((kernels, ins, outs, step_ops, step_devices), transfer_at,
                                                    fetched_ops, fetch_slots, len(where),
                                                    {op._id for op in simplified_ops})
    deferred = []
    if frame == () and dead is None and loops is None and ctx.forward_buffers and has_writes and \
            _deferred_updates.ENABLED:
        deferred = _deferred_updates.defer((kernels, ins, outs, step_ops, step_devices), fetch_slots)
    fused: dict = {}
    if ctx.fuse_elementwise and ctx.cuda_states and dead is None:
        transfer_at, fused = _fusion.fuse((kernels, ins, outs, step_ops, step_devices), transfer_at,
                                          set(fetch_slots), ctx)
    plan = Plan(kernels, ins, outs, step_ops, step_devices, transfer_at, len(where), feed_slots, fetch_slots,
                fetch_copies, has_writes)
    plan.fused = fused
    plan.fuse_on_cpu = dead is None and frame == ()
    plan.forwards_buffers = dead is None and frame == () and ctx.forward_buffers
    plan.folded_ops, plan.keyed_ops, plan.folded_nodes = folded_ops, keyed_ops, folded_nodes
    plan.simplified_ops = simplified_ops
    plan.unread_ops = unread_ops
    plan.deferred_steps = deferred
    plan.feed_tensors = feed_tensors
    plan.raw_fetches = frame != ()
    plan.dead_fetches = dead_fetches
    plan.has_loops = loops is not None and loops.count > 0
    plan.fetch_via = {} if plan.raw_fetches else {
        i: ctx.fetch_converter(where[slot], fetch_copies[i]) for i, slot in enumerate(fetch_slots)
        if where[slot].is_cuda}
    _schedule_frees(plan, set(fetch_slots))
    return plan.finish()


def _liveness_slots(op, ref_inputs, first_slot: list, token_slot: dict, dead: set) -> list:
    """The slots whose deadness `op` inherits beyond its value inputs: the references it takes (a RefSwitch output)
    and the ops it waits on (control inputs)."""
    extra = []
    for k in ref_inputs:
        if k < len(op._inputs):
            t = op._inputs[k]
            start = first_slot[t._op._id]
            if start >= 0 and start + t._value_index in dead:
                extra.append(start + t._value_index)
    for c in op._control_inputs:
        slot = token_slot.get(c._id)
        if slot is not None and slot in dead:
            extra.append(slot)
    return extra


def _add_loop_step(loop, slot_for, add_step, first_slot: list, where: list, dead, graph, placement, ctx) -> None:
    """One step running a while loop's frame (runtime/control_flow.py), reading the values entering it."""
    device_of = placement.device_by_op_id

    def compile_sub(fetches, feeds, frame, done_op_ids, aliases):
        return compile_plan(graph, placement, ctx, fetches, feeds, done_op_ids, frame=frame, aliases=aliases)

    def mover(src, dst):
        a, b = device_of[src._id], device_of[dst._id]
        return None if a is b else ctx.transfer_kernel(a, b)

    made_on = device_of[loop.loop_cond._inputs[0]._op._id]
    read_predicate = ctx.fetch_converter(made_on, False) if made_on.is_cuda else _fetch_raw
    aliases = {}  # a variable's value entering on the variable's own device: read when used, as TF's aliased read
    for enter in loop.const_enters:
        source = enter._inputs[0]._op
        if source._type == "Identity" and source._inputs[0]._dtype._is_ref:
            var_op = ref_variable(source._inputs[0])
            if device_of[var_op._id] is device_of[enter._id]:
                aliases[enter._outputs[0]] = var_op
    kernel = _control_flow.loop_kernel(loop, compile_sub, mover, deadline_exceeded, read_predicate, aliases,
                                       getattr(ctx, "inter_op_pool", None))
    entering = loop.var_enters + [e for e in loop.const_enters if e._outputs[0] not in aliases]
    in_slots = tuple(slot_for(e._inputs[0], device_of[e._id]) for e in entering)
    n_out = len(loop.exits)
    if dead is not None and any(s in dead for s in in_slots):
        kernel = _control_flow.dead_aware(kernel, len(in_slots), n_out, False)
        dead.update(range(len(where), len(where) + n_out))
    for exit_op in loop.exits:
        first_slot[exit_op._id] = len(where)
        where.append(device_of[exit_op._id])
    first = len(where) - n_out
    add_step(kernel, in_slots[0] if len(in_slots) == 1 else in_slots,
             first if n_out == 1 else tuple(range(first, first + n_out)), loop.loop_cond,
             device_of[loop.loop_cond._id])


def needed_ops(fetch_elements: list, fed: set, ops: list, done_op_ids: frozenset | set = frozenset()) -> list:
    """The ops the fetches need, in creation (= topological) order, not crossing fed tensors or reference edges.

    A stateless read of a variable (its `read` Identity) is moved to just before its first consumer: TF reads a
    reference when the reading op runs, so `tf.identity(v)` under `control_dependencies([assign])` sees the
    assignment. Consumers sharing one read see one snapshot, as they share TF's single `read` node. A reference
    produced by an op (an Assign's output) needs that op: `v.assign(1.0) * 2` runs the Assign, then reads `v`.
    An unfed Placeholder among the needed ops is an error, raised before anything runs. `ops` are the placed ops;
    consumers added since (by other threads) are ignored. Ops in `done_op_ids` are left out (and not followed).
    """
    n_ops = len(ops)
    needed = bytearray(n_ops)
    stack = []
    for element in fetch_elements:
        if hasattr(element, "_value_index"):
            if element not in fed:
                stack.append(element._op)
        else:
            stack.append(element)
    ids, reads = [], []
    while stack:
        op = stack.pop()
        if needed[op._id] or op._id in done_op_ids:
            continue
        needed[op._id] = 1
        reads_ref = False
        for t in op._inputs:  # a ref input is read (or written) by its consumer: the variable op itself never runs
            if t._dtype._is_ref:
                reads_ref = True
                if not needed[t._op._id] and not is_variable_op(t._op):
                    stack.append(t._op)
            elif not needed[t._op._id] and t not in fed:
                stack.append(t._op)
        for c in op._control_inputs:  # a fed op's control edges come from its fed value (TF's FeedInputs)
            if not needed[c._id] and not (c._outputs and c._outputs[0] in fed):
                stack.append(c)
        if reads_ref and not op._op_def.is_stateful:
            reads.append(op)
        else:
            ids.append(op._id)
        if op._type == "Placeholder" and any(t not in fed for t in op._outputs):
            raise unfed_placeholder_error(op)
    sunk: dict[int, list] = {}
    for op in sorted(reads, key=_op_id):
        users = [c._id for c in op._consumers + op._control_outputs if c._id < n_ops and needed[c._id]]
        if users:
            sunk.setdefault(min(users), []).append(op)
        else:
            ids.append(op._id)
    ids.sort()
    if not sunk:
        return [ops[i] for i in ids]
    order = []

    def emit(op):  # a moved read goes before its consumer, which may itself be a moved read
        for read in sunk.pop(op._id, ()):
            emit(read)
        order.append(op)
    for i in ids:
        emit(ops[i])
    return order


def _op_id(op) -> int:
    return op._id


def _schedule_frees(plan: Plan, keep: set) -> None:
    """Free each slot right after the step that reads it last; drop outputs nobody reads (never fetched ones)."""
    last_reader = [-1] * plan.n_slots
    for index, in_slots in enumerate(plan.ins):
        if type(in_slots) is int:
            last_reader[in_slots] = index
        else:
            for slot in in_slots:
                last_reader[slot] = index
    for slot in keep:
        last_reader[slot] = -2
    outs, frees = plan.outs, plan.frees
    for index, out_slots in enumerate(outs):
        if type(out_slots) is int:
            if last_reader[out_slots] == -1:
                outs[index] = _NOTHING
        elif any(s is not None and last_reader[s] == -1 for s in out_slots):
            out_slots = tuple(None if s is None or last_reader[s] == -1 else s for s in out_slots)
            outs[index] = _NOTHING if all(s is None for s in out_slots) else out_slots
    for slot, index in enumerate(last_reader):
        if index >= 0:
            held = frees[index]
            frees[index] = slot if held is _NOTHING else _as_tuple(held) + (slot,)
