"""A protobuf-like message base: TF's option and stats messages as plain Python objects.

Like protobuf messages, they take keyword fields, reject unknown fields with ValueError, and nest:
`config.gpu_options.allow_growth = True`.
"""
from __future__ import annotations

import copy


class _Message:
    """A protobuf-like message with a fixed set of fields and default values."""

    _FIELDS: dict = {}

    def __init__(self, **fields):
        for name, default in self._FIELDS.items():
            object.__setattr__(self, name, copy.deepcopy(default))
        for name, value in fields.items():
            if name not in self._FIELDS:
                raise ValueError(f'Protocol message {type(self).__name__} has no "{name}" field.')
            setattr(self, name, value)

    def __setattr__(self, name, value):
        if name not in self._FIELDS:
            raise AttributeError(f"Assignment not allowed (no field \"{name}\" in protocol message object "
                                 f"{type(self).__name__}).")
        object.__setattr__(self, name, value)

    def __eq__(self, other):
        return type(other) is type(self) and vars(self) == vars(other)

    def __repr__(self) -> str:
        changed = {k: v for k, v in vars(self).items() if v != self._FIELDS[k]}
        return f"{type(self).__name__}({', '.join(f'{k}={v!r}' for k, v in changed.items())})"

    def CopyFrom(self, other) -> None:  # noqa: N802 - protobuf's name
        for name in self._FIELDS:
            object.__setattr__(self, name, copy.deepcopy(getattr(other, name)))
