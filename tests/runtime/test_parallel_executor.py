"""The parallel executor: real overlap, dependencies kept, failures and deadlines that lose nothing, the cost model."""
import threading
import time

import numpy as np
import pytest

import adplace as tf
from adplace.ops.op_builder import apply_op_1
from adplace.runtime import parallel, thread_pool
from adplace.runtime.step_runner import StepRunner
from adplace.runtime.step_stats import copied_tensor, transfers

PARALLEL = tf.ConfigProto(inter_op_parallelism_threads=2)


def _register(registry, op_type: str, fn, stateful: bool = True) -> None:
    """A throwaway op type `op_type(x)` whose kernel is `fn(x)`, on CPU and GPU, output shaped like its input."""
    registry.register_op(op_type, lambda inputs, attrs, name: [(inputs[0]._dtype.base_dtype, inputs[0]._shape)],
                         is_stateful=stateful)
    for device_type in ("CPU", "GPU"):
        registry.register_kernel(op_type, device_type)(lambda op, ctx: fn)


def _rendezvous(registry, wait_s: float):
    """An op type whose kernel announces its start, then waits up to `wait_s` for the other one to start.

    Two such ops with no path between them return [1., 1.] only when they ran at the same time.
    """
    started = {"a": threading.Event(), "b": threading.Event()}

    def make(me: str, other: str):
        def kernel(x):
            started[me].set()
            return x * float(started[other].wait(wait_s))
        return kernel
    _register(registry, "MeetA", make("a", "b"))
    _register(registry, "MeetB", make("b", "a"))
    x = tf.constant([1.0])
    return apply_op_1("MeetA", [x], name="meet_a"), apply_op_1("MeetB", [x], name="meet_b")


def test_independent_ops_run_at_the_same_time(scratch_registry):
    a, b = _rendezvous(scratch_registry, wait_s=10.0)
    sess = tf.Session(config=PARALLEL)
    assert sess.run([a, b]) == [[1.0], [1.0]]  # each saw the other start: they overlapped (no timing involved)


def test_one_inter_op_thread_runs_ops_in_turn(scratch_registry):
    a, b = _rendezvous(scratch_registry, wait_s=0.05)
    sess = tf.Session(config=tf.ConfigProto(inter_op_parallelism_threads=1))
    first, second = sess.run([a, b])
    assert sorted([first[0], second[0]]) == [0.0, 1.0]  # the first waited in vain; the second found it started


def test_towers_on_two_gpus_overlap_on_their_devices(scratch_registry, gpus):
    a, b = _rendezvous(scratch_registry, wait_s=10.0)
    with tf.device("/gpu:0"):
        a = tf.identity(a)
    with tf.device("/gpu:1"):
        b = tf.identity(b)
    sess = tf.Session(config=PARALLEL)
    assert sess.run(a + b) == [2.0]


def _random_dag(seed: int, n: int = 60):
    rng = np.random.default_rng(seed)
    values = [tf.constant(rng.standard_normal(3).astype(np.float32)) for _ in range(4)]
    for _ in range(n):
        i, j = rng.integers(len(values), size=2)
        kind = rng.integers(4)
        x, y = values[i], values[j]
        values.append([tf.sin(x), x * y, tf.add_n([x, y, x]), tf.tanh(x - y)][kind])
    return values


@pytest.mark.parametrize("seed", range(5))
def test_parallel_run_equals_sequential_on_random_dags(seed, gpus):
    for k, _ in enumerate(range(3)):
        with tf.device(f"/gpu:{k % 2}" if k < 2 else "/cpu:0"):
            values = _random_dag(seed * 10 + k)
    sequential = tf.Session(config=tf.ConfigProto(inter_op_parallelism_threads=1)).run(values)
    sess = tf.Session(config=PARALLEL)
    for _ in range(3):
        for got, want in zip(sess.run(values), sequential):
            np.testing.assert_array_equal(got, want)
    assert sess.plan_for(values).mode == "parallel"


def test_variable_writes_and_reads_keep_program_order():
    v = tf.Variable(0.0)
    bump = tf.assign_add(v, 1.0)
    with tf.control_dependencies([bump]):
        after = tf.identity(v)
    other = tf.assign_add(v, 10.0)
    sess = tf.Session(config=PARALLEL)
    sess.run(v.initializer)
    for step in range(20):
        seen, _ = sess.run([after, other])
        assert seen in (11.0 * step + 1.0, 11.0 * step + 11.0)  # sees bump, with or without the unordered other
    assert sess.run(v) == 220.0


def test_failed_parallel_step_undoes_writes_from_every_thread(scratch_registry):
    def fail(x):
        time.sleep(0.05)  # let the other branch's write happen first
        raise ValueError("bad value")
    _register(scratch_registry, "FailLate", fail)
    v, w = tf.Variable(1.0), tf.Variable(2.0)
    write_v = tf.assign(v, 5.0)
    with tf.control_dependencies([tf.assign(w, 7.0)]):
        failing = apply_op_1("FailLate", [tf.constant(1.0)], name="fail_late")
    sess = tf.Session(config=PARALLEL)
    sess.run(tf.global_variables_initializer())
    assert sess.plan_for([write_v, failing]).mode == "parallel"
    with pytest.raises(tf.errors.InvalidArgumentError, match="fail_late"):
        sess.run([write_v, failing])
    assert sess.run([v, w]) == [1.0, 2.0]


