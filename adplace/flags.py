"""tf.flags (also tf.app.flags): absl-style command-line flags without the absl dependency.

TF1's tf.flags wraps absl.flags; the one difference TF adds is that reading `FLAGS.x` before any parse parses
`sys.argv` first. Parsing follows absl: `--name=value`, `--name value`, `-name` (one dash), `--[no]flag` for
booleans, flags and positional arguments interleaved, `--` ends the flags, the last occurrence wins (multi flags
collect every occurrence). `FLAGS(argv)` returns `[argv[0]] + positional arguments`; with `known_only=True`
unknown flags stay in that list instead of raising, which is how tf.app.run parses.

    tf.flags.DEFINE_integer("batch_size", 32, "Examples per step.")
    FLAGS = tf.flags.FLAGS
    FLAGS(["prog", "--batch_size=64", "data.txt"])      # -> ["prog", "data.txt"]; FLAGS.batch_size == 64
"""
from __future__ import annotations

import difflib
import functools
import logging
import sys
import textwrap
import warnings

from adplace.flag_parsers import BooleanParser, EnumParser, FloatParser, IntegerParser, ListParser, Parser


__all__ = ["FLAGS", "DEFINE", "DEFINE_bool", "DEFINE_boolean", "DEFINE_enum", "DEFINE_flag", "DEFINE_float",
           "DEFINE_integer", "DEFINE_list", "DEFINE_multi_float", "DEFINE_multi_integer", "DEFINE_multi_string",
           "DEFINE_string", "DuplicateFlagError", "Error", "Flag", "FlagValues", "IllegalFlagValueError",
           "UnparsedFlagAccessError", "UnrecognizedFlagError", "ValidationError", "mark_flag_as_required",
           "mark_flags_as_required", "register_validator", "text_wrap"]


# --- errors: absl.flags' classes ----------------------------------------------------------------------------------
class Error(Exception):
    """Base class of every flags error (absl.flags.Error)."""


class DuplicateFlagError(Error):
    """A flag name was defined twice."""


class IllegalFlagValueError(Error):
    """A flag got a value its parser or a validator rejects."""


class UnrecognizedFlagError(Error):
    """The command line (or an assignment) names a flag that is not defined."""

    def __init__(self, flagname: str, flagvalue: str = "", suggestions=None):
        self.flagname, self.flagvalue = flagname, flagvalue
        tip = f". Did you mean: {', '.join(suggestions)} ?" if suggestions else ""
        super().__init__(f"Unknown command line flag '{flagname}'{tip}")


class UnparsedFlagAccessError(Error):
    """Kept for absl compatibility; tf.flags parses sys.argv on first access instead of raising it."""


class ValidationError(Error):
    """Raised by a validator's checker to reject a value."""


class Flag:
    """One flag: its parser, default, current value and whether the command line set it."""

    def __init__(self, parser: Parser, name: str, default, help_string: str, short_name: str | None = None,
                 boolean: bool = False, multi: bool = False, module_name: str | None = None):
        self.parser, self.name, self.short_name = parser, name, short_name
        self.help = help_string or "(no help available)"
        self.boolean, self.multi, self.module_name = boolean, multi, module_name
        self.present = 0
        self.using_default_value = True
        self.validators: list = []
        self.default = self.value = None
        self._set_default(default)

    def _convert(self, argument):
        if argument is None:
            return None
        if self.multi:
            items = argument if isinstance(argument, (list, tuple)) else [argument]
            return [self.parser.parse(item) for item in items]
        return self.parser.parse(argument)

    def _set_default(self, value) -> None:
        try:
            self.default = self._convert(value)
        except (TypeError, ValueError) as e:
            raise IllegalFlagValueError(f"flag --{self.name}={value}: {e}") from e
        if self.using_default_value:
            self.value = self.default

    def parse(self, argument) -> None:
        """Set the value from command-line text (a multi flag appends); counts the occurrence."""
        try:
            value = self._convert(argument)
        except (TypeError, ValueError) as e:
            raise IllegalFlagValueError(f"flag --{self.name}={argument}: {e}") from e
        if self.multi and self.present and not self.using_default_value:
            self.value = self.value + value
        else:
            self.value = value
        self.present += 1
        self.using_default_value = False

    def help_text(self) -> str:
        """The flag's entry in --help output, formatted as absl formats it."""
        name = f"--[no]{self.name}" if self.boolean else f"--{self.name}"
        if self.short_name:
            name = f"-{self.short_name},{name}"
        lines = [f"  {name}: {self.parser.flag_type_prefix()}{self.help}"]
        default = self.default
        if isinstance(default, bool) and self.boolean:
            default = "true" if default else "false"
        elif isinstance(default, list):
            default = ",".join(str(v) for v in default) if not self.multi else str(default)
        if default is not None:  # absl shows no default line for None
            lines.append(f"    (default: '{default}')")
        if self.parser.syntactic_help:
            lines.append(f"    ({self.parser.syntactic_help})")
        if self.multi:
            lines.append("    repeat this option to specify a list of values")
        return "\n".join(lines)


