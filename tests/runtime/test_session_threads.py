"""One session, many threads (README, "Reliability"): ref outputs read as ordinary tensors (sequential and parallel
plans), deadlines that name their timeout and op and undo the step, a Ctrl-C after commit that keeps the step, a
failed step that undoes only what no other step wrote since, and a graph growing while the session runs it."""
import re
import threading
import time

import pytest

import adplace as tf
from adplace.errors import DeadlineExceededError, InvalidArgumentError
from adplace.ops.op_builder import apply_op_1
from adplace.runtime.session import BaseSession

JOIN_S = 30.0  # a bound for threads that must finish: only a hang reaches it
SEQUENTIAL = tf.ConfigProto(inter_op_parallelism_threads=1)
PARALLEL = tf.ConfigProto(inter_op_parallelism_threads=4)
CONFIGS = pytest.mark.parametrize("config", [SEQUENTIAL, PARALLEL], ids=["sequential", "parallel"])


def _register(registry, op_type: str, kernel) -> None:
    """A throwaway stateful op type `op_type(x)` (CPU), output shaped like its input, whose kernel is `kernel(x)`."""
    registry.register_op(op_type, lambda inputs, attrs, name: [(inputs[0]._dtype.base_dtype, inputs[0]._shape)],
                         is_stateful=True)
    registry.register_kernel(op_type, "CPU")(lambda op, ctx: kernel)


def _started(target) -> threading.Thread:
    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    return thread


def _joined(*threads: threading.Thread) -> None:
    for thread in threads:
        thread.join(JOIN_S)
        assert not thread.is_alive(), "a thread did not finish"


class Runner:
    """Runs a fetch in a session of `config`; on the parallel config, next to an independent op so that the plan
    has steps that overlap, and checks that the plan really runs on the inter-op pool."""

    def __init__(self, config):
        self.sess = tf.Session(config=config)
        self.parallel = config is PARALLEL
        self.side = tf.square(tf.constant(3.0), name="side")

    def __call__(self, fetch, feed_dict=None):
        if not self.parallel:
            return self.sess.run(fetch, feed_dict)
        value, side = self.sess.run([fetch, self.side], feed_dict)
        assert side == 9.0
        assert self.sess.plan_for([fetch, self.side], feed_dict).mode == "parallel"
        return value


# --- ref outputs are ordinary tensors -----------------------------------------------------------------------------

@CONFIGS
def test_an_update_times_a_constant_reads_the_updated_variable(config):
    v = tf.Variable(1.0, name="v")
    doubled = v.assign_add(1.0) * 2.0
    run = Runner(config)
    run(v.initializer)
    assert [run(doubled) for _ in range(3)] == [4.0, 6.0, 8.0]
    assert run.sess.run(v) == 4.0


@CONFIGS
def test_identity_of_an_assign_and_an_assign_plus_one(config):
    v = tf.Variable(0.0, name="v")
    same = tf.identity(tf.assign(v, 3.0))
    plus_one = v.assign(5.0) + 1
    run = Runner(config)
    run(v.initializer)
    assert run(same) == 3.0 and run.sess.run(v) == 3.0
    assert run(plus_one) == 6.0 and run.sess.run(v) == 5.0


@CONFIGS
def test_an_update_of_an_assigns_output_chains_on_the_variable(config):
    v = tf.Variable(10.0, name="v")
    chained = tf.assign_add(tf.assign(v, 1.0), 2.0)
    run = Runner(config)
    run(v.initializer)
    for _ in range(2):
        assert run(chained) == 3.0
        assert run.sess.run(v) == 3.0


@CONFIGS
def test_a_fetched_assign_alongside_reads(config):
    v = tf.Variable(1.0, name="v")
    write = tf.assign(v, 7.0)
    with tf.control_dependencies([write]):
        after = v.read_value()
    run = Runner(config)
    run(v.initializer)
    assert run([write, after]) == [7.0, 7.0]
    run.sess.run(v.initializer)
    written, unordered = run([write, v])
    assert written == 7.0 and unordered in (1.0, 7.0)  # no order between the write and a plain read, as in TF
    assert run.sess.run(v) == 7.0


