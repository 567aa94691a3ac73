"""tf.cond, tf.case, tf.switch_case and tf.while_loop: values, the ops TF1 builds, bad input, placement, timeouts and
threads. Gradients through them are in test_control_flow_grad.py."""
import collections
import threading

import numpy as np
import pytest

import adplace as tf
from adplace.framework.indexed_slices import IndexedSlices
from ctrl_c import pressing_ctrl_c


def _types(graph=None):
    return [op.type for op in (graph or tf.get_default_graph()).get_operations()]


# --- cond --------------------------------------------------------------------------------------------------------
def test_cond_computes_the_taken_branch_with_tfs_ops_and_names():
    x = tf.placeholder(tf.float32, [])
    y = tf.cond(x > 0, lambda: x * 2.0, lambda: -x)
    with tf.Session() as sess:
        assert sess.run(y, {x: 3.0}) == 6.0 and sess.run(y, {x: -4.0}) == 4.0
    names = {op.name: op.type for op in tf.get_default_graph().get_operations()}
    assert names["cond/Switch"] == "Switch" and names["cond/Merge"] == "Merge"
    assert names["cond/switch_t"] == names["cond/switch_f"] == names["cond/pred_id"] == "Identity"
    assert y.op.name == "cond/Merge"


def test_only_the_taken_branch_runs_its_side_effects():
    v = tf.Variable(0.0)
    x = tf.placeholder(tf.float32, [])
    op = tf.cond(x > 0, lambda: tf.assign_add(v, 1.0), lambda: tf.assign_add(v, 100.0))
    assert "RefSwitch" in _types()
    with tf.Session() as sess:
        sess.run(v.initializer)
        sess.run(op, {x: 1.0})
        assert sess.run(v) == 1.0
        sess.run(op, {x: -1.0})
        assert sess.run(v) == 101.0


def test_a_branch_returning_an_op_gives_the_predicate_after_it():
    v = tf.Variable(0.0)
    x = tf.placeholder(tf.float32, [])
    out = tf.cond(x > 0, lambda: tf.group(tf.assign(v, 5.0)), lambda: tf.no_op())
    assert isinstance(out, tf.Tensor) and out.dtype == tf.bool
    with tf.Session() as sess:
        sess.run(v.initializer)
        assert not sess.run(out, {x: -1.0}) and sess.run(v) == 0.0
        assert sess.run(out, {x: 1.0}) and sess.run(v) == 5.0


def test_nested_conds_and_structured_outputs():
    x = tf.placeholder(tf.float32, [])

    def inner():
        return tf.cond(x > 5, lambda: {"a": x * 2, "b": (x * 3,)}, lambda: {"a": x - 1, "b": (x + 1,)})
    out = tf.cond(x > 0, inner, lambda: {"a": x, "b": (x,)})
    with tf.Session() as sess:
        assert sess.run(out, {x: 6.0}) == {"a": 12.0, "b": (18.0,)}
        assert sess.run(out, {x: 2.0}) == {"a": 1.0, "b": (3.0,)}
        assert sess.run(out, {x: -3.0}) == {"a": -3.0, "b": (-3.0,)}


def test_one_element_lists_are_unpacked_unless_strict():
    p = tf.placeholder(tf.bool, [])
    loose = tf.cond(p, lambda: [tf.constant(1)], lambda: [tf.constant(2)])
    mixed = tf.cond(p, lambda: tf.constant(1), lambda: (tf.constant(2),))  # each branch unpacked on its own
    strict = tf.cond(p, lambda: [tf.constant(1)], lambda: [tf.constant(2)], strict=True)
    assert isinstance(loose, tf.Tensor) and isinstance(mixed, tf.Tensor)
    assert isinstance(strict, list) and len(strict) == 1
    with tf.Session() as sess:
        assert sess.run(loose, {p: False}) == 2 and sess.run(strict, {p: True}) == [1]
        assert sess.run(mixed, {p: False}) == 2
    with pytest.raises(TypeError, match="same sequence type"):
        tf.cond(p, lambda: [tf.constant(1)], lambda: (tf.constant(2),), strict=True)


