"""Smoke test for benchmarks/dispatch.py: the quick run finishes and reports every row (no timing is asserted)."""
from script_module import run_quick_benchmark


def test_quick_run_reports_every_row(tmp_path):
    report, printed = run_quick_benchmark("dispatch", tmp_path / "dispatch.json")
    rows = {row["benchmark"] for row in report["table"]}
    assert {"trivial", "chain1000", "place+plan 1e4", "place+plan 1e5"} <= rows
    assert any(name.startswith("adam10") for name in rows)
    for name in ("trivial", "chain1000"):
        assert report["benchmarks"][name]["ratio"] > 0
    assert "trivial" in printed and "met?" in printed
