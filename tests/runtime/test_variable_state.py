"""Tests for adplace/runtime/variable_state.py: a VariableCell's journaled writes, `rollback` that undoes only what
no later step overwrote, the StepGate between snapshots and steps, and `interrupts_deferred`."""
import signal
import threading
import time

import pytest

import adplace as tf
from adplace.runtime.variable_state import StepGate, VariableCell, interrupts_deferred, rollback

JOIN_S = 30.0  # a generous bound for threads that must finish: only a hang reaches it


def _cell(value=0.0, name: str = "v") -> VariableCell:
    cell = VariableCell(name, device=None)
    cell.value = value
    return cell


def _write(cell: VariableCell, value, journal) -> None:
    with cell.lock:
        cell.store(value, journal)


def _wait_for(condition, what: str) -> None:
    """Poll until `condition()` holds (a hang guard, not a timing assertion)."""
    deadline = time.monotonic() + JOIN_S
    while not condition():
        assert time.monotonic() < deadline, f"gave up waiting for {what}"
        time.sleep(0.001)


# --- VariableCell.store -------------------------------------------------------------------------------------------

def test_store_journals_each_old_value_and_version_in_order():
    cell = _cell("original")
    journal: list = []
    _write(cell, "first", journal)
    assert journal == [(cell, "original", 0)]
    _write(cell, "second", journal)
    _write(cell, "third", journal)
    assert journal == [(cell, "original", 0), (cell, "first", 1), (cell, "second", 2)]
    assert (cell.value, cell.version) == ("third", 3)


def test_store_without_a_journal_still_bumps_the_version():
    cell = _cell(1.0)
    _write(cell, 2.0, None)
    assert (cell.value, cell.version) == (2.0, 1)


def test_each_journal_records_its_own_steps_view():
    cell = _cell("original")
    step_a, step_b = [], []
    _write(cell, "A", step_a)
    _write(cell, "B", step_b)
    assert step_a == [(cell, "original", 0)]
    assert step_b == [(cell, "A", 1)]


# --- rollback -----------------------------------------------------------------------------------------------------

def test_rollback_restores_value_and_version_when_no_other_step_wrote():
    v, w = _cell("v0", "v"), _cell("w0", "w")
    journal: list = []
    for value in ("v1", "v2"):
        _write(v, value, journal)
    _write(w, "w1", journal)
    _write(v, "v3", journal)  # a step may write a variable again after writing another
    assert rollback(journal) == []
    assert (v.value, v.version, w.value, w.version) == ("v0", 0, "w0", 0)
    assert journal == []


def test_rollback_keeps_a_value_another_step_wrote_since_and_names_it():
    v, w = _cell("v0", "v"), _cell("w0", "w")
    mine: list = []
    _write(v, "mine", mine)
    _write(w, "mine", mine)
    _write(v, "theirs", [])
    assert rollback(mine) == ["v"]
    assert v.value == "theirs"
    assert w.value == "w0"


def test_unjournaled_write_since_also_counts_as_another_steps():
    v = _cell("v0")
    mine: list = []
    _write(v, "mine", mine)
    _write(v, "loaded", None)  # e.g. Variable.load, outside any step's journal
    assert rollback(mine) == ["v"]
    assert v.value == "loaded"


def test_later_step_undoes_first_then_earlier_step_undoes_back_to_the_original():
    v = _cell("original")
    step_a, step_b = [], []
    _write(v, "A", step_a)
    _write(v, "B", step_b)
    assert rollback(step_b) == []
    assert (v.value, v.version) == ("A", 1)  # the version comes back too, so A can still undo its write
    assert rollback(step_a) == []
    assert (v.value, v.version) == ("original", 0)


def test_earlier_step_undoes_first_keeps_the_later_write_then_later_step_brings_back_the_earlier_value():
    v = _cell("original")
    step_a, step_b = [], []
    _write(v, "A", step_a)
    _write(v, "B", step_b)
    assert rollback(step_a) == ["v"]
    assert v.value == "B"
    assert rollback(step_b) == []
    assert v.value == "A"  # what B replaced: A's write, which A could not undo


