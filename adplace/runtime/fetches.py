"""Fetches: what Session.run accepts as `fetches` (nested lists, tuples, namedtuples, dicts and other mappings, attrs
classes, of tensors, ops and names, as TF's fetch mappers do), flattened to graph elements and rebuilt from the values
a plan returns.

    mapper = FetchMapper(graph, {"loss": loss, "step": [train_op]})
    mapper.elements                      # [loss, train_op]: what the plan computes
    mapper.build([0.25])                 # {"loss": 0.25, "step": [None]}

Composite tensors (tf.SparseTensor, tf.IndexedSlices) are registered here as TF registers them: fetched as their
value type (SparseTensorValue, IndexedSlicesValue) and fed from one, or from any tuple in its field order.
"""
from __future__ import annotations

import collections
from collections.abc import Callable, Mapping
from operator import itemgetter

from adplace.framework.composite import CompositeTensor
from adplace.framework.operation import Operation, Tensor


# (type, fetch_function, feed_function, feed_function_for_partial_run), newest first (TF's _REGISTERED_EXPANSIONS);
# the composite tensors' entry (registered below) comes last.
REGISTERED_EXPANSIONS: list[tuple] = []


def register_session_run_conversion_functions(tensor_type: type, fetch_function, feed_function=None,
                                              feed_function_for_partial_run=None) -> None:
    """Teach Session.run to fetch and feed objects of `tensor_type` (TF's session function of this name).

    `fetch_function(obj)` returns `(tensors, contract)`: the run fetches `tensors` and returns `contract(values)`.
    `feed_function(obj, value)` returns the `(tensor, value)` pairs to feed for `{obj: value}`, and
    `feed_function_for_partial_run(obj)` the tensors `partial_run_setup(feeds=[obj])` declares.

        register_session_run_conversion_functions(Pair, lambda p: ([p.a, p.b], tuple))
        sess.run(Pair(x, y))          # (x value, y value)

    Raises:
      ValueError: `tensor_type` (or a subclass of it) is registered already.
    """
    for registered in REGISTERED_EXPANSIONS:
        if issubclass(registered[0], tensor_type):
            raise ValueError(f"{tensor_type} has already been registered so ignore it.")
    REGISTERED_EXPANSIONS.insert(0, (tensor_type, fetch_function, feed_function, feed_function_for_partial_run))


def registered_expansion(obj, position: int):
    """The function at `position` (1 fetch, 2 feed, 3 partial-run feed) registered for obj's type, or None."""
    for expansion in REGISTERED_EXPANSIONS:
        if isinstance(obj, expansion[0]):
            return expansion[position]
    return None


def _composite_fetch(composite: CompositeTensor) -> tuple[list, object]:
    """The component tensors to fetch (an absent one, e.g. a None dense_shape, is skipped) and how to build the value
    type from their values (None where a component is absent)."""
    components = composite._components()
    present = [c for c in components if c is not None]
    if len(present) == len(components):
        return present, composite._value_from

    def contract(values):
        fetched = iter(values)
        return composite._value_from([None if c is None else next(fetched) for c in components])
    return present, contract


def _composite_feed(composite: CompositeTensor, value) -> list[tuple]:
    """(component, value) pairs for a fed composite: `value` is its value type or a tuple in that field order; the
    value of an absent component is dropped (so an IndexedSlices without dense_shape takes (values, indices))."""
    components = composite._components()
    present = sum(c is not None for c in components)
    expected = f"a {composite._value_type.__name__} or a tuple " \
        f"({', '.join(f for f, c in zip(composite._value_type._fields, components) if c is not None)})"
    if not isinstance(value, (tuple, list)):
        raise TypeError(f"The value fed for {type(composite).__name__} {composite!r} must be {expected}, got "
                        f"{type(value).__name__}.")
    if len(value) not in (present, len(components)):
        raise ValueError(f"The value fed for {type(composite).__name__} {composite!r} must be {expected}, got a "
                         f"{type(value).__name__} of {len(value)} elements.")
    return [(c, v) for c, v in zip(components, value) if c is not None]


def _composite_partial_feeds(composite: CompositeTensor) -> list:
    return [c for c in composite._components() if c is not None]


def _attrs_fields(cls) -> tuple | None:
    """The fields of an attrs class (TF's nest treats its instances as structures), else None."""
    return getattr(cls, "__attrs_attrs__", None)


def graph_element(graph, name_or_element, allow_operation: bool = True):
    """`graph.as_graph_element`, also for bytes names (b"c:0"), as TF's accepts both string types."""
    if isinstance(name_or_element, bytes):
        name_or_element = name_or_element.decode()
    return graph.as_graph_element(name_or_element, allow_tensor=True, allow_operation=allow_operation)


def check_fetchable(graph, element) -> None:
    """TF's error for fetching an op (or a tensor of an op) marked with `graph.prevent_fetching`."""
    if not graph.is_fetchable(element):
        op = element._op if isinstance(element, Tensor) else element
        raise ValueError(f"Operation {op.name!r} has been marked as not fetchable. Typically this happens when it is "
                         f"defined in another function or code block. Use return values, explicit Python locals or "
                         f"TensorFlow collections to access it.")


