"""tf.summary's ops: each builds a graph op whose value is a serialized `Summary` proto (a string scalar) that a
FileWriter writes to an event file. Their kernels (adplace/kernels/summary.py) run on the CPU only, as in TF.

    loss_summary = tf.summary.scalar("loss", loss)          # tag "loss", in the SUMMARIES collection
    tf.summary.histogram("weights", w)
    merged = tf.summary.merge_all()                         # one MergeSummary of every summary of the graph
    writer.add_summary(sess.run(merged), step)

Tags follow TF: the name is cleaned (characters outside [-/\\w.] become "_"), scoped by the enclosing name scopes,
made unique like an op name ("loss_1"), and prefixed by `family` when one is given ("family/scope/family/name").
"""
from __future__ import annotations

import contextlib
import logging
import re

import numpy as np

from adplace.framework import dtypes as _dtypes
from adplace.framework.conversion import convert_to_tensor
from adplace.framework.default_graph import get_collection, name_scope
from adplace.framework.graph import GraphKeys
from adplace.framework.operation import Tensor
from adplace.framework.registry import NotDifferentiable, register_op
from adplace.lib import protos
from adplace.ops.op_builder import SCALAR, apply_op_1, check_dtype

_log = logging.getLogger("adplace")
_REAL = _dtypes.FLOATING | _dtypes.INTEGER
_IMAGE = frozenset({_dtypes.uint8, _dtypes.float16, _dtypes.float32, _dtypes.float64})
_INVALID_TAG_CHARACTERS = re.compile(r"[^-/\w\.]")
BAD_COLOR = np.array([255, 0, 0, 255], np.uint8)  # ImageSummary's default color for non-finite pixels: opaque red
SUMMARY_OPS = ("ScalarSummary", "HistogramSummary", "ImageSummary", "AudioSummaryV2", "TensorSummaryV2",
               "MergeSummary")


def _string_scalar(inputs, attrs, name):
    return [(_dtypes.string, SCALAR)]


for _op_type in SUMMARY_OPS:
    register_op(_op_type, _string_scalar)
    NotDifferentiable(_op_type)


# --- tags and collections -----------------------------------------------------------------------------------------
def clean_tag(name: str | None) -> str | None:
    """`name` with characters outside [-/\\w.] replaced by "_" and leading "/" removed (TF logs the change)."""
    if name is not None:
        cleaned = _INVALID_TAG_CHARACTERS.sub("_", name).lstrip("/")
        if cleaned != name:
            _log.info("Summary name %s is illegal; using %s instead.", name, cleaned)
            name = cleaned
    return name


@contextlib.contextmanager
def summary_scope(name: str | None, family: str | None = None, default_name: str | None = None, values=None):
    """A name scope for a summary op; yields (tag, scope). The tag is the scope without its "/", prefixed by
    `family/` when a family is given."""
    name, family = clean_tag(name), clean_tag(family)
    base = name if family is None else f"{family}/{name}"
    with name_scope(base, default_name, values) as scope:
        tag = scope.rstrip("/")
        yield (tag if family is None else f"{family}/{tag}"), scope


def _collect(value: Tensor, collections, default_collections) -> None:
    for key in default_collections if collections is None else collections:
        value.graph.add_to_collection(key, value)


def _string_const(value, name: str) -> Tensor:
    return convert_to_tensor(value, dtype=_dtypes.string, name=name)


def _summary(op_type: str, inputs, attrs: dict, scope: str, collections) -> Tensor:
    value = apply_op_1(op_type, inputs, attrs, name=scope)
    _collect(value, collections, [GraphKeys.SUMMARIES])
    return value


def _checked_max(what: str, op_type: str, value: int) -> int:
    value = int(value)
    if value < 1:
        raise ValueError(f"Attr '{what}' of '{op_type}' Op passed {value} less than minimum 1.")
    return value


# --- summaries ----------------------------------------------------------------------------------------------------
def scalar(name: str, tensor, collections=None, family: str | None = None) -> Tensor:
    """A summary of a real scalar: one `simple_value` under tag `name` (tf.summary.scalar)."""
    with summary_scope(name, family, values=[tensor]) as (tag, scope):
        values = convert_to_tensor(tensor, name="values")
        check_dtype("ScalarSummary", "T", values.dtype, _REAL)
        return _summary("ScalarSummary", [_string_const(tag, "tags"), values], {"T": values.dtype.base_dtype},
                        scope, collections)


def histogram(name: str, values, collections=None, family: str | None = None) -> Tensor:
    """A histogram of the values of a real tensor in TF's exponential buckets, with min, max, count, sum and sum of
    squares (tf.summary.histogram). A NaN or infinite value fails the step with InvalidArgumentError."""
    with summary_scope(name, family, default_name="HistogramSummary", values=[values]) as (tag, scope):
        values = convert_to_tensor(values, name="values")
        check_dtype("HistogramSummary", "T", values.dtype, _REAL)
        return _summary("HistogramSummary", [_string_const(tag, "tag"), values], {"T": values.dtype.base_dtype},
                        scope, collections)


