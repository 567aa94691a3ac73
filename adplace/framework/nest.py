"""TF's nest for the structures graph-mode APIs take: lists and tuples in order, dicts by sorted key."""
from __future__ import annotations


def flatten(structure) -> list:
    """The leaves of `structure` (anything that is not a list, tuple or dict is a leaf), depth first.

        flatten((a, [b, {"y": d, "x": c}]))    # [a, b, c, d]
    """
    if isinstance(structure, (list, tuple)):
        return [leaf for item in structure for leaf in flatten(item)]
    if isinstance(structure, dict):
        return [leaf for key in sorted(structure) for leaf in flatten(structure[key])]
    return [structure]


def _is_namedtuple(value) -> bool:
    return isinstance(value, tuple) and hasattr(value, "_fields")


def _children(structure) -> list:
    if isinstance(structure, dict):
        return [structure[key] for key in sorted(structure)]
    return list(structure)


def is_sequence(value) -> bool:
    return isinstance(value, (list, tuple, dict))


def pack_sequence_as(structure, flat_sequence):
    """`flat_sequence`'s items in the shape of `structure` (flatten's inverse; namedtuples and dicts kept).

        pack_sequence_as((a, [b, {"x": c}]), [1, 2, 3])    # (1, [2, {"x": 3}])
    """
    flat = list(flat_sequence)
    if len(flat) != len(flatten(structure)):
        raise ValueError(f"Could not pack sequence. Structure had {len(flatten(structure))} elements, but "
                         f"flat_sequence had {len(flat)} elements.")
    packed, rest = _pack(structure, flat)
    return packed


def _pack(structure, flat: list):
    if not is_sequence(structure):
        return flat[0], flat[1:]
    items = []
    for child in _children(structure):
        item, flat = _pack(child, flat)
        items.append(item)
    if isinstance(structure, dict):
        return type(structure)(zip(sorted(structure), items)), flat
    if _is_namedtuple(structure):
        return type(structure)(*items), flat
    return type(structure)(items), flat


def _shape_of(structure, check_types: bool = False):
    """The nesting of `structure` with every leaf replaced by None, for comparing structures (with the sequence
    types when `check_types`)."""
    if not is_sequence(structure):
        return None
    kind = type(structure) if check_types else "dict" if isinstance(structure, dict) else "sequence"
    keys = tuple(sorted(structure)) if isinstance(structure, dict) else len(structure)
    return (kind, keys, tuple(_shape_of(c, check_types) for c in _children(structure)))


def assert_same_structure(first, second, check_types: bool = False) -> None:
    """ValueError, with TF's wording, unless both have the same nesting (leaf values may differ); with
    `check_types`, TypeError unless their sequences have the same types too (a list is not a tuple)."""
    if _shape_of(first) != _shape_of(second):
        n_first, n_second = len(flatten(first)), len(flatten(second))
        detail = "" if n_first == n_second else (
            f"\n\nMore specifically: The two structures don't have the same number of elements. First structure "
            f"({n_first} elements), second structure ({n_second} elements).")
        raise ValueError(f"The two structures don't have the same nested structure.\n\nFirst structure: {first!r}"
                         f"\n\nSecond structure: {second!r}{detail}")
    if check_types and _shape_of(first, True) != _shape_of(second, True):
        raise TypeError(f"The two structures don't have the same sequence type. First structure has type "
                        f"{type(first)}, while second structure has type {type(second)}.")


def map_structure(fn, *structures):
    """`fn` applied to the leaves of `structures` (same nesting), packed like the first."""
    for other in structures[1:]:
        assert_same_structure(structures[0], other)
    return pack_sequence_as(structures[0], [fn(*leaves) for leaves in zip(*map(flatten, structures))])
