"""The standard SessionRunHooks of TF 1.15 (tf.train.StopAtStepHook, CheckpointSaverHook, SummarySaverHook,
LoggingTensorHook, NanTensorHook, StepCounterHook, FinalOpsHook, FeedFnHook, GlobalStepWaiterHook) and the timers
they trigger on.

Hooks that follow the global step read it with the graph's cached global-step read, the value before this run's
increment; where the exact step matters (stopping, saving) they read it again after the run, as TF does.

    hooks = [tf.train.StopAtStepHook(last_step=1000),
             tf.train.CheckpointSaverHook("/tmp/run", save_steps=100),
             tf.train.LoggingTensorHook({"loss": loss}, every_n_iter=10)]
    with tf.train.MonitoredSession(hooks=hooks) as sess:
        while not sess.should_stop():
            sess.run(train_op)
"""
from __future__ import annotations

import os
import time
from typing import Callable

import numpy as np

from adplace import errors
from adplace import tf_logging as logging
from adplace.framework import meta_graph
from adplace.framework.graph import GraphKeys, get_default_graph
from adplace.framework.graph_io import write_graph
from adplace.lib import protos
from adplace.summary.writer_cache import FileWriterCache
from adplace.train import training_util
from adplace.train.session_run_hook import SessionRunArgs, SessionRunHook

__all__ = ["CheckpointSaverHook", "CheckpointSaverListener", "FeedFnHook", "FinalOpsHook", "GlobalStepWaiterHook",
           "LoggingTensorHook", "NanLossDuringTrainingError", "NanTensorHook", "SecondOrStepTimer",
           "StepCounterHook", "StopAtStepHook", "SummarySaverHook"]


# --- timers ------------------------------------------------------------------------------------------------------
class SecondOrStepTimer:
    """Triggers once every `every_secs` seconds or every `every_steps` steps (exactly one of them)."""

    def __init__(self, every_secs: float | None = None, every_steps: int | None = None):
        if every_secs is None and every_steps is None:
            raise ValueError("Either every_secs or every_steps should be provided.")
        if every_secs is not None and every_steps is not None:
            raise ValueError("Can not provide both every_secs and every_steps.")
        self._every_secs = every_secs
        self._every_steps = every_steps
        self.reset()

    def reset(self) -> None:
        self._last_triggered_step: int | None = None
        self._last_triggered_time: float | None = None

    def should_trigger_for_step(self, step: int) -> bool:
        """True when `step` is due: the first step seen, or a new step past the period since the last trigger."""
        if self._last_triggered_step is None:
            return True
        if self._last_triggered_step == step:
            return False
        if self._every_secs is not None and time.time() >= self._last_triggered_time + self._every_secs:
            return True
        return self._every_steps is not None and step >= self._last_triggered_step + self._every_steps

    def update_last_triggered_step(self, step: int) -> tuple[float | None, int | None]:
        """Record a trigger at `step`; returns (seconds, steps) since the previous one, (None, None) the first time."""
        now = time.time()
        if self._last_triggered_time is None:
            elapsed = (None, None)
        else:
            elapsed = (now - self._last_triggered_time, step - self._last_triggered_step)
        self._last_triggered_time, self._last_triggered_step = now, step
        return elapsed

    def last_triggered_step(self) -> int | None:
        return self._last_triggered_step


class NeverTriggerTimer(SecondOrStepTimer):
    """A timer that never triggers (for hooks that only act at the end)."""

    def __init__(self):  # noqa: D107 - no period to check
        self.reset()

    def should_trigger_for_step(self, step: int) -> bool:
        return False


def _global_step_read(hook_name: str):
    """The cached read of the global step, created if needed (RuntimeError when the graph has no global step)."""
    read = training_util._get_or_create_global_step_read()
    if read is None:
        raise RuntimeError(f"Global step should be created to use {hook_name}.")
    return read


def _as_graph_element(obj):
    """A tensor of the default graph: `obj` itself, or the tensor a name ("x", "x:0") names."""
    graph = get_default_graph()
    if not isinstance(obj, str):
        if getattr(obj, "graph", None) is not graph:
            raise ValueError(f"Passed {obj} should have graph attribute that is equal to current graph {graph}.")
        return obj
    if ":" in obj:
        return graph.as_graph_element(obj)
    element = graph.as_graph_element(obj + ":0")
    try:
        graph.as_graph_element(obj + ":1")
    except (KeyError, ValueError):
        return element
    raise ValueError(f"Name {obj} is ambiguous, as this `Operation` has multiple outputs (at least 2).")