@CONFIGS
def test_a_minimize_op_under_control_dependencies_and_its_apply_output(config):
    w = tf.Variable(3.0, name="w")
    train = tf.train.GradientDescentOptimizer(0.25).minimize(w * w)
    with tf.control_dependencies([train]):
        after = w.read_value()
    apply_op = next(op for op in tf.get_default_graph().get_operations() if op.type == "ApplyGradientDescent")
    applied_twice = apply_op.outputs[0] * 2.0
    run = Runner(config)
    run(w.initializer)
    assert run(after) == 1.5            # 3 - 0.25 * 2 * 3
    assert run(applied_twice) == 1.5    # w: 1.5 - 0.25 * 2 * 1.5 = 0.75, doubled
    assert run.sess.run(w) == 0.75


@CONFIGS
def test_gradient_through_an_update_reads_the_variable_after_one_update_per_run(config):
    v = tf.Variable(1.0, name="v")
    x = tf.placeholder(tf.float32, [], name="x")
    y = v.assign_add(1.0) * x
    grad, = tf.gradients(y, x)
    run = Runner(config)
    run(v.initializer)
    assert [run(grad, {x: 5.0}) for _ in range(3)] == [2.0, 3.0, 4.0]
    assert run([y, grad], {x: 5.0}) == [25.0, 5.0]  # y and its gradient share the one AssignAdd of the run
    assert run.sess.run(v) == 5.0


def test_no_gradient_flows_through_an_assign_as_in_tf():
    v = tf.Variable(1.0)
    x = tf.placeholder(tf.float32, [])
    assert tf.gradients(tf.assign(v, x) * 2.0, x) == [None]
    assert tf.gradients(tf.assign_add(v, x) * 2.0, x) == [None]
    assert tf.gradients(tf.assign_sub(v, x) * 2.0, x) == [None]


# --- deadlines ----------------------------------------------------------------------------------------------------

SLEEP_S, TIMEOUT_MS = 0.6, 100


def _slow_step(registry):
    """v := 3, then a slow op, then v += 1; and w := 5 on a branch of its own."""
    _register(registry, "Sleep", lambda x: (time.sleep(SLEEP_S), x)[1])
    v, w = tf.Variable(1.0, name="v"), tf.Variable(1.0, name="w")
    with tf.control_dependencies([tf.assign(v, 3.0)]):
        slept = apply_op_1("Sleep", [tf.constant(1.0)], name="sleepy")
    with tf.control_dependencies([slept]):
        after = tf.assign_add(v, 1.0)
    return v, w, [after, tf.assign(w, 5.0)]


@pytest.mark.parametrize("source", ["RunOptions.timeout_in_ms", "ConfigProto.operation_timeout_in_ms"])
@CONFIGS
def test_deadline_names_timeout_source_and_running_op_and_the_step_is_undone(scratch_registry, config, source):
    v, w, step = _slow_step(scratch_registry)
    options = None
    if source == "RunOptions.timeout_in_ms":
        options = tf.RunOptions(timeout_in_ms=TIMEOUT_MS)
    else:
        config = tf.ConfigProto(inter_op_parallelism_threads=config.inter_op_parallelism_threads,
                                operation_timeout_in_ms=TIMEOUT_MS)
    sess = tf.Session(config=config)
    sess.run([v.initializer, w.initializer])
    assert sess.plan_for(step).mode == ("parallel" if config.inter_op_parallelism_threads > 1 else "sequential")
    with pytest.raises(DeadlineExceededError) as failure:
        sess.run(step, options=options)
    message = str(failure.value)
    assert f"{TIMEOUT_MS} ms deadline ({source})" in message
    assert "while op 'sleepy' (Sleep) was running on /job:localhost/replica:0/task:0/device:CPU:0" in message
    assert failure.value.op.name == "sleepy"
    assert sess.run([v, w], options=tf.RunOptions(timeout_in_ms=60_000)) == [1.0, 1.0]


# --- interrupts and failed steps ----------------------------------------------------------------------------------

@CONFIGS
def test_ctrl_c_after_commit_keeps_the_step_and_a_later_failure_does_not_undo_it(monkeypatch, config):
    v, w = tf.Variable(0.0, name="v"), tf.Variable(0.0, name="w")
    inc = tf.assign_add(v, 1.0)
    bad = tf.placeholder(tf.float32, [None])
    failing = tf.group(tf.assign_add(w, 10.0), tf.check_numerics(tf.reshape(bad, [3]), "read"))  # a read value
    sess = tf.Session(config=config)
    sess.run([v.initializer, w.initializer])
    ran, interrupted = BaseSession._ran, []

    def interrupt_once(self, plan):
        ran(self, plan)
        if not interrupted:
            interrupted.append(plan)
            raise KeyboardInterrupt  # as if Ctrl-C arrived just after the step's last kernel
    monkeypatch.setattr(BaseSession, "_ran", interrupt_once)
    with pytest.raises(KeyboardInterrupt):
        sess.run(inc)
    assert interrupted and sess.run(v) == 1.0
    with pytest.raises(InvalidArgumentError, match="Reshape"):
        sess.run(failing, {bad: [1.0]})
    assert sess.run([v, w]) == [1.0, 0.0]
    assert sess.run(inc) == 2.0


