"""tf.data datasets in graph mode: each pipeline of pipelines.py gives TensorFlow's elements, every value, dtype and
order: those TF 2.21 (tf.compat.v1) gave, recorded in tf_elements.json, and, where TF is installed, those it gives
now (tf_data_peer.py in a subprocess), which must still be the recorded ones."""
import json
import pathlib
import sys

import pytest

import adplace as tf

sys.path.insert(0, str(pathlib.Path(__file__).parent))
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))
import files  # noqa: E402
import pipelines  # noqa: E402
from elements import drain, to_json  # noqa: E402
from tf_peer import needs_tf, run_peer  # noqa: E402

PEER = pathlib.Path(__file__).with_name("tf_data_peer.py")


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory):
    d = tmp_path_factory.mktemp("data")
    files.write(str(d))
    return str(d)


@pytest.fixture(scope="module")
def tf_elements(data_dir):
    return json.loads(run_peer(PEER, data_dir))


def _ours(name: str, data_dir: str):
    with tf.Graph().as_default():
        return to_json(drain(tf, pipelines.PIPELINES[name](tf, data_dir)))


RECORDED = json.loads(pathlib.Path(__file__).with_name("tf_elements.json").read_text())


def test_every_pipeline_has_recorded_elements():
    assert sorted(RECORDED) == sorted(pipelines.PIPELINES)


@pytest.mark.parametrize("name", sorted(pipelines.PIPELINES))
def test_pipeline_gives_tensorflows_recorded_elements(name, data_dir):
    assert _ours(name, data_dir) == RECORDED[name]


@needs_tf
def test_tensorflow_still_gives_the_recorded_elements(tf_elements):
    assert tf_elements == RECORDED
