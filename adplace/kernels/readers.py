"""Kernels of TF's reader ops (adplace/ops/reader_ops.py), CPU only as in TF.

A creation op (TextLineReaderV2, ...) finds or makes its reader (kernels/reader_store.py) in the session's resources
(`ctx.resources`) on its first run and outputs the same handle on every run, a 0-d object array holding it, as the
queue kernels do: with a `shared_name`, the reader every session on the target shares; without, this op's own in
this session. The verbs take the handle; reads wait for work through the queue's blocking dequeue (`ctx.waits`).
"""
from __future__ import annotations

import numpy as np

from adplace.framework.errors import InvalidArgumentError
from adplace.kernels import reader_store
from adplace.kernels.queues import queue_of
from adplace.kernels.registration import NO_GPU, handle_of, kernel, object_scalar


def _int_attr(op, name: str, default: int = 0) -> int:
    value = int(op._attrs.get(name, default) or 0)
    if value < 0:
        raise InvalidArgumentError(None, op, f"{name} must be >= 0 not {value}")
    return value


def _text_line(op):
    return reader_store.TextLineReader(op.name, _int_attr(op, "skip_header_lines"))


def _fixed_length(op):
    return reader_store.FixedLengthRecordReader(
        op.name, _int_attr(op, "record_bytes"), _int_attr(op, "header_bytes"), _int_attr(op, "footer_bytes"),
        _int_attr(op, "hop_bytes"), _text(op._attrs.get("encoding") or ""))


def _text(value) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


MAKERS = {
    "TextLineReaderV2": _text_line,
    "FixedLengthRecordReaderV2": _fixed_length,
    "TFRecordReaderV2": lambda op: reader_store.TFRecordReader(op.name, _text(op._attrs.get("compression_type") or "")),
    "WholeFileReaderV2": lambda op: reader_store.WholeFileReader(op.name),
    "IdentityReaderV2": lambda op: reader_store.IdentityReader(op.name),
}


def _creation(op, ctx):
    make = MAKERS[op.type]
    make(op)  # attrs checked when the plan is built, as TF's kernel constructor does
    shared_name = _text(op._attrs.get("shared_name") or "")
    name = ctx.resource_name(op, shared_name)
    handle = None

    def check(reader) -> None:
        wanted = make(op)
        if type(reader) is not type(wanted) or reader.settings != wanted.settings:
            raise InvalidArgumentError(None, op, f"Shared reader '{shared_name}' is a {reader.name} with other "
                                       f"attrs than op '{op.name}' ({op.type}) asks for")

    def run():
        nonlocal handle
        if handle is None:
            reader = ctx.resources.lookup_or_create(_text(op._attrs.get("container") or ""), name,
                                                    bool(shared_name), lambda: make(op), check)
            handle = object_scalar(reader)
        return handle
    return run


for _op_type in MAKERS:
    kernel(_op_type, cpu_types=None, gpu_types=NO_GPU)(_creation)


def _reader(handle, op) -> reader_store.Reader:
    return handle_of(handle, reader_store.Reader, op, "a reader handle")


def _strings(values: list, shape: tuple) -> np.ndarray:
    out = np.empty(shape, dtype=object)
    if shape:
        out[:] = values
    else:
        out[()] = values[0]
    return out


@kernel("ReaderReadV2", cpu_types=None, gpu_types=NO_GPU)
def _read(op, ctx):
    waits = ctx.waits

    def read(handle, queue):
        keys, values = _reader(handle, op).read_up_to(1, queue_of(queue, op), waits, op)
        return _strings(keys, ()), _strings(values, ())
    return read


@kernel("ReaderReadUpToV2", cpu_types=None, gpu_types=NO_GPU)
def _read_up_to(op, ctx):
    waits = ctx.waits

    def read_up_to(handle, queue, num_records):
        n = int(np.asarray(num_records))
        keys, values = _reader(handle, op).read_up_to(n, queue_of(queue, op), waits, op)
        return _strings(keys, (len(keys),)), _strings(values, (len(values),))
    return read_up_to


@kernel("ReaderNumRecordsProducedV2", cpu_types=None, gpu_types=NO_GPU)
def _num_records_produced(op, ctx):
    return lambda handle: np.asarray(_reader(handle, op).counts()[0], dtype=np.int64)


@kernel("ReaderNumWorkUnitsCompletedV2", cpu_types=None, gpu_types=NO_GPU)
def _num_work_units_completed(op, ctx):
    return lambda handle: np.asarray(_reader(handle, op).counts()[1], dtype=np.int64)


@kernel("ReaderResetV2", cpu_types=None, gpu_types=NO_GPU)
def _reset(op, ctx):
    waits = ctx.waits
    return lambda handle: _reader(handle, op).reset(waits, op)


@kernel("ReaderSerializeStateV2", cpu_types=None, gpu_types=NO_GPU)
def _serialize_state(op, ctx):
    return lambda handle: _strings([_reader(handle, op).serialize_state(op)], ())


@kernel("ReaderRestoreStateV2", cpu_types=None, gpu_types=NO_GPU)
def _restore_state(op, ctx):
    waits = ctx.waits

    def restore_state(handle, state):
        state = np.asarray(state, dtype=object)
        if state.ndim != 0:
            raise InvalidArgumentError(None, op, f"Reader state must be scalar, but had shape: {list(state.shape)}")
        value = state[()]
        _reader(handle, op).restore_state(value.encode() if isinstance(value, str) else bytes(value), waits, op)
    return restore_state
