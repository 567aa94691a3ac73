"""TF's protocol-buffer messages, as the `tensorboard` package ships them (`tensorboard.compat.proto`), loaded on
first use so that `import adplace` stays fast:

    from adplace.lib import protos
    graph_def = protos.graph_pb2.GraphDef()

`tensor_bundle_pb2` holds the messages of a V2 checkpoint's index (BundleHeaderProto, BundleEntryProto) and
TensorSliceProto, which tensorboard does not ship (nor `example_pb2` / `feature_pb2`, TF's Example protos,
declared in example_protos.py, nor `queue_runner_pb2`, declared in queue_runner_protos.py): they are declared here, with the field numbers of TF's
tensor_bundle.proto and tensor_slice.proto, through protobuf's descriptor API, on tensorboard's DataType,
TensorShapeProto and VersionDef. Wire-compatible with TF's; their full names live in the `adplace` package so that
they never clash with TensorFlow's own when both are imported.
"""
from __future__ import annotations

import importlib
import threading
import types

_TENSORBOARD = frozenset({
    "allocation_description_pb2", "attr_value_pb2", "cluster_pb2", "config_pb2", "cost_graph_pb2", "event_pb2",
    "function_pb2", "graph_pb2", "histogram_pb2", "meta_graph_pb2", "node_def_pb2", "op_def_pb2",
    "resource_handle_pb2", "rewriter_config_pb2", "saver_pb2", "step_stats_pb2", "summary_pb2",
    "tensor_description_pb2", "tensor_pb2", "tensor_shape_pb2", "types_pb2", "variable_pb2", "versions_pb2",
})
_lock = threading.Lock()


def _tensorboard_module(name: str) -> types.ModuleType:
    try:
        return importlib.import_module(f"tensorboard.compat.proto.{name}")
    except ImportError as e:
        raise ImportError(f"adplace reads and writes TF's files with the protocol buffers of the tensorboard package, "
                          f"which is missing or broken: pip install 'tensorboard>=2.10' ({e})") from e


def _tensor_bundle_module() -> types.ModuleType:
    from google.protobuf import descriptor_pb2

    shape, dtypes, versions = (_tensorboard_module(n) for n in ("tensor_shape_pb2", "types_pb2", "versions_pb2"))
    F = descriptor_pb2.FieldDescriptorProto
    file = descriptor_pb2.FileDescriptorProto(
        name="adplace/tensor_bundle.proto", package="adplace", syntax="proto3",
        dependency=[shape.DESCRIPTOR.name, dtypes.DESCRIPTOR.name, versions.DESCRIPTOR.name])

    def field(message, name, number, kind, type_name=None, repeated=False, oneof=None):
        f = message.field.add(name=name, number=number, type=kind,
                              label=F.LABEL_REPEATED if repeated else F.LABEL_OPTIONAL)
        if type_name:
            f.type_name = type_name
        if oneof is not None:
            f.oneof_index = oneof

    slice_ = file.message_type.add(name="TensorSliceProto")
    extent = slice_.nested_type.add(name="Extent")
    extent.oneof_decl.add(name="has_length")
    field(extent, "start", 1, F.TYPE_INT64)
    field(extent, "length", 2, F.TYPE_INT64, oneof=0)
    field(slice_, "extent", 1, F.TYPE_MESSAGE, ".adplace.TensorSliceProto.Extent", repeated=True)

    header = file.message_type.add(name="BundleHeaderProto")
    endianness = header.enum_type.add(name="Endianness")
    endianness.value.add(name="LITTLE", number=0)
    endianness.value.add(name="BIG", number=1)
    field(header, "num_shards", 1, F.TYPE_INT32)
    field(header, "endianness", 2, F.TYPE_ENUM, ".adplace.BundleHeaderProto.Endianness")
    field(header, "version", 3, F.TYPE_MESSAGE, ".tensorboard.VersionDef")

    entry = file.message_type.add(name="BundleEntryProto")
    field(entry, "dtype", 1, F.TYPE_ENUM, ".tensorboard.DataType")
    field(entry, "shape", 2, F.TYPE_MESSAGE, ".tensorboard.TensorShapeProto")
    field(entry, "shard_id", 3, F.TYPE_INT32)
    field(entry, "offset", 4, F.TYPE_INT64)
    field(entry, "size", 5, F.TYPE_INT64)
    field(entry, "crc32c", 6, F.TYPE_FIXED32)
    field(entry, "slices", 7, F.TYPE_MESSAGE, ".adplace.TensorSliceProto", repeated=True)

    return declared_module(file, "tensor_bundle_pb2", ("TensorSliceProto", "BundleHeaderProto", "BundleEntryProto"))


def declared_module(file, name: str, messages) -> types.ModuleType:
    """The module `adplace.lib.protos.<name>` of a FileDescriptorProto declared here: the file added to the default
    descriptor pool once (a second build finds it there), a class per message of `messages`, and its DESCRIPTOR."""
    from google.protobuf import descriptor_pool, message_factory

    pool = descriptor_pool.Default()
    try:
        described = pool.FindFileByName(file.name)
    except KeyError:
        described = pool.Add(file)
    module = types.ModuleType(f"adplace.lib.protos.{name}")
    for message in messages:
        setattr(module, message, message_factory.GetMessageClass(described.message_types_by_name[message]))
    module.DESCRIPTOR = described
    return module


def _example_module() -> types.ModuleType:
    from adplace.lib import example_protos

    module = example_protos.build()
    globals()["example_pb2"] = globals()["feature_pb2"] = module
    return module


def _queue_runner_module() -> types.ModuleType:
    from adplace.lib import queue_runner_protos

    return queue_runner_protos.build()


_DECLARED = {"tensor_bundle_pb2": _tensor_bundle_module, "example_pb2": _example_module,
             "feature_pb2": _example_module,
             "queue_runner_pb2": _queue_runner_module}  # messages tensorboard lacks, declared by adplace


def __getattr__(name: str) -> types.ModuleType:
    if name not in _TENSORBOARD and name not in _DECLARED:
        raise AttributeError(f"module 'adplace.lib.protos' has no attribute {name!r}")
    with _lock:
        module = globals().get(name)
        if module is None:
            module = _tensorboard_module(name) if name in _TENSORBOARD else _DECLARED[name]()
            globals()[name] = module
    return module
