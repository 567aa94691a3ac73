"""tf.app: `run(main=None, argv=None)`, TF1's entry point, and `flags` (the tf.flags module).

As TF1's app.run: define --help/--helpshort/--helpfull, parse the known flags of `argv` (sys.argv by default),
leave unknown flags in the argument list, call `main(remaining_argv)` (the `main` of `__main__` by default) and
exit with what it returns. A flag value that does not parse, or a missing required flag, prints absl's
"FATAL Flags parsing error" and exits with status 1; --help prints the usage and exits with status 1, as absl does.

    def main(argv):                   # argv == ["train.py", "extra"] for `train.py --steps=5 extra`
        print(tf.flags.FLAGS.steps)   # 5
    tf.app.run()
"""
from __future__ import annotations

import sys

from adplace import flag_parsers, flags

__all__ = ["flags", "run"]


def _usage(shorthelp: bool) -> None:
    """Write __main__'s docstring (or a USAGE line) and the flags' help to stdout."""
    doc = getattr(sys.modules.get("__main__"), "__doc__", None)
    if not doc:
        doc = flags.text_wrap(f"\nUSAGE: {sys.argv[0]} [flags]\n", indent="       ", firstline_indent="") + "\n"
    else:
        specifiers = doc.count("%") - 2 * doc.count("%%")
        try:
            doc %= (sys.argv[0],) * specifiers
        except (OverflowError, TypeError, ValueError):
            pass
    flag_text = flags.FLAGS.main_module_help() if shorthelp else str(flags.FLAGS)
    sys.stdout.write(doc)
    if flag_text:
        sys.stdout.write("\nflags:\n" + flag_text)
    sys.stdout.write("\n")


class _HelpFlag(flags.Flag):
    """--help (and -?, --helpshort): print the main module's flags and exit with status 1."""

    def __init__(self, name: str = "help", short_name: str | None = "?", shorthelp: bool = True,
                 help_string: str = "show this help"):
        super().__init__(flag_parsers.BooleanParser(), name, False, help_string, short_name=short_name, boolean=True,
                         module_name="adplace.app")
        self._shorthelp = shorthelp

    def parse(self, argument) -> None:
        if flag_parsers.parse_bool(argument):
            _usage(self._shorthelp)
            if self._shorthelp:
                print("\nTry --helpfull to get a list of all flags.")
            sys.exit(1)


def _define_help_flags() -> None:
    if "help" not in flags.FLAGS:
        flags.DEFINE_flag(_HelpFlag())
        flags.DEFINE_flag(_HelpFlag("helpfull", None, shorthelp=False, help_string="show full help"))
        flags.DEFINE_flag(_HelpFlag("helpshort", None, help_string="show this help"))


def _parse_flags_tolerate_undef(argv: list) -> list:
    """Parse the flags adplace knows, then those of absl.flags when a script also defined some there."""
    try:
        remaining = flags.FLAGS(argv, known_only=True)
        absl_flags = sys.modules.get("absl.flags")
        if absl_flags is not None and len(absl_flags.FLAGS) and not absl_flags.FLAGS.is_parsed():
            remaining = absl_flags.FLAGS(remaining, known_only=True)
        return remaining
    except flags.Error as error:
        _fatal(error)
    except Exception as error:
        if type(error).__module__.startswith("absl."):  # absl.flags.Error subclasses
            _fatal(error)
        raise


def _fatal(error: Exception):
    message = str(error)
    if "\n" in message:
        message = "\n" + "\n".join("  " + line for line in message.splitlines())
    sys.stderr.write(f"FATAL Flags parsing error: {message}\n")
    sys.stderr.write("Pass --helpshort or --helpfull to see help on flags.\n")
    sys.exit(1)


def run(main=None, argv=None):
    """Parse flags from `argv` (default sys.argv), then `sys.exit(main(remaining_argv))`.

    `main` defaults to the `main` function of the `__main__` module. Unknown flags are passed through to `main`
    in `remaining_argv`, as in TF1 (absl's own app.run rejects them).
    """
    _define_help_flags()
    remaining = _parse_flags_tolerate_undef(list(sys.argv if argv is None else argv))
    main = main or sys.modules["__main__"].main
    sys.exit(main(remaining))