# --- stopping ----------------------------------------------------------------------------------------------------
class StopAtStepHook(SessionRunHook):
    """Requests a stop once the global step reaches `last_step`, or `num_steps` steps past its value at start."""

    def __init__(self, num_steps: int | None = None, last_step: int | None = None):
        if num_steps is None and last_step is None:
            raise ValueError("One of num_steps or last_step must be specified.")
        if num_steps is not None and last_step is not None:
            raise ValueError("Only one of num_steps or last_step can be specified.")
        self._num_steps = num_steps
        self._last_step = last_step

    def begin(self) -> None:
        self._global_step_tensor = _global_step_read("StopAtStepHook")

    def after_create_session(self, session, coord) -> None:
        if self._last_step is None:
            self._last_step = int(session.run(self._global_step_tensor)) + self._num_steps

    def before_run(self, run_context) -> SessionRunArgs:
        return SessionRunArgs(self._global_step_tensor)

    def after_run(self, run_context, run_values) -> None:
        if run_values.results + 1 >= self._last_step:
            # The read is the step before this run; whether the run incremented it is known only by reading again.
            if run_context.session.run(self._global_step_tensor) >= self._last_step:
                run_context.request_stop()


class NanLossDuringTrainingError(RuntimeError):
    """Raised by NanTensorHook when the loss is NaN."""

    def __str__(self) -> str:
        return "NaN loss during training."


class NanTensorHook(SessionRunHook):
    """Checks `loss_tensor` every run: on NaN, raises NanLossDuringTrainingError (or, with fail_on_nan_loss=False,
    logs a warning and requests a stop)."""

    def __init__(self, loss_tensor, fail_on_nan_loss: bool = True):
        self._loss_tensor = loss_tensor
        self._fail_on_nan_loss = fail_on_nan_loss

    def before_run(self, run_context) -> SessionRunArgs:
        return SessionRunArgs(self._loss_tensor)

    def after_run(self, run_context, run_values) -> None:
        if np.isnan(run_values.results):
            message = "Model diverged with loss = NaN."
            if self._fail_on_nan_loss:
                logging.error(message)
                raise NanLossDuringTrainingError
            logging.warning(message)
            run_context.request_stop()


# --- logging -----------------------------------------------------------------------------------------------------
class LoggingTensorHook(SessionRunHook):
    """Logs (tf.logging.info) the values of `tensors` every `every_n_iter` runs or `every_n_secs` seconds, and/or
    at the end.

    `tensors` is a dict {tag: tensor or name} (logged in sorted tag order) or a list of tensors or names (logged in
    that order). `formatter(values_by_tag)` makes the message instead of "tag = value, ...".
    """

    def __init__(self, tensors, every_n_iter: int | None = None, every_n_secs: float | None = None,
                 at_end: bool = False, formatter: Callable[[dict], str] | None = None):
        only_at_end = at_end and every_n_iter is None and every_n_secs is None
        if not only_at_end and (every_n_iter is None) == (every_n_secs is None):
            raise ValueError("either at_end and/or exactly one of every_n_iter and every_n_secs must be provided.")
        if every_n_iter is not None and every_n_iter <= 0:
            raise ValueError(f"invalid every_n_iter={every_n_iter}.")
        if isinstance(tensors, dict):
            self._tag_order = sorted(tensors)
        else:
            self._tag_order = list(tensors)
            tensors = {item: item for item in tensors}
        self._tensors = tensors
        self._timer = (NeverTriggerTimer() if only_at_end
                       else SecondOrStepTimer(every_secs=every_n_secs, every_steps=every_n_iter))
        self._log_at_end = at_end
        self._formatter = formatter

    def begin(self) -> None:
        self._timer.reset()
        self._iter_count = 0
        self._current_tensors = {tag: _as_graph_element(tensor) for tag, tensor in self._tensors.items()}

    def before_run(self, run_context) -> SessionRunArgs | None:
        self._should_trigger = self._timer.should_trigger_for_step(self._iter_count)
        return SessionRunArgs(self._current_tensors) if self._should_trigger else None

    def _log_tensors(self, tensor_values: dict) -> None:
        original = np.get_printoptions()
        np.set_printoptions(suppress=True)
        try:
            elapsed_secs, _ = self._timer.update_last_triggered_step(self._iter_count)
            if self._formatter:
                logging.info(self._formatter(tensor_values))
                return
            stats = ", ".join(f"{tag} = {tensor_values[tag]!s}" for tag in self._tag_order)
            if elapsed_secs is not None:
                logging.info("%s (%.3f sec)", stats, elapsed_secs)
            else:
                logging.info("%s", stats)
        finally:
            np.set_printoptions(**original)

    def after_run(self, run_context, run_values) -> None:
        if self._should_trigger:
            self._log_tensors(run_values.results)
        self._iter_count += 1

    def end(self, session) -> None:
        if self._log_at_end:
            self._log_tensors(session.run(self._current_tensors))


