"""Running TF1 control flow in a plan: dead values for cond branches, and a loop's frame run as one step.

Conds: a Switch outputs DEAD on the side not taken; a step with a dead input (data, the liveness of a reference, or
a control input) does not run and its outputs are DEAD; a Merge takes its first live input. Plans without a Switch
pay nothing for this.

Loops: the ops of a while loop's frame (Enter ... Exit, found from the Enter ops' frame_name, so imported TF graphs
run too) become one plan step. It compiles two sub-plans over the frame's ops: the predicate (fetching LoopCond's
input, fed the Merge values and the loop invariants) and the body (fetching each NextIteration's input, fed the
Switch outputs). It runs them in turn until the predicate is false and outputs the Exit values. Values stay on the
devices the ops were placed on: a loop invariant is copied to its Enter's device once per loop, not per iteration
(a variable's value on its own device is read where used, as TF's aliasing read behaves). A nested loop is one step
of its outer body's sub-plan; a plan's loops are ordered as units after what they read (`LoopIndex`).
"""
from __future__ import annotations

import heapq
import threading
import time
from typing import Callable

import numpy as np

from adplace.framework import errors
from adplace.kernels.control_flow import DEAD, LIVE, predicate

ENTERS = frozenset({"Enter", "RefEnter"})
EXITS = frozenset({"Exit"})
SWITCHES = frozenset({"Switch", "RefSwitch"})
MERGES = frozenset({"Merge"})

_state = threading.local()  # .deadline: the run's Deadline while a checked run is in a loop step
CALIBRATION_ITERATIONS = 3  # a loop that may run iterations at once first times this many in turn


def set_deadline(deadline) -> None:
    _state.deadline = deadline


def frames_of(order: list, base: tuple, fed: set) -> dict:
    """op id -> its frame (a tuple of frame names from the outermost loop) for the ops in `order`; ops outside any
    loop get `base` (a sub-plan's own frame), as do the ops of fed tensors."""
    frame: dict = {}
    for t in fed:
        frame[t._op._id] = base
    for op in order:
        if op._type in ENTERS:
            parent = frame.get(op._inputs[0]._op._id, base)
            name = op._attrs["frame_name"]
            name = name.decode() if isinstance(name, bytes) else name
            # in a sub-plan, an Enter of the plan's own frame whose input is not among its ops (a variable's
            # reference entering by RefEnter) stays in that frame
            frame[op._id] = parent if parent[-1:] == (name,) else parent + (name,)
        elif op._type in EXITS:
            frame[op._id] = frame.get(op._inputs[0]._op._id, base + ("?",))[:-1]
        else:
            deepest = base
            for source in [t._op for t in op._inputs] + list(op._control_inputs):
                f = frame.get(source._id)
                if f is not None and len(f) > len(deepest):
                    deepest = f
            frame[op._id] = deepest
    return frame


def loop_key(op, frame: dict, depth: int):
    """The frame (depth `depth` + 1) of the loop `op` belongs to in a plan at depth `depth`; None for plain ops.
    A loop's Exit ops belong to it, though their values live outside."""
    f = frame[op._inputs[0]._op._id] if op._type in EXITS and op._inputs[0]._op._id in frame else frame[op._id]
    return f[:depth + 1] if len(f) > depth else None


# --- dead values -------------------------------------------------------------------------------------------------
def dead_aware(kernel: Callable, n_inputs: int, n_outputs: int, is_merge: bool) -> Callable:
    """`kernel`, skipped when any of its inputs or the liveness values appended after them is DEAD. Ops without
    outputs return LIVE or DEAD (their liveness, for ops that wait on them)."""
    dead = DEAD if n_outputs <= 1 else (DEAD,) * n_outputs
    checked_from = n_inputs if is_merge else 0

    def run(*args):
        for value in args[checked_from:]:
            if value is DEAD:
                return dead
        result = kernel(*args[:n_inputs])
        return LIVE if n_outputs == 0 else result
    return run


def live_fetch(convert: Callable, index: int, name: str) -> Callable:
    """A fetch converter refusing a dead value (a tensor of the branch not taken), as TF's session does."""
    def fetch(value):
        if value is DEAD:
            raise errors.InvalidArgumentError(None, None, f"Retval[{index}] does not have value: '{name}' is "
                                              f"computed in a branch of a cond that was not taken")
        return convert(value)
    return fetch


