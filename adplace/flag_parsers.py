"""The value parsers of tf.flags (absl.flags' argument parsers): command-line text, or a Python default, to a flag's
value. Each raises ValueError or TypeError for a bad value, which adplace.flags turns into IllegalFlagValueError.

    IntegerParser(lower_bound=1).parse("0x10")   # 16
    BooleanParser().parse("f")                   # False
"""
from __future__ import annotations


class Parser:
    """Strings, the parser of DEFINE_string and the base of the others."""

    syntactic_help = ""

    def parse(self, argument):
        if not isinstance(argument, str):
            raise TypeError(f'flag value must be a string, found "{type(argument)}"')
        return argument

    def flag_type_prefix(self) -> str:
        return ""


def parse_bool(argument) -> bool:
    """absl's boolean spellings: true/t/1 and false/f/0 in any case, or a bool (or 0/1)."""
    if isinstance(argument, str):
        if argument.lower() in ("true", "t", "1"):
            return True
        if argument.lower() in ("false", "f", "0"):
            return False
    elif isinstance(argument, (bool, int)) and argument in (0, 1):
        return bool(argument)
    raise ValueError(f"Non-boolean argument to boolean flag: {argument!r}")


class BooleanParser(Parser):
    def parse(self, argument) -> bool:
        return parse_bool(argument)


class _NumberParser(Parser):
    """A number with optional bounds; the help and the out-of-range message say the bounds as absl does."""

    kind, article = "number", "a"

    def __init__(self, lower_bound=None, upper_bound=None):
        self.lower_bound, self.upper_bound = lower_bound, upper_bound
        low, high, kind = lower_bound, upper_bound, self.kind
        if low is not None and high is not None:
            self.syntactic_help = f"{self.article} {kind} in the range [{low}, {high}]"
        elif low == 0:
            self.syntactic_help = f"a non-negative {kind}"
        elif low == 1 and kind == "integer":
            self.syntactic_help = "a positive integer"
        elif low is not None:
            self.syntactic_help = f"{self.article} {kind} >= {low}"
        elif high is not None:
            self.syntactic_help = f"{self.article} {kind} <= {high}"
        else:
            self.syntactic_help = f"{self.article} {kind}"

    def parse(self, argument):
        value = self.convert(argument)
        if ((self.lower_bound is not None and value < self.lower_bound)
                or (self.upper_bound is not None and value > self.upper_bound)):
            raise ValueError(f"{value} is not {self.syntactic_help}")
        return value


class IntegerParser(_NumberParser):
    kind, article = "integer", "an"

    def convert(self, argument) -> int:
        if isinstance(argument, bool) or not isinstance(argument, (int, str)):
            raise TypeError(f"Expect argument to be a string or int, found {type(argument)}")
        if isinstance(argument, int):
            return argument
        base = 16 if argument[:2] in ("0x", "0X") else 8 if argument[:2] in ("0o", "0O") else 10
        return int(argument, base)


class FloatParser(_NumberParser):
    def convert(self, argument) -> float:
        if isinstance(argument, bool) or not isinstance(argument, (int, float, str)):
            raise TypeError(f"Expect argument to be a string, int, or float, found {type(argument)}")
        return float(argument)


class EnumParser(Parser):
    def __init__(self, enum_values):
        if not enum_values:
            raise ValueError(f"enum_values cannot be empty, found \"{enum_values}\"")
        self.enum_values = list(enum_values)

    def parse(self, argument) -> str:
        if argument not in self.enum_values:
            raise ValueError(f"value should be one of <{'|'.join(self.enum_values)}>")
        return argument

    def flag_type_prefix(self) -> str:
        return f"<{'|'.join(self.enum_values)}>: "


class ListParser(Parser):
    syntactic_help = "a comma separated list"

    def parse(self, argument) -> list:
        if isinstance(argument, (list, tuple)):
            return list(argument)
        if not argument:
            return []
        return [item.strip() for item in str(argument).split(",")]
