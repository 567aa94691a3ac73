"""The plan pass that stops computing values nothing reads (grappler's DependencyOptimizer, its NoOp conversion).

TF1's gradients put each op's input gradients behind a `tuple` gate (`gate_gradients=GATE_OP`): an Identity per
gradient, waiting on a group of all of them. The gradient of an input nobody differentiates (the batch `x` of
`x @ w`) is then reached only through that gate's control edge, yet computing it costs as much as the gradient that
is used. Grappler converts such an op to a NoOp: a stateless op whose outputs no op reads, only waits on, is not
computed, and what waited on it waits on its inputs instead. This pass does the same to a plan's steps.

Converted: a step whose op is stateless and free of side effects (no reference inputs, no resource or variant
values), has outputs, is not fetched, and whose outputs no remaining step reads (transfers included) nor any fetch
returns; a step reading only converted values is converted in turn. As in grappler, Assert, CheckNumerics,
ControlTrigger, control flow, placeholders, function calls and reads of a variable (reference inputs) are never
converted.
A step constant folding simplified (reading its data input alone) converts as its op would. A converted step stays
in the plan, reading what its op waits on (the values its inputs come from, or what a converted producer waited
on), and returns nothing: step stats still list its op, and a parallel run still orders every op waiting on it after
its inputs. Its kernel no longer runs, so it raises nothing (as in TF). Plans a cond may leave values dead in and a
loop's sub-plans are left as they are. Turned off by
`ConfigProto(graph_options=GraphOptions(rewrite_options=RewriterConfig(dependency_optimization=RewriterConfig.OFF)))`.
"""
from __future__ import annotations

from adplace.kernels.registration import constant_kernel
from adplace.runtime.constant_folding import foldable_op
from adplace.runtime.plan_slots import as_tuple as _as_tuple

_KEEP = frozenset({"Assert", "CheckNumerics", "ControlTrigger"})
_NOTHING = ()


def enabled(config) -> bool:
    """Whether a session with ConfigProto `config` converts unread steps (dependency_optimization not OFF)."""
    from adplace.runtime import options

    return config.graph_options.rewrite_options.dependency_optimization != options.RewriterConfig.OFF


_waits = constant_kernel(None)  # a converted step's kernel: it only orders what waits on it after what it reads


def _convertible(op) -> bool:
    """Whether `op` may go uncomputed when no one reads its outputs (grappler's SafeToConvertToNoOp)."""
    return bool(op._outputs) and op._type not in _KEEP and foldable_op(op)  # a variable's read has a ref input


def optimize(plan_lists: tuple, transfer_at: dict, preserved: set, fetch_slots: list, n_slots: int,
             simplified: set | frozenset = frozenset()) -> list:
    """Convert the plan's unread steps in place (kernels, ins, outs, ops, devices); return their ops, in step order.

    `preserved`: the ids of the fetched ops; `fetch_slots`: the slots the run returns, of `n_slots`; `simplified`:
    the ids of the ops whose steps simplification left reading their data input alone.
    """
    kernels, ins, outs, ops, _ = plan_lists
    reads = [0] * n_slots  # slot -> how many steps that stay (or fetches) read it
    for in_slots in ins:
        if type(in_slots) is int:
            reads[in_slots] += 1
        else:
            for s in in_slots:
                reads[s] += 1
    for s in fetch_slots:
        reads[s] += 1
    converted: dict[int, tuple] = {}  # step -> the slots it now waits on
    producer: dict[int, int] = {}
    for index in range(len(ops) - 1, -1, -1):
        out = outs[index]
        if type(out) is int:  # most steps: one output, read (decided first: a plan may hold millions of steps)
            if reads[out]:
                continue
            out_slots: tuple = (out,)
        else:
            out_slots = tuple(s for s in out if s is not None)
            if not out_slots or any(reads[s] for s in out_slots):
                continue
        op = ops[index]
        in_slots = _as_tuple(ins[index])
        if index in transfer_at or op._id in preserved or not _convertible(op) or \
                len(in_slots) != len(op._inputs) and op._id not in simplified:
            continue
        converted[index] = _NOTHING
        for s in out_slots:
            producer[s] = index
        for s in in_slots:
            reads[s] -= 1
    if not converted:
        return []
    for index in sorted(converted):  # producers first: a reader of a converted value waits on what it waited on
        waits: dict = {}
        for s in _as_tuple(ins[index]):
            waits.update(dict.fromkeys(converted[producer[s]] if s in producer else (s,)))
        converted[index] = tuple(waits)
        kernels[index], ins[index], outs[index] = _waits, converted[index], _NOTHING
    return [ops[index] for index in sorted(converted)]
