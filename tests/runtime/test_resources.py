"""Tests for adplace/runtime/resources.py (resources by container and name, shared per target, dropped with their
last session) and runtime/waits.py (blocking waits that end at the step's deadline, on cancellation, or when the
session closes)."""
import threading
import time
import weakref

import pytest

from adplace import errors
from adplace.runtime.executor import Deadline
from adplace.runtime.resources import ResourceManager, SessionResources, target_manager
from adplace.runtime.variable_state import ThreadSteps
from adplace.runtime.waits import SequentialRun, Waits


class Resource:
    def __init__(self, tag):
        self.tag, self.closed = tag, False

    def close_resource(self):
        self.closed = True


def _never(resource):
    raise AssertionError("checked a new resource")


def _mismatch(resource):
    raise errors.InvalidArgumentError(None, None, "Shared queue 'q' has capacity 1 but requested capacity was 2")


# --- ResourceManager, SessionResources ------------------------------------------------------------------------------
def test_lookup_or_create_makes_once_then_checks():
    manager, made = ResourceManager(), []

    def create():
        made.append(Resource("a"))
        return made[-1]
    first = manager.lookup_or_create("", "q", "owner1", create, _never)
    checked = []
    second = manager.lookup_or_create("", "q", "owner2", create, checked.append)
    assert second is first and len(made) == 1 and checked == [first]
    other = manager.lookup_or_create("box", "q", "owner1", lambda: Resource("b"), _never)
    assert other is not first and manager.keys() == [("", "q"), ("box", "q")]


def test_a_failed_check_or_create_leaves_the_manager_as_it_was():
    manager = ResourceManager()
    kept = manager.lookup_or_create("", "q", "a", lambda: Resource("a"), _never)
    with pytest.raises(errors.InvalidArgumentError, match="capacity"):
        manager.lookup_or_create("", "q", "b", lambda: Resource("b"), _mismatch)
    manager.release("a")  # "b" never got hold of it: released by its only owner, it goes
    assert kept.closed and len(manager) == 0

    def failing():
        raise errors.InvalidArgumentError(None, None, "bad attrs")
    with pytest.raises(errors.InvalidArgumentError):
        manager.lookup_or_create("", "q", "a", failing, _never)
    assert len(manager) == 0


def test_release_drops_and_closes_what_no_owner_holds():
    manager = ResourceManager()
    shared = manager.lookup_or_create("", "shared", "s1", lambda: Resource("s"), _never)
    manager.lookup_or_create("", "shared", "s2", lambda: Resource("t"), lambda r: None)
    alone = manager.lookup_or_create("", "alone", "s1", lambda: Resource("u"), _never)
    manager.release("s1")
    assert alone.closed and not shared.closed and manager.keys() == [("", "shared")]
    manager.release("s2")
    assert shared.closed and len(manager) == 0


def test_sessions_share_by_name_on_one_target_only():
    a, b, c = SessionResources(b""), SessionResources(None), SessionResources(b"grpc://elsewhere:1")
    try:
        made = a.lookup_or_create("", "test_resources_q", True, lambda: Resource("a"), _never)
        assert b.lookup_or_create("", "test_resources_q", True, lambda: Resource("b"), lambda r: None) is made
        assert c.lookup_or_create("", "test_resources_q", True, lambda: Resource("c"), _never) is not made
        private = a.lookup_or_create("", "_1_q", False, lambda: Resource("p"), _never)
        assert b.lookup_or_create("", "_1_q", False, lambda: Resource("p2"), _never) is not private
        a.close()
        assert private.closed and not made.closed and ("", "test_resources_q") in target_manager(b"").keys()
        b.close()
        assert made.closed and ("", "test_resources_q") not in target_manager(b"").keys()
    finally:
        for r in (a, b, c):
            r.close()


# --- Waits ----------------------------------------------------------------------------------------------------------
class Op:
    name, type, _id = "dq", "QueueDequeueV2", 0


class Placement:
    device_by_op_id = ["/device:CPU:0"]


def _waits():
    steps = ThreadSteps(weakref.WeakSet())
    return steps, Waits(steps, Placement())


def test_wait_returns_when_notified():
    steps, waits = _waits()
    cond, box = threading.Condition(), []

    def put():
        time.sleep(0.05)
        with cond:
            box.append(1)
            cond.notify_all()
    threading.Thread(target=put).start()
    with cond:
        waits.wait(cond, lambda: bool(box), Op(), "Dequeue")
    assert box == [1]


def test_wait_ends_at_the_deadline_with_tf_error():
    steps, waits = _waits()
    deadline = Deadline(time.perf_counter_ns() + 80_000_000, 80, "RunOptions.timeout_in_ms")
    steps.slot.run = SequentialRun(deadline)
    cond = threading.Condition()
    start = time.perf_counter()
    with cond, pytest.raises(errors.DeadlineExceededError, match="80 ms deadline.*'dq' \\(QueueDequeueV2\\)"):
        waits.wait(cond, lambda: False, Op(), "Dequeue")
    assert 0.075 < time.perf_counter() - start < 0.5


def test_wait_is_cancelled_with_its_run_or_its_session():
    steps, waits = _waits()

    class Run:
        deadline, cancelled = None, False
    run = steps.slot.run = Run()
    cond = threading.Condition()
    threading.Timer(0.05, lambda: setattr(run, "cancelled", True)).start()
    with cond, pytest.raises(errors.CancelledError, match="Dequeue operation was cancelled: its step"):
        waits.wait(cond, lambda: False, Op(), "Dequeue")

    steps.slot.run = None
    threading.Timer(0.05, waits.close).start()
    start = time.perf_counter()
    with cond, pytest.raises(errors.CancelledError, match="Enqueue operation was cancelled: the session was closed"):
        waits.wait(cond, lambda: False, Op(), "Enqueue")
    assert time.perf_counter() - start < 0.5
