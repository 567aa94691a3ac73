"""Scripts that live outside any package (notebooks/*.py, benchmarks/*.py), for their tests: import one as a module,
or run a benchmark's quick mode and read its JSON report."""
import importlib.util
import json
import subprocess
import sys
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parents[1]


def load_script(path: Path, module_name: str) -> ModuleType:
    """The Python file at `path`, executed as a fresh module named `module_name`."""
    spec = importlib.util.spec_from_file_location(module_name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def run_quick_benchmark(name: str, out: Path) -> tuple[dict, str]:
    """Run `benchmarks/<name>.py --quick --out <out>` in a subprocess (it must succeed); returns (the JSON it wrote,
    what it printed)."""
    result = subprocess.run([sys.executable, str(ROOT / "benchmarks" / f"{name}.py"), "--quick", "--out", str(out)],
                            capture_output=True, text=True, timeout=300, cwd=ROOT)
    assert result.returncode == 0, result.stderr[-2000:]
    return json.loads(out.read_text()), result.stdout
