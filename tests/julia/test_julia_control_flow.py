"""ADPlace's control flow (julia/src/ADPlace.jl: while_loop, TensorArray, read/write/stack, set_shape, if_else,
get_dtype, tensor comparisons) and julia/examples/heat_equation.jl, driven through Python with ADPlace's value
conversions (julia_standin): each twin below is the Julia method, call for call, so adplace is checked against the
calls and values the Julia code hands it (Julia functions as loop bodies and branches, 1-based indices, Julia types
as dtypes). No Julia runs here; with Julia on PATH, julia/test/runtests.jl runs the Julia itself.
"""
import re
import types
from pathlib import Path

import numpy as np
import pytest

import adplace as tf
from heat_reference import explicit_steps
from julia_sources import SRC_FILES, package_source
from julia_standin import JuliaPyObject, JuliaString, JuliaType, julia_function, times, to_julia, to_python
from test_julia_docstrings import _exported
from test_julia_package import missing_tf_names, tf_chains

REPO = Path(__file__).resolve().parents[2]
HEAT_JL = REPO / "julia" / "examples" / "heat_equation.jl"
jl_tf = JuliaPyObject(tf)
FLOAT64, INT32, INT64, BOOL = (JuliaType(name) for name in ("Float64", "Int32", "Int64", "Bool"))
JULIA_ELTYPES = {JuliaString(name): JuliaType(julia) for name, julia in (
    ("float64", "Float64"), ("float32", "Float32"), ("int64", "Int64"), ("int32", "Int32"), ("bool", "Bool"),
    ("complex128", "ComplexF64"), ("complex64", "ComplexF32"))}


class ArgumentError(Exception):
    """Julia's ArgumentError."""


# --- twins of ADPlace.jl's methods --------------------------------------------------------------------------------
def is_tensor(x) -> bool:
    return isinstance(x, JuliaPyObject)


def dtype_of(value) -> JuliaType:
    """ADPlace's dtype_of: Julia literals are Float64 (a Python float here), Int64 (int), Bool."""
    if isinstance(value, (bool, np.bool_)):
        return BOOL
    if isinstance(value, int):
        return INT64
    if isinstance(value, float):
        return FLOAT64
    return JULIA_ELTYPES[JuliaString(np.asarray(value).dtype.name)]


def constant(value, dtype=None):
    """ADPlace's constant: a PyObject as it is, else tf.constant with the Julia value's dtype."""
    if is_tensor(value):
        return value
    return jl_tf.constant(value, dtype=dtype_of(value) if dtype is None else dtype)


def get_dtype(o):
    name = o.dtype.base_dtype.name
    return JuliaType("String") if name == JuliaString("string") else JULIA_ELTYPES.get(name)


def rank(x):
    return x.shape.ndims


def binary(tf_name: str, julia_op):
    """ADPlace's Base methods of `op` for tensors (tf.<tf_name>), Julia's own `op` between Julia values."""
    def method(x, y):
        if is_tensor(x) or is_tensor(y):
            return getattr(jl_tf, tf_name)(x, y)
        return julia_op(x, y)
    return method


plus = binary("add", lambda x, y: x + y)
minus = binary("subtract", lambda x, y: x - y)
divide = binary("divide", lambda x, y: x / y)
power = binary("pow", lambda x, y: x ** y)
less_equal = binary("less_equal", lambda x, y: x <= y)
less = binary("less", lambda x, y: x < y)
greater = binary("greater", lambda x, y: x > y)
greater_equal = binary("greater_equal", lambda x, y: x >= y)


def julia_sum(x):
    return jl_tf.reduce_sum(x)


def Variable(value):
    return jl_tf.Variable(value, dtype=dtype_of(value))


def placeholder(dtype, shape=None):
    return jl_tf.placeholder(dtype, shape=shape)


def gradients(ys, xs):
    grads = jl_tf.gradients(ys, xs, colocate_gradients_with_ops=False)
    return grads if isinstance(xs, list) else grads[0]


def Session():
    return jl_tf.Session(config=jl_tf.ConfigProto())


def run(sess, fetches, *feeds):
    """ADPlace's run(sess, fetches, x => value, ...)."""
    feed_dict = {to_python(k): to_python(v) for k, v in feeds} if feeds else None
    return sess.run(fetches, feed_dict=feed_dict)


def init(sess):
    return run(sess, jl_tf.global_variables_initializer())


