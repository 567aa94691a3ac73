"""MetaGraphDef: a graph with its collections and saver, exported to and imported from TF's `.meta` files.

    meta = export_scoped_meta_graph("model.meta", saver_def=saver.as_saver_def())
    var_list = import_scoped_meta_graph("model.meta", import_scope="copy")   # {"w": <the imported w>, ...}

Collections travel as TF writes them (CollectionDef): Operations and Tensors as a node_list of names, ints as an
int64_list, floats as a float_list, strings as a bytes_list, and objects with a registered proto function (variables:
VariableDef, savers: SaverDef, later queue runners and control-flow contexts) as a bytes_list of serialized protos;
items of other kinds are left out with TF's warning. Ops modules register their proto functions here, as TF's do
with `ops.register_proto_function`, so this module never imports ops/.

An import checks everything it will need (the GraphDef, every collection's names and protos) before it changes
the graph; the GraphDef import itself leaves the graph as it was when it fails.
"""
from __future__ import annotations

import logging
import os
import re
from typing import Callable

from adplace.framework import errors
from adplace.framework.graph import Graph, GraphKeys, get_default_graph
from adplace.framework.operation import Operation, Tensor
from adplace.lib import protos

_log = logging.getLogger("adplace")

# Variable collections share Variable objects on import: an imported variable is built once however many of these
# collections hold it, trainable ones first (TF's GraphKeys._VARIABLE_COLLECTIONS; GLOBAL_STEP is not one).
VARIABLE_COLLECTIONS = (GraphKeys.TRAINABLE_VARIABLES, GraphKeys.GLOBAL_VARIABLES, GraphKeys.LOCAL_VARIABLES,
                        GraphKeys.METRIC_VARIABLES, GraphKeys.MODEL_VARIABLES, "moving_average_variables",
                        "concatenated_variables", "trainable_resource_variables")

# The TF release whose graphs and files adplace writes (MetaInfoDef.tensorflow_version).
TF_VERSION = "1.15.0"
_SAVE_AND_RESTORE_OPS = frozenset({"SaveV2", "Save", "SaveSlice", "LegacySave", "LegacySaveSlice", "RestoreV2",
                                   "Restore", "RestoreSlice", "LegacyRestore", "LegacyRestoreSlice"})

_PROTO_FUNCTIONS: dict[str, tuple[Callable, Callable | None, Callable | None]] = {}


def register_proto_function(collection_name: str, proto_type: Callable, to_proto: Callable | None = None,
                            from_proto: Callable | None = None) -> None:
    """How the items of a collection become protos and back (TF's ops.register_proto_function). `proto_type` is
    the message class or a function returning it (so that protos load on first use); `to_proto(item,
    export_scope=)` returns a proto or None (item outside the scope), `from_proto(proto, import_scope=)` the item."""
    _PROTO_FUNCTIONS[collection_name] = (proto_type, to_proto, from_proto)


def _proto_functions(key: str):
    proto_type, to_proto, from_proto = _PROTO_FUNCTIONS.get(key, (None, None, None))
    if proto_type is not None and not isinstance(proto_type, type):
        proto_type = proto_type()
    return proto_type, to_proto, from_proto


# --- names under scopes ------------------------------------------------------------------------------------------
def strip_name_scope(name: str, export_scope: str | None) -> str:
    """`name` without the leading `export_scope/` (also after "^" or "loc:@"), as TF's ops.strip_name_scope."""
    if not export_scope:
        return name
    export_scope = export_scope.rstrip("/")
    return re.sub(r"([\^]|loc:@|^)" + re.escape(export_scope) + r"[\/]+(.*)", r"\1\2", name, count=1)


def prepend_name_scope(name: str, import_scope: str | None) -> str:
    """`import_scope/name` (keeping a leading "^" or "loc:@"), as TF's ops.prepend_name_scope."""
    if not import_scope:
        return name
    import_scope = import_scope.rstrip("/")
    return re.sub(r"([\^]|loc:@|^)(.*)", lambda m: m.group(1) + import_scope + "/" + m.group(2), name, count=1)


def _in_scope(item, export_scope: str | None) -> bool:
    name = getattr(item, "name", None)
    return not export_scope or not isinstance(name, str) or name.startswith(export_scope)


