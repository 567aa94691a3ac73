"""tf.logging: TF1's logging functions over Python's `logging`, on the "adplace" logger adplace itself logs to.

TF1 scripts start with `tf.logging.set_verbosity(tf.logging.INFO)` and log with `tf.logging.info("step %d", i)`;
the levels are Python's (DEBUG=10 ... FATAL=50), so these calls mix with ordinary `logging` configuration. As in
TF, the logger gets a stderr handler of its own the first time it is used, unless the root logger has one.
"""
from __future__ import annotations

import logging as _logging
import sys
import threading

DEBUG, INFO, WARN, ERROR, FATAL = _logging.DEBUG, _logging.INFO, _logging.WARN, _logging.ERROR, _logging.FATAL
WARNING = WARN

_lock = threading.Lock()
_counts: dict = {}  # call site -> calls so far, for log_every_n / log_first_n


def get_logger() -> _logging.Logger:
    """The logger behind tf.logging ("adplace"), with a stderr handler when nothing else would print."""
    logger = _logging.getLogger("adplace")
    if not logger.handlers and not _logging.getLogger().handlers:
        with _lock:
            if not logger.handlers:
                handler = _logging.StreamHandler(sys.stderr)
                handler.setFormatter(_logging.Formatter("%(levelname)s:%(name)s:%(message)s"))
                logger.addHandler(handler)
    return logger


def log(level: int, msg, *args, **kwargs) -> None:
    get_logger().log(level, msg, *args, **kwargs)


def debug(msg, *args, **kwargs) -> None:
    get_logger().debug(msg, *args, **kwargs)


def info(msg, *args, **kwargs) -> None:
    get_logger().info(msg, *args, **kwargs)


def warning(msg, *args, **kwargs) -> None:
    get_logger().warning(msg, *args, **kwargs)


warn = warning


def error(msg, *args, **kwargs) -> None:
    get_logger().error(msg, *args, **kwargs)


def fatal(msg, *args, **kwargs) -> None:
    """Log at FATAL (CRITICAL); like TF's Python tf.logging.fatal, this does not exit."""
    get_logger().critical(msg, *args, **kwargs)


def vlog(level: int, msg, *args, **kwargs) -> None:
    get_logger().log(level, msg, *args, **kwargs)


def log_if(level: int, msg, condition, *args) -> None:
    """Log `msg` at `level` only when `condition` is true."""
    if condition:
        log(level, msg, *args)


def _calls_before() -> int:
    """How many times the caller's caller's line called before (counted under a lock: threads share lines)."""
    frame = sys._getframe(2)
    site = frame.f_code.co_filename, frame.f_lineno
    with _lock:
        count = _counts.get(site, 0)
        _counts[site] = count + 1
    return count


def log_every_n(level: int, msg, n: int, *args) -> None:
    """Log on the 1st, (n+1)th, (2n+1)th ... call from the same line of code."""
    log_if(level, msg, _calls_before() % n == 0, *args)


def log_first_n(level: int, msg, n: int, *args) -> None:
    """Log only the first `n` calls from the same line of code."""
    log_if(level, msg, _calls_before() < n, *args)


def get_verbosity() -> int:
    return get_logger().getEffectiveLevel()


def set_verbosity(v: int) -> None:
    """Show messages at level `v` and above."""
    get_logger().setLevel(v)


def flush() -> None:
    for handler in get_logger().handlers:
        handler.flush()


def TaskLevelStatusMessage(msg) -> None:  # noqa: N802 - TF's public name
    error(msg)
