"""Dispatch benchmark: adplace's fixed per-run cost, per-op cost, a small model, and placement + planning at scale.

    python benchmarks/dispatch.py            # full run (a few minutes on 2 cores), writes benchmarks/results/dispatch.json
    python benchmarks/dispatch.py --quick    # smoke run: fewer samples, place+plan up to 10^5 ops only (JSON to $TMPDIR)
    python benchmarks/dispatch.py --out PATH # write the JSON elsewhere

Every timing is a MEDIAN over several samples, and every speed is a RATIO against hand-written NumPy timed in the same
process (samples of the two alternate, so machine noise hits both alike). Nothing here asserts an absolute time.

Rows:
  trivial     one sess.run(y, {x: v}) with y = tf.identity(x), x a float32[4] placeholder: the fixed cost of a run.
              NumPy: np.array(v, dtype=np.float32) then an identity function.
  chain1000   one sess.run of 1,000 chained elementwise ops (sin, cos, square in turn) on a fed float32[4] placeholder,
              after warm-up runs (the plan is compiled and tiered up to straight-line code). NumPy: the feed copy plus
              the same 1,000 calls, as a loop `for f in fns: x = f(x)` and as a generated straight-line function; the
              faster of the two is THE baseline (the JSON and the table say which).
  adam10      10 Adam training steps sess.run([train_op, loss], feeds) of the polynomial model on 1,000-element
              batches; NumPy: the feed copies, the forward pass, the hand-derived gradient and the Adam update, 10
              times (the two are checked to agree before timing).
  wide_matmul 200 independent float32 512x512 matmuls X @ W_i (W_i variables, X fed) summed with add_n, run with
              intra_op_parallelism_threads=1 (one BLAS thread per matmul, as TF runs them: "one thread each") and
              default inter-op threads. Baseline: the same loop in NumPy with BLAS limited to one thread
              (threadpoolctl). TF 1.x ran at 0.53x of that loop on a 2-core machine; target 0.6x. A second row gives
              ConfigProto() against NumPy with BLAS on every core (there both use all cores inside each matmul).
  place+plan N  a fresh session's placement of a prebuilt N-op graph (elementwise chains over placeholders and
              constants, ~1% variables, ops under /gpu:0, /gpu:1 (2 virtual GPUs) and /cpu:0) plus compiling the plan
              for the chains' final ops. Graph building is not timed. Reported as ops/second and as the growth ratio
              time(10N)/time(N).
"""
from __future__ import annotations

import argparse
import contextlib
import datetime
import functools
import gc
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np

import adplace as tf

try:  # run as a script (benchmarks/ is sys.path[0]) or imported as benchmarks.dispatch
    from peers.common import batch_ns
except ImportError:  # pragma: no cover - the package-style import
    from benchmarks.peers.common import batch_ns

NS = 1e-9
# Targets from the issue, and TF 1.x graph-mode ratios measured on a similar machine (reference only).
TARGETS = {"trivial": 50.0, "chain1000": 1.1, "adam10": 3.0, "wide_matmul": 0.6, "ops_per_s": 300_000.0,
           "growth": 11.0}
TF1_PEER = {"trivial": "440x", "chain1000": "0.91x (0.47x grappler)", "adam10": "12.5x", "wide_matmul": "0.53x"}
ADAM_ROW = "adam10"


# --- timing helpers ---------------------------------------------------------------------------------------------------
_batch_ns = batch_ns  # wall time of `calls` calls of fn(), the cyclic GC off meanwhile (peers/common.py)


def _calls_for(fn, target_s: float, cap: int) -> int:
    """Calls per sample so that one sample takes about target_s (at most cap)."""
    fn()
    per = max(_batch_ns(fn, 3) / 3, 1) * NS
    return max(1, min(cap, int(target_s / per)))