# --- export -------------------------------------------------------------------------------------------------------
def _kind(item) -> str:
    if isinstance(item, (Operation, Tensor)) or hasattr(item, "_as_graph_element") and isinstance(
            getattr(item, "name", None), str):
        return "node_list"
    if isinstance(item, bool) or isinstance(item, int):
        return "int64_list"
    if isinstance(item, float):
        return "float_list"
    if isinstance(item, (str, bytes)):
        return "bytes_list"
    return "any_list"


def add_collection_def(meta_graph_def, key: str, graph: Graph | None = None, export_scope: str | None = None) -> None:
    """Add collection `key` of `graph` to `meta_graph_def` as TF does; an item kind a CollectionDef cannot hold
    leaves the collection out with a warning (TF's behaviour, not an error)."""
    if not isinstance(key, (str, bytes)):
        _log.warning("Only collections with string type keys will be serialized. This key has %s", type(key))
        return
    graph = graph or get_default_graph()
    items = [item for item in graph.get_collection(key) if _in_scope(item, export_scope)]
    if not items:
        return
    proto_type, to_proto, _ = _proto_functions(key)
    collection = meta_graph_def.collection_def[key]
    try:
        if to_proto is not None:
            for item in items:
                proto = to_proto(item, export_scope=export_scope)
                if proto is not None:
                    if not isinstance(proto, proto_type):
                        raise TypeError(f"{type(proto).__name__} is not a {proto_type.__name__}")
                    collection.bytes_list.value.append(proto.SerializeToString())
            return
        kind = _kind(items[0])
        if kind == "node_list":
            collection.node_list.value.extend(strip_name_scope(item.name, export_scope) for item in items)
        elif kind == "bytes_list":
            collection.bytes_list.value.extend(item.encode() if isinstance(item, str) else item for item in items)
        elif kind in ("int64_list", "float_list"):
            getattr(collection, kind).value.extend(items)
        else:
            raise TypeError(f"a {type(items[0]).__name__} has no CollectionDef kind")
    except (TypeError, ValueError, AttributeError) as e:
        _log.warning("Issue encountered when serializing %s.\nType is unsupported, or the types of the items don't "
                     "match field type in CollectionDef. Note this is a warning and probably safe to ignore.\n%s",
                     key, e)
        del meta_graph_def.collection_def[key]


def create_meta_graph_def(meta_info_def=None, graph_def=None, saver_def=None, collection_list=None,
                          graph: Graph | None = None, export_scope: str | None = None, clear_devices: bool = False,
                          strip_default_attrs: bool = False, clear_extraneous_savers: bool = False):
    """A MetaGraphDef of `graph` (default: the default graph): meta info with the stripped op list, the GraphDef
    (with shapes, devices cleared if asked, names without `export_scope` and only its nodes, attrs equal to their
    OpDef default dropped with `strip_default_attrs`), the saver and the collections (all of them unless
    `collection_list` names some). `clear_extraneous_savers` leaves out the name scopes of savers other than
    `saver_def`'s and puts only `saver_def` in the `savers` collection."""
    for value, message, what in ((meta_info_def, protos.meta_graph_pb2.MetaGraphDef.MetaInfoDef, "meta_info_def"),
                                 (graph_def, protos.graph_pb2.GraphDef, "graph_def"),
                                 (saver_def, protos.saver_pb2.SaverDef, "saver_def")):
        if value is not None and not isinstance(value, message):
            raise TypeError(f"{what} must be of type {message.__name__}. Received type: {type(value)}.")
    if graph is not None and not isinstance(graph, Graph):
        raise TypeError(f"graph must be of type Graph. Received type: {type(graph)}.")
    graph = graph or get_default_graph()
    meta_graph_def = protos.meta_graph_pb2.MetaGraphDef()
    if meta_info_def is not None:
        meta_graph_def.meta_info_def.MergeFrom(meta_info_def)
    info = meta_graph_def.meta_info_def
    info.tensorflow_version, info.tensorflow_git_version = TF_VERSION, "adplace"
    if graph_def is None:
        graph_def = graph.as_graph_def(add_shapes=True)
    if clear_extraneous_savers:
        graph_def = _without_nodes(graph_def, _extraneous_saver_nodes(graph_def, saver_def))
    meta_graph_def.graph_def.MergeFrom(_scoped_graph_def(graph_def, export_scope, clear_devices))
    if strip_default_attrs:
        _strip_default_attrs(meta_graph_def.graph_def)
        info.stripped_default_attrs = True
    if not info.stripped_op_list.op:
        info.stripped_op_list.MergeFrom(stripped_op_list(meta_graph_def.graph_def))
    if saver_def is not None:
        meta_graph_def.saver_def.MergeFrom(saver_def)
    for key in graph.get_all_collection_keys() if collection_list is None else collection_list:
        if clear_extraneous_savers and key == GraphKeys.SAVERS:
            if saver_def is not None:
                meta_graph_def.collection_def[key].bytes_list.value.append(saver_def.SerializeToString())
            continue
        add_collection_def(meta_graph_def, key, graph, export_scope)
    return meta_graph_def


