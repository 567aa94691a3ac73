"""ADPlace travels with adplace, checked with juliapkg's own resolution (what juliacall runs) and no Julia:

- a wheel (`pip wheel .`, what `pip install .` installs) carries julia/Project.toml and julia/src at adplace/julia/,
  byte for byte, and its adplace/juliapkg.json resolves there; so does the wheel installed with `pip --target`;
- the sdist carries julia/ (a wheel built from it needs it);
- the adplace these tests import finds a Julia package with ADPlace's name and uuid;
- julia/Project.toml's PythonCall compat admits only releases that have every PythonCall name julia/src uses.
"""
import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

import pytest

import adplace

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    tomllib = pytest.importorskip("tomli")

REPO = Path(__file__).resolve().parents[2]
JULIA_DIR = REPO / "julia"
PROJECT = tomllib.loads((JULIA_DIR / "Project.toml").read_text())
# What a build reads (pyproject.toml names README.md; setup.py copies julia/ into the build; MANIFEST.in makes the sdist)
BUILD_INPUTS = ("pyproject.toml", "setup.py", "MANIFEST.in", "README.md", "adplace", "julia")
PIP_ENV = dict(os.environ, PIP_DISABLE_PIP_VERSION_CHECK="1", PIP_NO_INPUT="1")


def julia_src_files(root: Path) -> dict:
    """{path relative to root: bytes} of the files under root/src."""
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted((root / "src").rglob("*"))
            if p.is_file() and "__pycache__" not in p.parts}


def resolve_adplace(juliapkg_json: Path, monkeypatch) -> Path:
    """The directory juliapkg would `Pkg.develop` for ADPlace when juliapkg_json is its only deps file; that directory
    is ADPlace (Project.toml's name and uuid)."""
    juliapkg_deps = pytest.importorskip("juliapkg.deps")
    monkeypatch.setattr(juliapkg_deps, "deps_files", lambda: [str(juliapkg_json)])
    _, specs = juliapkg_deps.find_requirements()
    (spec,) = specs
    assert (spec.name, spec.uuid, spec.dev) == ("ADPlace", PROJECT["uuid"], True)
    path = Path(spec.path)
    assert path.is_dir(), f"{juliapkg_json} points ADPlace at {path}, which does not exist"
    project = tomllib.loads((path / "Project.toml").read_text())
    assert (project["name"], project["uuid"]) == ("ADPlace", PROJECT["uuid"])
    return path


def assert_is_the_julia_package(path: Path):
    """path holds julia/'s Project.toml and src/ byte for byte, and nothing else of julia/."""
    assert (path / "Project.toml").read_bytes() == (JULIA_DIR / "Project.toml").read_bytes()
    assert julia_src_files(path) == julia_src_files(JULIA_DIR)
    shipped = {p.relative_to(path).as_posix() for p in path.rglob("*") if p.is_file()}
    assert shipped == {"Project.toml"} | set(julia_src_files(JULIA_DIR))  # no tests, examples or CondaPkg.toml


# --- building ---------------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def source_tree(tmp_path_factory) -> Path:
    """A copy of what a build reads, so building leaves no build/ or egg-info in the checkout."""
    for module in ("setuptools", "wheel"):
        if importlib.util.find_spec(module) is None:
            pytest.skip(f"{module} is not installed: building a wheel without build isolation needs it")
    root = tmp_path_factory.mktemp("source") / "adplace-src"
    ignore = shutil.ignore_patterns("__pycache__", "*.py[cod]", "*.egg-info")
    for name in BUILD_INPUTS:
        source = REPO / name
        if source.is_dir():
            shutil.copytree(source, root / name, ignore=ignore)
        else:
            root.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, root / name)
    return root


def pip(*args: str, cwd: Path):
    result = subprocess.run([sys.executable, "-m", "pip", *args], cwd=cwd, env=PIP_ENV, capture_output=True,
                            text=True, timeout=300)
    assert result.returncode == 0, f"pip {' '.join(args)} failed:\n{result.stdout}\n{result.stderr}"


@pytest.fixture(scope="module")
def wheel(source_tree, tmp_path_factory) -> Path:
    """The wheel `pip wheel .` builds offline (as `pip install .` does before installing it)."""
    out = tmp_path_factory.mktemp("wheel")
    pip("wheel", ".", "--no-deps", "--no-build-isolation", "--no-index", "-w", str(out), cwd=source_tree)
    (built,) = out.glob("adplace-*.whl")
    return built


