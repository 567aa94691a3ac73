"""CPU fusion of elementwise chains (issue #24, item 5): a 1,000-op chain run by adplace fused (compiled Numba
loops of up to MAX_CPU_MEMBERS ops each), adplace unfused (RewriterConfig remapping=OFF) and NumPy's loop of the
same 1,000 calls; compile time apart.

Chains:
  chain1000_f32x4       sin, cos, square in turn on a fed float32[4] (the dispatch benchmark's chain1000)
  arith1000_f32x65536   mul, add, sub, maximum, tanh in turn (scalar constants) on a fed float32[65536]; the tanh
                        ops stay NumPy's (SIMD) on arrays this long: the fused groups are the arithmetic between them
  arith1000_no_tanh_f32x65536   mul, add, sub, maximum in turn on a fed float32[65536]

Compile time: "cold" compiles the fused loops with an empty cache directory (Numba imported before);
"disk" loads them again from the on-disk cache (a new dispatcher in this process: Numba's cache, not adplace's
in-process one). Run times are medians of `samples` interleaved samples, in microseconds; the target is fused at
most 0.3x the NumPy loop. Needs Numba (the `jit` extra).

    python benchmarks/fusion_chain.py [--samples N] [--json PATH]
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time

import numpy as np

N_OPS = 1000
TARGET = 0.3


def _chains() -> dict:
    """name -> (shape, [(adplace op, NumPy ufunc, its constant second argument or None)] cycled over N_OPS ops,
    feed value)."""
    import adplace as tf  # noqa: PLC0415 - loaded after the cache directory is chosen

    k = [np.float32(1.0001), np.float32(0.5), np.float32(0.25), np.float32(-1.0)]
    arith = [(lambda t: t * k[0], np.multiply, k[0]), (lambda t: t + k[1], np.add, k[1]),
             (lambda t: t - k[2], np.subtract, k[2]), (lambda t: tf.maximum(t, k[3]), np.maximum, k[3]),
             (tf.tanh, np.tanh, None)]
    return {
        "chain1000_f32x4": ((4,), [(tf.sin, np.sin, None), (tf.cos, np.cos, None), (tf.square, np.square, None)],
                            np.linspace(0.1, 0.4, 4, dtype=np.float32)),
        "arith1000_f32x65536": ((65536,), arith, np.linspace(-2, 2, 65536, dtype=np.float32)),
        "arith1000_no_tanh_f32x65536": ((65536,), arith[:4], np.linspace(-2, 2, 65536, dtype=np.float32)),
    }


def _mean_us(fn, calls: int) -> float:
    start = time.perf_counter()
    for _ in range(calls):
        fn()
    return (time.perf_counter() - start) / calls * 1e6


def _measure_chain(shape: tuple, ops: list, value: np.ndarray, samples: int) -> dict:
    import adplace as tf  # noqa: PLC0415
    from adplace.kernels import cpu_fusion  # noqa: PLC0415
    from adplace.runtime import fusion  # noqa: PLC0415

    graph = tf.Graph()
    with graph.as_default():
        x = tf.placeholder(tf.float32, shape, name="x")
        t = x
        for i in range(N_OPS):
            t = ops[i % len(ops)][0](t)
        y = t
    off = tf.ConfigProto(graph_options=tf.GraphOptions(rewrite_options=tf.RewriterConfig(
        remapping=tf.RewriterConfig.OFF)))
    fused_sess, unfused_sess = tf.Session(graph=graph), tf.Session(graph=graph, config=off)
    feed = {x: value}
    calls = [ops[i % len(ops)][1:] for i in range(N_OPS)]

    def numpy_loop():
        a = np.array(value, dtype=np.float32)
        for f, k in calls:
            a = f(a) if k is None else f(a, k)
        return a

    saved = fusion.CPU_FUSION_MIN_NS
    fusion.CPU_FUSION_MIN_NS = 0  # compile at the first counted run (in the background): timed apart
    cpu_fusion.forget_compiled()
    before = dict(cpu_fusion.STATS)
    try:
        for _ in range(5):
            fused_sess.run(y, feed)
        fusion.wait_cpu_fusion()
    finally:
        fusion.CPU_FUSION_MIN_NS = saved
    cold_s = cpu_fusion.STATS["seconds"] - before["seconds"]
    plan = fused_sess.plan_for(y, feed)
    fused_groups = [len(members) for members in plan.fused.values()]
    compiled = cpu_fusion.STATS["compiled"] - before["compiled"]
    disk_s = _reload_from_disk()
    expected = numpy_loop()
    for sess in (fused_sess, unfused_sess):
        for _ in range(3):
            out = sess.run(y, feed)
        np.testing.assert_allclose(out, expected, rtol=2e-4, atol=1e-5)
    repeat = max(1, int(20_000 / max(1.0, _mean_us(numpy_loop, 3))))
    times: dict = {"adplace_fused": [], "adplace_unfused": [], "numpy_loop": []}
    runs = {"adplace_fused": lambda: fused_sess.run(y, feed), "adplace_unfused": lambda: unfused_sess.run(y, feed),
            "numpy_loop": numpy_loop}
    for _ in range(samples):  # interleaved: the machine's load affects all three alike
        for name, fn in runs.items():
            times[name].append(_mean_us(fn, repeat))
    fused_sess.close()
    unfused_sess.close()
    med = {name: statistics.median(v) for name, v in times.items()}
    return {"median_us": med, "fused_vs_numpy": med["adplace_fused"] / med["numpy_loop"],
            "unfused_vs_numpy": med["adplace_unfused"] / med["numpy_loop"],
            "meets_target": med["adplace_fused"] / med["numpy_loop"] <= TARGET,
            "fused_groups": fused_groups, "loops_compiled": compiled,
            "compile_s": {"cold": cold_s, "from_disk_cache": disk_s}}


def _reload_from_disk() -> float:
    """Seconds to load this process's compiled loops again from Numba's on-disk cache (adplace's in-process cache
    set aside; Numba is already imported)."""
    from adplace.kernels import cpu_fusion  # noqa: PLC0415

    sources = cpu_fusion.forget_compiled()
    start = time.perf_counter()
    for source in sources:
        cpu_fusion.compiled_loop(source)
    return time.perf_counter() - start


def measure(samples: int) -> dict:
    """Medians (us) of adplace fused, adplace unfused and NumPy's loop per chain, and compile times (s), with a
    fresh (cold) cache directory for the fused loops."""
    from adplace.kernels import cpu_fusion  # noqa: PLC0415

    if not cpu_fusion.available():
        return {"skipped": "Numba is not installed (pip install 'adplace[jit]')"}
    start = time.perf_counter()
    import numba  # noqa: F401, PLC0415 - imported once, before the timed compiles
    import_s = time.perf_counter() - start
    saved = os.environ.get("ADPLACE_CACHE_DIR")
    with tempfile.TemporaryDirectory() as cache:
        os.environ["ADPLACE_CACHE_DIR"] = cache
        try:
            result = {name: _measure_chain(*chain, samples) for name, chain in _chains().items()}
        finally:
            if saved is None:
                del os.environ["ADPLACE_CACHE_DIR"]
            else:
                os.environ["ADPLACE_CACHE_DIR"] = saved
    result["numba_import_s"] = import_s
    return result


def main(argv: list | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--samples", type=int, default=7)
    parser.add_argument("--json", default="")
    args = parser.parse_args(argv)
    result = measure(args.samples)
    if "skipped" in result:
        print(result["skipped"])
        return 0
    print(f"{'chain':28} {'fused us':>11} {'unfused us':>11} {'numpy us':>11} {'fused/np':>9} {'target':>7} "
          f"{'cold s':>7} {'disk s':>7}")
    for name, r in result.items():
        if name == "numba_import_s":
            continue
        med = r["median_us"]
        print(f"{name:28} {med['adplace_fused']:11.1f} {med['adplace_unfused']:11.1f} {med['numpy_loop']:11.1f} "
              f"{r['fused_vs_numpy']:8.3f}x {'ok' if r['meets_target'] else 'MISS':>7} "
              f"{r['compile_s']['cold']:7.2f} {r['compile_s']['from_disk_cache']:7.2f}")
    print(f"compile times: cold = Numba compiling the fused loops (cache empty), disk = loading them from its "
          f"cache; importing Numba took {result['numba_import_s']:.2f} s once")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(result, f, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
