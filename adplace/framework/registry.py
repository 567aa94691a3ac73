"""Op definitions (shape and dtype inference) and the kernel registry keyed by (op type, device type, dtype).

Kernel availability is data the placer reads: `has_kernel("VariableV2", "GPU", int32)` is False, as in TF, which is
what makes soft placement matter.

    register_kernel("Sin", "CPU", FLOATING)(lambda op, ctx: np.sin)
    has_kernel("Sin", "CPU", float32)        # True
"""
from __future__ import annotations

import functools
from typing import Callable, Iterable

from adplace.framework import dtypes as _dtypes


class OpDef:
    """What the graph needs to know about an op type: output inference, ref inputs and statefulness.

    `infer(inputs, attrs, name)` returns one (DType, TensorShape) per output and raises TypeError/ValueError (TF1's
    classes for graph-construction errors) naming the op on a mismatch. `is_view` marks ops whose output may share
    memory with an input or with state; fetches of such outputs are copied so users cannot corrupt a variable.
    """

    __slots__ = ("type", "infer", "ref_inputs", "is_stateful", "is_view")

    def __init__(self, op_type: str, infer: Callable, ref_inputs: tuple = (), is_stateful: bool = False,
                 is_view: bool = False):
        self.type, self.infer, self.ref_inputs = op_type, infer, tuple(ref_inputs)
        self.is_stateful, self.is_view = is_stateful, is_view

    name = property(lambda self: self.type, doc="The op type (OpDef.name in TF).")


_OP_DEFS: dict[str, OpDef] = {}


def register_op(op_type: str, infer: Callable, *, ref_inputs: tuple = (), is_stateful: bool = False,
                is_view: bool = False) -> OpDef:
    """Define an op type; an op type is defined once."""
    if op_type in _OP_DEFS:
        raise KeyError(f"Op type {op_type!r} is already registered")
    op_def = _OP_DEFS[op_type] = OpDef(op_type, infer, ref_inputs, is_stateful, is_view)
    return op_def


def get_op_def(op_type: str) -> OpDef:
    try:
        return _OP_DEFS[op_type]
    except KeyError:
        raise KeyError(f"Op type not registered: {op_type!r}. Known types: {', '.join(sorted(_OP_DEFS))}") from None


def registered_op_types() -> list[str]:
    return sorted(_OP_DEFS)


# --- kernels ---------------------------------------------------------------------------------------------------
# A kernel factory is called once per (op, session) when a plan is built: factory(op, ctx) -> callable(*inputs).
_KERNELS: dict[tuple[str, str], tuple[frozenset | None, Callable]] = {}


def register_kernel(op_type: str, device_type: str, dtypes: Iterable | None = None) -> Callable:
    """Decorator: register `factory(op, ctx) -> kernel` for an op type on a device type, for the given dtypes.

    `dtypes=None` means the kernel does not depend on a type attribute (NoOp) or accepts every dtype.
    """
    allowed = None if dtypes is None else frozenset(_dtypes.as_dtype(d) for d in dtypes)

    def decorate(factory: Callable) -> Callable:
        _KERNELS[(op_type, device_type)] = (allowed, factory)
        kernel_device_types.cache_clear()
        return factory

    return decorate


def kernel_dtype(op) -> _dtypes.DType | None:
    """The dtype a kernel is selected by: attr T, else attr dtype, else the first output's base dtype."""
    attrs = op._attrs
    dtype = attrs.get("T") or attrs.get("dtype")
    if dtype is None and op._outputs:
        dtype = op._outputs[0]._dtype
    return None if dtype is None else dtype.base_dtype


def has_kernel(op_type: str, device_type: str, dtype=None) -> bool:
    """Whether a kernel exists for op type on device type for dtype (any dtype when None)."""
    entry = _KERNELS.get((op_type, device_type))
    if entry is None:
        return False
    allowed = entry[0]
    return allowed is None or dtype is None or _dtypes.as_dtype(dtype).base_dtype in allowed


@functools.lru_cache(maxsize=None)
def kernel_device_types(op_type: str, dtype) -> frozenset:
    """The device types with a kernel for (op type, dtype); cached, since the placer asks once per op."""
    return frozenset(dev for (t, dev) in _KERNELS if t == op_type and has_kernel(op_type, dev, dtype))


def kernel_factory(op_type: str, device_type: str) -> Callable:
    return _KERNELS[(op_type, device_type)][1]


def registered_kernels_text(op_type: str) -> str:
    """TF's 'Registered kernels:' block for error messages."""
    lines = []
    for (t, dev), (allowed, _) in sorted(_KERNELS.items()):
        if t == op_type:
            types = "any type" if allowed is None else ", ".join(sorted(d.name for d in allowed))
            lines.append(f"  device='{dev}'; T in [{types}]")
    return "\n".join(lines) or "  <no registered kernels>"


# --- gradients (filled by ops modules; used by adplace.gradients) -------------------------------------------------
_GRADIENTS: dict[str, Callable | None] = {}


class RegisterGradient:
    """Decorator registering the gradient function of an op type (tf.RegisterGradient)."""

    def __init__(self, op_type: str):
        if not isinstance(op_type, str):
            raise TypeError("op_type must be a string")
        self._op_type = op_type

    def __call__(self, fn: Callable) -> Callable:
        if self._op_type in _GRADIENTS:
            raise KeyError(f"Registering two gradient with name '{self._op_type}'!")
        _GRADIENTS[self._op_type] = fn
        return fn


def NotDifferentiable(op_type: str) -> None:  # noqa: N802 - TF's public name
    """Declare that no gradient flows through op type (tf.NotDifferentiable)."""
    _GRADIENTS[op_type] = None


NoGradient = NotDifferentiable


class RegisterShape:
    """TF1's deprecated shape-function decorator (`ops.RegisterShape("MyOp")(shape_fn)`), kept so old code imports.

    As in TF 1.x, where C++ shape functions took over, the function is only recorded: adplace computes shapes
    with the `infer` function given to register_op.
    """

    registered: dict[str, Callable | None] = {}

    def __init__(self, op_type: str):
        if not isinstance(op_type, str):
            raise TypeError("op_type must be a string")
        self._op_type = op_type

    def __call__(self, f: Callable | None) -> Callable | None:
        RegisterShape.registered.setdefault(self._op_type, f)
        return f
_MISSING = object()


def get_gradient_function(op):
    """The gradient function of op's type (or of the name gradient_override_map gave it); None when not
    differentiable; LookupError when unregistered."""
    attrs = getattr(op, "_attrs", None)
    grad_type = attrs.get("_gradient_op_type", op.type) if attrs else op.type
    fn = _GRADIENTS.get(grad_type, _MISSING)
    if fn is _MISSING:
        raise LookupError(f"No gradient defined for operation '{op.name}' (op type: {grad_type})")
    return fn
