"""What a tf.data dataset is at run time: an immutable description (a `Dataset` value, held in a variant tensor) that
makes any number of independent iterators, each yielding elements (lists of NumPy values, one per component).

Semantics are TF 1.15's (tensorflow/core/kernels/data/*_dataset_op.cc):
- `next(wait)` returns the next element, or None at the end (and None again on later calls). An error raised by
  one element (a map function that fails, a malformed record) is raised by that call; the iterator goes on with
  the next element on the following call, as TF's do.
- `wait(cond, ready)` blocks, holding `cond`, until `ready()`: the consumer's wait (the step's deadline, Ctrl-C and
  Session.close apply) or, in a prefetch thread, one that ends when the iterator closes.
- `close()` stops background threads (prefetch, parallel map) and closes the iterators it drew from.
The datasets of files are in kernels/dataset_files.py; the kernels making these values in kernels/datasets.py.
"""
from __future__ import annotations

import collections
import itertools
import os
import threading
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Callable

import numpy as np

from adplace.framework import errors
from adplace.kernels.registration import object_in

AUTOTUNE = -1


class Dataset:
    """A dataset value: `make()` gives a new iterator over its elements."""

    def make(self) -> "Iterator":
        raise NotImplementedError


class Iterator:
    """An iterator over a dataset's elements; `inputs` are the iterators it draws from (closed with it)."""

    inputs: tuple = ()

    def next(self, wait) -> list | None:
        raise NotImplementedError

    def close(self) -> None:
        for it in self.inputs:
            if it is not None:
                it.close()


class _Sequence(Iterator):
    """Elements from a Python iterable of elements (ranges, slices, file records)."""

    def __init__(self, elements):
        self._elements = iter(elements)

    def next(self, wait):
        return next(self._elements, None)


# --- sources -----------------------------------------------------------------------------------------------------
class Tensors(Dataset):
    """One element: the components themselves (Dataset.from_tensors)."""

    def __init__(self, components: list):
        self.components = components

    def make(self):
        return _Sequence([list(self.components)])


class TensorSlices(Dataset):
    """One element per row of the components (Dataset.from_tensor_slices)."""

    def __init__(self, components: list):
        self.components = components

    def make(self):
        components = self.components
        return _Sequence([c[i, ...] for c in components] for i in range(len(components[0])))


class Range(Dataset):
    def __init__(self, start: int, stop: int, step: int, dtype):
        self.range, self.dtype = range(start, stop, step), dtype

    def make(self):
        dtype = self.dtype
        return _Sequence([np.asarray(i, dtype)] for i in self.range)


class Zip(Dataset):
    def __init__(self, datasets: list):
        self.datasets = datasets

    def make(self):
        return _ZipIterator([d.make() for d in self.datasets])


class _ZipIterator(Iterator):
    def __init__(self, inputs):
        self.inputs = tuple(inputs)

    def next(self, wait):
        element = []
        for it in self.inputs:
            part = it.next(wait)
            if part is None:
                return None
            element.extend(part)
        return element


class Concatenate(Dataset):
    def __init__(self, first: Dataset, second: Dataset):
        self.parts = (first, second)

    def make(self):
        return _ConcatenateIterator(self.parts)


class _ConcatenateIterator(Iterator):
    def __init__(self, parts):
        self._parts = list(parts)
        self.inputs = (self._parts.pop(0).make(),)

    def next(self, wait):
        while True:
            element = self.inputs[0].next(wait)
            if element is not None or not self._parts:
                return element
            self.inputs[0].close()
            self.inputs = (self._parts.pop(0).make(),)


# --- functions of elements ---------------------------------------------------------------------------------------
class Map(Dataset):
    """fn(element + captured) for each element; with `parallel` > 1, that many calls at once, results in order."""

    def __init__(self, source: Dataset, fn: Callable[[list], list], captured: list, parallel: int = 1):
        self.source, self.fn, self.captured = source, fn, list(captured)
        self.parallel = (os.cpu_count() or 1) if parallel == AUTOTUNE else max(1, parallel)

    def make(self):
        if self.parallel == 1:
            return _MapIterator(self.source.make(), self.fn, self.captured)
        return _ParallelMapIterator(self.source.make(), self.fn, self.captured, self.parallel)


