"""What the ADCME tests share: running fetches, and Julia's indexing written directly in NumPy as the reference.

The reference turns each Julia index into a 0-based position vector and indexes orthogonally with `np.ix_`, then
drops the dimensions an integer index took: an implementation independent of tf.adcme's gathers and scatters.
"""
import numpy as np

import adplace as tf

COLON = slice(None)


def run(fetches, feed_dict=None):
    with tf.Session() as sess:
        return sess.run(fetches, feed_dict)


def positions(index, dim: int) -> np.ndarray:
    """A Julia index (int, `:`, 1-based int vector, Bool mask) of a dimension of size `dim` as 0-based positions."""
    if isinstance(index, slice):
        return np.arange(dim)
    array = np.asarray(index)
    if array.dtype == np.bool_:
        return np.nonzero(array)[0]
    return array.reshape(-1).astype(np.int64) - 1


def kept_shape(a: np.ndarray, indices) -> tuple:
    """The shape of `a[indices...]` in Julia: an integer index drops its dimension."""
    return tuple(len(positions(i, d)) for i, d in zip(indices, a.shape) if not isinstance(i, (int, np.integer)))


def julia_getindex(a: np.ndarray, *indices) -> np.ndarray:
    """Julia's `a[indices...]` (one index per dimension)."""
    picked = a[np.ix_(*[positions(i, d) for i, d in zip(indices, a.shape)])]
    return picked.reshape(kept_shape(a, indices))


def julia_scatter(a: np.ndarray, indices, values, how: str) -> np.ndarray:
    """A copy of `a` with `a[indices...] = values` (`how` "update"), `+= values` ("add") or `-= values` ("sub"),
    `values` broadcast to the indexed shape; repeated positions accumulate for "add" and "sub"."""
    out = a.copy()
    where = np.ix_(*[positions(i, d) for i, d in zip(indices, a.shape)])
    full = np.broadcast_to(np.asarray(values), kept_shape(a, indices)).reshape([len(w.reshape(-1)) for w in where])
    if how == "update":
        out[where] = full
    else:
        np.add.at(out, where, full if how == "add" else -full)
    return out


def gather_gradient(a: np.ndarray, indices, weights: np.ndarray) -> np.ndarray:
    """d sum(weights .* a[indices...]) / d a: the weights added back at the positions they were gathered from."""
    return julia_scatter(np.zeros_like(a), indices, weights, "add")
