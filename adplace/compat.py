"""tf.compat: TF's string and number helpers, and `tf.compat.v1`, which is adplace itself.

adplace is TF1's graph mode, so code written for TF2's compatibility layer runs as it is:

    import adplace.compat.v1 as tf       # the same module as `import adplace as tf`
    tf.disable_v2_behavior()             # a documented no-op: graph mode is the only mode
    x = tf.placeholder(tf.float32, [None, 3])
"""
from __future__ import annotations

import numbers
import sys

import numpy as np

bytes_or_text_types = (bytes, str)
integral_types = (numbers.Integral, np.integer)
real_types = (numbers.Real, np.integer, np.floating)
complex_types = (numbers.Complex, np.number)


def as_bytes(bytes_or_text, encoding: str = "utf-8") -> bytes:
    """`bytes_or_text` as bytes, text encoded with `encoding` (tf.compat.as_bytes).

    Raises:
      TypeError: not bytes, bytearray or str ("Expected binary or unicode string, got 1").
    """
    if isinstance(bytes_or_text, bytearray):
        return bytes(bytes_or_text)
    if isinstance(bytes_or_text, str):
        return bytes_or_text.encode(encoding)
    if isinstance(bytes_or_text, bytes):
        return bytes_or_text
    raise TypeError(f"Expected binary or unicode string, got {bytes_or_text!r}")


def as_text(bytes_or_text, encoding: str = "utf-8") -> str:
    """`bytes_or_text` as str, bytes decoded with `encoding` (tf.compat.as_text, also as_str).

    Raises:
      TypeError: not bytes or str ("Expected binary or unicode string, got 1").
    """
    if isinstance(bytes_or_text, str):
        return bytes_or_text
    if isinstance(bytes_or_text, bytes):
        return bytes_or_text.decode(encoding)
    raise TypeError(f"Expected binary or unicode string, got {bytes_or_text!r}")


as_str = as_text


def as_str_any(value) -> str:
    """`value` as str: bytes decoded, anything else through str() (tf.compat.as_str_any)."""
    return as_str(value) if isinstance(value, bytes) else str(value)


def path_to_str(path):
    """A path-like object (pathlib.Path, ...) as str; other values unchanged (tf.compat.path_to_str)."""
    return as_str_any(path.__fspath__()) if hasattr(path, "__fspath__") else path


def disable_eager_execution() -> None:
    """A no-op (tf.compat.v1.disable_eager_execution): adplace always builds graphs, as TF1 does by default."""


def disable_v2_behavior() -> None:
    """A no-op (tf.compat.v1.disable_v2_behavior): adplace has TF1 behaviour only."""


def executing_eagerly() -> bool:
    """False: ops build graph nodes and run in a Session (tf.executing_eagerly)."""
    return False


# tf.compat.v1 is the package itself; registered as a module so `import adplace.compat.v1 as tf` works too.
v1 = sys.modules[__name__.rpartition(".")[0]]
sys.modules[f"{__name__}.v1"] = v1
