"""Build hook: a wheel (and a non-editable `pip install .`) carries the Julia package ADPlace.

julia/ at the repository root is the one source of the Julia package; a checkout's adplace/juliapkg.json reaches it
as "../julia" (juliapkg resolves a package's `path` against the directory of the juliapkg.json), which serves source
checkouts and editable installs. A built package has no ../julia, so build_py copies what `Pkg.develop` needs
(Project.toml and src/) to adplace/julia/ in the build and writes the built juliapkg.json with the path "julia".
`dev` stays true: Pkg.develop tracks a plain directory, where Pkg.add would need a git repository.
julia/CondaPkg.toml is not shipped: it installs adplace from a checkout, while a wheel's juliacall runs in a Python
that already has adplace.
"""
import json
import os
import shutil
import tempfile
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

ROOT = Path(__file__).resolve().parent
JULIA_SOURCE = ROOT / "julia"
JULIA_SHIPPED = ("Project.toml", "src")  # relative to julia/: the project file and every file under src/
JULIAPKG_JSON = "juliapkg.json"
JULIA_IN_PACKAGE = "julia"  # adplace/julia/ in a built package


def julia_files() -> list:
    """The files of julia/ a built package carries, relative to julia/ (POSIX strings, sorted)."""
    files = []
    for name in JULIA_SHIPPED:
        path = JULIA_SOURCE / name
        if path.is_dir():
            files += [p for p in path.rglob("*") if p.is_file() and "__pycache__" not in p.parts]
        elif path.is_file():
            files.append(path)
        else:
            raise FileNotFoundError(f"{path} is missing: a built adplace would not find its Julia package ADPlace")
    return sorted(p.relative_to(JULIA_SOURCE).as_posix() for p in files)


def built_juliapkg_json() -> str:
    """adplace/juliapkg.json with ADPlace's path pointing at the copy inside the built package."""
    source = ROOT / "adplace" / JULIAPKG_JSON
    data = json.loads(source.read_text())
    spec = data["packages"]["ADPlace"]
    if (source.parent / spec["path"]).resolve() != JULIA_SOURCE.resolve():
        raise ValueError(f"{source}: ADPlace's path {spec['path']!r} is not the repository's julia/ directory")
    spec["path"] = JULIA_IN_PACKAGE
    return json.dumps(data, indent=2) + "\n"


class BuildPyWithJulia(build_py):
    """build_py that also puts the Julia package into the built adplace (not in editable mode, which keeps ../julia)."""

    def run(self):
        super().run()
        if not getattr(self, "editable_mode", False):
            self.build_julia_package()

    def build_julia_package(self):
        package = Path(self.build_lib) / "adplace"
        target = package / JULIA_IN_PACKAGE
        shutil.rmtree(target, ignore_errors=True)  # no stale files from an earlier build in the same build/
        for name in julia_files():
            (target / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(JULIA_SOURCE / name, target / name)
        # a new file replaces the copied juliapkg.json (which may share its inode with the source)
        fd, tmp = tempfile.mkstemp(dir=package, prefix=".juliapkg-", suffix=".json")
        with os.fdopen(fd, "w") as f:
            f.write(built_juliapkg_json())
        os.chmod(tmp, 0o644)  # mkstemp's 0o600 would travel into the wheel
        os.replace(tmp, package / JULIAPKG_JSON)

    def get_outputs(self, include_bytecode=1):
        outputs = super().get_outputs(include_bytecode)
        if getattr(self, "editable_mode", False):
            return outputs
        package = os.path.join(self.build_lib, "adplace", JULIA_IN_PACKAGE)
        return outputs + [os.path.join(package, *name.split("/")) for name in julia_files()]


setup(cmdclass={"build_py": BuildPyWithJulia})
