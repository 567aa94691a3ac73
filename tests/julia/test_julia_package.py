"""The Julia package in julia/ (ADPlace), checked from Python: no Julia runs here unless one is on PATH.

- its .jl files parse (tree-sitter-julia), and every `tf.x.y` they reach exists in adplace;
- its configuration (julia/Project.toml, julia/CondaPkg.toml, adplace/juliapkg.json, pyproject.toml) is consistent;
- adplace behaves as ADPlace.jl and julia/test/runtests.jl expect, driven through a Python stand-in for ADPlace's
  value conversions (julia_standin.py), including ADCME's device-function closure;
- with Julia on PATH (or ADPLACE_JULIA), julia/test/runtests.jl itself runs.
"""
import ast
import json
import math
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import adplace as tf
from adplace.errors import InvalidArgumentError
from julia_sources import SRC_FILES, package_source
from julia_standin import (JuliaPyObject, JuliaString, julia_function, pybuiltin, raw_julia_function, to_julia,
                           to_python)
from placement_log import CPU0, GPU0, GPU1

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    tomllib = pytest.importorskip("tomli")

REPO = Path(__file__).resolve().parents[2]
JULIA_DIR = REPO / "julia"
JULIA_FILES = sorted(JULIA_DIR.rglob("*.jl"))
JULIAPKG_JSON = REPO / "adplace" / "juliapkg.json"
PYTHONCALL_UUID = "6099a3de-0909-46bc-b1f4-468b9a2dfc0d"


# --- parsing the Julia sources ----------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def julia_trees(julia_parser):
    return {path: julia_parser.parse(path.read_bytes()) for path in JULIA_FILES}


def test_the_julia_package_has_its_files():
    """The parametrized checks below see the package's sources (an empty glob would make them vacuous)."""
    names = {p.relative_to(JULIA_DIR).as_posix() for p in JULIA_FILES}
    assert {"src/ADPlace.jl", "test/runtests.jl", "examples/adcme_colocation.jl",
            "examples/multi_gpu_towers.jl", "examples/heat_equation.jl"} <= names


@pytest.mark.parametrize("path", JULIA_FILES, ids=lambda p: p.relative_to(JULIA_DIR).as_posix())
def test_julia_file_parses(julia_parser, path):
    """Every .jl file under julia/ is syntactically valid Julia: no ERROR or MISSING node."""
    tree = julia_parser.parse(path.read_bytes())
    assert not tree.root_node.has_error, f"{path} has a syntax error (tree-sitter-julia)"


@pytest.mark.parametrize("source", ["function f(x)\n    x +\nend\n", "begin\n    x = 1\n", "x = (1, 2\n",
                                    "@pywith tf.device(\"/cpu:0\") begin\n    a = 1\n"])
def test_broken_julia_is_rejected(julia_parser, source):
    """The parse check can fail: unclosed blocks and brackets are flagged."""
    assert julia_parser.parse(source.encode()).root_node.has_error


def tf_chains(tree) -> set:
    """Attribute chains `a.b.c` of every maximal `tf.a.b.c` field_expression (a chain through a call result, such as
    `tf.get_default_graph().get_operations`, stops at the call: only `get_default_graph` is the module's)."""
    found, stack = set(), [tree.root_node]
    while stack:
        node = stack.pop()
        stack.extend(node.children)
        parent = node.parent
        if node.type != "field_expression" or (
                parent is not None and parent.type == "field_expression" and parent.child_by_field_name("value") == node):
            continue
        parts = []
        while node.type == "field_expression":
            parts.append(node.children[-1].text.decode())
            node = node.child_by_field_name("value")
        if node.type == "identifier" and node.text == b"tf":
            found.add(".".join(reversed(parts)))
    return found


