"""Tests for adplace/cli.py and the README's promises about it."""
import json
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
    assert cli.main(["demo", "--trace-dir", str(tmp_path)]) == 0
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


def test_console_script_runs_demo(tmp_path):
    result = subprocess.run([sys.executable, "-m", "adplace.cli", "demo", "--virtual-gpus", "2", "--steps", "100",
                             "--trace-dir", str(tmp_path)], capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert result.returncode == 0, result.stderr
    assert "Using 2 virtual GPU(s) as asked" in result.stdout


def test_readme_has_exactly_two_setup_commands_and_ci_runs_the_test_one():
    readme = (ROOT / "README.md").read_text()
    quick_start = readme.split("## Quick start", 1)[1].split("\n## ", 1)[0]
    commands = re.findall(r"```bash\n(.+?)\n```", quick_start)
    assert len(commands) == 2
    demo_cmd, test_cmd = commands
    assert demo_cmd.endswith("adplace demo") and "pip install ." in demo_cmd
    assert '".[test]"' in test_cmd and "pytest" in test_cmd
    assert test_cmd in (ROOT / ".ci" / "run").read_text()


def test_readme_python_examples_print_what_they_claim(capsys, tmp_path, monkeypatch):
    readme = (ROOT / "README.md").read_text()
    blocks = re.findall(r"```python\n(.+?)```", readme, re.S)
    assert len(blocks) == 3
    monkeypatch.chdir(tmp_path)
    for block, value in zip(blocks, ["0.6663667", "[2. 1.]", "Cos:0 -> GPU:0, 4 bytes"]):
        tf.reset_default_graph()
        exec(compile(block.replace("/tmp/", str(tmp_path) + "/"), "README.md", "exec"), {})
        out = capsys.readouterr().out
        claimed = [line.split("# ", 1)[1] for line in block.splitlines() if line.startswith("# ")]
        assert claimed and all(line in out for line in claimed), (claimed, out)
        assert value in out
    assert (tmp_path / "adplace-example.npz").exists()
    assert json.loads((tmp_path / "true.json").read_text())["traceEvents"]
