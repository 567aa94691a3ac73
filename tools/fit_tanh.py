"""Fit the rational approximation of tanh that fused float32 loops use (adplace/kernels/cpu_fusion.py, TANH_P/Q).

    tanh(x) ~= x * P(x*x) / Q(x*x)   for |x| <= TANH_F32_LIMIT (9.5), P of degree 5, Q of degree 4 with Q(0) = 1

fitted for least maximum relative error by linearised least squares (each pass divides by the last pass's Q) with
Lawson's reweighting towards the worst points, in s = (x / limit)**2 so the system stays well conditioned, then
rescaled to coefficients in x*x. The fit itself is within 3e-9; the loops evaluate it in float32, whose rounding
dominates: within 5.5 ulp of the exact value (tests/runtime/test_cpu_fusion.py checks the compiled loop).

    python tools/fit_tanh.py      # prints the coefficients and their errors
"""
from __future__ import annotations

import numpy as np

LIMIT = 9.5  # float32 tanh rounds to +-1 beyond 9.011; the fit covers a little more
DEGREE_P, DEGREE_Q = 5, 4


def fit(limit: float = LIMIT, degree_p: int = DEGREE_P, degree_q: int = DEGREE_Q, passes: int = 40):
    """(p, q, max relative error): coefficients in x*x, lowest first, q[0] == 1."""
    x = np.sort(np.concatenate([np.linspace(1e-4, limit, 40_000), np.geomspace(1e-6, 1.0, 2_000)]))
    s = (x / limit) ** 2
    t = np.tanh(x)
    columns = np.concatenate([x[:, None] * s[:, None] ** np.arange(degree_p + 1),
                              -t[:, None] * s[:, None] ** np.arange(1, degree_q + 1)], axis=1)
    weights, q_last, best = np.ones_like(x), np.ones_like(x), (np.inf, None)
    for _ in range(passes):
        scale = np.sqrt(weights) / (t * q_last)
        solution = np.linalg.lstsq(columns * scale[:, None], t * scale, rcond=None)[0]
        p, q = solution[:degree_p + 1], np.concatenate([[1.0], solution[degree_p + 1:]])
        q_last = np.polynomial.polynomial.polyval(s, q)
        error = np.abs(x * np.polynomial.polynomial.polyval(s, p) / q_last - t) / t
        if error.max() < best[0]:
            best = (error.max(), (p, q))
        weights = weights * np.sqrt(error / error.max()) + 1e-12
        weights /= weights.mean()
    p, q = best[1]
    return p / limit ** (2 * np.arange(degree_p + 1)), q / limit ** (2 * np.arange(degree_q + 1)), best[0]


def float32_ulps(p, q, limit: float = LIMIT, points: int = 5_000_001) -> float:
    """The largest error in float32 ulps of x * P / Q evaluated in float32 (Horner, no FMA) over x in [0, limit]."""
    x = np.concatenate([np.linspace(0, limit, points, dtype=np.float32),
                        np.geomspace(1e-30, 1.0, 100_001).astype(np.float32)])
    s = x * x
    numerator, denominator = np.float32(p[-1]), np.float32(q[-1])
    for c in p[-2::-1]:
        numerator = numerator * s + np.float32(c)
    for c in q[-2::-1]:
        denominator = denominator * s + np.float32(c)
    exact = np.tanh(x.astype(np.float64))
    ulp = np.spacing(np.abs(exact).astype(np.float32)).astype(np.float64)
    error = np.abs((x * numerator / denominator).astype(np.float64) - exact) / ulp
    return float(np.max(np.where(exact == 0, 0.0, error)))


if __name__ == "__main__":
    p, q, relative = fit()
    print("TANH_P =", tuple(float(c) for c in p))
    print("TANH_Q =", tuple(float(c) for c in q))
    print(f"max relative error {relative:.3g}; evaluated in float32 (no FMA): at most {float32_ulps(p, q):.2f} ulp")
