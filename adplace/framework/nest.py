"""TF's nest.flatten for the structures graph-mode APIs take: lists and tuples in order, dicts by sorted key."""
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
