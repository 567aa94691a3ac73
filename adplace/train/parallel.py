"""Tower helpers for data-parallel training on several GPUs of one machine.

`make_parallel` is the widely copied "Effective TensorFlow" helper: split the batch, run the model once per GPU on
shared variables, concatenate the outputs. `average_gradients` is the CIFAR-10 multi-GPU helper: average each
variable's gradient over the towers before one `apply_gradients`.

    opt = tf.train.GradientDescentOptimizer(0.1)
    tower_grads = []
    for i in range(2):
        with tf.device(f"/gpu:{i}"), tf.name_scope(f"tower_{i}"):
            tower_grads.append(opt.compute_gradients(tower_loss(i), colocate_gradients_with_ops=True))
    with tf.device("/cpu:0"):
        train_op = opt.apply_gradients(tf.train.average_gradients(tower_grads))   # one update per variable
"""
from __future__ import annotations

from typing import Callable, Sequence

from adplace.framework.default_graph import device, name_scope
from adplace.framework.device_spec import DeviceSpec
from adplace.framework.operation import Tensor
from adplace.ops import array_ops, reduction_ops
from adplace.ops.variable_scope import AUTO_REUSE, get_variable_scope, variable_scope


def make_parallel(fn: Callable, num_gpus: int, **kwargs) -> Tensor | list[Tensor]:
    """Build `fn` once per GPU on a slice of the batch and concatenate the towers' outputs along axis 0.

    Every keyword tensor is split along axis 0 into `num_gpus` equal parts; tower i calls `fn(**parts_i)` under
    `/device:GPU:i` and a reuse=AUTO_REUSE variable scope, so all towers share one set of `tf.get_variable`
    variables. Ops outside `fn` (the split, the concat) follow the caller's device scope.

        def model(x, y):
            w = tf.get_variable("w", [3, 1])
            return tf.square(tf.matmul(x, w) - y)
        loss = tf.train.make_parallel(model, 2, x=x, y=y)   # rows 0..n/2-1 from GPU:0, the rest from GPU:1; one w

    Args:
      fn: builds the model from keyword tensors; returns a tensor, or a tuple/list of tensors.
      num_gpus: the number of towers (GPU:0 .. GPU:num_gpus-1); axis 0 of every input must divide by it.
      **kwargs: the batch tensors, passed to `fn` by name.

    Returns:
      The concatenated output, or a list with one concatenated tensor per position of `fn`'s tuple/list.
    """
    parts = {name: array_ops.split(value, num_gpus) for name, value in kwargs.items()}
    tower_outputs = []
    for i in range(num_gpus):
        with device(DeviceSpec(device_type="GPU", device_index=i)), \
                variable_scope(get_variable_scope(), reuse=AUTO_REUSE):
            tower_outputs.append(fn(**{name: split[i] for name, split in parts.items()}))
    if isinstance(tower_outputs[0], (tuple, list)):
        return [array_ops.concat(list(position), axis=0) for position in zip(*tower_outputs, strict=True)]
    return array_ops.concat(tower_outputs, axis=0)


def average_gradients(tower_grads: Sequence[Sequence[tuple]]) -> list[tuple]:
    """Average each variable's gradient over the towers: the (gradient, variable) list for one apply_gradients.

    Per variable: expand_dims each tower's gradient at axis 0, concat on axis 0, reduce_mean over axis 0, paired
    with the first tower's variable. The ops are built under the caller's device scope (usually `/cpu:0`, beside
    the variables). A variable with a None gradient in every tower stays (None, variable), as compute_gradients
    returns it, so apply_gradients skips it.

        averaged = tf.train.average_gradients([opt.compute_gradients(l) for l in tower_losses])

    Args:
      tower_grads: one list of (gradient, variable) pairs per tower, each over the same variables in the same order
        (as compute_gradients returns them when the towers share variables).

    Returns:
      A list of (averaged gradient or None, variable) pairs, in the towers' variable order.

    Raises:
      ValueError: no towers, towers that differ in their variables, or a variable with a gradient in some towers
        and None in others.
    """
    if not tower_grads:
        raise ValueError("average_gradients needs at least one tower's list of (gradient, variable) pairs.")
    _check_same_variables(tower_grads)
    averaged = []
    with name_scope("average_gradients"):
        for grads_and_var in zip(*tower_grads, strict=True):
            var = grads_and_var[0][1]
            grads = [g for g, _ in grads_and_var]
            missing = [i for i, g in enumerate(grads) if g is None]
            if len(missing) == len(grads):
                averaged.append((None, var))
                continue
            if missing:
                raise ValueError(f"Variable {var.name!r} has no gradient (None) in towers {missing} but has one in the "
                                 f"others: every tower must compute the same gradients; build the towers with the "
                                 f"same function on shared variables.")
            stacked = array_ops.concat([array_ops.expand_dims(g, 0) for g in grads], axis=0)
            averaged.append((reduction_ops.reduce_mean(stacked, 0), var))
    return averaged


def _check_same_variables(tower_grads: Sequence[Sequence[tuple]]) -> None:
    """ValueError naming the tower and the variable where a tower's list differs from tower 0's."""
    first_vars = [v for _, v in tower_grads[0]]
    for i, grads_and_vars in enumerate(tower_grads[1:], start=1):
        tower_vars = [v for _, v in grads_and_vars]
        if len(tower_vars) != len(first_vars):
            raise ValueError(f"Tower {i} has {len(tower_vars)} (gradient, variable) pairs but tower 0 has "
                             f"{len(first_vars)}: average_gradients needs every tower over the same variables; call "
                             f"compute_gradients with the same var_list in every tower.")
        for position, (var, first) in enumerate(zip(tower_vars, first_vars)):
            if var is not first:
                raise ValueError(f"Tower {i} pairs gradient {position} with variable {var.name!r} but tower 0 with "
                                 f"{first.name!r}: towers must share their variables (tf.variable_scope(..., "
                                 f"reuse=True) or tf.AUTO_REUSE) and list them in the same order.")