class FlagValues:
    """The registry of defined flags and their values (absl.flags.FlagValues); `FLAGS` is the global one."""

    def __init__(self):
        object.__setattr__(self, "_flag_map", {})
        object.__setattr__(self, "_parsed", False)

    # --- defining -------------------------------------------------------------------------------------------
    def _flags(self) -> dict:
        """Name (and short name) -> Flag; absl's accessor, used by scripts that delete all flags."""
        return self._flag_map

    def __setitem__(self, name: str, flag: Flag) -> None:
        existing = self._flag_map.get(name)
        if existing is not None and existing is not flag:
            raise DuplicateFlagError(
                f"The flag '{name}' is defined twice. First from {existing.module_name}, Second from "
                f"{flag.module_name}.  Description from first occurrence: {existing.help}")
        if name in type(self).__dict__:
            raise Error(f'Cannot define a flag named "{name}": it is a FlagValues method.')
        self._flag_map[name] = flag
        if flag.short_name:
            self._flag_map[flag.short_name] = flag

    def __getitem__(self, name: str) -> Flag:
        return self._flag_map[name]

    def __contains__(self, name: str) -> bool:
        return name in self._flag_map

    def __iter__(self):
        return iter(self._flag_map)

    def __len__(self) -> int:
        return len(self._flag_map)

    def __delattr__(self, name: str) -> None:
        flag = self._flag_map.pop(name, None)
        if flag is None:
            raise AttributeError(name)
        if flag.short_name and name != flag.short_name:
            self._flag_map.pop(flag.short_name, None)

    # --- values ---------------------------------------------------------------------------------------------
    def __getattr__(self, name: str):
        """A flag's value; the first read parses sys.argv, as tf.flags (not absl) does."""
        flag_map = self.__dict__["_flag_map"]
        if name not in flag_map:
            raise AttributeError(name)
        if not self.__dict__["_parsed"]:
            self(sys.argv)
        return flag_map[name].value

    def __setattr__(self, name: str, value) -> None:
        flag = self._flag_map.get(name)
        if flag is None:
            raise UnrecognizedFlagError(name, str(value))
        flag.value = value
        flag.using_default_value = False
        self._assert_validators(flag.validators)

    def __dir__(self):
        return sorted(self._flag_map)

    def get_flag_value(self, name: str, default):
        flag = self._flag_map.get(name)
        return default if flag is None else flag.value

    def set_default(self, name: str, value) -> None:
        """Change a flag's default (and its value, unless the command line set it)."""
        if name not in self._flag_map:
            raise UnrecognizedFlagError(name, str(value))
        self._flag_map[name]._set_default(value)

    def flag_values_dict(self) -> dict:
        """{flag name: value} for every flag (short names left out)."""
        return {name: flag.value for name, flag in self._flag_map.items() if name == flag.name}

    # --- parsing --------------------------------------------------------------------------------------------
    def is_parsed(self) -> bool:
        return self._parsed

    def mark_as_parsed(self) -> None:
        object.__setattr__(self, "_parsed", True)

    def unparse_flags(self) -> None:
        """Reset every flag to its default and mark the flags unparsed."""
        for flag in set(self._flag_map.values()):
            flag.value, flag.present, flag.using_default_value = flag.default, 0, True
        object.__setattr__(self, "_parsed", False)

    def __call__(self, argv, known_only: bool = False) -> list:
        """Parse `argv` (argv[0] is the program); returns argv[0] plus the arguments that are not flags.

        Raises:
          UnrecognizedFlagError: an undefined flag, unless `known_only`.
          IllegalFlagValueError: a value its flag rejects, or a failed validator (mark_flag_as_required).
          Error: a flag that needs a value is last on the command line.
        """
        if isinstance(argv, (str, bytes)) or not argv:
            raise TypeError("argv should be a tuple/list of strings, not bytes or string.")
        program, rest = argv[0], list(argv[1:])
        unparsed = self._parse_args(rest, known_only)
        self.mark_as_parsed()
        self.validate_all_flags()
        return [program] + unparsed

    def _parse_args(self, args: list, known_only: bool) -> list:
        """Set the flags in `args`; returns the rest in order (unknown flags and `--` too when `known_only`)."""
        unparsed = []
        i = 0
        while i < len(args):
            arg = args[i]
            i += 1
            if arg == "--":
                unparsed.extend(args[i - 1 if known_only else i:])
                break
            if not arg.startswith("-") or arg == "-":
                unparsed.append(arg)
                continue
            name, has_value, value = arg.lstrip("-").partition("=")
            flag = self._flag_map.get(name)
            if flag is None and not has_value and name.startswith("no"):
                negated = self._flag_map.get(name[2:])
                if negated is not None and negated.boolean:
                    negated.parse("false")
                    continue
            if flag is None:
                if not known_only:
                    raise UnrecognizedFlagError(name, value, self._suggestions(name))
                unparsed.append(arg)
                continue
            if flag.boolean:
                flag.parse(value if has_value else "true")
                continue
            if not has_value:
                if i >= len(args):
                    raise Error(f"Missing value for flag {arg}")
                value = args[i]
                i += 1
            flag.parse(value)
        return unparsed

    def _suggestions(self, name: str) -> list:
        names = sorted({flag.name for flag in self._flag_map.values()})
        return difflib.get_close_matches(name, names, n=3, cutoff=0.75)

    def validate_all_flags(self) -> None:
        self._assert_validators([v for flag in set(self._flag_map.values()) for v in flag.validators])

    def _assert_validators(self, validators) -> None:
        messages = []
        for flag_name, checker, message in validators:
            value = self._flag_map[flag_name].value if flag_name in self._flag_map else None
            try:
                ok = checker(value)
            except ValidationError as e:
                ok, message = False, str(e)
            if not ok:
                messages.append(f"flag --{flag_name}={value}: {message}")
        if messages:
            raise IllegalFlagValueError("\n".join(messages))

    # --- help -----------------------------------------------------------------------------------------------
    def _flags_by_module(self) -> dict:
        by_module: dict = {}
        for name, flag in sorted(self._flag_map.items()):
            if name == flag.name:
                by_module.setdefault(flag.module_name, []).append(flag)
        return by_module

    def main_module_help(self) -> str:
        """Help for the flags defined in the main program."""
        main_name = sys.argv[0] if sys.argv and sys.argv[0] else "__main__"
        flags = self._flags_by_module().get(main_name, [])
        return "" if not flags else f"\n{main_name}:\n" + "\n".join(f.help_text() for f in flags)

    def get_help(self) -> str:
        """Help for every flag, grouped by the module that defined it."""
        return "\n".join(f"\n{module}:\n" + "\n".join(f.help_text() for f in flags)
                         for module, flags in sorted(self._flags_by_module().items()))

    __str__ = get_help


