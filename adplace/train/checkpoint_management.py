"""Checkpoint files and the directory's `checkpoint` state file (TF's checkpoint_management): which files make a
checkpoint, `open_checkpoint` (a reader for either format), and adplace's older one-file `.npz` format.

A checkpoint prefix `P` is a V2 tensor bundle (`P.index` + `P.data-*-of-*`, adplace.lib.io.tensor_bundle), which
tf.train.Saver writes, or, from adplace versions before it wrote V2, `P.npz`, which is still read (and written by
`write_data_file`, for tests of that reader). The `.npz` format is a NumPy zip archive, readable without pickle: member
`"<i>"` holds the i-th tensor, `"<i>_lengths"` the byte lengths of a string tensor's elements (its bytes are stored
concatenated as uint8), and `"__index__"` a UTF-8 JSON object {"format": 1, "tensors": {name: {"member", "dtype",
"shape"}}}. The directory's `checkpoint` file is TF's CheckpointState text format. The reader checks every part of
the file against the index, so a truncated or corrupted file raises DataLossError naming it, never a wrong value.

Files are written atomically by adplace.lib.io.atomic_file (temporary, fsync, rename; stale temporaries of killed
writes removed).
"""
from __future__ import annotations

import contextlib
import glob
import json
import logging
import math
import os
import re
import struct
import zipfile
import zlib

import numpy as np

from adplace.framework import dtypes as _dtypes
from adplace.framework import errors
from adplace.framework.tensor_shape import dims_text
from adplace.lib.io import tensor_bundle
from adplace.lib.io.atomic_file import atomic_output

_log = logging.getLogger("adplace")

_SUFFIX = ".npz"
_INDEX_MEMBER = "__index__"
_FORMAT_VERSION = 1
_STATE_LINE = re.compile(r'^\s*(\w+)\s*:\s*(.*?)\s*$')
_PATH_FIELDS = ("model_checkpoint_path", "all_model_checkpoint_paths")
_TIMESTAMP_FIELDS = ("all_model_checkpoint_timestamps", "last_preserved_timestamp")


def _brief(text: str, limit: int) -> str:
    """`text`, its middle elided past `limit` characters, so error messages stay short."""
    return text if len(text) <= limit else f"{text[:limit // 2]}...{text[-(limit // 2):]}"


# --- the data file -----------------------------------------------------------------------------------------------
def data_file(prefix: str) -> str:
    return prefix + _SUFFIX


def write_data_file(prefix: str, values: dict[str, np.ndarray], dtypes: dict[str, _dtypes.DType]) -> None:
    """Write `values` (name -> array) as the checkpoint `prefix`, atomically."""
    members: dict[str, np.ndarray] = {}
    index = {}
    for i, (name, value) in enumerate(sorted(values.items())):
        dtype = dtypes[name]
        member = str(i)
        if dtype is _dtypes.string:
            flat = [v.encode() if isinstance(v, str) else bytes(v) for v in np.asarray(value, dtype=object).ravel()]
            members[member] = np.frombuffer(b"".join(flat), dtype=np.uint8)
            members[member + "_lengths"] = np.array([len(b) for b in flat], dtype=np.int64)
        else:
            members[member] = np.ascontiguousarray(value, dtype=dtype.as_numpy_dtype)
        index[name] = {"member": member, "dtype": dtype.name, "shape": list(np.shape(value))}
    header = json.dumps({"format": _FORMAT_VERSION, "tensors": index}).encode()
    members[_INDEX_MEMBER] = np.frombuffer(header, dtype=np.uint8)
    with atomic_output(data_file(prefix)) as f:
        np.savez(f, **members)


class _Entry:
    """One tensor of a checkpoint: its dtype, shape and (once read) value."""

    __slots__ = ("dtype", "shape", "member")

    def __init__(self, dtype: _dtypes.DType, shape: list[int], member: str):
        self.dtype, self.shape, self.member = dtype, shape, member


