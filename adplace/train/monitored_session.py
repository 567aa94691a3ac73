"""tf.train.MonitoredSession, SingularMonitoredSession, MonitoredTrainingSession, Scaffold and the session creators
(TF 1.15's monitored_session).

A monitored session calls each hook's `begin()`, finalizes the graph (Scaffold.finalize), makes the session (the
chief restores the latest checkpoint of `checkpoint_dir` or initializes), starts the graph's queue runners with its
Coordinator, calls `after_create_session`, and wraps every `run()` in the hooks' before_run/after_run. `close()`
(or leaving the `with` block) calls `end()` unless an error is propagating, stops and joins the threads and closes
the session; the `with` block swallows OutOfRangeError (input exhausted) and StopIteration.

    with tf.train.MonitoredTrainingSession(checkpoint_dir="/tmp/run", save_checkpoint_steps=100,
                                           hooks=[tf.train.StopAtStepHook(last_step=1000)]) as sess:
        while not sess.should_stop():
            sess.run(train_op)
"""
from __future__ import annotations

import abc
import inspect

from adplace import errors
from adplace import tf_logging as logging
from adplace.framework.graph import GraphKeys, get_default_graph
from adplace.lib import protos
from adplace.ops import array_ops, control_flow_ops, summary_ops, variables
from adplace.train import basic_session_run_hooks as hooks_lib
from adplace.train.coordinator import Coordinator
from adplace.train.saver import Saver
from adplace.train.session_manager import SessionManager
from adplace.train.session_run_hook import SessionRunArgs, SessionRunContext, SessionRunValues

__all__ = ["ChiefSessionCreator", "MonitoredSession", "MonitoredTrainingSession", "Scaffold", "SessionCreator",
           "SingularMonitoredSession", "WorkerSessionCreator"]

# The collections a Scaffold fills (kept here under these names for supervisor.py).
INIT_OP, READY_OP, READY_FOR_LOCAL_INIT_OP = GraphKeys.INIT_OP, GraphKeys.READY_OP, GraphKeys.READY_FOR_LOCAL_INIT_OP
LOCAL_INIT_OP, SUMMARY_OP, TABLE_INITIALIZERS = GraphKeys.LOCAL_INIT_OP, GraphKeys.SUMMARY_OP, GraphKeys.TABLE_INITIALIZERS

USE_DEFAULT = object()
_PREEMPTION_ERRORS = (errors.AbortedError, errors.UnavailableError)


def _is_finalized(graph) -> bool:
    return graph.finalized


def _unfinalize(graph) -> None:
    """Undo Scaffold.finalize() when the graph was not finalized before the monitored session (as TF does)."""
    graph._unsafe_unfinalize()


def _start_queue_runners(sess, coord) -> list:
    """Start the QUEUE_RUNNERS collection's runners under `coord` (tf.train.start_queue_runners)."""
    from adplace import train

    start = getattr(train, "start_queue_runners", None)  # exported once adplace/train/queue_runner.py is wired
    return [] if start is None else start(sess=sess, coord=coord)


