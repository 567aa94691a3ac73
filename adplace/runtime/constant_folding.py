"""The plan pass that computes once, when a plan is built, the values no run can change (TF's grappler folding),
and once per shape the values that depend only on the shapes of run-time values.

Folded: a step whose op is stateless and deterministic, reads only folded values (a Const's, or a folded op's) and
waits only on folded ops (control inputs); Shape, ShapeN, Size and Rank also fold when their input's static shape
is fully known (Rank: its rank), whatever computes that input. The pass calls the step's own kernel, so a folded
value is the very value the step would produce; a step whose kernel raises stays, to raise TF's error naming its
op when the plan runs.

Keyed on shapes: a step that reads a run-time value only through Shape/ShapeN/Size/Rank (the value is its source),
and otherwise folded or keyed values: the shape arithmetic of gradients with dynamic batch sizes (Shape,
BroadcastGradientArgs, the axes and multiples of reduce_mean's gradient, ones_like). Such a step's value is computed
by its own kernels the first time a combination of its sources' shapes is seen, then looked up by those shapes
(`ShapeKeyed`); values over MAX_ELEMENTS elements are recomputed each run instead. A kernel that raises raises in
the run that computes it, TF's error naming the op that failed (the lookup's `failed_step`).

As grappler replaces a folded subgraph by Const nodes holding the values the rest of the graph reads, a folded op
whose value a remaining step reads (or that a remaining step waits on) keeps its step, which now returns the stored
value and reads nothing, and a keyed op read or waited on by a remaining step keeps its step, which reads only its
sources; the other steps are dropped. Fetched ops are never folded nor keyed (grappler preserves fetch nodes), so a
fetch is computed by its own step, as before. A stored value is never a buffer a kernel may overwrite: the plan
holds a reference to it, as a Const's kernel does. Step stats list the same nodes on the same devices as without
folding (a dropped step's op as a node of no time at the step's start, `Plan.folded_nodes`), and partition graphs
the same ops: what changes is what runs, not the placement or the shape of a trace.

Steps that stay are then simplified where their folded inputs make them compute nothing or only a reshape
(runtime/simplification.py). In a plan specialized to its fed values' shapes (runtime/shape_specialization.py), the
pass refines the slots' static shapes as it goes (`refiner`), so the Shape ops of fed values fold instead of being
keyed.

Neither folded nor keyed: stateful or random ops, variables, placeholders, ops with reference inputs, resource or
variant values, control flow (Switch, Merge, while frames: a loop's sub-plans are not folded), plans a cond may
leave values dead in (only what no dead value reaches folds; nothing is keyed), steps on CUDA devices (their values
live in device memory), cross-device copies (placement and transfers stay as they were), and values of more than
MAX_ELEMENTS elements (a Const of any size folds: it holds its value already). Both are turned off by
`ConfigProto(graph_options=GraphOptions(rewrite_options=RewriterConfig(constant_folding=RewriterConfig.OFF)))`.
"""
from __future__ import annotations

from typing import Callable, NamedTuple

import numpy as np

from adplace.framework import dtypes as _dtypes
from adplace.framework.operation import is_variable_op
from adplace.framework.tensor_shape import TensorShape
from adplace.kernels.registration import constant_kernel
from adplace.runtime import simplification as _simplification
from adplace.runtime.plan_slots import as_tuple as _as_tuple

MAX_ELEMENTS = 1024  # a computed value larger than this is left to run: shapes and axes are small
NEVER_FOLDED = frozenset({"Switch", "RefSwitch", "Merge", "RefMerge", "Enter", "RefEnter", "Exit", "RefExit",
                          "NextIteration", "RefNextIteration", "LoopCond", "ControlTrigger", "Placeholder",
                          "PlaceholderV2", "PlaceholderWithDefault", "PyFunc", "PyFuncStateless", "EagerPyFunc",
                          "PartitionedCall", "StatefulPartitionedCall", "SymbolicGradient"})
_SHAPE_OPS = frozenset({"Shape", "ShapeN", "Size", "Rank"})
_OPAQUE = frozenset({_dtypes.resource, _dtypes.variant})


def enabled(config) -> bool:
    """Whether a session with ConfigProto `config` folds constants (RewriterConfig.constant_folding not OFF)."""
    from adplace.runtime import options

    return config.graph_options.rewrite_options.constant_folding != options.RewriterConfig.OFF


def foldable_op(op) -> bool:
    """Whether `op` may be computed at plan time at all: stateless, deterministic, plain values in and out."""
    op_def = op._op_def
    if op._type in NEVER_FOLDED or op_def.is_stateful or op_def.ref_inputs or is_variable_op(op):
        return False
    return not any(t._dtype._is_ref or t._dtype.base_dtype in _OPAQUE for t in (*op._inputs, *op._outputs))


