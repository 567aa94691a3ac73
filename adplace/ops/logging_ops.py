"""tf.Print: an identity op that writes a message and tensor values to stderr each time it runs (TF1's Print op).

    x = tf.Print(x, [x, tf.shape(x)], "x and its shape: ", summarize=4)   # stderr: x and its shape: [1 2 3 4...][5]
"""
from __future__ import annotations

from adplace.framework.conversion import convert_to_tensor
from adplace.framework.operation import Tensor
from adplace.framework.registry import RegisterGradient, register_op
from adplace.ops.op_builder import apply_op_1


def _print_infer(inputs, attrs, name):
    return [(inputs[0]._dtype.base_dtype, inputs[0]._shape)]


register_op("Print", _print_infer, is_stateful=True, is_view=True)


@RegisterGradient("Print")
def _print_grad(op, grad):
    return [grad] + [None] * (len(op.inputs) - 1)


def Print(input_, data, message: str | None = None, first_n: int | None = None,  # noqa: N802 - TF's public name
          summarize: int | None = None, name: str | None = None) -> Tensor:
    """`input_`, printing `message` and the values of `data` to stderr whenever it is computed (tf.Print).

    Each tensor is printed as "[v0 v1 v2...]", its first `summarize` values (3 by default, all when negative);
    `first_n` stops printing after that many runs of the session. The gradient passes through to `input_`.
    """
    x = convert_to_tensor(input_, name="input")
    values = [convert_to_tensor(d, name="data") for d in data]
    attrs = {"T": x.dtype.base_dtype, "U": [v.dtype.base_dtype for v in values],
             "message": "" if message is None else str(message), "first_n": -1 if first_n is None else int(first_n),
             "summarize": 3 if summarize is None else int(summarize)}
    return apply_op_1("Print", [x] + values, attrs, name=name or "Print")
