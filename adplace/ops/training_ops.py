"""The fused optimizer updates of TF1 (tensorflow/core/ops/training_ops.cc): ApplyGradientDescent, ApplyMomentum,
ApplyAdam, ApplyRMSProp, ApplyCenteredRMSProp, ApplyAdagrad, ApplyAdadelta, ApplyFtrl, ApplyFtrlV2, and the sparse
forms SparseApplyMomentum, SparseApplyAdagrad, SparseApplyAdadelta, SparseApplyRMSProp, SparseApplyCenteredRMSProp,
SparseApplyFtrl and SparseApplyFtrlV2.

Each op takes the variable and its slots by reference (so the placer keeps it on the variable's device), the
hyper-parameters as scalars and the gradient with the variable's shape; it updates the variable and slots in place
and outputs the variable by reference, as Assign does. No gradient flows through them. A sparse form takes the
gradient's rows `grad[i]` for the variable's rows `indices[i]` and updates only those rows, one index after another
(a repeated index is updated once per occurrence).

    train = apply_gradient_descent(w, 0.1, g)   # w -= 0.1 * g when `train` runs; output: w's ref
"""
from __future__ import annotations

from adplace.framework import dtypes as _dtypes
from adplace.framework.conversion import convert_to_tensor
from adplace.framework.default_graph import name_scope
from adplace.framework.operation import Tensor
from adplace.framework.registry import NotDifferentiable, register_op
from adplace.framework.tensor_shape import TensorShape
from adplace.ops.op_builder import apply_op_1, check_dtype, shapes_text
from adplace.ops.state_ops import INDEX_TYPES, merge_error, require_ref

TRAINING_TYPES = _dtypes.NUMERIC  # TF's `T: numbertype`; kernels exist for the float and complex types


def _training_infer(op_type: str, input_names: tuple, num_refs: int, grad_name: str):
    """Dtype and shape inference of a training op: refs first, one gradient, scalars otherwise. A sparse op (an
    `indices` input) takes the gradient's rows: grad is [len(indices)] + var.shape[1:] (TF's
    HandleGradAndIndicesInputs)."""
    def infer(inputs, attrs, name):
        var = inputs[0]
        where = f" for '{name}' (op: '{op_type}') with input shapes: {shapes_text(inputs)}."
        for arg, t in zip(input_names[:num_refs], inputs):
            require_ref(op_type, arg, t, name)
        dtype = var._dtype.base_dtype
        check_dtype(op_type, "T", dtype, TRAINING_TYPES)
        shape = var._shape
        for i, (arg, t) in enumerate(zip(input_names, inputs)):
            if arg == "indices":
                check_dtype(op_type, "Tindices", t._dtype, INDEX_TYPES)
                continue
            if t._dtype.base_dtype is not dtype:
                raise TypeError(f"Input '{arg}' of '{op_type}' Op has type {t._dtype.base_dtype.name} that does not "
                                f"match type {dtype.name} of argument '{input_names[0]}'.")
            if arg == grad_name and "indices" in input_names:
                shape = _merge_sparse_grad(shape, t._shape, inputs[input_names.index("indices")]._shape, where)
            elif i < num_refs or arg == grad_name:
                if not shape.is_compatible_with(t._shape):
                    raise ValueError(merge_error(shape, t._shape) + where)
                shape = shape.merge_with(t._shape)
            elif t._shape.ndims not in (None, 0):
                raise ValueError(f"Shape must be rank 0 but is rank {t._shape.ndims}" + where)
        return [(var._dtype, shape)]
    return infer


def _merge_sparse_grad(shape: TensorShape, grad: TensorShape, indices: TensorShape, where: str) -> TensorShape:
    """`shape` merged with grad's row shape, after checking indices is a vector as long as grad."""
    if indices.ndims not in (None, 1):
        raise ValueError(f"Shape must be rank 1 but is rank {indices.ndims}" + where)
    if grad.ndims == 0:
        raise ValueError("Shape must be at least rank 1 but is rank 0" + where)
    n, rows = (t.as_tuple()[0] if t.ndims else None for t in (indices, grad))
    if n is not None and rows is not None and n != rows:
        raise ValueError(f"Dimensions must be equal, but are {n} and {rows}" + where)
    grad_any_rows = grad if grad.ndims is None else TensorShape((None,) + grad.as_tuple()[1:])
    if not shape.is_compatible_with(grad_any_rows):
        raise ValueError(merge_error(shape, grad_any_rows) + where)
    return shape.merge_with(grad_any_rows)