def _scope_of(name: str) -> str:
    return name.lstrip("^").rpartition("/")[0]


def _extraneous_saver_nodes(graph_def, saver_def) -> set:
    """Names of the nodes in the name scopes of save/restore ops other than `saver_def`'s (TF's rule: each Saver
    lives in a name scope of its own)."""
    keep = set()
    if saver_def is not None:
        keep = {_scope_of(saver_def.save_tensor_name.split(":")[0]) + "/", _scope_of(saver_def.restore_op_name) + "/"}
    saver_nodes = {node.name for node in graph_def.node if node.op in _SAVE_AND_RESTORE_OPS}
    drop = tuple({_scope_of(name) + "/" for name in saver_nodes} - {name + "/" for name in saver_nodes} - keep)
    return {node.name for node in graph_def.node if drop and node.name.startswith(drop)}


def _without_nodes(graph_def, names: set):
    if not names:
        return graph_def
    kept = protos.graph_pb2.GraphDef()
    kept.versions.CopyFrom(graph_def.versions)
    kept.library.CopyFrom(graph_def.library)
    kept.node.extend(node for node in graph_def.node if node.name not in names)
    return kept


def _all_nodes(graph_def):
    """The nodes of `graph_def` and of the function bodies in its library."""
    yield from graph_def.node
    for function in graph_def.library.function:
        yield from function.node_def


def _strip_default_attrs(graph_def) -> None:
    """Drop, in place, the attrs of `graph_def`'s nodes (and its library functions' nodes) whose value is their TF
    OpDef's default (nodes of op types without a TF OpDef keep all theirs)."""
    from adplace.framework import graph_io

    for node in _all_nodes(graph_def):
        op_def = graph_io.tf_op_def(node.op)
        for attr_def in op_def.attr if op_def is not None else ():
            if (attr_def.HasField("default_value") and attr_def.name in node.attr
                    and node.attr[attr_def.name] == attr_def.default_value):
                del node.attr[attr_def.name]


def stripped_op_list(graph_def):
    """The OpList of TF's OpDefs for the op types `graph_def` uses, in its nodes and its library's functions
    (MetaInfoDef.stripped_op_list), sorted by name; adplace-only op types have none."""
    from adplace.framework import graph_io

    op_list = protos.op_def_pb2.OpList()
    for op_type in sorted({node.op for node in _all_nodes(graph_def)}):
        op_def = graph_io.tf_op_def(op_type)
        if op_def is not None:
            op_list.op.append(op_def)
    return op_list


