"""tf.summary.FileWriter: summaries, graphs and run metadata of a TF1 program, written as events to a log directory
that TensorBoard reads.

    writer = tf.summary.FileWriter("/tmp/run1", sess.graph)     # graph (and meta graph) events first
    writer.add_summary(sess.run(merged), global_step=step)
    writer.add_run_metadata(run_metadata, "step%d" % step, step)    # per-op times and memory in the graph view
    writer.close()

As TF's: the graph is written with each node's requested device (`op.device`, what TF's FileWriter writes); a tag's
SummaryMetadata is written only with its first value; `add_run_metadata` refuses a tag used before; after `close()`
every call warns and does nothing until `reopen()`, which starts a new event file.
"""
from __future__ import annotations

import os
import threading
import time
import warnings

from adplace.framework.graph import Graph
from adplace.lib import protos
from adplace.summary.event_file import EventFileWriter


def _message_as(value, message_class, what: str):
    """`value` as `message_class`: itself, or the same message of another protobuf module (TF's own classes) through
    its bytes; TypeError for anything else."""
    if isinstance(value, message_class):
        return value
    descriptor = getattr(value, "DESCRIPTOR", None)
    if descriptor is not None and descriptor.name == message_class.DESCRIPTOR.name:
        return message_class.FromString(value.SerializeToString())
    raise TypeError(f"{what} must be a {message_class.DESCRIPTOR.name} proto, got {type(value).__name__}")


