"""Tests for adplace/ops/summary_ops.py and adplace/kernels/summary.py: tf.summary's ops build serialized Summary
protos with TF's tags, collections, histogram buckets, image scaling, PNG and WAV encodings, and TF's errors."""
import io
import sys
import wave

import numpy as np
import pytest

import adplace as tf
from adplace.kernels.summary import default_bucket_limits, histogram_proto


def _run(summary, feed=None):
    with tf.Session() as sess:
        return tf.summary.Summary.FromString(sess.run(summary, feed))


def test_scalar_tags_names_and_collection():
    x = tf.constant(2.5)
    s = tf.summary.scalar("loss", x)
    again = tf.summary.scalar("loss", x)
    with tf.name_scope("train"):
        scoped = tf.summary.scalar("acc", x)
    with tf.name_scope("fam"):
        family = tf.summary.scalar("loss", x, family="F")
    odd = tf.summary.scalar("my loss!", x)
    assert [s.op.name, again.op.name, scoped.op.name, family.op.name] == ["loss", "loss_1", "train/acc", "fam/F/loss"]
    assert s.dtype == tf.string and s.shape.as_list() == []
    assert tf.get_collection(tf.GraphKeys.SUMMARIES) == [s, again, scoped, family, odd]
    tags = [_run(t).value[0].tag for t in (s, again, scoped, family, odd)]
    assert tags == ["loss", "loss_1", "train/acc", "F/fam/F/loss", "my_loss_"]
    assert _run(s).value[0].simple_value == 2.5


def test_scalar_collections_argument():
    s = tf.summary.scalar("x", tf.constant(1), collections=["mine"])
    assert tf.get_collection("mine") == [s] and tf.get_collection(tf.GraphKeys.SUMMARIES) == []
    assert _run(s).value[0].simple_value == 1.0


def test_scalar_of_a_non_scalar_fails_when_run():
    s = tf.summary.scalar("v", tf.constant([1.0, 2.0]))
    with pytest.raises(tf.errors.InvalidArgumentError, match=r"tags and values not the same shape: \[\] != \[2\] "
                                                             r"\(tag 'v'\)"):
        _run(s)


def test_scalar_refuses_non_real_dtypes():
    with pytest.raises(TypeError, match="not in list of allowed values"):
        tf.summary.scalar("s", tf.constant("text"))


def test_default_bucket_limits_are_tfs():
    limits = default_bucket_limits()
    assert limits[0] == -sys.float_info.max and limits[-1] == sys.float_info.max
    middle = len(limits) // 2
    assert limits[middle] == 0.0 and limits[middle + 1] == 1e-12 and limits[middle - 1] == -1e-12
    assert np.all(np.diff(limits) > 0) and len(limits) == 1551
    assert limits[middle + 2] == 1e-12 * 1.1


def test_histogram_matches_tfs_encoding():
    values = np.array([1, -2, 3, 0.5, 0.25, 10], np.float32)
    x = tf.placeholder(tf.float32, [None])
    h = tf.summary.histogram("h", x)
    histo = _run(h, {x: values}).value[0].histo
    assert (histo.min, histo.max, histo.num, histo.sum, histo.sum_squares) == (-2, 10, 6, 12.75, 114.3125)
    # from TF 2.21's HistogramSummary on the same values: runs of empty buckets collapse into their last limit
    assert list(histo.bucket_limit[:6]) == [-2.1628190051144287, -1.9661990955585713, 0.24153964213356663,
                                            0.26569360634692329, 0.47069243095356195, 0.51776167404891815]
    assert list(histo.bucket[:6]) == [0, 1, 0, 1, 0, 1]
    assert sum(histo.bucket) == 6 and histo.bucket_limit[-1] == sys.float_info.max


def test_histogram_of_nothing_and_of_integers():
    empty = histogram_proto(np.zeros([0]))
    assert (empty.num, empty.min, empty.max) == (0, sys.float_info.max, -sys.float_info.max)
    assert list(empty.bucket) == [0] and list(empty.bucket_limit) == [sys.float_info.max]
    ints = _run(tf.summary.histogram("i", tf.constant([0, 0, 5], tf.int64))).value[0].histo
    assert (ints.num, ints.sum, ints.max) == (3, 5, 5)
    # zeros fall in bucket [0, 1e-12); the empty run below it ends at limit 0
    assert list(ints.bucket_limit) == [0.0, 1e-12, 4.636194617418625, 5.099814079160488, sys.float_info.max]
    assert list(ints.bucket) == [0, 2, 0, 1, 0]


def test_histogram_of_nan_or_inf_fails_when_run():
    x = tf.placeholder(tf.float32)
    h = tf.summary.histogram("weights", x)
    with pytest.raises(tf.errors.InvalidArgumentError, match="Nan in summary histogram for: weights"):
        _run(h, {x: [1.0, np.nan]})
    with pytest.raises(tf.errors.InvalidArgumentError, match="Infinity in summary histogram for: weights"):
        _run(h, {x: [np.inf]})


def _png_pixels(encoded: bytes) -> np.ndarray:
    image = pytest.importorskip("PIL.Image")
    return np.asarray(image.open(io.BytesIO(encoded)))


def test_uint8_images_are_encoded_as_they_are():
    pixels = np.arange(2 * 4 * 5 * 3, dtype=np.uint8).reshape(2, 4, 5, 3)
    summary = _run(tf.summary.image("img", tf.constant(pixels)))
    assert [v.tag for v in summary.value] == ["img/image/0", "img/image/1"]
    first = summary.value[0].image
    assert (first.height, first.width, first.colorspace) == (4, 5, 3)
    assert np.array_equal(_png_pixels(first.encoded_image_string), pixels[0])
    assert np.array_equal(_png_pixels(summary.value[1].image.encoded_image_string), pixels[1])


