"""Fixtures of the Julia checks: a tree-sitter-julia parser (skips with the reason when it is not installed)."""
import pytest


@pytest.fixture(scope="session")
def julia_parser():
    ts = pytest.importorskip("tree_sitter")
    ts_julia = pytest.importorskip("tree_sitter_julia")
    return ts.Parser(ts.Language(ts_julia.language()))
