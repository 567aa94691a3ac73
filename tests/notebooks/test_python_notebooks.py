"""notebooks/*.ipynb with a Python kernel: each runs top to bottom in a fresh kernel on virtual GPUs, and its stored
outputs are those of such a run (so they render on GitHub as they ran)."""
import ast
import base64
import copy
import re
import struct
from pathlib import Path

import pytest
from script_module import load_script

_WHY = 'the notebook tests need nbformat, nbclient and ipykernel (pip install "adplace[test]")'
nbformat = pytest.importorskip("nbformat", reason=_WHY)
pytest.importorskip("nbclient", reason=_WHY)
pytest.importorskip("ipykernel", reason=_WHY)
pytest.importorskip("matplotlib", reason='the notebooks plot with matplotlib (pip install "adplace[test]")')

NOTEBOOKS = Path(__file__).resolve().parents[2] / "notebooks"
CELL_TIMEOUT_S = 120  # nbclient's limit per cell; each notebook takes seconds


# notebooks/ is not a package
execute = load_script(NOTEBOOKS / "execute.py", "adplace_notebooks_execute")
PYTHON_NOTEBOOKS = execute.python_notebooks(NOTEBOOKS)
by_name = pytest.mark.parametrize("path", PYTHON_NOTEBOOKS, ids=[p.name for p in PYTHON_NOTEBOOKS])


def _stored(name: str):
    return nbformat.read(NOTEBOOKS / name, as_version=4)


def _code_cells(nb) -> list:
    return [c for c in nb.cells if c.cell_type == "code"]


def _text(value) -> str:
    return "".join(value) if isinstance(value, list) else str(value)


def _streams(cell, name: str = "stdout") -> str:
    return "".join(_text(o.text) for o in cell.outputs if o.output_type == "stream" and o.name == name)


def _cell_with(nb, snippet: str):
    """The one code cell whose source contains `snippet`."""
    found = [c for c in _code_cells(nb) if snippet in c.source]
    assert len(found) == 1, f"{len(found)} code cells contain {snippet!r}"
    return found[0]


def _pngs(cell) -> list[bytes]:
    return [base64.b64decode(o.data["image/png"]) for o in cell.outputs if "image/png" in o.get("data", {})]


def _png_size(png: bytes) -> tuple[int, int]:
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    return struct.unpack(">II", png[16:24])   # the IHDR chunk: width, height


def _markdown(cell) -> str:
    return "".join(_text(o.data["text/markdown"]) for o in cell.outputs if "text/markdown" in o.get("data", {}))


_CUDA_REASON = re.compile(r"^No CUDA GPU: .*$", re.M)


def _comparable(nb):
    """A copy without the line that says why CUDA is unavailable (CuPy missing here, no driver elsewhere)."""
    nb = copy.deepcopy(nb)
    for cell in _code_cells(nb):
        for out in cell.outputs:
            if out.output_type == "stream":
                out.text = _CUDA_REASON.sub("No CUDA GPU: (reason)", _text(out.text))
    return nb


def _is_definitions_only(source: str) -> bool:
    """True for a cell that only imports, defines and assigns (so it is silent on purpose)."""
    code = "\n".join(line for line in source.splitlines() if not line.lstrip().startswith(("%", "!")))
    silent = (ast.Import, ast.ImportFrom, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Assign,
              ast.AnnAssign)
    return all(isinstance(stmt, silent) for stmt in ast.parse(code).body)


# --- every Python notebook -----------------------------------------------------------------------------------------
def test_the_python_notebooks_are_found():
    assert {"placement.ipynb", "multi_gpu.ipynb"} <= {p.name for p in PYTHON_NOTEBOOKS}


@by_name
def test_notebook_runs_and_reproduces_its_stored_outputs(path, monkeypatch):
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "")   # the stored outputs were made on virtual GPUs
    monkeypatch.delenv("ADPLACE_PROGRESS", raising=False)   # the kernel shows the progress bars
    ran = execute.execute(path, timeout=CELL_TIMEOUT_S)
    errors = [(i, o.ename, o.evalue) for i, c in enumerate(_code_cells(ran)) for o in c.outputs
              if o.output_type == "error"]
    assert errors == []
    fresh, stored = (execute.outline(_comparable(nb)) for nb in (ran, nbformat.read(path, as_version=4)))
    assert fresh == stored, _stale_message(path.name, fresh, stored)


def _stale_message(name: str, fresh: list, stored: list) -> str:
    """Which code cells differ between a fresh run and the stored outputs, and how to refresh them."""
    if len(fresh) != len(stored):
        where = f"{len(fresh)} code cells ran, {len(stored)} are stored"
    else:
        first = next(i for i, (a, b) in enumerate(zip(fresh, stored)) if a != b)
        where = f"code cell {first} (0-based) and maybe later ones; fresh: {fresh[first]}, stored: {stored[first]}"
    return (f"{name}: the stored outputs are not those of a fresh run ({where}). Run "
            f"`python notebooks/execute.py {name}` and commit the notebook.")


@by_name
def test_notebook_is_valid_and_was_run_top_to_bottom(path):
    nb = nbformat.read(path, as_version=4)
    nbformat.validate(nb)
    kernel = nb.metadata["kernelspec"]
    assert (kernel["name"], kernel["language"]) == ("python3", "python")
    cells = _code_cells(nb)
    assert [c.execution_count for c in cells] == list(range(1, len(cells) + 1))
    silent = [i for i, c in enumerate(cells) if not c.outputs and not _is_definitions_only(c.source)]
    assert silent == [], f"{path.name}: code cells {silent} have no stored output (run notebooks/execute.py)"


