"""Ctrl-C at random moments of many runs: a step commits or rolls back whole, and leaves nothing behind.

The main thread (the only one Python delivers signals to) runs steps that add 1 to a, b and c (locked, three
assign_adds) between throwaway "StressRecord" kernels, and end in a "StressFinal" kernel; a helper thread sends
SIGINT every 0-2 ms, so KeyboardInterrupt lands in kernels, in the executor's waits, in the undo, in the commit, in
fetch conversion. The SIGINT handler raises KeyboardInterrupt as Python's default one does, but only while
`sess.run` runs (`armed`), at most once or twice per run: signals landing in the test's own bookkeeping are counted
and dropped, so every interrupt belongs to a known run. A KeyboardInterrupt raised inside a finalizer is swallowed
by Python (sys.unraisablehook); those are counted too. On the parallel executor Ctrl-C cancels the run and is raised
once its workers have stopped. A deadlock dumps every thread's stack and ends the process (faulthandler) after
JOIN_TIMEOUT_S without progress, rather than hanging the test run.

Invariants, checked after every run: a == b == c (all or nothing), the value never decreases, a run that returned
added exactly 1, an interrupted one 0 or 1, and the final value is the number of runs that added 1; no kernel of a
run starts or is still running after the run returned or raised; at the end no variable lock, journal or closed gate
is left, and a normal run works. README: a step commits when its fetched values are ready; a KeyboardInterrupt
before that (even after the last kernel) undoes it, one after it leaves it committed (deterministic tests below).
"""
import collections
import faulthandler
import random
import signal
import sys
import threading
import time

import numpy as np
import pytest
from stress_support import (JOIN_TIMEOUT_S, PARALLEL, assert_session_clean, custom_op, register_kernel_op,
                            uncaptured_stderr)

import adplace as tf
from adplace.runtime import fetches as fetches_module
from adplace.runtime import session as session_module

RUNS = 50_000     # per test and executor, times ADPLACE_STRESS (~1 run in 25-100 is interrupted)
ROW_RUNS = 20_000  # the same with in-place row writes (scatter_add of every row of a [ROWS, 4] table)
ROWS = 256
KERNEL_SLEEP_S = 0.0002
MAX_GAP_S = 0.002

pytestmark = pytest.mark.usefixtures("fast_switching")  # the sender thread gets the GIL at once, not after 5 ms


class _Interrupts:
    """A SIGINT handler that raises KeyboardInterrupt only while armed, and a thread that sends SIGINT at random."""

    def __init__(self, seed: int, dump_file):
        self.rng = random.Random(seed)
        self.dump_file = dump_file
        self.armed = False
        self.budget = 0              # KeyboardInterrupts left to raise in this run (2: a second may land in the undo)
        self.run_id = -1
        self.final_done = -1         # the id of the last run whose final kernel finished
        self.after_final: dict = {}  # run id -> its first KeyboardInterrupt came after its final kernel finished
        self.dropped = self.sent = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._send, daemon=True)
        self._main = threading.main_thread().ident

    def handler(self, signum, frame):
        if not self.armed or self.budget <= 0:
            self.dropped += 1
            return
        self.budget -= 1
        if self.budget <= 0:
            self.armed = False
        if self.run_id not in self.after_final:
            self.after_final[self.run_id] = self.final_done == self.run_id
        raise KeyboardInterrupt

    def arm(self, run_id: int, budget: int) -> None:
        self.run_id, self.budget = run_id, budget
        self.armed = True  # last: the handler raises from here on

    def _send(self) -> None:
        sleep, gap, kill = time.sleep, self.rng.uniform, signal.pthread_kill
        while not self._stop.is_set():
            sleep(gap(0.0, MAX_GAP_S))
            kill(self._main, signal.SIGINT)
            self.sent += 1

    def __enter__(self):
        """Install the handler (and a swallowed-exception hook), start sending; a deadlock dumps every thread's
        stack and ends the process after JOIN_TIMEOUT_S instead of hanging the test run."""
        assert threading.current_thread() is threading.main_thread(), "signals reach the main thread only"
        self.unraisable: list = []
        self._previous = signal.signal(signal.SIGINT, self.handler)
        self._previous_hook, sys.unraisablehook = sys.unraisablehook, self.unraisable.append
        self.watch()
        self._thread.start()
        return self

    def watch(self) -> None:
        """(Re)start the deadlock watch: JOIN_TIMEOUT_S from now."""
        faulthandler.dump_traceback_later(JOIN_TIMEOUT_S, exit=True, file=self.dump_file)

    def __exit__(self, *exc_info):
        self.armed = False
        self._stop.set()
        self._thread.join()
        try:
            time.sleep(0.05)  # a signal sent just before the stop is handled (and dropped) here
        except KeyboardInterrupt:
            pass
        faulthandler.cancel_dump_traceback_later()
        signal.signal(signal.SIGINT, self._previous)
        sys.unraisablehook = self._previous_hook
        return False


