"""The plan pass that fuses chains of elementwise ops into one kernel: CUDA on a GPU (adplace.kernels.fusion), a
Numba loop on the CPU and virtual GPUs (adplace.kernels.cpu_fusion).

A group is a DAG of fusible steps on one device whose intermediate outputs are read only inside the group and never
fetched; its last step (the root) keeps its place and runs the fused kernel on the group's outside inputs (leaves),
and the other members' steps are dropped. Every member's output has the root's fully known static shape, and every
leaf has that shape or is a scalar. Placement, transfers and results are unchanged; step stats name the members.
Turned off by `ConfigProto(graph_options=GraphOptions(rewrite_options=RewriterConfig(remapping=RewriterConfig.OFF)))`.

On a GPU groups fuse when the plan is built. On the CPU compiling costs far more than a run (hundreds of ms per
loop), so a plan is looked at when it tiers up (`watch_cpu`): groups of MIN_CPU_MEMBERS or more are compiled on a
background thread once the plan has run long enough for them to pay (CPU_FUSION_MIN_NS of estimated unfused time),
and the fused steps replace the plan's in one swap (Plan.adopt); the plan runs unfused meanwhile. Without Numba (the
`jit` extra), or with ADPLACE_CPU_FUSION=0, nothing fuses on the CPU. `wait_cpu_fusion()` waits for pending work.
"""
from __future__ import annotations

import os
import queue
import threading
import warnings
import weakref
from typing import Callable

from adplace.framework.registry import kernel_dtype
from adplace.kernels import cpu_fusion as _cpu_codegen
from adplace.kernels import fused_updates as _fused_updates
from adplace.kernels import fusion as _codegen
from adplace.runtime.plan_slots import as_tuple as _as_tuple

MIN_CPU_MEMBERS = 3             # smaller CPU groups save too little to be worth a compiled loop
MAX_CPU_MEMBERS = 48            # longer chains are cut: a loop this long compiles in well under a second, runs as
                                # fast per op as a longer one, and cut chains often repeat one loop (compiled once)
LONG_ARRAY_ELEMENTS = 2048      # from this many elements loops are cut shorter: LLVM keeps a short body in vector
MAX_CPU_MEMBERS_LONG = 16       # registers (16 ops: a 1,000-op float32 chain of 4,096 to 65,536 elements at 0.19-0.21x
                                # NumPy's loop, against 0.23-0.33x with 48; under 1,024 elements 48 stays faster)
CPU_FUSION_MIN_NS = 20_000_000  # estimated unfused time of a plan's groups, summed over runs, before they compile
STEP_NS, ELEMENT_NS = 1_000, 1  # the estimate: per unfused step, plus per element it computes
CPU_CALL_MAX_ELEMENTS = 64      # longer arrays leave library calls (sin, exp...) to NumPy's SIMD loops


def _fusible(op) -> bool:
    return _codegen.fusible(op._type, kernel_dtype(op)) and len(op._outputs) == 1


def find_groups(ins: list, outs: list, ops: list, devices: list, transfer_at, keep: set, cuda: bool = True,
                min_members: int = 2, max_members: int | Callable | None = None, accept: Callable = _fusible) -> dict:
    """root step -> member steps in order (root last), for groups of `min_members` or more fusible steps (`accept`)
    on CUDA devices (`cuda`) or on the others, none of them in `transfer_at` (transfers and steps left alone); a
    group holding `max_members` (or `max_members(elements of its shape)`) takes no more (the next one starts
    below)."""
    size: dict[int, int] = {}
    readers: dict[int, set] = {}
    for index, slots in enumerate(ins):
        for slot in _as_tuple(slots):
            readers.setdefault(slot, set()).add(index)
    root_of: list = [None] * len(ops)
    for index in range(len(ops) - 1, -1, -1):
        op, device = ops[index], devices[index]
        out = outs[index]
        if index in transfer_at or device.is_cuda != cuda or not accept(op) or \
                len(_as_tuple(ins[index])) != len(op._inputs) or type(out) is not int:
            continue  # a step whose value no one reads (one that only waits: dependency_optimizer) neither
        shape = op._outputs[0]._shape
        if not shape.is_fully_defined() or any(not (t._shape.is_fully_defined() and t._shape.as_tuple() in
                                                    ((), shape.as_tuple())) for t in op._inputs):
            continue
        root_of[index] = index
        users = readers.get(out, ()) if out not in keep else ()
        roots = {root_of[r] for r in users}
        if len(roots) == 1:
            root = roots.pop()
            limit = max_members(shape.num_elements()) if callable(max_members) else max_members
            if root is not None and devices[root] is device and size.get(root, 1) != limit and \
                    ops[root]._outputs[0]._shape.as_tuple() == shape.as_tuple():
                root_of[index] = root
        size[root_of[index]] = size.get(root_of[index], 0) + 1
    groups: dict[int, list] = {}
    for index, root in enumerate(root_of):
        if root is not None:
            groups.setdefault(root, []).append(index)
    return {root: members for root, members in groups.items() if len(members) >= min_members}


