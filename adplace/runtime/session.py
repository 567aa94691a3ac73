"""Session: places the graph, compiles and caches a plan per (fetches, feeds), runs it, holds variables.

    sess = tf.Session(config=tf.ConfigProto(log_device_placement=True))
    print(sess.run(c))        # one placement line per op, then the value of c
    sess.placement(c)         # '/job:localhost/replica:0/task:0/device:GPU:0'

`with tf.Session(graph=g) as sess:` makes `g` the default graph and `sess` the default session inside the block, as
in TF. make_callable (runtime/callables.py) and partial runs (runtime/partial_run.py) reuse the same plans.

One session serves many threads. A step that raises (an error, a timeout, Ctrl-C) undoes its variable writes,
except where another step has written the same variable since (runtime/variable_state.py has the rules); placing
and compiling take the session's lock, running a cached plan takes none.
"""
from __future__ import annotations

import contextlib
import functools
import gc
import threading
import time
import warnings
from typing import Callable

import numpy as np

from adplace import devices as _devices
from adplace.framework.graph import Graph, get_default_graph
from adplace.framework.operation import Tensor
from adplace.framework.session_stack import default_session
from adplace.kernels.gpu import configure_memory as configure_gpu_memory
from adplace.placement import PlacementTable, Placer
from adplace.progress import status
from adplace.runtime import buffer_forwarding, callables, constant_folding, dependency_optimizer, shape_specialization
from adplace.runtime.executor import TIER_UP_AFTER_RUNS, Deadline, Plan, compile_plan
from adplace.runtime.feeds import borrowable_feeds, feed_converter, feed_tensors, feeds_converter
from adplace.runtime.fetches import FetchMapper, structure_key
from adplace.runtime.kernel_context import KernelContext
from adplace.runtime import options as _options
from adplace.runtime.partial_run import PartialRuns
from adplace.runtime.plan_cache import PlanCache
from adplace.runtime.run_metadata import fill_run_metadata
from adplace.runtime.step_errors import step_error
from adplace.runtime.step_runner import StepRunner, clock_pair
from adplace.runtime.targets import check_target, no_session_factory, session_factory
from adplace.runtime.variable_state import InterruptHold, commit_deferred, rollback

_DeviceAttributes = _devices.DeviceAttributes  # TF's name for what list_devices() returns


def _silent_floating_point() -> tuple[Callable, Callable]:
    """(enter, exit) functions around a run in which NumPy gives NaN/inf silently, as TF does.

    np.errstate costs about 1 us per run; NumPy >= 2 keeps the state in a context variable, which we set directly
    to one precomputed state when that API is there. (Integer division by zero raises in its own kernel.)
    """
    try:
        from numpy._core._ufunc_config import _extobj_contextvar, _make_extobj
        ignore_all = _make_extobj(all="ignore")
    except (ImportError, TypeError):
        def enter():
            state = np.errstate(all="ignore")
            state.__enter__()
            return state
        return enter, lambda state: state.__exit__(None, None, None)
    return functools.partial(_extobj_contextvar.set, ignore_all), _extobj_contextvar.reset


_enter_silent, _exit_silent = _silent_floating_point()


@contextlib.contextmanager
def _gc_paused():
    """Pause the cyclic GC while placing or compiling: on million-op graphs its passes would triple the time."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def _commit_traced(plan: Plan, deferred: list, journal: list, records: list) -> None:
    """commit_deferred for a traced step: each update's commit becomes a record of its step too (a second node of
    its op in the step stats, after the step's last kernel), so that no time of the step goes unreported."""
    timings: list = []
    commit_deferred(deferred, journal, timings)
    index = {id(op): i for i, op in enumerate(plan.ops)}
    records.extend((index[id(op)], start, end, ident, None) for op, start, end, ident in timings)


class _CompiledRun:
    """A cached run signature: the plan, its feed converters, how to rebuild the fetch structure, and how to flatten a
    feed_dict with nested-tuple keys into one value per converter (None: its values are already that).

    `convert(values)` turns one value per converter (a feed_dict's values, a callable's arguments) into the plan's
    feeds, in straight-line code (feeds.feeds_converter).
    """

    __slots__ = ("plan", "feed_converters", "build", "flatten", "recent", "convert")

    def __init__(self, plan: Plan, feed_converters: list, build: Callable, flatten: Callable | None):
        self.plan, self.feed_converters, self.build, self.flatten = plan, feed_converters, build, flatten
        self.recent = False
        self.convert = feeds_converter(feed_converters)


