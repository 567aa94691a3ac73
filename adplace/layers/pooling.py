"""tf.layers' 2-D pooling layers: MaxPooling2D / max_pooling2d and AveragePooling2D / average_pooling2d.

    p = tf.layers.max_pooling2d(y, pool_size=2, strides=2)     # [N, H, W, C] -> [N, H/2, W/2, C]; op max_pooling2d/MaxPool
"""
from __future__ import annotations

from adplace.framework.operation import Tensor
from adplace.layers import conv_utils
from adplace.layers.base import Layer
from adplace.ops import conv_ops


class _Pooling2D(Layer):
    """A window reduction (`pool_function`, tf.nn.max_pool or avg_pool) over the two spatial axes of a 4-D input."""

    pool_function = None

    def __init__(self, pool_size, strides, padding: str = "valid", data_format: str = "channels_last",
                 name: str | None = None, **kwargs):
        if strides is None:
            raise ValueError("Argument `strides` must not be None.")
        super().__init__(name=name, **kwargs)
        self.pool_size = conv_utils.normalize_tuple(pool_size, 2, "pool_size")
        self.strides = conv_utils.normalize_tuple(strides, 2, "strides")
        self.padding = conv_utils.normalize_padding(padding)
        self.data_format = conv_utils.normalize_data_format(data_format)

    def call(self, inputs: Tensor) -> Tensor:
        conv_utils.check_input_rank(self.name, inputs.shape, ndim=4)
        if self.data_format == "channels_last":
            ksize, strides = [1, *self.pool_size, 1], [1, *self.strides, 1]
        else:
            ksize, strides = [1, 1, *self.pool_size], [1, 1, *self.strides]
        return type(self).pool_function(inputs, ksize=ksize, strides=strides, padding=self.padding.upper(),
                                        data_format=conv_utils.convert_data_format(self.data_format, 4))


class MaxPooling2D(_Pooling2D):
    """The maximum over each pool_size window (tf.layers.MaxPooling2D); op MaxPool."""

    pool_function = staticmethod(conv_ops.max_pool)


class AveragePooling2D(_Pooling2D):
    """The mean over each pool_size window (tf.layers.AveragePooling2D); op AvgPool. With "same" padding, the mean
    counts only the cells inside the input."""

    pool_function = staticmethod(conv_ops.avg_pool)


def max_pooling2d(inputs, pool_size, strides, padding: str = "valid", data_format: str = "channels_last",
                  name: str | None = None) -> Tensor:
    """Max pooling of a 4-D Tensor (tf.layers.max_pooling2d), in name scope `name` or "max_pooling2d" made unique.

        x = tf.placeholder(tf.float32, [None, 28, 28, 8])
        tf.layers.max_pooling2d(x, 2, 2)                   # shape [None, 14, 14, 8]
        tf.layers.max_pooling2d(x, 3, 2, padding="same")   # shape [None, 14, 14, 8]

    Args:
      inputs: a 4-D Tensor.
      pool_size: an int or a pair (height, width): the window.
      strides: an int or a pair (required).
      padding: "valid" or "same" (any case).
      data_format: "channels_last" (NHWC) or "channels_first" (NCHW).
      name: the layer's name.
    Returns:
      The pooled Tensor.
    Raises:
      ValueError: bad arguments, `strides` None, or an input that is not 4-D.
    """
    layer = MaxPooling2D(pool_size=pool_size, strides=strides, padding=padding, data_format=data_format, name=name)
    return layer.apply(inputs)


def average_pooling2d(inputs, pool_size, strides, padding: str = "valid", data_format: str = "channels_last",
                      name: str | None = None) -> Tensor:
    """Average pooling of a 4-D Tensor (tf.layers.average_pooling2d), in name scope `name` or "average_pooling2d"
    made unique; arguments as for max_pooling2d."""
    layer = AveragePooling2D(pool_size=pool_size, strides=strides, padding=padding, data_format=data_format,
                             name=name)
    return layer.apply(inputs)
