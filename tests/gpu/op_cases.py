"""One small program per op type that has a GPU kernel, run on a GPU and on the CPU to compare the kernels.

`CASES` maps a case name to `build(rng) -> ([init op,] fetches, feed_dict)`, building under the caller's device scope; `COVERS`
maps each case to the op types it exercises, so a test can prove every GPU-registered op type is compared. Random
ops draw from per-device generators, so `RANDOM_CASES` are compared by shape, dtype and range, not value.
"""
import numpy as np

import adplace as tf
from adplace.ops.array_ops import prevent_gradient


def _x(rng, *shape, low=-2.0, high=2.0, dtype=np.float32):
    return rng.uniform(low, high, size=shape).astype(dtype)


def _unary(fn, low=-2.0, high=2.0):
    def build(rng):
        p = tf.placeholder(tf.float32, [3, 4])
        return fn(p), {p: _x(rng, 3, 4, low=low, high=high)}
    return build


def _binary(fn, low=-2.0, high=2.0, dtype=np.float32):
    def build(rng):
        a = tf.constant(_x(rng, 3, 4, low=low, high=high, dtype=dtype))
        b = tf.constant(_x(rng, 4, low=low, high=high, dtype=dtype))  # broadcast along rows
        return fn(a, b), {}
    return build


def _variable_program(rng):
    v = tf.Variable(_x(rng, 3, 2), name="v")
    w = tf.Variable(_x(rng, 3, 2, dtype=np.float64), name="w")
    init = tf.global_variables_initializer()
    ready = tf.is_variable_initialized(v)
    update = tf.assign_add(v, tf.ones([3, 2]))
    with tf.control_dependencies([update]):
        after = tf.assign_sub(w, tf.constant(np.ones((3, 2))))
    return [init, ready, update, after, v.initialized_value()], {}


def _unary_gradients(rng):
    """The gradient ops of Tanh, Sigmoid, Sqrt, Rsqrt, Reciprocal and Relu (TanhGrad, ...), and their gradients."""
    p = tf.placeholder(tf.float32, [3, 4])
    ys = [tf.tanh(p), tf.sigmoid(p), tf.sqrt(p), tf.rsqrt(p), tf.reciprocal(p), tf.nn.relu(p - 1.25)]
    firsts = [tf.gradients(y, p, grad_ys=tf.cos(p))[0] for y in ys]  # an elementwise dy: each gradient op fuses
    return firsts + [tf.gradients(g, p)[0] for g in firsts], {p: _x(rng, 3, 4, low=0.5, high=2.0)}


def _nn_activation_gradients(rng):
    """Relu6, Elu, Selu, Softplus, Softsign, LeakyRelu, their gradient ops (Relu6Grad, ...) and those ops' gradients."""
    p = tf.placeholder(tf.float32, [3, 4])
    ys = [tf.nn.relu6(p * 4), tf.nn.elu(p), tf.nn.selu(p), tf.nn.softplus(p), tf.nn.softsign(p), tf.nn.leaky_relu(p)]
    firsts = [tf.gradients(y, p, grad_ys=tf.cos(p))[0] for y in ys]
    return ys + firsts + [tf.gradients(g, p)[0] for g in firsts], {p: _x(rng, 3, 4)}


def _nn_losses(rng):
    """Softmax, LogSoftmax, both softmax cross entropies (values and gradients), L2Loss and InTopKV2."""
    logits = tf.constant(_x(rng, 4, 5, low=-30, high=30))
    labels = tf.constant(rng.dirichlet(np.ones(5), size=4).astype(np.float32))
    ids = tf.constant(np.array([0, 4, 2, 1], np.int32))
    xent = tf.nn.softmax_cross_entropy_with_logits_v2(labels=labels, logits=logits)
    sparse = tf.nn.sparse_softmax_cross_entropy_with_logits(labels=ids, logits=logits)
    return ([tf.nn.softmax(logits), tf.nn.log_softmax(logits, axis=0), xent, sparse, tf.nn.l2_loss(logits),
             tf.nn.in_top_k(logits, ids, 2), tf.nn.in_top_k(logits, tf.cast(ids, tf.int64), 1)]
            + tf.gradients(tf.reduce_sum(xent) + tf.reduce_sum(sparse), [logits, labels]), {})


def _conv_program(rng):
    """Conv2D in both formats (strided, dilated) with its input and filter gradients (the two backprop ops)."""
    x, f = tf.constant(_x(rng, 2, 7, 6, 3)), tf.constant(_x(rng, 3, 3, 3, 4))
    x_nchw = tf.transpose(x, [0, 3, 1, 2])
    ys = [tf.nn.conv2d(x, f, 2, "SAME"), tf.nn.conv2d(x, f, 1, "VALID", dilations=2),
          tf.nn.conv2d(x_nchw, f, [1, 1, 2, 2], "SAME", data_format="NCHW")]
    return ys + tf.gradients(tf.add_n([tf.reduce_sum(tf.square(y)) for y in ys]), [x, f]), {}


