"""Functions (framework/function_graph.py) as TF's FunctionDef protos in a GraphDef's library, and back.

A FunctionDef is written as TF writes one: the signature's input args are the function graph's inputs (arguments,
then captured tensors; their placeholders are no nodes), named `[a-z][a-z0-9_]*`; each body node reads
`arg_name` or `node:output_arg:index` (TF's OpDef output args, lists expanded by their number or type-list attr);
`ret` names what produces each output; `is_stateful` is set when a body op is stateful in TF; each arg's shape is
kept in `arg_attr` `_output_shapes`, as TF does.

    library = function_def.library(function_def.reachable_functions(graph.get_operations()))
    functions = function_def.import_library(graph_def.library, graph)   # {library name: DefinedFunction}

Importing builds each FunctionDef, after those its body names, into a function graph registered in the graph's
library; a name the graph's library already holds is reused when the definition is the same, else the function is
imported under a new unique name (the imported ops' attrs name it). The caller undoes the registrations when the
import fails (framework/importer.py).
"""
from __future__ import annotations

import re
import weakref

from adplace.framework import graph_io
from adplace.framework.errors import NotFoundError
from adplace.framework.registry import get_op_def, registered_op_types
from adplace.framework.tensor_shape import TensorShape
from adplace.framework.tensor_util import dtype_from_enum, shape_from_proto, shape_to_proto
from adplace.lib import protos

# The FunctionDef each imported function was built from, for telling a re-import of it from another definition.
_definitions: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def _functions_in(attrs: dict) -> list:
    found = []
    for value in attrs.values():
        for item in value if isinstance(value, (list, tuple)) else (value,):
            if graph_io.is_function(item):
                found.append(item)
    return found


def reachable_functions(ops) -> list:
    """The functions `ops` name in func attrs, and the functions their bodies name, each once, callees first."""
    order: list = []
    seen: set = set()

    def visit(function) -> None:
        if id(function) in seen:
            return
        seen.add(id(function))
        for op in function.graph._ops:
            for inner in _functions_in(op._attrs):
                visit(inner)
        order.append(function)

    for op in ops:
        for function in _functions_in(op._attrs):
            visit(function)
    return order


def library(functions: list):
    """A FunctionDefLibrary of `functions`; ValueError when two different functions share a name."""
    lib = protos.function_pb2.FunctionDefLibrary()
    names: dict = {}
    for function in functions:
        if names.setdefault(function.name, function) is not function:
            raise ValueError(f"Two different functions are named {function.name!r}: a GraphDef's library holds "
                             f"one function per name.")
        lib.function.append(function_to_function_def(function))
    return lib


# --- export -------------------------------------------------------------------------------------------------------
def _arg_name(op_name: str, taken: set) -> str:
    """An arg name TF's OpDef rules accept ([a-z][a-z0-9_]*), unique among `taken` (node and arg names)."""
    base = re.sub(r"[^a-z0-9_]", "_", op_name.lower())
    base = base if base[:1].isalpha() else "arg_" + base
    name, i = base, 0
    while name in taken:
        i += 1
        name = f"{base}_{i}"
    taken.add(name)
    return name


def _output_arg_counts(node, op_def) -> list[tuple[str, int]]:
    """(output arg name, how many tensors it is) of a node, from its OpDef and its attrs (defaults where unset)."""
    counts = []
    defaults = {a.name: a.default_value for a in op_def.attr if a.HasField("default_value")}

    def attr(name):
        return node.attr[name] if name in node.attr else defaults.get(name)

    for arg in op_def.output_arg:
        if arg.number_attr:
            value = attr(arg.number_attr)
            count = value.i if value is not None else 0
        elif arg.type_list_attr:
            value = attr(arg.type_list_attr)
            count = len(value.list.type) if value is not None else 0
        else:
            count = 1
        counts.append((arg.name, count))
    return counts


def _output_names(node, n_outputs: int) -> list[str]:
    """`node:output_arg:index` for each output of a node (adplace-only op types: `node:output:i`)."""
    op_def = graph_io.tf_op_def(node.op)
    if op_def is None:
        return [f"{node.name}:output:{i}" for i in range(n_outputs)]
    return [f"{node.name}:{arg}:{i}" for arg, count in _output_arg_counts(node, op_def) for i in range(count)]


def _is_stateful(op_type: str) -> bool:
    op_def = graph_io.tf_op_def(op_type)
    return op_def.is_stateful if op_def is not None else get_op_def(op_type).is_stateful


