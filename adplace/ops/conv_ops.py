"""Convolution and pooling ops (TF1 graph mode): Conv2D and its two backprop ops, MaxPool/AvgPool and their gradient
ops, LRN; with TF's attrs, shape functions and graph-construction errors, and the tf.nn constructors.

    y = tf.nn.conv2d(x, w, strides=[1, 2, 2, 1], padding="SAME")     # Conv2D: [N, ceil(H/2), ceil(W/2), out]
    p = tf.nn.max_pool(y, ksize=[1, 2, 2, 1], strides=[1, 2, 2, 1], padding="VALID")

Both data formats run on the CPU and the GPU (TF's CPU kernels accept only NHWC for most of these ops). Gradients are in
adplace/ops/conv_grad.py; kernels in adplace/kernels/conv.py.
"""
from __future__ import annotations

from collections.abc import Sized

import numpy as np

from adplace.framework import dtypes as _dtypes
from adplace.framework.conversion import convert_to_tensor
from adplace.framework.default_graph import name_scope
from adplace.framework.operation import Tensor
from adplace.framework.registry import register_op
from adplace.framework.tensor_shape import TensorShape, dims_text
from adplace.ops.op_builder import (apply_op_1, check_dtype, check_same_dtype, constant_value,
                                    deprecated_argument_lookup, int_const, shape_from_tensor, shapes_text)

CONV_TYPES = _dtypes.FLOATING
CONV_TRANSPOSE_TYPES = CONV_TYPES | {_dtypes.int32}  # conv2d_transpose also runs on int32 (CPU), as in TF
MAX_POOL_TYPES = _dtypes.FLOATING | _dtypes.INTEGER
AVG_POOL_TYPES = _dtypes.FLOATING
LRN_TYPES = frozenset({_dtypes.float16, _dtypes.float32})
_CONV_PADDINGS = ("SAME", "VALID", "EXPLICIT")
_POOL_PADDINGS = ("SAME", "VALID")
_CONV_FORMATS = ("NHWC", "NCHW")
_MAX_POOL_FORMATS = ("NHWC", "NCHW", "NCHW_VECT_C")


# --- attrs and shapes, as TF's op_def_library and common_shape_fns check them ---------------------------------------
def _shape_error(message: str, name: str, op_type: str, inputs) -> ValueError:
    return ValueError(f"{message} for '{name}' (op: '{op_type}') with input shapes: {shapes_text(inputs)}.")


def _check_choice(op_type: str, attr: str, value, allowed: tuple) -> None:
    if value not in allowed:
        joined = '", "'.join(allowed)
        raise ValueError(f"Attr '{attr}' of '{op_type}' Op passed string '{value}' not in: \"{joined}\".")


def _check_min_length(op_type: str, attr: str, value: list, minimum: int) -> None:
    if len(value) < minimum:
        raise ValueError(f"Attr '{attr}' of '{op_type}' Op passed list of length {len(value)} less than minimum "
                         f"{minimum}.")


def _dims_with_rank(t: Tensor, rank: int, name: str, op_type: str, inputs) -> tuple:
    dims = t._shape.as_tuple()
    if dims is None:
        return (None,) * rank
    if len(dims) != rank:
        raise _shape_error(f"Shape must be rank {rank} but is rank {len(dims)}", name, op_type, inputs)
    return dims


def _hw(values, data_format: str) -> tuple:
    """The (H, W) entries of a 4-vector (strides, ksize, dilations, a shape) in `data_format` order."""
    return (values[2], values[3]) if data_format.startswith("NC") else (values[1], values[2])


def _channel(values, data_format: str):
    return values[1] if data_format.startswith("NC") else values[3]


def _from_format(batch, spatial: tuple, channels, data_format: str) -> TensorShape:
    if data_format.startswith("NC"):
        return TensorShape([batch, channels, *spatial])
    return TensorShape([batch, *spatial, channels])


