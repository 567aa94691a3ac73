"""tf.layers.Conv2D / tf.layers.conv2d: outputs = activation(conv2d(inputs, kernel) + bias), Keras's 2-D convolution.

    y = tf.layers.conv2d(images, 32, 5, padding="same", activation=tf.nn.relu)
    # conv2d/kernel [5, 5, in, 32], conv2d/bias [32]; ops conv2d/Conv2D, conv2d/BiasAdd, conv2d/Relu
"""
from __future__ import annotations

from adplace.framework.operation import Tensor
from adplace.layers import conv_utils
from adplace.layers.base import ZEROS, Layer
from adplace.layers.core import add_activity_loss, set_kernel_options
from adplace.ops import conv_ops, nn_ops


class Conv2D(Layer):
    """A 2-D convolution layer (tf.layers.Conv2D): a kernel [kh, kw, in_channels, filters] and an optional bias.

    Inputs are [batch, height, width, channels] ("channels_last") or [batch, channels, height, width]
    ("channels_first"); the channel count must be known when the layer is built.
    """

    def __init__(self, filters: int, kernel_size, strides=(1, 1), padding: str = "valid",
                 data_format: str = "channels_last", dilation_rate=(1, 1), activation=None, use_bias: bool = True,
                 kernel_initializer=None, bias_initializer=ZEROS, kernel_regularizer=None, bias_regularizer=None,
                 activity_regularizer=None, kernel_constraint=None, bias_constraint=None, trainable: bool = True,
                 name: str | None = None, **kwargs):
        super().__init__(trainable=trainable, name=name, **kwargs)
        self.rank = 2
        self.filters = int(filters)
        self.kernel_size = conv_utils.normalize_tuple(kernel_size, 2, "kernel_size")
        self.strides = conv_utils.normalize_tuple(strides, 2, "strides")
        self.padding = conv_utils.normalize_padding(padding)
        if self.padding == "causal":
            raise ValueError("Causal padding is only supported for `Conv1D` and ``SeparableConv1D`.")
        self.data_format = conv_utils.normalize_data_format(data_format)
        self.dilation_rate = conv_utils.normalize_tuple(dilation_rate, 2, "dilation_rate")
        set_kernel_options(self, activation, use_bias, kernel_initializer, bias_initializer, kernel_regularizer,
                           bias_regularizer, activity_regularizer, kernel_constraint, bias_constraint)

    @property
    def _channel_axis(self) -> int:
        return 1 if self.data_format == "channels_first" else -1

    def build(self, input_shape) -> None:
        conv_utils.check_input_rank(self.name, input_shape, ndim=self.rank + 2)
        input_dim = input_shape.as_list()[self._channel_axis]
        if input_dim is None:
            raise ValueError("The channel dimension of the inputs should be defined. Found `None`.")
        self.kernel = self.add_weight("kernel", shape=[*self.kernel_size, input_dim, self.filters],
                                      initializer=self.kernel_initializer, regularizer=self.kernel_regularizer,
                                      constraint=self.kernel_constraint, dtype=self.dtype, trainable=True)
        if self.use_bias:
            self.bias = self.add_weight("bias", shape=[self.filters], initializer=self.bias_initializer,
                                        regularizer=self.bias_regularizer, constraint=self.bias_constraint,
                                        dtype=self.dtype, trainable=True)

    def call(self, inputs: Tensor) -> Tensor:
        conv_utils.check_input_rank(self.name, inputs.shape, ndim=self.rank + 2)
        conv_utils.check_input_axis(self.name, inputs.shape, self._channel_axis, self.kernel.shape.as_list()[-2])
        op_format = conv_utils.convert_data_format(self.data_format, self.rank + 2)
        outputs = conv_ops.conv2d(inputs, self.kernel, strides=list(self.strides), padding=self.padding.upper(),
                                  data_format=op_format, dilations=list(self.dilation_rate))
        if self.use_bias:
            outputs = nn_ops.bias_add(outputs, self.bias, data_format=op_format)
        if self.activation is not None:
            outputs = self.activation(outputs)
        if self.activity_regularizer is not None:
            add_activity_loss(self, outputs)
        return outputs


def conv2d(inputs, filters: int, kernel_size, strides=(1, 1), padding: str = "valid",
           data_format: str = "channels_last", dilation_rate=(1, 1), activation=None, use_bias: bool = True,
           kernel_initializer=None, bias_initializer=ZEROS, kernel_regularizer=None, bias_regularizer=None,
           activity_regularizer=None, kernel_constraint=None, bias_constraint=None, trainable: bool = True,
           name: str | None = None, reuse=None) -> Tensor:
    """A 2-D convolution layer applied to `inputs` (tf.layers.conv2d), variables `<scope>/kernel`, `<scope>/bias`.

    The scope is `name`, or "conv2d" made unique within the current variable scope. The kernel's default
    initializer is the scope's, else Glorot-uniform over fan_in = kh * kw * in, fan_out = kh * kw * filters.

        x = tf.placeholder(tf.float32, [None, 28, 28, 1])
        tf.layers.conv2d(x, 8, [3, 3])                    # shape [None, 26, 26, 8] ("valid")
        tf.layers.conv2d(x, 8, 3, strides=2, padding="same")   # shape [None, 14, 14, 8]

    Args:
      inputs: a 4-D Tensor with a known channel dimension.
      filters: the number of output channels.
      kernel_size: an int or a pair (height, width).
      strides: an int or a pair.
      padding: "valid" or "same" (any case).
      data_format: "channels_last" (NHWC) or "channels_first" (NCHW).
      dilation_rate: an int or a pair: the spacing of the kernel taps.
      activation: a callable, a Keras name ("relu"), or None for a linear layer.
      reuse: True or tf.AUTO_REUSE to reuse the variables of a previous layer of the same `name`.
    Returns:
      The 4-D output Tensor.
    Raises:
      ValueError: bad arguments, an input that is not 4-D, or an unknown channel dimension.
    """
    layer = Conv2D(filters=filters, kernel_size=kernel_size, strides=strides, padding=padding,
                   data_format=data_format, dilation_rate=dilation_rate, activation=activation, use_bias=use_bias,
                   kernel_initializer=kernel_initializer, bias_initializer=bias_initializer,
                   kernel_regularizer=kernel_regularizer, bias_regularizer=bias_regularizer,
                   activity_regularizer=activity_regularizer, kernel_constraint=kernel_constraint,
                   bias_constraint=bias_constraint, trainable=trainable, name=name, _reuse=reuse, _scope=name)
    return layer.apply(inputs)
