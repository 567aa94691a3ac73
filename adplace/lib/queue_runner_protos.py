"""TF's QueueRunnerDef (tensorflow/core/protobuf/queue_runner.proto) and the error Code enum it uses, which the
tensorboard package does not ship: declared through protobuf's descriptor API with TF's field numbers (proto3, so
the repeated enum is packed), so that their bytes are TF's. Their full names live in the `adplace` package so that
they never clash with TensorFlow's own when both are imported. Reached as `protos.queue_runner_pb2`.
"""
from __future__ import annotations

import types

# TF's error codes (tensorflow/core/protobuf/error_codes.proto), the values of QueueRunnerDef's exception types.
CODES = ("OK", "CANCELLED", "UNKNOWN", "INVALID_ARGUMENT", "DEADLINE_EXCEEDED", "NOT_FOUND", "ALREADY_EXISTS",
         "PERMISSION_DENIED", "RESOURCE_EXHAUSTED", "FAILED_PRECONDITION", "ABORTED", "OUT_OF_RANGE", "UNIMPLEMENTED",
         "INTERNAL", "UNAVAILABLE", "DATA_LOSS", "UNAUTHENTICATED")


def build() -> types.ModuleType:
    """The module of QueueRunnerDef and Code, declared in the default descriptor pool once."""
    from google.protobuf import descriptor_pb2

    from adplace.lib.protos import declared_module

    F = descriptor_pb2.FieldDescriptorProto
    file = descriptor_pb2.FileDescriptorProto(name="adplace/queue_runner.proto", package="adplace", syntax="proto3")
    code = file.enum_type.add(name="Code")
    for number, name in enumerate(CODES):
        code.value.add(name=name, number=number)
    runner = file.message_type.add(name="QueueRunnerDef")
    for name, number, repeated in (("queue_name", 1, False), ("enqueue_op_name", 2, True), ("close_op_name", 3, False),
                                   ("cancel_op_name", 4, False)):
        runner.field.add(name=name, number=number, type=F.TYPE_STRING,
                         label=F.LABEL_REPEATED if repeated else F.LABEL_OPTIONAL)
    runner.field.add(name="queue_closed_exception_types", number=5, type=F.TYPE_ENUM, label=F.LABEL_REPEATED,
                     type_name=".adplace.Code")

    module = declared_module(file, "queue_runner_pb2", ("QueueRunnerDef",))
    module.Code = module.DESCRIPTOR.enum_types_by_name["Code"]
    return module