def test_indexed_slices_come_out_of_a_cond_sparse():
    p = tf.placeholder(tf.bool, [])
    values = tf.constant([[1.0, 2.0]])
    out = tf.cond(p, lambda: IndexedSlices(values, tf.constant([0]), tf.constant([3, 2])),
                  lambda: IndexedSlices(values * 10, tf.constant([2]), tf.constant([3, 2])))
    assert isinstance(out, IndexedSlices)
    with tf.Session() as sess:
        got = sess.run(out, {p: False})
    np.testing.assert_array_equal(got.values, [[10.0, 20.0]])
    np.testing.assert_array_equal(got.indices, [2])


@pytest.mark.parametrize("make, error, message", [
    (lambda x: tf.cond(True, lambda: x, lambda: x), TypeError, "pred must not be a Python bool"),
    (lambda x: tf.cond(x > 0, x, lambda: x), TypeError, "true_fn must be callable"),
    (lambda x: tf.cond(x > 0, lambda: x, None), TypeError, "false_fn must be callable"),
    (lambda x: tf.cond(x > 0, lambda: (x, x), lambda: x), ValueError, r"same (nested structure|number of elements)"),
    (lambda x: tf.cond(x > 0, lambda: x, lambda: tf.cast(x, tf.int32)), ValueError, "must have the same type"),
    (lambda x: tf.cond(tf.constant([True, False]), lambda: x, lambda: x), ValueError,
     r"Shape must be rank 0 but is rank 1 for 'cond/Switch' \(op: 'Switch'\)"),
    (lambda x: tf.cond(x, lambda: x, lambda: x), TypeError, "Input 'pred' of 'Switch' Op has type float32"),
])
def test_bad_conds_raise_tfs_errors_and_build_nothing_after(make, error, message):
    x = tf.placeholder(tf.float32, [])
    with pytest.raises(error, match=message):
        make(x)


def test_a_predicate_of_the_wrong_shape_at_run_time_names_the_switch():
    p = tf.placeholder(tf.bool)
    y = tf.cond(p, lambda: tf.constant(1.0), lambda: tf.constant(2.0))
    with tf.Session() as sess, pytest.raises(tf.errors.InvalidArgumentError,
                                             match=r"The second input must be a scalar, but it has shape \[2\]"):
        sess.run(y, {p: [True, False]})


def test_fetching_a_tensor_of_the_branch_not_taken_is_an_error():
    x = tf.placeholder(tf.float32, [])
    inside = []

    def branch():
        inside.append(x * 2.0)
        return inside[0]
    tf.cond(x > 0, branch, lambda: x)
    with tf.Session() as sess:
        assert sess.run(inside[0], {x: 1.0}) == 2.0
        with pytest.raises(tf.errors.InvalidArgumentError, match=r"Retval\[0\] does not have value: .cond/mul:0. is computed in a branch"):
            sess.run(inside[0], {x: -1.0})


def test_case_takes_the_first_true_predicate_and_exclusive_checks():
    x = tf.placeholder(tf.float32, [])
    r = tf.case([(x < 0, lambda: tf.constant(-1)), (x < 10, lambda: tf.constant(1))], default=lambda: tf.constant(10))
    both = tf.case([(x < 10, lambda: tf.constant(1)), (x < 20, lambda: tf.constant(2))],
                   default=lambda: tf.constant(0), exclusive=True)
    with tf.Session() as sess:
        assert [sess.run(r, {x: v}) for v in (-5.0, 5.0, 50.0)] == [-1, 1, 10]
        assert sess.run(both, {x: 15.0}) == 2
        with pytest.raises(tf.errors.InvalidArgumentError, match="more than 1 conditions"):
            sess.run(both, {x: 5.0})


def test_case_without_a_default_checks_that_a_condition_holds():
    x = tf.placeholder(tf.int32, [])
    out = tf.case([(tf.equal(x, 1), lambda: tf.constant(2)), (tf.equal(x, 2), lambda: tf.constant(4))],
                  exclusive=True)
    with tf.Session() as sess:
        assert sess.run(out, {x: 1}) == 2 and sess.run(out, {x: 2}) == 4
        with pytest.raises(tf.errors.InvalidArgumentError, match="None of conditions evaluated as True"):
            sess.run(out, {x: 4})