# --- StepGate -----------------------------------------------------------------------------------------------------

def _step(gate: StepGate, events: list, label: str, body=None) -> None:
    """A variable-writing step as Session._execute_step enters and leaves it."""
    slot = gate.steps.slot
    events.append(f"{label} arrives")
    slot.in_step = True
    try:
        if gate.closed:
            gate.wait_turn(slot)
        events.append(f"{label} runs")
        if body is not None:
            body()
        events.append(f"{label} ends")
    finally:
        slot.in_step = False


def _started(target) -> threading.Thread:
    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    return thread


def test_exclusive_waits_for_a_running_step():
    gate, events = StepGate(), []
    step_running, release_step = threading.Event(), threading.Event()

    def body():
        step_running.set()
        assert release_step.wait(JOIN_S)
    stepper = _started(lambda: _step(gate, events, "step", body))
    assert step_running.wait(JOIN_S)

    def snapshot():
        with gate.exclusive():
            events.append("snapshot")
    snapshotter = _started(snapshot)
    _wait_for(lambda: gate.closed, "the snapshot to close the gate")
    assert "snapshot" not in events  # the step's slot is in_step: the snapshot is still waiting
    release_step.set()
    for thread in (stepper, snapshotter):
        thread.join(JOIN_S)
        assert not thread.is_alive()
    assert events == ["step arrives", "step runs", "step ends", "snapshot"]
    assert not gate.closed


def test_exclusive_holds_back_a_step_that_starts_meanwhile():
    gate, events = StepGate(), []
    inside, leave = threading.Event(), threading.Event()

    def snapshot():
        with gate.exclusive():
            events.append("snapshot starts")
            inside.set()
            assert leave.wait(JOIN_S)
            events.append("snapshot ends")
    snapshotter = _started(snapshot)
    assert inside.wait(JOIN_S)
    stepper = _started(lambda: _step(gate, events, "step"))
    _wait_for(lambda: "step arrives" in events, "the step to arrive")
    stepper.join(0.05)
    assert stepper.is_alive()  # held back for as long as the snapshot lasts: it cannot have finished
    assert "step runs" not in events
    leave.set()
    for thread in (snapshotter, stepper):
        thread.join(JOIN_S)
        assert not thread.is_alive()
    assert events == ["snapshot starts", "step arrives", "snapshot ends", "step runs", "step ends"]


def test_the_owner_thread_runs_steps_inside_its_own_exclusive_block():
    gate, events = StepGate(), []

    def snapshot_with_steps():
        with gate.exclusive():
            _step(gate, events, "inner")
            _step(gate, events, "inner again")
    thread = _started(snapshot_with_steps)
    thread.join(JOIN_S)
    assert not thread.is_alive(), "a step inside the owner's own exclusive block deadlocked"
    assert events == ["inner arrives", "inner runs", "inner ends", "inner again arrives", "inner again runs",
                      "inner again ends"]


def test_a_session_runs_steps_inside_its_own_snapshot():
    v = tf.Variable(0.0)
    inc = tf.assign_add(v, 1.0)
    sess = tf.Session()
    sess.run(v.initializer)
    seen = []

    def saver_like():
        with sess._snapshot():
            seen.append(sess.run(inc))
            seen.append(sess.run(v))
    thread = _started(saver_like)
    thread.join(JOIN_S)
    assert not thread.is_alive()
    assert seen == [1.0, 1.0]


def test_exclusive_blocks_of_two_threads_take_turns():
    gate, events = StepGate(), []
    first_inside, release_first = threading.Event(), threading.Event()

    def first():
        with gate.exclusive():
            events.append("first in")
            first_inside.set()
            assert release_first.wait(JOIN_S)
            events.append("first out")

    def second():
        events.append("second arrives")
        with gate.exclusive():
            events.append("second in")
    one = _started(first)
    assert first_inside.wait(JOIN_S)
    two = _started(second)
    _wait_for(lambda: "second arrives" in events, "the second snapshot")
    release_first.set()
    for thread in (one, two):
        thread.join(JOIN_S)
        assert not thread.is_alive()
    assert events == ["first in", "second arrives", "first out", "second in"]