class BaseSession:
    """A session over one graph: its devices, placement, variables and compiled plans."""

    def __init__(self, target: str = "", graph=None, config: _options.ConfigProto | None = None):
        if graph is not None and not isinstance(graph, Graph):
            raise TypeError(f"graph must be a tf.Graph, but got {type(graph)}")
        self._target = check_target(target)
        if config is not None and not isinstance(config, _options.ConfigProto):
            raise TypeError(f"config must be a tf.ConfigProto, but got {type(config)}")
        self._config = config if config is not None else _options.ConfigProto()
        self._graph = graph if graph is not None else get_default_graph()
        self._closed = False
        if self._target:
            self._open_remote()
            return
        gpu_options = self._config.gpu_options
        self._devices = self._local_devices()
        configure_gpu_memory(self._devices, gpu_options)
        self._placement = PlacementTable(self._devices)
        self._placer = Placer(self._placement, self._config.allow_soft_placement, self._config.log_device_placement)
        self._ctx = self._kernel_context(self._placement)
        self._ctx.fuse_elementwise = self._config.graph_options.rewrite_options.remapping != _options.RewriterConfig.OFF
        self._ctx.fold_constants = constant_folding.enabled(self._config)
        self._ctx.optimize_dependencies = dependency_optimizer.enabled(self._config)
        self._ctx.forward_buffers = buffer_forwarding.enabled(self._config)
        self._runner = StepRunner(self._config, self._ctx)
        runner = self._runner  # while loops with parallel_iterations use its threads (runtime/loop_pipeline.py)
        self._ctx.inter_op_pool = (lambda: runner.pool) if runner.inter_threads > 1 else None
        self._timeout_ms = self._config.operation_timeout_in_ms
        self._steps, self._gate = self._ctx.steps, self._ctx.gate
        self._lock = threading.RLock()   # placing and compiling; cached runs take no lock
        self._runs = PlanCache()         # fetch structure and feed keys -> _CompiledRun
        self._plans = PlanCache()        # (fetch elements, feed tensors) -> Plan, shared by structures
        self.transfers_executed = 0
        self._partial_runs = PartialRuns(self)
        if self._config.log_device_placement:
            self._print_device_mapping()

    def _local_devices(self) -> list:
        """The devices this session runs on (a task of a cluster gives its own: adplace/distributed/task.py)."""
        return _devices.local_devices(self._config.device_count, self._config.gpu_options.visible_device_list)

    def _kernel_context(self, placement) -> KernelContext:
        """What kernels ask of this session (a task of a cluster keeps variables that outlive sessions)."""
        return KernelContext(placement, self._target)

    def _open_remote(self) -> None:
        """A session on a target other than "": the registered factory's (adplace.distributed for grpc://
        targets) runs, closes and lists devices; TF's NotFoundError when none accepts the target."""
        factory = session_factory(self._target)
        if factory is None:
            raise no_session_factory(self._target, self._config)
        remote = self._remote = factory.open(self._target, self._graph, self._config)
        self._ctx = None
        self.run, self.list_devices, self.make_callable = remote.run, remote.list_devices, remote.make_callable
        self._snapshot = remote.snapshot  # Saver.save/restore's block (adplace/distributed/cluster_session.py)

        def close() -> None:
            self._closed = True
            remote.close()
        self.close = close

    graph = property(lambda self: self._graph, doc="The graph that was launched in this session.")
    graph_def = property(lambda self: self._graph.as_graph_def(), doc="The launched graph as a GraphDef proto.")
    sess_str = property(lambda self: self._target, doc="The target (bytes) this session runs on: b'' (in-process).")

    def _print_device_mapping(self) -> None:
        described = [d for d in self._devices if d.description]
        if not described:
            print("Device mapping: no known devices.")
            return
        print("Device mapping:\n" + "\n".join(f"{d.name} -> {d.description}" for d in described))

    def list_devices(self) -> list:
        """The session's devices, as TF's _DeviceAttributes (name, device_type, memory_limit_bytes, incarnation)."""
        return [_DeviceAttributes(d.name, d.device_type, d.memory_limit_bytes, 1 + i)
                for i, d in enumerate(self._devices)]

    # --- placement --------------------------------------------------------------------------------------------
    def _place(self) -> None:
        if len(self._placement.device_by_op_id) != len(self._graph._ops):
            with self._lock, _gc_paused():
                self._placer.place(self._graph)

    def placement(self, element) -> str:
        """The full name of the device `element` (op, tensor, variable or name) was placed on."""
        self._check_open()
        op = self._graph.as_graph_element(element)
        op = op.op if isinstance(op, Tensor) else op
        self._place()
        return self._placement.device_of(op).name

    def placement_table(self) -> list[tuple[str, str, str, str, str]]:
        """(op name, type, requested device, placed device, note) for every placed op, in creation order."""
        self._check_open()
        self._place()
        notes = self._placement.notes
        return [(op.name, op.type, op.device, self._placement.device_of(op).name, notes.get(op._id, ""))
                for op in self._graph._ops]

    # --- running ----------------------------------------------------------------------------------------------
    def run(self, fetches, feed_dict=None, options=None, run_metadata=None):
        """Run the ops needed for `fetches` (nested lists, tuples, namedtuples, dicts, attrs classes of tensors, ops or
        names) with `feed_dict` (keys: tensors, names, or nested tuples of them with values of the same structure)."""
        try:  # _cached's lookup, inlined: a single tensor fetch is its own structure key
            compiled = self._runs.get((fetches if type(fetches) is Tensor else structure_key(fetches),
                                       tuple(feed_dict) if feed_dict else ()))
        except TypeError:  # an unhashable fetch or feed key
            compiled = None
        if compiled is None or self._closed or len(self._placement.device_by_op_id) != len(self._graph._ops):
            compiled = self._cached(fetches, feed_dict)
        else:
            compiled.recent = True
        if feed_dict:
            feeds = compiled.convert(feed_dict.values() if compiled.flatten is None else compiled.flatten(feed_dict))
        else:
            feeds = ()
        plan = compiled.plan
        if plan.variants is not None:
            plan = plan.variants.select(feeds)
        if options is not None or run_metadata is not None or self._timeout_ms:
            return self._execute_observed(plan, feeds, compiled.build, options, run_metadata)
        if plan.has_writes:
            return self._execute_step(plan, feeds, compiled.build, None)
        return self._execute_plain(plan, feeds, compiled.build, None)

    def _execute(self, plan: Plan, feeds, build: Callable, observed: Callable | None = None,
                 records: list | None = None):
        """Run a plan and build the fetch structure. `observed`, when given, runs the plan instead of plan.fn (a
        traced run, or one with a deadline); a traced run's `records` get its deferred updates' commits too."""
        if plan.has_writes:
            return self._execute_step(plan, feeds, build, observed, records)
        return self._execute_plain(plan, feeds, build, observed)

    def _execute_plain(self, plan: Plan, feeds, build: Callable, observed: Callable | None):
        silent = _enter_silent()
        try:
            result = build(plan.fn(feeds) if observed is None else observed())
        except BaseException as exc:
            wrapped = step_error(plan, exc)
            if wrapped is exc:
                raise
            raise wrapped from exc
        finally:
            _exit_silent(silent)
        self._ran(plan)
        return result

    def _execute_step(self, plan: Plan, feeds, build: Callable, observed: Callable | None,
                      records: list | None = None):
        """A run that writes variables: it records its writes in a journal of its own and, on any failure (an
        error, a timeout, Ctrl-C), undoes each one no other step has overwritten since, without being interrupted
        itself. It waits while a snapshot (Saver.save) runs, so a snapshot never sees half of it. Updates its kernels
        queued (runtime/deferred_updates.py) are committed once its fetched values are ready."""
        slot = self._steps.slot
        if slot.in_step:  # run from inside a step of this thread (a kernel calling run): part of that step, whose
            deferred, slot.deferred = slot.deferred, None  # later steps may read what this run's kernels write
            try:
                return self._execute_plain(plan, feeds, build, observed)
            finally:
                slot.deferred = deferred
        journal: list = []
        deferred = []
        silent = _enter_silent()
        try:
            slot.in_step = True
            if self._gate.closed:
                self._gate.wait_turn(slot)
            slot.journal, slot.deferred = journal, deferred
            result = build(plan.fn(feeds) if observed is None else observed())
            if deferred:
                if records is None:
                    commit_deferred(deferred, journal)
                else:
                    _commit_traced(plan, deferred, journal, records)
        except BaseException as exc:
            # Hold Ctrl-C back before undoing. Until the hold is in place, a Ctrl-C raises at the first call (inside
            # InterruptHold's, too): caught and retried here, with no call outside the try, then raised after the undo.
            hold = late = None
            while hold is None:
                try:
                    hold = InterruptHold()
                except BaseException as interrupt:  # noqa: BLE001 - raised once the step is undone
                    late = interrupt
            try:
                kept = rollback(journal)
            finally:
                hold.release()
            if late is not None:
                raise late from exc
            wrapped = step_error(plan, exc, kept)
            if wrapped is exc:
                raise
            raise wrapped from exc
        finally:
            slot.journal = slot.deferred = None
            slot.in_step = False
            _exit_silent(silent)
        self._ran(plan)
        return result

    def _ran(self, plan: Plan) -> None:
        """Count a successful run and its transfers; a plan's second run compiles it to straight-line code (once)."""
        runs = plan.runs = plan.runs + 1
        if plan.num_transfers:
            self.transfers_executed += plan.num_transfers
        if runs == TIER_UP_AFTER_RUNS:
            with self._lock:
                self._runner.tier_up(plan)

    def _snapshot(self):
        """A block in which no variable-writing step of this session is running or starts (Saver.save/restore)."""
        self._check_open()
        return self._gate.exclusive()

    def _execute_observed(self, plan: Plan, feeds, build: Callable, options, run_metadata):
        """A run with RunOptions: step stats when traced, DeadlineExceededError past the timeout."""
        if options is not None and not isinstance(options, _options.RunOptions):
            raise TypeError(f"options must be a tf.RunOptions, got {type(options).__name__}")
        if run_metadata is not None and not isinstance(run_metadata, _options.RunMetadata):
            raise TypeError(f"run_metadata must be a tf.RunMetadata, got {type(run_metadata).__name__}")
        deadline = None
        if options is not None and options.timeout_in_ms > 0:
            deadline = Deadline(time.perf_counter_ns() + int(options.timeout_in_ms * 1_000_000),
                                options.timeout_in_ms, "RunOptions.timeout_in_ms")
        elif self._timeout_ms > 0:
            deadline = Deadline(time.perf_counter_ns() + int(self._timeout_ms * 1_000_000), self._timeout_ms,
                                "ConfigProto.operation_timeout_in_ms")
        traced = run_metadata is not None and options is not None and options.trace_level > options.NO_TRACE
        records = [] if traced else None  # step stats with no RunMetadata to hold them would be thrown away
        epoch_ns, perf_ns = clock_pair() if records is not None else (0, 0)
        if deadline is None and records is None:
            result = self._execute(plan, feeds, build)
        else:
            cuda = self._ctx.cuda_states if records is not None else ()
            for state in cuda:  # GPU steps are timed by CUDA events on their streams, not by the host clock
                state.begin_trace()
            try:
                result = self._execute(plan, feeds, build,
                                       lambda: self._runner.run_observed(plan, feeds, deadline, records), records)
            finally:
                gpu_times = {k: v for state in cuda for k, v in state.end_trace().items()}
            if gpu_times:
                records = [(i, *gpu_times.get(plan.kernels[i], (start, end)), ident, value)
                           for i, start, end, ident, value in records]
        if run_metadata is not None:  # as in TF, the run's report replaces what the caller's RunMetadata held
            fill_run_metadata(run_metadata, options, plan, records, self._devices, (epoch_ns, perf_ns))
        return result

    def _check_usable(self) -> None:
        """TF's checks before any step: the session is open and its graph has ops."""
        self._check_open()
        if not self._graph._ops:
            raise RuntimeError("The Session graph is empty.  Add operations to the graph before calling run().")

    def _compile(self, fetches, feed_dict) -> _CompiledRun:
        self._check_usable()
        fed, flatten = feed_tensors(self._graph, feed_dict) if feed_dict else ([], None)
        mapper = FetchMapper(self._graph, fetches)
        plan_key = (tuple(mapper.elements), tuple(fed))  # [a, b], (a, b) and {"x": a, "y": b} share it
        with self._lock:
            plan = self._plans.get(plan_key)
            if plan is None:
                with status(f"placing and compiling a plan for a graph of {len(self._graph._ops)} ops"):
                    self._place()
                    with _gc_paused():
                        plan = compile_plan(self._graph, self._placement, self._ctx, mapper.elements, fed)
                        self._runner.prepare(plan)
                plan.variants = shape_specialization.variants_for(
                    plan, functools.partial(self._specialized, list(mapper.elements), list(fed)))
                self._plans.put(plan_key, plan)
            else:
                plan.recent = True
                self._place()
        borrow = borrowable_feeds(plan) if fed else ()
        device_of = self._placement.device_of  # pinned host memory matters to a feed uploaded to a CUDA GPU only
        converters = [feed_converter(t, may_borrow, device_of(t._op).is_cuda) for t, may_borrow in zip(fed, borrow)]
        return _CompiledRun(plan, converters, mapper.build, flatten)

    def _specialized(self, fetch_elements: list, fed: list, shapes: dict) -> Plan | None:
        """The plan for these fetches and feeds specialized to fed values of `shapes` (fed tensor -> TensorShape):
        runtime/shape_specialization.py."""
        with self._lock:
            if self._closed:
                return None
            with _gc_paused():
                plan = compile_plan(self._graph, self._placement, self._ctx, fetch_elements, fed, feed_shapes=shapes)
                self._runner.prepare(plan)
        return plan

    def _cached(self, fetches, feed_dict) -> _CompiledRun:
        """The compiled run for this (fetches, feed keys) signature, compiled on first use (bounded cache)."""
        self._check_open()
        try:
            key = (structure_key(fetches), tuple(feed_dict) if feed_dict else ())
            compiled = self._runs.get(key)
        except TypeError:  # unhashable fetch or feed key: no structure cache (the plan is still shared)
            key, compiled = None, None
        if compiled is None:
            compiled = self._compile(fetches, feed_dict)
            if key is not None:
                self._runs.put(key, compiled)
            return compiled
        compiled.recent = True
        if len(self._placement.device_by_op_id) != len(self._graph._ops):
            self._place()  # TF places a grown graph on the next run: errors and log lines for new ops surface now
        return compiled

    def plan_for(self, fetches, feed_dict=None) -> Plan:
        """The plan `run(fetches, feed_dict)` uses now, the same object runs use (steps, transfers, mode, runs): for
        feeds of shapes earlier runs specialized a plan to, that plan."""
        compiled = self._cached(fetches, feed_dict)
        plan = compiled.plan
        if plan.variants is not None and feed_dict:
            plan = plan.variants.lookup(compiled.convert(
                feed_dict.values() if compiled.flatten is None else compiled.flatten(feed_dict)))
        return plan

    def make_callable(self, fetches, feed_list=None, accept_options: bool = False) -> Callable:
        """A function running `fetches` with one positional feed value per `feed_list` entry, skipping all per-run
        lookups; with `accept_options` it also takes `options=` (RunOptions) and `run_metadata=` (RunMetadata)."""
        return callables.make_callable(self, fetches, feed_list, accept_options)

    def _make_callable_from_options(self, callable_options) -> Callable:
        """TF's callable from a CallableOptions message (feed/fetch/target names, run_options): see callables.py."""
        return callables.make_callable_from_options(self, callable_options)

    def partial_run_setup(self, fetches, feeds=None) -> str:
        """Start a step fed and fetched over several `partial_run` calls; returns its handle (runtime/partial_run.py)."""
        return self._partial_runs.setup(fetches, feeds)

    def partial_run(self, handle: str, fetches, feed_dict=None):
        """Feed more of a partial run's feeds and fetch some of its fetches, each once; values shaped like `fetches`."""
        return self._partial_runs.run(handle, fetches, feed_dict)

    # --- life cycle -------------------------------------------------------------------------------------------
    def _check_open(self) -> None:
        if self._closed:
            raise RuntimeError("Attempted to use a closed Session.")

    def close(self) -> None:
        """Release the session's variables, plans, partial runs and resources; later runs raise RuntimeError. Ops of
        this session's runs blocked on a queue raise CancelledError (those runs return), as in TF."""
        ctx = self._ctx
        if ctx is not None:
            ctx.close()
        self._closed = True
        self._runs.clear()
        self._plans.clear()
        self._partial_runs.clear()
        self._runner.close()
        self._ctx = None

    def as_default(self):
        """Make this the default session for Tensor.eval() and Operation.run() inside the block (it stays open, and
        the default graph does not change: enter `sess.graph.as_default()` for that)."""
        return default_session(self)


