"""The import direction of style.md section 1 (build -> place -> plan/run); the core imports without CuPy or Julia.

Imports are read from the source with `ast`. Module-level imports (anywhere outside a function body: top level, class
bodies, `if`/`try` blocks) must follow the rules with no exception. Imports inside functions run only when called, so
they are checked against an explicit allowlist: a new lazy import that breaks a rule fails here until it is reviewed
and listed.
"""
import ast
import subprocess
import sys
import textwrap
from pathlib import Path

import adplace

PACKAGE_DIR = Path(adplace.__file__).resolve().parent

# (module, function, imported module): lazy imports that cross a layer on purpose. None today; framework/ may never
# appear here (test_framework_never_imports_ops_even_lazily).
ALLOWED_LAZY_IMPORTS: set[tuple[str, str, str]] = {
    # the session manager behind MonitoredSession and Supervisor creates the sessions it manages
    ("adplace.train.session_manager", "_new_session", "adplace.runtime.session.Session"),
}


def _module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE_DIR.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imports(path: Path) -> list[tuple[str, str | None]]:
    """(imported module, enclosing function or None) for every import in `path`, relative imports resolved."""
    module = _module_name(path)
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    found = []

    def visit(node, function):
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
                visit(child, getattr(child, "name", "<lambda>"))
                continue
            if isinstance(child, ast.Import):
                found.extend((alias.name, function) for alias in child.names)
            elif isinstance(child, ast.ImportFrom):
                if child.level:
                    base = package.split(".")
                    base = base[:len(base) - (child.level - 1)]
                    target = ".".join(base + ([child.module] if child.module else []))
                else:
                    target = child.module
                # `from adplace import ops` -> adplace.ops; `from adplace.placement import Placer` -> ....Placer
                found.extend((f"{target}.{alias.name}", function) for alias in child.names)
            visit(child, function)
    visit(ast.parse(path.read_text(), filename=str(path)), None)
    return found


def _violations(subpackage_or_module: str, forbidden: tuple[str, ...]) -> list[str]:
    target = PACKAGE_DIR / subpackage_or_module
    paths = sorted(target.rglob("*.py")) if target.is_dir() else [target.with_suffix(".py")]
    assert paths, f"nothing to scan under {target}"
    bad = []
    for path in paths:
        module = _module_name(path)
        for imported, function in _imports(path):
            if not any(imported == f or imported.startswith(f + ".") for f in forbidden):
                continue
            if function is not None and (module, function, imported) in ALLOWED_LAZY_IMPORTS:
                continue
            where = f"in {function}()" if function else "at module level"
            bad.append(f"{module} imports {imported} {where}")
    return bad


def test_the_scanner_sees_imports_at_every_level(tmp_path, monkeypatch):
    fake_pkg = tmp_path / "adplace" / "framework"
    fake_pkg.mkdir(parents=True)
    source = textwrap.dedent("""
        import adplace.runtime.session
        from adplace import ops
        from ..kernels import cpu
        try:
            from adplace.placement import Placer
        except ImportError:
            pass
        class C:
            from adplace.ops import math_ops
        def f():
            import adplace.ops.array_ops
    """)
    (fake_pkg / "mod.py").write_text(source)
    monkeypatch.setattr(sys.modules[__name__], "PACKAGE_DIR", tmp_path / "adplace")
    found = set(_imports(fake_pkg / "mod.py"))
    assert {("adplace.runtime.session", None), ("adplace.ops", None), ("adplace.kernels.cpu", None),
            ("adplace.placement.Placer", None), ("adplace.ops.math_ops", None), ("adplace.ops.array_ops", "f")} <= found
    forbidden = ("adplace.ops", "adplace.runtime", "adplace.kernels", "adplace.placement")
    assert len(_violations("framework", forbidden)) == 6


def test_framework_imports_nothing_above_it():
    assert _violations("framework", ("adplace.ops", "adplace.runtime", "adplace.kernels", "adplace.placement",
                                     "adplace.devices", "adplace.train")) == []


def test_framework_never_imports_ops_even_lazily():
    """framework/ knows nothing of ops: not at load time, not inside a function (no allowlist applies)."""
    lazy_or_not = [(path.name, imported, function) for path in sorted((PACKAGE_DIR / "framework").rglob("*.py"))
                   for imported, function in _imports(path)
                   if imported == "adplace.ops" or imported.startswith("adplace.ops.")]
    assert lazy_or_not == []