def _windowed_output_size(size, window, dilation: int, stride: int, padding: str, pads: tuple,
                         fail) -> int | None:
    """TF's GetWindowedOutputSizeFromDimsV2: the output length of one spatial dim (None when unknown).

    `fail(message)` raises the op's error: a stride < 1, a dilation < 1, or a window wider than the padded input.
    """
    if stride <= 0:
        fail(f"Stride must be > 0, but got {stride}")
    if dilation < 1:
        fail(f"Dilation rate must be >= 1, but got {dilation}")
    if padding == "SAME":
        return None if size is None else (size + stride - 1) // stride
    if size is None or window is None:
        return None
    padded = size + (sum(pads) if padding == "EXPLICIT" else 0)
    effective = (window - 1) * dilation + 1
    if padded < effective:
        fail(f"Negative dimension size caused by subtracting {effective} from {padded}")
    return (padded - effective + stride) // stride


def _explicit_pairs(attrs: dict, data_format: str, fail) -> tuple:
    """The (before, after) pads of H and W from `explicit_paddings`, checked as TF's CheckValidPadding does."""
    paddings = list(attrs.get("explicit_paddings", []))
    if attrs["padding"] != "EXPLICIT":
        if paddings:
            fail("explicit_paddings attribute must be empty if the padding attribute is not EXPLICIT")
        return (0, 0), (0, 0)
    if len(paddings) != 8:
        fail(f"explicit_paddings attribute must contain 8 values, but got: {len(paddings)}")
    if any(p < 0 for p in paddings):
        fail(f"All elements of explicit_paddings must be nonnegative, but got: {paddings}")
    pairs = [tuple(paddings[i:i + 2]) for i in range(0, 8, 2)]
    if pairs[0] != (0, 0) or _channel(pairs, data_format) != (0, 0):
        fail("Nonzero explicit padding in the batch or depth dimensions is not supported")
    return _hw(pairs, data_format)


# --- Conv2D and its backprop ops -------------------------------------------------------------------------------------
def _conv_attrs_check(op_type: str, attrs: dict, dtype) -> None:
    check_dtype(op_type, "T", dtype, CONV_TRANSPOSE_TYPES if op_type == "Conv2DBackpropInput" else CONV_TYPES)
    _check_choice(op_type, "padding", attrs["padding"], _CONV_PADDINGS)
    _check_choice(op_type, "data_format", attrs["data_format"], _CONV_FORMATS)


def _conv2d_infer(inputs, attrs, name):
    x, f = inputs
    dtype = check_same_dtype("Conv2D", inputs, ("input", "filter"))
    _conv_attrs_check("Conv2D", attrs, dtype)

    def fail(message):
        raise _shape_error(message, name, "Conv2D", inputs)

    data_format = attrs["data_format"]
    x_dims = _dims_with_rank(x, 4, name, "Conv2D", inputs)
    f_dims = _dims_with_rank(f, 4, name, "Conv2D", inputs)
    strides, dilations = attrs["strides"], attrs["dilations"]
    if len(dilations) != 4:
        fail(f"Conv2D requires the dilation attribute to contain 4 values, but got: {len(dilations)}")
    if len(strides) != 4:
        fail(f"Conv2D on data format {data_format} requires the stride attribute to contain 4 values, but got: "
             f"{len(strides)}")
    in_depth, filter_depth, out_depth = _channel(x_dims, data_format), f_dims[2], f_dims[3]
    if in_depth is not None and filter_depth:
        if in_depth % filter_depth:
            fail(f"Depth of input ({in_depth}) is not a multiple of input depth of filter ({filter_depth})")
        groups = in_depth // filter_depth
        if groups != 1 and out_depth is not None and out_depth % groups:
            fail(f"Depth of output ({out_depth}) is not a multiple of the number of groups ({groups})")
    pads = _explicit_pairs(attrs, data_format, fail)
    spatial = tuple(_windowed_output_size(size, window, d, s, attrs["padding"], p, fail)
                    for size, window, d, s, p in zip(_hw(x_dims, data_format), f_dims[:2],
                                                     _hw(dilations, data_format), _hw(strides, data_format), pads))
    return [(dtype, _from_format(x_dims[0], spatial, out_depth, data_format))]