def compare(adplace_fn, numpy_fns: dict, samples: int, calls: int | None = None, target_s: float = 0.03,
            cap: int = 2000) -> dict:
    """Median per-call time (us) of adplace_fn and each NumPy fn; samples interleave them, in a rotating order.

    With calls=None the batch size is calibrated per benchmark (the slower side sets it) to about target_s a sample.
    """
    fns = {"adplace": adplace_fn, **numpy_fns}
    if calls is None:
        calls = min(_calls_for(fn, target_s, cap) for fn in fns.values())
    for fn in fns.values():  # warm-up
        _batch_ns(fn, max(1, calls // 10))
    times: dict[str, list[float]] = {name: [] for name in fns}
    names = list(fns)
    for i in range(samples):  # rotate the order each sample, so no side always runs first
        for name in names[i % len(names):] + names[:i % len(names)]:
            times[name].append(_batch_ns(fns[name], calls) / calls / 1000.0)
    return {"calls_per_sample": calls, "samples": samples,
            "median_us": {name: statistics.median(ts) for name, ts in times.items()},
            "min_us": {name: min(ts) for name, ts in times.items()}}


# --- (a) trivial ------------------------------------------------------------------------------------------------------
def bench_trivial(samples: int) -> dict:
    g = tf.Graph()
    with g.as_default():
        x = tf.placeholder(tf.float32, [4], name="x")
        y = tf.identity(x)
    sess = tf.Session(graph=g)
    v = np.arange(4, dtype=np.float32)
    feed = {x: v}
    assert np.array_equal(sess.run(y, feed), v)

    def identity(a):
        return a

    def numpy_trivial():
        return identity(np.array(v, dtype=np.float32))

    result = compare(lambda: sess.run(y, feed), {"numpy": numpy_trivial}, samples, calls=2000)
    sess.close()
    result["numpy_baseline"] = "numpy"
    return result


# --- (b) chain1000 ----------------------------------------------------------------------------------------------------
def bench_chain1000(samples: int) -> dict:
    n = 1000
    tf_ops, np_fns = [tf.sin, tf.cos, tf.square], [np.sin, np.cos, np.square]
    g = tf.Graph()
    with g.as_default():
        x = tf.placeholder(tf.float32, [4], name="x")
        t = x
        for i in range(n):
            t = tf_ops[i % 3](t)
        y = t
    sess = tf.Session(graph=g)
    v = np.linspace(0.1, 0.4, 4, dtype=np.float32)
    feed = {x: v}
    for _ in range(5):  # compile the plan and tier it up
        out = sess.run(y, feed)
    plan = sess.plan_for(y, feed)
    compiled_plan = sess._runs[next(iter(sess._runs))].plan
    fns = [np_fns[i % 3] for i in range(n)]

    def numpy_loop():
        a = np.array(v, dtype=np.float32)
        for f in fns:
            a = f(a)
        return a

    src = ["def numpy_straight(v):", "    a = np.array(v, dtype=np.float32)"]
    src += [f"    a = {('sin', 'cos', 'square')[i % 3]}(a)" for i in range(n)]
    src.append("    return a")
    namespace = {"np": np, "sin": np.sin, "cos": np.cos, "square": np.square}
    exec(compile("\n".join(src), "<numpy straight-line>", "exec"), namespace)  # noqa: S102 - fixed source
    numpy_straight = namespace["numpy_straight"]
    assert np.allclose(out, numpy_loop()) and np.allclose(out, numpy_straight(v))

    result = compare(lambda: sess.run(y, feed), {"numpy_loop": numpy_loop, "numpy_straight": lambda: numpy_straight(v)},
                     samples)
    med = result["median_us"]
    best = min(("numpy_loop", "numpy_straight"), key=lambda k: med[k])
    result["numpy_baseline"] = best
    result["plan_steps"] = len(plan.steps)
    result["plan_tiered_up"] = compiled_plan.is_compiled
    sess.close()
    return result


# --- (c) adam10: 10 Adam steps ------------------------------------------------------------------------------------------
ADAM = {"lr": 0.01, "beta1": 0.9, "beta2": 0.999, "epsilon": 1e-8}


def bench_adam10(samples: int) -> dict:
    """10 training steps sess.run([train_op, loss], feeds) vs the same forward, backward and Adam update in NumPy."""
    rng = np.random.default_rng(0)
    xs = rng.uniform(-1, 1, 1000).astype(np.float32)
    ys = (3 * xs * xs - 2 * xs + 0.5 + rng.normal(0, 0.1, 1000)).astype(np.float32)
    w0 = np.array([[0.1], [0.2], [0.3]], dtype=np.float32)
    g = tf.Graph()
    with g.as_default():
        x = tf.placeholder(tf.float32, [None], name="x")
        y = tf.placeholder(tf.float32, [None], name="y")
        w = tf.Variable(w0, name="w")
        f = tf.stack([tf.square(x), x, tf.ones_like(x)], 1)
        yhat = tf.squeeze(tf.matmul(f, w), 1)
        loss = tf.reduce_mean(tf.square(yhat - y))
        train_op = tf.train.AdamOptimizer(ADAM["lr"], ADAM["beta1"], ADAM["beta2"], ADAM["epsilon"]).minimize(loss)
        init = tf.global_variables_initializer()
    sess = tf.Session(graph=g)
    sess.run(init)
    feeds = {x: xs, y: ys}
    fetches = [train_op, loss]

    def adplace10():
        for _ in range(10):
            out = sess.run(fetches, feeds)[1]
        return out

    state = {}

    def numpy10():
        wa, m, v = state["w"], state["m"], state["v"]
        b1, b2, lr, eps = ADAM["beta1"], ADAM["beta2"], np.float32(ADAM["lr"]), np.float32(ADAM["epsilon"])
        for _ in range(10):
            xa, ya = np.array(xs, dtype=np.float32), np.array(ys, dtype=np.float32)
            fa = np.stack([np.square(xa), xa, np.ones_like(xa)], 1)
            r = np.squeeze(np.matmul(fa, wa), 1) - ya
            out = np.mean(np.square(r))
            grad = np.matmul(fa.T, (np.float32(2.0 / r.size) * r)[:, None])
            lr_t = lr * np.sqrt(np.float32(1 - state["b2p"])) / np.float32(1 - state["b1p"])
            m = m + (grad - m) * np.float32(1 - b1)
            v = v + (grad * grad - v) * np.float32(1 - b2)
            wa = wa - lr_t * m / (np.sqrt(v) + eps)
            state["b1p"], state["b2p"] = state["b1p"] * b1, state["b2p"] * b2
        state.update(w=wa, m=m, v=v)
        return out

    def reset_numpy():
        state.update(w=w0.copy(), m=np.zeros_like(w0), v=np.zeros_like(w0), b1p=ADAM["beta1"],
                     b2p=ADAM["beta2"])

    reset_numpy()
    assert np.allclose(adplace10(), numpy10(), rtol=1e-4), "adplace's Adam steps differ from NumPy's"
    assert np.allclose(sess.run(w), state["w"], rtol=1e-4, atol=1e-6)
    result = compare(adplace10, {"numpy": numpy10}, samples)
    sess.close()
    result["numpy_baseline"] = "numpy"
    return result


# --- (d) place + plan at scale ----------------------------------------------------------------------------------------
CHAIN_LEN = 100
DEVICES = (None, "/gpu:0", "/cpu:0", "/gpu:1")


def build_mixed_graph(n_ops: int):
    """A graph of about n_ops ops: chains of CHAIN_LEN elementwise ops, one variable per chain (~1% VariableV2 ops),
    chains cycling through no device / /gpu:0 / /cpu:0 / /gpu:1, each reading the previous chain's tail (a
    cross-device edge). Returns (graph, fetches, feed_dict)."""
    unary = (tf.sin, tf.cos, tf.square)
    g = tf.Graph()
    gc.disable()
    try:
        with g.as_default():
            phs = [tf.placeholder(tf.float32, [4], name=f"in{i}") for i in range(4)]
            consts = [tf.constant(np.full(4, i + 1, np.float32), name=f"c{i}") for i in range(4)]
            sources = phs + consts
            fetches, prev, chain = [], sources[0], 0
            while len(g._ops) < n_ops:
                dev = DEVICES[chain % len(DEVICES)]
                with tf.device(dev) if dev else contextlib.nullcontext():
                    var = tf.Variable(np.full(4, 0.5, np.float32), name=f"v{chain}")
                    t = sources[chain % len(sources)]
                    for k in range(CHAIN_LEN - 5):  # the Variable is 4 ops, the tail add 1
                        if k == 30:
                            t = tf.multiply(t, var)
                        elif k % 20 == 10:
                            t = tf.add(t, sources[(chain + k) % len(sources)])
                        else:
                            t = unary[k % 3](t)
                    t = tf.add(t, prev)
                fetches.append(t)
                prev, chain = t, chain + 1
    finally:
        gc.enable()
    feeds = {p: np.ones(4, np.float32) for p in phs}
    return g, fetches, feeds


def place_and_plan_once(g, fetches, feeds) -> dict:
    sess = tf.Session(graph=g)
    gc.collect()
    gc.disable()
    try:
        r0 = _rusage()
        t0 = time.perf_counter_ns()
        sess._place()
        t1 = time.perf_counter_ns()
        plan = sess.plan_for(fetches, feeds)
        t2 = time.perf_counter_ns()
        r1 = _rusage()
    finally:
        gc.enable()
    steps, transfers = len(plan.steps), plan.num_transfers
    del plan
    sess.close()
    del sess
    gc.collect()
    return {"total_us": (t2 - t0) / 1000.0, "place_us": (t1 - t0) / 1000.0, "plan_us": (t2 - t1) / 1000.0,
            "steps": steps, "transfers": transfers,
            "cpu_user_s": r1[0] - r0[0], "cpu_sys_s": r1[1] - r0[1], "page_faults": r1[2] - r0[2]}


def _rusage() -> tuple:
    """(user CPU s, system CPU s, minor page faults) of this process so far; zeros where unavailable."""
    try:
        import resource
    except ImportError:  # not on POSIX
        return (0.0, 0.0, 0)
    r = resource.getrusage(resource.RUSAGE_SELF)
    return (r.ru_utime, r.ru_stime, r.ru_minflt)


def bench_place_plan(n: int, repeats: int, long_s: float = 30.0) -> dict:
    t_build = time.perf_counter()
    g, fetches, feeds = build_mixed_graph(n)
    build_s = time.perf_counter() - t_build
    n_ops = len(g._ops)
    runs = [place_and_plan_once(g, fetches, feeds)]
    if runs[0]["total_us"] * 1e-6 > long_s:
        repeats = 1
    while len(runs) < repeats:
        runs.append(place_and_plan_once(g, fetches, feeds))
    del g, fetches, feeds
    gc.collect()
    med = {k: statistics.median(r[k] for r in runs) for k in ("total_us", "place_us", "plan_us")}
    cpu = {k: statistics.median(r[k] for r in runs) for k in ("cpu_user_s", "cpu_sys_s", "page_faults")}
    return {"n_target": n, "n_ops": n_ops, "repeats": len(runs), "build_s": build_s,
            "median_us": med, "all_total_us": [r["total_us"] for r in runs],
            "ops_per_s": n_ops / (med["total_us"] * 1e-6), "plan_steps": runs[0]["steps"],
            "transfers": runs[0]["transfers"], "cpu_median": cpu}


# --- (e) wide_matmul: 200 independent matmuls -------------------------------------------------------------------------
WIDE = {"n": 200, "size": 512}


def _blas_limit(threads: int):
    """A context factory limiting BLAS to `threads` threads (threadpoolctl), or None without threadpoolctl."""
    try:
        from threadpoolctl import ThreadpoolController
    except ImportError:
        return None
    controller = ThreadpoolController()
    return lambda: controller.limit(limits=threads, user_api="blas")


def bench_wide_matmul(samples: int) -> dict:
    """sess.run(add_n([X @ W_i for 200 variables W_i]), {X: x}) vs the same loop in NumPy, at two thread settings."""
    n, size = WIDE["n"], WIDE["size"]
    rng = np.random.default_rng(0)
    x = rng.standard_normal((size, size), dtype=np.float32)
    ws = [rng.standard_normal((size, size), dtype=np.float32) / size for _ in range(n)]
    g = tf.Graph()
    with g.as_default():
        xp = tf.placeholder(tf.float32, [size, size], name="x")
        total = tf.add_n([tf.matmul(xp, tf.Variable(w, name=f"w{i}")) for i, w in enumerate(ws)])
        init = tf.global_variables_initializer()
    sessions = {"default": tf.Session(graph=g),
                "intra1": tf.Session(graph=g, config=tf.ConfigProto(intra_op_parallelism_threads=1))}
    feed = {xp: x}

    def numpy_loop():
        a = np.array(x, dtype=np.float32)
        acc = a @ ws[0]
        for w in ws[1:]:
            acc += a @ w
        return acc

    limit = _blas_limit(1)

    def numpy_loop_1thread():
        with limit():
            return numpy_loop()

    runs = {}
    for key, sess in sessions.items():
        sess.run(init)
        np.testing.assert_allclose(sess.run(total, feed), numpy_loop(), rtol=1e-3, atol=1e-3)
        runs[key] = functools.partial(sess.run, total, feed)
    numpy_fns = {"numpy": numpy_loop}
    if limit is not None:
        numpy_fns["numpy_1thread"] = numpy_loop_1thread
    result = compare(runs["intra1"], {"adplace_default": runs["default"], **numpy_fns}, samples, calls=1)
    result["modes"] = {}
    for key, sess in sessions.items():
        plan = sess.plan_for(total, feed)
        result["modes"][key] = {"mode": plan.mode, "prediction_ns": plan.prediction, "runs": plan.runs}
        sess.close()
    result["numpy_baseline"] = "numpy_1thread" if limit is not None else "numpy"
    return result


# --- report -----------------------------------------------------------------------------------------------------------
def print_table(header: list, rows: list) -> None:
    """Rows as left-aligned columns under `header` and a rule, as every benchmark here prints them."""
    widths = [max(len(str(row[i])) for row in rows + [header]) for i in range(len(header))]
    line = "  ".join("{:<%d}" % w for w in widths)
    print(line.format(*header).rstrip())
    print("  ".join("-" * w for w in widths))
    for row in rows:
        print(line.format(*row).rstrip())


def _fmt_time(us: float) -> str:
    if us < 1000:
        return f"{us:.2f} us"
    if us < 1e6:
        return f"{us / 1000:.2f} ms"
    return f"{us / 1e6:.2f} s"


def _fmt_rate(ops: float) -> str:
    return f"{ops / 1e6:.2f}M ops/s" if ops >= 1e6 else f"{ops / 1e3:.0f}k ops/s"


def source_info() -> dict:
    """The adplace commit measured and whether its sources had uncommitted changes (read-only git queries)."""
    import subprocess
    root = os.path.dirname(os.path.dirname(os.path.abspath(tf.__file__)))
    try:
        head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=root, capture_output=True, text=True,
                              timeout=10).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--", "adplace"], cwd=root, capture_output=True,
                               text=True, timeout=10).stdout.split("\n")
        info = {"commit": head or None, "uncommitted": [line[3:] for line in dirty if line.strip()]}
    except (OSError, subprocess.SubprocessError):
        info = {"commit": None, "uncommitted": None}
    info["sources_sha1"] = _sources_digest(os.path.dirname(os.path.abspath(tf.__file__)))
    return info


