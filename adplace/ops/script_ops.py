"""tf.py_func and tf.numpy_function: a Python function run as an op, on NumPy arrays, each time the op runs.

    y = tf.py_func(np.sinh, [x], tf.float32)        # a Tensor of unknown shape; np.sinh runs in Session.run
    a, b = tf.py_func(lambda x: (x, x + 1), [x], [tf.float64, tf.float64])

The op (PyFunc, or PyFuncStateless for `stateful=False`) keeps only a `token` attr; the function itself lives in
its graph, under that token, for as long as the graph does (TF keeps its graph's functions alive the same way).
The kernel (adplace.kernels.script) runs on the CPU only, as in TF, and converts the results to `Tout`.
Neither op type has a gradient; `Graph.gradient_override_map({"PyFunc": "MyGrad"})` gives one.
"""
from __future__ import annotations

import itertools
from typing import Callable

from adplace.framework import dtypes as _dtypes
from adplace.framework.conversion import convert_to_tensor
from adplace.framework.default_graph import name_scope
from adplace.framework.operation import Operation, Tensor
from adplace.framework.registry import NotDifferentiable, register_op
from adplace.framework.tensor_shape import TensorShape
from adplace.ops.op_builder import apply_op

_tokens = itertools.count()  # next() on a count is atomic in CPython: tokens stay unique across threads


def _py_func_infer(inputs, attrs, name):
    return [(dtype, TensorShape(None)) for dtype in attrs["Tout"]]


register_op("PyFunc", _py_func_infer, is_stateful=True)
register_op("PyFuncStateless", _py_func_infer)
NotDifferentiable("PyFunc")
NotDifferentiable("PyFuncStateless")


def _functions_of(graph) -> dict:
    """token -> Python function, for the py_funcs of `graph` (kept on the graph so they live as long as it)."""
    return vars(graph).setdefault("_py_funcs_by_token", {})


def _py_func(func: Callable, inp, Tout, stateful: bool, name: str | None):  # noqa: N803 - TF's argument name
    if not callable(func):
        raise ValueError(f"Expected func to be callable, got func of type {type(func)}")
    op_type = "PyFunc" if stateful else "PyFuncStateless"
    if not isinstance(inp, (list, tuple)):
        raise TypeError(f"Expected list for 'input' argument to '{op_type}' Op, not {inp}.")
    is_list = isinstance(Tout, (list, tuple))
    out_types = [_dtypes.as_dtype(t).base_dtype for t in (Tout if is_list else [Tout])]
    with name_scope(name, op_type, inp) as scope:
        inputs = [convert_to_tensor(t, name="input") for t in inp]
        token = f"pyfunc_{next(_tokens)}"
        attrs = {"token": token, "Tin": [t.dtype.base_dtype for t in inputs], "Tout": out_types}
        op = apply_op(op_type, inputs, attrs, name=scope)
        _functions_of(op.graph)[token] = func  # the op's graph: a function's graph when traced in one
    outputs = list(op.outputs)
    if not is_list:
        return outputs[0]
    if not outputs and stateful:
        return op  # TF's generated wrappers hand back a stateful op without outputs, so it can still be run
    return outputs


def py_func(func: Callable, inp, Tout, stateful: bool = True,  # noqa: N803 - TF's argument name
            name: str | None = None) -> Tensor | list | Operation:
    """Wrap the Python function `func` as an op (tf.py_func): it is called with NumPy arrays each time the op runs.

    Args:
      func: called as `func(*arrays)` (0-d inputs arrive as NumPy scalars, strings as bytes); returns one array or
        Python value per output (a list or tuple for several), of exactly the dtypes in `Tout`.
      inp: a list of Tensors (or values convertible to Tensors).
      Tout: a dtype, or a list or tuple of dtypes.
      stateful: False makes a PyFuncStateless op, which promises the same outputs for the same inputs.
      name: a name for the op.

    Returns:
      A Tensor of unknown shape when `Tout` is a dtype, else a list of them; for `Tout=[]` the op itself when
      stateful (run it with Session.run), else [].

    Raises:
      ValueError: `func` is not callable.
      TypeError: `inp` is not a list.

    When run, a Python exception raised by `func` becomes InvalidArgumentError (ValueError, TypeError),
    OutOfRangeError (StopIteration), ResourceExhaustedError (MemoryError), UnimplementedError
    (NotImplementedError) or UnknownError (any other), with the Python traceback in the message.
    """
    return _py_func(func, inp, Tout, stateful, name)


def numpy_function(func: Callable, inp, Tout, name: str | None = None) -> Tensor | list | Operation:  # noqa: N803
    """tf.py_func with `stateful=True` (tf.numpy_function, as in TF 1.15)."""
    return _py_func(func, inp, Tout, True, name)