class _MapIterator(Iterator):
    def __init__(self, source, fn, captured):
        self.inputs, self._fn, self._captured = (source,), fn, captured

    def next(self, wait):
        element = self.inputs[0].next(wait)
        return None if element is None else self._fn(element + self._captured)


class _ParallelMapIterator(Iterator):
    """`parallel` runs of CHUNK consecutive elements in flight on a private thread pool; the consumer takes their
    results in input order. (One task per element would cost the consumer a thread switch per element.) An error of
    one element, or of the input, is raised at that element's turn."""

    CHUNK = 16

    def __init__(self, source, fn, captured, parallel):
        self.inputs, self._fn, self._captured, self._parallel = (source,), fn, captured, parallel
        self._pool = ThreadPoolExecutor(parallel, thread_name_prefix="adplace-data-map")
        self._in_flight: collections.deque = collections.deque()  # futures of lists of (ok, value or exception)
        self._ready: collections.deque = collections.deque()      # the head run's outcomes, not yet taken
        self._done = threading.Condition()
        self._source_ended = False

    def _call(self, elements: list) -> list:
        try:
            out = []
            for element in elements:
                try:
                    out.append((True, self._fn(element + self._captured)))
                except Exception as exc:  # noqa: BLE001 - raised at the element's turn
                    out.append((False, exc))
            return out
        finally:
            with self._done:
                self._done.notify_all()

    def _fill(self, wait) -> None:
        while not self._source_ended and len(self._in_flight) < self._parallel:
            run, failed = [], None
            while len(run) < self.CHUNK:
                try:
                    element = self.inputs[0].next(wait)
                except Exception as exc:  # noqa: BLE001 - the input's error keeps its place in the order
                    failed = exc
                    break
                if element is None:
                    self._source_ended = True
                    break
                run.append(element)
            if run:
                self._in_flight.append(self._pool.submit(self._call, run))
            if failed is not None:
                self._in_flight.append(_finished([(False, failed)]))

    def next(self, wait):
        if not self._ready:
            self._fill(wait)
            if not self._in_flight:
                return None
            future = self._in_flight[0]
            with self._done:
                wait(self._done, future.done)
            self._in_flight.popleft()
            self._ready.extend(future.result())
        ok, value = self._ready.popleft()
        if not ok:
            raise value
        return value

    def close(self):
        for future in self._in_flight:
            future.cancel()
        self._pool.shutdown(wait=False)
        super().close()


def _finished(result) -> Future:
    future = Future()
    future.set_result(result)
    return future


class Filter(Dataset):
    def __init__(self, source: Dataset, predicate: Callable[[list], list], captured: list):
        self.source, self.predicate, self.captured = source, predicate, list(captured)

    def make(self):
        return _FilterIterator(self.source.make(), self.predicate, self.captured)


class _FilterIterator(Iterator):
    def __init__(self, source, predicate, captured):
        self.inputs, self._predicate, self._captured = (source,), predicate, captured

    def next(self, wait):
        while True:
            element = self.inputs[0].next(wait)
            if element is None or bool(self._predicate(element + self._captured)[0]):
                return element


class Interleave(Dataset):
    """fn(element) is a dataset for each input element; `cycle_length` of them are read in turn, `block_length`
    elements at a time (flat_map: cycle 1, block 1)."""

    def __init__(self, source: Dataset, fn: Callable[[list], list], captured: list, cycle_length: int,
                 block_length: int):
        self.source, self.fn, self.captured = source, fn, list(captured)
        self.cycle_length = (os.cpu_count() or 1) if cycle_length == AUTOTUNE else cycle_length
        self.block_length = block_length

    def make(self):
        return _InterleaveIterator(self)


