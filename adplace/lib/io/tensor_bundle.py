"""TF's V2 checkpoint format, the tensor bundle (tensorflow/core/util/tensor_bundle): read, written and merged.

A bundle at prefix `P` is `P.index`, a table (adplace.lib.io.table) mapping "" to a BundleHeaderProto and each
tensor name to a BundleEntryProto (dtype, shape, shard, offset, size, masked CRC-32C), and the data files
`P.data-00000-of-0000N` holding each tensor's bytes: little-endian array bytes, or for strings the varint64 length
of every element, a masked CRC-32C of those lengths, then the elements' bytes. A partitioned tensor has an entry
under its name listing its slices (TensorSliceProto) and one entry per slice under a key that encodes name and
slice (TF's OrderedCode); reading a slice assembles it from whatever slices were stored.

    w = BundleWriter("/tmp/m")
    w.add("w", np.ones([2, 3], np.float32), dtypes.float32)
    w.finish()                                   # /tmp/m.data-00000-of-00001, then /tmp/m.index
    BundleReader("/tmp/m").read("w")             # array([[1., 1., 1.], [1., 1., 1.]], dtype=float32)

Writes are atomic: every file goes to a temporary beside it, all are fsynced, then renamed, data files first and
the index last (adplace.lib.io.atomic_file). Damaged files raise DataLossError naming the file; no pickle is used.
"""
from __future__ import annotations

import math
import os
import re
import struct

import numpy as np

from adplace.framework import dtypes as _dtypes
from adplace.framework import errors
from adplace.lib import protos
from adplace.lib.io import crc, table
from adplace.lib.io.atomic_file import atomic_output, atomic_outputs

VERSION = 1  # kTensorBundleVersion
_UINT32_MAX = 0xFFFFFFFF
_SPECIAL_BYTE = re.compile(rb"[\x00\xff]")  # escaped in OrderedCode strings
_BY_ENUM = {d.as_datatype_enum: d for d in _dtypes.ALL}
Extents = list  # [(start, length)] per dimension; length -1 is the whole dimension


# --- names -------------------------------------------------------------------------------------------------------
def index_filename(prefix: str) -> str:
    return f"{prefix}.index"


def data_filename(prefix: str, shard: int, num_shards: int) -> str:
    return f"{prefix}.data-{shard:05d}-of-{num_shards:05d}"


def _write_num_increasing(out: bytearray, value: int) -> None:
    payload = value.to_bytes(8, "big").lstrip(b"\0")
    out.append(len(payload))
    out += payload


def _write_signed_num_increasing(out: bytearray, value: int) -> None:
    magnitude = ~value if value < 0 else value
    if magnitude < 64:
        out.append((0x80 ^ value) & 0xFF)
        return
    length = magnitude.bit_length() // 7 + 1
    header = (0x00, 0x80, 0xC0, 0xE0, 0xF0, 0xF8, 0xFC, 0xFE, 0xFF, 0xFF, 0xFF)[length]
    header2 = 0x80 if length == 9 else 0xC0 if length == 10 else 0
    buf = bytearray(value.to_bytes(10, "big", signed=True)[10 - length:])
    buf[0] ^= header
    buf[1] ^= header2
    out += buf


def slice_key(name: str, extents: Extents) -> bytes:
    """The table key of one stored slice of tensor `name` (TF's checkpoint::EncodeTensorNameSlice)."""
    out = bytearray()
    _write_num_increasing(out, 0)
    out += _SPECIAL_BYTE.sub(lambda m: b"\x00\xff" if m.group() == b"\x00" else b"\xff\x00", name.encode())
    out += b"\x00\x01"
    _write_num_increasing(out, len(extents))
    for start, length in extents:
        _write_signed_num_increasing(out, start)
        _write_signed_num_increasing(out, length)
    return bytes(out)


def parse_shape_and_slice(spec: str) -> tuple[list[int], Extents]:
    """("10 4 0,5:0,4") -> ([10, 4], [(0, 5), (0, 4)]); "-" is a whole dimension. ValueError if malformed."""
    parts = spec.split(" ")
    if len(parts) < 2:
        raise ValueError(f"Need least two elements in shape_and_slice specification: {spec}")
    shape = [int(d) for d in parts[:-1]]
    extents = []
    dims = parts[-1].split(":")
    if len(dims) != len(shape):
        raise ValueError(f"Expected a slice of rank {len(shape)} in shape_and_slice: {spec}")
    for dim, text in zip(shape, dims):
        if text == "-":
            extents.append((0, -1))
            continue
        start, length = (int(x) for x in text.split(","))
        if start < 0 or length < 0 or start + length > dim:
            raise ValueError(f"Slice {text} lies outside dimension {dim} in shape_and_slice: {spec}")
        extents.append((start, length))
    return shape, extents


