"""Session targets: which `target` strings a session accepts, and TF's errors for the others.

adplace has one session factory, TF's DirectSession equivalent, which accepts the in-process target "" only; any other
target (a grpc:// address, a typo) gets the NotFoundError a TF build without its gRPC runtime raises.

    tf.Session("grpc://localhost:2222")    # NotFoundError: No session factory registered for the given session ...
"""
from __future__ import annotations

from adplace.framework import errors
from adplace.runtime import options as _options


def check_target(target) -> bytes | None:
    """TF's checks of a session target: a string, and "" (in-process; adplace has no other session factory yet)."""
    if target is None:
        return None
    if isinstance(target, str):
        target = target.encode()
    if not isinstance(target, (bytes, bytearray)):
        if isinstance(target, _options.ConfigProto):
            raise TypeError(f'target must be a string, but got {type(target)}. Did you do "Session(config)" instead of '
                            f'"Session(config=config)"?')
        raise TypeError(f"target must be a string, but got {type(target)}")
    return bytes(target)


def no_session_factory(target: bytes, config: _options.ConfigProto) -> errors.NotFoundError:
    """TF's error for a target no session factory accepts, as a TF build without the distributed runtime says it."""
    return errors.NotFoundError(None, None, f'No session factory registered for the given session options: {{target: '
                                f'"{target.decode(errors="replace")}" config: {_options.short_debug_string(config)}}} '
                                f'Registered factories are {{DirectSession}}. adplace runs in-process sessions only '
                                f'(target ""); clusters (grpc:// targets) are not supported yet.')