def test_every_tf_attribute_the_julia_code_uses_exists(julia_trees):
    """Each `tf.x.y` in julia/ (ADPlace's `tf` is `import adplace`) resolves on adplace: a misspelt or missing name
    would be an error only when the Julia line runs."""
    chains = set().union(*map(tf_chains, julia_trees.values()))
    assert {"device", "NodeDef", "GraphKeys.UPDATE_OPS", "adcme.gradients", "Session", "ConfigProto", "run_profile",
            "save_profile", "train.GradientDescentOptimizer", "config.set_virtual_gpus", "config.cuda_gpus",
            "get_default_graph"} <= chains
    missing = missing_tf_names(chains)
    assert not missing, f"the Julia code reaches names adplace lacks: {missing}"


def missing_tf_names(chains) -> list[str]:
    """The `tf.x.y` chains (written without `tf.`) that do not resolve on adplace, sorted."""
    missing = []
    for chain in sorted(chains):
        obj = tf
        for part in chain.split("."):
            if not hasattr(obj, part):
                missing.append(f"tf.{chain}")
                break
            obj = getattr(obj, part)
    return missing


def julia_constants(tree) -> dict:
    """`const NAME = <literal>` of a file, for string literals and vectors of string literals (Python's syntax for
    these is the same)."""
    constants, stack = {}, [tree.root_node]
    while stack:
        node = stack.pop()
        stack.extend(node.children)
        if node.type != "const_statement":
            continue
        assign = node.named_children[0]
        name, value = assign.named_children[0], assign.named_children[-1]
        literals = value.named_children if value.type == "vector_expression" else [value]
        if value.type in ("string_literal", "vector_expression") and all(
                v.type == "string_literal" and v.named_child_count == 1 and v.named_children[0].type == "content"
                for v in literals):
            constants[name.text.decode()] = ast.literal_eval(value.text.decode())
    return constants


def test_julia_constants_match_adplace(julia_trees):
    """ADPlace.jl's collection keys equal tf.GraphKeys' and its PS_OPS equals adplace.PS_OPS (as a list)."""
    constants = {}
    for path in SRC_FILES:
        constants |= julia_constants(julia_trees[path])
    assert constants["UPDATE_OPS"] == tf.GraphKeys.UPDATE_OPS
    assert constants["TRAINABLE_VARIABLES"] == tf.GraphKeys.TRAINABLE_VARIABLES
    assert constants["GLOBAL_VARIABLES"] == tf.GraphKeys.GLOBAL_VARIABLES
    assert constants["PS_OPS"] == list(tf.PS_OPS)


def test_the_standin_follows_adplace_jl():
    """julia_standin.py models what ADPlace.jl says: a Python str becomes a Julia String, and a Julia function
    handed to Python converts its arguments with tojulia and its result with topy (else the stand-in tests below
    would check a convention the package does not have)."""
    source = " ".join(package_source().split())
    assert "pyisinstance(x, pybuiltins.str) && return pyconvert(String, x)" in source
    assert "topy(f::Function) = pyfunc(julia_callback(f)" in source
    assert "topy(f(map(tojulia, args)...;" in source
    assert "Base.getproperty(x::PyObject, k::Symbol) = tojulia(python(() -> pygetattr(" in source


# --- configuration files ------------------------------------------------------------------------------------------
def load_toml(path: Path) -> dict:
    return tomllib.loads(path.read_text())


def test_juliapkg_json_resolves_to_the_julia_directory(monkeypatch):
    """juliapkg (what juliacall uses) reads adplace/juliapkg.json as ADPlace, dev'ed from julia/ with its uuid."""
    juliapkg_deps = pytest.importorskip("juliapkg.deps")
    data = json.loads(JULIAPKG_JSON.read_text())
    assert set(data["packages"]) == {"ADPlace"}
    monkeypatch.setattr(juliapkg_deps, "deps_files", lambda: [str(JULIAPKG_JSON)])
    compat, specs = juliapkg_deps.find_requirements()
    (spec,) = specs
    project = load_toml(JULIA_DIR / "Project.toml")
    assert (spec.name, spec.uuid, spec.dev) == ("ADPlace", project["uuid"], True)
    assert Path(spec.path) == JULIA_DIR
    assert compat == type(compat).parse(project["compat"]["julia"])  # the same Julia versions in both files


