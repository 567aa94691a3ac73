"""tf.test as TF1 graph-mode tests use it (adplace/test.py, adplace/test_util.py).

Test cases are defined inside the tests and run with unittest's runner, so a case meant to fail fails there and
not here; each test asserts on the unittest result.
"""
import collections
import os
import subprocess
import sys
import textwrap
import unittest

import numpy as np
import pytest

import adplace as tf
from adplace import test_util


def _run(case_class, *names) -> unittest.TestResult:
    """Run the named test methods (all when none are named) of `case_class`; return the unittest result."""
    loader = unittest.TestLoader()
    suite = (unittest.TestSuite([case_class(name) for name in names]) if names
             else loader.loadTestsFromTestCase(case_class))
    result = unittest.TestResult()
    suite.run(result)
    return result


def _messages(result: unittest.TestResult) -> str:
    return "\n".join(text for _, text in result.failures + result.errors)


def _passes(case_class, *names) -> None:
    result = _run(case_class, *names)
    assert result.wasSuccessful(), _messages(result)
    assert result.testsRun == (len(names) or result.testsRun)


def _fails_with(case_class, name: str, *fragments: str) -> str:
    result = _run(case_class, name)
    assert len(result.failures) == 1 and not result.errors, _messages(result)
    text = result.failures[0][1]
    for fragment in fragments:
        assert fragment in text, text
    return text


# --- graphs, sessions, evaluate -------------------------------------------------------------------------------
def test_each_test_gets_a_fresh_default_graph_with_tf_default_seed():
    graphs = []

    class Case(tf.test.TestCase):
        def test_a(self):
            graphs.append(tf.get_default_graph())
            self.assertEqual(tf.get_default_graph().get_operations(), [])
            tf.constant(1.0, name="leftover")
            self.assertEqual(tf.get_default_graph().seed, 87654321)

        def test_b(self):
            graphs.append(tf.get_default_graph())
            self.assertEqual(tf.get_default_graph().get_operations(), [])

    _passes(Case)
    assert len(graphs) == 2 and graphs[0] is not graphs[1]


def test_random_ops_repeat_across_tests_because_setup_seeds_the_graph():
    values = []

    class Case(tf.test.TestCase):
        def test_one(self):
            values.append(self.evaluate(tf.random_uniform([4])))

        def test_two(self):
            values.append(self.evaluate(tf.random_uniform([4])))

    _passes(Case)
    np.testing.assert_array_equal(values[0], values[1])


def test_cached_session_is_one_session_per_test_and_closed_at_teardown():
    seen = []

    class Case(tf.test.TestCase):
        def test_reuse(self):
            with self.cached_session() as first:
                self.assertIs(tf.get_default_session(), first)
                self.assertIs(first.graph, tf.get_default_graph())
            with self.cached_session() as second, self.test_session() as third:
                self.assertIs(first, second)
                self.assertIs(first, third)
            self.assertIsNone(tf.get_default_session())
            seen.append(first)

        def test_other(self):
            with self.cached_session() as sess:
                seen.append(sess)

        def test_other_graph_is_an_error(self):
            with self.cached_session():
                pass
            with self.assertRaisesRegex(ValueError, "The graph used to get the cached session is different"):
                with self.cached_session(graph=tf.Graph()):
                    pass

    _passes(Case)
    assert seen[0] is not seen[1]
    with pytest.raises(RuntimeError, match="closed Session"):
        seen[0].run(tf.constant(1))


def test_session_is_new_each_time_sets_defaults_and_closes():
    class Case(tf.test.TestCase):
        def test_sessions(self):
            graph = tf.Graph()
            with self.session(graph=graph) as sess:
                self.assertIs(tf.get_default_graph(), graph)
                self.assertIs(tf.get_default_session(), sess)
                self.assertEqual(tf.constant([1, 2]).eval().tolist(), [1, 2])
            with self.session(graph=graph) as other:
                self.assertIsNot(other, sess)
            with self.assertRaisesRegex(RuntimeError, "closed Session"):
                sess.run(graph.get_operations()[0].outputs[0])

    _passes(Case)


def test_ops_go_to_the_cpu_unless_use_gpu(gpus):
    class Case(tf.test.TestCase):
        def test_devices(self):
            with self.session():
                self.assertDeviceEqual(tf.constant(1.0).device, "/cpu:0")
            with self.session(use_gpu=True):
                self.assertEqual(tf.constant(1.0).device, "")
            with self.session(force_gpu=True) as sess:
                c = tf.constant(2.0) * 3.0
                self.assertDeviceEqual(c.device, "/gpu:0")
                self.assertEqual(sess.run(c), 6.0)

    _passes(Case)


