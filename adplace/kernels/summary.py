"""Kernels of tf.summary's ops (adplace/ops/summary_ops.py): each returns a serialized `Summary` proto as a string
scalar. CPU only, as in TF. The histogram uses TF's default buckets (tensorflow/core/lib/histogram/histogram.cc):
limits growing by 10% from 1e-12 to 1e20, mirrored for negatives, around 0; runs of empty buckets are merged.

    default_bucket_limits()[:3]                    # [-1.7976931348623157e+308, -9.4e+19..., -8.5e+19...]
    histogram_proto(np.array([1., 2., 2.]))        # HistogramProto(min=1, max=2, num=3, sum=5, ...)
"""
from __future__ import annotations

import functools
import sys

import numpy as np

from adplace.framework import dtypes as _dtypes
from adplace.framework.errors import InvalidArgumentError
from adplace.framework.tensor_shape import dims_text
from adplace.framework.tensor_util import make_tensor_proto
from adplace.kernels.registration import NO_GPU, kernel, object_scalar
from adplace.lib import protos
from adplace.lib.io.png import encode_png
from adplace.lib.io.wav import encode_wav

_REAL = _dtypes.FLOATING | _dtypes.INTEGER
_DBL_MAX = sys.float_info.max


def _text(value) -> str:
    return value.decode("utf-8", errors="replace") if isinstance(value, bytes) else str(value)


def _scalar_tag(tag, op, what: str = "Tags") -> str:
    tag = np.asarray(tag)
    if tag.size != 1:  # TF's IsLegacyScalar: a scalar or a one-element vector
        raise InvalidArgumentError(None, op, f"{what} must be a scalar")
    return _text(tag.reshape(-1)[0])


# --- ScalarSummary ------------------------------------------------------------------------------------------------
@kernel("ScalarSummary", _REAL, NO_GPU)
def _scalar_summary(op, ctx):
    summary_pb2 = protos.summary_pb2

    def scalar_summary(tags, values):
        tags, values = np.asarray(tags), np.asarray(values)
        if tags.shape != values.shape:
            single = f" (tag '{_text(tags.reshape(-1)[0])}')" if tags.size == 1 else ""
            raise InvalidArgumentError(None, op, f"tags and values not the same shape: {dims_text(tags.shape)} != "
                                                 f"{dims_text(values.shape)}{single}")
        summary = summary_pb2.Summary()
        for tag, value in zip(tags.reshape(-1), values.reshape(-1).tolist()):
            summary.value.add(tag=_text(tag), simple_value=float(value))
        return object_scalar(summary.SerializeToString())
    return scalar_summary


# --- HistogramSummary ---------------------------------------------------------------------------------------------
@functools.lru_cache(maxsize=1)
def default_bucket_limits() -> np.ndarray:
    """TF's default histogram bucket limits (right edges), increasing, from -DBL_MAX to DBL_MAX."""
    positive, v = [], 1.0e-12
    while v < 1.0e20:
        positive.append(v)
        v *= 1.1
    positive.append(_DBL_MAX)
    limits = np.array([-x for x in reversed(positive)] + [0.0] + positive)
    limits.setflags(write=False)
    return limits