def _pooling_program(rng):
    """MaxPool/AvgPool (NHWC SAME, NCHW VALID), their gradients, and MaxPoolGradGrad."""
    x = tf.constant(rng.permutation(2 * 5 * 6 * 3).reshape(2, 5, 6, 3).astype(np.float32))
    pools = [tf.nn.max_pool(x, 3, 2, "SAME"), tf.nn.avg_pool(x, 3, 2, "SAME"),
             tf.nn.max_pool(tf.transpose(x, [0, 3, 1, 2]), [1, 1, 2, 2], [1, 1, 2, 2], "VALID", data_format="NCHW"),
             tf.nn.avg_pool(tf.transpose(x, [0, 3, 1, 2]), [1, 1, 2, 2], [1, 1, 1, 1], "VALID", data_format="NCHW")]
    grads = tf.gradients(tf.add_n([tf.reduce_sum(tf.square(p)) for p in pools]), x)
    return pools + grads + tf.gradients(tf.reduce_sum(grads[0] * x), x), {}


def _gather_and_friends(rng):
    """GatherV2 (and its dense gradient, UnsortedSegmentSum), SelectV2, OneHot, ArgMax/ArgMin, Slice, Pad, PadV2,
    MirrorPad (and MirrorPadGrad), ReverseV2 and IdentityN."""
    t = tf.constant(_x(rng, 3, 4))
    rows = tf.gather(t, tf.constant(np.array([2, 0, 2], np.int64)))
    cols = tf.gather(t, [3, 1], axis=1)
    padded = [tf.pad(t, [[1, 0], [0, 2]]), tf.pad(t, [[1, 1], [0, 1]], constant_values=2.0),
              tf.pad(t, [[1, 1], [2, 2]], "REFLECT"), tf.pad(t, [[0, 2], [1, 0]], "SYMMETRIC")]
    grads = tf.gradients(tf.add_n([tf.reduce_sum(tf.square(v)) for v in [rows, cols] + padded]), t)
    ids = tf.constant(np.array([0, 2, -1], np.int64))
    return ([rows, cols, *padded, *grads, tf.unsorted_segment_sum(t, tf.constant([1, 0, 1]), 2),
             tf.where_v2(t > 0, t, tf.zeros([4])), tf.one_hot(ids, 3), tf.one_hot(ids, 3, axis=0, dtype=tf.int64),
             tf.argmax(t, 1), tf.argmin(t, 0, output_type=tf.int32), tf.slice(t, [1, 1], [2, -1]),
             tf.reverse(t, [0, 1]), *tf.identity_n([t, rows])], {})


def _gather_scatter_nd(rng):
    """GatherNd (elements and rows, int32 and int64 indices), ScatterNd with a repeated index, TensorScatterUpdate/
    Add/Sub, and their gradients."""
    t = tf.constant(_x(rng, 4, 3))
    pairs = tf.constant(np.array([[3, 1], [0, 2], [3, 1]], np.int64))
    rows = tf.constant(np.array([[2], [0], [2]], np.int32))
    gathered = [tf.gather_nd(t, pairs), tf.gather_nd(t, rows)]
    written = [tf.scatter_nd(rows, tf.gather_nd(t, rows) * 2.0, [5, 3]), tf.tensor_scatter_update(t, pairs[:2], [7.0, 8.0]),
               tf.tensor_scatter_add(t, rows, tf.ones([3, 3])), tf.tensor_scatter_sub(t, pairs, [1.0, 2.0, 3.0])]
    loss = tf.add_n([tf.reduce_sum(tf.square(v)) for v in gathered + written])
    return gathered + written + [tf.convert_to_tensor(g) for g in tf.gradients(loss, t)], {}


