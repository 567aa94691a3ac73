"""Smoke test for benchmarks/cluster.py: the quick run trains both models on every quick cluster shape on a local
Ray cluster (and on TF's gRPC runtime when TensorFlow is installed), and reports steps/s and bytes per step against
the minimum (no timing is asserted)."""
import importlib.util

import pytest
from script_module import run_quick_benchmark

pytestmark = pytest.mark.skipif(importlib.util.find_spec("ray") is None,
                                reason="Ray is not installed (pip install '.[distributed]')")


def test_quick_run_reports_every_model_and_cluster_shape(tmp_path):
    report, printed = run_quick_benchmark("cluster", tmp_path / "cluster.json")
    assert [(row["model"], row["workers"], row["ps"]) for row in report["table"]] == [
        ("poly", "1", "1"), ("mlp", "1", "1"), ("poly", "2", "2"), ("mlp", "2", "2")]
    for name, bench in report["benchmarks"].items():
        assert bench["adplace_steps_per_s"] > 0
        before, after = bench["adplace_loss"]
        assert after < before, name  # the workers trained the shared parameters
        # at least the minimum (parameters down, gradients up), and no value moved twice
        assert bench["min_bytes_per_step"] <= bench["bytes_per_step"] < 1.01 * bench["min_bytes_per_step"] + 64
        if report["tensorflow"]:
            assert bench["tf_steps_per_s"] > 0 and bench["tf_loss"][1] < bench["tf_loss"][0]
    assert report["benchmarks"]["mlp_w1_ps1"]["min_bytes_per_step"] == 2 * 4 * (784 * 256 + 256 + 256 * 10 + 10)
    assert "bytes/step" in printed and "adplace steps/s" in printed