def _chain(members: list, ins: list, outs: list, ops: list) -> tuple[list, list, list]:
    """(codegen members, leaf slots, leaf tensors) of a group: members read leaves `x<k>` and temporaries `t<k>`."""
    temp_of = {outs[index]: f"t{k}" for k, index in enumerate(members)}
    leaves: list = []
    leaf_tensors: list = []
    chain = []
    for index in members:
        op = ops[index]
        args = []
        for slot, tensor in zip(_as_tuple(ins[index]), op._inputs):
            if slot in temp_of:
                args.append(temp_of[slot])
            else:
                if slot not in leaves:
                    leaves.append(slot)
                    leaf_tensors.append(tensor)
                args.append(f"x{leaves.index(slot)}")
        chain.append(_codegen.Member(op._type, kernel_dtype(op), op._outputs[0]._dtype.base_dtype, tuple(args)))
    return chain, leaves, leaf_tensors


def fused_kernel(members: list, ins: list, outs: list, ops: list, state):
    """(kernel, leaf slots) computing a group's root from its leaves in one launch on `state`'s device."""
    chain, leaves, tensors = _chain(members, ins, outs, ops)
    kernel = _codegen.compiled(state.cp, _codegen.chain_source(chain, [t._dtype.base_dtype for t in tensors]))
    return state.launcher(kernel, ops[members[-1]]), leaves


def _replace_groups(plan_lists: tuple, transfer_at: dict, fused: dict, made: dict) -> tuple[dict, dict]:
    """Give each root (of `made`: root -> (members, kernel, leaf slots)) its fused kernel and leaves and drop the
    other members' steps, in the lists in place; returns (transfer_at, fused) re-indexed, with the new groups."""
    kernels, ins, _, ops, _ = plan_lists
    dropped = set()
    names = dict(fused)
    for root, (members, kernel, leaves) in made.items():
        kernels[root] = kernel
        ins[root] = leaves[0] if len(leaves) == 1 else tuple(leaves)
        dropped.update(members[:-1])
        names[root] = [ops[index].name for index in members]
    kept = [index for index in range(len(ops)) if index not in dropped]
    new_index = {index: k for k, index in enumerate(kept)}
    for lst in plan_lists:
        lst[:] = [lst[index] for index in kept]
    return ({new_index[i]: t for i, t in transfer_at.items()}, {new_index[r]: n for r, n in names.items()})


def fuse(plan_lists: tuple, transfer_at: dict, keep: set, ctx) -> tuple[dict, dict]:
    """Fuse the GPU groups of a plan's step lists in place; returns (new transfer_at, {root step: member op names})."""
    kernels, ins, outs, ops, devices = plan_lists
    groups = find_groups(ins, outs, ops, devices, transfer_at, keep)
    if not groups:
        return transfer_at, {}
    made = {root: (members, *fused_kernel(members, ins, outs, ops, ctx.cuda_state(devices[root])))
            for root, members in groups.items()}
    return _replace_groups(plan_lists, transfer_at, {}, made)


# --- CPU ----------------------------------------------------------------------------------------------------------
def _cpu_fusible(op) -> bool:
    """Fusible, and not a library call on an array long enough for NumPy's SIMD loop to beat the fused loop's."""
    if not _fusible(op):
        return False
    size = op._outputs[0]._shape.num_elements()  # None when not fully known: find_groups leaves those out
    return not _cpu_codegen.calls_library(op._type, kernel_dtype(op).name) or \
        size is not None and size <= CPU_CALL_MAX_ELEMENTS


def cpu_groups(plan) -> dict:
    """The groups of a plan's steps on non-CUDA devices that CPU fusion would compile (fused steps stay out)."""
    skip = {**plan.transfer_steps, **plan.fused}
    return find_groups(plan.ins, plan.outs, plan.ops, plan.devices, skip, set(plan.fetch_slots), cuda=False,
                       min_members=MIN_CPU_MEMBERS, max_members=cpu_max_members, accept=_cpu_fusible)


def cpu_max_members(elements: int) -> int:
    """The most ops one CPU loop over arrays of `elements` elements takes."""
    return MAX_CPU_MEMBERS if elements < LONG_ARRAY_ELEMENTS else MAX_CPU_MEMBERS_LONG


def _unfused(kernels: list, refs: list) -> Callable:
    """The group computed by its members' own kernels (a fused kernel's fallback): refs >= 0 are leaves, ~k temps."""
    steps = list(zip(kernels, refs))

    def unfused(*leaves):
        temps: list = []
        for kernel, args in steps:
            temps.append(kernel(*[leaves[r] if r >= 0 else temps[~r] for r in args]))
        return temps[-1]
    return unfused


