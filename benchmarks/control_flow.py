"""Control flow benchmark: TF1 while loops (and their gradients) run by adplace, against the same graph in real
TensorFlow (control flow v1, graph mode) and a plain Python loop of the same NumPy calls.

    python benchmarks/control_flow.py                 # full run (about a minute), writes results/control_flow.json
    python benchmarks/control_flow.py --quick         # smoke run: 1,000 / 100 iterations, 3 samples (JSON to $TMPDIR)
    python benchmarks/control_flow.py --profile ROW   # cProfile one adplace run of ROW (e.g. decay_grad); no JSON

Rows (float32; every graph is built by one function, run both on adplace and on tf.compat.v1):
  decay         tf.while_loop of 10,000 iterations of x = x * a + b, x a [16] vector fed as x0, a an invariant fed
                as a scalar (0.999), b = 0.001, plus the loop counter: i < n, i + 1. One sess.run fetches the final x.
                NumPy: `for _ in range(n): x = x * a + b`.
  decay_grad    tf.gradients(reduce_sum(final x), [x0, a]): TF1's backward loop (the forward loop pushes each x
                onto a stack, the backward loop pops them). NumPy: the forward loop keeping each x in a list, then
                the hand-written reverse loop (ga += sum(g * x_k); g = g * a).
  heat          1,000 explicit steps of the 1-D heat equation on 100 points, u += dt * kappa * laplacian(u), the
                laplacian u[2:] - 2 u[1:-1] + u[:-2] with zero ends (concat), u a loop variable, dt * kappa a loop
                invariant (dt = 0.1, kappa fed, 1.0). NumPy: the same slices, arithmetic and concatenate in a loop.
  heat_grad     d(0.5 * sum(u_final^2)) / d kappa. NumPy: the forward loop keeping each laplacian, then the reverse
                loop (g_kappa += dt * sum(g * lap_k); g = g + dt * kappa * laplacian^T(g)).
  heat_ta       the heat loop writing every step's u into a TensorArray (ta.write(i, u)), fetching ta.stack(), the
                [1000, 100] history. NumPy: a list of the steps, np.stack at the end.
  heat_ta_grad  d(0.5 * sum(history^2)) / d kappa, through the TensorArray's gradient. NumPy: the reverse loop above
                adding each step's own u to g.
Every time is a MEDIAN of samples (one sess.run or one call each) that alternate between adplace and NumPy
(dispatch.compare); TF runs the same graphs in a subprocess (`--tf-peer` mode, skipped when TensorFlow is not
installed), after `tf.compat.v1.disable_v2_behavior()`, which includes disable_control_flow_v2 (the script checks the
graph holds Enter ops), its samples alternating with the same NumPy functions (in the JSON: when they differ from
this process's NumPy medians, the machine's load changed between the two processes). All three are checked
to agree (rtol 1e-3) before timing. Reported per iteration: adplace, NumPy, TF, and the ratios adplace / NumPy and
adplace / TF. Nothing here asserts a time.
"""
from __future__ import annotations

import cProfile
import datetime
import functools
import importlib.util
import json
import os
import pstats
import subprocess
import sys
import time

import numpy as np

import adplace as tf

try:  # run as a script (benchmarks/ is sys.path[0]) or imported as benchmarks.control_flow
    from dispatch import _fmt_time, _sources_digest, compare, machine_info, parse_args, print_table, source_info, \
        write_results
except ImportError:  # pragma: no cover - the package-style import
    from benchmarks.dispatch import (_fmt_time, _sources_digest, compare, machine_info, parse_args, print_table,
                                     source_info, write_results)

RTOL = 1e-3
DECAY = {"size": 16, "a": 0.999, "b": 0.001}
HEAT = {"points": 100, "dt": 0.1, "kappa": 1.0}
ROWS = ("decay", "decay_grad", "heat", "heat_grad", "heat_ta", "heat_ta_grad")


