"""While loops with `parallel_iterations` on the session's inter-op threads (adplace/runtime/loop_pipeline.py):
once the first iterations, timed in turn, show long iterations, the others overlap, never more than
`parallel_iterations` at once, with the values of the sequential run; errors, deadlines and Ctrl-C end the run only
once no step of it is running; short iterations stay on the caller's thread."""
import functools
import threading
import time

import numpy as np
import pytest

import adplace as tf
from adplace.ops.op_builder import apply_op_1
from ctrl_c import pressing_ctrl_c
from thread_support import run_threads

THREADS = tf.ConfigProto(inter_op_parallelism_threads=4)


class Probe:
    """A kernel `probe(x)` that logs (row, start, end), sleeping `pause` s between (releasing the GIL), and raises
    for the row `fail_at`."""

    def __init__(self, registry, pause: float = 0.02, fail_at: float | None = None):
        self.log, self.lock, self.pause, self.fail_at = [], threading.Lock(), pause, fail_at
        registry.register_op("PipelineProbe", lambda inputs, attrs, name: [(inputs[0]._dtype, inputs[0]._shape)])
        registry.register_kernel("PipelineProbe", "CPU")(lambda op, ctx: self.kernel)

    def kernel(self, x):
        start = time.monotonic()
        time.sleep(self.pause)
        if self.fail_at is not None and float(np.asarray(x).flat[0]) == self.fail_at:
            raise tf.errors.InvalidArgumentError(None, None, f"probe failed at {self.fail_at}")
        with self.lock:
            self.log.append((float(np.asarray(x).flat[0]), start, time.monotonic()))
        return x * 2.0

    def max_overlap(self) -> int:
        events = sorted([(s, 1) for _, s, _ in self.log] + [(e, -1) for _, _, e in self.log])
        running = most = 0
        for _, change in events:
            running += change
            most = max(most, running)
        return most

    def __call__(self, x):
        return apply_op_1("PipelineProbe", [x])


def _mapped(probe, width: int):
    rows = tf.constant(np.arange(8.0).reshape(8, 1))
    return tf.map_fn(lambda r: probe(r) + 1.0, rows, parallel_iterations=width)


@pytest.mark.parametrize("width", [1, 3])
def test_iterations_overlap_up_to_parallel_iterations(scratch_registry, width):
    probe = Probe(scratch_registry)
    out = _mapped(probe, width)
    with tf.Session(config=THREADS) as sess:
        np.testing.assert_array_equal(sess.run(out), np.arange(8.0).reshape(8, 1) * 2 + 1)
        loop = next(k for k, op in zip(sess.plan_for(out).kernels, sess.plan_for(out).ops) if op.type == "LoopCond")
    assert (loop.pipeline is not None and loop.pipeline.worth_it) == (width > 1)
    assert sorted(row for row, _, _ in probe.log) == list(np.arange(8.0))
    if width == 1:
        assert probe.max_overlap() == 1
    else:  # 8 sleeping steps, 4 threads: iterations were in flight together, never more than `width`
        assert 2 <= probe.max_overlap() <= width


def test_a_loop_variable_chain_runs_in_turn_with_the_sequential_values(scratch_registry):
    probe = Probe(scratch_registry, pause=0.005)
    _, total = tf.while_loop(lambda i, t: i < 6, lambda i, t: (i + 1, probe(t) - 1.0), [0, tf.constant([1.5])])
    with tf.Session(config=THREADS) as sess:
        got = sess.run(total)
    expected = 1.5
    for _ in range(6):
        expected = expected * 2 - 1
    assert got == [expected] and probe.max_overlap() == 1


def test_a_failing_iteration_ends_the_run_after_its_other_steps(scratch_registry):
    probe = Probe(scratch_registry, fail_at=3.0)
    out = _mapped(probe, 4)
    with tf.Session(config=THREADS) as sess:
        with pytest.raises(tf.errors.InvalidArgumentError, match="probe failed at 3.0") as info:
            sess.run(out)
        ended = time.monotonic()
        time.sleep(0.1)
        assert all(end <= ended for _, _, end in probe.log)  # nothing ran on after the run raised
        assert "PipelineProbe" in str(info.value)  # the failing op is named


