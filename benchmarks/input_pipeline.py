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
tf.data rows (P = 1, 2, 4), the same records through the same builder for both:
    TextLineDataset([file]) -> map(decode_csv -> (stack(features), label), num_parallel_calls=P)
    -> shuffle(min_after_dequeue, seed=1) -> batch(128) -> prefetch(2), one-shot iterator, sess.run until
    OutOfRangeError; timed from the session's creation, exactly-once checked.
Training loops ("a training loop fed by a queue keeps the consumer busy"): an MLP step (4 -> 2048 -> 2048 -> 1, relu,
SGD; --hidden, 64 with --quick) over one epoch, its batches from shuffle_batch (2 runner threads), from the tf.data
pipeline (2 parallel calls) or from memory through feed_dict (the step alone). steps/s counts from the end of the
first step (the first fill of the buffers is not timed); "starved" is the fraction of steady-state steps (after the
first, before the last capacity's worth of records) that had to wait for input: for the queue, sampled by
sess.run(queue.size()) before each step (starved: fewer than min_after_dequeue + a batch, empty: size 0); for tf.data,
each batch carries the time a py_func after batch() stamped on it, and a step whose batch was stamped after the step
began found the prefetch buffer empty. Medians of the repetitions; the fractions pool them.
"""
from __future__ import annotations

import argparse
import datetime
import functools
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
PREFETCH = 2  # batches tf.data's prefetch holds
TRAIN_THREADS = 2  # readers / parallel calls feeding the training loop
HIDDEN = 2048  # the training model's hidden width: a step heavier than reading a batch


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
            _drain(v1, sess, features, labels, seen, (lambda: sizes.append(int(sess.run(size)))) if sample_size
                   else None)
        finally:
            coord.request_stop()
            coord.join(workers)
    return {"seconds": time.perf_counter() - started, "labels": np.concatenate(seen) if seen else np.zeros(0, int),
            "sizes": sizes}


def _drain(v1, sess, features, labels, seen: list, after_batch=None) -> None:
    """Run batches until OutOfRangeError, checking each batch's shape and keeping its labels in `seen`."""
    try:
        while True:
            f, lab = sess.run([features, labels])
            if f.shape != (len(lab), FEATURES):
                raise SystemExit(f"bad batch shape {f.shape}")
            seen.append(lab)
            if after_batch is not None:
                after_batch()
    except v1.errors.OutOfRangeError:
        pass


def build_dataset(v1, path: str, calls: int, buffer: int, stamp: bool = False):
    """The same records through tf.data (v1.data: adplace's, or tf.compat.v1's): TextLineDataset -> map(decode_csv,
    num_parallel_calls=calls) -> shuffle(buffer) -> batch -> prefetch; a dataset of (features, labels), and with
    `stamp` a third component: the time (this process's perf_counter, from a py_func after batch) at which the batch
    was made, i.e. entered the prefetch buffer."""
    def parse(line):
        cols = v1.decode_csv(line, record_defaults=[[0.0]] * FEATURES + [[0]])
        return v1.stack(cols[:FEATURES]), cols[FEATURES]

    ds = v1.data.TextLineDataset([path]).map(parse, num_parallel_calls=calls).shuffle(buffer, seed=1).batch(BATCH)
    if stamp:
        ds = ds.map(lambda f, lab: (f, lab, v1.py_func(lambda: np.float64(time.perf_counter()), [], v1.float64)))
    return ds.prefetch(PREFETCH)


def run_dataset(v1, path: str, calls: int, buffer: int) -> dict:
    """One run of the tf.data pipeline on a fresh graph through a one-shot iterator, timed as run_pipeline's."""
    graph = v1.Graph()
    with graph.as_default():
        features, labels = build_dataset(v1, path, calls, buffer).make_one_shot_iterator().get_next()
    started = time.perf_counter()
    seen = []
    with v1.Session(graph=graph) as sess:
        _drain(v1, sess, features, labels, seen)
    return {"seconds": time.perf_counter() - started, "labels": np.concatenate(seen) if seen else np.zeros(0, int)}


# --- a training loop fed by the pipelines ---------------------------------------------------------------------------
def train_step(v1, features, hidden: int):
    """A small regression model of a batch (features [b, 4] -> relu(hidden) -> relu(hidden) -> 1, the target the sum
    of the features) and its SGD update op; fixed initial weights, the same in adplace and TF."""
    rng = np.random.default_rng(1)
    shapes = [(FEATURES, hidden), (hidden, hidden), (hidden, 1)]
    weights = [v1.Variable((rng.standard_normal(s) / np.sqrt(s[0])).astype(np.float32)) for s in shapes]
    h = v1.nn.relu(v1.matmul(v1.nn.relu(v1.matmul(features, weights[0])), weights[1]))
    loss = v1.reduce_mean(v1.square(v1.squeeze(v1.matmul(h, weights[2]), [1]) - v1.reduce_sum(features, 1)))
    return v1.train.GradientDescentOptimizer(0.01).minimize(loss)


def _memory_batches(path: str) -> list:
    """The file's shuffled batches as arrays [<=BATCH, 5], for the feed_dict loop."""
    data = np.loadtxt(path, delimiter=",", dtype=np.float32)
    order = np.random.default_rng(0).permutation(len(data))
    return [data[order[i:i + BATCH]] for i in range(0, len(order), BATCH)]


def run_training(v1, path: str, source: str, threads: int, min_after_dequeue: int, hidden: int) -> dict:
    """One epoch of training steps on a fresh graph, the batches coming from `source`:
      queue  shuffle_batch with `threads` runner threads. Before each step sess.run(queue.size()) samples the queue:
             the step is starved when it found less than min_after_dequeue + a batch (its dequeue_many had to wait
             for the readers), empty when it found size 0.
      data   the tf.data pipeline (num_parallel_calls=threads), one-shot iterator, prefetch(PREFETCH); each batch
             carries the time it entered the prefetch buffer: the step is starved (and empty) when its batch got
             there after the step began (the buffer was empty when the step asked).
      feed   the step alone: batches from memory (np.loadtxt before the clock starts) through feed_dict.
    Returns the loop's seconds (from the end of the first step to the end of data: the first fill of the queue or
    buffers is not timed), steps, the labels in order, and the starved and empty flags per step (none for feed)."""
    graph = v1.Graph()
    with graph.as_default():
        size = made = None
        if source == "queue":
            (features, labels), size = build(v1, path, threads, min_after_dequeue)
        elif source == "data":
            features, labels, made = build_dataset(v1, path, threads, min_after_dequeue,
                                                   stamp=True).make_one_shot_iterator().get_next()
        else:
            features, labels = v1.placeholder(v1.float32, [None, FEATURES]), v1.placeholder(v1.int32, [None])
        train = train_step(v1, features, hidden)
        init = [v1.global_variables_initializer(), v1.local_variables_initializer()]
    batches = _memory_batches(path) if source == "feed" else []
    seen, starved, empty = [], [], []
    with v1.Session(graph=graph) as sess:
        sess.run(init)
        coord = v1.train.Coordinator()
        workers = v1.train.start_queue_runners(sess=sess, coord=coord) if source == "queue" else []
        started = None  # the clock starts when the first step is done: the buffers' first fill is not timed
        try:
            for b in batches:
                lab = b[:, FEATURES].astype(np.int32)
                sess.run(train, {features: b[:, :FEATURES], labels: lab})
                seen.append(lab)
                started = started or time.perf_counter()
            while source != "feed":
                if source == "queue":
                    found = int(sess.run(size))
                    _, lab = sess.run([train, labels])
                    starved.append(found < min_after_dequeue + BATCH)
                    empty.append(found == 0)
                else:
                    asked = time.perf_counter()
                    _, lab, stamp = sess.run([train, labels, made])
                    starved.append(bool(stamp > asked))
                    empty.append(bool(stamp > asked))
                seen.append(lab)
                started = started or time.perf_counter()
        except v1.errors.OutOfRangeError:
            pass
        finally:
            seconds = time.perf_counter() - (started or time.perf_counter())
            coord.request_stop()
            coord.join(workers)
    return {"seconds": seconds, "steps": len(seen), "labels": np.concatenate(seen) if seen else np.zeros(0, int),
            "starved": starved, "empty": empty}


def _steady(flags: list, steps: int, capacity: int) -> list:
    """The flags of steady-state steps: after the first, and while more than `capacity` records were still to come
    (the producers not yet draining the end of the file)."""
    return flags[1:max(1, steps - -(-capacity // BATCH))]


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
    """Every variant's run times (seconds), `reps` each: adplace's (or TF's) shuffle_batch with T runner threads and
    tf.data with P parallel calls, alternating with the baselines; plus exactly-once checks and the busy samples."""
    rng = np.random.default_rng(0)
    variants = {}
    for t in THREADS:
        variants[f"T={t}"] = functools.partial(run_pipeline, v1, path, t, min_after_dequeue)
        variants[f"data P={t}"] = functools.partial(run_dataset, v1, path, t, min_after_dequeue)
    times = {name: [] for name in list(variants) + list(baselines)}
    once, consumed = {}, {}
    run_pipeline(v1, path, 1, min_after_dequeue)  # warm-up: first-use imports and caches stay out of the times
    run_dataset(v1, path, 1, min_after_dequeue)
    for _ in range(reps):
        for name, fn in list(variants.items()) + list(baselines.items()):
            if name in baselines:
                seconds, labels = _timed(fn, path, rng)
            else:
                result = fn()
                seconds, labels = result["seconds"], result["labels"]
            times[name].append(seconds)
            once[name] = once.get(name, True) and _exactly_once(labels, rows)
            consumed[name] = len(labels)
    busy = {}
    for t in THREADS:
        result = run_pipeline(v1, path, t, min_after_dequeue, sample_size=True)
        busy[f"T={t}"] = _busy(result["sizes"], rows, min_after_dequeue + 3 * BATCH, min_after_dequeue)
    return {"times": times, "exactly_once": once, "busy": busy, "rows_consumed": consumed}


def measure_training(v1, path: str, rows: int, reps: int, min_after_dequeue: int, hidden: int) -> dict:
    """The training loop fed by the queue, by tf.data and from memory (TRAIN_THREADS readers / parallel calls),
    `reps` epochs each, alternating: per source the loop times, steps, exactly-once, and the steady-state fractions
    of steps that were starved / found the queue (buffer) empty, pooled over the repetitions."""
    capacity = {"queue": min_after_dequeue + 3 * BATCH, "data": min_after_dequeue + PREFETCH * BATCH, "feed": 0}
    out = {name: {"seconds": [], "steps": 0, "exactly_once": True, "starved": [], "empty": []} for name in capacity}
    run_training(v1, path, "feed", TRAIN_THREADS, min_after_dequeue, hidden)  # warm-up
    for _ in range(reps):
        for name, entry in out.items():
            result = run_training(v1, path, name, TRAIN_THREADS, min_after_dequeue, hidden)
            entry["seconds"].append(result["seconds"])
            entry["steps"] = result["steps"]
            entry["exactly_once"] = entry["exactly_once"] and _exactly_once(result["labels"], rows)
            for flag in ("starved", "empty"):
                entry[flag] += _steady(result[flag], result["steps"], capacity[name])
    for entry in out.values():
        samples = len(entry["starved"])
        entry["steady_samples"] = samples
        for flag in ("starved", "empty"):
            entry[flag] = sum(entry[flag]) / samples if samples else None
        entry["steps_per_s"] = (entry["steps"] - 1) / statistics.median(entry["seconds"])
    return out


# --- TF, in a subprocess ----------------------------------------------------------------------------------------------
def tf_peer(path: str, rows: int, reps: int, min_after_dequeue: int, hidden: int) -> dict:
    """TF's times for every variant, its NumPy baseline's and its training loops, in this (subprocess's) process;
    run in `--tf-peer` mode."""
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    import tensorflow as real_tf
    v1 = real_tf.compat.v1
    v1.disable_v2_behavior()
    out = measure(v1, path, rows, reps, min_after_dequeue, {"numpy": numpy_pipeline})
    training = measure_training(v1, path, rows, reps, min_after_dequeue, hidden)
    return {"tensorflow": real_tf.__version__, **out, "training": training}


def run_tf_peer(path: str, rows: int, reps: int, min_after_dequeue: int,
                hidden: int) -> tuple[dict | None, str | None]:
    """(TF's results, None), or (None, why there are none)."""
    if importlib.util.find_spec("tensorflow") is None:
        return None, "TensorFlow is not installed"
    done = subprocess.run([sys.executable, os.path.abspath(__file__), "--tf-peer", path, str(rows), str(reps),
                           str(min_after_dequeue), str(hidden)], capture_output=True, text=True, timeout=1800,
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
    parser.add_argument("--hidden", type=int, default=None)
    parser.add_argument("--no-tf", action="store_true")
    return parser.parse_known_args(argv)


def _pipeline_rows(ours: dict, theirs: dict | None, tf_note: str | None, rows: int) -> tuple[dict, list]:
    """The records/s table: per variant adplace's and TF's rates, ratios to NumPy, exactly-once and queue samples."""
    def rate(seconds: list) -> float:
        return rows / statistics.median(seconds)

    numpy_rate = rate(ours["times"]["numpy"])
    table, printed = {}, []
    for label, prefix in (("shuffle_batch T", "T="), ("tf.data P", "data P=")):
        for t in THREADS:
            key = f"{prefix}{t}"
            a = rate(ours["times"][key])
            entry = {"threads": t, "adplace_records_per_s": a, "adplace_median_s": statistics.median(ours["times"][key]),
                     "adplace_exactly_once": ours["exactly_once"][key], "adplace_over_numpy": a / numpy_rate,
                     "adplace_busy": ours["busy"].get(key), "tf_records_per_s": None,
                     "tf_over_numpy_in_its_process": None, "adplace_over_tf": None, "tf_exactly_once": None,
                     "tf_busy": None}
            if theirs:
                r = rate(theirs["times"][key])
                entry.update(tf_records_per_s=r, tf_over_numpy_in_its_process=r / rate(theirs["times"]["numpy"]),
                             adplace_over_tf=a / r, tf_exactly_once=theirs["exactly_once"][key],
                             tf_busy=theirs["busy"].get(key))
            table[f"{label}={t}"] = entry
            tf_text = (f"{r:,.0f} ({entry['tf_over_numpy_in_its_process']:.3g}x), once {entry['tf_exactly_once']}"
                       + (f", {_busy_text(entry['tf_busy'])}" if entry["tf_busy"] else "")
                       if theirs else f"n/a ({tf_note})")
            printed.append((f"adplace {label}={t}", f"{a:,.0f}", f"{a / numpy_rate:.3g}x",
                            str(entry["adplace_exactly_once"]), _busy_text(entry["adplace_busy"]), tf_text))
    for name in ("numpy", "pandas"):
        if name in ours["times"]:
            r = rate(ours["times"][name])
            table[name] = {"records_per_s": r, "median_s": statistics.median(ours["times"][name]),
                           "over_numpy": r / numpy_rate, "exactly_once": ours["exactly_once"][name]}
            printed.append((name, f"{r:,.0f}", f"{r / numpy_rate:.2f}x", str(ours["exactly_once"][name]), "", ""))
        else:
            table[name] = {"skipped": "pandas is not installed"}
            printed.append((name, "skipped", "", "", "", "pandas is not installed"))
    return table, printed


TRAINING_ROWS = {"queue": "training fed by shuffle_batch", "data": "training fed by tf.data",
                 "feed": "training from memory (feed_dict)"}


def _training_rows(ours: dict, theirs: dict | None, tf_note: str | None) -> tuple[dict, list]:
    """The training table: steps/s (and as a fraction of the step alone, fed from memory), starved and empty
    fractions of the steady-state steps, exactly-once; adplace's and TF's."""
    def text(entry: dict, alone: dict) -> tuple:
        share = entry["steps_per_s"] / alone["steps_per_s"]
        starved = "" if entry["starved"] is None else f"{entry['starved']:.0%}"
        empty = "" if entry["empty"] is None else f"{entry['empty']:.0%}"
        return f"{entry['steps_per_s']:.1f}", f"{share:.2f}", starved, empty, str(entry["exactly_once"])

    table, printed = {}, []
    for source, label in TRAINING_ROWS.items():
        entry = {"adplace": ours[source], "adplace_over_step_alone": ours[source]["steps_per_s"] /
                 ours["feed"]["steps_per_s"], "tf": None, "tf_over_step_alone": None}
        mine = text(ours[source], ours["feed"])
        tf_text = f"n/a ({tf_note})"
        if theirs:
            entry.update(tf=theirs[source], tf_over_step_alone=theirs[source]["steps_per_s"] /
                         theirs["feed"]["steps_per_s"])
            t = text(theirs[source], theirs["feed"])
            tf_text = f"{t[0]} ({t[1]})" + (f", starved {t[2]}, empty {t[3]}" if t[2] else "") + f", once {t[4]}"
        table[label] = entry
        printed.append((f"adplace {label}", *mine, tf_text))
    return table, printed


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv and argv[0] == "--tf-peer":
        print(json.dumps(tf_peer(argv[1], int(argv[2]), int(argv[3]), int(argv[4]), int(argv[5]))))
        return 0
    extra, rest = _options(argv)
    args = parse_args(rest, "input_pipeline", __doc__.splitlines()[0],
                      "600 rows, 1 repetition, hidden width 64 (--rows, --reps, --hidden, --no-tf also apply)")
    rows = extra.rows or (600 if args.quick else 20_000)
    reps = extra.reps or (1 if args.quick else 3)
    hidden = extra.hidden or (64 if args.quick else HIDDEN)
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
        ours["training"] = measure_training(tf, path, rows, reps, min_after, hidden)
        theirs, tf_note = (None, "--no-tf") if extra.no_tf else run_tf_peer(path, rows, reps, min_after, hidden)

    table, printed = _pipeline_rows(ours, theirs, tf_note, rows)
    header = ["row", "records/s", "vs numpy", "exactly once", "queue (min size, ready)", "TF records/s (vs its numpy)"]
    print_table(header, printed)
    training, training_printed = _training_rows(ours["training"], theirs and theirs["training"], tf_note)
    training_header = ["training loop", "steps/s", "vs step alone", "starved steps", "empty", "exactly once",
                       "TF steps/s (vs its step alone), starved, empty"]
    print()
    print_table(training_header, training_printed)
    elapsed = time.perf_counter() - started
    print(f"\nmedians of {reps} run(s) of {rows:,} rows, batch {BATCH}, min_after_dequeue = shuffle buffer "
          f"{min_after}, prefetch {PREFETCH}; training: hidden width {hidden}, {TRAIN_THREADS} readers / parallel "
          f"calls; TF: {theirs['tensorflow'] + ' (tf.compat.v1, subprocess)' if theirs else 'n/a (' + tf_note + ')'}"
          f"; total {elapsed:.0f} s")

    source = source_info()
    source["sources_sha1_at_start"] = sources_at_start
    results = {"benchmark": "input_pipeline", "date": datetime.datetime.now().isoformat(timespec="seconds"),
               "machine": machine_info(), "adplace_source": source, "quick": args.quick, "rows": rows,
               "repetitions": reps, "batch_size": BATCH, "min_after_dequeue": min_after,
               "capacity": min_after + 3 * BATCH, "shuffle_buffer": min_after, "prefetch": PREFETCH,
               "threads": list(THREADS), "training_threads": TRAIN_THREADS, "hidden": hidden,
               "rows_consumed": ours["rows_consumed"], "times_s": ours["times"],
               "tensorflow": theirs["tensorflow"] if theirs else None, "tf_skipped": tf_note,
               "pandas_skipped": pandas_note, "tf_times_s": theirs["times"] if theirs else None,
               "benchmarks": table, "training": training,
               "table": [dict(zip(header, r)) for r in printed],
               "training_table": [dict(zip(training_header, r)) for r in training_printed], "elapsed_s": elapsed}
    write_results(results, args.out)
    return 0


def _busy_text(busy: dict | None) -> str:
    if not busy or not busy["samples"]:
        return "n/a"
    return f"min {busy['min_size']}, ready {busy['ready']:.0%}"


if __name__ == "__main__":
    sys.exit(main())
