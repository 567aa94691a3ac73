"""TF1's test_util: `TensorFlowTestCase` (tf.test.TestCase), the graph-mode test decorators and GPU helpers.

Tests written for TF 1.x graph mode run unchanged on adplace: each test starts on a fresh default graph with TF's
default graph seed, `self.session()` / `self.cached_session()` pin ops to the CPU unless asked for a GPU, and the
array assertions (`assertAllClose`, `assertAllEqual`, ...) evaluate Tensors in the default session.

    class SquareTest(tf.test.TestCase):
        @test_util.run_deprecated_v1               # adplace is always graph mode: runs the test as is
        def testSquare(self):
            with self.cached_session():
                self.assertAllEqual(tf.square([2, 3]).eval(), [4, 9])   # passes

A virtual GPU counts as a GPU here (is_gpu_available(), force_gpu=True), since it stands in for one in placement;
`is_gpu_available(cuda_only=True)` and a minimum compute capability ask for a real CUDA GPU.
"""
from __future__ import annotations

import contextlib
import functools
import inspect
import os
import random
import re
import shutil
import sys
import tempfile
import threading
import unittest

import numpy as np

from adplace import devices, tf_logging
from adplace.framework import errors
from adplace.framework.device_spec import canonical_name
from adplace.framework.dtypes import DType
from adplace.framework.graph import _graph_stack, get_default_graph, reset_default_graph
from adplace.framework.operation import Tensor
from adplace.framework.random_seed import DEFAULT_GRAPH_SEED, set_random_seed
from adplace.framework.session_stack import get_default_session
from adplace.ops.variables import Variable
from adplace.runtime import options as _options
from adplace.runtime.session import Session
from adplace.test_assertions import ArrayAssertions

_COMPUTE_CAPABILITY = re.compile(r"compute capability: (\d+)\.(\d+)")


# --- devices --------------------------------------------------------------------------------------------------
def _gpus(cuda_only: bool = False) -> list:
    return [d for d in devices.local_devices() if d.device_type == "GPU" and not (cuda_only and d.is_virtual)]


def is_gpu_available(cuda_only: bool = False, min_cuda_compute_capability: tuple | None = None) -> bool:
    """Whether a session here gets a GPU (tf.test.is_gpu_available).

    Virtual GPUs count (they stand in for real ones in placement), except with `cuda_only=True` or a
    `min_cuda_compute_capability` (major, minor), which only a real CUDA GPU can meet.
    """
    for gpu in _gpus(cuda_only or min_cuda_compute_capability is not None):
        if min_cuda_compute_capability is None:
            return True
        match = _COMPUTE_CAPABILITY.search(gpu.description)
        if match and (int(match.group(1)), int(match.group(2))) >= tuple(min_cuda_compute_capability):
            return True
    return False


def gpu_device_name() -> str:
    """The name of the first GPU ("/device:GPU:0"), or "" without one (tf.test.gpu_device_name)."""
    gpus = _gpus()
    return gpus[0].short_name if gpus else ""


def IsGoogleCudaEnabled() -> bool:  # noqa: N802 - TF's name
    """Whether adplace can run CUDA kernels: CuPy is installed (tf.test.is_built_with_cuda)."""
    import importlib.util
    try:
        return importlib.util.find_spec("cupy") is not None
    except (ImportError, ValueError):  # a blocked (sys.modules["cupy"] = None) or broken CuPy
        return False


def IsBuiltWithROCm() -> bool:  # noqa: N802 - TF's name
    return False


def IsMklEnabled() -> bool:  # noqa: N802 - TF's name
    return False


@contextlib.contextmanager
def device(use_gpu: bool):
    """Build ops on /device:GPU:0 when `use_gpu` and a GPU is available, else on /device:CPU:0."""
    with get_default_graph().device("/device:GPU:0" if use_gpu and is_gpu_available() else "/device:CPU:0"):
        yield


@contextlib.contextmanager
def use_gpu():
    with device(use_gpu=True):
        yield


@contextlib.contextmanager
def force_gpu():
    with get_default_graph().device("/device:GPU:0"):
        yield


@contextlib.contextmanager
def force_cpu():
    with get_default_graph().device("/device:CPU:0"):
        yield