def histogram_proto(values: np.ndarray):
    """The HistogramProto of finite `values` as TF's Histogram builds it: bucket i counts values in
    [limit[i-1], limit[i]); each run of empty buckets is one bucket ending at the run's last limit."""
    limits = default_bucket_limits()
    flat = np.asarray(values, dtype=np.float64).reshape(-1)
    proto = protos.histogram_pb2.HistogramProto()
    counts = np.bincount(np.minimum(np.searchsorted(limits, flat, side="right"), len(limits) - 1),
                         minlength=len(limits))
    if flat.size:
        proto.min, proto.max, proto.num = float(flat.min()), float(flat.max()), float(flat.size)
        proto.sum = float(np.cumsum(flat)[-1])  # summed in order, as TF's loop does
        proto.sum_squares = float(np.cumsum(flat * flat)[-1])
    else:
        proto.min, proto.max = _DBL_MAX, -_DBL_MAX
    edges, bucket_counts = [], []
    previous = -1
    for i in np.flatnonzero(counts).tolist():
        if i > previous + 1:  # the empty run between the previous filled bucket and this one
            edges.append(limits[i - 1])
            bucket_counts.append(0.0)
        edges.append(limits[i])
        bucket_counts.append(float(counts[i]))
        previous = i
    if previous < len(limits) - 1:
        edges.append(limits[-1])
        bucket_counts.append(0.0)
    proto.bucket_limit.extend(float(e) for e in edges)
    proto.bucket.extend(bucket_counts)
    return proto


@kernel("HistogramSummary", _REAL, NO_GPU)
def _histogram_summary(op, ctx):
    summary_pb2 = protos.summary_pb2

    def histogram_summary(tag, values):
        tag = np.asarray(tag)
        if tag.ndim != 0:
            raise InvalidArgumentError(None, op, "tags must be scalar")
        values = np.asarray(values)
        if values.dtype.kind == "f":
            if np.isnan(values).any():
                raise InvalidArgumentError(None, op, f"Nan in summary histogram for: {op.name}")
            if np.isinf(values).any():
                raise InvalidArgumentError(None, op, f"Infinity in summary histogram for: {op.name}")
        summary = summary_pb2.Summary()
        summary.value.add(tag=_text(tag[()]), histo=histogram_proto(values))
        return object_scalar(summary.SerializeToString())
    return histogram_summary


# --- ImageSummary -------------------------------------------------------------------------------------------------
def normalize_image(image: np.ndarray, bad_color: np.ndarray) -> np.ndarray:
    """A float [height, width, depth] image as uint8, as TF's ImageSummary does: scaled by 255/max when no value is
    negative, else by 127/max|v| and shifted to 128, in the image's own precision; pixels with a non-finite channel
    become `bad_color`."""
    depth = image.shape[-1]
    finite = np.isfinite(image).all(axis=-1)
    good = image[finite].astype(np.float32)
    lo = float(good.min()) if good.size else np.inf
    hi = float(good.max()) if good.size else -np.inf
    kind = image.dtype.type
    if lo < 0:
        max_val = np.float32(max(abs(lo), abs(hi)))
        scale, offset = kind(0.0 if max_val < 1e-6 else np.float32(127.0) / max_val), kind(128.0)
    else:
        scale, offset = kind(0.0 if hi < 1e-6 else np.float32(255.0) / np.float32(hi)), kind(0.0)
    with np.errstate(invalid="ignore", over="ignore"):
        scaled = np.trunc(image * scale + offset)
    out = np.clip(np.nan_to_num(scaled), 0, 255).astype(np.uint8)
    out[~finite] = bad_color[:depth]
    return out


@kernel("ImageSummary", frozenset({_dtypes.uint8, _dtypes.float16, _dtypes.float32, _dtypes.float64}), NO_GPU)
def _image_summary(op, ctx):
    max_images = op._attrs["max_images"]
    bad_color = np.asarray(op._attrs["bad_color"], np.uint8).reshape(-1)
    summary_pb2 = protos.summary_pb2

    def image_summary(tag, tensor):
        base = _scalar_tag(tag, op)
        tensor = np.asarray(tensor)
        if tensor.ndim != 4 or tensor.shape[3] not in (1, 3, 4):
            raise InvalidArgumentError(None, op, f"Tensor must be 4-D with last dim 1, 3, or 4, not "
                                                 f"{dims_text(tensor.shape)}")
        batch, height, width, depth = tensor.shape
        if height * width >= 1 << 29:
            raise InvalidArgumentError(None, op, f"Tensor too large for summary {dims_text(tensor.shape)}")
        if tensor.dtype != np.uint8 and bad_color.size < depth:
            raise InvalidArgumentError(None, op, f"expected depth <= bad_color.size, got depth = {depth}, "
                                                 f"bad_color.size = {bad_color.size}")
        summary = summary_pb2.Summary()
        for i in range(min(max_images, batch)):
            pixels = tensor[i] if tensor.dtype == np.uint8 else normalize_image(tensor[i], bad_color)
            value = summary.value.add(tag=f"{base}/image/{i}" if max_images > 1 else f"{base}/image")
            value.image.height, value.image.width, value.image.colorspace = height, width, depth
            value.image.encoded_image_string = encode_png(pixels)
        return object_scalar(summary.SerializeToString())
    return image_summary


