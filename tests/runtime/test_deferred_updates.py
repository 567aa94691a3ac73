"""Dense optimizer updates committed in place after the plan's last step (runtime/deferred_updates.py, kernels/state.py
`_committing_later`, runtime/variable_state.py `commit_deferred`): the same values bit for bit as computing them
during the step, the variable's own arrays updated where nothing else refers to them, none where something does;
a later step reading the variable, a read output, use_locking, a small variable or a py_func keeps the update in its
step; a failed or interrupted step applies nothing; readers in other threads never see half an update."""
import threading

import numpy as np
import pytest

import adplace as tf
from adplace.kernels import cpu_fusion, fused_updates, state
from adplace.ops import training_ops as ops
from step_checks import assert_ctrl_c_anywhere_is_all_or_nothing, assert_failing_steps_change_nothing, assert_same
from thread_support import run_threads

pytestmark = pytest.mark.skipif(not cpu_fusion.available(), reason="Numba (the `jit` extra) is not installed")

SHAPE = (64, 80)  # 5,120 elements: over fused_updates.LOOP_MIN_ELEMENTS
NO_MEM_OPT = tf.ConfigProto(graph_options=tf.GraphOptions(rewrite_options=tf.RewriterConfig(
    memory_optimization=tf.RewriterConfig.NO_MEM_OPT)))
LR, MOM, RHO, EPS = 0.05, 0.9, 0.8, 1e-3
# id -> (number of slots, op function, inputs before grad, inputs after grad, attrs, updated in place)
DENSE = {
    "adam": (2, ops.apply_adam, (0.9 ** 3, 0.999 ** 3, LR, 0.9, 0.999, 1e-7), (), {}, True),
    "adam_nesterov": (2, ops.apply_adam, (0.9 ** 3, 0.999 ** 3, LR, 0.9, 0.999, 1e-7), (), {"use_nesterov": True},
                      False),
    "momentum": (1, ops.apply_momentum, (LR,), (MOM,), {}, True),
    "rmsprop": (2, ops.apply_rms_prop, (LR, RHO, MOM, EPS), (), {}, True),
    "centered_rmsprop": (3, ops.apply_centered_rms_prop, (LR, RHO, MOM, 1.0), (), {}, True),
    "adagrad": (1, ops.apply_adagrad, (LR,), (), {}, True),
    "adadelta": (2, ops.apply_adadelta, (1.0, RHO, EPS), (), {}, True),
    "ftrl": (2, ops.apply_ftrl, (), (LR, 0.01, 0.1, -0.5), {}, True),
    "ftrl_power": (2, ops.apply_ftrl, (), (LR, 0.0, 0.1, -0.3), {}, False),  # its powers loop has no in-place form
    "ftrl_v2": (2, ops.apply_ftrl_v2, (), (LR, 0.01, 0.1, 0.2, -0.5), {}, True),
}


def _update(name: str, shape=SHAPE, seed: int = 0, **attrs):
    """(variable and slots, the update op's output) with a fixed gradient."""
    n_slots, fn, before, after, fixed_attrs, _ = DENSE[name]
    rng = np.random.default_rng(seed)
    refs = [tf.Variable(rng.uniform(0.1, 1.0, shape).astype(np.float32)) for _ in range(1 + n_slots)]
    grad = rng.standard_normal(shape).astype(np.float32)
    scalars = [np.float32(v) for v in before], [np.float32(v) for v in after]
    return refs, fn(*refs, *scalars[0], grad, *scalars[1], **fixed_attrs, **attrs)


def _cells(sess, refs):
    return [sess._ctx.variable(r.op) for r in refs]


