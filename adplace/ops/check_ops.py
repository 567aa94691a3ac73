"""Assertions (tf.Assert, tf.assert_equal, tf.assert_rank, ...) and numeric checks (tf.check_numerics), as TF1
builds them: an Assert op that raises InvalidArgumentError when its condition is false at run time, and the
graph-construction shortcuts TF takes when the values or ranks are known while the graph is built.

    with tf.control_dependencies([tf.assert_positive(x)]):
        y = tf.log(x)        # InvalidArgumentError "assertion failed: [] [Condition x > 0 did not hold ..." if not
"""
from __future__ import annotations

import numpy as np

from adplace.framework import dtypes as _dtypes
from adplace.framework.conversion import convert_to_tensor
from adplace.framework.default_graph import colocate_with, control_dependencies, get_default_graph, name_scope
from adplace.framework.errors import InvalidArgumentError
from adplace.framework.operation import Operation, Tensor
from adplace.framework.registry import NotDifferentiable, RegisterGradient, register_op
from adplace.ops import array_ops, control_flow_ops, logical_ops, math_ops, reduction_ops
from adplace.ops.op_builder import apply_op, apply_op_1, check_dtype, constant_value

NUMERIC_TYPES = frozenset({_dtypes.float32, _dtypes.float64, _dtypes.int8, _dtypes.int16, _dtypes.int32,
                           _dtypes.int64, _dtypes.uint8, _dtypes.complex64})


# --- Assert -------------------------------------------------------------------------------------------------------
def _assert_infer(inputs, attrs, name):
    condition = inputs[0]
    if condition._dtype.base_dtype is not _dtypes.bool:
        raise TypeError(f"Input 'condition' of 'Assert' Op has type {condition._dtype.base_dtype.name} that does not "
                        f"match expected type of bool.")
    return []


register_op("Assert", _assert_infer, is_stateful=True)
NotDifferentiable("Assert")


def Assert(condition, data, summarize: int | None = None, name: str | None = None) -> Operation:  # noqa: N802
    """An op that raises InvalidArgumentError "assertion failed: [d0] [d1] ..." when `condition` is false
    (tf.Assert), printing the first `summarize` (default 3) values of each tensor in `data`.

    Nothing depends on it by itself: run it, or put it in tf.control_dependencies of what must wait for it.

        a = tf.Assert(tf.reduce_all(x > 0), ["x must be positive:", x])   # "assertion failed: [x must ...] [-1 2]"
    """
    with name_scope(name, "Assert", [condition, data]):
        values = [convert_to_tensor(d, name="data") for d in data]
        condition = convert_to_tensor(condition, name="Condition")
        return apply_op("Assert", [condition] + values,
                        {"summarize": 3 if summarize is None else int(summarize)}, name="Assert")


def _static_text(item) -> str:
    if isinstance(item, Tensor):
        value = constant_value(item)
        return str(item) if value is None else str(value)
    return str(item)


def _assert_static(condition: bool, data: list) -> None:
    """TF's build-time failure: InvalidArgumentError with the data, one line each, when both values are known."""
    if not condition:
        raise InvalidArgumentError(None, None, "\n".join(_static_text(d) for d in data))


# --- elementwise comparisons -----------------------------------------------------------------------------------------
def _binary_assert(sym: str, opname: str, op_func, static_func, x, y, data, summarize, message, name):
    """Assert `x sym y` for every (broadcast) pair of elements; checked at once when x and y are constants."""
    message = message or ""
    with name_scope(name, opname, [x, y, data]):
        x = convert_to_tensor(x, name="x")
        y = convert_to_tensor(y, name="y")
        if data is None:
            data = [message, f"Condition x {sym} y did not hold element-wise:", f"x ({x.name}) = ", x,
                    f"y ({y.name}) = ", y]
        condition = reduction_ops.reduce_all(op_func(x, y))
        x_static, y_static = constant_value(x), constant_value(y)
        if x_static is not None and y_static is not None:
            _assert_static(bool(np.all(static_func(x_static, y_static))), data)
        return Assert(condition, data, summarize=summarize)


def assert_equal(x, y, data=None, summarize=None, message=None, name=None) -> Operation:
    """Assert x == y element-wise (tf.assert_equal); InvalidArgumentError at once when both are constants."""
    return _binary_assert("==", "assert_equal", math_ops.equal, np.equal, x, y, data, summarize, message, name)


