"""Variable state shared by every thread of a session: cells, each step's undo journal, and the snapshot gate.

The rules (README, "Reliability"):
- A variable's value is one array reference in its `VariableCell`; a write swaps in a new array, so a reader sees the
  old or the new value, never a torn one. Every write happens under the cell's lock and bumps its version.
- The one exception, for sparse updates of large tables: a row write (Scatter*, SparseApply*) may change the stored
  NumPy array in place when nothing else refers to it (no fetch result, step slot, journal record or view:
  `claim_in_place`). It sets `mutating` before that check and holds the lock while writing; readers take the value
  with `read()`, which waits for the lock when `mutating` is set, so under the GIL either the writer sees the
  reader's reference (and copies) or the reader waits: still never a torn value. Its journal record holds the old
  rows (`RowsUndo`) instead of the old array.
- Buffer recycling, for the fused training kernels (ApplyAdam, ...): a recycling store keeps the array it replaced
  as the cell's `spare`, and the next such write computes its new value into it (`take_spare`, under the lock, so
  two writers never get the same one) when nothing else refers to it: a reader, a fetch result, a snapshot or a
  step's journal holding it keeps it as it is. The journal still holds the old value itself, so nothing is copied
  and an undo finds it intact; an undo drops the spare.
- Deferred commits, for the same kernels on large variables that no later step of the plan reads
  (runtime/deferred_updates.py): the kernel checks its inputs and queues its update on the step's slot
  (`slot.deferred`); once every kernel of the step has run, `commit_deferred` applies the queue with Ctrl-C held
  and the cells' locks held, in place where `claim_in_place` allows (readers wait, as for a row write) and into new
  arrays elsewhere, then empties the step's journal: the step is committed. A step that fails before has applied
  nothing of its queue, so in-place updates need no undo record.
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
import functools
import signal
import sys
import threading
import time
import weakref
from collections.abc import Callable, Iterator

import numpy as np

from adplace.kernels.repeated_index import take_rows


# Before blocking on a held variable lock, a writer gives up the GIL once (time.sleep(0)): the holder may be a thread
# that got the lock while waiting for the GIL, and blocking then starts a convoy in which every later acquisition
# is an OS hand-off between the threads (2 threads x a locked counter: 40% fewer steps/s without this). Kernels
# taking several locks (kernels/state.py `_holding`) do the same.
step_aside = time.sleep


class RowsUndo:
    """A journal record's old value for an in-place row write: `old_rows`, the rows `rows` of the array viewed with
    shape `view_shape` before the write."""

    __slots__ = ("view_shape", "rows", "old_rows")

    def __init__(self, view_shape: tuple, rows: np.ndarray, old_rows: np.ndarray):
        self.view_shape, self.rows, self.old_rows = view_shape, rows, old_rows

    def restore_into(self, array: np.ndarray) -> None:
        array.reshape(self.view_shape)[self.rows] = self.old_rows


class VariableCell:
    """A variable's value in one session, on the variable's placed device, with its lock and write count."""

    __slots__ = ("value", "name", "device", "version", "lock", "order", "mutating", "spare", "__weakref__")

    def __init__(self, name: str, device, order: int = 0):
        self.value, self.name, self.device = None, name, device
        self.spare = None  # the value a recycling store replaced: the next one may compute into it (take_spare)
        self.version = 0
        self.lock = threading.Lock()
        self.order = order  # a global lock order: multi-variable ops take their locks sorted by it
        self.mutating = False  # a row write is changing the stored array in place (lock held)

    def read(self):
        """The value, for a reader holding no lock: while a row write changes it in place, wait and read again."""
        value = self.value
        if self.mutating:
            with self.lock:
                value = self.value
        return value

    def claim_in_place(self) -> bool:
        """With the lock held: may the stored array be changed in place now? Only a NumPy array owning its memory
        that nothing else refers to. Sets `mutating` first (a reader arriving later waits); clears it when not."""
        self.mutating = True
        value = self.value
        if type(value) is np.ndarray and value.base is None and value.flags.writeable and \
                value.flags.c_contiguous and _references(value) == _SOLE_OWNER_REFERENCES:
            return True
        self.mutating = False
        return False

    def take_spare(self, like: np.ndarray) -> np.ndarray | None:
        """With the lock held: the array the last recycling store replaced, handed out (once) as the buffer to
        compute the next value into, when nothing else refers to it (no reader, fetch, snapshot or journal: the
        same sole-owner count as `claim_in_place`) and it is a writeable, C-contiguous NumPy array owning its
        memory with `like`'s shape and dtype. None otherwise; the spare is dropped either way."""
        spare = self.spare
        if spare is None:
            return None
        if type(spare) is np.ndarray and _references(spare) == _SOLE_OWNER_REFERENCES and spare.base is None and \
                spare.flags.writeable and spare.flags.c_contiguous and spare.shape == like.shape and \
                spare.dtype == like.dtype:
            self.spare = None
            return spare
        self.spare = None
        return None

    def rows_undo(self, view_shape: tuple, rows: np.ndarray) -> RowsUndo:
        """The undo record of a row write about to change `rows` of the value viewed as `view_shape`."""
        return RowsUndo(view_shape, rows, take_rows(self.value.reshape(view_shape), rows))

    def wrote_in_place(self, undo: RowsUndo, journal: list | None) -> None:
        """After an in-place row write (lock held): journal its undo, bump the version, let readers in again."""
        if journal is not None:
            journal.append((self, undo, self.version))
        self.version += 1
        self.mutating = False

    def store(self, new, journal: list | None, recycle: bool = False) -> None:
        """Replace the value; the caller holds `self.lock`. The step's journal gets (cell, old value, old version).
        With `recycle` (the fused training kernels) the cell keeps the old value as its spare (`take_spare`).

        No call between the record and the write (`+=`, not append): Python runs a SIGINT handler only at function
        starts, after calls of C functions and at backward jumps, so Ctrl-C cannot land after the record but before
        the write (a record of a write that never happened would make the undo keep the step's earlier writes)."""
        if journal is not None:
            journal += ((self, self.value, self.version),)
        self.spare = self.value if recycle and self.value is not new else None
        self.value = new
        self.version += 1

    def write(self, new, journal: list | None, recycle: bool = False) -> None:
        """Store `new` under the lock: a whole write (ops without `use_locking`; Assign)."""
        lock = self.lock
        if lock.locked():
            step_aside(0)
        with lock:
            self.store(new, journal, recycle)

    def spare_for(self, like: np.ndarray) -> np.ndarray | None:
        """`take_spare` for a caller holding no lock."""
        lock = self.lock
        if lock.locked():
            step_aside(0)
        with lock:
            return self.take_spare(like)

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


