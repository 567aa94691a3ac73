"""A TF1-style training script fed by tf.data through a one-shot iterator in a MonitoredTrainingSession: the loop
`while not sess.should_stop(): sess.run(train_op)` ends at StopAtStepHook's last step, or at the end of the data,
whose OutOfRangeError the `with` block's exit swallows (TF's MonitoredSession.__exit__) after the hooks' end() - the
CheckpointSaverHook's final checkpoint included. Every count is exact: the examples consumed, the steps, the global
step saved. The same script run by TensorFlow (tf.compat.v1, in a subprocess) ends at the same step with the same
weights."""
import collections
import importlib.util
import json
import os
import subprocess
import sys

import numpy as np
import pytest

import adplace as tf

N, BATCH, EPOCHS = 10, 4, 3
BATCHES = -(-N * EPOCHS // BATCH)  # 30 examples in batches of 4: 7 full batches and one of 2


def _build(shuffle: bool = True):
    """The training graph: example ids and a regression target through tf.data, a linear model, SGD with a global
    step; returns (train_op, ids of the batch, global_step, w)."""
    x = np.arange(N * 2, dtype=np.float32).reshape(N, 2) / 10.0
    y = x @ np.float32([[1.0], [-1.0]])
    ds = tf.data.Dataset.from_tensor_slices((np.arange(N), x, y)).repeat(EPOCHS)
    if shuffle:
        ds = ds.shuffle(N, seed=3)
    ids, features, targets = ds.batch(BATCH).make_one_shot_iterator().get_next()
    global_step = tf.train.get_or_create_global_step()
    w = tf.Variable(tf.zeros([2, 1]), name="w")
    loss = tf.reduce_mean(tf.square(tf.matmul(features, w) - targets))
    train_op = tf.train.GradientDescentOptimizer(0.05).minimize(loss, global_step=global_step)
    return train_op, ids, global_step, w


def _train(checkpoint_dir, hooks, **kwargs) -> tuple[list, int, bool]:
    """Run the TF1 loop; returns (ids consumed, steps run, whether the code after `with` ran)."""
    train_op, ids, _, _ = _build()
    consumed, steps = [], 0
    with tf.train.MonitoredTrainingSession(checkpoint_dir=checkpoint_dir, hooks=hooks, log_step_count_steps=None,
                                           **kwargs) as sess:
        while not sess.should_stop():
            _, got = sess.run([train_op, ids])
            consumed.extend(got.tolist())
            steps += 1
    return consumed, steps, True


def _saved_step(checkpoint_dir) -> int:
    path = tf.train.latest_checkpoint(str(checkpoint_dir))
    assert path is not None, f"no checkpoint in {checkpoint_dir}"
    return int(path.rsplit("-", 1)[1])


def test_stop_at_step_hook_ends_training_with_exactly_its_steps_of_examples(tmp_path):
    consumed, steps, after = _train(str(tmp_path), [tf.train.StopAtStepHook(last_step=5)],
                                    save_checkpoint_steps=2)
    assert after and steps == 5
    assert len(consumed) == 5 * BATCH and set(consumed) <= set(range(N))
    assert max(collections.Counter(consumed).values()) <= EPOCHS  # shuffled across epochs, none seen too often
    assert _saved_step(tmp_path) == 5  # the saver hook's end() writes the last step


def test_the_end_of_the_data_ends_the_loop_and_the_with_block_swallows_out_of_range(tmp_path):
    consumed, steps, after = _train(str(tmp_path), [tf.train.StopAtStepHook(last_step=1000)])
    assert after  # OutOfRangeError did not escape the `with`
    assert steps == BATCHES  # one step per batch, the short last batch included
    assert sorted(consumed) == sorted(list(range(N)) * EPOCHS)  # every example exactly EPOCHS times
    assert _saved_step(tmp_path) == BATCHES  # hooks' end() ran: the final checkpoint is at the last step


def test_a_restarted_script_resumes_the_global_step_and_its_one_shot_iterator_starts_over(tmp_path):
    _train(str(tmp_path), [tf.train.StopAtStepHook(last_step=3)])
    tf.reset_default_graph()
    consumed, steps, _ = _train(str(tmp_path), [tf.train.StopAtStepHook(num_steps=2)])
    assert steps == 2 and _saved_step(tmp_path) == 5  # restored at 3, two more steps
    assert len(consumed) == 2 * BATCH  # the iterator is not in the checkpoint: a fresh pass over the data
    tf.reset_default_graph()
    consumed, steps, after = _train(str(tmp_path), [tf.train.StopAtStepHook(last_step=1000)])
    assert after and steps == BATCHES and len(consumed) == N * EPOCHS
    assert _saved_step(tmp_path) == 5 + BATCHES


def test_other_errors_still_escape_the_with_block(tmp_path):
    train_op, _, _, _ = _build()
    with pytest.raises(ValueError, match="not the end of the data"):
        with tf.train.MonitoredTrainingSession(checkpoint_dir=str(tmp_path), log_step_count_steps=None) as sess:
            sess.run(train_op)
            raise ValueError("not the end of the data")
    tf.reset_default_graph()
    value = tf.placeholder(tf.int32, [])
    failing = tf.assert_equal(value, 2)
    with pytest.raises(tf.errors.InvalidArgumentError):  # an error of a run, not the end of the data
        with tf.train.MonitoredTrainingSession(log_step_count_steps=None) as sess:
            sess.run(failing, feed_dict={value: 1})


# --- the same script in TensorFlow --------------------------------------------------------------------------------
SCRIPT = """
import json, sys
import numpy as np
{import_line}
N, BATCH, EPOCHS = {n}, {batch}, {epochs}
x = np.arange(N * 2, dtype=np.float32).reshape(N, 2) / 10.0
y = x @ np.float32([[1.0], [-1.0]])
dataset = tf.data.Dataset.from_tensor_slices((np.arange(N), x, y)).repeat(EPOCHS).batch(BATCH)
ids, features, targets = dataset.make_one_shot_iterator().get_next()
global_step = tf.train.get_or_create_global_step()
w = tf.Variable(tf.zeros([2, 1]), name="w")
loss = tf.reduce_mean(tf.square(tf.matmul(features, w) - targets))
train_op = tf.train.GradientDescentOptimizer(0.05).minimize(loss, global_step=global_step)
consumed, steps = [], 0
with tf.train.MonitoredTrainingSession(checkpoint_dir=sys.argv[1], log_step_count_steps=None,
                                       hooks=[tf.train.StopAtStepHook(last_step=int(sys.argv[2]))]) as sess:
    while not sess.should_stop():
        _, got = sess.run([train_op, ids])
        consumed.extend(got.tolist())
        steps += 1
reader = tf.train.NewCheckpointReader(tf.train.latest_checkpoint(sys.argv[1]))
print(json.dumps({{"consumed": consumed, "steps": steps, "global_step": int(reader.get_tensor("global_step")),
                  "w": reader.get_tensor("w").ravel().tolist()}}))
"""
IMPORTS = {"adplace": "import adplace as tf",
           "tensorflow": "import tensorflow.compat.v1 as tf\ntf.disable_v2_behavior()"}


def _run_script(library: str, directory, last_step: int) -> dict:
    path = directory / f"train_{library}.py"
    path.write_text(SCRIPT.format(import_line=IMPORTS[library], n=N, batch=BATCH, epochs=EPOCHS))
    done = subprocess.run([sys.executable, str(path), str(directory / library), str(last_step)], capture_output=True,
                          text=True, timeout=300, env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3",
                                                       "CUDA_VISIBLE_DEVICES": ""})
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


@pytest.mark.skipif(importlib.util.find_spec("tensorflow") is None, reason="TensorFlow is not installed")
@pytest.mark.parametrize("last_step", [5, 1000], ids=["stop_hook_first", "data_ends_first"])
def test_tensorflow_ends_the_same_script_at_the_same_step_with_the_same_weights(tmp_path, last_step):
    ours, theirs = _run_script("adplace", tmp_path, last_step), _run_script("tensorflow", tmp_path, last_step)
    want_steps = min(last_step, BATCHES)
    assert theirs["steps"] == ours["steps"] == want_steps
    assert theirs["global_step"] == ours["global_step"] == want_steps
    assert ours["consumed"] == theirs["consumed"] == (list(range(N)) * EPOCHS)[:want_steps * BATCH]
    np.testing.assert_allclose(ours["w"], theirs["w"], rtol=1e-5, atol=1e-6)
