"""GPU benchmark (needs CuPy and an NVIDIA GPU): fused elementwise chains against the card's copy bandwidth, matmul
against cuBLAS, host->GPU transfers against a raw pinned copy, and per-op overhead against CuPy called directly.

    python benchmarks/gpu.py            # full run, writes benchmarks/results/gpu.json
    python benchmarks/gpu.py --quick    # smaller sizes, fewer samples (JSON to $TMPDIR)

Rows (every time is the median of several samples of one call followed by a device synchronisation; each row's
baseline is measured in the same run, alternating with adplace's samples):
  (a) fused     y = a chain of 16 elementwise float32 ops (sin, *c, +c, cos, ... with scalar constants) on 2^26
                elements (2^22 with --quick) held in a GPU variable, run as a target (nothing is fetched): one fused
                kernel. Reported as GB/s of compulsory traffic (read x once, write y once) against a device-to-device
                copy of the same array (`cupy.copyto`, also read once + written once): the bandwidth ceiling.
                Targets: >= 80% of the copy rate, and >= 8x faster than the same graph with fusion off
                (RewriterConfig(remapping=OFF): 16 kernels, each reading and writing the whole array).
  (b) matmul    8192x8192 float32 (2048 with --quick) `tf.matmul` of two GPU variables, run as a target, against
                `cupy.matmul` of the same arrays. Target: within 5%.
  (c) h2d       a 256 MB float32 array (32 MB with --quick) in pinned host memory (`adplace.pinned_empty`) fed to a
                placeholder on /gpu:0, consumed by a GPU op, against `ndarray.set` of the same pinned array on a
                stream. Target: within 10%.
  (d) tiny1000  1000 chained scalar adds on /gpu:0 (fusion off: one kernel per op), run as a target, against the
                same 1000 `cupy.add` calls in a Python loop. Target: at most 1.5x. The fused variant is reported too.
"""
from __future__ import annotations

import datetime
import os
import sys
import time

import numpy as np

import adplace as tf

try:  # run as a script (benchmarks/ is sys.path[0]) or imported as benchmarks.gpu
    from dispatch import _sources_digest, machine_info, parse_args, source_info, write_results
except ImportError:  # pragma: no cover - the package-style import
    from benchmarks.dispatch import _sources_digest, machine_info, parse_args, source_info, write_results

CHAIN = ("sin", "mul", "add", "cos", "mul", "sub", "tanh", "mul", "add", "exp", "mul", "sigmoid", "add", "square",
         "mul", "relu")  # 16 elementwise ops


def _timed(fns: dict, samples: int, sync) -> dict:
    """Median and min microseconds of each fn (called then synchronised), samples interleaved across fns."""
    times = {name: [] for name in fns}
    for fn in fns.values():  # warm-up: compile kernels, fill memory pools
        fn()
        sync()
    for _ in range(samples):
        for name, fn in fns.items():
            start = time.perf_counter()
            fn()
            sync()
            times[name].append((time.perf_counter() - start) * 1e6)
    return {name: {"median_us": float(np.median(t)), "min_us": float(np.min(t))} for name, t in times.items()}


def _chain(x):
    c = {"mul": 0.5, "add": 0.25, "sub": 0.125}
    for name in CHAIN:
        if name in c:
            x = {"mul": tf.multiply, "add": tf.add, "sub": tf.subtract}[name](x, c[name])
        else:
            x = {"sin": tf.sin, "cos": tf.cos, "tanh": tf.tanh, "exp": tf.exp, "sigmoid": tf.sigmoid,
                 "square": tf.square, "relu": tf.nn.relu}[name](x)
    return x


def _config(fuse: bool = True) -> tf.ConfigProto:
    config = tf.ConfigProto(allow_soft_placement=False)
    if not fuse:
        config.graph_options.rewrite_options.remapping = tf.RewriterConfig.OFF
    return config


