"""The plan pass that lets dense optimizer updates (ApplyAdam, ApplyMomentum, ...) of large variables commit in
place after the plan's last step, instead of computing into new arrays during it.

A step whose kernel offers `commit_later` (kernels/state.py: a dense update with a compiled in-place loop, of a
variable of LOOP_MIN_ELEMENTS or more, without use_locking) takes that form when no later step of the plan reads or
writes any of its variables (a read step, a ref input, a transfer of one), no step reads or fetches its output, and
no later step may run arbitrary code (a py_func may run the session). Plans with while loops or conds are left as
they are. Running, such a kernel checks its inputs and queues the update; the session applies the queue once the
plan has succeeded (runtime/variable_state.py `commit_deferred`), in place where nothing else refers to the arrays.
So no undo record is needed: a failed step has queued nothing into its variables. The updated values are the same,
and no step of the plan could tell the difference: none reads them after the update's position.

Turned off with the buffer forwarding it extends: RewriterConfig(memory_optimization=RewriterConfig.NO_MEM_OPT);
alone by ENABLED = False, for plans compiled meanwhile (benchmarks/deferred_updates.py compares the two).
"""
from __future__ import annotations

from adplace.framework.operation import is_variable_op, ref_variable
from adplace.runtime.plan_slots import as_tuple as _as_tuple

ENABLED = True
_OPAQUE = frozenset({"PyFunc", "PyFuncStateless", "EagerPyFunc"})  # may run anything, the session included


def defer(lists: tuple, fetch_slots: list) -> list[int]:
    """Swap in the `commit_later` kernel of each step that may commit after the plan (`lists`: kernels, ins, outs,
    ops, devices, changed in place); returns those steps' indices, in plan order."""
    kernels, ins, outs, ops = lists[:4]
    read = {slot for slots in ins for slot in _as_tuple(slots)} | set(fetch_slots)
    touched: set = set()  # ids of the variables that later steps read or write
    opaque = False
    deferred = []
    for index in range(len(kernels) - 1, -1, -1):
        op = ops[index]
        variables = {op._id} if is_variable_op(op) else \
            {ref_variable(t)._id for t in op._inputs if t._dtype._is_ref}
        later = getattr(kernels[index], "commit_later", None)
        if later is not None and not opaque and not variables & touched and \
                not any(slot is not None and slot in read for slot in _as_tuple(outs[index])):
            kernels[index] = later
            deferred.append(index)
        touched |= variables
        opaque = opaque or op._type in _OPAQUE
    return deferred[::-1]
