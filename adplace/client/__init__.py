"""tf.python.client's user-facing pieces: `from adplace.client import timeline` as in TF1 profiling recipes."""
from adplace.client import timeline

__all__ = ["timeline"]
