"""Concurrency benchmark: what thread-safe variables cost a single-threaded run, and how Adam training steps scale
with 1, 2 and 4 Python threads sharing one tf.Session.

    python benchmarks/concurrency.py                               # the current tree only; writes
                                                                   # benchmarks/results/concurrency.json
    python benchmarks/concurrency.py --baseline-src /tmp/adplace-base   # before (that tree) vs after (this one)
    python benchmarks/concurrency.py --quick [--baseline-src PATH]  # smoke run (JSON to $TMPDIR)
    python benchmarks/concurrency.py --out PATH                    # write the JSON elsewhere (also --output)

Every measurement runs in a fresh subprocess that imports adplace from one source tree (PYTHONPATH=<tree>): "before"
is --baseline-src (e.g. a `git worktree add /tmp/adplace-base HEAD` copy), "after" is the tree holding this script.
Both run the identical measurement function (measure(), below); the subprocesses alternate before, after, before,
after, ... (--repetitions pairs for part 1, default 10; --thread-repetitions for part 2, default 3), so drift of the
machine hits both sides alike. Every number is a MEDIAN: of samples inside a process, then of the processes of one
side. Nothing here asserts a time.

Part 1, dispatch overhead (one timed call; each sample is a batch of calls with the GC off; adplace and NumPy samples
alternate in one process, dispatch.compare):
  trivial        sess.run(y, {x: v}), y = tf.identity(x), x a float32[4] placeholder. NumPy: np.array(v, float32)
                 then an identity function (the feed copy, as in dispatch.py).
  assign_add     sess.run(inc), inc = tf.assign_add(v, 1.0), v a float32 scalar variable. NumPy: v_np += 1.0 on a
                 0-d float32 array.
  assign_locked  the same with tf.assign_add(v, 1.0, use_locking=True) (its own variable).
  adam10         dispatch.py's adam10: 10 steps sess.run([train_op, loss], feeds) of the polynomial model; NumPy: the
                 hand-written forward pass, gradient and Adam update (dispatch.bench_adam10).
  after/before = median(after) / median(before); target (the issue: "locking must cost under 5%"): <= 1.05 for
  trivial and assign_add. locked/unlocked = assign_locked / assign_add in the same process.

Part 2, threads sharing one session. Each model is trained by one op: minimize(loss, global_step=global_step) of
tf.train.AdamOptimizer, followed (control dependency) by tf.assign_add(counter, 1, use_locking=True) on an int64
counter:
  linear2        y = w*x + b, 2 scalar parameters, 100 fed points of y = 3x + 2 + noise, Adam(0.1).
  dense256       Y = X @ W + b, W float32[256, 256], b float32[256], a fed 64x256 batch X and targets from a fixed
                 random W, Adam(0.01).
  dense256_blas1 the same with BLAS limited to 1 thread (threadpoolctl, set once around the phase): with several
                 callers a multi-threaded OpenBLAS oversubscribes the cores, hand-written NumPy as much as adplace.
For 1, 2 and 4 threads: the variables are re-initialised, then N threads (released together by a barrier) each run
sess.run(train_op, feeds) total/N times (total 2,000 for linear2, 600 for dense256), stopping early at a deadline
(5 s). Reported: total steps/s (all runs / wall time), per-thread steps/s (each thread's runs / its own time; the
median thread), speed-up = total steps/s over the 1-thread total, the same for the model's Adam step hand-written in
NumPy and run on N threads the same way (Hogwild on shared arrays; checked against adplace's first step), the loss
before and after (every thread count makes the same total number of steps unless the deadline stopped it, so the
final losses are comparable), and whether global_step (minimize's increment, unlocked as in TF) and the locked
counter equal the runs that returned. Runs that raise are counted as errors, not as runs; nothing fails the
benchmark.
"""
from __future__ import annotations

import argparse
import contextlib
import datetime
import functools
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time

import numpy as np

import adplace as tf

try:  # run as a script (benchmarks/ is sys.path[0]) or imported as benchmarks.concurrency
    from dispatch import (_blas_limit, _fmt_time, bench_adam10, compare, machine_info, print_table, source_info,
                          write_results)
