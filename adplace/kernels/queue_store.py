"""The queues behind TF's queue ops (adplace/ops/queue_ops.py): FIFO, random-shuffle, padding-FIFO and priority
stores of element tuples, safe for any number of producer and consumer threads and sessions (kernels/queues.py runs
them; runtime/resources.py keeps them).

Semantics are TF 1.15's (tensorflow/core/kernels/*queue*):
- Enqueue and dequeue attempts are served in arrival order, each side in its own line: a dequeue_many(n) waiting at
  the head keeps later dequeues from taking elements first; `close()` without cancel_pending_enqueues joins the
  enqueue line, so enqueues already waiting get in first.
- dequeue_many(n) waits for n elements (for a RandomShuffleQueue, n more than min_after_dequeue, which stops applying
  once the queue is closed); on a closed queue with fewer it is OutOfRangeError, dequeue_up_to returns what is left
  (OutOfRangeError only when nothing is). dequeue is dequeue_many(1) returning the element itself.
- enqueue on a closed queue is CancelledError; close(cancel_pending_enqueues=True) cancels the enqueues waiting.
What adplace adds: a dequeue takes its elements all at once or none (TF's collects them one by one and loses them
when cancelled), so a dequeue that times out or is cancelled leaves the queue as it was. A batch larger than the
capacity can only move in parts: such a dequeue_many holds what it has collected and puts it back at the front if
it fails; such an enqueue_many keeps the elements it already enqueued (as TF).

Blocking goes through the session's `waits.wait` (runtime/waits.py), which the kernels pass in: the deadline,
cancellation and Session.close() of the run that waits apply, whichever session made the queue.
"""
from __future__ import annotations

import heapq
import itertools
import threading
from collections import deque

import numpy as np

from adplace.framework.errors import CancelledError, InvalidArgumentError, OutOfRangeError
from adplace.framework.tensor_shape import dims_text
from adplace.kernels.tensor_array import tf_type_name

UNBOUNDED = 2**31 - 1  # TF's capacity for capacity < 0


def _shape_text(shape) -> str:
    return dims_text(None if shape is None else tuple(shape))


