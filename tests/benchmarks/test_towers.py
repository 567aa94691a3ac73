"""Smoke test for benchmarks/towers.py: the quick run finishes, checks adplace against NumPy and reports every tower
count (no timing is asserted)."""
from script_module import run_quick_benchmark


def test_quick_run_reports_every_tower_count(tmp_path):
    report, printed = run_quick_benchmark("towers", tmp_path / "towers.json")
    assert [row["towers"] for row in report["table"]] == ["1", "2", "4"]
    for n in (1, 2, 4):
        bench = report["benchmarks"][f"towers{n}"]
        assert bench["speedup"] > 0 and bench["numpy_speedup"] > 0
        assert set(bench["median_us"]) == {"one_device", "n_devices", "inter2", "numpy_turn", "numpy_threads"}
        assert bench["plans"]["one_device"]["mode"] == "sequential"  # inter_op_parallelism_threads=1
        assert bench["plans"]["n_devices"]["mode"] in ("sequential", "parallel")
    assert report["benchmarks"]["towers2"]["met"] in (True, False)
    assert "speed-up" in printed and "met?" in printed
