"""Smoke tests for benchmarks/speed.py: a tiny run of adplace and NumPy only (no TF or JAX worker) reports every CPU
row with values that agreed before timing; its GPU rows run on fake GPUs; the value check catches a difference. No
timing is asserted."""
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from script_module import load_script

ROOT = Path(__file__).resolve().parents[2]
CPU_ROWS = ["trivial", "tower_fit", "opt_adam", "opt_rmsprop", "opt_momentum", "opt_adagrad", "opt_adadelta",
            "opt_ftrl", "opt_adagrad_sparse", "chain1000", "chain1000_arith", "mlp_adam", "mlp_adam_1thread"]


def test_quick_run_of_adplace_and_numpy_reports_every_row_with_agreeing_values(tmp_path):
    out = tmp_path / "speed.json"
    done = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "speed.py"), "--quick", "--peers", "none",
                           "--rows", ",".join(CPU_ROWS), "--out", str(out)],
                          capture_output=True, text=True, timeout=600, cwd=ROOT)
    assert done.returncode == 0, done.stderr[-3000:]
    report = json.loads(out.read_text())
    assert list(report["rows"]) == CPU_ROWS
    assert report["missing_peers"] == {} and report["peers"] == {}
    for row, entry in report["rows"].items():
        assert "skipped" not in entry, (row, entry.get("skipped"))
        assert entry["errors"] == {}, (row, entry["errors"])
        assert set(entry["median_us"]) == {"adplace", "numpy"}, row
        assert all(us > 0 for us in entry["median_us"].values())
        assert entry["check"]["adplace"]["agree"], (row, entry["check"])
        assert entry["ratios"]["adplace/numpy"] > 0
        assert "adplace/best_peer" not in entry["ratios"]  # no peer ran
    assert report["rows"]["trivial"]["met"] in (True, False)  # a NumPy-only target is judged
    assert report["rows"]["tower_fit"]["target_unmeasured"] == ["tf"]
    assert report["rows"]["mlp_adam"]["met"] is None  # its target needs TF or JAX
    machine = report["machine"]
    assert machine["cores"] >= 1 and machine["versions"]["numpy"] == np.__version__
    assert report["adplace_source"]["sources_sha1"]
    assert [row["row"] for row in report["table"]] == CPU_ROWS
    assert "adplace/best peer" in done.stdout and "met?" in done.stdout
    markdown = out.with_suffix(".md").read_text()
    assert "| row | adplace | numpy | tf | jax |" in markdown and "| trivial |" in markdown


def test_gpu_rows_run_on_fake_gpus(fake_gpu, tmp_path, monkeypatch):
    monkeypatch.syspath_prepend(str(ROOT / "benchmarks"))
    speed = load_script(ROOT / "benchmarks" / "speed.py", "speed_bench")
    rows = speed.run_gpu(samples=2, quick=True)
    assert rows["gpu_fused_chain"]["of_copy"] > 0 and rows["gpu_fused_chain"]["fused_steps"] >= 1
    assert rows["gpu_mlp"]["median_us"]["adplace"] > 0
    speed.judge("gpu_fused_chain", rows["gpu_fused_chain"])
    assert rows["gpu_fused_chain"]["met"] in (True, False)


@pytest.fixture
def common():
    return load_script(ROOT / "benchmarks" / "peers" / "common.py", "speed_peers_common")


def test_value_check_catches_a_difference_outside_the_sampled_values(common):
    values = np.linspace(-1, 1, 1000)
    want = {"outputs": [common.summary(values[:10])], "state": common.summary(values)}
    assert common.max_error(want, want, 1e-4, 1e-6) == 0.0
    off = values.copy()
    off[1] += 0.5  # not among the 64 sampled values: the sums catch it
    assert common.max_error({"outputs": want["outputs"], "state": common.summary(off)}, want, 1e-4, 1e-6) > 1.0
    short = {"outputs": [common.summary(values[:9])], "state": want["state"]}
    assert common.max_error(short, want, 1e-4, 1e-6) == float("inf")
    assert common.max_error({"outputs": [None], "state": want["state"]}, want, 1e-4, 1e-6) == float("inf")
