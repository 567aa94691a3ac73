"""Dense optimizer updates committed in place after the step (runtime/deferred_updates.py) against the same updates
computed into recycled arrays during the step (deferred_updates.ENABLED = False while the plan compiles), in one
process, samples interleaved:

- `mlp_adam_1thread`, `mlp_adam`: mlp_step.py's 784-512-512-10 Adam step, one thread and default threads;
- `adam_1m`: one `AdamOptimizer.apply_gradients` on a float32 variable of 2^20 elements, the gradient fed.

    python benchmarks/deferred_updates.py            # writes benchmarks/results/deferred_updates.json
    python benchmarks/deferred_updates.py --quick    # fewer samples (JSON to the temp directory)

Before timing, both forms run the same steps from the same start and must agree (the variables bit for bit; the
MLP's losses to float tolerance: CPU fusion may swap its loops in at different steps in the two sessions). Every
number is the median of interleaved samples (dispatch.compare), in microseconds per step; the ratio is deferred
over immediate, in the same samples.
"""
from __future__ import annotations

import sys

import numpy as np

import adplace as tf
from adplace.runtime import deferred_updates, fusion

try:  # run as a script (benchmarks/ is sys.path[0]) or imported as benchmarks.deferred_updates
    import mlp_step
    from dispatch import compare, parse_args, print_table, run_fields, run_start, write_results
except ImportError:  # pragma: no cover - the package-style import
    from benchmarks import mlp_step
    from benchmarks.dispatch import compare, parse_args, print_table, run_fields, run_start, write_results

CHECK_STEPS = 5


def _compiled(step, deferred: bool):
    """`step` after its first run compiled its plan with deferral on or off."""
    deferred_updates.ENABLED = deferred
    try:
        step()
    finally:
        deferred_updates.ENABLED = True
    return step


def _mlp(threads: str) -> tuple:
    data = mlp_step.make_data()
    steps = {}
    for deferred in (True, False):
        sess, step = mlp_step.build_graph_step(tf, data, threads)
        steps[deferred] = (sess, _compiled(step, deferred))
    losses = {d: [float(step()) for _ in range(CHECK_STEPS)] for d, (_, step) in steps.items()}
    np.testing.assert_allclose(losses[True], losses[False], rtol=1e-5)
    return steps[True][1], steps[False][1], [sess for sess, _ in steps.values()]


def _adam(n: int) -> tuple:
    rng = np.random.default_rng(0)
    start = rng.uniform(-1, 1, n).astype(np.float32)
    grads = [rng.standard_normal(n, dtype=np.float32) * np.float32(0.1) for _ in range(2)]
    steps, sessions, variables = {}, [], {}
    for deferred in (True, False):
        graph = tf.Graph()
        with graph.as_default():
            var = tf.Variable(start, name="var")
            g = tf.placeholder(tf.float32, [n], name="g")
            update = tf.train.AdamOptimizer(1e-3).apply_gradients([(g, var)])
            init = tf.global_variables_initializer()
        sess = tf.Session(graph=graph)
        sess.run(init)
        turn = [0]

        def step(sess=sess, update=update, g=g, turn=turn):
            turn[0] ^= 1
            sess.run(update, {g: grads[turn[0]]})
        steps[deferred] = _compiled(step, deferred)
        for _ in range(CHECK_STEPS):
            step()
        variables[deferred] = sess.run(var)
        sessions.append(sess)
    np.testing.assert_array_equal(variables[True], variables[False])
    return steps[True], steps[False], sessions


def main(argv=None) -> int:
    args = parse_args(argv, "deferred_updates", __doc__.splitlines()[0], "fewer samples")
    samples = 5 if args.quick else 15
    start = run_start()
    rows, results = [], {}
    for name, make in (("mlp_adam_1thread", lambda: _mlp("1")), ("mlp_adam", lambda: _mlp("default")),
                       ("adam_1m", lambda: _adam(1 << 20))):
        deferred, immediate, sessions = make()
        fusion.wait_cpu_fusion(120)  # background compiles (CPU fusion, the biases' small update loops) are done
        result = results[name] = compare(deferred, {"immediate": immediate}, samples, target_s=0.05, cap=50)
        for sess in sessions:
            sess.close()
        med = result["median_us"]
        result["deferred_vs_immediate"] = med["adplace"] / med["immediate"]
        rows.append([name, f"{med['adplace']:.0f}", f"{med['immediate']:.0f}", f"{result['deferred_vs_immediate']:.3f}x"])
    print(f"us per step (median of {samples} interleaved samples)")
    print_table(["row", "deferred, in place", "in the step", "ratio"], rows)
    write_results({"benchmark": "deferred_updates", "samples": samples, "rows": results,
                   **run_fields(start, args.quick)}, args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