class _Program:
    """Variables a, b, c; a step adding 1 to each between StressRecord kernels, ending in the StressFinal kernel.
    With `rows`, each is a [ROWS, 4] table and the step adds 1 to every row with one locked scatter_add, which
    writes the rows in place (nothing else holds the tables between runs): a step's tables must stay uniform.

    StressRecord logs (run id, thread, "start"/"end", time) under `log_lock`; on the main thread it does a little
    Python work (where Ctrl-C can land), on a worker it sleeps 0.2 ms (while the main thread waits for it).
    """

    def __init__(self, registry, interrupts: _Interrupts, rows: bool = False):
        self.log: list = []
        self.log_lock = threading.Lock()
        main = threading.main_thread().ident
        log, log_lock = self.log, self.log_lock

        def record(run_id):
            ident = threading.get_ident()
            with log_lock:
                log.append((int(run_id), ident, "start", time.monotonic()))
            if ident == main:
                sum(range(100))
            else:
                time.sleep(KERNEL_SLEEP_S)
            with log_lock:
                log.append((int(run_id), ident, "end", time.monotonic()))
            return run_id

        def final(run_id):
            interrupts.final_done = int(run_id)  # the last statement of the step's last kernel
            return run_id
        register_kernel_op(registry, "StressRecord", record)
        register_kernel_op(registry, "StressFinal", final)
        self.run_id = tf.placeholder(tf.int64, [], name="run_id")
        start = np.zeros((ROWS, 4)) if rows else 0.0
        self.variables = [tf.Variable(start, dtype=tf.float64, name=name) for name in ("a", "b", "c")]
        ops = [custom_op("StressRecord", self.run_id, name="record_0")]
        for i, v in enumerate(self.variables):  # in creation order: record, +a, record, +b, record, +c, record
            ops.append(tf.scatter_add(v, np.arange(ROWS), np.ones((ROWS, 4)), use_locking=True) if rows else
                       tf.assign_add(v, 1.0, use_locking=True))
            ops.append(custom_op("StressRecord", self.run_id, name=f"record_{i + 1}"))
        with tf.control_dependencies(ops):
            self.step = custom_op("StressFinal", self.run_id, name="final")  # fetched: converted after the kernels

    def value(self, sess) -> float:
        a, b, c = (float(v.flat[0]) if np.ndim(v) else v for v in self._uniform(sess.run(self.variables)))
        assert a == b == c, f"a step was half applied: a={a}, b={b}, c={c}"
        return a

    @staticmethod
    def _uniform(values: list) -> list:
        for v in values:
            assert np.ndim(v) == 0 or v.min() == v.max(), f"a row write was half applied: {np.unique(v)}"
        return values


def _run_interrupted(registry, config, runs: int, seed: int, dump_file, rows: bool = False):
    """Run `runs` steps under random Ctrl-C, checking the invariants after each; returns (interrupts, the runs that
    were interrupted: run id -> added 1?, context for messages)."""
    interrupts = _Interrupts(seed, dump_file)
    program = _Program(registry, interrupts, rows)
    sess = tf.Session(config=config)
    sess.run([v.initializer for v in program.variables])
    if config is PARALLEL:
        assert sess.plan_for(program.step, {program.run_id: 0}).mode == "parallel"
    budgets = random.Random(seed + 1)
    context = f"(seed {seed}: rerun with ADPLACE_STRESS_SEED={seed})"
    ended: dict = {}        # run id -> time.monotonic() when run() returned or raised
    interrupted: dict = {}  # run id -> whether the interrupted run added 1 (committed)
    successes, value = 0, 0.0
    with interrupts:
        for i in range(runs):
            if i % 1000 == 0:
                interrupts.watch()
            outcome = "interrupted"
            try:
                try:
                    interrupts.arm(i, budgets.choice([1, 1, 2]))
                    got = sess.run(program.step, {program.run_id: i})
                    outcome = "ok"
                finally:
                    interrupts.armed = False
                    with program.log_lock:
                        ended[i] = time.monotonic()
            except KeyboardInterrupt:
                interrupts.armed = False
            after = program.value(sess)
            if outcome == "ok":
                assert got == i and after == value + 1, f"run {i} returned but added {after - value} {context}"
                successes += 1
            else:
                assert after in (value, value + 1), f"interrupted run {i} added {after - value} {context}"
                interrupted[i] = after == value + 1
            value = after
    print(f"{runs} runs: {successes} returned, {len(interrupted)} interrupted ({sum(interrupted.values())} of them "
          f"committed, {sum(interrupts.after_final.values())} after their last kernel); {interrupts.sent} signals "
          f"sent, {interrupts.dropped} dropped, {len(interrupts.unraisable)} swallowed in finalizers")
    assert value == successes + sum(interrupted.values()), context
    assert successes and interrupted, f"{successes} runs returned, {len(interrupted)} were interrupted {context}"
    odd = [u for u in interrupts.unraisable if u.exc_type is not KeyboardInterrupt]
    assert not odd, f"exceptions swallowed in finalizers: {[(u.exc_type, u.exc_value, u.object) for u in odd]}"

    # No kernel of a run started or was still running after the run returned or raised (workers never get the
    # KeyboardInterrupt, so every kernel they start also ends, and logs it; records are taken under log_lock).
    time.sleep(0.05)
    main = threading.main_thread().ident
    late = [(r, what, t - ended[r]) for r, ident, what, t in program.log if t > ended[r]]
    assert not late, f"kernels ran after their run ended (run, start/end, s after): {late[:5]} {context}"
    starts = collections.Counter((r, ident) for r, ident, what, _ in program.log if what == "start" and ident != main)
    ends = collections.Counter((r, ident) for r, ident, what, _ in program.log if what == "end" and ident != main)
    assert starts == ends, f"worker kernels never finished: {sorted((starts - ends).items())[:5]} {context}"
    assert_session_clean(sess)
    assert sess.run(program.step, {program.run_id: -1}) == -1
    assert program.value(sess) == value + 1
    return interrupts, interrupted, context