def assert_none_equal(x, y, data=None, summarize=None, message=None, name=None) -> Operation:
    """Assert x != y element-wise (tf.assert_none_equal)."""
    return _binary_assert("!=", "assert_none_equal", math_ops.not_equal, np.not_equal, x, y, data, summarize,
                          message, name)


def assert_less(x, y, data=None, summarize=None, message=None, name=None) -> Operation:
    """Assert x < y element-wise (tf.assert_less)."""
    return _binary_assert("<", "assert_less", math_ops.less, np.less, x, y, data, summarize, message, name)


def assert_less_equal(x, y, data=None, summarize=None, message=None, name=None) -> Operation:
    """Assert x <= y element-wise (tf.assert_less_equal)."""
    return _binary_assert("<=", "assert_less_equal", math_ops.less_equal, np.less_equal, x, y, data, summarize,
                          message, name)


def assert_greater(x, y, data=None, summarize=None, message=None, name=None) -> Operation:
    """Assert x > y element-wise (tf.assert_greater)."""
    return _binary_assert(">", "assert_greater", math_ops.greater, np.greater, x, y, data, summarize, message, name)


def assert_greater_equal(x, y, data=None, summarize=None, message=None, name=None) -> Operation:
    """Assert x >= y element-wise (tf.assert_greater_equal)."""
    return _binary_assert(">=", "assert_greater_equal", math_ops.greater_equal, np.greater_equal, x, y, data,
                          summarize, message, name)


def _sign_assert(opname: str, sym: str, compare, zero_first: bool, x, data, summarize, message, name):
    """assert_positive and friends: compare x with a zero of its dtype through assert_less(_equal)."""
    message = message or ""
    with name_scope(name, opname, [x, data]):
        x = convert_to_tensor(x, name="x")
        if data is None:
            data = [message, f"Condition x {sym} did not hold element-wise:", f"x ({x.name}) = ", x]
        zero = convert_to_tensor(0, dtype=x.dtype.base_dtype)
        lhs, rhs = (zero, x) if zero_first else (x, zero)
        return compare(lhs, rhs, data=data, summarize=summarize)


def assert_positive(x, data=None, summarize=None, message=None, name=None) -> Operation:
    """Assert x > 0 element-wise (tf.assert_positive)."""
    return _sign_assert("assert_positive", "> 0", assert_less, True, x, data, summarize, message, name)


def assert_negative(x, data=None, summarize=None, message=None, name=None) -> Operation:
    """Assert x < 0 element-wise (tf.assert_negative)."""
    return _sign_assert("assert_negative", "< 0", assert_less, False, x, data, summarize, message, name)


def assert_non_negative(x, data=None, summarize=None, message=None, name=None) -> Operation:
    """Assert x >= 0 element-wise (tf.assert_non_negative)."""
    return _sign_assert("assert_non_negative", ">= 0", assert_less_equal, True, x, data, summarize, message, name)


def assert_non_positive(x, data=None, summarize=None, message=None, name=None) -> Operation:
    """Assert x <= 0 element-wise (tf.assert_non_positive)."""
    return _sign_assert("assert_non_positive", "<= 0", assert_less_equal, False, x, data, summarize, message, name)


def assert_near(x, y, rtol=None, atol=None, data=None, summarize=None, message=None, name=None) -> Operation:
    """Assert |x - y| < atol + rtol * |y| element-wise; both tolerances default to 10 * eps of x's dtype
    (tf.assert_near)."""
    message = message or ""
    with name_scope(name, "assert_near", [x, y, rtol, atol, data]):
        x = convert_to_tensor(x, name="x")
        y = convert_to_tensor(y, name="y", dtype=x.dtype.base_dtype)
        eps = np.finfo(x.dtype.base_dtype.as_numpy_dtype).eps
        rtol = convert_to_tensor(10 * eps if rtol is None else rtol, name="rtol", dtype=x.dtype.base_dtype)
        atol = convert_to_tensor(10 * eps if atol is None else atol, name="atol", dtype=x.dtype.base_dtype)
        if data is None:
            data = [message, f"x and y not equal to tolerance rtol = {rtol}, atol = {atol}", f"x ({x.name}) = ", x,
                    f"y ({y.name}) = ", y]
        tol = atol + rtol * math_ops.abs(y)
        diff = math_ops.abs(x - y)
        return Assert(reduction_ops.reduce_all(math_ops.less(diff, tol)), data, summarize=summarize)


# --- ranks and types ------------------------------------------------------------------------------------------------
class _StaticRankFailure(Exception):
    """The rank is known at build time and fails the condition: (actual rank, wanted rank or ranks)."""