def while_loop(condition, body, loop_vars, parallel_iterations=10, **kwargs):
    variables = [loop_vars] if is_tensor(loop_vars) else loop_vars
    if not variables:
        raise ArgumentError("while_loop: no loop variables")
    index_type = get_dtype(variables[0]) if is_tensor(variables[0]) else dtype_of(variables[0])
    if index_type != INT32:
        raise ArgumentError(f"while_loop: the loop index (the first loop variable) must be Int32, got {index_type}")
    return jl_tf.while_loop(condition, body, variables, parallel_iterations=parallel_iterations, **kwargs)


TENSOR_ARRAY_DEFAULTS = {"dtype": FLOAT64, "dynamic_size": False, "clear_after_read": False}


def TensorArray(size=0, **kwargs):
    return jl_tf.TensorArray(**{**TENSOR_ARRAY_DEFAULTS, **kwargs, "size": size})


def read(ta, i):
    return ta.read(minus(i, 1))


def write(ta, i, value):
    if not is_tensor(value):
        return write(ta, i, constant(value, dtype=ta.dtype))
    return ta.write(minus(i, 1), value)


def stack(ta):
    return ta.stack()


def set_shape(o, *shape):
    """set_shape(o, shape::Union{Tuple,AbstractVector}) and set_shape(o, dims...)."""
    if len(shape) == 1 and isinstance(shape[0], (tuple, list, np.ndarray)):
        shape = shape[0]
    o.set_shape(shape)
    return o


def branch_function(f):
    return f if isinstance(f, types.FunctionType) else (lambda: constant(f))


def if_else(condition, fn1, fn2, *args, **kwargs):
    if not is_tensor(condition):
        condition = constant(condition)
    if get_dtype(condition) == BOOL and rank(condition) == 0:
        return jl_tf.cond(condition, branch_function(fn1), branch_function(fn2), *args, **kwargs)
    return jl_tf.where_v2(condition, constant(fn1), constant(fn2))


# --- the twins model the source -----------------------------------------------------------------------------------
def test_the_twins_follow_adplace_jl():
    """The definitions the twins above copy are in ADPlace.jl as copied (1-based read/write subtract 1; ADCME's
    TensorArray defaults; tf.while_loop with the list of loop variables; tf.cond or tf.where_v2 in if_else)."""
    source = " ".join(package_source().split())
    for line in ("Base.read(ta::PyObject, i::Union{PyObject,Integer}) = ta.read(i - 1)",
                 "Base.write(ta::PyObject, i::Union{PyObject,Integer}, value::PyObject) = ta.write(i - 1, value)",
                 "write(ta, i, constant(value; dtype=ta.dtype))",
                 "Base.stack(ta::PyObject) = ta.stack()",
                 "const TENSOR_ARRAY_DEFAULTS = (dtype=Float64, dynamic_size=false, clear_after_read=false)",
                 "tf.TensorArray(; merge(TENSOR_ARRAY_DEFAULTS, values(kwargs), (size=size_,))...)",
                 "vars = loop_vars isa PyObject ? [loop_vars] : loop_vars",
                 "index_type === Int32 || throw(ArgumentError(",
                 "tf.while_loop(condition, body, vars; parallel_iterations=parallel_iterations, kwargs...)",
                 "o.set_shape(shape) return o",
                 "tf.cond(condition, branch_function(fn1), branch_function(fn2), args...; kwargs...)",
                 "tf.where_v2(condition, constant(fn1), constant(fn2))",
                 "branch_function(value) = () -> constant(value)",
                 "less_equal(x, y) = tf.less_equal(x, y)",
                 "for (op, f) in ((:<, less), (:<=, less_equal), (:>, greater), (:>=, greater_equal))",
                 "Base.$op(x::PyObject, y::JuliaValue) = $f(x, y)"):
        assert line in source, line
    assert {"while_loop", "TensorArray", "if_else", "set_shape", "get_dtype"} <= set(_exported())


def test_every_tf_name_of_the_control_flow_code_exists(julia_parser):
    """The `tf.x` the new Julia code reaches (ADPlace.jl and the heat example) are adplace's."""
    chains = set()
    for path in (*SRC_FILES, HEAT_JL, REPO / "julia" / "test" / "runtests.jl"):
        chains |= tf_chains(julia_parser.parse(path.read_bytes()))
    assert {"while_loop", "TensorArray", "cond", "case", "where_v2", "less", "less_equal", "greater",
            "greater_equal", "train.GradientDescentOptimizer"} <= chains
    assert missing_tf_names(chains) == []


