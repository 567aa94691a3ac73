"""WAV encoding of float audio as 16-bit PCM (what TF's audio summaries hold: tensorflow/core/lib/wav/wav_io.cc).

    encode_wav(np.sin(np.linspace(0, 100, 8000))[:, None], 8000)    # b'RIFF...WAVEfmt ...'
"""
from __future__ import annotations

import struct

import numpy as np


def encode_wav(samples, sample_rate: int) -> bytes:
    """The WAV file of float samples shaped [frames, channels] in [-1, 1] (values outside are clipped)."""
    samples = np.asarray(samples, np.float32)
    if samples.ndim != 2:
        raise ValueError(f"encode_wav takes samples shaped [frames, channels], got {samples.shape}")
    frames, channels = samples.shape
    scaled = samples * np.float32(32768.0)
    rounded = np.sign(scaled) * np.floor(np.abs(scaled) + np.float32(0.5))  # C's roundf: halves away from zero
    pcm = np.clip(rounded, -32768, 32767).astype("<i2").tobytes()
    block = channels * 2
    fmt = struct.pack("<HHIIHH", 1, channels, sample_rate, sample_rate * block, block, 16)
    return b"".join((b"RIFF", struct.pack("<I", 36 + len(pcm)), b"WAVE", b"fmt ", struct.pack("<I", len(fmt)), fmt,
                     b"data", struct.pack("<I", len(pcm)), pcm))
