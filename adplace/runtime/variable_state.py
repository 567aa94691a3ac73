"""Variable state shared by every thread of a session: cells, each step's undo journal, and the snapshot gate.

The rules (README, "Reliability"):
- A variable's value is one array reference in its `VariableCell`; a write swaps in a new array, so a reader sees the
  old or the new value, never a torn one. Every write happens under the cell's lock and bumps its version.
- Ops with `use_locking=True` hold the locks of all their variables (in a fixed order) for the whole
  read-modify-write, so N threads x K locked increments give exactly N*K. Without locking, concurrent updates may
  be lost, as in TF (Hogwild), but each write is still whole.
- Each step that writes variables has its own journal (never a thread's or the session's): for every variable it
  wrote, the value before its first write, the version then, and how many writes it made. A failed, interrupted or
  timed-out step restores a variable only when no other step has written it since (its version is exactly the
  journal's version plus the step's own writes); otherwise the newer value stays and the error names the variable.
- A snapshot (Saver.save, Saver.restore) runs when no variable-writing step is running, and holds new ones back
  until it ends, so it never sees half of a step.

    cell.write(new, steps.slot.journal)      # kernels: a whole write under the lock, journaled
    cell.update(compute, x, journal)         # use_locking: read-modify-write under the lock
    kept = rollback(journal)                 # session: undo a failed step; names left as another step wrote them
    with gate.exclusive(): ...               # Saver: no step is half applied inside the block
"""
from __future__ import annotations

import _signal  # signal's C functions: signal.signal's enum conversions cost 2 us a call, twice per parallel run
import contextlib
import signal
import threading
import time
import weakref
from collections.abc import Callable, Iterator


# Before blocking on a held variable lock, a writer gives up the GIL once (time.sleep(0)): the holder may be a thread
# that got the lock while waiting for the GIL, and blocking then starts a convoy in which every later acquisition
# is an OS hand-off between the threads (2 threads x a locked counter: 40% fewer steps/s without this). Kernels
# taking several locks (kernels/state.py `_holding`) do the same.
step_aside = time.sleep


class VariableCell:
    """A variable's value in one session, on the variable's placed device, with its lock and write count."""

    __slots__ = ("value", "name", "device", "version", "lock", "order", "__weakref__")

    def __init__(self, name: str, device, order: int = 0):
        self.value, self.name, self.device = None, name, device
        self.version = 0
        self.lock = threading.Lock()
        self.order = order  # a global lock order: multi-variable ops take their locks sorted by it

    def store(self, new, journal: list | None) -> None:
        """Replace the value; the caller holds `self.lock`. The step's journal gets (cell, old value, old version)."""
        if journal is not None:
            journal.append((self, self.value, self.version))
        self.value = new
        self.version += 1

    def write(self, new, journal: list | None) -> None:
        """Store `new` under the lock: a whole write (ops without `use_locking`; Assign)."""
        lock = self.lock
        if lock.locked():
            step_aside(0)
        with lock:
            self.store(new, journal)

    def update(self, compute, arg, journal: list | None):
        """An atomic read-modify-write (`use_locking`): `new = compute(arg)` and its store with the lock held."""
        lock = self.lock
        if lock.locked():
            step_aside(0)
        with lock:
            new = compute(arg)
            self.store(new, journal)
        return new

    def __repr__(self) -> str:
        return f"<VariableCell {self.name!r} version={self.version}>"


def rollback(journal: list) -> list[str]:
    """Undo a failed step: restore each variable it wrote unless another step wrote it since.

    For each variable, the journal's first record holds the value and version before the step's first write, and
    the number of records is the step's writes: the variable is untouched by others exactly when its version is
    that version plus those writes. Returns the names of the variables left with the other step's value. A restored
    variable gets back its old version too, so a step that wrote it before this one can still undo its own write.
    """
    first: dict = {}  # cell -> [old value, old version, writes], in first-write order
    for cell, old, version in journal:
        entry = first.get(cell)
        if entry is None:
            first[cell] = [old, version, 1]
        else:
            entry[2] += 1
    kept = []
    for cell, (old, version, writes) in first.items():
        with cell.lock:
            if cell.version == version + writes:
                cell.value, cell.version = old, version
            else:
                kept.append(cell.name)
    journal.clear()
    return kept