def function_to_function_def(function):
    """The FunctionDef of a traced or imported function (see the module docstring)."""
    graph = function.graph
    fdef = protos.function_pb2.FunctionDef()
    fdef.signature.name = function.name
    arg_ops = {t._op for t in graph.inputs}
    taken = {op._name for op in graph._ops if op not in arg_ops}
    refs: dict = {}  # a GraphDef-style input ("x", "x:1") -> what a FunctionDef node reads
    for i, t in enumerate(graph.inputs):
        name = _arg_name(t._op._name, taken)
        fdef.signature.input_arg.add(name=name, type=t._dtype.base_dtype.as_datatype_enum)
        fdef.arg_attr[i].attr["_output_shapes"].list.shape.add().CopyFrom(shape_to_proto(t._shape))
        refs[t._op._name] = refs[f"{t._op._name}:0"] = name
    node_taken = {name.lower() for name in taken}
    nodes = []
    for op in graph._ops:
        if op in arg_ops:
            continue
        for node in graph_io.op_nodes(op, node_taken):
            n_outputs = len(op._outputs) if node.name == op._name else 1  # or a StridedSlice's Const
            for i, out in enumerate(_output_names(node, n_outputs)):
                refs[f"{node.name}:{i}"] = out
                if i == 0:
                    refs[node.name] = out
            nodes.append(node)
            fdef.signature.is_stateful |= _is_stateful(node.op)
    for node in nodes:
        inputs = ["^" + refs.get(text[1:], text[1:]).split(":")[0] if text.startswith("^") else refs[text]
                  for text in node.input]
        del node.input[:]
        node.input.extend(inputs)
        fdef.node_def.append(node)
    outputs = {arg.name for arg in fdef.signature.input_arg}
    for i, t in enumerate(graph.outputs):
        name = _arg_name(f"output_{i}", outputs)
        fdef.signature.output_arg.add(name=name, type=t._dtype.base_dtype.as_datatype_enum)
        fdef.ret[name] = refs[f"{t._op._name}:{t._value_index}"]
    return fdef


# --- import -------------------------------------------------------------------------------------------------------
def _called(fdef) -> set:
    """Names of the functions a FunctionDef's nodes name in func attrs."""
    names = set()
    for node in fdef.node_def:
        for value in node.attr.values():
            if value.HasField("func"):
                names.add(value.func.name)
            names.update(f.name for f in value.list.func)
    return names


def _callees_first(fdefs: dict) -> list:
    """The library's FunctionDefs, each after the library functions it names; ValueError for recursion."""
    order, state = [], {}

    def visit(name: str, path: tuple) -> None:
        if state.get(name) == "done":
            return
        if name in path:
            raise ValueError(f"Function {name!r} calls itself (through {' -> '.join(path)}): adplace imports no "
                             f"recursive functions.")
        for callee in sorted(_called(fdefs[name])):
            if callee in fdefs:
                visit(callee, path + (name,))
        state[name] = "done"
        order.append(name)

    for name in fdefs:
        visit(name, ())
    return order


def _offsets(fdef) -> dict:
    """{node name: {output arg name: the index of its first tensor}} of a FunctionDef's nodes of TF op types."""
    offsets: dict = {}
    for node in fdef.node_def:
        op_def = graph_io.tf_op_def(node.op)
        if op_def is not None:
            at, starts = 0, {}
            for arg, count in _output_arg_counts(node, op_def):
                starts[arg] = at
                at += count
            offsets[node.name] = starts
    return offsets


def _graph_style_nodes(fdef, arg_names: set, offsets: dict):
    """A GraphDef of a FunctionDef's body nodes whose inputs read `node:index` (args: `arg:0`), for the importer."""
    body = protos.graph_pb2.GraphDef()
    for node in fdef.node_def:
        copy = body.node.add()
        copy.CopyFrom(node)
        del copy.input[:]
        for text in node.input:
            copy.input.append(_graph_style_input(text, arg_names, offsets, fdef.signature.name))
    return body


def _graph_style_input(text: str, arg_names: set, offsets: dict, function: str) -> str:
    if text.startswith("^"):
        return text
    parts = text.split(":")
    if len(parts) == 1:
        return f"{text}:0" if text in arg_names else text
    if len(parts) == 2 and parts[1].isdigit():  # "x:1": a GraphDef-style name, as older writers put it
        return text
    node, out = parts[0], parts[1]
    index = int(parts[2]) if len(parts) > 2 and parts[2].isdigit() else 0
    starts = offsets.get(node)
    if starts is None:
        return f"{node}:{index}"  # an adplace-only op type: outputs in order
    if out not in starts:
        raise ValueError(f"Function {function!r}: input {text!r} names no output arg of node {node!r}")
    return f"{node}:{starts[out] + index}"


def _ret_tensor(created: dict, ref: str, args: dict, offsets: dict, function: str):
    if ref in args:
        return args[ref]
    name, _, index = _graph_style_input(ref, set(args), offsets, function).partition(":")
    op = created.get(name)
    if op is None or int(index or 0) >= len(op._outputs):
        raise ValueError(f"Function {function!r}: ret {ref!r} names no output of the function body")
    return op._outputs[int(index or 0)]