def _partition_stitch_segments(rng):
    """DynamicPartition, DynamicStitch, ParallelDynamicStitch, the sorted segment reductions and UnsortedSegmentMax/
    Min/Prod (float64 too), with the gradients of the partition and the stitches."""
    t = tf.constant(_x(rng, 6, 3))
    parts = tf.dynamic_partition(t, tf.constant(np.array([1, 0, 2, 1, 0, 1], np.int32)), 3)
    positions = [tf.constant(np.array(p, np.int32)) for p in ([1, 4], [0, 3, 5], [2])]
    stitched = [tf.dynamic_stitch(positions, parts), tf.parallel_dynamic_stitch(positions, parts)]
    ids, unsorted = tf.constant(np.array([0, 0, 2, 2, 2, 3], np.int64)), tf.constant(np.array([2, 0, -1, 2, 0, 2]))
    segments = [tf.segment_sum(t, ids), tf.segment_mean(t, ids), tf.segment_max(t, ids), tf.segment_min(t, ids),
                tf.segment_prod(t, ids), tf.unsorted_segment_max(t, unsorted, 4),
                tf.unsorted_segment_min(t, unsorted, 4), tf.unsorted_segment_prod(t, unsorted, 4)]
    t64 = tf.constant(rng.standard_normal((6, 3)))  # CuPy's float64 max/min atomics round through float32
    segments += [tf.segment_max(t64, ids), tf.unsorted_segment_min(t64, unsorted, 4)]
    grads = tf.gradients(tf.add_n([tf.reduce_sum(tf.square(v)) for v in stitched]), t)
    return parts + stitched + segments + grads, {}


def _control_flow(rng):
    """tf.cond taking each branch (Switch, Merge), a while loop writing a TensorArray with a loop and a cond in its
    body (Enter, Exit, NextIteration, LoopCond, every TensorArray op) and the gradients of it all (a backward loop
    reading stacks of forward values, pushed in the cond's branch when it is taken: StackV2, StackPushV2, StackPopV2,
    ControlTrigger; TensorArrayGradV3)."""
    x, w = tf.constant(_x(rng, 3)), tf.constant(_x(rng, 3, low=0.5, high=1.0))
    taken = [tf.cond(tf.reduce_sum(x) > -100.0, lambda: x * w, lambda: x + w),
             tf.cond(tf.reduce_sum(x) > 100.0, lambda: x * w, lambda: tf.sin(x))]

    def body(i, v, ta):
        inner = tf.while_loop(lambda j, u: j < 2, lambda j, u: (j + 1, u * w + 0.1), [0, v])[1]
        bent = tf.cond(tf.reduce_sum(inner) > 0.0, lambda: tf.tanh(inner) * w, lambda: tf.sin(inner[::-1]))
        return i + 1, bent, ta.write(i, inner)
    ta = tf.TensorArray(tf.float32, size=4, clear_after_read=False)
    _, final, ta = tf.while_loop(lambda i, v, t: i < 4, body, [0, x, ta])
    stacked = ta.stack()
    split = tf.TensorArray(tf.float32, size=2, infer_shape=False).split(x, [1, 2])
    scattered = tf.TensorArray(tf.float32, size=3).scatter([2, 0, 1], tf.reshape(x, [3, 1]))
    grown = tf.TensorArray(tf.float32, size=1, dynamic_size=True).write(2, x)
    picked = [ta.read(2), ta.gather([3, 0]), ta.concat(), grown.size(), split.concat(), scattered.stack()]
    loss = tf.reduce_sum(final * final) + tf.reduce_sum(stacked * w) + tf.add_n([tf.reduce_sum(t) for t in taken])
    grads = tf.gradients(loss + tf.reduce_sum(picked[1]), [x, w])
    with tf.control_dependencies(grads + picked):
        closed = ta.close()
    return taken + [final, stacked] + picked + grads + [closed], {}


def _control_flow_refs(rng):
    """A variable assigned in a cond branch (RefSwitch) and read in every iteration of a loop (RefEnter)."""
    v = tf.Variable(_x(rng, 3))
    bumped = tf.cond(tf.constant(True), lambda: tf.assign_add(v, tf.ones([3])), lambda: tf.assign_sub(v, tf.ones([3])))
    with tf.control_dependencies([bumped]):
        looped = tf.while_loop(lambda i, s: i < 3, lambda i, s: (i + 1, s + v.read_value()), [0, tf.zeros([3])])[1]
    return tf.global_variables_initializer(), [bumped, looped], {}


def _logical_bitwise(rng):
    """LogicalAnd/Or/Not, Any/All, IsFinite/IsNan/IsInf and the int64 bitwise ops."""
    t = tf.constant(_x(rng, 3, 4))
    a, b = t > 0, t < 1
    i, j = tf.constant(np.array([6, 3, 12], np.int64)), tf.constant(np.array([5, 1, 2], np.int64))
    odd = tf.constant(np.array([1.0, np.nan, np.inf], np.float32))
    return ([a & b, a | b, ~a, tf.logical_xor(a, b), tf.reduce_any(a, 1), tf.reduce_all(b, 0, keepdims=True),
             tf.is_finite(odd), tf.is_nan(odd), tf.is_inf(odd), i & j, i | j, i ^ j, ~i,
             tf.bitwise.left_shift(i, j), tf.bitwise.right_shift(i, j)], {})


