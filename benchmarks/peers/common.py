"""What every contestant of benchmarks/speed.py shares (NumPy only, so any peer process can import it): each row's
parameters and seeded data, the timing of a step, the value summaries compared before timing, and the stdin/stdout
JSON loop a peer worker answers."""
from __future__ import annotations

import contextlib
import gc
import json
import os
import sys
import time
import traceback

import numpy as np

# --- rows and their data ------------------------------------------------------------------------------------------------
ADAM = {"lr": 0.1, "beta1": 0.9, "beta2": 0.999, "epsilon": 1e-8}  # the seed's AdamOptimizer(0.1), TF's defaults
OPTIMIZERS = ("adam", "rmsprop", "momentum", "adagrad", "adadelta", "ftrl")
# Hyperparameters of the optimizer rows (TF1's defaults, learning rates chosen to move the values visibly).
OPT_HYPER = {"adam": {"lr": 1e-3, "beta1": 0.9, "beta2": 0.999, "epsilon": 1e-8},
             "rmsprop": {"lr": 1e-3, "decay": 0.9, "momentum": 0.0, "epsilon": 1e-10},
             "momentum": {"lr": 0.01, "momentum": 0.9},
             "adagrad": {"lr": 0.01, "initial_accumulator_value": 0.1},
             "adadelta": {"lr": 1.0, "rho": 0.95, "epsilon": 1e-8},
             "ftrl": {"lr": 0.01, "learning_rate_power": -0.5, "initial_accumulator_value": 0.1, "l1": 0.001,
                      "l2": 0.001}}
CHAIN_ARITH = ((np.multiply, 0.5), (np.add, 0.25), (np.multiply, 1.9), (np.subtract, 0.3))  # x -> 0.95x + 0.175


def params(quick: bool) -> dict:
    """Each row's sizes; --quick shrinks them so a smoke run takes seconds."""
    return {"trivial": {},
            "tower_fit": {"batch": 100, "batches": 16, "towers": 2},
            "opt": {"n": 100_000 if quick else 1_000_000, "grads": 2},
            "opt_sparse": {"rows": 10_000 if quick else 100_000, "cols": 64, "nnz": 100 if quick else 1000,
                           "grads": 2},
            "chain1000": {"n": 100 if quick else 1000, "size": 4},
            "chain1000_arith": {"n": 100 if quick else 1000, "size": 4096}}


def kind(row: str) -> str:
    """The family a row belongs to: opt_adam -> opt, opt_adagrad_sparse -> opt_sparse, others themselves."""
    if row.startswith("opt_"):
        return "opt_sparse" if row.endswith("_sparse") else "opt"
    return row


def data(row: str, p: dict) -> dict:
    """The row's seeded inputs and initial values (float32), identical in every process."""
    rng = np.random.default_rng(24)
    family = kind(row)
    if family == "trivial":
        return {"a": np.arange(4, dtype=np.float32), "b": np.full(4, 0.5, np.float32)}
    if family == "tower_fit":
        xs = [rng.uniform(-10.0, 10.0, p["batch"]).astype(np.float32) for _ in range(p["batches"])]
        return {"x": xs, "y": [(5 * np.square(x) + 3).astype(np.float32) for x in xs],
                "w0": np.array([[0.1], [0.2], [0.3]], np.float32)}
    if family == "opt":
        return {"var": rng.uniform(-1, 1, p["n"]).astype(np.float32),
                "g": [rng.standard_normal(p["n"], dtype=np.float32) * np.float32(0.1) for _ in range(p["grads"])]}
    if family == "opt_sparse":
        shape = (p["rows"], p["cols"])
        return {"var": rng.uniform(-1, 1, shape).astype(np.float32),
                "idx": [np.sort(rng.choice(p["rows"], p["nnz"], replace=False)).astype(np.int64)
                        for _ in range(p["grads"])],
                "g": [rng.standard_normal((p["nnz"], p["cols"]), dtype=np.float32) * np.float32(0.1)
                      for _ in range(p["grads"])]}
    if family in ("chain1000", "chain1000_arith"):
        lo, hi = (0.1, 0.4) if family == "chain1000" else (-1.0, 1.0)
        return {"x": np.linspace(lo, hi, p["size"], dtype=np.float32)}
    raise ValueError(f"unknown row {row!r}")


def cycle(values: list):
    """A function returning the next of `values` on each call, round and round."""
    state = {"i": -1}

    def nxt():
        state["i"] = (state["i"] + 1) % len(values)
        return values[state["i"]]
    return nxt


