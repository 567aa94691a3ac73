"""adplace.nn: the tf.nn names of ops defined in adplace.ops."""
from adplace.ops.math_ops import relu, sigmoid, tanh

__all__ = ["relu", "sigmoid", "tanh"]