def _optimizer(make):
    def build(rng):
        w = tf.Variable(_x(rng, 4, 2), name="w")
        x = tf.constant(_x(rng, 5, 4))
        loss = tf.reduce_mean(tf.square(tf.matmul(x, w) - 1.0))
        step = make().minimize(loss)
        return tf.global_variables_initializer(), [step, w, loss], {}
    return build


def _scatter_program(rng):
    """Every Scatter* and ScatterNd* op on its own variable, with repeated int32 and int64 (device) indices."""
    rows, repeated = tf.constant(np.array([3, 0, 3], np.int32)), tf.constant(np.array([1, 1, 2], np.int64))
    updates = tf.constant(_x(rng, 3, 2, low=0.5, high=2.0))
    writes = [tf.scatter_update, tf.scatter_add, tf.scatter_sub, tf.scatter_mul, tf.scatter_div, tf.scatter_min,
              tf.scatter_max]
    fetches = [write(tf.Variable(_x(rng, 4, 2)), indices, updates)
               for write in writes for indices in (rows, repeated)]
    nd_indices = tf.constant(np.array([[1, 0], [3, 1], [1, 0]], np.int64))
    fetches += [write(tf.Variable(_x(rng, 4, 2)), nd_indices, updates[:, 0])
                for write in (tf.scatter_nd_update, tf.scatter_nd_add, tf.scatter_nd_sub)]
    return tf.global_variables_initializer(), fetches, {}


def _sparse_apply_program(rng):
    """SparseApplyMomentum (Nesterov), SparseApplyAdagrad, SparseApplyAdadelta, SparseApplyRMSProp and
    SparseApplyCenteredRMSProp with a repeated index (applied twice, in order)."""
    from adplace.ops import training_ops

    def slots(n, low=0.1):
        return [tf.Variable(_x(rng, 4, 3, low=low, high=1.0)) for _ in range(n)]
    grad, indices = tf.constant(_x(rng, 3, 3)), tf.constant(np.array([2, 0, 2], np.int64))
    fetches = [training_ops.sparse_apply_momentum(*slots(2), 0.1, grad, indices, 0.9, use_nesterov=True),
               training_ops.sparse_apply_adagrad(*slots(2), 0.1, grad, indices),
               training_ops.sparse_apply_adadelta(*slots(3), 0.5, 0.9, 1e-3, grad, indices),
               training_ops.sparse_apply_rms_prop(*slots(3), 0.1, 0.9, 0.5, 1e-6, grad, indices),
               training_ops.sparse_apply_centered_rms_prop(*slots(4, low=0.5), 0.1, 0.9, 0.5, 1.0, grad, indices)]
    return tf.global_variables_initializer(), fetches, {}


def _ftrl_program(rng):
    """ApplyFtrl, ApplyFtrlV2 (lr_power -0.5 and not) and their sparse forms with a repeated index."""
    from adplace.ops import training_ops

    def slots():
        return [tf.Variable(_x(rng, 4, 3, low=0.1, high=1.0)) for _ in range(3)]
    grad, rows = tf.constant(_x(rng, 4, 3)), tf.constant(_x(rng, 3, 3))
    indices = tf.constant(np.array([2, 0, 2], np.int64))
    fetches = [training_ops.apply_ftrl(*slots(), grad, 0.1, 0.01, 0.2, -0.5),
               training_ops.apply_ftrl_v2(*slots(), grad, 0.1, 0.01, 0.2, 0.3, -0.4),
               training_ops.sparse_apply_ftrl(*slots(), rows, indices, 0.1, 0.01, 0.2, -0.5),
               training_ops.sparse_apply_ftrl_v2(*slots(), rows, indices, 0.1, 0.0, 0.2, 0.3, -0.5)]
    return tf.global_variables_initializer(), fetches, {}


