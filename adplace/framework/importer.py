"""tf.import_graph_def: a GraphDef's nodes become ops of the default graph, all or nothing.

Nodes may come in any order (they are sorted by their data and control inputs; a cycle is an error, but for a while
loop's NextIteration -> Merge edges, set once both ends exist); each is built
through the graph's own op-creation path, so adplace's shape and dtype inference runs on it, with attrs turned back
into adplace's values (graph_io.import_attrs). Names get a prefix ("import" by default; a name an op of the graph
already has becomes name_1, ... as in TF), devices and `_class` colocation are kept. The GraphDef's library
(FunctionDefs) is imported first into function graphs registered in the graph's library, and func attrs name them
(framework/function_def.py). If anything fails, the graph is left exactly as it was: no ops, no names, no name
scopes, no functions.

    with tf.Graph().as_default() as g:
        y, = tf.import_graph_def(graph_def, input_map={"x:0": my_x}, return_elements=["y:0"], name="net")
"""
from __future__ import annotations

import heapq

from adplace.framework import function_def, graph_io
from adplace.framework.conversion import convert_to_tensor
from adplace.framework.errors import NotFoundError
from adplace.framework.graph import get_default_graph
from adplace.framework.operation import Operation, Tensor
from adplace.framework.registry import registered_op_types
from adplace.lib import protos


def _as_graph_def(graph_def):
    if isinstance(graph_def, protos.graph_pb2.GraphDef):
        return graph_def
    descriptor = getattr(graph_def, "DESCRIPTOR", None)
    if getattr(descriptor, "full_name", None) in ("tensorflow.GraphDef", "tensorboard.GraphDef"):
        return graph_io.parse_graph_def(graph_def.SerializeToString())  # TF's own class: same wire format
    raise TypeError("Argument `graph_def` must be a GraphDef proto.")


def _split_input(text: str) -> tuple[str, int]:
    """(node name, output index) of a NodeDef input: "x", "x:1" or "^x" (index -1: a control input)."""
    if text.startswith("^"):
        return text[1:], -1
    name, _, index = text.partition(":")
    if index and not index.isdigit():
        raise ValueError(f"Cannot convert {text!r} to a tensor name: the part after ':' must be an int.")
    return name, int(index or 0)


def _canonical(text: str) -> str:
    name, index = _split_input(text)
    return "^" + name if index < 0 else f"{name}:{index}"


def _check_arguments(graph_def, input_map, return_elements) -> tuple[dict, list | None]:
    if input_map is None:
        input_map = {}
    if not isinstance(input_map, dict):
        raise TypeError(f"Argument `input_map` must be a dictionary. Obtained {type(input_map).__name__}")
    if not all(isinstance(k, (str, bytes)) for k in input_map):
        raise TypeError(f"All keys for argument `input_map` must be strings. Obtained keys: {list(input_map)}")
    input_map = {_canonical(k.decode() if isinstance(k, bytes) else k): v for k, v in input_map.items()}
    if return_elements is not None:
        if not all(isinstance(x, (str, bytes)) for x in return_elements):
            raise TypeError(f"Argument `return_elements` must be a list of strings. Obtained {return_elements}.")
        return_elements = [x.decode() if isinstance(x, bytes) else x for x in return_elements]
    return input_map, return_elements


def _sorted_nodes(graph_def, input_map: dict, check_unused: bool = True) -> list:
    """The nodes, each after the nodes it reads (data and control inputs), in GraphDef order where free;
    ValueError for duplicate names, unknown op types or input nodes, cycles and (with `check_unused`) unused
    input_map keys."""
    nodes: dict = {}
    known = set(registered_op_types())
    for node in graph_def.node:
        if node.name in nodes:
            raise ValueError(f"Node '{node.name}' is not unique")
        if graph_io.IMPORT_ALIASES.get(node.op, node.op) not in known:
            raise NotFoundError(None, None, f"Op type not registered '{node.op}' in binary running on adplace "
                                            f"(node '{node.name}'). adplace has no such op type.")
        nodes[node.name] = node
    waiting = {name: 0 for name in nodes}
    readers: dict = {name: [] for name in nodes}
    used = set()
    for node in nodes.values():
        for text in node.input:
            source, index = _split_input(text)
            key = "^" + source if index < 0 else f"{source}:{index}"
            if key in input_map:
                used.add(key)
                if index >= 0:
                    continue
            if source not in nodes:
                raise ValueError(f"Node '{node.name}': Unknown input node '{text}'")
            if _is_back_edge(node, nodes[source]):
                continue
            waiting[node.name] += 1
            readers[source].append(node.name)
    # a key no node reads may still name a node of graph_def (its output index is checked once the op is built)
    unused = [k for k in input_map if k not in used and _split_input(k)[0] not in nodes]
    if unused and check_unused:
        raise ValueError(f"Attempted to map inputs that were not found in graph_def: [{', '.join(unused)}]")
    position = {name: i for i, name in enumerate(nodes)}
    ready = [i for i, name in enumerate(nodes) if not waiting[name]]  # a heap: GraphDef order where free
    names = list(nodes)
    order = []
    while ready:
        name = names[heapq.heappop(ready)]
        order.append(nodes[name])
        for reader in readers[name]:
            waiting[reader] -= 1
            if not waiting[reader]:
                heapq.heappush(ready, position[reader])
    if len(order) != len(nodes):
        raise ValueError(f"{len(nodes) - len(order)} nodes in a cycle")
    return order