class _CorruptFile(Exception):
    """Why a checkpoint file cannot be read; NpzCheckpoint reports it as DataLossError naming the file."""


# What zipfile, zlib, json and NumPy's .npy header parser raise on damaged bytes (RuntimeError: deep JSON nesting).
_DAMAGED_FILE_ERRORS = (_CorruptFile, OSError, EOFError, ValueError, zipfile.BadZipFile, zlib.error, struct.error,
                        RuntimeError, OverflowError)


def _read_member(archive: zipfile.ZipFile, member: str) -> np.ndarray:
    """Member `member` as a read-only array, after checking its .npy header against the bytes it has."""
    try:
        info = archive.getinfo(member + ".npy")
    except KeyError:
        raise _CorruptFile(f"member {member!r} is missing") from None
    if info.compress_type not in (zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED) or info.flag_bits & 0x1:
        raise _CorruptFile(f"member {member!r} is encrypted or uses compression method {info.compress_type}")
    archive_nbytes = os.fstat(archive.fp.fileno()).st_size
    if info.compress_size > archive_nbytes:  # zipfile would allocate what it claims before finding it missing
        raise _CorruptFile(f"member {member!r} claims {info.compress_size} stored bytes; the file has {archive_nbytes}")
    with archive.open(info) as stream:
        version = np.lib.format.read_magic(stream)
        if version == (1, 0):
            shape, fortran_order, dtype = np.lib.format.read_array_header_1_0(stream)
        elif version == (2, 0):
            shape, fortran_order, dtype = np.lib.format.read_array_header_2_0(stream)
        else:
            raise _CorruptFile(f"member {member!r} has .npy version {version}")
        if dtype.hasobject:
            raise _CorruptFile(f"member {member!r} holds Python objects")
        nbytes = math.prod(shape) * dtype.itemsize
        stored_nbytes = info.file_size - stream.tell()
        if nbytes != stored_nbytes:
            raise _CorruptFile(f"member {member!r} declares {nbytes} bytes of data ({dtype}, shape {shape}) but holds "
                               f"{stored_nbytes}")
        data = stream.read(nbytes)
        if len(data) != nbytes or stream.read(1):  # reading past the end makes zipfile check the CRC
            raise _CorruptFile(f"member {member!r} has {len(data)} of its {nbytes} bytes")
    return np.frombuffer(data, dtype).reshape(shape, order="F" if fortran_order else "C")


def _entry(name: str, fields) -> _Entry:
    """The index's record for tensor `name`, checked field by field."""
    if not isinstance(fields, dict):
        raise _CorruptFile(f"the index entry of {name!r} is not a JSON object")
    member, dtype_name, shape = fields.get("member"), fields.get("dtype"), fields.get("shape")
    if not isinstance(member, str) or member == _INDEX_MEMBER:
        raise _CorruptFile(f"the index entry of {name!r} has member {member!r}")
    try:
        dtype = _dtypes.as_dtype(dtype_name) if isinstance(dtype_name, str) else None
    except TypeError:
        dtype = None
    if dtype is None or dtype.name != dtype_name or dtype.is_ref_dtype:
        raise _CorruptFile(f"the index entry of {name!r} has dtype {dtype_name!r}")
    if not (isinstance(shape, list) and len(shape) <= 64
            and all(type(d) is int and d >= 0 for d in shape)):  # type(d) is int: a bool is not a dimension
        raise _CorruptFile(f"the index entry of {name!r} has shape {shape!r}")
    return _Entry(dtype, shape, member)


