"""tf.contrib: the few TF1 contrib names adplace provides (tf.contrib.framework, .layers, .training)."""
from adplace.contrib import framework, layers, training

__all__ = ["framework", "layers", "training"]