except ImportError:  # pragma: no cover - the package-style import
    from benchmarks.dispatch import (_blas_limit, _fmt_time, bench_adam10, compare, machine_info, source_info,
                                     write_results)

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # the "after" tree: the one holding this script
CASES = ("trivial", "assign_add", "assign_locked", "adam10")
NUMPY_BASELINE = {"trivial": "numpy_feed_copy", "assign_add": "numpy_add", "assign_locked": "numpy_add",
                  "adam10": "numpy"}
TARGET_RATIO = {"trivial": 1.05, "assign_add": 1.05}  # after/before, from the issue: "locking must cost under 5%"
THREADS = (1, 2, 4)
# thread benchmark configurations: (model, BLAS threads while the threads train: None = the library's default)
CONFIGS = {"linear2": ("linear2", None), "dense256": ("dense256", None), "dense256_blas1": ("dense256", 1)}
SETTINGS = {  # per mode: samples per process and processes per side (dispatch / threads), total steps per thread
    # count, and the wall time after which the threads stop early (a thread count that slow reports fewer steps)
    "full": {"samples": 9, "thread_samples": 3, "repetitions": 10, "thread_repetitions": 3,
             "steps": {"linear2": 2000, "dense256": 600}, "deadline_s": 5.0},
    "quick": {"samples": 3, "thread_samples": 1, "repetitions": 2, "thread_repetitions": 1,
              "steps": {"linear2": 200, "dense256": 40}, "deadline_s": 1.0},
}
JOIN_TIMEOUT_S = 120.0  # a thread still running after this is reported as hung (the process then exits anyway)


# --- part 1: dispatch overhead ----------------------------------------------------------------------------------------
def bench_dispatch(samples: int) -> dict:
    """Per-call medians (us) of the trivial run, the unlocked and the locked assign_add, and their NumPy baselines,
    all interleaved in one dispatch.compare."""
    g = tf.Graph()
    with g.as_default():
        x = tf.placeholder(tf.float32, [4], name="x")
        y = tf.identity(x)
        v = tf.Variable(np.float32(0.0), name="v")
        v_locked = tf.Variable(np.float32(0.0), name="v_locked")
        inc = tf.assign_add(v, 1.0)
        inc_locked = tf.assign_add(v_locked, 1.0, use_locking=True)
        init = tf.global_variables_initializer()
    sess = tf.Session(graph=g)
    sess.run(init)
    xv = np.arange(4, dtype=np.float32)
    feed = {x: xv}
    assert np.array_equal(sess.run(y, feed), xv)
    assert sess.run(inc) == 1.0 and sess.run(inc_locked) == 1.0

    def identity(a):
        return a

    v_np, one = np.zeros((), np.float32), np.float32(1.0)

    def numpy_add():
        nonlocal v_np
        v_np += one
        return v_np

    result = compare(lambda: sess.run(y, feed),
                     {"assign_add": lambda: sess.run(inc), "assign_locked": lambda: sess.run(inc_locked),
                      "numpy_feed_copy": lambda: identity(np.array(xv, dtype=np.float32)), "numpy_add": numpy_add},
                     samples, calls=2000)
    sess.close()
    med = result["median_us"]
    med["trivial"] = med.pop("adplace")
    result["min_us"]["trivial"] = result["min_us"].pop("adplace")
    return {"median_us": med, "min_us": result["min_us"], "calls_per_sample": result["calls_per_sample"]}


# --- part 2: threads sharing one session --------------------------------------------------------------------------------
ADAM = {"beta1": 0.9, "beta2": 0.999, "epsilon": 1e-8}


def model_data(name: str) -> tuple[np.ndarray, np.ndarray, float]:
    """(inputs, targets, learning rate) of a model, fixed by the seed."""
    rng = np.random.default_rng(0)
    if name == "linear2":
        xs = rng.uniform(-1, 1, 100).astype(np.float32)
        return xs, (3 * xs + 2 + rng.normal(0, 0.1, 100)).astype(np.float32), 0.1
    xs = rng.uniform(-1, 1, (64, 256)).astype(np.float32)
    return xs, xs @ (rng.standard_normal((256, 256), dtype=np.float32) / np.float32(16.0)), 0.01


