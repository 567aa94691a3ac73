"""Tests for adplace/flags.py (tf.flags, tf.app.flags) and adplace/app.py (tf.app.run): absl's parsing rules, TF1's
parse-on-first-read, errors and exit codes. Parsing tests use their own FlagValues; tf.app.run runs in scripts."""
import subprocess
import sys
import textwrap

import pytest

import adplace as tf
from adplace import flags


@pytest.fixture
def fv():
    return flags.FlagValues()


def test_tf_app_flags_is_tf_flags():
    assert tf.app.flags is tf.flags
    assert tf.flags.FLAGS is tf.app.flags.FLAGS


def test_equals_space_and_positional_arguments(fv):
    flags.DEFINE_string("name", "x", "A name.", flag_values=fv)
    flags.DEFINE_integer("steps", 3, "Steps.", flag_values=fv)
    flags.DEFINE_float("lr", 0.1, "Rate.", flag_values=fv)
    rest = fv(["prog", "in.txt", "--name", "bob", "-steps=7", "--lr=1e-3", "out.txt"])
    assert rest == ["prog", "in.txt", "out.txt"]
    assert (fv.name, fv.steps, fv.lr) == ("bob", 7, 0.001)
    assert fv["steps"].present == 1 and fv["steps"].default == 3


def test_defaults_before_any_flag_and_flag_values_dict(fv):
    flags.DEFINE_string("name", None, "A name.", flag_values=fv)
    flags.DEFINE_list("items", "a,b", "Items.", flag_values=fv)
    fv(["prog"])
    assert fv.flag_values_dict() == {"name": None, "items": ["a", "b"]}


@pytest.mark.parametrize("args, expected", [
    ([], False), (["--verbose"], True), (["--noverbose"], False), (["--verbose=false"], False),
    (["--verbose=1"], True), (["--verbose", "--noverbose"], False), (["-verbose=True"], True),
])
def test_boolean_spellings(fv, args, expected):
    flags.DEFINE_boolean("verbose", False, "Talk.", flag_values=fv)
    assert fv(["prog"] + args) == ["prog"]
    assert fv.verbose is expected


def test_boolean_never_takes_the_next_argument(fv):
    flags.DEFINE_bool("verbose", False, "Talk.", flag_values=fv)
    assert fv(["prog", "--verbose", "false"]) == ["prog", "false"]
    assert fv.verbose is True


def test_double_dash_ends_flags(fv):
    flags.DEFINE_integer("n", 1, "N.", flag_values=fv)
    assert fv(["prog", "--n=2", "--", "--n=3", "x"]) == ["prog", "--n=3", "x"]
    assert fv.n == 2


def test_enum_list_and_multi_string(fv):
    flags.DEFINE_enum("mode", "train", ["train", "eval"], "Mode.", flag_values=fv)
    flags.DEFINE_list("gpus", [], "GPUs.", flag_values=fv)
    flags.DEFINE_multi_string("tag", ["default"], "Tags.", flag_values=fv)
    fv(["prog", "--mode=eval", "--gpus=0, 1", "--tag", "a", "--tag=b"])
    assert (fv.mode, fv.gpus, fv.tag) == ("eval", ["0", "1"], ["a", "b"])
    fv.unparse_flags()
    fv(["prog"])
    assert (fv.mode, fv.gpus, fv.tag) == ("train", [], ["default"])


def test_integer_bases_and_bounds(fv):
    flags.DEFINE_integer("n", 0, "N.", lower_bound=0, flag_values=fv)
    fv(["prog", "--n=0x10"])
    assert fv.n == 16
    with pytest.raises(flags.IllegalFlagValueError, match=r"flag --n=-1: -1 is not a non-negative integer"):
        fv(["prog", "--n=-1"])


@pytest.mark.parametrize("define, arg, message", [
    (lambda fv: flags.DEFINE_integer("n", 1, "N.", flag_values=fv), "--n=abc",
     r"flag --n=abc: invalid literal for int\(\) with base 10: 'abc'"),
    (lambda fv: flags.DEFINE_float("x", 1.0, "X.", flag_values=fv), "--x=fast", r"flag --x=fast: could not convert"),
    (lambda fv: flags.DEFINE_enum("m", "a", ["a", "b"], "M.", flag_values=fv), "--m=c",
     r"flag --m=c: value should be one of <a\|b>"),
    (lambda fv: flags.DEFINE_boolean("b", False, "B.", flag_values=fv), "--b=maybe",
     r"flag --b=maybe: Non-boolean argument to boolean flag"),
])
def test_illegal_values(fv, define, arg, message):
    define(fv)
    with pytest.raises(flags.IllegalFlagValueError, match=message):
        fv(["prog", arg])


