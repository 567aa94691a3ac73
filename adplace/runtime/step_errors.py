"""Step errors: a kernel's exception, raised inside a plan, turned into the adplace.errors class TF raises, naming the
op and the device it ran on (found from the traceback, so the hot path keeps no bookkeeping).

    InvalidArgumentError: Reshape op 'r' failed on /job:localhost/replica:0/task:0/device:CPU:0: cannot reshape ...
"""
from __future__ import annotations

import re

from adplace.framework import errors
from adplace.runtime.executor import Plan

_KERNEL_ERRORS = (ValueError, TypeError, IndexError, ZeroDivisionError, FloatingPointError, OverflowError)
_BROADCAST = re.compile(r"operands could not be broadcast together with shapes \(([\d, ]*)\) \(([\d, ]*)\)")


def step_error(plan: Plan, exc: BaseException, kept: list | tuple = ()) -> BaseException:
    """The error to raise for `exc` from a run of `plan` (`exc` itself when it is not a kernel's); `kept` names
    variables the failed step could not undo because another step wrote them since."""
    wrapped = _wrapped(plan, exc)
    if kept:
        note = (f"Variables {', '.join(kept)} were written by another step after this step wrote them; they keep "
                f"that step's values. Every other variable write of this step was undone.")
        if isinstance(wrapped, errors.OpError):
            wrapped = type(wrapped)(wrapped.node_def, wrapped.op, f"{wrapped.message}\n{note}")
        elif hasattr(wrapped, "add_note"):
            wrapped.add_note(note)
    return wrapped


def _wrapped(plan: Plan, exc: BaseException) -> BaseException:
    step = plan.failed_step(exc)
    if step is None or isinstance(exc, errors.DeadlineExceededError):
        return exc
    op, device = step.op, step.device.name
    where = f"\n\t [[{{{{node {op.name}}}}} = {op.type} on {device}]]"
    if step.transfer is not None:
        return errors.InternalError(None, op, f"Copying {step.transfer.tensor_name} from "
                                    f"{step.transfer.src_device} to {step.transfer.dst_device} failed: {exc}{where}")
    if isinstance(exc, errors.OpError):
        return type(exc)(None, exc.op or op, f"{exc.message}{where}")
    if isinstance(exc, MemoryError):
        return errors.ResourceExhaustedError(None, op, f"OOM when running op '{op.name}' ({op.type}) on "
                                             f"{device}: {exc}{where}")
    if isinstance(exc, _KERNEL_ERRORS):
        shapes = _BROADCAST.search(str(exc))
        if shapes:  # TF's wording for elementwise ops whose run-time shapes do not broadcast
            return errors.InvalidArgumentError(None, op, f"Incompatible shapes: {_dims(shapes[1])} vs. "
                                               f"{_dims(shapes[2])}{where}")
        return errors.InvalidArgumentError(None, op, f"{op.type} op '{op.name}' failed on {device}: "
                                           f"{exc}{where}")
    return exc


def _dims(numpy_shape: str) -> str:
    """NumPy's "2,3" (or "2,") as TF's "[2,3]"."""
    return "[" + ",".join(d.strip() for d in numpy_shape.split(",") if d.strip()) + "]"