def write_rows(cells: list, new_values, values, journal: list | None):
    """A row write (kernels/state.py storing_kernel) with every lock of `cells` held: `new_values(olds, values,
    targets)` writes rows into the arrays `targets[i](old, rows, view_shape[, old_rows])` gives, the stored array
    itself where `claim_in_place` allows (its old rows journaled; restored on any error) and a copy elsewhere. A
    caller that has gathered the old rows already (`old.reshape(view_shape)[rows]`, rows distinct, an array it never
    writes) passes them as `old_rows`: the journal keeps them instead of gathering again. Ctrl-C is held back until
    the write is whole and journaled, so a step's undo always finds what it needs."""
    hold = InterruptHold()  # before the try: a Ctrl-C reaching the old handler here finds nothing written
    try:
        in_place = [cell.claim_in_place() if cell not in cells[:i] else False for i, cell in enumerate(cells)]
        undos: list = [None] * len(cells)

        def target(i: int, old, rows, view_shape: tuple, old_rows=None):
            if not in_place[i]:
                return old.copy()
            undos[i] = cells[i].rows_undo(view_shape, _distinct(rows)) if old_rows is None else \
                RowsUndo(view_shape, np.array(rows, dtype=np.int64), old_rows)
            return old
        try:
            news = new_values([cell.value for cell in cells], values,
                              [functools.partial(target, i) for i in range(len(cells))])
        except BaseException:
            for cell, claimed, undo in zip(cells, in_place, undos):
                if undo is not None:
                    undo.restore_into(cell.value)
                if claimed:
                    cell.mutating = False
            raise
        for cell, claimed, undo, new in zip(cells, in_place, undos, news):
            if claimed and undo is not None and new is cell.value:
                cell.wrote_in_place(undo, journal)
            else:
                cell.mutating = False
                cell.store(new, journal)
        return news[0]
    finally:
        hold.release()


