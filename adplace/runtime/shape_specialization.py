"""Plans specialized to the shapes their fed values take (what XLA and JAX do by compiling per input shape, here
for TF1 plans): a placeholder of unknown shape leaves its gradient's shape arithmetic (Shape, BroadcastGradientArgs,
reduce_mean's axes) to run each step, and the reductions and reshapes that arithmetic feeds to compute, where a plan
built for the shapes seen folds all of it and simplifies the rest away (runtime/simplification.py).

A plan with run-time shape arithmetic (steps keyed on shapes: runtime/constant_folding.py) and fed tensors of
partly unknown shape gets `ShapeVariants`. Each run looks its fed values' shapes up there: the second run with a
combination of shapes builds the plan for it (once), and runs with it take that plan from then on. A combination
for which the specialized plan would run as many steps as the general one, or would not let the feed converters
lend it the caller's arrays as they lend them the general one, keeps the general one; past MAX_VARIANTS
combinations new ones do too. Variants are plans of their own (modes, compilation, fusion, traces);
step stats list the same nodes on the same devices. Plans with conds or loops, too large, or of sessions that do
not fold constants are not specialized.

Static shapes are refined by the ops' own shape functions (`Refiner`), re-run on their inputs' refined shapes and
on the values folding computed as the plan is built (TF's shape inference with constant inputs), and merged with
the ops' static shapes. A shape function that raises, or that disagrees with a static shape, refines nothing: the
step then runs its kernel, which raises TF's error naming its op if the values do not fit.
"""
from __future__ import annotations

import logging
import threading
from typing import Callable

from adplace.framework.operation import Tensor
from adplace.framework.tensor_shape import TensorShape
from adplace.framework.tensor_util import values_known
from adplace.runtime.constant_folding import NEVER_FOLDED
from adplace.runtime.feeds import borrowable_feeds

SPECIALIZE_AFTER = 2      # runs with a combination of fed shapes before its plan is built
MAX_VARIANTS = 8          # specialized plans per plan
MAX_SEEN = 256            # combinations counted before the counts start over
MAX_STEPS = 20_000        # a larger plan is not specialized: each variant costs a plan's build
_log = logging.getLogger("adplace")


class Refiner:
    """The static shapes of a plan's slots, refined from its fed values' shapes as a plan pass visits its steps."""

    def __init__(self, fed: dict):
        self.shapes: dict[int, TensorShape] = dict(fed)  # slot -> refined shape (only where it refines)

    def shape(self, slot: int, tensor) -> TensorShape:
        """The shape the value in `slot` (of `tensor`) has in every run of the plan."""
        refined = self.shapes.get(slot)
        return tensor._shape if refined is None else refined

    def step(self, op, in_slots: tuple, out_slots: tuple, known: dict, transfer: bool) -> None:
        """Refine a step's output shapes from its inputs' refined shapes and folded values (`known`: slot ->
        value); a transfer passes its input's shape on."""
        shapes = self.shapes
        if transfer:
            if in_slots[0] in shapes:
                shapes[out_slots[0]] = shapes[in_slots[0]]
            return
        if op._type in NEVER_FOLDED or len(in_slots) != len(op._inputs) or not op._outputs:
            return
        if not any(s in shapes or s in known and t._op._type != "Const" for s, t in zip(in_slots, op._inputs)):
            return  # nothing its shape function did not see when the graph was built
        stand_ins, values = [], {}
        for slot, t in zip(in_slots, op._inputs):
            refined = shapes.get(slot)
            if refined is None and slot not in known:
                stand_ins.append(t)
                continue
            stand_in = Tensor(t._op, t._value_index, t._dtype, t._shape if refined is None else refined)
            if slot in known:
                values[stand_in] = known[slot]
            stand_ins.append(stand_in)
        try:
            with values_known(values):
                specs = op._op_def.infer(stand_ins, dict(op._attrs), op._name)
        except Exception:  # noqa: BLE001 - values that do not fit: the kernel raises TF's error when it runs
            return
        for slot, t, spec in zip(out_slots, op._outputs, specs):
            try:
                merged = t._shape.merge_with(spec[1])
            except (ValueError, TypeError):
                continue
            if slot is not None and merged.as_tuple() != t._shape.as_tuple():
                shapes[slot] = merged


