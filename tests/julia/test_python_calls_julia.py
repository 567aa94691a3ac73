"""notebooks/python_calls_julia.ipynb: its guard finds Julia where juliapkg would, without ever importing juliacall (which
would download Julia) when none is there; its stored outputs are those of a run with Julia or, as stored, without it;
the Julia code it hands `jl.seval` parses, is one expression per call, and uses only names that ADPlace and adplace
have. (tests/notebooks/ executes the notebook and compares its outputs.)
"""
import ast
import importlib.util
import re
import stat
import sys
from pathlib import Path

import pytest

from julia_sources import package_source
from test_julia_docstrings import _exported
from test_julia_package import missing_tf_names, tf_chains

nbformat = pytest.importorskip("nbformat")

REPO = Path(__file__).resolve().parents[2]
NOTEBOOK = REPO / "notebooks" / "python_calls_julia.ipynb"
ADPLACE_JL = package_source()
GUARD_MESSAGE = "Julia cannot start here, so the Julia cells below are skipped. Missing:"
STARTED = re.compile(r"^Julia \d+\.\d+\S* started; ADPlace loaded$")
FAILED_START = "Julia did not start ("
BASE_NAMES = {"sin", "cos", "exp", "run", "string", "println", "VERSION", "nothing", "true", "false"}


@pytest.fixture(scope="module")
def nb():
    return nbformat.read(NOTEBOOK, as_version=4)


def code_cells(nb) -> list:
    return [cell for cell in nb.cells if cell.cell_type == "code"]


def cell_with(nb, text: str):
    (cell,) = [cell for cell in code_cells(nb) if text in cell.source]
    return cell


def stream_text(cell) -> str:
    return "".join(out.get("text", "") for out in cell.outputs if out.output_type == "stream")


def seval_strings(source: str) -> list[str]:
    """The string literals passed to `jl.seval(...)` in Python source, in order."""
    calls = [node for node in ast.walk(ast.parse(source)) if isinstance(node, ast.Call)
             and isinstance(node.func, ast.Attribute) and node.func.attr == "seval"
             and isinstance(node.func.value, ast.Name) and node.func.value.id == "jl"]
    assert all(len(c.args) == 1 and isinstance(c.args[0], ast.Constant) and isinstance(c.args[0].value, str)
               for c in calls), "jl.seval takes one string literal here, so that these tests can read it"
    return [c.args[0].value for c in sorted(calls, key=lambda c: (c.lineno, c.col_offset))]


def notebook_julia(nb) -> list[str]:
    return [code for cell in code_cells(nb) for code in seval_strings(cell.source)]


# --- the guard ----------------------------------------------------------------------------------------------------
@pytest.fixture
def guard(nb, monkeypatch, tmp_path):
    """The notebook's guard functions, run against a scratch PATH, no PYTHON_JULIAPKG_EXE, juliapkg's install prefix
    in tmp_path and juliacall installed (`juliacall` sets whether it is); yields (namespace, scratch bin directory)."""
    namespace = {}
    exec(cell_with(nb, "def julia_missing").source, namespace)
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    monkeypatch.setenv("PATH", str(bin_dir))
    monkeypatch.delenv("PYTHON_JULIAPKG_EXE", raising=False)
    monkeypatch.delitem(sys._xoptions, "juliapkg-exe", raising=False)
    juliapkg_state = pytest.importorskip("juliapkg.state")
    monkeypatch.setitem(juliapkg_state.STATE, "install", str(tmp_path / "juliapkg-install"))
    real_find_spec = importlib.util.find_spec
    installed = {"juliacall": True}

    def find_spec(name, *args):
        if name in installed:
            return object() if installed[name] else None
        return real_find_spec(name, *args)

    monkeypatch.setattr(importlib.util, "find_spec", find_spec)
    namespace["installed"] = installed
    yield namespace, bin_dir


