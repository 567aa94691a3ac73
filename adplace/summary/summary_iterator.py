"""Reading event files back: tf.compat.v1.train.summary_iterator.

    for event in summary_iterator(path):
        for value in event.summary.value:
            print(event.step, value.tag, value.simple_value)
"""
from __future__ import annotations

from typing import Iterator

from adplace.lib import protos
from adplace.lib.io.tf_record import read_records


def summary_iterator(path) -> Iterator:
    """The Event protos of the event file at `path`, in order (DataLossError on a corrupt or truncated record)."""
    event_class = protos.event_pb2.Event
    for record in read_records(path):
        yield event_class.FromString(record)
