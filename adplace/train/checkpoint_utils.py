"""Reading checkpoints outside a Saver (TF's checkpoint_utils and py_checkpoint_reader): NewCheckpointReader,
load_checkpoint, list_variables, load_variable, and init_from_checkpoint, which makes variables' initializers
read their values from a checkpoint.

    reader = tf.train.NewCheckpointReader("/tmp/run/model-100")
    reader.get_variable_to_shape_map()           # {"w": [3, 4], "global_step": []}
    tf.train.init_from_checkpoint("/tmp/run", {"encoder/": "new_encoder/"})   # whole scopes, TF's rules

Both checkpoint formats are read: TF's V2 bundles and adplace's older `.npz` (checkpoint_management.open_checkpoint).
"""
from __future__ import annotations

import logging
import os
import time
from typing import Callable, Iterator

import numpy as np

from adplace.framework import dtypes as _dtypes
from adplace.framework import errors
from adplace.framework.default_graph import device as _device
from adplace.ops import io_ops, state_ops
from adplace.ops.variables import Variable
from adplace.train.checkpoint_management import latest_checkpoint, open_checkpoint

_log = logging.getLogger("adplace")


class CheckpointReader:
    """The tensors of one checkpoint (TF's CheckpointReader, from tf.train.NewCheckpointReader).

    Raises (when opened):
      NotFoundError: no checkpoint exists at `prefix`.
      DataLossError: its index (or `.npz`) is damaged, naming the file; a damaged tensor raises when read.
    """

    def __init__(self, prefix: str):
        self._prefix = os.fspath(prefix)
        self._reader = open_checkpoint(self._prefix)
        self._names = self._reader.tensor_names()

    def has_tensor(self, name: str) -> bool:
        return name in self._names

    def get_tensor(self, name: str) -> np.ndarray:
        """The value saved under `name` (a partitioned tensor assembled whole); NotFoundError if none is."""
        if name not in self._names:
            raise errors.NotFoundError(None, None, f"Key {name} not found in checkpoint {self._prefix}")
        return self._reader.read(name)

    def get_variable_to_shape_map(self) -> dict[str, list[int]]:
        return {name: self._reader.shape(name) for name in self._names}

    def get_variable_to_dtype_map(self) -> dict[str, _dtypes.DType]:
        return {name: self._reader.dtype(name) for name in self._names}

    def debug_string(self) -> bytes:
        return self._reader.debug_string().encode()


def NewCheckpointReader(filepattern: str) -> CheckpointReader:  # noqa: N802 - TF's public name
    """A CheckpointReader of the checkpoint prefix `filepattern` (tf.train.NewCheckpointReader)."""
    return CheckpointReader(filepattern)


def _checkpoint_filename(ckpt_dir_or_file: str) -> str:
    ckpt_dir_or_file = os.fspath(ckpt_dir_or_file)
    if os.path.isdir(ckpt_dir_or_file):
        prefix = latest_checkpoint(ckpt_dir_or_file)
        if prefix is None:
            raise ValueError(f"Couldn't find 'checkpoint' file or checkpoints in given directory {ckpt_dir_or_file}")
        return prefix
    return ckpt_dir_or_file


def load_checkpoint(ckpt_dir_or_file: str) -> CheckpointReader:
    """A CheckpointReader for a checkpoint prefix, or for the latest checkpoint of a directory."""
    return CheckpointReader(_checkpoint_filename(ckpt_dir_or_file))


def list_variables(ckpt_dir_or_file: str) -> list[tuple[str, list[int]]]:
    """[(name, shape)] of every tensor in a checkpoint, sorted by name (tf.train.list_variables)."""
    return sorted(load_checkpoint(ckpt_dir_or_file).get_variable_to_shape_map().items())


def load_variable(ckpt_dir_or_file: str, name: str) -> np.ndarray:
    """The value saved under `name` ("w" or "w:0") in a checkpoint (tf.train.load_variable)."""
    return load_checkpoint(ckpt_dir_or_file).get_tensor(name[:-2] if name.endswith(":0") else name)


def wait_for_new_checkpoint(checkpoint_dir: str, last_checkpoint: str | None = None, seconds_to_sleep: float = 1,
                            timeout: float | None = None) -> str | None:
    """The latest checkpoint of `checkpoint_dir` once it differs from `last_checkpoint`, polling every
    `seconds_to_sleep`; None when `timeout` seconds pass first (None: wait for ever)."""
    deadline = None if timeout is None else time.time() + timeout
    while True:
        path = latest_checkpoint(checkpoint_dir)
        if path is not None and path != last_checkpoint:
            return path
        if deadline is not None and time.time() + seconds_to_sleep > deadline:
            return None
        time.sleep(seconds_to_sleep)


def checkpoints_iterator(checkpoint_dir: str, min_interval_secs: float = 0, timeout: float | None = None,
                         timeout_fn: Callable[[], bool] | None = None) -> Iterator[str]:
    """Yield each new checkpoint of `checkpoint_dir` as it appears, at most one per `min_interval_secs`
    (tf.train.checkpoints_iterator). After `timeout` seconds without a new one, stop, unless `timeout_fn` is
    given and returns False: then keep waiting."""
    path = None
    while True:
        new_path = wait_for_new_checkpoint(checkpoint_dir, path, timeout=timeout)
        if new_path is None:
            if timeout_fn is None or timeout_fn():
                return
            continue
        started = time.time()
        path = new_path
        yield path
        pause = started + min_interval_secs - time.time()
        if pause > 0:
            time.sleep(pause)