def test_force_gpu_without_a_gpu_fails_when_the_ops_run(virtual_gpus_only):
    class Case(tf.test.TestCase):
        def test_forced(self):
            with self.session(force_gpu=True) as sess:
                x = tf.constant(1.0)
                self.assertFalse(sess._config.allow_soft_placement)
                with self.assertRaises(tf.errors.InvalidArgumentError):
                    sess.run(x)

    _passes(Case)


def test_evaluate_handles_nested_structures_and_needs_no_session():
    Pair = collections.namedtuple("Pair", "x y")

    class Case(tf.test.TestCase):
        def test_structures(self):
            a, b = tf.constant([1.0, 2.0]), tf.constant(3)
            out = self.evaluate({"a": a, "both": [a, (b,)], "pair": Pair(a, b)})
            self.assertAllEqual(out["a"], [1.0, 2.0])
            self.assertEqual(out["both"][1][0], 3)
            self.assertIsInstance(out["pair"], Pair)
            self.assertEqual(out["pair"].y, 3)

        def test_variables_in_a_cached_session(self):
            v = tf.Variable([1.0, 2.0])
            self.evaluate(tf.global_variables_initializer())
            self.evaluate(tf.assign_add(v, [1.0, 1.0]))
            self.assertAllClose(v, [2.0, 3.0])

    _passes(Case)


# --- assertions: pass on equal, fail with a message naming the mismatch ---------------------------------------
def test_assert_all_close_passes_on_nested_close_values_and_tensors():
    Point = collections.namedtuple("Point", "x y")

    class Case(tf.test.TestCase):
        def test_close(self):
            self.assertAllClose({"w": [1.0, 2.0], "b": (Point(1.0, [2.0]), 3.0)},
                                {"w": np.array([1.0, 2.0 + 1e-7]), "b": (Point(1.0, [2.0]), 3.0)})
            self.assertAllClose(tf.constant([1.0, np.nan]), [1.0, np.nan])
            self.assertAllClose([tf.constant(1.0), tf.constant([2.0, 3.0])], [1.0, [2.0, 3.0]])
            self.assertAllClose([1.0, 1.1], [1.0, 1.0], atol=0.2)

    _passes(Case)


def test_assert_all_close_names_the_path_and_elements_that_differ():
    class Case(tf.test.TestCase):
        def test_value(self):
            self.assertAllClose({"layer": [[1.0, 2.0], [3.0, 4.0]]}, {"layer": [[1.0, 2.0], [3.0, 4.5]]})

        def test_shape(self):
            self.assertAllClose([1.0, 2.0], [1.0, 2.0, 3.0])

        def test_tensor(self):
            self.assertAllClose(tf.constant([1.0, 2.0]), [1.0, 2.5], msg="my note")

    _fails_with(Case, "test_value", "a[layer] is different from b[layer]", "not close where = (array([1]), "
                "array([1]))", "not close lhs = [4.]", "not close rhs = [4.5]")
    _fails_with(Case, "test_shape", "Shape mismatch: expected (2,), got (3,)")
    _fails_with(Case, "test_tensor", "my note", "not close rhs = [2.5]")


def test_assert_all_close_rejects_dict_against_non_dict_and_compares_ragged_lists_item_by_item():
    class Case(tf.test.TestCase):
        def test_dict(self):
            with self.assertRaisesRegex(ValueError, r"Can't compare dict to non-dict, a\[0\] vs b\[0\]"):
                self.assertAllClose([{"a": 1}, [1, 2]], [[1], [1, 2]])
            self.assertAllClose([[1.0], [2.0, 3.0]], [[1.0], [2.0, 3.0]])
            with self.assertRaisesRegex(AssertionError, r"a\[1\] is different from b\[1\]"):
                self.assertAllClose([[1.0], [2.0, 3.0]], [[1.0], [2.0, 3.5]])

    _passes(Case)


