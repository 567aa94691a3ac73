"""Writes at indices that may repeat, on NumPy and CuPy alike: every occurrence applies, in the order of the indices.

NumPy's unbuffered `ufunc.at` does this for every ufunc and dtype. CuPy's `ufunc.at` exists only where CUDA has the
atomic (add for most numeric types, max/min for some, subtract for int32/uint32 alone, so subtraction adds the
negated values); for the rest the same updates run in rounds, round k writing every index's k-th occurrence, so
each round names distinct rows. CuPy's float64 max/min `at` takes the dtype but rounds the values through float32
(an H200, CuPy 14.2), so float64 max/min runs in rounds too.
"""
from __future__ import annotations

import numpy as np

from adplace.kernels.gpu import to_host

_CUPY_ATOMIC = frozenset({"add", "subtract", "maximum", "minimum"})


def rounds(rows: np.ndarray) -> list[tuple[np.ndarray, np.ndarray]]:
    """(positions, rows[positions]) per round: round k holds the k-th occurrence of each repeated row, so every round
    names distinct rows and a row's updates run in the order of `rows`."""
    n = rows.size
    if n == 0:
        return []
    order = np.argsort(rows, kind="stable")
    ordered = rows[order]
    starts = np.flatnonzero(np.r_[True, ordered[1:] != ordered[:-1]])
    if starts.size == n:
        return [(np.arange(n), rows)]
    occurrence = np.empty(n, np.int64)
    occurrence[order] = np.arange(n) - np.repeat(starts, np.diff(np.r_[starts, n]))
    return [(positions, rows[positions])
            for positions in (np.flatnonzero(occurrence == k) for k in range(int(occurrence.max()) + 1))]


def in_rounds(xp, combine, target, rows, values) -> None:
    """target[rows[i]] = combine(target[rows[i]], values[i]) for each i in turn, a round at a time."""
    for positions, distinct in rounds(np.asarray(to_host(rows))):
        at = xp.asarray(distinct)
        target[at] = combine(target[at], values[xp.asarray(positions)])


def ufunc_at(xp, name: str, target, rows, values) -> None:
    """`xp.<name>.at(target, rows, values)` with NumPy's meaning (rows 1-D, values one row per index) on any backend
    and dtype."""
    ufunc = getattr(xp, name)
    if xp is np:
        ufunc.at(target, rows, values)
        return
    if name in _CUPY_ATOMIC and not (name in ("maximum", "minimum") and target.dtype == np.float64):
        atomic, operand = (xp.add, -values) if name == "subtract" and target.dtype.kind != "b" else (ufunc, values)
        try:
            atomic.at(target, xp.asarray(rows), operand)
            return
        except TypeError:  # no CUDA atomic for this dtype; CuPy checks before it launches anything
            pass
    in_rounds(xp, ufunc, target, rows, values)
