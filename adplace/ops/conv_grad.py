"""Gradients of the convolution and pooling ops (TF's nn_grad.py rules).

Conv2D's input and filter gradients are its two backprop ops; each backprop op's gradients are built from Conv2D and
the other backprop op, so second derivatives work. MaxPool's gradient is MaxPoolGrad, whose gradient is
MaxPoolGradGrad (and back again); AvgPool's is AvgPoolGrad, whose gradient is an AvgPool.

    dx, dw = tf.gradients(tf.reduce_sum(tf.nn.conv2d(x, w, [1, 1, 1, 1], "SAME")), [x, w])
    # dx: gradients/Conv2D_grad/Conv2DBackpropInput, dw: gradients/Conv2D_grad/Conv2DBackpropFilter
"""
from __future__ import annotations

from adplace.framework.registry import NotDifferentiable, RegisterGradient
from adplace.ops import array_ops
from adplace.ops.conv_ops import conv2d, conv2d_backprop_filter, conv2d_backprop_input
from adplace.ops.op_builder import apply_op_1


def _conv_kwargs(op) -> dict:
    """The attrs a gradient's convolutions repeat from `op`; explicit padding is handed over as (before, after) pairs."""
    padding = op.get_attr("padding")
    if padding == "EXPLICIT":
        flat = op.get_attr("explicit_paddings")
        padding = [flat[i:i + 2] for i in range(0, 8, 2)]
    return {"strides": op.get_attr("strides"), "padding": padding, "dilations": op.get_attr("dilations"),
            "use_cudnn_on_gpu": op.get_attr("use_cudnn_on_gpu"), "data_format": op.get_attr("data_format")}


@RegisterGradient("Conv2D")
def _conv2d_grad(op, grad):
    x, f = op.inputs
    kwargs = _conv_kwargs(op)
    x_shape, f_shape = array_ops.shape_n([x, f])  # one ShapeN op, gradients/Conv2D_grad/ShapeN, as TF
    return [conv2d_backprop_input(x_shape, f, grad, **kwargs), conv2d_backprop_filter(x, f_shape, grad, **kwargs)]


@RegisterGradient("Conv2DBackpropInput")
def _conv2d_backprop_input_grad(op, grad):
    """Inputs (input_sizes, filter, out_backprop): the sizes get no gradient."""
    _, f, dy = op.inputs
    kwargs = _conv_kwargs(op)
    return [None, conv2d_backprop_filter(grad, array_ops.shape(f), dy, **kwargs), conv2d(grad, f, **kwargs)]


@RegisterGradient("Conv2DBackpropFilter")
def _conv2d_backprop_filter_grad(op, grad):
    """Inputs (input, filter_sizes, out_backprop): the sizes get no gradient."""
    x, _, dy = op.inputs
    kwargs = _conv_kwargs(op)
    return [conv2d_backprop_input(array_ops.shape(x), grad, dy, **kwargs), None, conv2d(x, grad, **kwargs)]


def _pool_attrs(op) -> dict:
    return {"T": op.get_attr("T"), "ksize": op.get_attr("ksize"), "strides": op.get_attr("strides"),
            "padding": op.get_attr("padding"), "data_format": op.get_attr("data_format")}


@RegisterGradient("MaxPool")
def _max_pool_grad(op, grad):
    return [apply_op_1("MaxPoolGrad", [op.inputs[0], op.outputs[0], grad], _pool_attrs(op), name="MaxPoolGrad")]


def _zeros_for(t):
    return array_ops.zeros(array_ops.shape(t), dtype=t.dtype.base_dtype)


@RegisterGradient("MaxPoolGrad")
def _max_pool_grad_grad(op, grad):
    x, y, _ = op.inputs
    return [_zeros_for(x), _zeros_for(y),
            apply_op_1("MaxPoolGradGrad", [x, y, grad], _pool_attrs(op), name="MaxPoolGradGrad")]


@RegisterGradient("MaxPoolGradGrad")
def _max_pool_grad_grad_grad(op, grad):
    x, y, _ = op.inputs
    return [_zeros_for(x), _zeros_for(y), apply_op_1("MaxPoolGrad", [x, y, grad], _pool_attrs(op), name="MaxPoolGrad")]


@RegisterGradient("AvgPool")
def _avg_pool_grad(op, grad):
    return [apply_op_1("AvgPoolGrad", [array_ops.shape(op.inputs[0]), grad], _pool_attrs(op), name="AvgPoolGrad")]


@RegisterGradient("AvgPoolGrad")
def _avg_pool_grad_grad(op, grad):
    return [array_ops.stop_gradient(op.inputs[0]), apply_op_1("AvgPool", [grad], _pool_attrs(op), name="AvgPool")]


@RegisterGradient("LRN")
def _lrn_grad(op, grad):
    attrs = {name: op.get_attr(name) for name in ("T", "depth_radius", "bias", "alpha", "beta")}
    return [apply_op_1("LRNGrad", [grad, op.inputs[0], op.outputs[0]], attrs, name="LRNGrad")]


NotDifferentiable("LRNGrad")  # TF registers no gradient for it either
