"""Smoke test for benchmarks/input_pipeline.py: a tiny run (200 rows, one repetition, no TF) of the queue-based CSV
pipeline for 1, 2 and 4 runner threads must hand out every record exactly once (labels are row indices), as the
NumPy baseline does, and report rates, ratios and the queue samples (no timing is asserted)."""
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
    assert report["tf_skipped"] == "--no-tf"
    assert report["rows_consumed"] == {"T=1": 200, "T=2": 200, "T=4": 200, "numpy": 200,
                                       **({"pandas": 200} if report["pandas_skipped"] is None else {})}
    numpy_rate = report["benchmarks"]["numpy"]["records_per_s"]
    assert report["benchmarks"]["numpy"]["exactly_once"] and numpy_rate > 0
    for t in (1, 2, 4):
        row = report["benchmarks"][f"shuffle_batch T={t}"]
        assert row["threads"] == t and row["adplace_exactly_once"] is True
        assert row["adplace_records_per_s"] == 200 / row["adplace_median_s"] > 0
        assert row["adplace_over_numpy"] == row["adplace_records_per_s"] / numpy_rate
        assert row["tf_records_per_s"] is None and set(row["adplace_busy"]) >= {"never_empty", "ready", "samples"}
    assert "shuffle_batch T=4" in done.stdout and "records/s" in done.stdout