# --- Scaffold ----------------------------------------------------------------------------------------------------
class Scaffold:
    """The ops a monitored session needs beside the model: init, readiness checks, local init, summaries, saver.

    Each one not given is taken from its graph collection or built (and added there) by `finalize()`, which then
    finalizes the default graph. `init_fn(scaffold, session)` runs after init_op when the model is initialized
    rather than restored.
    """

    def __init__(self, init_op=None, init_feed_dict=None, init_fn=None, ready_op=None, ready_for_local_init_op=None,
                 local_init_op=None, summary_op=None, saver=None, copy_from_scaffold: Scaffold | None = None,
                 local_init_feed_dict=None):
        if copy_from_scaffold is not None:
            if not isinstance(copy_from_scaffold, Scaffold):
                raise TypeError("copy_from_scaffold is not a Scaffold instance.")
            src = copy_from_scaffold

            def pick(mine, theirs):
                return mine if mine is not None else theirs

            init_op, init_feed_dict = pick(init_op, src.init_op), pick(init_feed_dict, src.init_feed_dict)
            init_fn, ready_op = pick(init_fn, src._user_init_fn), pick(ready_op, src.ready_op)
            ready_for_local_init_op = pick(ready_for_local_init_op, src.ready_for_local_init_op)
            local_init_op = pick(local_init_op, src.local_init_op)
            local_init_feed_dict = pick(local_init_feed_dict, src.local_init_feed_dict)
            summary_op, saver = pick(summary_op, src.summary_op), pick(saver, src.saver)
        self._user_init_fn = init_fn
        self._init_fn = (lambda sess: init_fn(self, sess)) if init_fn else None
        self._init_op = init_op
        self._init_feed_dict = init_feed_dict
        self._ready_op = ready_op
        self._ready_for_local_init_op = ready_for_local_init_op
        self._local_init_op = local_init_op
        self._local_init_feed_dict = local_init_feed_dict
        self._summary_op = summary_op
        self._saver = saver

    def finalize(self) -> Scaffold:
        """Fill in the missing ops (see the class docstring), build the saver and finalize the default graph."""
        if self._init_op is None:
            self._init_op = Scaffold.get_or_default("init_op", INIT_OP, lambda: control_flow_ops.group(
                variables.global_variables_initializer(), *get_default_graph().get_collection(
                    "saved_model_initializers")))
        if self._ready_op is None:
            self._ready_op = Scaffold.get_or_default("ready_op", READY_OP, lambda: array_ops.concat(
                [variables.report_uninitialized_variables()], 0))
        if self._ready_for_local_init_op is None:
            self._ready_for_local_init_op = Scaffold.get_or_default(
                "ready_for_local_init_op", READY_FOR_LOCAL_INIT_OP, lambda: array_ops.concat(
                    [variables.report_uninitialized_variables(variables.global_variables())], 0))
        if self._local_init_op is None:
            self._local_init_op = Scaffold.get_or_default("local_init_op", LOCAL_INIT_OP,
                                                          Scaffold.default_local_init_op)
        if self._summary_op is None:
            self._summary_op = Scaffold.get_or_default("summary_op", SUMMARY_OP, summary_ops.merge_all)
        if self._saver is None:
            self._saver = _get_saver_or_default()
        self._saver.build()
        get_default_graph().finalize()
        logging.info("Graph was finalized.")
        return self

    init_fn = property(lambda self: self._init_fn)
    init_op = property(lambda self: self._init_op)
    ready_op = property(lambda self: self._ready_op)
    ready_for_local_init_op = property(lambda self: self._ready_for_local_init_op)
    local_init_op = property(lambda self: self._local_init_op)
    local_init_feed_dict = property(lambda self: self._local_init_feed_dict)
    summary_op = property(lambda self: self._summary_op)
    saver = property(lambda self: self._saver)
    init_feed_dict = property(lambda self: self._init_feed_dict)

    @staticmethod
    def get_or_default(arg_name: str, collection_key: str, default_constructor):
        """The one item of collection `collection_key`, else `default_constructor()` (added to the collection).

        Raises:
          RuntimeError: the collection holds several items.
        """
        graph = get_default_graph()
        found = graph.get_collection(collection_key)
        if found:
            if len(found) > 1:
                raise RuntimeError(f'More than one item in the collection "{collection_key}". Please indicate which '
                                   f"one to use by passing it to the tf.Scaffold constructor as:  "
                                   f"tf.Scaffold({arg_name}=item to use)")
            return found[0]
        made = default_constructor()
        if made is not None:
            graph.add_to_collection(collection_key, made)
        return made

    @staticmethod
    def default_local_init_op():
        """Initializes the local variables and the lookup tables (TABLE_INITIALIZERS)."""
        return control_flow_ops.group(variables.local_variables_initializer(),
                                      *get_default_graph().get_collection(TABLE_INITIALIZERS))