def test_juliapkg_finds_the_installed_adplace():
    """juliapkg's own search (sys.path and editable installs) finds the juliapkg.json next to the imported adplace."""
    juliapkg_deps = pytest.importorskip("juliapkg.deps")
    found = {os.path.normcase(os.path.realpath(f)) for f in juliapkg_deps.deps_files()}
    assert os.path.normcase(os.path.realpath(Path(tf.__file__).parent / "juliapkg.json")) in found


def test_project_toml():
    """julia/Project.toml: ADPlace with PythonCall and the stdlibs LinearAlgebra and Statistics (their real uuids, a
    compat entry each), a Julia compat, Test for tests."""
    project = load_toml(JULIA_DIR / "Project.toml")
    assert project["name"] == "ADPlace"
    assert project["uuid"] == json.loads(JULIAPKG_JSON.read_text())["packages"]["ADPlace"]["uuid"]
    assert project["deps"] == {"PythonCall": PYTHONCALL_UUID, "LinearAlgebra": "37e2e46d-f89d-539d-b4ee-838fcccc9c8e",
                               "Statistics": "10745b16-79ce-11e8-11f9-7d13ad32a3b2"}
    assert all(project["compat"].get(name) for name in [*project["deps"], "julia"])
    assert "Test" in project["extras"] and project["targets"]["test"] == ["Test"]


def test_condapkg_toml_and_juliapkg_json_point_at_each_other():
    """julia/CondaPkg.toml installs adplace from this checkout (a direct reference resolved, as CondaPkg does, against
    the CondaPkg.toml directory), and that checkout's adplace/juliapkg.json points back at julia/."""
    pip_dep = load_toml(JULIA_DIR / "CondaPkg.toml")["pip"]["deps"]["adplace"]
    assert pip_dep["version"].startswith("@ ") and pip_dep.get("editable") is True
    url = pip_dep["version"][1:].strip()
    assert url.startswith(".")  # CondaPkg makes only "."-relative references absolute
    root = (JULIA_DIR / url).resolve()
    assert root == REPO
    assert load_toml(root / "pyproject.toml")["project"]["name"] == "adplace"
    back = json.loads((root / "adplace" / "juliapkg.json").read_text())["packages"]["ADPlace"]["path"]
    assert (root / "adplace" / back).resolve() == JULIA_DIR


def test_pyproject_ships_juliapkg_json():
    """A non-editable install keeps adplace/juliapkg.json (package data), or juliacall would not find ADPlace."""
    package_data = load_toml(REPO / "pyproject.toml").get("tool", {}).get("setuptools", {}).get("package-data", {})
    assert "juliapkg.json" in package_data.get("adplace", [])


# --- ADCME's device function, as the Julia closure runs it --------------------------------------------------------
PS_OPS = [JuliaString("Variable"), JuliaString("VariableV2"), JuliaString("AutoReloadVariable")]
PS_DEVICE = JuliaString("/device:CPU:0")
jl_tf = JuliaPyObject(tf)  # ADPlace's `tf`


def assign_to_device(device, ps_device=PS_DEVICE):
    """ADCME's documented closure (julia/examples/adcme_colocation.jl), line for line."""
    def _assign(op):
        node_def = op if pybuiltin("isinstance")(op, jl_tf.NodeDef) else op.node_def
        if node_def.op in PS_OPS:
            return ps_device
        return device
    return _assign


def test_julia_strings_never_equal_python_strings():
    """The stand-in models the trap honestly: a Python str is not a Julia String, so `in(str, PS_OPS)` is false."""
    assert JuliaString("VariableV2") == JuliaString("VariableV2") and "VariableV2" not in PS_OPS
    assert to_julia("VariableV2") in PS_OPS and to_python(JuliaString("a")) == "a"


