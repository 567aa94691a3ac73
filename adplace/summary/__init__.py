"""tf.summary (TF1): summary ops, FileWriter and the event protos.

    tf.summary.scalar("loss", loss); merged = tf.summary.merge_all()
    with tf.summary.FileWriter(logdir, sess.graph) as writer:
        writer.add_summary(sess.run(merged), step)

The proto classes (Summary, Event, SessionLog, TaggedRunMetadata, SummaryDescription) are loaded on first use.
"""
from adplace.kernels import summary as _summary_kernels  # noqa: F401 - registers the summary ops' kernels
from adplace.ops.summary_ops import (all_v2_summary_ops, audio, histogram, image, merge, merge_all, scalar,
                                     tensor_summary, text)
from adplace.summary.summary_iterator import summary_iterator
from adplace.summary.writer import FileWriter
from adplace.summary.writer_cache import FileWriterCache

_PROTO_CLASSES = {"Summary": "summary_pb2", "SummaryDescription": "summary_pb2", "Event": "event_pb2",
                  "SessionLog": "event_pb2", "TaggedRunMetadata": "event_pb2"}

__all__ = ["FileWriter", "FileWriterCache", "all_v2_summary_ops", "audio", "histogram", "image", "merge", "merge_all",
           "scalar", "summary_iterator", "tensor_summary", "text", *_PROTO_CLASSES]


def __getattr__(name: str):
    if name in _PROTO_CLASSES:
        from adplace.lib import protos

        return getattr(getattr(protos, _PROTO_CLASSES[name]), name)
    raise AttributeError(f"module 'adplace.summary' has no attribute {name!r}")