def test_tensor_operators_are_registered_by_ops_modules():
    """As TF's `_override_operator`: the Tensor class in framework/ defines no arithmetic, comparison or indexing
    operator; ops modules install them, and after `import adplace` they are there."""
    source = (PACKAGE_DIR / "framework" / "operation.py").read_text()
    tensor_class = next(node for node in ast.parse(source).body
                        if isinstance(node, ast.ClassDef) and node.name == "Tensor")
    defined = {node.name for node in tensor_class.body if isinstance(node, ast.FunctionDef)}
    defined |= {target.id for node in tensor_class.body if isinstance(node, ast.Assign)
                for target in node.targets if isinstance(target, ast.Name)}
    operators = {"__add__", "__radd__", "__sub__", "__rsub__", "__mul__", "__rmul__", "__truediv__", "__rtruediv__",
                 "__floordiv__", "__rfloordiv__", "__mod__", "__rmod__", "__pow__", "__rpow__", "__matmul__",
                 "__rmatmul__", "__lt__", "__le__", "__gt__", "__ge__", "__getitem__", "__neg__", "__abs__",
                 "__and__", "__rand__", "__or__", "__ror__", "__xor__", "__rxor__", "__invert__"}
    assert defined & operators == set()
    installed = {"__add__", "__radd__", "__sub__", "__rsub__", "__mul__", "__rmul__", "__truediv__", "__rtruediv__",
                 "__floordiv__", "__rfloordiv__", "__mod__", "__rmod__", "__pow__", "__rpow__", "__matmul__",
                 "__rmatmul__", "__lt__", "__le__", "__gt__", "__ge__", "__getitem__", "__neg__", "__abs__"}
    assert {name for name in installed if name in vars(adplace.Tensor)} == installed


def test_the_allowlisted_lazy_imports_still_exist():
    """An allowlist entry that no longer matches code is stale: remove it so it cannot hide a new import."""
    for module, function, imported in ALLOWED_LAZY_IMPORTS:
        path = PACKAGE_DIR.parent / (module.replace(".", "/") + ".py")
        assert (imported, function) in _imports(path), (module, function, imported)


def test_kernels_never_import_ops():
    assert _violations("kernels", ("adplace.ops", "adplace.runtime", "adplace.placement")) == []


def test_ops_do_not_import_placement_runtime_or_kernels():
    assert _violations("ops", ("adplace.runtime", "adplace.kernels", "adplace.placement")) == []


def test_gradients_layers_and_training_build_graphs_only():
    """Autodiff, layers and optimizers add ops to graphs; they never reach into the placer, runtime or kernels."""
    below_build = ("adplace.runtime", "adplace.kernels", "adplace.placement")
    assert _violations("gradients", below_build + ("adplace.train", "adplace.layers")) == []
    assert _violations("layers", below_build + ("adplace.train",)) == []
    assert _violations("train", below_build) == []


def test_devices_and_placement_sit_below_ops_and_runtime():
    assert _violations("devices", ("adplace.ops", "adplace.runtime", "adplace.kernels", "adplace.placement")) == []
    assert _violations("placement", ("adplace.ops", "adplace.runtime", "adplace.kernels")) == []


def test_observing_sits_on_top_and_optional_libraries_load_lazily():
    """The profiler and timeline read what runs produce; nothing that builds, places or runs imports them. The
    extras they, the executor, tf.contrib.opt and tf.adcme use (matplotlib, threadpoolctl, CuPy, SciPy) are imported
    only inside functions."""
    observers = ("adplace.profiler", "adplace.client")
    for layer in ("framework", "ops", "runtime", "kernels", "placement", "train", "gradients", "layers"):
        assert _violations(layer, observers) == [], layer
    extras = ("matplotlib", "threadpoolctl", "cupy", "scipy")
    for layer in ("profiler", "client", "runtime", "contrib", "adcme"):
        target = PACKAGE_DIR / layer
        paths = sorted(target.rglob("*.py")) if target.is_dir() else [target.with_suffix(".py")]
        eager = [(p.name, m) for p in paths for m, function in _imports(p)
                 if function is None and any(m == e or m.startswith(e + ".") for e in extras)]
        assert eager == [], layer


def _run_python(code: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, timeout=60,
                          cwd=str(PACKAGE_DIR.parent))


def test_import_works_with_cupy_blocked_and_does_not_load_julia():
    result = _run_python("""
        import sys
        sys.modules['cupy'] = None          # any `import cupy` now raises ImportError
        requested = []

        class Recorder:
            def find_spec(self, name, path=None, target=None):
                requested.append(name)
                return None
        sys.meta_path.insert(0, Recorder())

        import adplace as tf
        assert 'juliacall' not in sys.modules, 'juliacall imported'
        assert not [n for n in requested if n.split('.')[0] in ('juliacall', 'juliapkg', 'cupy')], requested
        assert tf.config.list_devices()[0].name.endswith('device:CPU:0')
        c = tf.matmul(tf.constant([[1.0, 2.0], [3.0, 4.0]]), tf.constant([[1.0, 2.0], [3.0, 4.0]]))
        print(tf.Session().run(c).tolist())
    """)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[[7.0, 10.0], [15.0, 22.0]]"