# --- interrupts_deferred ------------------------------------------------------------------------------------------

@pytest.fixture
def default_sigint():
    """SIGINT handled by Python's default handler (KeyboardInterrupt) during the test, whatever the runner set."""
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    signal.signal(signal.SIGINT, previous)


def test_sigint_inside_the_block_is_raised_when_it_ends(default_sigint):
    reached = []
    with pytest.raises(KeyboardInterrupt):
        with interrupts_deferred():
            signal.raise_signal(signal.SIGINT)
            reached.append("after the signal")
            assert signal.getsignal(signal.SIGINT) is not signal.default_int_handler
        reached.append("after the block")
    assert reached == ["after the signal"]
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler


def test_the_previous_handler_gets_the_deferred_signal_once_and_is_restored():
    calls = []

    def handler(signum, frame):
        calls.append(signum)
    previous = signal.signal(signal.SIGINT, handler)
    try:
        with interrupts_deferred():
            signal.raise_signal(signal.SIGINT)
            signal.raise_signal(signal.SIGINT)
            assert calls == []
        assert calls == [signal.SIGINT]
        assert signal.getsignal(signal.SIGINT) is handler
    finally:
        signal.signal(signal.SIGINT, previous)


def test_no_signal_means_no_interrupt_and_the_handler_is_restored(default_sigint):
    with interrupts_deferred():
        value = 42
    assert value == 42
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler


def test_an_error_inside_the_block_propagates_and_restores_the_handler(default_sigint):
    with pytest.raises(RuntimeError, match="inside"):
        with interrupts_deferred():
            raise RuntimeError("inside")
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler


def test_in_another_thread_it_is_a_plain_block(default_sigint):
    seen = []

    def worker():
        with interrupts_deferred():
            seen.append(signal.getsignal(signal.SIGINT))
        try:
            with interrupts_deferred():
                raise ValueError("propagates")
        except ValueError as e:
            seen.append(str(e))
    thread = _started(worker)
    thread.join(JOIN_S)
    assert not thread.is_alive()
    assert seen == [signal.default_int_handler, "propagates"]  # no handler was installed from the thread


def test_with_cancel_the_interrupt_cancels_at_once_and_is_raised_when_the_block_ends(default_sigint):
    """A parallel run's caller: Ctrl-C calls `cancel` in the handler (the run stops starting kernels) and the
    KeyboardInterrupt itself comes only once the block (the wait for the workers) has ended."""
    events = []
    with pytest.raises(KeyboardInterrupt):
        with interrupts_deferred(lambda: events.append("cancelled")):
            signal.raise_signal(signal.SIGINT)
            events.append("block goes on")
            signal.raise_signal(signal.SIGINT)  # a second Ctrl-C cancels again; one KeyboardInterrupt is raised
            events.append("block ends")
    assert events == ["cancelled", "block goes on", "cancelled", "block ends"]
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler


def test_with_cancel_a_handler_that_does_not_raise_cancels_nothing():
    calls = []

    def handler(signum, frame):
        calls.append("handled")
    previous = signal.signal(signal.SIGINT, handler)
    try:
        with interrupts_deferred(lambda: calls.append("cancelled")):
            signal.raise_signal(signal.SIGINT)
        assert calls == ["handled"]
    finally:
        signal.signal(signal.SIGINT, previous)


def test_a_write_by_another_step_between_two_of_mine_is_kept():
    v = _cell("original")
    mine: list = []
    _write(v, "mine 1", mine)
    _write(v, "theirs", [])
    _write(v, "mine 2", mine)  # the version is again mine + 1, but another step wrote in between
    assert rollback(mine) == ["v"]
    assert v.value == "mine 2"
