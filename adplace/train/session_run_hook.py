"""tf.train.SessionRunHook and the records passed to hooks by MonitoredSession (TF 1.15's session_run_hook).

A hook sees a monitored session's life: `begin()` before the graph is finalized, `after_create_session(session,
coord)` once the session is initialized, around every `run()` `before_run(run_context)` (which may return
SessionRunArgs: more fetches, feeds, options) and `after_run(run_context, run_values)` (with the values of those
fetches), and `end(session)` when the loop ends without an error.

    class Every10(tf.train.SessionRunHook):
        def before_run(self, run_context):
            return tf.train.SessionRunArgs(loss)
        def after_run(self, run_context, run_values):
            if run_values.results < 1e-3:
                run_context.request_stop()
"""
from __future__ import annotations

from typing import Any, NamedTuple


class SessionRunHook:
    """Base class of the hooks a MonitoredSession calls; every method does nothing by default."""

    def begin(self) -> None:
        """Called once before the session is made; the graph can still be changed here."""

    def after_create_session(self, session, coord) -> None:
        """Called once the session is created and initialized (the graph is finalized by then)."""

    def before_run(self, run_context: SessionRunContext) -> SessionRunArgs | None:
        """Called before each run(); return SessionRunArgs to add fetches, feeds or options to it."""
        return None

    def after_run(self, run_context: SessionRunContext, run_values: SessionRunValues) -> None:
        """Called after each successful run(), with the results of this hook's fetches."""

    def end(self, session) -> None:
        """Called when the monitored session closes without an error (OutOfRangeError counts as no error)."""


class SessionRunArgs(NamedTuple):
    """What a hook adds to a run(): fetches (any fetch structure), feed_dict and RunOptions."""

    fetches: Any
    feed_dict: dict | None = None
    options: Any = None


class SessionRunValues(NamedTuple):
    """The results of a hook's fetches (same structure), and the run's RunOptions and RunMetadata."""

    results: Any
    options: Any
    run_metadata: Any


class SessionRunContext:
    """The run() call a hook is called for: the caller's arguments, the session, and a way to end the loop."""

    def __init__(self, original_args: SessionRunArgs, session):
        self._original_args = original_args
        self._session = session
        self._stop_requested = False

    @property
    def original_args(self) -> SessionRunArgs:
        """The caller's fetches and feed_dict, as a SessionRunArgs."""
        return self._original_args

    @property
    def session(self):
        """The session the run happens in (run it for extra values; it has no hooks)."""
        return self._session

    @property
    def stop_requested(self) -> bool:
        return self._stop_requested

    def request_stop(self) -> None:
        """Make the monitored session's should_stop() true after this run."""
        self._stop_requested = True
