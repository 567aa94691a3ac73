"""tf.train.Saver, built as TF 1.15 builds it: SaveV2 / RestoreV2 ops under the "save" name scope, TF's V2
checkpoint files (adplace.lib.io.tensor_bundle), and a SaverDef describing them.

    saver = tf.train.Saver(max_to_keep=3)
    path = saver.save(sess, "/tmp/run/model", global_step=100)    # '/tmp/run/model-100' (.index + .data-*)
    saver.restore(sess, tf.train.latest_checkpoint("/tmp/run"))   # every variable back as it was at step 100

The graph holds `save/Const` (the file name, a placeholder with default "model"), `save/SaveV2` (with its
`tensor_names` and `shape_and_slices` constants), `save/control_dependency` (the file name once saved),
`save/RestoreV2`, one `save/Assign*` per variable and `save/restore_all`; `as_saver_def()` names them, and
`Saver(saver_def=...)` drives an existing graph's save and restore ops (e.g. of an imported meta graph).

Saving is one session step run while no variable-writing step of the session runs, so the checkpoint holds the
state between two steps; its files are written beside their targets, fsynced, then renamed, data files first and
the index last, so a crash mid-save leaves the previous checkpoint at that path intact. Restoring is one step
(RestoreV2 and every Assign), so it is atomic: if any variable cannot be restored, none changes. Checkpoints that
older adplace versions wrote as one `.npz` file restore too.
"""
from __future__ import annotations

import contextlib
import logging
import os
import time

import numpy as np

from adplace.framework import dtypes as _dtypes
from adplace.framework import errors
from adplace.framework.default_graph import colocate_with, control_dependencies, device, get_collection, name_scope
from adplace.framework.device_spec import DeviceSpec, canonical_name
from adplace.framework import meta_graph as _meta_graph
from adplace.framework.graph import GraphKeys, get_default_graph
from adplace.framework.operation import Operation
from adplace.framework.tensor_shape import TensorShape, dims_text
from adplace.lib import protos
from adplace.lib.io.file_io import local_path
from adplace.ops import array_ops, io_ops, state_ops
from adplace.ops.constant_op import constant
from adplace.ops.control_flow_ops import group, with_dependencies
from adplace.progress import status
from adplace.train import saveables
from adplace.train.checkpoint_management import (checkpoint_exists, get_checkpoint_mtimes, open_checkpoint,
                                                  remove_checkpoint, update_checkpoint_state)

_log = logging.getLogger("adplace")

_SAVEABLE_OBJECTS = "saveable_objects"  # TF's GraphKeys.SAVEABLE_OBJECTS
V1, V2 = 1, 2  # SaverDef.CheckpointFormatVersion


def _spec(saved: saveables.SavedSlice) -> str:
    """The shape_and_slice of a saved piece: "" for a whole variable, SaveSliceInfo.spec for a part."""
    return "" if saved.slice_info is None else saved.slice_info.spec


def _cpu0(device_name: str) -> str:
    """The CPU:0 of the task a device belongs to (TF's saveable_object_util.set_cpu0)."""
    spec = DeviceSpec.from_string(device_name or "")
    return spec.replace(device_type="CPU", device_index=0).to_string()


