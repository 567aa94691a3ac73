"""The notebooks in notebooks/: each one is valid nbformat; placement_julia.ipynb is an IJulia notebook whose code cells
are the `# %%` cells of julia/examples/ (in order, each after its prose, with no outputs) and parse as Julia.

No Julia runs here: the Julia notebook is checked, not executed (its examples run in julia/test/runtests.jl).
"""
import copy
import re
import shutil
from pathlib import Path

import pytest
from script_module import load_script

nbformat = pytest.importorskip("nbformat")

REPO = Path(__file__).resolve().parents[2]
NOTEBOOKS = REPO / "notebooks"
JULIA_NOTEBOOK = NOTEBOOKS / "placement_julia.ipynb"
ALL_NOTEBOOKS = sorted(NOTEBOOKS.glob("*.ipynb"))
KERNELSPEC = {"name": "julia-1.10", "display_name": "Julia 1.10", "language": "julia"}
LANGUAGE_INFO = {"name": "julia", "file_extension": ".jl", "mimetype": "application/julia", "version": "1.10"}
MIN_PROSE_WORDS = 15
REGENERATE = "run `python notebooks/sync_julia.py` to rewrite the notebook's code cells from julia/examples/"


sync_julia = load_script(NOTEBOOKS / "sync_julia.py", "sync_julia")


@pytest.fixture
def julia_nb():
    return nbformat.read(JULIA_NOTEBOOK, as_version=4)


def code_sources(nb) -> list[str]:
    return [cell.source for cell in nb.cells if cell.cell_type == "code"]


def cells_mismatch(stored: list[str], wanted: list[str]) -> str | None:
    """Why the notebook's code cells are not the examples' cells (None when they are)."""
    for k, (have, want) in enumerate(zip(stored, wanted), 1):
        if have != want:
            return f"code cell {k} differs from the examples' cell {k}:\n{have}\n--- expected ---\n{want}\n{REGENERATE}"
    if len(stored) != len(wanted):
        return f"{len(stored)} code cells, but the examples have {len(wanted)} `# %%` cells; {REGENERATE}"
    return None


def code_cells_without_prose(nb) -> list[int]:
    """Indices of code cells not directly after a markdown cell of at least MIN_PROSE_WORDS words."""
    return [k for k, cell in enumerate(nb.cells) if cell.cell_type == "code" and (
        k == 0 or nb.cells[k - 1].cell_type != "markdown" or len(nb.cells[k - 1].source.split()) < MIN_PROSE_WORDS)]


def unlabelled_output_blocks(markdown: str) -> list[str]:
    """```text blocks (shown output) with no "Python equivalent" label earlier in the same cell: Julia output is
    never shown, since none was produced here."""
    found = []
    for match in re.finditer(r"```text\n(.*?)```", markdown, re.S):
        if "Python equivalent" not in markdown[:match.start()]:
            found.append(match.group(1))
    return found


# --- every notebook ---------------------------------------------------------------------------------------------
def test_the_notebooks_exist():
    """The parametrized checks below see both notebooks (an empty glob would make them vacuous)."""
    assert {"placement_julia.ipynb", "python_calls_julia.ipynb"} <= {p.name for p in ALL_NOTEBOOKS}


@pytest.mark.parametrize("path", ALL_NOTEBOOKS, ids=lambda p: p.name)
def test_notebook_is_valid_nbformat_4(path):
    """Each notebook passes nbformat's schema (so Jupyter and GitHub render it) and names its kernel's language."""
    nb = nbformat.read(path, as_version=4)
    nbformat.validate(nb)
    assert nb.nbformat == 4
    assert nb.metadata.kernelspec.language in ("python", "julia")


def test_validation_rejects_a_broken_notebook(julia_nb):
    """The schema check can fail: a cell without source, or of an unknown type, is invalid."""
    for breakage in (lambda cell: cell.pop("source"), lambda cell: cell.update(cell_type="prose")):
        broken = copy.deepcopy(julia_nb)
        breakage(broken.cells[0])
        with pytest.raises(nbformat.ValidationError):
            nbformat.validate(broken)


# --- placement_julia.ipynb --------------------------------------------------------------------------------------
def test_julia_notebook_kernel(julia_nb):
    """IJulia's kernelspec (installkernel names it julia-<major>.<minor>) and language_info for Julia 1.10."""
    assert dict(julia_nb.metadata.kernelspec) == KERNELSPEC
    assert dict(julia_nb.metadata.language_info) == LANGUAGE_INFO


