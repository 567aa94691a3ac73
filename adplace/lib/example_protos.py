"""TF's Example protos (tensorflow/core/example/feature.proto and example.proto), which the tensorboard package does
not ship: Example, Features, Feature, BytesList, FloatList, Int64List, FeatureList, FeatureLists, SequenceExample,
declared through protobuf's descriptor API with TF's field numbers and packing, so that their bytes are TF's. Their
full names live in the `adplace` package so that they never clash with TensorFlow's own when both are imported.
Reached as `protos.example_pb2` / `protos.feature_pb2` (one module holds both files' messages).
"""
from __future__ import annotations

import types

MESSAGES = ("BytesList", "FloatList", "Int64List", "Feature", "Features", "FeatureList", "FeatureLists", "Example",
            "SequenceExample")


def build() -> types.ModuleType:
    """The module of the Example messages, declared in the default descriptor pool once."""
    from google.protobuf import descriptor_pb2

    from adplace.lib.protos import declared_module

    F = descriptor_pb2.FieldDescriptorProto
    file = descriptor_pb2.FileDescriptorProto(name="adplace/example.proto", package="adplace", syntax="proto3")

    def message(name, *fields):
        m = file.message_type.add(name=name)
        for field_name, number, kind, type_name, repeated in fields:
            f = m.field.add(name=field_name, number=number, type=kind,
                            label=F.LABEL_REPEATED if repeated else F.LABEL_OPTIONAL)
            if type_name:
                f.type_name = type_name
            if kind in (F.TYPE_FLOAT, F.TYPE_INT64) and repeated:
                f.options.packed = True
        return m

    def map_of(m, field_name, value_type):
        entry = m.nested_type.add(name=field_name.title().replace("_", "") + "Entry")
        entry.options.map_entry = True
        entry.field.add(name="key", number=1, type=F.TYPE_STRING, label=F.LABEL_OPTIONAL)
        entry.field.add(name="value", number=2, type=F.TYPE_MESSAGE, label=F.LABEL_OPTIONAL, type_name=value_type)
        m.field.add(name=field_name, number=1, type=F.TYPE_MESSAGE, label=F.LABEL_REPEATED,
                    type_name=f".adplace.{m.name}.{entry.name}")

    message("BytesList", ("value", 1, F.TYPE_BYTES, None, True))
    message("FloatList", ("value", 1, F.TYPE_FLOAT, None, True))
    message("Int64List", ("value", 1, F.TYPE_INT64, None, True))
    feature = message("Feature", ("bytes_list", 1, F.TYPE_MESSAGE, ".adplace.BytesList", False),
                      ("float_list", 2, F.TYPE_MESSAGE, ".adplace.FloatList", False),
                      ("int64_list", 3, F.TYPE_MESSAGE, ".adplace.Int64List", False))
    feature.oneof_decl.add(name="kind")
    for f in feature.field:
        f.oneof_index = 0
    map_of(file.message_type.add(name="Features"), "feature", ".adplace.Feature")
    message("FeatureList", ("feature", 1, F.TYPE_MESSAGE, ".adplace.Feature", True))
    map_of(file.message_type.add(name="FeatureLists"), "feature_list", ".adplace.FeatureList")
    message("Example", ("features", 1, F.TYPE_MESSAGE, ".adplace.Features", False))
    message("SequenceExample", ("context", 1, F.TYPE_MESSAGE, ".adplace.Features", False),
            ("feature_lists", 2, F.TYPE_MESSAGE, ".adplace.FeatureLists", False))

    module = declared_module(file, "example_pb2", MESSAGES)
    return module
