"""OutputBuffer: a kernel's output memory, kept from one run to the next and reused when nobody else holds it."""
from __future__ import annotations

import math
import sys

import numpy as np


class OutputBuffer:
    """A kernel's output array from its previous run, handed back for reuse once nothing else refers to it.

    A large output written into fresh memory every step costs page faults (glibc returns big blocks to the OS);
    TF's allocators keep such memory. The buffer is reused only when the reference count shows that no fetch, view,
    variable or other thread holds it, so no value anyone can see is overwritten.
    """

    __slots__ = ("array",)
    MIN_ELEMENTS = 1 << 16  # smaller outputs: malloc reuses their memory well enough, and the check would cost more

    def __init__(self):
        self.array = None

    def get(self, shape: tuple, dtype):
        """The kept array if it is free and fits (else None, after keeping a new one for next time)."""
        array = self.array
        if array is not None and sys.getrefcount(array) == _FREE_REFS and array.shape == shape \
                and array.dtype == dtype:
            return array
        if _FREE_REFS is None or math.prod(shape) < self.MIN_ELEMENTS:
            self.array = None
            return None
        self.array = np.empty(shape, dtype)
        return self.array


# getrefcount(array) in OutputBuffer.get when only the buffer holds it: the slot, the local, the call's argument.
# Reference counts mean this only on a CPython with the GIL; elsewhere buffers are never reused.
_FREE_REFS = 3 if sys.implementation.name == "cpython" and getattr(sys, "_is_gil_enabled", lambda: True)() else None