class Queue:
    """A FIFOQueue: `dtypes` (DTypes) and `shapes` (tuples, None dims allowed only by PaddingFIFOQueue; None for
    unconstrained shapes) of each element's components, and a capacity."""

    kind = "FIFOQueue"

    def __init__(self, name: str, dtypes: list, shapes: list | None, capacity: int):
        self.name, self.dtypes, self.shapes = name, list(dtypes), shapes
        self.capacity = UNBOUNDED if capacity < 0 else capacity
        self.cond = threading.Condition(threading.Lock())
        self.closed = False
        self._items = deque()
        self._enqueue_line: deque = deque()
        self._dequeue_line: deque = deque()

    # --- storage (overridden by the other kinds) -------------------------------------------------------------------
    def size(self) -> int:
        return len(self._items)

    def _push(self, element: tuple) -> None:
        self._items.append(element)

    def _pop(self):
        return self._items.popleft()

    def _restore(self, taken: list) -> None:
        """Put elements `_pop` gave back where they were (a failed dequeue)."""
        self._items.extendleft(reversed(taken))

    def _components(self, item) -> tuple:
        return item

    def _available(self) -> int:
        return len(self._items)

    # --- checks ----------------------------------------------------------------------------------------------------
    def check_types(self, dtypes: list, what: str) -> None:
        """The component types an op sends or expects must be the queue's (InvalidArgumentError)."""
        if len(dtypes) != len(self.dtypes):
            raise InvalidArgumentError(None, None, f"Wrong number of components in tuple. Expected "
                                       f"{len(self.dtypes)}, got {len(dtypes)} ({what} {self.kind} '{self.name}')")
        for i, (got, want) in enumerate(zip(dtypes, self.dtypes)):
            if got.base_dtype is not want.base_dtype:
                raise InvalidArgumentError(None, None, f"Type mismatch in tuple component {i}. Expected "
                                           f"{tf_type_name(want)}, got {tf_type_name(got)} ({what} {self.kind} "
                                           f"'{self.name}')")

    def check_shape(self, i: int, shape: tuple, batch: int | None = None) -> None:
        """Component `i` of an element (or of a batch of `batch` elements) has the queue's shape for it."""
        if self.shapes is None:
            return
        want = self.shapes[i]
        if batch is not None:
            want = (batch, *want)
        if len(shape) != len(want) or any(w is not None and w != d for w, d in zip(want, shape)):
            raise InvalidArgumentError(None, None, f"Shape mismatch in tuple component {i}. Expected "
                                       f"{_shape_text(want)}, got {_shape_text(shape)} (enqueue to {self.kind} "
                                       f"'{self.name}')")

    def check_element(self, components: list) -> None:
        """Before an element is enqueued: its shapes (dtypes are checked from the op's attrs)."""
        for i, value in enumerate(components):
            self.check_shape(i, value.shape)

    def check_batch(self, components: list) -> int:
        """Before a batch is enqueued: its shapes and common first dim, which it returns."""
        for i, value in enumerate(components):
            if value.ndim == 0:
                raise InvalidArgumentError(None, None, f"Shape must be at least rank 1 but is rank 0 for component "
                                           f"{i} of an enqueue_many to {self.kind} '{self.name}'")
        batch = components[0].shape[0]
        for i, value in enumerate(components):
            if self.shapes is not None:
                self.check_shape(i, value.shape, batch)
            elif value.shape[0] != batch:
                raise InvalidArgumentError(None, None, f"All input tensors must have the same size in the 0th "
                                           f"dimension. Component {i} has {value.shape[0]}, and should have {batch}")
        return batch

    def check_dequeue_many(self) -> None:
        if self.shapes is None:
            raise InvalidArgumentError(None, None, f"{self.kind}'s DequeueMany and DequeueUpTo require the "
                                       f"components to have specified shapes ({self.kind} '{self.name}').")

    # --- operations ------------------------------------------------------------------------------------------------
    def enqueue(self, elements: list, waits, op) -> None:
        """Enqueue element tuples in order, blocking while the queue is full; all at once when they fit the
        capacity, else as space frees up."""
        ticket = object()
        with self.cond:
            if self.closed:
                raise CancelledError(None, op, f"{self.kind} '{self.name}' is closed.")
            line = self._enqueue_line
            line.append(ticket)
            try:
                while elements:
                    wanted = len(elements) if len(elements) <= self.capacity else 1
                    waits.wait(self.cond, lambda wanted=wanted: self.closed or (
                        line[0] is ticket and self.capacity - self.size() >= wanted), op, "Enqueue")
                    if self.closed:
                        raise CancelledError(None, op, f"Enqueue operation was cancelled: {self.kind} "
                                             f"'{self.name}' was closed")
                    room = self.capacity - self.size()
                    for element in elements[:room]:
                        self._push(element)
                    elements = elements[room:]
                    self.cond.notify_all()
            finally:
                line.remove(ticket)
                self.cond.notify_all()

    def dequeue(self, n: int, allow_small_batch: bool, waits, op) -> list:
        """Take `n` elements (component tuples) in the queue's order; see the module for waiting and closing."""
        if n == 0:
            return []
        ticket = object()
        taken: list = []
        with self.cond:
            line = self._dequeue_line
            line.append(ticket)
            try:
                while len(taken) < n:
                    need = n - len(taken)
                    wanted = need if n <= self.capacity else 1
                    waits.wait(self.cond, lambda wanted=wanted: line[0] is ticket and (
                        self.closed or self._available() >= wanted), op, "Dequeue")
                    available = self._available()
                    if self.closed and available < need:
                        if allow_small_batch and available + len(taken) > 0:
                            need = available
                        else:
                            self._restore(taken)
                            taken = []
                            raise OutOfRangeError(None, op, f"{self.kind} '{self.name}' is closed and has "
                                                  f"insufficient elements (requested {n}, current size "
                                                  f"{self.size()})")
                    for _ in range(min(need, available)):
                        taken.append(self._pop())
                    self.cond.notify_all()
                    if self.closed and need == available:
                        break
            except BaseException:
                if taken:
                    self._restore(taken)
                raise
            finally:
                line.remove(ticket)
                self.cond.notify_all()
        return [self._components(item) for item in taken]

    def close(self, cancel_pending_enqueues: bool, waits, op) -> None:
        """Close: later enqueues fail, dequeues drain what is left. Without cancel_pending_enqueues the close waits
        its turn behind enqueues already waiting, and closing a closed queue is TF's CancelledError."""
        with self.cond:
            if cancel_pending_enqueues:
                self.closed = True
                self.cond.notify_all()
                return
            ticket = object()
            line = self._enqueue_line
            line.append(ticket)
            try:
                waits.wait(self.cond, lambda: line[0] is ticket, op, "Close")
                if self.closed:
                    raise CancelledError(None, op, f"Queue '{self.name}' is already closed.")
                self.closed = True
            finally:
                line.remove(ticket)
                self.cond.notify_all()

    def close_resource(self) -> None:
        """Its last session closed (runtime/resources.py): cancel whatever still waits on it."""
        with self.cond:
            self.closed = True
            self.cond.notify_all()

    # --- batches ---------------------------------------------------------------------------------------------------
    def batch(self, elements: list) -> list:
        """The components of dequeued elements stacked along a new first dim."""
        out = []
        for i, dtype in enumerate(self.dtypes):
            if elements:
                out.append(np.stack([e[i] for e in elements]))
            else:
                out.append(np.zeros((0, *(d or 0 for d in self.shapes[i])), dtype=dtype.as_numpy_dtype))
        return out