def _get_saver_or_default():
    """The one Saver in the SAVERS collection, else a new sharded one (added there; it may save nothing)."""
    graph = get_default_graph()
    savers = graph.get_collection(GraphKeys.SAVERS)
    if savers:
        if len(savers) > 1:
            raise RuntimeError(f"More than one item in collection {GraphKeys.SAVERS}. Please indicate which one to "
                               "use by passing it to the constructor.")
        return savers[0]
    saver = Saver(sharded=True, allow_empty=True)
    graph.add_to_collection(GraphKeys.SAVERS, saver)
    return saver


# --- session creators --------------------------------------------------------------------------------------------
class SessionCreator(abc.ABC):
    """Makes the session a MonitoredSession wraps."""

    @abc.abstractmethod
    def create_session(self):
        raise NotImplementedError(f"create_session is not implemented for {self}.")


class _ScaffoldedCreator(SessionCreator):
    """A creator with a Scaffold and a SessionManager built from it on first use."""

    def __init__(self, scaffold: Scaffold | None, master: str, config):
        self._scaffold = scaffold or Scaffold()
        self._session_manager = None
        self._master = master
        self._config = config

    def _get_session_manager(self) -> SessionManager:
        if self._session_manager is None:
            s = self._scaffold
            self._session_manager = SessionManager(
                local_init_op=s.local_init_op, local_init_feed_dict=s.local_init_feed_dict, ready_op=s.ready_op,
                ready_for_local_init_op=s.ready_for_local_init_op, graph=get_default_graph())
        return self._session_manager


class ChiefSessionCreator(_ScaffoldedCreator):
    """Makes the chief's session: restores the latest checkpoint of `checkpoint_dir` (or the checkpoint
    `checkpoint_filename_with_path`), else runs the scaffold's init op and init_fn; then the local init op."""

    def __init__(self, scaffold: Scaffold | None = None, master: str = "", config=None,
                 checkpoint_dir: str | None = None, checkpoint_filename_with_path: str | None = None):
        super().__init__(scaffold, master, config)
        self._checkpoint_dir = checkpoint_dir
        self._checkpoint_filename_with_path = checkpoint_filename_with_path

    def create_session(self):
        self._scaffold.finalize()
        s = self._scaffold
        return self._get_session_manager().prepare_session(
            self._master, saver=s.saver, checkpoint_dir=self._checkpoint_dir,
            checkpoint_filename_with_path=self._checkpoint_filename_with_path, config=self._config,
            init_op=s.init_op, init_feed_dict=s.init_feed_dict, init_fn=s.init_fn)


class WorkerSessionCreator(_ScaffoldedCreator):
    """Makes a worker's session: waits (up to `max_wait_secs`) until the chief has made the model ready."""

    def __init__(self, scaffold: Scaffold | None = None, master: str = "", config=None,
                 max_wait_secs: float = 30 * 60):
        super().__init__(scaffold, master, config)
        self._max_wait_secs = max_wait_secs

    def create_session(self):
        self._scaffold.finalize()
        return self._get_session_manager().wait_for_session(self._master, config=self._config,
                                                           max_wait_secs=self._max_wait_secs)


# --- the session wrappers ----------------------------------------------------------------------------------------
class _WrappedSession:
    """A session (or wrapper) with should_stop(); close() never raises a preemption error."""

    def __init__(self, sess):
        self._sess = sess
        self._wrapped_is_stoppable = isinstance(sess, _WrappedSession)

    @property
    def graph(self):
        return self._sess.graph

    def should_stop(self) -> bool:
        if self._check_stop():
            return True
        if self._sess:
            return self._wrapped_is_stoppable and self._sess.should_stop()
        return True

    def _check_stop(self) -> bool:
        return False

    def close(self) -> None:
        if self._sess:
            try:
                self._sess.close()
            except _PREEMPTION_ERRORS as e:
                logging.error("An error occurred when attempting to close the session. This may be due to a "
                              "preemption in a connected worker or parameter server. Error: %s", e)
            finally:
                self._sess = None

    def run(self, *args, **kwargs):
        return self._sess.run(*args, **kwargs)

    def run_step_fn(self, step_fn, raw_session, run_with_hooks):
        return step_fn(_MonitoredSession.StepContext(raw_session, run_with_hooks or self.run))


