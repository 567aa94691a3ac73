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

    def HasField(self, name: str) -> bool:  # noqa: N802 - protobuf's name
        """Whether field `name` holds something other than its default (protobuf's HasField, as TF uses it on
        RunMetadata: `run_metadata.HasField("step_stats")` after a traced run)."""
        if name not in self._FIELDS:
            raise ValueError(f'Protocol message {type(self).__name__} has no field "{name}".')
        return getattr(self, name) != self._FIELDS[name]

    def CopyFrom(self, other) -> None:  # noqa: N802 - protobuf's name
        for name in self._FIELDS:
            object.__setattr__(self, name, copy.deepcopy(getattr(other, name)))


class RepeatedMessages(list):
    """A repeated message field: a list whose add() appends and returns a new element (protobuf's `.add()`)."""

    def __init__(self, element_type: type, items=()):
        super().__init__(items)
        self.element_type = element_type

    def add(self, **fields) -> _Message:
        element = self.element_type(**fields)
        self.append(element)
        return element

    def __deepcopy__(self, memo) -> "RepeatedMessages":
        return RepeatedMessages(self.element_type, (copy.deepcopy(item, memo) for item in self))