def test_a_failed_step_keeps_what_another_step_wrote_since_and_names_only_that_variable(scratch_registry):
    a_wrote, b_committed = threading.Event(), threading.Event()

    def block_then_fail(x):
        a_wrote.set()
        assert b_committed.wait(JOIN_S)
        raise ValueError("step A fails after step B committed")
    _register(scratch_registry, "BlockThenFail", block_then_fail)
    shared, own = tf.Variable(1.0, name="shared_v"), tf.Variable(2.0, name="own_w")
    with tf.control_dependencies([tf.assign(shared, 10.0), tf.assign(own, 20.0)]):
        step_a = apply_op_1("BlockThenFail", [tf.constant(0.0)], name="block_then_fail")
    step_b = tf.assign(shared, 5.0)
    sess = tf.Session()
    sess.run(tf.global_variables_initializer())
    failures = []

    def run_a():
        try:
            sess.run(step_a)
        except InvalidArgumentError as e:
            failures.append(e)
    thread_a = _started(run_a)
    assert a_wrote.wait(JOIN_S)
    assert sess.run(step_b) == 5.0  # step B commits while step A is blocked after its writes
    b_committed.set()
    _joined(thread_a)
    assert len(failures) == 1
    message = str(failures[0])
    assert "block_then_fail" in message and "step A fails" in message
    assert re.findall(r"Variables (.*) were written by another step after this step wrote them", message) == \
        ["shared_v"]
    assert "own_w" not in message
    assert sess.run([shared, own]) == [5.0, 2.0]  # B's value kept; A's other write undone


# --- a graph growing while the session runs -----------------------------------------------------------------------

@pytest.mark.parametrize("attempt", range(3))  # a race: each attempt gives the old placer another chance to fail
def test_building_the_graph_from_a_thread_while_another_runs_the_session(fast_switching, attempt):
    graph = tf.Graph()
    with graph.as_default():
        base = tf.constant(1.0, name="base")
        doubled = base * 2.0
        counter = tf.Variable(0.0, name="counter")
    sess = tf.Session(graph=graph)
    sess.run(counter.initializer)
    built: list = []
    failures: list = []
    done = threading.Event()

    def build():  # constants whose consumers come next: the placer must ignore consumers added after its snapshot
        try:
            with graph.as_default():
                total = base
                for i in range(3_000):
                    with tf.device("/cpu:0" if i % 2 else None), tf.name_scope(f"grow{i % 7}"):
                        total = total + 1.0
                    if i % 200 == 0:
                        tf.assign_add(counter, 1.0, use_locking=True)
                        tf.Variable(float(i), name=f"late{i}")
                    built.append(total)
        except BaseException as e:  # noqa: BLE001 - any error of the builder fails the test below
            failures.append(e)
        finally:
            done.set()
    builder = _started(build)
    runs = 0
    while not done.is_set() or runs < 3:
        try:
            assert sess.run(doubled) == 2.0
            if built:
                k = len(built) - 1
                assert sess.run(built[k]) == 2.0 + k
            runs += 1
        except BaseException as e:  # noqa: BLE001
            failures.append(e)
            break
    _joined(builder)
    assert failures == []
    assert len(built) == 3_000
    assert sess.run(built[-1]) == 3_001.0
    late = [v for v in graph.get_collection(tf.GraphKeys.GLOBAL_VARIABLES) if v.op.name.startswith("late")]
    sess.run([v.initializer for v in late])
    assert sess.run(late[-1]) == 2_800.0
    bumps = [op for op in graph.get_operations() if op.type == "AssignAdd"]
    sess.run(bumps)
    assert sess.run(counter) == float(len(bumps)) == 15.0
    assert sess.placement(built[-1]) == "/job:localhost/replica:0/task:0/device:CPU:0"