def _conv2d_backprop_infer(op_type: str, sizes_at: int, t_args: tuple):
    """Conv2DBackpropInput/Filter: the output's shape is the value of the int32 sizes input (TF 1.x's shape fn)."""
    def infer(inputs, attrs, name):
        sizes = inputs[sizes_at]
        check_dtype(op_type, ("input_sizes", "filter_sizes")[sizes_at], sizes._dtype, {_dtypes.int32})
        dtype = check_same_dtype(op_type, [t for i, t in enumerate(inputs) if i != sizes_at], t_args)
        _conv_attrs_check(op_type, attrs, dtype)
        for i, t in enumerate(inputs):
            if i != sizes_at:
                _dims_with_rank(t, 4, name, op_type, inputs)
        shape = _shape_of_sizes(sizes)
        if shape.ndims is not None and shape.ndims != 4:
            raise _shape_error(f"Shape must be rank 4 but is rank {shape.ndims}", name, op_type, inputs)
        return [(dtype, shape if shape.ndims is not None else TensorShape([None] * 4))]
    return infer


register_op("Conv2D", _conv2d_infer)
register_op("Conv2DBackpropInput", _conv2d_backprop_infer("Conv2DBackpropInput", 0, ("filter", "out_backprop")))
register_op("Conv2DBackpropFilter", _conv2d_backprop_infer("Conv2DBackpropFilter", 1, ("input", "out_backprop")))


def _get_sequence(value, n: int, channel_index: int, name: str) -> list:
    """An int or a list of 1, n or n + 2 ints as the n + 2 values of a strides/ksize/dilations attr (TF's rule)."""
    if value is None:
        value = [1]
    elif not isinstance(value, Sized):
        value = [value]
    count = len(value)
    if count == n + 2:
        return [int(v) for v in value]
    if count == 1:
        value = list(value) * n
    elif count != n:
        raise ValueError(f"{name} should be of length 1, {n} or {n + 2} but was {count}")
    value = [int(v) for v in value]
    return [1, 1, *value] if channel_index == 1 else [1, *value, 1]


def _make_str(value, attr: str) -> str:
    if isinstance(value, bytes):
        return value.decode()
    if not isinstance(value, str):
        raise TypeError(f"Expected string for argument '{attr}' not {value!r}.")
    return value


def _convert_padding(padding) -> tuple[str, list]:
    """TF's _convert_padding: "SAME"/"VALID", or a list of 4 (before, after) pairs for EXPLICIT padding."""
    if padding == "EXPLICIT":
        raise ValueError('"EXPLICIT" is not a valid value for the padding parameter. To use explicit padding, the '
                         "padding parameter must be a list.")
    if not isinstance(padding, (list, tuple)):
        return _make_str(padding, "padding"), []
    explicit = []
    for i, pair in enumerate(padding):
        if not isinstance(pair, (list, tuple)):
            raise ValueError("When padding is a list, each element of padding must be a list/tuple of size 2. "
                             f"Element with index {i} of padding is not a list/tuple")
        if len(pair) != 2:
            raise ValueError("When padding is a list, each element of padding must be a list/tuple of size 2. "
                             f"Element with index {i} of padding has size {len(pair)}")
        explicit.extend(int(p) for p in pair)
    if len(padding) != 4:
        raise ValueError(f"When padding is a list, it must be of size 4. Got padding of size: {len(padding)}")
    return "EXPLICIT", explicit


def _conv_attrs(dtype, strides, padding, use_cudnn_on_gpu, data_format, dilations) -> dict:
    padding, explicit = _convert_padding(padding)
    return {"T": dtype, "strides": [int(s) for s in strides], "use_cudnn_on_gpu": bool(use_cudnn_on_gpu),
            "padding": padding, "explicit_paddings": explicit, "data_format": _make_str(data_format, "data_format"),
            "dilations": [int(d) for d in dilations]}


