"""tf.gfile and tf.io.gfile on the local file system: plain paths and `file://` URLs, with TF's errors.

    with GFile("file:///tmp/log.txt", "w") as f:    # opened at the first write, as TF's GFile
        f.write("step 1\\n")
    exists("/tmp/log.txt"); glob("/tmp/*.txt"); walk("/tmp")

As in TF: a read-mode file is opened at the first read (a missing file raises NotFoundError there), a write-mode file
at the first write (`GFile(p, "w")` alone creates nothing); "w", "w+" and "r+" truncate, "a", "a+" append; text mode
reads decode UTF-8 and `read(n)` counts bytes; writes take str or bytes in either mode. OS errors become TF's classes
(NotFoundError, AlreadyExistsError, PermissionDeniedError, FailedPreconditionError) with "<path>; <reason>" messages.
Other file systems (gs://, s3://, hdfs://) raise UnimplementedError.
"""
from __future__ import annotations

import contextlib
import dataclasses
import errno
import fnmatch
import os
import posixpath
import re
import shutil
import stat as stat_module
from typing import Iterator

from adplace.framework import errors
from adplace.lib.io.atomic_file import atomic_output

_FILE_SCHEME = "file://"
_MODES = ("r", "w", "a", "r+", "w+", "a+")
_ERRORS_BY_ERRNO = {errno.ENOENT: errors.NotFoundError, errno.EEXIST: errors.AlreadyExistsError,
                    errno.EACCES: errors.PermissionDeniedError, errno.EPERM: errors.PermissionDeniedError,
                    errno.EROFS: errors.PermissionDeniedError, errno.EISDIR: errors.FailedPreconditionError,
                    errno.ENOTDIR: errors.FailedPreconditionError, errno.ENOTEMPTY: errors.FailedPreconditionError,
                    errno.ENOSPC: errors.ResourceExhaustedError}


# --- paths and errors ---------------------------------------------------------------------------------------------
def _text(path) -> str:
    path = os.fspath(path)
    return path.decode() if isinstance(path, bytes) else path


def _local(path) -> str:
    """The local path of `path` (a str, bytes or os.PathLike; `file://` URLs allowed)."""
    path = _text(path)
    if path.startswith(_FILE_SCHEME):
        return path[len(_FILE_SCHEME):]
    scheme = path.split("://", 1)[0] if "://" in path[1:] else ""
    if scheme and "/" not in scheme:
        raise errors.UnimplementedError(None, None, f"File system scheme '{scheme}' not implemented (file: '{path}')")
    return path


local_path = _local  # the public name, for modules that take TF's paths (the Saver's save_path)


def os_error(exc: OSError, path) -> errors.OpError:
    """TF's error for an OS error on `path`: NotFoundError for ENOENT, PermissionDeniedError for EACCES, ..."""
    cls = _ERRORS_BY_ERRNO.get(exc.errno, errors.UnknownError)
    return cls(None, None, f"{_text(path)}; {exc.strerror or exc}")


@contextlib.contextmanager
def _reporting(path):
    try:
        yield
    except OSError as e:
        raise os_error(e, path) from None