class _InterleaveIterator(Iterator):
    def __init__(self, dataset: Interleave):
        self._dataset = dataset
        self._source = dataset.source.make()
        self._cycle: list = [None] * dataset.cycle_length
        self._index = self._block = 0
        self._source_ended = False

    inputs = property(lambda self: (self._source, *self._cycle))

    def _advance(self):
        self._block, self._index = 0, (self._index + 1) % len(self._cycle)

    def next(self, wait):
        cycle, dataset = self._cycle, self._dataset
        while not self._source_ended or any(it is not None for it in cycle):
            current = cycle[self._index]
            if current is not None:
                element = current.next(wait)
                if element is not None:
                    self._block += 1
                    if self._block == dataset.block_length:
                        self._advance()
                    return element
                current.close()
                cycle[self._index] = None
                self._advance()
            elif not self._source_ended:
                element = self._source.next(wait)
                if element is None:
                    self._source_ended = True
                else:
                    cycle[self._index] = dataset_in(dataset.fn(element + dataset.captured)[0]).make()
            else:
                self._advance()
        return None


def dataset_in(value) -> Dataset:
    """The Dataset a variant value holds (a 0-d object array, as kernels pass it)."""
    value = object_in(value)
    if not isinstance(value, Dataset):
        raise errors.InvalidArgumentError(None, None, f"Expected a dataset, got {type(value).__name__}")
    return value


# --- grouping ----------------------------------------------------------------------------------------------------
def _shape_text(shape) -> str:
    return "[" + ",".join(str(d) for d in shape) + "]"


class Batch(Dataset):
    """Elements stacked `size` at a time; the last batch may be smaller unless `drop_remainder`. With
    `padded_shapes` (one per component, -1 for "the longest in the batch"), elements are padded with
    `padding_values` first (padded_batch)."""

    def __init__(self, source: Dataset, size: int, drop_remainder: bool, padded_shapes: list | None = None,
                 padding_values: list | None = None):
        self.source, self.size, self.drop_remainder = source, size, drop_remainder
        self.padded_shapes, self.padding_values = padded_shapes, padding_values

    def make(self):
        return _BatchIterator(self.source.make(), self)


class _BatchIterator(Iterator):
    def __init__(self, source, dataset: Batch):
        self.inputs, self._dataset = (source,), dataset

    def next(self, wait):
        dataset, elements = self._dataset, []
        while len(elements) < dataset.size:
            element = self.inputs[0].next(wait)
            if element is None:
                break
            elements.append(element)
        if not elements or (dataset.drop_remainder and len(elements) < dataset.size):
            return None
        columns = list(zip(*elements))
        if dataset.padded_shapes is None:
            return [_stack(i, column) for i, column in enumerate(columns)]
        return [_pad_stack(i, column, shape, fill)
                for i, (column, shape, fill) in enumerate(zip(columns, dataset.padded_shapes,
                                                               dataset.padding_values))]


def _stack(index: int, column) -> np.ndarray:
    first = np.shape(column[0])
    for j, value in enumerate(column[1:], 1):
        if np.shape(value) != first:
            raise errors.InvalidArgumentError(
                None, None, f"Cannot batch tensors with different shapes in component {index}. First element had "
                f"shape {_shape_text(first)} and element {j} had shape {_shape_text(np.shape(value))}.")
    return np.stack([np.asarray(v) for v in column])


def _pad_stack(index: int, column, padded_shape, fill) -> np.ndarray:
    shapes = [np.shape(v) for v in column]
    rank = len(padded_shape)
    for shape in shapes:
        if len(shape) != rank:
            raise errors.InvalidArgumentError(None, None, f"All elements in a batch must have the same rank as the "
                                              f"padded shape for component{index}: expected rank {rank} but got "
                                              f"element with rank {len(shape)}")
    target = [max(s[d] for s in shapes) if want < 0 else want for d, want in enumerate(padded_shape)]
    for shape in shapes:
        if any(have > want for have, want in zip(shape, target)):
            raise errors.InvalidArgumentError(None, None, f"Attempted to pad to a smaller size than the input "
                                              f"element. Element shape {_shape_text(shape)}, padded shape "
                                              f"{_shape_text(target)} (component {index}).")
    fill = np.asarray(fill)
    out = np.full([len(column), *target], fill[()], dtype=fill.dtype)
    for k, value in enumerate(column):
        out[(k, *(slice(0, n) for n in np.shape(value)))] = value
    return out