def _side_by_side(refs: list, update, steps: int) -> tuple:
    """`update` run `steps` times in a session and in one without memory optimization, both checked to end with
    the same values bit for bit: (the arrays (addresses) the first's cells held after each step, the plans'
    deferred steps, the number of steps in the first's plan)."""
    with tf.Session() as sess, tf.Session(config=NO_MEM_OPT) as reference:
        for s in (sess, reference):
            s.run(tf.global_variables_initializer())
        cells = _cells(sess, refs)
        addresses = set()
        for _ in range(steps):
            sess.run(update.op)
            reference.run(update.op)
            addresses.add(tuple(cell.value.ctypes.data for cell in cells))
        assert_same(sess, refs, reference.run(refs))
        plans = sess.plan_for(update.op), reference.plan_for(update.op)
        return addresses, [p.deferred_steps for p in plans], len(plans[0].kernels)


@pytest.mark.parametrize("name", sorted(DENSE))
def test_each_update_commits_the_values_it_computes_in_its_step_bit_for_bit(name):
    refs, update = _update(name)
    addresses, deferred, n_steps = _side_by_side(refs, update, 4)
    assert deferred == [[n_steps - 1], []]
    in_place = DENSE[name][5]
    assert len(addresses) == (1 if in_place else 2)  # the same arrays each step, or two taking turns (spares)


def test_a_training_loop_commits_in_place_with_the_values_of_updates_in_their_steps():
    def train(config):
        with tf.Graph().as_default():
            x = tf.constant(np.linspace(-1, 1, 64 * 70, dtype=np.float32).reshape(64, 70))
            w = tf.Variable(np.full((70, 80), 0.01, np.float32), name="w")
            b = tf.Variable(np.zeros(80, np.float32), name="b")
            loss = tf.reduce_mean(tf.square(tf.nn.relu(tf.matmul(x, w) + b) - 0.5))
            step = tf.train.AdamOptimizer(0.01).minimize(loss)
            with tf.Session(config=config) as sess:
                sess.run(tf.global_variables_initializer())
                losses = [sess.run([step, loss])[1] for _ in range(8)]
                plan = sess.plan_for([step, loss])
                return losses, sess.run([w, b]), [plan.ops[i].name for i in plan.deferred_steps]
    losses, values, deferred = train(None)
    reference_losses, reference_values, none = train(NO_MEM_OPT)
    assert deferred == ["Adam/update_w/ApplyAdam"] and none == []  # b: 80 elements, updated in its step
    assert losses == reference_losses and losses[-1] < losses[0]
    for have, want in zip(values, reference_values):
        np.testing.assert_array_equal(have, want)


def test_what_reads_the_variable_later_or_the_update_itself_keeps_the_update_in_its_step():
    refs, update = _update("adam")
    with tf.control_dependencies([update]):
        after = tf.identity(refs[0])  # a later read of the variable
    w_locked, locked = _update("adam", seed=1, use_locking=True)
    small_refs, small = _update("adam", shape=(8, 8), seed=2)
    _, opaque_update = _update("momentum", seed=3)
    with tf.control_dependencies([opaque_update]):
        called = tf.py_func(lambda: np.float32(1.0), [], tf.float32)  # may run anything, reads included
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        start = sess.run(refs[0])
        for fetches in (after, update, locked.op, small.op, called):
            assert sess.plan_for(fetches).deferred_steps == []
        assert sess.plan_for(update.op).deferred_steps != []
        value = sess.run(after)
        np.testing.assert_array_equal(value, sess.run(refs[0]))
        assert not np.array_equal(value, start)
        np.testing.assert_array_equal(sess.run(update), sess.run(refs[0]))  # its output: the value after this step
    del w_locked, small_refs


