"""tf.train.Coordinator and tf.train.LooperThread: stop a set of threads together and surface their errors.

    coord = tf.train.Coordinator()
    threads = tf.train.start_queue_runners(sess, coord=coord)
    try:
        while not coord.should_stop():
            sess.run(train_op)
    except Exception as e:
        coord.request_stop(e)
    finally:
        coord.request_stop()
        coord.join(threads)      # re-raises the first error any thread reported, with its traceback

Any thread may call `request_stop()`; the others notice through `should_stop()` or `wait_for_stop()`. The first
exception reported (except the clean-stop types, by default OutOfRangeError: end of input) is kept and re-raised by
`join()`, which also gives threads a grace period after the stop and raises RuntimeError naming those still alive.
"""
from __future__ import annotations

import contextlib
import logging
import sys
import threading
import time
from typing import Callable, Iterable

from adplace.framework import errors

_log = logging.getLogger("adplace")

# How often join() looks at its threads while no stop has been requested (TF looks once a second).
_JOIN_POLL_SECS = 0.02


def _reraise(exc_info) -> None:
    raise exc_info[1].with_traceback(exc_info[2])


class Coordinator:
    """A stop flag shared by threads, with the first error they reported (TF's tf.train.Coordinator)."""

    def __init__(self, clean_stop_exception_types: Iterable[type] | None = None):
        """`clean_stop_exception_types`: exception types that, reported to request_stop(ex), stop the threads
        without an error (default: (tf.errors.OutOfRangeError,), how input queues say the input has ended)."""
        if clean_stop_exception_types is None:
            clean_stop_exception_types = (errors.OutOfRangeError,)
        self._clean_stop_exception_types = tuple(clean_stop_exception_types)
        self._lock = threading.Lock()
        self._stop_event = threading.Event()
        self._exc_info_to_raise = None
        self._joined = False
        self._registered_threads: set[threading.Thread] = set()

    def _exc_info(self, ex):
        """`ex` (an exception or a sys.exc_info() tuple) as an exc_info tuple, or None for no error or a clean
        stop. An exception passed while it is being handled gets that handler's traceback, as in TF; one raised
        earlier keeps its own traceback."""
        if ex is None:
            return None
        if isinstance(ex, tuple):
            if len(ex) != 3 or not ex[0] or not ex[1]:
                try:
                    raise ValueError(f"ex must be a tuple or sys.exc_info must return the current exception: {ex}")
                except ValueError:
                    return sys.exc_info()
            return None if isinstance(ex[1], self._clean_stop_exception_types) else ex
        if isinstance(ex, self._clean_stop_exception_types):
            return None
        current = sys.exc_info()
        return current if current[1] is ex else (type(ex), ex, ex.__traceback__)

    def request_stop(self, ex: BaseException | tuple | None = None) -> None:
        """Ask every thread to stop. The first `ex` (an exception, or a sys.exc_info() tuple) of a type other than
        the clean-stop types is kept and re-raised by join(); after join() has returned, `ex` is raised here."""
        with self._lock:
            exc_info = self._exc_info(ex)
            if self._joined and exc_info is not None:
                _reraise(exc_info)
            if self._stop_event.is_set():
                return
            if exc_info is not None:  # the first error: a later one finds the stop already set
                _log.info("Error reported to Coordinator: %s, %s", exc_info[0], exc_info[1],
                          exc_info=exc_info if isinstance(ex, tuple) else None)
                self._exc_info_to_raise = exc_info
            self._stop_event.set()

    def clear_stop(self) -> None:
        """Forget the stop request, the recorded error and the join: should_stop() is False again."""
        with self._lock:
            self._joined = False
            self._exc_info_to_raise = None
            self._stop_event.clear()

    def should_stop(self) -> bool:
        """Whether a stop was requested."""
        return self._stop_event.is_set()

    @contextlib.contextmanager
    def stop_on_exception(self):
        """A block whose exception (any, KeyboardInterrupt included, as TF's bare except) is reported to
        request_stop() and swallowed: the thread ends quietly and join() re-raises it."""
        try:
            yield
        except BaseException:  # noqa: BLE001 - reported to the coordinator, re-raised by join()
            self.request_stop(ex=sys.exc_info())

    def wait_for_stop(self, timeout: float | None = None) -> bool:
        """Block until a stop is requested (True) or `timeout` seconds have passed (False)."""
        return self._stop_event.wait(timeout)

    def register_thread(self, thread: threading.Thread) -> None:
        """Add `thread` to those join() waits for."""
        with self._lock:
            self._registered_threads.add(thread)

    def join(self, threads: Iterable[threading.Thread] | None = None, stop_grace_period_secs: float = 120,
             ignore_live_threads: bool = False) -> None:
        """Wait for `threads` and the registered threads: until all have ended or a stop is requested, then up
        to `stop_grace_period_secs` more for them to end. Then re-raise the first reported error, or raise
        RuntimeError naming the threads still alive (only logged with `ignore_live_threads`)."""
        with self._lock:
            threads = list(self._registered_threads.union(threads or ()))
        while any(t.is_alive() for t in threads) and not self._stop_event.wait(_JOIN_POLL_SECS):
            pass
        deadline = time.monotonic() + max(stop_grace_period_secs, 0.0)
        for t in threads:
            t.join(max(deadline - time.monotonic(), 0.0))
        stragglers = [t.name for t in threads if t.is_alive()]
        with self._lock:
            self._joined = True
            self._registered_threads = set()
            if self._exc_info_to_raise:
                _reraise(self._exc_info_to_raise)
            if stragglers:
                message = "Coordinator stopped with threads still running: " + " ".join(stragglers)
                if not ignore_live_threads:
                    raise RuntimeError(message)
                _log.info("%s", message)

    @property
    def joined(self) -> bool:
        """Whether join() has run since the coordinator was made or last cleared."""
        return self._joined

    def raise_requested_exception(self) -> None:
        """Raise the error reported to request_stop(), if there is one."""
        with self._lock:
            if self._exc_info_to_raise:
                _reraise(self._exc_info_to_raise)