def test_device_function_sees_julia_values():
    """What a Julia device function receives (runtests.jl, "values a device function sees"): a PyObject op whose
    node_def.op is a Julia String; isinstance answers a Julia Bool."""
    x = jl_tf.constant(1.0)
    assert pybuiltin("isinstance")(x.op, jl_tf.NodeDef) is False
    assert pybuiltin("isinstance")(x.op.node_def, jl_tf.NodeDef) is True
    assert x.op.node_def.op == JuliaString("Const")
    seen = []
    with tf.device(julia_function(lambda op: (seen.append(op), JuliaString("/cpu:0"))[1])):
        tf.constant(2.0)
    assert isinstance(seen[0], JuliaPyObject) and seen[0].type == JuliaString("Const")


def test_assign_to_device_with_adplace_conversion(gpus):
    """With ADPlace's conversion the closure keeps the variable on the CPU and puts sin on the GPU, whether adplace
    calls it with an Operation, Julia calls it with a NodeDef, or it goes through `tf.device` as a Julia Function."""
    with tf.device(julia_function(assign_to_device(JuliaString("/device:GPU:0")))):
        a = tf.Variable(1.0)
        b = tf.sin(a)
    assert a.device == a.op.device == "/device:CPU:0" and a.op.type == "VariableV2"
    assert b.device == b.op.device == "/device:GPU:0"

    assign = assign_to_device(JuliaString("/device:GPU:1"))
    assert assign(jl_tf.NodeDef(name="v", op="VariableV2")) == JuliaString("/device:CPU:0")
    assert assign(jl_tf.NodeDef(name="m", op="MatMul")) == JuliaString("/device:GPU:1")
    assert julia_function(assign)(tf.NodeDef(name="v", op="VariableV2")) == "/device:CPU:0"
    with to_python(jl_tf.device(assign)):  # `@pywith tf.device(assign)`: topy(f::Function) on the way in
        v = tf.Variable(1.0)
        w = v * 2.0
    assert (v.device, w.device) == ("/device:CPU:0", "/device:GPU:1")
    assert assign_to_device(JuliaString("/gpu:0"), JuliaString("/cpu:1"))(to_julia(v.op)) == JuliaString("/cpu:1")


def test_assign_to_device_without_conversion_is_the_trap(gpus):
    """With PythonCall's plain pyfunc, `op.node_def.op` is a Python str, never equal to a Julia String: the same
    closure silently puts the variable on the GPU (what ADPlace's conversion exists to prevent)."""
    with tf.device(raw_julia_function(assign_to_device(JuliaString("/device:GPU:0")))):
        a = tf.Variable(1.0)
    assert a.device == "/device:GPU:0"
    with tf.device(raw_julia_function(lambda op: JuliaString("/cpu:0") if op.node_def.op in [JuliaString(
            "VariableV2")] else JuliaString("/gpu:0"))):
        v_raw = tf.Variable(1.0)
    assert v_raw.device == "/gpu:0"  # a device function's string is kept verbatim


