"""Smoke test for benchmarks/blas_policy.py: each worker runs the MLP step with its variant of the BLAS thread policy
(the policy off in "off" only) and every variant reports a time and its ratio to "off". No timing is asserted."""
from pathlib import Path

import pytest
from script_module import load_script

ROOT = Path(__file__).resolve().parents[2]
pytest.importorskip("threadpoolctl", reason="the BLAS thread policy needs threadpoolctl")


def test_each_variant_runs_in_its_own_worker_with_its_policy(monkeypatch):
    monkeypatch.syspath_prepend(str(ROOT / "benchmarks"))
    bench = load_script(ROOT / "benchmarks" / "blas_policy.py", "blas_policy_bench")
    monkeypatch.setattr(bench, "STEPS_PER_BATCH", 2)
    monkeypatch.setattr(bench, "SETTLE_S", 0.0)
    result = bench.run_condition(busy=0, rounds=2)
    assert set(result) == set(bench.VARIANTS)
    assert {v: r["policy_enabled"] for v, r in result.items()} == {"off": False, "size_rule": True, "policy": True}
    for variant, r in result.items():
        assert len(r["samples_us"]) == 2 and r["median_us"] > 0, variant
    assert result["off"]["ratio_to_off"] == 1.0
