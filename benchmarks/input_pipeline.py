"""Input pipeline benchmark: records per second of TF1's queue-based CSV pipeline run by adplace, against the same
pipeline in real TensorFlow (tf.compat.v1, in a subprocess) and hand-written NumPy (and pandas, where installed).

    python benchmarks/input_pipeline.py               # full run: 20,000 rows, 3 repetitions; results/input_pipeline.json
    python benchmarks/input_pipeline.py --quick       # smoke run: 600 rows, 1 repetition (JSON to $TMPDIR)
    python benchmarks/input_pipeline.py --no-tf       # leave out the TF rows
    python benchmarks/input_pipeline.py --rows N --reps R

The file: N rows `f0,f1,f2,f3,label` (4 float features, an int label = the row's index, so that a run can check
every record came out exactly once), written to a temporary directory. The pipeline (one builder, run on adplace and
on tf.compat.v1 after disable_v2_behavior):
    string_input_producer([file], num_epochs=1) -> TextLineReader().read -> decode_csv([[0.]] * 4 + [[0]])
    -> shuffle_batch([stack(features), label], batch_size=128, capacity=min_after_dequeue + 3 * 128,
                     min_after_dequeue=1024 (64 with --quick), num_threads=T, allow_smaller_final_batch=True)
consumed by `sess.run(batch)` under a Coordinator and start_queue_runners until OutOfRangeError, for T = 1, 2, 4
runner threads sharing the one reader (TF's idiom for one file; shuffle_batch_join's one reader per list only
parallelises several files: with one file a single reader gets it). A timed run is everything after the graph is
built: the session, the local-variable initialiser (num_epochs' counter), the runners, the loop, their join.
Baselines, timed in the same process, their repetitions alternating with adplace's:
  numpy   np.loadtxt(file, delimiter=",", dtype=float32), a random permutation, then the same batches (features
          float32 [<=128, 4], labels int32) in a Python loop. THE baseline: every ratio is against its median.
  pandas  pd.read_csv(file, header=None), then the same shuffled batching loop (skipped when pandas is missing).
Reported: medians of the repetitions, as records/s and as ratios numpy / row (records/s of the row over NumPy's).
Consumer busy: one more, untimed adplace run per T samples the shuffle queue's size() after every batch, in steady
state (the first batch out, the input not yet exhausted); `never_empty` says every sample was > 0, `ready` the
fraction of samples with a whole next batch above min_after_dequeue (a consumer doing work between batches would not
wait). Nothing here asserts a time.
"""
from __future__ import annotations

import argparse
import datetime
import importlib.util
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np

import adplace as tf

try:  # run as a script (benchmarks/ is sys.path[0]) or imported as benchmarks.input_pipeline
    from dispatch import _sources_digest, machine_info, parse_args, print_table, source_info, write_results
except ImportError:  # pragma: no cover - the package-style import
    from benchmarks.dispatch import _sources_digest, machine_info, parse_args, print_table, source_info, write_results

BATCH = 128
FEATURES = 4
THREADS = (1, 2, 4)


def write_csv(path: str, rows: int, seed: int = 0) -> None:
    """The benchmark's CSV: `rows` lines of 4 float features and the row's index as its int label."""
    rng = np.random.default_rng(seed)
    feats = rng.standard_normal((rows, FEATURES)).astype(np.float32)
    with open(path, "w") as fh:
        for i, row in enumerate(feats):
            fh.write(",".join(f"{v:.6f}" for v in row) + f",{i}\n")


def build(v1, path: str, threads: int, min_after_dequeue: int):
    """The pipeline in v1's default graph (v1 = the adplace module or tf.compat.v1); returns (the batch's
    [features, labels] tensors, the shuffle queue's size tensor)."""
    files = v1.train.string_input_producer([path], num_epochs=1, shuffle=False)
    _, line = v1.TextLineReader().read(files)
    cols = v1.decode_csv(line, record_defaults=[[0.0]] * FEATURES + [[0]])
    capacity = min_after_dequeue + 3 * BATCH
    batch = v1.train.shuffle_batch([v1.stack(cols[:FEATURES]), cols[FEATURES]], batch_size=BATCH,
                                   capacity=capacity, min_after_dequeue=min_after_dequeue, num_threads=threads,
                                   allow_smaller_final_batch=True, seed=1)
    runners = v1.get_collection(v1.GraphKeys.QUEUE_RUNNERS)
    return batch, runners[-1].queue.size()