@pytest.mark.usefixtures("virtual_gpus_only")
def test_adcme_script_places_runs_colocates_and_profiles(gpus, tmp_path):
    """julia/examples/adcme_colocation.jl in Python: variable on CPU:0 and sin on GPU:0 at run time, the Sin's
    gradient (a Cos under gradients/) requested on and run on GPU:0, and a Chrome trace written by save_profile."""
    with tf.device("/cpu:0"):
        a0 = tf.Variable(1.0, dtype=tf.float64)
        b0 = tf.sin(a0)
    with tf.device("/gpu:0"):
        d = tf.cos(b0)
    assert d.device == "/device:GPU:0" and d.op.inputs[0].op.name == "Sin"
    with tf.device(julia_function(assign_to_device(JuliaString("/device:GPU:0")))):
        a = tf.Variable(1.0, dtype=tf.float64)
        b = tf.sin(a)
    with tf.device("/CPU:0"):
        c = tf.cos(b)
    assert c.device == "/device:CPU:0"
    (g,) = tf.gradients(c, a, colocate_gradients_with_ops=True)
    sin_grads = [op for op in tf.get_default_graph().get_operations()
                 if op.name.startswith("gradients") and op.type == "Cos"]
    assert sin_grads and all(op.device == b.device == "/device:GPU:0" for op in sin_grads)

    sess = tf.Session()
    sess.run(tf.global_variables_initializer(), feed_dict=None)
    value = tf.run_profile(sess, g + c, feed_dict=None)
    assert value == pytest.approx(-math.sin(math.sin(1.0)) * math.cos(1.0) + math.cos(math.sin(1.0)))
    assert (sess.placement(a), sess.placement(b)) == (CPU0, GPU0)
    assert {sess.placement(op.outputs[0]) for op in sin_grads} == {GPU0}

    path = tmp_path / "true.json"
    assert tf.save_profile(str(path)) == str(path)
    events = json.loads(path.read_text())["traceEvents"]
    processes = {e["pid"]: e["args"]["name"] for e in events if e.get("name") == "process_name"}
    ran_on = {e["args"]["name"]: processes[e["pid"]] for e in events if e.get("ph") == "X"}
    assert ran_on[a.op.name] == CPU0 + " Compute" and ran_on[b.op.name] == GPU0 + " Compute"
    assert all(ran_on[op.name] == GPU0 + " Compute" for op in sin_grads)
    with tf.device("/cpu:0"):
        assert tf.get_collection(tf.GraphKeys.UPDATE_OPS) == []


@pytest.mark.parametrize("returned", [lambda op: op, lambda op: 1, lambda op: JuliaPyObject(3.5)],
                         ids=["PyObject", "Int", "wrapped float"])
def test_device_function_returning_a_non_string_names_the_op(returned):
    """A buggy Julia closure that returns no String hands adplace a non-string: a TypeError naming the op, not a
    silent or obscure failure."""
    with pytest.raises(TypeError, match=r"Device function .* returned .* for op 'Const' \(Const\); it must return a "
                                        r"device string, a DeviceSpec or None"):
        with tf.device(julia_function(returned)):
            tf.constant(1.0)


# --- the keywords and values the Julia package relies on ----------------------------------------------------------
def test_device_scopes_as_the_julia_macros_use_them(gpus):
    """@cpu/@gpu pass "/cpu:i"/"/gpu:i" strings (stored canonical); @pywith exits the scope when the block throws;
    name_scope yields "tower/" to `@pywith ... as scope`; a bad dtype raises (a PyException in Julia)."""
    made = []
    for i in range(2):
        with tf.device(f"/gpu:{i}"):
            made.append(tf.constant(1.0))
    assert [t.device for t in made] == ["/device:GPU:0", "/device:GPU:1"]
    with tf.device("/cpu:0"):
        assert tf.constant(1.0).device == "/device:CPU:0"
    with pytest.raises(RuntimeError, match="boom"):
        with tf.device("/gpu:0"):
            raise RuntimeError("boom")
    assert tf.constant(1.0).device == ""
    with pytest.raises(TypeError):
        tf.constant(1.0, dtype="no such dtype")
    with tf.name_scope("tower") as scope:
        assert scope == "tower/"