def test_float_images_are_scaled_as_tf_does():
    positive = np.array([[0.0, 0.5, 1.0, 2.0]], np.float32).reshape(1, 1, 4, 1)
    signed = np.array([[-1.0, 0.0, 0.5, 1.0]], np.float32).reshape(1, 1, 4, 1)
    bad = np.array([[0.0, np.nan, 1.0, np.inf]], np.float32).reshape(1, 1, 4, 1)
    one = _run(tf.summary.image("p", tf.constant(positive), max_outputs=1))
    assert one.value[0].tag == "p/image"
    assert _png_pixels(one.value[0].image.encoded_image_string).reshape(-1).tolist() == [0, 63, 127, 255]
    two = _run(tf.summary.image("s", tf.constant(signed)))
    assert _png_pixels(two.value[0].image.encoded_image_string).reshape(-1).tolist() == [1, 128, 191, 255]
    rgba = np.concatenate([bad] * 4, axis=-1)
    three = _run(tf.summary.image("b", tf.constant(rgba)))
    assert _png_pixels(three.value[0].image.encoded_image_string)[0].tolist() == \
        [[0, 0, 0, 0], [255, 0, 0, 255], [255, 255, 255, 255], [255, 0, 0, 255]]


def test_image_errors():
    with pytest.raises(TypeError):
        tf.summary.image("i", tf.constant(np.zeros([1, 2, 2, 1], np.int32)))
    with pytest.raises(ValueError, match="less than minimum 1"):
        tf.summary.image("i", tf.zeros([1, 2, 2, 1]), max_outputs=0)
    x = tf.placeholder(tf.float32)
    s = tf.summary.image("i", x)
    with pytest.raises(tf.errors.InvalidArgumentError, match=r"4-D with last dim 1, 3, or 4, not \[1,2,2,2\]"):
        _run(s, {x: np.zeros([1, 2, 2, 2])})


def test_audio_is_16_bit_wav():
    clips = np.array([[0.0, 0.5, -1.0, 2.0], [0.25, 0.0, 0.0, 0.0]], np.float32)
    summary = _run(tf.summary.audio("voice", tf.constant(clips), 8000, max_outputs=1))
    assert [v.tag for v in summary.value] == ["voice/audio"]
    audio = summary.value[0].audio
    assert (audio.sample_rate, audio.num_channels, audio.length_frames, audio.content_type) == \
        (8000, 1, 4, "audio/wav")
    with wave.open(io.BytesIO(audio.encoded_audio_string)) as w:
        assert (w.getframerate(), w.getnchannels(), w.getsampwidth(), w.getnframes()) == (8000, 1, 2, 4)
        assert np.frombuffer(w.readframes(4), "<i2").tolist() == [0, 16384, -32768, 32767]


def test_text_and_tensor_summaries():
    text = _run(tf.summary.text("notes", tf.constant(["**bold**", "b"])))
    value = text.value[0]
    assert value.tag == "notes" and value.metadata.plugin_data.plugin_name == "text"
    assert list(value.tensor.string_val) == [b"**bold**", b"b"]
    assert [d.size for d in value.tensor.tensor_shape.dim] == [2]
    with pytest.raises(ValueError, match="to have dtype string"):
        tf.summary.text("n", tf.constant(1.0))
    data = np.arange(6, dtype=np.float64).reshape(2, 3)
    tensor = _run(tf.summary.tensor_summary("t", tf.constant(data), summary_description="six numbers",
                                            display_name="T")).value[0]
    assert tensor.metadata.summary_description == "six numbers" and tensor.metadata.display_name == "T"
    assert np.frombuffer(tensor.tensor.tensor_content, "<f8").reshape(2, 3).tolist() == data.tolist()


def test_merge_and_merge_all():
    assert tf.summary.merge_all() is None
    a = tf.summary.scalar("a", tf.constant(1.0))
    b = tf.summary.histogram("b", tf.constant([1.0, 2.0]))
    merged = tf.summary.merge_all()
    assert merged.op.name == "Merge/MergeSummary" and merged.op.type == "MergeSummary"
    assert [v.tag for v in _run(merged).value] == ["a", "b"]
    named = tf.summary.merge([a, b], name="both")
    assert named.op.name == "both/both"
    assert tf.summary.merge_all(scope="b") is not None and [v.tag for v in _run(tf.summary.merge_all(
        scope="b")).value] == ["b"]


def test_merge_refuses_duplicate_tags():
    a = tf.summary.scalar("a", tf.constant(1.0))
    with pytest.raises(tf.errors.InvalidArgumentError, match="Duplicate tag a found in summary inputs"):
        _run(tf.summary.merge([a, a]))


def test_summaries_run_on_the_cpu_like_tf(gpus):
    with tf.device("/gpu:0"):
        s = tf.summary.scalar("loss", tf.constant(1.0))
    with pytest.raises(tf.errors.InvalidArgumentError, match="no supported kernel for GPU devices"):
        _run(s)
    config = tf.ConfigProto(allow_soft_placement=True)
    with tf.Session(config=config) as sess:
        assert tf.summary.Summary.FromString(sess.run(s)).value[0].simple_value == 1.0
        assert sess.placement(s).endswith("CPU:0")