# --- loops -------------------------------------------------------------------------------------------------------
class Loop:
    """One while loop's frame in a plan: its ops and what its step reads and writes."""

    def __init__(self, key: tuple, ops: list, frames: dict):
        self.key, self.ops = key, ops
        direct = [op for op in ops if frames[op._id] == key]  # not those of loops nested in it
        mine = [op for op in direct if op._type in ENTERS]
        self.loop_cond = _single([op for op in direct if op._type == "LoopCond"], key)
        self.merges = [op for op in direct if op._type in MERGES and op._inputs[0]._op in mine]
        entering = {m._inputs[0]._op for m in self.merges}
        self.var_enters = [m._inputs[0]._op for m in self.merges]
        self.const_enters = [op for op in mine if op._type == "Enter" and op not in entering]
        self.next_iterations = [m._inputs[1]._op for m in self.merges]
        self.switches = [next((c for c in m._consumers if c._type in SWITCHES and c._inputs[1]._op is self.loop_cond),
                              None) for m in self.merges]
        self.exits = [op for op in ops if op._type in EXITS and op._inputs[0]._op in self.switches]
        # what a RefEnter's reference comes from (an Assign outside the loop) runs before the loop, not per iteration
        self.outside_sources = frozenset(e._inputs[0]._op._id for e in mine if e._type == "RefEnter")
        for enter in mine:
            if not enter._attrs.get("is_constant") and enter not in entering:
                raise errors.UnimplementedError(None, enter, f"Enter {enter.name} is neither a loop variable's nor a "
                                                f"loop invariant's")


def _single(ops: list, key: tuple):
    if len(ops) != 1:
        raise errors.UnimplementedError(None, None, f"while loop frame {key[-1]!r} has {len(ops)} LoopCond ops; "
                                        f"adplace runs frames with exactly one")
    return ops[0]


