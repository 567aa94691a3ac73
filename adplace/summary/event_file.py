"""Event files, as TensorBoard reads them: `events.out.tfevents.<seconds>.<hostname><suffix>` in a log directory, a
TFRecord file of serialized `Event` protos whose first event says `file_version: "brain.Event:2"`.

`EventFileWriter` queues events (at most `max_queue`; `add_event` waits when the queue is full) and one background
thread writes them, flushing to disk at least every `flush_secs` seconds while events wait, and at `flush()` and
`close()`. It is safe to call from many threads; `close()` is idempotent and `reopen()` starts a new file. An error
of the writing thread (a full disk) is raised by the next `add_event`, `flush` or `close`.
"""
from __future__ import annotations

import atexit
import collections
import os
import socket
import threading
import time
import weakref

from adplace.lib import protos
from adplace.lib.io import file_io
from adplace.lib.io.tf_record import RecordWriter

FILE_VERSION = "brain.Event:2"
_FLUSH, _CLOSE = object(), object()
_open_writers: weakref.WeakSet = weakref.WeakSet()


@atexit.register
def _close_open_writers() -> None:
    """At exit, write what open writers still hold (their threads are daemons, stopped after this)."""
    for writer in list(_open_writers):
        try:
            writer.close()
        except Exception:  # noqa: BLE001 - a writer that cannot finish must not stop the others
            pass


def event_file_name(logdir: str, seconds: int, suffix: str = "") -> str:
    return os.path.join(logdir, f"events.out.tfevents.{seconds:010d}.{socket.gethostname()}{suffix}")


class _EventFile:
    """One open event file: created with its file_version event, recreated if it is deleted while in use."""

    def __init__(self, logdir: str, suffix: str):
        self._logdir, self._suffix = logdir, suffix
        self.path, self._records = None, None
        self._open()

    def _open(self) -> None:
        seconds = int(time.time())
        while file_io.exists(event_file_name(self._logdir, seconds, self._suffix)):  # never clobber an earlier file
            seconds += 1
        self.path = event_file_name(self._logdir, seconds, self._suffix)
        self._records = RecordWriter(self.path)
        event = protos.event_pb2.Event(wall_time=float(seconds), file_version=FILE_VERSION)
        event.source_metadata.writer = "adplace"
        self._records.write(event.SerializeToString())
        self._records.flush()

    def write(self, serialized: bytes) -> None:
        self._records.write(serialized)

    def flush(self) -> None:
        self._records.flush()
        if not file_io.exists(self.path):  # deleted under us (TF's EventsWriter recreates it too)
            self._records.close()
            self._open()

    def close(self) -> None:
        self._records.close()


class EventFileWriter:
    """Writes Event protos to a new event file in `logdir` (created if missing) from a background thread."""

    def __init__(self, logdir, max_queue: int = 10, flush_secs: float = 120, filename_suffix: str | None = None):
        self._logdir = file_io._text(logdir)
        file_io.makedirs(self._logdir)
        self._max_queue = max_queue
        self._flush_secs = flush_secs
        self._suffix = filename_suffix or ""
        self._lock = threading.RLock()  # guards _closed, _file and the thread's start and end
        self._queue_lock = threading.Condition()  # guards the queue, flush counts and _failure; notified on each
        self._queue: collections.deque = collections.deque()
        self._failure: BaseException | None = None
        self._closed = True
        self._file: _EventFile | None = None
        self._start()

    def _start(self) -> None:
        self._file = _EventFile(self._logdir, self._suffix)
        self._failure = None
        self._flush_count = self._flush_requests = 0
        self._queue.clear()  # a close request the previous thread never needed
        self._thread = threading.Thread(target=self._run, name="EventLoggerThread", daemon=True)
        self._closed = False
        self._thread.start()
        _open_writers.add(self)

    def get_logdir(self) -> str:
        return self._logdir

    @property
    def path(self) -> str | None:
        """The event file being written (None once closed)."""
        return None if self._closed else self._file.path

    # --- the producer side ----------------------------------------------------------------------------------------
    def _put(self, item) -> None:
        with self._queue_lock:
            while self._max_queue > 0 and len(self._queue) >= self._max_queue and self._failure is None:
                self._queue_lock.wait()
            self._raise_failure()
            self._queue.append(item)
            self._queue_lock.notify_all()

    def _raise_failure(self) -> None:
        if self._failure is not None:
            raise self._failure

    def _closing_on_failure(self, action, *args) -> None:
        """Run `action`; if the writing thread failed, close the writer (as TF's does) and raise its error."""
        try:
            action(*args)
        except BaseException:
            if self._failure is not None:
                self._shut_down()
            raise

    def add_event(self, event) -> None:
        """Queue `event` (an Event proto) for writing; nothing happens once the writer is closed."""
        if not self._closed:
            self._closing_on_failure(self._put, event.SerializeToString())

    def flush(self) -> None:
        """Write every queued event to disk before returning."""
        if not self._closed:
            self._closing_on_failure(self._flush)

    def _flush(self) -> None:
        with self._queue_lock:
            self._flush_requests += 1
            ticket = self._flush_requests
        self._put(_FLUSH)
        with self._queue_lock:
            while self._flush_count < ticket and self._failure is None:
                self._queue_lock.wait()
            self._raise_failure()

    def close(self) -> None:
        """Flush, stop the thread and close the file; closing twice is harmless."""
        with self._lock:
            if self._closed:
                return
            try:
                self._flush()
                self._put(_CLOSE)
            finally:
                self._shut_down()

    def _shut_down(self) -> None:
        with self._lock:
            if self._closed:
                return
            self._closed = True
            with self._queue_lock:
                if self._failure is None and self._thread.is_alive():
                    self._queue.append(_CLOSE)
                    self._queue_lock.notify_all()
            self._thread.join()
            self._file.close()
            _open_writers.discard(self)

    def reopen(self) -> None:
        """Start writing again, to a new event file, after `close()`."""
        with self._lock:
            if self._closed:
                self._start()

    # --- the writing thread ---------------------------------------------------------------------------------------
    def _run(self) -> None:
        next_flush = time.monotonic()  # the first event is flushed at once, the next ones every flush_secs
        dirty = False
        try:
            while True:
                with self._queue_lock:
                    while not self._queue:
                        timeout = next_flush - time.monotonic() if dirty else None
                        if timeout is not None and timeout <= 0:
                            break
                        self._queue_lock.wait(timeout)
                    item = self._queue.popleft() if self._queue else None
                    self._queue_lock.notify_all()
                if item is _CLOSE:
                    return
                if item is _FLUSH or item is None:
                    self._file.flush()
                    dirty, next_flush = False, time.monotonic() + self._flush_secs
                    if item is _FLUSH:
                        with self._queue_lock:
                            self._flush_count += 1
                            self._queue_lock.notify_all()
                    continue
                self._file.write(item)
                dirty = True
                if time.monotonic() >= next_flush:
                    self._file.flush()
                    dirty, next_flush = False, time.monotonic() + self._flush_secs
        except BaseException as e:  # a failed write: reported to the producers, who stop waiting
            with self._queue_lock:
                self._failure = e
                self._queue.clear()
                self._queue_lock.notify_all()