class Session(BaseSession):
    """A TF1 session (tf.Session(target='', graph=None, config=None)).

    As a context manager it makes its graph the default graph and itself the default session, and closes on exit:

        with tf.Session(graph=g) as sess:
            tf.get_default_graph() is g      # True: new ops go to g
            c.eval()                         # runs in sess
    """

    def __init__(self, target: str = "", graph=None, config: _options.ConfigProto | None = None):
        super().__init__(target, graph, config)
        self._entered = None  # (graph context, session context) while inside `with sess:`

    def __enter__(self):
        if self._entered is not None:
            raise RuntimeError("Session context managers are not re-entrant. Use `Session.as_default()` if you want "
                               "to enter a session multiple times.")
        self._entered = (self._graph.as_default(), self.as_default())
        self._entered[0].__enter__()
        return self._entered[1].__enter__()

    def __exit__(self, exc_type, exc, tb):
        graph_ctx, session_ctx = self._entered
        self._entered = None
        try:
            session_ctx.__exit__(exc_type, exc, tb)
        finally:
            graph_ctx.__exit__(exc_type, exc, tb)
            self.close()
        return False

    @staticmethod
    def reset(target, containers=None, config=None) -> None:
        """Reset resource containers on `target` and close its sessions: TF implements it for distributed targets
        only, so for the in-process target ("") it does nothing; another target is TF's NotFoundError."""
        target = check_target(target)
        if target:
            config = config if isinstance(config, _options.ConfigProto) else _options.ConfigProto()
            factory = session_factory(target)
            if factory is None:
                raise no_session_factory(target, config)
            factory.reset(target, containers, config)