def test_arrays_someone_holds_are_never_changed_by_a_commit():
    refs, update = _update("adam")
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        cells = _cells(sess, refs)
        sess.run(update.op)
        held, copies = [], []
        for _ in range(4):
            held.append([cell.value for cell in cells])  # a reader keeping the arrays (a fetch, a Saver)
            copies.append([a.copy() for a in held[-1]])
            sess.run(update.op)
        fetched = [sess.run([update.op, refs[0]])[1] for _ in range(3)]  # read in the step, before its commit
        kept = [f.copy() for f in fetched]
        sess.run(update.op)
        for arrays, originals in zip(held, copies):
            for array, original in zip(arrays, originals):
                np.testing.assert_array_equal(array, original)
        for value, original in zip(fetched, kept):
            np.testing.assert_array_equal(value, original)
        assert len({id(a) for arrays in held for a in arrays}) == 12
        del held, fetched, arrays, array, value
        first = [cell.value.ctypes.data for cell in cells]
        sess.run(update.op)
        sess.run(update.op)
        assert [cell.value.ctypes.data for cell in cells] == first  # nothing holds them now: updated in place


def test_a_step_failing_after_its_updates_were_queued_applies_none_of_them():
    (w, m, v), update = _update("adam")
    (w2, accum), update2 = _update("momentum", seed=1)
    x = tf.placeholder(tf.float32, ())
    with tf.control_dependencies([update, update2]):
        checked = tf.debugging.check_numerics(x, "bad input")  # the last step: it fails after both were queued
    variables = [w, m, v, w2, accum]
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        assert len(sess.plan_for(checked, {x: 1.0}).deferred_steps) == 2
        assert_failing_steps_change_nothing(sess, variables, lambda: sess.run(checked, {x: np.nan}),
                                            lambda: sess.run(checked, {x: 1.0}), [0, 3], times=3)


def test_a_commit_failing_while_it_computes_out_of_place_changes_nothing(monkeypatch):
    (w, m, v), update = _update("adam")
    (w2, accum), update2 = _update("momentum", seed=1)
    beta = tf.Variable(np.float32(1.0))
    with tf.control_dependencies([update, update2]):
        step = tf.assign(beta, beta * 0.5)  # a whole write in the same step, undone with it
    variables = [w, m, v, w2, accum, beta]
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        sess.run(step)
        before = sess.run(variables)
        held = sess._ctx.variable(w2.op).value  # w2 cannot be updated in place: computed into new arrays

        def fails(*args):
            raise MemoryError("no memory for the new arrays")
        monkeypatch.setattr(state, "_out_of_place", fails)
        with pytest.raises(MemoryError):
            sess.run(step)
        assert_same(sess, variables, before)
        assert not [c.name for c in sess._ctx._cells.values() if c.lock.locked() or c.mutating]
        monkeypatch.undo()
        sess.run(step)
        assert not np.array_equal(sess.run(w), before[0]) and not np.array_equal(sess.run(w2), before[3])
        np.testing.assert_array_equal(held, before[3])


def test_ctrl_c_anywhere_in_a_committed_step_leaves_it_all_or_nothing():
    assert threading.current_thread() is threading.main_thread()
    refs, update = _update("adam")
    beta = tf.Variable(np.float32(1.0))
    with tf.control_dependencies([update]):
        step = tf.assign(beta, beta * 0.5)
    variables = [*refs, beta]
    with tf.Session() as sess, tf.Session() as stepper:
        sess.run(tf.global_variables_initializer())
        sess.run(step)
        assert sess.plan_for(step).deferred_steps != []

        def stepped(before):  # the whole step from `before`, in a session of its own
            for ref, value in zip(variables, before):
                ref.load(value, stepper)
            stepper.run(step)
            return stepper.run(variables)
        assert assert_ctrl_c_anywhere_is_all_or_nothing(sess, step, variables, stepped) > 10