class RandomShuffleQueue(Queue):
    """Dequeues a uniformly random element, keeping `min_after_dequeue` elements until closed; seeded by (seed,
    seed2) when either is non-zero."""

    kind = "RandomShuffleQueue"

    def __init__(self, name: str, dtypes: list, shapes: list | None, capacity: int, min_after_dequeue: int,
                 seed: int, seed2: int):
        super().__init__(name, dtypes, shapes, capacity)
        self.min_after_dequeue = min_after_dequeue
        self.seeds = (seed, seed2)
        self._items = []
        self._rng = np.random.default_rng([seed, seed2] if seed or seed2 else None)

    def _pop(self):
        items = self._items
        index = int(self._rng.integers(len(items)))
        items[index], items[-1] = items[-1], items[index]
        return items.pop()

    def _restore(self, taken: list) -> None:
        self._items.extend(taken)

    def _available(self) -> int:
        return len(self._items) if self.closed else len(self._items) - self.min_after_dequeue


class PaddingFIFOQueue(Queue):
    """A FIFOQueue whose shapes may have unknown (None) dims: elements may differ there, and dequeue_many pads each
    component with zeros (empty strings) to the largest element of its batch."""

    kind = "PaddingFIFOQueue"

    def batch(self, elements: list) -> list:
        out = []
        for i, dtype in enumerate(self.dtypes):
            dims = [max((e[i].shape[k] for e in elements), default=known or 0) for k, known in
                    enumerate(self.shapes[i])]
            np_dtype = dtype.as_numpy_dtype
            padded = np.full((len(elements), *dims), b"" if dtype.name == "string" else 0,
                             dtype=object if dtype.name == "string" else np_dtype)
            for row, e in enumerate(elements):
                padded[(row, *(slice(0, d) for d in e[i].shape))] = e[i]
            out.append(padded)
        return out


class PriorityQueue(Queue):
    """Dequeues the element with the smallest priority (component 0, an int64 scalar) first; equal priorities in
    enqueue order."""

    kind = "PriorityQueue"

    def __init__(self, name: str, dtypes: list, shapes: list | None, capacity: int):
        super().__init__(name, dtypes, shapes, capacity)
        self._items = []
        self._order = itertools.count()

    def _push(self, element: tuple) -> None:
        heapq.heappush(self._items, (int(element[0]), next(self._order), element))

    def _pop(self):
        return heapq.heappop(self._items)

    def _restore(self, taken: list) -> None:
        for item in taken:
            heapq.heappush(self._items, item)

    def _components(self, item) -> tuple:
        return item[2]

    def check_element(self, components: list) -> None:
        if components and components[0].ndim != 0:
            raise InvalidArgumentError(None, None, f"Expected the priority element to be a scalar, but received "
                                       f"shape: {_shape_text(components[0].shape)} (enqueue to PriorityQueue "
                                       f"'{self.name}')")
        super().check_element(components)

    def check_batch(self, components: list) -> int:
        if components and components[0].ndim != 1:
            raise InvalidArgumentError(None, None, f"Expected the priority element to be a vector, but received "
                                       f"shape: {_shape_text(components[0].shape)} (enqueue_many to PriorityQueue "
                                       f"'{self.name}')")
        return super().check_batch(components)

    def check_dequeue_many(self) -> None:
        if self.shapes is None:
            raise InvalidArgumentError(None, None, f"PriorityQueue's DequeueMany requires the components to have "
                                       f"specified shapes (PriorityQueue '{self.name}').")
