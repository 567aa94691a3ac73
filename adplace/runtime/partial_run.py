"""Partial runs (Session.partial_run_setup / partial_run): one step fed and fetched over several calls, as in TF.

    h = sess.partial_run_setup([r1, r2], [a, b, c])
    sess.partial_run(h, r1, feed_dict={a: 1, b: 2})     # runs what r1 needs
    sess.partial_run(h, r2, feed_dict={c: 17})          # runs the rest; r1's inputs are not computed again

Each call runs, on the executor, the ops its fetches need that no earlier call of the handle ran, fed with every
value fed so far and every value earlier calls computed that a later op of the handle reads. So every op of a
handle runs at most once: a random op or a variable read gives all fetches one value, as in TF's single step. The
handle ends (and its values are dropped) once every feed was fed and every fetch fetched, or when a call fails
while running.
"""
from __future__ import annotations

import itertools
import threading

import numpy as np

from adplace.framework import errors
from adplace.framework.operation import Operation, Tensor, ancestor_op_ids, is_variable_op
from adplace.runtime.executor import _fetch_value, compile_plan, needed_ops
from adplace.runtime.feeds import feed_converter, feed_tensors
from adplace.runtime.fetches import REGISTERED_EXPANSIONS, FetchMapper, graph_element, registered_expansion

_NO_HANDLE = "Must run 'setup' before performing partial runs!"


class PartialRunState:
    """One handle: the feeds and fetches named at setup, what was fed and fetched, and the values computed so far."""

    def __init__(self, feeds: list, fetches: list, targets: list, scope: set):
        self.unfed = dict.fromkeys(feeds)        # setup feeds not fed yet (a dict: ordered, O(1) removal)
        self.fed: set = set()
        self.unfetched = dict.fromkeys(fetches)
        self.fetched: set = set()
        self.targets = list(targets)             # setup target ops not run yet
        self.scope = scope                       # ids of the ops the handle's fetches and targets may need
        self.values: dict = {}                   # tensor -> value: fed, or computed and still needed
        self.done_op_ids: set = set()            # ops that ran in an earlier call: never again
        self.error: BaseException | None = None  # a failure of the targets run at setup, raised by the next call
        self.lock = threading.Lock()

    @property
    def is_done(self) -> bool:
        return not self.unfed and not self.unfetched


class PartialRuns:
    """A session's open partial-run handles."""

    def __init__(self, session):
        self._session = session
        self._states: dict[str, PartialRunState] = {}
        self._counter = itertools.count()
        self._lock = threading.Lock()

    def clear(self) -> None:
        with self._lock:
            self._states.clear()

    # --- setup -------------------------------------------------------------------------------------------------
    def setup(self, fetches, feeds=None) -> str:
        """Declare a handle's feeds and fetches (fetched ops run as soon as what they need was fed); its handle."""
        session = self._session
        graph = session.graph
        session._check_usable()
        feeds = [] if feeds is None else feeds if isinstance(feeds, (list, tuple)) else [feeds]
        feed_list = []
        for feed in _expand_partial_feeds(feeds):
            try:
                feed_list.append(graph_element(graph, feed, allow_operation=False))
            except (KeyError, ValueError, TypeError) as e:
                raise type(e)(f"Cannot interpret feed_list key as Tensor: {e.args[0] if e.args else e}") from None
        mapper = FetchMapper(graph, fetches)
        tensors = mapper.tensors
        targets = [e for e in mapper.elements if isinstance(e, Operation)]
        if not tensors and not targets:
            raise errors.InvalidArgumentError(None, None, "Must specify at least one target to fetch or execute.")
        state = PartialRunState(feed_list, tensors, targets, ancestor_op_ids(tensors + targets))
        handle = (f"{','.join(t.name for t in feed_list)}->{','.join(t.name for t in tensors)}/"
                  f"{','.join(op.name for op in targets)}/1/;{next(self._counter)}")
        try:  # targets that need no feed run now, as TF's executors start them at setup
            self._run(state, [], {})
        except errors.OpError as e:  # TF's executors fail on their own: the handle's next call reports it
            state.error = e
        with self._lock:
            self._states[handle] = state
        return handle

    # --- a partial run -----------------------------------------------------------------------------------------
    def run(self, handle: str, fetches, feed_dict=None):
        """Feed `feed_dict`, run what `fetches` still need and return their values, shaped like `fetches`."""
        session = self._session
        graph = session.graph
        session._check_usable()
        fed_now: dict = {}
        if feed_dict:
            tensors, flatten = feed_tensors(graph, feed_dict)
            values = feed_dict.values() if flatten is None else flatten(feed_dict)
            for tensor, value in zip(tensors, values):
                fed_now[tensor] = feed_converter(tensor)(value)
        mapper = FetchMapper(graph, fetches)
        if any(isinstance(e, Operation) for e in mapper.elements):
            raise RuntimeError("partial_run() requires empty target_list.")
        wanted = [t for t in mapper.tensors if t not in fed_now]
        if not wanted and not fed_now:
            return mapper.build([_fetch_value(fed_now[t]) for t in mapper.tensors])
        with self._lock:
            state = self._states.get(handle) if isinstance(handle, str) else None
        if state is None:
            raise errors.InvalidArgumentError(None, None, _NO_HANDLE)
        with state.lock:
            if state.error is not None:
                self._end(handle)
                raise state.error
            _check_new(state, fed_now, wanted)
            _check_computable(state, fed_now, wanted)
            state.values.update(fed_now)
            try:
                self._run(state, [t for t in dict.fromkeys(wanted) if t not in state.values], fed_now)
            except BaseException:
                self._end(handle)
                raise
            for tensor in fed_now:
                del state.unfed[tensor]
                state.fed.add(tensor)
            for tensor in wanted:
                state.unfetched.pop(tensor, None)
                state.fetched.add(tensor)
            result = [_fetch_value(fed_now[t]) if t in fed_now else state.values[t] for t in mapper.tensors]
            for tensor in wanted:  # a fetched value is handed out once; keep it only while later ops read it
                if not _read_later(state, tensor):
                    state.values.pop(tensor, None)
            if state.is_done:
                self._end(handle)
        return mapper.build(result)

    def _end(self, handle: str) -> None:
        with self._lock:
            self._states.pop(handle, None)

    def _run(self, state: PartialRunState, fetch_tensors: list, fed_now: dict) -> None:
        """Run the ops `fetch_tensors` and the now runnable setup targets need that no earlier call ran."""
        pending = set(state.unfed).difference(fed_now)
        targets = [op for op in state.targets if _needs(state, op, pending) is None]
        if not fetch_tensors and not targets:
            return
        session = self._session
        fed = [t for t in state.values if not t._dtype._is_ref]
        session._check_open()
        session._place()
        placement = session._placement
        ops = session.graph._ops[:len(placement.device_by_op_id)]
        new_ops = [op for op in needed_ops(fetch_tensors + targets, set(fed), ops, state.done_op_ids)
                   if not is_variable_op(op)]  # a variable op only names a cell: its readers read it again
        new_ids = {op._id for op in new_ops}
        keep = list(dict.fromkeys(fetch_tensors + [t for op in new_ops for t in _kept_outputs(state, op, new_ids)]))
        with session._lock:
            plan = compile_plan(session.graph, placement, session._ctx, keep + targets, fed, state.done_op_ids)
            session._runner.prepare(plan)
        feeds = [_as_array(state.values[t], t) for t in fed]
        values = session._execute_observed(plan, feeds, list, None, None)
        state.values.update(zip(keep, values))
        state.done_op_ids.update(new_ids)
        state.targets = [op for op in state.targets if op not in targets]