def _sources_digest(package_dir: str) -> str:
    """SHA-1 over adplace's .py files (path and content), naming the exact sources measured, edits included."""
    import hashlib
    digest = hashlib.sha1()
    for root, dirs, files in os.walk(package_dir):
        dirs.sort()
        for name in sorted(files):
            if name.endswith(".py"):
                path = os.path.join(root, name)
                digest.update(os.path.relpath(path, package_dir).encode())
                with open(path, "rb") as fh:
                    digest.update(fh.read())
    return digest.hexdigest()


def machine_info() -> dict:
    return {"platform": platform.platform(), "machine": platform.machine(), "processor": platform.processor(),
            "python": sys.version.split()[0], "python_impl": platform.python_implementation(),
            "numpy": np.__version__, "adplace": getattr(tf, "__version__", "?"), "cpu_count": os.cpu_count()}


def run_start() -> tuple:
    """(the adplace sources' digest, the clock) as a benchmark starts; run_fields(start, quick) stamps its JSON."""
    return _sources_digest(os.path.dirname(os.path.abspath(tf.__file__))), time.perf_counter()


def run_fields(start: tuple, quick: bool) -> dict:
    """The fields a benchmark's JSON carries about its run: machine, quick, adplace_source (with the sources' digest
    at the start, which write_results checks), wall_s and date."""
    return {"machine": machine_info(), "quick": quick,
            "adplace_source": {**source_info(), "sources_sha1_at_start": start[0]},
            "wall_s": time.perf_counter() - start[1],
            "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")}