def test_switch_case_takes_index_function_pairs_and_checks_them():
    i = tf.placeholder_with_default(2, [])
    out = tf.switch_case(i, [(k, (lambda k=k: tf.constant(k * 10.0))) for k in range(5)],
                         default=lambda: tf.constant(60.0))
    with tf.Session() as sess:
        assert sess.run(out) == 20.0 and sess.run(out, {i: 7}) == 60.0
    with pytest.raises(ValueError, match=r"must form contiguous range of \[0 to 2\) but found \{0,2\}"):
        tf.switch_case(i, [(0, lambda: 1.0), (2, lambda: 2.0)])
    with pytest.raises(TypeError, match="key must be a Python `int`"):
        tf.switch_case(i, [(0.5, lambda: 1.0)])
    with pytest.raises(TypeError, match="branch_index must a Tensor"):
        tf.switch_case(1, [lambda: 1.0])


def test_switch_case_picks_by_index_and_defaults():
    i = tf.placeholder(tf.int32, [])
    r = tf.switch_case(i, [lambda: tf.constant(0.5), lambda: tf.constant(1.5)], default=lambda: tf.constant(9.0))
    last = tf.switch_case(i, {0: lambda: tf.constant(3), 1: lambda: tf.constant(4)})
    with tf.Session() as sess:
        assert [sess.run(r, {i: k}) for k in (0, 1, 7, -1)] == [0.5, 1.5, 9.0, 9.0]
        assert sess.run(last, {i: 5}) == 4


# --- while_loop --------------------------------------------------------------------------------------------------
def test_while_loop_iterates_with_tfs_frame_ops():
    i, acc = tf.while_loop(lambda i, a: i < 10, lambda i, a: (i + 1, a * 2), [0, 1.0])
    with tf.Session() as sess:
        assert sess.run([i, acc]) == [10, 1024.0]
    graph_def = tf.get_default_graph().as_graph_def()
    enters = [n for n in graph_def.node if n.op == "Enter"]
    assert {n.name for n in enters} == {"while/Enter", "while/Enter_1"}
    assert {n.attr["frame_name"].s for n in enters} == {b"while/while_context"}
    assert {"Merge", "Switch", "LoopCond", "NextIteration", "Exit"} <= {n.op for n in graph_def.node}
    merge = next(n for n in graph_def.node if n.name == "while/Merge")
    assert list(merge.input) == ["while/Enter", "while/NextIteration"]


def test_a_single_loop_variable_comes_back_as_itself():
    r = tf.while_loop(lambda x: x < 100, lambda x: x * 3, [1])
    same = tf.while_loop(lambda x: x < 100, lambda x: x * 3, [1], return_same_structure=True)
    lone = tf.while_loop(lambda i, e: i < 10, lambda i, e: (i + 1, e), [0, []])  # flattens to one tensor
    assert isinstance(r, tf.Tensor) and isinstance(same, list) and isinstance(lone, tf.Tensor)
    with tf.Session() as sess:
        assert sess.run(r) == 243 and sess.run(same) == [243] and sess.run(lone) == 10


def test_nested_structures_loops_and_conds():
    Pair = collections.namedtuple("Pair", "a b")

    def body(i, p, d):
        inner = tf.while_loop(lambda j, t: j < i, lambda j, t: (j + 1, t + tf.cast(j, tf.float32)), [0, p.a])[1]
        twice = tf.cond(tf.equal(i % 2, 0), lambda: d["x"] + 1.0, lambda: d["x"] * 3.0)
        return i + 1, Pair(inner, p.b * 2), {"x": twice}
    i, p, d = tf.while_loop(lambda i, p, d: i < 6, body, [0, Pair(tf.constant(0.0), tf.constant(1.0)),
                                                            {"x": tf.constant(0.0)}])
    with tf.Session() as sess:
        got = sess.run([i, p, d])
    expected_inner = sum(sum(range(k)) for k in range(6))
    assert got[0] == 6 and got[1] == Pair(expected_inner, 64.0) and got[2] == {"x": 39.0}