def build_model(name: str):
    """(graph, train_op, loss, feeds, global_step, counter, init) of one model (see the module docstring)."""
    xs, ys, lr = model_data(name)
    g = tf.Graph()
    with g.as_default():
        if name == "linear2":
            x = tf.placeholder(tf.float32, [None], name="x")
            y = tf.placeholder(tf.float32, [None], name="y")
            w = tf.Variable(np.float32(0.0), name="w")
            b = tf.Variable(np.float32(0.0), name="b")
            loss = tf.reduce_mean(tf.square(w * x + b - y))
        else:
            x = tf.placeholder(tf.float32, [None, 256], name="x")
            y = tf.placeholder(tf.float32, [None, 256], name="y")
            w = tf.Variable(np.zeros((256, 256), np.float32), name="w")
            b = tf.Variable(np.zeros(256, np.float32), name="b")
            loss = tf.reduce_mean(tf.square(tf.matmul(x, w) + b - y))
        global_step = tf.train.get_or_create_global_step()
        counter = tf.Variable(np.int64(0), name="locked_counter")
        minimize = tf.train.AdamOptimizer(lr, ADAM["beta1"], ADAM["beta2"], ADAM["epsilon"]).minimize(
            loss, global_step=global_step)
        with tf.control_dependencies([minimize]):
            train_op = tf.assign_add(counter, np.int64(1), use_locking=True).op
        init = tf.global_variables_initializer()
    return g, train_op, loss, {x: xs, y: ys}, global_step, counter, init


class NumpyModel:
    """The same model and Adam step written by hand in NumPy; the threads share its arrays and update them in place
    without a lock (Hogwild, as adplace's unlocked ApplyAdam), and count their steps under a lock."""

    def __init__(self, name: str):
        self.name = name
        self.xs, self.ys, self.lr = model_data(name)
        self.lock = threading.Lock()
        self.reset()

    def reset(self) -> None:
        shapes = [(), ()] if self.name == "linear2" else [(256, 256), (256,)]
        self.params = [np.zeros(s, np.float32) for s in shapes]
        self.m = [np.zeros(s, np.float32) for s in shapes]
        self.v = [np.zeros(s, np.float32) for s in shapes]
        self.powers = [np.float32(ADAM["beta1"]), np.float32(ADAM["beta2"])]
        self.steps = 0

    def residual(self, xa, ya):
        w, b = self.params
        return (w * xa + b - ya) if self.name == "linear2" else (xa @ w + b - ya)

    def loss(self) -> float:
        return float(np.mean(np.square(self.residual(self.xs, self.ys))))

    def step(self) -> None:
        xa, ya = np.array(self.xs, dtype=np.float32), np.array(self.ys, dtype=np.float32)  # the feed copies
        r = self.residual(xa, ya) * np.float32(2.0 / self.ys.size)
        grads = ([np.sum(r * xa), np.sum(r)] if self.name == "linear2" else [xa.T @ r, np.sum(r, axis=0)])
        b1, b2 = np.float32(ADAM["beta1"]), np.float32(ADAM["beta2"])
        b1p, b2p = self.powers
        lr_t = np.float32(self.lr) * np.sqrt(np.float32(1) - b2p) / (np.float32(1) - b1p)
        for p, m, v, g in zip(self.params, self.m, self.v, grads):
            m += (g - m) * (np.float32(1) - b1)
            v += (g * g - v) * (np.float32(1) - b2)
            p -= lr_t * m / (np.sqrt(v) + np.float32(ADAM["epsilon"]))
        self.powers = [b1p * b1, b2p * b2]
        with self.lock:
            self.steps += 1


