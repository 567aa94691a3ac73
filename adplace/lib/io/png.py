"""PNG encoding of 8-bit images (what TF's image summaries hold), with the standard library's zlib.

    encode_png(np.zeros((32, 32, 3), np.uint8))    # b'\\x89PNG...'
"""
from __future__ import annotations

import struct
import zlib

import numpy as np

_SIGNATURE = b"\x89PNG\r\n\x1a\n"
_COLOR_TYPES = {1: 0, 2: 4, 3: 2, 4: 6}  # channels -> gray, gray+alpha, RGB, RGBA


def _chunk(kind: bytes, data: bytes) -> bytes:
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))


def encode_png(image, compression: int = -1) -> bytes:
    """The PNG file of a uint8 image shaped [height, width, channels] (channels 1 to 4), zlib level `compression`
    (-1: zlib's default)."""
    image = np.asarray(image)
    if image.dtype != np.uint8 or image.ndim != 3 or image.shape[2] not in _COLOR_TYPES:
        raise ValueError(f"encode_png takes a uint8 [height, width, 1-4] image, got {image.dtype} {image.shape}")
    height, width, channels = image.shape
    rows = np.zeros((height, 1 + width * channels), np.uint8)  # each scanline: filter type 0, then its pixels
    rows[:, 1:] = image.reshape(height, width * channels)
    header = struct.pack(">IIBBBBB", width, height, 8, _COLOR_TYPES[channels], 0, 0, 0)
    return b"".join((_SIGNATURE, _chunk(b"IHDR", header), _chunk(b"IDAT", zlib.compress(rows.tobytes(), compression)),
                     _chunk(b"IEND", b"")))
