"""Smoke test for benchmarks/nn_kernels.py: the quick run checks adplace's conv, pool and cross-entropy rows against
hand-written NumPy (it fails if they disagree) and reports a ratio for every row (no timing is asserted)."""
from script_module import run_quick_benchmark


def test_quick_run_reports_every_row_against_numpy(tmp_path):
    report, printed = run_quick_benchmark("nn_kernels", tmp_path / "nn.json")
    assert set(report["benchmarks"]) == {"conv_fwd", "conv_train", "pool_train", "xent_step"}
    for row in report["benchmarks"].values():
        assert row["adplace_over_numpy"] > 0 and {"adplace", "numpy"} <= set(row["median_us"])
    assert "adplace/numpy" in printed