def iterations(quick: bool) -> dict:
    """Loop iterations per row family: the issue's 10,000 (decay) and 1,000 (heat); a tenth of that with --quick."""
    scale = 10 if quick else 1
    return {"decay": 10_000 // scale, "heat": 1_000 // scale}


def feeds() -> dict:
    """The fed values by placeholder name, shared by every contestant."""
    n = HEAT["points"]
    xs = np.linspace(0.0, 1.0, n, dtype=np.float32)
    return {"x0": np.linspace(0.0, 1.0, DECAY["size"], dtype=np.float32), "a": np.float32(DECAY["a"]),
            "u0": (np.sin(np.pi * xs) + 0.5 * np.sin(5 * np.pi * xs)).astype(np.float32),
            "kappa": np.float32(HEAT["kappa"])}


# --- the graphs: one builder for adplace and for tf.compat.v1 -----------------------------------------------------
def build(row: str, v1, n: int) -> tuple[list, dict]:
    """Build `row`'s graph in v1's default graph (v1 = the adplace module or tf.compat.v1); returns (fetches, the
    placeholders by name)."""
    f32 = v1.float32
    if row.startswith("decay"):
        x0 = v1.placeholder(f32, [DECAY["size"]], name="x0")
        a = v1.placeholder(f32, [], name="a")
        b = v1.constant(DECAY["b"], f32)
        _, x = v1.while_loop(lambda i, x: i < n, lambda i, x: (i + 1, x * a + b), [v1.constant(0), x0])
        fetches = v1.gradients(v1.reduce_sum(x), [x0, a]) if row.endswith("_grad") else [x]
        return fetches, {"x0": x0, "a": a}
    u0 = v1.placeholder(f32, [HEAT["points"]], name="u0")
    kappa = v1.placeholder(f32, [], name="kappa")
    c = v1.constant(HEAT["dt"], f32) * kappa
    zero = v1.constant([0.0], f32)

    def step(u):
        return u + c * v1.concat([zero, u[2:] - 2.0 * u[1:-1] + u[:-2], zero], 0)

    if row.startswith("heat_ta"):
        ta = v1.TensorArray(f32, size=n)
        _, _, ta = v1.while_loop(lambda i, u, ta: i < n, lambda i, u, ta: _write_step(i, step(u), ta),
                                 [v1.constant(0), u0, ta])
        out = ta.stack()
    else:
        _, out = v1.while_loop(lambda i, u: i < n, lambda i, u: (i + 1, step(u)), [v1.constant(0), u0])
    fetches = v1.gradients(0.5 * v1.reduce_sum(out * out), [kappa]) if row.endswith("_grad") else [out]
    return fetches, {"u0": u0, "kappa": kappa}


def _write_step(i, u, ta):
    """The TensorArray body's outputs: the counter, the new u, and the array with u written at i."""
    return i + 1, u, ta.write(i, u)


# --- NumPy baselines ----------------------------------------------------------------------------------------------
def numpy_rows(n_decay: int, n_heat: int) -> dict:
    """row -> a function of the feeds doing the row's work as a plain Python loop of NumPy calls."""
    b = np.float32(DECAY["b"])
    dt = np.float32(HEAT["dt"])
    zero = np.zeros(1, np.float32)
    two = np.float32(2.0)

    def decay(x0, a, **_):
        x = x0
        for _ in range(n_decay):
            x = x * a + b
        return [x]

    def decay_grad(x0, a, **_):
        x, xs = x0, []
        for _ in range(n_decay):
            xs.append(x)
            x = x * a + b
        g, ga = np.ones_like(x0), np.float32(0.0)
        for xk in reversed(xs):
            ga = ga + np.sum(g * xk)
            g = g * a
        return [g, ga]

    def lap(u):
        return np.concatenate((zero, u[2:] - two * u[1:-1] + u[:-2], zero))

    def lap_t(g):  # the laplacian's transpose: what each point contributed to its neighbours' interior values
        h = np.concatenate((zero, g[1:-1], zero))
        return np.concatenate((g[1:2], h[2:] - two * h[1:-1] + h[:-2], g[-2:-1]))

    def heat(u0, kappa, **_):
        c, u = dt * kappa, u0
        for _ in range(n_heat):
            u = u + c * lap(u)
        return [u]

    def heat_grad(u0, kappa, **_):
        c, u, laps = dt * kappa, u0, []
        for _ in range(n_heat):
            d = lap(u)
            laps.append(d)
            u = u + c * d
        g, gk = u, np.float32(0.0)
        for d in reversed(laps):
            gk = gk + dt * np.sum(g * d)
            g = g + c * lap_t(g)
        return [gk]

    def heat_ta(u0, kappa, **_):
        c, u, history = dt * kappa, u0, []
        for _ in range(n_heat):
            u = u + c * lap(u)
            history.append(u)
        return [np.stack(history)]

    def heat_ta_grad(u0, kappa, **_):
        c, u, laps, us = dt * kappa, u0, [], []
        for _ in range(n_heat):
            d = lap(u)
            laps.append(d)
            u = u + c * d
            us.append(u)
        g, gk = np.zeros_like(u0), np.float32(0.0)
        for d, uk in zip(reversed(laps), reversed(us)):
            g = g + uk
            gk = gk + dt * np.sum(g * d)
            g = g + c * lap_t(g)
        return [gk]

    return {"decay": decay, "decay_grad": decay_grad, "heat": heat, "heat_grad": heat_grad, "heat_ta": heat_ta,
            "heat_ta_grad": heat_ta_grad}


def _loop_count(row: str, counts: dict) -> int:
    return counts["decay" if row.startswith("decay") else "heat"]


def _check(row: str, got: list, want: list, who: str) -> None:
    for g, w in zip(got, want):
        if not np.allclose(np.asarray(g), w, rtol=RTOL, atol=1e-5):
            raise SystemExit(f"{row}: {who} and NumPy disagree: {np.asarray(g).ravel()[:4]} vs {w.ravel()[:4]}")


def _sessions(counts: dict) -> dict:
    """row -> (session, fetches, feed dict) on adplace, every row in a graph of its own."""
    values, out = feeds(), {}
    for row in ROWS:
        graph = tf.Graph()
        with graph.as_default():
            fetches, placeholders = build(row, tf, _loop_count(row, counts))
        out[row] = (tf.Session(graph=graph), fetches, {p: values[k] for k, p in placeholders.items()})
    return out


# --- adplace against NumPy, in this process -------------------------------------------------------------------------
def bench_adplace(counts: dict, samples: int) -> dict:
    values, numpy_fns, results = feeds(), numpy_rows(counts["decay"], counts["heat"]), {}
    for row, (sess, fetches, feed) in _sessions(counts).items():
        want = numpy_fns[row](**values)
        _check(row, sess.run(fetches, feed), want, "adplace")  # also compiles the plans

        results[row] = compare(functools.partial(sess.run, fetches, feed),
                               {"numpy": functools.partial(numpy_fns[row], **values)}, samples, calls=1)
        sess.close()
    return results


def profile(row: str, counts: dict, top: int = 30) -> None:
    """Print cProfile's view (by own time, then cumulative) of one adplace run of `row`, after a warm-up run."""
    sess, fetches, feed = _sessions(counts)[row]
    sess.run(fetches, feed)
    profiler = cProfile.Profile()
    profiler.enable()
    sess.run(fetches, feed)
    profiler.disable()
    stats = pstats.Stats(profiler, stream=sys.stdout)
    stats.sort_stats("tottime").print_stats(top)
    stats.sort_stats("cumulative").print_stats(top)


# --- TF, in a subprocess ----------------------------------------------------------------------------------------------
def tf_peer(counts: dict, samples: int) -> dict:
    """Each row's TF medians (us) and its NumPy medians in the same process; run in this file's `--tf-peer` mode."""
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    import tensorflow as real_tf
    v1 = real_tf.compat.v1
    v1.disable_v2_behavior()  # graph mode and control flow v1, as adplace builds it
    values, numpy_fns, out = feeds(), numpy_rows(counts["decay"], counts["heat"]), {}
    for row in ROWS:
        graph = real_tf.Graph()
        with graph.as_default():
            fetches, placeholders = build(row, v1, _loop_count(row, counts))
        if not any(op.type == "Enter" for op in graph.get_operations()):
            raise SystemExit(f"{row}: TF built no Enter op: not control flow v1")
        sess = v1.Session(graph=graph)
        feed = {p: values[k] for k, p in placeholders.items()}
        want = numpy_fns[row](**values)
        _check(row, sess.run(fetches, feed), want, "TF")
        result = compare(functools.partial(sess.run, fetches, feed),
                         {"numpy": functools.partial(numpy_fns[row], **values)}, samples, calls=1)
        out[row] = {"tf_median_us": result["median_us"]["adplace"], "tf_min_us": result["min_us"]["adplace"],
                    "numpy_median_us": result["median_us"]["numpy"]}
        sess.close()
    return {"tensorflow": real_tf.__version__, "rows": out}


def run_tf_peer(counts: dict, samples: int) -> dict | None:
    """The TF column, or None where TensorFlow is not installed or its run failed (the table then says n/a)."""
    if importlib.util.find_spec("tensorflow") is None:
        return None
    done = subprocess.run([sys.executable, os.path.abspath(__file__), "--tf-peer", json.dumps(counts), str(samples)],
                          capture_output=True, text=True, timeout=1800,
                          env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3", "CUDA_VISIBLE_DEVICES": ""})
    if done.returncode != 0:
        print(f"TF peer failed: {done.stderr[-2000:]}")
        return None
    return json.loads(done.stdout.strip().splitlines()[-1])


# --- report -----------------------------------------------------------------------------------------------------------
def _per_iter(us: float) -> str:
    return f"{us:.2f} us" if us < 100 else _fmt_time(us)


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv and argv[0] == "--tf-peer":
        print(json.dumps(tf_peer(json.loads(argv[1]), int(argv[2]))))
        return 0
    if argv and argv[0] == "--profile":
        row = argv[1] if len(argv) > 1 else "decay"
        if row not in ROWS:
            raise SystemExit(f"--profile takes one of {', '.join(ROWS)}")
        profile(row, iterations("--quick" in argv))
        return 0
    args = parse_args(argv, "control_flow", __doc__.splitlines()[0], "1,000 / 100 iterations; 3 samples")
    counts, samples = iterations(args.quick), 3 if args.quick else 15
    started = time.perf_counter()
    sources_at_start = _sources_digest(os.path.dirname(os.path.abspath(tf.__file__)))
    ours = bench_adplace(counts, samples)
    theirs = run_tf_peer(counts, samples)

    rows, table = [], {}
    for row in ROWS:
        n = _loop_count(row, counts)
        med = ours[row]["median_us"]
        a, p = med["adplace"], med["numpy"]
        t = theirs["rows"][row]["tf_median_us"] if theirs else None
        entry = {"iterations": n, "adplace_median_us": a, "numpy_median_us": p, "tf_median_us": t,
                 "adplace_min_us": ours[row]["min_us"]["adplace"], "numpy_min_us": ours[row]["min_us"]["numpy"],
                 "adplace_us_per_iteration": a / n, "numpy_us_per_iteration": p / n,
                 "tf_us_per_iteration": t / n if t else None, "adplace_iterations_per_s": n / a * 1e6,
                 "adplace_over_numpy": a / p, "adplace_over_tf": a / t if t else None,
                 "tf_over_numpy_in_its_process": (t / theirs["rows"][row]["numpy_median_us"]) if t else None}
        table[row] = entry
        rows.append((row, f"{n:,}", _per_iter(a / n), f"{n / a * 1e6:,.0f}", _per_iter(p / n),
                     _per_iter(t / n) if t else "n/a", f"{a / p:.2f}x", f"{a / t:.2f}x" if t else "n/a"))
    header = ["row", "iterations", "adplace/iter", "adplace iter/s", "numpy/iter", "TF/iter", "adplace/numpy",
              "adplace/TF"]
    print_table(header, rows)
    elapsed = time.perf_counter() - started
    print(f"\nmedians of {samples} samples (one sess.run / one call each); TF: "
          f"{theirs['tensorflow'] + ' (control flow v1, graph mode, subprocess)' if theirs else 'n/a (not installed)'}"
          f"; total {elapsed:.0f} s")
    slow = [row for row in ROWS if table[row]["adplace_over_numpy"] > 5]
    if slow:
        print(f"over 5x NumPy: {', '.join(slow)} (see `--profile ROW`)")

    source = source_info()
    source["sources_sha1_at_start"] = sources_at_start
    results = {"benchmark": "control_flow", "date": datetime.datetime.now().isoformat(timespec="seconds"),
               "machine": machine_info(), "adplace_source": source, "quick": args.quick, "samples": samples,
               "iterations": counts, "decay": DECAY, "heat": HEAT,
               "tensorflow": theirs["tensorflow"] if theirs else None, "benchmarks": table,
               "table": [dict(zip(header, r)) for r in rows], "elapsed_s": elapsed}
    write_results(results, args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
