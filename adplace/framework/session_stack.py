"""The default-session stack: which session Tensor.eval() and Operation.run() use (tf.get_default_session)."""
from __future__ import annotations

import contextlib
import threading


class _SessionStack(threading.local):
    def __init__(self):
        self.sessions: list = []


_stack = _SessionStack()


def get_default_session():
    """The innermost session of `as_default()` blocks, or None."""
    return _stack.sessions[-1] if _stack.sessions else None


@contextlib.contextmanager
def default_session(session):
    """Make `session` the default inside the block."""
    _stack.sessions.append(session)
    try:
        yield session
    finally:
        _stack.sessions.remove(session)


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