def _scoped_graph_def(graph_def, export_scope: str | None, clear_devices: bool):
    """A copy of the nodes of `graph_def` under `export_scope` (all of them for None), renamed without it, their
    devices cleared with `clear_devices`; `graph_def` itself when neither applies. An input from outside the scope
    is an error (TF's unbound inputs are not supported)."""
    if not export_scope and not clear_devices:
        return graph_def
    scoped = protos.graph_pb2.GraphDef()
    scoped.versions.CopyFrom(graph_def.versions)
    scoped.library.CopyFrom(graph_def.library)
    prefix = export_scope.rstrip("/") + "/" if export_scope else ""
    for node in graph_def.node:
        if prefix and not node.name.startswith(prefix):
            continue
        copy = scoped.node.add()
        copy.CopyFrom(node)
        if clear_devices:
            copy.device = ""
        if prefix:
            copy.name = strip_name_scope(node.name, export_scope)
            del copy.input[:]
            for name in node.input:
                if not name.lstrip("^").startswith(prefix):
                    raise ValueError(f"Node {node.name!r} of the exported scope {export_scope!r} reads {name!r} from "
                                     f"outside it; export a scope whose inputs all lie inside it.")
                copy.input.append(strip_name_scope(name, export_scope))
            if "_class" in copy.attr:
                groups = [strip_name_scope(g.decode(), export_scope).encode() for g in copy.attr["_class"].list.s]
                del copy.attr["_class"].list.s[:]
                copy.attr["_class"].list.s.extend(groups)
    return scoped


def export_scoped_meta_graph(filename: str | None = None, graph_def=None, graph: Graph | None = None,
                             export_scope: str | None = None, as_text: bool = False, clear_devices: bool = False,
                             saver_def=None, collection_list=None, meta_info_def=None,
                             strip_default_attrs: bool = False, clear_extraneous_savers: bool = False) -> tuple:
    """(MetaGraphDef, {name: variable}) of the graph under `export_scope`, written to `filename` when given
    (binary, or text with `as_text`; atomically)."""
    from adplace.framework import graph_io

    graph = graph or get_default_graph()
    meta_graph_def = create_meta_graph_def(meta_info_def, graph_def, saver_def, collection_list, graph, export_scope,
                                           clear_devices, strip_default_attrs, clear_extraneous_savers)
    if filename:
        graph_io.write_graph(meta_graph_def, os.path.dirname(filename) or ".", os.path.basename(filename),
                             as_text=as_text)
    var_list = {strip_name_scope(v.name, export_scope): v
                for v in graph.get_collection(GraphKeys.GLOBAL_VARIABLES) if _in_scope(v, export_scope)}
    return meta_graph_def, var_list


# --- import -------------------------------------------------------------------------------------------------------
def read_meta_graph_file(filename: str):
    """The MetaGraphDef in `filename`, binary or text. A missing file is NotFoundError (TF: IOError, of which it is
    not a subclass here); one that parses neither way is DataLossError naming the file."""
    from google.protobuf import message, text_format

    try:
        with open(filename, "rb") as f:
            content = f.read()
    except FileNotFoundError:
        raise errors.NotFoundError(None, None, f"File does not exist. Received: {filename}.") from None
    meta_graph_def = protos.meta_graph_pb2.MetaGraphDef()
    try:
        meta_graph_def.ParseFromString(content)
        return meta_graph_def
    except message.DecodeError:
        pass
    try:
        text_format.Merge(content.decode("utf-8"), meta_graph_def)
    except (text_format.ParseError, UnicodeDecodeError) as e:
        raise errors.DataLossError(None, None, f"Cannot parse file {filename}: neither a binary nor a text "
                                               f"MetaGraphDef ({e}).") from None
    return meta_graph_def


def _collection_items(meta_graph_def, graph_def, import_scope: str | None, restore_predicate: Callable) -> list:
    """[(key, kind, values, from_proto, proto_type)] for every collection to restore, after checking that each
    node_list name will exist and each proto parses: nothing is imported when one would fail."""
    from google.protobuf import message

    node_names = {node.name for node in graph_def.node}
    plan = []
    for key in sorted(meta_graph_def.collection_def, key=lambda k: (k not in VARIABLE_COLLECTIONS,
                                                                     VARIABLE_COLLECTIONS.index(k)
                                                                     if k in VARIABLE_COLLECTIONS else 0, k)):
        if not restore_predicate(key):
            continue
        collection = meta_graph_def.collection_def[key]
        kind = collection.WhichOneof("kind")
        if kind is None:
            _log.error("Cannot identify data type for collection %s. Skipping.", key)
            continue
        values = list(getattr(collection, kind).value)
        proto_type, _, from_proto = _proto_functions(
            GraphKeys.GLOBAL_VARIABLES if key == GraphKeys.METRIC_VARIABLES else key)
        if from_proto is not None and kind == "bytes_list":
            parsed = []
            for value in values:
                proto = proto_type()
                try:
                    proto.ParseFromString(value)
                except message.DecodeError as e:
                    raise errors.DataLossError(None, None, f"Collection {key!r} holds a {proto_type.__name__} "
                                                           f"that does not parse: {e}") from None
                parsed.append((value, proto))
            plan.append((key, "protos", parsed, from_proto))
            continue
        if kind == "node_list":
            for name in values:
                if name.split(":")[0].lstrip("^") not in node_names:
                    raise ValueError(f"Collection {key!r} names {name!r}, which is not a node of the meta graph.")
        plan.append((key, kind, values, None))
    return plan


