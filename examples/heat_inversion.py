"""ADCME's inverse problem in Python: recover the unknown coefficient kappa(x) = exp(theta0 + theta1 (x - 1/2)) of the
1-D heat equation u_t = (kappa(x) u_x)_x on (0, 1), zero at both ends, from the temperature recorded at four sensors.
The explicit time steps run on GPU 0 in a tf.while_loop over a tf.TensorArray, theta is a Variable on the CPU, and
tf.adcme.bfgs (ADCME's BFGS!: scipy's L-BFGS-B) fits theta with gradients taken back through the loop. Without a CUDA
GPU a virtual GPU stands in. julia/examples/heat_inversion.jl is the same program in Julia (ADPlace).

    python examples/heat_inversion.py                          # 100 time steps on 20 points
    python examples/heat_inversion.py --theta-true 0.5 0.3     # other data

It prints the fitted theta against the true one, and the loss before and after.
"""
from __future__ import annotations

import argparse
import time

import numpy as np

import adplace as tf


class HeatInversion:
    """The inversion's graph and session: sensor data for `theta_true`, theta a Variable on `ps_device` starting at
    zero (kappa = 1), the simulation from theta and the squared misfit at the sensors (`loss`) on `device`.

    `n` interior grid points, `steps` time steps up to `final_time`; theta is kept in [low, high]², where
    kappa <= exp(1.5 * max(|low|, |high|)), and that kappa must keep the explicit scheme stable
    (kappa * dt / dx^2 < 1/2)."""

    def __init__(self, steps: int = 100, n: int = 20, final_time: float = 0.02,
                 theta_true: tuple[float, float] = (0.2, -0.6), sensors: tuple[int, ...] = (4, 8, 12, 16),
                 bounds: tuple[float, float] = (-1.0, 1.0), device: str = "/gpu:0", ps_device: str = "/cpu:0"):
        self.steps, self.n, self.bounds = steps, n, bounds
        self.dx = 1.0 / (n + 1)
        self.dt = final_time / steps
        kappa_max = np.exp(1.5 * max(abs(b) for b in bounds))
        if kappa_max * self.dt / self.dx ** 2 >= 0.5:
            raise ValueError(f"kappa up to {kappa_max:.3g} makes the explicit scheme unstable with {steps} steps on "
                             f"{n} points: take more steps or narrower bounds")
        self.x = np.arange(1, n + 1) * self.dx
        self.faces = (np.arange(1, n + 2) - 0.5) * self.dx
        self.u0 = np.sin(np.pi * self.x) + 0.5 * np.sin(2 * np.pi * self.x)
        self.sensors = np.asarray(sensors)                                   # 1-based, as in the Julia example
        if self.sensors.min() < 1 or self.sensors.max() > n:
            raise ValueError(f"sensors {list(sensors)} must be grid points 1..{n}")
        # u_x at the n + 1 faces: (u[k] - u[k - 1]) / dx, with u zero beyond both ends
        self.difference = (np.eye(n + 1, n) - np.eye(n + 1, n, k=-1)) / self.dx
        self.theta_true = np.asarray(theta_true, dtype=np.float64)
        self.graph = tf.Graph()
        with self.graph.as_default():
            self.sess = tf.Session()
            with tf.device(device):
                self.u_obs = self.sess.run(self.at_sensors(self.simulate(tf.constant(self.theta_true))))
            with tf.device(ps_device):
                self.theta = tf.Variable(np.zeros(2), name="theta")
            with tf.device(device):
                self.u = self.simulate(self.theta)
                self.loss = tf.reduce_sum(tf.square(self.at_sensors(self.u) - self.u_obs))
            self.sess.run(tf.global_variables_initializer())

    def kappa(self, theta: tf.Tensor) -> tf.Tensor:
        """kappa at the faces: exp(theta0 + theta1 (x - 1/2)), positive for every theta."""
        return tf.exp(theta[0] + theta[1] * (self.faces - 0.5))

    def simulate(self, theta: tf.Tensor) -> tf.Tensor:
        """The temperature at steps 0..steps, shape [steps + 1, n]: step i reads step i - 1 from a TensorArray."""
        kappa = self.kappa(theta)
        D = tf.constant(self.difference)
        u_arr = tf.TensorArray(tf.float64, size=self.steps + 1, clear_after_read=False)
        u_arr = u_arr.write(0, tf.constant(self.u0))

        def condition(i, u_arr):
            return i <= self.steps

        def body(i, u_arr):
            u = u_arr.read(i - 1)
            flux = kappa * tf.linalg.matvec(D, u)                            # kappa u_x at the faces
            return i + 1, u_arr.write(i, u - self.dt * tf.linalg.matvec(D, flux, transpose_a=True))

        _, u_arr = tf.while_loop(condition, body, [tf.constant(1), u_arr])
        return u_arr.stack()

    def at_sensors(self, u: tf.Tensor) -> tf.Tensor:
        """The columns of the sensors' grid points (1-based indices, as the Julia example's u[:, sensors])."""
        return tf.gather(u, self.sensors - 1, axis=1)

    def fit(self, max_iter: int = 100) -> list[float]:
        """BFGS! on the loss, theta bounded; returns the loss after each step (theta holds the fit)."""
        with self.graph.as_default():   # the optimizer's gradients join the model's graph
            return tf.adcme.bfgs(self.sess, self.loss, max_iter, vars=[self.theta], verbose=False,
                                 bounds={self.theta: self.bounds})

    def theta_value(self) -> np.ndarray:
        return self.sess.run(self.theta)

    def loss_value(self) -> float:
        return float(self.sess.run(self.loss))


def use_a_gpu() -> str:
    """Say which GPU 0 is: a CUDA GPU, or a virtual one turned on here when there are none."""
    if tf.config.cuda_gpus():
        return "a CUDA GPU"
    if tf.config.virtual_gpu_count() == 0:
        tf.config.set_virtual_gpus(1)
    return "a virtual GPU"


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    parser.add_argument("--steps", type=int, default=100, help="time steps of the while_loop")
    parser.add_argument("--grid", type=int, default=20, help="interior grid points")
    parser.add_argument("--max-iter", type=int, default=100, help="BFGS steps at most")
    parser.add_argument("--theta-true", type=float, nargs=2, default=(0.2, -0.6), help="the theta that makes the data")
    args = parser.parse_args(argv)
    gpu = use_a_gpu()
    problem = HeatInversion(steps=args.steps, n=args.grid, theta_true=tuple(args.theta_true))
    loss0 = problem.loss_value()
    start = time.perf_counter()
    losses = problem.fit(args.max_iter)
    seconds = time.perf_counter() - start
    theta, true = problem.theta_value(), problem.theta_true
    print(f"fitted theta = [{theta[0]:.6f}, {theta[1]:.6f}] (true [{true[0]}, {true[1]}]), "
          f"error {np.max(np.abs(theta - true)):.1e}")
    print(f"loss {loss0:.3e} -> {losses[-1]:.3e} in {len(losses)} BFGS steps ({seconds:.2f} s), "
          f"time steps on GPU 0 ({gpu}), theta on the CPU")


if __name__ == "__main__":
    main()