def test_the_wheel_carries_adplace_and_resolves_to_it(wheel, tmp_path, monkeypatch):
    """The wheel's adplace/juliapkg.json sends juliapkg to adplace/julia/ inside the wheel, which is julia/'s
    Project.toml and src/ unchanged."""
    with zipfile.ZipFile(wheel) as archive:
        names = archive.namelist()
        archive.extractall(tmp_path)
    assert "adplace/juliapkg.json" in names and "adplace/julia/Project.toml" in names
    assert all(not name.startswith("julia/") for name in names)  # inside the Python package, not beside it
    path = resolve_adplace(tmp_path / "adplace" / "juliapkg.json", monkeypatch)
    assert path == tmp_path / "adplace" / "julia"
    assert_is_the_julia_package(path)
    assert json.loads((tmp_path / "adplace" / "juliapkg.json").read_text())["packages"]["ADPlace"]["path"] == "julia"


def test_the_installed_wheel_is_found_by_juliapkg(wheel, tmp_path, monkeypatch):
    """Installed (`pip install --target`), adplace's juliapkg.json is among the files juliapkg's own search over
    sys.path finds, and it resolves to the installed adplace/julia/."""
    target = tmp_path / "site"
    pip("install", "--no-deps", "--no-index", "--target", str(target), str(wheel), cwd=tmp_path)
    installed_json = target / "adplace" / "juliapkg.json"
    juliapkg_deps = pytest.importorskip("juliapkg.deps")
    monkeypatch.syspath_prepend(str(target))
    found = {os.path.normcase(os.path.realpath(f)) for f in juliapkg_deps.deps_files()}
    assert os.path.normcase(os.path.realpath(installed_json)) in found
    path = resolve_adplace(installed_json, monkeypatch)
    assert path == target / "adplace" / "julia"
    assert_is_the_julia_package(path)


def test_a_source_checkout_keeps_pointing_at_julia_dir():
    """Building changes nothing in the checkout: its adplace/juliapkg.json still reaches julia/ (editable installs
    and source checkouts use it), and adplace/julia/ is never a second copy in the repository."""
    data = json.loads((REPO / "adplace" / "juliapkg.json").read_text())
    assert (REPO / "adplace" / data["packages"]["ADPlace"]["path"]).resolve() == JULIA_DIR
    assert not (REPO / "adplace" / "julia").exists()


def test_the_sdist_carries_julia(source_tree, tmp_path):
    """The sdist has julia/ (Project.toml and src/ for the wheel it builds, tests and examples) and the build hook."""
    script = "import sys; from setuptools import build_meta; print(build_meta.build_sdist(sys.argv[1]))"
    result = subprocess.run([sys.executable, "-c", script, str(tmp_path)], cwd=source_tree, capture_output=True,
                            text=True, timeout=300)
    assert result.returncode == 0, f"building the sdist failed:\n{result.stdout}\n{result.stderr}"
    with tarfile.open(tmp_path / result.stdout.strip().splitlines()[-1]) as archive:
        names = {name.split("/", 1)[1] for name in archive.getnames() if "/" in name}
    wanted = {"setup.py", "MANIFEST.in", "julia/Project.toml", "julia/test/runtests.jl"}
    assert wanted | {f"julia/{name}" for name in julia_src_files(JULIA_DIR)} <= names


# --- the adplace these tests run -------------------------------------------------------------------------------
def test_the_imported_adplace_finds_adplace_jl(monkeypatch):
    """The juliapkg.json next to the imported adplace (installed with `pip install .`, or this checkout) resolves to
    a directory holding ADPlace: where juliacall's `using ADPlace` would load it from."""
    here = Path(adplace.__file__).resolve().parent
    path = resolve_adplace(here / "juliapkg.json", monkeypatch)
    if here.is_relative_to(REPO):
        assert path == JULIA_DIR
    else:  # a non-editable install (CI's `pip install ".[test,interop]"`)
        assert path == here / "julia"
        assert (path / "src" / "ADPlace.jl").is_file()


