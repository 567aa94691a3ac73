"""Where tf.data runs when the model is on a GPU (virtual GPUs): the dataset and iterator ops have CPU kernels only,
so they are placed on the CPU and each element is copied to the GPU that consumes it (a traced step shows the copy),
as in TF; training through that copy matches NumPy. A dataset pinned to a GPU with tf.device is an
InvalidArgumentError without allow_soft_placement, and falls back to the CPU with it (TF's rule for an op with no
kernel on the requested device)."""
import numpy as np
import pytest

import adplace as tf
from adplace.runtime.step_stats import transfers
from placement_log import CPU0, GPU0, placement_lines

pytestmark = pytest.mark.usefixtures("virtual_gpus_only")

FEATURES = np.array([[1.0, 2.0], [0.5, -1.0], [-1.5, 0.25], [2.0, 1.0], [0.0, -0.5], [1.0, 1.0]], np.float32)
TARGETS = FEATURES @ np.float32([[0.5], [-2.0]]) + np.float32(0.25)
BATCH, EPOCHS, LR = 2, 5, 0.1
DATA_OPS = ("Dataset", "Iterator")


def _is_data_op(op) -> bool:
    return any(word in op.type for word in DATA_OPS)


def _model_on_gpu(features, targets):
    """Linear regression under /gpu:0: w, b, the loss and the SGD step; returns (train_op, w, b)."""
    with tf.device("/gpu:0"):
        w = tf.Variable(tf.zeros([2, 1]), name="w")
        b = tf.Variable(tf.zeros([1]), name="b")
        loss = tf.reduce_mean(tf.square(tf.matmul(features, w) + b - targets))
        train = tf.train.GradientDescentOptimizer(LR).minimize(loss)
    return train, w, b


def _numpy_training() -> tuple[np.ndarray, np.ndarray]:
    """The same SGD, batch after batch in file order, epoch after epoch."""
    w, b = np.zeros((2, 1), np.float32), np.zeros(1, np.float32)
    for _ in range(EPOCHS):
        for i in range(0, len(FEATURES), BATCH):
            x, y = FEATURES[i:i + BATCH], TARGETS[i:i + BATCH]
            err = x @ w + b - y
            w, b = w - LR * (2 * x.T @ err / len(x)), b - LR * (2 * err.mean(0))
    return w, b


def _pipeline(kind: str):
    ds = tf.data.Dataset.from_tensor_slices((FEATURES, TARGETS)).repeat(EPOCHS).batch(BATCH).prefetch(2)
    if kind == "one_shot":
        return ds.make_one_shot_iterator(), None
    it = ds.make_initializable_iterator()
    return it, it.initializer


@pytest.mark.parametrize("kind", ["one_shot", "initializable"])
def test_iterator_ops_go_to_the_cpu_and_elements_are_copied_to_the_gpu_model(gpus, kind, capsys):
    it, init_it = _pipeline(kind)
    features, targets = it.get_next()
    train, w, b = _model_on_gpu(features, targets)
    graph = tf.get_default_graph()
    data_ops = [op for op in graph.get_operations() if _is_data_op(op)]
    assert {"IteratorGetNext", "PrefetchDataset", "BatchDatasetV2", "RepeatDataset", "TensorSliceDataset"} <= {
        op.type for op in data_ops}
    with tf.Session(config=tf.ConfigProto(log_device_placement=True)) as sess:
        sess.run(tf.global_variables_initializer())
        if init_it is not None:
            sess.run(init_it)
        metadata = tf.RunMetadata()
        sess.run(train, options=tf.RunOptions(trace_level=tf.RunOptions.FULL_TRACE), run_metadata=metadata)
        for op in data_ops:
            assert sess.placement(op) == CPU0, op.name
        assert sess.placement(train) == GPU0 and sess.placement(w.op) == GPU0
        steps = 1
        while True:
            try:
                sess.run(train)
            except tf.errors.OutOfRangeError:
                break
            steps += 1
        got_w, got_b = sess.run([w, b])
    logged = {name: device for name, _, device in placement_lines(capsys.readouterr().out)}
    for op in data_ops:
        assert logged[op.name] == CPU0, op.name
    assert logged["w"] == GPU0 and logged["MatMul"] == GPU0
    getnext = next(op for op in data_ops if op.type == "IteratorGetNext").name
    copies = {(t.tensor_name, t.src_device, t.dst_device, t.bytes) for t in transfers(metadata.step_stats)}
    assert (f"{getnext}:0", CPU0, GPU0, BATCH * 2 * 4) in copies  # features [2, 2] float32, CPU -> GPU
    assert (f"{getnext}:1", CPU0, GPU0, BATCH * 1 * 4) in copies  # targets [2, 1]
    assert steps == EPOCHS * len(FEATURES) // BATCH  # every batch trained on once, then the end of the data
    want_w, want_b = _numpy_training()
    np.testing.assert_allclose(got_w, want_w, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(got_b, want_b, rtol=1e-5, atol=1e-6)


def test_training_fed_by_the_iterator_converges_to_the_generating_weights(gpus):
    """Enough epochs of the same GPU model fed from the CPU iterator recover y = 0.5 x1 - 2 x2 + 0.25."""
    ds = tf.data.Dataset.from_tensor_slices((FEATURES, TARGETS)).repeat(300).batch(BATCH)
    features, targets = ds.make_one_shot_iterator().get_next()
    train, w, b = _model_on_gpu(features, targets)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        with pytest.raises(tf.errors.OutOfRangeError):
            while True:
                sess.run(train)
        np.testing.assert_allclose(sess.run(w), [[0.5], [-2.0]], atol=1e-3)
        np.testing.assert_allclose(sess.run(b), [0.25], atol=1e-3)


def _dataset_pinned_to_the_gpu():
    with tf.device("/gpu:0"):
        ds = tf.data.Dataset.from_tensor_slices(FEATURES).batch(4)
        it = ds.make_one_shot_iterator()
        return it.get_next()


def test_a_dataset_under_an_explicit_gpu_device_is_an_error_without_soft_placement(gpus):
    element = _dataset_pinned_to_the_gpu()
    graph = tf.get_default_graph()
    assert all(op.device == "/device:GPU:0" for op in graph.get_operations() if _is_data_op(op))
    with tf.Session() as sess, pytest.raises(tf.errors.InvalidArgumentError,
                                             match=r"Cannot assign a device.*Dataset.*GPU:0"):
        sess.run(element)


def test_a_dataset_under_an_explicit_gpu_device_falls_back_to_the_cpu_with_soft_placement(gpus):
    element = _dataset_pinned_to_the_gpu()
    data_ops = [op for op in tf.get_default_graph().get_operations() if _is_data_op(op)]
    with tf.Session(config=tf.ConfigProto(allow_soft_placement=True)) as sess:
        np.testing.assert_array_equal(sess.run(element), FEATURES[:4])
        np.testing.assert_array_equal(sess.run(element), FEATURES[4:])
        with pytest.raises(tf.errors.OutOfRangeError):
            sess.run(element)
        assert {sess.placement(op) for op in data_ops} == {CPU0}
