"""Slow one-off steps say what they do (adplace.progress.status): plan compilation in Session, and Saver's save and
restore. The delay is forced to 0 and the work waits until its line has been said, so nothing here is timed."""
import logging
import threading

import numpy as np
import pytest

import adplace as tf
from adplace import progress
from adplace.lib.io import tensor_bundle
from adplace.runtime import session as session_module
from adplace.train import saver as saver_module


class _StatusLog(logging.Handler):
    """Keeps the "adplace" logger's messages; `delayed` makes a function wait for a status line before it runs."""

    def __init__(self):
        super().__init__()
        self.messages = []
        self._changed = threading.Condition()

    def emit(self, record: logging.LogRecord) -> None:
        with self._changed:
            self.messages.append(record.getMessage())
            self._changed.notify_all()

    def delayed(self, start: str, fn):
        """`fn`, made to wait until a status line "`start`... ..." has been said."""
        def wait_then_call(*args, **kwargs):
            with self._changed:
                said = self._changed.wait_for(lambda: any(m.startswith(start) and m.endswith(" ...")
                                                          for m in self.messages), timeout=30)
            assert said, f"no status line starting {start!r} in {self.messages}"
            return fn(*args, **kwargs)
        return wait_then_call

    def about(self, start: str) -> list[str]:
        return [m for m in self.messages if m.startswith(start)]


@pytest.fixture
def status_log(monkeypatch, caplog):
    """Progress off (status lines go to the log), and every status() says its line at once."""
    monkeypatch.setenv("ADPLACE_PROGRESS", "0")
    monkeypatch.setattr(progress, "STATUS_DELAY_S", 0)
    caplog.set_level(logging.INFO, logger="adplace")
    handler = _StatusLog()
    logging.getLogger("adplace").addHandler(handler)
    yield handler
    logging.getLogger("adplace").removeHandler(handler)


@pytest.fixture
def status_calls(monkeypatch):
    """(message, delay_s) of every status() the session module starts."""
    calls = []

    def recording_status(message, delay_s=None):
        calls.append((message, delay_s))
        return progress.status(message, delay_s)

    monkeypatch.setattr(session_module, "status", recording_status)
    return calls


def _three_ops():
    return tf.add(tf.constant(1.0), tf.constant(2.0))


# --- Session: plan compilation ----------------------------------------------------------------------------------------
def test_a_slow_plan_compilation_says_so_with_the_op_count(status_log, monkeypatch):
    monkeypatch.setattr(session_module, "compile_plan",
                        status_log.delayed("placing and compiling", session_module.compile_plan))
    with tf.Session() as sess:
        assert sess.run(_three_ops()) == 3.0
    said = status_log.about("placing and compiling")
    assert said[0] == "placing and compiling a plan for a graph of 3 ops ..."
    assert said[1].startswith("placing and compiling a plan for a graph of 3 ops: done in ")
    assert len(said) == 2


def test_compilation_uses_the_default_delay_and_a_cached_run_starts_no_status(status_calls):
    c = _three_ops()
    with tf.Session() as sess:
        sess.run(c)
        sess.run(c)
        sess.make_callable(c)()
    assert status_calls == [("placing and compiling a plan for a graph of 3 ops", None)]  # the callable shares the plan


def test_a_compilation_faster_than_the_delay_says_nothing(monkeypatch, capsys, caplog):
    monkeypatch.setenv("ADPLACE_PROGRESS", "1")
    monkeypatch.setattr(progress, "STATUS_DELAY_S", 3600)
    caplog.set_level(logging.INFO, logger="adplace")
    with tf.Session() as sess:
        sess.run(_three_ops())
    assert capsys.readouterr().err == "" and caplog.messages == []


# --- Saver -----------------------------------------------------------------------------------------------------------
def _two_variables():
    return [tf.Variable(np.zeros((2, 3), np.float32), name="w"), tf.Variable(np.ones(2), name="b")]


def test_a_slow_save_says_how_many_variables_how_many_bytes_and_where(status_log, monkeypatch, tmp_path):
    monkeypatch.setattr(tensor_bundle.BundleWriter, "finish",
                        status_log.delayed("saving", tensor_bundle.BundleWriter.finish))
    _two_variables()
    saver = tf.train.Saver()
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        prefix = saver.save(sess, str(tmp_path / "model"), global_step=3)
    said = status_log.about("saving")
    target = f"saving 2 variables (40 bytes) to {prefix}"  # 6 float32 + 2 float64
    assert said[0] == f"{target} ..." and said[1].startswith(f"{target}: done in ")
    assert len(said) == 2


def test_a_slow_restore_says_how_many_variables_and_from_where(status_log, monkeypatch, tmp_path):
    w, b = _two_variables()
    saver = tf.train.Saver()
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        prefix = saver.save(sess, str(tmp_path / "model"))
        sess.run(w.assign(np.full((2, 3), 5.0, np.float32)))
        monkeypatch.setattr(saver_module, "open_checkpoint",
                            status_log.delayed("restoring", saver_module.open_checkpoint))
        saver.restore(sess, prefix)
        assert not sess.run(w).any()
    assert f"Restoring parameters from {prefix}" in status_log.messages  # TF's own line, said first
    said = status_log.about("restoring")
    assert said[0] == f"restoring 2 variables from {prefix} ..."
    assert said[1].startswith(f"restoring 2 variables from {prefix}: done in ")
    assert status_log.messages.index(f"Restoring parameters from {prefix}") < status_log.messages.index(said[0])


def test_a_failed_restore_still_says_done(status_log, monkeypatch, tmp_path):
    w, _ = _two_variables()
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        prefix = tf.train.Saver([w]).save(sess, str(tmp_path / "model"))
        monkeypatch.setattr(saver_module, "open_checkpoint",
                            status_log.delayed("restoring", saver_module.open_checkpoint))
        with pytest.raises(tf.errors.NotFoundError):
            tf.train.Saver().restore(sess, prefix)  # "b" is not in the checkpoint
    assert status_log.about(f"restoring 2 variables from {prefix}: done in ")


def test_a_mistyped_progress_setting_does_not_fail_a_session_run(monkeypatch, caplog):
    """Bars raise for ADPLACE_PROGRESS=maybe; the status of a plan compilation falls back to the log instead."""
    monkeypatch.setenv("ADPLACE_PROGRESS", "maybe")
    monkeypatch.setattr(progress, "STATUS_DELAY_S", 0.0)
    with pytest.raises(ValueError, match="ADPLACE_PROGRESS"):
        progress.progress(range(3))
    with caplog.at_level(logging.INFO, logger="adplace"), tf.Session() as sess:
        assert sess.run(tf.constant(2.0) * 3.0) == 6.0
