"""Speed against NumPy, TensorFlow and JAX: every row of issue #24 for the peers installed, in one run.

    python benchmarks/speed.py                  # full run (a few minutes on 2 cores); writes benchmarks/results/
                                                # speed.json and speed.md (the table in Markdown)
    python benchmarks/speed.py --quick          # smoke run (seconds to a minute): smaller rows, fewer samples; its
                                                # JSON (and .md) go to the temp directory unless --out is given
    python benchmarks/speed.py --out PATH       # write the JSON (and PATH with .md) elsewhere
    python benchmarks/speed.py --peers none     # adplace and NumPy only (also: --peers tf, --peers jax)
    python benchmarks/speed.py --rows trivial,tower_fit

Contestants: adplace and hand-written NumPy (peers/numpy_rows.py) in this process; TensorFlow 2.x `compat.v1` graph
mode (peers/tf_peer.py, the same graphs as adplace's: peers/graph_rows.py) and JAX `jit` (peers/jax_peer.py) each
in a worker process of its own, so their thread pools never share a process with adplace. A peer that is not
installed is skipped (the table says so). Every contestant first runs a few steps from the same seeded start and
reports the values (outputs, trained state); they must agree with NumPy's to the row's tolerance before timing.
Then rounds alternate the contestants (the order rotates each round), each taking a few samples of a calibrated
batch of calls per round (GC off); a contestant's number is the median of all its samples, in microseconds a call.

Rows: trivial (c = a + b on fed float32[4]), tower_fit (the seed's make_parallel polynomial fit over /gpu:0 and
/gpu:1, Adam 0.1, colocate_gradients_with_ops; one step on a fresh 100-sample batch), opt_* (one dense update of a
float32 10^6 variable on a fed gradient per TF1 optimizer, and Adagrad on 1,000 rows of a 100,000 x 64 table),
chain1000 (1,000 sin/cos/square on float32[4]) and chain1000_arith (1,000 mul/add/sub by constants on
float32[4096]), mlp_adam (benchmarks/mlp_step.py's 784-512-512-10 Adam step, default threads and one thread), and
on a CUDA GPU with CuPy (benchmarks/gpu.py): a fused 16-op chain over 2^26 float32 against a device-to-device copy,
and the MLP step. Targets are issue #24's; nothing here asserts a time.
"""
from __future__ import annotations

import argparse
import contextlib
import datetime
import importlib.metadata
import importlib.util
import json
import os
import platform
import select
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np

import adplace as tf

try:  # run as a script (benchmarks/ is sys.path[0]) or imported as benchmarks.speed
    from dispatch import _fmt_time, _sources_digest, parse_args, print_table, source_info, write_results
    from peers import common, graph_rows, numpy_rows
except ImportError:  # pragma: no cover - the package-style import
    from benchmarks.dispatch import _fmt_time, _sources_digest, parse_args, print_table, source_info, write_results
    from benchmarks.peers import common, graph_rows, numpy_rows

HERE = os.path.dirname(os.path.abspath(__file__))
PEERS = {"tf": ("tensorflow", "tf_peer.py"), "jax": ("jax", "jax_peer.py")}
ROWS = ("trivial", "tower_fit", *(f"opt_{name}" for name in common.OPTIMIZERS), "opt_adagrad_sparse", "chain1000",
        "chain1000_arith", "fusion_chain", "mlp_adam", "mlp_adam_1thread", "gpu_fused_chain", "gpu_mlp")
# Issue #24's targets: adplace's time at most `numpy`x NumPy's, `tf`x TF's, `best_peer`x the faster of TF and JAX;
# the GPU chain at least `of_copy` of the copy's bandwidth.
TARGETS = {"trivial": {"numpy": 3.0}, "tower_fit": {"numpy": 3.0, "tf": 0.5},
           "mlp_adam": {"best_peer": 1.0}, "mlp_adam_1thread": {"best_peer": 1.0},
           "chain1000": {"numpy": 0.3}, "chain1000_arith": {"numpy": 0.3}, "gpu_fused_chain": {"of_copy": 0.8}}
# Agreement before timing: (rtol, atol) per row family, and how many steps the check runs.
TOLERANCE = {"trivial": (1e-6, 0.0), "tower_fit": (1e-3, 1e-4), "opt": (1e-4, 1e-6), "opt_sparse": (1e-4, 1e-6),
             "chain1000": (1e-3, 1e-5), "chain1000_arith": (1e-4, 1e-5)}