# --- a contestant ------------------------------------------------------------------------------------------------------
class Contestant:
    """One implementation of one row: step() is the timed unit (it returns the value checked, or None), probe() the
    state checked after the check steps (e.g. the trained weights); around() wraps every sample (thread limits)."""

    def __init__(self, step, probe=None, around=None, close=None, info: dict | None = None):
        self.step, self.probe = step, probe or (lambda: None)
        self.around = around or contextlib.nullcontext
        self._close = close
        self.info = info or {}

    def check(self, steps: int) -> dict:
        """Digests of the first `steps` steps' values and of the state after them; the first call's time (plans,
        tracing, compilation) goes into info["first_call_s"]."""
        start = time.perf_counter()
        outputs = [summary(self.step())]
        self.info["first_call_s"] = time.perf_counter() - start
        outputs += [summary(self.step()) for _ in range(steps - 1)]
        return {"outputs": outputs, "state": summary(self.probe())}

    def calibrate(self, target_s: float, cap: int) -> int:
        """Calls per sample so that a sample takes about target_s (1 to cap)."""
        with self.around():
            self.step()
            per = max(batch_ns(self.step, 3) / 3 * 1e-9, 1e-9)
        return max(1, min(cap, int(target_s / per)))

    def measure(self, calls: int, samples: int) -> list[float]:
        """`samples` samples of `calls` calls each, in microseconds per call."""
        with self.around():
            return [batch_ns(self.step, calls) / calls / 1000.0 for _ in range(samples)]

    def close(self) -> None:
        if self._close is not None:
            self._close()


def batch_ns(fn, calls: int) -> int:
    """Wall time of `calls` calls of fn(), the cyclic GC off meanwhile."""
    gc.disable()
    try:
        start = time.perf_counter_ns()
        for _ in range(calls):
            fn()
        return time.perf_counter_ns() - start
    finally:
        gc.enable()


# --- values compared before timing -------------------------------------------------------------------------------------
def summary(value) -> dict | None:
    """A small JSON-able digest of a value: all of it up to 64 elements, else 64 evenly spaced ones and the sums."""
    if value is None:
        return None
    flat = np.asarray(value, dtype=np.float64).ravel()
    if flat.size <= 64:
        return {"values": flat.tolist(), "size": int(flat.size)}
    idx = np.linspace(0, flat.size - 1, 64).astype(np.int64)
    return {"values": flat[idx].tolist(), "size": int(flat.size), "sum": float(flat.sum()),
            "abs_sum": float(np.abs(flat).sum())}


def max_error(got: dict, want: dict, rtol: float, atol: float) -> float:
    """The worst |got - want| / (atol + rtol |want|) over two checks' digests (<= 1 means they agree)."""
    worst = 0.0
    pairs = list(zip(got["outputs"], want["outputs"])) + [(got["state"], want["state"])]
    if len(got["outputs"]) != len(want["outputs"]):
        return float("inf")
    for a, b in pairs:
        if a is None or b is None:
            if (a is None) != (b is None):
                return float("inf")
            continue
        if a["size"] != b["size"]:
            return float("inf")
        x, y = np.asarray(a["values"]), np.asarray(b["values"])
        worst = max(worst, float(np.max(np.abs(x - y) / (atol + rtol * np.abs(y)), initial=0.0)))
        if "sum" in b:  # the sums catch a difference anywhere, relative to the values' size
            worst = max(worst, abs(a["sum"] - b["sum"]) / (atol * b["size"] + rtol * b["abs_sum"]))
    return worst


# --- a peer worker process ---------------------------------------------------------------------------------------------
def serve(make, info) -> None:
    """Answer JSON requests, one a line on stdin, with one JSON line each on the real stdout (everything else a
    library prints goes to stderr). Requests: {"op": "info"}, {"op": "open", "row", "params", "check_steps"} (builds
    the row, runs the check steps, replies their digest), {"op": "calibrate", "target_s", "cap"}, {"op": "measure",
    "calls", "samples"}, {"op": "close"}. `make(row, params) -> Contestant`; `info() -> dict`."""
    out = os.fdopen(os.dup(1), "w", buffering=1)
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    current: list[Contestant] = []
    for line in sys.stdin:
        request = json.loads(line)
        try:
            op = request["op"]
            if op == "info":
                reply = info()
            elif op == "open":
                while current:
                    current.pop().close()
                current.append(make(request["row"], request["params"]))
                reply = {"check": current[0].check(request["check_steps"]), "info": current[0].info}
            elif op == "calibrate":
                reply = {"calls": current[0].calibrate(request["target_s"], request["cap"])}
            elif op == "measure":
                reply = {"us": current[0].measure(request["calls"], request["samples"])}
            elif op == "close":
                while current:
                    current.pop().close()
                reply = {}
            else:
                raise ValueError(f"unknown request {op!r}")
        except Exception as exc:  # noqa: BLE001 - reported to the benchmark, which marks the peer n/a for the row
            traceback.print_exc()
            reply = {"error": f"{type(exc).__name__}: {exc}"[:500]}
        out.write(json.dumps(reply) + "\n")


def blas_info() -> list:
    """threadpoolctl's view of this process's BLAS/OpenMP pools ([] without threadpoolctl)."""
    try:
        from threadpoolctl import threadpool_info
    except ImportError:
        return []
    return [{k: v for k, v in pool.items() if k in ("user_api", "internal_api", "num_threads", "version",
                                                      "threading_layer", "architecture")} for pool in threadpool_info()]


def thread_env() -> dict:
    """The thread-related environment variables this process was started with."""
    names = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "XLA_FLAGS", "TF_NUM_INTRAOP_THREADS",
             "TF_NUM_INTEROP_THREADS", "OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE")
    return {name: os.environ[name] for name in names if name in os.environ}


def affinity() -> int | None:
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None