def _train_threads(step, n: int, steps_each: int, deadline_s: float) -> dict:
    """n threads call step() steps_each times each (stopping early after deadline_s), released together; their counts,
    times and errors."""
    barrier = threading.Barrier(n + 1)
    runs, times, errors = [0] * n, [0.0] * n, []

    def worker(i):
        barrier.wait()
        start = time.perf_counter()
        stop = start + deadline_s
        clock = time.perf_counter
        done = 0
        for _ in range(steps_each):
            if clock() > stop:
                break
            try:
                step()
                done += 1
            except Exception as exc:  # noqa: BLE001 - a race in the measured code is reported, not fatal
                errors.append(f"{type(exc).__name__}: {exc}"[:300])
        runs[i], times[i] = done, time.perf_counter() - start

    threads = [threading.Thread(target=worker, args=(i,), daemon=True, name=f"train-{i}") for i in range(n)]
    for t in threads:
        t.start()
    barrier.wait()
    start = time.perf_counter()
    for t in threads:
        t.join(JOIN_TIMEOUT_S)
    wall = time.perf_counter() - start
    rates = [r / t for r, t in zip(runs, times) if t > 0]
    return {"wall_s": wall, "runs": sum(runs), "stopped_early": sum(runs) + len(errors) < n * steps_each,
            "steps_per_s": sum(runs) / wall if wall > 0 else 0.0,
            "per_thread_steps_per_s": statistics.median(rates) if rates else 0.0, "errors": errors,
            "hung_threads": sum(t.is_alive() for t in threads)}