def test_tolerances_according_to_type_and_not_all_close():
    class Case(tf.test.TestCase):
        def test_half(self):
            a = np.array([1.0, 2.0], np.float16)
            self.assertAllCloseAccordingToType(a, a + np.float16(1e-3))
            with self.assertRaises(AssertionError):
                self.assertAllClose(a, a + np.float16(1e-3))
            with self.assertRaises(AssertionError):
                self.assertAllCloseAccordingToType(np.float64([1.0]), [1.0 + 1e-4])
            self.assertNotAllClose([1.0], [1.1])
            with self.assertRaisesRegex(AssertionError, "close at all elements"):
                self.assertNotAllClose([1.0], [1.0])

    _passes(Case)


def test_assert_all_equal_and_not_all_equal():
    class Case(tf.test.TestCase):
        def test_equal(self):
            self.assertAllEqual(tf.constant([[1, 2]]), [[1, 2]])
            self.assertAllEqual([np.nan, 1.0], [np.nan, 1.0])
            self.assertAllEqual([b"a", b"b"], ["a", "b"])
            self.assertNotAllEqual([1, 2], [1, 3])
            with self.assertRaisesRegex(AssertionError, "equal at all elements"):
                self.assertNotAllEqual([1, 2], [1, 2])

        def test_unequal(self):
            self.assertAllEqual([[1, 2], [3, 4]], [[1, 2], [3, 5]])

        def test_shape(self):
            self.assertAllEqual([1, 2], [[1, 2]])

    _passes(Case, "test_equal")
    _fails_with(Case, "test_unequal", "not equal where = (array([1]), array([1]))", "not equal lhs = array([4])")
    _fails_with(Case, "test_shape", "Shape mismatch: expected (2,), got (1, 2).")


def test_order_range_and_set_assertions():
    class Case(tf.test.TestCase):
        def test_pass(self):
            x = tf.constant([1.0, 2.0, 3.0])
            self.assertAllGreater(x, 0.5)
            self.assertAllLess(x, 3.5)
            self.assertAllGreaterEqual(x, 1.0)
            self.assertAllLessEqual(x, 3.0)
            self.assertAllInRange(x, 1.0, 3.0)
            self.assertAllInSet(tf.constant([1, 2, 2]), {1, 2})

        def test_greater(self):
            self.assertAllGreater([1.0, 2.0], 1.0)

        def test_open_range(self):
            self.assertAllInRange([[1.0, 3.0]], 1.0, 3.0, open_upper_bound=True)

        def test_nan_range(self):
            self.assertAllInRange([np.nan, 1.0], 0.0, 2.0)

        def test_set(self):
            self.assertAllInSet([1, 2, 7], [1, 2])

    _passes(Case, "test_pass")
    _fails_with(Case, "test_greater", "not greater than 1.0")
    _fails_with(Case, "test_open_range", "1 of the 2 element(s) are outside the range [1.0, 3.0)", "[0 1] : 3.0")
    _fails_with(Case, "test_nan_range", "1 of the 2 element(s) are NaN")
    _fails_with(Case, "test_set", "1 unique element(s) are not in the set [1, 2]: [7]")


def test_near_assertions():
    class Case(tf.test.TestCase):
        def test_pass(self):
            self.assertNear(1.0, 1.05, 0.1)
            self.assertNear(float("inf"), float("inf"), 0.0)
            self.assertArrayNear([1.0, 2.0], [1.01, 1.99], 0.02)
            self.assertNDArrayNear(np.ones((2, 2)), np.ones((2, 2)) + 1e-4, 1e-3)

        def test_near(self):
            self.assertNear(1.0, 1.5, 0.1, msg="step")

        def test_ndarray(self):
            self.assertNDArrayNear(np.zeros(4), np.ones(4), 1.0)

    _passes(Case, "test_pass")
    _fails_with(Case, "test_near", "1.000000 != 1.500000 +/- 0.100000 (step)")
    _fails_with(Case, "test_ndarray", "False is not true")


def test_shape_device_and_dtype_assertions():
    class Case(tf.test.TestCase):
        def test_pass(self):
            t = tf.placeholder(tf.float32, [2, 3])
            self.assertShapeEqual(np.zeros((2, 3)), t)
            self.assertDeviceEqual("/gpu:0", "/device:GPU:0")
            self.assertDeviceEqual(tf.DeviceSpec(job="ps", device_type="CPU", device_index=0), "/job:ps/cpu:0")
            self.assertDTypeEqual(tf.constant([1.0]), np.float32)
            self.assertDTypeEqual(np.int64([1]), tf.int64)
            with self.assertRaisesRegex(TypeError, "np_array must be a Numpy ndarray"):
                self.assertShapeEqual([1, 2], t)
            with self.assertRaisesRegex(TypeError, "tf_tensor must be a Tensor"):
                self.assertShapeEqual(np.zeros(2), np.zeros(2))

        def test_shape(self):
            self.assertShapeEqual(np.zeros((2, 4)), tf.placeholder(tf.float32, [2, 3]))

        def test_device(self):
            self.assertDeviceEqual("/cpu:0", "/gpu:0")

    _passes(Case, "test_pass")
    _fails_with(Case, "test_shape", "not equal")
    _fails_with(Case, "test_device", "Devices /device:CPU:0 and /device:GPU:0 are not equal")