def assert_ops_in_graph(expected_ops: dict, graph) -> dict:
    """Check that `graph` has each op name of `expected_ops` with the given type; returns {name: Operation}.

    Raises ValueError naming the first op whose type differs, or the names missing.
    """
    found = {}
    for op in graph.get_operations():
        if op.name in expected_ops:
            if expected_ops[op.name] != op.type:
                raise ValueError(f"Expected op for node {op.name} is different. {expected_ops[op.name]} vs {op.type}")
            found[op.name] = op
    if set(expected_ops) != set(found):
        raise ValueError(f"Not all expected ops are present. Expected {expected_ops.keys()}, found {found.keys()}")
    return found


# --- decorators: adplace is always TF1 graph mode -------------------------------------------------------------
def _test_methods(cls) -> list[str]:
    return [name for name in dir(cls) if name.startswith(unittest.TestLoader.testMethodPrefix)
            and name != "test_session" and callable(getattr(cls, name, None))]


def deprecated_graph_mode_only(func=None):
    """Run the test (or every test of a class) in graph mode: as written, since adplace has no eager mode."""
    def decorator(f):
        return f
    return decorator if func is None else decorator(func)


run_deprecated_v1 = deprecated_graph_mode_only


def run_all_in_deprecated_graph_mode_only(cls):
    """deprecated_graph_mode_only for every test of `cls`: the class as is."""
    return cls


def run_v1_only(reason: str, func=None):
    """Run the test only under TF1 behaviour, which adplace always has; `reason` must be a str, as in TF."""
    if not isinstance(reason, str):
        raise ValueError(f"'reason' should be string, got {type(reason)}")
    return deprecated_graph_mode_only(func)


def _skipping(message: str, should_skip, func, what: str):
    def decorator(f):
        if inspect.isclass(f):
            raise ValueError(f"`{what}` only supports test methods.")

        @functools.wraps(f)
        def decorated(self, *args, **kwargs):
            if should_skip():
                self.skipTest(message)
            return f(self, *args, **kwargs)
        return decorated
    return decorator if func is None else decorator(func)


def run_v2_only(func=None):
    """Skip the test: adplace runs TF1 graph mode only."""
    return _skipping("Test is only compatible with v2", lambda: True, func, "run_v2_only")


def run_gpu_only(func=None):
    """Skip the test unless a GPU (real or virtual) is available."""
    return _skipping("Test requires GPU", lambda: not is_gpu_available(), func, "run_gpu_only")


def run_cuda_only(func=None):
    """Skip the test unless a real CUDA GPU is available."""
    return _skipping("Test requires CUDA GPU", lambda: not is_gpu_available(cuda_only=True), func, "run_cuda_only")


def run_in_graph_and_eager_modes(func=None, config=None, use_gpu: bool = True, reset_test: bool = True,
                                 assert_no_eager_garbage: bool = False):
    """Run the test in a `self.test_session(use_gpu=use_gpu, config=config)` block; the eager run TF adds is
    left out, since adplace has no eager mode."""
    def decorator(f):
        if inspect.isclass(f):
            raise ValueError("`run_in_graph_and_eager_modes` only supports test methods. Did you mean to use "
                             "`run_all_in_graph_and_eager_modes`?")

        @functools.wraps(f)
        def decorated(self, *args, **kwargs):
            with self.test_session(use_gpu=use_gpu, config=config):
                return f(self, *args, **kwargs)
        return decorated
    return decorator if func is None else decorator(func)


def run_all_in_graph_and_eager_modes(cls):
    """run_in_graph_and_eager_modes on every test method of `cls` (but testSkipEager* ones)."""
    for name in _test_methods(cls):
        if not name.startswith(("testSkipEager", "test_skip_eager")):
            setattr(cls, name, run_in_graph_and_eager_modes(getattr(cls, name)))
    return cls


def also_run_as_tf_function(f):
    """Run the test once: adplace has neither eager mode nor tf.function."""
    return f


def build_as_function_and_v1_graph(func=None):
    """Run the test in a fresh v1 graph (the tf.function variant needs eager mode, which adplace lacks)."""
    def decorator(f):
        if inspect.isclass(f):
            raise ValueError("`run_in_graph_mode_and_function` only supports test methods.")

        @functools.wraps(f)
        def decorated(self, *args, **kwargs):
            from adplace.framework.graph import Graph
            with Graph().as_default():
                return f(self, *args, **kwargs)
        return decorated
    return decorator if func is None else decorator(func)


def skip_if(condition):
    """Skip (return without running) the test when `condition` (a value or a callable) is true."""
    def decorator(f):
        @functools.wraps(f)
        def wrapper(*args, **kwargs):
            if not (condition() if callable(condition) else condition):
                return f(*args, **kwargs)
        return wrapper
    return decorator


