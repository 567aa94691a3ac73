"""Wrappers that change how tf.gradients sees a function: tf.grad_pass_through and tf.recompute_grad (graph mode).

    y = tf.grad_pass_through(lambda v: tf.assign(x, v))(z ** 2)   # forward: the assign; d(y)/d(z) = 2 z
    h = tf.recompute_grad(block)(x)      # the gradient rebuilds block's ops instead of keeping its activations

Both pass f's results through one IdentityN whose gradient (a one-off gradient_override_map entry, as TF's
custom_gradient uses) stands for all the ops f built: tf.gradients does not differentiate those ops.
"""
from __future__ import annotations

import functools
from typing import Callable

from adplace.framework.conversion import convert_to_tensor
from adplace.framework.default_graph import control_dependencies
from adplace.framework.nest import flatten
from adplace.gradients import get_dependent_variables, gradients, with_gradient
from adplace.ops import array_ops
from adplace.ops.variable_scope import get_variable_scope, variable_scope

def _check_no_kwargs(kwargs: dict) -> None:
    if kwargs:
        raise ValueError("The custom_gradient decorator currently supports keywords arguments only when eager "
                         "execution is enabled.")


def _pack_like(structure, leaves):
    """`structure` rebuilt with the next leaves of the iterator `leaves` (the inverse of nest.flatten)."""
    if isinstance(structure, (list, tuple)):
        items = [_pack_like(item, leaves) for item in structure]
        return type(structure)(*items) if hasattr(structure, "_fields") else type(structure)(items)
    if isinstance(structure, dict):
        packed = {key: _pack_like(structure[key], leaves) for key in sorted(structure)}
        return type(structure)((key, packed[key]) for key in structure)
    return next(leaves)


def grad_pass_through(f: Callable) -> Callable:
    """f with an identity gradient (tf.grad_pass_through): the forward pass runs f, the backward pass hands each
    result's gradient to the argument in the same position, and variables f uses get no gradient.

    Args:
      f: a function of Tensors returning as many Tensors (or a structure of them) as it takes.

    Returns:
      A function returning what f returns, whose gradients are those of the identity.

        y = tf.grad_pass_through(lambda v: tf.assign(x, v))(z ** 2)    # y == z**2 after the assign
        tf.gradients(y, z)          # [2 * z], though Assign has no gradient
    """
    @functools.wraps(f)
    def pass_through(*args, **kwargs):
        _check_no_kwargs(kwargs)
        args = [convert_to_tensor(a) for a in args]
        result = f(*args)
        outputs = with_gradient("GradPassThrough", [convert_to_tensor(t) for t in flatten(result)], args,
                                 lambda *dys: dys)
        return _pack_like(result, iter(outputs))
    return pass_through


def recompute_grad(f: Callable) -> Callable:
    """f, whose gradient recomputes f's forward ops instead of keeping them (tf.recompute_grad): memory for compute.

    The forward pass runs f once. tf.gradients then builds f's ops a second time, after the gradients of f's
    results are known, and differentiates that copy, so no intermediate tensor of the first copy feeds the
    backward pass and each can be freed as soon as the forward pass is done with it. Trainable variables f reads
    get their gradients too. f is re-run in the variable scope it was first called in, with reuse, so
    `tf.get_variable` inside f finds the variables the first call created.

    Args:
      f: a function of Tensors returning a Tensor or a structure of Tensors.

    Returns:
      A function returning what f returns, with the same gradients.

        block = tf.recompute_grad(lambda x: tf.tanh(tf.matmul(x, w)))
        y = block(x)
        tf.gradients(y, [x, w])     # builds MatMul and Tanh again under gradients/..., then differentiates them
    """
    @functools.wraps(f)
    def recomputing(*args, **kwargs):
        _check_no_kwargs(kwargs)
        args = [convert_to_tensor(a) for a in args]
        scope = get_variable_scope()
        result = f(*args)
        results = [convert_to_tensor(t) for t in flatten(result)]
        variables = get_dependent_variables(args, results)

        def recompute_and_differentiate(*result_grads):
            with control_dependencies([g for g in result_grads if g is not None]):
                inputs = [array_ops.identity(a) for a in args]  # new tensors, so xs below exclude the forward copy
                with variable_scope(scope, reuse=True, auxiliary_name_scope=False):
                    recomputed = [convert_to_tensor(t) for t in flatten(f(*inputs))]
            pairs = [(y, dy) for y, dy in zip(recomputed, result_grads, strict=True) if dy is not None]
            if not pairs:
                return [None] * (len(inputs) + len(variables))
            ys, dys = zip(*pairs)
            return gradients(list(ys), inputs + variables, grad_ys=list(dys))

        reads = [v.value() for v in variables]  # the gradient of a variable flows through its read
        outputs = with_gradient("RecomputeGrad", results, args + reads, recompute_and_differentiate)
        return _pack_like(result, iter(outputs))
    return recomputing