def bench_threads(model: str, total_steps: int, samples: int, deadline_s: float) -> dict:
    """adplace and NumPy training steps on 1, 2, 4 threads; per thread count a list of samples."""
    g, train_op, loss, feeds, global_step, counter, init = build_model(model)
    sess = tf.Session(graph=g)
    ref = NumpyModel(model)
    sess.run(init)
    sess.run(train_op, feeds)
    ref.step()
    np.testing.assert_allclose(sess.run(loss, feeds), ref.loss(), rtol=1e-4,
                               err_msg=f"{model}: adplace's Adam step differs from NumPy's")
    for _ in range(20):  # compile the plans (and tier them up) before any timing
        sess.run(train_op, feeds)
        ref.step()
    plan = sess.plan_for(train_op, feeds)
    by_n: dict[int, list[dict]] = {n: [] for n in THREADS}
    for s in range(samples):
        order = THREADS[s % len(THREADS):] + THREADS[:s % len(THREADS)]  # rotate, so no count always runs first
        for n in order:
            sess.run(init)
            loss0 = float(sess.run(loss, feeds))
            r = _train_threads(functools.partial(sess.run, train_op, feeds), n, total_steps // n, deadline_s)
            if r["hung_threads"]:  # the session may be stuck: read nothing more from it
                return {"total_steps": total_steps, "samples": by_n, "plan_mode": plan.mode, "hung": True,
                        "hung_sample": {"threads": n, **r}}
            gs, cnt, loss1 = (v.item() for v in sess.run([global_step, counter, loss], feeds))
            ref.reset()
            rn = _train_threads(ref.step, n, total_steps // n, deadline_s)
            by_n[n].append({"steps_per_s": r["steps_per_s"], "per_thread_steps_per_s": r["per_thread_steps_per_s"],
                            "runs": r["runs"], "global_step": gs, "locked_counter": cnt,
                            "initial_loss": loss0, "final_loss": loss1, "errors": len(r["errors"]),
                            "first_error": r["errors"][0] if r["errors"] else None, "hung_threads": 0,
                            "wall_s": r["wall_s"], "stopped_early": r["stopped_early"],
                            "numpy_steps_per_s": rn["steps_per_s"], "numpy_stopped_early": rn["stopped_early"],
                            "numpy_final_loss": ref.loss(), "numpy_steps_counted": ref.steps})
    sess.close()
    return {"total_steps": total_steps, "samples": by_n, "plan_mode": plan.mode, "hung": False}


def measure(quick: bool, part: str) -> dict:
    """THE measurement, run once per subprocess against whichever adplace the subprocess imports: part "dispatch"
    (part 1) or "threads" (part 2)."""
    settings = SETTINGS["quick" if quick else "full"]
    started = time.perf_counter()
    report = {"part": part, "adplace_file": os.path.abspath(tf.__file__), "adplace_source": source_info(),
              "switch_interval_s": sys.getswitchinterval()}
    if part == "dispatch":
        dispatch = bench_dispatch(settings["samples"])
        adam = bench_adam10(settings["samples"])
        for key, value in (("adam10", "adplace"), ("numpy", "numpy")):
            dispatch["median_us"][key] = adam["median_us"][value]
            dispatch["min_us"][key] = adam["min_us"][value]
        dispatch["adam10_calls_per_sample"] = adam["calls_per_sample"]
        report["dispatch"] = dispatch
    else:
        threads = report["threads"] = {}
        for config, (model, blas) in CONFIGS.items():
            limit = None if blas is None else _blas_limit(blas)
            if blas is not None and limit is None:
                continue  # no threadpoolctl: the BLAS limit cannot be set
            with limit() if limit else contextlib.nullcontext():
                threads[config] = bench_threads(model, settings["steps"][model], settings["thread_samples"],
                                                settings["deadline_s"])
            threads[config]["blas_threads"] = blas
    report["elapsed_s"] = time.perf_counter() - started
    return report


# --- the driver: subprocesses per side, interleaved ---------------------------------------------------------------------
def run_worker(src: str, quick: bool, part: str, tmpdir: str, tag: str) -> dict:
    """One subprocess running measure(quick, part) with adplace imported from the tree `src`; returns its report."""
    out = os.path.join(tmpdir, f"{tag}.json")
    env = dict(os.environ)
    env["PYTHONPATH"] = src + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    cmd = [sys.executable, os.path.abspath(__file__), "--worker", part, out] + (["--quick"] if quick else [])
    proc = subprocess.run(cmd, env=env, cwd=src, capture_output=True, text=True, timeout=900 if quick else 1800)
    if proc.returncode != 0:
        raise SystemExit(f"the measurement against {src} failed (exit {proc.returncode}):\n{proc.stderr[-3000:]}")
    with open(out) as fh:
        report = json.load(fh)
    package = os.path.realpath(os.path.join(src, "adplace"))
    if not os.path.realpath(report["adplace_file"]).startswith(package + os.sep):
        raise SystemExit(f"the subprocess for {src} imported adplace from {report['adplace_file']}, not {package}")
    return report


def _median(values):
    values = [v for v in values if v is not None]
    return statistics.median(values) if values else None


def summarise_dispatch(reports: list[dict]) -> dict:
    """Per case: the median over processes of each process's median, and every process's value."""
    out = {}
    for case in CASES:
        base = NUMPY_BASELINE[case]
        ours = [r["dispatch"]["median_us"][case] for r in reports]
        theirs = [r["dispatch"]["median_us"][base] for r in reports]
        out[case] = {"median_us": statistics.median(ours), "numpy_median_us": statistics.median(theirs),
                     "ratio_vs_numpy": statistics.median(o / t for o, t in zip(ours, theirs)),
                     "numpy_baseline": base, "per_process_us": ours, "per_process_numpy_us": theirs}
    locked = [r["dispatch"]["median_us"]["assign_locked"] / r["dispatch"]["median_us"]["assign_add"] for r in reports]
    out["assign_locked"]["locked_over_unlocked"] = statistics.median(locked)
    return out


def summarise_threads(reports: list[dict]) -> dict:
    """Per configuration and thread count: medians over processes of each process's median, the exactness of the
    step counters over every sample, and the errors."""
    out = {}
    for config in reports[0]["threads"]:
        runs = [r["threads"][config] for r in reports]
        per_config = {"model": CONFIGS[config][0], "blas_threads": runs[0]["blas_threads"],
                      "total_steps": runs[0]["total_steps"], "plan_mode": runs[0]["plan_mode"],
                      "hung_processes": sum(r["hung"] for r in runs),
                      "hung_samples": [r["hung_sample"] for r in runs if r.get("hung_sample")]}
        for n in THREADS:
            per_process = [r["samples"].get(str(n), []) for r in runs]
            samples = [s for ss in per_process for s in ss]

            def med(key, per_process=per_process):
                return _median(_median(s[key] for s in ss) for ss in per_process)

            gs_bad = [s for s in samples if s["global_step"] != s["runs"]]
            cnt_bad = [s for s in samples if s["locked_counter"] != s["runs"]]
            per_config[str(n)] = {
                "threads": n, "samples": len(samples),
                "steps_per_s": med("steps_per_s"),
                "per_process_steps_per_s": [_median(s["steps_per_s"] for s in ss) for ss in per_process],
                "per_thread_steps_per_s": med("per_thread_steps_per_s"),
                "numpy_steps_per_s": med("numpy_steps_per_s"),
                "initial_loss": med("initial_loss"), "final_loss": med("final_loss"),
                "numpy_final_loss": med("numpy_final_loss"),
                "runs": [s["runs"] for s in samples], "global_step": [s["global_step"] for s in samples],
                "locked_counter": [s["locked_counter"] for s in samples],
                "global_step_exact": not gs_bad, "global_step_inexact_samples": len(gs_bad),
                "global_step_lost_max": max((s["runs"] - s["global_step"] for s in gs_bad), default=0),
                "locked_counter_exact": not cnt_bad, "locked_counter_inexact_samples": len(cnt_bad),
                "locked_counter_lost_max": max((s["runs"] - s["locked_counter"] for s in cnt_bad), default=0),
                "stopped_early_samples": sum(s["stopped_early"] for s in samples),
                "numpy_stopped_early_samples": sum(s["numpy_stopped_early"] for s in samples),
                "errors": sum(s["errors"] for s in samples),
                "first_error": next((s["first_error"] for s in samples if s["first_error"]), None)}
        one, numpy_one = per_config["1"]["steps_per_s"], per_config["1"]["numpy_steps_per_s"]
        for n in THREADS:
            e = per_config[str(n)]
            e["speedup"] = e["steps_per_s"] / one if one and e["steps_per_s"] else None
            e["numpy_speedup"] = e["numpy_steps_per_s"] / numpy_one if numpy_one and e["numpy_steps_per_s"] else None
            e["adplace_over_numpy_time"] = (e["numpy_steps_per_s"] / e["steps_per_s"]
                                            if e["steps_per_s"] and e["numpy_steps_per_s"] else None)
        out[config] = per_config
    return out


def _fmt_num(x) -> str:
    return "-" if x is None else f"{x:.0f}"


def _fmt_x(x) -> str:
    return "-" if x is None else f"{x:.2f}x"


def _exact_text(entry: dict, key: str) -> str:
    if entry[f"{key}_exact"]:
        return "yes"
    return f"NO ({entry[f'{key}_inexact_samples']}/{entry['samples']}, lost <= {entry[f'{key}_lost_max']})"


def parse_args(argv) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="smoke run: fewer samples, processes and steps")
    parser.add_argument("--out", "--output", dest="out", default=None,
                        help="where to write the JSON results (default: benchmarks/results/concurrency.json; with "
                             "--quick, a file in the temp directory)")
    parser.add_argument("--baseline-src", default=None, metavar="PATH",
                        help="a source tree (holding adplace/) to measure as 'before', e.g. a git worktree of HEAD")
    parser.add_argument("--repetitions", type=int, default=None,
                        help="dispatch subprocesses per side (default 10; 2 with --quick)")
    parser.add_argument("--thread-repetitions", type=int, default=None,
                        help="threads subprocesses per side (default 3; 1 with --quick)")
    parser.add_argument("--worker", nargs=2, default=None, help=argparse.SUPPRESS)  # internal: PART JSON_PATH
    args = parser.parse_args(argv)
    if args.out is None:
        args.out = (os.path.join(tempfile.gettempdir(), "adplace-concurrency-quick.json") if args.quick else
                    os.path.join(ROOT, "benchmarks", "results", "concurrency.json"))
    if args.baseline_src is not None:
        args.baseline_src = os.path.abspath(args.baseline_src)
        if not os.path.isfile(os.path.join(args.baseline_src, "adplace", "__init__.py")):
            parser.error(f"--baseline-src {args.baseline_src} holds no adplace/__init__.py")
    return args


def main(argv=None) -> int:
    args = parse_args(argv)
    if args.worker:
        part, path = args.worker
        report = measure(args.quick, part)
        with open(path, "w") as fh:
            json.dump(report, fh)
        return 0

    settings = SETTINGS["quick" if args.quick else "full"]
    reps = {"dispatch": args.repetitions or settings["repetitions"],
            "threads": args.thread_repetitions or settings["thread_repetitions"]}
    sides = {"before": args.baseline_src, "after": ROOT} if args.baseline_src else {"after": ROOT}
    started = time.perf_counter()
    reports: dict[str, dict[str, list[dict]]] = {part: {side: [] for side in sides} for part in reps}
    with tempfile.TemporaryDirectory(prefix="adplace-concurrency-") as tmpdir:
        for part, count in reps.items():
            for rep in range(count):  # before, after, before, after, ...: drift hits both sides alike
                for side, src in sides.items():
                    print(f"  {part} [{rep + 1}/{count}] {side}: {src}", file=sys.stderr, flush=True)
                    reports[part][side].append(run_worker(src, args.quick, part, tmpdir, f"{part}-{side}{rep}"))

    dispatch = {side: summarise_dispatch(rs) for side, rs in reports["dispatch"].items()}
    threads = {side: summarise_threads(rs) for side, rs in reports["threads"].items()}
    compared = "before" in sides

    results = {"benchmarks": {"dispatch": {}, "threads": {}}}
    header = ("case", "numpy", "before", "after", "after/before", "target", "met?", "before/numpy", "after/numpy")
    rows = []
    for case in CASES:
        after = dispatch["after"][case]
        entry = {"after": after, "target_ratio_max": TARGET_RATIO.get(case)}
        ratio = met = None
        if compared:
            before = dispatch["before"][case]
            ratio = after["median_us"] / before["median_us"]
            pairs = [a / b for a, b in zip(after["per_process_us"], before["per_process_us"])]
            met = ratio <= TARGET_RATIO[case] if case in TARGET_RATIO else None
            entry.update(before=before, after_over_before=ratio, after_over_before_per_pair=pairs,
                         after_over_before_numpy_normalised=after["ratio_vs_numpy"] / before["ratio_vs_numpy"],
                         met=met)
        results["benchmarks"]["dispatch"][case] = entry
        rows.append((case, _fmt_time(after["numpy_median_us"]),
                     _fmt_time(dispatch["before"][case]["median_us"]) if compared else "-",
                     _fmt_time(after["median_us"]), f"{ratio:.3f}x" if compared else "-",
                     f"<= {TARGET_RATIO[case]}x" if case in TARGET_RATIO else "-",
                     "-" if met is None else ("yes" if met else "NO"),
                     f"{dispatch['before'][case]['ratio_vs_numpy']:.1f}x" if compared else "-",
                     f"{after['ratio_vs_numpy']:.1f}x"))

    t_header = ("model", "side", "threads", "steps/s", "per thread", "speed-up", "numpy steps/s", "numpy speed-up",
                "loss before", "loss after", "global_step exact", "locked counter exact", "errors")
    t_rows = []
    configs = list(threads["after"])
    for config in configs:
        results["benchmarks"]["threads"][config] = {side: threads[side].get(config) for side in sides}
        for side in sides:
            c = threads[side].get(config)
            if c is None:
                continue
            if c["hung_processes"]:
                t_rows.append((config, side, "-", f"HUNG in {c['hung_processes']} process(es)", *["-"] * 9))
            for n in THREADS:
                e = c[str(n)]
                if not e["samples"]:
                    continue
                t_rows.append((config, side, str(n), _fmt_num(e["steps_per_s"]), _fmt_num(e["per_thread_steps_per_s"]),
                               _fmt_x(e["speedup"]), _fmt_num(e["numpy_steps_per_s"]), _fmt_x(e["numpy_speedup"]),
                               f"{e['initial_loss']:.3g}",
                               f"{e['final_loss']:.3g}" + ("*" if e["stopped_early_samples"] else ""),
                               _exact_text(e, "global_step"), _exact_text(e, "locked_counter"), str(e["errors"])))

    print("dispatch overhead (median time of one call)")
    print_table(header, rows)
    print()
    print("Adam training steps on N threads sharing one session (the same total steps for every N)")
    print_table(t_header, t_rows)
    print()
    locked = {side: dispatch[side]["assign_locked"]["locked_over_unlocked"] for side in sides}
    print("assign_add locked/unlocked in the same process: "
          + ", ".join(f"{side} {v:.3f}x" for side, v in locked.items()))
    print("models: linear2 = y = w*x + b (Adam 0.1, 100 points); dense256 = X[64,256] @ W[256,256] + b (Adam 0.01); "
          "_blas1 = BLAS limited to 1 thread (threadpoolctl) while the threads train; total steps per N: "
          + ", ".join(f"{m} {k}" for m, k in settings["steps"].items()))
    for side in sides:
        for config, c in threads[side].items():
            for n in THREADS:
                err = c[str(n)]["first_error"]
                if err:
                    print(f"{side} {config} {n} threads, first error: {err}")
    if any(c[str(n)]["stopped_early_samples"] for side in sides for c in threads[side].values() for n in THREADS):
        print(f"* the threads stopped at the {settings['deadline_s']:g} s deadline before their total steps, in some "
              f"samples: that loss comes from fewer steps")
    if not all("dense256_blas1" in threads[side] for side in sides):
        print("threadpoolctl is not installed: the dense256_blas1 rows are missing (pip install threadpoolctl)")
    cpu_count = os.cpu_count()
    elapsed = time.perf_counter() - started
    print(f"processes per side, alternating {'before/after' if compared else ''}: {reps['dispatch']} (dispatch), "
          f"{reps['threads']} (threads); inside each, medians of {settings['samples']} samples (dispatch) / "
          f"{settings['thread_samples']} (threads); {cpu_count} CPU(s); total {elapsed:.0f} s")

    side_info = {}
    for side, src in sides.items():
        ordered = reports["dispatch"][side] + reports["threads"][side]  # in the order they ran
        digests = [r["adplace_source"]["sources_sha1"] for r in ordered]
        side_info[side] = {"src": src, "adplace_file": ordered[0]["adplace_file"],
                           "adplace_source": {**ordered[-1]["adplace_source"], "sources_sha1_at_start": digests[0]},
                           "sources_changed": len(set(digests)) > 1,
                           "process_elapsed_s": {part: [r["elapsed_s"] for r in reports[part][side]] for part in reps}}
        if side == "before" and side_info[side]["sources_changed"]:
            print("warning: the baseline's sources changed while the benchmark ran")
    results.update({
        "machine": {**machine_info(), "available_cpus": len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity")
                    else cpu_count, "switch_interval_s": reports["dispatch"]["after"][0]["switch_interval_s"]},
        "date": datetime.datetime.now().astimezone().isoformat(),
        "adplace_source": side_info["after"]["adplace_source"],  # write_results warns when it changed between processes
        "sides": side_info, "quick": args.quick, "processes_per_side": reps, "samples": settings["samples"],
        "thread_samples": settings["thread_samples"], "thread_counts": list(THREADS),
        "total_steps": settings["steps"], "thread_deadline_s": settings["deadline_s"], "elapsed_s": elapsed,
        "targets": {f"{case}_after_over_before_max": v for case, v in TARGET_RATIO.items()},
        "assign_locked_over_unlocked": locked,
        "table": [dict(zip(header, r)) for r in rows], "threads_table": [dict(zip(t_header, r)) for r in t_rows]})
    write_results(results, args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