# --- ADCME's documented loop and the runtests.jl testset, through the twins -------------------------------------------
def test_adcmes_while_loop_example_sums_through_a_tensor_array():
    """ADCME's while_loop docstring: element 1 written before the loop, element i = element i - 1 + 1 inside, with
    Julia functions as condition and body and an Int32 index starting at 2; read and write count from 1."""
    ta = TensorArray(10)
    ta = write(ta, 1, constant(1.0))
    i = constant(2, dtype=INT32)

    def condition(i, ta):
        return less_equal(i, 10)

    def body(i, ta):
        u = read(ta, minus(i, 1))
        ta = write(ta, i, plus(u, 1))
        return plus(i, 1), ta

    last_i, out = while_loop(condition, body, [i, ta])
    sess = Session()
    np.testing.assert_array_equal(run(sess, stack(out)), np.arange(1.0, 11.0))
    assert run(sess, last_i) == 11 and get_dtype(last_i) == INT32
    assert run(sess, read(out, 10)) == 10.0 and run(sess, read(out, constant(3, dtype=INT32))) == 3.0
    assert get_dtype(out) == FLOAT64 and isinstance(out, JuliaPyObject)
    assert run(sess, julia_sum(stack(out))) == 55.0  # the docstring's comment


def test_while_loop_checks_its_index_and_returns_one_value_for_one_variable():
    """ADCME's rule: the first loop variable is an Int32 index (an Int64 or a TensorArray first is an ArgumentError);
    one tensor in, one tensor out; a Julia Vector of Julia values is accepted too."""
    ta = TensorArray(3)
    with pytest.raises(ArgumentError, match="must be Int32, got Int64"):
        while_loop(lambda i, ta: less(i, 3), lambda i, ta: (plus(i, 1), ta), [constant(0), ta])
    with pytest.raises(ArgumentError, match="must be Int32, got Float64"):
        while_loop(lambda ta, i: less(i, 3), lambda ta, i: (ta, plus(i, 1)), [ta, constant(0, dtype=INT32)])
    one = while_loop(lambda j: less(j, 5), lambda j: plus(j, 1), constant(0, dtype=INT32))
    assert isinstance(one, JuliaPyObject) and run(Session(), one) == 5
    k, total = while_loop(lambda k, s: less_equal(k, 4), lambda k, s: (plus(k, 1), plus(s, k)),
                          [constant(1, dtype=INT32), constant(0, dtype=INT32)])
    assert run(Session(), [k, total]) == [5, 10]


def test_tensor_array_keywords_and_julia_values():
    """TensorArray's ADCME defaults can be overridden with Julia types; a Julia array written is a constant of the
    TensorArray's dtype (Int32 here, where a Julia Int64 literal would not fit the array's dtype)."""
    ta = TensorArray(2, dtype=INT32)
    assert get_dtype(ta) == INT32
    ta = write(write(ta, 1, np.array([1, 2])), 2, np.array([3, 4]))
    stacked = stack(ta)
    assert get_dtype(stacked) == INT32
    np.testing.assert_array_equal(run(Session(), stacked), [[1, 2], [3, 4]])
    with pytest.raises(tf.errors.InvalidArgumentError, match="cleared after a previous read"):
        cleared = write(TensorArray(1, clear_after_read=True), 1, 1.0)
        run(Session(), [read(cleared, 1), plus(read(cleared, 1), 0.0)])


def test_set_shape_and_get_dtype():
    """set_shape takes a tuple, a vector (with `nothing`) or the dimensions, returns its argument, and refuses a
    contradicting shape (a PyException in Julia)."""
    p = placeholder(FLOAT64, shape=[None, 3])
    assert set_shape(p, 2, 3) is p and p.shape.as_list() == [2, 3]
    q = placeholder(FLOAT64)
    assert set_shape(q, [None, 4]).shape.as_list() == [None, 4]
    assert set_shape(q, (5, 4)).shape.as_list() == [5, 4]
    with pytest.raises(ValueError):
        set_shape(placeholder(FLOAT64, shape=[2]), (3,))
    assert [get_dtype(constant(v)) for v in (1.0, 1, True)] == [FLOAT64, INT64, BOOL]
    assert get_dtype(jl_tf.constant("a")) == JuliaType("String")


