"""CRC-32C (Castagnoli) as TF's files use it, computed by google-crc32c (a C extension where it has a wheel), and
TF's masking of checksums stored next to the data they cover (tensorflow/core/lib/hash/crc32c.h).

Without google-crc32c (a machine that installed adplace's source tree only) a table-driven loop computes the same
values, slowly: `import adplace` never needs the extension."""
from __future__ import annotations

import functools

import numpy as np

_MASK_DELTA = 0xA282EAD8
_POLY = 0x82F63B78  # CRC-32C, reflected


@functools.cache
def _table() -> tuple[int, ...]:
    rows = []
    for byte in range(256):
        crc = byte
        for _ in range(8):
            crc = (crc >> 1) ^ (_POLY if crc & 1 else 0)
        rows.append(crc)
    return tuple(rows)


def _crc32c_py(data: bytes, crc: int) -> int:
    table, crc = _table(), crc ^ 0xFFFFFFFF
    for byte in data:
        crc = table[(crc ^ byte) & 0xFF] ^ (crc >> 8)
    return crc ^ 0xFFFFFFFF


@functools.cache
def _extension():
    try:
        import google_crc32c
    except ImportError:
        return None
    return google_crc32c


def crc32c(data, crc: int = 0) -> int:
    """The CRC-32C of `data` (bytes-like, a C-contiguous NumPy array too), continuing from `crc`."""
    ext = _extension()
    if ext is None:
        return _crc32c_py(bytes(memoryview(data).cast("B")), crc)
    if not isinstance(data, bytes):  # the C extension takes bytes and arrays (not memoryviews): a uint8 view
        data = np.frombuffer(memoryview(data).cast("B"), np.uint8)
    return ext.extend(crc, data) if crc else ext.value(data)


def mask(crc: int) -> int:
    """TF's masked form of a CRC: rotated right by 15 bits, plus a constant."""
    return (((crc >> 15) | (crc << 17)) + _MASK_DELTA) & 0xFFFFFFFF


def unmask(masked: int) -> int:
    rotated = (masked - _MASK_DELTA) & 0xFFFFFFFF
    return ((rotated >> 17) | (rotated << 15)) & 0xFFFFFFFF
