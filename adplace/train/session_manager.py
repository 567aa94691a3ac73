"""tf.train.SessionManager: makes a Session whose model is ready, by restoring the latest checkpoint of a directory
or running the init op, then the local init op (TF 1.15's session_manager, used by MonitoredSession and
Supervisor).

"Ready" is what `ready_op` says: it lists the names of uninitialized variables (an empty list: ready).
"""
from __future__ import annotations

import time

import numpy as np

from adplace import errors
from adplace import tf_logging as logging
from adplace.framework.graph import get_default_graph
from adplace.train.checkpoint_management import get_checkpoint_state


def _new_session(master: str, graph, config):
    """A tf.Session: the one place adplace.train reaches the runtime (allow-listed in tests/test_layering.py), since a
    session manager makes the sessions it manages."""
    from adplace.runtime.session import Session

    return Session(master, graph=graph, config=config)


def _ready(op, sess, what: str) -> tuple[bool, str | None]:
    """(True, None) when `op` is None or lists nothing, else (False, why)."""
    if op is None:
        return True, None
    try:
        value = sess.run(op)
    except errors.FailedPreconditionError as e:
        if "uninitialized" not in str(e):
            logging.warning("%s : error [%s]", what, e)
            raise
        return False, str(e)
    value = None if value is None else np.asarray(value)
    if value is None or value.dtype == np.int32 or value.size == 0:
        return True, None
    names = ", ".join(v.decode("utf-8") if isinstance(v, bytes) else str(v) for v in value.ravel())
    return False, "Variables not initialized: " + names