# --- init_from_checkpoint ----------------------------------------------------------------------------------------
def _store_vars() -> dict:
    from adplace.ops.variable_scope import _get_default_variable_store
    return _get_default_variable_store()._vars


def _partitioned(name: str, store: dict) -> list | None:
    """The parts `name/part_0`, `name/part_1`, ... of a partitioned variable in the store, or None."""
    parts = []
    while f"{name}/part_{len(parts)}" in store:
        parts.append(store[f"{name}/part_{len(parts)}"])
    return parts or None


def _is_variable(value) -> bool:
    return isinstance(value, Variable)


def _set_initializer(var: Variable, ckpt_file: str, tensor_name: str, slice_spec: str) -> None:
    """Make `var`'s initializer assign it from the checkpoint (TF's _set_checkpoint_initializer)."""
    with _device(var.device), _device("/cpu:0"):
        restored = io_ops.restore_v2(ckpt_file, [tensor_name], [slice_spec], [var.dtype.base_dtype],
                                     name="checkpoint_initializer")[0]
    validate = var.get_shape().is_fully_defined()
    init_op = state_ops.assign(var._ref(), restored, validate_shape=validate).op
    var._initializer_op = init_op
    restored.set_shape(var.get_shape())
    var._initial_value = restored


def _set_variable_or_list_initializer(var_or_list, ckpt_file: str, tensor_name: str) -> None:
    if isinstance(var_or_list, (list, tuple)):
        slice_name = None
        for v in var_or_list:
            info = v._get_save_slice_info()
            if info is None:
                raise ValueError(f"Variable {v.name} in a list of variables to initialize from {tensor_name} is "
                                 "not a slice of a partitioned variable")
            if slice_name is None:
                slice_name = info.full_name
            elif slice_name != info.full_name:
                raise ValueError(f"Slices must all be from the same tensor: {slice_name} != {info.full_name}")
            _set_initializer(v, ckpt_file, tensor_name, info.spec)
    else:
        _set_initializer(var_or_list, ckpt_file, tensor_name, "")


def init_from_checkpoint(ckpt_dir_or_file: str, assignment_map: dict) -> None:
    """Replace the initializers of variables with ones that load them from a checkpoint (TF's semantics).

    `assignment_map` maps a checkpoint tensor name to a variable (its name in the variable store, a Variable, or
    a list of a partitioned variable's parts), or a checkpoint scope `"old/"` to a variable scope `"new/"`
    (every variable under it, partitioned ones by their full name); `"/"` stands for the root.

    Raises:
      ValueError: a tensor is missing from the checkpoint, its shape does not match its variable's, or a scope
        is mapped to a non-scope.
    """
    ckpt_file = _checkpoint_filename(ckpt_dir_or_file)
    variable_map = load_checkpoint(ckpt_dir_or_file).get_variable_to_shape_map()
    store = _store_vars()
    for tensor_name_in_ckpt, current in sorted(assignment_map.items(), key=lambda kv: kv[0]):
        if _is_variable(current) or (isinstance(current, list) and all(_is_variable(v) for v in current)):
            var = current
        else:
            var = store.get(current) or _partitioned(current, store)
        if var is not None:
            if tensor_name_in_ckpt not in variable_map:
                raise ValueError(f"Tensor {tensor_name_in_ckpt} is not found in {ckpt_dir_or_file} checkpoint "
                                 f"{variable_map}")
            if _is_variable(var) and not var.get_shape().is_compatible_with(variable_map[tensor_name_in_ckpt]):
                raise ValueError(f"Shape of variable {var.name} ({var.get_shape()}) doesn't match with shape of "
                                 f"tensor {tensor_name_in_ckpt} ({variable_map[tensor_name_in_ckpt]}) from "
                                 "checkpoint reader.")
            _set_variable_or_list_initializer(var, ckpt_file, tensor_name_in_ckpt)
            continue
        scopes = current[:current.rindex("/")] if "/" in current else ""
        if not tensor_name_in_ckpt.endswith("/"):
            raise ValueError(f"Assignment map with scope only name {scopes} should map to scope only "
                             f"{tensor_name_in_ckpt}. Should be 'scope/': 'other_scope/'.")
        scope_variables = set()
        for var_name in store:
            if not scopes or var_name.startswith(scopes + "/"):
                scope_variables.add(var_name[:var_name.index("/part_")] if "/part_" in var_name else var_name)
        for var_name in sorted(scope_variables):
            full_tensor_name = var_name[len(scopes):]
            if current != "/":
                full_tensor_name = full_tensor_name[1:]
            if tensor_name_in_ckpt != "/":
                full_tensor_name = tensor_name_in_ckpt + full_tensor_name
            full_tensor_name = full_tensor_name[:-1] if full_tensor_name.endswith("/") else full_tensor_name
            if full_tensor_name not in variable_map:
                raise ValueError(f"Tensor {full_tensor_name} ({var_name[len(scopes) + 1:]} in {tensor_name_in_ckpt}) "
                                 f"is not found in {ckpt_dir_or_file} checkpoint")
            _set_variable_or_list_initializer(store.get(var_name) or _partitioned(var_name, store), ckpt_file,
                                              full_tensor_name)
            _log.debug("Initialize variable %s from checkpoint %s with %s", var_name, ckpt_dir_or_file,
                       full_tensor_name)