def stop_worker(proc, last_line: str, timeout_s: float = 30) -> None:
    """End a benchmark's worker process: `last_line` on its stdin, then a wait; killed if that fails or times out."""
    try:
        proc.stdin.write(last_line)
        proc.stdin.flush()
        proc.wait(timeout=timeout_s)
    except (OSError, subprocess.TimeoutExpired):
        proc.kill()
        proc.wait()


def write_results(results: dict, path: str) -> None:
    """Write a benchmark's JSON, warning when adplace's sources changed while it ran."""
    source = results["adplace_source"]
    if source["sources_sha1"] != source["sources_sha1_at_start"]:
        print("warning: adplace's sources changed while the benchmark ran; rerun for numbers of one version")
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    with open(path, "w") as fh:
        json.dump(results, fh, indent=2)
        fh.write("\n")
    print(f"wrote {path}")


def parse_args(argv, name: str, description: str, quick_help: str) -> argparse.Namespace:
    """A benchmark's --quick and --out; --out defaults to benchmarks/results/<name>.json, or with --quick to a file in
    the temp directory, so a smoke run never overwrites the full results."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--quick", action="store_true", help=quick_help)
    parser.add_argument("--out", default=None, help=f"where to write the JSON results (default: "
                        f"benchmarks/results/{name}.json; with --quick, a file in the temp directory)")
    args = parser.parse_args(argv)
    if args.out is None:
        args.out = (os.path.join(tempfile.gettempdir(), f"adplace-{name}-quick.json") if args.quick else
                    os.path.join(os.path.dirname(os.path.abspath(__file__)), "results", f"{name}.json"))
    return args


def main(argv=None) -> int:
    args = parse_args(argv, "dispatch", __doc__.splitlines()[0], "fewer samples; place+plan up to 10^5 ops only")

    samples = 5 if args.quick else 15
    sizes = (10_000, 100_000) if args.quick else (10_000, 100_000, 1_000_000)
    repeats = {10_000: 3, 100_000: 2} if args.quick else {10_000: 7, 100_000: 7, 1_000_000: 3}
    started = time.perf_counter()
    sources_at_start = _sources_digest(os.path.dirname(os.path.abspath(tf.__file__)))

    previous_gpus = tf.config.virtual_gpu_count()
    tf.config.set_virtual_gpus(2)
    try:
        micro = {"trivial": bench_trivial(samples), "chain1000": bench_chain1000(samples),
                 "adam10": bench_adam10(samples), "wide_matmul": bench_wide_matmul(3 if args.quick else 7)}
        scale = {n: bench_place_plan(n, repeats[n]) for n in sizes}
    finally:
        tf.config.set_virtual_gpus(previous_gpus)

    rows = []  # benchmark, adplace, numpy, ratio, target, peer, met
    results = {"benchmarks": {}}
    for key, label in (("trivial", "trivial"), ("chain1000", "chain1000"), ("adam10", ADAM_ROW)):
        r = micro[key]
        base = r["numpy_baseline"]
        ours, theirs = r["median_us"]["adplace"], r["median_us"][base]
        ratio = ours / theirs
        met = ratio <= TARGETS[key]
        numpy_text = _fmt_time(theirs) + (f" ({base.split('_')[1]})" if key == "chain1000" else "")
        rows.append((label, _fmt_time(ours), numpy_text, f"{ratio:.2f}x", f"<= {TARGETS[key]:g}x", TF1_PEER[key],
                     "yes" if met else "NO"))
        entry = {"adplace_median_us": ours, "numpy_median_us": theirs, "ratio": ratio, "numpy_baseline": base,
                 "target_ratio_max": TARGETS[key], "tf1_peer_ratio": TF1_PEER[key], "met": met,
                 "calls_per_sample": r["calls_per_sample"], "samples": r["samples"],
                 "all_medians_us": r["median_us"], "all_min_us": r["min_us"],
                 "ratios_vs_each_numpy": {k: ours / v for k, v in r["median_us"].items() if k != "adplace"}}
        if key == "chain1000":
            entry["plan_steps"], entry["plan_tiered_up"] = r["plan_steps"], r["plan_tiered_up"]
        if key == "adam10":
            entry["note"] = "one sample = 10 Adam steps sess.run([train_op, loss], feeds)"
        results["benchmarks"][label] = entry
    wide = micro["wide_matmul"]
    med = wide["median_us"]
    base = wide["numpy_baseline"]
    ratio = med["adplace"] / med[base]
    rows.append(("wide_matmul", _fmt_time(med["adplace"]), _fmt_time(med[base]) + " (1 BLAS thread)"
                 if base == "numpy_1thread" else _fmt_time(med[base]), f"{ratio:.2f}x", "<= 0.6x",
                 TF1_PEER["wide_matmul"], "yes" if ratio <= TARGETS["wide_matmul"] else "NO"))
    rows.append(("  default config", _fmt_time(med["adplace_default"]), _fmt_time(med["numpy"]) + " (BLAS default)",
                 f"{med['adplace_default'] / med['numpy']:.2f}x", "-", "-", "-"))
    results["benchmarks"]["wide_matmul"] = {
        "adplace_median_us": med["adplace"], "numpy_median_us": med[base], "ratio": ratio, "numpy_baseline": base,
        "target_ratio_max": TARGETS["wide_matmul"], "tf1_peer_ratio": TF1_PEER["wide_matmul"],
        "met": ratio <= TARGETS["wide_matmul"], "samples": wide["samples"], "all_medians_us": med,
        "all_min_us": wide["min_us"], "modes": wide["modes"],
        "ratios_vs_each_numpy": {f"{a}/{b}": med[a] / med[b] for a in ("adplace", "adplace_default")
                                 for b in med if b.startswith("numpy")},
        "note": "adplace = intra_op_parallelism_threads=1 (one BLAS thread per matmul, TF's 'one thread each'), "
                "default inter-op threads; adplace_default = ConfigProto(). numpy_1thread = the same loop with "
                "BLAS limited to one thread; numpy = BLAS on every core."}

    prev = None
    for n in sizes:
        s = scale[n]
        label = f"place+plan {n:.0e}".replace("e+0", "e")
        total = s["median_us"]["total_us"]
        met = s["ops_per_s"] >= TARGETS["ops_per_s"]
        rows.append((label, _fmt_time(total), "-", _fmt_rate(s["ops_per_s"]), ">= 300k ops/s", "-",
                     "yes" if met else "NO"))
        entry = {"n_ops": s["n_ops"], "repeats": s["repeats"], "median_us": s["median_us"],
                 "all_total_us": s["all_total_us"], "ops_per_s": s["ops_per_s"], "met_ops_per_s": met,
                 "graph_build_s_untimed": s["build_s"], "cpu_median": s["cpu_median"], "plan_steps": s["plan_steps"], "transfers": s["transfers"]}
        if prev is not None:
            p = scale[prev]
            growth = total / p["median_us"]["total_us"]
            op_ratio = s["n_ops"] / p["n_ops"]
            met_g = growth <= TARGETS["growth"] * op_ratio / 10
            rows.append((f"  growth {prev:.0e}->{n:.0e}".replace("e+0", "e"), "-", "-", f"{growth:.2f}x",
                         "<= 11x", "-", "yes" if met_g else "NO"))
            entry["growth_vs_previous"] = growth
            entry["ops_ratio_vs_previous"] = op_ratio
            entry["met_growth"] = met_g
        results["benchmarks"][label] = entry
        prev = n

    header = ["benchmark", "adplace median", "numpy median", "ratio", "target", "TF1 peer", "met?"]
    print_table(header, rows)
    notes = [f"chain1000 baseline: the faster of a NumPy loop ({_fmt_time(micro['chain1000']['median_us']['numpy_loop'])})"
             f" and straight-line code ({_fmt_time(micro['chain1000']['median_us']['numpy_straight'])}): "
             f"{micro['chain1000']['numpy_baseline']}; plan tiered up: {micro['chain1000']['plan_tiered_up']}"]
    for n in sizes:
        s = scale[n]
        notes.append(f"place+plan {s['n_ops']} ops: place {_fmt_time(s['median_us']['place_us'])}, plan "
                     f"{_fmt_time(s['median_us']['plan_us'])} (CPU user {s['cpu_median']['cpu_user_s']:.2f} s, "
                     f"sys {s['cpu_median']['cpu_sys_s']:.2f} s, {s['cpu_median']['page_faults']:.0f} page faults), "
                     f"{s['repeats']} repeat(s), {s['transfers']} transfers, "
                     f"graph build {s['build_s']:.1f} s (untimed)")
    print()
    for note in notes:
        print(note)
    elapsed = time.perf_counter() - started
    print(f"medians over {samples} samples (micro) / per-size repeats (place+plan); total {elapsed:.0f} s")

    results.update({"machine": machine_info(), "date": datetime.datetime.now().astimezone().isoformat(),
                    "adplace_source": {**source_info(), "sources_sha1_at_start": sources_at_start}, "quick": args.quick, "samples": samples,
                    "repeats": {str(n): scale[n]["repeats"] for n in sizes}, "elapsed_s": elapsed,
                    "targets": TARGETS, "tf1_peer": TF1_PEER, "table": [dict(zip(header, r)) for r in rows]})
    write_results(results, args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