# --- files --------------------------------------------------------------------------------------------------------
class GFile:
    """A file of the local file system with TF's GFile interface (tf.gfile.GFile, tf.gfile.Open, tf.io.gfile.GFile).

    Iterating yields lines; `read(n)` reads n bytes (decoded in text mode); `seek(offset, whence)` and `tell()` work
    in reading modes; `size()` is the file's length on disk. Not locked: share one between threads with care.
    """

    def __init__(self, name, mode: str = "r"):
        self._name = name
        self._mode = mode
        self._binary = "b" in mode
        plain = mode.replace("b", "")
        if plain not in _MODES:
            raise errors.InvalidArgumentError(None, None, "mode is not 'r' or 'w' or 'a' or 'r+' or 'w+' or 'a+'")
        self._path = _local(name)
        self._readable = plain in ("r", "r+", "a+", "w+")
        self._writable = plain in ("a", "w", "r+", "a+", "w+")
        self._append = "a" in plain
        self._reader = None
        self._writer = None

    name = property(lambda self: self._name, doc="The name the file was opened with.")
    mode = property(lambda self: self._mode, doc="The mode the file was opened with.")

    def _read_handle(self):
        if self._reader is None:
            if not self._readable:
                raise errors.PermissionDeniedError(None, None, "File isn't open for reading")
            with _reporting(self._name):
                if os.path.isdir(self._path):
                    raise IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR))
                self._reader = open(self._path, "rb")  # noqa: SIM115 - closed by close()
        return self._reader

    def _write_handle(self):
        if self._writer is None:
            if not self._writable:
                raise errors.PermissionDeniedError(None, None, "File isn't open for writing")
            with _reporting(self._name):
                self._writer = open(self._path, "ab" if self._append else "wb")  # noqa: SIM115
        return self._writer

    def _value(self, data: bytes):
        return data if self._binary else data.decode("utf-8")

    def size(self) -> int:
        """The length of the file on disk, in bytes."""
        return stat(self._name).length

    def write(self, file_content) -> None:
        """Append `file_content` (str, encoded as UTF-8, or bytes) to the file."""
        data = file_content.encode("utf-8") if isinstance(file_content, str) else bytes(file_content)
        with _reporting(self._name):
            self._write_handle().write(data)

    def read(self, n: int = -1):
        """The next `n` bytes (all the rest when n is -1), as str in text mode."""
        handle = self._read_handle()
        with _reporting(self._name):
            return self._value(handle.read() if n is None or n < 0 else handle.read(n))

    def readline(self):
        """The next line with its "\\n"; empty at the end of the file."""
        handle = self._read_handle()
        with _reporting(self._name):
            return self._value(handle.readline())

    def readlines(self) -> list:
        return list(iter(self.readline, self._value(b"")))

    def seek(self, offset: int | None = None, whence: int = 0, position: int | None = None) -> None:
        """Move the read position: `whence` 0 from the start, 1 from the current position, 2 from the end."""
        handle = self._read_handle()
        if offset is None and position is None:
            raise TypeError("seek(): offset argument required")
        if offset is not None and position is not None:
            raise TypeError("seek(): offset and position may not be set simultaneously.")
        offset = position if offset is None else offset
        if whence == 1:
            offset += handle.tell()
        elif whence == 2:
            offset += self.size()
        elif whence != 0:
            raise errors.InvalidArgumentError(
                None, None, f"Invalid whence argument: {whence}. Valid values are 0, 1, or 2.")
        if offset < 0:
            raise errors.InvalidArgumentError(None, None, f"Seeking to a negative position: {offset}")
        handle.seek(offset)

    def tell(self) -> int:
        """The read position in reading modes, else the number of bytes written (the file's end when appending)."""
        handle = self._read_handle() if self._readable else self._write_handle()
        return handle.tell()

    def seekable(self) -> bool:
        return True

    def flush(self) -> None:
        """Hand what was written to the operating system."""
        if self._writer is not None:
            with _reporting(self._name):
                self._writer.flush()

    def close(self) -> None:
        """Close the file (writes are flushed); a closed GFile reopens at its next read or write."""
        reader, writer, self._reader, self._writer = self._reader, self._writer, None, None
        if reader is not None:
            reader.close()
        if writer is not None:
            with _reporting(self._name):
                writer.close()

    def __enter__(self) -> GFile:
        return self

    def __exit__(self, *exc_info) -> None:
        self.close()

    def __iter__(self) -> Iterator:
        return self

    def __next__(self):
        line = self.readline()
        if not line:
            raise StopIteration
        return line

    next = __next__


class FastGFile(GFile):
    """TF1's deprecated FastGFile: the same as GFile."""


# --- file system functions ----------------------------------------------------------------------------------------
@dataclasses.dataclass(frozen=True)
class FileStatistics:
    """What `stat` returns: length in bytes, modification time in nanoseconds, whether it is a directory."""
    length: int
    mtime_nsec: int
    is_directory: bool