def _build_function(fdef, name: str, outer_graph, functions: dict):
    """A DefinedFunction named `name` built from `fdef`, its func attrs resolved in `functions`."""
    from adplace.framework import importer
    from adplace.framework.function_graph import DefinedFunction, FuncGraph

    graph = FuncGraph(name, outer_graph)
    signature = fdef.signature
    args: dict = {}
    with graph.as_default():
        for i, arg in enumerate(signature.input_arg):
            if not arg.type:
                raise ValueError(f"Function {signature.name!r}: arg {arg.name!r} has no fixed type (polymorphic "
                                 f"functions are not imported).")
            attrs = fdef.arg_attr[i].attr if i in fdef.arg_attr else {}  # (reading a map entry would add it)
            shapes = attrs["_output_shapes"].list.shape if "_output_shapes" in attrs else ()
            shape = shape_from_proto(shapes[0]) if len(shapes) == 1 else TensorShape(None)
            op = graph._create_op_internal("Placeholder", [], {"dtype": dtype_from_enum(arg.type), "shape": shape},
                                           arg.name + "/")
            args[arg.name] = op._outputs[0]
        offsets = _offsets(fdef)
        body = _graph_style_nodes(fdef, set(args), offsets)
        input_map = {**{f"{a}:0": t for a, t in args.items()}, **{f"^{a}": t._op for a, t in args.items()}}
        order = importer._sorted_nodes(body, input_map, check_unused=False)
        created = importer._build(graph, order, {n.name: n for n in order}, input_map, "", functions)
        outputs = []
        for arg in signature.output_arg:
            if arg.name not in fdef.ret:
                raise ValueError(f"Function {signature.name!r}: output {arg.name!r} has no ret entry")
            outputs.append(_ret_tensor(created, fdef.ret[arg.name], args, offsets, signature.name))
        control = [created[n] for n in fdef.control_ret.values() if n in created]
        if control:  # ops that must run with each call (TF's control_ret): the outputs wait for them
            outputs = [_after(graph, t, control) for t in outputs]
    graph.inputs = list(args.values())
    graph.outputs = outputs
    return DefinedFunction(name, graph, len(args))


def _after(graph, tensor, control: list):
    """An Identity of `tensor` that runs after the ops in `control`."""
    op = graph._create_op_internal("Identity", [tensor], {"T": tensor._dtype.base_dtype}, "control_ret")
    op._add_control_inputs(control)
    return op._outputs[0]


def _definition(function) -> bytes:
    known = _definitions.get(function)
    return known if known is not None else function_to_function_def(function).SerializeToString(deterministic=True)


def _check_op_types(fdefs: dict) -> None:
    known = set(registered_op_types())
    for fdef in fdefs.values():
        for node in fdef.node_def:
            if graph_io.IMPORT_ALIASES.get(node.op, node.op) not in known:
                raise NotFoundError(None, None, f"Op type not registered '{node.op}' in binary running on adplace "
                                                f"(node '{node.name}' of function '{fdef.signature.name}').")


def import_library(lib, graph) -> dict:
    """Build a GraphDef's library into function graphs registered in `graph`'s library; returns {library name:
    DefinedFunction}. Registrations are not undone here when this fails: the caller restores `graph._functions`."""
    fdefs: dict = {}
    for fdef in lib.function:
        if fdef.signature.name in fdefs:
            raise ValueError(f"The library defines function {fdef.signature.name!r} twice")
        fdefs[fdef.signature.name] = fdef
    if not fdefs:
        return {}
    _check_op_types(fdefs)
    resolved: dict = {}
    for name in _callees_first(fdefs):
        fdef = _renamed_calls(fdefs[name], resolved)
        definition = fdef.SerializeToString(deterministic=True)
        existing = graph._get_function(name)
        if existing is not None and _definition(existing) == definition:
            resolved[name] = existing
            continue
        unique, i = name, 0
        while graph._is_function(unique) or (unique != name and unique in fdefs):
            i += 1
            unique = f"{name}_{i}"
        try:
            function = _build_function(fdef, unique, graph, {**graph._functions, **resolved})
        except (TypeError, ValueError, KeyError) as e:
            raise ValueError(f"Function '{name}' of the library cannot be imported: {e}") from e
        _definitions[function] = definition
        graph._add_function(function)
        resolved[name] = function
    return resolved


def _renamed_calls(fdef, resolved: dict):
    """`fdef` with the func attrs of its nodes naming the functions they resolved to (a copy when one changes)."""
    renames = {name: f.name for name, f in resolved.items() if f.name != name}
    if not renames or not (_called(fdef) & set(renames)):
        return fdef
    copy = protos.function_pb2.FunctionDef()
    copy.CopyFrom(fdef)
    for node in copy.node_def:
        for value in node.attr.values():
            if value.HasField("func") and value.func.name in renames:
                value.func.name = renames[value.func.name]
            for f in value.list.func:
                f.name = renames.get(f.name, f.name)
    return copy