def _register_training_op(op_type: str, input_names: tuple, num_refs: int, grad_name: str = "grad") -> None:
    register_op(op_type, _training_infer(op_type, input_names, num_refs, grad_name),
                ref_inputs=tuple(range(num_refs)), is_stateful=True, is_view=True)
    NotDifferentiable(op_type)


_register_training_op("ApplyGradientDescent", ("var", "alpha", "delta"), 1, grad_name="delta")
_register_training_op("ApplyMomentum", ("var", "accum", "lr", "grad", "momentum"), 2)
_register_training_op("ApplyAdam", ("var", "m", "v", "beta1_power", "beta2_power", "lr", "beta1", "beta2",
                                    "epsilon", "grad"), 3)
_register_training_op("ApplyRMSProp", ("var", "ms", "mom", "lr", "rho", "momentum", "epsilon", "grad"), 3)
_register_training_op("ApplyCenteredRMSProp", ("var", "mg", "ms", "mom", "lr", "rho", "momentum", "epsilon",
                                               "grad"), 4)
_register_training_op("ApplyAdagrad", ("var", "accum", "lr", "grad"), 2)
_register_training_op("ApplyAdadelta", ("var", "accum", "accum_update", "lr", "rho", "epsilon", "grad"), 3)
_register_training_op("ApplyFtrl", ("var", "accum", "linear", "grad", "lr", "l1", "l2", "lr_power"), 3)
_register_training_op("ApplyFtrlV2", ("var", "accum", "linear", "grad", "lr", "l1", "l2", "l2_shrinkage",
                                      "lr_power"), 3)
_register_training_op("SparseApplyFtrl", ("var", "accum", "linear", "grad", "indices", "lr", "l1", "l2",
                                          "lr_power"), 3)
_register_training_op("SparseApplyFtrlV2", ("var", "accum", "linear", "grad", "indices", "lr", "l1", "l2",
                                            "l2_shrinkage", "lr_power"), 3)
_register_training_op("SparseApplyMomentum", ("var", "accum", "lr", "grad", "indices", "momentum"), 2)
_register_training_op("SparseApplyAdagrad", ("var", "accum", "lr", "grad", "indices"), 2)
_register_training_op("SparseApplyAdadelta", ("var", "accum", "accum_update", "lr", "rho", "epsilon", "grad",
                                              "indices"), 3)
_register_training_op("SparseApplyRMSProp", ("var", "ms", "mom", "lr", "rho", "momentum", "epsilon", "grad",
                                             "indices"), 3)
_register_training_op("SparseApplyCenteredRMSProp", ("var", "mg", "ms", "mom", "lr", "rho", "momentum", "epsilon",
                                                     "grad", "indices"), 4)


def _as_ref(value) -> Tensor:
    return value._ref() if hasattr(value, "_ref") else convert_to_tensor(value, as_ref=True)


def _apply(op_type: str, refs: list, values: list, attrs: dict, name: str | None, indices_at: int | None = None
           ) -> Tensor:
    """Build a training op: refs as references, other inputs converted with the variable's dtype when untyped
    (but `values[indices_at]`, a sparse op's indices, as integers)."""
    refs = [_as_ref(r) for r in refs]
    dtype = refs[0].dtype.base_dtype
    with name_scope(name, op_type, refs) as scope:
        values = [convert_to_tensor(v, name="indices") if i == indices_at else
                  convert_to_tensor(v, preferred_dtype=dtype) for i, v in enumerate(values)]
        attrs = {"T": dtype, **{k: bool(v) for k, v in attrs.items()}}
        if indices_at is not None:
            attrs["Tindices"] = values[indices_at].dtype
        return apply_op_1(op_type, refs + values, attrs, name=scope)