def exists(path) -> bool:
    """Whether a file or directory exists at `path`."""
    return os.path.exists(_local(path))


def remove(path) -> None:
    """Delete the file at `path` (NotFoundError if there is none, FailedPreconditionError for a directory)."""
    with _reporting(path):
        os.remove(_local(path))


def mkdir(path) -> None:
    """Create the directory `path`, whose parent must exist; an existing directory is left as it is."""
    local = _local(path)
    if os.path.isdir(local):
        return
    with _reporting(path):
        os.mkdir(local)


def makedirs(path) -> None:
    """Create the directory `path` and its missing parents; an existing directory is left as it is."""
    local = _local(path)
    parent = local
    while parent and not os.path.exists(parent):  # the nearest existing ancestor must be a directory
        parent = os.path.dirname(parent.rstrip("/"))
    if parent and not os.path.isdir(parent):
        raise errors.FailedPreconditionError(None, None, f"{parent} is not a directory")
    with _reporting(path):
        os.makedirs(local, exist_ok=True)


def _check_destination(dst, overwrite: bool) -> str:
    local = _local(dst)
    if not overwrite and os.path.exists(local):
        raise errors.AlreadyExistsError(None, None, f"{_text(dst)}; file already exists")
    if os.path.isdir(local):
        raise errors.FailedPreconditionError(None, None, f"{_text(dst)}; Is a directory")
    return local


def copy(src, dst, overwrite: bool = False) -> None:
    """Copy the file `src` to `dst` (AlreadyExistsError if `dst` exists and not `overwrite`). The copy is written
    beside `dst` and renamed into place: `dst` is never left half-written."""
    source = _local(src)
    if os.path.isdir(source):
        raise errors.FailedPreconditionError(None, None, f"{_text(src)}; Is a directory (only files can be copied)")
    target = _check_destination(dst, overwrite)
    with _reporting(src), open(source, "rb") as reader, _reporting(dst), atomic_output(target) as writer:
        shutil.copyfileobj(reader, writer)


def rename(src, dst, overwrite: bool = False) -> None:
    """Move `src` to `dst` (AlreadyExistsError if `dst` exists and not `overwrite`)."""
    source = _local(src)
    if not os.path.lexists(source):
        raise errors.NotFoundError(None, None, f"{_text(src)}; No such file or directory")
    target = _local(dst)
    if not overwrite and os.path.exists(target):
        raise errors.AlreadyExistsError(None, None, f"{_text(dst)}; file already exists")
    with _reporting(dst):
        os.replace(source, target)


def rmtree(path) -> None:
    """Delete `path`: a directory with everything under it, or a file."""
    local = _local(path)
    if not os.path.lexists(local):
        raise errors.NotFoundError(None, None, f"{_text(path)} not found")
    with _reporting(path):
        if os.path.isdir(local) and not os.path.islink(local):
            shutil.rmtree(local)
        else:
            os.remove(local)


def isdir(path) -> bool:
    """Whether `path` is a directory."""
    return os.path.isdir(_local(path))


def listdir(path) -> list[str]:
    """The names of the entries of directory `path` (without "." and ".."), sorted."""
    local = _local(path)
    if not os.path.isdir(local):
        raise errors.NotFoundError(None, None, f"Could not find directory {_text(path)}")
    with _reporting(path):
        return sorted(os.listdir(local))


def stat(path) -> FileStatistics:
    """The length, modification time (ns) and kind of the file or directory at `path`."""
    with _reporting(path):
        info = os.stat(_local(path))
    return FileStatistics(info.st_size, info.st_mtime_ns, stat_module.S_ISDIR(info.st_mode))


def join(path, *paths) -> str:
    """Join path components: with "/" for URLs (scheme://...), as os.path.join for local paths."""
    text = _text(path)
    if "://" in text[1:]:
        return posixpath.join(text, *paths)
    return os.path.join(text, *paths)


