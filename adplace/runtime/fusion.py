"""The plan pass that fuses chains of elementwise ops on a CUDA GPU into one kernel (adplace.kernels.fusion).

A group is a DAG of fusible steps on one GPU whose intermediate outputs are read only inside the group and never
fetched; its last step (the root) keeps its place and runs the fused kernel on the group's outside inputs (leaves),
and the other members' steps are dropped. Every member's output has the root's fully known static shape, and every
leaf has that shape or is a scalar. Placement, transfers and results are unchanged; step stats name the members.
Turned off by `ConfigProto(graph_options=GraphOptions(rewrite_options=RewriterConfig(remapping=RewriterConfig.OFF)))`.
"""
from __future__ import annotations

from adplace.framework.registry import kernel_dtype
from adplace.kernels import fusion as _codegen


def _fusible(op) -> bool:
    return _codegen.fusible(op._type, kernel_dtype(op)) and len(op._outputs) == 1


def _as_tuple(slots) -> tuple:
    return (slots,) if type(slots) is int else slots


def find_groups(ins: list, outs: list, ops: list, devices: list, transfer_at: dict, keep: set) -> dict:
    """root step -> member steps in order (root last), for groups of two or more fusible steps."""
    readers: dict[int, set] = {}
    for index, slots in enumerate(ins):
        for slot in _as_tuple(slots):
            readers.setdefault(slot, set()).add(index)
    root_of: list = [None] * len(ops)
    for index in range(len(ops) - 1, -1, -1):
        op, device = ops[index], devices[index]
        if index in transfer_at or not device.is_cuda or not _fusible(op):
            continue
        shape = op._outputs[0]._shape
        if not shape.is_fully_defined() or any(not (t._shape.is_fully_defined() and t._shape.as_tuple() in
                                                    ((), shape.as_tuple())) for t in op._inputs):
            continue
        root_of[index] = index
        out = outs[index]
        users = readers.get(out, ()) if type(out) is int and out not in keep else ()
        roots = {root_of[r] for r in users}
        if len(roots) == 1:
            root = roots.pop()
            if root is not None and devices[root] is device and \
                    ops[root]._outputs[0]._shape.as_tuple() == shape.as_tuple():
                root_of[index] = root
    groups: dict[int, list] = {}
    for index, root in enumerate(root_of):
        if root is not None:
            groups.setdefault(root, []).append(index)
    return {root: members for root, members in groups.items() if len(members) > 1}


def fused_kernel(members: list, ins: list, outs: list, ops: list, state):
    """(kernel, leaf slots) computing a group's root from its leaves in one launch on `state`'s device."""
    temp_of = {outs[index]: f"t{k}" for k, index in enumerate(members)}
    leaves: list = []
    leaf_dtypes: list = []
    chain = []
    for index in members:
        op = ops[index]
        args = []
        for slot, tensor in zip(_as_tuple(ins[index]), op._inputs):
            if slot in temp_of:
                args.append(temp_of[slot])
            else:
                if slot not in leaves:
                    leaves.append(slot)
                    leaf_dtypes.append(tensor._dtype.base_dtype)
                args.append(f"x{leaves.index(slot)}")
        chain.append(_codegen.Member(op._type, kernel_dtype(op), op._outputs[0]._dtype.base_dtype, tuple(args)))
    kernel = _codegen.compiled(state.cp, _codegen.chain_source(chain, leaf_dtypes))
    return state.launcher(kernel, ops[members[-1]]), leaves


def fuse(plan_lists: tuple, transfer_at: dict, keep: set, ctx) -> tuple[dict, dict]:
    """Fuse the groups of a plan's step lists in place; returns (new transfer_at, {root step: member op names})."""
    kernels, ins, outs, ops, devices = plan_lists
    groups = find_groups(ins, outs, ops, devices, transfer_at, keep)
    if not groups:
        return transfer_at, {}
    dropped = set()
    names = {}
    for root, members in groups.items():
        kernel, leaves = fused_kernel(members, ins, outs, ops, ctx.cuda_state(devices[root]))
        kernels[root] = kernel
        ins[root] = leaves[0] if len(leaves) == 1 else tuple(leaves)
        dropped.update(members[:-1])
        names[root] = [ops[index].name for index in members]
    kept = [index for index in range(len(ops)) if index not in dropped]
    new_index = {index: k for k, index in enumerate(kept)}
    for lst in plan_lists:
        lst[:] = [lst[index] for index in kept]
    return ({new_index[i]: t for i, t in transfer_at.items()}, {new_index[r]: n for r, n in names.items()})
