"""Error classes mirroring tf.errors: every runtime failure names the op, device and value at fault."""
from __future__ import annotations

OK, CANCELLED, UNKNOWN, INVALID_ARGUMENT, DEADLINE_EXCEEDED, NOT_FOUND = 0, 1, 2, 3, 4, 5
ALREADY_EXISTS, PERMISSION_DENIED, RESOURCE_EXHAUSTED, FAILED_PRECONDITION = 6, 7, 8, 9
ABORTED, OUT_OF_RANGE, UNIMPLEMENTED, INTERNAL, UNAVAILABLE, DATA_LOSS, UNAUTHENTICATED = 10, 11, 12, 13, 14, 15, 16


class OpError(Exception):
    """A failure while running a graph, with the op (if any) that caused it (tf.errors.OpError)."""

    error_code = UNKNOWN

    def __init__(self, node_def, op, message: str, error_code: int | None = None):
        super().__init__(message)
        self._node_def = node_def
        self._op = op
        self._message = message
        if error_code is not None:
            self.error_code = error_code

    @property
    def message(self) -> str:
        return self._message

    @property
    def op(self):
        return self._op

    @property
    def node_def(self):
        return self._node_def

    def __str__(self) -> str:
        return self._message


def _subclass(name: str, code: int, doc: str) -> type:
    return type(name, (OpError,), {"error_code": code, "__doc__": doc, "__module__": __name__})


CancelledError = _subclass("CancelledError", CANCELLED, "An operation or step was cancelled.")
UnknownError = _subclass("UnknownError", UNKNOWN, "An error of unknown kind.")
InvalidArgumentError = _subclass("InvalidArgumentError", INVALID_ARGUMENT, "An op got an invalid argument or device.")
DeadlineExceededError = _subclass("DeadlineExceededError", DEADLINE_EXCEEDED, "A step ran past its deadline.")
NotFoundError = _subclass("NotFoundError", NOT_FOUND, "A requested entity (file, device, op) was not found.")
AlreadyExistsError = _subclass("AlreadyExistsError", ALREADY_EXISTS, "An entity that we tried to create already exists.")
PermissionDeniedError = _subclass("PermissionDeniedError", PERMISSION_DENIED, "The caller lacks permission.")
ResourceExhaustedError = _subclass("ResourceExhaustedError", RESOURCE_EXHAUSTED, "A resource (memory) ran out.")
FailedPreconditionError = _subclass("FailedPreconditionError", FAILED_PRECONDITION,
                                    "The system is not in a state to run the op (e.g. an uninitialized variable).")
AbortedError = _subclass("AbortedError", ABORTED, "The operation was aborted.")
OutOfRangeError = _subclass("OutOfRangeError", OUT_OF_RANGE, "An iteration went past the valid range.")
UnimplementedError = _subclass("UnimplementedError", UNIMPLEMENTED, "The operation is not implemented.")
InternalError = _subclass("InternalError", INTERNAL, "An internal invariant broke.")
UnavailableError = _subclass("UnavailableError", UNAVAILABLE, "The runtime is currently unavailable.")
DataLossError = _subclass("DataLossError", DATA_LOSS, "Unrecoverable data loss or corruption.")
UnauthenticatedError = _subclass("UnauthenticatedError", UNAUTHENTICATED, "The request lacks credentials.")


class OperatorNotAllowedInGraphError(TypeError):
    """A Python operation a graph tensor cannot support (using it as a `bool`); a TypeError, as in TF 1."""