class _RecoverableSession(_WrappedSession):
    """Recreates the session (from its creator) when a run raises AbortedError or UnavailableError."""

    def __init__(self, sess_creator: SessionCreator):
        self._sess_creator = sess_creator
        super().__init__(self._create_session())

    def _create_session(self):
        while True:
            try:
                return self._sess_creator.create_session()
            except _PREEMPTION_ERRORS as e:
                logging.info("An error was raised while a session was being created; a new session will be "
                             "created. Error: %s", e)

    def _check_stop(self) -> bool:
        try:
            return self._sess._check_stop() if self._sess else True
        except _PREEMPTION_ERRORS as e:
            logging.info("An error was raised while considering whether the session is complete; the session "
                         "will be recreated. Error: %s", e)
            self.close()
            self._sess = self._create_session()
            return False
        except Exception:  # noqa: BLE001 - as TF: any other error there means stop
            return True

    def _retrying(self, call):
        while True:
            try:
                if not self._sess:
                    self._sess = self._create_session()
                return call()
            except _PREEMPTION_ERRORS as e:
                logging.info("An error was raised; the session will be closed and a new one created. Error: %s", e)
                self.close()
                self._sess = None

    def run(self, fetches, feed_dict=None, options=None, run_metadata=None):
        return self._retrying(lambda: self._sess.run(fetches, feed_dict=feed_dict, options=options,
                                                     run_metadata=run_metadata))

    def run_step_fn(self, step_fn, raw_session, run_with_hooks):
        return self._retrying(lambda: self._sess.run_step_fn(step_fn, raw_session, self._sess.run))


class _CoordinatedSession(_WrappedSession):
    """Stops when its Coordinator is asked to; re-raises the error a thread reported; close() joins the threads."""

    def __init__(self, sess, coord: Coordinator, stop_grace_period_secs: float = 120):
        super().__init__(sess)
        self._coord = coord
        self._stop_grace_period_secs = stop_grace_period_secs

    def _check_stop(self) -> bool:
        self._coord.raise_requested_exception()
        return self._coord.should_stop()

    def close(self) -> None:
        self._coord.request_stop()
        try:
            self._coord.join(stop_grace_period_secs=self._stop_grace_period_secs, ignore_live_threads=True)
        finally:
            try:
                _WrappedSession.close(self)
            except Exception:  # noqa: BLE001 - as TF: closing must not hide the error being handled
                pass

    def run(self, *args, **kwargs):
        try:
            return self._sess.run(*args, **kwargs)
        except _PREEMPTION_ERRORS:
            raise
        except Exception as original:
            try:  # a thread's error (e.g. a queue runner's) may be the cause: prefer it unless it is a preemption
                self._coord.raise_requested_exception()
            except _PREEMPTION_ERRORS:
                raise
            except Exception:  # noqa: BLE001
                raise original from None
            raise