def test_definitions_only_cells_may_be_silent():
    assert _is_definitions_only("%matplotlib inline\nimport os\nX = 1\ndef f():\n    print(1)\n")
    assert not _is_definitions_only("import os\nprint(os.sep)")
    assert not _is_definitions_only("for i in range(3):\n    i")


# --- placement.ipynb -----------------------------------------------------------------------------------------------
def test_placement_notebook_shows_the_placement_log_in_its_outputs():
    nb = _stored("placement.ipynb")
    log = _streams(_cell_with(nb, "log_device_placement=True))"))
    assert re.search(r"^b: \(Sin\): /job:localhost/replica:0/task:0/device:GPU:0$", log, re.M)
    assert re.search(r"^a: \(VariableV2\): /job:localhost/replica:0/task:0/device:CPU:0$", log, re.M)
    assert re.search(r"^c = cos\(sin\(1\)\) = 0\.666367$", log, re.M)
    soft = _streams(_cell_with(nb, "allow_soft_placement=True"))
    assert re.search(r"^counter: \(VariableV2\): /job:localhost/replica:0/task:0/device:CPU:0\n"
                     r"  \(soft placement: requested /device:GPU:0", soft, re.M)
    assert "counter = 3" in soft


def test_placement_notebook_shows_devices_scopes_and_the_error_without_soft_placement():
    nb = _stored("placement.ipynb")
    devices = _streams(_cell_with(nb, 'cli.main(["devices"])'))
    assert "/job:localhost/replica:0/task:0/device:GPU:1  (virtual GPU" in devices
    assert "x: requested '/job:localhost/replica:0/device:GPU:1'" in _streams(_cell_with(nb, "tf.device(None)"))
    assert "a                VariableV2 requested '/device:CPU:0'" in _streams(_cell_with(nb, "print(\"variable ops"))
    error = _streams(_cell_with(nb, "except tf.errors.InvalidArgumentError"))
    assert error.startswith("InvalidArgumentError: Cannot assign a device for operation counter")
    assert "| `a/Assign` | `Assign` | `/device:CPU:0` | `CPU:0` |" in _markdown(_cell_with(nb, "placement_table()"))


def test_placement_notebook_compares_colocation_and_draws_both_side_by_side():
    nb = _stored("placement.ipynb")
    table = _streams(_cell_with(nb, "format_comparison("))
    assert re.search(r"^colocate=True +\d+ +\d+ +3 +12$", table, re.M)
    assert re.search(r"^colocate=False +\d+ +\d+ +1 +4$", table, re.M)
    assert "| `gradients/c_grad/Sin` | `Sin` | `CPU:0` | `GPU:0` |" in _markdown(_cell_with(nb, "def adcme_gradient"))
    for snippet in ("profiler.plot_timeline(", "profiler.plot_placement("):
        pngs = _pngs(_cell_with(nb, snippet))
        assert len(pngs) == 1, snippet
        width, height = _png_size(pngs[0])
        assert width > 2 * height, (snippet, width, height)   # two panels side by side


def test_placement_notebook_fits_the_heat_coefficient_with_the_loop_on_gpu_0():
    nb = _stored("placement.ipynb")
    where = _streams(_cell_with(nb, 'startswith("while_1/")'))
    assert re.search(r"^theta on CPU:0, loss on GPU:0, the model's \d+ loop ops on \['GPU:0'\]$", where, re.M)
    fit = re.search(r"^fitted theta = \[(\S+), (\S+)\] \(true \[0\.2, -0\.6\]\), error (\S+)$",
                    _streams(_cell_with(nb, "tf.adcme.bfgs(")), re.M)
    assert fit and (float(fit[1]), float(fit[2])) == (0.2, -0.6) and float(fit[3]) < 1e-6
    assert len(_pngs(_cell_with(nb, "u_fit = sess.run(u_sensors)"))) == 1


# --- multi_gpu.ipynb -----------------------------------------------------------------------------------------------
def test_multi_gpu_notebook_shows_progress_bars_with_the_loss():
    nb = _stored("multi_gpu.ipynb")
    bars = _streams(_cell_with(nb, "results = {n: train(n)"), "stderr")
    for towers in (1, 2, 4):
        assert re.search(rf"^{towers} tower\(s\): 100%\|█+\| (\d+)/\1 \[.*, loss=[-+.\de]+\]$", bars, re.M), towers
    summary = _markdown(_cell_with(nb, '"ops in the graph"'))
    assert "| 4 |" in summary and "GPU:0, GPU:1, GPU:2, GPU:3" in summary


def test_multi_gpu_notebook_plots_the_loss_and_step_times_and_tables_the_ps_placement():
    nb = _stored("multi_gpu.ipynb")
    assert len(_pngs(_cell_with(nb, "ax.semilogy("))) == 1
    assert len(_pngs(_cell_with(nb, "ax.bar("))) == 1
    table = _markdown(_cell_with(nb, "replica_device_setter(ps_tasks=2"))
    assert table.startswith("| op | type | bytes | round robin | greedy by bytes |")
    assert "| `w1` | `VariableV2` | `313600` | `/job:ps/task:0` | `/job:ps/task:0` |" in table
    assert "| `w2` | `VariableV2` | `4000` | `/job:ps/task:0` | `/job:ps/task:1` |" in table
    assert "| `MatMul` | `MatMul` |  | `/job:worker` | `/job:worker` |" in table
