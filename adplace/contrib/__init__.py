"""tf.contrib: the few TF1 contrib names adplace provides (tf.contrib.framework, tf.contrib.training)."""
from adplace.contrib import framework, training

__all__ = ["framework", "training"]
