"""tf.layers' core layers: Dense (outputs = activation(inputs @ kernel + bias)), Flatten and Dropout.

    y = tf.layers.dense(x, 4, activation=tf.nn.relu)   # dense/kernel [in, 4], dense/bias [4]; op dense/Relu
    f = tf.layers.flatten(images)                      # [None, 28, 28, 1] -> [None, 784]; op flatten/Reshape
    d = tf.layers.dropout(y, rate=0.5, training=True)  # half the units zeroed, the rest doubled
"""
from __future__ import annotations

import numpy as np

from adplace.framework.conversion import convert_to_tensor
from adplace.framework.default_graph import name_scope
from adplace.framework.operation import Tensor
from adplace.framework.tensor_shape import TensorShape
from adplace.layers import conv_utils
from adplace.layers.base import ZEROS, Layer
from adplace.ops import array_ops, control_flow_v1, math_ops, nn_impl, nn_ops
from adplace.ops.op_builder import constant_value

_ACTIVATIONS = {"relu": math_ops.relu, "sigmoid": math_ops.sigmoid, "tanh": math_ops.tanh, "linear": None}


def get_activation(activation):
    """A callable, None, or a Keras name ("relu", "sigmoid", "tanh", "linear")."""
    if isinstance(activation, str):
        if activation not in _ACTIVATIONS:
            raise ValueError(f"Unknown activation function: {activation}")
        return _ACTIVATIONS[activation]
    return activation


def set_kernel_options(layer: Layer, activation, use_bias: bool, kernel_initializer, bias_initializer,
                       kernel_regularizer, bias_regularizer, activity_regularizer, kernel_constraint,
                       bias_constraint) -> None:
    """Store the options Dense and the conv layers share on `layer`: the activation (a Keras name resolved), whether
    there is a bias, and the kernel's and bias's initializers, regularizers and constraints. `build` makes the
    variables; until then `kernel` and `bias` are None."""
    layer.activation = get_activation(activation)
    layer.use_bias = use_bias
    layer.kernel_initializer, layer.bias_initializer = kernel_initializer, bias_initializer
    layer.kernel_regularizer, layer.bias_regularizer = kernel_regularizer, bias_regularizer
    layer.activity_regularizer = activity_regularizer
    layer.kernel_constraint, layer.bias_constraint = kernel_constraint, bias_constraint
    layer.kernel = layer.bias = None


def add_activity_loss(layer: Layer, outputs: Tensor) -> None:
    """Adds the layer's activity regularizer loss of `outputs`, divided by the batch size (Keras's batch-agnostic
    strength), to its losses and REGULARIZATION_LOSSES."""
    with name_scope("ActivityRegularizer"):
        loss = layer.activity_regularizer(outputs)
        batch_size = math_ops.cast(array_ops.shape(outputs)[0], loss.dtype.base_dtype)
        layer.add_loss(math_ops.truediv(loss, batch_size))