CASES = {
    "neg": _unary(tf.negative), "abs": _unary(tf.abs), "sign": _unary(tf.sign), "square": _unary(tf.square),
    "sqrt": _unary(tf.sqrt, 0.1, 4.0), "rsqrt": _unary(tf.rsqrt, 0.1, 4.0),
    "reciprocal": _unary(tf.reciprocal, 0.5, 3.0), "exp": _unary(tf.exp), "log": _unary(tf.log, 0.1, 4.0),
    "log1p": _unary(tf.log1p, -0.5, 3.0), "sin": _unary(tf.sin), "cos": _unary(tf.cos), "tan": _unary(tf.tan, -1, 1),
    "tanh": _unary(tf.tanh), "sigmoid": _unary(tf.sigmoid, -30, 30), "relu": _unary(tf.nn.relu),
    "floor": _unary(tf.floor), "ceil": _unary(tf.ceil), "unary_gradients": _unary_gradients,
    "add": _binary(tf.add), "sub": _binary(tf.subtract), "mul": _binary(tf.multiply),
    "div": _binary(tf.truediv, 0.5, 2.0), "floordiv": _binary(tf.floordiv, 0.5, 5.0),
    "floormod": _binary(tf.floormod, 0.5, 5.0), "pow": _binary(tf.pow, 0.5, 2.0),
    "maximum": _binary(tf.maximum), "minimum": _binary(tf.minimum),
    "squared_difference": _binary(tf.squared_difference),
    "compare": _binary(lambda a, b: [tf.less(a, b), tf.less_equal(a, b), tf.greater(a, b), tf.greater_equal(a, b),
                                     tf.equal(a, tf.floor(b)), tf.not_equal(a, b)]),
    "int64_floordiv": _binary(lambda a, b: tf.floordiv(tf.cast(a * 10, tf.int64) + 100, tf.cast(b * 10 + 30,
                                                                                               tf.int64))),
    "matmul": lambda rng: (tf.matmul(tf.constant(_x(rng, 5, 3)), tf.constant(_x(rng, 4, 3)), transpose_b=True), {}),
    "batch_matmul": lambda rng: (tf.matmul(tf.constant(_x(rng, 2, 3, 4)), tf.constant(_x(rng, 2, 4, 5))), {}),
    "reductions": lambda rng: (lambda t: ([tf.reduce_sum(t, 1), tf.reduce_mean(t, 0, keepdims=True),
                                           tf.reduce_max(t), tf.reduce_min(t, [0, 1]), tf.reduce_prod(t, 1)], {}))(
        tf.constant(_x(rng, 3, 4, low=0.5, high=1.5))),
    "empty_max": lambda rng: ([tf.reduce_max(tf.zeros([0, 3]), 0), tf.reduce_min(tf.zeros([2, 0]), 1)], {}),
    "gather_batch_dims": lambda rng: ([tf.gather(tf.constant(_x(rng, 2, 3, 4)), [[2, 0, 3], [1, 1, 0]], axis=2,
                                                 batch_dims=1)], {}),
    "euclidean_norm_conj": lambda rng: ([tf.math.reduce_euclidean_norm(tf.constant(_x(rng, 3, 4)), 1),
                                         tf.conj(tf.constant(_x(rng, 3).astype(np.complex64) * (1 + 2j)))], {}),
    "add_n": lambda rng: (tf.add_n([tf.constant(_x(rng, 3, 4)) for _ in range(3)]), {}),
    "cumulative": lambda rng: (lambda t: ([tf.cumsum(t, 1), tf.cumsum(t, 0, exclusive=True, reverse=True),
                                           tf.cumprod(t, 1, exclusive=True)], {}))(tf.constant(_x(rng, 3, 4))),
    "bias_add": lambda rng: (tf.nn.bias_add(tf.constant(_x(rng, 2, 3, 4)), tf.constant(_x(rng, 4))), {}),
    "nn_activation_gradients": _nn_activation_gradients, "nn_losses": _nn_losses,
    "cast_and_range": lambda rng: ([tf.cast(tf.constant(_x(rng, 3, 4)), tf.float64),
                                    tf.cast(tf.constant(_x(rng, 3, 4)) * 3, tf.int32),
                                    tf.cast(tf.range(5), tf.float32), tf.range(1.0, 4.0, 0.5)], {}),
    "shapes": lambda rng: (lambda t, p, q: ([tf.shape(p), tf.size(p), tf.rank(q), tf.reshape(t, [4, 3]),
                                       tf.transpose(t), tf.expand_dims(t, 1), tf.squeeze(tf.reshape(t, [1, 3, 4]), [0]),
                                       tf.identity(t), tf.stop_gradient(t), prevent_gradient(t), tf.zeros_like(t),
                                       tf.fill([2, 2], 1.5),
                                       tf.tile(t, [2, 1])], {p: _x(rng, 3, 4), q: _x(rng, 3, 4)}))(
        tf.constant(_x(rng, 3, 4)), tf.placeholder(tf.float32, [None, 4]), tf.placeholder(tf.float32)),
    "split_concat_pack": lambda rng: (lambda t: ([*tf.split(t, 2, axis=1), *tf.split(t, [1, 2], axis=0),
                                                  tf.concat([t, t], 0), tf.stack([t, t], axis=1),
                                                  *tf.unstack(t, axis=0)], {}))(tf.constant(_x(rng, 3, 4))),
    "slices": lambda rng: (lambda t: ([t[1:, ::2], t[-1], tf.gradients(tf.reduce_sum(t[1:, ::2]), t)[0]], {}))(
        tf.constant(_x(rng, 3, 4))),
    "select_where": lambda rng: (lambda t: ([tf.where(t > 0, t, -t), tf.where(t > 0)], {}))(
        tf.constant(_x(rng, 3, 4))),
    "broadcast_gradient": lambda rng: (lambda a, b: (tf.gradients(tf.reduce_sum(a * b), [a, b]),
                                                     {a: _x(rng, 3, 4), b: _x(rng, 4)}))(
        tf.placeholder(tf.float32, [None, 4]), tf.placeholder(tf.float32, [None])),
    "invert_permutation": lambda rng: ([tf.invert_permutation(tf.constant([2, 0, 1])),
                                        tf.invert_permutation(tf.constant(np.array([1, 3, 0, 2], np.int64)))], {}),
    "gather_and_friends": _gather_and_friends, "logical_bitwise": _logical_bitwise,
    "gather_scatter_nd": _gather_scatter_nd, "partition_stitch_segments": _partition_stitch_segments,
    "control_flow": _control_flow, "control_flow_refs": _control_flow_refs,
    "conv2d": lambda rng: _conv_program(rng), "pooling": lambda rng: _pooling_program(rng),
    "lrn": lambda rng: (lambda p: ([tf.nn.lrn(p, 2, 1.0, 0.5, 0.75), tf.gradients(tf.nn.lrn(p, 2), p)[0]],
                                   {p: _x(rng, 2, 3, 3, 6)}))(tf.placeholder(tf.float32, [2, 3, 3, 6])),
    "variables": _variable_program,
    "sgd": _optimizer(lambda: tf.train.GradientDescentOptimizer(0.1)),
    "momentum": _optimizer(lambda: tf.train.MomentumOptimizer(0.1, 0.9, use_nesterov=True)),
    "adam": _optimizer(lambda: tf.train.AdamOptimizer(0.1)),
    "rmsprop": _optimizer(lambda: tf.train.RMSPropOptimizer(0.1, momentum=0.5)),
    "centered_rmsprop": _optimizer(lambda: tf.train.RMSPropOptimizer(0.1, centered=True)),
    "adagrad": _optimizer(lambda: tf.train.AdagradOptimizer(0.1)),
    "adadelta": _optimizer(lambda: tf.train.AdadeltaOptimizer(1.0, epsilon=1e-3)),
    "scatter": _scatter_program, "sparse_apply": _sparse_apply_program, "ftrl": _ftrl_program,
    "random": lambda rng: ([tf.random_uniform([400], seed=1), tf.random_normal([400], seed=2),
                            tf.truncated_normal([400], seed=3),
                            tf.random_uniform([400], 0, 10, dtype=tf.int64, seed=4)], {}),
    "linalg_diagonals": lambda rng: (lambda m, d: ([tf.matrix_diag(d), tf.matrix_diag_part(m), tf.matrix_set_diag(m, d),
                                                   tf.diag(d), tf.diag_part(tf.diag(d)), tf.matrix_band_part(m, 1, 0),
                                                   tf.einsum("bij,bjk->bik", m, m), tf.check_numerics(m, "m"),
                                                   tf.gradients(tf.reduce_sum(tf.matrix_diag_part(m) * d), m)[0]],
                                                  {}))(tf.constant(_x(rng, 2, 3, 3)), tf.constant(_x(rng, 2, 3))),
    "more_unary": lambda rng: (lambda p, q: ([tf.round(p * 2), tf.rint(p * 2), tf.atan(p), tf.asin(q), tf.acos(q),
                                              tf.sinh(p), tf.cosh(p), tf.asinh(p), tf.acosh(p * p + 1.5),
                                              tf.atanh(q), tf.expm1(p), tf.erf(p), tf.erfc(p), tf.lgamma(p + 2.5),
                                              tf.digamma(p + 2.5)], {p: _x(rng, 3, 4), q: _x(rng, 3, 4, low=-0.9,
                                                                                               high=0.9)}))(
        tf.placeholder(tf.float32, [3, 4]), tf.placeholder(tf.float32, [3, 4])),
    "more_binary": lambda rng: (lambda a, b, i, j: ([tf.atan2(a, b), tf.div_no_nan(a, b * tf.cast(b > 0, tf.float32)),
                                                     tf.truncatediv(a, b), tf.truncatemod(a, b),
                                                     tf.truncatediv(i, j), tf.truncatemod(i, j),
                                                     tf.polygamma(tf.ones([3, 4]), a + 3.0)], {}))(
        tf.constant(_x(rng, 3, 4)), tf.constant(_x(rng, 4, low=0.5, high=2.0)),
        tf.constant(np.array([7, -7, 9, -9], np.int64)), tf.constant(np.array([2, 2, -4, 4], np.int64))),
    "more_array": lambda rng: (lambda t: ([tf.placeholder_with_default(t, [None, 4]) * 2.0, *tf.shape_n([t, t[0]]),
                                           tf.broadcast_to(t[0], [2, 3, 4]), tf.lin_space(-1.0, 2.0, 5),
                                           *tf.nn.top_k(t, 2)], {}))(
        tf.constant(rng.permutation(12).reshape(3, 4).astype(np.float32))),  # distinct values: no ties to order
}

