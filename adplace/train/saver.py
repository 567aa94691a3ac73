"""tf.train.Saver and checkpoint files: save variables in one step, restore them in one atomic step.

    saver = tf.train.Saver(max_to_keep=3)
    path = saver.save(sess, "/tmp/run/model", global_step=100)    # '/tmp/run/model-100'
    saver.restore(sess, tf.train.latest_checkpoint("/tmp/run"))   # every variable back as it was at step 100

A checkpoint prefix `P` is one file, `P.npz` (format in checkpoint_management.py). No `.meta` graph file is written:
adplace graphs are built in Python and cannot be serialised. Files are written to a temporary file beside their
target, fsynced, then renamed over it, so a crash mid-save leaves the previous checkpoint at that path intact, and
the next save into that directory removes the temporary a killed save left behind.
"""
from __future__ import annotations

import contextlib
import logging
import os
import time

import numpy as np

from adplace.framework import errors
from adplace.framework.default_graph import colocate_with, get_collection, name_scope
from adplace.framework.graph import GraphKeys
from adplace.framework.operation import Operation
from adplace.framework.tensor_shape import TensorShape, dims_text
from adplace.ops import array_ops, state_ops
from adplace.ops.control_flow_ops import group
from adplace.progress import status
from adplace.train import saveables
from adplace.train.checkpoint_management import (CheckpointReader, checkpoint_exists, data_file,
                                                  get_checkpoint_mtimes, remove_checkpoint, update_checkpoint_state,
                                                  write_data_file)

_log = logging.getLogger("adplace")

_SAVEABLE_OBJECTS = "saveable_objects"  # TF's GraphKeys.SAVEABLE_OBJECTS


