"""Smoke test for benchmarks/concurrency.py: the quick run finishes, alone and against a baseline tree, and its JSON
has every case, thread count and counter check (no timing is asserted)."""
import json
import math
from pathlib import Path

import pytest
from script_module import load_script, run_quick_benchmark

ROOT = Path(__file__).resolve().parents[2]
CASES = ("trivial", "assign_add", "assign_locked", "adam10")
CONFIGS = ("linear2", "dense256", "dense256_blas1")


def check_side(report: dict, side: str) -> None:
    """The cases and thread counts of one side ("before" or "after") are all there, with positive numbers."""
    for case in CASES:
        entry = report["benchmarks"]["dispatch"][case][side]
        assert entry["median_us"] > 0 and entry["numpy_median_us"] > 0 and entry["ratio_vs_numpy"] > 0
    assert report["benchmarks"]["dispatch"]["assign_locked"][side]["locked_over_unlocked"] > 0
    for config in CONFIGS:
        runs = report["benchmarks"]["threads"][config][side]
        assert runs["hung_processes"] == 0
        assert runs["1"]["final_loss"] < runs["1"]["initial_loss"]  # one thread trains
        for n in ("1", "2", "4"):
            entry = runs[n]
            assert entry["steps_per_s"] > 0 and entry["numpy_steps_per_s"] > 0 and entry["speedup"] > 0
            assert math.isfinite(entry["final_loss"])  # Hogwild steps on several threads need not lower it
            assert entry["global_step_exact"] in (True, False) and entry["locked_counter_exact"] in (True, False)
            assert len(entry["runs"]) == len(entry["global_step"]) == len(entry["locked_counter"]) == entry["samples"]


def test_quick_run_of_the_current_tree_reports_every_case(tmp_path):
    report, printed = run_quick_benchmark("concurrency", tmp_path / "concurrency.json")
    assert list(report["sides"]) == ["after"]
    assert Path(report["sides"]["after"]["adplace_file"]).is_relative_to(ROOT / "adplace")
    check_side(report, "after")
    assert "before" not in report["benchmarks"]["dispatch"]["trivial"]
    assert [row["case"] for row in report["table"]] == list(CASES)
    assert {row["model"] for row in report["threads_table"]} == set(CONFIGS)
    assert report["machine"]["cpu_count"] >= 1 and report["machine"]["numpy"] and report["machine"]["python"]
    assert "after/before" in printed and "locked counter exact" in printed


@pytest.fixture
def concurrency_bench(monkeypatch):
    monkeypatch.syspath_prepend(str(ROOT / "benchmarks"))
    return load_script(ROOT / "benchmarks" / "concurrency.py", "concurrency_bench")


def test_against_a_baseline_tree_reports_both_sides_and_the_ratios(concurrency_bench, tmp_path, capsys):
    out = tmp_path / "concurrency.json"
    # this tree as its own baseline: both sides import the same adplace, each in its own subprocess
    assert concurrency_bench.main(["--quick", "--out", str(out), "--baseline-src", str(ROOT), "--repetitions", "1",
                                   "--thread-repetitions", "1"]) == 0
    report = json.loads(out.read_text())
    assert list(report["sides"]) == ["before", "after"]
    assert report["processes_per_side"] == {"dispatch": 1, "threads": 1}
    for side in ("before", "after"):
        check_side(report, side)
    for case in CASES:
        entry = report["benchmarks"]["dispatch"][case]
        assert entry["after_over_before"] > 0 and len(entry["after_over_before_per_pair"]) == 1
    for case in ("trivial", "assign_add"):  # the targets: locking must cost under 5%
        assert report["benchmarks"]["dispatch"][case]["target_ratio_max"] == 1.05
        assert report["benchmarks"]["dispatch"][case]["met"] in (True, False)
    assert {row["side"] for row in report["threads_table"]} == {"before", "after"}
    assert "met?" in capsys.readouterr().out


def test_a_baseline_without_adplace_is_refused(concurrency_bench, tmp_path, capsys):
    with pytest.raises(SystemExit) as exc:
        concurrency_bench.main(["--quick", "--out", str(tmp_path / "x.json"), "--baseline-src", str(tmp_path)])
    assert exc.value.code == 2
    assert "holds no adplace/__init__.py" in capsys.readouterr().err
