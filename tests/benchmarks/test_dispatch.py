"""Smoke test for benchmarks/dispatch.py: the quick run finishes and reports every row (no timing is asserted)."""
import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_quick_run_reports_every_row(tmp_path):
    out = tmp_path / "dispatch.json"
    result = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "dispatch.py"), "--quick", "--out", str(out)],
                            capture_output=True, text=True, timeout=300, cwd=ROOT)
    assert result.returncode == 0, result.stderr[-2000:]
    report = json.loads(out.read_text())
    rows = {row["benchmark"] for row in report["table"]}
    assert {"trivial", "chain1000", "place+plan 1e4", "place+plan 1e5"} <= rows
    assert any(name.startswith("adam10") for name in rows)
    for name in ("trivial", "chain1000"):
        assert report["benchmarks"][name]["ratio"] > 0
    assert "trivial" in result.stdout and "met?" in result.stdout