class StepCounterHook(SessionRunHook):
    """Logs and writes (as the summary "<global step op>/sec") the global steps per second, every `every_n_steps`
    steps or `every_n_secs` seconds, to `summary_writer` or the cached FileWriter of `output_dir`."""

    def __init__(self, every_n_steps: int | None = 100, every_n_secs: float | None = None, output_dir=None,
                 summary_writer=None):
        if (every_n_steps is None) == (every_n_secs is None):
            raise ValueError("exactly one of every_n_steps and every_n_secs should be provided.")
        self._timer = SecondOrStepTimer(every_steps=every_n_steps, every_secs=every_n_secs)
        self._summary_writer = summary_writer
        self._output_dir = output_dir
        self._last_global_step = None
        self._steps_per_run = 1

    def begin(self) -> None:
        if self._summary_writer is None and self._output_dir:
            self._summary_writer = FileWriterCache.get(self._output_dir)
        self._global_step_tensor = _global_step_read("StepCounterHook")
        self._summary_tag = training_util.get_global_step().op.name + "/sec"

    def before_run(self, run_context) -> SessionRunArgs:
        return SessionRunArgs(self._global_step_tensor)

    def _log_and_record(self, elapsed_steps: int, elapsed_time: float, step: int) -> None:
        steps_per_sec = elapsed_steps / elapsed_time
        if self._summary_writer is not None:
            summary_pb2 = protos.summary_pb2
            value = summary_pb2.Summary.Value(tag=self._summary_tag, simple_value=steps_per_sec)
            self._summary_writer.add_summary(summary_pb2.Summary(value=[value]), step)
        logging.info("%s: %g", self._summary_tag, steps_per_sec)

    def after_run(self, run_context, run_values) -> None:
        stale_step = run_values.results
        if self._timer.should_trigger_for_step(stale_step + self._steps_per_run):
            step = run_context.session.run(self._global_step_tensor)
            if self._timer.should_trigger_for_step(step):
                elapsed_time, elapsed_steps = self._timer.update_last_triggered_step(step)
                if elapsed_time is not None:
                    self._log_and_record(elapsed_steps, elapsed_time, step)
        if stale_step == self._last_global_step:
            logging.log_first_n(logging.WARN, "It seems that global step (tf.train.get_global_step) has not been "
                                "increased. Current value (could be stable): %s vs previous value: %s. You could "
                                "increase the global step by passing tf.train.get_global_step() to "
                                "Optimizer.apply_gradients or Optimizer.minimize.", 5, stale_step,
                                self._last_global_step)
        self._last_global_step = stale_step


# --- checkpoints and summaries -----------------------------------------------------------------------------------
class CheckpointSaverListener:
    """Called by CheckpointSaverHook around its saves; `after_save` returning True requests a stop."""

    def begin(self) -> None:
        pass

    def before_save(self, session, global_step_value: int) -> None:
        pass

    def after_save(self, session, global_step_value: int) -> bool | None:
        pass

    def end(self, session, global_step_value: int) -> None:
        pass


def _single_saver():
    """The one Saver in the SAVERS collection (RuntimeError when there is none or several)."""
    savers = get_default_graph().get_collection(GraphKeys.SAVERS)
    if not savers:
        raise RuntimeError(f"No items in collection {GraphKeys.SAVERS}. Please add a saver to the collection or "
                           "provide a saver or scaffold.")
    if len(savers) > 1:
        raise RuntimeError(f"More than one item in collection {GraphKeys.SAVERS}. Please indicate which one to use "
                           "by passing it to the constructor.")
    return savers[0]


