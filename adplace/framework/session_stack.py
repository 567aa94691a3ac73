"""The default-session stack: which session Tensor.eval() and Operation.run() use (tf.get_default_session)."""
from __future__ import annotations

import contextlib
import threading


class _DefaultSessionStack(threading.local):
    """Per thread, the sessions of the open `as_default()` blocks, innermost last (TF's ops._default_session_stack)."""

    def __init__(self):
        self.stack: list = []

    def get_default(self):
        return self.stack[-1] if self.stack else None

    def reset(self) -> None:
        """Forget every default session of this thread (blocks still open then exit without complaint)."""
        self.stack = []

    @contextlib.contextmanager
    def get_controller(self, session, enforce_nesting: bool = True):
        """Make `session` the default inside the block. Blocks must close innermost first: leaving an outer one
        while an inner one is open raises AssertionError, as in TF (unless `enforce_nesting=False`)."""
        self.stack.append(session)
        try:
            yield session
        finally:
            if self.stack:  # empty after reset()
                if enforce_nesting:
                    if self.stack[-1] is not session:
                        raise AssertionError(f"Nesting violated for default stack of {type(session)} objects")
                    self.stack.pop()
                elif session in self.stack:
                    self.stack.remove(session)


_default_session_stack = _DefaultSessionStack()


def get_default_session():
    """The innermost session of `as_default()` blocks, or None."""
    return _default_session_stack.get_default()


def default_session(session, enforce_nesting: bool = True):
    """Make `session` the default inside the block (see _DefaultSessionStack.get_controller)."""
    return _default_session_stack.get_controller(session, enforce_nesting)


def session_for(graph, session, what: str):
    """`session`, else the default session, checked to run `graph`; ValueError when there is none."""
    session = session or get_default_session()
    if session is None:
        raise ValueError(f"Cannot {what} using `eval()`/`run()`: No default session is registered. Use "
                         "`with sess.as_default()` or pass an explicit session to `eval(session=sess)`")
    if session.graph is not graph:
        raise ValueError(f"Cannot use the given session to {what}: the element's graph is different from the "
                         "session's graph.")
    return session
