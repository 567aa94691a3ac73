"""tf.train.Supervisor (TF 1.15, deprecated there in favour of MonitoredTrainingSession): a Coordinator, a
SessionManager, a Saver and a summary writer for older training scripts.

    sv = tf.train.Supervisor(logdir="/tmp/run", save_model_secs=60)
    with sv.managed_session() as sess:
        while not sv.should_stop():
            sess.run(train_op)

The chief restores the latest checkpoint of `logdir` or initializes, writes the graph, and starts the standard
services (threads saving summaries and checkpoints every `save_summaries_secs` / `save_model_secs`) and the graph's
queue runners; `stop()` stops and joins them and closes the summary writer.
"""
from __future__ import annotations

import contextlib
import os
import time

from adplace import tf_logging as logging
from adplace.framework import meta_graph
from adplace.framework.graph import GraphKeys, get_default_graph
from adplace.framework.graph_io import write_graph
from adplace.lib import protos
from adplace.ops import control_flow_ops, summary_ops, variables
from adplace.summary.writer import FileWriter
from adplace.train import training_util
from adplace.train.coordinator import Coordinator, LooperThread
from adplace.train.monitored_session import INIT_OP, LOCAL_INIT_OP, READY_FOR_LOCAL_INIT_OP, READY_OP, SUMMARY_OP
from adplace.train.monitored_session import TABLE_INITIALIZERS
from adplace.train.saver import Saver
from adplace.train.session_manager import SessionManager

__all__ = ["Supervisor"]


def _first_in_collection(graph, key: str):
    found = graph.get_collection(key)
    if len(found) > 1:
        logging.info("Found %d %s operations. Returning the first one.", len(found), key)
    return found[0] if found else None