def test_assert_raises_op_error_passes_only_for_a_matching_op_error():
    class Case(tf.test.TestCase):
        def _bad_reshape(self):
            x = tf.placeholder(tf.float32)
            with self.cached_session() as sess:
                sess.run(tf.reshape(x, [3], name="bad_reshape"), {x: np.zeros(4)})

        def test_match(self):
            with self.assertRaisesOpError("Input to reshape is a tensor with 4 values"):
                self._bad_reshape()

        def test_op_name_is_searched_too(self):
            with self.assertRaisesOpError("Caused by: bad_reshape"):
                self._bad_reshape()

        def test_predicate(self):
            with self.assertRaisesOpError(lambda e: isinstance(e, tf.errors.InvalidArgumentError)):
                self._bad_reshape()

        def test_wrong_message(self):
            with self.assertRaisesOpError("something else entirely"):
                self._bad_reshape()

        def test_not_an_op_error(self):
            with self.assertRaisesOpError("boom"):
                raise ValueError("boom")

        def test_nothing_raised(self):
            with self.assertRaisesOpError("anything"):
                pass

    _passes(Case, "test_match", "test_op_name_is_searched_too", "test_predicate")
    _fails_with(Case, "test_wrong_message", "Exception of type <class 'adplace.framework.errors.InvalidArgumentError'>")
    _fails_with(Case, "test_not_an_op_error", "Exception of type <class 'ValueError'>: boom")
    _fails_with(Case, "test_nothing_raised", "OpError not raised")


def test_assert_raises_with_predicate_match_for_any_exception_type():
    class Case(tf.test.TestCase):
        def test_pass(self):
            with self.assertRaisesWithPredicateMatch(ValueError, r"must be \d+"):
                raise ValueError("x must be 3")
            with self.assertRaisesWithPredicateMatch((KeyError, ValueError), lambda e: "k" in str(e)):
                raise KeyError("k")

        def test_wrong_type(self):
            with self.assertRaisesWithPredicateMatch(TypeError, "x"):
                raise ValueError("x")

    _passes(Case, "test_pass")
    _fails_with(Case, "test_wrong_type", "Exception of type <class 'ValueError'>: x")


def test_absl_style_helpers():
    class Case(tf.test.TestCase):
        def test_pass(self):
            self.assertStartsWith("adplace", "ad")
            self.assertEndsWith("adplace", "place")
            self.assertLen([1, 2], 2)
            self.assertEmpty([])
            self.assertNotEmpty({1})
            self.assertItemsEqual([1, 2, 2], [2, 1, 2])
            self.assertSameElements([1, 2, 2], [2, 1])
            self.assertContainsSubset([1], [1, 2])
            self.assertNoCommonElements([1], [2])
            self.assertBetween(2, 1, 3)

        def test_starts_with(self):
            self.assertStartsWith("adplace", "tf", msg="prefix")

        def test_len(self):
            self.assertLen([1], 2)

    _passes(Case, "test_pass")
    _fails_with(Case, "test_starts_with", "'adplace' does not start with 'tf' : 'prefix'")
    _fails_with(Case, "test_len", "[1] has length of 1, expected 2.")


# --- threads, temp dirs, decorators ---------------------------------------------------------------------------
def test_checked_thread_surfaces_an_assertion_error_on_join():
    class Case(tf.test.TestCase):
        def test_failing_thread(self):
            thread = self.checkedThread(lambda: self.assertEqual(1, 2))
            thread.start()
            thread.join()

        def test_passing_threads_share_the_cached_session(self):
            with self.cached_session() as sess:
                v = tf.Variable(0)
                inc = tf.assign_add(v, 1)
                sess.run(v.initializer)
                threads = [self.checkedThread(sess.run, args=(inc,)) for _ in range(4)]
                for t in threads:
                    t.start()
                for t in threads:
                    t.join()
                self.assertEqual(self.evaluate(v), 4)

        def test_unjoined_thread(self):
            self.checkedThread(lambda: None, kwargs={}).start()

    _fails_with(Case, "test_failing_thread", "Error in checkedThread: 1 != 2")
    _passes(Case, "test_passing_threads_share_the_cached_session")
    _fails_with(Case, "test_unjoined_thread", "A checked thread was not joined.")


