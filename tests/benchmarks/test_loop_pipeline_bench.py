"""Smoke test for benchmarks/loop_pipeline.py: the quick run finishes, checks adplace against NumPy and reports the
three variants (no timing is asserted)."""
from script_module import run_quick_benchmark


def test_quick_run_reports_the_three_variants(tmp_path):
    report, printed = run_quick_benchmark("loop_pipeline", tmp_path / "loop_pipeline.json")
    assert set(report["median_us"]) == {"in_turn", "pipelined", "numpy_in_turn"}
    assert all(us > 0 for us in report["median_us"].values()) and report["speedup"] > 0
    assert report["pipelined"] in (True, False) and report["parallel_iterations"] == 10
    assert "speed-up" in printed and "pipelined" in printed
