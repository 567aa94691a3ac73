"""Tests for the random parts of tf.nn: dropout (adplace.ops.nn_impl), the candidate samplers and
compute_accidental_hits (adplace.ops.candidate_sampling_ops), and nce_loss / sampled_softmax_loss."""
import numpy as np
import pytest

import adplace as tf

RNG = np.random.default_rng(0)
FLT_MAX = np.finfo(np.float32).max


def run(fetches, feed_dict=None):
    with tf.Session() as sess:
        return sess.run(fetches, feed_dict)


# --- dropout --------------------------------------------------------------------------------------------------------
def test_dropout_keeps_about_keep_prob_and_scales_by_its_inverse():
    tf.set_random_seed(1)
    y = tf.nn.dropout(tf.ones([200, 500]), keep_prob=0.25)
    assert y.name == "dropout/mul_1:0" and y.shape.as_list() == [200, 500]
    value = run(y)
    assert set(np.unique(value).tolist()) == {0.0, 4.0}
    assert abs((value != 0).mean() - 0.25) < 0.005  # 100000 draws: 5 standard deviations is 0.0068
    assert abs(value.mean() - 1.0) < 0.03


def test_dropout_is_reproducible_with_seeds_and_fresh_each_run():
    def masks(graph_seed, op_seed, runs=2):
        graph = tf.Graph()
        with graph.as_default():
            tf.set_random_seed(graph_seed)
            y = tf.nn.dropout(tf.ones([1000]), keep_prob=0.5, seed=op_seed)
        with tf.Session(graph=graph) as sess:
            return [sess.run(y) for _ in range(runs)]
    first, second = masks(3, 7), masks(3, 7)
    np.testing.assert_array_equal(first[0], second[0])
    np.testing.assert_array_equal(first[1], second[1])
    assert not np.array_equal(first[0], first[1])
    assert not np.array_equal(first[0], masks(3, 8)[0])


def test_dropout_with_a_keep_prob_placeholder_and_rate():
    keep_prob = tf.placeholder(tf.float32)
    x = tf.constant(np.arange(1, 10001, dtype=np.float32))
    y = tf.nn.dropout(x, keep_prob, seed=2)
    kept = run(y, {keep_prob: 0.8})
    nonzero = kept != 0
    np.testing.assert_allclose(kept[nonzero], np.arange(1, 10001)[nonzero] / 0.8, rtol=1e-6)
    assert abs(nonzero.mean() - 0.8) < 0.03
    np.testing.assert_array_equal(run(y, {keep_prob: 1.0}), np.arange(1, 10001))
    by_rate = tf.nn.dropout(x, rate=0.75, seed=2)
    assert abs((run(by_rate) != 0).mean() - 0.25) < 0.03


def test_dropout_keep_prob_one_returns_x_itself():
    x = tf.constant([1.0, 2.0])
    assert tf.nn.dropout(x, keep_prob=1.0) is x
    assert tf.nn.dropout(x, rate=0.0) is x


def test_dropout_noise_shape_drops_whole_rows():
    y = tf.nn.dropout(tf.ones([400, 6]), keep_prob=0.5, noise_shape=[400, 1], seed=5)
    value = run(y)
    assert np.all(value == value[:, :1])
    assert 0.35 < (value[:, 0] != 0).mean() < 0.65


def test_dropout_gradient_is_the_mask_times_the_scale():
    x = tf.constant(RNG.uniform(1, 2, size=(50, 40)))
    y = tf.nn.dropout(x, keep_prob=0.5, seed=9)
    g = tf.gradients(tf.reduce_sum(y), x)[0]
    with tf.Session() as sess:
        vy, vg, vx = sess.run([y, g, x])
    np.testing.assert_allclose(vg, vy / vx, rtol=1e-12)