class _HookedSession(_WrappedSession):
    """Runs the hooks' before_run/after_run around each run, merging their fetches, feeds and options."""

    def __init__(self, sess, hooks: list):
        super().__init__(sess)
        self._hooks = hooks
        self._should_stop = False

    def _check_stop(self) -> bool:
        return self._should_stop

    def run(self, fetches, feed_dict=None, options=None, run_metadata=None):
        if self.should_stop():
            raise RuntimeError("Run called even after should_stop requested.")
        actual_fetches = {"caller": fetches}
        run_context = SessionRunContext(original_args=SessionRunArgs(fetches, feed_dict), session=self._sess)
        options = options or protos.config_pb2.RunOptions()
        feed_dict = self._call_hook_before_run(run_context, actual_fetches, feed_dict, options)
        run_metadata = run_metadata or protos.config_pb2.RunMetadata()
        outputs = _WrappedSession.run(self, fetches=actual_fetches, feed_dict=feed_dict, options=options,
                                      run_metadata=run_metadata)
        for hook in self._hooks:
            hook.after_run(run_context, SessionRunValues(results=outputs.get(hook), options=options,
                                                         run_metadata=run_metadata))
        self._should_stop = self._should_stop or run_context.stop_requested
        return outputs["caller"]

    def _call_hook_before_run(self, run_context, fetch_dict: dict, user_feed_dict, options):
        hook_feeds: dict = {}
        for hook in self._hooks:
            request = hook.before_run(run_context)
            if request is None:
                continue
            if request.fetches is not None:
                fetch_dict[hook] = request.fetches
            if request.feed_dict:
                _raise_if_feeds_intersect(hook_feeds, request.feed_dict, "Same tensor is fed by two hooks.")
                hook_feeds.update(request.feed_dict)
            if request.options:
                _merge_run_options(options, request.options)
        if not hook_feeds:
            return user_feed_dict
        if not user_feed_dict:
            return hook_feeds
        _raise_if_feeds_intersect(user_feed_dict, hook_feeds, "Same tensor is fed by a SessionRunHook and user.")
        hook_feeds.update(user_feed_dict)
        return hook_feeds


def _raise_if_feeds_intersect(feeds1: dict, feeds2: dict, message: str) -> None:
    common = set(feeds1) & set(feeds2)
    if common:
        raise RuntimeError(f"{message} Conflict(s): {list(common)}")


def _merge_run_options(options, incoming) -> None:
    """Merge RunOptions `incoming` into `options`: numbers take the larger, flags OR, tensor watches add up."""
    for field in ("trace_level", "timeout_in_ms", "inter_op_thread_pool", "output_partition_graphs"):
        setattr(options, field, max(getattr(options, field), getattr(incoming, field)))
    options.debug_options.debug_tensor_watch_opts.extend(incoming.debug_options.debug_tensor_watch_opts)
    options.debug_options.reset_disk_byte_usage = (options.debug_options.reset_disk_byte_usage
                                                   or incoming.debug_options.reset_disk_byte_usage)
    options.report_tensor_allocations_upon_oom = (options.report_tensor_allocations_upon_oom
                                                  or incoming.report_tensor_allocations_upon_oom)


