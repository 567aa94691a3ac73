"""Convolution and pooling kernels: Conv2D and its backprops, MaxPool/AvgPool and their gradient ops, LRN/LRNGrad.

One code path for NumPy (the CPU, virtual GPUs) and CuPy (CUDA GPUs), written against `ctx.xp`: strided slices, one
matrix product per chunk of images, and Python loops over the filter or pooling window's taps (kh * kw of them),
never over pixels. Kernels work in NHWC; NCHW tensors are transposed in and out, so both formats run on every device
(TF's CPU kernels accept NHWC only).

Conv2D is im2col: the taps of a chunk of images are stacked into a patch matrix [images*OH*OW, KH*KW*C] and multiplied
by the filter viewed as [KH*KW*C, O]. Chunks hold at most _PATCH_ELEMENTS elements, which bounds memory and keeps the
product cache-friendly. float16 is computed in float32 and rounded once at the end.
"""
from __future__ import annotations

import numpy as np

from adplace.framework import dtypes as _dtypes
from adplace.framework.errors import InvalidArgumentError, UnimplementedError
from adplace.framework.tensor_shape import dims_text
from adplace.kernels.registration import int_tuple, kernel

FLOAT = _dtypes.FLOATING
MAX_POOL_CPU = _dtypes.FLOATING | _dtypes.INTEGER
LRN_TYPES = frozenset({_dtypes.float16, _dtypes.float32})
_PATCH_ELEMENTS = 1 << 21  # patch-matrix elements per chunk: 8 MB of float32, measured fastest on NumPy


# --- geometry ----------------------------------------------------------------------------------------------------
def _window(op, size: int, k: int, stride: int, dilation: int, padding: str, pads: tuple) -> tuple[int, int, int]:
    """(output length, padding before, padding after) of one spatial dim, as TF's GetWindowedOutputSizeVerbose:
    SAME puts the odd padding cell after; VALID and EXPLICIT truncate like C's integer division."""
    effective = (k - 1) * dilation + 1
    if padding == "SAME":
        out = (size + stride - 1) // stride
        total = max((out - 1) * stride + effective - size, 0)
        return out, total // 2, total - total // 2
    before, after = pads if padding == "EXPLICIT" else (0, 0)
    span = size + before + after - effective + stride
    out = span // stride if span >= 0 else -(-span // stride)
    if out < 0:
        raise InvalidArgumentError(None, op, f"Computed output size would be negative: {out} [input_size: {size}, "
                                   f"effective_filter_size: {effective}, stride: {stride}]")
    return out, before, after


class _Geometry:
    """A sliding window over H and W: output size, padding, and the strided (H, W) slices of its taps."""

    __slots__ = ("oh", "ow", "top", "bottom", "left", "right", "taps")

    def __init__(self, rows: tuple, cols: tuple, kernel_hw: tuple, strides: tuple, dilations: tuple):
        (self.oh, self.top, self.bottom), (self.ow, self.left, self.right) = rows, cols
        (sh, sw), (dh, dw) = strides, dilations
        self.taps = [(slice(i * dh, i * dh + sh * (self.oh - 1) + 1, sh),
                      slice(j * dw, j * dw + sw * (self.ow - 1) + 1, sw))
                     for i in range(kernel_hw[0]) for j in range(kernel_hw[1])]

    def padded_hw(self, h: int, w: int) -> tuple[int, int]:
        return h + self.top + self.bottom, w + self.left + self.right

    def pad(self, xp, x, value=0):
        if not (self.top or self.bottom or self.left or self.right):
            return x
        return xp.pad(x, ((0, 0), (self.top, self.bottom), (self.left, self.right), (0, 0)), constant_values=value)

    def crop(self, x_padded, h: int, w: int):
        return x_padded[:, self.top:self.top + h, self.left:self.left + w, :]

    def counts(self, xp, h: int, w: int, kernel_hw: tuple, strides: tuple, dtype):
        """How many input cells each output window covers (padding excluded), shaped [1, OH, OW, 1]."""
        def per_axis(out, before, size, k, stride):
            starts = np.arange(out) * stride - before
            return np.minimum(starts + k, size) - np.maximum(starts, 0)
        rows = per_axis(self.oh, self.top, h, kernel_hw[0], strides[0])
        cols = per_axis(self.ow, self.left, w, kernel_hw[1], strides[1])
        return xp.asarray(np.outer(rows, cols).reshape(1, self.oh, self.ow, 1).astype(dtype))