# --- order and count ---------------------------------------------------------------------------------------------
class Shuffle(Dataset):
    """Elements drawn at random from a buffer of `buffer_size` filled in input order. Each iterator (each epoch of a
    `repeat`) draws a new order when `reshuffle`, else the same; seeds (0, 0) draw from fresh entropy."""

    def __init__(self, source: Dataset, buffer_size: int, seed: int, seed2: int, reshuffle: bool):
        self.source, self.buffer_size, self.reshuffle = source, buffer_size, reshuffle
        self.seeds = [seed, seed2] if seed or seed2 else list(np.random.SeedSequence().generate_state(2))
        self._epochs = itertools.count()

    def make(self):
        epoch = next(self._epochs) if self.reshuffle else 0
        return _ShuffleIterator(self.source.make(), self.buffer_size, np.random.default_rng([*self.seeds, epoch]))


class _ShuffleIterator(Iterator):
    def __init__(self, source, buffer_size, rng):
        self.inputs, self._size, self._rng = (source,), buffer_size, rng
        self._buffer: list = []
        self._source_ended = False

    def next(self, wait):
        buffer = self._buffer
        while not self._source_ended and len(buffer) < self._size:
            element = self.inputs[0].next(wait)
            if element is None:
                self._source_ended = True
            else:
                buffer.append(element)
        if not buffer:
            return None
        pick = int(self._rng.integers(len(buffer)))
        buffer[pick], buffer[-1] = buffer[-1], buffer[pick]
        return buffer.pop()


class Repeat(Dataset):
    """The input `count` times (forever when negative); an epoch without elements ends it."""

    def __init__(self, source: Dataset, count: int):
        self.source, self.count = source, count

    def make(self):
        return _RepeatIterator(self.source, self.count)


class _RepeatIterator(Iterator):
    def __init__(self, source, count):
        self._source, self._left = source, count
        self.inputs = (source.make(),) if count != 0 else ()
        self._empty_epoch = True

    def next(self, wait):
        while self.inputs:
            element = self.inputs[0].next(wait)
            if element is not None:
                self._empty_epoch = False
                return element
            self.inputs[0].close()
            self._left -= 1
            if self._left == 0 or self._empty_epoch:
                self.inputs = ()
            else:
                self.inputs, self._empty_epoch = (self._source.make(),), True
        return None


class Take(Dataset):
    def __init__(self, source: Dataset, count: int):
        self.source, self.count = source, count

    def make(self):
        return _TakeIterator(self.source.make(), self.count)


class _TakeIterator(Iterator):
    def __init__(self, source, count):
        self.inputs, self._left = (source,), count

    def next(self, wait):
        if self._left == 0:
            return None
        element = self.inputs[0].next(wait)
        if element is not None and self._left > 0:
            self._left -= 1
        return element


class Skip(Dataset):
    def __init__(self, source: Dataset, count: int):
        self.source, self.count = source, count

    def make(self):
        return _SkipIterator(self.source.make(), self.count)


class _SkipIterator(Iterator):
    def __init__(self, source, count):
        self.inputs, self._skip = (source,), count

    def next(self, wait):
        while self._skip != 0:
            if self.inputs[0].next(wait) is None:
                self._skip = 0
                return None
            self._skip -= 1
        return self.inputs[0].next(wait)


class Shard(Dataset):
    """Every `num_shards`-th element, from the `index`-th on."""

    def __init__(self, source: Dataset, num_shards: int, index: int, require_non_empty: bool):
        self.source, self.num_shards, self.index = source, num_shards, index

    def make(self):
        return _ShardIterator(self.source.make(), self.num_shards, self.index)


class _ShardIterator(Iterator):
    def __init__(self, source, num_shards, index):
        self.inputs, self._n, self._index, self._at = (source,), num_shards, index, 0

    def next(self, wait):
        while True:
            element = self.inputs[0].next(wait)
            if element is None:
                return None
            at, self._at = self._at, self._at + 1
            if at % self._n == self._index:
                return element