def test_tensors_from_julia_values_and_keywords():
    """ADPlace's Variable/constant/placeholder calls: Julia floats are float64, Julia matrices arrive as NumPy arrays,
    `shape=[nothing, 2]` is [None, 2] and a Julia Vector{Int} shape is a NumPy int array."""
    v = tf.Variable(1.0, dtype=tf.float64, name="c0")
    assert (v.name, v.op.type, v.dtype.base_dtype.name) == ("c0:0", "VariableV2", "float64")
    x = tf.constant(np.array([[1.0, 2.0], [3.0, 4.0]]), dtype=tf.float64)
    assert x.shape.ndims == 2 and x.dtype.base_dtype == tf.float64
    assert tf.placeholder(tf.float64, shape=[None, 2]).shape.as_list() == [None, 2]
    assert tf.placeholder(tf.float64, shape=[None]).shape.as_list() == [None]
    assert tf.placeholder(tf.float64, shape=np.array([2, 3])).shape.as_list() == [2, 3]
    assert tf.constant(np.array([True, False]), dtype=tf.bool).dtype == tf.bool
    for dtype in (tf.float64, tf.float32, tf.int64, tf.int32, tf.bool, tf.complex128, tf.complex64, tf.string):
        assert dtype.name  # ADPlace's dtype table maps Julia types to these


def test_session_values_convert_to_what_runtests_expects():
    """sess.run gives what ADPlace turns into runtests.jl's Julia values: arrays with the same indices, NumPy scalars
    (numbers), lists for list fetches, None for ops; and the math ADPlace's operators build is right."""
    A = np.array([[1.0, 2.0], [3.0, 4.0]])
    B = np.array([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]])
    x = tf.constant(A, dtype=tf.float64)
    p = tf.placeholder(tf.float64, shape=[None, 2])
    sess = tf.Session(config=tf.ConfigProto())
    run = sess.run
    np.testing.assert_array_equal(run(x, feed_dict=None), A)
    np.testing.assert_array_equal(run(p, feed_dict={p: B}), B)
    assert run(tf.reduce_sum(p), feed_dict={p: B}) == B.sum()
    for axis in (0, [0]):
        np.testing.assert_array_equal(run(tf.reduce_sum(p, axis=axis), feed_dict={p: B}), B.sum(axis=0))
    np.testing.assert_allclose(run(tf.matmul(x, x)), A @ A)
    y = tf.constant(np.array([1.0, 1.0]), dtype=x.dtype.base_dtype)
    np.testing.assert_allclose(run(tf.squeeze(tf.matmul(x, tf.expand_dims(y, 1)), axis=1)), A @ [1.0, 1.0])
    np.testing.assert_allclose(run(tf.matmul(x, np.array([[0.0, 1.0], [1.0, 0.0]]))), A @ [[0, 1], [1, 0]])
    two = tf.constant(2.0, dtype=tf.float64)
    np.testing.assert_allclose(run(tf.subtract(tf.add(tf.multiply(two, x), 1.0), tf.divide(x, 2.0))), 2 * A + 1 - A / 2)
    np.testing.assert_allclose(run(tf.pow(x, 2)), A ** 2)
    np.testing.assert_allclose(run(tf.divide(tf.reduce_sum(x), 4)), 2.5)
    np.testing.assert_array_equal(run(tf.negative(x)), -A)
    np.testing.assert_allclose(run(tf.sqrt(tf.exp(tf.log(x)))), np.sqrt(A))
    np.testing.assert_allclose(run(tf.add(tf.sin(x), tf.cos(x))), np.sin(A) + np.cos(A))
    f32 = run(tf.constant(np.array([1.0, 2.0], dtype=np.float32), dtype=tf.float32))
    assert isinstance(f32, np.ndarray) and f32.dtype == np.float32  # a Vector{Float32} in Julia
    three = run(tf.constant(3, dtype=tf.int64))
    assert to_julia(three) == 3 and isinstance(to_julia(three), int)
    fetched = run([x, tf.constant(1.0, dtype=tf.float64)])
    assert isinstance(fetched, list) and fetched[1] == 1.0
    assert run(tf.no_op()) is None