def _is_back_edge(node, source) -> bool:
    """A while loop's NextIteration -> Merge edge: the one cycle TF graphs have; the Merge is built first."""
    return node.op == "Merge" and source.op == "NextIteration"


def _slice_spec(node, nodes: dict) -> tuple:
    """The Python index of a StridedSlice(Grad) node whose begin, end and strides are Const nodes."""
    first = 1
    values = []
    for text in node.input[first:first + 3]:
        source = nodes.get(_split_input(text)[0])
        if source is None or source.op != "Const":
            raise ValueError(f"Node '{node.name}' ({node.op}): adplace slices with constant begin, end and "
                             f"strides, but input '{text}' is not a Const node")
        values.append(graph_io.python_attr(source.attr["value"]).reshape(-1).tolist())
    attrs = {k: graph_io.python_attr(v) for k, v in node.attr.items()}
    return graph_io.masks_to_slice_spec(*values, attrs)


def _check_returns(return_elements, nodes: dict) -> None:
    for element in return_elements or ():
        name, index = _split_input(element)
        if name not in nodes:
            kind = "tensor" if ":" in element else "node"
            raise ValueError(f"Requested return {kind} '{element}' not found in graph def")


def import_graph_def(graph_def, input_map: dict | None = None, return_elements: list | None = None,
                     name: str | None = None, op_dict=None, producer_op_list=None) -> list | None:
    """Import `graph_def` into the default graph (tf.import_graph_def).

    `input_map` maps tensor names of graph_def ("x:0", "x") to Tensors of this graph that replace them, and
    "^op" names to Operations (or Tensors) that replace control inputs. `return_elements` names ops ("y") and
    tensors ("y:0") of graph_def to return, in order. `name` prefixes the imported names ("import", made unique,
    by default; "" for none). `op_dict` and `producer_op_list` are accepted for compatibility and unused.

    Raises TypeError for arguments of the wrong kind, NotFoundError for an op type adplace lacks, ValueError
    for a malformed graph (unknown input node, cycle, duplicate name, an input_map key naming no node or output of
    graph_def, colocation with a node graph_def lacks, a node whose attrs or inputs its op type rejects, a library
    function that cannot be built, a func attr naming no function) or a VersionDef adplace cannot read (TF's
    version checks). On any error the graph (and its library) is unchanged.
    """
    del op_dict, producer_op_list
    graph_def = _as_graph_def(graph_def)
    _check_versions(graph_def.versions)
    input_map, return_elements = _check_arguments(graph_def, input_map, return_elements)
    graph = get_default_graph()
    graph._check_not_finalized()
    order = _sorted_nodes(graph_def, input_map)
    nodes = {node.name: node for node in order}
    _check_returns(return_elements, nodes)
    with graph._lock:
        checkpoint, library = graph._checkpoint(), dict(graph._functions)
        try:
            functions = {**graph._functions, **function_def.import_library(graph_def.library, graph)}
            created = _build(graph, order, nodes, input_map, name, functions)
            _check_unread_keys(input_map, created)
            return None if return_elements is None else [_element(created, e) for e in return_elements]
        except BaseException:
            graph._roll_back(checkpoint)
            graph._functions.clear()
            graph._functions.update(library)
            raise


def _check_versions(versions) -> None:
    """TF's checks of a GraphDef's VersionDef against the version adplace implements (ValueError)."""
    from adplace.framework.meta_graph import TF_VERSION

    if versions.producer < graph_io.GRAPH_DEF_VERSION_MIN_PRODUCER:
        raise ValueError(f"GraphDef producer version {versions.producer} below min producer "
                         f"{graph_io.GRAPH_DEF_VERSION_MIN_PRODUCER} supported by TensorFlow {TF_VERSION}.  "
                         f"Please regenerate your graph.")
    if versions.min_consumer > graph_io.GRAPH_DEF_VERSION:
        raise ValueError(f"GraphDef min consumer version {versions.min_consumer} above current version "
                         f"{graph_io.GRAPH_DEF_VERSION} for TensorFlow {TF_VERSION}.  Please upgrade TensorFlow.")
    if graph_io.GRAPH_DEF_VERSION in versions.bad_consumers:
        raise ValueError(f"GraphDef disallows consumer version {graph_io.GRAPH_DEF_VERSION}.  Please upgrade "
                         f"TensorFlow: this version is likely buggy.")


def _check_unread_keys(input_map: dict, created: dict) -> None:
    """An input_map key no node reads must still name an output of its (imported) node."""
    missing = [k for k in input_map if not k.startswith("^") and _split_input(k)[0] in created
               and _split_input(k)[1] >= len(created[_split_input(k)[0]]._outputs)]
    if missing:
        raise ValueError(f"Attempted to map inputs that were not found in graph_def: [{', '.join(missing)}]")


