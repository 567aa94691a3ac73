"""julia/examples/heat_inversion.jl (ADCME's coefficient inversion: κ(x) = exp(θ₁ + θ₂ (x - 1/2)) of the 1-D heat
equation fitted by BFGS! to four sensors, the time loop on GPU 0, θ on the CPU) driven through Python with
ADPlace's value conversions, call for call, and its Python version examples/heat_inversion.py. No Julia runs here;
with Julia on PATH, julia/test/runtests.jl runs the example itself.
"""
import contextlib
import re
import subprocess
import sys
import types
from pathlib import Path

import numpy as np
import pytest

import adplace as tf
from julia_sources import package_source
from julia_standin import JuliaString, getindex, to_python
from script_module import load_script
from test_julia_control_flow import (INT32, Session, TensorArray, Variable, constant, init, jl_tf, julia_sum,
                                     less_equal, minus, plus, power, read, run, set_shape, stack, times, while_loop,
                                     write)

pytest.importorskip("scipy", reason='BFGS! needs scipy (pip install "adplace[scipy]")')

REPO = Path(__file__).resolve().parents[2]
INVERSION_JL = REPO / "julia" / "examples" / "heat_inversion.jl"
INVERSION_PY = REPO / "examples" / "heat_inversion.py"
COLON = slice(None)          # Julia's `:` as the stand-in's python_index takes it
CPU0, GPU0 = ("/job:localhost/replica:0/task:0/device:" + d for d in ("CPU:0", "GPU:0"))


# --- twins of the ADPlace.jl methods the example adds to test_julia_control_flow's ----------------------------------
def exp(x):
    return jl_tf.exp(x)


def broadcast_times(x, y):
    """x .* y between tensors: tf.multiply."""
    return jl_tf.multiply(x, y)


def adjoint(x):
    """x'."""
    return jl_tf.adcme.adjoint(x)


@contextlib.contextmanager
def device_block(kind, id):
    """@cpu id / @gpu id begin ... end: @pywith device_scope(kind, id), i.e. tf.device("/kind:id")."""
    with to_python(jl_tf.device(JuliaString(f"/{kind}:{id}"))):
        yield


def BFGS(sess, loss, max_iter=15000, vars=(), **kwargs):  # noqa: A002 - ADCME's keyword
    """BFGS!: tf.adcme.bfgs, the losses as Float64s."""
    return [float(v) for v in jl_tf.adcme.bfgs(sess, loss, max_iter, vars=list(vars), **kwargs)]


def test_the_twins_follow_adplace_jl():
    source = " ".join(package_source().split())
    for line in ("Base.getindex(x::PyObject, indices...) = tf.adcme.getindex(x, map(python_index, indices)...)",
                 "Base.exp(x::PyObject) = tf.exp(x)",
                 "Base.adjoint(x::PyObject) = tf.adcme.adjoint(x)",
                 "for (op, f) in ((:+, add), (:-, subtract), (:*, multiply), (:/, divide))",
                 'device_scope(kind::String, id) = tf.device("/$kind:$id")',
                 "Float64.(tf.adcme.bfgs(sess, loss, max_iter; vars=collect(vars), kwargs...))"):
        assert line in source, line