def test_readers_in_other_threads_never_see_half_an_update():
    # momentum 0, lr 1, grad 1: each step subtracts exactly 1 from every element
    size, steps = 300_000, 40
    w = tf.Variable(np.zeros(size, np.float32), name="w")
    accum = tf.Variable(np.zeros(size, np.float32))
    update = ops.apply_momentum(w, accum, np.float32(1.0), np.ones(size, np.float32), np.float32(0.0))
    total = tf.reduce_sum(w)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        assert sess.plan_for(update.op).deferred_steps != []
        done = threading.Event()
        seen, written = [], [0]

        def write():  # until the readers have seen 40 values (the GIL may keep them waiting), at most 100x steps
            try:
                while written[0] < steps or len(seen) < 40 and written[0] < 100 * steps:
                    sess.run(update.op)
                    written[0] += 1
            finally:
                done.set()

        def read():
            while not done.is_set():
                value = sess.run(w)
                seen.append((float(value.min()), float(value.max())))
                seen.append(float(sess.run(total)) / size)
        run_threads(write, read, read)
        final = sess.run(w)
    assert len(seen) >= 40
    for item in seen:  # each value one step's whole result: all elements equal (a sum of them: a whole number)
        assert (item[0] == item[1]) if isinstance(item, tuple) else item == round(item)
    np.testing.assert_array_equal(final, np.full(size, -written[0], np.float32))  # one writer: no update lost


def test_unlocked_writers_in_many_threads_store_whole_values():
    # Hogwild: updates may be lost (as in TF), but each stored value is one update's whole result
    size, steps = 100_000, 30
    w = tf.Variable(np.zeros(size, np.float32), name="w")
    accum = tf.Variable(np.zeros(size, np.float32))
    update = ops.apply_momentum(w, accum, np.float32(1.0), np.ones(size, np.float32), np.float32(0.0))
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        seen = []

        def work():
            for _ in range(steps):
                sess.run(update.op)
                seen.append(sess.run(w))
        run_threads(work, work, work)
        final = sess.run(w)
    for value in [*seen, final]:
        assert value.min() == value.max() and -3 * steps <= value[0] <= -1
    assert final[0] <= -steps


def test_without_numba_loops_the_updates_run_in_their_steps(monkeypatch):
    monkeypatch.setenv("ADPLACE_CPU_FUSION", "0")
    refs, update = _update("adam")
    addresses, _, _ = _side_by_side(refs, update, 3)
    assert len(addresses) == 2  # spares taking turns: the step computed out of place itself
    assert fused_updates.LOOP_MIN_ELEMENTS <= SHAPE[0] * SHAPE[1]


def test_a_traced_step_reports_each_commit_as_a_node_of_its_op_after_the_last_kernel():
    _, update = _update("adam")
    (w2, _), update2 = _update("momentum", seed=1)
    step = tf.group(update, update2)
    options = tf.RunOptions(trace_level=tf.RunOptions.FULL_TRACE)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        plan = sess.plan_for(step)
        deferred = sorted(plan.ops[i].name for i in plan.deferred_steps)
        assert deferred == sorted([update.op.name, update2.op.name])
        for hold in (False, True):  # held: momentum's commit computes new arrays (out of place)
            held = sess._ctx.variable(w2.op).value if hold else None
            kept = None if held is None else held.copy()
            metadata = tf.RunMetadata()
            sess.run(step, options=options, run_metadata=metadata)
            nodes = sorted((n for d in metadata.step_stats.dev_stats for n in d.node_stats),
                           key=lambda n: n.all_start_nanos)
            by_name: dict = {}
            for node in nodes:
                by_name.setdefault(node.node_name, []).append(node)
            assert sorted(name for name, found in by_name.items() if len(found) != 1) == deferred
            commits = [by_name[name][1] for name in deferred]
            kernels_end = max(n.all_start_nanos + n.all_end_rel_nanos for n in nodes
                              if all(n is not commit for commit in commits))
            for name, commit in zip(deferred, commits):
                ran = by_name[name][0]
                assert commit.all_start_nanos >= kernels_end and commit.all_end_rel_nanos > 0
                assert commit.timeline_label == ran.timeline_label and not commit.output
            if hold:
                np.testing.assert_array_equal(held, kept)
                assert sess._ctx.variable(w2.op).value is not held
