"""Loop pipelining benchmark: a `tf.map_fn` whose iterations are independent, run with `parallel_iterations` on the
inter-op threads (adplace/runtime/loop_pipeline.py) against the same loop run iteration after iteration, next to the
same work in hand-written NumPy.

    python benchmarks/loop_pipeline.py            # full run (under a minute on 2 cores); writes results/loop_pipeline.json
    python benchmarks/loop_pipeline.py --quick    # smoke run: smaller matrices, fewer samples (JSON to $TMPDIR)

The loop: `tf.map_fn(lambda m: reduce_sum(matmul(tanh(m), W)), X)` over X of shape [16, S, S] float32 (S = 640; 160
with --quick), W [S, S], parallel_iterations=10. Variants, every one with one BLAS thread (intra-op 1 and
threadpoolctl on the NumPy side):
  in turn        session ConfigProto(inter_op_parallelism_threads=1): no pool, iterations one after another. THE
                 baseline.
  pipelined      inter_op_parallelism_threads=2: the loop times its first iterations in turn, then runs the rest up
                 to 10 at once on the pool and the caller's thread (when its iterations are long enough: the JSON
                 records whether it did).
  numpy in turn  the same sums in a Python loop.
Reported: medians of several samples of one call, alternating (dispatch.compare); speed-up = in turn / pipelined;
the ideal is min(2, CPUs this process may use). Nothing here asserts a time.
"""
from __future__ import annotations

import contextlib
import datetime
import sys
import time

import numpy as np

import adplace as tf
from adplace.runtime.thread_pool import available_cpus

try:  # run as a script (benchmarks/ is sys.path[0]) or imported as benchmarks.loop_pipeline
    from dispatch import (_blas_limit, _fmt_time, _sources_digest, compare, machine_info, parse_args, print_table,
                          source_info, write_results)
except ImportError:  # pragma: no cover - the package-style import
    from benchmarks.dispatch import (_blas_limit, _fmt_time, _sources_digest, compare, machine_info, parse_args,
                                     print_table, source_info, write_results)

ELEMENTS, WIDTH = 16, 10


def _session(graph, inter: int):
    return tf.Session(graph=graph, config=tf.ConfigProto(inter_op_parallelism_threads=inter,
                                                         intra_op_parallelism_threads=1))


def main(argv=None) -> int:
    args = parse_args(argv, "loop_pipeline", __doc__.splitlines()[0], "smaller matrices and fewer samples")
    size, samples = (160, 5) if args.quick else (640, 9)
    sources_at_start = _sources_digest(tf.__path__[0])
    started = time.perf_counter()
    rng = np.random.default_rng(0)
    xs = rng.standard_normal((ELEMENTS, size, size)).astype(np.float32)
    w = (rng.standard_normal((size, size)) / np.sqrt(size)).astype(np.float32)
    graph = tf.Graph()
    with graph.as_default():
        out = tf.map_fn(lambda m: tf.reduce_sum(tf.matmul(tf.tanh(m), tf.constant(w))), tf.constant(xs),
                        parallel_iterations=WIDTH)
    sessions = {"in_turn": _session(graph, 1), "pipelined": _session(graph, 2)}
    limit = _blas_limit(1)
    blas = limit if limit is not None else contextlib.nullcontext

    def numpy_loop():
        with blas():
            return np.array([np.sum(np.tanh(m) @ w) for m in xs], np.float32)
    want = numpy_loop()
    for name, sess in sessions.items():
        for _ in range(3):  # the first runs compile, and time the loop's first iterations in turn
            got = sess.run(out)
        np.testing.assert_allclose(got, want, rtol=1e-3, err_msg=name)
    loop = next(k for k, op in zip(sessions["pipelined"].plan_for(out).kernels,
                                   sessions["pipelined"].plan_for(out).ops) if op.type == "LoopCond")
    pipelined = bool(loop.pipeline is not None and loop.pipeline.worth_it)
    timed = compare(lambda: sessions["in_turn"].run(out),
                    {"pipelined": lambda: sessions["pipelined"].run(out), "numpy_in_turn": numpy_loop},
                    samples, calls=1)
    medians = {"in_turn": timed["median_us"]["adplace"], "pipelined": timed["median_us"]["pipelined"],
               "numpy_in_turn": timed["median_us"]["numpy_in_turn"]}
    speedup = medians["in_turn"] / medians["pipelined"]
    ideal = min(2, available_cpus())
    header = ["variant", "median", "vs in turn", "vs numpy"]
    rows = [[name, _fmt_time(us), f"{medians['in_turn'] / us:.2f}x", f"{us / medians['numpy_in_turn']:.2f}x"]
            for name, us in medians.items()]
    print_table(header, rows)
    print(f"\nmap_fn over {ELEMENTS} [{size}, {size}] matrices, parallel_iterations={WIDTH}; pipelined: {pipelined}; "
          f"speed-up {speedup:.2f}x (ideal {ideal}x on {available_cpus()} CPUs); medians of {samples}; "
          f"BLAS limited: {limit is not None}")
    results = {"benchmark": "loop_pipeline", "date": datetime.datetime.now().astimezone().isoformat(),
               "machine": {**machine_info(), "available_cpus": available_cpus(), "threadpoolctl": limit is not None},
               "adplace_source": {**source_info(), "sources_sha1_at_start": sources_at_start},
               "quick": args.quick, "samples": samples, "size": size, "elements": ELEMENTS,
               "parallel_iterations": WIDTH, "pipelined": pipelined, "median_us": medians, "speedup": speedup,
               "ideal": ideal, "elapsed_s": time.perf_counter() - started,
               "table": [dict(zip(header, row)) for row in rows]}
    write_results(results, args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