def static_shape(slot: int, tensor) -> TensorShape:
    """The shape a slot's value has in every run: its tensor's static shape (a specialized plan refines it)."""
    return tensor._shape


def _static_shapes(op, in_slots: tuple, shape_of: Callable) -> list | None:
    """The static shapes a Shape/ShapeN/Size/Rank op reads (Rank: only the rank), or None when one is unknown."""
    shapes = [shape_of(s, t) for s, t in zip(in_slots, op._inputs)]
    if op._type == "Rank":
        return shapes if all(s.ndims is not None for s in shapes) else None
    return shapes if all(s.is_fully_defined() for s in shapes) else None


def _stand_in(shape, dtype) -> np.ndarray:
    """A value of `shape` (only its shape matters: the kernel reads nothing else), taking no memory per element."""
    dims = shape.as_tuple() if shape.is_fully_defined() else (1,) * shape.ndims
    return np.broadcast_to(np.zeros((), dtype=np.dtype(dtype.as_numpy_dtype)), dims)


def _small(value, is_const: bool) -> bool:
    """Whether a kernel's result may be held as a plan constant: a NumPy value, small unless a Const's own."""
    if type(value) is np.ndarray:
        return is_const or value.size <= MAX_ELEMENTS
    return isinstance(value, np.generic)


def _evaluate(kernel, args: list, n_out: int):
    """The kernel's outputs as a tuple (None when it raises or gives what a plan cannot hold)."""
    try:
        result = kernel(*args)
    except Exception:  # noqa: BLE001 - the step stays in the plan and raises (naming its op) when it runs
        return None
    return (result,) if n_out == 1 else tuple(result) if n_out else ()


def _stored(values: tuple, n_out: int):
    """A step kernel returning a folded op's stored value(s), as the op's kernel returned them."""
    return constant_kernel(values[0] if n_out == 1 else values)


def _too_large(op) -> bool:
    """Whether a computed output is known, before computing it, to exceed MAX_ELEMENTS."""
    return any(t._shape.is_fully_defined() and t._shape.num_elements() > MAX_ELEMENTS for t in op._outputs)


def _candidate(index: int, op, plan_lists: tuple, transfer_at: dict, preserved: set, dead: set | None) -> bool:
    """Whether step `index` may be computed outside the run at all (its inputs aside)."""
    kernels, ins, outs, ops, devices = plan_lists
    if index in transfer_at or op._id in preserved or devices[index].is_cuda or not foldable_op(op):
        return False
    in_slots = _as_tuple(ins[index])
    if len(in_slots) != len(op._inputs):
        return False  # extra slots: a liveness check (cond)
    return dead is None or not any(s is not None and s in dead for s in (*in_slots, *_as_tuple(outs[index])))


class _Folding:
    """What the pass found: values computed now, and the steps computed once per distinct shape of their sources."""

    def __init__(self):
        self.known: dict[int, object] = {}     # slot -> folded value
        self.folded: dict[int, tuple] = {}     # step -> the values its kernel gave
        self.folded_ids: set[int] = set()
        self.keyed: dict[int, tuple] = {}      # step -> the slots whose shapes its values follow (sources)
        self.producer: dict[int, int] = {}     # slot -> keyed step writing it
        self.keyed_ids: set[int] = set()

    def fold_now(self, index: int, op, kernel, in_slots: tuple, out_slots: tuple, shape_of: Callable) -> bool:
        """Compute step `index` now when what it reads is known (or, for Shape ops, its input's static shape)."""
        if any(c._id not in self.folded_ids for c in op._control_inputs):
            return False  # a control input that runs each step
        known = self.known
        if all(s in known for s in in_slots):
            args = [known[s] for s in in_slots]
        elif op._type in _SHAPE_OPS and (shapes := _static_shapes(op, in_slots, shape_of)) is not None:
            args = [_stand_in(s, t._dtype.base_dtype) for s, t in zip(shapes, op._inputs)]
        else:
            return False
        is_const = op._type == "Const"
        if not is_const and _too_large(op):
            return False
        values = _evaluate(kernel, args, len(op._outputs))
        if values is None or len(values) != len(out_slots) or not all(_small(v, is_const) for v in values):
            return False
        for slot, value in zip(out_slots, values):
            if slot is not None:
                known[slot] = value
        self.folded_ids.add(op._id)
        self.folded[index] = values
        return True

    def key_on_shapes(self, index: int, op, in_slots: tuple, out_slots: tuple) -> bool:
        """Mark step `index` as computed once per shape of its sources when its values depend on shapes only: a
        Shape/Size/Rank of a run-time value, or an op on such values and folded ones."""
        if _too_large(op) or any(c._id not in self.folded_ids and c._id not in self.keyed_ids
                                 for c in op._control_inputs):
            return False
        sources: set = set()
        for slot, tensor in zip(in_slots, op._inputs):
            if slot in self.known:
                continue
            producer = self.producer.get(slot)
            if producer is not None:
                sources.update(self.keyed[producer])
            elif op._type in _SHAPE_OPS and tensor._dtype.base_dtype is not _dtypes.string:
                sources.add(slot)
            else:
                return False
        if not sources:
            return False
        self.keyed[index] = tuple(sorted(sources))
        self.keyed_ids.add(op._id)
        for slot in out_slots:
            self.producer[slot] = index
        return True

    def program(self, root: int, plan_lists: tuple) -> list:
        """The keyed steps `root` needs (itself last), in step order: (kernel, input slots, output slots, op)."""
        kernels, ins, outs, ops, _ = plan_lists
        needed, stack = set(), [root]
        while stack:
            index = stack.pop()
            if index not in needed:
                needed.add(index)
                stack.extend(self.producer[s] for s in _as_tuple(ins[index]) if s in self.producer)
        return [(kernels[i], _as_tuple(ins[i]), _as_tuple(outs[i]), ops[i]) for i in sorted(needed)]


