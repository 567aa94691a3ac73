"""The *_client.py scripts of this folder as modules, for the tests that build their models in-process too."""
import importlib.util
from pathlib import Path

HERE = Path(__file__).parent


def load_client(name: str):
    """A *_client.py script of this folder as a module (its model-building functions)."""
    spec = importlib.util.spec_from_file_location(name, HERE / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
