"""Tests for adplace/runtime/executor.py: plans (pruning, transfers, frees) and how they run (compiled/interpreted)."""
import numpy as np
import pytest

import adplace as tf
from adplace.kernels import registration
from adplace.runtime import executor
from placement_log import CPU0, GPU0, GPU1


pytestmark = pytest.mark.usefixtures("virtual_gpus_only")


def transfer_triples(plan) -> list[tuple[str, str, str]]:
    return [(t.tensor_name, t.src_device, t.dst_device) for t in plan.transfers]


def chain(x, length: int):
    """x -> sin -> cos -> square -> sin -> ... (`length` ops); returns the last tensor."""
    h = x
    for i in range(length):
        h = (tf.sin, tf.cos, tf.square)[i % 3](h)
    return h


def chain_reference(x: np.ndarray, length: int) -> np.ndarray:
    h = x
    for i in range(length):
        h = (np.sin, np.cos, np.square)[i % 3](h)
    return h


# --- transfers -----------------------------------------------------------------------------------------------------

def test_one_transfer_per_tensor_and_destination(gpus):
    with tf.device("/cpu:0"):
        k = tf.constant([1.0, 2.0], name="k")
    with tf.device("/gpu:0"):
        u = tf.sin(k, name="u")
        w = tf.cos(k, name="w")
    sess = tf.Session()
    plan = sess.plan_for([u, w])
    assert transfer_triples(plan) == [("k:0", CPU0, GPU0)]
    assert plan.num_transfers == 1
    copy_steps = [s for s in plan.steps if s.transfer is not None]
    assert len(copy_steps) == 1 and copy_steps[0].device.name == GPU0
    np.testing.assert_allclose(sess.run([u, w]), [np.sin([1.0, 2.0]), np.cos([1.0, 2.0])], rtol=1e-6)


def test_consumers_on_two_gpus_get_two_transfers(gpus):
    with tf.device("/cpu:0"):
        k = tf.constant([1.0, 2.0], name="k")
    with tf.device("/gpu:0"):
        u = tf.sin(k, name="u")
    with tf.device("/gpu:1"):
        z = tf.square(k, name="z")
    plan = tf.Session().plan_for([u, z])
    assert sorted(transfer_triples(plan)) == [("k:0", CPU0, GPU0), ("k:0", CPU0, GPU1)]


def test_same_device_edges_need_no_transfer(gpus):
    with tf.device("/gpu:1"):
        k = tf.constant([1.0, 2.0], name="k")
        y = tf.cos(tf.sin(k))
    assert tf.Session().plan_for(y).transfers == ()


def test_transfer_back_to_cpu_for_a_cpu_consumer(gpus):
    with tf.device("/gpu:0"):
        a = tf.sin(tf.constant(1.0), name="a")
    with tf.device("/cpu:0"):
        b = tf.cos(a, name="b")
    sess = tf.Session()
    assert transfer_triples(sess.plan_for(b)) == [("a:0", GPU0, CPU0)]
    assert sess.run(b) == pytest.approx(np.cos(np.sin(1.0)))


def test_transfers_executed_counts_per_run(gpus):
    with tf.device("/cpu:0"):
        k = tf.constant([1.0, 2.0], name="k")
    with tf.device("/gpu:0"):
        u = tf.sin(k, name="u")
        w = tf.cos(k, name="w")
    with tf.device("/gpu:1"):
        z = tf.square(k, name="z")
    sess = tf.Session()
    assert sess.transfers_executed == 0
    sess.run([u, w])
    assert sess.transfers_executed == 1
    sess.run([u, w])
    assert sess.transfers_executed == 2
    sess.run([u, w, z])
    assert sess.transfers_executed == 4
    sess.run(k)
    assert sess.transfers_executed == 4


def test_variable_read_on_cpu_is_copied_once_to_its_gpu_consumer(gpus):
    with tf.device("/cpu:0"):
        v = tf.Variable(np.array([1.0, 2.0], dtype=np.float32), name="v")
    with tf.device("/gpu:0"):
        doubled = v * 2.0
    sess = tf.Session()
    sess.run(v.initializer)
    np.testing.assert_array_equal(sess.run(doubled), [2.0, 4.0])
    assert transfer_triples(sess.plan_for(doubled)) == [("v/read:0", CPU0, GPU0)]


def test_fed_tensor_on_gpu_needs_no_transfer(gpus):
    x = tf.placeholder(tf.float32, [2], name="x")
    with tf.device("/gpu:1"):
        y = tf.sin(x)
    sess = tf.Session()
    assert sess.plan_for(y, {x: [0.0, 0.0]}).transfers == ()  # the placeholder follows its consumer


