"""tf.summary.FileWriterCache: one FileWriter per log directory, shared by the code that asks for it (TF's
MonitoredTrainingSession hooks and estimators find their writer here)."""
from __future__ import annotations

import threading

from adplace.framework.graph import get_default_graph
from adplace.summary.writer import FileWriter


class FileWriterCache:
    """The process's FileWriters by log directory."""

    _cache: dict = {}
    _lock = threading.RLock()

    @staticmethod
    def get(logdir) -> FileWriter:
        """The FileWriter of `logdir`, made (with the default graph) the first time it is asked for."""
        with FileWriterCache._lock:
            writer = FileWriterCache._cache.get(logdir)
            if writer is None:
                writer = FileWriterCache._cache[logdir] = FileWriter(logdir, graph=get_default_graph())
            return writer

    @staticmethod
    def clear() -> None:
        """Close and forget every cached FileWriter."""
        with FileWriterCache._lock:
            writers, FileWriterCache._cache = list(FileWriterCache._cache.values()), {}
        for writer in writers:
            writer.close()