class Dense(Layer):
    """A densely connected layer; inputs of rank > 2 are multiplied along their last axis (TF's tensordot)."""

    def __init__(self, units: int, activation=None, use_bias: bool = True, kernel_initializer=None,
                 bias_initializer=ZEROS, kernel_regularizer=None, bias_regularizer=None,
                 activity_regularizer=None, kernel_constraint=None, bias_constraint=None, trainable: bool = True,
                 name: str | None = None, **kwargs):
        super().__init__(trainable=trainable, name=name, **kwargs)
        self.units = int(units)
        set_kernel_options(self, activation, use_bias, kernel_initializer, bias_initializer, kernel_regularizer,
                           bias_regularizer, activity_regularizer, kernel_constraint, bias_constraint)

    def build(self, input_shape) -> None:
        if not (self.dtype.is_floating or self.dtype.is_complex):
            raise TypeError(f"Unable to build `Dense` layer with non-floating point dtype {self.dtype}")
        if input_shape.ndims is not None and input_shape.ndims < 2:
            raise ValueError(f"Input 0 of layer {self.name} is incompatible with the layer: expected min_ndim=2, "
                             f"found ndim={input_shape.ndims}. Full shape received: {input_shape.as_list()}")
        last_dim = None if input_shape.ndims is None else input_shape.as_list()[-1]
        if last_dim is None:
            raise ValueError("The last dimension of the inputs to `Dense` should be defined. Found `None`.")
        self.kernel = self.add_weight("kernel", shape=[last_dim, self.units], initializer=self.kernel_initializer,
                                      regularizer=self.kernel_regularizer, constraint=self.kernel_constraint,
                                      dtype=self.dtype, trainable=True)
        if self.use_bias:
            self.bias = self.add_weight("bias", shape=[self.units], initializer=self.bias_initializer,
                                        regularizer=self.bias_regularizer, constraint=self.bias_constraint,
                                        dtype=self.dtype, trainable=True)

    def call(self, inputs: Tensor) -> Tensor:
        inputs = math_ops.cast(inputs, self.dtype)
        rank = inputs.shape.ndims
        if rank is not None and rank <= 2:
            outputs = math_ops.matmul(inputs, self.kernel)
        else:
            outputs = self._tensordot(inputs)
        if self.use_bias:
            outputs = nn_ops.bias_add(outputs, self.bias)
        if self.activation is not None:
            outputs = self.activation(outputs)
        if self.activity_regularizer is not None:
            add_activity_loss(self, outputs)
        return outputs

    def _tensordot(self, inputs: Tensor) -> Tensor:
        """inputs [..., in] @ kernel [in, units] -> [..., units], through a 2-D matmul."""
        with name_scope("Tensordot"):
            flat = array_ops.reshape(inputs, [-1, self.kernel.shape.as_list()[0]])
            product = math_ops.matmul(flat, self.kernel)
            leading = inputs.shape.as_list()[:-1] if inputs.shape.ndims is not None else None
            if leading is not None and None not in leading:
                out_shape = leading + [self.units]
            else:
                out_shape = array_ops.concat([array_ops.shape(inputs)[:-1], [self.units]], 0)
            outputs = array_ops.reshape(product, out_shape)
        if leading is not None:
            outputs.set_shape(leading + [self.units])
        return outputs



def dense(inputs, units: int, activation=None, use_bias: bool = True, kernel_initializer=None,
          bias_initializer=ZEROS, kernel_regularizer=None, bias_regularizer=None,
          activity_regularizer=None, kernel_constraint=None, bias_constraint=None, trainable: bool = True,
          name: str | None = None, reuse=None) -> Tensor:
    """activation(inputs @ kernel + bias) with variables `<scope>/kernel` and `<scope>/bias` (tf.layers.dense).

    The scope is `name`, or "dense" made unique (dense, dense_1, ...) within the current variable scope. The
    kernel's default initializer is the scope's, else Glorot-uniform; trainable variables are also in
    TRAINABLE_VARIABLES.

    Args:
      inputs: a Tensor of rank >= 2 with a known last dimension.
      units: the output width.
      activation: a callable (tf.nn.relu), or None for a linear layer.
      reuse: True or tf.AUTO_REUSE to reuse the variables of a previous layer of the same `name`.
    Returns:
      The output Tensor, shaped like `inputs` with the last dimension `units`.
    Raises:
      ValueError: the inputs' last dimension is unknown, or the variables exist and the scope does not reuse.
    """
    layer = Dense(units, activation=activation, use_bias=use_bias, kernel_initializer=kernel_initializer,
                  bias_initializer=bias_initializer, kernel_regularizer=kernel_regularizer,
                  bias_regularizer=bias_regularizer, activity_regularizer=activity_regularizer,
                  kernel_constraint=kernel_constraint, bias_constraint=bias_constraint, trainable=trainable,
                  name=name, _scope=name, _reuse=reuse)
    return layer.apply(inputs)