def _bounds(extents: Extents, shape: list[int]) -> list[tuple[int, int]]:
    return [(0, dim) if length < 0 else (start, start + length) for (start, length), dim in zip(extents, shape)]


def _is_full(extents: Extents, shape: list[int]) -> bool:
    return all(lo == 0 and hi == dim for (lo, hi), dim in zip(_bounds(extents, shape), shape))


# --- tensor bytes ------------------------------------------------------------------------------------------------
def _string_chunks(value: np.ndarray) -> tuple[list[bytes], int]:
    """The on-disk pieces of a string tensor and their CRC-32C (TF's WriteStringTensor)."""
    items = [v.encode() if isinstance(v, str) else bytes(v) for v in np.asarray(value, dtype=object).ravel()]
    lengths = bytearray()
    checked = bytearray()
    for item in items:
        table.put_varint(lengths, len(item))
        checked += struct.pack("<I" if len(item) <= _UINT32_MAX else "<Q", len(item))
    checksum = crc.crc32c(bytes(checked))
    length_checksum = struct.pack("<I", crc.mask(checksum))
    checksum = crc.crc32c(length_checksum, checksum)
    for item in items:
        checksum = crc.crc32c(item, checksum)
    return [bytes(lengths), length_checksum, *items], checksum


def _raw_bytes(value: np.ndarray, dtype: _dtypes.DType) -> np.ndarray:
    """The tensor's little-endian bytes as a flat uint8 array (a view where the value already is one)."""
    array = np.ascontiguousarray(value, dtype=np.dtype(dtype.as_numpy_dtype).newbyteorder("<"))
    return array.reshape(-1).view(np.uint8)


# --- writing -----------------------------------------------------------------------------------------------------
class BundleWriter:
    """Collects tensors, then `finish()` writes the bundle at `prefix` (one data shard) atomically.

    Values are kept by reference until `finish`, which must run while they are unchanged.
    """

    def __init__(self, prefix: str):
        self._prefix = os.fspath(prefix)
        self._entries: dict[bytes, object] = {}
        self._values: dict[bytes, tuple[np.ndarray, _dtypes.DType]] = {}

    def add(self, key: str | bytes, value, dtype: _dtypes.DType) -> None:
        """Add tensor `key` (whole). InvalidArgumentError for a duplicate key."""
        key_bytes = key.encode() if isinstance(key, str) else key
        if key_bytes in self._entries or not key_bytes:
            raise errors.InvalidArgumentError(None, None, f"Adding duplicate key: {key_bytes.decode(errors='replace')}")
        value = np.asarray(value, dtype=object) if dtype is _dtypes.string else np.asarray(value)
        entry = protos.tensor_bundle_pb2.BundleEntryProto(dtype=dtype.as_datatype_enum)
        for dim in value.shape:
            entry.shape.dim.add(size=dim)
        self._entries[key_bytes] = entry
        self._values[key_bytes] = (value, dtype)

    def add_slice(self, key: str, full_shape: list[int], extents: Extents, value, dtype: _dtypes.DType) -> None:
        """Add the slice `extents` of tensor `key` (full shape `full_shape`); a whole-tensor slice is `add`ed."""
        if _is_full(extents, full_shape):
            self.add(key, value, dtype)
            return
        key_bytes = key.encode()
        full = self._entries.get(key_bytes)
        if full is None:
            full = self._entries[key_bytes] = protos.tensor_bundle_pb2.BundleEntryProto(dtype=dtype.as_datatype_enum)
            for dim in full_shape:
                full.shape.dim.add(size=dim)
        elif not full.slices or full.dtype != dtype.as_datatype_enum or [d.size for d in full.shape.dim] != list(
                full_shape):
            raise errors.InvalidArgumentError(None, None, f"Slices of {key} disagree on dtype or shape, or {key} "
                                              "was also added whole")
        proto = full.slices.add()
        for start, length in extents:
            extent = proto.extent.add()
            if length >= 0:
                extent.start, extent.length = start, length
        self.add(slice_key(key, extents), value, dtype)

    def finish(self) -> None:
        """Write the data file, then the index, each through a temporary renamed into place once both are whole."""
        directory = os.path.dirname(self._prefix)
        if directory:
            os.makedirs(directory, exist_ok=True)
        header = protos.tensor_bundle_pb2.BundleHeaderProto(num_shards=1, endianness=0)
        header.version.producer = VERSION
        with atomic_outputs([data_filename(self._prefix, 0, 1), index_filename(self._prefix)]) as (data, index):
            offset = 0
            for key in sorted(self._values):
                value, dtype = self._values[key]
                entry = self._entries[key]
                if dtype is _dtypes.string:
                    chunks, checksum = _string_chunks(value)
                else:
                    chunks = [_raw_bytes(value, dtype)]
                    checksum = crc.crc32c(chunks[0])
                size = 0
                for chunk in chunks:
                    data.write(chunk)
                    size += len(chunk)
                entry.shard_id, entry.offset, entry.size, entry.crc32c = 0, offset, size, crc.mask(checksum)
                offset += size
            _write_index(index, header, self._entries)