def for_all_test_methods(decorator, *args, **kwargs):
    """A class decorator applying `decorator(*args, **kwargs)` to every test method."""
    def apply(cls):
        for name in _test_methods(cls):
            setattr(cls, name, decorator(*args, **kwargs)(getattr(cls, name)))
        return cls
    return apply


def _identity_decorator(fn):
    return fn


enable_c_shapes = with_c_shapes = with_c_api = _identity_decorator
enable_control_flow_v2 = with_control_flow_v2 = _identity_decorator
enable_output_all_intermediates = use_deterministic_cudnn = _identity_decorator


def disable_control_flow_v2(unused_msg):
    return _identity_decorator


def _description_decorator(description):
    """XLA switches (disable_xla, no_xla_auto_jit, ...): no-ops, since adplace never compiles with XLA."""
    return _identity_decorator


disable_xla = no_xla_auto_jit = xla_allow_fallback = enable_tf_xla_constant_folding = _description_decorator
run_without_tensor_float_32 = _description_decorator  # adplace's float32 matmuls never use TF32


def is_xla_enabled() -> bool:
    """False: adplace never compiles with XLA."""
    return False


# --- the test case --------------------------------------------------------------------------------------------
_process_temp_dir: str | None = None


def process_temp_dir() -> str:
    """The directory tests write under (tf.test.get_temp_dir): $TEST_TMPDIR, else one per process, removed at
    exit."""
    global _process_temp_dir
    if _process_temp_dir is None:
        base = os.environ.get("TEST_TMPDIR")
        if base:
            os.makedirs(base, exist_ok=True)
            _process_temp_dir = base
        else:
            script = os.path.splitext(os.path.basename(sys.argv[0] or "adplace"))[0]
            _process_temp_dir = tempfile.mkdtemp(prefix=f"{script}_")
            import atexit
            atexit.register(shutil.rmtree, _process_temp_dir, True)
    return _process_temp_dir


def _test_config(config: _options.ConfigProto | None, force_gpu: bool) -> _options.ConfigProto:
    """The session config of a test: soft placement unless `force_gpu`, and no constant folding (so an op under
    test really runs). `config` itself is left unchanged."""
    prepared = _options.ConfigProto(allow_soft_placement=not force_gpu)
    if config is not None:
        prepared.CopyFrom(config)
        if force_gpu:
            prepared.allow_soft_placement = False
    prepared.graph_options.rewrite_options.constant_folding = _options.RewriterConfig.OFF
    return prepared


class ErrorLoggingSession(Session):
    """A Session that logs what its run() raises (but OutOfRangeError, the normal end of an input)."""

    def run(self, *args, **kwargs):
        try:
            return super().run(*args, **kwargs)
        except Exception as e:
            if not isinstance(e, errors.OutOfRangeError):
                tf_logging.error(str(e))
            raise


class _CheckedThread:
    """A thread whose exceptions fail the test on join(); made by TensorFlowTestCase.checkedThread."""

    def __init__(self, testcase: unittest.TestCase, target, args=None, kwargs=None):
        self._testcase = testcase
        self._target, self._args, self._kwargs = target, tuple(args or ()), dict(kwargs or {})
        self._thread = threading.Thread(target=self._protected_run)
        self._exception: BaseException | None = None
        self._is_thread_joined = False

    def _protected_run(self) -> None:
        try:
            self._target(*self._args, **self._kwargs)
        except Exception as e:
            self._exception = e

    def start(self) -> None:
        self._thread.start()

    def join(self) -> None:
        """Wait for the thread; fail the test if its target raised (assertion failures included)."""
        self._is_thread_joined = True
        self._thread.join()
        if self._exception is not None:
            self._testcase.fail(f"Error in checkedThread: {self._exception}")

    def is_alive(self) -> bool:
        return self._thread.is_alive()

    def check_termination(self) -> None:
        """At tearDown: fail if the thread was never joined; RuntimeError if it still runs."""
        if not self._is_thread_joined:
            self._testcase.fail("A checked thread was not joined.")
        if self.is_alive():
            raise RuntimeError("Thread was not joined with main thread, and is still running when the test "
                               "finished.")


class _CapturedWrites:
    """What was written to a stream inside captureWritesToStream; read it with contents()."""

    def __init__(self, capture_location: str):
        self.capture_location = capture_location

    def contents(self) -> str:
        with open(self.capture_location) as f:
            return f.read()