CHECK_STEPS = {"tower_fit": 5}
REPLY_TIMEOUT_S = 900


# --- contestants ------------------------------------------------------------------------------------------------------
class Local:
    """A contestant in this process (adplace or NumPy), behind the same calls as a Remote one."""

    def __init__(self, name: str, make):
        self.name, self._make, self.current = name, make, None

    def open(self, row: str, params: dict, check_steps: int) -> dict:
        self.current = self._make(row, params)
        return {"check": self.current.check(check_steps), "info": self.current.info}

    def calibrate(self, target_s: float, cap: int) -> int:
        return self.current.calibrate(target_s, cap)

    def measure(self, calls: int, samples: int) -> list[float]:
        return self.current.measure(calls, samples)

    def settle(self) -> dict:
        """Lets the contestant finish optimising in the background after its warm-up (adplace's CPU fusion
        compiles fused loops on a thread of its own); what it reports about itself then."""
        return getattr(self.current, "settle", dict)()

    def close_row(self) -> None:
        if self.current is not None:
            self.current.close()
            self.current = None


class Remote:
    """A peer worker process (peers/<script>) answering common.serve's JSON requests on its stdin/stdout."""

    def __init__(self, name: str, script: str, args: tuple = (), env: dict | None = None):
        self.name = name
        self.stderr = tempfile.TemporaryFile("w+")  # a file: a chatty peer never blocks on a full pipe
        env = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3", "CUDA_VISIBLE_DEVICES": "", "JAX_PLATFORMS": "cpu",
               **(env or {})}
        self.proc = subprocess.Popen([sys.executable, os.path.join(HERE, "peers", script), *args], env=env,
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self.stderr, text=True)

    def request(self, **request) -> dict:
        self.proc.stdin.write(json.dumps(request) + "\n")
        self.proc.stdin.flush()
        ready, _, _ = select.select([self.proc.stdout], [], [], REPLY_TIMEOUT_S)
        line = self.proc.stdout.readline() if ready else ""
        if not line:
            raise RuntimeError(f"{self.name} worker {'timed out' if not ready else 'died'}: {self.stderr_tail()}")
        reply = json.loads(line)
        if "error" in reply:
            raise RuntimeError(reply["error"])
        return reply

    def stderr_tail(self) -> str:
        self.stderr.seek(0)
        return self.stderr.read()[-1500:]

    def open(self, row: str, params: dict, check_steps: int) -> dict:
        return self.request(op="open", row=row, params=params, check_steps=check_steps)

    def calibrate(self, target_s: float, cap: int) -> int:
        return self.request(op="calibrate", target_s=target_s, cap=cap)["calls"]

    def measure(self, calls: int, samples: int) -> list[float]:
        return self.request(op="measure", calls=calls, samples=samples)["us"]

    def settle(self) -> dict:
        return {}

    def close_row(self) -> None:
        with contextlib.suppress(RuntimeError, OSError):
            self.request(op="close")

    def quit(self) -> None:
        with contextlib.suppress(OSError):
            self.proc.stdin.close()
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.stderr.close()


def start_peers(wanted: list[str]) -> tuple[dict, dict]:
    """({peer: Remote} for the wanted peers installed and started, {peer: why not} for the others)."""
    started, missing = {}, {}
    for peer in wanted:
        package, script = PEERS[peer]
        if importlib.util.find_spec(package) is None:
            missing[peer] = "not installed"
            continue
        remote = Remote(peer, script)
        try:
            remote.info = remote.request(op="info")
            started[peer] = remote
        except RuntimeError as exc:
            remote.quit()
            missing[peer] = f"failed to start: {exc}"
    return started, missing


@contextlib.contextmanager
def virtual_gpus(n: int):
    """adplace with n virtual GPUs meanwhile (the tower fit's /gpu:0 and /gpu:1)."""
    previous = tf.config.virtual_gpu_count()
    tf.config.set_virtual_gpus(n)
    try:
        yield
    finally:
        tf.config.set_virtual_gpus(previous)


