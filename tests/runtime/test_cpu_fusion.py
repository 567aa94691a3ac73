"""CPU fusion of elementwise chains (runtime/fusion.py, kernels/cpu_fusion.py): fused plans give the unfused plans'
values (remapping OFF) for every fusible op, both float types, scalar leaves, NaN and inf, DAG groups; fetched
intermediates stay; placement and step stats name the members; compiled loops are cached on disk for later
processes; without Numba nothing fuses."""
from __future__ import annotations

import functools
import importlib.util
import json
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import adplace as tf
from adplace.kernels import cpu_fusion
from adplace.kernels import fusion as gpu_codegen
from adplace.ops.op_builder import apply_op_1
from adplace.runtime import fusion
from thread_support import run_threads

needs_numba = pytest.mark.skipif(not cpu_fusion.available(), reason="Numba (the `jit` extra) is not installed")
OFF = tf.ConfigProto(graph_options=tf.GraphOptions(rewrite_options=tf.RewriterConfig(
    remapping=tf.RewriterConfig.OFF)))
SPECIAL = [np.nan, np.inf, -np.inf, 0.0, -0.0, 1.0, -1.0, 0.5, -2.5, 3.0, 1e-3, -7.0]
UNARY = ["Neg", "Abs", "Sign", "Square", "Sqrt", "Rsqrt", "Reciprocal", "Exp", "Log", "Log1p", "Sin", "Cos", "Tan",
         "Tanh", "Sigmoid", "Relu", "Floor", "Ceil"]
BINARY = sorted(set(gpu_codegen.FUSIBLE) - set(UNARY))


@pytest.fixture
def eager_fusion(monkeypatch):
    """Fuse at a plan's first counted run (loops cached where users' are: later test runs load them from disk)."""
    if not cpu_fusion.available():
        pytest.skip("Numba (the `jit` extra) is not installed")
    monkeypatch.setenv("ADPLACE_CPU_FUSION", "1")
    monkeypatch.setattr(fusion, "CPU_FUSION_MIN_NS", 0)


@pytest.fixture
def own_cache(eager_fusion, monkeypatch, tmp_path):
    """A cache directory of the test's own."""
    monkeypatch.setenv("ADPLACE_CACHE_DIR", str(tmp_path))
    return tmp_path


def _hot(sess, fetches, feed):
    """Run until the plan is hot and its fusion (if any) is swapped in; returns the plan."""
    for _ in range(4):
        sess.run(fetches, feed)
    assert fusion.wait_cpu_fusion(300)
    return sess.plan_for(fetches, feed)