def image(name: str, tensor, max_outputs: int = 3, collections=None, family: str | None = None) -> Tensor:
    """PNG images of the first `max_outputs` entries of a [batch, height, width, 1|3|4] tensor (tf.summary.image).

    uint8 images are taken as they are; float images are scaled into [0, 255]: by 255/max when no value is negative,
    else by 127/max|v| around 128. Pixels with a non-finite value are drawn red. Tags are "name/image/0", ... (or
    "name/image" when max_outputs is 1).
    """
    with summary_scope(name, family, values=[tensor]) as (tag, scope):
        images = convert_to_tensor(tensor, name="tensor")
        check_dtype("ImageSummary", "T", images.dtype, _IMAGE)
        attrs = {"T": images.dtype.base_dtype, "max_images": _checked_max("max_images", "ImageSummary", max_outputs),
                 "bad_color": BAD_COLOR}
        return _summary("ImageSummary", [_string_const(tag, "tag"), images], attrs, scope, collections)


def audio(name: str, tensor, sample_rate, max_outputs: int = 3, collections=None, family: str | None = None) -> Tensor:
    """16-bit WAV clips of the first `max_outputs` entries of a float [batch, frames(, channels)] tensor in [-1, 1]
    at `sample_rate` Hz (tf.summary.audio)."""
    with summary_scope(name, family=family, values=[tensor]) as (tag, scope):
        rate = convert_to_tensor(sample_rate, dtype=_dtypes.float32, name="sample_rate")
        clips = convert_to_tensor(tensor, dtype=_dtypes.float32, name="tensor")
        attrs = {"max_outputs": _checked_max("max_outputs", "AudioSummaryV2", max_outputs)}
        return _summary("AudioSummaryV2", [_string_const(tag, "tag"), clips, rate], attrs, scope, collections)


def tensor_summary(name: str, tensor, summary_description: str | None = None, collections=None,
                   summary_metadata=None, family: str | None = None, display_name: str | None = None) -> Tensor:
    """A summary holding a whole tensor as a TensorProto, with `summary_metadata` (a SummaryMetadata proto) telling
    TensorBoard's plugins what it is (tf.summary.tensor_summary)."""
    metadata = protos.summary_pb2.SummaryMetadata()
    if summary_metadata is not None:
        metadata.CopyFrom(summary_metadata)
    if summary_description is not None:
        metadata.summary_description = summary_description
    if display_name is not None:
        metadata.display_name = display_name
    with summary_scope(name, family, values=[tensor]) as (tag, scope):
        value = convert_to_tensor(tensor, name="tensor")
        inputs = [_string_const(tag, "tag"), value,
                  _string_const(metadata.SerializeToString(), "serialized_summary_metadata")]
        return _summary("TensorSummaryV2", inputs, {"T": value.dtype.base_dtype}, scope, collections)


def text(name: str, tensor, collections=None) -> Tensor:
    """A summary of a string tensor that TensorBoard's Text dashboard shows (Markdown) (tf.summary.text)."""
    tensor = convert_to_tensor(tensor)
    if tensor.dtype.base_dtype is not _dtypes.string:
        raise ValueError(f"Expected tensor {tensor.name} to have dtype string, got {tensor.dtype.name}")
    metadata = protos.summary_pb2.SummaryMetadata(
        plugin_data=protos.summary_pb2.SummaryMetadata.PluginData(plugin_name="text"))
    return tensor_summary(name, tensor, summary_metadata=metadata, collections=collections)


def merge(inputs, collections=None, name: str | None = None) -> Tensor:
    """One summary with the values of all `inputs` (serialized Summary tensors); a tag that appears twice fails the
    step with InvalidArgumentError (tf.summary.merge)."""
    inputs = [convert_to_tensor(t, dtype=_dtypes.string) for t in inputs]
    name = clean_tag(name)
    with name_scope(name, "Merge", inputs):
        value = apply_op_1("MergeSummary", inputs, {"N": len(inputs)}, name=name)
    _collect(value, collections, [])
    return value


def merge_all(key: str = GraphKeys.SUMMARIES, scope: str | None = None, name: str | None = None) -> Tensor | None:
    """The merge of every summary in collection `key` (of ops under `scope`), or None when there is none."""
    summaries = get_collection(key, scope=scope)
    return merge(summaries, name=name) if summaries else None


def all_v2_summary_ops() -> list:
    """TF2 summary ops of the graph: adplace builds none, so the (normally empty) "_SUMMARY_V2" collection."""
    return get_collection("_SUMMARY_V2")