def bench_fused(cp, n: int, samples: int) -> dict:
    x0 = np.random.default_rng(0).uniform(-1, 1, n).astype(np.float32)
    graph = tf.Graph()
    with graph.as_default(), tf.device("/gpu:0"):
        x = tf.Variable(x0, name="x")
        y = _chain(x)
        init = tf.global_variables_initializer()
    fused, unfused = tf.Session(graph=graph, config=_config(True)), tf.Session(graph=graph, config=_config(False))
    for sess in (fused, unfused):
        sess.run(init)
    np.testing.assert_allclose(fused.run(y), unfused.run(y), rtol=1e-4, atol=1e-5)
    fused_plan = fused.plan_for(y.op)
    src = cp.asarray(x0)
    dst = cp.empty_like(src)
    times = _timed({"fused": lambda: fused.run(y.op), "unfused": lambda: unfused.run(y.op),
                    "copy": lambda: cp.copyto(dst, src)}, samples, cp.cuda.runtime.deviceSynchronize)
    gbytes = 2 * x0.nbytes / 1e9
    rate = {k: gbytes / (v["median_us"] / 1e6) for k, v in times.items()}
    return {"elements": n, "ops": len(CHAIN), "times": times, "gb_per_s": rate,
            "fused_of_copy": rate["fused"] / rate["copy"],
            "fused_speedup": times["unfused"]["median_us"] / times["fused"]["median_us"],
            "fused_steps": len(fused_plan.kernels), "fused_groups": {str(k): v for k, v in fused_plan.fused.items()},
            "unfused_steps": len(unfused.plan_for(y.op).kernels)}


def bench_matmul(cp, n: int, samples: int) -> dict:
    rng = np.random.default_rng(1)
    a0, b0 = (rng.standard_normal((n, n), dtype=np.float32) for _ in range(2))
    graph = tf.Graph()
    with graph.as_default(), tf.device("/gpu:0"):
        a, b = tf.Variable(a0, name="a"), tf.Variable(b0, name="b")
        c = tf.matmul(a, b)
        init = tf.global_variables_initializer()
    sess = tf.Session(graph=graph, config=_config())
    sess.run(init)
    ga, gb = cp.asarray(a0), cp.asarray(b0)
    np.testing.assert_allclose(sess.run(c)[:4, :4], cp.asnumpy(cp.matmul(ga, gb))[:4, :4], rtol=1e-3, atol=1e-2)
    times = _timed({"adplace": lambda: sess.run(c.op), "cupy": lambda: cp.matmul(ga, gb)}, samples,
                   cp.cuda.runtime.deviceSynchronize)
    return {"n": n, "times": times, "ratio": times["adplace"]["median_us"] / times["cupy"]["median_us"],
            "tflops": 2 * n ** 3 / (times["adplace"]["median_us"] / 1e6) / 1e12}


def bench_h2d(cp, nbytes: int, samples: int) -> dict:
    n = nbytes // 4
    host = tf.pinned_empty((n,), np.float32)
    host[:] = np.arange(n, dtype=np.float32)
    graph = tf.Graph()
    with graph.as_default(), tf.device("/gpu:0"):
        p = tf.placeholder(tf.float32, [n])
        y = tf.identity(p)
    sess = tf.Session(graph=graph, config=_config())
    assert np.array_equal(sess.run(y, {p: host}), host)
    dst = cp.empty(n, np.float32)
    stream = cp.cuda.Stream(non_blocking=True)
    times = _timed({"adplace": lambda: sess.run(y.op, {p: host}), "cupy": lambda: dst.set(host, stream=stream)},
                   samples, cp.cuda.runtime.deviceSynchronize)
    rate = {k: nbytes / 1e9 / (v["median_us"] / 1e6) for k, v in times.items()}
    return {"bytes": nbytes, "times": times, "gb_per_s": rate,
            "ratio": times["adplace"]["median_us"] / times["cupy"]["median_us"]}


def bench_tiny(cp, n_ops: int, samples: int) -> dict:
    graph = tf.Graph()
    with graph.as_default(), tf.device("/gpu:0"):
        x = tf.Variable(np.float32(0), name="x")
        y = tf.identity(x)
        for _ in range(n_ops):
            y = y + 1.0
        init = tf.global_variables_initializer()
    unfused, fused = tf.Session(graph=graph, config=_config(False)), tf.Session(graph=graph, config=_config(True))
    for sess in (unfused, fused):
        sess.run(init)
        assert float(sess.run(y)) == float(n_ops)
    one, start = cp.float32(1), cp.zeros((), np.float32)

    def cupy_loop():
        z = start
        for _ in range(n_ops):
            z = cp.add(z, one)
        return z
    times = _timed({"adplace": lambda: unfused.run(y.op), "adplace_fused": lambda: fused.run(y.op),
                    "cupy": cupy_loop}, samples, cp.cuda.runtime.deviceSynchronize)
    return {"ops": n_ops, "times": times, "ratio": times["adplace"]["median_us"] / times["cupy"]["median_us"],
            "fused_ratio": times["adplace_fused"]["median_us"] / times["cupy"]["median_us"]}


