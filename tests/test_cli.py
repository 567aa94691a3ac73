"""Tests for adplace/cli.py and the README's promises about it."""
import argparse
import importlib.metadata
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

import adplace as tf
from adplace import cli, devices

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(autouse=True)
def _no_virtual_gpus(monkeypatch):
    monkeypatch.delenv("ADPLACE_VIRTUAL_GPUS", raising=False)
    devices.set_virtual_gpus(None)
    yield
    devices.set_virtual_gpus(None)


def test_demo_uses_two_virtual_gpus_without_a_gpu_and_says_so(capsys, monkeypatch, tmp_path):
    monkeypatch.setattr(devices, "cuda_gpus", lambda: ())
    assert cli.main(["demo", "--trace", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "No GPU found: using 2 virtual GPUs" in out
    assert "a: (VariableV2): /job:localhost/replica:0/task:0/device:CPU:0" in out
    assert "b: (Sin): /job:localhost/replica:0/task:0/device:GPU:0" in out
    assert "c: (Cos): /job:localhost/replica:0/task:0/device:CPU:0" in out
    assert "MatMul_1: (MatMul): /job:localhost/replica:0/task:0/device:GPU:1" in out
    assert "AddN: (AddN): /job:localhost/replica:0/task:0/device:CPU:0" in out
    assert "c = cos(sin(1)) = 0.666367" in out
    assert "[[14. 20.]\n [30. 44.]]" in out
    assert "a/read:0: /job:localhost/replica:0/task:0/device:CPU:0 -> /job:localhost/replica:0/task:0/device:GPU:0" \
        in out
    # gradient colocation on, then off: Sin's gradient (a Cos) on GPU:0, Cos's on CPU:0; off, all on GPU:0
    on, off = out.split("colocate_gradients_with_ops=True:", 1)[1].split("colocate_gradients_with_ops=False:")
    assert "dc/da = -0.402862" in on and "dc/da = -0.402862" in off
    assert re.search(r"gradients/b_grad/Cos +Cos +\S+device:GPU:0", on)
    assert re.search(r"gradients/c_grad/Sin +Sin +\S+device:CPU:0", on)
    assert re.search(r"gradients/c_grad/Sin +Sin +\S+device:GPU:0", off.split("==")[0])
    # both traced runs saved as Chrome traces, then compared: colocation keeps Cos's gradient on the CPU, which
    # costs one more copy (its product goes back to GPU:0 for Sin's gradient)
    for colocate in ("true", "false"):
        trace = json.loads((tmp_path / f"colocate_{colocate}.json").read_text())
        assert {e["name"] for e in trace["traceEvents"] if e["ph"] == "X"} >= {"Sin", "Cos", "_Recv"}
    assert re.search(r"colocate=True +9 +4 +4 +16\n", out) and re.search(r"colocate=False +3 +10 +3 +12\n", out)
    # the polynomial fit: loss every 100 steps, falling; w near [5, 0, 3]
    losses = [float(v) for v in re.findall(r"step +\d+ +loss +(\S+)", out)]
    assert len(losses) == 10 and losses[-1] < losses[0] / 5
    w = [float(v) for v in re.search(r"final w = \[([^\]]+)\]", out).group(1).split()]
    assert abs(w[0] - 5) < 0.05 and abs(w[1]) < 0.05 and abs(w[2] - 3) < 1.5
    assert "matmul gradients ran on /job:localhost/replica:0/task:0/device:GPU:0, " \
           "/job:localhost/replica:0/task:0/device:GPU:1" in out
    # every traced run as JSON and a PNG timeline, listed at the end; the fit's traced step ran on both GPUs
    names = [f"{run}.{ext}" for run in ("colocate_true", "colocate_false", "polynomial_fit") for ext in ("json", "png")]
    assert out.split("== Files written ", 1)[1].split("\n", 1)[1].split() == [str(tmp_path / n) for n in names]
    for name in names[1::2]:
        assert (tmp_path / name).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n", name
    fit = json.loads((tmp_path / "polynomial_fit.json").read_text())
    devices_used = {e["args"]["name"] for e in fit["traceEvents"] if e["ph"] == "M" and e["name"] == "process_name"}
    assert any("GPU:0" in d for d in devices_used) and any("GPU:1" in d for d in devices_used), devices_used


def test_devices_lists_virtual_gpus_marked_virtual(capsys):
    assert cli.main(["devices", "--virtual-gpus", "3"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("/job:localhost/replica:0/task:0/device:CPU:0")
    gpu_lines = [line for line in lines if "device:GPU:" in line]
    assert len(gpu_lines) == 3 and all("virtual GPU" in line for line in gpu_lines)


def test_devices_without_gpus_explains_how_to_get_virtual_ones(capsys, monkeypatch):
    monkeypatch.setattr(devices, "cuda_gpus", lambda: ())
    assert cli.main(["devices"]) == 0
    assert "ADPLACE_VIRTUAL_GPUS=N" in capsys.readouterr().out


def test_bad_virtual_gpu_env_is_a_clear_error_not_a_traceback(capsys, monkeypatch):
    monkeypatch.setenv("ADPLACE_VIRTUAL_GPUS", "two")
    assert cli.main(["devices"]) == 2
    assert "ADPLACE_VIRTUAL_GPUS must be a non-negative integer, got 'two'" in capsys.readouterr().err


def test_help_lists_both_subcommands():
    text = cli.build_parser().format_help()
    assert "devices" in text and "demo" in text


def _parsers() -> dict[str, argparse.ArgumentParser]:
    """The top-level parser as "adplace", and each subcommand's parser under its name."""
    parser = cli.build_parser()
    sub, = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    return {"adplace": parser, **sub.choices}


# the environment variables each --help must explain
HELP_ENV_VARS = {"adplace": ["ADPLACE_VIRTUAL_GPUS", "ADPLACE_PROGRESS", "ADPLACE_PLAN_CACHE_SIZE",
                             "ADPLACE_RAY_ADDRESS", "TF_FORCE_GPU_ALLOW_GROWTH", "TF_NUM_INTEROP_THREADS",
                             "TF_NUM_INTRAOP_THREADS", "ADPLACE_CPU_FUSION", "ADPLACE_CACHE_DIR"],
                 "devices": ["ADPLACE_VIRTUAL_GPUS"],
                 "demo": ["ADPLACE_VIRTUAL_GPUS", "ADPLACE_PROGRESS", "ADPLACE_RAY_ADDRESS"]}


@pytest.mark.parametrize("name", HELP_ENV_VARS)
def test_every_help_explains_every_option_its_environment_and_gives_examples(name):
    parser = _parsers()[name]
    text = parser.format_help()
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for choice in action._choices_actions:
                assert choice.help and choice.dest in text, choice.dest
        elif action.help == argparse.SUPPRESS:
            assert not any(s in text for s in action.option_strings), action.option_strings  # a hidden alias
        else:
            assert action.help and all(s in text for s in action.option_strings), action.option_strings
    assert all(var in text for var in HELP_ENV_VARS[name]), name
    assert "\nexamples:\n  adplace " in text


def test_top_level_help_names_every_environment_variable_adplace_reads():
    source = "\n".join(p.read_text() for p in (ROOT / "adplace").rglob("*.py"))
    read = set(re.findall(r"[\"']((?:ADPLACE|TF)_[A-Z0-9_]+)[\"']", source))
    assert read >= {"ADPLACE_VIRTUAL_GPUS", "ADPLACE_PROGRESS"}
    assert sorted(read - set(HELP_ENV_VARS["adplace"])) == []


def test_demo_help_says_what_it_writes():
    text = _parsers()["demo"].format_help()
    for written in ("colocate_true.json", "colocate_false.json", "polynomial_fit.json", "*.png", "adplace[plot]",
                    "chrome://tracing", "default ./adplace-traces"):
        assert written in text, written


def test_version(capsys):
    with pytest.raises(SystemExit) as exit_info:
        cli.main(["--version"])
    assert exit_info.value.code == 0
    assert capsys.readouterr().out.strip() == f"adplace {importlib.metadata.version('adplace')}"


def test_version_falls_back_to_the_source_tree(monkeypatch):
    def not_installed(name):
        raise importlib.metadata.PackageNotFoundError(name)

    monkeypatch.setattr(importlib.metadata, "version", not_installed)
    assert cli._version() == tf.__version__


def test_trace_dir_is_a_hidden_alias_of_trace():
    parser = cli.build_parser()
    assert parser.parse_args(["demo"]).trace_dir == "adplace-traces"
    assert parser.parse_args(["demo", "--trace", "a"]).trace_dir == "a"
    assert parser.parse_args(["demo", "--trace-dir", "b"]).trace_dir == "b"


@pytest.mark.parametrize("argv", [["demo", "--steps", "0"], ["devices", "--virtual-gpus", "-1"]])
def test_out_of_range_counts_are_usage_errors(argv, capsys):
    with pytest.raises(SystemExit) as exit_info:
        cli.main(argv)
    assert exit_info.value.code == 2 and "must be at least" in capsys.readouterr().err


def _short_demo(tmp_path) -> int:
    return cli.main(["demo", "--virtual-gpus", "2", "--steps", "100", "--trace", str(tmp_path)])


def test_demo_shows_a_progress_bar_with_the_loss_when_progress_is_on(capsys, monkeypatch, tmp_path):
    monkeypatch.setenv("ADPLACE_PROGRESS", "1")
    assert _short_demo(tmp_path) == 0
    err = capsys.readouterr().err
    assert re.search(r"polynomial fit: 100%.*100/100.*loss=\d", err), err


def test_demo_without_progress_writes_no_carriage_returns_and_prints_the_loss(capsys, monkeypatch, tmp_path):
    monkeypatch.setenv("ADPLACE_PROGRESS", "0")
    assert _short_demo(tmp_path) == 0
    captured = capsys.readouterr()
    assert "\r" not in captured.err and "\r" not in captured.out
    assert re.search(r"step +100 +loss +\S+", captured.out)


@pytest.mark.parametrize("progress_on", [True, False])
def test_step_lines_are_left_out_only_when_the_bar_shares_the_terminal(capsys, monkeypatch, tmp_path, progress_on):
    monkeypatch.setenv("ADPLACE_PROGRESS", "1" if progress_on else "0")
    monkeypatch.setattr(sys.stdout, "isatty", lambda: True)
    assert _short_demo(tmp_path) == 0
    assert bool(re.search(r"step +100 +loss", capsys.readouterr().out)) is not progress_on


def test_demo_without_matplotlib_writes_the_traces_and_says_why_no_pngs(capsys, monkeypatch, tmp_path):
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # `import matplotlib` now raises ImportError
    assert _short_demo(tmp_path) == 0
    out = capsys.readouterr().out
    assert 'PNG timelines skipped: matplotlib is not installed (pip install "adplace[plot]"' in out
    assert sorted(p.name for p in tmp_path.iterdir()) == ["colocate_false.json", "colocate_true.json",
                                                         "polynomial_fit.json", "tensorboard"]


def test_a_trace_directory_that_cannot_be_made_is_a_one_line_error(capsys, tmp_path):
    not_a_dir = tmp_path / "file"
    not_a_dir.write_text("")
    assert cli.main(["demo", "--virtual-gpus", "2", "--steps", "1", "--trace", str(not_a_dir)]) == 1
    err = capsys.readouterr().err
    assert err.startswith("adplace: ") and str(not_a_dir) in err and "Traceback" not in err


def test_console_script_runs_demo(tmp_path):
    result = subprocess.run([sys.executable, "-m", "adplace.cli", "demo", "--virtual-gpus", "2", "--steps", "100",
                             "--trace", str(tmp_path / "traces")], capture_output=True, text=True, timeout=120,
                            cwd=ROOT, env={**os.environ, "ADPLACE_PROGRESS": "0"})
    assert result.returncode == 0, result.stderr
    assert "Using 2 virtual GPU(s) as asked" in result.stdout
    assert (tmp_path / "traces" / "polynomial_fit.json").is_file()


def test_cluster_demo_without_ray_says_how_to_install_it_and_starts_nothing(capsys, monkeypatch, tmp_path):
    from adplace.distributed import demo
    real_find_spec = demo.importlib.util.find_spec
    monkeypatch.setattr(demo.importlib.util, "find_spec", lambda name, *a: None if name == "ray" else
                        real_find_spec(name, *a))
    assert cli.main(["demo", "--cluster", "--trace", str(tmp_path / "traces")]) == 0
    assert capsys.readouterr().out == demo.MISSING_RAY + "\n"
    assert not (tmp_path / "traces").exists()


def test_demo_steps_default_per_mode():
    parser = cli.build_parser()
    assert parser.parse_args(["demo"]).steps is None and not parser.parse_args(["demo"]).cluster
    args = parser.parse_args(["demo", "--cluster", "--nodes", "3", "--steps", "7"])
    assert (args.cluster, args.nodes, args.steps) == (True, 3, 7)
