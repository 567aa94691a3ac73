"""TF1's module-level graph functions, acting on the default graph: name_scope, device, colocate_with,
control_dependencies, collections and random seeds."""
from __future__ import annotations

import contextlib
import logging

from adplace.framework.graph import Graph, get_default_graph
from adplace.framework.random_seed import get_seed, set_random_seed  # noqa: F401 - re-exported, as before
from adplace.framework.operation import Operation, Tensor

_log = logging.getLogger("adplace")


def graph_of(values) -> Graph:
    """The graph of the Tensors/Operations/Variables in `values`, else the default graph (TF's
    _get_graph_from_inputs). ValueError if they come from different graphs."""
    original = graph = None
    for value in () if values is None else values:
        if isinstance(value, (Tensor, Operation)):
            element = value
        else:
            converter = getattr(value, "_as_graph_element", None)
            element = converter() if callable(converter) else value
        element_graph = getattr(element, "graph", None)
        if not isinstance(element_graph, Graph):
            continue
        if graph is None:
            original, graph = element, element_graph
        elif element_graph is not graph:
            inner = _function_graph_around(graph, element_graph)
            if inner is None:
                raise ValueError(f"{element} must be from the same graph as {original}.")
            original, graph = (original, graph) if inner is graph else (element, element_graph)
    return graph if graph is not None else get_default_graph()


def _function_graph_around(first: Graph, second: Graph) -> Graph | None:
    """Of two graphs, the function graph (framework/function_graph.py) the other one encloses, which captures
    the other's tensors; None when neither encloses the other."""
    for inner, outer in ((first, second), (second, first)):
        graph = getattr(inner, "outer_graph", None)
        while graph is not None:
            if graph is outer:
                return inner
            graph = getattr(graph, "outer_graph", None)
    return None


@contextlib.contextmanager
def name_scope(name: str | None, default_name: str | None = None, values=None):
    """tf.name_scope(name, default_name=None, values=None): a scope in the graph of `values` (made the default).

    `name` (else `default_name`, made unique) names the scope; `name_scope(None)` or `name_scope("")` go back to
    the top level; a name ending in "/" re-enters that scope as is.

        with tf.name_scope(None, "loss", [logits]) as scope:   # scope == "loss/", then "loss_1/", ...
    """
    scope_name = default_name if name is None else name
    if scope_name is None and values is not None:
        raise ValueError(f"At least one of name ({name}) and default_name ({default_name}) must be provided.")
    graph = graph_of(values)
    if graph is get_default_graph():
        with graph.name_scope(scope_name) as scope:
            yield scope
    else:
        with graph.as_default(), graph.name_scope(scope_name) as scope:
            yield scope


@contextlib.contextmanager
def op_scope(values, name: str | None, default_name: str | None = None):
    """Deprecated tf.op_scope(values, name, default_name): tf.name_scope with the arguments in the old order.

        with tf.op_scope([x], None, "norm") as scope:   # scope == "norm/", in x's graph
    """
    _log.warning("tf.op_scope(values, name, default_name) is deprecated, use tf.name_scope(name, default_name, "
                 "values)")
    with name_scope(name, default_name=default_name, values=values) as scope:
        yield scope


def device(device_name_or_function):
    """tf.device on the default graph: string, DeviceSpec, function of the op, or None."""
    return get_default_graph().device(device_name_or_function)


def container(container_name: str):
    """The default graph's `container` block (tf.container)."""
    return get_default_graph().container(container_name)


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


@contextlib.contextmanager
def init_scope():
    """Build ops as outside any control flow (tf.init_scope; graph mode): on the default graph, with the
    control dependencies of enclosing blocks cleared, keeping the name scope and the device scopes.

    TF uses it to lift variable initializers out of function bodies; adplace builds no function graphs, so only the
    control dependencies change.

        with tf.name_scope("layer"), tf.control_dependencies([step]):
            with tf.init_scope():
                c = tf.constant(0.0, name="c")     # c.name == "layer/c:0"; c.op.control_inputs == []
    """
    graph = get_default_graph()
    scope = graph.get_name_scope()
    with graph.as_default(), graph.name_scope(scope + "/" if scope else ""), graph.control_dependencies(None):
        yield


def add_to_collection(name: str, value) -> None:
    get_default_graph().add_to_collection(name, value)


def add_to_collections(names, value) -> None:
    get_default_graph().add_to_collections(names, value)


def get_collection(key: str, scope: str | None = None) -> list:
    return get_default_graph().get_collection(key, scope)


def get_collection_ref(key: str) -> list:
    return get_default_graph().get_collection_ref(key)