def conv2d(input, filter=None, strides=None, padding=None, use_cudnn_on_gpu: bool = True,  # noqa: A002
           data_format: str = "NHWC", dilations=(1, 1, 1, 1), name: str | None = None, filters=None) -> Tensor:
    """2-D convolution (cross-correlation) of a 4-D `input` with a [height, width, in, out] `filter` (tf.nn.conv2d).

    Args:
      input: a 4-D float Tensor in `data_format` order.
      filter: a 4-D Tensor [filter_height, filter_width, in_channels, out_channels] of input's dtype (`filters`:
        an alias).
      strides: an int or a list of 1, 2 or 4 ints; the batch and depth strides must be 1.
      padding: "SAME", "VALID", or a list of 4 [before, after] pairs (explicit padding).
      use_cudnn_on_gpu: recorded as an attr; adplace has one GPU path.
      data_format: "NHWC" (default) or "NCHW".
      dilations: an int or a list of 1, 2 or 4 ints (the spacing of filter taps).
      name: the op's name (default "Conv2D").
    Returns:
      A 4-D Tensor of input's dtype: [batch, out_height, out_width, out_channels] for NHWC.
    Raises:
      ValueError: bad padding, data format, ranks or channel counts (TF's messages).
    """
    filter = deprecated_argument_lookup("filters", filters, "filter", filter)  # noqa: A001
    data_format = data_format or "NHWC"
    channel_index = 1 if data_format.startswith("NC") else 3
    strides = _get_sequence(strides, 2, channel_index, "strides")
    dilations = _get_sequence(dilations, 2, channel_index, "dilations")
    with name_scope(name, "Conv2D", [input, filter]) as scope:
        input = convert_to_tensor(input, name="input")  # noqa: A001
        filter = convert_to_tensor(filter, dtype=input.dtype.base_dtype, name="filter")  # noqa: A001
        attrs = _conv_attrs(input.dtype.base_dtype, strides, padding, use_cudnn_on_gpu, data_format, dilations)
        return apply_op_1("Conv2D", [input, filter], attrs, name=scope)


def _sizes(value, name: str, op_type: str) -> Tensor:
    """An int32 shape input; a Tensor of another dtype is TF's TypeError."""
    if isinstance(value, Tensor) and value.dtype.base_dtype is not _dtypes.int32:
        raise TypeError(f"Input '{name}' of '{op_type}' Op has type {value.dtype.base_dtype.name} that does not match "
                        f"expected type of int32.")
    return int_const(value, name)


def _shape_of_sizes(sizes: Tensor) -> TensorShape:
    """The static shape an int32 sizes input describes; a tf.stack of scalars (`[tf.shape(x)[0], 14, 14, 32]`) gives
    its constant entries, as TF's MakeShapeFromShapeTensor does."""
    if sizes._op._type == "Pack" and sizes._op._inputs:
        values = [_static_entry(t) for t in sizes._op._inputs]
        return TensorShape([None if v is None or int(v) < 0 else int(v) for v in values])
    return shape_from_tensor(sizes)


def _static_entry(entry: Tensor):
    """The value of one entry of a packed shape when the graph is built: a constant, or a constant-index slice of a
    known shape (`tf.shape(x)[0]` where x's batch size is static), as TF's shape inference evaluates it."""
    value = constant_value(entry)
    op = entry._op
    if value is None and op._type == "StridedSlice" and "slice_spec" in op._attrs:
        spec, source = op._attrs["slice_spec"], constant_value(op._inputs[0])
        if source is not None and all(isinstance(i, int) for i in spec):
            value = np.asarray(source)[spec]
    return value