def _read_index(archive: zipfile.ZipFile) -> dict[str, _Entry]:
    if _INDEX_MEMBER + ".npy" not in archive.namelist():
        raise _CorruptFile(f"it has no '{_INDEX_MEMBER}' member, so it was not written by tf.train.Saver (adplace)")
    raw = _read_member(archive, _INDEX_MEMBER)
    if raw.dtype != np.uint8 or raw.ndim != 1:
        raise _CorruptFile(f"its index is {raw.dtype} of shape {raw.shape}, not UTF-8 bytes")
    header = json.loads(raw.tobytes().decode("utf-8"))
    if not isinstance(header, dict):
        raise _CorruptFile(f"its index is a JSON {type(header).__name__}, not an object")
    if header.get("format") != _FORMAT_VERSION:
        raise _CorruptFile(f"it has format {_brief(repr(header.get('format')), 100)}; this adplace reads format "
                           f"{_FORMAT_VERSION}. Re-save it with this version")
    tensors = header.get("tensors")
    if not isinstance(tensors, dict):
        raise _CorruptFile("its index has no 'tensors' object")
    return {name: _entry(name, fields) for name, fields in tensors.items()}


def _same_type(actual: np.dtype, expected: np.dtype) -> bool:
    return actual.kind == expected.kind and actual.itemsize == expected.itemsize  # either byte order


def _decode(archive: zipfile.ZipFile, name: str, entry: _Entry) -> np.ndarray:
    """Tensor `name`'s value, checked against its index entry."""
    count = math.prod(entry.shape)
    if entry.dtype is _dtypes.string:
        data, lengths = _read_member(archive, entry.member), _read_member(archive, entry.member + "_lengths")
        sizes = lengths.tolist() if _same_type(lengths.dtype, np.dtype(np.int64)) and lengths.ndim == 1 else None
        if not (data.dtype == np.uint8 and data.ndim == 1 and sizes is not None and len(sizes) == count
                and min(sizes, default=0) >= 0 and sum(sizes) == data.size):  # Python ints: no overflow
            raise _CorruptFile(f"the bytes of string tensor {name!r} do not match their {count} lengths")
        raw, start = data.tobytes(), 0
        out = np.empty(count, dtype=object)
        for i, size in enumerate(sizes):
            out[i], start = raw[start:start + size], start + size
        return out.reshape(entry.shape)
    value = _read_member(archive, entry.member)
    expected = np.dtype(entry.dtype.as_numpy_dtype)
    if not _same_type(value.dtype, expected) or value.size != count:
        raise _CorruptFile(f"tensor {name!r} is saved as {value.dtype} {list(value.shape)}, but its index says "
                           f"{entry.dtype.name} {dims_text(entry.shape)}")
    return value.astype(expected, copy=False).reshape(entry.shape)


class NpzCheckpoint:
    """The tensors of one `.npz` checkpoint, read and checked in full when opened; the same reading methods as
    tensor_bundle.BundleReader (has_tensor, dtype, shape, read, read_slice, tensor_names, debug_string).

    Raises:
      NotFoundError: no file `<prefix>.npz` exists.
      PermissionDeniedError: the file cannot be opened for reading.
      DataLossError: the file is truncated, corrupted, or not an adplace checkpoint.
    """

    def __init__(self, prefix: str):
        path = data_file(prefix)
        self._prefix = prefix
        try:
            with zipfile.ZipFile(path) as archive:
                self._entries = _read_index(archive)
                self._values = {name: _decode(archive, name, e) for name, e in self._entries.items()}
        except FileNotFoundError as e:
            raise errors.NotFoundError(None, None, f"Unsuccessful TensorSliceReader constructor: Failed to find "
                                       f"any matching files for {prefix} ({path} does not exist)") from e
        except PermissionError as e:
            raise errors.PermissionDeniedError(None, None, f"Cannot read checkpoint {path}: {e}") from e
        except _DAMAGED_FILE_ERRORS as e:
            cause = _brief(f"{e}" if isinstance(e, _CorruptFile) else f"{type(e).__name__}: {e}", 300)
            raise errors.DataLossError(None, None, f"Unable to read checkpoint {_brief(path, 400)}: {cause}. The file "
                                       "is truncated or corrupted, or not an adplace checkpoint; restore an older "
                                       "checkpoint.") from e

    def has_tensor(self, name: str) -> bool:
        return name in self._entries

    def _entry(self, name: str) -> _Entry:
        if name not in self._entries:
            raise errors.NotFoundError(None, None, f"Key {name} not found in checkpoint")
        return self._entries[name]

    def dtype(self, name: str) -> _dtypes.DType:
        return self._entry(name).dtype

    def shape(self, name: str) -> list[int]:
        return list(self._entry(name).shape)

    def read(self, name: str) -> np.ndarray:
        """A copy of the tensor saved under `name`; NotFoundError if the checkpoint has none."""
        self._entry(name)
        return self._values[name].copy()

    def read_slice(self, name: str, extents: list) -> np.ndarray:
        self._entry(name)
        whole = self._values[name]
        index = tuple(slice(None) if length < 0 else slice(start, start + length) for start, length in extents)
        return whole[index].copy()

    def tensor_names(self) -> list[str]:
        return sorted(self._entries)

    def debug_string(self) -> str:
        return "".join(f"{n} ({e.dtype.name}) {dims_text(e.shape)}\n" for n, e in sorted(self._entries.items()))