class LooperThread(threading.Thread):
    """A daemon thread that calls `target` (or its run_loop()) until the coordinator stops: back to back, or every
    `timer_interval_secs` seconds. An exception is reported to the coordinator and ends the thread. It registers
    itself with the coordinator, so coord.join() waits for it."""

    def __init__(self, coord: Coordinator, timer_interval_secs: float | None, target: Callable | None = None,
                 args=None, kwargs=None):
        if not isinstance(coord, Coordinator):
            raise ValueError(f"'coord' argument must be a Coordinator: {coord}")
        super().__init__(daemon=True)
        self._coord = coord
        self._timer_interval_secs = timer_interval_secs
        self._target = target
        if target:
            self._args, self._kwargs = args or (), kwargs or {}
        elif args or kwargs:
            raise ValueError("'args' and 'kwargs' argument require that you also pass 'target'")
        coord.register_thread(self)

    @staticmethod
    def loop(coord: Coordinator, timer_interval_secs: float | None, target: Callable, args=None,
             kwargs=None) -> "LooperThread":
        """Start and return a LooperThread calling `target(*args, **kwargs)`."""
        looper = LooperThread(coord, timer_interval_secs, target=target, args=args, kwargs=kwargs)
        looper.start()
        return looper

    def run(self) -> None:
        with self._coord.stop_on_exception():
            self.start_loop()
            if self._timer_interval_secs is None:
                while not self._coord.should_stop():
                    self.run_loop()
            else:
                next_time = time.time()
                while not self._coord.wait_for_stop(next_time - time.time()):
                    next_time += self._timer_interval_secs
                    self.run_loop()
            self.stop_loop()

    def start_loop(self) -> None:
        """Called once when the thread starts (override)."""

    def stop_loop(self) -> None:
        """Called once when the loop ends without an error (override)."""

    def run_loop(self) -> None:
        """Called at each turn: runs `target` (override when there is none)."""
        if self._target:
            self._target(*self._args, **self._kwargs)
