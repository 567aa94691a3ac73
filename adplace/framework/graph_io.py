"""adplace graphs as TF's GraphDef protos, and the attr conversions both ways.

An exported node is what TF's own loader accepts: its attrs are those of TF's OpDef for the op type (read from the
bundled tf_op_defs.pb, written by tools/gen_tf_op_defs.py), type attrs (`T`, `Tidx`, `N`, ...) taken from the
inputs' and outputs' dtypes, adplace-only attrs dropped, defaults left to TF. Importing (framework/importer.py)
turns the attrs back into the Python values adplace's op definitions read (`import_attrs`).

    graph_def = graph_to_graph_def(tf.get_default_graph(), add_shapes=True)
    write_graph(graph_def, "/tmp/logs", "graph.pbtxt")
"""
from __future__ import annotations

import functools
import os
import pathlib

import numpy as np

from adplace.framework import dtypes as _dtypes
from adplace.framework.errors import DataLossError
from adplace.framework.tensor_shape import TensorShape, as_shape
from adplace.framework.tensor_util import (dtype_from_enum, make_ndarray, make_tensor_proto, shape_from_proto,
                                           shape_to_proto)
from adplace.lib import protos
from adplace.lib.io.atomic_file import atomic_output

# The GraphDef version adplace writes: TF 1.15's producer (its graphs use the TF1 op set); TF 2.x reads it too.
GRAPH_DEF_VERSION = 134
GRAPH_DEF_VERSION_MIN_CONSUMER = 0
GRAPH_DEF_VERSION_MIN_PRODUCER = 0  # the oldest GraphDef producer version TF 1.15 reads
MAX_GRAPH_DEF_BYTES = 1 << 31  # protobuf's limit on a message, which TF checks while building a GraphDef
_OP_DEFS_FILE = pathlib.Path(__file__).with_name("tf_op_defs.pb")
SLICE_OPS = ("StridedSlice", "StridedSliceGrad")


@functools.lru_cache(maxsize=None)
def _tf_op_defs() -> dict:
    op_list = protos.op_def_pb2.OpList()
    op_list.ParseFromString(_OP_DEFS_FILE.read_bytes())
    return {op_def.name: op_def for op_def in op_list.op}


def tf_op_def(op_type: str):
    """TF's OpDef proto for `op_type`, or None for an adplace-only op type."""
    return _tf_op_defs().get(op_type)


def versions():
    """The VersionDef adplace writes into GraphDefs (Graph.graph_def_versions)."""
    return protos.versions_pb2.VersionDef(producer=GRAPH_DEF_VERSION, min_consumer=GRAPH_DEF_VERSION_MIN_CONSUMER)


# --- attr values ------------------------------------------------------------------------------------------------
def _guess_attr_type(value) -> str:
    if isinstance(value, (bool, np.bool_)):
        return "bool"
    if isinstance(value, (int, np.integer)):
        return "int"
    if isinstance(value, (float, np.floating)):
        return "float"
    if isinstance(value, (str, bytes)):
        return "string"
    if isinstance(value, _dtypes.DType):
        return "type"
    if isinstance(value, TensorShape):
        return "shape"
    if isinstance(value, np.ndarray):
        return "tensor"
    if is_function(value):
        return "func"
    if isinstance(value, (list, tuple)):
        return f"list({_guess_attr_type(value[0]) if len(value) else 'int'})"
    raise TypeError(f"no AttrValue for {type(value).__name__} {value!r}")


def is_function(value) -> bool:
    """A traced or imported function (framework/function_graph.py's DefinedFunction), held in a func attr."""
    return hasattr(value, "graph") and hasattr(value, "num_args") and isinstance(getattr(value, "name", None), str)


