"""Full device names and a parser for the placement log, shared by the placement and session tests."""
import re

CPU0 = "/job:localhost/replica:0/task:0/device:CPU:0"
GPU0 = "/job:localhost/replica:0/task:0/device:GPU:0"
GPU1 = "/job:localhost/replica:0/task:0/device:GPU:1"
GPU2 = "/job:localhost/replica:0/task:0/device:GPU:2"
PLACEMENT_LINE = re.compile(r"^(\S+): \((\w+)\): (/job:localhost/replica:0/task:0/device:[A-Z]+:\d+)$")


def placement_lines(text: str) -> list[tuple[str, str, str]]:
    """(op name, op type, device) of every placement log line in `text`."""
    return [m.groups() for m in map(PLACEMENT_LINE.match, text.splitlines()) if m]