def test_get_temp_dir_is_per_test_and_removed_at_teardown():
    dirs = []

    class Case(tf.test.TestCase):
        def test_a(self):
            dirs.append(self.get_temp_dir())
            self.assertEqual(self.get_temp_dir(), dirs[-1])
            with open(os.path.join(dirs[-1], "f.txt"), "w") as f:
                f.write("x")

        def test_b(self):
            dirs.append(self.get_temp_dir())

    _passes(Case)
    assert dirs[0] != dirs[1]
    assert not os.path.exists(dirs[0]) and not os.path.exists(dirs[1])
    assert os.path.dirname(dirs[0]) == tf.test.get_temp_dir()
    assert os.path.isdir(tf.test.get_temp_dir())


def test_a_test_named_test_session_is_skipped_not_run():
    class Case(tf.test.TestCase):
        pass

    result = _run(Case, "test_session")
    assert result.wasSuccessful() and len(result.skipped) == 1


def test_tf1_decorators_run_the_test_in_graph_mode():
    ran = []

    @test_util.run_all_in_graph_and_eager_modes
    class AllModes(tf.test.TestCase):
        def test_in_session(self):
            ran.append("all")
            self.assertIsNotNone(tf.get_default_session())

    @test_util.run_deprecated_v1
    class Deprecated(tf.test.TestCase):
        def test_a(self):
            ran.append("class")

    class Case(tf.test.TestCase):
        @test_util.run_deprecated_v1
        def test_v1(self):
            ran.append("v1")

        @test_util.run_v1_only("uses queues")
        def test_v1_only(self):
            ran.append("v1_only")

        @test_util.run_in_graph_and_eager_modes
        def test_both(self):
            ran.append("both")
            self.assertAllEqual(self.evaluate(tf.constant([1, 2]) + 1), [2, 3])

        @test_util.run_in_graph_and_eager_modes(use_gpu=False)
        def test_both_cpu(self):
            self.assertDeviceEqual(tf.constant(1).device, "/cpu:0")

        @test_util.deprecated_graph_mode_only
        def test_graph_only(self):
            ran.append("graph")

        @test_util.with_c_api
        def test_c_api(self):
            ran.append("c_api")

        @test_util.run_without_tensor_float_32("exact float32 products")
        def test_no_tf32(self):
            ran.append("no_tf32")

        @test_util.run_v2_only
        def test_v2(self):
            ran.append("v2")

    for case in (AllModes, Deprecated, Case):
        result = _run(case)
        assert result.wasSuccessful(), _messages(result)
    assert sorted(ran) == sorted(["all", "class", "v1", "v1_only", "both", "graph", "c_api", "no_tf32"])
    assert test_util.is_xla_enabled() is False
    assert len(_run(Case, "test_v2").skipped) == 1
    with pytest.raises(ValueError, match="'reason' should be string"):
        test_util.run_v1_only(lambda self: None)
    with pytest.raises(ValueError, match="only supports test methods"):
        test_util.run_in_graph_and_eager_modes(Case)


def test_gpu_only_decorators_skip_without_a_gpu(virtual_gpus_only):
    class Case(tf.test.TestCase):
        @test_util.run_gpu_only
        def test_gpu(self):
            pass

        @test_util.run_cuda_only
        def test_cuda(self):
            pass

    assert len(_run(Case, "test_gpu", "test_cuda").skipped) == 2
    tf.config.set_virtual_gpus(1)
    result = _run(Case, "test_gpu", "test_cuda")
    assert [t.id().rsplit(".", 1)[1] for t, _ in result.skipped] == ["test_cuda"]


# --- module functions -----------------------------------------------------------------------------------------
def test_gpu_queries_count_virtual_gpus_but_not_as_cuda(virtual_gpus_only):
    assert not tf.test.is_gpu_available() and tf.test.gpu_device_name() == ""
    tf.config.set_virtual_gpus(2)
    assert tf.test.is_gpu_available()
    assert tf.test.gpu_device_name() == "/device:GPU:0"
    assert not tf.test.is_gpu_available(cuda_only=True)
    assert not tf.test.is_gpu_available(min_cuda_compute_capability=(3, 0))