RANDOM_CASES = {"random"}

COVERS = {
    "neg": {"Neg", "Placeholder"}, "abs": {"Abs"}, "sign": {"Sign"}, "square": {"Square"}, "sqrt": {"Sqrt"},
    "rsqrt": {"Rsqrt"}, "reciprocal": {"Reciprocal"}, "exp": {"Exp"}, "log": {"Log"}, "log1p": {"Log1p"},
    "sin": {"Sin"}, "cos": {"Cos"}, "tan": {"Tan"}, "tanh": {"Tanh"}, "sigmoid": {"Sigmoid"}, "relu": {"Relu"},
    "floor": {"Floor"}, "ceil": {"Ceil"},
    "unary_gradients": {"TanhGrad", "SigmoidGrad", "SqrtGrad", "RsqrtGrad", "ReciprocalGrad", "ReluGrad"},
    "add": {"Add", "Const"}, "sub": {"Sub"}, "mul": {"Mul"},
    "div": {"RealDiv"}, "floordiv": {"FloorDiv"}, "floormod": {"FloorMod"}, "pow": {"Pow"},
    "maximum": {"Maximum"}, "minimum": {"Minimum"}, "squared_difference": {"SquaredDifference"},
    "compare": {"Less", "LessEqual", "Greater", "GreaterEqual", "Equal", "NotEqual"},
    "int64_floordiv": {"FloorDiv", "Cast"}, "matmul": {"MatMul"}, "batch_matmul": {"BatchMatMulV2"},
    "reductions": {"Sum", "Mean", "Max", "Min", "Prod"}, "empty_max": {"Max", "Min"}, "add_n": {"AddN"},
    "euclidean_norm_conj": {"EuclideanNorm", "Conj"}, "gather_batch_dims": {"GatherV2"},
    "cumulative": {"Cumsum", "Cumprod"}, "bias_add": {"BiasAdd"}, "cast_and_range": {"Cast", "Range"},
    "shapes": {"Shape", "Size", "Rank", "Reshape", "Transpose", "ExpandDims", "Squeeze", "Identity", "StopGradient",
               "PreventGradient", "ZerosLike", "Fill", "Tile"},
    "split_concat_pack": {"Split", "SplitV", "ConcatV2", "Pack", "Unpack"},
    "slices": {"StridedSlice", "StridedSliceGrad"}, "select_where": {"Select", "Where"},
    "broadcast_gradient": {"BroadcastGradientArgs"}, "invert_permutation": {"InvertPermutation"},
    "gather_and_friends": {"GatherV2", "UnsortedSegmentSum", "SelectV2", "OneHot", "ArgMax", "ArgMin", "Slice", "Pad",
                           "PadV2", "MirrorPad", "MirrorPadGrad", "ReverseV2", "IdentityN"},
    "gather_scatter_nd": {"GatherNd", "ScatterNd", "TensorScatterUpdate", "TensorScatterAdd", "TensorScatterSub"},
    "control_flow": {"Switch", "Merge", "Enter", "Exit", "NextIteration", "LoopCond", "StackV2", "StackPushV2",
                     "StackPopV2", "ControlTrigger", "TensorArrayV3", "TensorArrayWriteV3", "TensorArrayReadV3", "TensorArrayGatherV3",
                     "TensorArrayScatterV3", "TensorArrayConcatV3", "TensorArraySplitV3", "TensorArraySizeV3",
                     "TensorArrayCloseV3", "TensorArrayGradV3"},
    "control_flow_refs": {"RefSwitch", "RefEnter"},
    "partition_stitch_segments": {"DynamicPartition", "DynamicStitch", "ParallelDynamicStitch", "SegmentSum",
                                  "SegmentMean", "SegmentMax", "SegmentMin", "SegmentProd", "UnsortedSegmentMax",
                                  "UnsortedSegmentMin", "UnsortedSegmentProd"},
    "logical_bitwise": {"LogicalAnd", "LogicalOr", "LogicalNot", "Any", "All", "IsFinite", "IsNan", "IsInf",
                        "BitwiseAnd", "BitwiseOr", "BitwiseXor", "Invert", "LeftShift", "RightShift"},
    "conv2d": {"Conv2D", "Conv2DBackpropInput", "Conv2DBackpropFilter"},
    "pooling": {"MaxPool", "MaxPoolGrad", "MaxPoolGradGrad", "AvgPool", "AvgPoolGrad"}, "lrn": {"LRN", "LRNGrad"},
    "variables": {"VariableV2", "Assign", "AssignAdd", "AssignSub", "IsVariableInitialized", "InitializedValue",
                  "NoOp"},
    "sgd": {"ApplyGradientDescent"}, "momentum": {"ApplyMomentum"}, "adam": {"ApplyAdam"},
    "rmsprop": {"ApplyRMSProp"}, "centered_rmsprop": {"ApplyCenteredRMSProp"}, "adagrad": {"ApplyAdagrad"},
    "adadelta": {"ApplyAdadelta"},
    "scatter": {"ScatterUpdate", "ScatterAdd", "ScatterSub", "ScatterMul", "ScatterDiv", "ScatterMin", "ScatterMax",
                "ScatterNdUpdate", "ScatterNdAdd", "ScatterNdSub"},
    "sparse_apply": {"SparseApplyMomentum", "SparseApplyAdagrad", "SparseApplyAdadelta", "SparseApplyRMSProp",
                     "SparseApplyCenteredRMSProp"},
    "ftrl": {"ApplyFtrl", "ApplyFtrlV2", "SparseApplyFtrl", "SparseApplyFtrlV2"},
    "random": {"RandomUniform", "RandomStandardNormal", "TruncatedNormal", "RandomUniformInt"},
    "linalg_diagonals": {"MatrixDiag", "MatrixDiagPart", "MatrixSetDiag", "Diag", "DiagPart", "MatrixBandPart",
                         "Einsum", "CheckNumerics"},
    "nn_activation_gradients": {"Relu6", "Elu", "Selu", "Softplus", "Softsign", "LeakyRelu", "Relu6Grad", "EluGrad",
                                "SeluGrad", "SoftplusGrad", "SoftsignGrad", "LeakyReluGrad"},
    "nn_losses": {"Softmax", "LogSoftmax", "SoftmaxCrossEntropyWithLogits", "SparseSoftmaxCrossEntropyWithLogits",
                  "L2Loss", "InTopKV2"},
    "more_unary": {"Round", "Rint", "Atan", "Asin", "Acos", "Sinh", "Cosh", "Asinh", "Acosh", "Atanh", "Expm1", "Erf",
                   "Erfc", "Lgamma", "Digamma"},
    "more_binary": {"Atan2", "DivNoNan", "TruncateDiv", "TruncateMod", "Polygamma"},
    "more_array": {"PlaceholderWithDefault", "ShapeN", "BroadcastTo", "LinSpace", "TopKV2"},
}


