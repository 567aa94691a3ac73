"""tf.contrib.layers' layer functions (the old "slim" API) over the tf.layers classes, with contrib's names:
variables `<scope>/weights` and `<scope>/biases` (also in MODEL_VARIABLES), a ReLU by default, and optional
extra collections for the variables and the output.

    h = tf.contrib.layers.fully_connected(x, 32)          # fully_connected/weights [in, 32], .../biases [32]; Relu
    h = tf.contrib.layers.fully_connected(h, 10, activation_fn=None, scope="logits")   # logits/weights
"""
from __future__ import annotations

from adplace.contrib.layers import initializers
from adplace.framework.conversion import convert_to_tensor
from adplace.framework.default_graph import add_to_collection, add_to_collections, get_collection, name_scope
from adplace.framework.graph import GraphKeys
from adplace.framework.operation import Tensor
from adplace.layers import convolutional as convolutional_layers
from adplace.layers import core as core_layers
from adplace.layers import pooling as pooling_layers
from adplace.layers.base import ZEROS
from adplace.ops import math_ops
from adplace.ops.variable_scope import variable_scope

_RENAME = {"kernel": "weights", "bias": "biases"}  # the tf.layers names -> contrib's
_XAVIER = initializers.xavier_initializer()  # the shared default (initializers hold no state), as TF's signature
_CONV_DATA_FORMATS = (None, "NWC", "NCW", "NHWC", "NCHW", "NDHWC", "NCDHW")


def _model_variable_getter(getter, name: str, collections=None, **kwargs):
    """A custom getter giving the tf.layers variables contrib's names and putting them in MODEL_VARIABLES
    (contrib.framework.model_variable's collections)."""
    scope_name, _, short_name = name.rpartition("/")
    if short_name in _RENAME:
        name = (scope_name + "/" if scope_name else "") + _RENAME[short_name]
    collections = list(dict.fromkeys([*(collections or []), GraphKeys.GLOBAL_VARIABLES,
                                      GraphKeys.MODEL_VARIABLES]))
    return getter(name=name, collections=collections, **kwargs)


def _variable_collections(variables_collections, name: str) -> list:
    """The collections for variable `name`: a list for all variables, or a dict of lists by variable name."""
    if isinstance(variables_collections, dict):
        return list(variables_collections.get(name) or [])
    return list(variables_collections or [])


def _add_variable_to_collections(variable, variables_collections, name: str) -> None:
    for collection in _variable_collections(variables_collections, name):
        if variable not in get_collection(collection):
            add_to_collection(collection, variable)


def _collect_named_outputs(outputs_collections, outputs: Tensor) -> Tensor:
    """Adds `outputs` to each of `outputs_collections` (TF also records the scope as an alias on the tensor)."""
    if outputs_collections:
        add_to_collections(list(outputs_collections), outputs)
    return outputs


def fully_connected(inputs, num_outputs: int, activation_fn=math_ops.relu, normalizer_fn=None,
                    normalizer_params=None, weights_initializer=_XAVIER,
                    weights_regularizer=None, biases_initializer=ZEROS, biases_regularizer=None,
                    reuse=None, variables_collections=None, outputs_collections=None, trainable: bool = True,
                    scope=None) -> Tensor:
    """activation_fn(normalizer_fn(inputs @ weights) or inputs @ weights + biases) (tf.contrib.layers.fully_connected).

    Variables `weights` [in, num_outputs] and, unless `normalizer_fn` is given or `biases_initializer` is None,
    `biases` [num_outputs], in variable scope `scope`, else "fully_connected" made unique. Inputs of rank > 2 are
    multiplied along their last axis.

        y = tf.contrib.layers.fully_connected(x, 4, scope="fc")                 # fc/weights, fc/biases; op fc/Relu
        z = tf.contrib.layers.fully_connected(x2, 4, scope="fc", reuse=True)    # the same variables

    Args:
      inputs: a Tensor of rank >= 2 with a known last dimension.
      num_outputs: the number of output units (a Python int).
      activation_fn: applied last; None for a linear layer.
      normalizer_fn: applied instead of the biases (e.g. a batch norm), with `normalizer_params` as keywords.
      weights_initializer, biases_initializer: the variables' initializers (Xavier-uniform and zeros).
      weights_regularizer, biases_regularizer: functions weights -> scalar loss, added to REGULARIZATION_LOSSES.
      reuse: True or tf.AUTO_REUSE to reuse the variables of `scope`.
      variables_collections: extra collections for the variables: a list, or a dict {"weights": [...], ...}.
      outputs_collections: collections to add the output to.
      trainable: whether the variables go to TRAINABLE_VARIABLES.
      scope: the variable scope (a name or a VariableScope).
    Returns:
      The output Tensor, shaped like `inputs` with the last dimension `num_outputs`.
    Raises:
      ValueError: `num_outputs` is not an int, or the inputs' rank or last dimension does not fit.
    """
    if not isinstance(num_outputs, int):
        raise ValueError(f"num_outputs type should be one of {[int]}, got {type(num_outputs)}.")
    with variable_scope(scope, "fully_connected", [inputs], reuse=reuse,
                        custom_getter=_model_variable_getter) as sc:
        inputs = convert_to_tensor(inputs)
        layer = core_layers.Dense(units=num_outputs, activation=None,
                                  use_bias=bool(not normalizer_fn and biases_initializer),
                                  kernel_initializer=weights_initializer, bias_initializer=biases_initializer,
                                  kernel_regularizer=weights_regularizer, bias_regularizer=biases_regularizer,
                                  trainable=trainable, name=sc.name, dtype=inputs.dtype.base_dtype, _scope=sc,
                                  _reuse=reuse)
        return _apply_layer(layer, inputs, normalizer_fn, normalizer_params, activation_fn, variables_collections,
                            outputs_collections)