class FileWriter:
    """Writes Summary protos, graphs, session logs and run metadata as events to a new event file in `logdir`.

    Events are queued (at most `max_queue`) and written by a background thread, which flushes them to disk every
    `flush_secs` seconds; `flush()` and `close()` write everything queued. `session` is accepted for TF's signature:
    adplace always writes from Python. Thread-safe; usable as a context manager (closes on exit).
    """

    def __init__(self, logdir, graph=None, max_queue: int = 10, flush_secs: float = 120, graph_def=None,
                 filename_suffix: str | None = None, session=None):
        self.event_writer = EventFileWriter(logdir, max_queue, flush_secs, filename_suffix)
        self._closed = False
        self._lock = threading.Lock()
        self._seen_summary_tags: set = set()
        self._session_run_tags: set = set()
        if graph is not None or graph_def is not None:
            try:
                written = self.add_graph(graph=graph, graph_def=graph_def)
                if written is not None:
                    self._add_meta_graph_of(written, graph if isinstance(graph, Graph) else None)
            except BaseException:  # a graph that cannot be written: no writer thread or event file left behind
                path = self.event_writer.path
                self.event_writer.close()
                os.remove(path)
                raise

    def __enter__(self) -> FileWriter:
        return self

    def __exit__(self, *exc_info) -> None:
        self.close()

    def get_logdir(self) -> str:
        """The directory the event file is in."""
        return self.event_writer.get_logdir()

    # --- events -------------------------------------------------------------------------------------------------
    def _warn_if_closed(self) -> None:
        if self._closed:
            warnings.warn("Attempting to use a closed FileWriter. The operation will be a noop unless the FileWriter "
                          "is explicitly reopened.", stacklevel=3)

    def _add_event(self, event, step) -> None:
        self._warn_if_closed()
        event.wall_time = time.time()
        if step is not None:
            event.step = int(step)
        self.event_writer.add_event(event)

    def add_event(self, event) -> None:
        """Write an Event proto as it is."""
        self._warn_if_closed()
        self.event_writer.add_event(_message_as(event, protos.event_pb2.Event, "event"))

    def add_summary(self, summary, global_step=None) -> None:
        """Write a Summary proto, or its serialized bytes (the value of a summary op), at `global_step`."""
        summary_pb2 = protos.summary_pb2
        if isinstance(summary, (bytes, bytearray)):
            summary = summary_pb2.Summary.FromString(bytes(summary))
        else:
            summary = summary_pb2.Summary.FromString(_message_as(summary, summary_pb2.Summary,
                                                                 "summary").SerializeToString())  # the caller's stays
        with self._lock:
            for value in summary.value:
                if not value.HasField("metadata"):
                    continue
                if value.tag in self._seen_summary_tags:
                    value.ClearField("metadata")
                else:
                    self._seen_summary_tags.add(value.tag)
        self._add_event(protos.event_pb2.Event(summary=summary), global_step)

    def add_session_log(self, session_log, global_step=None) -> None:
        """Write a SessionLog (START, STOP, CHECKPOINT) at `global_step`."""
        session_log = _message_as(session_log, protos.event_pb2.SessionLog, "session_log")
        self._add_event(protos.event_pb2.Event(session_log=session_log), global_step)

    def add_graph(self, graph, global_step=None, graph_def=None):
        """Write a graph (an adplace Graph, or a GraphDef proto) for TensorBoard's graph dashboard; returns the
        GraphDef written."""
        if graph is not None and graph_def is not None:
            raise ValueError("Please pass only graph, or graph_def (deprecated), but not both.")
        graph = graph if graph is not None else graph_def
        if isinstance(graph, Graph):
            graph_def = graph.as_graph_def(add_shapes=True)
        else:
            try:
                graph_def = _message_as(graph, protos.graph_pb2.GraphDef, "graph")
            except TypeError:
                raise TypeError("The passed graph must be an instance of `Graph` or the deprecated `GraphDef`") \
                    from None
        self._add_event(protos.event_pb2.Event(graph_def=graph_def.SerializeToString()), global_step)
        return graph_def

    def add_meta_graph(self, meta_graph_def, global_step=None) -> None:
        """Write a MetaGraphDef proto."""
        meta_graph_pb2 = protos.meta_graph_pb2
        if getattr(getattr(meta_graph_def, "DESCRIPTOR", None), "name", None) != "MetaGraphDef":
            raise TypeError(f"meta_graph_def must be type MetaGraphDef, saw type: {type(meta_graph_def)}")
        meta_graph_def = _message_as(meta_graph_def, meta_graph_pb2.MetaGraphDef, "meta_graph_def")
        self._add_event(protos.event_pb2.Event(meta_graph_def=meta_graph_def.SerializeToString()), global_step)

    def _add_meta_graph_of(self, graph_def, graph: Graph | None) -> None:
        """The meta graph event TF writes after the graph given to the constructor: `graph_def` with the
        collections of `graph` (of the default graph for a bare GraphDef, as TF)."""
        try:
            from adplace.framework.meta_graph import create_meta_graph_def
        except ImportError:  # an adplace without meta graphs: the graph event alone
            return
        self.add_meta_graph(create_meta_graph_def(graph_def=graph_def, graph=graph))

    def add_run_metadata(self, run_metadata, tag: str, global_step=None) -> None:
        """Write a RunMetadata (a traced run's step stats: per-node times, memory, devices) under `tag`, which
        TensorBoard's graph dashboard offers as a "Session runs" entry. Each tag can be used once."""
        serialize = getattr(run_metadata, "SerializeToString", None)
        if serialize is None:
            raise TypeError(f"run_metadata must be a tf.RunMetadata proto, got {type(run_metadata).__name__}")
        with self._lock:
            if tag in self._session_run_tags:
                raise ValueError("The provided tag was already used for this event type")
            self._session_run_tags.add(tag)
        tagged = protos.event_pb2.TaggedRunMetadata(tag=tag, run_metadata=serialize())
        self._add_event(protos.event_pb2.Event(tagged_run_metadata=tagged), global_step)

    # --- life cycle -----------------------------------------------------------------------------------------------
    def flush(self) -> None:
        """Write every queued event to disk."""
        self._warn_if_closed()
        self.event_writer.flush()

    def close(self) -> None:
        """Flush and close the event file; closing twice is harmless."""
        self.event_writer.close()
        self._closed = True

    def reopen(self) -> None:
        """After `close()`: write again, to a new event file in the same directory."""
        self.event_writer.reopen()
        self._closed = False