class ShapeKeyed:
    """The kernel of a step whose value depends only on the shapes of its sources (run-time values): computed by the
    steps it replaces the first time a combination of shapes is seen, then looked up. `failed_step` names the
    replaced step whose kernel raised (executor.Plan.failed_step asks a kernel's `memo`)."""

    MAX_ENTRIES = 64  # distinct shape combinations kept; more clears the table

    def __init__(self, program: list, sources: tuple, known: dict, device):
        self.program, self.sources, self.device = program, sources, device
        self.constants = {s: known[s] for _, in_slots, _, _ in program for s in in_slots if s in known}
        self.table: dict = {}
        self.n_out = len(program[-1][3]._outputs)
        table, compute = self.table, self.compute
        if len(sources) == 1:
            def kernel(a):
                try:
                    key = a.shape
                except AttributeError:  # not an array: a kernel's Python value
                    key = np.shape(a)
                hit = table.get(key)
                return compute((a,), key) if hit is None else hit
        elif len(sources) == 2:
            def kernel(a, b):
                try:
                    key = (a.shape, b.shape)
                except AttributeError:
                    key = (np.shape(a), np.shape(b))
                hit = table.get(key)
                return compute((a, b), key) if hit is None else hit
        else:
            def kernel(*values):
                key = tuple([np.shape(v) for v in values])
                hit = table.get(key)
                return compute(values, key) if hit is None else hit
        kernel.memo = self
        self.kernel = kernel

    def compute(self, values: tuple, key):
        """Run the replaced steps on this run's sources; keep the result when it is small."""
        slots = dict(self.constants)
        slots.update(zip(self.sources, values))
        result = None
        for member, (kernel, in_slots, out_slots, op) in enumerate(self.program):  # noqa: B007 - failed_step reads it
            result = kernel(*[slots[s] for s in in_slots])
            if len(out_slots) == 1:
                slots[out_slots[0]] = result
            else:
                slots.update((s, v) for s, v in zip(out_slots, result) if s is not None)
        outputs = (result,) if self.n_out == 1 else tuple(result)
        if all(_small(v, False) for v in outputs):
            if len(self.table) >= self.MAX_ENTRIES:
                self.table.clear()
            self.table[key] = result
        return result

    def failed_step(self, exc: BaseException):
        """The replaced step whose kernel raised `exc` (an executor Step), or None."""
        from adplace.runtime.executor import Step

        tb = exc.__traceback__
        while tb is not None:
            frame = tb.tb_frame
            if frame.f_code is ShapeKeyed.compute.__code__ and frame.f_locals.get("self") is self:
                member = frame.f_locals.get("member")
                if member is None:
                    return None
                kernel, in_slots, out_slots, op = self.program[member]
                return Step(kernel, in_slots, out_slots, (), op, self.device, None)
            tb = tb.tb_next
        return None


class Folded(NamedTuple):
    """What `fold` did: the new transfer_at, the folded ops, the ops computed once per shape of their sources, the
    simplified ones (runtime/simplification.py; all in step order) and, for traces, (op, device, values or None) of
    the ops whose steps were dropped."""

    transfer_at: dict
    folded_ops: list
    keyed_ops: list
    simplified_ops: list
    nodes: list