def test_a_tensor_inside_a_loop_cannot_be_fetched():
    inside = []

    def body(i):
        inside.append(i * 2)
        return i + 1
    r = tf.while_loop(lambda i: i < 3, body, [0])
    with tf.Session() as sess:
        with pytest.raises(ValueError, match="has been marked as not fetchable"):
            sess.run(inside[0])
        with pytest.raises(ValueError, match="may not be fed"):
            sess.run(r, {inside[0]: 1})
    graph_def = tf.get_default_graph().as_graph_def()
    copy = tf.Graph()  # an imported loop has no contexts: the runtime refuses the fetch itself
    with copy.as_default():
        tf.import_graph_def(graph_def, name="")
        with tf.Session() as sess, pytest.raises(tf.errors.InvalidArgumentError,
                                                 match=r"Cannot fetch 'while/mul:0': it is computed in every "
                                                       r"iteration of the while loop 'while/while_context'"):
            sess.run("while/mul:0")


def test_a_traced_loop_run_has_step_stats():
    r = tf.while_loop(lambda i: i < 3, lambda i: i + 1, [0])
    metadata = tf.RunMetadata()
    with tf.Session() as sess:
        assert sess.run(r, options=tf.RunOptions(trace_level=tf.RunOptions.FULL_TRACE), run_metadata=metadata) == 3
    assert "while/LoopCond" in [n.node_name for d in metadata.step_stats.dev_stats for n in d.node_stats]


def test_maximum_iterations_stops_the_loop():
    r = tf.while_loop(lambda i: i < 100, lambda i: i + 1, [0], maximum_iterations=7)
    limit = tf.placeholder(tf.int32, [])
    fed = tf.while_loop(lambda i, x: True, lambda i, x: (i + 1, x * 2.0), [0, 1.0], maximum_iterations=limit)
    with tf.Session() as sess:
        assert sess.run(r) == 7
        assert sess.run(fed, {limit: 5}) == [5, 32.0]
    with pytest.raises(ValueError, match="maximum_iterations must be a scalar"):
        tf.while_loop(lambda i: i < 3, lambda i: i + 1, [0], maximum_iterations=[3, 4])


def test_shape_invariants_let_a_loop_variable_grow():
    x = tf.constant([1.0])
    with pytest.raises(ValueError, match=r"enters the loop with shape \(1,\), but has shape \(2,\) after one "
                                         r"iteration.*shape_invariants"):
        tf.while_loop(lambda x: tf.size(x) < 8, lambda x: tf.concat([x, x], 0), [x])
    grown = tf.while_loop(lambda x: tf.size(x) < 8, lambda x: tf.concat([x, x * 2], 0), [x],
                          shape_invariants=[tf.TensorShape([None])])
    assert grown.shape.as_list() == [None]
    with tf.Session() as sess:
        np.testing.assert_array_equal(sess.run(grown), [1, 2, 2, 4, 2, 4, 4, 8])
    with pytest.raises(ValueError, match="not compatible with the initial shape"):
        tf.while_loop(lambda x: True, lambda x: x, [x], shape_invariants=[tf.TensorShape([2])])


@pytest.mark.parametrize("cond, body, error, message", [
    (lambda i: i < 3, lambda i: tf.cast(i, tf.float32), TypeError, "enters the loop with type int32, but has type "
                                                                   "float32"),
    (lambda i: i < 3, lambda i: (i, i), ValueError, r"same (nested structure|number of elements)"),
    (lambda i: i, lambda i: i + 1, ValueError, "must return a scalar bool"),
    (3, lambda i: i, TypeError, "cond must be callable"),
    (lambda i: i < 3, 3, TypeError, "body must be callable"),
])
def test_bad_loops_raise_tfs_errors(cond, body, error, message):
    with pytest.raises(error, match=message):
        tf.while_loop(cond, body, [tf.constant(0)])


def test_no_loop_variables_and_bad_parallel_iterations():
    with pytest.raises(ValueError, match="No loop variables provided"):
        tf.while_loop(lambda: True, lambda: (), [])
    with pytest.raises(TypeError, match="parallel_iterations must be a positive integer"):
        tf.while_loop(lambda i: i < 3, lambda i: i + 1, [0], parallel_iterations=0)


def test_variables_assigned_and_read_in_the_body():
    v = tf.Variable(0.0)
    log = tf.Variable(0.0)

    def body(i):
        bump = tf.assign_add(v, 1.0)
        with tf.control_dependencies([bump]):
            seen = tf.assign_add(log, v.read_value())  # read after this iteration's bump: 1 + 2 + 3
        with tf.control_dependencies([seen]):
            return i + 1
    r = tf.while_loop(lambda i: i < 3, body, [0])
    assert "RefEnter" in _types()
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        assert sess.run(r) == 3
        assert sess.run([v, log]) == [3.0, 6.0]