def commit_deferred(deferred: list, journal: list, timings: list | None = None) -> None:
    """Apply the updates a step's kernels queued (kernels/state.py `_committing_later`), once all its kernels have
    run: each entry is (cells, their values when the kernel read them, `apply(arrays)` updating arrays in place,
    `out_of_place(olds)` giving new arrays, the op). With Ctrl-C held and every cell's lock held (in the global order):
    - an entry whose cells still hold the values read, each claimed by `claim_in_place` (nothing else refers to it:
      no fetch result, reader, journal or snapshot), is applied in place, and the cells' versions bumped;
    - any other is computed into new arrays from the values read, and stored as the kernel would have, all of them
      before anything is changed in place: an error there (MemoryError) leaves every variable as the step left it,
      for the step's undo.
    Then the step is committed: its journal is emptied, so a Ctrl-C delivered after the commit undoes nothing.
    `timings` (a traced step's) gets (op, start ns, end ns, thread ident) for each update's work, in perf_counter
    nanoseconds: a trace shows where a deferred update's time went, after the step's last kernel."""
    hold = InterruptHold()  # before the try: a Ctrl-C reaching the old handler here finds nothing changed
    try:
        cells = sorted({cell for entry in deferred for cell in entry[0]}, key=_order)
        held = 0
        try:
            for cell in cells:
                if cell.lock.locked():
                    step_aside(0)
                cell.lock.acquire()
                held += 1
            _commit_locked(deferred, journal, timings)
        finally:
            for cell in cells[:held]:
                cell.lock.release()
        journal.clear()
    finally:
        hold.release()


def _order(cell) -> int:
    return cell.order


def _commit_locked(deferred: list, journal: list, timings: list | None) -> None:
    claimed, news = [], []
    clock = time.perf_counter_ns if timings is not None else _untimed
    try:
        for cells, olds, apply, out_of_place, op in deferred:
            unchanged = True
            for cell, old in zip(cells, olds):
                unchanged = unchanged and cell.value is old
            old = None  # noqa: F841 - no reference of this frame may count against claim_in_place
            if unchanged:
                olds.clear()
                claims = [cell.claim_in_place() for cell in cells]
                if all(claims):
                    claimed.append((cells, apply, op))
                    continue
                for cell in cells:  # a refused claim has cleared its flag already
                    cell.mutating = False
                olds = [cell.value for cell in cells]
            start = clock()
            news.append((cells, out_of_place(olds), op, start, clock()))
    except BaseException:
        for cells, _, _ in claimed:
            for cell in cells:
                cell.mutating = False
        raise
    try:
        for cells, apply, op in claimed:
            start = clock()
            apply([cell.value for cell in cells])
            for cell in cells:
                cell.version += 1
                cell.spare = None  # an in-place update needs none: let the memory go
            if timings is not None:
                timings.append((op, start, clock(), threading.get_ident()))
    finally:
        for cells, _, _ in claimed:
            for cell in cells:
                cell.mutating = False
    for cells, new, op, start, end in news:
        for cell, value in zip(cells, new):
            cell.store(value, journal, True)
        if timings is not None:
            timings.append((op, start, end, threading.get_ident()))


def _untimed() -> int:
    return 0


def _distinct(rows) -> np.ndarray:
    """The distinct rows of `rows`, sorted: np.unique's result, without its hash table (3x slower on 1,000 int64)."""
    ordered = np.sort(np.asarray(rows, dtype=np.int64).ravel())
    return ordered[np.r_[True, ordered[1:] != ordered[:-1]]] if ordered.size > 1 else ordered


def _references(value) -> int:
    return sys.getrefcount(value)


def _sole_owner_references() -> int:
    """What `claim_in_place` counts for an array that only its cell holds, measured with the same code (how many
    references locals and arguments add differs between Python versions)."""
    cell = VariableCell("probe", None)
    cell.value = np.empty(1)
    value = cell.value
    return _references(value)


_SOLE_OWNER_REFERENCES = _sole_owner_references()