class InteractiveSession(BaseSession):
    """A session that installs itself as the default session on creation (tf.InteractiveSession), for shells and
    notebooks; `close()` uninstalls it. With an explicit `graph`, that graph is the default graph until then too.

    Ops added to the graph after the session started run like any others (each run places what is new).
    """

    _count_lock = threading.Lock()
    _active_session_count = 0

    def __init__(self, target: str = "", graph=None, config: _options.ConfigProto | None = None):
        if config is None:  # TF's interactive defaults: grow GPU memory as needed
            config = _options.ConfigProto(gpu_options=_options.GPUOptions(allow_growth=True))
        if isinstance(config, _options.ConfigProto):  # TF marks the caller's config (adplace places the whole graph)
            config.graph_options.place_pruned_graph = True
        super().__init__(target, graph, config)
        with InteractiveSession._count_lock:
            if InteractiveSession._active_session_count > 0:
                warnings.warn("An interactive session is already active. This can cause out-of-memory errors in some "
                              "cases. You must explicitly call `InteractiveSession.close()` to release resources held "
                              "by the other session(s).", stacklevel=2)
            InteractiveSession._active_session_count += 1
        self._explicitly_closed = False
        self._default_session = default_session(self, enforce_nesting=False)  # sessions may close in any order
        self._default_session.__enter__()
        self._default_graph = graph.as_default() if graph is not None else None
        if self._default_graph is not None:
            self._default_graph.__enter__()

    def close(self) -> None:
        """Close the session and uninstall it as the default session (and its graph as the default graph)."""
        super().close()
        with InteractiveSession._count_lock:
            if self._explicitly_closed:
                return
            InteractiveSession._active_session_count -= 1
            self._explicitly_closed = True
        if self._default_graph is not None:
            self._default_graph.__exit__(None, None, None)
            self._default_graph = None
        self._default_session.__exit__(None, None, None)
        self._default_session = None