# --- Saver -------------------------------------------------------------------------------------------------------
class Saver:
    """Saves and restores variables (tf.train.Saver).

    Restoring is one session step that assigns every variable from a fed placeholder, so it is atomic: if any
    variable cannot be restored, none changes. `var_list` may hold PartitionedVariables (or, in a dict, lists of
    their parts): the checkpoint holds the whole tensor under the variable's name (see saveables.py), so it
    restores into any partitioning, or into an unpartitioned variable. Args match TF 1.15; `reshape`, `sharded`, `saver_def` and `builder`
    are not supported; `write_version`, `restore_sequentially` and `filename` are accepted and have no effect.

        w = tf.Variable(tf.zeros([3]), name="w")
        saver = tf.train.Saver()                 # saves "w" (and every other global variable)
        saver.save(sess, "/tmp/m", global_step=7)   # -> "/tmp/m-7", file /tmp/m-7.npz
    """

    def __init__(self, var_list=None, reshape: bool = False, sharded: bool = False, max_to_keep: int | None = 5,
                 keep_checkpoint_every_n_hours: float = 10000.0, name: str | None = None,
                 restore_sequentially: bool = False, saver_def=None, builder=None, defer_build: bool = False,
                 allow_empty: bool = False, write_version: int = 2, pad_step_number: bool = False,
                 save_relative_paths: bool = False, filename: str | None = None):
        if reshape or sharded or saver_def is not None or builder is not None:
            raise NotImplementedError("tf.train.Saver(reshape=, sharded=, saver_def=, builder=) is not supported "
                                      "by adplace: use the defaults.")
        self._var_list = var_list
        self._max_to_keep = max_to_keep or 0
        self._keep_every_s = keep_checkpoint_every_n_hours * 3600.0
        self._next_preserve_time = time.time() + self._keep_every_s
        self._last_preserved_timestamp = time.time()
        self._name = name
        self._allow_empty = allow_empty
        self._pad_step_number = pad_step_number
        self._save_relative_paths = save_relative_paths
        self._last_checkpoints: list[tuple[str, float]] = []
        self._checkpoints_to_be_deleted: list[tuple[str, float]] = []
        self._is_built = False
        self._is_empty = False
        if not defer_build:
            self.build()

    def build(self) -> None:
        """Build the restore ops: per variable, under the "save" scope, a placeholder and an Assign next to it."""
        if self._is_built:
            return
        var_list = self._var_list
        if var_list is None:
            var_list = get_collection(GraphKeys.GLOBAL_VARIABLES) + get_collection(_SAVEABLE_OBJECTS)
        self._names_to_slices = saveables.names_to_slices(var_list)
        self._is_built = True
        if not self._names_to_slices:
            if not self._allow_empty:
                raise ValueError("No variables to save")
            self._is_empty = True
            return
        self._placeholders: dict[str, list] = {}  # per key, one placeholder per slice
        self._assign_ops: dict[str, list[Operation]] = {}
        with name_scope(self._name, "save"):
            for key, slices in self._names_to_slices.items():
                for saved in slices:
                    with colocate_with(saved.ref.op):  # names: save/restore_value, save/Assign, then _1, _2, ...
                        value = array_ops.placeholder(saved.ref.dtype.base_dtype, shape=None, name="restore_value")
                        assign = state_ops.assign(saved.ref, value, name="Assign").op
                    self._placeholders.setdefault(key, []).append(value)
                    self._assign_ops.setdefault(key, []).append(assign)
            self._restore_op = group(*[op for ops in self._assign_ops.values() for op in ops], name="restore_all")

    # --- saving ---------------------------------------------------------------------------------------------------
    @property
    def last_checkpoints(self) -> list[str]:
        """Prefixes of the checkpoints not yet deleted, oldest first."""
        return [path for path, _ in self._last_checkpoints]

    def set_last_checkpoints(self, last_checkpoints: list[str]) -> None:
        self.set_last_checkpoints_with_time([(p, time.time()) for p in last_checkpoints])

    def set_last_checkpoints_with_time(self, last_checkpoints_with_time: list[tuple[str, float]]) -> None:
        self._last_checkpoints = list(last_checkpoints_with_time)

    def recover_last_checkpoints(self, checkpoint_paths: list[str]) -> None:
        """Adopt existing checkpoints (e.g. after a restart), so max_to_keep also deletes them."""
        existing = [p for p in checkpoint_paths if checkpoint_exists(p)]
        self.set_last_checkpoints_with_time(list(zip(existing, get_checkpoint_mtimes(existing))))

    def save(self, sess, save_path: str, global_step=None, latest_filename: str | None = None,
             meta_graph_suffix: str = "meta", write_meta_graph: bool = True, write_state: bool = True,
             strip_default_attrs: bool = False, save_debug_info: bool = False) -> str | None:
        """Save every variable's value as checkpoint `save_path[-global_step]`; returns that prefix.

        All values are fetched in one `sess.run` while no variable-writing step of the session runs (steps of other
        threads wait for it, a few microseconds), so the checkpoint holds the state between two steps, never half
        of one; then they are written atomically (see the module docstring). With
        `write_state`, the directory's `checkpoint` file records this checkpoint and max_to_keep deletes the oldest.
        `write_meta_graph` is accepted, but no .meta file is written: adplace graphs cannot be serialised.

        Raises:
          ValueError: the parent directory of `save_path` does not exist, or `latest_filename` has a path.
          TypeError: `sess` is not a session.
        """
        if not self._is_built:
            raise RuntimeError("`build()` should be called before save if defer_build==True")
        latest_filename = latest_filename or "checkpoint"
        if os.path.split(latest_filename)[0]:
            raise ValueError("'latest_filename' must not contain path components")
        save_path = os.fspath(save_path)
        if global_step is not None:
            if not isinstance(global_step, (int, np.integer)):
                global_step = int(sess.run(global_step))
            step_text = f"{global_step:08d}" if self._pad_step_number else str(global_step)
            checkpoint_prefix = f"{save_path}-{step_text}"
        else:
            checkpoint_prefix = save_path
            if os.path.basename(save_path) == latest_filename:
                raise ValueError(f"'latest_filename' collides with 'save_path': '{latest_filename}' and "
                                 f"'{save_path}'")
        if not hasattr(sess, "run") or not hasattr(sess, "graph"):
            raise TypeError(f"'sess' must be a Session; {sess}")
        save_dir = os.path.dirname(save_path)
        if not os.path.isdir(save_dir or "."):
            raise ValueError(f"Parent directory of {save_path} doesn't exist, can't save.")
        if self._is_empty:
            return None
        refs = [saved.ref for slices in self._names_to_slices.values() for saved in slices]
        with _snapshot(sess):  # between steps: no training step of another thread is half applied
            fetched = iter(sess.run(refs))
        values = {key: saveables.assemble(slices, [next(fetched) for _ in slices])
                  for key, slices in self._names_to_slices.items()}
        nbytes = sum(np.asarray(v).nbytes for v in values.values())
        with status(f"saving {len(values)} variables ({nbytes} bytes) to {data_file(checkpoint_prefix)}"):
            self._write(checkpoint_prefix, values)
        if write_state:
            self._record_last_checkpoint(checkpoint_prefix)
            update_checkpoint_state(save_dir, checkpoint_prefix, self.last_checkpoints, latest_filename,
                                    [t for _, t in self._last_checkpoints], self._last_preserved_timestamp,
                                    self._save_relative_paths)
            self._maybe_delete_old_checkpoints(meta_graph_suffix)
        return checkpoint_prefix

    def _write(self, checkpoint_prefix: str, values: dict) -> None:
        """Write `values` to the checkpoint's data file, OS errors turned into TF's error classes."""
        dtypes = {key: slices[0].ref.dtype.base_dtype for key, slices in self._names_to_slices.items()}
        try:
            write_data_file(checkpoint_prefix, values, dtypes)
        except PermissionError as e:
            raise errors.PermissionDeniedError(None, None, f"Cannot write checkpoint {data_file(checkpoint_prefix)}"
                                               f": {e}. Choose a writable directory.") from e
        except OSError as e:
            raise errors.UnknownError(None, None, f"Failed to write checkpoint {data_file(checkpoint_prefix)}: "
                                      f"{e}. The previous checkpoint at this path, if any, is unchanged.") from e

    def _record_last_checkpoint(self, checkpoint_prefix: str) -> None:
        if not self._max_to_keep:
            return
        self._last_checkpoints = [(p, t) for p, t in self._last_checkpoints if p != checkpoint_prefix]
        self._last_checkpoints.append((checkpoint_prefix, time.time()))
        if len(self._last_checkpoints) > self._max_to_keep:
            self._checkpoints_to_be_deleted.append(self._last_checkpoints.pop(0))

    def _maybe_delete_old_checkpoints(self, meta_graph_suffix: str) -> None:
        """Delete checkpoints past max_to_keep, except one every keep_checkpoint_every_n_hours."""
        while self._checkpoints_to_be_deleted:
            prefix, saved_at = self._checkpoints_to_be_deleted.pop(0)
            if saved_at > self._next_preserve_time:
                self._next_preserve_time += self._keep_every_s
                self._last_preserved_timestamp = saved_at
                continue
            try:
                remove_checkpoint(prefix, meta_graph_suffix=meta_graph_suffix)
            except OSError as e:
                _log.warning("Ignoring: failed to delete old checkpoint %s: %s", prefix, e)

    # --- restoring ------------------------------------------------------------------------------------------------
    def restore(self, sess, save_path: str) -> None:
        """Restore every variable of this Saver from checkpoint `save_path`, all or nothing.

        The whole checkpoint is read and checked against every variable before one `sess.run` assigns them all,
        so on any error below no variable changes.

        Raises:
          ValueError: `save_path` is None or no checkpoint exists there.
          NotFoundError: a variable's key is missing from the checkpoint.
          InvalidArgumentError: a saved value's shape or dtype does not match its variable.
          DataLossError: the checkpoint file is truncated, corrupted or not an adplace checkpoint.
        """
        if self._is_empty:
            return
        if save_path is None:
            raise ValueError("Can't load save_path when it is None.")
        save_path = os.fspath(save_path)
        if not checkpoint_exists(save_path):
            raise ValueError(f"The passed save_path is not a valid checkpoint: {save_path}")
        _log.info("Restoring parameters from %s", save_path)
        with status(f"restoring {len(self._names_to_slices)} variables from {save_path}"):
            reader = CheckpointReader(save_path)
            feeds = {}
            for key, slices in self._names_to_slices.items():
                whole = self._checked_value(reader, key, slices, save_path)
                for saved, placeholder in zip(slices, self._placeholders[key]):
                    feeds[placeholder] = saveables.piece(whole, saved)
            with _snapshot(sess):  # no other thread's step runs half before, half after the restore
                sess.run(self._restore_op, feeds)

    def _checked_value(self, reader: CheckpointReader, key: str, slices: list, save_path: str) -> np.ndarray:
        """The saved whole tensor of `key`, or TF's wrapped restore error naming the variable and the file."""
        assign_op, ref, slice_info = self._assign_ops[key][0], slices[0].ref, slices[0].slice_info
        where = f"\n\t [[{{{{node {assign_op.name}}}}}: variable '{ref.op.name}', checkpoint {save_path}]]"
        if not reader.has_tensor(key):
            raise _restore_error(errors.NotFoundError, assign_op, "a Variable name or other graph key that is missing",
                                 f"Key {key} not found in checkpoint{where}")
        entry = reader._entries[key]
        expected = ref.dtype.base_dtype
        if entry.dtype is not expected:
            raise _restore_error(errors.InvalidArgumentError, assign_op, _MISMATCH,
                                 f"tensor_name = {key}; expected dtype {expected.name} does not equal original "
                                 f"dtype {entry.dtype.name}{where}")
        if slice_info is not None:
            if [int(d) for d in slice_info.full_shape] != list(entry.shape):
                raise _restore_error(errors.InvalidArgumentError, assign_op, _MISMATCH,
                                     f"tensor_name = {key}; shape in shape_and_slice spec "
                                     f"{dims_text(slice_info.full_shape)} does not match the shape stored in "
                                     f"checkpoint: {dims_text(entry.shape)}{where}")
        elif not ref.shape.is_compatible_with(TensorShape(entry.shape)):
            raise _restore_error(errors.InvalidArgumentError, assign_op, _MISMATCH,
                                 f"Assign requires shapes of both tensors to match. lhs shape= "
                                 f"{dims_text(ref.shape.as_tuple())} rhs shape= {dims_text(entry.shape)}{where}")
        return reader.get_tensor(key)

    def __repr__(self) -> str:
        return f"<tf.train.Saver of {len(getattr(self, '_names_to_slices', {}))} variables>"


_MISMATCH = "a mismatch between the current graph and the graph"


def _snapshot(sess):
    """The session's snapshot block (no variable-writing step runs inside it); a plain block for other sessions."""
    snapshot = getattr(sess, "_snapshot", None)
    return snapshot() if snapshot is not None else contextlib.nullcontext()


def _restore_error(error_class: type, op: Operation, cause: str, original: str) -> errors.OpError:
    """TF's _wrap_restore_error_with_msg: the likely cause first, then the original error."""
    return error_class(None, op, f"Restoring from checkpoint failed. This is most likely due to {cause} from the "
                       f"checkpoint. Please ensure that you have not altered the graph expected based on the "
                       f"checkpoint. Original error:\n\n{original}")