def _as_array(value, tensor: Tensor):
    """A kept value as kernels take it: fetched scalars come back as NumPy scalars (or bytes), kernels want arrays."""
    if type(value) is np.ndarray:
        return value
    return np.array(value, dtype=np.dtype(tensor._dtype.base_dtype.as_numpy_dtype))


def _kept_outputs(state: PartialRunState, op: Operation, new_ids: set) -> list:
    """Outputs of a just-run op that a later call needs: setup fetches not yet fetched, and values (not references)
    read by an op of the handle that has not run."""
    read_later = any(c._id in state.scope and c._id not in new_ids and c._id not in state.done_op_ids
                     for c in op._consumers)
    return [t for t in op._outputs if t in state.unfetched or (read_later and not t._dtype._is_ref)]


def _read_later(state: PartialRunState, tensor: Tensor) -> bool:
    return any(c._id in state.scope and c._id not in state.done_op_ids for c in tensor.consumers())


def _check_new(state: PartialRunState, fed_now: dict, wanted: list) -> None:
    """TF's errors for a feed or fetch not named at setup, or fed or fetched before."""
    _check_named_once("feed", "fed", fed_now, state.fed, state.unfed)
    _check_named_once("fetch", "fetched", wanted, state.fetched, state.unfetched)


def _check_named_once(kind: str, done_verb: str, tensors, done, still_named) -> None:
    """Each of `tensors` (feeds or fetches of this call) must be named at setup and not yet done."""
    for tensor in tensors:
        if tensor in done:
            raise errors.InvalidArgumentError(None, None, f"The {kind} {tensor.name} has already been {done_verb}.")
        if tensor not in still_named:
            raise errors.InvalidArgumentError(None, None,
                                              f"The {kind} {tensor.name} was not specified in partial_run_setup.")


def _check_computable(state: PartialRunState, fed_now: dict, wanted: list) -> None:
    """TF's error for a fetch that needs a setup feed not fed yet (TF's DirectSession::CheckFetch)."""
    pending = set(state.unfed).difference(fed_now)
    for tensor in wanted:
        missing = _needs(state, tensor._op, pending, fed_now)
        if missing is not None:
            raise errors.InvalidArgumentError(None, None, f"Fetch {missing.name} can't be computed from the feeds "
                                                          f"that have been fed so far.")


def _needs(state: PartialRunState, op: Operation, pending: set, fed_now: dict | None = None) -> Tensor | None:
    """The first pending feed `op` needs (not crossing fed or computed values, nor ops that ran), else None."""
    if not pending:
        return None
    stack, seen = [op], set()
    while stack:
        op = stack.pop()
        if op._id in seen or op._id in state.done_op_ids:
            continue
        seen.add(op._id)
        for t in op._inputs:
            if t in pending:
                return t
            if t not in state.values and (fed_now is None or t not in fed_now):
                stack.append(t._op)
        stack.extend(op._control_inputs)
    return None


def _expand_partial_feeds(feeds) -> list:
    """partial_run_setup's feeds, with objects of a registered type replaced by the tensors their
    `feed_function_for_partial_run` names (see fetches.register_session_run_conversion_functions)."""
    expanded = []
    for feed in feeds:
        expand = registered_expansion(feed, 3) if REGISTERED_EXPANSIONS else None
        expanded.extend(expand(feed) if expand is not None else [feed])
    return expanded