def apply_gradient_descent(var, alpha, delta, use_locking: bool = False, name: str | None = None) -> Tensor:
    """var -= alpha * delta. Returns var's ref after the update."""
    return _apply("ApplyGradientDescent", [var], [alpha, delta], {"use_locking": use_locking}, name)


def apply_momentum(var, accum, lr, grad, momentum, use_locking: bool = False, use_nesterov: bool = False,
                   name: str | None = None) -> Tensor:
    """accum = accum * momentum + grad; var -= lr * accum (Nesterov: var -= lr * (grad + momentum * accum))."""
    return _apply("ApplyMomentum", [var, accum], [lr, grad, momentum],
                  {"use_locking": use_locking, "use_nesterov": use_nesterov}, name)


def apply_adam(var, m, v, beta1_power, beta2_power, lr, beta1, beta2, epsilon, grad, use_locking: bool = False,
               use_nesterov: bool = False, name: str | None = None) -> Tensor:
    """Adam: m, v move toward grad, grad**2; var -= lr * sqrt(1 - beta2_power) / (1 - beta1_power) * m /
    (sqrt(v) + epsilon)."""
    return _apply("ApplyAdam", [var, m, v], [beta1_power, beta2_power, lr, beta1, beta2, epsilon, grad],
                  {"use_locking": use_locking, "use_nesterov": use_nesterov}, name)


def apply_rms_prop(var, ms, mom, lr, rho, momentum, epsilon, grad, use_locking: bool = False,
                   name: str | None = None) -> Tensor:
    """ms moves toward grad**2; mom = momentum * mom + lr * grad / sqrt(ms + epsilon); var -= mom."""
    return _apply("ApplyRMSProp", [var, ms, mom], [lr, rho, momentum, epsilon, grad], {"use_locking": use_locking},
                  name)


def apply_centered_rms_prop(var, mg, ms, mom, lr, rho, momentum, epsilon, grad, use_locking: bool = False,
                            name: str | None = None) -> Tensor:
    """RMSProp normalised by the centred second moment ms - mg**2, mg being the running mean of grad."""
    return _apply("ApplyCenteredRMSProp", [var, mg, ms, mom], [lr, rho, momentum, epsilon, grad],
                  {"use_locking": use_locking}, name)


def apply_adagrad(var, accum, lr, grad, use_locking: bool = False, update_slots: bool = True,
                  name: str | None = None) -> Tensor:
    """accum += grad**2 (when update_slots); var -= lr * grad / sqrt(accum)."""
    return _apply("ApplyAdagrad", [var, accum], [lr, grad], {"use_locking": use_locking,
                                                             "update_slots": update_slots}, name)


def apply_adadelta(var, accum, accum_update, lr, rho, epsilon, grad, use_locking: bool = False,
                   name: str | None = None) -> Tensor:
    """accum moves toward grad**2; update = sqrt(accum_update + epsilon) / sqrt(accum + epsilon) * grad;
    accum_update moves toward update**2 (both by 1 - rho); var -= lr * update."""
    return _apply("ApplyAdadelta", [var, accum, accum_update], [lr, rho, epsilon, grad], {"use_locking": use_locking},
                  name)


def sparse_apply_momentum(var, accum, lr, grad, indices, momentum, use_locking: bool = False,
                          use_nesterov: bool = False, name: str | None = None) -> Tensor:
    """ApplyMomentum on the rows `indices` of var and accum, row i of grad for row indices[i]."""
    return _apply("SparseApplyMomentum", [var, accum], [lr, grad, indices, momentum],
                  {"use_locking": use_locking, "use_nesterov": use_nesterov}, name, indices_at=2)


def sparse_apply_adagrad(var, accum, lr, grad, indices, use_locking: bool = False, update_slots: bool = True,
                         name: str | None = None) -> Tensor:
    """ApplyAdagrad on the rows `indices` of var and accum, row i of grad for row indices[i]."""
    return _apply("SparseApplyAdagrad", [var, accum], [lr, grad, indices],
                  {"use_locking": use_locking, "update_slots": update_slots}, name, indices_at=2)


