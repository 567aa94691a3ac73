"""Session targets: which `target` strings a session accepts, and TF's errors for the others.

The in-process target "" is TF's DirectSession. Other factories register a target prefix here: adplace.distributed
registers "grpc://" (sessions on a cluster of tasks on Ray). A target no factory accepts (a typo, or grpc:// without
Ray) gets the NotFoundError a TF build without its gRPC runtime raises.

    tf.Session("grpc://localhost:2222")    # a session on the cluster task at that address
    tf.Session("tcp://x")                  # NotFoundError: No session factory registered for the given session ...

A factory is an object with `open(target, graph, config)` (the remote session: `run`, `list_devices`, `close`) and
`reset(target, containers, config)` (tf.Session.reset).
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


_FACTORIES: dict[bytes, object] = {}


def register_session_factory(prefix: bytes, factory) -> None:
    """Let `factory` open sessions on targets starting with `prefix` (b"grpc://")."""
    _FACTORIES[prefix] = factory


def session_factory(target: bytes):
    """The factory accepting `target`, or None."""
    for prefix, factory in _FACTORIES.items():
        if target.startswith(prefix):
            return factory
    return None


def no_session_factory(target: bytes, config: _options.ConfigProto) -> errors.NotFoundError:
    """TF's error for a target no session factory accepts, as a TF build without the distributed runtime says it."""
    return errors.NotFoundError(None, None, f'No session factory registered for the given session options: {{target: '
                                f'"{target.decode(errors="replace")}" config: {_options.short_debug_string(config)}}} '
                                f'Registered factories are {{{", ".join(["DirectSession", *_names()])}}}. adplace '
                                f'runs in-process sessions (target "") and, with Ray installed (adplace[distributed]), '
                                f'sessions on clusters (grpc:// targets).')


def _names() -> list[str]:
    return [type(f).__name__ for f in _FACTORIES.values()]