class CheckpointSaverHook(SessionRunHook):
    """Saves `checkpoint_dir/checkpoint_basename-<step>` every `save_steps` steps or `save_secs` seconds, once when
    the session is created (the state it starts from) and once at the end (unless that step was just saved).

    The saver is `saver`, else the scaffold's, else the one in the SAVERS collection. With `save_graph_def`, the
    graph goes to `checkpoint_dir/graph.pbtxt` and, with its MetaGraphDef, to the directory's event file; every save
    is logged there as a SessionLog CHECKPOINT.
    """

    def __init__(self, checkpoint_dir: str, save_secs: float | None = None, save_steps: int | None = None,
                 saver=None, checkpoint_basename: str = "model.ckpt", scaffold=None, listeners=None,
                 save_graph_def: bool = True):
        logging.info("Create CheckpointSaverHook.")
        if saver is not None and scaffold is not None:
            raise ValueError("You cannot provide both saver and scaffold.")
        self._saver = saver
        self._checkpoint_dir = checkpoint_dir
        self._save_path = os.path.join(checkpoint_dir, checkpoint_basename)
        self._scaffold = scaffold
        self._timer = SecondOrStepTimer(every_secs=save_secs, every_steps=save_steps)
        self._listeners = list(listeners or [])
        self._steps_per_run = 1
        self._save_graph_def = save_graph_def

    def begin(self) -> None:
        self._summary_writer = FileWriterCache.get(self._checkpoint_dir)
        self._global_step_tensor = _global_step_read("CheckpointSaverHook")
        for listener in self._listeners:
            listener.begin()

    def after_create_session(self, session, coord) -> None:
        step = int(session.run(self._global_step_tensor))
        if self._save_graph_def:
            graph = get_default_graph()
            graph_def = graph.as_graph_def(add_shapes=True)
            write_graph(graph_def, self._checkpoint_dir, "graph.pbtxt")
            saver = self._get_saver()
            self._summary_writer.add_graph(graph)
            self._summary_writer.add_meta_graph(meta_graph.create_meta_graph_def(
                graph_def=graph_def, saver_def=saver.saver_def if saver else None, graph=graph))
        self._save(session, step)
        self._timer.update_last_triggered_step(step)

    def before_run(self, run_context) -> SessionRunArgs:
        return SessionRunArgs(self._global_step_tensor)

    def after_run(self, run_context, run_values) -> None:
        if self._timer.should_trigger_for_step(run_values.results + self._steps_per_run):
            step = int(run_context.session.run(self._global_step_tensor))
            if self._timer.should_trigger_for_step(step):
                self._timer.update_last_triggered_step(step)
                if self._save(run_context.session, step):
                    run_context.request_stop()

    def end(self, session) -> None:
        last_step = int(session.run(self._global_step_tensor))
        if last_step != self._timer.last_triggered_step():
            self._save(session, last_step)
        for listener in self._listeners:
            listener.end(session, last_step)

    def _save(self, session, step: int) -> bool:
        """Save at `step`, with the listeners around it; True when a listener asks to stop."""
        logging.info("Calling checkpoint listeners before saving checkpoint %d...", step)
        for listener in self._listeners:
            listener.before_save(session, step)
        logging.info("Saving checkpoints for %d into %s.", step, self._save_path)
        self._get_saver().save(session, self._save_path, global_step=step, write_meta_graph=self._save_graph_def)
        session_log = protos.event_pb2.SessionLog
        self._summary_writer.add_session_log(
            session_log(status=session_log.CHECKPOINT, checkpoint_path=self._save_path), step)
        logging.info("Calling checkpoint listeners after saving checkpoint %d...", step)
        should_stop = False
        for listener in self._listeners:
            if listener.after_save(session, step):
                logging.info("A CheckpointSaverListener requested that training be stopped. listener: %s",
                             listener)
                should_stop = True
        return should_stop

    def _get_saver(self):
        if self._saver is not None:
            return self._saver
        if self._scaffold is not None:
            return self._scaffold.saver
        self._saver = _single_saver()
        return self._saver