def test_comparisons_build_boolean_tensors():
    """`<`, `<=`, `>`, `>=` between tensors and Julia values are tf.less & co.: boolean tensors, elementwise."""
    x = constant(1.5)
    sess = Session()
    assert run(sess, [less(x, 2.0), less_equal(2.0, x), greater(x, constant(1.0)), greater_equal(x, 1.5)]) == \
        [True, False, True, True]
    np.testing.assert_array_equal(run(sess, less(np.array([1.0, 2.0]), x)), [True, False])


def test_if_else_cond_and_case_take_julia_functions():
    """if_else with a scalar condition is tf.cond over Julia functions of no arguments (only the taken branch runs;
    its gradient flows), values as branches become constants (Float64), a boolean array picks elementwise;
    tf.cond and tf.case take Julia functions and `pred => f` pairs directly."""
    x = placeholder(FLOAT64, shape=[])
    sess = Session()
    y = if_else(greater(x, 0.0), lambda: times(2.0, x), lambda: jl_tf.negative(x))
    assert run(sess, y, (x, 3.0)) == 6.0 and run(sess, y, (x, -4.0)) == 4.0
    dy = gradients(y, x)
    assert run(sess, dy, (x, 3.0)) == 2.0 and run(sess, dy, (x, -4.0)) == -1.0
    assert run(sess, if_else(True, 1.0, 2.0)) == 1.0 and get_dtype(if_else(False, 1.0, 2.0)) == FLOAT64
    np.testing.assert_array_equal(run(sess, if_else(np.array([True, False]), np.array([1.0, 2.0]),
                                                    np.array([3.0, 4.0]))), [1.0, 4.0])
    assert run(sess, jl_tf.cond(less(x, 0.0), lambda: times(0.0, x), lambda: x), (x, 5.0)) == 5.0
    pairs = [(less(x, 0.0), lambda: constant(-1.0)), (greater(x, 0.0), lambda: constant(1.0))]  # Julia Pairs
    signum = jl_tf.case(pairs, default=lambda: constant(0.0))
    assert [run(sess, signum, (x, v)) for v in (-2.0, 0.0, 2.0)] == [-1.0, 0.0, 1.0]


def test_gradient_through_a_julia_loop():
    """d(a^10)/da through a while_loop whose body multiplies by a Variable captured by the Julia closure."""
    a = Variable(1.5)
    _, a10 = while_loop(lambda k, p: less_equal(k, 10), lambda k, p: (plus(k, 1), times(p, a)),
                        [constant(1, dtype=INT32), constant(1.0)])
    sess = Session()
    init(sess)
    assert run(sess, a10) == pytest.approx(1.5 ** 10)
    assert run(sess, gradients(a10, a)) == pytest.approx(10 * 1.5 ** 9)


# --- julia/examples/heat_equation.jl, line for line ---------------------------------------------------------------
def heat_equation(steps=100):
    """julia/examples/heat_equation.jl through the twins; returns its globals."""
    n = 20
    T = 0.05
    dx = 1 / (n + 1)
    dt = T / steps
    x = np.arange(1, n + 1) * dx
    u0 = np.sin(np.pi * x) + 0.5 * np.sin(3 * np.pi * x)
    laplacian = np.array([[-2.0 if i == j else 1.0 if abs(i - j) == 1 else 0.0 for j in range(1, n + 1)]
                          for i in range(1, n + 1)]) / dx ** 2

    def simulate(κ):
        K = constant(laplacian)
        λ = times(κ, dt)

        def condition(i, u_arr):
            return less_equal(i, steps + 1)

        def body(i, u_arr):
            u = read(u_arr, minus(i, 1))
            u_next = plus(u, times(λ, times(K, u)))
            u_arr = write(u_arr, i, u_next)
            return plus(i, 1), u_arr

        u_arr = TensorArray(steps + 1)
        u_arr = write(u_arr, 1, u0)
        i = constant(2, dtype=INT32)
        _, u_all = while_loop(condition, body, [i, u_arr])
        return set_shape(stack(u_all), (steps + 1, n))

    sess = Session()
    u_obs = run(sess, simulate(1.0))
    κ = Variable(0.5)
    u = simulate(κ)
    loss = divide(julia_sum(power(minus(u, u_obs), 2)), u_obs.size)
    g = gradients(loss, κ)
    train = jl_tf.train.GradientDescentOptimizer(20.0).minimize(loss)
    init(sess)
    losses = [run(sess, [loss, train])[0] for _ in range(20)]
    return types.SimpleNamespace(**locals())