class TensorFlowTestCase(ArrayAssertions, unittest.TestCase):
    """tf.test.TestCase: a unittest.TestCase with sessions, evaluate() and array assertions for TF1 graphs."""

    def __init__(self, methodName: str = "runTest"):  # noqa: N803 - unittest's name
        super().__init__(methodName)
        self._threads: list[_CheckedThread] = []
        self._tempdir: str | None = None
        self._cached_session: Session | None = None
        self._cached_args: tuple = ()

    def setUp(self):
        """A fresh default graph with TF's default graph seed; Python and NumPy seeded the same way."""
        self._ClearCachedSession()
        random.seed(DEFAULT_GRAPH_SEED)
        np.random.seed(DEFAULT_GRAPH_SEED)
        _graph_stack().clear()  # a test that failed inside `with g.as_default():` may have left g behind
        reset_default_graph()
        set_random_seed(DEFAULT_GRAPH_SEED)
        if self.id().endswith(".test_session"):
            self.skipTest("Not a test.")

    def tearDown(self):
        for thread in self._threads:
            thread.check_termination()
        self._ClearCachedSession()
        if self._tempdir is not None:
            shutil.rmtree(self._tempdir, ignore_errors=True)
            self._tempdir = None

    def _ClearCachedSession(self) -> None:  # noqa: N802 - TF's name
        if self._cached_session is not None:
            self._cached_session.close()
            self._cached_session = None

    def get_temp_dir(self) -> str:
        """A directory of this test's own (the same one for every call in the test), removed at tearDown."""
        if not self._tempdir:
            self._tempdir = tempfile.mkdtemp(dir=process_temp_dir())
        return self._tempdir

    @contextlib.contextmanager
    def captureWritesToStream(self, stream):  # noqa: N802 - TF's name
        """Capture what is written to `stream`'s file descriptor (sys.stdout, sys.stderr) inside the block."""
        stream.flush()
        fd = stream.fileno()
        path = os.path.join(self.get_temp_dir(), f"captured_{fd}_{len(os.listdir(self.get_temp_dir()))}")
        original_fd = os.dup(fd)
        with open(path, "w") as capture:
            os.dup2(capture.fileno(), fd)
            try:
                yield _CapturedWrites(path)
            finally:
                stream.flush()
                os.dup2(original_fd, fd)
                os.close(original_fd)

    # --- sessions ---------------------------------------------------------------------------------------------
    def evaluate(self, tensors):
        """The values of `tensors` (a Tensor, Variable, op, or nested list/tuple/dict of them) in the default
        session, else in this test's cached session."""
        sess = get_default_session()
        if sess is None:
            with self.test_session() as sess:
                return sess.run(tensors)
        return sess.run(tensors)

    @contextlib.contextmanager
    def _constrain_devices_and_set_default(self, sess: Session, use_gpu: bool, force_gpu: bool):
        """Make `sess` and its graph the defaults; pin new ops to the GPU (force_gpu) or the CPU (not use_gpu)."""
        with sess.graph.as_default(), sess.as_default():
            if force_gpu:
                with sess.graph.device(gpu_device_name() or "/device:GPU:0"):
                    yield sess
            elif use_gpu:
                yield sess
            else:
                with sess.graph.device("/device:CPU:0"):
                    yield sess

    def _create_session(self, graph, config, force_gpu: bool) -> Session:
        return ErrorLoggingSession(graph=graph, config=_test_config(config, force_gpu))

    def _get_cached_session(self, graph=None, config=None, force_gpu: bool = False,
                            crash_if_inconsistent_args: bool = True) -> Session:
        if self._cached_session is None:
            self._cached_session = self._create_session(graph, config, force_gpu)
            self._cached_args = (graph, config, force_gpu)
            return self._cached_session
        if crash_if_inconsistent_args:
            for what, cached, given in zip(("graph", "config", "force_gpu value"), self._cached_args,
                                           (graph, config, force_gpu)):
                if cached is not given:
                    raise ValueError(f"The {what} used to get the cached session is different than the one that was "
                                     "used to create the session. Maybe create a new session with self.session()")
        return self._cached_session

    @contextlib.contextmanager
    def session(self, graph=None, config=None, use_gpu: bool = False, force_gpu: bool = False):
        """A new Session on `graph` (default: the default graph), closed at the end of the block.

        It is the default session and its graph the default graph inside the block. Ops built in the block go to
        /device:CPU:0 unless `use_gpu` (the placer chooses) or `force_gpu` (pinned to /device:GPU:0 with soft
        placement off, so a missing GPU is an error when the ops run).
        """
        with self._create_session(graph, config, force_gpu) as sess:
            with self._constrain_devices_and_set_default(sess, use_gpu, force_gpu):
                yield sess

    @contextlib.contextmanager
    def cached_session(self, graph=None, config=None, use_gpu: bool = False, force_gpu: bool = False):
        """Like session(), but one Session per test, reused by every call and closed at tearDown. ValueError if a
        later call passes another graph, config or force_gpu."""
        sess = self._get_cached_session(graph, config, force_gpu, crash_if_inconsistent_args=True)
        with self._constrain_devices_and_set_default(sess, use_gpu, force_gpu) as cached:
            yield cached

    @contextlib.contextmanager
    def test_session(self, graph=None, config=None, use_gpu: bool = False, force_gpu: bool = False):
        """TF's older name: cached_session() without the argument check, or session() when given a graph."""
        if self.id().endswith(".test_session"):
            self.skipTest("Tests that have the name \"test_session\" are automatically skipped by TensorFlow test "
                          "fixture, as the name is reserved for creating sessions within tests. Please rename your "
                          "test if you have a test with this name.")
        if graph is None:
            sess = self._get_cached_session(graph, config, force_gpu, crash_if_inconsistent_args=False)
            with self._constrain_devices_and_set_default(sess, use_gpu, force_gpu) as cached:
                yield cached
        else:
            with self.session(graph, config, use_gpu, force_gpu) as sess:
                yield sess

    def checkedThread(self, target, args=None, kwargs=None) -> _CheckedThread:  # noqa: N802 - TF's name
        """A thread running `target(*args, **kwargs)` whose exceptions fail the test on join(); tearDown fails the
        test if it was never joined."""
        thread = _CheckedThread(self, target, args, kwargs)
        self._threads.append(thread)
        return thread

    # --- TF-specific checks on graph objects ------------------------------------------------------------------
    def _is_tensor_like(self, value) -> bool:
        return isinstance(value, (Tensor, Variable))

    def assertShapeEqual(self, np_array, tf_tensor, msg=None):  # noqa: N802 - TF's name
        """Assert that a NumPy array and a Tensor's static shape agree."""
        if not isinstance(np_array, (np.ndarray, np.generic)):
            raise TypeError("np_array must be a Numpy ndarray or Numpy scalar")
        if not isinstance(tf_tensor, Tensor):
            raise TypeError("tf_tensor must be a Tensor")
        self.assertAllEqual(np_array.shape, tf_tensor.get_shape().as_list(), msg=msg)

    def assertDeviceEqual(self, device1, device2, msg=None):  # noqa: N802 - TF's name
        """Assert that two device names or DeviceSpecs are the same device ("/gpu:0" == "/device:GPU:0")."""
        device1, device2 = canonical_name(device1), canonical_name(device2)
        self.assertEqual(device1, device2, f"Devices {device1} and {device2} are not equal. {msg}")

    def assertDTypeEqual(self, target, expected_dtype):  # noqa: N802 - TF's name
        """Assert that `target`'s values (array, list or Tensor) have `expected_dtype` (NumPy type or tf.DType)."""
        if isinstance(expected_dtype, DType):
            expected_dtype = expected_dtype.as_numpy_dtype
        self.assertEqual(self._GetNdArray(target).dtype, expected_dtype)

    @contextlib.contextmanager
    def assertRaisesWithPredicateMatch(self, exception_type, expected_err_re_or_predicate):  # noqa: N802
        """Expect the block to raise `exception_type` whose message matches the regex (searched, with the op's
        name for an OpError) or for which the predicate returns true; AssertionError otherwise."""
        if callable(expected_err_re_or_predicate):
            predicate = expected_err_re_or_predicate
        else:
            def predicate(e):
                text = e.message if isinstance(e, errors.OpError) else str(e)
                op = e.op if isinstance(e, errors.OpError) else None
                while op is not None:
                    text += "\nCaused by: " + op.name
                    op = getattr(op, "_original_op", None)
                return re.search(expected_err_re_or_predicate, text)
        try:
            yield
        except Exception as e:
            if not isinstance(e, exception_type) or not predicate(e):
                raise AssertionError(f"Exception of type {type(e)}: {e}") from e
            return
        names = exception_type if isinstance(exception_type, tuple) else (exception_type,)
        self.fail(" or ".join(t.__name__ for t in names) + " not raised")

    def assertRaisesOpError(self, expected_err_re_or_predicate):  # noqa: N802 - TF's name
        """Expect the block to raise a tf.errors.OpError whose message matches (see assertRaisesWithPredicateMatch)."""
        return self.assertRaisesWithPredicateMatch(errors.OpError, expected_err_re_or_predicate)