def test_unknown_flag_raises_unless_known_only(fv):
    flags.DEFINE_integer("steps", 1, "Steps.", flag_values=fv)
    with pytest.raises(flags.UnrecognizedFlagError, match=r"Unknown command line flag 'stepz'. Did you mean: steps"):
        fv(["prog", "--stepz=2"])
    assert fv(["prog", "--other=1", "x", "--steps=4", "--nothing"], known_only=True) == \
        ["prog", "--other=1", "x", "--nothing"]
    assert fv.steps == 4
    assert issubclass(flags.UnrecognizedFlagError, flags.Error)


def test_missing_value_at_the_end(fv):
    flags.DEFINE_string("name", "", "Name.", flag_values=fv)
    with pytest.raises(flags.Error, match="Missing value for flag --name"):
        fv(["prog", "--name"])


def test_argv_must_be_a_list(fv):
    with pytest.raises(TypeError, match="argv should be a tuple/list of strings"):
        fv("prog --x=1")


def test_duplicate_definition(fv):
    flags.DEFINE_integer("steps", 1, "Steps.", flag_values=fv)
    with pytest.raises(flags.DuplicateFlagError, match="The flag 'steps' is defined twice"):
        flags.DEFINE_string("steps", "1", "Again.", flag_values=fv)


def test_old_keyword_names_are_accepted(fv):
    flags.DEFINE_string(flag_name="who", default_value="me", docstring="Who.", flag_values=fv)
    flags.DEFINE_integer(flag_name="k", default_value=5, docstring="K.", flag_values=fv)
    fv(["prog"])
    assert (fv.who, fv.k, fv["who"].help) == ("me", 5, "Who.")


def test_required_flag(fv):
    flags.DEFINE_string("data_dir", None, "Data.", flag_values=fv, required=True)
    with pytest.raises(flags.IllegalFlagValueError,
                       match=r"flag --data_dir=None: Flag --data_dir must have a value other than None."):
        fv(["prog"])
    fv(["prog", "--data_dir=/tmp"])
    assert fv.data_dir == "/tmp"


def test_mark_flag_as_required_with_a_default_warns(fv):
    flags.DEFINE_integer("n", 3, "N.", flag_values=fv)
    with pytest.warns(UserWarning, match="non-None default value"):
        flags.mark_flag_as_required("n", flag_values=fv)


def test_assignment_and_unknown_assignment(fv):
    flags.DEFINE_integer("n", 3, "N.", flag_values=fv)
    fv(["prog"])
    fv.n = 9
    assert fv.n == 9
    with pytest.raises(flags.UnrecognizedFlagError):
        fv.m = 1


def test_first_read_parses_sys_argv(fv, monkeypatch):
    """TF1's tf.flags (unlike absl) parses sys.argv when a flag is read before any parse."""
    flags.DEFINE_integer("n", 3, "N.", flag_values=fv)
    monkeypatch.setattr(sys, "argv", ["prog", "--n=11"])
    assert not fv.is_parsed()
    assert fv.n == 11
    assert fv.is_parsed()
    with pytest.raises(AttributeError):
        fv.undefined_flag  # noqa: B018


def test_delete_flags_like_notebooks_do(fv):
    flags.DEFINE_string("f", "", "Kernel file.", flag_values=fv)
    flags.DEFINE_string("x", "", "X.", flag_values=fv, short_name="y")
    for name in list(fv._flags()):
        if name in fv:
            delattr(fv, name)
    assert len(fv) == 0
    flags.DEFINE_string("f", "", "Kernel file again.", flag_values=fv)


def test_help_text_lists_flags_with_defaults(fv):
    flags.DEFINE_integer("steps", 3, "Number of steps.", lower_bound=1, flag_values=fv)
    flags.DEFINE_boolean("fast", True, "Go fast.", flag_values=fv)
    text = str(fv)
    assert "  --steps: Number of steps.\n    (default: '3')\n    (a positive integer)" in text
    assert "  --[no]fast: Go fast.\n    (default: 'true')" in text


