"""tf.train.QueueRunner (also tf.train.queue_runner.*): threads that keep running a queue's enqueue ops.

    qr = tf.train.QueueRunner(queue, [enqueue_op] * 4)     # four threads, each running enqueue_op in a loop
    tf.train.add_queue_runner(qr)
    coord = tf.train.Coordinator()
    threads = tf.train.start_queue_runners(sess, coord=coord)
    ...
    coord.request_stop()
    coord.join(threads)

Each thread runs its op until it raises one of `queue_closed_exception_types` (OutOfRangeError: the queue, or
an input queue upstream, was closed); the last thread of a session to finish that way runs `close_op`, so readers
see the end of input once the queue drains. With a coordinator, one more thread waits for the stop and runs
`cancel_op` (close and cancel pending enqueues) so that threads blocked in an enqueue wake; other errors are
reported to the coordinator. Without one, they are logged, kept in `exceptions_raised` and end the thread.

A runner is also a QueueRunnerDef (to_proto/from_proto, TF's message and bytes): the names of its queue and ops,
and the error codes of its exception types. The queue_runners collection of a MetaGraphDef holds them, so that
export_meta_graph/import_meta_graph carry runners between adplace and TF.
"""
from __future__ import annotations

import logging
import threading
import weakref

from adplace.framework import errors
from adplace.framework import meta_graph as _meta_graph
from adplace.framework.graph import GraphKeys, get_default_graph
from adplace.lib import protos
from adplace.framework.session_stack import get_default_session
from adplace.train.coordinator import Coordinator

_log = logging.getLogger("adplace")

# Sessions that start their queue runners themselves: start_queue_runners() leaves them alone, as TF's does.
_MONITORED_SESSIONS = ("MonitoredSession", "SingularMonitoredSession")
# What makes a tf.Session here (TF's SessionInterface), checked by shape: train/ does not import the runtime.
_SESSION_METHODS = ("run", "make_callable", "partial_run_setup", "partial_run")