def import_scoped_meta_graph(meta_graph_or_file, clear_devices: bool = False, graph: Graph | None = None,
                             import_scope: str | None = None, input_map: dict | None = None,
                             restore_collections_predicate: Callable = lambda key: True,
                             return_elements=None):
    """Import a MetaGraphDef (or the `.meta` file holding one) into `graph` under `import_scope`: its GraphDef
    (devices cleared if asked) and its collections. Returns {name without the scope: variable}, and also the
    imported `return_elements` when asked for."""
    from adplace.framework import importer

    meta_graph_def = (read_meta_graph_file(meta_graph_or_file) if isinstance(meta_graph_or_file, str)
                      else meta_graph_or_file)
    graph = graph or get_default_graph()
    graph_def = meta_graph_def.graph_def
    graph_def = _scoped_graph_def(graph_def, None, clear_devices)
    plan = _collection_items(meta_graph_def, graph_def, import_scope, restore_collections_predicate)
    with graph.as_default():
        # TF's prefix: the open name scope, plus `import_scope` made unique ("s", then "s_1", ...)
        scope = graph.unique_name(import_scope or "", mark_as_used=False).rstrip("/")
        returned = importer.import_graph_def(graph_def, input_map=input_map, return_elements=return_elements,
                                             name=import_scope or (scope + "/" if scope else ""),
                                             producer_op_list=meta_graph_def.meta_info_def.stripped_op_list)
        variables: dict[bytes, object] = {}
        for key, kind, values, from_proto in plan:
            if kind == "protos":
                for serialized, proto in values:
                    if key in VARIABLE_COLLECTIONS:
                        if serialized not in variables:
                            if key == GraphKeys.TRAINABLE_VARIABLES and not proto.trainable:
                                proto.trainable = True
                            variables[serialized] = from_proto(proto, import_scope=scope)
                        graph.add_to_collection(key, variables[serialized])
                    else:
                        graph.add_to_collection(key, from_proto(proto, import_scope=scope))
            elif kind == "node_list":
                for name in values:
                    graph.add_to_collection(key, graph.as_graph_element(prepend_name_scope(name, scope)))
            elif kind == "int64_list":
                for value in values:
                    graph.add_to_collection(key, int(value))
            elif kind == "bytes_list":
                for value in values:
                    graph.add_to_collection(key, prepend_name_scope(value.decode(), scope) if scope else value)
            else:
                for value in values:
                    graph.add_to_collection(key, value)
    var_list = {strip_name_scope(v.name, scope): v for v in graph.get_collection(GraphKeys.GLOBAL_VARIABLES)
                if not scope or v.name.startswith(scope.rstrip("/") + "/")}
    return (var_list, returned) if return_elements is not None else var_list


def copy_scoped_meta_graph(from_scope: str, to_scope: str, from_graph: Graph | None = None,
                           to_graph: Graph | None = None) -> dict:
    """Copy the ops and collections under `from_scope` of `from_graph` to `to_scope` of `to_graph` (both default:
    the default graph), through a MetaGraphDef; returns the copied variables as import_scoped_meta_graph does."""
    from_graph = from_graph or get_default_graph()
    to_graph = to_graph or get_default_graph()
    if from_graph is to_graph and from_scope == to_scope:
        raise ValueError("'from_scope' and 'to_scope' need to be different when performing copy in the same graph.")
    meta_graph_def, _ = export_scoped_meta_graph(export_scope=from_scope, graph=from_graph)
    return import_scoped_meta_graph(meta_graph_def, graph=to_graph, import_scope=to_scope)
