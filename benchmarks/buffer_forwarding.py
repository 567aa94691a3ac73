"""Buffer forwarding (issue #24, item 3: intermediates reuse the buffers whose last consumer has run): an unfused
200-op elementwise chain (multiply, add, subtract by constants and sin, in turn) on a fed float32 array of 2^16 to
2^22 elements, adplace with forwarding (the default) against adplace without it
(RewriterConfig(memory_optimization=NO_MEM_OPT)), NumPy's loop of the same calls (a new array per call) and NumPy's
loop writing in place (`out=`). CPU fusion is off (remapping=OFF) in both adplace sessions, so every op runs its
own NumPy call: what a plan without Numba (the `jit` extra) runs.

    python benchmarks/buffer_forwarding.py            # writes benchmarks/results/buffer_forwarding.json
    python benchmarks/buffer_forwarding.py --quick    # two sizes, fewer samples (JSON to the temp directory)

Every number is the median of interleaved samples (dispatch.compare), in microseconds per run of the chain; the
ratios are against adplace without forwarding, measured in the same samples.
"""
from __future__ import annotations

import sys

import numpy as np

import adplace as tf
from adplace.runtime.options import RewriterConfig

try:  # run as a script (benchmarks/ is sys.path[0]) or imported as benchmarks.buffer_forwarding
    from dispatch import compare, parse_args, print_table, run_fields, run_start, write_results
except ImportError:  # pragma: no cover - the package-style import
    from benchmarks.dispatch import compare, parse_args, print_table, run_fields, run_start, write_results

N_OPS = 200
CONSTANTS = (np.float32(1.0001), np.float32(0.5), np.float32(0.25))


def _config(forward: bool) -> tf.ConfigProto:
    config = tf.ConfigProto()
    rewrites = config.graph_options.rewrite_options
    rewrites.remapping = RewriterConfig.OFF
    if not forward:
        rewrites.memory_optimization = RewriterConfig.NO_MEM_OPT
    return config


def bench_size(n: int, samples: int) -> dict:
    """One size: adplace with and without forwarding, NumPy's loop and NumPy's in-place loop."""
    mul, add, sub = CONSTANTS
    graph = tf.Graph()
    with graph.as_default():
        x = tf.placeholder(tf.float32, [n])
        y = x * 1.0
        for i in range(N_OPS - 1):
            y = (lambda t: t * mul, lambda t: t + add, lambda t: t - sub, tf.sin)[i % 4](y)
    value = np.linspace(-1, 1, n, dtype=np.float32)
    sessions = {forward: tf.Session(graph=graph, config=_config(forward)) for forward in (True, False)}
    feeds = {x: value}

    def numpy_loop():
        t = value * np.float32(1.0)
        for i in range(N_OPS - 1):
            k = i % 4
            t = np.multiply(t, mul) if k == 0 else np.add(t, add) if k == 1 else np.subtract(t, sub) if k == 2 \
                else np.sin(t)
        return t

    def numpy_in_place():
        t = value * np.float32(1.0)
        for i in range(N_OPS - 1):
            k = i % 4
            if k == 0:
                np.multiply(t, mul, out=t)
            elif k == 1:
                np.add(t, add, out=t)
            elif k == 2:
                np.subtract(t, sub, out=t)
            else:
                np.sin(t, out=t)
        return t

    want = numpy_loop()
    for sess in sessions.values():
        for _ in range(3):  # compiled from the third run on
            got = sess.run(y, feeds)
        np.testing.assert_array_equal(got, want)  # the same NumPy calls: the same bits
    result = compare(lambda: sessions[True].run(y, feeds),
                     {"adplace_no_forwarding": lambda: sessions[False].run(y, feeds), "numpy_loop": numpy_loop,
                      "numpy_in_place": numpy_in_place}, samples, target_s=0.05, cap=200)
    for sess in sessions.values():
        sess.close()
    med = result["median_us"]
    result["forwarding_vs_none"] = med["adplace"] / med["adplace_no_forwarding"]
    result["forwarding_vs_numpy_loop"] = med["adplace"] / med["numpy_loop"]
    return result


def main(argv=None) -> int:
    args = parse_args(argv, "buffer_forwarding", __doc__.splitlines()[0], "two sizes, fewer samples")
    sizes = (1 << 16, 1 << 20) if args.quick else (1 << 16, 1 << 18, 1 << 20, 1 << 22)
    samples = 5 if args.quick else 11
    start = run_start()
    rows, results = [], {}
    for n in sizes:
        result = results[str(n)] = bench_size(n, samples)
        med = result["median_us"]
        rows.append([f"{n:,}", f"{n * 4 / 2 ** 20:g} MB", f"{med['adplace']:.0f}", f"{med['adplace_no_forwarding']:.0f}",
                     f"{med['numpy_loop']:.0f}", f"{med['numpy_in_place']:.0f}", f"{result['forwarding_vs_none']:.2f}x",
                     f"{result['forwarding_vs_numpy_loop']:.2f}x"])
    print(f"{N_OPS}-op unfused chain (mul, add, sub, sin), float32; us per run (median of {samples})")
    print_table(["elements", "array", "forwarding", "none", "numpy loop", "numpy out=", "fwd/none", "fwd/numpy"],
                rows)
    write_results({"benchmark": "buffer_forwarding", "n_ops": N_OPS, "samples": samples, "sizes": results,
                   **run_fields(start, args.quick)}, args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
