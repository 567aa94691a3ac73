"""Atomic file writes: a temporary beside the target, fsynced, then renamed over it, and cleanup of the
temporaries that killed writers leave behind.

Each file is first written to a temporary `.<basename>.<pid>.<token>.tmp` beside it (`pid`: the writing process,
`token`: 16 random hex digits), fsynced, then renamed over the target, so a crash mid-save leaves the previous file
intact. A process killed mid-write leaves its temporary behind; every write into a directory first removes the
stale ones there: those of this process that no thread of it is writing now, and (on POSIX, where os.kill(pid, 0)
probes a pid) those of a process that no longer exists. Temporaries of live processes are never touched. One host
per directory is assumed: a pid means nothing on another host.

    # after `kill -9` of a process (pid 4242) saving model-7:  .model-7.index.4242.9f86d081884c7d65.tmp
    saver.save(sess, "/tmp/run/model", global_step=8)    # removes it, then writes model-8.index and its data
"""
from __future__ import annotations

import contextlib
import logging
import os
import re
import secrets
import threading
from collections.abc import Iterator
from typing import IO

_log = logging.getLogger("adplace")

_TEMPORARY_NAME = re.compile(r"^\..+\.(?P<pid>[1-9][0-9]{0,9})\.[0-9a-f]{16}\.tmp$")
_temporaries_lock = threading.Lock()
_renames_lock = threading.Lock()
_temporaries_being_written: set[str] = set()  # basenames; each holds our pid and a fresh token, so names suffice


def _is_stale_temporary(name: str) -> bool:
    """Whether `name` is an adplace temporary that nobody is writing: its process is gone, or it is ours but idle."""
    match = _TEMPORARY_NAME.match(name)
    if match is None:
        return False
    pid = int(match["pid"])
    if pid == os.getpid():
        with _temporaries_lock:
            return name not in _temporaries_being_written
    if os.name != "posix":  # os.kill(pid, 0) would signal it there, not probe it
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except (OSError, OverflowError):  # PermissionError: alive, another user's
        return False
    return False


def _remove_stale_temporaries(directory: str) -> list[str]:
    """Delete the temporaries that killed or failed writes left in `directory`; returns the paths removed.

    Runs before every atomic write into a directory (see the module docstring for what counts as stale).
    """
    try:
        names = os.listdir(directory or ".")
    except OSError:
        return []
    removed = []
    for name in names:
        if _is_stale_temporary(name):
            path = os.path.join(directory, name)
            try:
                os.remove(path)
            except FileNotFoundError:
                continue  # its writer renamed it, or another cleanup got there first
            except OSError as e:
                _log.warning("Could not remove stale checkpoint temporary %s: %s", path, e)
                continue
            _log.info("Removed stale checkpoint temporary %s", path)
            removed.append(path)
    return removed


def _create_temporary(directory: str, basename: str) -> tuple[int, str, str]:
    """A new temporary beside `basename`, registered as being written: (fd, name, path)."""
    while True:
        name = f".{basename}.{os.getpid()}.{secrets.token_hex(8)}.tmp"
        path = os.path.join(directory, name)
        with _temporaries_lock:  # registered before it exists, so no cleanup can see it unregistered
            _temporaries_being_written.add(name)
        try:
            return os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0), 0o666), name, path
        except FileExistsError:
            pass
        except BaseException:
            with _temporaries_lock:
                _temporaries_being_written.discard(name)
            raise
        with _temporaries_lock:
            _temporaries_being_written.discard(name)


def _fsync_directory(directory: str) -> None:
    """Make renames in `directory` durable where the platform allows it."""
    with contextlib.suppress(OSError):
        dir_fd = os.open(directory, os.O_RDONLY)
        try:
            os.fsync(dir_fd)
        finally:
            os.close(dir_fd)


@contextlib.contextmanager
def atomic_outputs(paths: list[str]) -> Iterator[list[IO[bytes]]]:
    """Binary files that replace `paths` only once ALL are fully written and fsynced, renamed in the order given;
    on any error before the first rename no file is left behind and every target is unchanged.

    A tensor bundle lists its data files first and its index last, so a reader never sees a new index before the
    data it points into. Stale temporaries in each directory are removed first (module docstring).
    """
    directories = sorted({os.path.dirname(p) or "." for p in paths})
    for directory in directories:
        _remove_stale_temporaries(directory)
    pending: list[tuple[IO[bytes], str, str, str]] = []  # (file, temporary name, temporary path, target)
    try:
        for path in paths:
            fd, tmp_name, tmp_path = _create_temporary(os.path.dirname(path) or ".", os.path.basename(path))
            pending.append((os.fdopen(fd, "wb"), tmp_name, tmp_path, path))
        yield [f for f, _, _, _ in pending]
        for f, _, _, _ in pending:
            f.flush()
            os.fsync(f.fileno())
            f.close()
        with _renames_lock:  # another thread's renames of the same targets never interleave with these
            for _, _, tmp_path, path in pending:
                os.replace(tmp_path, path)
    except BaseException:
        for f, _, tmp_path, _ in pending:
            with contextlib.suppress(OSError):
                f.close()
            with contextlib.suppress(OSError):
                os.remove(tmp_path)
        raise
    finally:
        with _temporaries_lock:
            _temporaries_being_written.difference_update(name for _, name, _, _ in pending)
    for directory in directories:
        _fsync_directory(directory)


@contextlib.contextmanager
def atomic_output(path: str) -> Iterator[IO[bytes]]:
    """A binary file that replaces `path` only once fully written and fsynced; on any error no file is left behind.

    Stale temporaries in the directory are removed first (module docstring).
    """
    with atomic_outputs([path]) as (f,):
        yield f