class SessionManager:
    """Creates sessions for a graph and brings their model to readiness (see the module docstring)."""

    def __init__(self, local_init_op=None, ready_op=None, ready_for_local_init_op=None, graph=None,
                 recovery_wait_secs: float = 30, local_init_run_options=None, local_init_feed_dict=None):
        if ready_for_local_init_op is not None and local_init_op is None:
            raise ValueError("If you pass a ready_for_local_init_op you must also pass a local_init_op , "
                             f"ready_for_local_init_op [{ready_for_local_init_op}]")
        self._local_init_op = local_init_op
        self._ready_op = ready_op
        self._ready_for_local_init_op = ready_for_local_init_op
        self._graph = graph if graph is not None else get_default_graph()
        self._recovery_wait_secs = recovery_wait_secs
        self._local_init_run_options = local_init_run_options
        self._local_init_feed_dict = local_init_feed_dict

    def _restore_checkpoint(self, master: str, saver=None, checkpoint_dir: str | None = None,
                            checkpoint_filename_with_path: str | None = None, wait_for_checkpoint: bool = False,
                            max_wait_secs: float = 7200, config=None) -> tuple:
        """A new session, with the checkpoint restored when there is one; (session, restored?)."""
        if checkpoint_dir and checkpoint_filename_with_path:
            raise ValueError("Can not provide both checkpoint_dir and checkpoint_filename_with_path.")
        sess = _new_session(master, self._graph, config)
        if not saver or not (checkpoint_dir or checkpoint_filename_with_path):
            return sess, False
        if checkpoint_filename_with_path:
            saver.restore(sess, checkpoint_filename_with_path)
            return sess, True
        waited = 0.0
        ckpt = get_checkpoint_state(checkpoint_dir)
        while not ckpt or not ckpt.model_checkpoint_path:
            if not (wait_for_checkpoint and waited < max_wait_secs):
                return sess, False
            logging.info("Waiting for checkpoint to be available.")
            time.sleep(self._recovery_wait_secs)
            waited += self._recovery_wait_secs
            ckpt = get_checkpoint_state(checkpoint_dir)
        saver.restore(sess, ckpt.model_checkpoint_path)
        saver.recover_last_checkpoints(list(ckpt.all_model_checkpoint_paths))
        return sess, True

    def prepare_session(self, master: str, init_op=None, saver=None, checkpoint_dir: str | None = None,
                        checkpoint_filename_with_path: str | None = None, wait_for_checkpoint: bool = False,
                        max_wait_secs: float = 7200, config=None, init_feed_dict=None, init_fn=None):
        """A session with the model ready: restored from the checkpoint, else initialized by init_op / init_fn.

        Raises:
          RuntimeError: nothing could initialize the model, or the model is still not ready afterwards.
        """
        sess, restored = self._restore_checkpoint(master, saver, checkpoint_dir, checkpoint_filename_with_path,
                                                  wait_for_checkpoint, max_wait_secs, config)
        if not restored:
            if init_op is None and not init_fn and self._local_init_op is None:
                raise RuntimeError("Model is not initialized and no init_op or init_fn or local_init_op was given")
            if init_op is not None:
                sess.run(init_op, feed_dict=init_feed_dict)
            if init_fn:
                init_fn(sess)
        ok, msg = self._try_run_local_init_op(sess)
        if not ok:
            raise RuntimeError(f"Init operations did not make model ready for local_init.  Init op: "
                               f"{_name(init_op)}, init fn: {init_fn}, error: {msg}")
        ok, msg = self._model_ready(sess)
        if not ok:
            raise RuntimeError(f"Init operations did not make model ready.  Init op: {_name(init_op)}, init fn: "
                               f"{init_fn}, local_init_op: {self._local_init_op}, error: {msg}")
        return sess

    def recover_session(self, master: str, saver=None, checkpoint_dir: str | None = None,
                        checkpoint_filename_with_path: str | None = None, wait_for_checkpoint: bool = False,
                        max_wait_secs: float = 7200, config=None) -> tuple:
        """A session restored from the checkpoint if possible; (session, whether the model is ready)."""
        sess, restored = self._restore_checkpoint(master, saver, checkpoint_dir, checkpoint_filename_with_path,
                                                  wait_for_checkpoint, max_wait_secs, config)
        local_ok, msg = self._try_run_local_init_op(sess)
        if not restored:
            return sess, False
        source = checkpoint_dir or checkpoint_filename_with_path
        if not local_ok:
            logging.info("Restoring model from %s did not make model ready for local init: %s", source, msg)
            return sess, False
        ready, msg = self._model_ready(sess)
        if not ready:
            logging.info("Restoring model from %s did not make model ready: %s", source, msg)
            return sess, False
        logging.info("Restored model from %s", source)
        return sess, True

    def wait_for_session(self, master: str, config=None, max_wait_secs: float | None = float("inf")):
        """A session once another process (the chief) has made the model ready.

        Raises:
          DeadlineExceededError: the model was not ready within `max_wait_secs`.
        """
        deadline = time.time() + (float("inf") if max_wait_secs is None else max_wait_secs)
        while True:
            sess = _new_session(master, self._graph, config)
            local_ok, not_ready_local = self._try_run_local_init_op(sess)
            not_ready = None
            if local_ok:
                ready, not_ready = self._model_ready(sess)
                if ready:
                    return sess
            try:
                sess.close()
            except Exception:  # noqa: BLE001 - a failed close must not hide the wait
                pass
            if deadline - time.time() - self._recovery_wait_secs < 0:
                raise errors.DeadlineExceededError(None, None,
                                                   f"Session was not ready after waiting {max_wait_secs} secs.")
            logging.info("Waiting for model to be ready.  Ready_for_local_init_op:  %s, ready: %s", not_ready_local,
                         not_ready)
            time.sleep(self._recovery_wait_secs)

    def _model_ready(self, sess) -> tuple[bool, str | None]:
        return _ready(self._ready_op, sess, "Model not ready")

    def _try_run_local_init_op(self, sess) -> tuple[bool, str | None]:
        if self._local_init_op is None:
            return True, None
        ok, msg = _ready(self._ready_for_local_init_op, sess, "Model not ready for local init")
        if not ok:
            return False, msg
        logging.info("Running local_init_op.")
        sess.run(self._local_init_op, feed_dict=self._local_init_feed_dict, options=self._local_init_run_options)
        logging.info("Done running local_init_op.")
        return True, None


def _name(op) -> str | None:
    return getattr(op, "name", op)
