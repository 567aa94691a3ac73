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


def rounds(rows: np.ndarray, limit: int | None = None) -> list[tuple[np.ndarray, np.ndarray]] | None:
    """(positions, rows[positions]) per round: round k holds the k-th occurrence of each repeated row, so every round
    names distinct rows and a row's updates run in the order of `rows`. None where more than `limit` rounds would
    be needed."""
    n = rows.size
    if n == 0:
        return []
    ordered = np.sort(rows)  # 3x faster than the stable argsort, needed only when a row repeats
    if (ordered[1:] != ordered[:-1]).all():
        return [(np.arange(n), rows)]
    order = np.argsort(rows, kind="stable")
    ordered = rows[order]
    starts = np.flatnonzero(np.r_[True, ordered[1:] != ordered[:-1]])
    occurrence = np.empty(n, np.int64)
    occurrence[order] = np.arange(n) - np.repeat(starts, np.diff(np.r_[starts, n]))
    count = int(occurrence.max()) + 1
    if limit is not None and count > limit:
        return None
    return [(positions, rows[positions]) for positions in (np.flatnonzero(occurrence == k) for k in range(count))]


def in_rounds(xp, combine, target, rows, values) -> None:
    """target[rows[i]] = combine(target[rows[i]], values[i]) for each i in turn, a round at a time."""
    _apply(xp, combine, target, rounds(np.asarray(to_host(rows))), values)


def take_rows(array, at):
    """array[at], a new array, for an integer index array `at`: for a NumPy array its `take` method, which gathers
    rows of a 2-D or wider array 1.5-4x faster than indexing does (the same elements; out-of-range indices raise
    IndexError as indexing's); any other array (CuPy's) is indexed."""
    return array.take(at, axis=0) if type(array) is np.ndarray else array[at]


def _apply(xp, combine, target, plan: list, values) -> None:
    """The rounds of `plan` (from `rounds`): a single one holds every position in order, so it takes `values` whole."""
    for positions, distinct in plan:
        at = xp.asarray(distinct)
        target[at] = combine(take_rows(target, at),
                             values if len(plan) == 1 else take_rows(values, xp.asarray(positions)))


def ufunc_at(xp, name: str, target, rows, values) -> None:
    """`xp.<name>.at(target, rows, values)` with NumPy's meaning (rows 1-D, values one row per index) on any backend
    and dtype."""
    ufunc = getattr(xp, name)
    if xp is np:
        if not _numpy_in_rounds(ufunc, target, rows, values):
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


# NumPy's `ufunc.at` is fast on 1-D targets only: on rows of a 2-D one it costs ~0.5 us per element (1,000 rows of 64
# float32: 0.5 ms), where a few rounds of gather, ufunc, scatter cost ~30 us, with the same values (each element gets
# its updates one at a time, in the order of `rows`). Beyond this many rounds (an index repeated more often) the
# per-round cost wins again.
_MAX_ROUNDS = 8


def _numpy_in_rounds(ufunc, target: np.ndarray, rows, values) -> bool:
    """`ufunc.at(target, rows, values)` run in rounds where that is faster and the same: True when it did."""
    if target.ndim < 2 or type(values) is not np.ndarray or values.dtype != target.dtype or \
            values.shape[1:] != target.shape[1:] or np.ndim(rows) != 1 or not 2 <= np.size(rows) == values.shape[0]:
        return False
    rows = np.asarray(rows)
    if rows.dtype.kind not in "iu" or rows.min() < 0:  # -1 and n - 1 name one row: rounds would miss that
        return False
    plan = rounds(rows, _MAX_ROUNDS)
    if plan is None:
        return False
    _apply(np, ufunc, target, plan, values)
    return True