def adplace_settle(contestant) -> dict:
    """Waits for adplace's background CPU fusion (where this adplace has it) and says how the row's plan runs."""
    waited = None
    with contextlib.suppress(ImportError):
        from adplace.runtime import fusion
        if hasattr(fusion, "wait_cpu_fusion"):
            start = time.perf_counter()
            fusion.wait_cpu_fusion(120)
            waited = time.perf_counter() - start
    plan = contestant.session.plan_for(*contestant.run_args)
    return {"plan_steps": len(plan.kernels), "fused_groups": len(getattr(plan, "fused", {})),
            "mode": getattr(plan, "mode", None), "waited_for_fusion_s": waited}


# --- one row ----------------------------------------------------------------------------------------------------------
def run_row(row: str, contestants: dict, p: dict, timing: dict) -> dict:
    """Check every contestant's values against NumPy's, then time them in alternating rounds; the row's JSON entry."""
    family = common.kind(row)
    rtol, atol = TOLERANCE[family]
    steps = CHECK_STEPS.get(family, 2)
    entry = {"params": p, "tolerance": {"rtol": rtol, "atol": atol}, "check_steps": steps, "check": {},
             "errors": {}, "info": {}}
    checks, live = {}, {}
    for name, contestant in contestants.items():
        try:
            opened = contestant.open(row, p, steps)
        except Exception as exc:  # noqa: BLE001 - a contestant that cannot run the row is reported, not fatal
            entry["errors"][name] = f"{type(exc).__name__}: {exc}"[:500]
            contestant.close_row()
            continue
        checks[name], live[name] = opened["check"], contestant
        if opened.get("info"):
            entry["info"][name] = opened["info"]
    try:
        if "numpy" not in checks:
            raise RuntimeError(f"{row}: the NumPy baseline failed: {entry['errors'].get('numpy')}")
        for name in checks:
            err = common.max_error(checks[name], checks["numpy"], rtol, atol)
            entry["check"][name] = {"max_error": err, "agree": err <= 1.0}
        calls = {name: c.calibrate(timing["target_s"], timing["cap"]) for name, c in live.items()}
        for name, contestant in live.items():  # warm-up: caches, memory pools, adplace's tiered-up or fused plans
            contestant.measure(calls[name], 2)
            settled = contestant.settle()
            if settled:
                entry["info"].setdefault(name, {}).update(settled)
            contestant.measure(max(1, calls[name] // 5), 1)
        times: dict[str, list[float]] = {name: [] for name in live}
        round_medians: dict[str, list[float]] = {name: [] for name in live}
        names = list(live)
        for r in range(timing["rounds"]):
            for name in names[r % len(names):] + names[:r % len(names)]:
                us = live[name].measure(calls[name], timing["samples"])
                times[name] += us
                round_medians[name].append(statistics.median(us))
    finally:
        for contestant in live.values():
            contestant.close_row()
    entry.update(calls_per_sample=calls, samples=len(times["numpy"]),
                 median_us={name: statistics.median(ts) for name, ts in times.items()},
                 min_us={name: min(ts) for name, ts in times.items()}, round_medians_us=round_medians)
    return entry


def run_mlp(threads: str, peers: list[str], timing: dict, quick: bool) -> dict:
    """mlp_step.measure (adplace, TF and JAX, interleaved; it checks their first losses agree) with the hand-written
    NumPy step timed in this process right before and right after it (half the samples each)."""
    try:
        import mlp_step
    except ImportError:
        try:
            from benchmarks import mlp_step
        except ImportError:
            return {"skipped": "benchmarks/mlp_step.py is missing"}
    data = mlp_step.make_data()
    numpy_step = numpy_rows.make_mlp(data, threads, mlp_step.LR, mlp_step.BETA1, mlp_step.BETA2, mlp_step.EPS)
    sess, adplace_step = mlp_step.build_graph_step(tf, data, threads)
    losses = {"numpy": [float(numpy_step.step()) for _ in range(3)], "adplace": [float(adplace_step()) for _ in range(3)]}
    sess.close()
    first_numpy = losses["numpy"][0]
    if not np.allclose(losses["numpy"], losses["adplace"], rtol=1e-4):  # the 2nd and 3rd follow two Adam updates
        return {"skipped": f"NumPy's losses over 3 steps differ from adplace's: {losses}"}
    samples = timing["rounds"] * timing["samples"]
    calls = numpy_step.calibrate(0.03 if quick else 0.1, timing["cap"])
    numpy_us = numpy_step.measure(calls, samples // 2)
    try:
        result = mlp_step.measure(samples, threads, 0.03 if quick else 0.1, peers=peers)
    except AssertionError as exc:  # a peer's first loss differs from adplace's
        return {"skipped": f"values differ: {exc}"}
    except RuntimeError as exc:  # a peer process failed
        return {"skipped": f"mlp_step.py failed: {exc}"[:500]}
    numpy_us += numpy_step.measure(calls, samples - samples // 2)
    first = result.pop("first_loss")
    rtol, atol = 1e-4, 1e-6
    check = {name: {"max_error": abs(v - first_numpy) / (atol + rtol * abs(first_numpy))} for name, v in first.items()}
    for c in check.values():
        c["agree"] = c["max_error"] <= 1.0
    check["numpy"] = {"max_error": 0.0, "agree": True}
    names = {"tensorflow": "tf", "jax": "jax", "adplace": "adplace"}
    median = {names[k]: v for k, v in result.items() if k in names}
    median["numpy"] = statistics.median(numpy_us)
    return {"params": {"sizes": mlp_step.SIZES, "batch": mlp_step.BATCH, "threads": threads},
            "check": {names.get(k, k): v for k, v in check.items()}, "first_loss": {**first, "numpy": first_numpy},
            "losses_over_3_steps": losses,
            "median_us": median, "min_us": {names[k]: v for k, v in result["min_us"].items()},
            "calls_per_sample": {"adplace": result["steps_per_sample"], "numpy": calls},
            "samples": result["samples"], "errors": {},
            "note": "adplace, TF and JAX interleaved by benchmarks/mlp_step.py (its own TF/JAX worker processes; "
                    "one thread: ConfigProto(1, 1), XLA_FLAGS and JAX pinned to one CPU); NumPy timed in this "
                    "process just before and after (BLAS limited to one thread for threads=1)"}


def run_fusion_chain(samples: int) -> dict:
    """benchmarks/fusion_chain.py's rows (adplace fused and unfused, NumPy's loop, Numba's compile times: its own
    chains and samples), run as a script of its own (it starts with a cold compile cache), one row a chain."""
    script = os.path.join(HERE, "fusion_chain.py")
    if not os.path.exists(script):
        return {"fusion_chain": {"skipped": "benchmarks/fusion_chain.py is missing"}}
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "fusion_chain.json")
        done = subprocess.run([sys.executable, script, "--samples", str(samples), "--json", path],
                              capture_output=True, text=True, timeout=REPLY_TIMEOUT_S)
        if done.returncode != 0 or not os.path.exists(path):
            why = (done.stdout.strip().splitlines() or ["no output"])[-1] if done.returncode == 0 else done.stderr
            return {"fusion_chain": {"skipped": f"fusion_chain.py: {why[-400:]}"}}
        with open(path) as fh:
            result = json.load(fh)
    rows = {}
    for chain, r in result.items():
        if not isinstance(r, dict) or "median_us" not in r:
            continue
        med = r["median_us"]
        rows[f"fusion_chain {chain}"] = {
            "median_us": {"adplace": med["adplace_fused"], "numpy": med["numpy_loop"]},
            "adplace_unfused_us": med["adplace_unfused"], "compile_s": r["compile_s"],
            "fused_groups": r["fused_groups"], "target": TARGETS["chain1000"],
            "check": {"adplace": {"agree": True, "max_error": None}}, "errors": {},
            "source": "benchmarks/fusion_chain.py (checks adplace fused and unfused against NumPy itself)"}
    return rows


def run_gpu(samples: int, quick: bool) -> dict:
    """The GPU rows through benchmarks/gpu.py's functions, or why they were skipped."""
    try:
        import cupy as cp
        if not tf.config.cuda_gpus():
            raise ImportError("no CUDA device")
    except ImportError as exc:
        reason = f"no CuPy/CUDA GPU here ({exc})"
        return {"gpu_fused_chain": {"skipped": reason}, "gpu_mlp": {"skipped": reason}}
    try:
        import gpu
    except ImportError:
        from benchmarks import gpu
    fused = gpu.bench_fused(cp, 2 ** 22 if quick else 2 ** 26, samples)
    out = {"gpu_fused_chain": {**fused, "median_us": {"adplace": fused["times"]["fused"]["median_us"]},
                               "of_copy": fused["fused_of_copy"]}}
    try:
        import mlp_step
    except ImportError:
        out["gpu_mlp"] = {"skipped": "benchmarks/mlp_step.py is missing"}
        return out
    with tf.device("/gpu:0"):
        sess, step = mlp_step.build_graph_step(tf, mlp_step.make_data(), "default")
    contestant = common.Contestant(step, close=sess.close)
    calls = contestant.calibrate(0.05, 200)
    out["gpu_mlp"] = {"median_us": {"adplace": statistics.median(contestant.measure(calls, samples))},
                      "note": "adplace's MLP Adam step with every op on /gpu:0; no peer on the GPU here"}
    contestant.close()
    return out


# --- ratios, targets, report ------------------------------------------------------------------------------------------
def judge(row: str, entry: dict) -> None:
    """Adds the ratios adplace/NumPy, adplace/each peer, adplace/best peer, and whether the row met its target."""
    med = entry.get("median_us", {})
    agree = {name: c.get("agree", False) for name, c in entry.get("check", {}).items()}
    ours = med.get("adplace")
    ratios = {}
    if ours is not None:
        for name, us in med.items():
            if name != "adplace" and agree.get(name, True):
                ratios[f"adplace/{name}"] = ours / us
        peers = [name for name in ("tf", "jax") if name in med and agree.get(name, True)]
        if peers:
            best = min(peers, key=med.get)
            ratios["adplace/best_peer"] = ours / med[best]
            entry["best_peer"] = best
    entry["ratios"] = ratios
    target = TARGETS.get(row, entry.get("target"))
    if target is None:
        entry["met"] = None
        return
    entry["target"] = target
    results, missing = [], []
    for what, limit in target.items():
        value = entry.get("of_copy") if what == "of_copy" else ratios.get(f"adplace/{what}")
        if value is None:
            missing.append(what)
        else:
            results.append(value >= limit if what == "of_copy" else value <= limit)
    if not agree.get("adplace", True):
        results.append(False)
    entry["met"] = all(results) if results else None
    entry["target_unmeasured"] = missing


def target_text(target: dict | None) -> str:
    parts = []
    for what, limit in (target or {}).items():
        parts.append(f">= {limit:.0%} copy" if what == "of_copy" else
                     f"<= {limit:g}x {'best' if what == 'best_peer' else what}")
    return ", ".join(parts) or "-"


def table_rows(rows: dict, missing_peers: dict) -> list:
    """The table's rows: row, adplace, numpy, tf, jax, adplace/numpy, adplace/best peer, target, met?"""
    out = []
    for row, entry in rows.items():
        if "skipped" in entry:
            out.append((row, "skipped (notes)", "", "", "", "", "", target_text(TARGETS.get(row)), "n/a"))
            continue
        med, ratios = entry.get("median_us", {}), entry.get("ratios", {})
        cells = []
        for name in ("adplace", "numpy", "tf", "jax"):
            if name in med:
                text = _fmt_time(med[name])
                if not entry.get("check", {}).get(name, {}).get("agree", True):
                    text += " (VALUES DIFFER)"
                cells.append(text)
            elif name in missing_peers:
                cells.append("not installed" if missing_peers[name] == "not installed" else "n/a")
            elif name in entry.get("errors", {}):
                cells.append("n/a (error)")
            else:
                cells.append("-")
        if "of_copy" in entry:
            cells[1] = f"copy: {entry['of_copy']:.0%} of its rate"
        best = ratios.get("adplace/best_peer")
        met = entry.get("met")
        met_text = "n/a" if met is None else ("yes" if met else "NO")
        if met is not None and entry.get("target_unmeasured"):
            met_text += f" (no {', '.join(entry['target_unmeasured'])})"
        out.append((row, *cells, f"{ratios['adplace/numpy']:.2f}x" if "adplace/numpy" in ratios else "-",
                    f"{best:.2f}x ({entry['best_peer']})" if best is not None else "-", target_text(entry.get("target")),
                    met_text))
    return out


def machine() -> dict:
    """CPU, cores, affinity, BLAS pools and library versions of this run."""
    cpu = platform.processor()
    with contextlib.suppress(OSError):
        with open("/proc/cpuinfo") as fh:
            cpu = next((line.split(":", 1)[1].strip() for line in fh if line.startswith("model name")), cpu)
    versions = {}
    for package in ("numpy", "tensorflow", "jax", "jaxlib", "numba", "threadpoolctl", "cupy"):
        versions[package] = None
        for dist in (package, f"{package}-cpu"):  # TF's CPU-only wheel is tensorflow-cpu
            with contextlib.suppress(importlib.metadata.PackageNotFoundError):
                versions[package] = importlib.metadata.version(dist)
                break
    return {"cpu": cpu, "cores": os.cpu_count(), "affinity": common.affinity(), "platform": platform.platform(),
            "python": sys.version.split()[0], "versions": versions, "blas": common.blas_info(),
            "env": common.thread_env(), "adplace": getattr(tf, "__version__", "?")}


def machine_line(m: dict) -> str:
    blas = ", ".join(f"{b.get('internal_api')} {b.get('version')} ({b.get('architecture') or '?'} kernels, "
                     f"{b.get('num_threads')} threads)" for b in m["blas"] if b.get("user_api") == "blas")
    v = m["versions"]
    load = (f"; load average {m['load_avg_at_start'][0]:.1f} at the start, {m['load_avg_at_end'][0]:.1f} at the end"
            if m.get("load_avg_at_start") else "")
    return (f"{m['cpu']}, {m['cores']} cores ({m['affinity']} in the affinity mask); BLAS: {blas or 'unknown'}; "
            f"Python {m['python']}, NumPy {v['numpy']}, TensorFlow {v['tensorflow']}, JAX {v['jax']}, "
            f"Numba {v['numba']}{load}")


def write_markdown(path: str, header: list, rows: list, results: dict) -> None:
    lines = [f"Run of {results['date'][:10]} (`benchmarks/speed.py`{' --quick' if results['quick'] else ''}, "
             f"adplace commit {str(results['adplace_source'].get('commit'))[:12]}"
             f"{' + uncommitted changes' if results['adplace_source'].get('uncommitted') else ''}):",
             f"{machine_line(results['machine'])}.", "",
             "| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    notes = results.get("notes", [])
    if notes:
        lines += [""] + [f"* {note}" for note in notes]
    tmp = path + ".tmp"
    with open(tmp, "w") as fh:
        fh.write("\n".join(lines) + "\n")
    os.replace(tmp, path)
    print(f"wrote {path}")


def main(argv=None) -> int:
    own = argparse.ArgumentParser(add_help=False)  # this script's options; parse_args adds --quick and --out
    own.add_argument("--peers", default="tf,jax", help="comma-separated peers to run (tf, jax), or none")
    own.add_argument("--rows", default=",".join(ROWS), help="comma-separated rows to run")
    mine, rest = own.parse_known_args(argv)
    args = parse_args(rest, "speed", __doc__.splitlines()[0], "smaller rows, fewer samples")
    wanted_peers = [] if mine.peers in ("", "none") else mine.peers.split(",")
    wanted_rows = mine.rows.split(",")
    unknown = [r for r in wanted_rows if r not in ROWS] + [p for p in wanted_peers if p not in PEERS]
    if unknown:
        print(f"unknown rows or peers: {unknown}; rows: {', '.join(ROWS)}; peers: {', '.join(PEERS)}")
        return 2
    timing = ({"rounds": 2, "samples": 2, "target_s": 0.005, "cap": 200} if args.quick else
              {"rounds": 5, "samples": 3, "target_s": 0.02, "cap": 2000})
    all_params = common.params(args.quick)
    started = time.perf_counter()
    load_at_start = os.getloadavg() if hasattr(os, "getloadavg") else None
    sources_at_start = _sources_digest(os.path.dirname(os.path.abspath(tf.__file__)))

    peers, missing_peers = start_peers(wanted_peers)
    for peer, why in missing_peers.items():
        print(f"peer {peer}: {why}")

    def adplace_make(row, p):
        contestant = graph_rows.make(tf, row, p, tf.ConfigProto())
        contestant.settle = lambda: adplace_settle(contestant)
        return contestant

    contestants = {"adplace": Local("adplace", adplace_make), "numpy": Local("numpy", numpy_rows.make), **peers}
    rows: dict[str, dict] = {}
    try:
        for row in wanted_rows:
            if row.startswith("mlp_adam"):
                continue
            if row.startswith("gpu_") or row == "fusion_chain":
                continue
            p = all_params[common.kind(row)]
            try:
                with virtual_gpus(p["towers"]) if row == "tower_fit" else contextlib.nullcontext():
                    rows[row] = run_row(row, contestants, p, timing)
            except RuntimeError as exc:  # the NumPy baseline or a worker failed: the row is reported, not timed
                rows[row] = {"skipped": str(exc)[:500]}
            print(f"  {row}: " + ", ".join(f"{k} {_fmt_time(v)}" for k, v in rows[row].get("median_us", {}).items()),
                  flush=True)
    finally:
        for remote in peers.values():
            remote.quit()
    if "fusion_chain" in wanted_rows:
        rows.update(run_fusion_chain(timing["rounds"] * timing["samples"]))
    mlp_peers = [p for p in wanted_peers if p in peers]
    for row, threads in (("mlp_adam", "default"), ("mlp_adam_1thread", "1")):
        if row in wanted_rows:
            rows[row] = run_mlp(threads, mlp_peers, timing, args.quick)
            print(f"  {row}: " + ", ".join(f"{k} {_fmt_time(v)}" for k, v in rows[row].get("median_us", {}).items()),
                  flush=True)
    if any(row.startswith("gpu_") for row in wanted_rows):
        gpu_rows = run_gpu(timing["rounds"] * timing["samples"], args.quick)
        rows.update({k: v for k, v in gpu_rows.items() if k in wanted_rows})
    order = []
    for row in wanted_rows:  # fusion_chain stands for one row a chain
        order += sorted(r for r in rows if r.startswith("fusion_chain")) if row == "fusion_chain" else [row]
    rows = {row: rows[row] for row in order if row in rows}
    for row, entry in rows.items():
        judge(row, entry)

    header = ["row", "adplace", "numpy", "tf", "jax", "adplace/numpy", "adplace/best peer", "target", "met?"]
    table = table_rows(rows, missing_peers)
    print()
    print_table(header, table)
    notes = [f"{peer}: {why}" for peer, why in missing_peers.items()]
    notes += [f"{row} skipped: {e['skipped']}" for row, e in rows.items() if "skipped" in e]
    notes += [f"{row}: first call (plan/trace/compile) " + ", ".join(
        f"{name} {info['first_call_s'] * 1000:.1f} ms" for name, info in rows[row]["info"].items())
        for row in ("chain1000", "chain1000_arith") if "info" in rows.get(row, {})]
    notes += [f"{row}: unfused {_fmt_time(e['adplace_unfused_us'])}; Numba compile {e['compile_s']['cold']:.2f} s cold, "
              f"{e['compile_s']['from_disk_cache']:.2f} s from its disk cache"
              for row, e in rows.items() if "compile_s" in e]
    notes += [f"{row}: {name} failed: {err}" for row, e in rows.items() for name, err in e.get("errors", {}).items()]
    notes += [f"{row}: {name}'s values differ from NumPy's (max error {c['max_error']:.3g} x tolerance)"
              for row, e in rows.items() for name, c in e.get("check", {}).items() if not c["agree"]]
    for note in notes:
        print(note)
    elapsed = time.perf_counter() - started
    print(f"medians of {timing['rounds']} rounds x {timing['samples']} samples (MLP: mlp_step.py's samples); "
          f"times per call; total {elapsed:.0f} s")

    load = {"load_avg_at_start": load_at_start, "load_avg_at_end": os.getloadavg() if load_at_start else None}
    results = {"benchmark": "speed", "machine": {**machine(), **load}, "date": datetime.datetime.now().astimezone().isoformat(),
               "adplace_source": {**source_info(), "sources_sha1_at_start": sources_at_start}, "quick": args.quick,
               "timing": timing, "peers": {name: r.info for name, r in peers.items()},
               "threads": {"adplace": "ConfigProto() (mlp_adam_1thread: intra/inter_op_parallelism_threads=1)",
                           "numpy": "BLAS as the machine's pools say (mlp_adam_1thread: threadpoolctl limit 1)",
                           "tf": "ConfigProto(allow_soft_placement=True) in its worker (mlp_step.py: ConfigProto(), "
                                 "and (1, 1) in a process of its own)",
                           "jax": "XLA's default in its worker (mlp_step.py's one-thread row: XLA_FLAGS "
                                  "single-threaded Eigen, the process pinned to one CPU)"},
               "missing_peers": missing_peers, "targets": TARGETS, "rows": rows, "notes": notes,
               "elapsed_s": elapsed, "table": [dict(zip(header, r)) for r in table]}
    write_results(results, args.out)
    write_markdown(os.path.splitext(args.out)[0] + ".md", header, table, results)
    return 0


if __name__ == "__main__":
    sys.exit(main())