def test_dropout_errors():
    with pytest.raises(ValueError, match=r"rate must be a scalar tensor or a float in the range \[0, 1\), got 1$"):
        tf.nn.dropout(tf.ones([2]), keep_prob=0.0)
    with pytest.raises(ValueError, match=r"rate must be a scalar tensor or a float in the range \[0, 1\), got -0.5"):
        tf.nn.dropout(tf.ones([2]), keep_prob=1.5)
    with pytest.raises(ValueError, match=r"keep_prob must be a floating point number or Tensor \(got 'half'\)"):
        tf.nn.dropout(tf.ones([2]), keep_prob="half")
    with pytest.raises(ValueError, match="You must provide a rate to dropout."):
        tf.nn.dropout(tf.ones([2]))
    with pytest.raises(ValueError, match="Cannot specify both 'keep_prob' and 'rate'"):
        tf.nn.dropout(tf.ones([2]), keep_prob=0.5, rate=0.5)
    with pytest.raises(ValueError, match="x has to be a floating point tensor since it's going to be scaled. Got a "
                                         "<dtype: 'int32'> tensor instead."):
        tf.nn.dropout(tf.constant([1, 2]), keep_prob=0.5)


# --- candidate samplers ---------------------------------------------------------------------------------------------
TRUE_CLASSES = np.array([[1, 4], [0, 7], [9, 2]], np.int64)


def log_uniform_p(k, range_max):
    return np.log((k + 2.0) / (k + 1.0)) / np.log(range_max + 1.0)


def test_log_uniform_sampler_outputs_and_unique_expected_counts():
    sampled, true_count, sampled_count = tf.nn.log_uniform_candidate_sampler(
        TRUE_CLASSES, num_true=2, num_sampled=6, unique=True, range_max=10, seed=3)
    op = sampled.op
    assert op.type == "LogUniformCandidateSampler" and op.name == "LogUniformCandidateSampler"
    assert (sampled.dtype, true_count.dtype, sampled_count.dtype) == (tf.int64, tf.float32, tf.float32)
    assert sampled.shape.as_list() == [6] and true_count.shape.as_list() == [3, 2]
    vs, vt, vc = run([sampled, true_count, sampled_count])
    assert len(set(vs.tolist())) == 6 and vs.min() >= 0 and vs.max() < 10
    # unique draws: the expected count is 1 - (1 - p)^tries for one number of tries shared by every class
    p_true, p_sampled = log_uniform_p(TRUE_CLASSES, 10), log_uniform_p(vs, 10)
    tries = np.log1p(-vc) / np.log1p(-p_sampled)
    assert np.allclose(tries, np.round(tries[0]), rtol=1e-4) and round(tries[0]) >= 6
    np.testing.assert_allclose(vt, -np.expm1(round(tries[0]) * np.log1p(-p_true)), rtol=1e-5)


def test_log_uniform_sampler_distribution_and_counts_without_unique():
    sampled, true_count, sampled_count = tf.nn.log_uniform_candidate_sampler(
        TRUE_CLASSES, 2, 40000, False, 10, seed=4)
    vs, vt, vc = run([sampled, true_count, sampled_count])
    frequencies = np.bincount(vs, minlength=10) / vs.size
    np.testing.assert_allclose(frequencies, log_uniform_p(np.arange(10), 10), atol=0.01)
    np.testing.assert_allclose(vt, 40000 * log_uniform_p(TRUE_CLASSES, 10), rtol=1e-5)
    np.testing.assert_allclose(vc, 40000 * log_uniform_p(vs, 10), rtol=1e-5)


def test_uniform_sampler():
    sampled, true_count, sampled_count = tf.nn.uniform_candidate_sampler(TRUE_CLASSES, 2, 5, True, 5, name="draw")
    assert sampled.op.type == "UniformCandidateSampler" and sampled.op.name == "draw"
    vs, vt, vc = run([sampled, true_count, sampled_count])
    assert sorted(vs.tolist()) == [0, 1, 2, 3, 4]
    assert np.all(vc == vc[0]) and np.all(vt == vc[0]) and 0 < vc[0] <= 1
    many, _, counts = run(tf.nn.uniform_candidate_sampler(TRUE_CLASSES, 2, 30000, False, 6, seed=1))
    np.testing.assert_allclose(np.bincount(many, minlength=6) / many.size, np.full(6, 1 / 6), atol=0.01)
    np.testing.assert_allclose(counts, 5000.0)