def sparse_apply_adadelta(var, accum, accum_update, lr, rho, epsilon, grad, indices, use_locking: bool = False,
                          name: str | None = None) -> Tensor:
    """ApplyAdadelta on the rows `indices` of var, accum and accum_update, row i of grad for row indices[i]."""
    return _apply("SparseApplyAdadelta", [var, accum, accum_update], [lr, rho, epsilon, grad, indices],
                  {"use_locking": use_locking}, name, indices_at=4)


def sparse_apply_rms_prop(var, ms, mom, lr, rho, momentum, epsilon, grad, indices, use_locking: bool = False,
                          name: str | None = None) -> Tensor:
    """ApplyRMSProp on the rows `indices` of var, ms and mom, row i of grad for row indices[i]."""
    return _apply("SparseApplyRMSProp", [var, ms, mom], [lr, rho, momentum, epsilon, grad, indices],
                  {"use_locking": use_locking}, name, indices_at=5)


def sparse_apply_centered_rms_prop(var, mg, ms, mom, lr, rho, momentum, epsilon, grad, indices,
                                   use_locking: bool = False, name: str | None = None) -> Tensor:
    """ApplyCenteredRMSProp on the rows `indices` of var, mg, ms and mom, row i of grad for row indices[i]."""
    return _apply("SparseApplyCenteredRMSProp", [var, mg, ms, mom], [lr, rho, momentum, epsilon, grad, indices],
                  {"use_locking": use_locking}, name, indices_at=5)


def apply_ftrl(var, accum, linear, grad, lr, l1, l2, lr_power, use_locking: bool = False,
               multiply_linear_by_lr: bool = False, name: str | None = None) -> Tensor:
    """FTRL-proximal: accum += grad**2; linear += grad - (accum**-lr_power change) / lr * var; var = the
    l1/l2-regularised minimiser of linear (0 where |linear| <= l1)."""
    return _apply("ApplyFtrl", [var, accum, linear], [grad, lr, l1, l2, lr_power],
                  _ftrl_attrs(use_locking, multiply_linear_by_lr), name)


def apply_ftrl_v2(var, accum, linear, grad, lr, l1, l2, l2_shrinkage, lr_power, use_locking: bool = False,
                  multiply_linear_by_lr: bool = False, name: str | None = None) -> Tensor:
    """ApplyFtrl with an L2 shrinkage penalty: linear moves by grad + 2 * l2_shrinkage * var instead of grad."""
    return _apply("ApplyFtrlV2", [var, accum, linear], [grad, lr, l1, l2, l2_shrinkage, lr_power],
                  _ftrl_attrs(use_locking, multiply_linear_by_lr), name)


def sparse_apply_ftrl(var, accum, linear, grad, indices, lr, l1, l2, lr_power, use_locking: bool = False,
                      multiply_linear_by_lr: bool = False, name: str | None = None) -> Tensor:
    """ApplyFtrl on the rows `indices` of var, accum and linear, row i of grad for row indices[i]."""
    return _apply("SparseApplyFtrl", [var, accum, linear], [grad, indices, lr, l1, l2, lr_power],
                  _ftrl_attrs(use_locking, multiply_linear_by_lr), name, indices_at=1)


def sparse_apply_ftrl_v2(var, accum, linear, grad, indices, lr, l1, l2, l2_shrinkage, lr_power,
                         use_locking: bool = False, multiply_linear_by_lr: bool = False,
                         name: str | None = None) -> Tensor:
    """ApplyFtrlV2 on the rows `indices` of var, accum and linear, row i of grad for row indices[i]."""
    return _apply("SparseApplyFtrlV2", [var, accum, linear], [grad, indices, lr, l1, l2, l2_shrinkage, lr_power],
                  _ftrl_attrs(use_locking, multiply_linear_by_lr), name, indices_at=1)


def _ftrl_attrs(use_locking: bool, multiply_linear_by_lr: bool) -> dict:
    """TF 1.15's FTRL ops have no multiply_linear_by_lr attr (TF 2.x's default it to False): set only when True."""
    attrs = {"use_locking": use_locking}
    if multiply_linear_by_lr:
        attrs["multiply_linear_by_lr"] = True
    return attrs
