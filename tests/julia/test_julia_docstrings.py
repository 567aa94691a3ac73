"""Every name ADPlace exports has a docstring right above its definition."""
import re

from julia_sources import package_source

SOURCE = package_source()


def _exported() -> list[str]:
    block = re.search(r"^export (.+?)\n\n", SOURCE, re.S | re.M).group(1)
    return [name.strip() for name in block.replace("\n", " ").split(",")]


def _documented(name: str) -> bool:
    bare = name.lstrip("@")
    owner = r"(?:(?:Base|LinearAlgebra|Statistics)\.)?"
    definition = (rf"(?:macro {re.escape(bare)}\(|function {owner}{re.escape(bare)}\(|const {re.escape(bare)} ="
                  rf"|struct {re.escape(bare)}\b|{owner}{re.escape(bare)}\()")
    return re.search(rf'"""\n(?:[^\n]*\n)*?"""\n{definition}', SOURCE) is not None or \
        re.search(rf'"""[^\n]+"""\n{definition}', SOURCE) is not None


def test_every_export_has_a_docstring():
    names = _exported()
    assert {"PyObject", "tf", "@pywith", "@cpu", "@gpu", "gradients", "Session", "run_profile"} <= set(names)
    assert [n for n in names if not _documented(n)] == []


def test_the_check_fails_for_an_undocumented_definition():
    global SOURCE
    saved, SOURCE = SOURCE, SOURCE + "\nfunction undocumented_thing(x)\nend\n"
    try:
        assert not _documented("undocumented_thing")
    finally:
        SOURCE = saved
