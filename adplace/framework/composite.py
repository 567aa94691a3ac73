"""Values made of several tensors (tf.IndexedSlices, tf.SparseTensor): what sessions need to fetch and feed them.

A composite names its component tensors in the order of its value type's fields; `Session.run` fetches the
components and returns `_value_type(*their values)` (None for a missing component), and a feed of a composite
unpacks the fed value (the value type or any tuple in that order) onto the components.

    st = tf.sparse_placeholder(tf.float32)
    sess.run(st, {st: tf.SparseTensorValue([[0, 1]], [2.0], [2, 3])})   # SparseTensorValue(indices=..., ...)
"""
from __future__ import annotations


class CompositeTensor:
    """Base class of the values that are several tensors; subclasses set `_value_type` and `_components`."""

    _value_type: type = tuple

    def _components(self) -> tuple:
        """The component tensors in `_value_type`'s field order; None for one that is absent."""
        raise NotImplementedError

    def _value_from(self, values) -> object:
        """The fetched value: `_value_type` built from the components' values (None stays None)."""
        return self._value_type(*values)


def is_composite(value) -> bool:
    return isinstance(value, CompositeTensor)
