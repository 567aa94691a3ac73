"""Progress for long work: a bar with the loss for training loops, and a note for slow one-off steps.

    for step in (bar := progress(range(1000), desc="fit")):
        _, loss = sess.run([train_op, loss_t])
        bar.set_postfix(loss=f"{loss:.4g}")

    with status("placing and planning 120000 ops"):   # says so on stderr only if it takes over a second
        ...

Bars are tqdm's (`pip install "adplace[progress]"`). They show when stderr is a terminal or the code runs in a
Jupyter kernel, and never when ADPLACE_PROGRESS=0 (ADPLACE_PROGRESS=1 forces them on). Without tqdm, loops run
without a bar.
"""
from __future__ import annotations

import logging
import os
import sys
import threading
import time
from contextlib import contextmanager
from typing import Any, Iterable, Iterator

_log = logging.getLogger("adplace")

STATUS_DELAY_S = 1.0  # a step shorter than this says nothing


def enabled(stream=None) -> bool:
    """Whether progress shows: ADPLACE_PROGRESS=0/1 decides if set, else a TTY `stream` (stderr) or a Jupyter kernel.

    Raises:
      ValueError: if ADPLACE_PROGRESS is set to something other than 0/1/false/true/off/on/no/yes.
    """
    raw = os.environ.get("ADPLACE_PROGRESS", "")
    setting = raw.strip().lower()
    if setting in ("0", "false", "off", "no"):
        return False
    if setting in ("1", "true", "on", "yes"):
        return True
    if setting:
        raise ValueError(f"ADPLACE_PROGRESS={raw!r}: expected 0 or 1 (or false/true, off/on, no/yes)")
    return _in_jupyter() or _is_tty(sys.stderr if stream is None else stream)


def _is_tty(stream) -> bool:
    """stream.isatty(), False for objects without one and for closed streams (whose isatty raises ValueError)."""
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError, OSError):
        return False


def _in_jupyter() -> bool:
    """True inside an IPython kernel (Jupyter, nbclient), whose stdout/stderr are not TTYs but render `\\r`."""
    shell = sys.modules.get("IPython")
    get_ipython = getattr(shell, "get_ipython", None)
    kernel = get_ipython() if get_ipython is not None else None
    return kernel is not None and "IPKernelApp" in getattr(kernel, "config", {})


class _NoBar:
    """What progress() returns when no bar shows: iterates, and accepts tqdm's calls as no-ops."""

    disable = True  # as on a disabled tqdm bar: callers print their own progress lines when no bar shows

    def __init__(self, iterable: Iterable):
        self._iterable = iterable

    def __iter__(self) -> Iterator:
        return iter(self._iterable)

    def set_postfix(self, *args: Any, **kwargs: Any) -> None:
        """Ignored: no bar."""

    def set_description(self, *args: Any, **kwargs: Any) -> None:
        """Ignored: no bar."""

    def update(self, n: int = 1) -> None:
        """Ignored: no bar."""

    def close(self) -> None:
        """Ignored: no bar."""

    def __enter__(self) -> _NoBar:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


def progress(iterable: Iterable, desc: str = "", total: int | None = None, unit: str = "step"):
    """`iterable` wrapped in a tqdm bar on stderr when progress is enabled (see enabled()), else passed through.

    The result iterates like `iterable` and has tqdm's set_postfix/set_description/update/close and `disable`
    either way, so a training loop calls `bar.set_postfix(loss=...)` unconditionally and checks `bar.disable` to
    decide whether to print progress lines of its own.
    """
    if not enabled():
        return _NoBar(iterable)
    try:
        from tqdm import tqdm
    except ImportError:
        return _NoBar(iterable)
    return tqdm(iterable, desc=desc, total=total, unit=unit, file=sys.stderr, dynamic_ncols=True, leave=True)


@contextmanager
def status(message: str, delay_s: float | None = None) -> Iterator[None]:
    """Say `message` if the block is still running after `delay_s` (default STATUS_DELAY_S), then how long it took.

    With progress enabled the words go to stderr ("adplace: <message> ..." then "done in 2.3 s"), above any tqdm
    bar; otherwise to the "adplace" logger at INFO. A block faster than the delay prints nothing and costs one timer
    thread. The closing line is said even when the block raises. A bad ADPLACE_PROGRESS means the logger here
    (progress() raises for it).
    """
    delay_s = STATUS_DELAY_S if delay_s is None else delay_s
    try:
        to_stderr = enabled()
    except ValueError:  # a mistyped ADPLACE_PROGRESS must not fail a session run: bars report it, this logs
        to_stderr = False
    lock = threading.Lock()  # the opening line is said before the closing one, or not at all
    state = {"said": False, "finished": False}

    def say() -> None:
        with lock:
            if not state["finished"]:
                state["said"] = True
                _say(to_stderr, f"{message} ...")

    start = time.perf_counter()
    timer = threading.Timer(delay_s, say)
    timer.daemon = True
    timer.start()
    try:
        yield
    finally:
        timer.cancel()
        with lock:
            state["finished"] = True
        if state["said"]:
            _say(to_stderr, f"{message}: done in {time.perf_counter() - start:.1f} s")


def _say(to_stderr: bool, text: str) -> None:
    """One status line: on stderr through tqdm.write when tqdm is loaded (so an open bar is redrawn below it), else
    print; or to the "adplace" logger at INFO."""
    if not to_stderr:
        _log.info("%s", text)
        return
    tqdm_module = sys.modules.get("tqdm")
    if tqdm_module is not None:
        tqdm_module.tqdm.write(f"adplace: {text}", file=sys.stderr)
    else:
        print(f"adplace: {text}", file=sys.stderr, flush=True)