def conv2d_backprop_input(input_sizes, filter=None, out_backprop=None, strides=None, padding=None,  # noqa: A002
                          use_cudnn_on_gpu: bool = True, data_format: str = "NHWC", dilations=(1, 1, 1, 1),
                          name: str | None = None, filters=None) -> Tensor:
    """The gradient of conv2d with respect to its input, of shape `input_sizes` (tf.nn.conv2d_backprop_input).

    `strides` and `dilations` are 4-lists in `data_format` order, as the op takes them.
    """
    filter = filters if filter is None else filter  # noqa: A001
    with name_scope(name, "Conv2DBackpropInput", [input_sizes, filter, out_backprop]) as scope:
        sizes = _sizes(input_sizes, "input_sizes", "Conv2DBackpropInput")
        filter = convert_to_tensor(filter, name="filter")  # noqa: A001
        out_backprop = convert_to_tensor(out_backprop, dtype=filter.dtype.base_dtype, name="out_backprop")
        attrs = _conv_attrs(filter.dtype.base_dtype, strides, padding, use_cudnn_on_gpu, data_format, dilations)
        return apply_op_1("Conv2DBackpropInput", [sizes, filter, out_backprop], attrs, name=scope)


def conv2d_backprop_filter(input, filter_sizes, out_backprop, strides, padding,  # noqa: A002
                           use_cudnn_on_gpu: bool = True, data_format: str = "NHWC", dilations=(1, 1, 1, 1),
                           name: str | None = None) -> Tensor:
    """The gradient of conv2d with respect to its filter, of shape `filter_sizes` (tf.nn.conv2d_backprop_filter)."""
    with name_scope(name, "Conv2DBackpropFilter", [input, filter_sizes, out_backprop]) as scope:
        input = convert_to_tensor(input, name="input")  # noqa: A001
        sizes = _sizes(filter_sizes, "filter_sizes", "Conv2DBackpropFilter")
        out_backprop = convert_to_tensor(out_backprop, dtype=input.dtype.base_dtype, name="out_backprop")
        attrs = _conv_attrs(input.dtype.base_dtype, strides, padding, use_cudnn_on_gpu, data_format, dilations)
        return apply_op_1("Conv2DBackpropFilter", [input, sizes, out_backprop], attrs, name=scope)


def conv2d_transpose(value=None, filter=None, output_shape=None, strides=None, padding: str = "SAME",  # noqa: A002
                     data_format: str = "NHWC", name: str | None = None, input=None, filters=None,  # noqa: A002
                     dilations=None) -> Tensor:
    """The transpose (gradient) of conv2d, "deconvolution" (tf.nn.conv2d_transpose): a Conv2DBackpropInput op.

    Args:
      value: a 4-D Tensor [batch, height, width, in_channels] (NHWC) (`input`: an alias).
      filter: a 4-D Tensor [height, width, output_channels, in_channels] (`filters`: an alias).
      output_shape: a 1-D Tensor or list of 4 ints, the shape of the result.
      strides: an int or a list of 1, 2 or 4 ints.
      padding: "SAME" or "VALID".
      data_format: "NHWC" or "NCHW".
      name: the op's name (default "conv2d_transpose").
      dilations: an int or a list of 1, 2 or 4 ints.
    Returns:
      A Tensor of value's dtype and shape `output_shape`.
    Raises:
      ValueError: channel counts that do not match the filter, a bad output_shape, padding or data_format.
    """
    value = input if value is None else value
    filter = filters if filter is None else filter  # noqa: A001
    with name_scope(name, "conv2d_transpose", [value, filter, output_shape]) as scope:
        if data_format not in _CONV_FORMATS:
            raise ValueError("data_format has to be either NCHW or NHWC.")
        value = convert_to_tensor(value, name="value")
        filter = convert_to_tensor(filter, name="filter")  # noqa: A001
        axis = 3 if data_format == "NHWC" else 1
        value_dims, filter_dims = value.shape.as_tuple() or (None,) * 4, filter.shape.as_tuple() or (None,) * 4
        value_depth, filter_in = value_dims[axis], filter_dims[3]
        if None not in (value_depth, filter_in) and value_depth != filter_in:
            raise ValueError(f"input channels does not match filter's input channels, {value_depth} != {filter_in}")
        sizes = _sizes(output_shape, "output_shape", "Conv2DBackpropInput")
        if not sizes.shape.is_compatible_with(TensorShape([4])):
            raise ValueError(f"output_shape must have shape (4,), got {sizes.shape}")
        if isinstance(output_shape, (list, tuple)) and not isinstance(output_shape[axis], Tensor):
            filter_out = filter_dims[2]
            if filter_out is not None and int(output_shape[axis]) != filter_out:
                raise ValueError(f"output_shape does not match filter's output channels, {output_shape[axis]} != "
                                 f"{filter_out}")
        if padding not in _POOL_PADDINGS:
            raise ValueError(f"padding must be either VALID or SAME: {padding}")
        channel_index = 1 if data_format.startswith("NC") else 3
        attrs = _conv_attrs(value.dtype.base_dtype, _get_sequence(strides, 2, channel_index, "strides"), padding,
                            True, data_format, _get_sequence(dilations, 2, channel_index, "dilations"))
        return apply_op_1("Conv2DBackpropInput", [sizes, filter, value], attrs, name=scope)


