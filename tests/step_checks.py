"""Checks of whole steps shared by the tests of variable updates: a failing step changes nothing, a passing one
changes what it updates, a Ctrl-C anywhere leaves a step whole or undone."""
import signal

import numpy as np
import pytest

import adplace as tf
from sigint_points import SigintPoints


def assert_same(sess, variables: list, expected: list) -> None:
    """The variables' values in `sess` equal `expected`, bit for bit."""
    for have, want in zip(sess.run(variables), expected):
        np.testing.assert_array_equal(have, want)


def assert_failing_steps_change_nothing(sess, variables: list, fail, succeed, updated: list, times: int) -> None:
    """`times` rounds of: `fail()` raises InvalidArgumentError "bad input" and leaves `variables` exactly as before,
    then `succeed()` changes every variable of `updated` (indices into `variables`)."""
    for _ in range(times):
        before = sess.run(variables)
        with pytest.raises(tf.errors.InvalidArgumentError, match="bad input"):
            fail()
        assert_same(sess, variables, before)
        succeed()
        after = sess.run(variables)
        assert not any(np.array_equal(after[i], before[i]) for i in updated)


def assert_ctrl_c_anywhere_is_all_or_nothing(sess, fetch, variables: list, stepped) -> int:
    """SIGINT at each point of `sess.run(fetch)` in turn (SigintPoints), from the first on until a run ends before
    the point: each run leaves `variables` as `stepped(before)` gives them (the whole step) or, interrupted, exactly
    as they were, and no cell locked or flagged as changing in place. Returns the number of points."""
    hook = SigintPoints()
    previous = signal.signal(signal.SIGINT, hook.handler)
    try:
        at = 0
        while True:
            before = sess.run(variables)
            outcome = hook.run(sess, fetch, at, budget=1, counting=True)
            after = sess.run(variables)
            whole = all(np.array_equal(have, want) for have, want in zip(after, stepped(before)))
            # a Ctrl-C after the step was whole (fetching) may still interrupt the run: all or nothing
            assert whole or (outcome == "interrupted" and all(
                np.array_equal(have, want) for have, want in zip(after, before))), f"point {at}: {outcome}"
            assert not [c.name for c in sess._ctx._cells.values() if c.lock.locked() or c.mutating]
            if not hook.fired:
                assert outcome == "ok"
                return at
            at += 1
    finally:
        signal.signal(signal.SIGINT, previous)