class Flatten(Layer):
    """Flattens each example to a vector, keeping the batch axis (tf.layers.Flatten): [N, d1, d2, ...] -> [N, d1*d2*...].

    A rank-1 input [N] becomes [N, 1]. With data_format "channels_first" the channel axis is moved last first, so
    the order of the values matches a "channels_last" model's.
    """

    def __init__(self, data_format: str = "channels_last", name: str | None = None, **kwargs):
        super().__init__(name=name, **kwargs)
        self.data_format = conv_utils.normalize_data_format(data_format)

    def call(self, inputs: Tensor) -> Tensor:
        conv_utils.check_input_rank(self.name, inputs.shape, min_ndim=1)
        rank = inputs.shape.ndims
        if self.data_format == "channels_first" and rank is not None and rank > 1:
            inputs = array_ops.transpose(inputs, perm=[0, *range(2, rank), 1])
        dims = inputs.shape.as_list() if rank is not None else None
        if dims is not None and None not in dims[1:]:
            outputs = array_ops.reshape(inputs, (-1, int(np.prod(dims[1:], dtype=np.int64))))
        else:
            batch_size = dims[0] if dims else None
            outputs = array_ops.reshape(inputs, (batch_size or array_ops.shape(inputs)[0], -1))
        outputs.set_shape(self.compute_output_shape(inputs.shape))
        return outputs

    @staticmethod
    def compute_output_shape(input_shape: TensorShape) -> TensorShape:
        """[batch, product of the other dims], None where a dim is unknown."""
        if input_shape.ndims is None:
            return TensorShape([None, None])
        dims = input_shape.as_list()
        return TensorShape([dims[0], int(np.prod(dims[1:], dtype=np.int64)) if all(dims[1:]) else None])


def flatten(inputs, name: str | None = None, data_format: str = "channels_last") -> Tensor:
    """Flattens `inputs` to [batch, -1], keeping a static batch size (tf.layers.flatten).

        x = tf.placeholder(tf.float32, [None, 4, 4])
        tf.layers.flatten(x)          # shape [None, 16], op flatten/Reshape

    Args:
      inputs: a Tensor of rank >= 1.
      name: the layer's name (its name scope), else "flatten" made unique.
      data_format: "channels_last" or "channels_first" (the channel axis is moved last before flattening).
    Returns:
      The [batch, k] Tensor.
    Raises:
      ValueError: `inputs` is a scalar, or `data_format` is not one of the two.
    """
    return Flatten(name=name, data_format=data_format).apply(inputs)


class Dropout(Layer):
    """Zeroes each input unit with probability `rate` while training, scaling the kept ones by 1 / (1 - rate), so
    the expected sum is unchanged; the identity otherwise (tf.layers.Dropout).

    `training` is a Python bool, or a boolean Tensor (e.g. an `is_training` placeholder), whose value picks the
    branch with tf.cond when it is not known while the graph is built, as TF does ("dropout/cond/Merge").
    """

    def __init__(self, rate: float = 0.5, noise_shape=None, seed=None, name: str | None = None, **kwargs):
        super().__init__(name=name, **kwargs)
        self.rate, self.noise_shape, self.seed = rate, noise_shape, seed

    def _get_noise_shape(self, inputs: Tensor):
        """`noise_shape` with its None entries filled from the input's dynamic shape."""
        if self.noise_shape is None:
            return None
        concrete_inputs_shape = array_ops.shape(inputs)
        return convert_to_tensor([concrete_inputs_shape[i] if value is None else value
                                  for i, value in enumerate(self.noise_shape)])

    def _dropped(self, inputs: Tensor) -> Tensor:
        return nn_impl.dropout(inputs, noise_shape=self._get_noise_shape(inputs), seed=self.seed, rate=self.rate)

    def call(self, inputs: Tensor, training=False) -> Tensor:
        if isinstance(training, Tensor) or hasattr(training, "_as_graph_element"):
            training = convert_to_tensor(training)
            known = constant_value(training)
            if known is None:
                return control_flow_v1.cond(training, lambda: self._dropped(inputs),
                                            lambda: array_ops.identity(inputs))
            training = bool(known)
        return self._dropped(inputs) if training else array_ops.identity(inputs)


def dropout(inputs, rate: float = 0.5, noise_shape=None, seed=None, training=False, name: str | None = None) -> Tensor:
    """Dropout applied to `inputs` when `training` (tf.layers.dropout), in name scope `name` or "dropout" made unique.

        is_training = tf.placeholder_with_default(False, [])
        h = tf.layers.dropout(h, rate=0.3, training=is_training)   # identity unless fed True

    Args:
      inputs: a float Tensor.
      rate: the fraction of units to drop (1 - keep_prob).
      noise_shape: the shape of the keep/drop mask, broadcast against `inputs`; None entries take the input's size.
      seed: the op-level random seed.
      training: a Python bool or a scalar bool Tensor: drop (True) or pass `inputs` through (False, the default).
      name: the layer's name.
    Returns:
      A Tensor shaped like `inputs`.
    """
    return Dropout(rate, noise_shape=noise_shape, seed=seed, name=name).apply(inputs, training=training)
