"""Failing steps, timeouts and good steps, mixed at random from several threads, against a model of the variables.

A step adds a fed integer d to variables var_a and var_b (locked), then runs two ops after both writes: a Reshape of
a 2-vector to a fed shape ([2] is fine, [3] raises InvalidArgumentError) and a sleep of a fed length (run with a 2 ms
deadline and a 10 ms sleep it raises DeadlineExceededError). The model, exact because every d is an integer:
- a successful step adds d to both variables;
- a failed step's write of a variable is undone, unless another step wrote that variable after it, and then the
  error names the variable ("Variables var_a, var_b were written by another step after this step wrote them").
So var_a == sum(d of successful steps) + sum(d of failed steps whose error names var_a), and the same for var_b.
"""
import random
import re
import threading
import time

import pytest
from stress_support import PARALLEL, assert_session_clean, custom_op, register_kernel_op, run_threads

import adplace as tf

THREADS = 4
STEPS = 2000            # per thread (times ADPLACE_STRESS)
SINGLE_THREAD_STEPS = 2000
SLEEP_S, DEADLINE_MS = 0.010, 2
KEPT = re.compile(r"Variables (.+?) were written by another step after this step wrote them")

pytestmark = pytest.mark.usefixtures("fast_switching")


class _Step:
    """The graph of one step and how to run each kind of it: "good", "bad" (Reshape fails) or "late" (timeout)."""

    def __init__(self, registry):
        register_kernel_op(registry, "StressSleep", lambda seconds: (time.sleep(float(seconds)), seconds)[1])
        self.a = tf.Variable(0.0, dtype=tf.float64, name="var_a")
        self.b = tf.Variable(0.0, dtype=tf.float64, name="var_b")
        self.d = tf.placeholder(tf.float64, [], name="d")
        self.shape = tf.placeholder(tf.int32, [1], name="shape")
        self.pause = tf.placeholder(tf.float64, [], name="pause")
        writes = [tf.assign_add(self.a, self.d, use_locking=True), tf.assign_add(self.b, self.d, use_locking=True)]
        with tf.control_dependencies(writes):
            self.fetches = [tf.reshape(tf.constant([1.0, 2.0]), self.shape, name="maybe_fail"),
                            custom_op("StressSleep", self.pause, name="maybe_sleep")]

    def run(self, sess, kind: str, d: int, rng: random.Random):
        """Run one step of `kind`; returns None on success, else the error (of the class the kind must raise)."""
        feeds = {self.d: float(d), self.shape: [3] if kind == "bad" else [2],
                 self.pause: SLEEP_S if kind == "late" else 0.0}
        if kind == "late":
            options = tf.RunOptions(timeout_in_ms=DEADLINE_MS)
        else:  # good and bad steps run with a generous deadline half the time: the observed path too
            options = tf.RunOptions(timeout_in_ms=600_000) if rng.random() < 0.5 else None
        expected = {"good": (), "bad": tf.errors.InvalidArgumentError, "late": tf.errors.DeadlineExceededError}[kind]
        try:
            sess.run(self.fetches, feeds, options=options)
        except expected as exc:
            assert ("maybe_fail" if kind == "bad" else "deadline") in str(exc), exc
            return exc
        assert kind == "good", f"a {kind} step succeeded"
        return None


def _kind(rng: random.Random) -> str:
    return rng.choices(["good", "bad", "late"], weights=[60, 28, 12])[0]


def _kept(exc: BaseException) -> set:
    """The variables a failed step's error names as written by another step after it (not undone)."""
    match = KEPT.search(str(exc))
    return set(match.group(1).split(", ")) if match else set()


@pytest.mark.parametrize("config", [None, PARALLEL], ids=["plain", "parallel"])
def test_random_failures_from_threads_match_the_model(scratch_registry, config, stress_scale, stress_seed):
    step = _Step(scratch_registry)
    sess = tf.Session(config=config)
    sess.run([step.a.initializer, step.b.initializer])
    if config is PARALLEL:
        assert sess.plan_for(step.fetches, {step.d: 0.0, step.shape: [2], step.pause: 0.0}).mode == "parallel"
    steps = STEPS * stress_scale
    outcomes: list = []  # (thread, kind, d, None or the error)
    lock = threading.Lock()

    def worker(index: int):
        def work():
            rng = random.Random(stress_seed * 1000 + index)
            for _ in range(steps):
                kind, d = _kind(rng), rng.randint(1, 9)
                error = step.run(sess, kind, d, rng)
                with lock:
                    outcomes.append((index, kind, d, error))
        return work
    run_threads(*[worker(i) for i in range(THREADS)])

    context = f"(seed {stress_seed}: rerun with ADPLACE_STRESS_SEED={stress_seed})"
    assert len(outcomes) == THREADS * steps
    for variable in (step.a, step.b):
        name = variable.op.name
        succeeded = sum(d for _, _, d, error in outcomes if error is None)
        kept = sum(d for _, _, d, error in outcomes if error is not None and name in _kept(error))
        assert sess.run(variable) == succeeded + kept, f"{name}: {context}"
    failures = [error for *_, error in outcomes if error is not None]
    assert failures and all(_kept(error) <= {"var_a", "var_b"} for error in failures), context
    assert_session_clean(sess)


@pytest.mark.parametrize("config", [None, PARALLEL], ids=["plain", "parallel"])
def test_one_thread_failed_steps_leave_variables_exactly_as_before(scratch_registry, config, stress_scale,
                                                                  stress_seed):
    step = _Step(scratch_registry)
    sess = tf.Session(config=config)
    sess.run([step.a.initializer, step.b.initializer])
    rng = random.Random(stress_seed)
    context = f"(seed {stress_seed}: rerun with ADPLACE_STRESS_SEED={stress_seed})"
    counts = {"good": 0, "bad": 0, "late": 0}
    for i in range(SINGLE_THREAD_STEPS * stress_scale):
        kind, d = _kind(rng), rng.randint(1, 9)
        before = sess.run([step.a, step.b])
        error = step.run(sess, kind, d, rng)
        after = sess.run([step.a, step.b])
        counts[kind] += 1
        if error is None:
            assert after == [before[0] + d, before[1] + d], f"step {i}: {context}"
        else:
            assert after == before, f"step {i} ({kind}): {context}"
            assert not _kept(error), f"step {i}: alone, yet {error}"
    assert all(counts.values()), counts
    assert_session_clean(sess)
