"""Ctrl-C at every point where Python can run a signal handler, deterministically: a step is undone whole or kept whole.

Python runs a SIGINT handler only at a function's start, after a call of a C function, at a backward jump, and inside
C calls that check for signals (signal.signal among them). A profile hook stands in for the signal: at the k-th
function start or C return of a run it raises SIGINT, whose handler (installed here, raising KeyboardInterrupt like
Python's own) runs there, or is held back if the code holds Ctrl-C then. Each test sweeps k over every such point of
the run (tests/stress/test_interrupts.py sends real signals at random times instead).
"""
import signal
import sys
import threading

import numpy as np
import pytest

import adplace as tf
from adplace.ops.op_builder import apply_op_1
from sigint_points import SigintPoints

ROWS = 4


@pytest.fixture
def sigint():
    assert threading.current_thread() is threading.main_thread()
    hook = SigintPoints()
    previous = signal.signal(signal.SIGINT, hook.handler)
    yield hook
    signal.signal(signal.SIGINT, previous)


def _interrupting_op(scratch_registry, hook: SigintPoints, x):
    """An op whose kernel raises KeyboardInterrupt (as a Ctrl-C landing in it would) and starts the hook's count."""
    scratch_registry.register_op("CtrlCHere", lambda inputs, attrs, name: [(inputs[0]._dtype.base_dtype,
                                                                            inputs[0]._shape)], is_stateful=True)

    def kernel(value):
        hook.start()
        hook.budget -= 1
        raise KeyboardInterrupt
    scratch_registry.register_kernel("CtrlCHere", "CPU")(lambda op, ctx: kernel)
    return apply_op_1("CtrlCHere", [x])


def _add_one(v, rows: bool):
    """Add 1 to `v`: a locked scatter_add of every row (in place) or a locked assign_add."""
    if rows:
        return tf.scatter_add(v, np.arange(ROWS), np.ones((ROWS, 2)), use_locking=True)
    return tf.assign_add(v, 1.0, use_locking=True)


def _values(sess, variables) -> list:
    values = sess.run(variables)
    for v in values:
        assert np.ndim(v) == 0 or v.min() == v.max(), f"a row write was half applied: {v}"
    return [float(np.asarray(v).flat[0]) for v in values]


def _assert_clean(sess) -> None:
    assert not [c.name for c in sess._ctx._cells.values() if c.lock.locked() or c.mutating]
    assert sess._steps.slot.journal is None and not sess._steps.slot.in_step
    assert sess._gate.closed is False


@pytest.mark.parametrize("rows", [False, True], ids=["whole", "rows"])
def test_a_second_ctrl_c_anywhere_after_the_first_still_undoes_the_whole_step(scratch_registry, sigint, rows):
    # The undo used to start with Python calls (a context manager) before Ctrl-C was held back: a second Ctrl-C
    # landing there skipped the undo and left a written, b not.
    a, b = (tf.Variable(np.zeros((ROWS, 2)) if rows else 0.0, dtype=tf.float64, name=n) for n in "ab")
    with tf.control_dependencies([_add_one(a, rows)]):
        first = _interrupting_op(scratch_registry, sigint, tf.constant(0.0))
    with tf.control_dependencies([first]):
        step = _add_one(b, rows)  # never runs: the interrupt comes first
    sess = tf.Session()
    sess.run([a.initializer, b.initializer])
    points = 0
    while True:
        outcome = sigint.run(sess, step, at=points, budget=2, counting=False)
        assert outcome == "interrupted"
        assert _values(sess, [a, b]) == [0.0, 0.0], f"second Ctrl-C at point {points} left the step half applied"
        _assert_clean(sess)
        if not sigint.fired:
            break
        points += 1
    assert points > 5  # the sweep reached the undo's points, not just the raise
    sess.run([_add_one(a, rows), _add_one(b, rows)])
    assert _values(sess, [a, b]) == [1.0, 1.0]


def test_one_ctrl_c_anywhere_in_a_step_writing_a_variable_twice_leaves_it_all_or_nothing(sigint):
    # A write used to journal itself with list.append, a call after which Ctrl-C could land before the write: the
    # undo then saw one write fewer than recorded and kept the step's first write of the variable.
    a, b = tf.Variable(0.0, dtype=tf.float64, name="a"), tf.Variable(0.0, dtype=tf.float64, name="b")
    once = tf.assign_add(a, 1.0, use_locking=True)
    with tf.control_dependencies([once]):
        twice = tf.assign_add(a, 10.0, use_locking=True)
    with tf.control_dependencies([twice]):
        step = tf.group(tf.assign_add(b, 1.0))
    sess = tf.Session()
    sess.run([a.initializer, b.initializer])
    sess.run(step)  # compiled and run once: the sweep below goes through the same plan
    expected = [11.0, 1.0]
    at = 0
    while True:
        outcome = sigint.run(sess, step, at=at, budget=1, counting=True)
        got = _values(sess, [a, b])
        if got != expected:
            expected = [expected[0] + 11.0, expected[1] + 1.0]
            assert got == expected, f"Ctrl-C at point {at} ({outcome}) left the step half applied: {got}"
        else:
            assert outcome == "interrupted", f"a run that returned added nothing (point {at})"
        _assert_clean(sess)
        if not sigint.fired:
            break
        at += 1
    assert at > 20 and outcome == "ok"


def test_interrupt_hold_delivers_a_held_ctrl_c_on_release_and_restores_the_handler(sigint):
    from adplace.runtime.variable_state import InterruptHold
    hold = InterruptHold()
    sigint.budget = 1
    signal.raise_signal(signal.SIGINT)  # held: no KeyboardInterrupt here
    assert sigint.budget == 1
    with pytest.raises(KeyboardInterrupt):
        hold.release()
    assert signal.getsignal(signal.SIGINT) == sigint.handler
    hold.release()  # a second release does nothing


def test_a_missing_threadpoolctl_is_looked_for_once(monkeypatch):
    # Looked for at every parallel step, it went through the import machinery outside the step's Ctrl-C hold: a
    # Ctrl-C landing there could leave the import lock held, and the next import on a worker hung the run.
    from adplace.runtime.thread_pool import BlasLimiter
    tries = []

    class Missing:
        @staticmethod
        def find_spec(name, path=None, target=None):
            if name == "threadpoolctl":
                tries.append(name)
                raise ModuleNotFoundError("No module named 'threadpoolctl'")
            return None
    monkeypatch.setattr(BlasLimiter, "_controller", None)
    monkeypatch.setattr(BlasLimiter, "_missing", False, raising=False)
    monkeypatch.delitem(sys.modules, "threadpoolctl", raising=False)
    monkeypatch.setattr(sys, "meta_path", [Missing(), *sys.meta_path])
    limiter = BlasLimiter(2)
    for _ in range(3):
        assert limiter().run(len, "abc") == 3
    assert tries == ["threadpoolctl"]