@pytest.mark.parametrize("config", [None, PARALLEL], ids=["plain", "parallel"])
def test_ctrl_c_at_random_points_commits_or_rolls_back_whole_steps(scratch_registry, config, stress_scale,
                                                                   stress_seed, pytestconfig):
    _run_interrupted(scratch_registry, config, RUNS * stress_scale, stress_seed, uncaptured_stderr(pytestconfig))


@pytest.mark.parametrize("config", [None, PARALLEL], ids=["plain", "parallel"])
def test_ctrl_c_during_in_place_row_writes_commits_or_rolls_back_whole_steps(scratch_registry, config, stress_scale,
                                                                             stress_seed, pytestconfig):
    _run_interrupted(scratch_registry, config, ROW_RUNS * stress_scale, stress_seed,
                     uncaptured_stderr(pytestconfig), rows=True)


def _two_counters(config):
    """Variables a, b at 0, a step adding 1 to both, and a session that initialized them."""
    a, b = tf.Variable(0.0, name="a"), tf.Variable(0.0, name="b")
    step = tf.group(tf.assign_add(a, 1.0), tf.assign_add(b, 1.0))
    sess = tf.Session(config=config)
    sess.run([a.initializer, b.initializer])
    return a, b, step, sess


@pytest.mark.parametrize("config", [None, PARALLEL], ids=["plain", "parallel"])
def test_ctrl_c_after_the_last_kernel_but_before_the_result_is_built_undoes_the_whole_step(monkeypatch, config):
    a, b, step, sess = _two_counters(config)
    parse, fired = fetches_module.FetchMapper._parse, []

    def interrupting_parse(self, graph, fetches):  # the run's fetch builder, Ctrl-C landing in it (once)
        build = parse(self, graph, fetches)

        def interrupted_build(flat):  # every kernel has run: Ctrl-C lands while the fetches are assembled
            if not fired:
                fired.append(True)
                raise KeyboardInterrupt
            return build(flat)
        return interrupted_build
    monkeypatch.setattr(fetches_module.FetchMapper, "_parse", interrupting_parse)
    with pytest.raises(KeyboardInterrupt):
        sess.run(step)
    assert sess.run([a, b]) == [0.0, 0.0]
    assert_session_clean(sess)
    sess.run(step)
    assert sess.run([a, b]) == [1.0, 1.0]


@pytest.mark.parametrize("config", [None, PARALLEL], ids=["plain", "parallel"])
def test_ctrl_c_once_the_result_is_built_leaves_the_step_committed(monkeypatch, config):
    a, b, step, sess = _two_counters(config)
    ran = session_module.BaseSession._ran

    def interrupted_ran(self, plan):  # the step's result is ready: the commit point has passed
        monkeypatch.setattr(session_module.BaseSession, "_ran", ran)
        raise KeyboardInterrupt
    monkeypatch.setattr(session_module.BaseSession, "_ran", interrupted_ran)
    with pytest.raises(KeyboardInterrupt):
        sess.run(step)
    assert sess.run([a, b]) == [1.0, 1.0]
    assert_session_clean(sess)
    shape = tf.placeholder(tf.int32, [1])
    with tf.control_dependencies([step]):
        fails = tf.reshape(tf.constant([1.0, 2.0]), shape)  # runs after the increments, fails on shape [3]
    with pytest.raises(tf.errors.InvalidArgumentError):  # ... and undoes them, replaying no stale journal
        sess.run(fails, {shape: [3]})
    assert sess.run([a, b]) == [1.0, 1.0]