# --- the PythonCall compat bound -------------------------------------------------------------------------------
# The first PythonCall release with each name julia/src imports from PythonCall, in the form ADPlace uses it. Found in
# JuliaPy/PythonCall.jl's tags (git grep of src/ at each tag) and CHANGELOG.md; every name is still defined at
# v0.9.34 (the newest release checked, 2026-05-18); none was removed or renamed within 0.9.x.
#   CHANGELOG "## 0.9.0 (2022-05-27) * **Breaking.** Removes `getpy`: you may now overload `Py` directly": ADPlace
#     defines `PythonCall.Py(x::PyObject)` (with `PythonCall.ispy(::PyObject) = true`), so 0.9.0 for Py and ispy.
#   CHANGELOG "## v0.8.0 (2022-03-17) * Adds `pyfunc`, ...": pyfunc(f; name=...) as ADPlace calls it.
#   PyException's t, v, b properties (normalised on access) exist in every release since v0.1.0; pynew, pycopy!
#   and pybuiltins since v0.3.0; the 2-argument forms ADPlace calls, pyrepr(String, x) and pyeq(Bool, x, y), since
#   v0.1.0.
PYTHONCALL_API_SINCE = {
    "Py": "0.9.0", "ispy": "0.9.0", "pyfunc": "0.8.0", "PyArray": "0.1.0", "PyException": "0.1.0",
    "pybuiltins": "0.3.0", "pynew": "0.3.0", "pycopy!": "0.3.0", "pyconvert": "0.1.0", "pydict": "0.1.0",
    "pyeq": "0.1.0", "pygetattr": "0.1.0", "pyhasattr": "0.1.0", "pyimport": "0.1.0", "pyis": "0.1.0",
    "pyisinstance": "0.1.0", "pylist": "0.1.0", "pyrepr": "0.1.0", "pysetattr": "0.1.0", "pytruth": "0.1.0",
    "pytuple": "0.1.0", "pytype": "0.1.0", "pywith": "0.1.0",
}
PYTHONCALL_CHECKED_BELOW = "0.10.0"  # releases from here on were not checked (0.x minor versions break APIs)
IMPORT_LIST = re.compile(r"^\s*(?:using|import)\s+PythonCall\s*:\s*((?:[^\n]*,[ \t]*(?:#[^\n]*)?\n)*[^\n]*)",
                         re.MULTILINE)
BARE_USING = re.compile(r"^\s*using\s+PythonCall\s*(?:$|#)", re.MULTILINE)
QUALIFIED = re.compile(r"\bPythonCall\.(\w+!?)")


def pythoncall_names(source: str) -> set:
    """The PythonCall names a Julia source uses: those its `using/import PythonCall: ...` lists name and those it
    writes as `PythonCall.name`."""
    names = set(QUALIFIED.findall(source))
    for listed in IMPORT_LIST.findall(source):
        names.update(re.sub(r"#[^\n]*", "", name).strip() for name in listed.split(","))
    return names - {"PythonCall", ""}


def test_pythoncall_names_are_found():
    """The parser reads multi-line import lists and qualified uses (so the check below is not vacuous)."""
    source = ("using PythonCall: PythonCall, Py, pyfunc,  # comment\n    pyimport\nusing LinearAlgebra: norm\n"
              "x = PythonCall.pynew()\nPythonCall.pycopy!(x, y)\n")
    assert pythoncall_names(source) == {"Py", "pyfunc", "pyimport", "pynew", "pycopy!"}
    names = set().union(*(pythoncall_names(p.read_text()) for p in (JULIA_DIR / "src").rglob("*.jl")))
    assert {"Py", "ispy"} <= names  # ADPlace's PyObject overloads both: the protocol PythonCall 0.9.0 introduced


def test_pythoncall_compat_admits_only_releases_with_every_name_used():
    """Every PythonCall name julia/src uses is in PYTHONCALL_API_SINCE, and Project.toml's PythonCall compat starts
    at or after the newest of their first releases (and stays below the first unchecked minor version)."""
    compat_module = pytest.importorskip("juliapkg.compat")
    sources = sorted((JULIA_DIR / "src").rglob("*.jl"))
    bare = [p.relative_to(REPO).as_posix() for p in sources if BARE_USING.search(p.read_text())]
    assert not bare, f"{bare}: write `using PythonCall: name, ...` so the names checked here are the ones used"
    used = set().union(*(pythoncall_names(p.read_text()) for p in sources))
    unknown = sorted(used - set(PYTHONCALL_API_SINCE))
    assert not unknown, (f"julia/src uses PythonCall's {unknown}: look up the PythonCall.jl release that added each "
                         f"(its CHANGELOG.md and git history) and add it to PYTHONCALL_API_SINCE in {__file__}")
    version = compat_module.Version.parse
    needed = max((PYTHONCALL_API_SINCE[name] for name in used), key=version)
    needed_by = sorted(name for name in used if PYTHONCALL_API_SINCE[name] == needed)
    compat = compat_module.Compat.parse(PROJECT["compat"]["PythonCall"])
    assert compat, "julia/Project.toml has an empty PythonCall compat"
    for clause in compat.clauses:
        assert clause.lo >= version(needed), (f"PythonCall compat {PROJECT['compat']['PythonCall']!r} admits "
                                              f"{clause.lo}, older than {needed} (needed by {needed_by})")
        assert clause.hi <= version(PYTHONCALL_CHECKED_BELOW), f"PythonCall {clause.hi} and later were not checked"
