"""tf.contrib: the few TF1 contrib names adplace provides (tf.contrib.framework, .layers, .opt, .training, and
.data, which is tf.data.experimental)."""
from adplace.contrib import framework, layers, opt, training
from adplace.data import experimental as data

__all__ = ["data", "framework", "layers", "opt", "training"]