# --- tf.app.run in a subprocess ----------------------------------------------------------------------------------
SCRIPT = '''
"""Trains a toy model."""
import adplace as tf

tf.app.flags.DEFINE_integer("steps", 2, "Number of steps.", lower_bound=0)
tf.app.flags.DEFINE_boolean("verbose", False, "Print more.")
tf.flags.DEFINE_string("out", None, "Output name.")
FLAGS = tf.app.flags.FLAGS


def main(argv):
    print("argv", argv[1:], "steps", FLAGS.steps, "verbose", FLAGS.verbose, "out", FLAGS.out)
    return {exit_value}


if __name__ == "__main__":
    tf.app.run({run_args})
'''


def run_script(tmp_path, *args, exit_value="None", run_args="", body=SCRIPT):
    path = tmp_path / "toy.py"
    path.write_text(body.format(exit_value=exit_value, run_args=run_args))
    return subprocess.run([sys.executable, str(path), *args], capture_output=True, text=True, timeout=120,
                          cwd=tmp_path)


def test_run_parses_flags_and_passes_the_rest_to_main(tmp_path):
    proc = run_script(tmp_path, "--steps", "5", "--verbose", "data", "--unknown=1", "--out=m")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "argv ['data', '--unknown=1'] steps 5 verbose True out m"


def test_run_exits_with_mains_return_value(tmp_path):
    assert run_script(tmp_path, exit_value="3").returncode == 3


def test_run_with_explicit_main_and_argv(tmp_path):
    proc = run_script(tmp_path, run_args="main=main, argv=['prog', '--steps=9', 'x']")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "argv ['x'] steps 9 verbose False out None"


def test_bad_flag_value_is_fatal_with_status_1(tmp_path):
    proc = run_script(tmp_path, "--steps=-2")
    assert proc.returncode == 1
    assert proc.stdout == ""
    assert proc.stderr == ("FATAL Flags parsing error: flag --steps=-2: -2 is not a non-negative integer\n"
                           "Pass --helpshort or --helpfull to see help on flags.\n")


def test_help_prints_the_docstring_and_main_flags_then_exits_1(tmp_path):
    proc = run_script(tmp_path, "--help")
    assert proc.returncode == 1
    assert proc.stdout.startswith("Trains a toy model.")
    assert "  --steps: Number of steps.\n    (default: '2')\n    (a non-negative integer)" in proc.stdout
    assert "--helpfull" in proc.stdout and "--[no]helpshort" not in proc.stdout
    full = run_script(tmp_path, "--helpfull")
    assert full.returncode == 1
    assert "--[no]helpshort: show this help" in full.stdout


def test_reading_flags_without_run_parses_sys_argv(tmp_path):
    body = '''
import adplace as tf
tf.flags.DEFINE_integer("n", 1, "N.")
print(tf.flags.FLAGS.n{exit_value}{run_args})
'''
    proc = run_script(tmp_path, "--n=4", body=body, exit_value="")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "4"


def test_run_also_parses_absl_flags_when_a_script_defines_some(tmp_path):
    """A main written for absl (flags defined with absl.flags) runs under tf.app.run (fake absl on the path)."""
    absl_flags = tmp_path / "absl" / "flags"
    absl_flags.mkdir(parents=True)
    (tmp_path / "absl" / "__init__.py").write_text("")
    (absl_flags / "__init__.py").write_text(textwrap.dedent('''
        from adplace.flags import FlagValues, DEFINE_integer as _define
        FLAGS = FlagValues()
        def DEFINE_integer(*args, **kwargs):
            return _define(*args, flag_values=FLAGS, **kwargs)
    '''))
    body = '''
import adplace as tf
from absl import flags
flags.DEFINE_integer("absl_n", 1, "N.")
tf.flags.DEFINE_integer("tf_n", 1, "N.")
def main(argv):
    print(argv[1:], flags.FLAGS.absl_n, tf.flags.FLAGS.tf_n){exit_value}{run_args}
tf.app.run(main)
'''
    proc = run_script(tmp_path, "--absl_n=5", "--tf_n=6", "rest", body=body, exit_value="")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "['rest'] 5 6"


def test_help_text_has_no_default_line_for_none(fv):
    flags.DEFINE_string("out", None, "Output.", flag_values=fv)
    assert str(fv).endswith("  --out: Output.")