def fake_julia(path: Path, version_line: str) -> str:
    """An executable at `path` that answers `--version` with `version_line`."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"#!/bin/sh\necho '{version_line}'\n")
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return str(path)


def test_guard_without_juliacall_or_julia_says_what_is_missing(guard):
    """No juliacall and no Julia: two items, each saying how to get it (the pip extra; Julia or juliapkg's download)."""
    namespace, _ = guard
    namespace["installed"]["juliacall"] = False
    missing = namespace["julia_missing"]()
    assert len(missing) == 2
    assert missing[0].startswith("juliacall:") and 'pip install -e ".[julia]"' in missing[0]
    assert missing[1].startswith("Julia >= 1.10:")
    assert "PYTHON_JULIAPKG_EXE" in missing[1] and "let juliapkg download it" in missing[1]
    assert "juliacall" not in sys.modules  # looking never imports it (importing would start or download Julia)


def test_guard_finds_julia_on_path(guard):
    """`julia` on PATH answering 1.10 or later is enough; older or non-Julia executables are named and refused."""
    namespace, bin_dir = guard
    exe = fake_julia(bin_dir / "julia", "julia version 1.10.4")
    assert namespace["julia_candidates"]() == [exe]
    assert namespace["julia_missing"]() == []
    fake_julia(bin_dir / "julia", "julia version 1.9.3")
    (missing,) = namespace["julia_missing"]()
    assert missing.startswith("Julia >= 1.10") and f"found only {exe} (1.9)" in missing
    fake_julia(bin_dir / "julia", "not julia at all")
    assert f"found only {exe} (not a Julia)" in namespace["julia_missing"]()[0]


def test_guard_prefers_pythonjuliapkg_exe(guard, monkeypatch, tmp_path):
    """PYTHON_JULIAPKG_EXE is what juliapkg uses, whatever is on PATH: the guard judges that executable alone."""
    namespace, bin_dir = guard
    fake_julia(bin_dir / "julia", "julia version 1.11.0")
    configured = fake_julia(tmp_path / "elsewhere" / "julia", "julia version 1.12.1")
    monkeypatch.setenv("PYTHON_JULIAPKG_EXE", configured)
    assert namespace["julia_candidates"]() == [configured] and namespace["julia_missing"]() == []
    monkeypatch.setenv("PYTHON_JULIAPKG_EXE", str(tmp_path / "no-such-julia"))
    assert "no-such-julia (not a Julia)" in namespace["julia_missing"]()[0]


def test_guard_finds_julia_juliapkg_downloaded(guard, tmp_path):
    """A Julia that juliapkg downloaded earlier (in its install prefix) counts, as juliapkg would use it."""
    namespace, _ = guard
    exe = fake_julia(tmp_path / "juliapkg-install" / "bin" / "julia", "julia version 1.10.0")
    assert namespace["julia_candidates"]() == [exe] and namespace["julia_missing"]() == []


def imports_juliacall_outside_the_else(source: str) -> bool:
    """Whether `source` can import juliacall other than in the `else` of a top-level `if missing:`."""
    tree = ast.parse(source)
    guarded = set()
    for node in tree.body:
        if isinstance(node, ast.If) and isinstance(node.test, ast.Name) and node.test.id == "missing":
            guarded |= {id(n) for branch in node.orelse for n in ast.walk(branch)}
    return any(id(node) not in guarded for node in ast.walk(tree)
               if isinstance(node, ast.ImportFrom) and node.module == "juliacall"
               or isinstance(node, ast.Import) and any(a.name == "juliacall" for a in node.names))


def test_juliacall_is_imported_only_when_julia_was_found(nb):
    """The guard cell imports juliacall only in the branch where nothing is missing."""
    source = cell_with(nb, "from juliacall import").source
    assert not imports_juliacall_outside_the_else(source)
    assert imports_juliacall_outside_the_else("import juliacall\n" + source)


def unguarded_julia_cells(nb) -> list[str]:
    """Cells calling jl.seval that are not `if jl is not None: ... else: print(SKIPPED)` (the guard cell aside)."""
    bad = []
    for cell in code_cells(nb):
        if "jl.seval" not in cell.source or "from juliacall import" in cell.source:
            continue
        body = ast.parse(cell.source).body
        ok = len(body) == 1 and isinstance(body[0], ast.If) and ast.unparse(body[0].test) == "jl is not None" \
            and [ast.unparse(n) for n in body[0].orelse] == ["print(SKIPPED)"]
        if not ok:
            bad.append(cell.source)
    return bad


def test_julia_cells_are_guarded(nb):
    """Each Julia cell runs only when Julia started, and otherwise says it skipped."""
    assert len([c for c in code_cells(nb) if "jl.seval" in c.source]) >= 4
    assert unguarded_julia_cells(nb) == []
    broken = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell('jl.seval("using ADPlace")')])
    assert unguarded_julia_cells(broken) == ['jl.seval("using ADPlace")']


