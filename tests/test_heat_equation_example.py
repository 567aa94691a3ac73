"""examples/heat_equation.py: ADCME's time stepping in a tf.while_loop over a TensorArray fits the heat equation's
coefficient by gradient descent through the loop (julia/examples/heat_equation.jl is the same program in Julia)."""
import subprocess
import sys

import numpy as np
import pytest
from script_module import ROOT, load_script
from heat_reference import explicit_steps

SCRIPT = ROOT / "examples" / "heat_equation.py"
heat = load_script(SCRIPT, "heat_equation_example")


@pytest.fixture(scope="module")
def small():
    """60 time steps on 16 points, data for kappa = 0.8, starting from 0.5 (kappa dt / dx² stays below 1/2 up to kappa = 2)."""
    return heat.HeatEquationFit(steps=60, n=16, kappa_true=0.8, kappa0=0.5)


def test_the_loop_computes_the_explicit_scheme(small):
    """The data the loop made are the scheme's 61 states (each step read back from the TensorArray)."""
    assert small.u_obs.shape == (61, 16)
    np.testing.assert_allclose(small.u_obs, explicit_steps(small.u0, 60, small.dt, small.dx, 0.8), rtol=1e-12,
                               atol=1e-14)


def test_the_gradient_through_the_loop_is_the_central_difference(small):
    """d loss / d kappa from the while-loop's gradient equals the loss's central difference, on both sides of the
    minimum, and vanishes at the true kappa."""
    h = 1e-5
    for kappa in (0.55, 0.7, 1.1):
        loss, gradient = small.loss_and_gradient(kappa)
        difference = (small.loss_and_gradient(kappa + h)[0] - small.loss_and_gradient(kappa - h)[0]) / (2 * h)
        assert gradient == pytest.approx(difference, rel=1e-6)
        assert loss > 0 and (gradient < 0) == (kappa < 0.8)
    assert small.loss_and_gradient(0.8) == pytest.approx((0.0, 0.0), abs=1e-20)


def test_gradient_descent_recovers_kappa_within_one_percent():
    fit = heat.HeatEquationFit(steps=60, n=16, kappa_true=0.8, kappa0=0.5)
    losses = fit.fit(15)
    assert fit.kappa_value() == pytest.approx(0.8, rel=0.01)
    assert fit.loss_and_gradient()[0] < 1e-6 * losses[0]


def test_the_loop_is_one_frame_whatever_the_number_of_steps():
    """The graph is the same size for 10 and 1,000 steps: the time steps run in the loop, not as unrolled ops."""
    sizes = [len(heat.HeatEquationFit(steps=steps, n=8).graph.get_operations()) for steps in (10, 1000)]
    assert sizes[0] == sizes[1]
    types = [op.type for op in heat.HeatEquationFit(steps=10, n=8).graph.get_operations()]
    assert {"Enter", "Exit", "LoopCond", "NextIteration", "TensorArrayV3", "TensorArrayWriteV3",
            "TensorArrayReadV3", "TensorArrayGatherV3"} <= set(types)


def test_main_prints_the_fitted_kappa_and_the_loss(capsys):
    heat.main(["--steps", "50", "--grid", "12", "--iterations", "12", "--kappa-true", "0.9"])
    out = capsys.readouterr().out.splitlines()
    kappa = float(out[0].split("=")[1].split()[0])
    assert kappa == pytest.approx(0.9, rel=0.01) and out[0].endswith("(true 0.9)")
    assert out[1].startswith("loss ") and out[1].endswith("after 12 iterations through 50 steps")


def test_runs_as_a_script():
    result = subprocess.run([sys.executable, str(SCRIPT), "--steps", "40", "--grid", "10", "--iterations", "10"],
                            capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert result.returncode == 0, result.stderr[-2000:]
    assert result.stdout.startswith("fitted kappa = ") and "(true 1.0)" in result.stdout
    assert float(result.stdout.split("=")[1].split()[0]) == pytest.approx(1.0, rel=0.01)