# --- julia/examples/heat_inversion.jl, line for line ----------------------------------------------------------------
def heat_inversion():
    """julia/examples/heat_inversion.jl through the twins; returns its globals."""
    if not jl_tf.config.cuda_gpus() and jl_tf.config.virtual_gpu_count() == 0:
        jl_tf.config.set_virtual_gpus(1)
    n = 20
    steps = 100
    T = 0.02
    dx = 1 / (n + 1)
    dt = T / steps
    x = np.arange(1, n + 1) * dx
    faces = (np.arange(1, n + 2) - 0.5) * dx
    u0 = np.sin(np.pi * x) + 0.5 * np.sin(2 * np.pi * x)
    sensors = np.array([4, 8, 12, 16])
    difference = np.array([[1.0 if k == i else -1.0 if k == i + 1 else 0.0 for i in range(1, n + 1)]
                           for k in range(1, n + 2)]) / dx

    def simulate(θ):
        κ = exp(plus(getindex(θ, 1), times(getindex(θ, 2), faces - 0.5)))
        D = constant(difference)
        DT = adjoint(D)

        def condition(i, u_arr):
            return less_equal(i, steps + 1)

        def body(i, u_arr):
            u = read(u_arr, minus(i, 1))
            flux = broadcast_times(κ, times(D, u))
            u_next = minus(u, times(dt, times(DT, flux)))
            u_arr = write(u_arr, i, u_next)
            return plus(i, 1), u_arr

        u_arr = TensorArray(steps + 1)
        u_arr = write(u_arr, 1, u0)
        i = constant(2, dtype=INT32)
        _, u_all = while_loop(condition, body, [i, u_arr])
        return set_shape(stack(u_all), (steps + 1, n))

    θ_true = np.array([0.2, -0.6])
    sess = Session()
    with device_block("gpu", 0):
        u_obs = run(sess, getindex(simulate(constant(θ_true)), COLON, sensors))
    with device_block("cpu", 0):
        θ = Variable(np.zeros(2))
    with device_block("gpu", 0):
        u = simulate(θ)
        loss = julia_sum(power(minus(getindex(u, COLON, sensors), u_obs), 2))
    init(sess)
    loss0 = run(sess, loss)
    θ_path = []
    losses = BFGS(sess, loss, 100, vars=[θ], callback=lambda vs, step, value: θ_path.append(vs[0]),
                  bounds={θ: (-1.0, 1.0)}, verbose=False)
    θ_fit = run(sess, θ)
    return types.SimpleNamespace(**locals())


@pytest.fixture(scope="module")
def example():
    """The twin run once, in a graph of its own (a module-scoped fixture outlives the per-test default graph)."""
    with tf.Graph().as_default():
        return heat_inversion()


def test_the_twin_follows_the_example_file():
    """Every call the twin makes is in heat_inversion.jl, in the same order, and the file is split into cells."""
    source = INVERSION_JL.read_text()
    calls = ["using ADPlace",
             "isempty(tf.config.cuda_gpus()) && tf.config.virtual_gpu_count() == 0 && tf.config.set_virtual_gpus(1)",
             "n = 20", "steps = 100", "T = 0.02", "dx = 1 / (n + 1)", "dt = T / steps", "x = collect(1:n) * dx",
             "faces = (collect(1:n+1) .- 0.5) * dx", "u0 = @. sin(π * x) + 0.5sin(2π * x)",
             "sensors = [4, 8, 12, 16]",
             "difference = [k == i ? 1.0 : k == i + 1 ? -1.0 : 0.0 for k in 1:n+1, i in 1:n] / dx",
             "function simulate(θ)", "κ = exp(θ[1] + θ[2] * (faces .- 0.5))", "D = constant(difference)",
             "DT = D'", "i <= steps + 1", "u = read(u_arr, i - 1)", "flux = κ .* (D * u)",
             "u_next = u - dt * (DT * flux)", "u_arr = write(u_arr, i, u_next)", "i + 1, u_arr",
             "u_arr = TensorArray(steps + 1)", "u_arr = write(u_arr, 1, u0)", "i = constant(2, dtype=Int32)",
             "_, u_all = while_loop(condition, body, [i, u_arr])", "return set_shape(stack(u_all), (steps + 1, n))",
             "θ_true = [0.2, -0.6]", "sess = Session()", "u_obs = @gpu 0 begin",
             "run(sess, simulate(constant(θ_true))[:, sensors])", "@cpu begin", "global θ = Variable(zeros(2))",
             "@gpu 0 begin\n    global u = simulate(θ)", "global loss = sum((u[:, sensors] - u_obs)^2)", "init(sess)",
             "loss0 = run(sess, loss)", "θ_path = Vector{Float64}[]",
             "losses = BFGS!(sess, loss, 100; vars=[θ], callback=(vs, step, value) -> push!(θ_path, vs[1]),",
             "bounds=Dict(θ => (-1.0, 1.0)), verbose=false)", "θ_fit = run(sess, θ)",
             'println("fitted θ = ", θ_fit, " (true ", θ_true, "), error ", maximum(abs.(θ_fit - θ_true)))']
    positions = [source.find(call) for call in calls]
    assert -1 not in positions and positions == sorted(positions), dict(zip(calls, positions))
    assert len(re.findall(r"^# %% \S", source, re.M)) >= 5


