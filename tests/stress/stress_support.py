"""Helpers of the stress tests: threads that report their errors (tests/thread_support.py), throwaway op types, the
session's clean state."""
import sys

import adplace as tf
from adplace.ops.op_builder import apply_op_1
from thread_support import JOIN_TIMEOUT_S, run_threads  # noqa: F401 - the stress tests import them from here

PARALLEL = tf.ConfigProto(inter_op_parallelism_threads=4)


def register_kernel_op(registry, op_type: str, fn) -> None:
    """A throwaway stateful op type `op_type(x)` whose CPU kernel is `fn(x)`, its output shaped like its input."""
    registry.register_op(op_type, lambda inputs, attrs, name: [(inputs[0]._dtype.base_dtype, inputs[0]._shape)],
                         is_stateful=True)
    registry.register_kernel(op_type, "CPU")(lambda op, ctx: fn)


def custom_op(op_type: str, x, name: str | None = None):
    """An op of a type registered by `register_kernel_op`."""
    return apply_op_1(op_type, [x], name=name)


def assert_session_clean(sess) -> None:
    """No variable lock is held, this thread has no journal left, and the snapshot gate is open."""
    held = [cell.name for cell in sess._ctx._cells.values() if cell.lock.locked()]
    assert not held, f"variable locks still held: {held}"
    assert sess._steps.journal is None
    assert sess._gate.closed is False


def uncaptured_stderr(pytestconfig):
    """A file descriptor that reaches the terminal under pytest's output capture (pytest's faulthandler keeps one),
    for a deadlock's stack dump written just before the process ends; sys.stderr where pytest has none."""
    try:
        from _pytest.faulthandler import fault_handler_stderr_fd_key  # private: hence the fallback
        return pytestconfig.stash[fault_handler_stderr_fd_key]
    except (ImportError, KeyError):
        return sys.stderr
