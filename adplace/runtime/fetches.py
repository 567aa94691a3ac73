"""Fetches: what Session.run accepts as `fetches` (nested lists, tuples, dicts, namedtuples of tensors, ops and
names, as TF's fetch mappers do), flattened to graph elements and rebuilt from the values a plan returns.

    mapper = FetchMapper(graph, {"loss": loss, "step": [train_op]})
    mapper.elements                      # [loss, train_op]: what the plan computes
    mapper.build([0.25])                 # {"loss": 0.25, "step": [None]}
"""
from __future__ import annotations

import collections

from adplace.framework.operation import Operation


class FetchMapper:
    """Flattens a nested fetch structure (lists, tuples, dicts, namedtuples) and rebuilds it from flat values."""

    def __init__(self, graph, fetches):
        self.elements: list = []
        self._num_tensors = 0
        self._build = self._parse(graph, fetches)

    def _parse(self, graph, fetch):
        if fetch is None:
            raise TypeError(f"Fetch argument None has invalid type {type(None)}")
        if isinstance(fetch, (list, tuple)):
            builders = [self._parse(graph, f) for f in fetch]
            if isinstance(fetch, tuple) and hasattr(fetch, "_fields"):
                kind = type(fetch)
                return lambda values: kind(*[b(values) for b in builders])
            kind = type(fetch)
            return lambda values: kind(b(values) for b in builders)
        if isinstance(fetch, dict):
            keys, builders = list(fetch), [self._parse(graph, f) for f in fetch.values()]
            if isinstance(fetch, collections.defaultdict):
                kind, factory = type(fetch), fetch.default_factory
                return lambda values: _filled(kind(factory), keys, builders, values)
            kind = type(fetch)
            return lambda values: kind(zip(keys, (b(values) for b in builders)))
        try:
            element = graph.as_graph_element(fetch, allow_tensor=True, allow_operation=True)
        except TypeError as e:
            raise TypeError(f"Fetch argument {fetch!r} has invalid type {type(fetch)}, must be a string or Tensor. "
                            f"({e})") from None
        except ValueError as e:
            raise ValueError(f"Fetch argument {fetch!r} cannot be interpreted as a Tensor. ({e})") from None
        except KeyError as e:
            raise ValueError(f"Fetch argument {fetch!r} cannot be interpreted as a Tensor. ({e.args[0]})") from None
        self.elements.append(element)
        if isinstance(element, Operation):
            return lambda values: None
        index = self._num_tensors  # plans return values for tensor fetches only
        self._num_tensors += 1
        return lambda values: values[index]

    def build(self, flat: list):
        return self._build(flat)


def _filled(mapping: dict, keys: list, builders: list, values: list) -> dict:
    for key, build in zip(keys, builders):
        mapping[key] = build(values)
    return mapping


def structure_key(fetches) -> object:
    """A hashable key for a fetch structure: the same structure of the same elements gives the same key."""
    if isinstance(fetches, (list, tuple)):
        return (type(fetches), tuple(structure_key(f) for f in fetches))
    if isinstance(fetches, dict):
        return (type(fetches), tuple(fetches), tuple(structure_key(f) for f in fetches.values()))
    return fetches