# --- Saver -------------------------------------------------------------------------------------------------------
class Saver:
    """Saves and restores variables (tf.train.Saver), in TF's V2 checkpoint format.

    `var_list` is a dict {checkpoint name: variable, or list of a partitioned variable's parts, or
    PartitionedVariable} or a list (variables named by their op names, partitioned ones by their full name, as TF
    names them). Partitioned variables are saved as TF saves them (one slice entry per part), so they restore into
    any partitioning, or into an unpartitioned variable, and back. `sharded=True` writes one data file per device
    (SaveV2 per device, then MergeV2Checkpoints); `reshape=True` restores a saved tensor into a variable of another
    shape with as many elements. `builder` is not supported; `restore_sequentially` has no effect (restoring is one
    atomic step); only V2 files are written (`write_version=V1` logs a warning).

        w = tf.Variable(tf.zeros([3]), name="w")
        saver = tf.train.Saver()                    # saves "w" (and every other global variable)
        saver.save(sess, "/tmp/m", global_step=7)   # -> "/tmp/m-7": /tmp/m-7.index, /tmp/m-7.data-00000-of-00001
    """

    def __init__(self, var_list=None, reshape: bool = False, sharded: bool = False, max_to_keep: int | None = 5,
                 keep_checkpoint_every_n_hours: float = 10000.0, name: str | None = None,
                 restore_sequentially: bool = False, saver_def=None, builder=None, defer_build: bool = False,
                 allow_empty: bool = False, write_version: int = V2, pad_step_number: bool = False,
                 save_relative_paths: bool = False, filename: str | None = None):
        if builder is not None:
            raise NotImplementedError("tf.train.Saver(builder=) is not supported by adplace: use the default.")
        if defer_build and var_list:
            raise ValueError("If `var_list` is provided then build cannot be deferred. Either set defer_build=False "
                             "or var_list=None.")
        if write_version != V2:
            _log.warning("tf.train.Saver(write_version=%s): adplace writes only the V2 checkpoint format; writing "
                         "V2.", write_version)
        self._var_list = var_list
        self._reshape = reshape
        self._sharded = sharded
        self._max_to_keep = max_to_keep or 0
        self._keep_checkpoint_every_n_hours = keep_checkpoint_every_n_hours
        self._name = name
        self._restore_sequentially = restore_sequentially
        self._allow_empty = allow_empty
        self._pad_step_number = pad_step_number
        self._save_relative_paths = save_relative_paths
        self._filename = filename
        self._last_checkpoints: list[tuple[str, float]] = []
        self._checkpoints_to_be_deleted: list[tuple[str, float]] = []
        self._names_to_slices: dict | None = None  # set when this Saver built the graph (not from a saver_def)
        self.saver_def = saver_def
        self._is_built = False
        self._is_empty = False
        if saver_def is not None:
            self._check_saver_def()
            if name:  # as TF: `name` is then the scope the SaverDef's names were imported under
                self.saver_def = saver_def = _prefixed_saver_def(saver_def, name)
            self._max_to_keep = saver_def.max_to_keep
            self._keep_checkpoint_every_n_hours = saver_def.keep_checkpoint_every_n_hours
            self._sharded = saver_def.sharded
            self._is_built = True
        elif not defer_build:
            self.build()
        self._keep_every_s = self._keep_checkpoint_every_n_hours * 3600.0
        self._next_preserve_time = time.time() + self._keep_every_s
        self._last_preserved_timestamp = time.time()

    def _check_saver_def(self) -> None:
        if not isinstance(self.saver_def, protos.saver_pb2.SaverDef):
            raise ValueError(f"saver_def must be a saver_pb2.SaverDef: {self.saver_def}")
        if not self.saver_def.save_tensor_name:
            raise ValueError(f"saver_def must specify the save_tensor_name: {self.saver_def}")
        if not self.saver_def.restore_op_name:
            raise ValueError(f"saver_def must specify the restore_op_name: {self.saver_def}")

    def build(self) -> None:
        """Build the save and restore ops (once; needed before `save` with defer_build=True)."""
        if self._is_built:
            return
        var_list = self._var_list
        if var_list is None:
            var_list = get_collection(GraphKeys.GLOBAL_VARIABLES) + get_collection(_SAVEABLE_OBJECTS)
        names_to_slices = saveables.names_to_slices(var_list)
        self._is_built = True
        if not names_to_slices:
            if not self._allow_empty:
                raise ValueError("No variables to save")
            self._is_empty = True
            return
        self._names_to_slices = names_to_slices
        # TF's validate_and_slice_inputs: one (name, slice) per saved piece, by name
        items = [(key, saved) for key, slices in sorted(names_to_slices.items()) for saved in slices]
        with name_scope(self._name, "save"):
            filename = array_ops.placeholder_with_default(self._filename or "model", shape=[], name="filename")
            filename = array_ops.placeholder_with_default(filename, shape=[], name="Const")
            if self._sharded:
                per_device = self._group_by_devices(items)
                save_tensor = self._add_sharded_save_ops(filename, per_device)
                restore_op = group(*[self._add_restore_ops(filename, part, "restore_shard", _cpu0(dev))
                                     for dev, part in per_device], name="restore_all")
            else:
                save_tensor = self._add_save_ops(filename, items)
                restore_op = self._add_restore_ops(filename, items, "restore_all", None)
        self.saver_def = protos.saver_pb2.SaverDef(
            filename_tensor_name=filename.name, save_tensor_name=save_tensor.name, restore_op_name=restore_op.name,
            max_to_keep=self._max_to_keep, sharded=self._sharded,
            keep_checkpoint_every_n_hours=self._keep_checkpoint_every_n_hours, version=V2)

    @staticmethod
    def _group_by_devices(items: list) -> list[tuple[str, list]]:
        per_device: dict[str, list] = {}
        for key, saved in items:
            per_device.setdefault(canonical_name(saved.ref.device), []).append((key, saved))
        return sorted(per_device.items())

    @staticmethod
    def _save_op(filename, items: list) -> Operation:
        return io_ops.save_v2(filename, [key for key, _ in items], [_spec(saved) for _, saved in items],
                              [saved.ref for _, saved in items])

    def _add_save_ops(self, filename, items: list):
        return with_dependencies([self._save_op(filename, items)], filename)

    def _add_sharded_save_ops(self, filename, per_device: list):
        """Each device's variables saved to `<prefix>_temp/part-0000i-of-0000N`, then merged into `<prefix>`."""
        with device("/cpu:0"):
            tmp_prefix = io_ops.string_join([filename, os.path.normpath("_temp/part")])
        num_shards = constant(len(per_device), dtype=_dtypes.int32, name="num_shards")
        saves, prefixes, last_device = [], [], None
        for shard, (dev, part) in enumerate(per_device):
            last_device = dev
            with device(_cpu0(dev)):
                prefix = io_ops.sharded_filename(tmp_prefix, shard, num_shards)
                prefixes.append(prefix)
                saves.append(self._add_save_ops(prefix, part))
        with control_dependencies([t.op for t in saves]), device(_cpu0(last_device)):
            merge = io_ops.merge_v2_checkpoints(array_ops.stack(prefixes), filename, delete_old_dirs=True)
            with control_dependencies([merge]):
                return array_ops.identity(filename)

    def _add_restore_ops(self, filename, items: list, name: str, restore_device: str | None) -> Operation:
        """One RestoreV2 for `items`, then one Assign per variable, grouped as `name`."""
        with device(restore_device) if restore_device else contextlib.nullcontext():
            restored = io_ops.restore_v2(filename, [key for key, _ in items], [_spec(saved) for _, saved in items],
                                         [saved.ref.dtype.base_dtype for _, saved in items])
        assigns = []
        for (_, saved), value in zip(items, restored):
            ref = saved.ref
            with colocate_with(ref.op):
                if self._reshape:
                    shape = ref.shape.as_list() if ref.shape.is_fully_defined() else array_ops.shape(ref)
                    value = array_ops.reshape(value, shape)
                validate = not self._reshape and ref.shape.is_fully_defined()
                assigns.append(state_ops.assign(ref, value, validate_shape=validate, name="Assign").op)
        return group(*assigns, name=name)

    def as_saver_def(self):
        """The SaverDef (protos.saver_pb2.SaverDef) naming this Saver's filename tensor, save tensor and restore op."""
        return self.saver_def

    def to_proto(self, export_scope: str | None = None):
        """The SaverDef, names relative to `export_scope` (tf.train.Saver.to_proto)."""
        if export_scope is None or self.saver_def is None:
            return self.saver_def
        out = protos.saver_pb2.SaverDef()
        out.CopyFrom(self.saver_def)
        for field in ("filename_tensor_name", "save_tensor_name", "restore_op_name"):
            value = getattr(out, field)
            if not value.startswith(export_scope.rstrip("/") + "/"):
                return None
            setattr(out, field, value[len(export_scope.rstrip("/")) + 1:])
        return out

    @staticmethod
    def from_proto(saver_def, import_scope: str | None = None) -> "Saver":
        """A Saver driving the ops a SaverDef names, under `import_scope` (tf.train.Saver.from_proto)."""
        return Saver(saver_def=_prefixed_saver_def(saver_def, import_scope) if import_scope else saver_def)

    def export_meta_graph(self, filename: str | None = None, collection_list=None, as_text: bool = False,
                          export_scope: str | None = None, clear_devices: bool = False,
                          clear_extraneous_savers: bool = False, strip_default_attrs: bool = False,
                          save_debug_info: bool = False, graph=None):
        """The default graph's (or `graph`'s) MetaGraphDef with this Saver's SaverDef, written to `filename` when
        given (tf.train.Saver.export_meta_graph)."""
        from adplace.train.meta_graphs import export_meta_graph

        graph = graph or get_default_graph()
        return export_meta_graph(filename=filename, graph_def=graph.as_graph_def(add_shapes=True),
                                 saver_def=self.saver_def, collection_list=collection_list, as_text=as_text,
                                 graph=graph, export_scope=export_scope, clear_devices=clear_devices,
                                 clear_extraneous_savers=clear_extraneous_savers,
                                 strip_default_attrs=strip_default_attrs, save_debug_info=save_debug_info)

    def _write_meta_graph(self, path: str, graph) -> None:
        """Write `graph`'s MetaGraphDef (with this Saver's SaverDef) to `path`, as `save` does by default."""
        self.export_meta_graph(path, graph=graph)

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

        One step runs the SaveV2 op(s) while no variable-writing step of the session runs (steps of other threads
        wait until the files are written), so the checkpoint holds the state between two steps, never half of one;
        the files are written atomically (see the module docstring). With `write_state`, the directory's
        `checkpoint` file records this checkpoint and max_to_keep deletes the oldest. With `write_meta_graph`, the
        session graph's MetaGraphDef is written to `<prefix>.<meta_graph_suffix>` (atomically), as TF does;
        `strip_default_attrs` and `save_debug_info` are accepted for TF's signature.

        Raises:
          ValueError: the parent directory of `save_path` does not exist, or `latest_filename` has a path.
          TypeError: `sess` is not a session.
        """
        if not self._is_built:
            raise RuntimeError("`build()` should be called before save if defer_build==True")
        latest_filename = latest_filename or "checkpoint"
        if os.path.split(latest_filename)[0]:
            raise ValueError("'latest_filename' must not contain path components")
        save_path = local_path(save_path)  # a `file://` URL saves to its local path
        if global_step is not None:
            if not isinstance(global_step, (int, np.integer)):
                global_step = int(sess.run(global_step))
            step_text = f"{global_step:08d}" if self._pad_step_number else str(global_step)
            checkpoint_prefix = f"{save_path}-{step_text}"
        else:
            checkpoint_prefix = save_path
            if os.path.basename(save_path) == latest_filename and not self._sharded:
                raise ValueError(f"'latest_filename' collides with 'save_path': '{latest_filename}' and "
                                 f"'{save_path}'")
        if not hasattr(sess, "run") or not hasattr(sess, "graph"):
            raise TypeError(f"'sess' must be a Session; {sess}")
        save_dir = os.path.dirname(save_path)
        if not os.path.isdir(save_dir or "."):
            raise ValueError(f"Parent directory of {save_path} doesn't exist, can't save.")
        if self._is_empty:
            if write_meta_graph:
                self._write_meta_graph(f"{checkpoint_prefix}.{meta_graph_suffix}", sess.graph)
            return None
        with status(f"saving {self._what()} to {checkpoint_prefix}"), _snapshot(sess):  # between steps: none half applied
            saved = sess.run(self.saver_def.save_tensor_name, {self.saver_def.filename_tensor_name: checkpoint_prefix})
        model_checkpoint_path = saved.decode() if isinstance(saved, bytes) else str(saved)
        if write_state:
            self._record_last_checkpoint(model_checkpoint_path)
            update_checkpoint_state(save_dir, model_checkpoint_path, self.last_checkpoints, latest_filename,
                                    [t for _, t in self._last_checkpoints], self._last_preserved_timestamp,
                                    self._save_relative_paths)
            self._maybe_delete_old_checkpoints(meta_graph_suffix)
        if write_meta_graph:
            self._write_meta_graph(f"{checkpoint_prefix}.{meta_graph_suffix}", sess.graph)
        return model_checkpoint_path

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

        The checkpoint's index is first checked against every variable (names, dtypes, shapes), then one step runs
        RestoreV2 and every Assign, so on any error below no variable changes.

        Raises:
          ValueError: `save_path` is None or no checkpoint exists there.
          NotFoundError: a variable's key is missing from the checkpoint.
          InvalidArgumentError: a saved value's shape or dtype does not match its variable.
          DataLossError: a checkpoint file is truncated or corrupted (naming it).
        """
        if self._is_empty:
            return
        if save_path is None:
            raise ValueError("Can't load save_path when it is None.")
        save_path = local_path(save_path)
        if not checkpoint_exists(save_path):
            raise ValueError(f"The passed save_path is not a valid checkpoint: {save_path}")
        _log.info("Restoring parameters from %s", save_path)
        with status(f"restoring {self._what(with_bytes=False)} from {save_path}"):
            if self._names_to_slices is not None:
                reader = open_checkpoint(save_path)
                for key, slices in self._names_to_slices.items():
                    self._check_entry(reader, key, slices, save_path)
            restore_op = self.saver_def.restore_op_name
            try:
                with _snapshot(sess):  # no other thread's step runs half before, half after the restore
                    sess.run(restore_op, {self.saver_def.filename_tensor_name: save_path})
            except errors.NotFoundError as e:
                raise _restore_error(errors.NotFoundError, e.op, "a Variable name or other graph key that is "
                                     "missing", e.message) from e
            except errors.InvalidArgumentError as e:
                raise _restore_error(errors.InvalidArgumentError, e.op, _MISMATCH, e.message) from e

    def _check_entry(self, reader, key: str, slices: list, save_path: str) -> None:
        """TF's wrapped restore error naming the variable and the file, if `key` cannot restore into `slices`."""
        ref, slice_info = slices[0].ref, slices[0].slice_info
        where = f"\n\t [[variable '{ref.op.name}', checkpoint {save_path}]]"
        if not reader.has_tensor(key):
            raise _restore_error(errors.NotFoundError, ref.op, "a Variable name or other graph key that is missing",
                                 f"Key {key} not found in checkpoint{where}")
        stored_dtype, stored_shape = reader.dtype(key), reader.shape(key)
        expected = ref.dtype.base_dtype
        if stored_dtype is not expected:
            raise _restore_error(errors.InvalidArgumentError, ref.op, _MISMATCH,
                                 f"tensor_name = {key}; expected dtype {expected.name} does not equal original "
                                 f"dtype {stored_dtype.name}{where}")
        if slice_info is not None:
            if [int(d) for d in slice_info.full_shape] != list(stored_shape):
                raise _restore_error(errors.InvalidArgumentError, ref.op, _MISMATCH,
                                     f"tensor_name = {key}; shape in shape_and_slice spec "
                                     f"{dims_text(slice_info.full_shape)} does not match the shape stored in "
                                     f"checkpoint: {dims_text(stored_shape)}{where}")
        elif self._reshape:
            if ref.shape.is_fully_defined() and ref.shape.num_elements() != int(np.prod(stored_shape)):
                raise _restore_error(errors.InvalidArgumentError, ref.op, _MISMATCH,
                                     f"Input to reshape is a tensor with {int(np.prod(stored_shape))} values, but the "
                                     f"requested shape has {ref.shape.num_elements()} (variable {ref.op.name}, "
                                     f"saved shape {dims_text(stored_shape)}){where}")
        elif not ref.shape.is_compatible_with(TensorShape(stored_shape)):
            raise _restore_error(errors.InvalidArgumentError, ref.op, _MISMATCH,
                                 f"Assign requires shapes of both tensors to match. lhs shape= "
                                 f"{dims_text(ref.shape.as_tuple())} rhs shape= {dims_text(stored_shape)}{where}")

    def _what(self, with_bytes: bool = True) -> str:
        """What this Saver saves, for status lines: "2 variables (40 bytes)", or "checkpoint" from a saver_def."""
        if self._names_to_slices is None:
            return "checkpoint"
        refs = [saved.ref for slices in self._names_to_slices.values() for saved in slices]
        text = f"{len(self._names_to_slices)} variables"
        if with_bytes and all(r.shape.is_fully_defined() and r.dtype.base_dtype is not _dtypes.string for r in refs):
            text += f" ({sum(r.shape.num_elements() * r.dtype.base_dtype.size for r in refs)} bytes)"
        return text

    def __repr__(self) -> str:
        return f"<tf.train.Saver of {len(self._names_to_slices or {})} variables>"


