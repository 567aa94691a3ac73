"""tf.contrib: the few TF1 contrib names adplace provides (tf.contrib.framework, .layers, .opt, .training)."""
from adplace.contrib import framework, layers, opt, training

__all__ = ["framework", "layers", "opt", "training"]