FLAGS = FlagValues()


def _calling_module() -> str:
    """The module defining a flag: the first frame outside this file (sys.argv[0] for the main program)."""
    frame = sys._getframe(1)
    while frame is not None and frame.f_globals.get("__name__") == __name__:
        frame = frame.f_back
    name = frame.f_globals.get("__name__", "__main__") if frame is not None else "__main__"
    if name == "__main__" and sys.argv and sys.argv[0]:
        return sys.argv[0]
    return name


_RENAMED = {"flag_name": "name", "default_value": "default", "docstring": "help"}


def _accepts_old_names(define):
    """TF's wrapper: DEFINE_* also take the old keywords flag_name, default_value and docstring (with a warning)."""
    @functools.wraps(define)
    def wrapper(*args, **kwargs):
        if _RENAMED.keys() & kwargs.keys():
            logging.warning("Use of the keyword argument names (flag_name, default_value, docstring) is "
                            "deprecated, please use (name, default, help) instead.")
        return define(*args, **{_RENAMED.get(k, k): v for k, v in kwargs.items()})
    return wrapper


def DEFINE_flag(flag: Flag, flag_values: FlagValues = FLAGS, module_name: str | None = None,
                required: bool = False) -> Flag:
    """Register a Flag object (absl.flags.DEFINE_flag)."""
    flag.module_name = module_name or flag.module_name or _calling_module()
    flag_values[flag.name] = flag
    if required:
        mark_flag_as_required(flag.name, flag_values)
    return flag


def DEFINE(parser: Parser, name: str, default, help: str, flag_values: FlagValues = FLAGS,  # noqa: A002
           module_name: str | None = None, required: bool = False, short_name: str | None = None,
           boolean: bool = False, multi: bool = False) -> Flag:
    """Define a flag parsed by `parser` (absl.flags.DEFINE)."""
    flag = Flag(parser, name, default, help, short_name=short_name, boolean=boolean, multi=multi,
                module_name=module_name or _calling_module())
    return DEFINE_flag(flag, flag_values, required=required)


def _define(parser: Parser, name: str, default, help: str, flag_values: FlagValues, required: bool,  # noqa: A002
            short_name: str | None = None, module_name: str | None = None, boolean: bool = False,
            multi: bool = False) -> Flag:
    return DEFINE(parser, name, default, help, flag_values, module_name, required, short_name, boolean, multi)


