"""Smoke test for benchmarks/control_flow.py: the quick run checks adplace's while loops, their gradients and the
TensorArray rows against the hand-written NumPy loops (and TF's, where installed; it fails if any disagree) and
reports per-iteration costs and ratios for every row (no timing is asserted)."""
import importlib.util

from script_module import run_quick_benchmark

ROWS = {"decay", "decay_grad", "heat", "heat_grad", "heat_ta", "heat_ta_grad"}


def test_quick_run_reports_every_row_against_numpy_and_tf(tmp_path):
    report, printed = run_quick_benchmark("control_flow", tmp_path / "control_flow.json")
    assert report["quick"] and report["iterations"] == {"decay": 1000, "heat": 100}
    assert set(report["benchmarks"]) == ROWS
    has_tf = importlib.util.find_spec("tensorflow") is not None
    for row in report["benchmarks"].values():
        assert row["adplace_us_per_iteration"] > 0 and row["numpy_us_per_iteration"] > 0
        assert row["adplace_over_numpy"] == row["adplace_median_us"] / row["numpy_median_us"]
        assert (row["adplace_over_tf"] is not None) == has_tf
    assert (report["tensorflow"] is not None) == has_tf
    assert "adplace/numpy" in printed and "decay_grad" in printed
