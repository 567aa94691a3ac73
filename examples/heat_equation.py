"""ADCME's time-stepping example in Python: the 1-D heat equation u_t = kappa * u_xx on (0, 1), zero at both ends,
stepped explicitly (u <- u + kappa * dt * u_xx, second differences for u_xx) in a tf.while_loop that writes every step
into a tf.TensorArray. kappa is a trainable Variable, fitted by gradient descent through the loop to data made with a
known kappa. julia/examples/heat_equation.jl is the same program in Julia (ADPlace, ADCME's 1-based read/write).

    python examples/heat_equation.py                  # 100 time steps, 20 gradient-descent iterations
    python examples/heat_equation.py --steps 1000     # the same fit through 1,000 time steps

It prints the fitted kappa and the loss before and after.
"""
from __future__ import annotations

import argparse

import numpy as np

import adplace as tf


class HeatEquationFit:
    """The fit's graph and session: data for `kappa_true`, kappa a Variable starting at `kappa0`, the mean squared
    misfit of every step's temperature (`loss`), its gradient (`gradient`) and a gradient-descent step (`train`).

    `n` interior grid points, `steps` time steps up to `final_time`; kappa * dt / dx^2 must stay below 1/2 for the
    explicit scheme to be stable (with the defaults, kappa up to about 2.2)."""

    def __init__(self, steps: int = 100, n: int = 20, final_time: float = 0.05, kappa_true: float = 1.0,
                 kappa0: float = 0.5, learning_rate: float = 20.0):
        self.steps, self.n = steps, n
        self.dx = 1.0 / (n + 1)
        self.dt = final_time / steps
        x = np.arange(1, n + 1) * self.dx
        self.u0 = np.sin(np.pi * x) + 0.5 * np.sin(3 * np.pi * x)
        off = np.ones(n - 1)
        self.laplacian = (np.diag(-2.0 * np.ones(n)) + np.diag(off, 1) + np.diag(off, -1)) / self.dx ** 2
        self.graph = tf.Graph()
        with self.graph.as_default():
            self.sess = tf.Session()
            self.u_obs = self.sess.run(self.simulate(tf.constant(kappa_true, dtype=tf.float64)))
            self.kappa = tf.Variable(kappa0, dtype=tf.float64, name="kappa")
            self.u = self.simulate(self.kappa)
            self.loss = tf.reduce_mean(tf.square(self.u - self.u_obs))
            (self.gradient,) = tf.gradients(self.loss, self.kappa)
            self.train = tf.train.GradientDescentOptimizer(learning_rate).minimize(self.loss)
            self.sess.run(tf.global_variables_initializer())

    def simulate(self, kappa: tf.Tensor) -> tf.Tensor:
        """The temperature at steps 0..steps, shape [steps + 1, n]: step i reads step i - 1 from a TensorArray."""
        K = tf.constant(self.laplacian)
        lam = kappa * self.dt
        u_arr = tf.TensorArray(tf.float64, size=self.steps + 1, clear_after_read=False)
        u_arr = u_arr.write(0, tf.constant(self.u0))

        def condition(i, u_arr):
            return i <= self.steps

        def body(i, u_arr):
            u = u_arr.read(i - 1)
            u_next = u + lam * tf.linalg.matvec(K, u)
            return i + 1, u_arr.write(i, u_next)

        _, u_arr = tf.while_loop(condition, body, [tf.constant(1), u_arr])
        return u_arr.stack()

    def loss_and_gradient(self, kappa: float | None = None) -> tuple[float, float]:
        """The loss and d loss / d kappa at the Variable's value, or at `kappa` (fed in its place)."""
        feed = None if kappa is None else {self.kappa: kappa}
        loss, gradient = self.sess.run([self.loss, self.gradient], feed_dict=feed)
        return float(loss), float(gradient)

    def fit(self, iterations: int) -> list[float]:
        """Run `iterations` gradient-descent steps; returns the loss before each one."""
        return [float(self.sess.run([self.loss, self.train])[0]) for _ in range(iterations)]

    def kappa_value(self) -> float:
        return float(self.sess.run(self.kappa))


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    parser.add_argument("--steps", type=int, default=100, help="time steps of the while_loop (1000 works too)")
    parser.add_argument("--grid", type=int, default=20, help="interior grid points")
    parser.add_argument("--iterations", type=int, default=20, help="gradient-descent iterations")
    parser.add_argument("--kappa-true", type=float, default=1.0, help="the kappa that makes the data")
    parser.add_argument("--kappa0", type=float, default=0.5, help="the starting guess")
    parser.add_argument("--learning-rate", type=float, default=20.0)
    args = parser.parse_args(argv)
    problem = HeatEquationFit(steps=args.steps, n=args.grid, kappa_true=args.kappa_true, kappa0=args.kappa0,
                              learning_rate=args.learning_rate)
    losses = problem.fit(args.iterations)
    final_loss, _ = problem.loss_and_gradient()
    print(f"fitted kappa = {problem.kappa_value():.6f} (true {args.kappa_true})")
    print(f"loss {losses[0]:.3e} -> {final_loss:.3e} after {args.iterations} iterations through {args.steps} steps")


if __name__ == "__main__":
    main()
