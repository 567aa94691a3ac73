"""tf.io.matching_files (TF's MatchingFiles op) and tf.train.match_filenames_once: the sorted names of the files
matching glob patterns, checked by hand and against real TensorFlow (in a subprocess)."""
import json
import textwrap

import numpy as np
import pytest

import adplace as tf
from adplace.framework.registry import get_gradient_function
from tf_peer import needs_tf, run_peer

FILES = ("a.txt", "b.txt", "ab.csv", "sub/c.txt", "sub/d.csv", "sub/deep/e.txt", "[x].txt")
PATTERNS = ("*.txt", "?b.csv", "sub/*", "*/*.txt", "[ab].txt", "[^a]*.txt", "\\[x\\].txt", "sub/deep/*", "none/*",
            "a.txt", "missing.txt", "*")


@pytest.fixture
def folder(tmp_path):
    for name in FILES:
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(name)
    return tmp_path


def _ours(folder, patterns) -> dict:
    with tf.Graph().as_default():
        ops = {p: tf.io.matching_files(str(folder / p)) for p in patterns}
        with tf.Session() as sess:
            got = sess.run(ops)
    return {p: [n.decode()[len(str(folder)) + 1:] for n in names] for p, names in got.items()}


def test_matches_are_sorted_relative_names(folder):
    got = _ours(folder, PATTERNS)
    assert got["*.txt"] == ["[x].txt", "a.txt", "b.txt"]
    assert got["sub/*"] == ["sub/c.txt", "sub/d.csv", "sub/deep"]
    assert got["*/*.txt"] == ["sub/c.txt"]
    assert got["[^a]*.txt"] == ["[x].txt", "b.txt"] and got["\\[x\\].txt"] == ["[x].txt"]
    assert got["none/*"] == [] and got["missing.txt"] == [] and got["a.txt"] == ["a.txt"]


def test_a_vector_of_patterns_is_one_sorted_list(folder):
    with tf.Graph().as_default():
        names = tf.matching_files([str(folder / "sub/*.csv"), str(folder / "*.txt")])
        assert names.dtype == tf.string and names.shape.as_list() == [None] and names.op.type == "MatchingFiles"
        with tf.Session() as sess:
            got = sess.run(names)
    assert got.tolist() == sorted(str(folder / n).encode() for n in ("sub/d.csv", "[x].txt", "a.txt", "b.txt"))


def test_pattern_rank_and_dtype_are_checked(folder):
    with tf.Graph().as_default():
        with pytest.raises(ValueError, match="at most rank 1"):
            tf.io.matching_files([["a", "b"]])
        with pytest.raises(ValueError, match="dtype string"):
            tf.io.matching_files(tf.constant(1))
        fed = tf.placeholder(tf.string)
        names = tf.io.matching_files(fed)
        with tf.Session() as sess:
            with pytest.raises(tf.errors.InvalidArgumentError, match="scalar or vector"):
                sess.run(names, {fed: np.array([["a"]], dtype=object)})
            assert sess.run(names, {fed: str(folder / "b*")}).tolist() == [str(folder / "b.txt").encode()]


def test_match_filenames_once_is_a_local_variable_fixed_at_initialization(folder):
    with tf.Graph().as_default() as graph:
        assert tf.io.match_filenames_once is tf.train.match_filenames_once
        names = tf.train.match_filenames_once(str(folder / "*.csv"))
        assert names.name == "matching_filenames:0" and graph.get_collection(tf.GraphKeys.LOCAL_VARIABLES) == [names]
        assert graph.get_collection(tf.GraphKeys.TRAINABLE_VARIABLES) == []
        with tf.Session() as sess:
            sess.run(tf.local_variables_initializer())
            (folder / "late.csv").write_text("late")
            assert sess.run(names).tolist() == [str(folder / "ab.csv").encode()]
            sess.run(tf.local_variables_initializer())
            assert len(sess.run(names)) == 2


def test_not_differentiable():
    with tf.Graph().as_default():
        assert get_gradient_function(tf.io.matching_files("x").op) is None


@needs_tf
def test_same_matches_as_tensorflow(folder, tmp_path_factory):
    script = tmp_path_factory.mktemp("peer") / "matching_files_peer.py"
    script.write_text(textwrap.dedent("""\
        import json, sys
        import tensorflow as tf
        folder, patterns = sys.argv[1], json.loads(sys.argv[2])
        got = {p: [n.decode()[len(folder) + 1:] for n in tf.io.matching_files(folder + "/" + p).numpy()]
               for p in patterns}
        print(json.dumps(got))
    """))
    assert _ours(folder, PATTERNS) == json.loads(run_peer(script, folder, json.dumps(PATTERNS)))