class Supervisor:
    """See the module docstring. Arguments left at USE_DEFAULT are taken from the graph's collections or built
    (and added there); pass None to go without one."""

    USE_DEFAULT = 0

    def __init__(self, graph=None, ready_op=USE_DEFAULT, ready_for_local_init_op=USE_DEFAULT, is_chief: bool = True,
                 init_op=USE_DEFAULT, init_feed_dict=None, local_init_op=USE_DEFAULT, logdir: str | None = None,
                 summary_op=USE_DEFAULT, saver=USE_DEFAULT, global_step=USE_DEFAULT, save_summaries_secs: float = 120,
                 save_model_secs: float = 600, recovery_wait_secs: float = 30, stop_grace_secs: float = 120,
                 checkpoint_basename: str = "model.ckpt", session_manager: SessionManager | None = None,
                 summary_writer=USE_DEFAULT, init_fn=None, local_init_run_options=None):
        graph = graph if graph is not None else get_default_graph()
        self._graph = graph
        with graph.as_default():
            self._init_ops(ready_op, ready_for_local_init_op, init_op, local_init_op, saver, summary_op, global_step)
        self._init_feed_dict = init_feed_dict
        self._meta_graph_def = meta_graph.create_meta_graph_def(
            graph_def=graph.as_graph_def(add_shapes=True), saver_def=self._saver.saver_def if self._saver else None,
            graph=graph)
        self._is_chief = is_chief
        self._coord = Coordinator()
        self._recovery_wait_secs = recovery_wait_secs
        self._stop_grace_secs = stop_grace_secs
        self._init_fn = init_fn
        self._logdir = self._save_path = self._summary_writer = None
        self._save_summaries_secs = self._save_model_secs = None
        if is_chief:
            self._logdir = logdir
            self._save_summaries_secs = save_summaries_secs
            self._save_model_secs = save_model_secs
            if logdir:
                self._save_path = os.path.join(logdir, checkpoint_basename)
            if summary_writer is Supervisor.USE_DEFAULT:
                self._summary_writer = FileWriter(logdir) if logdir else None
            else:
                self._summary_writer = summary_writer
            self._graph_added_to_summary = False
        self._session_manager = session_manager or SessionManager(
            local_init_op=self._local_init_op, ready_op=self._ready_op,
            ready_for_local_init_op=self._ready_for_local_init_op, graph=graph,
            recovery_wait_secs=recovery_wait_secs, local_init_run_options=local_init_run_options)
        self._verify_setup()
        graph.finalize()

    def _init_ops(self, ready_op, ready_for_local_init_op, init_op, local_init_op, saver, summary_op,
                  global_step) -> None:
        """Resolve each USE_DEFAULT op from its collection, or build it and add it there (as TF's Supervisor)."""
        graph, default = self._graph, Supervisor.USE_DEFAULT

        def resolve(value, key: str, build):
            if value is not default:
                return value
            found = _first_in_collection(graph, key)
            if found is None:
                found = build()
                if found is not None:
                    graph.add_to_collection(key, found)
            return found

        self._ready_op = resolve(ready_op, READY_OP, variables.report_uninitialized_variables)
        self._ready_for_local_init_op = (_first_in_collection(graph, READY_FOR_LOCAL_INIT_OP)
                                         if ready_for_local_init_op is default else ready_for_local_init_op)
        self._init_op = resolve(init_op, INIT_OP, variables.global_variables_initializer)
        self._local_init_op = resolve(local_init_op, LOCAL_INIT_OP, lambda: control_flow_ops.group(
            variables.local_variables_initializer(), *graph.get_collection(TABLE_INITIALIZERS)))
        self._saver = resolve(saver, GraphKeys.SAVERS, lambda: Saver() if variables.global_variables() else None)
        self._summary_op = resolve(summary_op, SUMMARY_OP, summary_ops.merge_all)
        self._global_step = resolve(global_step, GraphKeys.GLOBAL_STEP, self._default_global_step_tensor)

    def _default_global_step_tensor(self):
        try:
            step = self._graph.get_tensor_by_name("global_step:0")
        except KeyError:
            return None
        if step.dtype.base_dtype.is_integer:
            return step
        logging.warning("Found 'global_step' is not an int type: %s", step.dtype)
        return None

    def _verify_setup(self) -> None:
        if self._is_chief:
            return
        for op in self._graph.get_operations():
            if op.type in ("Variable", "VariableV2") and not op.device:
                raise ValueError(f"When using replicas, all Variables must have their device set: {op}")

    is_chief = property(lambda self: self._is_chief)
    session_manager = property(lambda self: self._session_manager)
    coord = property(lambda self: self._coord)
    init_op = property(lambda self: self._init_op)
    init_feed_dict = property(lambda self: self._init_feed_dict)
    ready_op = property(lambda self: self._ready_op)
    ready_for_local_init_op = property(lambda self: self._ready_for_local_init_op)
    summary_writer = property(lambda self: self._summary_writer)
    summary_op = property(lambda self: self._summary_op)
    save_summaries_secs = property(lambda self: self._save_summaries_secs)
    global_step = property(lambda self: self._global_step)
    saver = property(lambda self: self._saver)
    save_model_secs = property(lambda self: self._save_model_secs)
    save_path = property(lambda self: self._save_path)
    logdir = property(lambda self: self._logdir)

    def _write_graph(self) -> None:
        if self._logdir:
            write_graph(self._graph.as_graph_def(add_shapes=True), self._logdir, "graph.pbtxt")
        if self._summary_writer and not self._graph_added_to_summary:
            self._summary_writer.add_graph(self._graph)
            self._summary_writer.add_meta_graph(self._meta_graph_def)
            self._graph_added_to_summary = True

    def start_standard_services(self, sess) -> list | None:
        """Start the summary, step-counter and checkpoint threads (chief only; nothing without a logdir).

        Raises:
          RuntimeError: this supervisor is not the chief.
        """
        if not self._is_chief:
            raise RuntimeError("Only chief supervisor can start standard services. Because only chief supervisors "
                               "can write events.")
        if not self._logdir:
            logging.warning("Standard services need a 'logdir' passed to the SessionManager")
            return None
        if self._global_step is not None and self._summary_writer:
            session_log = protos.event_pb2.SessionLog
            self._summary_writer.add_session_log(session_log(status=session_log.START),
                                                 training_util.global_step(sess, self._global_step))
        threads = []
        if self._save_summaries_secs and self._summary_writer:
            if self._summary_op is not None:
                threads.append(SVSummaryThread(self, sess))
            if self._global_step is not None:
                threads.append(SVStepCounterThread(self, sess))
        if self.saver and self._save_model_secs:
            threads.append(SVTimerCheckpointThread(self, sess))
        for thread in threads:
            thread.start()
        return threads

    def prepare_or_wait_for_session(self, master: str = "", config=None, wait_for_checkpoint: bool = False,
                                    max_wait_secs: float = 7200, start_standard_services: bool = True):
        """A ready session: the chief restores or initializes it (and starts the services), a worker waits."""
        self._coord.clear_stop()
        if self._summary_writer:
            self._summary_writer.reopen()
        if self._is_chief:
            sess = self._session_manager.prepare_session(
                master, init_op=self.init_op, saver=self.saver, checkpoint_dir=self._logdir,
                wait_for_checkpoint=wait_for_checkpoint, max_wait_secs=max_wait_secs, config=config,
                init_feed_dict=self._init_feed_dict, init_fn=self._init_fn)
            self._write_graph()
            if start_standard_services:
                logging.info("Starting standard services.")
                self.start_standard_services(sess)
        else:
            sess = self._session_manager.wait_for_session(master, config=config, max_wait_secs=max_wait_secs)
        if start_standard_services:
            logging.info("Starting queue runners.")
            self.start_queue_runners(sess)
        return sess

    def start_queue_runners(self, sess, queue_runners=None) -> list:
        """Start threads for `queue_runners` (default: the QUEUE_RUNNERS collection) under this coordinator."""
        if queue_runners is None:
            queue_runners = self._graph.get_collection(GraphKeys.QUEUE_RUNNERS)
        threads = []
        for runner in queue_runners:
            threads.extend(runner.create_threads(sess, coord=self._coord, daemon=True, start=True))
        return threads

    def loop(self, timer_interval_secs: float, target, args=None, kwargs=None) -> LooperThread:
        """Start a thread calling `target(*args, **kwargs)` every `timer_interval_secs` until a stop."""
        looper = LooperThread(self._coord, timer_interval_secs, target=target, args=args, kwargs=kwargs)
        looper.start()
        return looper

    def stop(self, threads=None, close_summary_writer: bool = True, ignore_live_threads: bool = False) -> None:
        """Request a stop, join the threads (re-raising a reported error) and close the summary writer."""
        self._coord.request_stop()
        try:
            self._coord.join(threads, stop_grace_period_secs=self._stop_grace_secs,
                             ignore_live_threads=ignore_live_threads)
        finally:
            if close_summary_writer and self._summary_writer:
                session_log = protos.event_pb2.SessionLog
                self._summary_writer.add_session_log(session_log(status=session_log.STOP))
                self._summary_writer.close()
                self._graph_added_to_summary = False

    def request_stop(self, ex=None) -> None:
        self._coord.request_stop(ex=ex)

    def should_stop(self) -> bool:
        return self._coord.should_stop()

    def stop_on_exception(self):
        return self._coord.stop_on_exception()

    def wait_for_stop(self) -> None:
        self._coord.wait_for_stop()

    def summary_computed(self, sess, summary, global_step=None) -> None:
        """Write a computed summary at `global_step` (default: the current global step).

        Raises:
          RuntimeError: there is no summary writer.
        """
        if not self._summary_writer:
            raise RuntimeError("Writing a summary requires a summary writer.")
        if global_step is None and self.global_step is not None:
            global_step = training_util.global_step(sess, self.global_step)
        self._summary_writer.add_summary(summary, global_step)

    @contextlib.contextmanager
    def managed_session(self, master: str = "", config=None, start_standard_services: bool = True,
                        close_summary_writer: bool = True):
        """A session from prepare_or_wait_for_session, stopped and closed on exit. An exception in the block
        is reported to the coordinator and re-raised by stop() (OutOfRangeError ends the loop quietly)."""
        sess = None
        try:
            sess = self.prepare_or_wait_for_session(master=master, config=config,
                                                    start_standard_services=start_standard_services)
            yield sess
        except Exception as e:  # noqa: BLE001 - handed to the coordinator, which re-raises it in stop()
            self.request_stop(e)
        finally:
            try:
                self.stop(close_summary_writer=close_summary_writer)
            finally:
                if sess is not None:
                    try:
                        sess.close()
                    except Exception:  # noqa: BLE001 - as TF: the close must not hide the loop's error
                        pass

    PrepareSession = prepare_or_wait_for_session  # noqa: N815 - TF's aliases
    StartQueueRunners = start_queue_runners  # noqa: N815
    StartStandardServices = start_standard_services  # noqa: N815
    Stop = stop  # noqa: N815
    RequestStop = request_stop  # noqa: N815
    Loop = loop  # noqa: N815
    ShouldStop = should_stop  # noqa: N815
    StopOnException = stop_on_exception  # noqa: N815
    WaitForStop = wait_for_stop  # noqa: N815
    SummaryComputed = summary_computed  # noqa: N815