def test_gradients_and_collections_as_runtests_uses_them():
    """tf.gradients with ADPlace's keyword ([None] where ys does not depend on x, one gradient per x even when xs
    repeats); collections are Python lists (Julia Vectors) and variables compare equal to themselves."""
    u = tf.Variable(2.0, dtype=tf.float64, name="weight")
    assert tf.gradients(tf.constant(1.0, dtype=tf.float64), u, colocate_gradients_with_ops=False) == [None]
    loss = tf.add(tf.pow(u, 2), tf.multiply(tf.constant(3.0, dtype=tf.float64), u))
    gs = tf.gradients(loss, [u, u], colocate_gradients_with_ops=False)
    sess = tf.Session(config=tf.ConfigProto(allow_soft_placement=True, intra_op_parallelism_threads=1,
                                            inter_op_parallelism_threads=1))
    sess.run(tf.global_variables_initializer())
    assert sess.run(gs) == [7.0, 7.0]
    trainable = tf.get_collection("trainable_variables")
    assert isinstance(trainable, list) and trainable == [u] and hash(trainable[0]) == hash(u)
    assert [v for v in trainable if "weig" in v.name] == [u]
    assert tf.get_collection("update_ops") == [] and isinstance(tf.get_collection("update_ops"), list)


@pytest.mark.usefixtures("virtual_gpus_only")
def test_sessions_from_adcme_keywords(gpus):
    """Session(GPU=0, soft=true) runs a GPU-requested op on the CPU; without soft placement running it raises
    InvalidArgumentError (a PyException in Julia)."""
    u = tf.Variable(2.0, dtype=tf.float64)
    with tf.device("/gpu:0"):
        on_gpu = tf.multiply(u, tf.constant(2.0, dtype=u.dtype.base_dtype))
    soft = tf.Session(config=tf.ConfigProto(device_count={"GPU": 0}, allow_soft_placement=True))
    soft.run(tf.global_variables_initializer())
    assert soft.run(on_gpu, feed_dict=None) == 4.0 and soft.placement(on_gpu) == CPU0
    strict = tf.Session(config=tf.ConfigProto(device_count={"GPU": 0}))
    with pytest.raises(InvalidArgumentError):
        strict.run(on_gpu)


@pytest.mark.usefixtures("virtual_gpus_only")
def test_strict_session_places_the_whole_graph_at_its_first_run(gpus):
    """runtests.jl ("gradients, sessions, collections"): Session(GPU=0) without soft placement cannot even run the
    initializer of a graph holding a GPU-requested op (TF1 places the whole graph at the first run); with soft
    placement the op runs on the CPU."""
    u = tf.Variable(2.0, dtype=tf.float64)
    with tf.device("/gpu:0"):
        on_gpu = tf.multiply(u, tf.constant(2.0, dtype=tf.float64))
    soft = tf.Session(config=tf.ConfigProto(device_count={"GPU": 0}, allow_soft_placement=True))
    soft.run(tf.global_variables_initializer())
    assert soft.run(on_gpu) == 4.0
    strict = tf.Session(config=tf.ConfigProto(device_count={"GPU": 0}))
    with pytest.raises(InvalidArgumentError, match="Cannot assign a device for operation"):
        strict.run(tf.global_variables_initializer())


def test_control_dependencies_as_runtests_expects():
    """runtests.jl builds `z = tf.identity(x1)` inside `control_dependencies([u.op])`, `x1` made outside the block,
    and expects `u.op in z.op.control_inputs`."""
    u = tf.Variable(2.0, dtype=tf.float64)
    one = tf.constant(1.0, dtype=tf.float64)
    with tf.control_dependencies([u.op]):
        z = tf.identity(one)
    assert u.op in z.op.control_inputs