_MISMATCH = "a mismatch between the current graph and the graph"


def _prefixed_saver_def(saver_def, scope: str):
    """A copy of `saver_def` whose tensor and op names are under `scope`."""
    prefixed = protos.saver_pb2.SaverDef()
    prefixed.CopyFrom(saver_def)
    for field in ("filename_tensor_name", "save_tensor_name", "restore_op_name"):
        setattr(prefixed, field, f"{scope.rstrip('/')}/{getattr(saver_def, field)}")
    return prefixed


def _snapshot(sess):
    """The session's snapshot block (no variable-writing step runs inside it); a plain block for other sessions."""
    snapshot = getattr(sess, "_snapshot", None)
    return snapshot() if snapshot is not None else contextlib.nullcontext()


def _restore_error(error_class: type, op: Operation, cause: str, original: str) -> errors.OpError:
    """TF's _wrap_restore_error_with_msg: the likely cause first, then the original error."""
    return error_class(None, op, f"Restoring from checkpoint failed. This is most likely due to {cause} from the "
                       f"checkpoint. Please ensure that you have not altered the graph expected based on the "
                       f"checkpoint. Original error:\n\n{original}")


_meta_graph.register_proto_function(GraphKeys.SAVERS, lambda: protos.saver_pb2.SaverDef, Saver.to_proto,
                                    Saver.from_proto)
