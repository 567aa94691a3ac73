"""How a Python exception looks from Julia: ADPlace.jl's `PyError` shows these parts."""
from adplace.framework.errors import OpError


def error_parts(exc: BaseException) -> tuple[str, str, str | None]:
    """(class name, message, name of the op at fault or None) of `exc`: TF's OpErrors carry their op."""
    op = None
    if isinstance(exc, OpError):
        if exc.op is not None:
            op = exc.op.name
        elif exc.node_def is not None:
            op = getattr(exc.node_def, "name", None) or None
    return type(exc).__name__, str(exc), op