def loop_kernel(loop: Loop, compile_sub: Callable, mover: Callable, deadline_error: Callable,
                read_predicate: Callable, aliases: dict, pool_of: Callable | None = None) -> Callable:
    """The step running `loop`: fed the values entering its loop variables then its invariants, it returns the
    values of its Exit ops.

    `compile_sub(fetches, feeds, frame, done_op_ids, aliases)` compiles a sub-plan; `mover(src_op, dst_op)` is the
    copy between two ops' devices (None when they share one); `deadline_error(deadline, op)` the timeout's error;
    `read_predicate(value)` the predicate as a host value (a GPU's copied back on its device's stream: read off
    it, a comparison's result could still be on its way); `aliases`: the invariants that are a variable's value on
    its own device, which the sub-plans read from the variable when they use them (TF's read aliases the variable's
    buffer, which an Assign in the loop updates in place), in place of the value the loop started with;
    `pool_of()` the session's inter-op pool, when it has one: a loop that may (runtime/loop_pipeline.py) then runs
    up to `parallel_iterations` iterations at once.
    """
    merges, switches = loop.merges, loop.switches
    merge_values = [m._outputs[0] for m in merges]
    merge_indices = [m._outputs[1] for m in merges]
    switched = [s._outputs[1] for s in switches if s is not None]
    consts = [e._outputs[0] for e in loop.const_enters if e._outputs[0] not in aliases]
    pred_tensor = loop.loop_cond._outputs[0]
    # ops the NextIteration or LoopCond ops wait on run in every iteration too (TF orders a gradient's stack pushes
    # before the next iteration that way)
    cond_plan = compile_sub([loop.loop_cond._inputs[0]] + list(loop.loop_cond._control_inputs),
                            merge_values + merge_indices + consts, loop.key, loop.outside_sources, aliases)
    body_plan = compile_sub([n._inputs[0] for n in loop.next_iterations] +
                            list(dict.fromkeys(c for n in loop.next_iterations for c in n._control_inputs)),
                            merge_values + merge_indices + switched + consts + [pred_tensor], loop.key,
                            loop.outside_sources, aliases)
    enter_moves = [mover(e, m) for e, m in zip(loop.var_enters, merges)]
    next_moves = [mover(n, m) for n, m in zip(loop.next_iterations, merges)]
    switch_moves = [mover(m, s) for m, s in zip(merges, switches) if s is not None]
    exit_at = [switches.index(x._inputs[0]._op) for x in loop.exits]
    exit_moves = [mover(merges[i], x) for i, x in zip(exit_at, loop.exits)]
    n_vars, loop_cond, has_switch = len(merges), loop.loop_cond, [s is not None for s in switches]
    first, later = [np.int32(0)] * n_vars, [np.int32(1)] * n_vars
    direct = all(has_switch) and not any(switch_moves) and not any(next_moves)  # no copies between iterations
    targets = sum(len(n._control_inputs) for n in loop.next_iterations)
    width = int(loop.var_enters[0]._attrs.get("parallel_iterations", 1)) if loop.var_enters else 1
    pipeline = None
    if pool_of is not None and width > 1:
        from adplace.runtime import loop_pipeline  # noqa: PLC0415 - it runs sub-plans (executor imports this module)
        if loop_pipeline.can_pipeline(body_plan, n_vars, targets, direct):
            pipeline = loop_pipeline.PipelinedLoop(cond_plan, body_plan, n_vars, width, pool_of)

    def run(*values):
        state = [_moved(move, v) for move, v in zip(enter_moves, values[:n_vars])]
        invariants = list(values[n_vars:])
        indices = first
        deadline = getattr(_state, "deadline", None)
        cond_fn, body_fn = cond_plan.fn, body_plan.fn
        timing = pipeline is not None and pipeline.worth_it is None  # still to learn whether threads would pay
        iteration, started = 0, time.perf_counter_ns()
        in_turn = pipeline is None or not pipeline.worth_it  # read once: another run may decide it meanwhile
        if not in_turn:
            state = pipeline.run(state, invariants, read_predicate, deadline, deadline_error, loop_cond)
        while in_turn:
            if deadline is not None and time.perf_counter_ns() > deadline.at_ns:
                raise deadline_error(deadline, loop_cond)
            if timing and iteration == CALIBRATION_ITERATIONS:
                timing = False
                if pipeline.judge((time.perf_counter_ns() - started) // iteration):  # the rest on the threads
                    state = pipeline.run(state, invariants, read_predicate, deadline, deadline_error, loop_cond,
                                         first_iteration=iteration)
                    break
            iteration += 1
            pred = read_predicate(cond_fn(state + indices + invariants)[0])
            if not (bool(pred) if type(pred) is np.bool_ else predicate(loop_cond, pred)):  # NumPy's scalar: fast
                break
            through = state if direct else [_moved(move, v) for move, v, has in
                                            zip(switch_moves, state, has_switch) if has]
            results = body_fn(state + indices + through + invariants + [pred])
            state = results[:n_vars] if direct else [_moved(move, v) for move, v in zip(next_moves, results)]
            indices = later
        exits = tuple(_moved(move, state[i]) for move, i in zip(exit_moves, exit_at))
        return exits[0] if len(exits) == 1 else exits
    run.cond_plan, run.body_plan = cond_plan, body_plan  # for inspection (what an iteration runs and copies)
    run.pipeline = pipeline
    return run


def _moved(move, value):
    return value if move is None else move(value)


class LoopIndex:
    """The loops among a plan's ops (at the plan's own frame depth): which ops are in one, and where each ends."""

    def __init__(self, order: list, frame: tuple, fed: set):
        frames = frames_of(order, frame, fed)
        groups: dict = {}
        for op in order:
            key = loop_key(op, frames, len(frame))
            if key is not None:
                groups.setdefault(key, []).append(op)
        self.member = {op._id for ops in groups.values() for op in ops}
        self._last = {ops[-1]._id: (key, ops) for key, ops in groups.items()}
        self._frames = frames
        self.count = len(groups)
        self.order = _units_in_order(order, groups) if groups else order



    def check_fetches(self, fetch_elements: list) -> None:
        """A tensor or op inside a loop has a value per iteration, none of which a run can return: TF's
        InvalidArgumentError, naming it."""
        for element in fetch_elements:
            op = getattr(element, "_op", element)
            if op._id in self.member and op._type not in EXITS:
                frame = self._frames.get(op._id, ("?",))[-1]
                name = getattr(element, "name", op.name)
                raise errors.InvalidArgumentError(None, op, f"Cannot fetch '{name}': it is computed in every iteration "
                                                  f"of the while loop '{frame}'; fetch the loop's outputs (or write "
                                                  f"it to a TensorArray)")

    def complete_at(self, op) -> Loop | None:
        """The loop whose last op (in plan order) is `op`, ready to become a step; None for its other ops."""
        entry = self._last.get(op._id)
        return None if entry is None else Loop(*entry, self._frames)


def _units_in_order(order: list, groups: dict) -> list:
    """`order` with each loop's ops together, after everything its ops read and before everything reading it (ops a
    gradient adds to a loop come late in creation order), and otherwise as it was."""
    unit = {}
    for key, ops in groups.items():
        for op in ops:
            unit[op._id] = key
    position = {op._id: i for i, op in enumerate(order)}
    members: dict = {}
    for op in order:
        members.setdefault(unit.get(op._id, op._id), []).append(op)
    needs: dict = {u: set() for u in members}
    for u, ops in members.items():
        for op in ops:
            for source in [t._op for t in op._inputs] + list(op._control_inputs):
                if source._id in position:
                    v = unit.get(source._id, source._id)
                    if v != u:
                        needs[u].add(v)
    waiting = {u: len(vs) for u, vs in needs.items()}
    readers: dict = {u: [] for u in members}
    for u, vs in needs.items():
        for v in vs:
            readers[v].append(u)
    first = {u: position[ops[0]._id] for u, ops in members.items()}
    ready = [(first[u], i, u) for i, u in enumerate(members) if not waiting[u]]
    heapq.heapify(ready)
    out, tiebreak = [], len(members)
    while ready:
        _, _, u = heapq.heappop(ready)
        out.extend(members[u])
        for r in readers[u]:
            waiting[r] -= 1
            if not waiting[r]:
                tiebreak += 1
                heapq.heappush(ready, (first[r], tiebreak, r))
    if len(out) != len(order):
        raise errors.InvalidArgumentError(None, None, "The graph's while loops form a cycle adplace cannot order")
    return out