def _set_scalar(target, kind: str, value, field: str | None = None) -> None:
    """Set (or append, for lists) one attr value of `kind` on an AttrValue or AttrValue.ListValue."""
    listed = field is not None
    if kind == "type":
        enum = _dtypes.as_dtype(value).base_dtype.as_datatype_enum
        target.type.append(enum) if listed else setattr(target, "type", enum)
    elif kind == "shape":
        proto = shape_to_proto(value if value is None or isinstance(value, TensorShape) else as_shape(value))
        (target.shape.add() if listed else target.shape).CopyFrom(proto)
    elif kind == "tensor":
        (target.tensor.add() if listed else target.tensor).CopyFrom(_tensor_value(value))
    elif kind == "string":
        data = value.encode() if isinstance(value, str) else bytes(value)
        target.s.append(data) if listed else setattr(target, "s", data)
    elif kind == "func":  # a NameAttrList naming the function in the GraphDef's library
        name = value if isinstance(value, str) else value.name
        (target.func.add() if listed else target.func).name = name
    else:
        name, convert = {"int": ("i", int), "float": ("f", float), "bool": ("b", bool)}[kind]
        getattr(target, name).append(convert(value)) if listed else setattr(target, name, convert(value))


def _tensor_value(value):
    """A Const's value as TF writes it: an array of one repeated value (what `tf.constant(0.0, shape=...)`,
    `tf.zeros` and `tf.fill` build) as that value splatted to the shape, everything else element by element."""
    array = np.asarray(value)
    if array.size > 1 and array.dtype.kind in "biufc":
        flat = array.reshape(-1)
        if (flat == flat[0]).all():
            return make_tensor_proto(flat[:1].reshape(()), shape=array.shape)
    return make_tensor_proto(array)


def attr_value(value, attr_type: str | None = None):
    """An AttrValue proto for a Python attr value; `attr_type` is the OpDef's type ("int", "list(type)", ...),
    guessed from the value when None. TypeError for values no AttrValue holds."""
    kind = attr_type or _guess_attr_type(value)
    proto = protos.attr_value_pb2.AttrValue()
    if kind.startswith("list("):
        proto.list.SetInParent()
        element = kind[5:-1]
        for v in value:
            _set_scalar(proto.list, element, v, field=element)
    elif kind in ("type", "shape", "tensor", "string", "int", "float", "bool", "func"):
        _set_scalar(proto, kind, value)
    else:
        raise TypeError(f"adplace does not write attrs of type {kind!r}")
    return proto


def _text(data: bytes):
    try:
        return data.decode()
    except UnicodeDecodeError:
        return data


_LIST_FIELDS = ("s", "i", "f", "b", "type", "shape", "tensor", "func")


def python_attr(proto, functions: dict | None = None):
    """The Python value of an AttrValue, as adplace's ops hold attrs: DType, TensorShape, ndarray, str (bytes
    where not UTF-8), int, float, bool, a function (from `functions`, {library name: DefinedFunction}), or a list
    of these. ValueError for a function `functions` lacks."""
    which = proto.WhichOneof("value")
    if which == "list":
        for field in _LIST_FIELDS:
            values = getattr(proto.list, field)
            if len(values):
                return [_python_scalar(field, v, functions) for v in values]
        return []
    if which is None:
        return None
    return _python_scalar(which, getattr(proto, which), functions)


def _python_scalar(field: str, value, functions: dict | None = None):
    if field == "func":
        function = (functions or {}).get(value.name)
        if function is None:
            raise ValueError(f"function {value.name!r} is neither in the GraphDef's library nor in the graph's")
        return function
    if field == "s":
        return _text(value)
    if field == "type":
        return dtype_from_enum(value)
    if field == "shape":
        return shape_from_proto(value)
    if field == "tensor":
        return make_ndarray(value)
    if field in ("i", "f", "b"):
        return value
    raise ValueError(f"adplace cannot read attr values of kind {field!r}")