def test_a_deadline_stops_a_pipelined_loop(scratch_registry):
    probe = Probe(scratch_registry, pause=0.01)
    _, forever = tf.while_loop(lambda i, x: True, lambda i, x: (i + 1, probe(x)), [0, tf.constant([1.0])],
                               parallel_iterations=4)
    with tf.Session(config=THREADS) as sess:
        with pytest.raises(tf.errors.DeadlineExceededError):
            sess.run(forever, options=tf.RunOptions(timeout_in_ms=150))
        ended = time.monotonic()
        time.sleep(0.05)
    assert all(end <= ended for _, _, end in probe.log)


@pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")  # a press swallowed in a gc callback
def test_ctrl_c_stops_a_pipelined_loop_once_its_steps_are_done(scratch_registry):
    probe = Probe(scratch_registry, pause=0.01)
    rows = tf.constant(np.arange(400.0).reshape(400, 1))
    out = tf.map_fn(lambda r: probe(r), rows, parallel_iterations=4)
    with tf.Session(config=THREADS) as sess:
        with pytest.raises(KeyboardInterrupt), pressing_ctrl_c(after=0.15) as presses:
            sess.run(out)
        time.sleep(0.05)
        assert all(end <= presses.stopped_at for _, _, end in probe.log) and len(probe.log) < 400


def test_short_iterations_stay_on_the_callers_thread():
    _, y = tf.while_loop(lambda i, y: i < 50, lambda i, y: (i + 1, y * 1.01), [0, tf.constant(1.0)])
    with tf.Session(config=THREADS) as sess:
        assert sess.run(y) == pytest.approx(1.01 ** 50, rel=1e-5)
        loop = next(k for k, op in zip(sess.plan_for(y).kernels, sess.plan_for(y).ops) if op.type == "LoopCond")
    assert loop.pipeline is not None and loop.pipeline.worth_it is False


def test_threads_running_one_pipelined_loop_each_get_their_values(scratch_registry):
    probe = Probe(scratch_registry, pause=0.003)
    x = tf.placeholder(tf.float64, [8, 1])
    out = tf.map_fn(lambda r: probe(r) + 1.0, x, parallel_iterations=4)
    sess = tf.Session(config=THREADS)

    def work(seed: int):
        for step in range(3):
            value = np.arange(8.0).reshape(8, 1) + 100 * seed + step
            np.testing.assert_array_equal(sess.run(out, {x: value}), value * 2 + 1)
    run_threads(*(functools.partial(work, seed) for seed in range(3)))
    loop = next(k for k, op in zip(sess.plan_for(out, {x: np.zeros((8, 1))}).kernels,
                                   sess.plan_for(out, {x: np.zeros((8, 1))}).ops) if op.type == "LoopCond")
    assert loop.pipeline.worth_it


def test_a_cond_in_a_pipelined_body_takes_each_iterations_branch(scratch_registry):
    probe = Probe(scratch_registry, pause=0.003)
    values = np.arange(8.0)[::-1]  # the first iterations (timed in turn) take the long branch: then pipelined
    rows = tf.constant(values.reshape(8, 1))
    out = tf.map_fn(lambda r: tf.cond(r[0] > 3.5, lambda: probe(r), lambda: -r), rows, parallel_iterations=4)
    with tf.Session(config=THREADS) as sess:
        for _ in range(2):
            np.testing.assert_array_equal(sess.run(out), np.where(values > 3.5, values * 2, -values).reshape(8, 1))
        loop = next(k for k, op in zip(sess.plan_for(out).kernels, sess.plan_for(out).ops) if op.type == "LoopCond")
    assert sorted({row for row, _, _ in probe.log}) == [4.0, 5.0, 6.0, 7.0]  # only the taken branches ran
    assert loop.pipeline.worth_it is True