# --- prefetching and caching -------------------------------------------------------------------------------------
class Prefetch(Dataset):
    """A background thread keeps up to `buffer_size` elements ready (AUTOTUNE: 2)."""

    def __init__(self, source: Dataset, buffer_size: int):
        self.source, self.buffer_size = source, 2 if buffer_size == AUTOTUNE else max(1, buffer_size)

    def make(self):
        return _PrefetchIterator(self.source.make(), self.buffer_size)


_END = object()


class _PrefetchIterator(Iterator):
    def __init__(self, source, size):
        self.inputs, self._size = (source,), size
        self._cond = threading.Condition()
        self._buffer: collections.deque = collections.deque()  # elements, exceptions, or _END last
        self._closed = False
        self._thread = None

    def _background_wait(self, cond, ready):
        while not ready():
            if self._closed:
                raise errors.CancelledError(None, None, "The iterator was closed.")
            cond.wait(0.05)

    def _fill(self):
        source, buffer, cond = self.inputs[0], self._buffer, self._cond
        while True:
            with cond:
                while len(buffer) >= self._size and not self._closed:
                    cond.wait()
                if self._closed:
                    return
            try:
                item = source.next(self._background_wait)
            except BaseException as exc:  # noqa: BLE001 - handed to the consumer, in order
                item = exc
            with cond:
                if self._closed:
                    return
                buffer.append(_END if item is None else item)
                cond.notify_all()
            if item is None:
                return

    def next(self, wait):
        cond, buffer = self._cond, self._buffer
        with cond:
            if self._thread is None:
                self._thread = threading.Thread(target=self._fill, name="adplace-data-prefetch", daemon=True)
                self._thread.start()
            wait(cond, lambda: bool(buffer))
            item = buffer[0]
            if item is _END:
                return None
            buffer.popleft()
            cond.notify_all()
        if isinstance(item, BaseException):
            raise item
        return item

    def close(self):
        with self._cond:
            self._closed = True
            self._cond.notify_all()
        thread = self._thread
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout=1.0)
        super().close()


class Cache(Dataset):
    """The input's elements, read once: the first iterator to reach the end stores them (in memory, or in the file
    named `store`'s job: kernels/dataset_files.py), and later iterators read the store."""

    def __init__(self, source: Dataset, store):
        self.source, self.store = source, store

    def make(self):
        cached = self.store.load()
        if cached is not None:
            return _Sequence(cached)
        return _CachingIterator(self.source.make(), self.store)


class MemoryStore:
    """Cache's in-memory store: the elements of the first complete pass."""

    def __init__(self):
        self._elements = None
        self._lock = threading.Lock()

    def load(self) -> list | None:
        return self._elements

    def save(self, elements: list) -> None:
        with self._lock:
            if self._elements is None:
                self._elements = elements


class _CachingIterator(Iterator):
    def __init__(self, source, store):
        self.inputs, self._store, self._seen = (source,), store, []

    def next(self, wait):
        element = self.inputs[0].next(wait)
        if element is None:
            if self._seen is not None:
                self._store.save(self._seen)
                self._seen = None
        elif self._seen is not None:
            self._seen.append(element)
        return element


# --- generators --------------------------------------------------------------------------------------------------
class Generator(Dataset):
    """Elements from three functions (Dataset.from_generator): `init(args)` gives a state, `next(state + args)` an
    element (OutOfRangeError at the end), `finalize(state + args)` lets it go."""

    def __init__(self, init, next_fn, finalize, init_args: list, next_args: list, finalize_args: list):
        self.init, self.next_fn, self.finalize = init, next_fn, finalize
        self.args = (init_args, next_args, finalize_args)

    def make(self):
        return _GeneratorIterator(self)


class _GeneratorIterator(Iterator):
    def __init__(self, dataset: Generator):
        self._dataset, self._state, self._ended = dataset, None, False

    def next(self, wait):
        dataset = self._dataset
        if self._ended:
            return None
        if self._state is None:
            self._state = dataset.init(dataset.args[0])
        try:
            return dataset.next_fn(self._state + dataset.args[1])
        except errors.OutOfRangeError:
            self._finish()
            return None

    def _finish(self):
        if self._state is not None and not self._ended:
            self._ended = True
            self._dataset.finalize(self._state + self._dataset.args[2])

    def close(self):
        try:
            self._finish()
        except errors.OpError:
            pass
