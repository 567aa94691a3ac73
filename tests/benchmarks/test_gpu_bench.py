"""Smoke test for benchmarks/gpu.py: on fake CUDA GPUs (tests/fake_cupy.py) the quick run checks adplace's results
against CuPy's and reports every row; without a GPU it says what it needs. No timing is asserted (fake GPUs are
NumPy)."""
import json
import sys
from pathlib import Path

import pytest
from script_module import load_script

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def gpu_bench(monkeypatch):
    monkeypatch.syspath_prepend(str(ROOT / "benchmarks"))
    return load_script(ROOT / "benchmarks" / "gpu.py", "gpu_bench")


def test_quick_run_on_a_fake_gpu_reports_every_row(fake_gpu, gpu_bench, tmp_path, capsys):
    out = tmp_path / "gpu.json"
    assert gpu_bench.main(["--quick", "--out", str(out)]) == 0
    report = json.loads(out.read_text())
    assert report["gpu"]["name"] == "Fake GPU (NumPy)"
    rows = [row["benchmark"] for row in report["table"]]
    assert rows == ["(a) fused chain of 16", "    fused vs unfused", "(b) matmul", "(c) host->GPU",
                    "(d) 1000 tiny ops", "    fused"]
    fused = report["benchmarks"]["fused_chain"]
    assert fused["fused_steps"] < fused["unfused_steps"] and len(fused["fused_groups"]) == 1
    assert len(next(iter(fused["fused_groups"].values()))) == 16
    assert all(b["times"] for b in report["benchmarks"].values())
    assert "met?" in capsys.readouterr().out


def test_without_a_gpu_the_benchmark_says_what_it_needs(gpu_bench, monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "cupy", None)
    from adplace import devices
    devices.cuda_gpus.cache_clear()
    try:
        assert gpu_bench.main(["--quick", "--out", "unused.json"]) == 2
    finally:
        devices.cuda_gpus.cache_clear()
    assert "needs an NVIDIA GPU and CuPy" in capsys.readouterr().err
