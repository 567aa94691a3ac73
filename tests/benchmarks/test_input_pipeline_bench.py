"""Smoke test for benchmarks/input_pipeline.py: a tiny run (200 rows, one repetition, no TF) of the queue-based CSV
pipeline for 1, 2 and 4 runner threads and of the tf.data pipeline for 1, 2 and 4 parallel calls must hand out every
record exactly once (labels are row indices), as the NumPy baseline does, and report rates, ratios and the queue
samples; the training loops (fed by the queue, by tf.data, from memory) must each see every record once and report
steps/s and starved fractions (no timing is asserted)."""
import json
import subprocess
import sys

from script_module import ROOT


def test_tiny_run_consumes_every_record_once_and_reports_rates(tmp_path):
    out = tmp_path / "input_pipeline.json"
    done = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "input_pipeline.py"), "--quick", "--rows", "200",
                           "--reps", "1", "--no-tf", "--out", str(out)], capture_output=True, text=True, timeout=300,
                          cwd=ROOT)
    assert done.returncode == 0, done.stderr[-2000:]
    report = json.loads(out.read_text())
    assert report["rows"] == 200 and report["repetitions"] == 1 and report["tensorflow"] is None
    assert report["tf_skipped"] == "--no-tf" and report["hidden"] == 64
    variants = [f"{kind}{t}" for kind in ("T=", "data P=") for t in (1, 2, 4)]
    assert report["rows_consumed"] == {**{v: 200 for v in variants}, "numpy": 200,
                                       **({"pandas": 200} if report["pandas_skipped"] is None else {})}
    numpy_rate = report["benchmarks"]["numpy"]["records_per_s"]
    assert report["benchmarks"]["numpy"]["exactly_once"] and numpy_rate > 0
    for label in ("shuffle_batch T", "tf.data P"):
        for t in (1, 2, 4):
            row = report["benchmarks"][f"{label}={t}"]
            assert row["threads"] == t and row["adplace_exactly_once"] is True
            assert row["adplace_records_per_s"] == 200 / row["adplace_median_s"] > 0
            assert row["adplace_over_numpy"] == row["adplace_records_per_s"] / numpy_rate
            assert row["tf_records_per_s"] is None
    assert set(report["benchmarks"]["shuffle_batch T=2"]["adplace_busy"]) >= {"never_empty", "ready", "samples"}
    assert report["benchmarks"]["tf.data P=2"]["adplace_busy"] is None
    training = report["training"]
    assert set(training) == {"training fed by shuffle_batch", "training fed by tf.data",
                             "training from memory (feed_dict)"}
    for row in training.values():
        ours = row["adplace"]
        assert ours["exactly_once"] is True and ours["steps"] == 2  # 200 rows in batches of 128
        assert ours["steps_per_s"] > 0 and row["tf"] is None
    alone = training["training from memory (feed_dict)"]
    assert alone["adplace_over_step_alone"] == 1.0 and alone["adplace"]["starved"] is None
    for line in ("shuffle_batch T=4", "tf.data P=4", "training fed by tf.data", "records/s", "steps/s"):
        assert line in done.stdout


def test_training_loop_samples_starved_steps_in_steady_state(tmp_path):
    """Enough rows for a steady state: the queue- and tf.data-fed loops report starved fractions in [0, 1] over
    their sampled steps, and every record is trained on exactly once."""
    out = tmp_path / "input_pipeline.json"
    done = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "input_pipeline.py"), "--quick", "--rows", "1500",
                           "--reps", "1", "--no-tf", "--out", str(out)], capture_output=True, text=True, timeout=300,
                          cwd=ROOT)
    assert done.returncode == 0, done.stderr[-2000:]
    training = json.loads(out.read_text())["training"]
    for name in ("training fed by shuffle_batch", "training fed by tf.data"):
        ours = training[name]["adplace"]
        assert ours["exactly_once"] is True and ours["steps"] == 12  # ceil(1500 / 128)
        assert ours["steady_samples"] > 0 and 0.0 <= ours["starved"] <= 1.0 and 0.0 <= ours["empty"] <= 1.0