def _apply_layer(layer, inputs: Tensor, normalizer_fn, normalizer_params, activation_fn, variables_collections,
                 outputs_collections) -> Tensor:
    """The tail of fully_connected and conv2d: apply `layer` (built without activation), file its weights and
    biases in their collections, then the normalizer and the activation, and collect the output."""
    outputs = layer.apply(inputs)
    _add_variable_to_collections(layer.kernel, variables_collections, GraphKeys.WEIGHTS)
    if layer.bias is not None:
        _add_variable_to_collections(layer.bias, variables_collections, GraphKeys.BIASES)
    if normalizer_fn is not None:
        outputs = normalizer_fn(outputs, **(normalizer_params or {}))
    if activation_fn is not None:
        outputs = activation_fn(outputs)
    return _collect_named_outputs(outputs_collections, outputs)


def dropout(inputs, keep_prob=0.5, noise_shape=None, is_training=True, outputs_collections=None,
            scope=None, seed=None) -> Tensor:
    """Dropout keeping each unit with probability `keep_prob` (tf.contrib.layers.dropout), in variable scope `scope`
    or "Dropout" made unique. Unlike tf.layers.dropout, `is_training` defaults to True.

        h = tf.contrib.layers.dropout(h, keep_prob=0.8, is_training=is_training)   # op Dropout/dropout/mul_1

    Args:
      inputs: a float Tensor.
      keep_prob: the probability of keeping each unit.
      noise_shape: the shape of the keep/drop mask.
      is_training: a Python bool or a scalar bool Tensor; when false the inputs pass through.
      outputs_collections: collections to add the output to.
      scope: the variable scope.
      seed: the op-level random seed.
    """
    with variable_scope(scope, "Dropout", [inputs], custom_getter=_model_variable_getter) as sc:
        inputs = convert_to_tensor(inputs)
        layer = core_layers.Dropout(rate=1 - keep_prob, noise_shape=noise_shape, seed=seed, name=sc.name, _scope=sc)
        return _collect_named_outputs(outputs_collections, layer.apply(inputs, training=is_training))


def flatten(inputs, outputs_collections=None, scope: str | None = None) -> Tensor:
    """Flattens `inputs` to [batch_size, k] (tf.contrib.layers.flatten), in name scope `scope` or "Flatten".

        tf.contrib.layers.flatten(images)     # [None, 28, 28, 1] -> [None, 784]; op Flatten/flatten/Reshape

    Raises:
      ValueError: `inputs` is a scalar.
    """
    with name_scope(scope, "Flatten", [inputs]):
        outputs = core_layers.flatten(convert_to_tensor(inputs))
        return _collect_named_outputs(outputs_collections, outputs)


def _keras_data_format(data_format: str | None) -> str:
    return "channels_first" if data_format and data_format.startswith("NC") else "channels_last"