def _values(dtype, n: int = 48, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    values = rng.uniform(-4, 4, n)
    values[:min(n, len(SPECIAL))] = SPECIAL[:n]
    return values.astype(dtype)


def _compare(fetches, feed, graph=None, rtol=None):
    sess = tf.Session(graph=graph)
    plan = _hot(sess, fetches, feed)
    fused = sess.run(fetches, feed)
    expected = tf.Session(graph=graph, config=OFF).run(fetches, feed)
    for got, want in zip(fused if isinstance(fused, list) else [fused], expected if isinstance(expected, list)
                         else [expected]):
        assert np.asarray(got).dtype == np.asarray(want).dtype
        tol = rtol or (2e-6 if np.asarray(want).dtype == np.float32 else 1e-13)
        np.testing.assert_allclose(got, want, rtol=tol, atol=tol)
    return plan, fused


def _op(op_type: str, *inputs):
    return apply_op_1(op_type, list(inputs), {"T": inputs[0].dtype})


@needs_numba
def test_every_fusible_op_has_a_loop_expression():
    assert set(cpu_fusion.EXPRESSIONS) == set(gpu_codegen.FUSIBLE)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("op_type", UNARY)
def test_unary_ops_fused_give_the_unfused_values_with_nan_and_inf(eager_fusion, op_type, dtype):
    graph = tf.Graph()
    with graph.as_default():
        x = tf.placeholder(dtype, [48], name="x")
        y = _op(op_type, (x * 1.0) - 0.0)
    with np.errstate(all="ignore"):
        plan, _ = _compare(y, {x: _values(dtype)}, graph)
    assert [len(m) for m in plan.fused.values()] == [3]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("op_type", BINARY)
def test_binary_ops_fused_give_the_unfused_values_with_nan_and_inf(eager_fusion, op_type, dtype):
    graph = tf.Graph()
    with graph.as_default():
        a = tf.placeholder(dtype, [48], name="a")
        b = tf.placeholder(dtype, [48], name="b")
        y = _op(op_type, a * 1.0, b + 0.0)
    a_values = _values(dtype, seed=1)
    b_values = np.where(np.arange(48) % 2, np.roll(_values(dtype, seed=2), 5), a_values)  # equal at even places
    feed = {a: a_values, b: b_values}
    with np.errstate(all="ignore"):
        plan, value = _compare(y, feed, graph)
    assert [len(m) for m in plan.fused.values()] == [3]
    if op_type in ("Less", "Equal"):
        assert value.dtype == np.bool_


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_scalar_leaves_broadcast_and_float32_stays_float32(eager_fusion, dtype):
    graph = tf.Graph()
    with graph.as_default():
        x = tf.placeholder(dtype, [6, 8], name="x")
        s = tf.placeholder(dtype, [], name="s")
        y = tf.sigmoid(tf.maximum(x * s, -0.5) - tf.floormod(x, 1.5) / 3.0)
    plan, value = _compare(y, {x: _values(dtype).reshape(6, 8), s: dtype(0.75)}, graph)
    assert value.dtype == dtype and value.shape == (6, 8)
    assert [len(m) for m in plan.fused.values()] == [6]


def test_a_value_used_twice_inside_a_group_fuses_as_a_dag(eager_fusion):
    graph = tf.Graph()
    with graph.as_default():
        x = tf.placeholder(tf.float32, [32], name="x")
        s = tf.sin(x, name="s")
        y = tf.add(s * s, tf.cos(s), name="y")
    plan, _ = _compare(y, {x: _values(np.float32, 32)}, graph)
    assert list(plan.fused.values()) == [["s", "mul", "Cos", "y"]]
    assert len(plan.kernels) == 1


def test_fetched_intermediates_are_not_fused_away(eager_fusion):
    graph = tf.Graph()
    with graph.as_default():
        x = tf.placeholder(tf.float32, [16], name="x")
        y = tf.tanh(tf.exp(x * 0.5) - 1.0, name="y")
        z = tf.square(tf.nn.relu(y * 2.0 + 0.1), name="z")
    plan, (y_value, _) = _compare([y, z], {x: _values(np.float32, 16)}, graph)
    assert sorted(plan.fused.values()) == [["mul", "Exp", "sub", "y"], ["mul_1", "add", "Relu", "z"]]
    assert y_value.shape == (16,)


def test_placement_and_step_stats_name_the_members(eager_fusion):
    tf.config.set_virtual_gpus(2)
    try:
        graph = tf.Graph()
        with graph.as_default():
            x = tf.placeholder(tf.float32, [16], name="x")
            with tf.device("/gpu:1"):
                y = tf.cos(tf.sin(x) * 2.0 + 1.0, name="y")
            z = tf.identity(y, name="z")
        sess = tf.Session(graph=graph)
        feed = {x: _values(np.float32, 16)}
        plan = _hot(sess, z, feed)
        root = next(iter(plan.fused))
        assert plan.fused[root] == ["Sin", "mul", "add", "y"] and plan.devices[root].name.endswith("GPU:1")
        options, meta = tf.RunOptions(trace_level=tf.RunOptions.FULL_TRACE), tf.RunMetadata()
        value = sess.run(z, feed, options=options, run_metadata=meta)
        off_meta = tf.RunMetadata()
        expected = tf.Session(graph=graph, config=OFF).run(z, feed, options=options, run_metadata=off_meta)
        np.testing.assert_allclose(value, expected, rtol=2e-6)
        labels = {d.device: [n.timeline_label for n in d.node_stats] for d in meta.step_stats.dev_stats}
        gpu = next(v for k, v in labels.items() if k.endswith("GPU:1"))
        assert any(label.startswith("y = _FusedElementwise(") for label in gpu)
        assert sorted(d.device for d in meta.step_stats.dev_stats) == \
            sorted(d.device for d in off_meta.step_stats.dev_stats)
    finally:
        tf.config.set_virtual_gpus(0)


def test_long_chains_are_cut_and_repeated_loops_compile_once(eager_fusion):
    graph = tf.Graph()
    with graph.as_default():
        x = tf.placeholder(tf.float32, [4], name="x")
        t = x
        for i in range(3 * fusion.MAX_CPU_MEMBERS):
            t = (tf.sin, tf.cos, tf.square)[i % 3](t)
    before = dict(cpu_fusion.STATS)
    plan, _ = _compare(t, {x: np.linspace(0.1, 0.4, 4, dtype=np.float32)}, graph, rtol=1e-5)
    assert sorted(len(m) for m in plan.fused.values()) == [fusion.MAX_CPU_MEMBERS] * 3
    built = sum(cpu_fusion.STATS[k] - before[k] for k in ("compiled", "disk_hits", "memory_hits"))
    assert built == 3 and cpu_fusion.STATS["memory_hits"] - before["memory_hits"] == 2


@pytest.mark.parametrize("n", [fusion.LONG_ARRAY_ELEMENTS - 1, fusion.LONG_ARRAY_ELEMENTS])
def test_chains_over_long_arrays_are_cut_shorter(eager_fusion, n):
    graph = tf.Graph()
    with graph.as_default():
        x = tf.placeholder(tf.float32, [n], name="x")
        t = x
        for i in range(2 * fusion.MAX_CPU_MEMBERS):
            t = t * np.float32(1.0001) if i % 2 else t - np.float32(0.25)
    plan, _ = _compare(t, {x: np.linspace(-2, 2, n, dtype=np.float32)}, graph, rtol=1e-6)
    limit = fusion.MAX_CPU_MEMBERS if n < fusion.LONG_ARRAY_ELEMENTS else fusion.MAX_CPU_MEMBERS_LONG
    sizes = sorted(len(m) for m in plan.fused.values())
    assert max(sizes) == limit and sum(sizes) == 2 * fusion.MAX_CPU_MEMBERS


def test_remapping_off_and_the_environment_variable_turn_cpu_fusion_off(eager_fusion, monkeypatch):
    graph = tf.Graph()
    with graph.as_default():
        x = tf.placeholder(tf.float32, [8], name="x")
        y = tf.exp(tf.sin(x) * 3.0)
    feed = {x: np.ones(8, np.float32)}
    assert _hot(tf.Session(graph=graph, config=OFF), y, feed).fused == {}
    monkeypatch.setenv("ADPLACE_CPU_FUSION", "0")
    assert _hot(tf.Session(graph=graph), y, feed).fused == {}
    monkeypatch.setenv("ADPLACE_CPU_FUSION", "1")
    assert _hot(tf.Session(graph=graph), y, feed).fused != {}


def test_without_numba_nothing_fuses_and_values_are_unchanged(monkeypatch):
    monkeypatch.setattr(fusion, "CPU_FUSION_MIN_NS", 0)
    monkeypatch.setitem(sys.modules, "numba", None)  # `import numba` raises ImportError (as when not installed)
    assert not cpu_fusion.available()
    graph = tf.Graph()
    with graph.as_default():
        x = tf.placeholder(tf.float32, [8], name="x")
        y = tf.exp(tf.sin(x) * 3.0)
    feed = {x: _values(np.float32, 8)}
    sess = tf.Session(graph=graph)
    plan = _hot(sess, y, feed)
    assert plan.fused == {} and len(plan.kernels) > 3
    np.testing.assert_array_equal(sess.run(y, feed), tf.Session(graph=graph, config=OFF).run(y, feed))


def test_plans_fuse_only_once_they_have_run_long_enough(eager_fusion, monkeypatch):
    monkeypatch.setattr(fusion, "CPU_FUSION_MIN_NS", 10**15)
    graph = tf.Graph()
    with graph.as_default():
        x = tf.placeholder(tf.float32, [8], name="x")
        y = tf.exp(tf.sin(x) * 3.0)
    assert _hot(tf.Session(graph=graph), y, {x: np.ones(8, np.float32)}).fused == {}


def test_the_fused_kernel_falls_back_to_the_unfused_kernels_for_other_inputs(eager_fusion):
    f32 = tf.float32
    members = [gpu_codegen.Member("Sin", f32, f32, ("x0",)), gpu_codegen.Member("Mul", f32, f32, ("t0", "x1")),
               gpu_codegen.Member("Add", f32, f32, ("t1", "x0"))]
    source = cpu_fusion.loop_source(members, [f32, f32], [True, False])
    calls = []
    kernel = cpu_fusion.fused_kernel(source, (2, 3), lambda *leaves: calls.append(leaves) or "unfused")
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    np.testing.assert_allclose(kernel(x, np.float32(2)), np.sin(x) * 2 + x, rtol=1e-6)
    readonly = x.copy()
    readonly.flags.writeable = False
    strided = np.repeat(x, 2, axis=1)[:, ::2]
    assert not strided.flags.c_contiguous
    for other_layout in (readonly, np.asfortranarray(x), strided):  # the scalar leaf as a 0-d array
        np.testing.assert_allclose(kernel(other_layout, np.array(2.0)), np.sin(x) * 2 + x, rtol=1e-6)
    assert not calls
    assert kernel(x.astype(np.float64), 2.0) == "unfused"  # refused: this and later calls run unfused
    assert kernel(x, 2.0) == "unfused" and len(calls) == 2


_SECOND_PROCESS = textwrap.dedent("""
    import json, sys
    import numpy as np
    import adplace as tf
    from adplace.kernels import cpu_fusion
    from adplace.runtime import fusion
    fusion.CPU_FUSION_MIN_NS = 0
    x = tf.placeholder(tf.float32, [8], name="x")
    y = tf.tanh(tf.sin(x) * 3.0 - 0.5)
    sess = tf.Session()
    for _ in range(4):
        sess.run(y, {x: np.ones(8, np.float32)})
    assert fusion.wait_cpu_fusion(300)
    print(json.dumps({"fused": bool(sess.plan_for(y, {x: np.ones(8, np.float32)}).fused), **cpu_fusion.STATS}))
""")


def test_compiled_loops_are_cached_on_disk_for_later_processes(own_cache):
    env = {**os.environ, "ADPLACE_CACHE_DIR": str(own_cache)}
    runs = [json.loads(subprocess.run([sys.executable, "-c", _SECOND_PROCESS], env=env, capture_output=True,
                                      text=True, check=True, timeout=600).stdout.strip().splitlines()[-1])
            for _ in range(2)]
    assert runs[0]["fused"] and runs[1]["fused"]
    assert (runs[0]["compiled"], runs[0]["disk_hits"]) == (1, 0)
    assert (runs[1]["compiled"], runs[1]["disk_hits"]) == (0, 1)
    fused_dir = own_cache / "fused"
    assert len(list(fused_dir.glob("adplace_fused_*.py"))) == 1
    assert list((fused_dir / "__pycache__").glob("adplace_fused_*.nbi"))


def test_an_unwritable_cache_compiles_in_memory_with_one_warning(own_cache, monkeypatch):
    blocker = own_cache / "file"
    blocker.write_text("not a directory")
    monkeypatch.setenv("ADPLACE_CACHE_DIR", str(blocker))
    monkeypatch.setattr(cpu_fusion, "_warned", [])
    f64 = tf.float64
    sources = [cpu_fusion.loop_source([gpu_codegen.Member(t, f64, f64, ("x0",)), gpu_codegen.Member("Neg", f64, f64,
                                                                                                  ("t0",))],
                                      [f64], [True]) for t in ("Exp", "Log1p")]
    with pytest.warns(UserWarning, match="cannot write fused kernels") as record:
        loops = [cpu_fusion.compiled_loop(s) for s in sources]
    assert len(record) == 1
    np.testing.assert_allclose(loops[0](3, np.zeros(3)), -np.ones(3))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_library_calls_on_long_arrays_are_left_to_numpy(eager_fusion, dtype):
    """Numba runs sin/exp/float64 tanh... one element at a time, NumPy in SIMD: on long arrays they stay steps of
    their own, and the arithmetic around them still fuses."""
    n = fusion.CPU_CALL_MAX_ELEMENTS + 1
    graph = tf.Graph()
    with graph.as_default():
        x = tf.placeholder(dtype, [n], name="x")
        y = (tf.sin if dtype == np.float32 else tf.tanh)((x * 2.0 + 1.0) - 0.5, name="y")
        z = tf.maximum(y * 3.0 - 1.0, 0.25, name="z")
    plan, _ = _compare(z, {x: np.linspace(-2, 2, n, dtype=dtype)}, graph)
    assert sorted(plan.fused.values()) == [["mul", "add", "sub"], ["mul_1", "sub_1", "z"]]
    assert any(op.name == "y" for op in plan.ops)


def test_float32_tanh_is_arithmetic_and_fuses_on_long_arrays(eager_fusion):
    n = 4 * fusion.CPU_CALL_MAX_ELEMENTS
    graph = tf.Graph()
    with graph.as_default():
        x = tf.placeholder(tf.float32, [n], name="x")
        y = tf.tanh((x * 2.0 + 1.0) - 0.5, name="y")
        z = tf.maximum(y * 3.0 - 1.0, 0.25, name="z")
    values = np.concatenate([_values(np.float32), np.linspace(-12, 12, n - 48, dtype=np.float32)])
    plan, _ = _compare(z, {x: values}, graph)
    assert list(plan.fused.values()) == [["mul", "add", "sub", "y", "mul_1", "sub_1", "z"]]
    assert not cpu_fusion.calls_library("Tanh", "float32") and cpu_fusion.calls_library("Tanh", "float64")
    assert "expm1" not in cpu_fusion.loop_source([gpu_codegen.Member("Tanh", tf.float32, tf.float32, ("x0",))],
                                                 [tf.float32], [True]).text


def test_a_group_with_several_float32_tanh_runs_in_passes_over_blocks(eager_fusion):
    """Each tanh but the last ends a pass over a block of elements; values a later pass reads (a, here, in both
    later passes) wait in block buffers; the last block is partial."""
    n = 2 * cpu_fusion.BLOCK + 277
    graph = tf.Graph()
    with graph.as_default():
        x = tf.placeholder(tf.float32, [n], name="x")
        a = tf.add(x * 1.5, 0.25, name="a")
        b = tf.subtract(tf.tanh(a, name="t1") * 2.0, a, name="b")
        y = tf.add(tf.tanh(b, name="t2"), a * x, name="y")
    plan, _ = _compare(y, {x: np.linspace(-3, 3, n, dtype=np.float32)}, graph)
    assert [sorted(m) for m in plan.fused.values()] == [sorted(["mul", "a", "t1", "mul_1", "b", "t2", "mul_2", "y"])]
    f32 = tf.float32
    members = [gpu_codegen.Member("Tanh", f32, f32, ("x0",)), gpu_codegen.Member("Mul", f32, f32, ("t0", "x0")),
               gpu_codegen.Member("Tanh", f32, f32, ("t1",)), gpu_codegen.Member("Add", f32, f32, ("t2", "t0"))]
    source = cpu_fusion.loop_source(members, [f32], [True])
    assert source.text.count("for i in range(s, e):") == 2 and "b0 = np.empty" in source.text
    values = np.linspace(-3, 3, n, dtype=np.float32)
    first = np.tanh(values.astype(np.float64))
    want = np.tanh(first * values) + first
    np.testing.assert_allclose(cpu_fusion.compiled_loop(source)(n, values), want, rtol=2e-6, atol=2e-6)


@needs_numba
def test_float32_tanh_loop_is_within_six_ulps_of_the_exact_value():
    """Over every 64th float32 in [0, 10] and a spread of tiny ones, both signs: within 6 ulp of tanh computed in
    float64 (5.44 over every other float32; XLA's float32 tanh 4.5, TF's 5.4, NumPy's 1.4), most of them exact,
    saturating to exactly +-1, NaN to NaN."""
    f32 = tf.float32
    loop = cpu_fusion.compiled_loop(cpu_fusion.loop_source([gpu_codegen.Member("Tanh", f32, f32, ("x0",))],
                                                           [f32], [True]))
    bits = np.arange(0, np.float32(10.0).view(np.int32), 64, dtype=np.int32)
    magnitudes = np.concatenate([bits.view(np.float32), np.geomspace(1e-38, 1e-3, 5_000, dtype=np.float32)])
    x = np.concatenate([magnitudes, -magnitudes])
    got = loop(x.size, x)
    exact = np.tanh(x.astype(np.float64))
    ulp = np.spacing(np.abs(exact).astype(np.float32)).astype(np.float64)
    assert got.dtype == np.float32 and np.max(np.abs(got - exact) / ulp) < 6
    assert np.mean(got == exact.astype(np.float32)) > 0.9
    assert np.array_equal(np.signbit(got), np.signbit(x))
    special = np.array([np.inf, -np.inf, 9.6, -50.0, np.nan, -0.0], np.float32)
    np.testing.assert_array_equal(loop(6, special), [1.0, -1.0, 1.0, -1.0, np.nan, -0.0])
    assert np.signbit(loop(6, special)[5])


def test_runs_in_other_threads_while_the_fused_steps_are_swapped_in_stay_exact(eager_fusion):
    graph = tf.Graph()
    with graph.as_default():
        x = tf.placeholder(tf.float32, [32], name="x")
        y = tf.square(tf.cos(tf.sin(x) * 0.5 + 0.25) - 0.125)
    sess = tf.Session(graph=graph)
    feeds = [{x: np.full(32, k / 7, np.float32)} for k in range(4)]
    expected = [tf.Session(graph=graph, config=OFF).run(y, feed) for feed in feeds]

    def worker(k):
        for _ in range(150):
            np.testing.assert_allclose(sess.run(y, feeds[k]), expected[k], rtol=2e-6)
    run_threads(*(functools.partial(worker, k) for k in range(4)))
    assert fusion.wait_cpu_fusion(300)
    plan = sess.plan_for(y, feeds[0])
    assert [len(m) for m in plan.fused.values()] == [6]
    kernels = list(plan.kernels)
    fusion._fuse_plan(plan, lambda p: None)  # fusing a fused plan again changes nothing
    assert [len(m) for m in plan.fused.values()] == [6] and plan.kernels == kernels


def test_tanh_coefficients_are_what_tools_fit_tanh_fits():
    spec = importlib.util.spec_from_file_location("fit_tanh", os.path.join(os.path.dirname(__file__), "..", "..",
                                                                           "tools", "fit_tanh.py"))
    fit_tanh = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(fit_tanh)
    p, q, relative = fit_tanh.fit(limit=cpu_fusion.TANH_F32_LIMIT)
    np.testing.assert_allclose(p, cpu_fusion.TANH_P, rtol=1e-7)
    np.testing.assert_allclose(q, cpu_fusion.TANH_Q, rtol=1e-7)
    assert relative < 3e-9