def run_case(name: str, config: tf.ConfigProto, device: str, seed: int = 0) -> tuple[list, list, dict]:
    """Build case `name` on a fresh graph under `device` and run it with `config`: (values, op types, {op type: the
    devices its ops were placed on})."""
    graph = tf.Graph()
    with graph.as_default(), tf.device(device):
        built = CASES[name](np.random.default_rng(seed))
    init, (fetches, feeds) = (built[0], built[1:]) if len(built) == 3 else (None, built)
    with tf.Session(graph=graph, config=config) as sess:
        if init is not None:
            sess.run(init)
        values = [sess.run(fetches, feed_dict=feeds) for _ in range(2 if init is not None else 1)]
        placed: dict = {}
        for _, op_type, _, device, _ in sess.placement_table():
            placed.setdefault(op_type, set()).add(device)
    types = sorted({op.type for op in graph.get_operations()})
    return values, types, placed


def assert_same(gpu_values, cpu_values, random: bool = False) -> None:
    """GPU results equal CPU results: float64 within 1e-12 relative, other floats within 1e-4; exact for the rest."""
    for g, c in zip(_flat(gpu_values), _flat(cpu_values)):
        g, c = np.asarray(g), np.asarray(c)
        assert type(g) is np.ndarray and g.shape == c.shape and g.dtype == c.dtype, (g, c)
        if random:
            assert g.size == c.size and np.all(np.isfinite(g))
            assert abs(float(g.astype(np.float64).mean()) - float(c.astype(np.float64).mean())) < 0.5
        elif g.dtype == np.float64:  # 1e-4 would pass float64 work done in float32
            np.testing.assert_allclose(g, c, rtol=1e-12, atol=1e-14)
        elif g.dtype.kind == "f":
            np.testing.assert_allclose(g, c, rtol=1e-4, atol=1e-6)
        else:
            np.testing.assert_array_equal(g, c)


def _flat(values):
    if isinstance(values, (list, tuple)):
        for v in values:
            yield from _flat(v)
    elif values is not None:
        yield values
