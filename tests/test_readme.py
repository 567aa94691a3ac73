"""The README's promises: two set-up commands, and every Python example prints exactly the output pasted under it."""
import re
from pathlib import Path

import adplace as tf

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text()


def _fenced_blocks(text: str) -> list[tuple[str, str]]:
    """(language, body) of every fenced block, in order."""
    return re.findall(r"^```(\w*)\n(.*?)^```$", text, re.S | re.M)


def test_readme_has_exactly_two_setup_commands_and_ci_runs_the_test_one():
    quick_start = README.split("## Quick start", 1)[1].split("\n## ", 1)[0]
    commands = [body.strip() for lang, body in _fenced_blocks(quick_start) if lang == "bash"]
    assert len(commands) == 2
    demo_cmd, test_cmd = commands
    assert demo_cmd.startswith("python3 -m venv .venv && .venv/bin/pip install ")
    assert demo_cmd.endswith("&& .venv/bin/adplace demo")
    assert re.search(r'pip install (\.|"\.(\[[a-z,]+\])?") ', demo_cmd), demo_cmd
    assert '".[test,interop]"' in test_cmd and "pytest" in test_cmd
    assert test_cmd in (ROOT / ".ci" / "run").read_text()


def test_demo_extras_exist_in_pyproject():
    demo_cmd = re.search(r"pip install \"\.\[([a-z,]+)\]\" && \.venv/bin/adplace demo", README)
    pyproject = (ROOT / "pyproject.toml").read_text()
    assert demo_cmd, "the demo command installs extras"
    for extra in demo_cmd.group(1).split(","):
        assert re.search(rf"^{extra} = \[", pyproject, re.M), extra


def _python_examples() -> list[tuple[str, str]]:
    """Each ```python block with the ```text block that follows it (its pasted output)."""
    blocks = _fenced_blocks(README)
    pairs = [(body, blocks[i + 1][1]) for i, (lang, body) in enumerate(blocks) if lang == "python"]
    assert all(blocks[i + 1][0] == "text" for i, (lang, _) in enumerate(blocks) if lang == "python"), \
        "every Python example is followed by a ```text block with its output"
    return pairs


def test_readme_python_examples_print_exactly_their_pasted_output(capsys, tmp_path, monkeypatch, virtual_gpus_only):
    examples = _python_examples()
    assert len(examples) >= 3
    monkeypatch.chdir(tmp_path)
    for code, output in examples:
        tf.reset_default_graph()
        exec(compile(code.replace("/tmp/", str(tmp_path) + "/"), "README.md", "exec"), {})
        assert capsys.readouterr().out == output, code
    assert (tmp_path / "adplace-example.index").exists() and (tmp_path / "true.json").exists()


def test_first_example_is_short_and_shows_the_placement_log():
    code, output = _python_examples()[0]
    assert len(code.strip().splitlines()) <= 15
    assert "Sin: (Sin): /job:localhost/replica:0/task:0/device:GPU:0" in output
    assert "Variable: (VariableV2): /job:localhost/replica:0/task:0/device:CPU:0" in output


def test_julia_example_is_the_example_file():
    julia = [body for lang, body in _fenced_blocks(README) if lang == "julia"]
    quickstart = (ROOT / "julia" / "examples" / "quickstart.jl").read_text()
    assert quickstart in julia and len(quickstart.strip().splitlines()) <= 15
    assert "quickstart.jl" in (ROOT / "julia" / "test" / "runtests.jl").read_text()


def test_readme_names_every_notebook():
    notebooks = sorted(p.name for p in (ROOT / "notebooks").glob("*.ipynb"))
    assert notebooks and all(f"`{name}`" in README for name in notebooks)