class QueueRunner:
    """The enqueue ops of one queue, each to be run in a thread of its own, and how to close the queue."""

    def __init__(self, queue=None, enqueue_ops=None, close_op=None, cancel_op=None,
                 queue_closed_exception_types: tuple | None = None, queue_runner_def=None,
                 import_scope: str | None = None):
        """`close_op` (default queue.close()) closes the queue when every thread has seen it closed;
        `cancel_op` (default queue.close(cancel_pending_enqueues=True)) runs on the coordinator's stop.
        `queue_closed_exception_types`: a non-empty tuple of tf.errors types that mean "closed" (default
        (OutOfRangeError,)); (OutOfRangeError, CancelledError) suits enqueue ops that dequeue from other queues.
        `queue_runner_def`: a QueueRunnerDef naming ops of the default graph (under `import_scope`) to use instead
        (then `queue` is the queue's op, as in TF).

        Raises:
          ValueError: no queue or no enqueue ops, or both them and `queue_runner_def`.
          KeyError: a name of `queue_runner_def` that is not in the graph (as TF).
          TypeError: `queue_closed_exception_types` is not such a tuple, or `queue_runner_def` not a QueueRunnerDef.
        """
        if queue_runner_def is not None:
            if queue is not None or enqueue_ops:
                raise ValueError("queue_runner_def and queue are mutually exclusive.")
            self._init_from_proto(queue_runner_def, import_scope)
        else:
            self._init_from_args(queue, enqueue_ops, close_op, cancel_op, queue_closed_exception_types)
        self._lock = threading.Lock()
        self._runs_per_session: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # threads still running
        self._exceptions_raised: list = []

    def _init_from_args(self, queue, enqueue_ops, close_op, cancel_op, queue_closed_exception_types) -> None:
        if queue is None or not enqueue_ops:
            raise ValueError("Must provide queue and enqueue_ops.")
        if queue_closed_exception_types is not None and not _are_error_types(queue_closed_exception_types):
            raise TypeError(f"queue_closed_exception_types, when provided, must be a tuple of tf.error types, but "
                            f"saw: {queue_closed_exception_types}")
        self._queue = queue
        self._enqueue_ops = enqueue_ops
        self._close_op = close_op if close_op is not None else queue.close()
        self._cancel_op = cancel_op if cancel_op is not None else queue.close(cancel_pending_enqueues=True)
        self._queue_closed_exception_types = tuple(queue_closed_exception_types or (errors.OutOfRangeError,))

    def _init_from_proto(self, queue_runner_def, import_scope: str | None) -> None:
        """The queue's op and the ops that `queue_runner_def` names, found in the default graph (under
        `import_scope`); every name is looked up before anything is kept."""
        if not isinstance(queue_runner_def, protos.queue_runner_pb2.QueueRunnerDef):
            raise TypeError(f"queue_runner_def must be a QueueRunnerDef. Received type: {type(queue_runner_def)}.")
        graph = get_default_graph()

        def element(name: str):
            return graph.as_graph_element(_meta_graph.prepend_name_scope(name, import_scope))

        queue = element(queue_runner_def.queue_name)
        enqueue_ops = [element(name) for name in queue_runner_def.enqueue_op_name]
        close_op, cancel_op = element(queue_runner_def.close_op_name), element(queue_runner_def.cancel_op_name)
        types_ = tuple(_error_type(code) for code in queue_runner_def.queue_closed_exception_types)
        self._queue, self._enqueue_ops, self._close_op, self._cancel_op = queue, enqueue_ops, close_op, cancel_op
        # QueueRunnerDefs written before the field existed have no types: TF's default then
        self._queue_closed_exception_types = types_ or (errors.OutOfRangeError,)

    queue = property(lambda self: self._queue, doc="The queue the enqueue ops fill.")
    enqueue_ops = property(lambda self: self._enqueue_ops, doc="The ops run in the threads, one thread each.")
    close_op = property(lambda self: self._close_op, doc="The op closing the queue once every thread has ended.")
    cancel_op = property(lambda self: self._cancel_op, doc="The op closing the queue and cancelling pending enqueues.")
    queue_closed_exception_types = property(lambda self: self._queue_closed_exception_types,
                                            doc="The error types that mean the queue was closed.")
    name = property(lambda self: self._queue.name, doc="The name of the queue.")

    @property
    def exceptions_raised(self) -> list:
        """The errors that ended threads created without a coordinator (with one, they go to the coordinator)."""
        return self._exceptions_raised

    def _thread_done(self, sess, closed: bool) -> None:
        """Count a thread of `sess` as ended; the last one ended by a closed queue runs close_op."""
        with self._lock:
            self._runs_per_session[sess] -= 1
            if closed and self._runs_per_session[sess] == 0:
                try:
                    sess.run(self._close_op)
                except Exception as e:  # noqa: BLE001 - the queue may be closed or the session gone: as TF
                    _log.debug("Ignored exception: %s", e)

    def _run(self, sess, enqueue_op, coord: Coordinator | None) -> None:
        """A thread's body: run `enqueue_op` until the queue is closed, the coordinator stops, or an error."""
        counted = False
        try:
            enqueue = sess.make_callable(enqueue_op)
            while not (coord is not None and coord.should_stop()):
                try:
                    enqueue()
                except self._queue_closed_exception_types:
                    counted = True
                    self._thread_done(sess, closed=True)
                    return
        except Exception as e:
            if coord is not None:
                coord.request_stop(e)
            else:
                _log.error("Exception in QueueRunner: %s", e)
                with self._lock:
                    self._exceptions_raised.append(e)
                raise
        finally:
            if not counted:
                self._thread_done(sess, closed=False)

    def _close_on_stop(self, sess, coord: Coordinator) -> None:
        """Wait for the coordinator's stop, then cancel the queue so that blocked enqueues return."""
        coord.wait_for_stop()
        try:
            sess.run(self._cancel_op)
        except Exception as e:  # noqa: BLE001 - the queue may be closed or the session gone: as TF
            _log.debug("Ignored exception: %s", e)

    def create_threads(self, sess, coord: Coordinator | None = None, daemon: bool = False,
                       start: bool = False) -> list[threading.Thread]:
        """One thread per enqueue op running it in `sess`, plus, with `coord`, one running cancel_op on its stop
        (all registered with `coord`). Returns [] while threads made earlier for `sess` still run."""
        with self._lock:
            if self._runs_per_session.get(sess, 0) > 0:
                return []
            self._runs_per_session[sess] = len(self._enqueue_ops)
            self._exceptions_raised = []
        threads = [threading.Thread(target=self._run, args=(sess, op, coord),
                                    name=f"QueueRunnerThread-{self.name}-{op.name}") for op in self._enqueue_ops]
        if coord is not None:
            threads.append(threading.Thread(target=self._close_on_stop, args=(sess, coord),
                                            name=f"QueueRunnerThread-{self.name}-close_on_stop"))
        for t in threads:
            if coord is not None:
                coord.register_thread(t)
            if daemon:
                t.daemon = True
            if start:
                t.start()
        return threads

    def to_proto(self, export_scope: str | None = None):
        """TF's QueueRunnerDef of this runner, its names without `export_scope`; None when the queue is not under
        `export_scope`."""
        if export_scope is not None and not self.queue.name.startswith(export_scope):
            return None

        def strip(name: str) -> str:
            return _meta_graph.strip_name_scope(name, export_scope)

        return protos.queue_runner_pb2.QueueRunnerDef(
            queue_name=strip(self.queue.name), enqueue_op_name=[strip(op.name) for op in self.enqueue_ops],
            close_op_name=strip(self.close_op.name), cancel_op_name=strip(self.cancel_op.name),
            queue_closed_exception_types=[t.error_code for t in self._queue_closed_exception_types])

    @staticmethod
    def from_proto(queue_runner_def, import_scope: str | None = None) -> "QueueRunner":
        """The QueueRunner that `queue_runner_def` describes, on the ops of the default graph under `import_scope`."""
        return QueueRunner(queue_runner_def=queue_runner_def, import_scope=import_scope)