def test_code_cells_are_the_examples_cells_in_order(julia_nb):
    """The code cells are exactly the `# %%` cells of adcme_colocation.jl, multi_gpu_towers.jl, then
    heat_inversion.jl: all of them."""
    assert sync_julia.EXAMPLES == ("adcme_colocation.jl", "multi_gpu_towers.jl", "heat_inversion.jl")
    wanted = sync_julia.example_cells()
    assert len(wanted) >= 18
    problem = cells_mismatch(code_sources(julia_nb), wanted)
    assert problem is None, problem


def test_cell_comparison_can_fail():
    """An edited, missing or extra cell is reported, with how to regenerate."""
    wanted = sync_julia.example_cells()
    edited = [wanted[0] + " "] + wanted[1:]
    assert "code cell 1 differs" in cells_mismatch(edited, wanted)
    assert "sync_julia.py" in cells_mismatch(wanted[:-1], wanted)
    assert cells_mismatch(wanted + ["x = 1"], wanted) is not None


@pytest.mark.parametrize("name", sync_julia.EXAMPLES)
def test_example_is_split_into_cells(name):
    """Each example has several `# %%` cells, every one with code (not only comments); the header before the first
    marker is comments only (so no code is missing from the notebook); no markdown cells and no marker spelt in a
    way Jupytext or VS Code would read as a cell but sync_julia.py would not (`#%%`)."""
    text = (sync_julia.EXAMPLES_DIR / name).read_text()
    header, cells = sync_julia.split_cells(text)
    assert len(cells) >= 5
    assert all(not line.strip() or line.startswith("#") for line in header)
    for title, code in cells:
        assert title and "[markdown]" not in title
        assert any(line.strip() and not line.lstrip().startswith("#") for line in code.splitlines()), title
        assert code == code.strip("\n") and code.splitlines()[0].strip()
    loose = [line for line in text.splitlines() if re.match(r"\s*#\s*%%", line) and not sync_julia.MARKER.match(line)]
    assert not loose, f"{name}: cell markers must be written `# %% title`: {loose}"


def test_split_cells():
    """Header, titles and the stripping of blank lines around a cell (blank lines inside it are kept)."""
    header, cells = sync_julia.split_cells("# about\n\n# %% one\n\nx = 1\n\ny = 2\n\n# %%\nz = 3\n#%% not a marker\n")
    assert header == ["# about", ""]
    assert cells == [("one", "x = 1\n\ny = 2"), ("", "z = 3\n#%% not a marker")]


def test_prose_before_every_code_cell(julia_nb):
    """The notebook opens with prose, and every code cell comes right after a markdown cell explaining it."""
    assert julia_nb.cells[0].cell_type == "markdown"
    assert code_cells_without_prose(julia_nb) == []
    bare = copy.deepcopy(julia_nb)
    first_code = next(k for k, cell in enumerate(bare.cells) if cell.cell_type == "code")
    bare.cells.insert(first_code, nbformat.v4.new_markdown_cell("Too short."))
    bare.cells.append(nbformat.v4.new_code_cell("x = 1"))
    assert code_cells_without_prose(bare) == [first_code + 1, len(bare.cells) - 1]


def test_no_outputs_are_stored(julia_nb):
    """The notebook is not run here: no outputs and no execution counts, and the first cell says so."""
    assert all(cell.outputs == [] and cell.execution_count is None
               for cell in julia_nb.cells if cell.cell_type == "code")
    first = julia_nb.cells[0].source
    assert "No outputs are stored" in first and "IJulia" in first and "Python equivalent" in first


def test_shown_output_is_labelled_python(julia_nb):
    """Output shown in the prose is the Python equivalent's, said so in the same cell."""
    blocks = [b for cell in julia_nb.cells if cell.cell_type == "markdown" for b in re.findall(r"```text", cell.source)]
    assert len(blocks) >= 3
    assert [b for cell in julia_nb.cells if cell.cell_type == "markdown"
            for b in unlabelled_output_blocks(cell.source)] == []
    assert unlabelled_output_blocks("Julia prints\n\n```text\n1.0\n```\n") == ["1.0\n"]


