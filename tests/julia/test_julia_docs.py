"""The README's Julia script is the example the Julia tests run, and CI runs those tests on two Julia versions."""
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _code_lines(text: str) -> list[str]:
    return [line.rstrip() for line in text.splitlines() if line.strip() and not line.lstrip().startswith("#")]


def test_readme_julia_script_is_the_tested_example_in_order():
    readme = (ROOT / "README.md").read_text()
    (script,) = [b for b in re.findall(r"```julia\n(.+?)```", readme, re.S) if "PS_OPS = " in b]
    example = _code_lines((ROOT / "julia" / "examples" / "adcme_colocation.jl").read_text())
    position = 0
    for line in _code_lines(script):
        assert line in example[position:], f"README line not in julia/examples/adcme_colocation.jl (in order): {line}"
        position = example.index(line, position) + 1
    assert "adcme_colocation.jl" in (ROOT / "julia" / "test" / "runtests.jl").read_text()


def test_workflow_runs_pkg_test_on_julia_1_10_and_the_current_release():
    workflow = (ROOT / ".github" / "workflows" / "julia.yml").read_text()
    assert re.search(r'julia: \["1\.10", "1"\]', workflow)
    assert "${{ matrix.julia }}" in workflow
    assert "julia --project=julia -e 'using Pkg; Pkg.test()'" in workflow
    assert 'pip install -e ".[julia]"' in workflow and "JULIA_PYTHONCALL_EXE" in workflow