def test_heat_equation_jl_fits_kappa_through_the_loop():
    """The Julia example's calls: the data are the explicit scheme's steps for κ = 1; gradient descent through the
    while_loop recovers κ within 1%; the gradient at another κ is the loss's central difference; the loop is one
    frame (its ops do not grow with the number of steps)."""
    ex = heat_equation()
    assert ex.u_obs.shape == (101, 20) and get_dtype(ex.u) == FLOAT64
    np.testing.assert_allclose(ex.u_obs, explicit_steps(ex.u0, ex.steps, ex.dt, ex.dx, 1.0), rtol=1e-12, atol=1e-14)
    kappa = run(ex.sess, ex.κ)
    assert abs(kappa - 1.0) < 0.01
    assert ex.losses[-1] < 1e-6 * ex.losses[0]
    h, k0 = 1e-5, 0.7
    difference = (run(ex.sess, ex.loss, (ex.κ, k0 + h)) - run(ex.sess, ex.loss, (ex.κ, k0 - h))) / (2 * h)
    assert run(ex.sess, ex.g, (ex.κ, k0)) == pytest.approx(difference, rel=1e-6)
    op_types = [op.type for op in to_python(ex.sess).graph.get_operations()]
    assert op_types.count("LoopCond") >= 3 and op_types.count("MatMul") <= 8  # two forward loops, one backward
    tf.reset_default_graph()
    assert len(tf.get_default_graph().get_operations()) == 0
    small = heat_equation(steps=10)
    assert len(to_python(small.sess).graph.get_operations()) == len(op_types)


def test_the_twin_follows_the_example_file():
    """Every call the twin makes is in heat_equation.jl, in the same order."""
    source = HEAT_JL.read_text()
    calls = ["using ADPlace", "n = 20", "steps = 100", "T = 0.05", "dx = 1 / (n + 1)", "dt = T / steps",
             "u0 = @. sin(π * x) + 0.5sin(3π * x)", "laplacian = [i == j ? -2.0 : abs(i - j) == 1 ? 1.0 : 0.0",
             "function simulate(κ)", "K = constant(laplacian)", "λ = κ * dt", "i <= steps + 1",
             "u = read(u_arr, i - 1)", "u_next = u + λ * (K * u)", "u_arr = write(u_arr, i, u_next)",
             "i + 1, u_arr", "u_arr = TensorArray(steps + 1)", "u_arr = write(u_arr, 1, u0)",
             "i = constant(2, dtype=Int32)", "_, u_all = while_loop(condition, body, [i, u_arr])",
             "return set_shape(stack(u_all), (steps + 1, n))", "sess = Session()",
             "u_obs = run(sess, simulate(1.0))", "κ = Variable(0.5)", "u = simulate(κ)",
             "loss = sum((u - u_obs)^2) / length(u_obs)", "g = gradients(loss, κ)",
             "train = tf.train.GradientDescentOptimizer(20.0).minimize(loss)", "init(sess)",
             "for iteration in 1:20", "push!(losses, run(sess, [loss, train])[1])"]
    positions = [source.find(call) for call in calls]
    assert -1 not in positions and positions == sorted(positions), dict(zip(calls, positions))
    assert re.search(r"^# %%", source, re.M), "the example is split into `# %%` cells like the others"


def test_runtests_covers_control_flow_and_the_heat_example():
    """julia/test/runtests.jl runs the example and a control-flow testset (so Pkg.test() checks them under Julia)."""
    runtests = (REPO / "julia" / "test" / "runtests.jl").read_text()
    assert 'run_example("heat_equation.jl")' in runtests
    assert '@testset "while_loop, TensorArray, read/write/stack, if_else' in runtests


def test_julia_function_loop_bodies_receive_julia_values():
    """The body of a loop gets PyObjects (tensors, the TensorArray) and its tuple result goes back as a Python tuple,
    as ADPlace's julia_callback converts them."""
    seen = []

    def body(i, ta):
        seen.append((type(i), type(ta)))
        return plus(i, 1), ta

    while_loop(lambda i, ta: less(i, 2), body, [constant(0, dtype=INT32), TensorArray(1)])
    assert seen == [(JuliaPyObject, JuliaPyObject)]
    assert to_python((JuliaPyObject(1), 2)) == (1, 2) and isinstance(to_julia([1.0]), list)
    assert isinstance(to_python(lambda: None), type(julia_function(len)))