def convolution2d(inputs, num_outputs: int, kernel_size, stride=1, padding: str = "SAME", data_format=None, rate=1,
                  activation_fn=math_ops.relu, normalizer_fn=None, normalizer_params=None,
                  weights_initializer=_XAVIER, weights_regularizer=None,
                  biases_initializer=ZEROS, biases_regularizer=None, reuse=None,
                  variables_collections=None, outputs_collections=None, trainable: bool = True,
                  scope=None) -> Tensor:
    """A 2-D convolution, then the normalizer or the biases, then the activation (tf.contrib.layers.conv2d).

    Variables `weights` [kh, kw, in, num_outputs] and `biases` [num_outputs] in variable scope `scope`, else
    "Conv" made unique; SAME padding and a ReLU by default.

        y = tf.contrib.layers.conv2d(images, 32, [5, 5])      # Conv/weights [5, 5, in, 32]; op Conv/Relu

    Args:
      inputs: a 4-D Tensor ([batch, height, width, channels] unless data_format is "NCHW").
      num_outputs: the number of output channels.
      kernel_size, stride, rate: an int or a pair; `rate` is the dilation.
      padding: "SAME" or "VALID".
      data_format: None or "NHWC" (channels last), or "NCHW".
      The rest: as for fully_connected.
    Returns:
      The 4-D output Tensor.
    Raises:
      ValueError: a bad data_format, or inputs that are not 4-D.
    """
    if data_format not in _CONV_DATA_FORMATS:
        raise ValueError(f"Invalid data_format: {data_format!r}")
    with variable_scope(scope, "Conv", [inputs], reuse=reuse, custom_getter=_model_variable_getter) as sc:
        inputs = convert_to_tensor(inputs)
        input_rank = inputs.shape.ndims
        if input_rank != 4:
            raise ValueError(f"Convolution expects input with rank 4, got {input_rank}")
        layer = convolutional_layers.Conv2D(
            filters=num_outputs, kernel_size=kernel_size, strides=stride, padding=padding,
            data_format=_keras_data_format(data_format), dilation_rate=rate, activation=None,
            use_bias=bool(not normalizer_fn and biases_initializer), kernel_initializer=weights_initializer,
            bias_initializer=biases_initializer, kernel_regularizer=weights_regularizer,
            bias_regularizer=biases_regularizer, trainable=trainable, name=sc.name, dtype=inputs.dtype.base_dtype,
            _scope=sc, _reuse=reuse)
        return _apply_layer(layer, inputs, normalizer_fn, normalizer_params, activation_fn, variables_collections,
                            outputs_collections)


conv2d = convolution2d


def _pool2d(layer_class, default_scope: str, inputs, kernel_size, stride, padding, data_format, outputs_collections,
            scope) -> Tensor:
    if data_format not in ("NCHW", "NHWC"):
        raise ValueError("data_format has to be either NCHW or NHWC.")
    with name_scope(scope, default_scope, [inputs]) as sc:
        inputs = convert_to_tensor(inputs)
        layer = layer_class(pool_size=kernel_size, strides=stride, padding=padding,
                            data_format=_keras_data_format(data_format), _scope=sc)
        return _collect_named_outputs(outputs_collections, layer.apply(inputs))


def max_pool2d(inputs, kernel_size, stride=2, padding: str = "VALID", data_format: str = "NHWC",
               outputs_collections=None, scope: str | None = None) -> Tensor:
    """2-D max pooling (tf.contrib.layers.max_pool2d), its op directly in name scope `scope` or "MaxPool2D".

        tf.contrib.layers.max_pool2d(y, [2, 2])    # [N, 28, 28, C] -> [N, 14, 14, C]; op MaxPool2D/MaxPool

    Raises:
      ValueError: `data_format` is neither "NHWC" nor "NCHW".
    """
    return _pool2d(pooling_layers.MaxPooling2D, "MaxPool2D", inputs, kernel_size, stride, padding, data_format,
                   outputs_collections, scope)


def avg_pool2d(inputs, kernel_size, stride=2, padding: str = "VALID", data_format: str = "NHWC",
               outputs_collections=None, scope: str | None = None) -> Tensor:
    """2-D average pooling (tf.contrib.layers.avg_pool2d), in name scope `scope` or "AvgPool2D"; as max_pool2d."""
    return _pool2d(pooling_layers.AveragePooling2D, "AvgPool2D", inputs, kernel_size, stride, padding, data_format,
                   outputs_collections, scope)
