"""Special functions for the Erf, Erfc, Lgamma, Digamma and Polygamma kernels, written against any array module.

NumPy has no erf or gamma functions and SciPy is not a dependency, so these are computed from series that run
unchanged on NumPy and CuPy (one code path for every device, so a GPU result matches the CPU's). Each works in
float64 and returns the input's dtype; float64 results are accurate to about 1e-14 relative (erfc for 0.5 < x < 3,
where it is 1 - erf, to about 1e-11 relative).

    erf(np)(np.array([0.5]))        # [0.52049988]
    lgamma(np)(np.array([0.5]))     # [0.57236494] = log(sqrt(pi))
"""
from __future__ import annotations

import math

# Bernoulli numbers B_2 .. B_16: the coefficients of the asymptotic (Euler-Maclaurin) series below.
_BERNOULLI = (1 / 6, -1 / 30, 1 / 42, -1 / 30, 5 / 66, -691 / 2730, 7 / 6, -3617 / 510)
_SHIFT_TO = 10.0  # arguments are moved up to >= 10 by the recurrences, where 8 series terms reach double precision
_SERIES_BELOW = 3.0  # erf: the power series below |x| = 3, the continued fraction for erfc above
_SERIES_TERMS = 50
_FRACTION_TERMS = 60


def _as_float64(xp, x):
    x = xp.asarray(x)
    return x, x.astype(xp.float64)


def _shifted(xp, x, step):
    """Apply the recurrence `step(total, x)` while x < 10, x += 1, per element; returns (x >= 10, total)."""
    total = xp.zeros_like(x)
    lowest = float(xp.min(xp.where(xp.isfinite(x), x, _SHIFT_TO))) if x.size else _SHIFT_TO  # syncs a GPU once
    count = int(max(0.0, math.ceil(_SHIFT_TO - lowest)))
    for _ in range(min(count, 10_000)):
        small = x < _SHIFT_TO
        total = total + xp.where(small, step(x), 0.0)
        x = xp.where(small, x + 1.0, x)
    return x, total


def _sin_pi(xp, x):
    """sin(pi * x) with the argument reduced first, so it is exactly 0 at the integers."""
    r = x - 2.0 * xp.round(x / 2.0)
    return xp.where(r == xp.round(r), 0.0, xp.sin(math.pi * r))


def lgamma(xp):
    """log|Gamma(x)|: Stirling's series after shifting x >= 10; the reflection formula for x < 0.5."""
    def positive(x):
        x, logs = _shifted(xp, x, lambda v: xp.log(v))
        inv, inv2 = 1.0 / x, 1.0 / (x * x)
        series, power = xp.zeros_like(x), inv
        for k, b in enumerate(_BERNOULLI, start=1):
            series = series + b / (2 * k * (2 * k - 1)) * power
            power = power * inv2
        return (x - 0.5) * xp.log(x) - x + 0.5 * math.log(2 * math.pi) + series - logs

    def fn(x):
        original, given = _as_float64(xp, x)
        x = xp.where(xp.isinf(given), 1.0, given)
        reflect = x < 0.5
        value = positive(xp.where(reflect, 1.0 - x, x))
        sin = xp.abs(_sin_pi(xp, x))
        with_reflection = math.log(math.pi) - xp.log(xp.where(sin == 0, 1.0, sin)) - value
        out = xp.where(reflect, xp.where(sin == 0, math.inf, with_reflection), value)
        return xp.where(xp.isinf(given), math.inf, out).astype(original.dtype)
    return fn