def test_is_built_with_cuda_follows_cupy(monkeypatch):
    monkeypatch.setitem(sys.modules, "cupy", None)
    assert tf.test.is_built_with_cuda() is False
    assert tf.test.is_built_with_rocm() is False
    assert tf.test.is_built_with_gpu_support() is False


def test_namespace_keeps_gradient_checks_and_has_mock():
    assert tf.test.mock is unittest.mock
    x = tf.placeholder(tf.float64, [3])
    with tf.Session():
        error = tf.test.compute_gradient_error(x, [3], tf.sin(x), [3], x_init_value=np.array([0.1, 0.2, 0.3]))
    assert error < 1e-6


def test_benchmark_reports_and_times_ops():
    class MatMulBenchmark(tf.test.Benchmark):
        def benchmarkMatMul(self):
            with tf.Session() as sess:
                product = tf.matmul(tf.ones([8, 8]), tf.ones([8, 8]))
                return self.run_op_benchmark(sess, product, burn_iters=1, min_iters=3, mbs=1)

    bench = MatMulBenchmark()
    values = bench.benchmarkMatMul()
    assert values["iters"] == 3 and values["wall_time"] > 0
    assert values["name"] == "MatMulBenchmark.benchmarkMatMul"
    assert values["throughput"] == pytest.approx(1 / values["wall_time"])
    bench.report_benchmark(iters=1, wall_time=0.5, extras={"k": 1}, name="custom")
    assert [r["name"] for r in bench.reported_benchmarks] == ["MatMulBenchmark.benchmarkMatMul", "custom"]
    assert bench.evaluate(tf.constant(2.0) * 2.0) == 4.0
    assert tf.test.Benchmark.is_abstract() and not MatMulBenchmark.is_abstract()


_SCRIPT = """
    import adplace as tf

    tf.flags.DEFINE_integer("size", 2, "vector size")


    class AddTest(tf.test.TestCase):
        def testAdd(self):
            with self.cached_session():
                n = tf.flags.FLAGS.size
                self.assertAllEqual((tf.ones([n]) + 1).eval(), [2.0] * n)

        def testMaybeFails(self):
            self.assertAllClose(tf.constant(1.0), {expected})


    if __name__ == "__main__":
        tf.test.main()
"""


@pytest.mark.parametrize("expected, code", [(1.0, 0), (2.0, 1)])
def test_main_runs_the_scripts_test_cases_and_exits_with_their_status(tmp_path, expected, code):
    script = tmp_path / "my_op_test.py"
    script.write_text(textwrap.dedent(_SCRIPT.format(expected=expected)))
    run = subprocess.run([sys.executable, str(script), "--size=3", "-v"], capture_output=True, text=True, timeout=120)
    assert run.returncode == code, run.stderr
    assert "testAdd (__main__.AddTest" in run.stderr and "testMaybeFails (__main__.AddTest" in run.stderr
    assert ("FAILED (failures=1" in run.stderr) == bool(code)
    assert "skipped 'Not a test.'" in run.stderr  # the inherited test_session method, skipped as in TF


def test_adplace_test_is_the_tf_test_module():
    import adplace.test as namespace
    assert namespace is tf.test and namespace.TestCase is test_util.TensorFlowTestCase


def test_assert_proto_equals_takes_a_message_or_its_text_and_shows_the_difference():
    class Case(tf.test.TestCase):
        def test_equal(self):
            a = tf.constant(1.0, name="a")
            self.assertProtoEquals('name: "a" op: "Const" attr { key: "dtype" value { type: DT_FLOAT } } attr { '
                                   'key: "value" value { tensor { dtype: DT_FLOAT tensor_shape {} float_val: 1 } } }',
                                   a.op.node_def)
            self.assertProtoEquals(a.op.node_def, a.op.node_def)
            graph_def = tf.get_default_graph().as_graph_def()
            del graph_def.node[:]
            self.assertProtoEqualsVersion("", graph_def)  # adplace's producer and min_consumer, nothing else

        def test_differs(self):
            self.assertProtoEquals('name: "a" op: "Placeholder"', tf.constant(1.0, name="a").op.node_def)

    _passes(Case, "test_equal")
    _fails_with(Case, "test_differs", 'op: "Const"', 'op: "Placeholder"')