class FetchMapper:
    """Flattens a nested fetch structure and rebuilds it, with the same types, from the flat values of its tensors."""

    def __init__(self, graph, fetches):
        self.elements: list = []
        self._num_tensors = 0
        self._leaves: dict = {}  # id -> builder of a single tensor (held here, so no other builder reuses the id)
        self.build: Callable = self._parse(graph, fetches)  # flat tensor values -> the fetch structure

    @property
    def tensors(self) -> list:
        """The tensor elements, in the order `build` expects their values."""
        return [e for e in self.elements if isinstance(e, Tensor)]

    def _parse(self, graph, fetch):
        if fetch is None:
            raise TypeError(f"Fetch argument None has invalid type {type(None)}")
        if isinstance(fetch, (list, tuple)):
            builders = [self._parse(graph, f) for f in fetch]
            kind = type(fetch)
            if (kind is tuple or isinstance(fetch, list)) and all(id(b) in self._leaves for b in builders):
                # every element a tensor: the values of consecutive fetches, taken as one slice
                start, stop = self._num_tensors - len(builders), self._num_tensors
                if kind is tuple:
                    return lambda values: tuple(values[start:stop])
                return itemgetter(slice(start, stop))
            if isinstance(fetch, list):  # TF returns a plain list for any list subclass
                return lambda values: [b(values) for b in builders]
            if kind is tuple:
                return lambda values: tuple(b(values) for b in builders)
            return lambda values: kind(*[b(values) for b in builders])  # a namedtuple
        if isinstance(fetch, Mapping):
            keys, builders = list(fetch), [self._parse(graph, f) for f in fetch.values()]
            kind = type(fetch)
            if isinstance(fetch, collections.defaultdict):
                factory = fetch.default_factory
                return lambda values: _filled(kind(factory), keys, builders, values)
            if kind is dict or kind is collections.OrderedDict:
                return lambda values: kind(zip(keys, (b(values) for b in builders)))
            return lambda values: _filled(kind(), keys, builders, values)
        fields = _attrs_fields(type(fetch))
        if fields is not None:
            builders = [self._parse(graph, getattr(fetch, a.name)) for a in fields]
            kind = type(fetch)
            return lambda values: kind(*[b(values) for b in builders])
        expand = registered_expansion(fetch, 1) if REGISTERED_EXPANSIONS else None
        if expand is not None:
            parts, contract = expand(fetch)
            builders = [self._parse(graph, part) for part in parts]
            return lambda values: contract([b(values) for b in builders])
        try:
            element = graph_element(graph, fetch)
        except TypeError as e:
            raise TypeError(f"Fetch argument {fetch!r} has invalid type {type(fetch)}, must be a string or Tensor. "
                            f"({e})") from None
        except ValueError as e:
            raise ValueError(f"Fetch argument {fetch!r} cannot be interpreted as a Tensor. ({e})") from None
        except KeyError as e:
            raise ValueError(f"Fetch argument {fetch!r} cannot be interpreted as a Tensor. ({e.args[0]})") from None
        check_fetchable(graph, element)
        self.elements.append(element)
        if isinstance(element, Operation):
            return lambda values: None
        index = self._num_tensors  # plans return values for tensor fetches only
        self._num_tensors += 1
        leaf = itemgetter(index)
        self._leaves[id(leaf)] = leaf
        return leaf

register_session_run_conversion_functions(CompositeTensor, _composite_fetch, _composite_feed,
                                          _composite_partial_feeds)


def _filled(mapping, keys: list, builders: list, values: list):
    for key, build in zip(keys, builders):
        mapping[key] = build(values)
    return mapping


_LEAVES = frozenset({Tensor, Operation, str})


def structure_key(fetches) -> object:
    """A hashable key for a fetch structure: the same structure of the same elements gives the same key.

    Runs on every Session.run, so a single tensor or name returns at the first test, and a list, tuple or mapping
    of them without a call per element (their keys are themselves; a plain list of them is keyed by the tuple of
    its elements, which no other structure's key can equal: those start with a type).
    """
    cls = type(fetches)
    if cls is Tensor or cls is Operation or cls is str:
        return fetches
    if cls is list and _LEAVES.issuperset(map(type, fetches)):  # the common list: its elements, as a plain tuple
        return tuple(fetches)                                     # (no other key is a tuple of leaves)
    if isinstance(fetches, (list, tuple)):
        if _LEAVES.issuperset(map(type, fetches)):
            return (cls, tuple(fetches))
        return (cls, tuple(structure_key(f) for f in fetches))
    if isinstance(fetches, dict) or isinstance(fetches, Mapping):
        values = fetches.values()
        if _LEAVES.issuperset(map(type, values)):
            return (cls, tuple(fetches), tuple(values))
        return (cls, tuple(fetches), tuple(structure_key(f) for f in values))
    fields = _attrs_fields(cls)
    if fields is not None:
        return (cls, tuple(structure_key(getattr(fetches, a.name)) for a in fields))
    return fetches