@pytest.mark.usefixtures("virtual_gpus_only")
def test_virtual_gpus_and_graph_reset():
    """cuda_gpus() is a sequence (Julia's isempty/length); set_virtual_gpus(n) adds GPUs a session can use and None
    takes them away; reset_default_graph() empties the graph get_operations() lists."""
    assert isinstance(tf.config.cuda_gpus(), (tuple, list))
    tf.config.set_virtual_gpus(2)
    with tf.device("/gpu:1"):
        t = tf.constant(1.0)
    assert tf.Session().placement(t) == GPU1
    tf.config.set_virtual_gpus(None)
    with pytest.raises(InvalidArgumentError):
        tf.Session().run(t)
    assert tf.get_default_graph().get_operations()
    assert tf.reset_default_graph() is None and tf.get_default_graph().get_operations() == []


@pytest.mark.usefixtures("virtual_gpus_only")
def test_multi_gpu_towers_train(gpus):
    """julia/examples/multi_gpu_towers.jl in Python: towers on GPU:0 and GPU:1 with variables on the CPU, gradients
    averaged (add_n) and applied with apply_gradients([(grad, var), ...]); it fits 1 + 2x - 3x² as runtests expects."""
    xdata = np.linspace(-1.0, 1.0, 256)
    ydata = 1 + 2 * xdata - 3 * xdata ** 2 + 0.01 * np.sin(40 * xdata)
    with tf.device("/cpu:0"):
        coefficients = [tf.Variable(0.0, dtype=tf.float64, name=f"c{k}") for k in range(3)]
    c0, c1, c2 = coefficients
    feeds, tower_losses, tower_grads = {}, [], []
    for i in range(2):
        with tf.device(julia_function(assign_to_device(JuliaString(f"/device:GPU:{i}")))):
            x = tf.placeholder(tf.float64, shape=[None])
            y = tf.placeholder(tf.float64, shape=[None])
            residual = tf.subtract(tf.add(tf.add(c0, tf.multiply(c1, x)), tf.multiply(c2, tf.pow(x, 2))), y)
            loss = tf.divide(tf.reduce_sum(tf.pow(residual, 2)), len(xdata))
            tower_losses.append(loss)
            tower_grads.append(tf.gradients(loss, coefficients, colocate_gradients_with_ops=True))
            feeds[x], feeds[y] = xdata[i::2], ydata[i::2]
    with tf.device("/cpu:0"):
        total_loss = tf.add_n(tower_losses)
        average = [tf.divide(tf.add_n([grads[k] for grads in tower_grads]), 2) for k in range(3)]
        train = tf.train.GradientDescentOptimizer(1.0).apply_gradients(list(zip(average, coefficients)))
    sess = tf.Session()
    sess.run(tf.global_variables_initializer())
    losses = [sess.run([total_loss, train], feed_dict=feeds)[0] for _ in range(200)]
    assert losses[-1] < 1e-3 * losses[0]
    np.testing.assert_allclose(sess.run(coefficients), [1.0, 2.0, -3.0], atol=1e-2)
    assert {t.device for t in tower_losses} == {"/device:GPU:0", "/device:GPU:1"}
    assert all(v.device == "/device:CPU:0" for v in coefficients)


# --- the Julia tests themselves -----------------------------------------------------------------------------------
def find_julia():
    candidate = os.environ.get("ADPLACE_JULIA") or shutil.which("julia")
    return candidate if candidate and os.access(candidate, os.X_OK) else None


def test_julia_package_tests_run():
    """julia/test/runtests.jl passes under Julia, with PythonCall on this Python (CondaPkg's Null backend)."""
    julia = find_julia()
    if julia is None:
        pytest.skip("julia is not on PATH: the Julia tests (julia/test/runtests.jl) run where Julia exists "
                    "(or set ADPLACE_JULIA to a julia executable)")
    env = dict(os.environ, JULIA_CONDAPKG_BACKEND="Null", JULIA_PYTHONCALL_EXE=sys.executable)
    result = subprocess.run([julia, "--project=julia", "-e", "using Pkg; Pkg.test()"], cwd=REPO, env=env,
                            capture_output=True, text=True, timeout=1800)
    assert result.returncode == 0, f"Pkg.test() failed:\n{result.stdout}\n{result.stderr}"