class _Spec:
    """An op's window attrs in NHWC terms, checked as TF's kernels check them when they are built."""

    __slots__ = ("op", "channels_first", "strides", "dilations", "ksize", "padding", "pads")

    def __init__(self, op, window_attr: str | None, strides_field: str = "strides"):
        attrs = op._attrs
        self.op, self.channels_first = op, attrs["data_format"] == "NCHW"
        h, w, c = (2, 3, 1) if self.channels_first else (1, 2, 3)
        strides = list(attrs["strides"])
        if len(strides) != 4:
            raise InvalidArgumentError(None, op, f"Sliding window {strides_field} field must specify 4 dimensions")
        self.strides = (strides[h], strides[w])
        self.padding, self.pads = attrs["padding"], ((0, 0), (0, 0))
        if window_attr is None:  # convolutions: dilations, explicit padding
            dilations = list(attrs["dilations"])
            if strides[0] != 1 or strides[c] != 1:
                raise InvalidArgumentError(None, op, "Current implementation does not yet support strides in the "
                                           "batch and depth dimensions.")
            if min(self.strides) <= 0:
                raise InvalidArgumentError(None, op, "Row and column strides should be larger than 0.")
            if len(dilations) != 4:
                raise InvalidArgumentError(None, op, "Sliding window dilations field must specify 4 dimensions")
            if dilations[0] != 1 or dilations[c] != 1:
                raise InvalidArgumentError(None, op, "Current implementation does not yet support dilations in the "
                                           "batch and depth dimensions.")
            self.dilations, self.ksize = (dilations[h], dilations[w]), None
            if min(self.dilations) <= 0:
                raise InvalidArgumentError(None, op, "Dilated rates should be larger than 0.")
            explicit = list(attrs.get("explicit_paddings", []))
            if self.padding == "EXPLICIT":
                self.pads = (tuple(explicit[2 * h:2 * h + 2]), tuple(explicit[2 * w:2 * w + 2]))
            return
        ksize = list(attrs[window_attr])
        if len(ksize) != 4:
            raise InvalidArgumentError(None, op, "Sliding window ksize field must specify 4 dimensions")
        if ksize[0] != 1 or strides[0] != 1:
            raise UnimplementedError(None, op, "Pooling is not yet supported on the batch dimension.")
        if ksize[c] != 1 or strides[c] != 1:
            raise UnimplementedError(None, op, "Non-spatial pooling is not yet supported: adplace pools over height "
                                     "and width only (ksize and strides of 1 in the depth dimension)")
        self.ksize, self.dilations = (ksize[h], ksize[w]), (1, 1)

    def to_nhwc(self, xp, x):
        return xp.transpose(x, (0, 2, 3, 1)) if self.channels_first else x

    def from_nhwc(self, xp, x):
        return xp.ascontiguousarray(xp.transpose(x, (0, 3, 1, 2))) if self.channels_first else x

    def nhwc_dims(self, dims: tuple) -> tuple:
        return (dims[0], dims[2], dims[3], dims[1]) if self.channels_first else tuple(dims)

    def geometry(self, h: int, w: int, kernel_hw: tuple) -> _Geometry:
        op, (sh, sw), (dh, dw), (ph, pw) = self.op, self.strides, self.dilations, self.pads
        return _Geometry(_window(op, h, kernel_hw[0], sh, dh, self.padding, ph),
                         _window(op, w, kernel_hw[1], sw, dw, self.padding, pw), kernel_hw, self.strides,
                         self.dilations)


def _compute_dtype(dtype):
    """float16 and bfloat16 (the 2-byte floats) are computed in float32, as TF does."""
    dtype = np.dtype(dtype)
    return np.float32 if dtype == np.float16 or dtype.kind == "V" else dtype