class SVSummaryThread(LooperThread):
    """Runs the supervisor's summary op and writes its value every save_summaries_secs."""

    def __init__(self, sv: Supervisor, sess):
        super().__init__(sv.coord, sv.save_summaries_secs)
        self._sv, self._sess = sv, sess

    def run_loop(self) -> None:
        if self._sv.global_step is not None:
            summary, step = self._sess.run([self._sv.summary_op, self._sv.global_step])
        else:
            summary, step = self._sess.run(self._sv.summary_op), None
        if self._sv.summary_writer:
            logging.info("Recording summary at step %s.", step)
            self._sv.summary_writer.add_summary(summary, step)


class SVStepCounterThread(LooperThread):
    """Writes "<global step op>/sec" every save_summaries_secs."""

    def __init__(self, sv: Supervisor, sess, step_counter=None):
        super().__init__(sv.coord, sv.save_summaries_secs)
        self._sv, self._sess = sv, sess
        self._last_time, self._last_step = 0.0, 0
        self._step_counter = sv.global_step if step_counter is None else step_counter
        self._summary_tag = f"{self._step_counter.op.name}/sec"

    def start_loop(self) -> None:
        self._last_time = time.time()
        self._last_step = training_util.global_step(self._sess, self._step_counter)

    def run_loop(self) -> None:
        step = training_util.global_step(self._sess, self._step_counter)
        added, self._last_step = step - self._last_step, step
        now = time.time()
        elapsed, self._last_time = now - self._last_time, now
        steps_per_sec = added / elapsed if elapsed > 0 else float("inf")
        summary_pb2 = protos.summary_pb2
        summary = summary_pb2.Summary(value=[summary_pb2.Summary.Value(tag=self._summary_tag,
                                                                       simple_value=steps_per_sec)])
        if self._sv.summary_writer:
            self._sv.summary_writer.add_summary(summary, step)
        logging.log_first_n(logging.INFO, "%s: %g", 10, self._summary_tag, steps_per_sec)


class SVTimerCheckpointThread(LooperThread):
    """Saves a checkpoint to the supervisor's save_path every save_model_secs."""

    def __init__(self, sv: Supervisor, sess):
        super().__init__(sv.coord, sv.save_model_secs)
        self._sv, self._sess = sv, sess

    def run_loop(self) -> None:
        logging.info("Saving checkpoint to path %s", self._sv.save_path)
        self._sv.saver.save(self._sess, self._sv.save_path, global_step=self._sv.global_step)
        if self._sv.summary_writer and self._sv.global_step is not None:
            session_log = protos.event_pb2.SessionLog
            self._sv.summary_writer.add_session_log(
                session_log(status=session_log.CHECKPOINT, checkpoint_path=self._sv.save_path),
                training_util.global_step(self._sess, self._sv.global_step))
