"""Fixtures of the Julia checks: a tree-sitter-julia parser (skips with the reason when it is not installed), and a
fresh graph with a session as ADPlace hands it to Julia code (`sess`)."""
import pytest

import adplace as tf
from julia_standin import JuliaPyObject


@pytest.fixture(scope="session")
def julia_parser():
    ts = pytest.importorskip("tree_sitter")
    ts_julia = pytest.importorskip("tree_sitter_julia")
    return ts.Parser(ts.Language(ts_julia.language()))


@pytest.fixture
def sess():
    """A session on a fresh default graph, wrapped as ADPlace's PyObject (its results come back as Julia values)."""
    tf.reset_default_graph()
    with tf.Session() as session:
        yield JuliaPyObject(session)