def fold(plan_lists: tuple, transfer_at: dict, preserved: set, dead: set | None, refiner=None) -> Folded:
    """Fold the steps of a plan's step lists (kernels, ins, outs, ops, devices) in place, then simplify the steps
    that stay where their folded inputs let them (runtime/simplification.py).

    `preserved`: the ids of the fetched ops, which are not folded; `dead`: the slots a cond may leave dead (None:
    the plan has no Switch: only then are steps keyed on shapes or simplified). `refiner` (a plan specialized to its
    fed values' shapes: runtime/shape_specialization.py) refines the slots' static shapes as the pass goes.
    """
    kernels, ins, outs, ops, devices = plan_lists
    found = _Folding()
    folded, keyed, folded_ids = found.folded, found.keyed, found.folded_ids
    shape_of = static_shape if refiner is None else refiner.shape
    avail: set = set()  # slots folded or keyed so far
    read: set = set()   # of those, the slots steps that stay read
    simplifiable: list = []  # steps of a kind simplification may rewrite
    kinds = _simplification.KINDS
    with np.errstate(all="ignore"):  # runs are silent about floating point, as TF is
        for index, op in enumerate(ops):
            in_slots = ins[index]
            if refiner is not None:
                refiner.step(op, _as_tuple(in_slots), _as_tuple(outs[index]), found.known, index in transfer_at)
            if op._type in kinds:
                simplifiable.append(index)
            if type(in_slots) is int:
                if in_slots not in avail and op._type not in _SHAPE_OPS:
                    continue  # it reads a value computed in the run: the common case, decided first
                in_slots = (in_slots,)
            elif not in_slots and op._type == "Const":  # the most common fold, made quick for large graphs
                if op._id not in preserved and index not in transfer_at and not devices[index].is_cuda and \
                        all(c._id in folded_ids for c in op._control_inputs):
                    avail.add(outs[index])
                    value = found.known[outs[index]] = kernels[index]()
                    folded[index] = (value,)
                    folded_ids.add(op._id)
                continue
            elif op._type not in _SHAPE_OPS and not all(s in avail for s in in_slots):
                read.update(s for s in in_slots if s in avail)
                continue
            if _candidate(index, op, plan_lists, transfer_at, preserved, dead):
                out_slots = _as_tuple(outs[index])
                if found.fold_now(index, op, kernels[index], in_slots, out_slots, shape_of) or \
                        dead is None and found.key_on_shapes(index, op, in_slots, out_slots):
                    avail.update(out_slots)
                    continue
            read.update(s for s in in_slots if s in avail)
    if not folded and not keyed:
        return Folded(transfer_at, [], [], [], [])
    simplified = [] if dead is not None else [
        index for index in simplifiable if index not in folded and index not in keyed
        and _simplifiable(index, ops[index], plan_lists, transfer_at, preserved)
        and _simplification.simplify(index, plan_lists, found.known, shape_of)]
    if simplified:  # a simplified step may no longer read its folded axes or shape
        read = {s for index, in_slots in enumerate(ins) if index not in folded and index not in keyed
                for s in _as_tuple(in_slots) if s in avail}
    roots = [index for index in keyed if ops[index]._control_outputs  # an op waiting on it sees its error, if any
             or any(s in read for s in _as_tuple(outs[index]))]
    memos = [ShapeKeyed(found.program(index, plan_lists), keyed[index], found.known, devices[index])
             for index in roots]  # every program is read off the original steps before any step changes
    for index, memo in zip(roots, memos):
        kernels[index] = memo.kernel
        ins[index] = memo.sources[0] if len(memo.sources) == 1 else memo.sources
    stored = {index for index in folded if any(s in read for s in _as_tuple(outs[index]))}
    stays = {ops[index]._id for index in (*roots, *stored)}
    for index in sorted(folded, reverse=True):  # an op that a staying op waits on stays too: control inputs run
        if index not in stored and any(c._id in stays for c in ops[index]._control_outputs):
            stored.add(index)
            stays.add(ops[index]._id)
    for index in stored:
        if ops[index]._type != "Const":  # a Const's kernel returns its stored value already
            values = folded[index]
            kernels[index], ins[index] = _stored(values, len(values)), ()
    folded_ops, keyed_ops = [ops[index] for index in sorted(folded)], [ops[index] for index in sorted(keyed)]
    simplified_ops = [ops[index] for index in simplified]
    dropped = (folded.keys() | keyed.keys()).difference(roots, stored)
    nodes = [(ops[index], devices[index], folded.get(index)) for index in sorted(dropped)]
    if dropped:
        kept = [index for index in range(len(ops)) if index not in dropped]
        new_index = {index: k for k, index in enumerate(kept)}
        for lst in plan_lists:
            lst[:] = [lst[index] for index in kept]
        transfer_at = {new_index[i]: t for i, t in transfer_at.items()}
    return Folded(transfer_at, folded_ops, keyed_ops, simplified_ops, nodes)


def _simplifiable(index: int, op, plan_lists: tuple, transfer_at: dict, preserved: set) -> bool:
    """Whether a step that stays may be rewritten by simplification: on the host, not fetched, not a transfer,
    reading exactly its op's inputs."""
    _, ins, _, _, devices = plan_lists
    return index not in transfer_at and op._id not in preserved and not devices[index].is_cuda and \
        len(_as_tuple(ins[index])) == len(op._inputs)
