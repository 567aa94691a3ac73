"""Keep placement_julia.ipynb's code cells equal to the `# %%` cells of julia/examples/ (the prose cells stay).

    python notebooks/sync_julia.py            # rewrite the notebook's code cells from the examples
    python notebooks/sync_julia.py --check    # exit 1, naming the first difference, if they differ; write nothing

The examples are split at `# %%` lines (the "percent" cell format of Jupytext and VS Code; text after `# %%` is the
cell's title, for readers of the .jl file); the lines before the first marker are the file's header comment and belong
to no cell. A cell's code is the text up to the next marker, without surrounding blank lines. The notebook's code cells
take the cells of EXAMPLES in order, position by position; a cell the examples gained is appended at the end, and a
cell they lost is dropped from the end, with a note to move it next to its prose (or to remove that prose).
"""
from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
EXAMPLES_DIR = HERE.parent / "julia" / "examples"
EXAMPLES = ("adcme_colocation.jl", "multi_gpu_towers.jl", "heat_inversion.jl")
NOTEBOOK = HERE / "placement_julia.ipynb"
MARKER = re.compile(r"^# %%(?:[ \t](.*))?$")


def split_cells(text: str) -> tuple[list[str], list[tuple[str, str]]]:
    """(header lines, [(title, code), ...]) of a percent-format file; code without surrounding blank lines."""
    header, cells = [], []
    for line in text.splitlines():
        match = MARKER.match(line)
        if match:
            cells.append(((match.group(1) or "").strip(), []))
        else:
            (cells[-1][1] if cells else header).append(line)
    return header, [(title, _strip_blank_lines(lines)) for title, lines in cells]


def _strip_blank_lines(lines: list[str]) -> str:
    start, end = 0, len(lines)
    while start < end and not lines[start].strip():
        start += 1
    while end > start and not lines[end - 1].strip():
        end -= 1
    return "\n".join(lines[start:end])


def example_cells(examples_dir: Path = EXAMPLES_DIR, names=EXAMPLES) -> list[str]:
    """The code of every `# %%` cell of the examples, in order (the notebook's code cells)."""
    return [code for name in names for _, code in split_cells((examples_dir / name).read_text())[1]]


def synced(nb, sources: list[str]) -> tuple[object, list[str]]:
    """A copy of `nb` whose code cells are `sources` (prose cells unchanged), and notes on cells added or dropped."""
    import copy

    import nbformat

    nb = copy.deepcopy(nb)
    code = [cell for cell in nb.cells if cell.cell_type == "code"]
    for cell, source in zip(code, sources):
        if cell.source != source:
            cell.source, cell.outputs, cell.execution_count = source, [], None
    notes = []
    for k, source in enumerate(sources[len(code):], len(code) + 1):
        cell = nbformat.v4.new_code_cell(source)
        ids = {c.get("id") for c in nb.cells}
        cell.id = next(f"code-{k}-{n}" for n in range(len(ids) + 1) if f"code-{k}-{n}" not in ids)
        nb.cells.append(cell)
        notes.append(f"appended code cell {k}: move it after the prose it belongs to and write that prose")
    if len(code) > len(sources):
        dropped = set(map(id, code[len(sources):]))
        nb.cells = [cell for cell in nb.cells if id(cell) not in dropped]
        notes.append(f"dropped {len(dropped)} code cell(s) from the end: check the prose around where they were")
    return nb, notes


def render(nb) -> str:
    """The notebook file's text, as nbformat.write writes it."""
    import nbformat

    text = nbformat.writes(nb)
    return text if text.endswith("\n") else text + "\n"


def sync(notebook: Path = NOTEBOOK, examples_dir: Path = EXAMPLES_DIR, check: bool = False) -> int:
    """Rewrite (or, with check, compare) the notebook's code cells; 0 when it was or now is in sync, 1 otherwise."""
    import nbformat

    before = notebook.read_text()
    nb, notes = synced(nbformat.reads(before, as_version=4), example_cells(examples_dir))
    after = render(nb)
    if after == before:
        return 0
    if check:
        stored = [c.source for c in nbformat.reads(before, as_version=4).cells if c.cell_type == "code"]
        wanted = [c.source for c in nb.cells if c.cell_type == "code"]
        first = next((k for k, (s, w) in enumerate(zip(stored, wanted), 1) if s != w),
                     min(len(stored), len(wanted)) + 1)
        print(f"{notebook.name}: code cell {first} differs from the examples' `# %%` cells "
              f"({len(stored)} code cells, {len(wanted)} example cells); run python notebooks/sync_julia.py")
        return 1
    notebook.write_text(after)
    print(f"{notebook.name}: code cells rewritten from {', '.join(EXAMPLES)}")
    for note in notes:
        print("  " + note)
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Rewrite placement_julia.ipynb's code cells from the `# %%` cells of "
                                     "julia/examples/ (prose cells are kept).")
    parser.add_argument("--check", action="store_true", help="compare only; exit 1 if the notebook is out of sync")
    args = parser.parse_args(argv)
    return sync(check=args.check)


if __name__ == "__main__":
    sys.exit(main())