class SummarySaverHook(SessionRunHook):
    """Runs the summary op (`summary_op`, or the scaffold's) every `save_steps` steps or `save_secs` seconds and
    writes its values, at the global step after the run, to `summary_writer` or the cached FileWriter of
    `output_dir`; the first run also writes a SessionLog START."""

    def __init__(self, save_steps: int | None = None, save_secs: float | None = None, output_dir=None,
                 summary_writer=None, scaffold=None, summary_op=None):
        if (scaffold is None) == (summary_op is None):
            raise ValueError("Exactly one of scaffold or summary_op must be provided.")
        self._summary_op = summary_op
        self._summary_writer = summary_writer
        self._output_dir = output_dir
        self._scaffold = scaffold
        self._timer = SecondOrStepTimer(every_secs=save_secs, every_steps=save_steps)

    def begin(self) -> None:
        if self._summary_writer is None and self._output_dir:
            self._summary_writer = FileWriterCache.get(self._output_dir)
        self._next_step = None
        self._global_step_tensor = _global_step_read("SummarySaverHook")

    def before_run(self, run_context) -> SessionRunArgs:
        self._request_summary = self._next_step is None or self._timer.should_trigger_for_step(self._next_step)
        requests = {"global_step": self._global_step_tensor}
        summary_ops = self._get_summary_op() if self._request_summary else None
        if summary_ops is not None:
            requests["summary"] = summary_ops
        return SessionRunArgs(requests)

    def after_run(self, run_context, run_values) -> None:
        if not self._summary_writer:
            return
        step = run_values.results["global_step"] + 1
        if self._next_step is None or self._request_summary:
            step = int(run_context.session.run(self._global_step_tensor))
        if self._next_step is None:
            session_log = protos.event_pb2.SessionLog
            self._summary_writer.add_session_log(session_log(status=session_log.START), step)
        if self._request_summary:
            self._timer.update_last_triggered_step(step)
            for summary in run_values.results.get("summary", ()):
                self._summary_writer.add_summary(summary, step)
        self._next_step = step + 1

    def end(self, session=None) -> None:
        if self._summary_writer:
            self._summary_writer.flush()

    def _get_summary_op(self) -> list | None:
        summary_op = self._summary_op if self._summary_op is not None else self._scaffold.summary_op
        if summary_op is None:
            return None
        return summary_op if isinstance(summary_op, list) else [summary_op]


# --- the rest ----------------------------------------------------------------------------------------------------
class GlobalStepWaiterHook(SessionRunHook):
    """Holds the first run until the global step reaches `wait_until_step` (workers waiting for the chief)."""

    def __init__(self, wait_until_step: int):
        self._wait_until_step = wait_until_step

    def begin(self) -> None:
        self._worker_is_started = False
        self._global_step_tensor = _global_step_read("_GlobalStepWaiterHook")

    def before_run(self, run_context) -> None:
        if self._worker_is_started:
            return None
        if self._wait_until_step <= 0:
            self._worker_is_started = True
            return None
        logging.info("Waiting for global step %d before starting training.", self._wait_until_step)
        last_logged_step = 0
        while True:
            current_step = training_util.global_step(run_context.session, self._global_step_tensor)
            if current_step >= self._wait_until_step:
                self._worker_is_started = True
                return None
            if current_step - last_logged_step > 1000:
                logging.info("Waiting for global step %d before starting training. Current step is %d.",
                             self._wait_until_step, current_step)
                last_logged_step = current_step
            time.sleep(0.5)


class FinalOpsHook(SessionRunHook):
    """Runs `final_ops` (with `final_ops_feed_dict`) when the session ends; their values are `final_ops_values`."""

    def __init__(self, final_ops, final_ops_feed_dict=None):
        self._final_ops = final_ops
        self._final_ops_feed_dict = final_ops_feed_dict
        self._final_ops_values = None

    @property
    def final_ops_values(self):
        return self._final_ops_values

    def end(self, session) -> None:
        if self._final_ops is None:
            return
        try:
            self._final_ops_values = session.run(self._final_ops, feed_dict=self._final_ops_feed_dict)
        except (errors.OutOfRangeError, StopIteration):
            logging.warning("An OutOfRangeError or StopIteration was raised by the final ops of FinalOpsHook: they "
                            "should not depend on an input source (e.g. run a metric's value op, not its update "
                            "op).")
            raise


class FeedFnHook(SessionRunHook):
    """Feeds the dict `feed_fn()` returns into every run."""

    def __init__(self, feed_fn: Callable[[], dict]):
        self.feed_fn = feed_fn

    def before_run(self, run_context) -> SessionRunArgs:
        return SessionRunArgs(fetches=None, feed_dict=self.feed_fn())
