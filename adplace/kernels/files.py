"""Kernel of MatchingFiles (adplace.ops.file_ops), CPU only as in TF: every pattern's matches (adplace.lib.io's glob,
TF's glob syntax), all sorted together."""
from __future__ import annotations

import numpy as np

from adplace.framework import errors
from adplace.framework.tensor_shape import dims_text
from adplace.kernels.registration import NO_GPU, kernel


@kernel("MatchingFiles", None, NO_GPU)
def _matching_files(op, ctx):
    from adplace.lib.io import file_io

    def matching_files(pattern):
        pattern = np.asarray(pattern, dtype=object)
        if pattern.ndim > 1:
            raise errors.InvalidArgumentError(None, op, f"Input patterns tensor must be scalar or vector, but had "
                                                        f"shape: {dims_text(pattern.shape)}")
        names = sorted(name for p in pattern.reshape(-1) for name in file_io.glob(p))
        out = np.empty(len(names), dtype=object)
        out[:] = [n.encode() for n in names]
        return out
    return matching_files