def test_a_variable_used_in_a_loop_is_read_when_used_as_tfs_aliased_read():
    """TF's `v` in a body is the variable's snapshot entered as a loop invariant, but the snapshot aliases the
    variable's buffer, which an Assign updates in place: on the variable's device the body sees the current value."""
    a, b = tf.Variable(0), tf.Variable(0)

    def body(i):
        bumped = tf.assign_add(a, 1)
        with tf.control_dependencies([bumped]):
            summed = tf.assign_add(b, a)  # reads a after this iteration's bump
        with tf.control_dependencies([summed]):
            return i + 1
    r = tf.while_loop(lambda i: i < 10, body, [0])
    outside = tf.assign_add(a, 1)  # built outside the loop: runs once, before it
    c = tf.Variable(0)

    def count(i):
        with tf.control_dependencies([tf.assign_add(c, outside)]):
            return i + 1
    r2 = tf.while_loop(lambda i: i < 10, count, [0])
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        sess.run(r)
        assert sess.run([a, b]) == [10, 55]
        sess.run(r2)
        assert sess.run([a, c]) == [11, 110]


def test_a_loop_predicate_reading_a_variable_the_body_updates_stops():
    b = tf.Variable(0)

    def body(x):
        with tf.control_dependencies([tf.assign_add(b, 1)]):
            return tf.identity(b)
    r = tf.while_loop(lambda _: b < 10, body, [b], parallel_iterations=1)
    v = tf.get_variable("v", [], initializer=tf.constant_initializer(2.0))

    def square(i):
        done = tf.cond(tf.constant(True), lambda: tf.assign(v, tf.square(v)), lambda: v)
        with tf.control_dependencies([done]):
            return i + 1
    r2 = tf.while_loop(lambda i: i < 4, square, [0])
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        assert sess.run(r) == 10 and sess.run(b) == 10
        assert sess.run(r2) == 4 and sess.run(v) == 65536.0


def test_a_variable_on_another_device_enters_a_loop_once(gpus):
    """As in TF, where the copy to the loop's device does not alias: a CPU variable used in a GPU loop is copied
    when the loop starts, not read again each iteration."""
    with tf.device("/cpu:0"):
        v = tf.Variable(1.0)
    with tf.device("/gpu:0"):
        def body(i, s):
            with tf.control_dependencies([tf.assign_add(v, 1.0)]):
                return i + 1, s + v * 1.0
        _, total = tf.while_loop(lambda i, s: i < 3, body, [0, 0.0])
    with tf.Session() as sess:
        sess.run(v.initializer)
        assert sess.run(total) == 3.0 and sess.run(v) == 4.0


def test_a_loop_in_an_untaken_branch_does_not_run():
    x = tf.placeholder(tf.float32, [])
    y = tf.cond(x > 0, lambda: tf.while_loop(lambda k: k < x, lambda k: k + 1.0, [0.0]), lambda: x)
    with tf.Session() as sess:
        assert sess.run(y, {x: 3.5}) == 4.0 and sess.run(y, {x: -2.0}) == -2.0


def test_an_imported_loop_runs_and_a_failed_import_changes_nothing():
    g = tf.Graph()
    with g.as_default():
        x = tf.placeholder(tf.float32, [], name="x")
        tf.while_loop(lambda i, a: i < 5, lambda i, a: (i + 1, tf.cond(a > 3.0, lambda: a - 1.0, lambda: a * x)),
                      [0, 1.0], name="loop")
    graph_def = g.as_graph_def()
    copy = tf.Graph()
    with copy.as_default():
        tf.import_graph_def(graph_def, name="")
        with tf.Session() as sess:
            assert sess.run(["loop/Exit:0", "loop/Exit_1:0"], {"x:0": 2.0}) == [5, 5.0]
    broken = tf.GraphDef()
    broken.CopyFrom(graph_def)
    next(n for n in broken.node if n.name == "loop/NextIteration_1").input[0] = "missing"
    target = tf.Graph()
    with target.as_default(), pytest.raises(ValueError, match="Unknown input node 'missing'"):
        tf.import_graph_def(broken, name="")
    assert target.get_operations() == []