class ShapeVariants:
    """A plan's specialized plans, by the shapes of the fed values at `positions` (those of partly unknown static
    shape). `select(feeds)` gives the plan a run with those feeds takes; `build(shapes)` (fed tensor ->
    TensorShape) builds a specialized plan."""

    def __init__(self, generic, positions: tuple, build: Callable):
        self.generic, self.positions, self._build = generic, positions, build
        self.table: dict = {}  # shapes -> plan (a variant, or the general plan where one gains nothing)
        self.seen: dict = {}   # shapes -> runs so far, until the plan for them is built
        self._lock = threading.Lock()

    def key(self, feeds) -> tuple | None:
        """The shapes of `feeds` at `positions`, or None for a value without one."""
        try:
            return tuple([feeds[i].shape for i in self.positions])
        except AttributeError:
            return None

    def select(self, feeds):
        """The plan to run `feeds` with (counting this run towards a specialized plan for their shapes)."""
        positions = self.positions
        try:  # one or two fed values of unknown shape (most programs) without a comprehension's frame
            if len(positions) == 1:
                key = (feeds[positions[0]].shape,)
            elif len(positions) == 2:
                key = (feeds[positions[0]].shape, feeds[positions[1]].shape)
            else:
                key = self.key(feeds)
        except AttributeError:
            return self.generic
        if key is None:
            return self.generic
        plan = self.table.get(key)
        return self._count(key) if plan is None else plan

    def lookup(self, feeds):
        """The plan `select(feeds)` would give now, counting nothing and building nothing."""
        return self.table.get(self.key(feeds)) or self.generic

    def _count(self, key: tuple):
        with self._lock:
            plan = self.table.get(key)
            if plan is not None:
                return plan
            seen = self.seen.get(key, 0) + 1
            if seen < SPECIALIZE_AFTER or len(self.table) >= MAX_VARIANTS:
                if len(self.seen) >= MAX_SEEN:
                    self.seen.clear()
                self.seen[key] = seen
                return self.generic
            self.seen.pop(key, None)
            generic = self.generic
            tensors = generic.feed_tensors
            try:
                variant = self._build({tensors[i]: TensorShape(shape) for i, shape in zip(self.positions, key)})
            except Exception:  # noqa: BLE001 - the general plan runs these shapes as it always did
                _log.warning("adplace: could not specialize a plan to fed shapes %s; the general plan runs them",
                                 key, exc_info=True)
                variant = None
            if variant is None or len(variant.kernels) >= len(generic.kernels) and \
                    len(variant.simplified_ops) <= len(generic.simplified_ops) or not _borrows_alike(generic, variant):
                variant = generic
            self.table[key] = variant
            return variant


def _borrows_alike(generic, variant) -> bool:
    """Whether `variant` may read every fed array the general plan's feed converters lend it (they were made for the
    general plan: feeds.borrowable_feeds)."""
    return all(b or not a for a, b in zip(borrowable_feeds(generic), borrowable_feeds(variant)))


def variants_for(plan, build: Callable) -> ShapeVariants | None:
    """`plan`'s ShapeVariants when specializing may pay: shape arithmetic on run-time values, fed tensors of partly
    unknown shape, no conds or loops, at most MAX_STEPS steps. `build(shapes)` builds a specialized plan."""
    if not plan.keyed_ops or not plan.fuse_on_cpu or plan.has_loops or len(plan.kernels) > MAX_STEPS:
        return None
    positions = tuple(i for i, t in enumerate(plan.feed_tensors) if not t._shape.is_fully_defined())
    return ShapeVariants(plan, positions, build) if positions else None
