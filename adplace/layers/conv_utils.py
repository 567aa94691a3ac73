"""Argument normalisation and input checks shared by the convolution, pooling and flatten layers, with Keras's
rules and messages (TF1's tf.layers are Keras layers underneath).

    normalize_tuple(3, 2, "kernel_size")           # (3, 3)
    normalize_padding("SAME")                       # "same"
    convert_data_format("channels_first", 4)        # "NCHW"
"""
from __future__ import annotations

from adplace.framework.tensor_shape import TensorShape

_DATA_FORMATS = {"channels_last": {3: "NWC", 4: "NHWC", 5: "NDHWC"},
                 "channels_first": {3: "NCW", 4: "NCHW", 5: "NCDHW"}}


def normalize_tuple(value, n: int, name: str) -> tuple:
    """An int (repeated n times) or an iterable of n ints, as a tuple of ints.

    Raises:
      ValueError: anything else, naming the argument.
    """
    if isinstance(value, int):
        return (value,) * n
    message = f"The `{name}` argument must be a tuple of {n} integers. Received: {value}"
    try:
        value_tuple = tuple(value)
    except TypeError:
        raise ValueError(message) from None
    if len(value_tuple) != n:
        raise ValueError(message)
    for single_value in value_tuple:
        try:
            int(single_value)
        except (ValueError, TypeError):
            raise ValueError(f"{message} including element {single_value} of type "
                             f"{type(single_value)}") from None
    return tuple(int(v) for v in value_tuple)


def normalize_padding(value) -> str:
    """"valid", "same" or "causal", any case, lowered."""
    padding = value.lower()
    if padding not in {"valid", "same", "causal"}:
        raise ValueError('The `padding` argument must be a list/tuple or one of "valid", "same" (or "causal", only '
                         f"for `Conv1D). Received: {padding}")
    return padding


def normalize_data_format(value) -> str:
    """"channels_last" (also for None, Keras's default image format) or "channels_first", any case, lowered."""
    data_format = ("channels_last" if value is None else value).lower()
    if data_format not in _DATA_FORMATS:
        raise ValueError('The `data_format` argument must be one of "channels_first", "channels_last". Received: '
                         f"{value}")
    return data_format


def convert_data_format(data_format: str, ndim: int) -> str:
    """A Keras data format as the op attribute for rank `ndim` inputs: ("channels_first", 4) -> "NCHW"."""
    if data_format not in _DATA_FORMATS:
        raise ValueError(f"Invalid data_format: {data_format}")
    if ndim not in _DATA_FORMATS[data_format]:
        raise ValueError(f"Input rank not supported: {ndim}")
    return _DATA_FORMATS[data_format][ndim]


def check_input_rank(layer_name: str, shape: TensorShape, ndim: int | None = None,
                     min_ndim: int | None = None) -> None:
    """Keras's InputSpec rank check of input 0: exactly `ndim`, or at least `min_ndim` when the rank is known.

    Raises:
      ValueError: the rank does not fit, with the full shape received.
    """
    rank = shape.ndims
    if ndim is not None and rank != ndim:
        received = shape.as_list() if rank is not None else None
        raise ValueError(f"Input 0 of layer {layer_name} is incompatible with the layer: expected ndim={ndim}, found "
                         f"ndim={rank}. Full shape received: {received}")
    if min_ndim is not None and rank is not None and rank < min_ndim:
        raise ValueError(f"Input 0 of layer {layer_name} is incompatible with the layer: expected min_ndim={min_ndim}, "
                         f"found ndim={rank}. Full shape received: {shape.as_list()}")


def check_input_axis(layer_name: str, shape: TensorShape, axis: int, value: int) -> None:
    """Keras's InputSpec axes check: dimension `axis` of input 0, when known, must equal `value`."""
    if shape.ndims is None:
        return
    dim = shape.as_list()[axis]
    if dim is not None and dim != value:
        raise ValueError(f"Input 0 of layer {layer_name} is incompatible with the layer: expected axis {axis} of input "
                         f"shape to have value {value} but received input with shape {shape.as_list()}")
