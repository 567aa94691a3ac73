"""Stateful ops on variables: VariableV2 and the Assign family, which take the variable by reference.

A reference edge (VariableV2 -> Assign) forces both ends onto one device, as in TF.
"""
from __future__ import annotations

from adplace.framework import dtypes as _dtypes
from adplace.framework.conversion import convert_to_tensor
from adplace.framework.default_graph import name_scope
from adplace.framework.operation import Tensor
from adplace.framework.registry import register_op
from adplace.framework.tensor_shape import TensorShape
from adplace.ops.op_builder import SCALAR, apply_op_1, shapes_text

register_op("VariableV2", lambda inputs, attrs, name: [(attrs["dtype"]._as_ref, attrs["shape"])],
            is_stateful=True, is_view=True)


def _assign_infer(op_type: str):
    def infer(inputs, attrs, name):
        ref, value = inputs
        if not ref._dtype.is_ref_dtype:
            raise TypeError(f"'{op_type}' Op requires that input 'ref' be a mutable tensor (a Variable), got "
                            f"{ref.name} of dtype {ref._dtype.name} in '{name}'")
        if value._dtype.base_dtype is not ref._dtype.base_dtype:
            raise TypeError(f"Input 'value' of '{op_type}' Op has type {value._dtype.base_dtype.name} that does not "
                            f"match type {ref._dtype.name} of argument 'ref'.")
        shape = ref._shape
        if op_type != "Assign" or attrs["validate_shape"]:
            if not ref._shape.is_compatible_with(value._shape):
                raise ValueError(f"Shapes must be equal rank and compatible for '{name}' (op: '{op_type}') with "
                                 f"input shapes: {shapes_text(inputs)}.")
            shape = ref._shape.merge_with(value._shape)
        else:
            shape = value._shape
        return [(ref._dtype, shape)]
    return infer


for _op_type in ("Assign", "AssignAdd", "AssignSub"):
    register_op(_op_type, _assign_infer(_op_type), ref_inputs=(0,), is_stateful=True, is_view=True)
register_op("IsVariableInitialized", lambda inputs, attrs, name: [(_dtypes.bool, SCALAR)], ref_inputs=(0,))
register_op("InitializedValue", lambda inputs, attrs, name: [(inputs[1]._dtype.base_dtype, inputs[1]._shape)],
            ref_inputs=(0,), is_view=True)


def variable_op_v2(shape, dtype, name: str = "Variable", container: str = "", shared_name: str = "") -> Tensor:
    """The VariableV2 op itself: its output is the variable by reference (dtype `*_ref`)."""
    return apply_op_1("VariableV2", [], {"shape": TensorShape(shape), "dtype": _dtypes.as_dtype(dtype).base_dtype,
                                         "container": container, "shared_name": shared_name}, name=name)


def variable_op(shape, dtype, name: str = "Variable", set_shape: bool = True, container: str = "",
                shared_name: str = "") -> Tensor:
    """TF1's deprecated raw variable op: a VariableV2 of `shape` (unknown when `set_shape=False`), uninitialized
    until something assigns it."""
    return variable_op_v2(shape if set_shape else None, dtype, name=name, container=container,
                          shared_name=shared_name)


def _ref(ref):
    return ref._ref() if hasattr(ref, "_ref") else ref


def _assign_op(op_type: str, ref, value, use_locking, name, validate_shape=True) -> Tensor:
    """Build an Assign-family op; `use_locking=None` takes TF's op default (Assign locks, AssignAdd/Sub do not)."""
    ref = _ref(ref)
    if use_locking is None:
        use_locking = op_type == "Assign"
    with name_scope(name, op_type, [ref]) as scope:
        value = convert_to_tensor(value, dtype=ref.dtype.base_dtype, name="value")
        return apply_op_1(op_type, [ref, value], {"T": ref.dtype.base_dtype, "use_locking": bool(use_locking),
                                                  "validate_shape": bool(validate_shape)}, name=scope)


def assign(ref, value, validate_shape: bool | None = None, use_locking: bool | None = None,
           name: str | None = None) -> Tensor:
    """Store `value` in the variable `ref`; returns the ref after the assignment (tf.assign).

    `use_locking` (default True, as TF's Assign op) makes the store exclusive with other locked updates of `ref`.
    """
    return _assign_op("Assign", ref, value, use_locking, name, True if validate_shape is None else validate_shape)


def assign_add(ref, value, use_locking: bool | None = None, name: str | None = None) -> Tensor:
    """ref += value (tf.assign_add). With `use_locking=True` the read-modify-write is atomic: N threads adding 1.0
    K times each add exactly N*K; without it (TF's default) concurrent increments may be lost."""
    return _assign_op("AssignAdd", ref, value, use_locking, name)


def assign_sub(ref, value, use_locking: bool | None = None, name: str | None = None) -> Tensor:
    """ref -= value (tf.assign_sub)."""
    return _assign_op("AssignSub", ref, value, use_locking, name)


def is_variable_initialized(ref, name: str | None = None) -> Tensor:
    return apply_op_1("IsVariableInitialized", [_ref(ref)], {"dtype": _ref(ref).dtype.base_dtype},
                      name=name or "IsVariableInitialized")
