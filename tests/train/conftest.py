"""Fixtures of the training tests: a check that a test leaves no thread of its own running."""
import threading
import time

import pytest


def _new_threads(before: set) -> set:
    """Threads started since `before`, but the runtime's own pools ("adplace-..."), which live on for later runs."""
    return {t for t in set(threading.enumerate()) - before if not t.name.startswith("adplace-")}


@pytest.fixture
def no_leaked_threads():
    """Fails a test that leaves threads it started running (they get 5 s to finish)."""
    before = set(threading.enumerate())
    yield
    deadline = time.monotonic() + 5
    while _new_threads(before) and time.monotonic() < deadline:
        time.sleep(0.01)
    assert not _new_threads(before)