def _component_regex(component: str) -> re.Pattern:
    r"""TF's glob syntax for one path component: * ? [set] [^set] and \c, never matching "/"."""
    out, i = [], 0
    while i < len(component):
        c = component[i]
        if c == "\\" and i + 1 < len(component):
            out.append(re.escape(component[i + 1]))
            i += 2
            continue
        if c == "[":
            end = component.find("]", i + 2)
            if end > 0:
                body = component[i + 1:end]
                if body.startswith("^"):
                    body = "!" + body[1:]
                out.append(fnmatch.translate(f"[{body}]")[4:-3])  # fnmatch's "(?s:[...])\Z" without the wrapper
                i = end + 1
                continue
        out.append({"*": "[^/]*", "?": "[^/]"}.get(c, re.escape(c)))
        i += 1
    return re.compile("".join(out) + r"\Z", re.S)


def _glob_one(pattern: str) -> list[str]:
    prefix = _FILE_SCHEME if pattern.startswith(_FILE_SCHEME) else ""
    local = _local(pattern)
    parts = local.split("/")
    first_magic = next((i for i, p in enumerate(parts) if any(ch in p for ch in "*?[\\")), len(parts))
    if first_magic == len(parts):
        return [pattern] if os.path.lexists(local) else []
    matches = ["/".join(parts[:first_magic]) or ("/" if local.startswith("/") else "")]
    for component in parts[first_magic:]:
        if not component:
            continue
        regex = _component_regex(component)
        found = []
        for directory in matches:
            try:
                names = os.listdir(directory or ".")
            except OSError:
                continue
            found.extend(posixpath.join(directory, n) for n in names if regex.match(n))
        matches = found
    return sorted(prefix + m for m in matches)


def glob(pattern) -> list[str]:
    """The paths matching `pattern` (a string or an iterable of strings): "*" and "?" never match "/", "[...]" and
    "[^...]" match one character of (not of) a set, "\\c" matches c. A missing directory matches nothing."""
    if isinstance(pattern, (str, bytes, os.PathLike)):
        return _glob_one(_text(pattern))
    return [match for one in pattern for match in _glob_one(_text(one))]


def walk(top, topdown: bool = True, onerror=None) -> Iterator[tuple[str, list[str], list[str]]]:
    """(directory, subdirectory names, file names) for `top` and every directory under it, parents first when
    `topdown`; a `top` that is not a directory yields nothing (or calls `onerror` with the NotFoundError)."""
    top = _text(top)
    try:
        listing = listdir(top)
    except errors.NotFoundError as e:
        if onerror is not None:
            onerror(e)
        return
    subdirs, files = [], []
    for name in listing:
        (subdirs if isdir(join(top, name)) else files).append(name)
    if topdown:
        yield top, subdirs, files
    for name in subdirs:
        yield from walk(join(top, name), topdown, onerror)
    if not topdown:
        yield top, subdirs, files


def get_registered_schemes() -> list[str]:
    """The URL schemes gfile understands: "" (plain paths) and "file"."""
    return ["", "file"]


# --- whole files ----------------------------------------------------------------------------------------------
def read_file_to_string(filename, binary_mode: bool = False):
    """The whole content of `filename` (bytes in binary mode, else str)."""
    with GFile(filename, "rb" if binary_mode else "r") as f:
        return f.read()


def write_string_to_file(filename, file_content) -> None:
    with GFile(filename, "w") as f:
        f.write(file_content)


def atomic_write_string_to_file(filename, contents, overwrite: bool = True) -> None:
    """Write `contents` to a temporary file beside `filename` and rename it into place: readers see the old file or
    the new one, never half of one."""
    local = _local(filename)
    if not overwrite and os.path.exists(local):
        raise errors.AlreadyExistsError(None, None, f"{_text(filename)}; file already exists")
    with _reporting(filename), atomic_output(local) as f:
        f.write(contents.encode("utf-8") if isinstance(contents, str) else bytes(contents))