def test_fixed_unigram_sampler_never_draws_reserved_ids():
    sampled, true_count, _ = tf.nn.fixed_unigram_candidate_sampler(
        TRUE_CLASSES % 5, 2, 30000, False, 5, distortion=0.5, num_reserved_ids=1, unigrams=[1.0, 4.0, 9.0, 16.0],
        seed=2)
    vs, vt = run([sampled, true_count])
    p = np.array([0.0, 1.0, 2.0, 3.0, 4.0]) / 10.0
    np.testing.assert_allclose(np.bincount(vs, minlength=5) / vs.size, p, atol=0.01)
    np.testing.assert_allclose(vt, 30000 * p[TRUE_CLASSES % 5], rtol=1e-5)


def test_samplers_are_reproducible_with_a_graph_seed():
    def draw():
        graph = tf.Graph()
        with graph.as_default():
            tf.set_random_seed(11)
            sampled = tf.nn.log_uniform_candidate_sampler(TRUE_CLASSES, 2, 8, True, 1000)[0]
        with tf.Session(graph=graph) as sess:
            return [sess.run(sampled) for _ in range(2)]
    first, second = draw(), draw()
    np.testing.assert_array_equal(first, second)
    assert not np.array_equal(first[0], first[1])


def test_sampler_errors():
    with pytest.raises(TypeError, match="Input 'true_classes' of 'LogUniformCandidateSampler' Op has type int32 that "
                                        "does not match expected type of int64."):
        tf.nn.log_uniform_candidate_sampler(tf.constant([[1]]), 1, 2, True, 10)
    with pytest.raises(ValueError, match="Value for attr 'num_sampled' of 0 must be at least minimum 1"):
        tf.nn.uniform_candidate_sampler(TRUE_CLASSES, 2, 0, True, 10)
    with pytest.raises(ValueError, match=r"Shape must be rank 2 but is rank 1 for 'UniformCandidateSampler'"):
        tf.nn.uniform_candidate_sampler([1, 2], 1, 2, True, 10)
    too_many = tf.nn.uniform_candidate_sampler(TRUE_CLASSES, 2, 6, True, 5)[0]
    with pytest.raises(tf.errors.InvalidArgumentError, match="Sampler's range is too small."):
        run(too_many)


def test_samplers_have_cpu_kernels_only():
    for op_type in ("UniformCandidateSampler", "LogUniformCandidateSampler", "FixedUnigramCandidateSampler",
                    "ComputeAccidentalHits"):
        assert tf.config.has_kernel(op_type, "CPU") and not tf.config.has_kernel(op_type, "GPU")


def test_compute_accidental_hits():
    indices, ids, weights = tf.nn.compute_accidental_hits(TRUE_CLASSES, [7, 4, 3, 1], num_true=2)
    assert indices.op.type == "ComputeAccidentalHits"
    assert (indices.dtype, ids.dtype, weights.dtype) == (tf.int32, tf.int64, tf.float32)
    vi, vids, vw = run([indices, ids, weights])
    np.testing.assert_array_equal(vi, [0, 0, 1])
    np.testing.assert_array_equal(vids, [3, 1, 0])  # row 0 holds 1 (position 3) and 4 (position 1); row 1 holds 7
    np.testing.assert_array_equal(vw, [-FLT_MAX] * 3)
    none = run(tf.nn.compute_accidental_hits(TRUE_CLASSES, [5, 6], num_true=2))
    assert [v.size for v in none] == [0, 0, 0]


# --- nce_loss, sampled_softmax_loss ---------------------------------------------------------------------------------
NUM_CLASSES, DIM, BATCH = 12, 5, 4
W0 = RNG.normal(size=(NUM_CLASSES, DIM)) * 0.5
B0 = RNG.normal(size=NUM_CLASSES) * 0.1
X0 = RNG.normal(size=(BATCH, DIM))
LABELS2 = np.array([[1, 3], [0, 5], [7, 2], [11, 1]], np.int64)
SAMPLED = np.array([3, 8, 0, 10, 6], np.int64)
TRUE_COUNT = np.full((BATCH, 2), 0.4, np.float32)
SAMPLED_COUNT = np.array([0.3, 0.2, 0.5, 0.1, 0.25], np.float32)


