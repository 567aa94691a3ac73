"""The Python-name contract of the Julia code: every call `tf.a.b(args...; kws...)` in julia/ (ADPlace's `tf` is
`import adplace`) binds to the signature of the Python callable it reaches, so a misspelt keyword, a keyword the
function lacks or one positional argument too many is found here rather than when the Julia line runs. And the two
halves of ADCME's API cannot drift: every function of `adplace.adcme` is called from julia/src and every
`tf.adcme.x` called there exists.
"""
import inspect
from dataclasses import dataclass
from pathlib import Path

import pytest

import adplace as tf
from julia_sources import SRC_FILES

REPO = Path(__file__).resolve().parents[2]
JULIA_FILES = sorted((REPO / "julia").rglob("*.jl"))


@dataclass(frozen=True)
class Call:
    chain: str            # "adcme.reshape" for tf.adcme.reshape(...)
    positional: int       # positional arguments written out
    keywords: tuple       # keyword names written out
    positional_splat: bool
    keyword_splat: bool
    where: str


def _chain(node) -> str | None:
    """`a.b.c` of a field_expression rooted at the identifier `tf`, else None."""
    parts = []
    while node.type == "field_expression":
        parts.append(node.children[-1].text.decode())
        node = node.child_by_field_name("value") or node.children[0]
    return ".".join(reversed(parts)) if node.type == "identifier" and node.text == b"tf" and parts else None


def tf_calls(tree, path: Path) -> list[Call]:
    """The calls of `tf.x.y(...)` in a parsed file, with what their argument lists write."""
    calls, stack = [], [tree.root_node]
    while stack:
        node = stack.pop()
        stack.extend(node.children)
        if node.type != "call_expression" or node.children[0].type != "field_expression":
            continue
        chain = _chain(node.children[0])
        arguments = node.children[-1]
        if chain is None or arguments.type != "argument_list":
            continue
        positional, keywords, splats, after_semicolon = 0, [], [False, False], False
        for arg in arguments.children:
            if arg.type == ";":
                after_semicolon = True
            elif arg.type == "named_argument":
                keywords.append(arg.named_children[0].text.decode())
            elif arg.type == "splat_expression":
                splats[after_semicolon] = True
            elif arg.is_named and arg.type != "comment":
                if after_semicolon and arg.type == "identifier":
                    keywords.append(arg.text.decode())   # f(x; axis) passes axis=axis
                else:
                    positional += 1
        line = node.start_point[0] + 1
        calls.append(Call(chain, positional, tuple(keywords), splats[0], splats[1],
                          f"{path.relative_to(REPO)}:{line}"))
    return calls


def binding_problem(call: Call) -> str | None:
    """Why `call` cannot bind to the Python callable it names (None when it can, or cannot be checked)."""
    target = tf
    for part in call.chain.split("."):
        target = getattr(target, part, None)
        if target is None:
            return None  # a missing name is test_julia_package's finding
    if not callable(target):
        return None
    try:
        signature = inspect.signature(target)
    except (TypeError, ValueError):
        return None  # builtins without a signature
    params = signature.parameters.values()
    var_keyword = any(p.kind is p.VAR_KEYWORD for p in params)
    named = {p.name for p in params if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)}
    unknown = [k for k in call.keywords if k not in named and not var_keyword]
    if unknown:
        return f"{call.where}: tf.{call.chain} has no keyword {', '.join(unknown)}"
    if call.positional_splat:
        return None
    try:
        values = {k: None for k in call.keywords}
        if call.keyword_splat:
            signature.bind_partial(*[None] * call.positional, **values)
        else:
            signature.bind(*[None] * call.positional, **values)
    except TypeError as e:
        return f"{call.where}: tf.{call.chain}({call.positional} positional, {list(call.keywords)}): {e}"
    return None


@pytest.fixture(scope="module")
def calls(julia_parser) -> list[Call]:
    found = []
    for path in JULIA_FILES:
        found += tf_calls(julia_parser.parse(path.read_bytes()), path)
    return found


def test_calls_are_found(calls):
    """The reader sees the calls of the package (positional, keyword and splatted arguments), so the check below is
    not vacuous."""
    by_chain = {c.chain for c in calls}
    assert {"adcme.getindex", "adcme.reshape", "while_loop", "placeholder_with_default", "reduce_sum",
            "contrib.opt.ScipyOptimizerInterface", "get_variable"} <= by_chain
    (norm,) = [c for c in calls if c.chain == "norm"]
    assert norm.keywords == ("ord", "axis") and norm.positional == 1


def test_every_tf_call_binds_to_its_python_signature(calls):
    problems = [p for p in map(binding_problem, calls) if p]
    assert problems == []


@pytest.mark.parametrize("call, reason", [
    (Call("reduce_sum", 1, ("axes",), False, False, "x"), "no keyword axes"),
    (Call("adcme.size", 3, (), False, False, "x"), "too many positional"),
    (Call("placeholder_with_default", 0, ("shape",), False, False, "x"), "missing a required argument"),
])
def test_the_binding_check_can_fail(call, reason):
    assert reason in binding_problem(call)


def test_adcme_and_julia_call_each_other_completely(julia_parser):
    """Every function of adplace.adcme is called from julia/src (nothing there is dead or only Python's), and each
    `tf.adcme.x` called there is one of them."""
    called = set()
    for path in SRC_FILES:
        called |= {c.chain.split(".", 1)[1] for c in tf_calls(julia_parser.parse(path.read_bytes()), path)
                   if c.chain.startswith("adcme.")}
    called |= {"error_parts"} if "error_parts" in (REPO / "julia" / "src" / "errors.jl").read_text() else set()
    assert called == set(tf.adcme.__all__)
