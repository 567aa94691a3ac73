"""Tests for adplace/cli.py and the README's promises about it."""
import re
import subprocess
import sys
from pathlib import Path

import pytest

from adplace import cli, devices

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(autouse=True)
def _no_virtual_gpus(monkeypatch):
    monkeypatch.delenv("ADPLACE_VIRTUAL_GPUS", raising=False)
    devices.set_virtual_gpus(None)
    yield
    devices.set_virtual_gpus(None)


def test_demo_uses_two_virtual_gpus_without_a_gpu_and_says_so(capsys, monkeypatch):
    monkeypatch.setattr(devices, "cuda_gpus", lambda: ())
    assert cli.main(["demo"]) == 0
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


def test_console_script_runs_demo():
    result = subprocess.run([sys.executable, "-m", "adplace.cli", "demo", "--virtual-gpus", "2"],
                            capture_output=True, text=True, timeout=120, cwd=ROOT)
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


def test_readme_python_example_prints_what_it_claims(capsys):
    readme = (ROOT / "README.md").read_text()
    block = re.search(r"```python\n(.+?)```", readme, re.S).group(1)
    exec(compile(block, "README.md", "exec"), {})
    out = capsys.readouterr().out
    claimed = [line.split("# ", 1)[1] for line in block.splitlines() if line.startswith("# ")]
    assert claimed and all(line in out for line in claimed)
    assert "0.6663667" in out