# --- argument dtypes: TF's type attrs from the inputs and outputs ---------------------------------------------------
def _arg_counts(args, n_tensors: int, known: dict) -> list | None:
    """How many tensors each OpDef arg takes (list args share what single args leave), or None if they don't fit."""
    counts: list = []
    singles = sum(1 for a in args if not (a.number_attr or a.type_list_attr))
    lists = [a for a in args if a.number_attr or a.type_list_attr]
    left = n_tensors - singles
    if left < 0 or (not lists and left) or (lists and left % len(lists)):
        return None
    for a in args:
        if a.number_attr and isinstance(known.get(a.number_attr), int):
            counts.append(known[a.number_attr])
        elif a.number_attr or a.type_list_attr:
            counts.append(left // len(lists))
        else:
            counts.append(1)
    return counts if sum(counts) == n_tensors else None


def type_attrs(op_def, input_dtypes: list, output_dtypes: list, attrs: dict) -> dict:
    """TF's type and number attrs (`T`, `Tidx`, `N`, `Tout`, ...) as given by the dtypes of the op's arguments."""
    found: dict = {}
    for args, dtypes in ((op_def.input_arg, input_dtypes), (op_def.output_arg, output_dtypes)):
        counts = _arg_counts(args, len(dtypes), {**attrs, **found})
        if counts is None:
            continue
        at = 0
        for arg, count in zip(args, counts):
            mine = [d.base_dtype for d in dtypes[at:at + count]]
            at += count
            if arg.number_attr:
                found[arg.number_attr] = count
            if arg.type_list_attr:
                found[arg.type_list_attr] = mine
            elif arg.type_attr and mine:
                found[arg.type_attr] = mine[0]
    return found


# --- StridedSlice: adplace keeps the Python index, TF the begin/end/strides inputs and masks ------------------------
def slice_spec_to_masks(spec) -> tuple[list, list, list, dict]:
    """(begin, end, strides, masks) of StridedSlice for a static Python index (ints, slices, None, Ellipsis)."""
    spec = spec if isinstance(spec, tuple) else (spec,)
    begin, end, strides = [], [], []
    masks = dict.fromkeys(("begin_mask", "end_mask", "ellipsis_mask", "new_axis_mask", "shrink_axis_mask"), 0)
    for i, k in enumerate(spec):
        bit = 1 << i
        if k is Ellipsis or k is None:
            masks["ellipsis_mask" if k is Ellipsis else "new_axis_mask"] |= bit
            b, e, s = 0, 0, 1
        elif isinstance(k, slice):
            b, e, s = k.start or 0, k.stop or 0, 1 if k.step is None else k.step
            masks["begin_mask"] |= bit if k.start is None else 0
            masks["end_mask"] |= bit if k.stop is None else 0
        else:
            b, e, s = int(k), int(k) + 1, 1
            masks["shrink_axis_mask"] |= bit
        begin.append(int(b))
        end.append(int(e))
        strides.append(int(s))
    return begin, end, strides, masks


def masks_to_slice_spec(begin, end, strides, attrs: dict) -> tuple:
    """The Python index a StridedSlice's constant begin/end/strides and masks describe."""
    spec = []
    for i, (b, e, s) in enumerate(zip(begin, end, strides)):
        bit = 1 << i
        if attrs.get("ellipsis_mask", 0) & bit:
            spec.append(Ellipsis)
        elif attrs.get("new_axis_mask", 0) & bit:
            spec.append(None)
        elif attrs.get("shrink_axis_mask", 0) & bit:
            spec.append(int(b))
        else:
            spec.append(slice(None if attrs.get("begin_mask", 0) & bit else int(b),
                              None if attrs.get("end_mask", 0) & bit else int(e), int(s)))
    return tuple(spec)


def slice_const_names(op) -> list[str]:
    """Names of the begin, end and strides Const nodes written for an adplace StridedSlice op."""
    return [f"{op._name}/stack", f"{op._name}/stack_1", f"{op._name}/stack_2"]


# --- export -------------------------------------------------------------------------------------------------------
def node_def(op, add_shapes: bool = False, slice_names: list | None = None):
    """The NodeDef TF would write for `op`: data inputs (`name`, `name:1`), then `^name` control inputs, the
    requested device, TF's attrs for the op type, `_class` for colocation and, with add_shapes, `_output_shapes`."""
    node = protos.node_def_pb2.NodeDef(name=op._name, op=op._type, device=op._device_text)
    inputs = [t._as_node_def_input() for t in op._inputs]
    input_dtypes = [t._dtype for t in op._inputs]
    attrs = {k: v for k, v in op._attrs.items() if k != "_class"}
    if op._type in SLICE_OPS and "slice_spec" in attrs:  # TF's inputs: x (or shape), begin, end, strides (, dy)
        begin, end, strides, masks = slice_spec_to_masks(attrs.pop("slice_spec"))
        attrs.update(masks, Index=_dtypes.int32)
        names = slice_names or slice_const_names(op)
        inputs[1:1] = names
        input_dtypes[1:1] = [_dtypes.int32] * 3
    node.input.extend(inputs + ["^" + c._name for c in op._control_inputs])
    op_def = tf_op_def(op._type)
    types = {}
    if op_def is not None:
        declared = {a.name: a.type for a in op_def.attr}
        attrs = {k: v for k, v in attrs.items() if k in declared or k.startswith("_")}
        attrs.update(type_attrs(op_def, input_dtypes, [t._dtype for t in op._outputs], attrs))
        types = declared
    for key, value in attrs.items():
        try:
            node.attr[key].CopyFrom(attr_value(value, types.get(key)))
        except (TypeError, ValueError, KeyError):
            if key in types:
                raise TypeError(f"Op '{op._name}' ({op._type}): attr {key!r} = {value!r} does not fit TF's "
                                f"type {types[key]!r}") from None
            node.attr.pop(key, None)  # an adplace-only value with no AttrValue form (no OpDef declares it)
    if op._colocation:
        node.attr["_class"].list.s.extend(op._colocation)
    if add_shapes:
        node.attr["_output_shapes"].list.shape.extend(shape_to_proto(t._shape) for t in op._outputs)
    return node


def _slice_consts(op, names: list) -> list:
    begin, end, strides, _ = slice_spec_to_masks(op._attrs["slice_spec"])
    nodes = []
    for name, values in zip(names, (begin, end, strides)):
        const = protos.node_def_pb2.NodeDef(name=name, op="Const", device=op._device_text)
        const.attr["dtype"].type = _dtypes.int32.as_datatype_enum
        const.attr["value"].tensor.CopyFrom(make_tensor_proto(np.asarray(values, dtype=np.int32)))
        if op._control_flow_context is not None:  # in a loop (or cond) the Const must be in the slice's frame
            const.input.append("^" + op._inputs[0]._op._name)
        nodes.append(const)
    return nodes


def op_nodes(op, taken: set, add_shapes: bool = False) -> list:
    """The NodeDefs written for `op`: its own, after the Const begin/end/strides nodes TF's StridedSlice takes as
    inputs (named `<op>/stack`, `_1`, `_2`, made unique against `taken`, the lowercased names in use)."""
    names = None
    nodes = []
    if op._type in SLICE_OPS and "slice_spec" in op._attrs:
        names = [_free_name(n, taken) for n in slice_const_names(op)]
        nodes = _slice_consts(op, names)
    nodes.append(node_def(op, add_shapes, names))
    return nodes


def graph_to_graph_def(graph, from_version: int | None = None, add_shapes: bool = False):
    """The GraphDef of `graph` (tf.Graph.as_graph_def): its ops in creation order (a topological order), or only
    those added since `graph.version` was `from_version` (see op_nodes), and in its library a FunctionDef for each
    function these ops name in func attrs, and the functions those name in turn (framework/function_def.py)."""
    from adplace.framework import function_def

    graph_def = protos.graph_pb2.GraphDef()
    graph_def.versions.CopyFrom(versions())
    with graph._lock:
        ops = list(graph._ops)
        taken = {op._name.lower() for op in ops}
    size = 0
    for op in ops[from_version or 0:]:
        nodes = op_nodes(op, taken, add_shapes)
        size += sum(map(_byte_size, nodes))
        if size >= MAX_GRAPH_DEF_BYTES:  # protobuf cannot serialize it; TF's error rather than protobuf's
            raise ValueError("GraphDef cannot be larger than 2GB.")
        graph_def.node.extend(nodes)
    functions = function_def.reachable_functions(ops[from_version or 0:])
    if functions:
        graph_def.library.CopyFrom(function_def.library(functions))
    return graph_def


def _byte_size(node) -> int:
    """The serialized size of `node`; MAX_GRAPH_DEF_BYTES when protobuf cannot even size it (past 2 GB)."""
    from google.protobuf.message import EncodeError

    try:
        return node.ByteSize()
    except EncodeError:
        return MAX_GRAPH_DEF_BYTES


def _free_name(name: str, taken: set) -> str:
    candidate, i = name, 0
    while candidate.lower() in taken:
        i += 1
        candidate = f"{name}_{i}"
    taken.add(candidate.lower())
    return candidate


# --- import: TF's attrs to adplace's -------------------------------------------------------------------------------
def _without(attrs: dict, name: str) -> dict:
    attrs.pop(name, None)
    return {}


# Attrs adplace's op definitions and kernels read that TF's OpDefs lack, from the attrs TF writes (a function of
# the converted attrs returning the attrs to add; it may drop TF's own where adplace gives the name another use).
_ADPLACE_ONLY = {
    "Cast": lambda a: {"T": a["SrcT"]},
    "GatherV2": lambda a: {"T": a["Tparams"]},
    "IdentityN": lambda a: {"dtypes": list(a.pop("T"))},  # adplace's T is the kernel's one dtype
    "Assert": lambda a: _without(a, "T"),  # TF's list of data types, not adplace's (kernel) T
    "RandomUniformInt": lambda a: {"dtype": a["Tout"], "T": a["Tout"]},
    **{t: (lambda a: {"T": _dtypes.bool}) for t in ("All", "Any", "LogicalAnd", "LogicalOr", "LogicalNot")},
    **{t: (lambda a: {"T": a["dtype"], "Tout": a["dtype"]})
       for t in ("RandomUniform", "RandomStandardNormal", "TruncatedNormal")},
}


# Op types TF writes that adplace runs as another type of the same semantics.
IMPORT_ALIASES = {"AddV2": "Add"}


def import_attrs(node, functions: dict | None = None) -> dict:
    """The Python attrs of an adplace op built from `node`: TF's attrs converted (`_class` and `_output_shapes`
    left out: colocation is the op's, shapes are inferred; func attrs looked up in `functions`, {library name:
    DefinedFunction}), the OpDef's defaults for attrs the node leaves out (GraphDefs written with
    strip_default_attrs), plus the adplace-only attrs derived from them."""
    attrs = {k: python_attr(v, functions) for k, v in node.attr.items() if k not in ("_class", "_output_shapes")}
    op_def = tf_op_def(node.op)
    for attr_def in op_def.attr if op_def is not None else ():
        if attr_def.name not in attrs and attr_def.HasField("default_value"):
            attrs[attr_def.name] = python_attr(attr_def.default_value)
    extra = _ADPLACE_ONLY.get(node.op)
    if extra is not None:
        try:
            attrs.update(extra(attrs))
        except KeyError as e:
            raise ValueError(f"Node '{node.name}' ({node.op}) lacks attr {e.args[0]!r}") from None
    return attrs


def parse_graph_def(data: bytes):
    """A GraphDef from its binary serialization; DataLossError when the bytes are not one."""
    graph_def = protos.graph_pb2.GraphDef()
    try:
        graph_def.ParseFromString(bytes(data))
    except Exception as e:  # protobuf's DecodeError, or RuntimeWarning-free failures of the C++ parser
        raise DataLossError(None, None, f"Cannot parse a GraphDef from {len(data)} bytes: {e}") from None
    return graph_def


# --- files --------------------------------------------------------------------------------------------------------
def write_graph(graph_or_graph_def, logdir: str, name: str, as_text: bool = True) -> str:
    """Write a Graph's GraphDef, or any proto, to `logdir/name` (tf.train.write_graph): protobuf text when
    `as_text`, binary otherwise, atomically (a temporary file renamed over the target). Returns the path."""
    from google.protobuf.message import Message

    graph_def = graph_or_graph_def
    if not isinstance(graph_def, Message):
        if hasattr(graph_def, "as_graph_def"):
            graph_def = graph_def.as_graph_def()
        else:
            raise TypeError(f"write_graph takes a Graph or a GraphDef (or another proto, such as a MetaGraphDef), "
                            f"not {type(graph_or_graph_def).__name__}")
    if as_text:
        from google.protobuf import text_format
        data = text_format.MessageToString(graph_def).encode()
    else:
        data = graph_def.SerializeToString(deterministic=True)
    os.makedirs(logdir, exist_ok=True)
    path = os.path.join(logdir, name)
    with atomic_output(path) as f:
        f.write(data)
    return path