def gpu_info(cp) -> dict:
    props = cp.cuda.runtime.getDeviceProperties(0)
    name = props["name"].decode() if isinstance(props["name"], bytes) else str(props["name"])
    return {"name": name, "compute_capability": f"{props['major']}.{props['minor']}",
            "memory_bytes": int(props["totalGlobalMem"]), "cupy": cp.__version__,
            "cuda_runtime": cp.cuda.runtime.runtimeGetVersion()}


def main(argv=None) -> int:
    args = parse_args(argv, "gpu", __doc__.splitlines()[0], "smaller arrays and fewer samples")
    try:
        import cupy as cp
        if not tf.config.cuda_gpus():
            raise RuntimeError(tf.config.why_no_cuda())
    except (ImportError, RuntimeError) as e:
        print(f"benchmarks/gpu.py needs an NVIDIA GPU and CuPy: {e}", file=sys.stderr)
        return 2
    quick = args.quick
    samples = 5 if quick else 15
    sources_at_start = _sources_digest(os.path.dirname(os.path.abspath(tf.__file__)))
    started = time.perf_counter()
    a = bench_fused(cp, 1 << (22 if quick else 26), samples)
    b = bench_matmul(cp, 2048 if quick else 8192, samples)
    c = bench_h2d(cp, (32 if quick else 256) << 20, samples)
    d = bench_tiny(cp, 1000, samples)
    rows = [
        ("(a) fused chain of 16", f"{a['gb_per_s']['fused']:.0f} GB/s", f"copy {a['gb_per_s']['copy']:.0f} GB/s",
         f"{a['fused_of_copy']:.0%} of copy", ">= 80%", a["fused_of_copy"] >= 0.8),
        ("    fused vs unfused", f"{a['times']['fused']['median_us']:.0f} us",
         f"unfused {a['times']['unfused']['median_us']:.0f} us", f"{a['fused_speedup']:.1f}x faster", ">= 8x",
         a["fused_speedup"] >= 8),
        ("(b) matmul", f"{b['times']['adplace']['median_us'] / 1e3:.2f} ms",
         f"cupy {b['times']['cupy']['median_us'] / 1e3:.2f} ms", f"{b['ratio']:.3f}x", "<= 1.05x", b["ratio"] <= 1.05),
        ("(c) host->GPU", f"{c['gb_per_s']['adplace']:.1f} GB/s", f"cupy {c['gb_per_s']['cupy']:.1f} GB/s",
         f"{c['ratio']:.3f}x time", "<= 1.10x", c["ratio"] <= 1.10),
        ("(d) 1000 tiny ops", f"{d['times']['adplace']['median_us'] / 1e3:.2f} ms",
         f"cupy {d['times']['cupy']['median_us'] / 1e3:.2f} ms", f"{d['ratio']:.2f}x", "<= 1.5x", d["ratio"] <= 1.5),
        ("    fused", f"{d['times']['adplace_fused']['median_us'] / 1e3:.2f} ms", "", f"{d['fused_ratio']:.2f}x", "-",
         None),
    ]
    info = gpu_info(cp)
    print(f"GPU: {info['name']} (compute capability {info['compute_capability']}), CuPy {info['cupy']}")
    header = ("benchmark", "adplace", "baseline", "ratio", "target", "met?")
    widths = [max(len(str(r[i] if i < 5 else "")) for r in [header, *rows]) + 2 for i in range(6)]
    print("".join(h.ljust(w) for h, w in zip(header, widths)))
    for r in rows:
        met = "-" if r[5] is None else ("yes" if r[5] else "NO")
        print("".join(str(x).ljust(w) for x, w in zip((*r[:5], met), widths)))
    results = {"gpu": info, "machine": machine_info(), "quick": quick, "samples": samples,
               "date": datetime.datetime.now().isoformat(timespec="seconds"),
               "seconds": round(time.perf_counter() - started, 1),
               "adplace_source": {**source_info(), "sources_sha1_at_start": sources_at_start},
               "benchmarks": {"fused_chain": a, "matmul": b, "h2d": c, "tiny1000": d},
               "table": [dict(zip(header, (*r[:5], r[5]))) for r in rows]}
    write_results(results, args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
