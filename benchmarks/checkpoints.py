"""Checkpoint benchmark: saving and restoring a 200 MB checkpoint (4 float32 variables of 50 MB) with
tf.train.Saver (TF's V2 format), against np.save / np.load of the same arrays (the floor) and TF itself.

    python benchmarks/checkpoints.py            # full run (about a minute), writes benchmarks/results/checkpoints.json
    python benchmarks/checkpoints.py --quick    # smoke run: 20 MB, 3 samples (JSON to $TMPDIR)

Rows (every number a median of interleaved samples, files in one temporary directory on the same disk):
  save     adplace: saver.save(sess, prefix, write_meta_graph=False, write_state=False), as TF's row: one step
           running SaveV2, its files fsynced and renamed into place. numpy: np.save of each array to its own .npy
           (no fsync, no checksums: the floor); numpy+fsync: the same with each file fsynced (what a crash-safe
           write must pay at least).
  restore  adplace: saver.restore(sess, prefix): the index checked against the variables, then one step running
           RestoreV2 (reads, CRC-32C checks) and the Assigns. numpy: np.load of each .npy file.
  TF       tf.compat.v1.train.Saver save/restore of variables of the same shapes, TF 2.x in graph mode, timed in a
           subprocess (skipped without TensorFlow).
The files are read back from the page cache in every column alike (they were just written).
"""
from __future__ import annotations

import datetime
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np

import adplace as tf

try:  # run as a script (benchmarks/ is sys.path[0]) or imported as benchmarks.checkpoints
    from dispatch import _fmt_time, _sources_digest, machine_info, parse_args, print_table, source_info, write_results
except ImportError:  # pragma: no cover - the package-style import
    from benchmarks.dispatch import (_fmt_time, _sources_digest, machine_info, parse_args, print_table, source_info,
                                     write_results)

N_VARIABLES = 4


def _shapes(total_mb: int) -> list[list[int]]:
    rows = total_mb * 1_000_000 // (N_VARIABLES * 4 * 2500)
    return [[rows, 2500]] * N_VARIABLES


def _median_us(times: list[float]) -> float:
    return statistics.median(times) * 1e6


def _numpy_save(arrays, directory: str, fsync: bool) -> None:
    for i, array in enumerate(arrays):
        with open(os.path.join(directory, f"a{i}.npy"), "wb") as f:
            np.save(f, array)
            if fsync:
                f.flush()
                os.fsync(f.fileno())


def _numpy_load(directory: str) -> list:
    return [np.load(os.path.join(directory, f"a{i}.npy")) for i in range(N_VARIABLES)]


def bench_adplace_and_numpy(shapes, samples: int, directory: str) -> dict:
    rng = np.random.default_rng(0)
    arrays = [rng.random(shape, dtype=np.float32) for shape in shapes]
    times: dict[str, list[float]] = {k: [] for k in ("adplace_save", "adplace_restore", "numpy_save",
                                                     "numpy_fsync_save", "numpy_load")}
    prefix = os.path.join(directory, "adplace", "model")
    os.makedirs(os.path.dirname(prefix))
    os.makedirs(os.path.join(directory, "numpy"))
    with tf.Graph().as_default():
        variables = [tf.Variable(a, name=f"v{i}") for i, a in enumerate(arrays)]
        saver = tf.train.Saver()
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            saver.save(sess, prefix, write_meta_graph=False, write_state=False)  # warm-up (plans compiled)
            saver.restore(sess, prefix)
            for _ in range(samples):
                started = time.perf_counter()
                saver.save(sess, prefix, write_meta_graph=False, write_state=False)
                times["adplace_save"].append(time.perf_counter() - started)
                for key, fsync in (("numpy_save", False), ("numpy_fsync_save", True)):
                    started = time.perf_counter()
                    _numpy_save(arrays, os.path.join(directory, "numpy"), fsync)
                    times[key].append(time.perf_counter() - started)
                started = time.perf_counter()
                saver.restore(sess, prefix)
                times["adplace_restore"].append(time.perf_counter() - started)
                started = time.perf_counter()
                loaded = _numpy_load(os.path.join(directory, "numpy"))
                times["numpy_load"].append(time.perf_counter() - started)
            restored = sess.run(variables)
    for a, b, c in zip(arrays, restored, loaded):
        assert np.array_equal(a, b) and np.array_equal(a, c)
    return {key: {"median_us": _median_us(v), "min_us": min(v) * 1e6, "all_us": [t * 1e6 for t in v]}
            for key, v in times.items()}