def _build(graph, order: list, nodes: dict, input_map: dict, name: str | None, functions: dict) -> dict:
    with graph.name_scope("import" if name is None else name) as scope:
        input_map = {k: v if k.startswith("^") or isinstance(v, (Tensor, Operation)) else convert_to_tensor(v)
                     for k, v in input_map.items()}
    with graph.name_scope(None):  # imported names are the prefix plus the node's name, whatever scope is open
        created: dict = {}
        renamed = _unique_names(graph, order, scope)
        back_edges: list = []  # (Merge op, input index, NextIteration node name, output index)
        for node in order:
            created[node.name] = _build_node(graph, node, nodes, created, input_map, scope, renamed, back_edges,
                                             functions)
        for op, at, source, index in back_edges:
            op._update_input(at, created[source]._outputs[index])
    return created


def _with_scopes(names) -> set:
    """The names and the name scopes above them ("a/b/c": "a", "a/b", "a/b/c")."""
    out: set = set()
    for name in names:
        parts = name.split("/")
        out.update("/".join(parts[:i]) for i in range(1, len(parts) + 1))
    return out


def _unique_names(graph, order: list, scope: str) -> dict:
    """{node name: the name to build it under}: a name that an op of the graph has, or a name scope an op of the
    graph sits in, becomes name_1, name_2, ... avoiding graph_def's own names too (TF's uniquify_names; an empty
    name scope does not count)."""
    existing = _with_scopes(graph._ops_by_name)
    imported = _with_scopes(scope + node.name for node in order)
    renamed = {}
    for node in order:
        candidate, i = node.name, 0
        while scope + candidate in existing or (i and scope + candidate in imported):
            i += 1
            candidate = f"{node.name}_{i}"
        renamed[node.name] = candidate
    return renamed


def _build_node(graph, node, nodes: dict, created: dict, input_map: dict, scope: str, renamed: dict,
                back_edges: list, functions: dict) -> Operation:
    data, control, later = [], [], []
    for text in node.input:
        source, index = _split_input(text)
        key = "^" + source if index < 0 else f"{source}:{index}"
        if index < 0:
            mapped = input_map.get(key, created[source])
            control.append(mapped._op if isinstance(mapped, Tensor) else mapped)
        elif key in input_map:
            data.append(input_map[key])
        elif source not in created and _is_back_edge(node, nodes[source]):
            later.append((len(data), source, index))
            data.append(None)  # built with another input in its place (TF's while_loop does the same)
        else:
            outputs = created[source]._outputs
            if index >= len(outputs):
                raise ValueError(f"Node '{node.name}': Connecting to invalid output {index} of source node "
                                 f"{source} which has {len(outputs)} outputs.")
            data.append(outputs[index])
    if later:
        stand_in = next((t for t in data if t is not None), None)
        if stand_in is None:
            raise ValueError(f"Node '{node.name}' (Merge) has no input from outside its loop")
        data = [stand_in if t is None else t for t in data]
    try:
        attrs = graph_io.import_attrs(node, functions)
        if node.op in graph_io.SLICE_OPS:
            attrs = {"slice_spec": _slice_spec(node, nodes), "T": attrs["T"]}
            data = data[:1] + data[4:]
        op_type = graph_io.IMPORT_ALIASES.get(node.op, node.op)
        op = graph._create_op_internal(op_type, data, attrs, scope + renamed.get(node.name, node.name) + "/",
                                       compute_device=not node.device)
    except (TypeError, ValueError, KeyError) as e:
        raise ValueError(f"Node '{node.name}' ({node.op}) cannot be imported: {e}") from e
    back_edges.extend((op, at, source, index) for at, source, index in later)
    if node.device:
        op._set_device(node.device)
    if control:
        op._add_control_inputs(control)
    groups = list(node.attr["_class"].list.s) if "_class" in node.attr else []
    for group in groups:
        target = group[5:].decode(errors="replace")
        if group.startswith(b"loc:@") and target not in nodes:
            raise ValueError(f"Node '{node.name}' expects to be colocated with unknown node '{target}'")
    if groups:
        op._colocation = tuple(sorted({_prefixed_group(g, scope, renamed) for g in groups}))
        if not op._device:
            _take_colocated_device(op, op._colocation, graph)
    return op


def _prefixed_group(group: bytes, scope: str, renamed: dict) -> bytes:
    if not group.startswith(b"loc:@"):
        return group
    target = group[5:].decode(errors="replace")
    return b"loc:@" + (scope + renamed.get(target, target)).encode()


def _take_colocated_device(op: Operation, groups: tuple, graph) -> None:
    """An op colocated with a placed op takes its device, as TF's importer does."""
    for group in groups:
        other = graph._ops_by_name.get(group[5:].decode(errors="replace"))
        if other is not None and other._device:
            op._set_device(other._device_text)
            return


def _element(created: dict, element: str):
    name, index = _split_input(element)
    op = created[name]
    if ":" not in element:
        return op
    if index >= len(op._outputs):
        raise ValueError(f"Requested return tensor '{element}' not found in graph def")
    return op._outputs[index]