class StepSlot:
    """One thread's view of the steps of a session: is it inside a variable-writing step (`in_step`), and the
    journal of the step whose kernels it runs (`journal`; None outside steps). One thread-local lookup gives both."""

    __slots__ = ("in_step", "journal", "__weakref__")

    def __init__(self):
        self.in_step = False
        self.journal: dict | None = None


class ThreadSteps(threading.local):
    """Per thread: its StepSlot (`steps.slot`; kernels read `steps.slot.journal` when they write a variable)."""

    def __init__(self, slots: weakref.WeakSet):
        self.slot = StepSlot()
        slots.add(self.slot)  # dropped with the thread's locals when the thread ends

    journal = property(lambda self: self.slot.journal, doc="This thread's current journal (None outside steps).")


class StepGate:
    """Lets snapshots (exclusive) and variable-writing steps (shared, any number at once) exclude each other.

    A step sets its thread's `slot.in_step`, then checks `closed`; a snapshot sets `closed`, then waits until no
    slot is in a step. Under the GIL one of the two always sees the other, and a step costs two stores and a load.
    """

    def __init__(self):
        self._slots: weakref.WeakSet = weakref.WeakSet()
        self.steps = ThreadSteps(self._slots)
        self.closed = False
        self._owner: int | None = None
        self._snapshot_lock = threading.Lock()
        self._opened = threading.Condition(threading.Lock())

    def wait_turn(self, slot: StepSlot) -> None:
        """Called by a step that found the gate closed: step aside until the snapshot ends (unless it owns it)."""
        me = threading.get_ident()
        while self.closed and self._owner != me:
            slot.in_step = False
            with self._opened:
                while self.closed and self._owner != me:
                    self._opened.wait()
            slot.in_step = True

    @contextlib.contextmanager
    def exclusive(self) -> Iterator[None]:
        """Run the block when no variable-writing step is running; steps starting meanwhile wait for its end."""
        own = self.steps.slot
        with self._snapshot_lock:
            self._owner = threading.get_ident()
            self.closed = True
            try:
                delay = 1e-5
                while any(s.in_step for s in list(self._slots) if s is not own):
                    time.sleep(delay)
                    delay = min(2 * delay, 1e-3)
                yield
            finally:
                with self._opened:
                    self.closed, self._owner = False, None
                    self._opened.notify_all()


@contextlib.contextmanager
def interrupts_deferred(cancel: Callable[[], None] | None = None) -> Iterator[None]:
    """Hold back SIGINT (Ctrl-C) until the block ends, so an undo is never cut in half; then deliver it.

    With `cancel` (a parallel run), SIGINT's handler runs when the signal arrives; if it raises (KeyboardInterrupt),
    `cancel()` is called (it must take no lock: the block may hold it) and the exception is raised when the block
    ends. Only the main thread receives signals in Python; elsewhere the block runs as it is.
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    caught: list = []
    previous = _signal.getsignal(signal.SIGINT)

    def hold(signum, frame):
        if cancel is None or not callable(previous):
            caught.append(frame)
            return
        try:
            previous(signum, frame)
        except BaseException as exc:  # noqa: BLE001 - raised when the block ends
            caught.append(exc)
            cancel()
    try:
        _signal.signal(signal.SIGINT, hold)
    except (ValueError, OSError):  # signals unavailable here (an embedded interpreter)
        yield
        return
    try:
        yield
    finally:
        _signal.signal(signal.SIGINT, previous)
        if caught:
            if isinstance(caught[0], BaseException):
                raise caught[0]
            if callable(previous):
                previous(signal.SIGINT, caught[0])
            elif previous == signal.SIG_DFL:
                signal.raise_signal(signal.SIGINT)
