"""A variable's VariableDef protocol buffer (Variable.to_proto / from_proto) and the SaveSliceInfo a part of a
partitioned variable carries (tf.Variable.SaveSliceInfo).

The protos are TF's `VariableDef` and `SaveSliceInfoDef`, taken from TensorBoard's copy
(`tensorboard.compat.proto.variable_pb2`), imported only when a proto is built or read.

    part = pv._get_variable_list()[1]           # a part of a [10, 4] variable split in 2 along axis 0
    part._save_slice_info.spec                  # "10 4 5,5:0,4": full shape, then offset,length per axis
    tf.Variable.from_proto(part.to_proto())     # a Variable on the same ops, slice info included
"""
from __future__ import annotations

from adplace.framework.graph import get_default_graph
from adplace.framework.meta_graph import prepend_name_scope, strip_name_scope
from adplace.lib import protos


def variable_pb2():
    """TF's variable protos (TensorBoard's copy, loaded on first use)."""
    return protos.variable_pb2


class SaveSliceInfo:
    """Where a variable sits inside a larger one it is a slice of (tf.Variable.SaveSliceInfo).

    `full_name` and `full_shape` name and size the whole variable (the checkpoint key and the saved shape);
    `var_offset` and `var_shape` say which block of it this variable holds. Built from the four fields or from a
    `SaveSliceInfoDef` proto (`save_slice_info_def`, with `import_scope` prefixed to the name).
    """

    def __init__(self, full_name: str | None = None, full_shape=None, var_offset=None, var_shape=None,
                 save_slice_info_def=None, import_scope: str | None = None):
        if save_slice_info_def:
            self.full_name = prepend_name_scope(save_slice_info_def.full_name, import_scope)
            self.full_shape = list(save_slice_info_def.full_shape)
            self.var_offset = list(save_slice_info_def.var_offset)
            self.var_shape = list(save_slice_info_def.var_shape)
        else:
            self.full_name, self.full_shape = full_name, full_shape
            self.var_offset, self.var_shape = var_offset, var_shape

    @property
    def spec(self) -> str:
        """TF's slice spec: the full shape, then `offset,length` per axis joined by ":" ("10 4 0,5:0,4")."""
        full_shape_text = " ".join(str(int(d)) for d in self.full_shape) + " "
        return full_shape_text + ":".join(f"{int(o)},{int(s)}" for o, s in zip(self.var_offset, self.var_shape))

    def to_proto(self, export_scope: str | None = None):
        """A SaveSliceInfoDef proto, or None when `full_name` is outside `export_scope`."""
        if export_scope is not None and not self.full_name.startswith(export_scope):
            return None
        proto = variable_pb2().SaveSliceInfoDef()
        proto.full_name = strip_name_scope(self.full_name, export_scope)
        proto.full_shape.extend(int(d) for d in self.full_shape)
        proto.var_offset.extend(int(d) for d in self.var_offset)
        proto.var_shape.extend(int(d) for d in self.var_shape)
        return proto

    def __repr__(self) -> str:
        return f"<SaveSliceInfo {self.full_name!r} {self.spec!r}>"


def variable_to_proto(variable, export_scope: str | None = None):
    """`variable`'s VariableDef (TF's RefVariable.to_proto), or None when it is outside `export_scope`."""
    if export_scope is not None and not variable.name.startswith(export_scope):
        return None
    var_def = variable_pb2().VariableDef()
    var_def.variable_name = strip_name_scope(variable._variable.name, export_scope)
    if variable._initial_value is not None:
        var_def.initial_value_name = strip_name_scope(variable._initial_value.name, export_scope)
    var_def.initializer_name = strip_name_scope(variable.initializer.name, export_scope)
    var_def.snapshot_name = strip_name_scope(variable._snapshot.name, export_scope)
    var_def.trainable = variable.trainable
    var_def.synchronization = variable.synchronization.value
    var_def.aggregation = variable.aggregation.value
    if variable._save_slice_info is not None:
        var_def.save_slice_info_def.MergeFrom(variable._save_slice_info.to_proto(export_scope=export_scope))
    return var_def


def init_from_proto(variable, variable_def, import_scope: str | None, validate) -> None:
    """Point `variable` at the existing ops `variable_def` names in the default graph (TF's _init_from_proto).

    `validate` is variables.validate_synchronization_aggregation_trainable, passed in to keep imports one way.

    Raises:
      TypeError: `variable_def` is not a VariableDef.
      KeyError: an op it names is not in the default graph.
    """
    if not isinstance(variable_def, variable_pb2().VariableDef):
        raise TypeError(f"variable_def must be a VariableDef proto, got {type(variable_def).__name__}")
    graph = get_default_graph()

    def element(name: str):
        return graph.as_graph_element(prepend_name_scope(name, import_scope))

    variable._variable = element(variable_def.variable_name)
    variable._initializer_op = element(variable_def.initializer_name)
    variable._initial_value = element(variable_def.initial_value_name) if variable_def.initial_value_name else None
    variable._synchronization, variable._aggregation, variable._trainable = validate(
        variable_def.synchronization, variable_def.aggregation, variable_def.trainable, variable_def.variable_name)
    variable._snapshot = element(variable_def.snapshot_name)
    variable._save_slice_info = (SaveSliceInfo(save_slice_info_def=variable_def.save_slice_info_def,
                                               import_scope=import_scope)
                                 if variable_def.HasField("save_slice_info_def") else None)
    variable._constraint = None