def open_checkpoint(prefix: str, op=None):
    """A reader of checkpoint `prefix`: a tensor_bundle.BundleReader for a V2 checkpoint, an NpzCheckpoint for an
    adplace `.npz` one.

    Raises:
      NotFoundError: neither `prefix.index` nor `prefix.npz` exists.
      DataLossError: the checkpoint's files are damaged (naming the file).
    """
    prefix = os.fspath(prefix)
    if os.path.exists(tensor_bundle.index_filename(prefix)) or not os.path.exists(data_file(prefix)):
        try:
            return tensor_bundle.BundleReader(prefix)
        except errors.OpError as e:
            raise type(e)(None, op, e.message) from None
    return NpzCheckpoint(prefix)


def checkpoint_exists(checkpoint_prefix: str) -> bool:
    """Whether a checkpoint (V2 or adplace `.npz`) was written at `checkpoint_prefix` (tf.train.checkpoint_exists)."""
    return _main_file(checkpoint_prefix) is not None


def _main_file(checkpoint_prefix: str) -> str | None:
    """The file that makes `checkpoint_prefix` a checkpoint: its `.index`, else its `.npz`, else None."""
    for path in (tensor_bundle.index_filename(checkpoint_prefix), data_file(checkpoint_prefix)):
        if os.path.isfile(path):
            return path
    return None


# --- the `checkpoint` state file ---------------------------------------------------------------------------------
class CheckpointState:
    """The `checkpoint` file's content (TF's CheckpointState proto): the latest prefix and those still kept."""

    def __init__(self, model_checkpoint_path: str = "", all_model_checkpoint_paths=(),
                 all_model_checkpoint_timestamps=(), last_preserved_timestamp: float = 0.0):
        self.model_checkpoint_path = model_checkpoint_path
        self.all_model_checkpoint_paths = list(all_model_checkpoint_paths)
        self.all_model_checkpoint_timestamps = list(all_model_checkpoint_timestamps)
        self.last_preserved_timestamp = last_preserved_timestamp

    def to_text(self) -> str:
        lines = [f"model_checkpoint_path: {json.dumps(self.model_checkpoint_path, ensure_ascii=False)}"]
        lines += [f"all_model_checkpoint_paths: {json.dumps(p, ensure_ascii=False)}"
                  for p in self.all_model_checkpoint_paths]
        lines += [f"all_model_checkpoint_timestamps: {t!r}" for t in self.all_model_checkpoint_timestamps]
        lines.append(f"last_preserved_timestamp: {self.last_preserved_timestamp!r}")
        return "\n".join(lines) + "\n"

    @classmethod
    def from_text(cls, text: str, path: str) -> "CheckpointState":
        """Parse the text `to_text` writes; ValueError (TF's text_format.ParseError) naming `path` and the line.

        Blank lines and `#` comments are skipped; an unknown field is an error, as in TF's text format.
        """
        state = cls()
        for line_number, line in enumerate(text.splitlines(), 1):
            if not line.strip() or line.lstrip().startswith("#"):
                continue
            match = _STATE_LINE.match(line)
            field, value = match.groups() if match else ("", "")
            if field in _PATH_FIELDS:
                try:  # only a JSON string: no nesting to recurse into
                    value = json.loads(value) if value.startswith('"') else None
                except ValueError:
                    value = None
                if not isinstance(value, str):
                    raise _state_parse_error(path, line_number, line, "expected a quoted path")
                if field == "model_checkpoint_path":
                    state.model_checkpoint_path = value
                else:
                    state.all_model_checkpoint_paths.append(value)
            elif field in _TIMESTAMP_FIELDS:
                try:
                    timestamp = float(value)
                except ValueError:
                    raise _state_parse_error(path, line_number, line, "expected a number") from None
                if field == "last_preserved_timestamp":
                    state.last_preserved_timestamp = timestamp
                else:
                    state.all_model_checkpoint_timestamps.append(timestamp)
            else:
                why = f"CheckpointState has no field named {field!r}" if field else "expected 'field: value'"
                raise _state_parse_error(path, line_number, line, why)
        return state

    def __repr__(self) -> str:
        return self.to_text()


