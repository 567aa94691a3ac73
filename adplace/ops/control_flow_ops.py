"""NoOp and group: ops that exist only to order other ops."""
from __future__ import annotations

from adplace.framework.default_graph import control_dependencies, name_scope
from adplace.framework.operation import Operation, Tensor
from adplace.framework.registry import register_op
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
            if isinstance(item, (list, tuple)):
                collect(item)
            elif item is not None:
                flat.append(item)
    collect(inputs)
    deps = [x.op if isinstance(x, Tensor) else x for x in flat]
    deps = [getattr(d, "op", d) if not isinstance(d, Operation) else d for d in deps]
    with name_scope(name, "group_deps") as scope:
        with control_dependencies(deps):
            return no_op(name=scope)