# --- MonitoredSession --------------------------------------------------------------------------------------------
class _MonitoredSession:
    """What MonitoredSession and SingularMonitoredSession share (see the module docstring)."""

    def __init__(self, session_creator: SessionCreator | None, hooks, should_recover: bool,
                 stop_grace_period_secs: float = 120):
        self._graph_was_finalized = _is_finalized(get_default_graph())
        self._hooks = list(hooks or [])
        for hook in self._hooks:
            hook.begin()
        self._coordinated_creator = self._CoordinatedSessionCreator(
            session_creator=session_creator or ChiefSessionCreator(), hooks=self._hooks,
            stop_grace_period_secs=stop_grace_period_secs)
        if should_recover:
            self._sess = _RecoverableSession(self._coordinated_creator)
        else:
            self._sess = self._coordinated_creator.create_session()

    @property
    def graph(self):
        """The session's graph (None once closed)."""
        return None if self._tf_sess() is None else self._tf_sess().graph

    def run(self, fetches, feed_dict=None, options=None, run_metadata=None):
        """Session.run with the hooks around it."""
        return self._sess.run(fetches, feed_dict=feed_dict, options=options, run_metadata=run_metadata)

    def run_step_fn(self, step_fn):
        """Call `step_fn(step_context)`: its `session` runs without hooks, `run_with_hooks` with them, and
        `request_stop()` ends the step (StopIteration, which the `with` block swallows).

        Raises:
          ValueError: `step_fn` does not take exactly (step_context) or (self, step_context).
        """
        args = tuple(inspect.signature(step_fn).parameters)
        if inspect.ismethod(step_fn):
            args = ("self", *args)
        if args not in (("step_context",), ("self", "step_context")):
            raise ValueError("`step_fn` may either have one `step_context` argument, or `self` and `step_context` "
                             f"arguments if it's an instance method. Got {args} instead.")
        return self._sess.run_step_fn(step_fn, self._tf_sess(), run_with_hooks=None)

    class StepContext:
        """What run_step_fn passes to its function: the raw session, run_with_hooks and request_stop."""

        def __init__(self, session, run_with_hooks_fn):
            self._session = session
            self._run_with_hooks_fn = run_with_hooks_fn

        @property
        def session(self):
            return self._session

        def run_with_hooks(self, *args, **kwargs):
            return self._run_with_hooks_fn(*args, **kwargs)

        def request_stop(self):
            """End the step function by raising StopIteration."""
            raise StopIteration("step_fn has requested the iterations to stop.")

    def should_stop(self) -> bool:
        """True once a hook or the coordinator asked to stop, or the session is closed."""
        return self._sess is None or self._sess.should_stop()

    def close(self) -> None:
        """Call the hooks' end(), stop and join the threads, close the session."""
        self._close_internal()

    def __enter__(self):
        return self

    def __exit__(self, exception_type, exception_value, traceback) -> bool:
        if exception_type in (errors.OutOfRangeError, StopIteration):
            exception_type = None
        self._close_internal(exception_type)
        return exception_type is None

    class _CoordinatedSessionCreator(SessionCreator):
        """Makes the session, its Coordinator and queue-runner threads, and calls after_create_session."""

        def __init__(self, session_creator: SessionCreator, hooks: list, stop_grace_period_secs: float):
            self._session_creator = session_creator
            self._hooks = hooks
            self.coord = None
            self.tf_sess = None
            self._stop_grace_period_secs = stop_grace_period_secs

        def create_session(self):
            self.tf_sess = self._session_creator.create_session()
            self.coord = Coordinator(clean_stop_exception_types=[])
            if get_default_graph().get_collection(GraphKeys.QUEUE_RUNNERS):
                _start_queue_runners(self.tf_sess, self.coord)
            for hook in self._hooks:
                hook.after_create_session(self.tf_sess, self.coord)
            return _CoordinatedSession(_HookedSession(self.tf_sess, self._hooks), self.coord,
                                       self._stop_grace_period_secs)

    def _close_internal(self, exception_type=None) -> None:
        try:
            if not exception_type:
                for hook in self._hooks:
                    hook.end(self._coordinated_creator.tf_sess)
        finally:
            try:
                if self._sess is None:
                    raise RuntimeError("Session is already closed.")
                self._sess.close()
            finally:
                self._sess = None
                self._coordinated_creator.tf_sess = None
                self._coordinated_creator.coord = None
                if not self._graph_was_finalized:
                    _unfinalize(get_default_graph())

    def _is_closed(self) -> bool:
        return self._coordinated_creator.tf_sess is None

    def _tf_sess(self):
        return self._coordinated_creator.tf_sess


class MonitoredSession(_MonitoredSession):
    """A session with hooks, initialization/recovery (see the module docstring) that also recreates the session
    after AbortedError or UnavailableError."""

    def __init__(self, session_creator: SessionCreator | None = None, hooks=None,
                 stop_grace_period_secs: float = 120):
        super().__init__(session_creator, hooks, should_recover=True, stop_grace_period_secs=stop_grace_period_secs)


class SingularMonitoredSession(_MonitoredSession):
    """A chief MonitoredSession without recovery, whose raw session is available (raw_session())."""

    def __init__(self, hooks=None, scaffold: Scaffold | None = None, master: str = "", config=None,
                 checkpoint_dir: str | None = None, stop_grace_period_secs: float = 120,
                 checkpoint_filename_with_path: str | None = None):
        creator = ChiefSessionCreator(scaffold=scaffold, master=master, config=config, checkpoint_dir=checkpoint_dir,
                                      checkpoint_filename_with_path=checkpoint_filename_with_path)
        super().__init__(creator, hooks, should_recover=False, stop_grace_period_secs=stop_grace_period_secs)

    def raw_session(self):
        """The underlying Session (runs without hooks)."""
        return self._tf_sess()