def _are_error_types(types) -> bool:
    return isinstance(types, tuple) and bool(types) and all(
        isinstance(t, type) and issubclass(t, errors.OpError) for t in types)


def _error_type(code: int) -> type:
    """The tf.errors class of error code `code` (TF's exception_type_from_error_code)."""
    for error_type in errors.OpError.__subclasses__():
        if error_type.error_code == code:
            return error_type
    raise ValueError(f"QueueRunnerDef names error code {code}, which is not one of TF's error codes.")


def add_queue_runner(qr: QueueRunner, collection: str = GraphKeys.QUEUE_RUNNERS) -> None:
    """Add `qr` to `collection` of the default graph, where start_queue_runners() finds it."""
    get_default_graph().add_to_collection(collection, qr)


def start_queue_runners(sess=None, coord: Coordinator | None = None, daemon: bool = True, start: bool = True,
                        collection: str = GraphKeys.QUEUE_RUNNERS) -> list[threading.Thread]:
    """Create (and start, unless `start=False`) the threads of every queue runner in `collection` of the session's
    graph; `sess` defaults to the default session. Returns the threads ([] for a MonitoredSession, which starts
    its queue runners itself).

    Raises:
      ValueError: no `sess` and no default session.
      TypeError: `sess` is not a tf.Session.
    """
    if sess is None:
        sess = get_default_session()
        if sess is None:
            raise ValueError("Cannot start queue runners: No default session is registered. Use `with "
                             "sess.as_default()` or pass an explicit session to tf.start_queue_runners(sess=sess)")
    if type(sess).__name__ in _MONITORED_SESSIONS:
        return []
    if not (hasattr(sess, "graph") and all(callable(getattr(sess, m, None)) for m in _SESSION_METHODS)):
        raise TypeError(f"sess must be a `tf.Session` object. Given class: {sess.__class__}")
    queue_runners = sess.graph.get_collection(collection)
    if not queue_runners:
        _log.warning("`tf.train.start_queue_runners()` was called when no queue runners were defined. You can "
                     "safely remove the call to this deprecated function.")
    threads: list[threading.Thread] = []
    with sess.graph.as_default():
        for qr in queue_runners:
            threads.extend(qr.create_threads(sess, coord=coord, daemon=daemon, start=start))
    return threads


_meta_graph.register_proto_function(GraphKeys.QUEUE_RUNNERS, lambda: protos.queue_runner_pb2.QueueRunnerDef,
                                    QueueRunner.to_proto, QueueRunner.from_proto)