def _check_4d(op, x, what: str) -> None:
    if x.ndim != 4:
        raise InvalidArgumentError(None, op, f"{what} must be 4-dimensional{dims_text(x.shape)}")


def _sizes(op, sizes, label: str, what: str) -> tuple:
    values = int_tuple(sizes)
    if len(values) != 4:
        raise InvalidArgumentError(None, op, f"{label}: {what} must have 4 elements, got {dims_text(values)}")
    return values


def _chunks(n: int, per_image: int):
    step = max(1, _PATCH_ELEMENTS // max(per_image, 1))
    return [(n0, min(n0 + step, n)) for n0 in range(0, n, step)]


def _patches(xp, x_padded, n0: int, n1: int, g: _Geometry):
    """The im2col matrix of images n0:n1: rows (image, oh, ow), columns (kh, kw, c) as the filter flattens."""
    taps = [x_padded[n0:n1, hs, ws] for hs, ws in g.taps]
    return xp.stack(taps, axis=3).reshape((n1 - n0) * g.oh * g.ow, len(taps) * x_padded.shape[3])


# --- Conv2D and its backprops ----------------------------------------------------------------------------------------
def _check_depths(op, label: str, in_depth: int, filter_depth: int) -> None:
    if in_depth == filter_depth:
        return
    if filter_depth == 0 or in_depth % filter_depth:
        raise InvalidArgumentError(None, op, f"{label}: input depth must be evenly divisible by filter depth: "
                                   f"{in_depth} vs {filter_depth}")
    raise UnimplementedError(None, op, f"{label}: grouped convolutions (input depth {in_depth}, filter depth "
                             f"{filter_depth}) are not implemented; use a filter of depth {in_depth}")


def _backprop_geometry(spec: _Spec, label: str, x_dims: tuple, f_dims: tuple, dy_dims: tuple) -> _Geometry:
    """Check input/filter/out_backprop dims (NHWC) against each other as TF's ConvBackpropComputeDimensions does."""
    op = spec.op
    _check_depths(op, label, x_dims[3], f_dims[2])
    if f_dims[3] != dy_dims[3]:
        raise InvalidArgumentError(None, op, f"{label}: filter and out_backprop must have the same out_depth")
    if x_dims[0] != dy_dims[0]:
        raise InvalidArgumentError(None, op, f"{label}: input and out_backprop must have the same batch size")
    g = spec.geometry(x_dims[1], x_dims[2], f_dims[:2])
    for axis, (actual, computed) in enumerate(zip(dy_dims[1:3], (g.oh, g.ow))):
        if actual != computed:
            raise InvalidArgumentError(
                None, op, f"{label}: Size of out_backprop doesn't match computed: actual = {actual}, computed = "
                f"{computed} spatial_dim: {axis + 1} input: {x_dims[axis + 1]} filter: {f_dims[axis]} output: "
                f"{actual} stride: {spec.strides[axis]} dilation: {spec.dilations[axis]}")
    return g


@kernel("Conv2D", FLOAT, FLOAT)
def _conv2d(op, ctx):
    spec, xp = _Spec(op, None), ctx.xp

    def conv2d(x, f):
        _check_4d(op, x, "input")
        _check_4d(op, f, "filter")
        x = spec.to_nhwc(xp, x)
        (n, h, w, c), (kh, kw, fc, o) = x.shape, f.shape
        _check_depths(op, "Conv2D", c, fc)
        g = spec.geometry(h, w, (kh, kw))
        dtype = _compute_dtype(x.dtype)
        out = xp.zeros((n, g.oh, g.ow, o), dtype)
        if out.size and kh * kw * c:
            x_padded = g.pad(xp, x.astype(dtype, copy=False))
            f_matrix = f.astype(dtype, copy=False).reshape(kh * kw * c, o)
            for n0, n1 in _chunks(n, g.oh * g.ow * kh * kw * c):
                out[n0:n1] = (_patches(xp, x_padded, n0, n1, g) @ f_matrix).reshape(n1 - n0, g.oh, g.ow, o)
        return spec.from_nhwc(xp, out.astype(x.dtype, copy=False))
    return conv2d


@kernel("Conv2DBackpropFilter", FLOAT, FLOAT)
def _conv2d_backprop_filter(op, ctx):
    spec, xp, label = _Spec(op, None), ctx.xp, "Conv2DBackpropFilter"

    def backprop_filter(x, filter_sizes, dy):
        _check_4d(op, x, f"{label}: input")
        _check_4d(op, dy, f"{label}: out_backprop")
        kh, kw, c, o = f_dims = _sizes(op, filter_sizes, label, "filter_sizes")
        x, dy = spec.to_nhwc(xp, x), spec.to_nhwc(xp, dy)
        g = _backprop_geometry(spec, label, x.shape, f_dims, dy.shape)
        dtype = _compute_dtype(x.dtype)
        grad = xp.zeros((kh * kw * c, o), dtype)
        if dy.size and grad.size:
            x_padded = g.pad(xp, x.astype(dtype, copy=False))
            dy = dy.astype(dtype, copy=False)
            for n0, n1 in _chunks(x.shape[0], g.oh * g.ow * kh * kw * c):
                grad += _patches(xp, x_padded, n0, n1, g).T @ dy[n0:n1].reshape(-1, o)
        return grad.reshape(f_dims).astype(x.dtype, copy=False)
    return backprop_filter


@kernel("Conv2DBackpropInput", FLOAT | {_dtypes.int32}, FLOAT)
def _conv2d_backprop_input(op, ctx):
    spec, xp, label = _Spec(op, None), ctx.xp, "Conv2DBackpropInput"

    def backprop_input(input_sizes, f, dy):
        _check_4d(op, f, f"{label}: filter")
        _check_4d(op, dy, f"{label}: out_backprop")
        n, h, w, c = x_dims = spec.nhwc_dims(_sizes(op, input_sizes, label, "input_sizes"))
        dy = spec.to_nhwc(xp, dy)
        g = _backprop_geometry(spec, label, x_dims, f.shape, dy.shape)
        (kh, kw, _, o), out_dtype, dtype = f.shape, f.dtype, _compute_dtype(f.dtype)
        grad = xp.zeros((n, *g.padded_hw(h, w), c), dtype)
        if dy.size and f.size:
            f_matrix_t = f.astype(dtype, copy=False).reshape(kh * kw * c, o).T
            dy = dy.astype(dtype, copy=False)
            for n0, n1 in _chunks(n, g.oh * g.ow * kh * kw * c):
                cols = (dy[n0:n1].reshape(-1, o) @ f_matrix_t).reshape(n1 - n0, g.oh, g.ow, kh * kw, c)
                for t, (hs, ws) in enumerate(g.taps):
                    grad[n0:n1, hs, ws] += cols[:, :, :, t]
        return spec.from_nhwc(xp, g.crop(grad, h, w).astype(out_dtype))
    return backprop_input


# --- pooling -----------------------------------------------------------------------------------------------------
def _lowest(dtype):
    return np.iinfo(dtype).min if np.dtype(dtype).kind in "iu" else -np.inf  # floats, bfloat16 (kind "V") included


def _as_float(xp, x):
    """Integer inputs of the max-pool gradients as float64, so -inf padding never ties with a real value."""
    return x.astype(np.float64) if x.dtype.kind in "iu" else x


def _pooling(op, spec: _Spec, xp, pool):
    """MaxPool's and AvgPool's kernel: the input checked and made NHWC, its window geometry, an empty output when
    there is nothing to pool, else `pool(x, g)` on the NHWC input."""
    def pooling(x):
        _check_4d(op, x, "tensor_in")
        x = spec.to_nhwc(xp, x)
        n, h, w, c = x.shape
        g = spec.geometry(h, w, spec.ksize)
        if not n * g.oh * g.ow * c:
            return spec.from_nhwc(xp, xp.zeros((n, g.oh, g.ow, c), x.dtype))
        return spec.from_nhwc(xp, pool(x, g))
    return pooling


@kernel("MaxPool", MAX_POOL_CPU, FLOAT)
def _max_pool(op, ctx):
    spec, xp = _Spec(op, "ksize", "stride"), ctx.xp

    def max_pool(x, g):
        x_padded = g.pad(xp, x, _lowest(x.dtype))
        hs, ws = g.taps[0]
        out = x_padded[:, hs, ws].copy()
        for hs, ws in g.taps[1:]:
            xp.maximum(out, x_padded[:, hs, ws], out=out)
        return out
    return _pooling(op, spec, xp, max_pool)


def _first_max_taps(xp, spec: _Spec, x, y):
    """Yield (tap slices, hit) per window tap, `hit` marking the outputs whose max is first found at this tap (TF
    gives a tie to the first maximum in row-major window order). x and y are NHWC."""
    g = spec.geometry(x.shape[1], x.shape[2], spec.ksize)
    if y.shape != (x.shape[0], g.oh, g.ow, x.shape[3]):
        raise InvalidArgumentError(None, spec.op, f"Expected orig_output shape to be "
                                   f"{dims_text((x.shape[0], g.oh, g.ow, x.shape[3]))}, but got {dims_text(y.shape)}")
    x_padded, y = g.pad(xp, _as_float(xp, x), -np.inf), _as_float(xp, y)
    taken = xp.zeros(y.shape, bool)
    for hs, ws in g.taps:
        hit = xp.logical_and(x_padded[:, hs, ws] == y, xp.logical_not(taken))
        xp.logical_or(taken, hit, out=taken)
        yield hs, ws, hit


def _max_pool_grad_inputs(xp, spec: _Spec, x, y, grad, grad_name: str, like_output: bool) -> tuple:
    """MaxPoolGrad's and MaxPoolGradGrad's inputs in NHWC, after TF's checks: all 4-D, and the gradient shaped like
    the pooled output y (MaxPoolGrad) or like the input x (MaxPoolGradGrad)."""
    op = spec.op
    for t, what in ((x, "orig_input"), (y, "orig_output"), (grad, grad_name)):
        _check_4d(op, t, what)
    x, y, grad = spec.to_nhwc(xp, x), spec.to_nhwc(xp, y), spec.to_nhwc(xp, grad)
    expected = y.shape if like_output else x.shape
    if grad.shape != expected:
        raise InvalidArgumentError(None, op, f"Expected grad shape to be {dims_text(expected)}, but got "
                                   f"{dims_text(grad.shape)}")
    return x, y, grad


@kernel("MaxPoolGrad", MAX_POOL_CPU, FLOAT)
def _max_pool_grad(op, ctx):
    spec, xp = _Spec(op, "ksize"), ctx.xp

    def max_pool_grad(x, y, dy):
        x, y, dy = _max_pool_grad_inputs(xp, spec, x, y, dy, "out_backprop", like_output=True)
        n, h, w, c = x.shape
        g = spec.geometry(h, w, spec.ksize)
        grad = xp.zeros((n, *g.padded_hw(h, w), c), dy.dtype)
        if y.size:
            for hs, ws, hit in _first_max_taps(xp, spec, x, y):
                grad[:, hs, ws] += xp.where(hit, dy, 0)
        return spec.from_nhwc(xp, xp.ascontiguousarray(g.crop(grad, h, w)))
    return max_pool_grad


@kernel("MaxPoolGradGrad", MAX_POOL_CPU, FLOAT)
def _max_pool_grad_grad(op, ctx):
    spec, xp = _Spec(op, "ksize"), ctx.xp

    def max_pool_grad_grad(x, y, grad):
        x, y, grad = _max_pool_grad_inputs(xp, spec, x, y, grad, "grad", like_output=False)
        g = spec.geometry(x.shape[1], x.shape[2], spec.ksize)
        out = xp.zeros(y.shape, grad.dtype)
        if y.size:
            grad_padded = g.pad(xp, grad)
            for hs, ws, hit in _first_max_taps(xp, spec, x, y):
                out = xp.where(hit, grad_padded[:, hs, ws], out)
        return spec.from_nhwc(xp, out)
    return max_pool_grad_grad


@kernel("AvgPool", FLOAT, FLOAT)
def _avg_pool(op, ctx):
    spec, xp = _Spec(op, "ksize", "stride"), ctx.xp

    def avg_pool(x, g):
        dtype = _compute_dtype(x.dtype)
        x_padded = g.pad(xp, x.astype(dtype, copy=False))
        hs, ws = g.taps[0]
        total = x_padded[:, hs, ws].copy()
        for hs, ws in g.taps[1:]:
            total += x_padded[:, hs, ws]
        total /= g.counts(xp, x.shape[1], x.shape[2], spec.ksize, spec.strides, dtype)
        return total.astype(x.dtype, copy=False)
    return _pooling(op, spec, xp, avg_pool)


@kernel("AvgPoolGrad", FLOAT, FLOAT)
def _avg_pool_grad(op, ctx):
    spec, xp = _Spec(op, "ksize"), ctx.xp

    def avg_pool_grad(orig_input_shape, dy):
        _check_4d(op, dy, "out_backprop")
        n, h, w, c = spec.nhwc_dims(_sizes(op, orig_input_shape, "AvgPoolGrad", "orig_input_shape"))
        dy = spec.to_nhwc(xp, dy)
        g = spec.geometry(h, w, spec.ksize)
        if dy.shape != (n, g.oh, g.ow, c):
            raise InvalidArgumentError(None, op, f"AvgPoolGrad: out_backprop {dims_text(dy.shape)} (NHWC) does not "
                                       f"match the pooled input shape {dims_text((n, g.oh, g.ow, c))}")
        dtype = _compute_dtype(dy.dtype)
        grad = xp.zeros((n, *g.padded_hw(h, w), c), dtype)
        if dy.size:
            share = dy.astype(dtype) / g.counts(xp, h, w, spec.ksize, spec.strides, dtype)
            for hs, ws in g.taps:
                grad[:, hs, ws] += share
        return spec.from_nhwc(xp, xp.ascontiguousarray(g.crop(grad, h, w)).astype(dy.dtype, copy=False))
    return avg_pool_grad


# --- LRN -----------------------------------------------------------------------------------------------------------
def _depth_window_sum(xp, a, radius: int):
    """Sum of a[..., d - radius: d + radius + 1] for every depth d (2 * radius + 1 shifted adds)."""
    total, depth = a.copy(), a.shape[-1]
    for shift in range(1, min(radius, depth - 1) + 1):
        total[..., shift:] += a[..., :-shift]
        total[..., :-shift] += a[..., shift:]
    return total


def _lrn_norm(xp, op, x):
    attrs = op._attrs
    return attrs["bias"] + attrs["alpha"] * _depth_window_sum(xp, x * x, attrs["depth_radius"])


@kernel("LRN", LRN_TYPES, LRN_TYPES)
def _lrn(op, ctx):
    xp, beta = ctx.xp, op._attrs["beta"]

    def lrn(x):
        _check_4d(op, x, "input")
        x32 = x.astype(np.float32, copy=False)
        return (x32 * _lrn_norm(xp, op, x32) ** -beta).astype(x.dtype, copy=False)
    return lrn


@kernel("LRNGrad", LRN_TYPES, LRN_TYPES)
def _lrn_grad(op, ctx):
    xp, attrs = ctx.xp, op._attrs
    alpha, beta, radius = attrs["alpha"], attrs["beta"], attrs["depth_radius"]

    def lrn_grad(dy, x, y):
        for t, what in ((dy, "input_grads"), (x, "input_image"), (y, "output_image")):
            _check_4d(op, t, what)
        if not dy.shape == x.shape == y.shape:
            raise InvalidArgumentError(None, op, f"input_grads, input_image and output_image must have the same "
                                       f"shape: {dims_text(dy.shape)}, {dims_text(x.shape)}, {dims_text(y.shape)}")
        dy32, x32, y32 = (t.astype(np.float32, copy=False) for t in (dy, x, y))
        norm = _lrn_norm(xp, op, x32)
        cross = _depth_window_sum(xp, dy32 * y32 / norm, radius)
        return (dy32 * norm ** -beta - (2 * alpha * beta) * x32 * cross).astype(dy.dtype, copy=False)
    return lrn_grad