# --- what it computes ---------------------------------------------------------------------------------------------
def finite_volume_steps(u0, steps, dt, dx, kappa_faces):
    """The scheme in plain NumPy, as flux differences: F = κ (u[k] - u[k-1]) / dx at each face (u zero beyond both
    ends), then u <- u + dt (F[k+1] - F[k]) / dx. Every step, shape [steps + 1, n]."""
    u, out = u0.copy(), [u0.copy()]
    for _ in range(steps):
        flux = kappa_faces * np.diff(np.concatenate([[0.0], u, [0.0]])) / dx
        u = u + dt * np.diff(flux) / dx
        out.append(u)
    return np.array(out)


def kappa(theta, x):
    return np.exp(theta[0] + theta[1] * (x - 0.5))


def test_the_forward_model_is_the_finite_volume_scheme(example):
    """The loop's steps equal the NumPy scheme to 1e-12, for θ_true (the data, at the 1-based sensors) and at another
    θ fed in place of the Variable; the scheme is stable in the whole box BFGS! searches."""
    ex = example
    reference = finite_volume_steps(ex.u0, ex.steps, ex.dt, ex.dx, kappa(ex.θ_true, ex.faces))
    assert ex.u_obs.shape == (101, 4)
    np.testing.assert_allclose(ex.u_obs, reference[:, ex.sensors - 1], rtol=0, atol=1e-12)
    other = np.array([-0.7, 0.9])
    np.testing.assert_allclose(run(ex.sess, ex.u, (ex.θ, other)),
                               finite_volume_steps(ex.u0, ex.steps, ex.dt, ex.dx, kappa(other, ex.faces)),
                               rtol=0, atol=1e-12)
    assert np.exp(1.5) * ex.dt / ex.dx ** 2 < 0.5


def test_bfgs_recovers_theta_true(example):
    """BFGS! recovers θ_true to 1e-6 from θ = 0 (κ ≡ 1, a misfit of ~1). The data are noise-free and the model is the
    one that made them, so θ_true is an exact zero of the loss; the only error left is where L-BFGS-B stops
    (ftol = gtol = 1e-12: about 1e-10 here), so 1e-6 has a wide margin, while a wrong gradient or a sensor read off
    by one grid point leaves errors of 1e-2 or more. The callback saw each step's θ."""
    ex = example
    assert np.max(np.abs(ex.θ_fit - ex.θ_true)) < 1e-6
    assert ex.loss0 > 0.1 and ex.losses[-1] < 1e-12 * ex.loss0
    assert len(ex.θ_path) == len(ex.losses) <= 100
    np.testing.assert_allclose(ex.θ_path[-1], ex.θ_fit, atol=1e-12)
    assert all(np.all(np.abs(θ) <= 1.0) for θ in ex.θ_path)


def test_the_gradient_through_the_loop_is_the_central_difference(example):
    """ADPlace's gradients(loss, θ), taken back through the while_loop, is the loss's central difference."""
    ex = example
    g = jl_tf.adcme.gradients(ex.loss, ex.θ, colocate_gradients_with_ops=False)   # gradients(loss, θ)
    θ0, h = np.array([0.5, 0.3]), 1e-6
    gradient = run(ex.sess, g, (ex.θ, θ0))
    for k in range(2):
        step = h * np.eye(2)[k]
        difference = (run(ex.sess, ex.loss, (ex.θ, θ0 + step)) - run(ex.sess, ex.loss, (ex.θ, θ0 - step))) / (2 * h)
        assert gradient[k] == pytest.approx(difference, rel=1e-6)


