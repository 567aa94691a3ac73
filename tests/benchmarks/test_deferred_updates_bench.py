"""Smoke test for benchmarks/deferred_updates.py: its two forms of the Adam step agree bit for bit, and only the
first commits its update after the step. No timing is asserted."""
from pathlib import Path

import numpy as np
import pytest
from script_module import load_script

from adplace.kernels import cpu_fusion
from adplace.runtime import deferred_updates

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.skipif(not cpu_fusion.available(), reason="Numba (the `jit` extra) is not installed")
def test_the_deferred_and_the_immediate_step_differ_only_in_when_they_commit(monkeypatch):
    monkeypatch.syspath_prepend(str(ROOT / "benchmarks"))
    bench = load_script(ROOT / "benchmarks" / "deferred_updates.py", "deferred_updates_bench")
    deferred, immediate, sessions = bench._adam(1 << 13)  # checks the two variables agree bit for bit
    assert deferred_updates.ENABLED
    kinds = []
    for sess in sessions:
        g = sess.graph.get_tensor_by_name("g:0")
        plan = sess.plan_for(sess.graph.get_operation_by_name("Adam"), {g: np.zeros(1 << 13, np.float32)})
        kinds.append([plan.ops[i].type for i in plan.deferred_steps])
    assert kinds == [["ApplyAdam"], []]
    result = bench.compare(deferred, {"immediate": immediate}, samples=2, calls=2)
    assert set(result["median_us"]) == {"adplace", "immediate"}
    for sess in sessions:
        sess.close()