def digamma(xp):
    """d/dx lgamma(x): the asymptotic series after shifting x >= 10; psi(1 - x) - pi / tan(pi x) for x < 0.5;
    NaN at 0 and the negative integers (as TF's Eigen kernel)."""
    def positive(x):
        x, shift = _shifted(xp, x, lambda v: -1.0 / v)
        inv2 = 1.0 / (x * x)
        series, power = xp.zeros_like(x), inv2
        for k, b in enumerate(_BERNOULLI, start=1):
            series = series - b / (2 * k) * power
            power = power * inv2
        return xp.log(x) - 0.5 / x + series + shift

    def fn(x):
        original, given = _as_float64(xp, x)
        x = xp.where(xp.isinf(given), 1.0, given)
        reflect = x < 0.5
        value = positive(xp.where(reflect, 1.0 - x, x))
        sin = _sin_pi(xp, x)
        safe_sin = xp.where(sin == 0, 1.0, sin)
        cot = xp.cos(math.pi * (x - 2.0 * xp.round(x / 2.0))) / safe_sin
        out = xp.where(reflect, xp.where(sin == 0, math.nan, value - math.pi * cot), value)
        return xp.where(xp.isinf(given), xp.where(given > 0, math.inf, math.nan), out).astype(original.dtype)
    return fn


def polygamma(xp):
    """The n-th derivative of digamma, (-1)**(n+1) n! zeta(n + 1, x) for integer n >= 1, with the Hurwitz zeta
    function from the shifted Euler-Maclaurin sum; NaN for other n and for x < -10000."""
    def fn(n, x):
        original, x0 = _as_float64(xp, x)
        n, x0 = xp.broadcast_arrays(xp.asarray(n).astype(xp.float64), x0)
        valid = (n >= 0) & (n == xp.floor(n))
        s = xp.where(valid & (n >= 1), n, 1.0) + 1.0
        x, head = _shifted(xp, xp.where(x0 < -10_000, math.nan, x0), lambda v: v ** -s)
        zeta = head + x ** (1.0 - s) / (s - 1.0) + 0.5 * x ** -s
        rising, power = s, x ** (-s - 1.0)  # s (s+1) ... (s+2k-2), x^(-s-2k+1)
        for k, b in enumerate(_BERNOULLI, start=1):
            zeta = zeta + b / math.factorial(2 * k) * rising * power
            rising = rising * (s + 2 * k - 1) * (s + 2 * k)
            power = power / (x * x)
        signed = xp.where(n % 2 == 1, 1.0, -1.0) * xp.exp(lgamma(xp)(s)) * zeta  # n! = Gamma(s)
        out = xp.where(n == 0, digamma(xp)(x0), xp.where(valid, signed, math.nan))
        return out.astype(original.dtype)
    return fn


def erf(xp):
    """erf(x): the series 2/sqrt(pi) exp(-x^2) sum (2x^2)^k x / (1*3*...*(2k+1)) for |x| < 3 (all terms positive, so
    nothing cancels), else sign(x) (1 - erfc(|x|))."""
    def fn(x):
        original, x = _as_float64(xp, x)
        a = xp.abs(x)
        out = xp.where(a < _SERIES_BELOW, _erf_series(xp, xp.minimum(a, _SERIES_BELOW)),
                       1.0 - _erfc_fraction(xp, xp.maximum(a, _SERIES_BELOW)))
        return (xp.sign(x) * out).astype(original.dtype)
    return fn


def erfc(xp):
    """erfc(x) = 1 - erf(x): the continued fraction for x >= 3 (no cancellation), 1 - erf(x) below."""
    def fn(x):
        original, x = _as_float64(xp, x)
        out = xp.where(x < _SERIES_BELOW, 1.0 - erf(xp)(x), _erfc_fraction(xp, xp.maximum(x, _SERIES_BELOW)))
        return out.astype(original.dtype)
    return fn


def _erf_series(xp, a):
    """erf(a) for 0 <= a <= 3."""
    two_a2 = 2.0 * a * a
    term, total = a, a
    for k in range(1, _SERIES_TERMS):
        term = term * two_a2 / (2 * k + 1)
        total = total + term
    return 2.0 / math.sqrt(math.pi) * xp.exp(-a * a) * total


def _erfc_fraction(xp, a):
    """erfc(a) for a >= 3: exp(-a^2)/sqrt(pi) / (a + (1/2)/(a + 1/(a + (3/2)/(a + ...)))), evaluated from the tail."""
    tail = a
    for k in range(_FRACTION_TERMS, 0, -1):
        tail = a + (k / 2.0) / tail
    return xp.exp(-a * a) / (math.sqrt(math.pi) * tail)