@_accepts_old_names
def DEFINE_string(name: str, default, help: str, flag_values: FlagValues = FLAGS, required: bool = False,  # noqa: A002
                  **kwargs) -> Flag:
    """A string flag."""
    return _define(Parser(), name, default, help, flag_values, required, **kwargs)


@_accepts_old_names
def DEFINE_boolean(name: str, default, help: str, flag_values: FlagValues = FLAGS, required: bool = False,  # noqa: A002
                   **kwargs) -> Flag:
    """A boolean flag, set by --name, --noname or --name=true/false/1/0."""
    return _define(BooleanParser(), name, default, help, flag_values, required, boolean=True, **kwargs)


DEFINE_bool = DEFINE_boolean


@_accepts_old_names
def DEFINE_integer(name: str, default, help: str, lower_bound=None, upper_bound=None,  # noqa: A002
                   flag_values: FlagValues = FLAGS, required: bool = False, **kwargs) -> Flag:
    """An integer flag, optionally bounded (a value out of bounds is an IllegalFlagValueError)."""
    return _define(IntegerParser(lower_bound, upper_bound), name, default, help, flag_values, required, **kwargs)


@_accepts_old_names
def DEFINE_float(name: str, default, help: str, lower_bound=None, upper_bound=None,  # noqa: A002
                 flag_values: FlagValues = FLAGS, required: bool = False, **kwargs) -> Flag:
    """A float flag, optionally bounded."""
    return _define(FloatParser(lower_bound, upper_bound), name, default, help, flag_values, required, **kwargs)


def DEFINE_enum(name: str, default, enum_values, help: str, flag_values: FlagValues = FLAGS,  # noqa: A002
                module_name: str | None = None, required: bool = False, **kwargs) -> Flag:
    """A string flag that takes one of `enum_values`."""
    return _define(EnumParser(enum_values), name, default, help, flag_values, required, module_name=module_name,
                   **kwargs)


def DEFINE_list(name: str, default, help: str, flag_values: FlagValues = FLAGS, required: bool = False,  # noqa: A002
                **kwargs) -> Flag:
    """A comma-separated list of strings: --names=a,b,c gives ["a", "b", "c"]."""
    return _define(ListParser(), name, default, help, flag_values, required, **kwargs)


def DEFINE_multi_string(name: str, default, help: str, flag_values: FlagValues = FLAGS,  # noqa: A002
                        required: bool = False, **kwargs) -> Flag:
    """A flag that may repeat; its value is the list of every occurrence (--x=a --x=b gives ["a", "b"])."""
    return _define(Parser(), name, default, help, flag_values, required, multi=True, **kwargs)


def DEFINE_multi_integer(name: str, default, help: str, lower_bound=None, upper_bound=None,  # noqa: A002
                         flag_values: FlagValues = FLAGS, required: bool = False, **kwargs) -> Flag:
    """A repeatable integer flag."""
    return _define(IntegerParser(lower_bound, upper_bound), name, default, help, flag_values, required, multi=True,
                   **kwargs)


def DEFINE_multi_float(name: str, default, help: str, lower_bound=None, upper_bound=None,  # noqa: A002
                       flag_values: FlagValues = FLAGS, required: bool = False, **kwargs) -> Flag:
    """A repeatable float flag."""
    return _define(FloatParser(lower_bound, upper_bound), name, default, help, flag_values, required, multi=True,
                   **kwargs)


def register_validator(flag_name: str, checker, message: str = "Flag validation failed",
                       flag_values: FlagValues = FLAGS) -> None:
    """Check `checker(value)` after every parse and assignment; a False result raises IllegalFlagValueError."""
    if flag_name not in flag_values:
        raise KeyError(f"Flag --{flag_name} does not exist.")
    flag_values[flag_name].validators.append((flag_name, checker, message))


def mark_flag_as_required(flag_name: str, flag_values: FlagValues = FLAGS) -> None:
    """Make parsing fail unless the flag has a value other than None."""
    if flag_name in flag_values and flag_values[flag_name].default is not None:
        warnings.warn(f"Flag --{flag_name} has a non-None default value; therefore, mark_flag_as_required will "
                      "pass even if flag is not specified in the command line!", stacklevel=2)
    register_validator(flag_name, lambda value: value is not None,
                       f"Flag --{flag_name} must have a value other than None.", flag_values)


def mark_flags_as_required(flag_names, flag_values: FlagValues = FLAGS) -> None:
    for name in flag_names:
        mark_flag_as_required(name, flag_values)


def text_wrap(text: str, length: int | None = None, indent: str = "", firstline_indent: str | None = None) -> str:
    """Wrap `text` to `length` columns (80 by default) with the given indents."""
    return textwrap.fill(text, width=length or 80, initial_indent=indent if firstline_indent is None
                         else firstline_indent, subsequent_indent=indent)