def _write_index(f, header, entries: dict) -> None:
    table.write_table(f, [(b"", header.SerializeToString())]
                      + [(key, entries[key].SerializeToString()) for key in sorted(entries)])


def merge_bundles(prefixes: list[str], merged_prefix: str, delete_old_dirs: bool = False) -> None:
    """Merge the single-shard bundles `prefixes` into one bundle `merged_prefix` (TF's MergeBundles): data files
    are renamed to `merged_prefix.data-0000i-of-0000N`, one index is written for them (atomically, last), and the
    inputs' index files are deleted (and, with `delete_old_dirs`, their directories when left empty).

    Raises:
      InvalidArgumentError: two inputs hold the same whole tensor, or their headers disagree.
      NotFoundError, DataLossError: an input is missing or damaged.
    """
    merged: dict[bytes, object] = {}
    renames: dict[str, int] = {}
    header = None
    for prefix in prefixes:
        reader = BundleReader(prefix)
        if header is None:
            header = reader.header
        elif reader.header.endianness != header.endianness:
            raise errors.InvalidArgumentError(None, None, "Merging bundles with conflicting endianness; inputs "
                                              "corrupted?")
        for key, entry in reader.entries.items():
            existing = merged.get(key)
            if existing is not None:
                if not existing.slices or not entry.slices:
                    raise errors.InvalidArgumentError(None, None, f"Duplicate tensor keyed by "
                                                      f"{key.decode(errors='replace')} encountered, when merging "
                                                      f"prefix: {prefix}")
                existing.slices.extend(entry.slices)
                continue
            if not entry.slices:
                source = data_filename(prefix, entry.shard_id, reader.num_shards)
                entry.shard_id = renames.setdefault(source, len(renames))
            merged[key] = entry
    out = protos.tensor_bundle_pb2.BundleHeaderProto()
    if header is not None:
        out.CopyFrom(header)
    out.num_shards = len(renames)
    directory = os.path.dirname(merged_prefix)
    if directory:
        os.makedirs(directory, exist_ok=True)
    for source, shard in renames.items():
        os.replace(source, data_filename(merged_prefix, shard, len(renames)))
    with atomic_output(index_filename(merged_prefix)) as f:
        _write_index(f, out, merged)
    for prefix in prefixes:
        try:
            os.remove(index_filename(prefix))
            if delete_old_dirs and os.path.dirname(prefix):
                os.rmdir(os.path.dirname(prefix))
        except OSError:
            pass  # TF: best effort


# --- reading -----------------------------------------------------------------------------------------------------
def _data_loss(filename: str, why: str) -> errors.DataLossError:
    return errors.DataLossError(None, None, f"Unable to read checkpoint file {filename}: {why}. The file is "
                                "truncated or corrupted; restore an older checkpoint.")


