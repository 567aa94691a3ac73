"""Import a script that lives outside any package (notebooks/*.py, benchmarks/*.py) as a module, for its tests."""
import importlib.util
from pathlib import Path
from types import ModuleType


def load_script(path: Path, module_name: str) -> ModuleType:
    """The Python file at `path`, executed as a fresh module named `module_name`."""
    spec = importlib.util.spec_from_file_location(module_name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
