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


def test_workflow_loads_adplace_jl_from_a_wheel_in_a_fresh_environment():
    """The one check of `jl.seval("using ADPlace")` from an installed wheel (no Julia here): the workflow builds the
    wheel, installs it with the julia extra into a new venv, and loads ADPlace from outside the checkout."""
    workflow = (ROOT / ".github" / "workflows" / "julia.yml").read_text()
    step = workflow[workflow.index("ADPlace from a wheel, in a fresh environment"):]
    assert "pip wheel --no-deps -w dist ." in step and "python -m venv /tmp/fresh" in step
    assert '/tmp/fresh/bin/pip install "$(ls dist/adplace-*.whl)[julia]"' in step
    assert "cd /tmp && " in step and "jl.seval('using ADPlace')" in step
