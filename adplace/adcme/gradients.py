"""ADCME's `gradients`, `jacobian` and `hessian`: a non-scalar `ys` gives a Jacobian, not TF's sum of gradients."""
from adplace.adcme.tensors import as_tensor, describe
from adplace.framework.conversion import convert_to_tensor
from adplace.framework.tensor_shape import TensorShape
from adplace.gradients import gradients as tf_gradients, hessians
from adplace.ops.array_ops import concat, reshape, shape, size as tf_size, stop_gradient
from adplace.ops.control_flow_v1 import while_loop
from adplace.ops.math_ops import less, multiply
from adplace.ops.reduction_ops import reduce_sum
from adplace.ops.slicing_ops import slice_
from adplace.ops.tensor_array_ops import TensorArray


def gradients(ys, xs, **kwargs):
    """d`ys`/d`xs` as ADCME computes it: for a scalar `ys`, the gradient (shaped like `xs`, None if `ys` does not
    depend on it); otherwise the Jacobian, shaped `ys.shape + xs.shape`. A list of `xs` (or of `ys`) gives a list."""
    if isinstance(xs, (list, tuple)):
        return [gradients(ys, x, **kwargs) for x in xs]
    if isinstance(ys, (list, tuple)):
        return [gradients(y, xs, **kwargs) for y in ys]
    ys = as_tensor(ys, "gradients")
    if ys.shape.ndims == 0:
        (grad,) = tf_gradients(ys, [xs], **kwargs)
        return None if grad is None else convert_to_tensor(grad)
    if ys.shape.ndims is None:
        raise ValueError(f"gradients: the rank of {ys.name} is unknown; give it a shape with set_shape")
    return jacobian(ys, xs, **kwargs)


def jacobian(ys, xs, parallel_iterations: int = 10, **kwargs):
    """J[i..., j...] = d ys[i...] / d xs[j...], shaped `ys.shape + xs.shape`: one gradient per element of `ys`,
    taken in a while_loop (so the graph does not grow with `ys`), zeros where `ys[i]` does not depend on `xs`."""
    ys = as_tensor(ys, "jacobian")
    kwargs["unconnected_gradients"] = "zero"
    flat = reshape(ys, [-1])
    count = flat.shape.as_list()[0]
    count = tf_size(flat) if count is None else count
    x_dtype = xs.dtype.base_dtype
    if not x_dtype.is_floating and not x_dtype.is_complex:
        raise TypeError(f"jacobian: {describe(xs)} is {x_dtype.name}; gradients need a floating-point tensor")

    def body(i, rows):
        element = slice_(flat, reshape(i, [1]), [1])    # a dense gradient (a gather's is sparse, of unknown shape)
        (row,) = tf_gradients(element, [xs], **kwargs)
        return i + 1, rows.write(i, convert_to_tensor(row))

    _, rows = while_loop(lambda i, rows: less(i, count), body,
                         [0, TensorArray(x_dtype, size=count, element_shape=xs.shape)],
                         parallel_iterations=parallel_iterations)
    stacked = rows.stack()
    static = TensorShape(ys.shape).concatenate(xs.shape)
    if static.is_fully_defined():
        return reshape(stacked, static.as_list())
    result = reshape(stacked, concat([shape(ys), shape(xs)], 0))
    result.set_shape(static)
    return result


def hessian(ys, xs, **kwargs):
    """The Hessian of the scalar `ys` with respect to `xs`, shaped `xs.shape + xs.shape` (tf.hessians)."""
    ys = as_tensor(ys, "hessian")
    if ys.shape.ndims != 0:
        raise ValueError(f"hessian: {ys.name} must be a scalar, got shape {ys.shape}")
    return hessians(ys, [xs], **kwargs)[0]


def hessian_vector(ys, xs, v, **kwargs):
    """The Hessian of the scalar `ys` with respect to `xs` times `v` (shaped like `xs`), without forming the Hessian:
    the gradient of <grad, v>."""
    (grad,) = tf_gradients(ys, [xs], **kwargs)
    if grad is None:
        return None
    v = convert_to_tensor(v, dtype=xs.dtype.base_dtype)
    (product,) = tf_gradients(reduce_sum(multiply(grad, stop_gradient(v))), [xs], **kwargs)
    return None if product is None else convert_to_tensor(product)  # dense, also through a gather (IndexedSlices)