def test_prose_covers_the_steps(julia_nb):
    """The prose explains each step of the issue's list, under headings in the script's order."""
    prose = "\n".join(cell.source for cell in julia_nb.cells if cell.cell_type == "markdown")
    terms = ["] dev path/to/adplace/julia", "JULIA_CONDAPKG_BACKEND=Null", "JULIA_PYTHONCALL_EXE", "set_virtual_gpus",
             "assign_to_device", "op.device", "colocate=true", "run_profile", "save_profile", "UPDATE_OPS",
             "u[:, sensors]", "bounds"]
    assert [t for t in terms if t not in prose] == []
    headings = [line for line in prose.splitlines() if line.startswith("#")]
    steps = ["Install", "Devices and virtual GPUs", "`@cpu` and `@gpu`", "`assign_to_device`", "`@pywith",
             "Colocated gradients", "profile", "`UPDATE_OPS`", "Part 2", "Part 3", "`while_loop`", "`BFGS!`"]
    found = [next((k for k, h in enumerate(headings) if step in h), -1) for step in steps]
    assert -1 not in found and found == sorted(found), list(zip(steps, found))


def test_code_cells_parse_as_julia(julia_parser, julia_nb):
    """Every code cell is valid Julia on its own (each cell ends at a statement boundary); a cut cell is not."""
    sources = code_sources(julia_nb)
    for k, source in enumerate(sources, 1):
        assert not julia_parser.parse(source.encode()).root_node.has_error, f"code cell {k} has a syntax error"
    assert julia_parser.parse(sources[1].rsplit("end", 1)[0].encode()).root_node.has_error


# --- notebooks/sync_julia.py ------------------------------------------------------------------------------------
def test_sync_changes_nothing_on_the_committed_files(julia_nb):
    """Regenerating the notebook from the committed examples gives the committed file, byte for byte."""
    nb, notes = sync_julia.synced(julia_nb, sync_julia.example_cells())
    assert notes == []
    assert sync_julia.render(nb) == JULIA_NOTEBOOK.read_text()
    assert sync_julia.sync(check=True) == 0


@pytest.fixture
def scratch(tmp_path):
    """A copy of the notebook and the examples, for sync_julia to edit."""
    examples = tmp_path / "examples"
    examples.mkdir()
    for name in sync_julia.EXAMPLES:
        shutil.copy(sync_julia.EXAMPLES_DIR / name, examples / name)
    shutil.copy(JULIA_NOTEBOOK, tmp_path / JULIA_NOTEBOOK.name)
    return tmp_path / JULIA_NOTEBOOK.name, examples


def test_sync_rewrites_code_cells_and_keeps_prose(scratch, capsys):
    """An edited example makes --check fail; syncing rewrites that code cell only, and the prose stays."""
    notebook, examples = scratch
    colocation = examples / "adcme_colocation.jl"
    colocation.write_text(colocation.read_text().replace("global d = cos(b)", "global d = exp(b)"))
    assert sync_julia.sync(notebook, examples, check=True) == 1
    assert "code cell 2 differs" in capsys.readouterr().out
    before = nbformat.read(notebook, as_version=4)
    assert sync_julia.sync(notebook, examples) == 0
    after = nbformat.read(notebook, as_version=4)
    changed = [k for k, (a, b) in enumerate(zip(before.cells, after.cells)) if a != b]
    assert len(changed) == 1 and "global d = exp(b)" in after.cells[changed[0]].source
    assert [c.source for c in after.cells if c.cell_type == "markdown"] == \
        [c.source for c in before.cells if c.cell_type == "markdown"]
    assert sync_julia.sync(notebook, examples, check=True) == 0


def test_sync_appends_and_drops_cells(scratch, capsys):
    """A cell added to the last example is appended (with a note to write its prose); removed, it is dropped."""
    notebook, examples = scratch
    last = examples / sync_julia.EXAMPLES[-1]
    original = last.read_text()
    last.write_text(original + "\n# %% One more\nprintln(losses[end])\n")
    assert sync_julia.sync(notebook, examples) == 0
    assert f"appended code cell {len(sync_julia.example_cells()) + 1}" in capsys.readouterr().out
    nb = nbformat.read(notebook, as_version=4)
    nbformat.validate(nb)
    assert nb.cells[-1].source == "println(losses[end])" and code_cells_without_prose(nb) == [len(nb.cells) - 1]
    last.write_text(original)
    assert sync_julia.sync(notebook, examples) == 0
    assert notebook.read_text() == JULIA_NOTEBOOK.read_text()
