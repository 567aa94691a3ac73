"""NoOp, group, tuple and with_dependencies: ops that exist only to order other ops."""
from __future__ import annotations

import builtins

from adplace.framework.conversion import convert_to_tensor
from adplace.framework.default_graph import colocate_with, control_dependencies, device, name_scope
from adplace.framework.indexed_slices import IndexedSlices
from adplace.framework.operation import Operation, Tensor
from adplace.framework.registry import register_op
from adplace.ops import array_ops
from adplace.ops.op_builder import apply_op

register_op("NoOp", lambda inputs, attrs, name: [])


def no_op(name: str | None = None) -> Operation:
    """An op that does nothing; useful as a target with control inputs (tf.no_op)."""
    return apply_op("NoOp", [], name=name or "NoOp")


def group(*inputs, name: str | None = None) -> Operation:
    """An op that runs once all `inputs` (ops or tensors, possibly nested in lists) have run (tf.group)."""
    flat = []

    def collect(items):
        for item in items:
            if isinstance(item, (list, builtins.tuple)):
                collect(item)
            elif item is not None:
                flat.append(item)
    collect(inputs)
    deps = [x.op if isinstance(x, Tensor) else x for x in flat]
    deps = [getattr(d, "op", d) if not isinstance(d, Operation) else d for d in deps]
    for d in deps:
        if not isinstance(d, Operation):
            raise TypeError(f"'{d!r}' is not a tf.Operation or tf.Tensor: tf.group takes ops and tensors")
    with name_scope(name, "group_deps") as scope:
        by_device: dict[str, list] = {}  # TF groups per requested device: one NoOp per device, then one root
        for op in deps:
            by_device.setdefault(op.device, []).append(op)
        if len(by_device) <= 1:
            return _no_op_on(next(iter(by_device), ""), deps, scope)
        per_device = [_no_op_on(dev, by_device[dev], None) for dev in sorted(by_device)]
        with control_dependencies(per_device):
            return no_op(name=scope)


def _no_op_on(dev: str, deps: list, name: str | None) -> Operation:
    """A NoOp after `deps`, under device `dev` (TF's _GroupControlDeps)."""
    with control_dependencies(deps), device(dev):
        return no_op(name=name)


def with_dependencies(dependencies, output_tensor: Tensor, name: str | None = None) -> Tensor:
    """`output_tensor`'s value, available only after `dependencies` ran (an Identity colocated with it); for an
    IndexedSlices its values are gated and it stays sparse."""
    if not isinstance(output_tensor, (Tensor, IndexedSlices)):
        output_tensor = convert_to_tensor(output_tensor)
    with name_scope(name, "control_dependency", list(dependencies) + [output_tensor]) as scope:
        with colocate_with(output_tensor.op), control_dependencies(dependencies):
            if isinstance(output_tensor, IndexedSlices):
                return IndexedSlices(array_ops.identity(output_tensor.values, name=scope), output_tensor.indices,
                                     output_tensor.dense_shape)
            return array_ops.identity(output_tensor, name=scope)


def tuple(tensors, name: str | None = None, control_inputs=None) -> list:  # noqa: A001 - TF's public name
    """The same tensors, each available only once all of them (and `control_inputs`) are computed (tf.tuple)."""
    with name_scope(name, "tuple", [t for t in tensors if t is not None]):
        gating_ops = [t.op for t in tensors if t is not None]
        gating_ops += [c if isinstance(c, Operation) else c.op for c in control_inputs or ()]
        if not gating_ops:
            raise ValueError(f"Must have at least one Tensor: {tensors}")
        gating_ops = sorted(set(gating_ops), key=lambda op: op._id)
        gate = group(*gating_ops)
        return [None if t is None else with_dependencies([gate], t) for t in tensors]