def rollback(journal: list) -> list[str]:
    """Undo a failed step: restore each variable it wrote unless another step wrote it since.

    For each variable, the journal's first record holds the version before the step's first write, and the number
    of records is the step's writes: the variable is untouched by others exactly when its version is that version
    plus those writes. Its records are then undone newest first: a whole write restores the array it replaced, a
    row write its old rows (into a copy: a reader may hold the current array). Returns the names of the variables
    left with the other step's value. A restored variable gets back its old version too, so a step that wrote it
    before this one can still undo its own write.
    """
    records: dict = {}  # cell -> [old version, old values in write order], in first-write order
    for cell, old, version in journal:
        entry = records.get(cell)
        if entry is None:
            records[cell] = [version, [old]]
        else:
            entry[1].append(old)
    kept = []
    for cell, (version, olds) in records.items():
        with cell.lock:
            if cell.version == version + len(olds):
                cell.value, cell.version, cell.spare = _undone(cell.value, olds), version, None
            else:
                kept.append(cell.name)
    journal.clear()
    return kept


def _undone(value, olds: list):
    """`value` with the writes whose old values are `olds` (oldest first) undone."""
    private = False  # whether `value` is a copy made here (row undos write into it)
    for old in reversed(olds):
        if isinstance(old, RowsUndo):
            if not private:
                value, private = value.copy(), True
            old.restore_into(value)
        else:
            value, private = old, False
    return value


class StepSlot:
    """One thread's view of the steps of a session: is it inside a variable-writing step (`in_step`), the journal
    of the step whose kernels it runs (`journal`; None outside steps), the updates that step commits after its last
    kernel (`deferred`: see `commit_deferred`; None where kernels must apply their updates themselves), and that
    run's deadline and cancellation for blocking kernels (`run`: see runtime/waits.py; None when neither applies).
    One thread-local lookup gives all."""

    __slots__ = ("in_step", "journal", "deferred", "run", "__weakref__")

    def __init__(self):
        self.in_step = False
        self.journal: dict | None = None
        self.deferred: list | None = None
        self.run = None


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


class InterruptHold:
    """Ctrl-C (SIGINT) held back from creation to `release()`, which delivers it then; a no-op off the main thread
    (only the main thread receives signals in Python) or where signals are unavailable (an embedded interpreter).

    With `cancel` (a parallel run), the previous handler runs when the signal arrives; if it raises
    (KeyboardInterrupt), `cancel()` is called (it must take no lock: the holder may hold it) and the exception is
    raised by `release()`. Otherwise the signal is recorded and handed to the previous handler by `release()`.

    Creating a hold can itself raise: signal.signal hands a SIGINT still pending to the old handler before it
    installs the new one. Where Ctrl-C must not skip what follows (a step's undo: session._execute_step), create it
    in a loop that catches that exception and raises it once done.
    """

    __slots__ = ("previous", "cancel", "installed", "pending", "frame", "raised")

    def __init__(self, cancel: Callable[[], None] | None = None):
        self.installed = self.pending = False
        self.frame = self.raised = None
        if threading.current_thread() is not threading.main_thread():
            return
        self.previous = _signal.getsignal(signal.SIGINT)
        self.cancel = cancel if callable(self.previous) else None
        try:
            _signal.signal(signal.SIGINT, self._hold)
        except (ValueError, OSError):  # signals unavailable here
            return
        self.installed = True

    def _hold(self, signum, frame) -> None:
        if self.cancel is None:
            if not self.pending:
                self.pending, self.frame = True, frame
            return
        try:
            self.previous(signum, frame)
        except BaseException as exc:  # noqa: BLE001 - raised by release()
            if self.raised is None:
                self.raised = exc
            self.cancel()

    def release(self) -> None:
        """Reinstall the previous handler, then deliver what was held: raise the exception a cancelling hold kept,
        or hand a recorded SIGINT to the previous handler as if it arrived now."""
        if not self.installed:
            return
        self.installed = False
        previous = self.previous
        _signal.signal(signal.SIGINT, signal.SIG_DFL if previous is None else previous)  # None: set outside Python
        if self.raised is not None:
            raised, self.raised = self.raised, None
            raise raised
        if self.pending:
            if callable(previous):
                previous(signal.SIGINT, self.frame)
            elif previous == signal.SIG_DFL:
                signal.raise_signal(signal.SIGINT)


@contextlib.contextmanager
def interrupts_deferred(cancel: Callable[[], None] | None = None) -> Iterator[None]:
    """Hold back SIGINT (Ctrl-C) until the block ends, then deliver it (an `InterruptHold` around the block)."""
    hold = InterruptHold(cancel)
    try:
        yield
    finally:
        hold.release()
