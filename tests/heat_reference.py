"""The heat-equation examples' explicit scheme in plain NumPy, for the tests of the Python and Julia examples."""
import numpy as np


def explicit_steps(u0, steps, dt, dx, kappa):
    """The scheme in NumPy: every step of u <- u + kappa dt (u[i-1] - 2u[i] + u[i+1]) / dx², zero at both ends."""
    u, out = u0.copy(), [u0.copy()]
    for _ in range(steps):
        padded = np.concatenate([[0.0], u, [0.0]])
        u = u + kappa * dt * (padded[:-2] - 2 * u + padded[2:]) / dx ** 2
        out.append(u)
    return np.array(out)
