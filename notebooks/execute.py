"""Run the Python notebooks in a fresh kernel and store their outputs, so they render on GitHub as they ran.

    python notebooks/execute.py                      # every Python notebook here, outputs written back
    python notebooks/execute.py placement.ipynb      # one
    python notebooks/execute.py --check              # run, compare with the stored outputs, write nothing

The tests (tests/notebooks/) run the same `execute()` and compare with `outline()`: the stored outputs must be
those of such a run, up to numbers (timings differ run to run) and image bytes. Needs nbclient, nbformat and
ipykernel (all in `adplace[test]`). Each notebook runs in a temporary working directory, so the traces and
pictures it writes do not land in the checkout.
"""
from __future__ import annotations

import argparse
import re
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
CELL_TIMEOUT_S = 300
IMAGE_TYPES = ("image/png", "image/svg+xml", "image/jpeg")


def python_notebooks(folder: Path = HERE) -> list[Path]:
    """The notebooks in `folder` whose kernel is Python, sorted by name."""
    import nbformat

    return sorted(p for p in folder.glob("*.ipynb")
                  if nbformat.read(p, as_version=4).metadata.get("kernelspec", {}).get("language") == "python")


def execute(path: Path, timeout: int = CELL_TIMEOUT_S):
    """Run the notebook at `path` top to bottom in a fresh python3 kernel; returns the executed NotebookNode.

    Raises nbclient's CellExecutionError (naming the cell and the Python error) if any cell fails, and
    CellTimeoutError if one runs over `timeout` seconds.
    """
    import nbformat
    from nbclient import NotebookClient

    nb = nbformat.read(path, as_version=4)
    with tempfile.TemporaryDirectory(prefix="adplace-nb-") as cwd:
        NotebookClient(nb, timeout=timeout, kernel_name="python3", coalesce_streams=True, record_timing=False,
                       resources={"metadata": {"path": cwd}}).execute()
    return nb


_NUMBER = re.compile(r"[-+]?\d[\d_,]*(\.\d+)?([eE][-+]?\d+)?")
_SPACE = re.compile(r"\s+")


def _text(value) -> str:
    return "".join(value) if isinstance(value, list) else str(value)


def outline(nb) -> list[list[tuple]]:
    """Per code cell, its outputs with numbers masked and whitespace collapsed, images reduced to their type.

    Two runs of the same notebook give the same outline; a changed message, a missing plot or an error does not.
    """
    def mask(text: str) -> str:
        return _SPACE.sub(" ", _NUMBER.sub("#", text)).strip()

    cells = []
    for cell in nb.cells:
        if cell.cell_type != "code":
            continue
        outputs = []
        for out in cell.get("outputs", []):
            if out.output_type == "stream":
                outputs.append(("stream", out.name, mask(_text(out.text))))
            elif out.output_type == "error":
                outputs.append(("error", out.ename, mask(out.evalue)))
            else:
                data = out.get("data", {})
                images = sorted(t for t in data if t in IMAGE_TYPES)
                shown = images or [mask(_text(data.get(t, ""))) for t in ("text/markdown", "text/html", "text/plain")
                                   if t in data][:1]
                outputs.append((out.output_type, *shown))
        cells.append(outputs)
    return cells


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Run the Python notebooks in a fresh kernel and store their "
                                     "outputs (or, with --check, compare them with the stored ones).")
    parser.add_argument("notebooks", nargs="*", type=Path, help="notebooks to run (default: every Python notebook "
                        "in notebooks/)")
    parser.add_argument("--check", action="store_true", help="compare with the stored outputs; write nothing")
    args = parser.parse_args(argv)
    import nbformat

    stale = []
    for path in args.notebooks or python_notebooks():
        path = path if path.exists() else HERE / path
        print(f"running {path.name} ...", flush=True)
        ran = execute(path)
        if args.check:
            if outline(ran) != outline(nbformat.read(path, as_version=4)):
                stale.append(path.name)
        else:
            nbformat.write(ran, path)
    if stale:
        print("stored outputs differ from a fresh run: " + ", ".join(stale) + " (run python notebooks/execute.py)")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