def test_theta_is_on_the_cpu_and_the_loop_on_gpu_0(example):
    """@cpu and @gpu 0 as requested and as placed: θ's variable on CPU:0; every op of the two forward loops (the
    data's and the model's), the misfit and the backward loop BFGS! differentiates on GPU:0."""
    ex = example
    sess = to_python(ex.sess)
    ops = sess.graph.get_operations()
    assert ex.θ.device == JuliaString("/device:CPU:0") and sess.placement(to_python(ex.θ)) == CPU0
    forward = [op for op in ops if op.name.split("/")[0] in ("while", "while_1")]
    assert {"MatMul", "Mul", "Sub", "TensorArrayReadV3", "TensorArrayWriteV3", "LoopCond"} <= {op.type for op in forward}
    assert all(op.device == "/device:GPU:0" for op in forward)
    backward = [op for op in ops if op.name.startswith("gradients") and op.type in ("MatMul", "Mul", "LoopCond")]
    assert backward and ex.loss.device == JuliaString("/device:GPU:0")
    placed = {sess.placement(op.outputs[0]) for op in forward + backward + [to_python(ex.loss).op] if op.outputs}
    assert placed == {GPU0}


def test_runtests_checks_the_example(example):
    """julia/test/runtests.jl runs the example and tests its fit, placement and data against a Julia copy of the
    scheme (finite_volume_steps's formula), reading globals the example defines (the twin's locals)."""
    runtests = (REPO / "julia" / "test" / "runtests.jl").read_text()
    assert 'run_example("heat_inversion.jl")\n@testset "the heat inversion example' in runtests
    testset = runtests.split('run_example("heat_inversion.jl")', 1)[1]
    for line in ("flux = κ_true .* diff([0.0; v; 0.0]) / dx", "v = v + dt * diff(flux) / dx",
                 "@test maximum(abs.(θ_fit - θ_true)) < 1e-6", 'startswith(op.name, "while_1/")'):
        assert line in testset, line
    read = {"u_obs", "steps", "sensors", "θ_true", "faces", "u0", "dx", "dt", "θ_fit", "losses", "loss0", "θ_path",
            "θ", "loss", "sess"}
    assert all(re.search(rf"(?<![\w.]){name}(?!\w)", testset) for name in read)
    assert read <= set(vars(example))


# --- examples/heat_inversion.py -----------------------------------------------------------------------------------
def test_the_python_example_is_the_same_scheme(virtual_gpus_only, gpus):
    """HeatInversion's data are the NumPy scheme at the same sensors, and its variable and loop sit where the Julia
    example's do."""
    example = load_script(INVERSION_PY, "heat_inversion_example")
    problem = example.HeatInversion(steps=60, n=16, theta_true=(0.4, 0.5))
    reference = finite_volume_steps(problem.u0, 60, problem.dt, problem.dx, kappa(problem.theta_true, problem.faces))
    np.testing.assert_allclose(problem.u_obs, reference[:, problem.sensors - 1], rtol=0, atol=1e-12)
    assert problem.sess.placement(problem.theta) == CPU0 and problem.sess.placement(problem.loss) == GPU0
    with pytest.raises(ValueError, match="unstable with 10 steps"):
        example.HeatInversion(steps=10)
    with pytest.raises(ValueError, match=r"sensors \[4, 8, 12, 16\] must be grid points 1..12"):
        example.HeatInversion(n=12)


def test_the_python_example_runs_and_prints_the_fit():
    result = subprocess.run([sys.executable, str(INVERSION_PY), "--theta-true", "0.5", "0.3"], capture_output=True,
                            text=True, timeout=120, cwd=REPO)
    assert result.returncode == 0, result.stderr[-2000:]
    first, second = result.stdout.splitlines()
    found = re.fullmatch(r"fitted theta = \[(\S+), (\S+)\] \(true \[0\.5, 0\.3\]\), error (\S+)", first)
    assert found, first
    assert [float(found[1]), float(found[2])] == pytest.approx([0.5, 0.3], abs=1e-6) and float(found[3]) < 1e-6
    assert re.fullmatch(r"loss \S+ -> \S+ in \d+ BFGS steps \(\S+ s\), time steps on GPU 0 \(a (virtual|CUDA) GPU\), "
                        r"theta on the CPU", second), second
