"""Tests for adplace/progress.py: when bars show, the passthrough without one, and status() notes on slow steps.

status() tests never time anything: a block that must outlast the delay waits until the opening line has been said.
"""
import io
import logging
import sys
import threading
import types
from contextlib import redirect_stderr

import pytest
import tqdm

from adplace import progress


class _Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


class _Listener(io.StringIO, logging.Handler):
    """A stderr stand-in and a log handler at once: keeps what it is given, and sets `said` at status()'s opening
    line ("<message> ...")."""

    def __init__(self):
        io.StringIO.__init__(self)
        logging.Handler.__init__(self)
        self.said = threading.Event()
        self.lines = []

    def write(self, text: str) -> int:
        if text.endswith(" ..."):
            self.said.set()
        return super().write(text)

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(record.getMessage())
        if record.getMessage().endswith(" ..."):
            self.said.set()

    def wait(self) -> None:
        assert self.said.wait(30), "status() never said its message"


@pytest.fixture
def to_stderr(monkeypatch):
    """Progress on, and a _Listener to stand in for stderr: tests install it with redirect_stderr, since pytest puts
    its own sys.stderr back between a fixture's setup and the test."""
    monkeypatch.setenv("ADPLACE_PROGRESS", "1")
    return _Listener()


@pytest.fixture
def to_log(monkeypatch, caplog):
    """Progress off, a _Listener on the "adplace" logger at INFO."""
    monkeypatch.setenv("ADPLACE_PROGRESS", "0")
    caplog.set_level(logging.INFO, logger="adplace")
    listener = _Listener()
    logger = logging.getLogger("adplace")
    logger.addHandler(listener)
    yield listener
    logger.removeHandler(listener)


@pytest.fixture
def no_jupyter(monkeypatch):
    monkeypatch.delitem(sys.modules, "IPython", raising=False)


# --- enabled() -------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("value", ["0", "false", "Off", " no "])
def test_progress_env_off_wins_over_a_tty(monkeypatch, value):
    monkeypatch.setenv("ADPLACE_PROGRESS", value)
    assert not progress.enabled(_Tty())


@pytest.mark.parametrize("value", ["1", "true", "ON", "yes"])
def test_progress_env_on_wins_over_a_pipe(monkeypatch, value):
    monkeypatch.setenv("ADPLACE_PROGRESS", value)
    assert progress.enabled(io.StringIO())


def test_garbage_progress_env_is_a_clear_error(monkeypatch):
    monkeypatch.setenv("ADPLACE_PROGRESS", "Maybe")
    with pytest.raises(ValueError, match=r"ADPLACE_PROGRESS='Maybe': expected 0 or 1"):
        progress.enabled()


def test_without_the_env_a_tty_shows_progress_and_a_pipe_does_not(monkeypatch, no_jupyter):
    monkeypatch.delenv("ADPLACE_PROGRESS", raising=False)
    assert progress.enabled(_Tty())
    assert not progress.enabled(io.StringIO())
    assert not progress.enabled(object())  # no isatty at all


def test_a_closed_stream_is_not_a_tty(monkeypatch, no_jupyter):
    class ClosedTty(_Tty):
        def isatty(self) -> bool:
            raise ValueError("I/O operation on closed file")

    monkeypatch.delenv("ADPLACE_PROGRESS", raising=False)
    assert not progress.enabled(ClosedTty())


def test_a_jupyter_kernel_shows_progress_but_a_terminal_ipython_does_not(monkeypatch):
    monkeypatch.delenv("ADPLACE_PROGRESS", raising=False)
    for config, expected in (({"IPKernelApp": {}}, True), ({"TerminalInteractiveShell": {}}, False)):
        shell = types.SimpleNamespace(config=config)
        monkeypatch.setitem(sys.modules, "IPython", types.SimpleNamespace(get_ipython=lambda shell=shell: shell))
        assert progress.enabled(io.StringIO()) is expected


def test_enabled_reads_stderr_by_default(monkeypatch, no_jupyter):
    monkeypatch.delenv("ADPLACE_PROGRESS", raising=False)
    monkeypatch.setattr(sys, "stderr", _Tty())
    assert progress.enabled()
    monkeypatch.setattr(sys, "stderr", io.StringIO())
    assert not progress.enabled()


