"""Gradient functions of the nn ops (TF's nn_grad.py): activations, softmax, the cross-entropy losses, L2Loss.

Formulas follow TF 1.x. The activations' gradients are ops of their own (Relu6Grad, EluGrad, ...), each one kernel
instead of a chain of elementwise ops, and their second derivatives are written with math ops, as TF writes them.
"""
from __future__ import annotations

from adplace.framework.registry import NotDifferentiable, RegisterGradient
from adplace.ops import array_ops, math_ops, reduction_ops, selection_ops
from adplace.ops.nn_ops import activation_grad, log_softmax, softmax

# --- activations: the gradient op, fed the forward input (or output for Elu and Selu) -----------------------------
RegisterGradient("Relu6")(lambda op, grad: [activation_grad("Relu6Grad", grad, op._inputs[0])])
RegisterGradient("Elu")(lambda op, grad: [activation_grad("EluGrad", grad, op._outputs[0])])
RegisterGradient("Selu")(lambda op, grad: [activation_grad("SeluGrad", grad, op._outputs[0])])
RegisterGradient("Softplus")(lambda op, grad: [activation_grad("SoftplusGrad", grad, op._inputs[0])])
RegisterGradient("Softsign")(lambda op, grad: [activation_grad("SoftsignGrad", grad, op._inputs[0])])


@RegisterGradient("LeakyRelu")
def _leaky_relu_grad(op, grad):
    return [activation_grad("LeakyReluGrad", grad, op._inputs[0], attrs={"alpha": op._attrs["alpha"]})]


def _piecewise_linear_grad_grad(op, grad):
    """Relu6Grad/LeakyReluGrad are linear in the gradients and flat in the features."""
    x = op._inputs[1]
    attrs = {"alpha": op._attrs["alpha"]} if "alpha" in op._attrs else None
    return [activation_grad(op._type, grad, x, attrs=attrs), array_ops.zeros_like(x)]


RegisterGradient("Relu6Grad")(_piecewise_linear_grad_grad)
RegisterGradient("LeakyReluGrad")(_piecewise_linear_grad_grad)


def _exponential_grad_grad(op, grad):
    """EluGrad/SeluGrad(dy, y): dy * (y + c) where y < 0, so d/dy is grad * dy there."""
    y = op._inputs[1]
    zero = array_ops.zeros_like(y)
    return [activation_grad(op._type, grad, y), selection_ops.where(math_ops.less(y, zero), grad * op._inputs[0], zero)]


RegisterGradient("EluGrad")(_exponential_grad_grad)
RegisterGradient("SeluGrad")(_exponential_grad_grad)


@RegisterGradient("SoftplusGrad")
def _softplus_grad_grad(op, grad):
    dy, x = op._inputs  # SoftplusGrad = dy * sigmoid(x); sigmoid' = 1 / (exp(-x) + 2 + exp(x))
    return [activation_grad("SoftplusGrad", grad, x), grad * dy / (math_ops.exp(-x) + 2.0 + math_ops.exp(x))]


@RegisterGradient("SoftsignGrad")
def _softsign_grad_grad(op, grad):
    dy, x = op._inputs  # SoftsignGrad = dy / (1 + |x|)^2
    denominator = 1.0 + math_ops.abs(x)
    return [activation_grad("SoftsignGrad", grad, x),
            grad * dy * -2.0 * math_ops.sign(x) / (denominator * denominator * denominator)]


# --- softmax --------------------------------------------------------------------------------------------------------
@RegisterGradient("Softmax")
def _softmax_grad(op, grad):
    y = op._outputs[0]
    return [(grad - reduction_ops.reduce_sum(grad * y, -1, keepdims=True)) * y]


@RegisterGradient("LogSoftmax")
def _log_softmax_grad(op, grad):
    return [grad - reduction_ops.reduce_sum(grad, -1, keepdims=True) * math_ops.exp(op._outputs[0])]


# --- cross entropy --------------------------------------------------------------------------------------------------
def _per_example(loss_grad, matrix):
    """A [batch] gradient times a [batch, classes] matrix, row by row."""
    return array_ops.expand_dims(loss_grad, -1) * matrix


@RegisterGradient("SoftmaxCrossEntropyWithLogits")
def _xent_grad(op, grad_loss, grad_backprop):
    """d loss / d logits is the op's second output (softmax - labels); d loss / d labels is -log_softmax(logits).
    A gradient reaching the backprop output itself (second order) adds (g - sum(g * softmax)) * softmax."""
    logits = op._inputs[0]
    grad = _per_example(grad_loss, op._outputs[1])
    if grad_backprop is not None and grad_backprop.op.type != "ZerosLike":
        y = softmax(logits)
        grad += (grad_backprop - reduction_ops.reduce_sum(grad_backprop * y, -1, keepdims=True)) * y
    return [grad, _per_example(grad_loss, -log_softmax(logits))]


@RegisterGradient("SparseSoftmaxCrossEntropyWithLogits")
def _sparse_xent_grad(op, grad_loss, grad_backprop):
    """Only into the logits: the labels are indices. The backprop output has no gradient of its own, as in TF."""
    if grad_backprop is not None and grad_backprop.op.type != "ZerosLike":
        raise LookupError("Gradient explicitly disabled. Reason: Currently there is no way to take the second "
                          "derivative of sparse_softmax_cross_entropy_with_logits due to the fused implementation's "
                          "interaction with tf.gradients()")
    return [_per_example(grad_loss, op._outputs[1]), None]


RegisterGradient("L2Loss")(lambda op, grad: [op._inputs[0] * grad])
NotDifferentiable("InTopKV2")