def _assert_ranks_condition(x: Tensor, ranks: list, static_condition, dynamic_condition, data, summarize):
    """Assert(dynamic_condition(rank(x), ranks)); a no_op when the ranks decide it at build time."""
    for rank in ranks:
        assert_type(rank, _dtypes.int32)
    ranks_static = [constant_value(r) for r in ranks]
    if all(r is not None for r in ranks_static):
        if any(np.ndim(r) != 0 for r in ranks_static):
            raise ValueError("Rank must be a scalar.")
        x_rank_static = x.shape.ndims
        if x_rank_static is not None:
            wanted = [int(r) for r in ranks_static]
            if not static_condition(x_rank_static, wanted):
                raise _StaticRankFailure(x_rank_static, wanted)
            return control_flow_ops.no_op(name="static_checks_determined_all_ok")
    condition = dynamic_condition(array_ops.rank(x), ranks)
    for rank, rank_static in zip(ranks, ranks_static):
        if rank_static is None:  # catches assert_rank(x, [n]) meant as assert_rank(x, n)
            rank_check = assert_rank(rank, 0, data=["Rank must be a scalar. Received rank: ", rank])
            condition = control_flow_ops.with_dependencies([rank_check], condition)
    return Assert(condition, data, summarize=summarize)


def _rank_assert(opname: str, wording: str, static_condition, dynamic_condition, x, ranks, data, summarize,
                 message, name, scope_values):
    with name_scope(name, opname, scope_values):
        x = convert_to_tensor(x, name="x")
        ranks = [convert_to_tensor(r, name="rank") for r in ranks]
        message = message or ""
        if data is None:
            data = [message, f"Tensor {x.name} must have {wording}", *ranks, "Received shape: ", array_ops.shape(x)]
        try:
            return _assert_ranks_condition(x, ranks, static_condition, dynamic_condition, data, summarize)
        except _StaticRankFailure as failure:
            actual, wanted = failure.args
            wanted_text = "(" + ", ".join(str(w) for w in wanted) + ("," if len(wanted) == 1 else "") + ")" \
                if opname == "assert_rank_in" else wanted[0]
            raise ValueError(f"{message}.  Tensor {x.name} must have {wording} {wanted_text}.  Received rank "
                             f"{actual}, shape {x.shape}") from None


def assert_rank(x, rank, data=None, summarize=None, message=None, name=None) -> Operation:
    """Assert x has rank `rank` (tf.assert_rank): ValueError at once when x's rank is known and differs, a no_op
    when it matches, else an Assert on tf.rank(x)."""
    return _rank_assert("assert_rank", "rank", lambda a, w: a == w[0], lambda r, ws: math_ops.equal(r, ws[0]), x,
                        [rank], data, summarize, message, name, [x, rank] + list(data or []))


def assert_rank_at_least(x, rank, data=None, summarize=None, message=None, name=None) -> Operation:
    """Assert x has rank `rank` or more (tf.assert_rank_at_least)."""
    return _rank_assert("assert_rank_at_least", "rank at least", lambda a, w: a >= w[0],
                        lambda r, ws: math_ops.greater_equal(r, ws[0]), x, [rank], data, summarize, message, name,
                        [x, rank] + list(data or []))


def _dynamic_rank_in(actual, ranks):
    result = math_ops.equal(ranks[0], actual)
    for rank in ranks[1:]:
        result = logical_ops.logical_or(result, math_ops.equal(rank, actual))
    return result


def assert_rank_in(x, ranks, data=None, summarize=None, message=None, name=None) -> Operation:
    """Assert x's rank is one of `ranks` (tf.assert_rank_in)."""
    return _rank_assert("assert_rank_in", "rank in", lambda a, w: a in w, _dynamic_rank_in, x, list(ranks), data,
                        summarize, message, name, [x] + list(ranks) + list(data or []))


def assert_type(tensor, tf_type, message=None, name=None) -> Operation:
    """TypeError unless tensor's dtype is `tf_type`, else a no_op (tf.assert_type): dtypes are known statically."""
    message = message or ""
    with name_scope(name, "assert_type", [tensor]):
        tensor = convert_to_tensor(tensor, name="tensor")
        if tensor.dtype != tf_type:
            raise TypeError(f"{message}  {tensor.name} must be of type {tf_type!r}")
        return control_flow_ops.no_op("statically_determined_correct_type")