# --- pooling -----------------------------------------------------------------------------------------------------
def _pool_attrs_check(op_type: str, attrs: dict, dtype, allowed_types, formats: tuple) -> None:
    check_dtype(op_type, "T", dtype, allowed_types)
    _check_min_length(op_type, "ksize", attrs["ksize"], 4)
    _check_min_length(op_type, "strides", attrs["strides"], 4)
    _check_choice(op_type, "padding", attrs["padding"], _POOL_PADDINGS)
    _check_choice(op_type, "data_format", attrs["data_format"], formats)


def _pool_output_shape(op_type: str, x: Tensor, attrs: dict, name: str, inputs, pool_depth: bool) -> TensorShape:
    """TF's MaxPoolShape/AvgPoolShape: each spatial dim (and the depth for MaxPool) windowed by ksize and strides."""
    def fail(message):
        raise _shape_error(message, name, op_type, inputs)

    data_format = attrs["data_format"]
    if data_format == "NCHW_VECT_C":
        fail("adplace does not implement the NCHW_VECT_C (int8 vectors) data format; use NHWC or NCHW")
    dims = _dims_with_rank(x, 4, name, op_type, inputs)
    strides, ksize, padding = attrs["strides"], attrs["ksize"], attrs["padding"]
    kind = "MaxPool" if pool_depth else "AvgPool"
    if len(strides) != 4:
        fail(f"{kind} requires the stride attribute to contain 4 values, but got: {len(strides)}")
    if len(ksize) != 4:
        fail(f"{kind} requires the ksize attribute to contain 4 values, but got: {len(ksize)}")
    spatial = tuple(_windowed_output_size(size, k, 1, s, padding, (0, 0), fail)
                    for size, k, s in zip(_hw(dims, data_format), _hw(ksize, data_format), _hw(strides, data_format)))
    depth = _channel(dims, data_format)
    if pool_depth:
        depth = _windowed_output_size(depth, _channel(ksize, data_format), 1, _channel(strides, data_format), padding,
                                     (0, 0), fail)
    return _from_format(dims[0], spatial, depth, data_format)


def _max_pool_infer(inputs, attrs, name):
    dtype = inputs[0]._dtype.base_dtype
    _pool_attrs_check("MaxPool", attrs, dtype, MAX_POOL_TYPES, _MAX_POOL_FORMATS)
    return [(dtype, _pool_output_shape("MaxPool", inputs[0], attrs, name, inputs, pool_depth=True))]


def _avg_pool_infer(inputs, attrs, name):
    dtype = inputs[0]._dtype.base_dtype
    _pool_attrs_check("AvgPool", attrs, dtype, AVG_POOL_TYPES, _CONV_FORMATS)
    return [(dtype, _pool_output_shape("AvgPool", inputs[0], attrs, name, inputs, pool_depth=False))]