def _state_parse_error(path: str, line_number: int, line: str, why: str) -> ValueError:
    return ValueError(f"{_brief(path, 400)}:{line_number}: {why}: {_brief(repr(line), 200)}")


def _state_file(checkpoint_dir: str, latest_filename: str | None) -> str:
    return os.path.join(checkpoint_dir, latest_filename or "checkpoint")


def generate_checkpoint_state_proto(save_dir: str, model_checkpoint_path: str, all_model_checkpoint_paths=None,
                                    all_model_checkpoint_timestamps=None, last_preserved_timestamp: float | None = None,
                                    *, save_relative_paths: bool = False) -> CheckpointState:
    """The CheckpointState `update_checkpoint_state` writes (tf.train.generate_checkpoint_state_proto): the latest
    path appended to `all_model_checkpoint_paths` unless it is last there; relative paths made relative to a
    relative `save_dir` (TF's rule), or every path relative to `save_dir` with `save_relative_paths`."""
    paths = list(all_model_checkpoint_paths or [])
    if not paths or paths[-1] != model_checkpoint_path:
        paths.append(model_checkpoint_path)

    def stored(p: str) -> str:
        if save_relative_paths or (not os.path.isabs(save_dir) and not os.path.isabs(p)):
            return os.path.relpath(p, save_dir)
        return p
    return CheckpointState(stored(model_checkpoint_path), [stored(p) for p in paths],
                           all_model_checkpoint_timestamps or (), last_preserved_timestamp or 0.0)


def meta_graph_filename(checkpoint_filename: str, meta_graph_suffix: str = "meta") -> str:
    """The MetaGraphDef file Saver.save writes beside checkpoint `checkpoint_filename` (a prefix, or a sharded
    name whose `-?????-of-NNNNN` part is dropped): `<prefix>.<meta_graph_suffix>`."""
    base = re.sub(r"-[\d?]+-of-\d+$", "", os.fspath(checkpoint_filename))
    return f"{base}.{meta_graph_suffix}"


def update_checkpoint_state(save_dir: str, model_checkpoint_path: str, all_model_checkpoint_paths=None,
                            latest_filename: str | None = None, all_model_checkpoint_timestamps=None,
                            last_preserved_timestamp: float | None = None, save_relative_paths: bool = False) -> None:
    """Write the `checkpoint` state file of `save_dir` atomically (tf.train.update_checkpoint_state).

    The latest path is appended to `all_model_checkpoint_paths` if it is not last there. Relative paths are stored
    relative to `save_dir` (as TF does), or every path is when `save_relative_paths` is on.
    """
    save_dir = save_dir or "."
    state = generate_checkpoint_state_proto(save_dir, model_checkpoint_path, all_model_checkpoint_paths,
                                            all_model_checkpoint_timestamps, last_preserved_timestamp,
                                            save_relative_paths=save_relative_paths)
    filename = _state_file(save_dir, latest_filename)
    if os.path.abspath(filename) == os.path.abspath(model_checkpoint_path):
        raise RuntimeError(f"Save path '{model_checkpoint_path}' conflicts with path used for checkpoint state.  "
                           "Please use a different save path.")
    with atomic_output(filename) as f:
        f.write(state.to_text().encode())


