"""TF1's module-level graph functions, acting on the default graph: name_scope, device, colocate_with,
control_dependencies, collections and random seeds."""
from __future__ import annotations

import contextlib

from adplace.framework.graph import Graph, get_default_graph


def graph_of(values) -> Graph:
    """The graph of the first Tensor/Operation/Variable in `values`, else the default graph."""
    for v in values or ():
        graph = getattr(v, "graph", None)
        if isinstance(graph, Graph):
            return graph
    return get_default_graph()


@contextlib.contextmanager
def name_scope(name: str | None, default_name: str | None = None, values=None):
    """tf.name_scope(name, default_name=None, values=None): a scope in the graph of `values` (made the default)."""
    graph = graph_of(values)
    if graph is get_default_graph():
        with graph.name_scope(default_name if name is None else name) as scope:
            yield scope
    else:
        with graph.as_default(), graph.name_scope(default_name if name is None else name) as scope:
            yield scope


def device(device_name_or_function):
    """tf.device on the default graph: string, DeviceSpec, function of the op, or None."""
    return get_default_graph().device(device_name_or_function)


def colocate_with(op, ignore_existing: bool = False):
    """Put ops created in this block on whatever device `op` ends up on.

    Keeps a variable's assign and read ops next to it, so a step never copies a variable.

        with tf.colocate_with(v):
            inc = tf.assign_add(v, 1)     # placed where v is placed
    """
    return get_default_graph().colocate_with(op, ignore_existing)


def control_dependencies(control_inputs):
    """tf.control_dependencies on the default graph: only ops created in the block wait for `control_inputs`."""
    return get_default_graph().control_dependencies(control_inputs)


def add_to_collection(name: str, value) -> None:
    get_default_graph().add_to_collection(name, value)


def add_to_collections(names, value) -> None:
    get_default_graph().add_to_collections(names, value)


def get_collection(key: str, scope: str | None = None) -> list:
    return get_default_graph().get_collection(key, scope)


def get_collection_ref(key: str) -> list:
    return get_default_graph().get_collection_ref(key)


def get_seed(op_seed):
    """(graph seed, op seed) for a random op, TF's rules: both None means nondeterministic."""
    graph = get_default_graph()
    if graph.seed is not None:
        return graph.seed, (len(graph._ops) if op_seed is None else op_seed)
    if op_seed is not None:
        return 87654321, op_seed
    return None, None


def set_random_seed(seed: int) -> None:
    """Graph-level seed: with it, every random op gets a reproducible stream (tf.set_random_seed)."""
    get_default_graph().seed = seed
