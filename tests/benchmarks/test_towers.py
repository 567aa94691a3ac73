"""Smoke test for benchmarks/towers.py: the quick run finishes, checks adplace against NumPy and reports every tower
count (no timing is asserted)."""
import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_quick_run_reports_every_tower_count(tmp_path):
    out = tmp_path / "towers.json"
    result = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "towers.py"), "--quick", "--out", str(out)],
                            capture_output=True, text=True, timeout=300, cwd=ROOT)
    assert result.returncode == 0, result.stderr[-2000:]
    report = json.loads(out.read_text())
    assert [row["towers"] for row in report["table"]] == ["1", "2", "4"]
    for n in (1, 2, 4):
        bench = report["benchmarks"][f"towers{n}"]
        assert bench["speedup"] > 0 and bench["numpy_speedup"] > 0
        assert set(bench["median_us"]) == {"one_device", "n_devices", "inter2", "numpy_turn", "numpy_threads"}
        assert bench["plans"]["one_device"]["mode"] == "sequential"  # inter_op_parallelism_threads=1
        assert bench["plans"]["n_devices"]["mode"] in ("sequential", "parallel")
    assert report["benchmarks"]["towers2"]["met"] in (True, False)
    assert "speed-up" in result.stdout and "met?" in result.stdout