def run_pipeline(v1, path: str, threads: int, min_after_dequeue: int, sample_size: bool = False) -> dict:
    """One run of the pipeline on a fresh graph: seconds (after graph building), the labels seen in order, and with
    `sample_size` the queue sizes sampled after each batch."""
    graph = v1.Graph()
    with graph.as_default():
        (features, labels), size = build(v1, path, threads, min_after_dequeue)
        init = v1.local_variables_initializer()
    started = time.perf_counter()
    seen, sizes = [], []
    with v1.Session(graph=graph) as sess:
        sess.run(init)
        coord = v1.train.Coordinator()
        workers = v1.train.start_queue_runners(sess=sess, coord=coord)
        try:
            while True:
                f, lab = sess.run([features, labels])
                if f.shape != (len(lab), FEATURES):
                    raise SystemExit(f"bad batch shape {f.shape}")
                seen.append(lab)
                if sample_size:
                    sizes.append(int(sess.run(size)))
        except v1.errors.OutOfRangeError:
            pass
        finally:
            coord.request_stop()
            coord.join(workers)
    return {"seconds": time.perf_counter() - started, "labels": np.concatenate(seen) if seen else np.zeros(0, int),
            "sizes": sizes}


def _batches(feats: np.ndarray, labels: np.ndarray, rng) -> list:
    """Shuffled batches of (features [<=BATCH, 4], labels), as a training loop would take them; returns the labels."""
    order, seen = rng.permutation(len(labels)), []
    for i in range(0, len(order), BATCH):
        idx = order[i:i + BATCH]
        batch_features, batch_labels = feats[idx], labels[idx]
        if batch_features.shape != (len(batch_labels), FEATURES):
            raise SystemExit(f"bad batch shape {batch_features.shape}")
        seen.append(batch_labels)
    return seen


def numpy_pipeline(path: str, rng) -> np.ndarray:
    """np.loadtxt, then shuffled batches in a loop; returns the labels in the order the batches gave them."""
    data = np.loadtxt(path, delimiter=",", dtype=np.float32)
    feats, labels = data[:, :FEATURES], data[:, FEATURES].astype(np.int32)
    return np.concatenate(_batches(feats, labels, rng))


def pandas_pipeline(path: str, rng) -> np.ndarray:
    """pd.read_csv, then the same shuffled batches."""
    import pandas as pd
    frame = pd.read_csv(path, header=None, dtype={i: np.float32 for i in range(FEATURES)} | {FEATURES: np.int32})
    feats, labels = frame.iloc[:, :FEATURES].to_numpy(), frame.iloc[:, FEATURES].to_numpy()
    return np.concatenate(_batches(feats, labels, rng))


def _timed(fn, *args) -> tuple[float, np.ndarray]:
    started = time.perf_counter()
    labels = fn(*args)
    return time.perf_counter() - started, labels


def _exactly_once(labels: np.ndarray, rows: int) -> bool:
    return len(labels) == rows and bool(np.array_equal(np.sort(labels), np.arange(rows)))