# --- the stored outputs -------------------------------------------------------------------------------------------
PYTHON_RESULTS = ["b.device = /device:GPU:0", "a.device = /device:CPU:0 | s.device = /device:GPU:0",
                  "sin(1.0) from Python: 0.8414709848078965"]


def output_problems(nb) -> list[str]:
    """How the stored outputs fail to be one run's: the guard's message decides what the Julia cells show."""
    namespace = {}
    exec(cell_with(nb, "def julia_missing").source, namespace)
    skipped = namespace["SKIPPED"]
    guard_text = stream_text(cell_with(nb, "from juliacall import")).strip()
    julia_cells = [c for c in code_cells(nb) if "jl.seval" in c.source and "from juliacall" not in c.source]
    problems = []
    if guard_text.startswith(GUARD_MESSAGE) or guard_text.startswith(FAILED_START):
        if guard_text.startswith(GUARD_MESSAGE):
            items = guard_text[len(GUARD_MESSAGE):].strip().split("\n")
            if not items or not all(i.startswith(("- juliacall:", "- Julia >= 1.10:")) for i in items):
                problems.append(f"the guard's message lists no missing piece: {guard_text!r}")
        problems += [f"a skipped Julia cell printed {stream_text(c)!r}" for c in julia_cells
                     if stream_text(c) != skipped + "\n"]
    elif STARTED.match(guard_text):
        problems += [f"Julia started but a Julia cell printed {stream_text(c)!r}" for c in julia_cells
                     if skipped in stream_text(c) or not stream_text(c)]
        if "b.device = /device:GPU:0" not in stream_text(julia_cells[0]):
            problems.append("Julia's @gpu 0 cell did not print b.device = /device:GPU:0")
    else:
        problems.append(f"the guard cell printed neither the guard message nor Julia's start: {guard_text!r}")
    python_text = "".join(stream_text(c) for c in code_cells(nb) if "tf.reset_default_graph()" in c.source
                          or "from Python" in c.source)
    problems += [f"the Python cells did not print {r!r}" for r in PYTHON_RESULTS if r not in python_text]
    if any(out.output_type == "error" for c in code_cells(nb) for out in c.outputs):
        problems.append("a cell stored an error")
    return problems


def test_stored_outputs_are_one_consistent_run(nb):
    """The guard printed its message (or Julia's start), the Julia cells agree with it, and the Python cells printed
    their results; execution counts are 1..n (a top-to-bottom run)."""
    assert output_problems(nb) == []
    assert [c.execution_count for c in code_cells(nb)] == list(range(1, len(code_cells(nb)) + 1))


def test_output_check_can_fail(nb):
    """Julia output under a 'skipped' guard, a guard that says nothing, or an error is each reported."""
    import copy

    mixed = copy.deepcopy(nb)
    julia_cell = next(c for c in code_cells(mixed) if "@gpu 0" in c.source)
    julia_cell.outputs = [nbformat.v4.new_output("stream", name="stdout", text="b.device = /device:GPU:0\n")]
    assert any("a skipped Julia cell printed" in p for p in output_problems(mixed))
    silent = copy.deepcopy(nb)
    cell_with(silent, "from juliacall import").outputs = []
    assert any("neither the guard message" in p for p in output_problems(silent))
    failed = copy.deepcopy(nb)
    code_cells(failed)[-1].outputs = [nbformat.v4.new_output("error", ename="NameError", evalue="x", traceback=[])]
    assert "a cell stored an error" in output_problems(failed)