# --- AudioSummaryV2 -----------------------------------------------------------------------------------------------
@kernel("AudioSummaryV2", None, NO_GPU)  # no type attr: its tensor is always float32
def _audio_summary(op, ctx):
    max_outputs = op._attrs["max_outputs"]
    summary_pb2 = protos.summary_pb2

    def audio_summary(tag, tensor, sample_rate):
        base = _scalar_tag(tag, op, "Tag")
        tensor = np.asarray(tensor, np.float32)
        if tensor.ndim not in (2, 3):
            raise InvalidArgumentError(None, op, f"Tensor must be 3-D or 2-D, got: {dims_text(tensor.shape)}")
        rate = float(np.asarray(sample_rate).reshape(-1)[0])
        if not rate > 0.0:
            raise InvalidArgumentError(None, op, "sample_rate must be > 0")
        clips = tensor if tensor.ndim == 3 else tensor[:, :, None]
        summary = summary_pb2.Summary()
        for i in range(min(max_outputs, clips.shape[0])):
            value = summary.value.add(tag=f"{base}/audio/{i}" if max_outputs > 1 else f"{base}/audio")
            value.audio.sample_rate, value.audio.num_channels = rate, clips.shape[2]
            value.audio.length_frames, value.audio.content_type = clips.shape[1], "audio/wav"
            value.audio.encoded_audio_string = encode_wav(clips[i], max(int(np.rint(rate)), 1))
        return object_scalar(summary.SerializeToString())
    return audio_summary


# --- TensorSummaryV2 ----------------------------------------------------------------------------------------------
@kernel("TensorSummaryV2", _dtypes.ALL, NO_GPU)
def _tensor_summary(op, ctx):
    dtype = op._attrs["T"]
    summary_pb2 = protos.summary_pb2

    def tensor_summary(tag, tensor, serialized_summary_metadata):
        summary = summary_pb2.Summary()
        value = summary.value.add(tag=_scalar_tag(tag, op, "tag"))
        value.metadata.ParseFromString(np.asarray(serialized_summary_metadata).reshape(-1)[0])
        value.tensor.CopyFrom(make_tensor_proto(np.asarray(tensor), dtype=dtype))
        return object_scalar(summary.SerializeToString())
    return tensor_summary


# --- MergeSummary -------------------------------------------------------------------------------------------------
@kernel("MergeSummary", None, NO_GPU)
def _merge_summary(op, ctx):
    from google.protobuf.message import DecodeError

    summary_pb2 = protos.summary_pb2

    def merge_summary(*inputs):
        merged, tags = summary_pb2.Summary(), set()
        for serialized in (s for t in inputs for s in np.asarray(t, dtype=object).reshape(-1)):
            try:
                summary = summary_pb2.Summary.FromString(serialized)
            except DecodeError:
                raise InvalidArgumentError(None, op, "Could not parse one of the summary inputs") from None
            for value in summary.value:
                if value.tag and value.tag in tags:  # TensorSummary values without a tag are never duplicates
                    raise InvalidArgumentError(None, op, f"Duplicate tag {value.tag} found in summary inputs")
                tags.add(value.tag)
            merged.value.extend(summary.value)
        return object_scalar(merged.SerializeToString())
    return merge_summary
