"""Plan slot lists: a step's input, output and freed slots are stored as an int when it has one (most steps: no
tuple per step), else as a tuple; the plan passes read them through `as_tuple`."""
from __future__ import annotations


def as_tuple(slots) -> tuple:
    """A step's slot list as a tuple."""
    return (slots,) if type(slots) is int else slots
