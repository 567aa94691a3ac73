"""CRC-32C (Castagnoli) as TF's files use it, computed by google-crc32c (a C extension where it has a wheel), and
TF's masking of checksums stored next to the data they cover (tensorflow/core/lib/hash/crc32c.h)."""
from __future__ import annotations

import google_crc32c
import numpy as np

_MASK_DELTA = 0xA282EAD8


def crc32c(data, crc: int = 0) -> int:
    """The CRC-32C of `data` (bytes-like, a C-contiguous NumPy array too), continuing from `crc`."""
    if not isinstance(data, bytes):  # the C extension takes bytes and arrays (not memoryviews): a uint8 view
        data = np.frombuffer(memoryview(data).cast("B"), np.uint8)
    return google_crc32c.extend(crc, data) if crc else google_crc32c.value(data)


def mask(crc: int) -> int:
    """TF's masked form of a CRC: rotated right by 15 bits, plus a constant."""
    return (((crc >> 15) | (crc << 17)) + _MASK_DELTA) & 0xFFFFFFFF


def unmask(masked: int) -> int:
    rotated = (masked - _MASK_DELTA) & 0xFFFFFFFF
    return ((rotated >> 17) | (rotated << 15)) & 0xFFFFFFFF