def _merged(op_type: str, name: str, inputs, tensors) -> TensorShape:
    """The one rank-4 shape `tensors` share; TF's Merge error otherwise."""
    merged = [None] * 4
    for t in tensors:
        dims = _dims_with_rank(t, 4, name, op_type, inputs)
        for i, (a, b) in enumerate(zip(merged, dims)):
            if None not in (a, b) and a != b:
                raise _shape_error(f"Dimension {i} in both shapes must be equal, but are {a} and {b}. Shapes are "
                                   f"{dims_text(merged)} and {dims_text(dims)}.", name, op_type, inputs)
            merged[i] = b if a is None else a
    return TensorShape(merged)


def _max_pool_grad_infer(inputs, attrs, name):
    """MaxPoolGrad(orig_input, orig_output, grad) -> shaped like orig_input."""
    dtype = check_same_dtype("MaxPoolGrad", inputs, ("orig_input", "orig_output", "grad"))
    _pool_attrs_check("MaxPoolGrad", attrs, dtype, MAX_POOL_TYPES, _CONV_FORMATS)
    _dims_with_rank(inputs[1], 4, name, "MaxPoolGrad", inputs)
    _dims_with_rank(inputs[2], 4, name, "MaxPoolGrad", inputs)
    return [(dtype, _merged("MaxPoolGrad", name, inputs, inputs[:1]))]


def _max_pool_grad_grad_infer(inputs, attrs, name):
    """MaxPoolGradGrad(orig_input, orig_output, grad of orig_input's shape) -> shaped like orig_output."""
    dtype = check_same_dtype("MaxPoolGradGrad", inputs, ("orig_input", "orig_output", "grad"))
    _pool_attrs_check("MaxPoolGradGrad", attrs, dtype, MAX_POOL_TYPES, _CONV_FORMATS)
    _merged("MaxPoolGradGrad", name, inputs, [inputs[0], inputs[2]])
    pooled = _pool_output_shape("MaxPoolGradGrad", inputs[0], attrs, name, inputs, pool_depth=True)
    if not pooled.is_compatible_with(inputs[1]._shape):
        raise _shape_error(f"Dimensions of {pooled} and {inputs[1]._shape} do not match", name, "MaxPoolGradGrad",
                           inputs)
    return [(dtype, pooled.merge_with(inputs[1]._shape))]


def _avg_pool_grad_infer(inputs, attrs, name):
    """AvgPoolGrad(orig_input_shape, grad) -> the shape orig_input_shape holds."""
    sizes, grad = inputs
    check_dtype("AvgPoolGrad", "orig_input_shape", sizes._dtype, {_dtypes.int32})
    dtype = grad._dtype.base_dtype
    _pool_attrs_check("AvgPoolGrad", attrs, dtype, AVG_POOL_TYPES, _CONV_FORMATS)
    _dims_with_rank(grad, 4, name, "AvgPoolGrad", inputs)
    shape = _shape_of_sizes(sizes)
    if shape.ndims is not None and shape.ndims != 4:
        raise _shape_error(f"Shape must be rank 4 but is rank {shape.ndims}", name, "AvgPoolGrad", inputs)
    return [(dtype, shape if shape.ndims is not None else TensorShape([None] * 4))]


register_op("MaxPool", _max_pool_infer)
register_op("MaxPoolGrad", _max_pool_grad_infer)
register_op("MaxPoolGradGrad", _max_pool_grad_grad_infer)
register_op("AvgPool", _avg_pool_infer)
register_op("AvgPoolGrad", _avg_pool_grad_infer)