def np_sampled_logits(labels, remove_hits):
    num_true = labels.shape[1]
    true_logits = np.einsum("bd,btd->bt", X0, W0[labels]) + B0[labels] - np.log(TRUE_COUNT[:, :num_true]
                                                                                  .astype(np.float64))
    sampled_logits = X0 @ W0[SAMPLED].T + B0[SAMPLED] - np.log(SAMPLED_COUNT.astype(np.float64))
    if remove_hits:
        hits = (labels[:, :, None] == SAMPLED[None, None, :]).any(axis=1)
        sampled_logits = np.where(hits, sampled_logits - FLT_MAX, sampled_logits)
    return np.concatenate([true_logits, sampled_logits], 1), num_true


def test_nce_loss_matches_numpy_with_given_sampled_values():
    for remove_hits in (False, True):
        loss = tf.nn.nce_loss(tf.constant(W0), tf.constant(B0), LABELS2, tf.constant(X0), num_sampled=5,
                              num_classes=NUM_CLASSES, num_true=2,
                              sampled_values=(SAMPLED, TRUE_COUNT, SAMPLED_COUNT), remove_accidental_hits=remove_hits)
        assert loss.shape.as_list() == [BATCH]
        logits, num_true = np_sampled_logits(LABELS2, remove_hits)
        targets = np.concatenate([np.full((BATCH, 2), 0.5), np.zeros((BATCH, 5))], 1)
        expected = (np.maximum(logits, 0) - logits * targets + np.log1p(np.exp(-np.abs(logits)))).sum(1)
        np.testing.assert_allclose(run(loss), expected, rtol=1e-10)


def test_sampled_softmax_loss_matches_numpy_and_removes_accidental_hits():
    labels = LABELS2[:, :1]
    loss = tf.nn.sampled_softmax_loss([tf.constant(W0)], tf.constant(B0), labels, tf.constant(X0), num_sampled=5,
                                      num_classes=NUM_CLASSES, sampled_values=(SAMPLED, TRUE_COUNT[:, :1],
                                                                               SAMPLED_COUNT))
    assert loss.name == "softmax_cross_entropy_with_logits/Reshape_2:0" and loss.shape.as_list() == [BATCH]
    logits, _ = np_sampled_logits(labels, remove_hits=True)  # label 0 of row 1 was also sampled: it drops out
    shifted = logits - logits.max(1, keepdims=True)
    expected = -(shifted[:, 0] - np.log(np.exp(shifted).sum(1)))
    np.testing.assert_allclose(run(loss), expected, rtol=1e-10)


def test_sampled_losses_reject_several_shards():
    with pytest.raises(NotImplementedError, match="weights given as 2 shards"):
        tf.nn.nce_loss([tf.constant(W0[:6]), tf.constant(W0[6:])], tf.constant(B0), LABELS2[:, :1], tf.constant(X0),
                       5, NUM_CLASSES)


@pytest.mark.parametrize("loss_fn", [tf.nn.nce_loss, tf.nn.sampled_softmax_loss])
def test_sampled_losses_train_with_gradient_descent(loss_fn):
    tf.set_random_seed(0)
    labels = tf.placeholder(tf.int64, [None, 1])
    inputs = tf.placeholder(tf.float32, [None, DIM])
    weights = tf.Variable(W0.astype(np.float32))
    biases = tf.Variable(np.zeros(NUM_CLASSES, np.float32))
    fixed = tf.reduce_mean(loss_fn(weights, biases, labels, inputs, 5, NUM_CLASSES,
                                   sampled_values=(SAMPLED, TRUE_COUNT[:, :1], SAMPLED_COUNT)))
    sampled = loss_fn(weights, biases, labels, inputs, 6, NUM_CLASSES)
    step = tf.train.GradientDescentOptimizer(0.2).minimize(fixed)
    feed = {labels: LABELS2[:, :1], inputs: X0.astype(np.float32)}
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        values = [sess.run([fixed, step], feed)[0] for _ in range(15)]
        drawn = sess.run(sampled, feed)
    assert all(b < a for a, b in zip(values, values[1:])), values
    assert values[-1] < 0.5 * values[0]
    assert drawn.shape == (BATCH,) and np.all(np.isfinite(drawn)) and np.all(drawn > 0)