def assert_integer(x, message=None, name=None) -> Operation:
    """TypeError unless x has an integer dtype, else a no_op (tf.assert_integer)."""
    message = message or ""
    with name_scope(name, "assert_integer", [x]):
        x = convert_to_tensor(x, name="x")
        if not x.dtype.is_integer:
            raise TypeError(f'{message}  Expected "x" to be integer type.  Found: {x.name} of dtype {x.dtype!r}')
        return control_flow_ops.no_op("statically_determined_was_integer")


def assert_scalar(tensor, name=None, message=None) -> Tensor:
    """`tensor` (converted) if its static shape is a scalar; ValueError otherwise, also for an unknown shape
    (tf.assert_scalar)."""
    with name_scope(name, "assert_scalar", [tensor]) as scope:
        tensor = convert_to_tensor(tensor, name=scope)
        if tensor.shape.ndims != 0:
            raise ValueError(f"{message or ''}Expected scalar shape for {tensor.name}, saw shape: {tensor.shape}.")
        return tensor


def is_numeric_tensor(tensor) -> bool:
    """Whether `tensor` is a Tensor of a numeric dtype (tf.is_numeric_tensor)."""
    return isinstance(tensor, Tensor) and tensor.dtype in NUMERIC_TYPES


def _monotonic_diff(x) -> Tensor:
    x = array_ops.reshape(x, [-1])
    if not is_numeric_tensor(x):
        raise TypeError(f"Expected x to be numeric, instead found: {x}")
    return x[1:] - x[:-1]  # empty for fewer than two elements, so reduce_all gives True


def is_non_decreasing(x, name=None) -> Tensor:
    """Whether x[i] <= x[i + 1] for its elements in row-major order (tf.is_non_decreasing)."""
    with name_scope(name, "is_non_decreasing", [x]):
        diff = _monotonic_diff(x)
        return reduction_ops.reduce_all(math_ops.less_equal(convert_to_tensor(0, dtype=diff.dtype), diff))


def is_strictly_increasing(x, name=None) -> Tensor:
    """Whether x[i] < x[i + 1] for its elements in row-major order (tf.is_strictly_increasing)."""
    with name_scope(name, "is_strictly_increasing", [x]):
        diff = _monotonic_diff(x)
        return reduction_ops.reduce_all(math_ops.less(convert_to_tensor(0, dtype=diff.dtype), diff))


# --- CheckNumerics ----------------------------------------------------------------------------------------------------
def _check_numerics_infer(inputs, attrs, name):
    check_dtype("CheckNumerics", "tensor", inputs[0]._dtype, _dtypes.FLOATING)
    return [(inputs[0]._dtype.base_dtype, inputs[0]._shape)]


register_op("CheckNumerics", _check_numerics_infer, is_view=True)


@RegisterGradient("CheckNumerics")
def _check_numerics_grad(op, grad):
    return [check_numerics(grad, "Not a number (NaN) or infinity (Inf) values detected in gradient. "
                                 f"{op.get_attr('message')}")]


def check_numerics(tensor, message: str, name: str | None = None) -> Tensor:
    """`tensor`, after InvalidArgumentError "<message> : Tensor had NaN values" (or Inf) if it has any
    (tf.check_numerics)."""
    t = convert_to_tensor(tensor, name="tensor")
    return apply_op_1("CheckNumerics", [t], {"T": t.dtype.base_dtype, "message": str(message)},
                      name=name or "CheckNumerics")


def verify_tensor_all_finite(t=None, msg=None, name=None, x=None, message=None) -> Tensor:
    """`t`, available only after a check_numerics of it passed (tf.verify_tensor_all_finite)."""
    x = t if x is None else x
    message = msg if message is None else message
    with name_scope(name, "VerifyFinite", [x]):
        x = convert_to_tensor(x, name="x")
        with colocate_with(x.op):
            verify_input = check_numerics(x, message=message)
            return control_flow_ops.with_dependencies([verify_input], x)


def add_check_numerics_ops() -> Operation:
    """One check_numerics for every float16/32/64 output of the default graph, chained, grouped into one op
    (tf.add_check_numerics_ops)."""
    check_op: list = []
    for op in get_default_graph().get_operations():
        for output in op.outputs:
            if output.dtype.base_dtype in (_dtypes.float16, _dtypes.float32, _dtypes.float64) \
                    and not output.dtype._is_ref:
                with control_dependencies(check_op):
                    check_op = [check_numerics(output, message=f"{op.name}:{output.value_index}")]
    return control_flow_ops.group(*check_op)
