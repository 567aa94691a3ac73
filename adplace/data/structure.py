"""The structure of tf.data elements, as TF 1.15's tf.data nest sees it: tuples (namedtuples too) and dicts nest,
while a list is one component (converted to a tensor, so `from_tensor_slices([1, 2])` has one int32 component).

    spec = structure_of((x, {"label": y}))     # (Spec(x.dtype, x.shape), {"label": Spec(...)})
    flatten(spec)                              # [Spec, Spec]: the components, in TF's order
    pack(spec, values)                         # the values in spec's structure
"""
from __future__ import annotations

from adplace.framework import dtypes as _dtypes
from adplace.framework.conversion import convert_to_tensor
from adplace.framework.operation import Tensor
from adplace.framework.sparse_tensor import SparseTensor
from adplace.framework.tensor_shape import TensorShape, as_shape


class Spec:
    """One component: its dtype and static shape (TF 1.15's output_types and output_shapes leaves)."""

    __slots__ = ("dtype", "shape")

    def __init__(self, dtype, shape):
        self.dtype, self.shape = _dtypes.as_dtype(dtype).base_dtype, as_shape(shape)

    def __repr__(self) -> str:
        return f"Spec({self.dtype.name}, {self.shape})"


def _is_nest(value) -> bool:
    return isinstance(value, (tuple, dict))


def flatten(structure) -> list:
    """The leaves of `structure`: tuples in order, dicts by sorted key; anything else (lists too) is a leaf."""
    if isinstance(structure, tuple):
        return [leaf for item in structure for leaf in flatten(item)]
    if isinstance(structure, dict):
        return [leaf for key in sorted(structure) for leaf in flatten(structure[key])]
    return [structure]


def pack(structure, flat) -> object:
    """`flat`'s items in the nesting of `structure` (flatten's inverse)."""
    flat = list(flat)
    packed, rest = _pack(structure, flat)
    if rest:
        raise ValueError(f"Could not pack sequence: the structure has {len(flat) - len(rest)} components, but "
                         f"{len(flat)} values were given.")
    return packed


def _pack(structure, flat: list):
    if not _is_nest(structure):
        if not flat:
            raise ValueError("Could not pack sequence: too few values for the structure.")
        return flat[0], flat[1:]
    keys = sorted(structure) if isinstance(structure, dict) else range(len(structure))
    items = []
    for key in keys:
        item, flat = _pack(structure[key], flat)
        items.append(item)
    if isinstance(structure, dict):
        return type(structure)(zip(keys, items)), flat
    if hasattr(structure, "_fields"):
        return type(structure)(*items), flat
    return tuple(items), flat


def map_structure(fn, structure):
    return pack(structure, [fn(leaf) for leaf in flatten(structure)])


def normalize(value, name: str = "component"):
    """`value` with every leaf a Tensor (lists and arrays converted whole). SparseTensors are not supported yet."""
    def convert(leaf):
        if isinstance(leaf, SparseTensor):
            raise TypeError("tf.data elements that are SparseTensors are not supported by adplace yet.")
        return leaf if isinstance(leaf, Tensor) else convert_to_tensor(leaf, name=name)
    return map_structure(convert, value)


def structure_of(tensors) -> object:
    """The Specs of a structure of tensors."""
    return map_structure(lambda t: Spec(t.dtype, t.shape), tensors)


def types(spec):
    return map_structure(lambda s: s.dtype, spec)


def shapes(spec):
    return map_structure(lambda s: s.shape, spec)


def classes(spec):
    return map_structure(lambda s: Tensor, spec)


def from_types_and_shapes(output_types, output_shapes=None) -> object:
    """Specs from TF's (output_types, output_shapes) pair; shapes unknown where not given."""
    if output_shapes is None:
        return map_structure(lambda t: Spec(t, TensorShape(None)), output_types)
    flat_types, flat_shapes = flatten(output_types), _flatten_up_to(output_types, output_shapes)
    return pack(output_types, [Spec(t, s) for t, s in zip(flat_types, flat_shapes)])


def _flatten_up_to(structure, values) -> list:
    """`values` flattened to `structure`'s leaves (a shape given as a list stays one leaf)."""
    if not _is_nest(structure):
        return [values]
    if isinstance(structure, dict):
        if not isinstance(values, dict) or sorted(values) != sorted(structure):
            raise ValueError(f"The two structures don't have the same keys: {structure} and {values}")
        return [leaf for key in sorted(structure) for leaf in _flatten_up_to(structure[key], values[key])]
    if not isinstance(values, (tuple, list)) or len(values) != len(structure):
        raise ValueError(f"The two structures don't have the same sequence length: {structure} and {values}")
    return [leaf for s, v in zip(structure, values) for leaf in _flatten_up_to(s, v)]


def same_structure(first, second) -> bool:
    try:
        return _shape(first) == _shape(second)
    except TypeError:
        return False


def _shape(structure):
    if isinstance(structure, dict):
        return ("dict", tuple((k, _shape(structure[k])) for k in sorted(structure)))
    if isinstance(structure, tuple):
        return ("tuple", tuple(_shape(item) for item in structure))
    return None


def types_text(spec) -> str:
    return str(map_structure(lambda s: s.dtype.name, spec))