def test_host_transfers_pass_the_array_on_and_nothing_writes_through_it(gpus):
    """Between devices in host memory a transfer is the array itself: a consumer computing into a dying input
    (buffer forwarding) must find the variable's or the caller's array still referred to, and copy."""
    ones = np.ones((128, 128), np.float32)
    with tf.device("/cpu:0"):
        v = tf.Variable(ones, name="v")
        x = tf.placeholder(tf.float32, [128, 128], name="x")
        local = tf.sin(x)
    with tf.device("/gpu:1"):
        negated, shifted, moved = tf.negative(v), x + 1.0, tf.negative(local)
    sess = tf.Session()
    sess.run(v.initializer)
    fed = np.full((128, 128), 2.0, np.float32)
    plan = sess.plan_for([negated, shifted, moved], {x: fed})
    assert len(plan.transfers) == 3
    assert all(plan.kernels[i] is registration.forward for i in plan.transfer_steps)
    for _ in range(3):
        got = sess.run([negated, shifted, moved], {x: fed})
        np.testing.assert_array_equal(got[0], -ones)
        np.testing.assert_array_equal(got[1], fed + 1.0)
        np.testing.assert_array_equal(got[2], -np.sin(fed))
    np.testing.assert_array_equal(sess.run(v), ones)
    np.testing.assert_array_equal(fed, np.full((128, 128), 2.0, np.float32))


# --- frees ---------------------------------------------------------------------------------------------------------

def test_each_intermediate_is_freed_after_its_last_consumer():
    x = tf.placeholder(tf.float32, [4], name="x")
    a = tf.sin(x)
    b = tf.cos(a)
    c = tf.square(b)
    plan = tf.Session().plan_for(c, {x: np.ones(4)})
    assert [s.op for s in plan.steps] == [a.op, b.op, c.op]
    for step in plan.steps:
        assert step.frees == step.in_slots  # each value dies right after its only reader
    assert plan.fetch_slots == [plan.steps[-1].out_slots[0]]
    assert all(plan.fetch_slots[0] not in s.frees for s in plan.steps)


def test_fetched_slots_are_never_freed():
    x = tf.placeholder(tf.float32, [4], name="x")
    a = tf.sin(x)
    b = tf.cos(a)
    c = tf.square(b)
    sess = tf.Session()
    plan = sess.plan_for([a, c], {x: np.ones(4)})
    freed = {slot for step in plan.steps for slot in step.frees}
    assert not freed & set(plan.fetch_slots)
    a_slot = plan.steps[0].out_slots[0]
    assert a_slot in plan.fetch_slots and plan.steps[1].in_slots == (a_slot,)
    values = sess.run([a, c], {x: np.ones(4)})
    np.testing.assert_allclose(values[0], np.sin(np.ones(4)), rtol=1e-6)
    np.testing.assert_allclose(values[1], np.square(np.cos(np.sin(np.ones(4)))), rtol=1e-6)


def test_a_value_read_twice_is_freed_after_the_second_read():
    x = tf.placeholder(tf.float32, [4], name="x")
    a = tf.sin(x)
    b = tf.cos(a)
    c = a + b
    plan = tf.Session().plan_for(c, {x: np.ones(4)})
    a_slot = plan.steps[0].out_slots[0]
    where_freed = [i for i, s in enumerate(plan.steps) if a_slot in s.frees]
    assert where_freed == [len(plan.steps) - 1]  # freed by the Add, not by the Cos


def test_frees_in_the_interpreter_and_compiled_paths_give_the_same_values():
    x = tf.placeholder(tf.float32, [4], name="x")
    a = tf.sin(x)
    outs = [a + tf.cos(a) * float(i) for i in range(40)]  # > 64 steps: interpreted first
    total = tf.add_n(outs)
    sess = tf.Session()
    feed = np.linspace(0.0, 1.0, 4, dtype=np.float32)
    plan = sess.plan_for(total, {x: feed})
    assert len(plan.steps) > 64 and not plan.is_compiled
    expected = sum(np.sin(feed) + np.cos(np.sin(feed)) * float(i) for i in range(40))
    for _ in range(executor.TIER_UP_AFTER_RUNS + 1):
        np.testing.assert_allclose(sess.run(total, {x: feed}), expected, rtol=1e-5)


# --- straight-line compilation -------------------------------------------------------------------------------------

def test_small_plans_are_compiled_at_once():
    x = tf.placeholder(tf.float32, [4], name="x")
    y = chain(x, 64)
    sess = tf.Session()
    feed = np.linspace(0.0, 1.0, 4, dtype=np.float32)
    plan = sess.plan_for(y, {x: feed})
    assert len(plan.steps) == 64 and plan.is_compiled
    np.testing.assert_allclose(sess.run(y, {x: feed}), chain_reference(feed, 64), rtol=1e-5)


def test_large_plans_are_interpreted_then_compiled_after_tier_up_runs():
    x = tf.placeholder(tf.float32, [4], name="x")
    y = chain(x, 65)
    sess = tf.Session()
    feed = np.linspace(0.0, 1.0, 4, dtype=np.float32)
    plan = sess.plan_for(y, {x: feed})
    assert len(plan.steps) == 65 and not plan.is_compiled
    sess.run(y, {x: feed})
    plan = next(iter(sess._runs.values())).plan
    assert not plan.is_compiled
    for _ in range(executor.TIER_UP_AFTER_RUNS + 2):
        sess.run(y, {x: feed})
    assert plan.is_compiled
    assert plan.runs == executor.TIER_UP_AFTER_RUNS + 3