def _resolve_defaults(steps, secs, default_steps, default_secs) -> tuple:
    """TF's rule for a steps/secs pair: both left default -> the defaults; one left default -> None."""
    if steps is USE_DEFAULT and secs is USE_DEFAULT:
        return default_steps, default_secs
    return (None if steps is USE_DEFAULT else steps), (None if secs is USE_DEFAULT else secs)


def MonitoredTrainingSession(master: str = "", is_chief: bool = True,  # noqa: N802 - TF's public name
                             checkpoint_dir: str | None = None, scaffold: Scaffold | None = None, hooks=None,
                             chief_only_hooks=None, save_checkpoint_secs=USE_DEFAULT,
                             save_summaries_steps=USE_DEFAULT, save_summaries_secs=USE_DEFAULT, config=None,
                             stop_grace_period_secs: float = 120, log_step_count_steps: int | None = 100,
                             max_wait_secs: float = 7200, save_checkpoint_steps=USE_DEFAULT,
                             summary_dir: str | None = None, save_graph_def: bool = True) -> MonitoredSession:
    """A MonitoredSession for training (TF 1.15's defaults).

    The chief restores from / initializes into `checkpoint_dir` and gets, before `hooks`, `chief_only_hooks`, a
    StepCounterHook (every `log_step_count_steps`), a SummarySaverHook (every `save_summaries_steps`, default 100,
    or `save_summaries_secs`) writing to `summary_dir` (default `checkpoint_dir`), and a CheckpointSaverHook
    (every `save_checkpoint_secs`, default 600, or `save_checkpoint_steps`; secs wins when both are given). A
    worker (is_chief=False) waits for the chief's model and gets only `hooks`.
    """
    save_summaries_steps, save_summaries_secs = _resolve_defaults(save_summaries_steps, save_summaries_secs, 100,
                                                                  None)
    save_checkpoint_steps, save_checkpoint_secs = _resolve_defaults(save_checkpoint_steps, save_checkpoint_secs,
                                                                    None, 600)
    scaffold = scaffold or Scaffold()
    if not is_chief:
        creator = WorkerSessionCreator(scaffold=scaffold, master=master, config=config, max_wait_secs=max_wait_secs)
        return MonitoredSession(session_creator=creator, hooks=hooks or [],
                                stop_grace_period_secs=stop_grace_period_secs)
    all_hooks = list(chief_only_hooks or [])
    creator = ChiefSessionCreator(scaffold=scaffold, checkpoint_dir=checkpoint_dir, master=master, config=config)
    summary_dir = summary_dir or checkpoint_dir
    if summary_dir:
        if log_step_count_steps and log_step_count_steps > 0:
            all_hooks.append(hooks_lib.StepCounterHook(output_dir=summary_dir, every_n_steps=log_step_count_steps))
        if (save_summaries_steps and save_summaries_steps > 0) or (save_summaries_secs and save_summaries_secs > 0):
            all_hooks.append(hooks_lib.SummarySaverHook(scaffold=scaffold, save_steps=save_summaries_steps,
                                                        save_secs=save_summaries_secs, output_dir=summary_dir))
    if checkpoint_dir and ((save_checkpoint_secs and save_checkpoint_secs > 0)
                           or (save_checkpoint_steps and save_checkpoint_steps > 0)):
        all_hooks.append(hooks_lib.CheckpointSaverHook(checkpoint_dir, save_steps=save_checkpoint_steps,
                                                       save_secs=save_checkpoint_secs, scaffold=scaffold,
                                                       save_graph_def=save_graph_def))
    all_hooks.extend(hooks or [])
    return MonitoredSession(session_creator=creator, hooks=all_hooks, stop_grace_period_secs=stop_grace_period_secs)