# --- the Julia code -----------------------------------------------------------------------------------------------
def test_seval_strings_parse_as_one_julia_expression_each(julia_parser, nb):
    """Each `jl.seval` string is valid Julia and a single expression (older PythonCall evaluates `Meta.parse(s)`,
    which reads one); two statements or a cut block are rejected."""
    sources = notebook_julia(nb)
    assert len(sources) >= 7 and sources[0] == "using ADPlace"
    for source in sources:
        tree = julia_parser.parse(source.encode())
        assert not tree.root_node.has_error, source
        assert len([n for n in tree.root_node.named_children if n.type != "line_comment"]) == 1, source
    assert len(julia_parser.parse(b"a = 1\nb = 2").root_node.named_children) == 2
    gpu_block = next(source for source in sources if source.startswith("@gpu"))
    assert julia_parser.parse(gpu_block.rsplit("end", 1)[0].encode()).root_node.has_error


def julia_name_problems(parser, sources: list[str]) -> list[str]:
    """Names in the Julia `sources` (run in order in Main after `using ADPlace`) that do not exist: macros and
    functions outside ADPlace's exports and Base's few used here, `ADPlace.x` not defined in ADPlace.jl, `tf.x.y`
    missing from adplace, and globals read before any source assigns them."""
    exported = set(_exported())
    defined, problems = set(), []
    for source in sources:
        tree = parser.parse(source.encode())
        problems += missing_tf_names(tf_chains(tree))
        nodes, stack = [], [tree.root_node]
        while stack:
            node = stack.pop()
            nodes.append(node)
            stack.extend(node.children)
        for node in nodes:  # assignment targets, `global x = ...` included
            if node.type == "assignment" and node.children[0].type == "identifier":
                defined.add(node.children[0].text.decode())
        for node in nodes:
            if node.type != "identifier":
                continue
            name, parent = node.text.decode(), node.parent
            if parent.type == "macro_identifier":
                if "@" + name not in exported:
                    problems.append("@" + name)
            elif parent.type == "field_expression" and parent.children[0] != node:
                owner = parent.children[0]
                if owner.type == "identifier" and owner.text == b"ADPlace" and not re.search(
                        rf"^(?:function |const |macro |struct )?{re.escape(name)}\b", ADPLACE_JL, re.M):
                    problems.append(f"ADPlace.{name}")
            elif parent.type == "named_argument" and parent.children[0] == node:
                continue
            elif parent.type == "using_statement":
                if name != "ADPlace":
                    problems.append(f"using {name}")
            elif name not in exported | BASE_NAMES | defined | {"ADPlace"}:
                problems.append(name)
    return problems


def test_every_name_the_julia_code_uses_exists(julia_parser, nb):
    """The Julia code uses only ADPlace's exports (and `ADPlace.assign_to_device`), adplace's `tf.device`, Base's
    `sin`/`run`/`string`/`VERSION`, and globals an earlier call made; misspelt names are each reported."""
    sources = notebook_julia(nb)
    assert julia_name_problems(julia_parser, sources) == []
    used = " ".join(sources)
    assert all(name in used for name in ("@gpu", "@pywith", "ADPlace.assign_to_device", "tf.device", "Session"))
    broken = ['@tpu 0 begin\n    global q = sinn(Varible(1.0))\nend',
              '@pywith tf.dvice(ADPlace.assign_to_devise("/gpu:0")) begin\n    global r = 1\nend', "run(sess, w)"]
    assert sorted(julia_name_problems(julia_parser, broken)) == sorted(
        ["@tpu", "sinn", "Varible", "tf.dvice", "ADPlace.assign_to_devise", "sess", "w"])


def test_the_guard_reads_the_settings_juliapkg_reads(monkeypatch):
    """The variable and the -X option the guard reads are juliapkg's own setting of its Julia executable."""
    state = pytest.importorskip("juliapkg.state")
    monkeypatch.setenv("PYTHON_JULIAPKG_EXE", "/from/env/julia")
    assert state.get_config("exe")[0] == "/from/env/julia"
    monkeypatch.setitem(sys._xoptions, "juliapkg-exe", "/from/xoption/julia")
    assert state.get_config("exe")[0] == "/from/xoption/julia"
    source = NOTEBOOK.read_text()
    assert 'sys._xoptions.get(\\"juliapkg-exe\\")' in source and 'os.environ.get(\\"PYTHON_JULIAPKG_EXE\\")' in source