def cpu_fused_kernel(members: list, plan) -> tuple[Callable, list]:
    """(kernel, leaf slots) computing a group's root from its leaves in one compiled loop."""
    chain, leaves, tensors = _chain(members, plan.ins, plan.outs, plan.ops)
    shape = plan.ops[members[-1]]._outputs[0]._shape.as_tuple()
    temp_index = {f"t{k}": ~k for k in range(len(members))}
    refs = [[temp_index[a] if a in temp_index else int(a[1:]) for a in m.args] for m in chain]
    source = _cpu_codegen.loop_source(chain, [t._dtype.base_dtype for t in tensors],
                                      [t._shape.as_tuple() != () for t in tensors])
    fallback = _unfused([plan.kernels[index] for index in members], refs)
    return _cpu_codegen.fused_kernel(source, shape, fallback), leaves


def cpu_fusion_enabled(ctx) -> bool:
    """CPU fusion is on unless the session's RewriterConfig turns remapping off, ADPLACE_CPU_FUSION=0, or Numba is
    not installed."""
    return ctx.fuse_elementwise and _cpu_codegen.enabled()


def watch_cpu(plan, ctx, reinstall: Callable) -> None:
    """At a plan's tier-up: when it has CPU groups, count its runs (through plan.sequential) and queue their
    compilation once they have run CPU_FUSION_MIN_NS (estimated); `reinstall(plan)` re-points plan.fn after the
    fused steps are swapped in."""
    if not (plan.fuse_on_cpu and not plan.has_loops and cpu_fusion_enabled(ctx)):
        return
    groups = cpu_groups(plan)
    if not groups:
        return
    estimate = sum(STEP_NS + ELEMENT_NS * plan.ops[root]._outputs[0]._shape.num_elements()
                   for root, members in groups.items() for _ in members)
    after = max(1, -(-CPU_FUSION_MIN_NS // estimate))
    inner, count, queued, ref = plan.sequential, [0], [], weakref.ref(plan)

    def counted(feeds):
        count[0] += 1
        if count[0] >= after and not queued:
            queued.append(True)
            _worker.submit(ref, reinstall)
        return inner(feeds)
    plan.sequential = counted


def _fuse_plan(plan, reinstall: Callable) -> None:
    """Compile a plan's CPU groups and swap the fused steps in (unless it went parallel meanwhile)."""
    groups = cpu_groups(plan)
    if not groups:
        return
    made = {root: (members, *cpu_fused_kernel(members, plan)) for root, members in groups.items()}
    lists = (list(plan.kernels), list(plan.ins), list(plan.outs), list(plan.ops), list(plan.devices))
    transfer_at, fused = _replace_groups(lists, plan.transfer_steps, plan.fused, made)
    fused_plan = plan.with_steps(lists, transfer_at, fused)
    if plan.mode == "sequential":
        plan.adopt(fused_plan)
        reinstall(plan)


class _Worker:
    """One background thread compiling the queued plans' groups in turn."""

    def __init__(self):
        self._jobs: queue.Queue = queue.Queue()
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()
        self._idle = threading.Condition(self._lock)
        self._pending = 0
        self._warned = False

    def submit(self, plan_ref, reinstall: Callable) -> None:
        with self._lock:
            self._pending += 1
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="adplace-cpu-fusion", daemon=True)
                self._thread.start()
        self._jobs.put((plan_ref, reinstall))

    def _run(self) -> None:
        while True:
            plan_ref, reinstall = self._jobs.get()
            try:
                plan = plan_ref()
                if plan is not None and plan.mode == "sequential":
                    _fuse_plan(plan, reinstall)
            except Exception as exc:  # noqa: BLE001 - the plan keeps running unfused
                if not self._warned:
                    self._warned = True
                    warnings.warn(f"adplace: CPU fusion failed, plans run unfused: {type(exc).__name__}: {exc}",
                                  stacklevel=1)
            finally:
                plan = None
                with self._lock:
                    self._pending -= 1
                    self._idle.notify_all()

    def wait(self, timeout: float | None) -> bool:
        with self._lock:
            return self._idle.wait_for(lambda: self._pending == 0, timeout)


_worker = _Worker()


def _forget_in_child() -> None:
    """A forked child has no compiling thread: it starts its own, with nothing pending."""
    global _worker
    _worker = _Worker()


os.register_at_fork(after_in_child=_forget_in_child)


def wait_cpu_fusion(timeout: float | None = None) -> bool:
    """Wait until no CPU fusion is queued or compiling, nor a small variable's update loop (kernels/fused_updates.py);
    False when `timeout` (seconds) passed first (for each of the two)."""
    return _worker.wait(timeout) & _fused_updates.wait_small_loops(timeout)