def _busy(sizes: list, consumed_rows: int, capacity: int, min_after_dequeue: int) -> dict:
    """Steady-state queue sizes: those sampled after a batch while more than `capacity` records were still to come
    (so the producers were not yet draining the end of the file)."""
    steady = sizes[:max(0, (consumed_rows - capacity) // BATCH)]
    if not steady:
        return {"samples": 0, "never_empty": None, "min_size": None, "median_size": None, "ready": None,
                "median_fraction_full": None}
    return {"samples": len(steady), "never_empty": min(steady) > 0, "min_size": min(steady),
            "median_size": statistics.median(steady),
            "ready": sum(s >= min_after_dequeue + BATCH for s in steady) / len(steady),
            "median_fraction_full": statistics.median(steady) / capacity}


def measure(v1, path: str, rows: int, reps: int, min_after_dequeue: int, baselines: dict) -> dict:
    """Every variant's run times (seconds), `reps` each, adplace's (or TF's) T values alternating with the
    baselines; plus exactly-once checks and the busy samples."""
    rng = np.random.default_rng(0)
    times = {name: [] for name in [f"T={t}" for t in THREADS] + list(baselines)}
    once, consumed = {}, {}
    run_pipeline(v1, path, 1, min_after_dequeue)  # warm-up: first-use imports and caches stay out of the times
    for _ in range(reps):
        for t in THREADS:
            result = run_pipeline(v1, path, t, min_after_dequeue)
            times[f"T={t}"].append(result["seconds"])
            once[f"T={t}"] = once.get(f"T={t}", True) and _exactly_once(result["labels"], rows)
            consumed[f"T={t}"] = len(result["labels"])
            for name, fn in baselines.items():
                seconds, labels = _timed(fn, path, rng)
                times[name].append(seconds)
                once[name] = once.get(name, True) and _exactly_once(labels, rows)
                consumed[name] = len(labels)
    busy = {}
    for t in THREADS:
        result = run_pipeline(v1, path, t, min_after_dequeue, sample_size=True)
        busy[f"T={t}"] = _busy(result["sizes"], rows, min_after_dequeue + 3 * BATCH, min_after_dequeue)
    return {"times": times, "exactly_once": once, "busy": busy, "rows_consumed": consumed}


# --- TF, in a subprocess ----------------------------------------------------------------------------------------------
def tf_peer(path: str, rows: int, reps: int, min_after_dequeue: int) -> dict:
    """TF's times for every T and its NumPy baseline's, in this (subprocess's) process; run in `--tf-peer` mode."""
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    import tensorflow as real_tf
    v1 = real_tf.compat.v1
    v1.disable_v2_behavior()
    out = measure(v1, path, rows, reps, min_after_dequeue, {"numpy": numpy_pipeline})
    return {"tensorflow": real_tf.__version__, **out}


def run_tf_peer(path: str, rows: int, reps: int, min_after_dequeue: int) -> tuple[dict | None, str | None]:
    """(TF's results, None), or (None, why there are none)."""
    if importlib.util.find_spec("tensorflow") is None:
        return None, "TensorFlow is not installed"
    done = subprocess.run([sys.executable, os.path.abspath(__file__), "--tf-peer", path, str(rows), str(reps),
                           str(min_after_dequeue)], capture_output=True, text=True, timeout=1800,
                          env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3", "CUDA_VISIBLE_DEVICES": ""})
    if done.returncode != 0:
        print(f"TF peer failed: {done.stderr[-2000:]}")
        return None, "the TF run failed"
    return json.loads(done.stdout.strip().splitlines()[-1]), None


# --- report -----------------------------------------------------------------------------------------------------------
def _options(argv) -> tuple[argparse.Namespace, list]:
    parser = argparse.ArgumentParser(add_help=False)
    parser.add_argument("--rows", type=int, default=None)
    parser.add_argument("--reps", type=int, default=None)
    parser.add_argument("--no-tf", action="store_true")
    return parser.parse_known_args(argv)


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv and argv[0] == "--tf-peer":
        print(json.dumps(tf_peer(argv[1], int(argv[2]), int(argv[3]), int(argv[4]))))
        return 0
    extra, rest = _options(argv)
    args = parse_args(rest, "input_pipeline", __doc__.splitlines()[0],
                      "600 rows, 1 repetition (--rows, --reps, --no-tf also apply)")
    rows = extra.rows or (600 if args.quick else 20_000)
    reps = extra.reps or (1 if args.quick else 3)
    min_after = 64 if args.quick else 1024
    started = time.perf_counter()
    sources_at_start = _sources_digest(os.path.dirname(os.path.abspath(tf.__file__)))
    baselines = {"numpy": numpy_pipeline}
    pandas_note = None
    if importlib.util.find_spec("pandas") is not None:
        baselines["pandas"] = pandas_pipeline
    else:
        pandas_note = "pandas is not installed"
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "records.csv")
        write_csv(path, rows)
        ours = measure(tf, path, rows, reps, min_after, baselines)
        theirs, tf_note = (None, "--no-tf") if extra.no_tf else run_tf_peer(path, rows, reps, min_after)

    def rate(seconds: list) -> float:
        return rows / statistics.median(seconds)

    numpy_rate = rate(ours["times"]["numpy"])
    table, printed = {}, []
    for t in THREADS:
        key = f"T={t}"
        a = rate(ours["times"][key])
        entry = {"threads": t, "adplace_records_per_s": a, "adplace_median_s": statistics.median(ours["times"][key]),
                 "adplace_exactly_once": ours["exactly_once"][key], "adplace_over_numpy": a / numpy_rate,
                 "adplace_busy": ours["busy"][key], "tf_records_per_s": None, "tf_over_numpy_in_its_process": None,
                 "adplace_over_tf": None, "tf_exactly_once": None, "tf_busy": None}
        if theirs:
            r = rate(theirs["times"][key])
            entry.update(tf_records_per_s=r, tf_over_numpy_in_its_process=r / rate(theirs["times"]["numpy"]),
                         adplace_over_tf=a / r, tf_exactly_once=theirs["exactly_once"][key],
                         tf_busy=theirs["busy"][key])
        table[f"shuffle_batch T={t}"] = entry
        busy = ours["busy"][key]
        printed.append((f"adplace shuffle_batch T={t}", f"{a:,.0f}", f"{a / numpy_rate:.3g}x",
                        str(entry["adplace_exactly_once"]), _busy_text(busy),
                        f"{r:,.0f} ({entry['tf_over_numpy_in_its_process']:.3g}x), {_busy_text(entry['tf_busy'])}"
                        if theirs else f"n/a ({tf_note})"))
    for name in ("numpy", "pandas"):
        if name in baselines:
            r = rate(ours["times"][name])
            table[name] = {"records_per_s": r, "median_s": statistics.median(ours["times"][name]),
                           "over_numpy": r / numpy_rate, "exactly_once": ours["exactly_once"][name]}
            printed.append((name, f"{r:,.0f}", f"{r / numpy_rate:.2f}x", str(ours["exactly_once"][name]), "", ""))
        else:
            table[name] = {"skipped": pandas_note}
            printed.append((name, "skipped", "", "", "", pandas_note))
    header = ["row", "records/s", "vs numpy", "exactly once", "queue (min size, ready)", "TF records/s (vs its numpy)"]
    print_table(header, printed)
    elapsed = time.perf_counter() - started
    print(f"\nmedians of {reps} run(s) of {rows:,} rows, batch {BATCH}, min_after_dequeue {min_after}; TF: "
          f"{theirs['tensorflow'] + ' (tf.compat.v1, subprocess)' if theirs else 'n/a (' + tf_note + ')'}; "
          f"total {elapsed:.0f} s")

    source = source_info()
    source["sources_sha1_at_start"] = sources_at_start
    results = {"benchmark": "input_pipeline", "date": datetime.datetime.now().isoformat(timespec="seconds"),
               "machine": machine_info(), "adplace_source": source, "quick": args.quick, "rows": rows,
               "repetitions": reps, "batch_size": BATCH, "min_after_dequeue": min_after,
               "capacity": min_after + 3 * BATCH, "threads": list(THREADS),
               "rows_consumed": ours["rows_consumed"], "times_s": ours["times"],
               "tensorflow": theirs["tensorflow"] if theirs else None, "tf_skipped": tf_note,
               "pandas_skipped": pandas_note, "tf_times_s": theirs["times"] if theirs else None,
               "benchmarks": table, "table": [dict(zip(header, r)) for r in printed], "elapsed_s": elapsed}
    write_results(results, args.out)
    return 0


def _busy_text(busy: dict | None) -> str:
    if not busy or not busy["samples"]:
        return "n/a"
    return f"min {busy['min_size']}, ready {busy['ready']:.0%}"


if __name__ == "__main__":
    sys.exit(main())
