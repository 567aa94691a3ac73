"""Ops that repeat a tensor along its axes: tf.tile, tf.broadcast_to and the BroadcastGradientArgs op that undoes
broadcasting in gradients."""
from __future__ import annotations

import numpy as np

from adplace.framework import dtypes as _dtypes
from adplace.framework.conversion import convert_to_tensor
from adplace.framework.default_graph import name_scope
from adplace.framework.operation import Tensor
from adplace.framework.registry import register_op
from adplace.framework.tensor_shape import TensorShape, dims_text, unknown_shape
from adplace.ops.op_builder import (apply_op, apply_op_1, check_dtype, constant_value, int_const, shape_from_tensor,
                                    shapes_text)


# --- Tile -----------------------------------------------------------------------------------------------------------
def _tile_dims(x_dims: tuple | None, m_dims: tuple | None, m_value, name: str) -> tuple | None:
    """TF's Tile shape function on static facts (x's dims, multiples' dims and value when known): the output dims
    (None: unknown rank), or TF's ValueError when they cannot fit. A multiple of -1 is an unknown dim, as in TF."""
    def fail(detail: str):
        known = "" if m_value is None or m_value.ndim != 1 or m_value.size > 32 else \
            f" and with computed input tensors: input[1] = <{' '.join(str(int(v)) for v in m_value)}>"
        raise ValueError(f"{detail} for '{name}' (op: 'Tile') with input shapes: {dims_text(x_dims)}, "
                         f"{dims_text(m_dims)}{known}.")

    if m_dims is not None and len(m_dims) != 1:
        fail(f"Shape must be rank 1 but is rank {len(m_dims)}")
    if m_value is not None:
        values = [int(v) for v in m_value.ravel().tolist()]
        if any(v < -1 for v in values):
            fail(f"Invalid value in tensor used for shape: {min(values)}")
        multiples = [None if v == -1 else v for v in values]
    else:
        multiples = None if not m_dims or m_dims[0] is None else [None] * m_dims[0]
    if x_dims is not None:
        if multiples is not None and len(multiples) != len(x_dims):
            fail(f"Shape must be rank {len(x_dims)} but is rank {len(multiples)}")
        multiples = multiples or [None] * len(x_dims)
    if multiples is None:
        return None
    return tuple(0 if d == 0 or m == 0 else None if d is None or m is None else d * m
                 for d, m in zip(x_dims or (None,) * len(multiples), multiples))


def _tile_infer(inputs, attrs, name):
    x, multiples_t = inputs
    check_dtype("Tile", "multiples", multiples_t._dtype, (_dtypes.int32, _dtypes.int64))
    value = constant_value(multiples_t)
    dims = _tile_dims(x._shape.as_tuple(), multiples_t._shape.as_tuple(),
                      None if value is None else np.asarray(value), name)
    return [(x._dtype.base_dtype, TensorShape(dims))]


register_op("Tile", _tile_infer)


def _static_dims(value) -> tuple | None:
    """The dims of a Tensor, Variable or Python/NumPy value, found without building an op (None: unknown)."""
    shape = getattr(value, "shape", None)
    if isinstance(shape, TensorShape):
        return shape.as_tuple()
    try:
        return np.shape(value)
    except ValueError:  # a ragged list: converting it reports the error
        return None


def tile(input, multiples, name: str | None = None) -> Tensor:  # noqa: A002
    """Repeat `input` multiples[i] times along axis i (tf.tile).

    Multiples that cannot fit `input` are TF's ValueError here, raised before any op (not even a Const) is added.
    """
    with name_scope(name, "Tile", [input]) as scope:
        if isinstance(multiples, Tensor):
            m_dims, m_value = multiples.shape.as_tuple(), None
        elif isinstance(multiples, (list, tuple)) and any(isinstance(v, Tensor) for v in multiples):
            m_dims, m_value = (len(multiples),), None
        else:
            try:
                m_value = np.asarray(multiples)
                m_dims, m_value = m_value.shape, (m_value if m_value.dtype.kind in "iub" else None)
            except ValueError:  # ragged: int_const raises the conversion error
                m_dims, m_value = None, None
        _tile_dims(_static_dims(input), m_dims, m_value, scope.rstrip("/"))
        return apply_op_1("Tile", [convert_to_tensor(input, name="input"), int_const(multiples, name="multiples")],
                          name=scope)


# --- BroadcastGradientArgs ------------------------------------------------------------------------------------------
def broadcast_gradient_args(s0, s1, name: str | None = None) -> list[Tensor]:
    """The axes to sum each operand's gradient over to undo broadcasting of shapes s0 and s1."""
    return apply_op("BroadcastGradientArgs", [s0, s1], {"T": s0.dtype.base_dtype},
                    name=name or "BroadcastGradientArgs").outputs


register_op("BroadcastGradientArgs", lambda inputs, attrs, name: [(inputs[0]._dtype.base_dtype,
                                                                    unknown_shape(1))] * 2)




# --- BroadcastTo ----------------------------------------------------------------------------------------------------
def _broadcast_to_infer(inputs, attrs, name):
    x, shape_t = inputs
    check_dtype("BroadcastTo", "shape", shape_t._dtype, (_dtypes.int32, _dtypes.int64))
    target = shape_from_tensor(shape_t)
    dims, out = x._shape.as_tuple(), target.as_tuple()
    if dims is not None and out is not None:
        if len(dims) > len(out) or any(d is not None and o is not None and d not in (1, o)
                                       for d, o in zip(reversed(dims), reversed(out))):
            raise ValueError(f"Incompatible shapes: {dims_text(dims)} vs. {dims_text(out)} for '{name}' (op: "
                             f"'BroadcastTo') with input shapes: {shapes_text(inputs)}.")
    return [(x._dtype.base_dtype, target)]


register_op("BroadcastTo", _broadcast_to_infer, is_view=True)


def broadcast_to(input, shape, name: str | None = None) -> Tensor:  # noqa: A002 - TF's argument name
    """`input` broadcast to `shape` by NumPy's rules (tf.broadcast_to): its dims are matched from the last, and
    each must be 1 or equal.

        tf.broadcast_to([1, 2], [2, 2])   # [[1, 2], [1, 2]]
    """
    with name_scope(name, "BroadcastTo", [input, shape]) as scope:
        x = convert_to_tensor(input, name="input")
        shape_t = int_const(shape, name="shape")
        return apply_op_1("BroadcastTo", [x, shape_t], {"T": x.dtype.base_dtype, "Tidx": shape_t.dtype.base_dtype},
                          name=scope)