def test_tier_up_happens_exactly_after_the_configured_runs():
    x = tf.placeholder(tf.float32, [4], name="x")
    y = chain(x, 100)
    sess = tf.Session()
    feed = np.linspace(0.0, 1.0, 4, dtype=np.float32)
    expected = chain_reference(feed, 100)
    interpreted = [sess.run(y, {x: feed})]
    plan = next(iter(sess._runs.values())).plan
    compiled = []
    for _ in range(executor.TIER_UP_AFTER_RUNS + 1):
        was_compiled = plan.is_compiled  # the mode this run uses
        (compiled if was_compiled else interpreted).append(sess.run(y, {x: feed}))
    assert len(interpreted) == executor.TIER_UP_AFTER_RUNS
    assert len(compiled) == 2
    for value in interpreted + compiled:
        np.testing.assert_allclose(value, expected, rtol=1e-5)
    np.testing.assert_array_equal(interpreted[0], compiled[-1])  # identical, not just close


def test_plans_larger_than_codegen_max_stay_interpreted(monkeypatch):
    monkeypatch.setattr(executor, "CODEGEN_MAX_STEPS", 100)
    x = tf.placeholder(tf.float32, [4], name="x")
    y = chain(x, 150)
    sess = tf.Session()
    feed = np.linspace(0.0, 1.0, 4, dtype=np.float32)
    for _ in range(executor.TIER_UP_AFTER_RUNS + 2):
        np.testing.assert_allclose(sess.run(y, {x: feed}), chain_reference(feed, 150), rtol=1e-5)
    plan = next(iter(sess._runs.values())).plan
    assert plan.runs == executor.TIER_UP_AFTER_RUNS + 2
    assert not plan.is_compiled


def test_compiled_and_interpreted_plans_agree_on_multi_output_ops():
    x = tf.placeholder(tf.float32, [6], name="x")
    parts = tf.split(x, 3)
    small = tf.add_n([tf.sin(p) for p in parts])
    big = tf.add_n([chain(p, 30) for p in parts])  # 90+ steps
    sess = tf.Session()
    feed = np.arange(6, dtype=np.float32) / 6
    assert sess.plan_for(small, {x: feed}).is_compiled
    assert not sess.plan_for(big, {x: feed}).is_compiled
    split = feed.reshape(3, 2)
    np.testing.assert_allclose(sess.run(small, {x: feed}), np.sin(split).sum(0), rtol=1e-6)
    expected = sum(chain_reference(p, 30) for p in split)
    for _ in range(executor.TIER_UP_AFTER_RUNS + 1):
        np.testing.assert_allclose(sess.run(big, {x: feed}), expected, rtol=1e-5)


def test_failing_step_in_a_tiered_up_plan_names_the_op(gpus):
    x = tf.placeholder(tf.float32, [None], name="x")
    y = tf.reshape(chain(x, 70), [3], name="bad")
    sess = tf.Session()
    for _ in range(executor.TIER_UP_AFTER_RUNS):
        sess.run(y, {x: [1.0, 2.0, 3.0]})
    assert next(iter(sess._runs.values())).plan.is_compiled
    with pytest.raises(tf.errors.InvalidArgumentError, match="bad") as info:
        sess.run(y, {x: [1.0, 2.0]})
    assert info.value.op is y.op and GPU0 in str(info.value)


# --- pruning -------------------------------------------------------------------------------------------------------

def test_plan_runs_control_inputs_but_not_unneeded_ops():
    v = tf.Variable(0.0, name="v")
    inc = tf.assign_add(v, 1.0, name="inc")
    with tf.control_dependencies([inc]):
        out = tf.constant(5.0, name="out")
    tf.assign_add(v, 100.0, name="never")
    sess = tf.Session()
    sess.run(v.initializer)
    names = [s.op.name for s in sess.plan_for(out).steps]
    assert "inc" in names and "never" not in names
    assert sess.run(out) == 5.0
    assert sess.run(v) == 1.0


def test_reads_of_an_update_feeding_other_reads_all_run_in_order():
    """Equal and Select both read the AssignAdd's reference: each read moves before its consumer, the first one
    before the second."""
    v = tf.Variable(0.0)
    a = tf.assign_add(v, 1.0)
    c = tf.where(tf.equal(a, 1.0), a, a * 0.0) + 1.0
    sess = tf.Session()
    sess.run(v.initializer)
    assert sess.run(c) == 2.0
    assert sess.run(v) == 1.0


def test_a_control_dependency_on_a_fed_placeholder_is_satisfied_by_the_feed():
    x = tf.placeholder(tf.float32, [])
    with tf.control_dependencies([x]):
        y = tf.constant(3.0) * 2.0
    sess = tf.Session()
    assert sess.run(y, {x: 1.0}) == 6.0
    with pytest.raises(tf.errors.InvalidArgumentError, match="You must feed a value for placeholder tensor"):
        sess.run(y)
