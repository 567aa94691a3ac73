"""Cutting a placed graph into pieces per task for one run signature (fetches, feeds), as GraphDefs the tasks import.

A piece is the ops of one task at one stage. An op's stage is the largest of its inputs' stages, plus one for an
input from another task; so a piece needs only pieces of earlier stages (or of its own task, earlier), and the whole
run is the pieces in stage order, each started once Ray has the values it takes. A value crossing pieces leaves
the piece that makes it as an output and enters the piece that takes it as a placeholder: it moves through Ray's
object store once per (tensor, step, destination piece).

    plan = partition(graph, placement.device_of, fetch_elements, fed_tensors)
    plan.pieces[0].graph_def, plan.pieces[0].inputs     # [("feed", 0) or ("piece", j, k)]

Handles (resource), datasets (variant) and variables' references cannot leave their task: a piece that needs one made
by an earlier piece of its task makes it again (the op that makes a handle finds the same resource, a variable op the
same variable). As TF's placer keeps an op with the resource it takes, `follow_handles` moves an op that names no job
to the task of the handles it takes (a queue's enqueue built outside the queue's `tf.device`); one pinned to another
task is InvalidArgumentError. A while loop must stay on one task.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from adplace.framework import dtypes as _dtypes
from adplace.framework import errors, function_def, graph_io
from adplace.framework.device_spec import DeviceSpec
from adplace.framework.operation import Operation, Tensor
from adplace.framework.tensor_util import shape_to_proto
from adplace.lib import protos

_HANDLES = frozenset({_dtypes.resource, _dtypes.variant})


def _stays(t: Tensor) -> bool:
    """A value that cannot leave its task: a handle, a dataset, or a variable's reference."""
    return t.dtype.base_dtype in _HANDLES or t.dtype.is_ref_dtype


@dataclass
class Piece:
    task: str                                       # "/job:ps/replica:0/task:0"
    stage: int
    ops: list = field(default_factory=list)         # the graph's ops it runs, in creation order
    inputs: list = field(default_factory=list)      # per placeholder: ("feed", i) or ("piece", j, k)
    input_names: list = field(default_factory=list)
    outputs: list = field(default_factory=list)     # original Tensors it hands on
    targets: list = field(default_factory=list)     # op names run for their effects
    after: set = field(default_factory=set)         # pieces it runs after
    graph_def: bytes = b""


@dataclass
class Plan:
    pieces: list
    fetches: list  # per fetch element: ("feed", i), ("piece", j, k), or None (an op)


def _needed(fetches: list, fed: dict) -> list[Operation]:
    needed, stack = set(), [e if isinstance(e, Operation) else e.op for e in fetches
                            if not (isinstance(e, Tensor) and e in fed)]
    while stack:
        op = stack.pop()
        if op in needed:
            continue
        needed.add(op)
        stack.extend(t.op for t in op.inputs if t not in fed)
        stack.extend(op.control_inputs)
    return sorted(needed, key=lambda o: o._id)


def follow_handles(placement, ops: list) -> None:
    """Re-place each of `ops` (just placed, in creation order) whose requested device names no job and which takes a
    handle or reference made on another task, onto the device of that handle's maker, as TF colocates them."""
    for op in ops:
        if DeviceSpec.from_string(op._device).job is not None:
            continue
        for t in op._inputs:
            maker = placement.device_of(t.op)
            if _stays(t) and maker.task_name != placement.device_of(op).task_name:
                placement.device_by_op_id[op._id] = maker
                break


def partition(graph, device_of, fetches: list, fed: list[Tensor]) -> Plan:
    """The pieces of the run that computes `fetches` (Tensors and Operations) given `fed` tensors."""
    feed_index = {t: i for i, t in enumerate(fed)}
    order = _needed(fetches, feed_index)
    task = {op: device_of(op).task_name for op in order}
    stage: dict = {}
    for op in order:
        level = 0
        for t in op.inputs:
            if t in feed_index:
                continue
            producer = t.op
            if producer._id >= op._id:  # a loop's back edge: checked below
                continue
            crossing = task[producer] != task[op]
            if crossing and _stays(t):
                raise errors.InvalidArgumentError(
                    None, op, f"{op.name} on {task[op]} takes {t.name}, a {t.dtype.base_dtype.name} made on "
                    f"{task[producer]}: handles and datasets cannot move between tasks; place '{op.name}' on "
                    f"{task[producer]}.")
            level = max(level, stage[producer] + crossing)
        for c in op.control_inputs:
            if c._id < op._id:
                level = max(level, stage[c] + (task[c] != task[op]))
        stage[op] = level
    late = _as_late_as_possible(order, task, stage, feed_index)
    if not _back_edges_split(order, task, late, feed_index):
        stage = late
    for op in order:
        for t in op.inputs:
            p = t.op
            if t not in feed_index and p._id >= op._id and (task[p] != task[op] or stage[p] != stage[op]):
                raise errors.UnimplementedError(None, op, f"A while loop spanning tasks or stages ({op.name} on "
                                                f"{task[op]}, {p.name} on {task[p]}) is not supported: keep a loop "
                                                f"and what it reads inside it on one task.")
    pieces: dict = {}
    for op in order:
        pieces.setdefault((stage[op], task[op]), Piece(task[op], stage[op])).ops.append(op)
    ordered = sorted(pieces.values(), key=lambda p: (p.stage, p.task))
    piece_of = {op: i for i, piece in enumerate(ordered) for op in piece.ops}
    taken = {op._name.lower() for op in graph._ops}  # names in use, for the slice constants op_nodes adds
    for i, piece in enumerate(ordered):
        _build(graph, piece, i, ordered, piece_of, feed_index, device_of, taken)
    sources = []
    for element in fetches:
        if isinstance(element, Operation):
            sources.append(None)
        elif element in feed_index:
            sources.append(("feed", feed_index[element]))
        else:
            sources.append(_output_of(ordered, piece_of[element.op], element))
    return Plan(ordered, sources)