def test_a_loop_that_never_ends_stops_at_the_deadline_and_changes_no_variable():
    v = tf.Variable(0.0)

    def body(i):
        with tf.control_dependencies([tf.assign_add(v, 1.0)]):
            return i + 1
    forever = tf.while_loop(lambda i: True, body, [0])
    with tf.Session() as sess:
        sess.run(v.initializer)
        with pytest.raises(tf.errors.DeadlineExceededError, match="LoopCond"):
            sess.run(forever, options=tf.RunOptions(timeout_in_ms=200))
        assert sess.run(v) == 0.0
    config = tf.ConfigProto(operation_timeout_in_ms=150)
    with tf.Session(config=config) as sess:
        sess.run(v.initializer)
        with pytest.raises(tf.errors.DeadlineExceededError):
            sess.run(forever)
        assert sess.run(v) == 0.0


@pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")  # a press swallowed in a gc callback
def test_ctrl_c_inside_a_loop_rolls_the_step_back():
    v = tf.Variable(0.0)

    def body(i):
        with tf.control_dependencies([tf.assign_add(v, 1.0)]):
            return i + 1
    long = tf.while_loop(lambda i: i < 10_000_000, body, [0])
    short = tf.while_loop(lambda i: i < 5, body, [0])
    with tf.Session() as sess:
        sess.run(v.initializer)
        with pytest.raises(KeyboardInterrupt), pressing_ctrl_c(after=0.2):
            sess.run(long)
        assert sess.run(v) == 0.0
        assert sess.run(short) == 5 and sess.run(v) == 5.0


def test_a_failed_iteration_rolls_back_the_whole_step():
    v = tf.Variable(0.0)
    table = tf.constant([1.0, 2.0, 3.0])

    def body(i):
        with tf.control_dependencies([tf.assign_add(v, 1.0)]):
            return i + tf.cast(tf.gather(table, i), tf.int32)  # index 3 fails in the 3rd iteration
    r = tf.while_loop(lambda i: i < 10, body, [0])
    with tf.Session() as sess:
        sess.run(v.initializer)
        with pytest.raises(tf.errors.InvalidArgumentError, match=r"indices = 3 is not in \[0, 3\)"):
            sess.run(r)
        assert sess.run(v) == 0.0


def test_an_error_inside_a_loop_body_names_the_failing_op():
    x = tf.placeholder(tf.float32, [3])
    r = tf.while_loop(lambda i, s: i < 3, lambda i, s: (i + 1, s + tf.check_numerics(tf.log(x[i]), "bad log")),
                      [0, 0.0])
    with tf.Session() as sess, pytest.raises(tf.errors.InvalidArgumentError,
                                             match=r"bad log : Tensor had NaN values\n.*node while/CheckNumerics"):
        sess.run(r, {x: [1.0, -1.0, 2.0]})