def _pool(op_type: str, default_name: str, value, ksize, strides, padding, data_format, name) -> Tensor:
    with name_scope(name, default_name, [value]) as scope:
        data_format = data_format or "NHWC"
        channel_index = 1 if data_format.startswith("NC") else 3
        ksize = _get_sequence(ksize, 2, channel_index, "ksize")
        strides = _get_sequence(strides, 2, channel_index, "strides")
        if op_type == "MaxPool" and default_name == "MaxPool" and 0 in ksize:
            raise ValueError("ksize cannot be zero.")
        value = convert_to_tensor(value, name="input")
        attrs = {"T": value.dtype.base_dtype, "ksize": ksize, "strides": strides,
                 "padding": _make_str(padding, "padding"), "data_format": _make_str(data_format, "data_format")}
        return apply_op_1(op_type, [value], attrs, name=scope)


def max_pool(value, ksize, strides, padding, data_format: str = "NHWC", name: str | None = None,
             input=None) -> Tensor:  # noqa: A002
    """Max pooling of a 4-D tensor (tf.nn.max_pool); ties go to the first maximum in the window, as in TF.

    Args:
      value: a 4-D Tensor in `data_format` order (`input`: an alias).
      ksize: an int or a list of 1, 2 or 4 ints, the window size.
      strides: an int or a list of 1, 2 or 4 ints.
      padding: "SAME" or "VALID" (SAME pads with -inf: padding never wins).
      data_format: "NHWC", "NCHW" (or "NCHW_VECT_C", which adplace rejects).
      name: the op's name (default "MaxPool").
    Returns:
      The max-pooled Tensor, of value's dtype.
    """
    value = input if value is None else value
    return _pool("MaxPool", "MaxPool", value, ksize, strides, padding, data_format, name)


def max_pool2d(input, ksize, strides, padding, data_format: str = "NHWC",  # noqa: A002
               name: str | None = None) -> Tensor:
    """tf.nn.max_pool2d: max_pool with `input` as the first argument (default name "MaxPool2d")."""
    return _pool("MaxPool", "MaxPool2d", input, ksize, strides, padding, data_format, name)


def avg_pool(value, ksize, strides, padding, data_format: str = "NHWC", name: str | None = None,
             input=None) -> Tensor:  # noqa: A002
    """Average pooling of a 4-D tensor (tf.nn.avg_pool, tf.compat.v1.nn.avg_pool2d).

    With SAME padding each output averages only the input cells its window covers, as TF does (padding is not
    counted). Arguments as for max_pool; the default name is "AvgPool".
    """
    value = input if value is None else value
    return _pool("AvgPool", "AvgPool", value, ksize, strides, padding, data_format, name)


avg_pool2d = avg_pool


# --- local response normalization --------------------------------------------------------------------------------
def _lrn_infer(inputs, attrs, name):
    dtype = inputs[0]._dtype.base_dtype
    check_dtype("LRN", "T", dtype, LRN_TYPES)
    return [(dtype, TensorShape(_dims_with_rank(inputs[0], 4, name, "LRN", inputs)))]


def _lrn_grad_infer(inputs, attrs, name):
    dtype = check_same_dtype("LRNGrad", inputs, ("input_grads", "input_image", "output_image"))
    check_dtype("LRNGrad", "T", dtype, LRN_TYPES)
    return [(dtype, _merged("LRNGrad", name, inputs, inputs))]


register_op("LRN", _lrn_infer)
register_op("LRNGrad", _lrn_grad_infer)


def lrn(input, depth_radius: int = 5, bias: float = 1.0, alpha: float = 1.0, beta: float = 0.5,  # noqa: A002
        name: str | None = None) -> Tensor:
    """Local response normalization over the last axis of a 4-D tensor (tf.nn.lrn):
    out = input / (bias + alpha * sum(input[..., d - r: d + r + 1] ** 2)) ** beta, with r = depth_radius."""
    with name_scope(name, "LRN", [input]) as scope:
        input = convert_to_tensor(input, name="input")  # noqa: A001
        attrs = {"T": input.dtype.base_dtype, "depth_radius": int(depth_radius), "bias": float(bias),
                 "alpha": float(alpha), "beta": float(beta)}
        return apply_op_1("LRN", [input], attrs, name=scope)


local_response_normalization = lrn