# --- TF, in a subprocess ----------------------------------------------------------------------------------------------
def tf_peer(shapes, samples: int, directory: str) -> dict:
    """TF's Saver save/restore medians (run in this file's `--tf-peer` mode, in a subprocess)."""
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    import tensorflow as real_tf
    real_tf.compat.v1.disable_eager_execution()
    rng = np.random.default_rng(0)
    for i, shape in enumerate(shapes):
        real_tf.compat.v1.Variable(rng.random(shape, dtype=np.float32), name=f"v{i}")
    saver = real_tf.compat.v1.train.Saver()
    prefix = os.path.join(directory, "model")
    times: dict[str, list[float]] = {"tf_save": [], "tf_restore": []}
    with real_tf.compat.v1.Session() as sess:
        sess.run(real_tf.compat.v1.global_variables_initializer())
        saver.save(sess, prefix, write_meta_graph=False, write_state=False)
        saver.restore(sess, prefix)
        for _ in range(samples):
            started = time.perf_counter()
            saver.save(sess, prefix, write_meta_graph=False, write_state=False)
            times["tf_save"].append(time.perf_counter() - started)
            started = time.perf_counter()
            saver.restore(sess, prefix)
            times["tf_restore"].append(time.perf_counter() - started)
    return {"tensorflow": real_tf.__version__,
            **{key: {"median_us": _median_us(v), "min_us": min(v) * 1e6, "all_us": [t * 1e6 for t in v]}
               for key, v in times.items()}}


def run_tf_peer(shapes, samples: int, directory: str) -> dict | None:
    import importlib.util
    if importlib.util.find_spec("tensorflow") is None:
        return None
    os.makedirs(directory)
    done = subprocess.run([sys.executable, os.path.abspath(__file__), "--tf-peer", json.dumps(shapes), str(samples),
                           directory], capture_output=True, text=True, timeout=1800,
                          env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3", "CUDA_VISIBLE_DEVICES": ""})
    if done.returncode != 0:
        print(f"TF peer failed: {done.stderr[-2000:]}")
        return None
    return json.loads(done.stdout.strip().splitlines()[-1])


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv and argv[0] == "--tf-peer":
        print(json.dumps(tf_peer(json.loads(argv[1]), int(argv[2]), argv[3])))
        return 0
    args = parse_args(argv, "checkpoints", __doc__.splitlines()[0], "20 MB instead of 200 MB; 3 samples")
    total_mb, samples = (20, 3) if args.quick else (200, 7)
    shapes = _shapes(total_mb)
    nbytes = sum(int(np.prod(s)) * 4 for s in shapes)
    sources_at_start = _sources_digest(os.path.dirname(os.path.abspath(tf.__file__)))
    directory = tempfile.mkdtemp(prefix="adplace-ckpt-bench-", dir=os.environ.get("ADPLACE_BENCH_DIR"))
    try:
        ours = bench_adplace_and_numpy(shapes, samples, directory)
        theirs = run_tf_peer(shapes, samples, os.path.join(directory, "tf"))
    finally:
        shutil.rmtree(directory, ignore_errors=True)

    def rate(us: float) -> str:
        return f"{nbytes / us:.0f} MB/s"

    rows = []
    for op, mine, floor, fsync_floor, tf_key in (("save", "adplace_save", "numpy_save", "numpy_fsync_save", "tf_save"),
                                                 ("restore", "adplace_restore", "numpy_load", None, "tf_restore")):
        a, n = ours[mine]["median_us"], ours[floor]["median_us"]
        t = theirs[tf_key]["median_us"] if theirs else None
        rows.append((op, f"{_fmt_time(a)} ({rate(a)})", f"{_fmt_time(n)} ({rate(n)})",
                     _fmt_time(ours[fsync_floor]["median_us"]) if fsync_floor else "-", f"{a / n:.2f}x",
                     f"{_fmt_time(t)} ({rate(t)})" if t else "-", f"{a / t:.2f}x" if t else "-"))
    print(f"{nbytes / 1e6:.0f} MB in {N_VARIABLES} float32 variables of shape {shapes[0]}, {samples} samples")
    print_table(["op", "adplace", "numpy (floor)", "numpy+fsync", "adplace/numpy", "TF", "adplace/TF"], rows)

    source = source_info()
    source["sources_sha1_at_start"] = sources_at_start
    results = {"benchmark": "checkpoints", "date": datetime.datetime.now().isoformat(timespec="seconds"),
               "machine": machine_info(), "adplace_source": source, "quick": args.quick, "samples": samples,
               "bytes": nbytes, "shapes": shapes, "adplace_and_numpy": ours, "tf": theirs,
               "ratios": {"save_vs_numpy": ours["adplace_save"]["median_us"] / ours["numpy_save"]["median_us"],
                          "save_vs_numpy_fsync": ours["adplace_save"]["median_us"]
                          / ours["numpy_fsync_save"]["median_us"],
                          "restore_vs_numpy": ours["adplace_restore"]["median_us"] / ours["numpy_load"]["median_us"],
                          **({"save_vs_tf": ours["adplace_save"]["median_us"] / theirs["tf_save"]["median_us"],
                              "restore_vs_tf": ours["adplace_restore"]["median_us"]
                              / theirs["tf_restore"]["median_us"]} if theirs else {})}}
    write_results(results, args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