def test_threads_running_loops_in_one_session_count_exactly():
    v = tf.Variable(0, dtype=tf.int64)

    def body(i):
        with tf.control_dependencies([tf.assign_add(v, tf.constant(1, tf.int64), use_locking=True)]):
            return i + 1
    r = tf.while_loop(lambda i: i < 50, body, [0])
    sess = tf.Session()
    sess.run(v.initializer)
    errors = []

    def work():
        try:
            for _ in range(20):
                assert sess.run(r) == 50
        except Exception as e:  # noqa: BLE001 - reported below
            errors.append(e)
    threads = [threading.Thread(target=work) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == [] and sess.run(v) == 4 * 20 * 50


# --- placement ---------------------------------------------------------------------------------------------------
def test_device_scopes_apply_inside_branches_and_bodies(gpus):
    x = tf.placeholder(tf.float32, [4])

    def body(i, s):
        with tf.device("/gpu:1"):
            return i + 1, s * 2.0
    with tf.device("/gpu:0"):
        y = tf.cond(tf.reduce_sum(x) > 0, lambda: x * 3.0, lambda: x)
        _, z = tf.while_loop(lambda i, s: i < 3, body, [0, y])
    with tf.Session(config=tf.ConfigProto(log_device_placement=True)) as sess:
        np.testing.assert_array_equal(sess.run(z, {x: np.ones(4)}), np.full(4, 24.0))
        placed = {name: device for name, _, _, device, _ in sess.placement_table()}
    assert placed["cond/mul"].endswith("GPU:0") and placed["cond/Merge"].endswith("GPU:0")
    assert placed["while/mul"].endswith("GPU:1") and placed["while/Enter_1"].endswith("GPU:0")
    assert {"cond/Switch", "while/Enter", "while/LoopCond", "while/Exit"} <= set(placed)


def test_a_loop_invariant_is_copied_to_the_gpu_once_not_every_iteration(gpus):
    with tf.device("/cpu:0"):
        w = tf.Variable(np.ones(8, np.float32))
    with tf.device("/gpu:0"):
        _, s = tf.while_loop(lambda i, s: i < 100, lambda i, s: (i + 1, s * 0.5 + w), [0, tf.zeros(8)])
    sess = tf.Session()
    sess.run(w.initializer)
    value = sess.run(s)
    np.testing.assert_allclose(value, np.full(8, 2.0), rtol=1e-5)
    plan = sess.plan_for(s)
    loop = next(k for k, op in zip(plan.kernels, plan.ops) if op.type == "LoopCond")
    assert plan.num_transfers == 1  # w's value to the GPU, when the loop starts
    assert loop.body_plan.num_transfers == 0 and loop.cond_plan.num_transfers == 0


def test_group_refuses_what_is_not_an_op_or_tensor():
    with pytest.raises(TypeError, match="is not a tf.Operation or tf.Tensor"):
        tf.group(1, 2)


def test_maximum_iterations_keeps_the_structure_as_tf_does():
    r = tf.while_loop(lambda i, _: i < 10, lambda i, _: [i + 1, []], [tf.constant(0), []], maximum_iterations=50)
    with tf.Session() as sess:
        assert sess.run(r) == [10, []]


def test_sparse_tensors_come_out_of_conds_and_go_round_loops():
    sp = tf.SparseTensor(indices=[[0, 0], [1, 2]], values=[1.0, 2.0], dense_shape=[3, 4])
    p = tf.placeholder(tf.bool, [])
    out = tf.cond(p, lambda: sp, lambda: tf.SparseTensor(sp.indices, sp.values * 10, sp.dense_shape))

    def body(i, s):  # the number of values doubles each iteration: the loop variable keeps only its rank
        return i + 1, tf.SparseTensor(tf.concat([s.indices, s.indices], 0), tf.concat([s.values, s.values * 2], 0),
                                      s.dense_shape)
    _, grown = tf.while_loop(lambda i, s: i < 2, body, [0, sp])
    assert isinstance(out, tf.SparseTensor) and isinstance(grown, tf.SparseTensor)
    assert grown.indices.shape.as_list() == [None, 2]
    with tf.Session() as sess:
        np.testing.assert_array_equal(sess.run(out, {p: False}).values, [10.0, 20.0])
        np.testing.assert_array_equal(sess.run(out, {p: True}).values, [1.0, 2.0])
        got = sess.run(grown)
    np.testing.assert_array_equal(got.values, [1, 2, 2, 4, 2, 4, 4, 8])
    np.testing.assert_array_equal(got.dense_shape, [3, 4])


def test_a_loop_tensor_used_outside_its_loop_is_refused_when_built():
    inside = []

    def body(i):
        inside.append(tf.constant(2.0) * 3.0)
        return i + 1
    tf.while_loop(lambda i: i < 3, body, [0])
    with pytest.raises(ValueError, match=r"Cannot use 'while/mul' as input to 'Add' because 'while/mul' is in a "
                                         r"while loop"):
        tf.add(1.0, inside[0])
    with pytest.raises(ValueError, match=r"Cannot use 'while/mul' as input to 'cond/Add'"):
        tf.cond(tf.constant(True), lambda: tf.add(1.0, inside[0]), lambda: tf.constant(0.0))
    with pytest.raises(ValueError, match="because they are in different while loops"):
        tf.while_loop(lambda j: j < 2, lambda j: j + tf.cast(inside[0], tf.int32), [0])
    assert "Add" not in [op.name for op in tf.get_default_graph().get_operations()]  # nothing half built