def _as_late_as_possible(order: list, task: dict, stage: dict, feed_index: dict) -> dict:
    """Stages with each op moved as late as its consumers allow, so that a task's ops that feed only its later
    stage join that stage's piece instead of making a piece (and transfers) of their own."""
    consumers: dict = {op: [] for op in order}
    for op in order:
        for t in op.inputs:
            if t not in feed_index and t.op._id < op._id:
                consumers[t.op].append(op)
        for c in op.control_inputs:
            if c._id < op._id:
                consumers[c].append(op)
    late: dict = {}
    for op in reversed(order):
        users = consumers[op]
        late[op] = stage[op] if not users else max(stage[op], min(late[c] - (task[c] != task[op]) for c in users))
    return late


def _back_edges_split(order: list, task: dict, stage: dict, feed_index: dict) -> bool:
    return any(t not in feed_index and t.op._id >= op._id and (task[t.op] != task[op] or stage[t.op] != stage[op])
               for op in order for t in op.inputs)


def _output_of(pieces: list, j: int, tensor: Tensor) -> tuple:
    outputs = pieces[j].outputs
    if tensor not in outputs:
        outputs.append(tensor)
    return ("piece", j, outputs.index(tensor))


def _build(graph, piece: Piece, index: int, pieces: list, piece_of: dict, feed_index: dict, device_of,
           taken: set) -> None:
    members = set(piece.ops)
    nodes, placeholders = [], {}

    def add(op: Operation) -> None:
        for node in graph_io.op_nodes(op, taken):
            node.device = device_of(op).name
            _rewire(node, op)
            nodes.append(node)

    def placeholder_for(t: Tensor, source: tuple) -> str:
        name = placeholders.get(t)
        if name is None:
            name = placeholders[t] = f"adplace_piece/input_{len(piece.inputs)}"
            piece.inputs.append(source)
            piece.input_names.append(name + ":0")
            node = protos.node_def_pb2.NodeDef(name=name, op="Placeholder", device=device_of(piece.ops[0]).name)
            node.attr["dtype"].type = t.dtype.base_dtype.as_datatype_enum
            node.attr["shape"].shape.CopyFrom(shape_to_proto(t.shape))
            nodes.append(node)
        return name + ":0"

    def _rewire(node, op: Operation) -> None:
        inputs = list(node.input)
        del node.input[:]
        data = iter(op.inputs)
        for text in inputs:
            if text.startswith("^"):
                ctrl = graph._ops_by_name.get(text[1:])
                if ctrl is not None and ctrl not in members:
                    piece.after.add(piece_of[ctrl])
                    continue
                node.input.append(text)
                continue
            producer_name = text.split(":")[0]
            if producer_name not in graph._ops_by_name:  # a slice constant written beside its op
                node.input.append(text)
                continue
            t = next(data)
            if t in feed_index:
                node.input.append(placeholder_for(t, ("feed", feed_index[t])))
            elif t.op in members:
                node.input.append(text)
            elif _stays(t):  # made again here (see the module)
                members.add(t.op)
                add(t.op)
                node.input.append(text)
            else:
                j = piece_of[t.op]
                piece.after.add(j)
                node.input.append(placeholder_for(t, _output_of(pieces, j, t)))

    for op in piece.ops:
        add(op)
    consumed = {t.op for op in piece.ops for t in op.inputs} | {c for op in piece.ops for c in op.control_inputs}
    piece.targets = [op.name for op in piece.ops if op not in consumed]
    graph_def = protos.graph_pb2.GraphDef()
    graph_def.versions.CopyFrom(graph_io.versions())
    graph_def.node.extend(nodes)
    functions = function_def.reachable_functions(list(members))
    if functions:
        graph_def.library.CopyFrom(function_def.library(functions))
    piece.graph_def = graph_def.SerializeToString()
    piece.after.discard(index)
