"""tf.test: TF1's testing namespace (TestCase, main, gradient checks, GPU queries, Benchmark, mock).

    class SquareTest(tf.test.TestCase):
        def testSquare(self):
            with self.cached_session():
                self.assertAllEqual(tf.square([2, 3]).eval(), [4, 9])

    if __name__ == "__main__":
        tf.test.main()       # runs SquareTest; exit status 0 when every test passes, 1 otherwise
"""
from __future__ import annotations

import inspect
import sys
import time
import unittest
from unittest import mock

import numpy as np

from adplace import flags, tf_logging
from adplace.framework.session_stack import get_default_session
from adplace.gradient_checker import compute_gradient, compute_gradient_error
from adplace.runtime import options as _options
from adplace.runtime.session import Session
from adplace.test_util import IsBuiltWithROCm, IsGoogleCudaEnabled, TensorFlowTestCase, gpu_device_name, \
    is_gpu_available, process_temp_dir

TestCase = TensorFlowTestCase

__all__ = ["Benchmark", "TestCase", "benchmark_config", "compute_gradient", "compute_gradient_error", "get_temp_dir",
           "gpu_device_name", "is_built_with_cuda", "is_built_with_gpu_support", "is_built_with_rocm",
           "is_gpu_available", "main", "mock"]


def main(argv=None):
    """Run the TestCases of `__main__` with unittest's runner and exit with its status (tf.test.main).

    Flags defined with tf.flags are parsed from `argv` (default sys.argv) first, as TF's googletest does; the rest
    (-v, -k PATTERN, test names) go to unittest.
    """
    remaining = flags.FLAGS(list(sys.argv if argv is None else argv), known_only=True)
    return unittest.main(module="__main__", argv=remaining)


def get_temp_dir() -> str:
    """A temporary directory for this test process ($TEST_TMPDIR if set), removed when the process exits."""
    return process_temp_dir()


def is_built_with_cuda() -> bool:
    """Whether adplace can run on CUDA GPUs here: CuPy is installed."""
    return IsGoogleCudaEnabled()


def is_built_with_rocm() -> bool:
    """Always False: adplace has no ROCm backend."""
    return IsBuiltWithROCm()


def is_built_with_gpu_support() -> bool:
    return is_built_with_cuda() or is_built_with_rocm()


def benchmark_config() -> _options.ConfigProto:
    """A ConfigProto for benchmarks: constant folding off, so the ops timed actually run."""
    config = _options.ConfigProto()
    config.graph_options.rewrite_options.constant_folding = _options.RewriterConfig.OFF
    return config


class Benchmark:
    """tf.test.Benchmark: time ops (run_op_benchmark) and report results (report_benchmark).

    Each report is logged at INFO and kept, in order, in `self.reported_benchmarks` (a list of dicts):

        class MatMulBenchmark(tf.test.Benchmark):
            def benchmarkMatMul(self):
                with tf.Session() as sess:
                    product = tf.matmul(tf.ones([64, 64]), tf.ones([64, 64]))
                    self.run_op_benchmark(sess, product, min_iters=20)   # name "MatMulBenchmark.benchmarkMatMul"
    """

    def __init__(self):
        self.reported_benchmarks: list[dict] = []
        self._cached_session: Session | None = None

    @classmethod
    def is_abstract(cls) -> bool:
        return cls is Benchmark

    def _benchmark_name(self) -> str:
        """ClassName.method of the nearest caller named benchmark*, else the class name."""
        for frame_info in inspect.stack()[2:]:
            if frame_info.frame.f_locals.get("self") is self and frame_info.function.startswith("benchmark"):
                return f"{type(self).__name__}.{frame_info.function}"
        return type(self).__name__

    def report_benchmark(self, iters=None, cpu_time=None, wall_time=None, throughput=None, extras=None, name=None,
                         metrics=None) -> dict:
        """Record one benchmark result (times in seconds, throughput in MB/s) and log it; returns the entry."""
        entry = {"name": name or self._benchmark_name(), "iters": iters, "cpu_time": cpu_time, "wall_time": wall_time,
                 "throughput": throughput, "extras": dict(extras or {}), "metrics": list(metrics or [])}
        self.reported_benchmarks.append(entry)
        tf_logging.info("Benchmark [%s] iters: %s, wall_time: %s, cpu_time: %s, throughput: %s, extras: %s",
                        entry["name"], iters, wall_time, cpu_time, throughput, entry["extras"])
        return entry

    def run_op_benchmark(self, sess, op_or_tensor, feed_dict=None, burn_iters=2, min_iters=10, store_trace=False,
                         store_memory_usage=True, name=None, extras=None, mbs=0) -> dict:
        """Run `op_or_tensor` burn_iters times untimed, then min_iters times timed; report the median wall time.

        Returns the values reported: iters, wall_time (seconds, median), throughput (mbs / wall_time when `mbs`
        is given), extras and name. `store_trace` and `store_memory_usage` are accepted for TF's signature.
        """
        for _ in range(burn_iters):
            sess.run(op_or_tensor, feed_dict=feed_dict)
        deltas = []
        for _ in range(min_iters):
            start = time.perf_counter()
            sess.run(op_or_tensor, feed_dict=feed_dict)
            deltas.append(time.perf_counter() - start)
        wall_time = float(np.median(deltas))
        values = {"iters": min_iters, "wall_time": wall_time, "extras": extras or {},
                  "name": name or self._benchmark_name()}
        if mbs:
            values["throughput"] = mbs / wall_time
        self.report_benchmark(**values)
        return values

    def evaluate(self, tensors):
        """The values of `tensors` in the default session, else in a session this benchmark keeps."""
        sess = get_default_session()
        if sess is None:
            if self._cached_session is None:
                self._cached_session = Session(config=benchmark_config())
            sess = self._cached_session
        return sess.run(tensors)