def _slow_graph(registry, seconds: float):
    _register(registry, "Sleep", lambda x: (time.sleep(seconds), x)[1])
    v = tf.Variable(1.0)
    with tf.control_dependencies([tf.assign(v, 3.0)]):
        slept = apply_op_1("Sleep", [tf.constant(1.0)], name="sleep")
    return v, slept


@pytest.mark.parametrize("config", [tf.ConfigProto(inter_op_parallelism_threads=1), PARALLEL],
                         ids=["sequential", "parallel"])
def test_timeout_raises_deadline_exceeded_and_keeps_variables(scratch_registry, config):
    v, slept = _slow_graph(scratch_registry, 0.3)
    with tf.control_dependencies([slept]):
        after = tf.assign_add(v, 1.0)
    sess = tf.Session(config=config)
    sess.run(v.initializer)
    with pytest.raises(tf.errors.DeadlineExceededError, match="Timed out waiting for notification"):
        sess.run(after, options=tf.RunOptions(timeout_in_ms=50))
    assert sess.run(v) == 1.0
    assert sess.run(after, options=tf.RunOptions(timeout_in_ms=60_000)) == 4.0


def test_operation_timeout_from_config_applies_to_every_run(scratch_registry):
    v, slept = _slow_graph(scratch_registry, 0.2)
    sess = tf.Session(config=tf.ConfigProto(operation_timeout_in_ms=20))
    sess.run(v.initializer)
    with pytest.raises(tf.errors.DeadlineExceededError):
        sess.run(slept)
    with pytest.raises(tf.errors.DeadlineExceededError):
        sess.make_callable(slept)()
    assert sess.run(v) == 1.0
    assert sess.run(slept, options=tf.RunOptions(timeout_in_ms=60_000)) == 1.0  # the run's own timeout wins


def _trace(sess, fetches):
    metadata = tf.RunMetadata()
    value = sess.run(fetches, options=tf.RunOptions(trace_level=tf.RunOptions.FULL_TRACE), run_metadata=metadata)
    return value, metadata.step_stats


@pytest.mark.parametrize("config", [None, PARALLEL], ids=["sequential", "parallel"])
def test_trace_lists_ops_per_device_and_each_transfer_once_per_destination(gpus, config):
    with tf.device("/cpu:0"):
        a = tf.constant(np.ones(5, np.float32), name="a")
    with tf.device("/gpu:0"):
        b = tf.sin(a, name="b")
        b2 = tf.cos(a, name="b2")                # a second consumer of a on GPU:0: the same copy
    with tf.device("/cpu:0"):
        c = tf.cos(b, name="c")
    with tf.device("/gpu:1"):
        d = tf.add_n([b, c, b2], name="d")
    sess = tf.Session(config=config)
    value, stats = _trace(sess, d)
    np.testing.assert_allclose(value, np.sin(1) + np.cos(np.sin(1)) + np.cos(1), rtol=1e-6)
    devices = [s.device for s in stats.dev_stats]
    assert devices == [f"/job:localhost/replica:0/task:0/device:{d}" for d in ("CPU:0", "GPU:0", "GPU:1")]
    ops = {s.device[-5:]: sorted(n.node_name for n in s.node_stats if copied_tensor(n) is None) for s in stats.dev_stats}
    assert ops == {"CPU:0": ["a", "c"], "GPU:0": ["b", "b2"], "GPU:1": ["d"]}
    moved = sorted((t.tensor_name, t.src_device[-5:], t.dst_device[-5:], t.bytes) for t in transfers(stats))
    assert moved == [("a:0", "CPU:0", "GPU:0", 20), ("b2:0", "GPU:0", "GPU:1", 20), ("b:0", "GPU:0", "CPU:0", 20),
                     ("b:0", "GPU:0", "GPU:1", 20), ("c:0", "CPU:0", "GPU:1", 20)]
    assert sess.plan_for(d).num_transfers == 5
    for device in stats.dev_stats:
        for node in device.node_stats:
            assert node.all_start_micros > 1.6e15 and node.all_end_rel_micros >= 0  # epoch microseconds
            assert node.timeline_label.startswith(f"{node.node_name} = ")
            assert node.output[0].tensor_description.allocation_description.requested_bytes == 20
    label = {n.node_name: n.timeline_label for s in stats.dev_stats for n in s.node_stats}
    recv_c = next(n for n in label if n.startswith("c/_"))
    assert label[recv_c] == f"{recv_c} = _Recv(c)"
    assert label["d"].startswith("d = AddN(b/_") and recv_c in label["d"]


def test_untraced_run_leaves_metadata_empty_and_trace_reports_threads():
    x = tf.constant([1.0, 2.0])
    metadata = tf.RunMetadata()
    tf.Session().run(x * 2, run_metadata=metadata)
    assert metadata.step_stats.dev_stats == []
    _, stats = _trace(tf.Session(), x * 2)
    assert {n.thread_id for s in stats.dev_stats for n in s.node_stats} == {0}


