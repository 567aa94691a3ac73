"""tf.io: TF's file and record I/O names (tf.io.gfile)."""
from adplace.io import gfile

__all__ = ["gfile"]