class BundleReader:
    """The index of the bundle at `prefix`, read when opened; tensors are read from the data files on demand.

    Raises:
      NotFoundError: `prefix.index` does not exist.
      DataLossError: the index is damaged (naming it).
    """

    def __init__(self, prefix: str):
        self.prefix = os.fspath(prefix)
        filename = index_filename(self.prefix)
        try:
            with open(filename, "rb") as f:
                raw = f.read()
        except FileNotFoundError:
            raise errors.NotFoundError(None, None, f"Unsuccessful TensorSliceReader constructor: Failed to find any "
                                       f"matching files for {self.prefix}") from None
        except (IsADirectoryError, PermissionError) as e:
            raise errors.PermissionDeniedError(None, None, f"Cannot read checkpoint {filename}: {e}") from None
        items = table.read_table(raw, filename)
        message = protos.tensor_bundle_pb2
        if not items or items[0][0] != b"":
            raise _data_loss(filename, "failed to seek to header entry")
        try:
            self.header = message.BundleHeaderProto.FromString(items[0][1])
            self.entries = {key: message.BundleEntryProto.FromString(value) for key, value in items[1:]}
        except Exception as e:  # noqa: BLE001 - protobuf's DecodeError and friends
            raise _data_loss(filename, f"an entry is not parseable ({type(e).__name__})") from None
        if self.header.version.min_consumer > VERSION or VERSION in self.header.version.bad_consumers:
            raise errors.InvalidArgumentError(None, None, f"Checkpoint min consumer version "
                                              f"{self.header.version.min_consumer} above current version {VERSION} "
                                              f"for checkpoint {filename}")
        self.num_shards = self.header.num_shards
        self._byteorder = ">" if self.header.endianness == 1 else "<"
        for key, entry in self.entries.items():
            if entry.dtype not in _BY_ENUM or any(d.size < 0 for d in entry.shape.dim) or (
                    not entry.slices and not 0 <= entry.shard_id < max(self.num_shards, 1)):
                raise _data_loss(filename, f"entry {key.decode(errors='replace')} has an invalid dtype, shape or "
                                 "shard")

    # --- metadata -----------------------------------------------------------------------------------------------
    def slice_keys(self) -> set[bytes]:
        """The keys of stored slices (not tensors of their own)."""
        out = set()
        for key, entry in self.entries.items():
            for proto in entry.slices:
                extents = [(e.start, e.length) if e.HasField("length") else (0, -1) for e in proto.extent]
                out.add(slice_key(key.decode(errors="replace"), extents))
        return out

    def tensor_names(self) -> list[str]:
        hidden = self.slice_keys()
        return sorted(k.decode(errors="replace") for k in self.entries if k not in hidden)

    def entry(self, name: str):
        entry = self.entries.get(name.encode())
        if entry is None:
            raise errors.NotFoundError(None, None, f"Key {name} not found in checkpoint")
        return entry

    def has_tensor(self, name: str) -> bool:
        return name.encode() in self.entries

    def dtype(self, name: str) -> _dtypes.DType:
        return _BY_ENUM[self.entry(name).dtype]

    def shape(self, name: str) -> list[int]:
        return [d.size for d in self.entry(name).shape.dim]

    # --- values -------------------------------------------------------------------------------------------------
    def read(self, name: str) -> np.ndarray:
        """The whole tensor `name` (assembled from its slices if it was saved in slices)."""
        entry = self.entry(name)
        if entry.slices:
            return self.read_slice(name, [(0, -1)] * len(entry.shape.dim))
        return self._value(entry, name)

    def read_slice(self, name: str, extents: Extents) -> np.ndarray:
        """The block `extents` of tensor `name`, from the whole tensor or from the stored slices that cover it.

        Raises InvalidArgumentError if the stored slices do not cover it.
        """
        entry = self.entry(name)
        shape = [d.size for d in entry.shape.dim]
        want = _bounds(extents, shape)
        if not entry.slices:
            whole = self._value(entry, name)
            return whole if _is_full(extents, shape) else whole[tuple(slice(lo, hi) for lo, hi in want)]
        dtype = _BY_ENUM[entry.dtype]
        out = np.empty([hi - lo for lo, hi in want], dtype=object if dtype is _dtypes.string else dtype.as_numpy_dtype)
        covered = np.zeros(out.shape, dtype=bool)
        for proto in entry.slices:
            stored_extents = [(e.start, e.length) if e.HasField("length") else (0, -1) for e in proto.extent]
            have = _bounds(stored_extents, shape)
            common = [(max(a, c), min(b, d)) for (a, b), (c, d) in zip(want, have)]
            if any(lo >= hi for lo, hi in common):
                continue
            part = self._value(self.entry_by_key(slice_key(name, stored_extents), name), name)
            target = tuple(slice(lo - w, hi - w) for (lo, hi), (w, _) in zip(common, want))
            out[target] = part[tuple(slice(lo - h, hi - h) for (lo, hi), (h, _) in zip(common, have))]
            covered[target] = True
        if not covered.all():
            raise errors.InvalidArgumentError(None, None, f"Does not have sufficient slices for partitioned tensor "
                                              f"{name} to restore in slice_spec: {extents}")
        return out

    def entry_by_key(self, key: bytes, name: str):
        entry = self.entries.get(key)
        if entry is None:
            raise _data_loss(index_filename(self.prefix), f"a stored slice of {name} has no entry")
        return entry

    def _value(self, entry, name: str) -> np.ndarray:
        dtype = _BY_ENUM[entry.dtype]
        shape = [d.size for d in entry.shape.dim]
        count = math.prod(shape)
        filename = data_filename(self.prefix, entry.shard_id, self.num_shards)
        if dtype is not _dtypes.string and entry.size != count * dtype.size:
            raise _data_loss(index_filename(self.prefix), f"Invalid size in bundle entry: key {name}; stored size "
                             f"{entry.size}; expected size {count * dtype.size}")
        if dtype is _dtypes.string and entry.size < count + 4 * (count > 0):
            raise _data_loss(index_filename(self.prefix), f"Invalid size in bundle entry: key {name}; stored size "
                             f"{entry.size}; expected size is at least {count}")
        buffer = np.empty(entry.size, dtype=np.uint8)
        try:
            with open(filename, "rb", buffering=0) as f:
                f.seek(entry.offset)
                got, view = 0, memoryview(buffer)
                while got < entry.size:  # one read returns at most ~2 GB on Linux
                    chunk = f.readinto(view[got:])
                    if not chunk:
                        break
                    got += chunk
        except FileNotFoundError:
            raise errors.NotFoundError(None, None, f"Checkpoint data file {filename} of {self.prefix} does not "
                                       "exist") from None
        if got != entry.size:
            raise _data_loss(filename, f"tensor {name} needs {entry.size} bytes at offset {entry.offset}; the file "
                             f"has {got}")
        if dtype is _dtypes.string:
            value, checksum = self._strings(buffer, count, filename, name)
        else:
            checksum = crc.crc32c(buffer)
            value = buffer.view(np.dtype(dtype.as_numpy_dtype).newbyteorder(self._byteorder))
            if self._byteorder != "<" and dtype.size > 1:
                value = value.astype(np.dtype(dtype.as_numpy_dtype))
        if crc.unmask(entry.crc32c) != checksum:
            raise _data_loss(filename, f"TensorBundle at {self.prefix} shard {entry.shard_id} ({entry.size} bytes): "
                             f"Checksum does not match for tensor {name}")
        return value.reshape(shape)

    def _strings(self, buffer: np.ndarray, count: int, filename: str, name: str) -> tuple[np.ndarray, int]:
        data = buffer.tobytes()
        out = np.empty(count, dtype=object)
        if not data:
            return out, 0
        pos, lengths, checked = 0, [], bytearray()
        try:
            for _ in range(count):
                length, pos = table.get_varint(data, pos, len(data))
                lengths.append(length)
                checked += struct.pack("<I" if length <= _UINT32_MAX else "<Q", length)
        except ValueError:
            raise _data_loss(filename, f"string lengths of tensor {name} are cut off") from None
        checksum = crc.crc32c(bytes(checked))
        if pos + 4 > len(data) or crc.unmask(struct.unpack_from("<I", data, pos)[0]) != checksum:
            raise _data_loss(filename, f"the length checksum of string tensor {name} does not match")
        checksum = crc.crc32c(data[pos:pos + 4], checksum)
        pos += 4
        if pos + sum(lengths) != len(data):
            raise _data_loss(filename, f"the string lengths of tensor {name} do not match its size")
        checksum = crc.crc32c(data[pos:], checksum)
        for i, length in enumerate(lengths):
            out[i] = data[pos:pos + length]
            pos += length
        return out, checksum

    def debug_string(self) -> str:
        """`name (DT_FLOAT) [2,3]` per tensor, sorted (TF's format; partitioned tensors by their full name)."""
        names = protos.types_pb2.DataType.Name
        return "".join(f"{name} ({names(self.entry(name).dtype)}) [{','.join(map(str, self.shape(name)))}]\n"
                       for name in self.tensor_names())