# --- the schedule and the cost model -------------------------------------------------------------------------------
def test_schedule_orders_variable_accesses_and_sees_chains():
    v = tf.Variable(1.0)
    read_first = v + 1.0
    write = tf.assign(v, 2.0)
    sess = tf.Session()
    sess.run(v.initializer)
    plan = sess.plan_for([read_first, write])
    schedule = parallel.Schedule(plan)
    step_of = {op.name: i for i, op in enumerate(plan.ops) if i not in plan.transfer_steps}
    reads = [i for i, op in enumerate(plan.ops) if op.name == v.op.name]
    assert any(step_of["Assign"] in schedule.succs[r] for r in reads)  # the write waits for the read
    chain = tf.sin(tf.cos(tf.sin(tf.constant(1.0))))
    assert not parallel.Schedule(sess.plan_for(chain)).can_overlap
    assert schedule.can_overlap


def _wide_plan(n: int = 4):
    x = tf.constant(np.ones((8, 8), np.float32))
    total = tf.add_n([tf.matmul(x, tf.constant(np.eye(8, dtype=np.float32) * k)) for k in range(n)])
    return total


def test_predicted_time_halves_for_two_independent_heavy_branches():
    total = _wide_plan(4)
    plan = tf.Session().plan_for(total)
    schedule = parallel.Schedule(plan)
    costs = [10_000_000 if op.type == "MatMul" else 1_000 for op in plan.ops]
    one = parallel.predict_parallel_ns(schedule, costs, workers=1)
    two = parallel.predict_parallel_ns(schedule, costs, workers=2)
    assert one >= sum(costs)
    assert 0.45 < two / one < 0.6


@pytest.mark.parametrize("matmul_ns, mode", [(10_000_000, "parallel"), (2_000, "sequential")])
def test_adaptive_mode_goes_parallel_only_when_ops_are_heavy(matmul_ns, mode):
    total = _wide_plan(4)
    sess = tf.Session(config=tf.ConfigProto(intra_op_parallelism_threads=1))
    plan = sess.plan_for(total)
    runner = StepRunner(tf.ConfigProto(inter_op_parallelism_threads=0, intra_op_parallelism_threads=1), sess._ctx)
    runner.inter_threads = 2  # as on a 2-core machine, whatever this one has
    runner._choose(plan, [matmul_ns if op.type == "MatMul" else 1_000 for op in plan.ops])
    assert plan.mode == mode


def test_adaptive_mode_calibrates_on_the_third_run_and_keeps_results(monkeypatch):
    monkeypatch.setattr(thread_pool, "available_cpus", lambda: 2)
    total = _wide_plan(4)
    sess = tf.Session()
    expected = np.ones((8, 8), np.float32) @ (np.eye(8, dtype=np.float32) * 6)
    for _ in range(4):
        np.testing.assert_allclose(sess.run(total), expected)
    plan = next(iter(sess._runs.values())).plan
    assert plan.mode == "sequential" and plan.runs == 4  # tiny matmuls: never worth a thread hand-over


def test_inter_op_threads_follow_tf_defaults(monkeypatch):
    monkeypatch.delenv("TF_NUM_INTEROP_THREADS", raising=False)
    monkeypatch.setattr(thread_pool, "available_cpus", lambda: 6)
    assert thread_pool.inter_op_threads(0) == 6
    assert thread_pool.inter_op_threads(3) == 3
    assert thread_pool.inter_op_threads(-1) == 1
    monkeypatch.setenv("TF_NUM_INTEROP_THREADS", "4")
    assert thread_pool.inter_op_threads(0) == 4
    monkeypatch.setenv("TF_NUM_INTEROP_THREADS", "-1")
    assert thread_pool.inter_op_threads(0) == 1


def test_sessions_share_the_global_pool_unless_per_session_threads():
    x = tf.constant([1.0])
    ys = [tf.sin(x), tf.cos(x)]
    one, two = tf.Session(config=PARALLEL), tf.Session(config=PARALLEL)
    own = tf.Session(config=tf.ConfigProto(inter_op_parallelism_threads=2, use_per_session_threads=True))
    for sess in (one, two, own):
        sess.run(ys)
    assert one._runner.pool is two._runner.pool
    assert own._runner.pool is not one._runner.pool
    own.close()


def test_intra_op_threads_limit_blas_while_a_step_runs(scratch_registry):
    threadpoolctl = pytest.importorskip("threadpoolctl", reason="intra-op limits need threadpoolctl")
    seen = []

    def record(x):
        seen.append([info["num_threads"] for info in threadpoolctl.threadpool_info() if info["user_api"] == "blas"])
        return x
    _register(scratch_registry, "SeeBlas", record)
    y = apply_op_1("SeeBlas", [tf.constant(1.0)])
    if not threadpoolctl.threadpool_info():
        pytest.skip("no BLAS library loaded that threadpoolctl can see")
    tf.Session(config=tf.ConfigProto(intra_op_parallelism_threads=1)).run(y)
    assert seen and all(n == 1 for n in seen[0])
