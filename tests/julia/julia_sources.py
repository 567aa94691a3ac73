"""The Julia package's source files (julia/src/*.jl), read as one text for the checks that look for a definition
wherever it is."""
from pathlib import Path

SRC_DIR = Path(__file__).resolve().parents[2] / "julia" / "src"
SRC_FILES = sorted(SRC_DIR.glob("*.jl"))


def package_source() -> str:
    """All of julia/src, the module file first."""
    ordered = sorted(SRC_FILES, key=lambda p: (p.name != "ADPlace.jl", p.name))
    return "\n".join(p.read_text() for p in ordered)