# --- progress() ------------------------------------------------------------------------------------------------------
def test_progress_off_is_a_passthrough_with_tqdms_methods(monkeypatch, capsys):
    monkeypatch.setenv("ADPLACE_PROGRESS", "0")
    with progress.progress(range(5), desc="fit") as bar:
        seen = []
        for i in bar:
            bar.set_postfix(loss=0.5)
            bar.set_description("fit")
            bar.update()
            seen.append(i)
    assert not isinstance(bar, tqdm.tqdm) and bar.disable
    assert seen == [0, 1, 2, 3, 4]
    assert capsys.readouterr().err == ""


def test_progress_on_is_a_tqdm_bar_on_stderr_with_the_postfix(monkeypatch, capsys):
    monkeypatch.setenv("ADPLACE_PROGRESS", "1")
    bar = progress.progress(range(5), desc="fit", unit="step")
    assert isinstance(bar, tqdm.tqdm) and not bar.disable
    seen = []
    for i in bar:
        bar.set_postfix(loss=f"{0.5 / (i + 1):.3g}")
        seen.append(i)
    bar.close()
    assert seen == [0, 1, 2, 3, 4]
    err = capsys.readouterr().err
    assert "fit: 100%" in err and "5/5" in err and "loss=0.1" in err


def test_progress_without_tqdm_installed_is_a_passthrough(monkeypatch):
    monkeypatch.setenv("ADPLACE_PROGRESS", "1")
    monkeypatch.setitem(sys.modules, "tqdm", None)  # `from tqdm import tqdm` now raises ImportError
    bar = progress.progress(iter("abc"))
    bar.set_postfix(loss=1.0)
    assert bar.disable and list(bar) == ["a", "b", "c"]


# --- status() --------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("where", ["to_stderr", "to_log"])
def test_status_says_nothing_for_a_block_faster_than_the_delay(request, where):
    listener = request.getfixturevalue(where)
    with redirect_stderr(listener), progress.status("planning", delay_s=3600):
        pass
    assert listener.getvalue() == "" and listener.lines == []


@pytest.mark.parametrize("tqdm_loaded", [True, False])
def test_status_on_stderr_says_the_message_then_done(to_stderr, monkeypatch, tqdm_loaded):
    if not tqdm_loaded:
        monkeypatch.setitem(sys.modules, "tqdm", None)
    with redirect_stderr(to_stderr), progress.status("planning 7 ops", delay_s=0.01):
        to_stderr.wait()
    lines = to_stderr.getvalue().splitlines()
    assert lines[0] == "adplace: planning 7 ops ..."
    assert lines[1].startswith("adplace: planning 7 ops: done in ") and lines[1].endswith(" s")
    assert len(lines) == 2


def test_status_logs_at_info_when_progress_is_off(to_log, caplog):
    with progress.status("planning 7 ops", delay_s=0.01):
        to_log.wait()
    assert [(r.name, r.levelno) for r in caplog.records] == [("adplace", logging.INFO)] * 2
    assert caplog.messages[0] == "planning 7 ops ..."
    assert caplog.messages[1].startswith("planning 7 ops: done in ")


def test_status_delay_defaults_to_the_module_constant(to_stderr, monkeypatch):
    assert progress.STATUS_DELAY_S == 1.0
    monkeypatch.setattr(progress, "STATUS_DELAY_S", 0)
    with redirect_stderr(to_stderr), progress.status("planning"):
        to_stderr.wait()
    assert "adplace: planning: done in" in to_stderr.getvalue()


def test_status_says_done_and_stops_its_timer_when_the_block_raises(to_stderr, monkeypatch):
    timers = []

    class RecordingTimer(threading.Timer):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            timers.append(self)

    monkeypatch.setattr(threading, "Timer", RecordingTimer)
    with redirect_stderr(to_stderr), pytest.raises(KeyError, match="boom"):
        with progress.status("slow and failing", delay_s=0.01):
            to_stderr.wait()
            raise KeyError("boom")
    assert "adplace: slow and failing: done in" in to_stderr.getvalue()
    with redirect_stderr(to_stderr), pytest.raises(KeyError):
        with progress.status("fast and failing", delay_s=3600):
            raise KeyError("boom")
    assert timers[1].finished.is_set()  # cancelled: it will never say "fast and failing"
    timers[1].join(30)
    assert not timers[1].is_alive() and "fast and failing" not in to_stderr.getvalue()


def test_status_lines_go_above_an_open_bar(to_stderr):
    with redirect_stderr(to_stderr):
        bar = progress.progress(range(3), desc="fit")
        with progress.status("checkpointing", delay_s=0.01):
            to_stderr.wait()
        bar.close()
    text = to_stderr.getvalue()
    assert "adplace: checkpointing ...\n" in text and "adplace: checkpointing: done in" in text