def get_checkpoint_state(checkpoint_dir: str, latest_filename: str | None = None) -> CheckpointState | None:
    """The CheckpointState of `checkpoint_dir`, relative paths joined onto it (tf.train.get_checkpoint_state).

    As in TF, a state file that cannot be read or parsed is logged as a warning naming it and ignored (None), and
    one that parses but names no checkpoint raises. (TF lets a UnicodeDecodeError escape for non-UTF-8 bytes; here
    those are ignored like any other unparsable file.)

    Returns:
      The state, or None if the state file is missing, unreadable or unparsable.
    Raises:
      ValueError: the state file has no `model_checkpoint_path`.
    """
    checkpoint_dir = os.fspath(checkpoint_dir)
    filename = _state_file(checkpoint_dir, latest_filename)
    try:
        with open(filename, "rb") as f:
            content = f.read()
    except FileNotFoundError:
        return None
    except OSError as e:  # TF: "It's ok if the file cannot be read"
        _log.warning("%s: cannot read checkpoint state file %s: Checkpoint ignored (%s)",
                     type(e).__name__, _brief(filename, 400), _brief(str(e), 400))
        return None
    try:
        state = CheckpointState.from_text(content.decode("utf-8"), filename)
    except ValueError as e:  # TF's text_format.ParseError; here also UnicodeDecodeError
        _log.warning("%s: unparsable checkpoint state file %s: Checkpoint ignored (%s)",
                     type(e).__name__, _brief(filename, 400), _brief(str(e), 400))
        return None
    if not state.model_checkpoint_path:
        raise ValueError(f"Invalid checkpoint state loaded from {_brief(checkpoint_dir, 400)}: "
                         f"{_brief(filename, 400)} names no model_checkpoint_path")
    join = (lambda p: p if os.path.isabs(p) else os.path.join(checkpoint_dir, p))
    state.model_checkpoint_path = join(state.model_checkpoint_path)
    state.all_model_checkpoint_paths = [join(p) for p in state.all_model_checkpoint_paths]
    return state


def latest_checkpoint(checkpoint_dir: str, latest_filename: str | None = None) -> str | None:
    """The prefix of the newest checkpoint recorded in `checkpoint_dir`, or None (tf.train.latest_checkpoint)."""
    state = get_checkpoint_state(checkpoint_dir, latest_filename)
    if state is None:
        return None
    if checkpoint_exists(state.model_checkpoint_path):
        return state.model_checkpoint_path
    _log.error("Couldn't match files for checkpoint %s", state.model_checkpoint_path)
    return None


def remove_checkpoint(checkpoint_prefix: str, checkpoint_format_version: int = 2,
                      meta_graph_suffix: str = "meta") -> None:
    """Delete the files of checkpoint `checkpoint_prefix`: its index and data files (or `.npz`), and its .meta."""
    data_files = glob.glob(glob.escape(checkpoint_prefix) + ".data-?????-of-?????")
    for path in (f"{checkpoint_prefix}.{meta_graph_suffix}", tensor_bundle.index_filename(checkpoint_prefix),
                 *data_files, data_file(checkpoint_prefix)):
        with contextlib.suppress(FileNotFoundError):
            os.remove(path)


def get_checkpoint_mtimes(checkpoint_prefixes: list[str]) -> list[float]:
    """The modification times of the given checkpoints (of their index files; missing ones are skipped)."""
    return [os.path.getmtime(path) for path in map(_main_file, checkpoint_prefixes) if path is not None]
