"""ADCME.jl's own tests and doc examples, ported: each `test_adcme_<file>_<case>` repeats, call for call, what ADPlace's
Julia methods hand `tf`/`tf.adcme` for the Julia code of that ADCME test case (cited as file:line of
kailaix/ADCME.jl), and checks ADCME's expected value, computed here with NumPy in Julia's column-major terms (Julia's
`reshape(A, dims)` is `np.reshape(A, dims, order="F")`, `A[i, j]` is `A[i-1, j-1]`). julia/test/runtests.jl's testset
"ADCME's own tests, ported" holds the same cases in Julia. Cases ADPlace does not handle are not here (the lead's
report lists them). No Julia runs here.
"""
import numpy as np
import pytest

import adplace as tf
from julia_sources import package_source
from julia_standin import JuliaPyObject, JuliaString, JuliaType, getindex, julia_reshape, scatter, times

jl_tf = JuliaPyObject(tf)
adcme = jl_tf.adcme
SOURCE = " ".join(package_source().split())
FLOAT64, FLOAT32, INT32, INT64 = (JuliaType(n) for n in ("Float64", "Float32", "Int32", "Int64"))
COLON = slice(None)
rng = np.random.default_rng(20240607)


def dtype_of(value) -> JuliaType:
    """ADPlace's dtype_of: the Julia element type of a number or array (NumPy stands for Julia here)."""
    kind = np.asarray(value).dtype
    return {np.float64: FLOAT64, np.float32: FLOAT32, np.int64: INT64, np.int32: INT32}[kind.type]


def constant(value, dtype=None):
    """ADPlace's `constant(value)`: tf.constant with the Julia value's dtype."""
    return jl_tf.constant(value, dtype=dtype or dtype_of(value))


def variable(value):
    """ADPlace's `Variable(value)`: tf.Variable with the Julia value's dtype."""
    return jl_tf.Variable(value, dtype=dtype_of(value))


def gradients(ys, xs):
    """ADPlace's `gradients(ys, xs)` (colocate=false; a Julia vector of xs is a list)."""
    return adcme.gradients(ys, xs, colocate_gradients_with_ops=False)


def stack(xs):
    """ADPlace's `stack(xs::Vector{PyObject})`: tf.stack on axis 0."""
    return jl_tf.stack(list(xs), axis=0)


def total(x, dims=None):
    """ADPlace's `sum(x; dims)`."""
    return jl_tf.reduce_sum(x, axis=None if dims is None else dims - 1)


def init(sess):
    sess.run(jl_tf.global_variables_initializer())


def test_the_julia_methods_are_written_as_this_file_assumes():
    for line in ('times(x::PyObject, y::JuliaValue) = times(x, constant(y; dtype=x.dtype.base_dtype))',
                 'times(x::JuliaValue, y::PyObject) = times(constant(x; dtype=y.dtype.base_dtype), y)',
                 'rx == 2 && ry == 2 && return tf.matmul(x, y)',
                 'rx == 2 && ry == 1 && return tf.squeeze(tf.matmul(x, tf.expand_dims(y, 1)); axis=1)',
                 'Base.stack(xs::AbstractVector{PyObject}; dims::Integer=1) = tf.stack(collect(xs); axis=dims - 1)',
                 'hessian_vector(y::PyObject, x::PyObject, v; kwargs...) = tf.adcme.hessian_vector(y, x, v; kwargs...)',
                 'LinearAlgebra.dot(x::PyObject, y::Union{PyObject,AbstractArray{<:Number}}) = sum(x .* y)',
                 'Base.lastindex(x::PyObject) = known_size(x, 1)',
                 'Base.reshape(x::PyObject, dims::Union{Tuple,AbstractVector}) = tf.reshape(x, collect(Int, dims))',
                 'return tf.placeholder_with_default(default; shape=collect(Any, size(default)), kwargs...)',
                 'deps = ops isa Union{AbstractVector,Tuple} ? collect(ops) : [ops]'):
        assert line in SOURCE, line


# --- test/variable.jl ----------------------------------------------------------------------------------------------

def test_adcme_variable_indexing(sess):
    # ADCME.jl test/variable.jl:2 (indexing): ints, ranges, Bool masks and vectors on a vector and a matrix
    A1, A2 = rng.random(10), rng.random((10, 10))
    B1, B2 = variable(A1), variable(A2)
    mask = np.zeros(10, bool)
    mask[2:4] = True
    julia_indices = [3, range(2, 5), mask, [3, 4, 5]]
    numpy_indices = [2, np.arange(1, 4), mask, np.array([2, 3, 4])]
    init(sess)
    for ji, ni in zip(julia_indices, numpy_indices):
        assert np.allclose(sess.run(getindex(B1, ji)), A1[ni])
        assert np.allclose(sess.run(getindex(B2, ji, COLON)), A2[ni, :])
        assert np.allclose(sess.run(getindex(B2, COLON, ji)), A2[:, ni])
    for ji, ni in zip(julia_indices, numpy_indices):
        for jj, nj in zip(julia_indices, numpy_indices):
            want = A2[np.ix_(np.atleast_1d(np.arange(10)[ni]), np.atleast_1d(np.arange(10)[nj]))]
            got = sess.run(getindex(B2, ji, jj))
            assert np.allclose(np.reshape(got, want.shape), want) and np.ndim(got) == np.ndim(A2[ni][..., nj])


def test_adcme_variable_variables(sess):
    # ADCME.jl test/variable.jl:29 (Variables): get_dtype, get_variable reused by name, get_variable(T; shape)
    assert constant(rng.random((10, 10))).dtype.base_dtype.name == JuliaString("float64")       # get_dtype: Float64
    assert variable(rng.integers(0, 9, (10, 10))).dtype.base_dtype.name == JuliaString("int64")   # Int64
    with tf.variable_scope("", reuse=tf.AUTO_REUSE):
        v = jl_tf.get_variable("test_get_variable", initializer=constant(rng.random((10, 10))), dtype=FLOAT64)
    with tf.variable_scope("", reuse=tf.AUTO_REUSE):
        u = jl_tf.get_variable("test_get_variable", initializer=constant(rng.random((10, 10))), dtype=FLOAT64)
    assert u == v
    with tf.variable_scope("", reuse=tf.AUTO_REUSE):
        w = jl_tf.get_variable("unnamed_1", shape=[10, 20], dtype=FLOAT64)
    assert adcme.size(w) == (10, 20)


def test_adcme_variable_hessian(sess):
    # ADCME.jl test/variable.jl:60 (Hessian): Float32 variables stacked, g[1], g[2]; hessian and hessian_vector
    x = jl_tf.Variable(np.float32(rng.standard_normal()), dtype=FLOAT32)
    y = jl_tf.Variable(np.float32(rng.standard_normal()), dtype=FLOAT32)
    g = stack([x, y])
    g1, g2 = getindex(g, 1), getindex(g, 2)
    f = jl_tf.add(jl_tf.add(jl_tf.add(jl_tf.add(jl_tf.add(
        jl_tf.pow(g1, 2), times(times(2, g1), g2)), times(3, jl_tf.pow(g2, 2))), times(4, g1)), times(5, g2)), 6)
    hess = adcme.hessian(f, g)
    gv = rng.random(2).astype(np.float32)
    hess_v = adcme.hessian_vector(f, g, gv)
    H = np.array([[2.0, 2.0], [2.0, 6.0]])
    init(sess)
    assert np.allclose(sess.run(hess), H)
    got = sess.run(hess_v)
    assert isinstance(got, np.ndarray) and np.allclose(got, H @ gv)   # dense, though g[1] is a gather


def test_adcme_variable_jacobian(sess):
    # ADCME.jl test/variable.jl:74 (Jacobian): gradients(A*xs, xs) is A
    xs = constant(rng.random(10))
    A = rng.random((20, 10))
    ys = times(A, xs)
    assert np.allclose(sess.run(gradients(ys, xs)), A)


def test_adcme_variable_gradients_v(sess):
    # ADCME.jl test/variable.jl:82 (gradients_v): a vector's gradient with respect to a scalar
    xs = constant(1.0)
    ys = stack([xs, xs, xs, xs])
    assert np.allclose(sess.run(gradients(ys, xs)), np.ones(4))


def test_adcme_variable_size_and_length():
    # ADCME.jl test/variable.jl:89 (size and length)
    a, b, c = variable(1.0), variable(rng.random(10)), variable(rng.random((10, 20)))
    assert adcme.size(a) == () and adcme.size(b) == (10,) and adcme.size(b, 1) == 10
    assert adcme.size(c) == (10, 20) and adcme.size(c, 1) == 10 and adcme.size(c, 2) == 20
    assert (adcme.length(a), adcme.length(b), adcme.length(c)) == (1, 10, 200)


def test_adcme_variable_getindex(sess):
    # ADCME.jl test/variable.jl:111 (getindex): an Int64 tensor index
    i = constant(2)
    a = constant(np.array([1.0, 2.0, 3.0, 4.0]))
    assert np.isclose(sess.run(getindex(a, i)), 2.0)


def test_adcme_variable_convert_to_tensor(sess):
    # ADCME.jl test/variable.jl:118 (convert_to_tensor): Julia values become constants, tensors pass through
    a = rng.random(10)
    assert np.allclose(sess.run(constant(a)), a)                          # convert_to_tensor(a) = constant(a)
    assert np.isclose(sess.run(constant(5.0)), 5.0)
    assert "(x === nothing || x === missing) && return x" in SOURCE       # missing and nothing pass through
    assert "return dtype === missing || get_dtype(x) === dtype ? x : tf.cast(x, dtype)" in SOURCE   # a tensor too


def test_adcme_variable_gradient_magnitude_gradients(sess):
    # ADCME.jl test/variable.jl:149 (gradient_magnitude): gx, gy = gradients(l, [x, y])
    x, y = constant(rng.random(10)), constant(rng.random(20))
    loss = jl_tf.add(total(x), total(y))
    gx, gy = gradients(loss, [x, y])
    assert np.allclose(sess.run(gx), np.ones(10)) and np.allclose(sess.run(gy), np.ones(20))


def test_adcme_variable_indexing_with_tensor(sess):
    # ADCME.jl test/variable.jl:159 (indexing with tensor)
    a = rng.random((10, 3))
    i, A = constant(2), constant(a)
    assert np.allclose(sess.run(getindex(A, i, COLON)), a[1, :])
    assert np.isclose(sess.run(getindex(A, i, 3)), a[1, 2])
    assert np.allclose(sess.run(getindex(A, i, [1, 2])), a[1, [0, 1]])
    assert np.allclose(sess.run(getindex(A, COLON, i)), a[:, 1])
    assert np.isclose(sess.run(getindex(A, 3, i)), a[2, 1])
    assert np.allclose(sess.run(getindex(A, [1, 2], i)), a[[0, 1], 1])


def test_adcme_variable_ndims():
    # ADCME.jl test/variable.jl:171 (ndims)
    for shape in [(), (2,), (3, 3), (4, 4, 4)]:
        assert adcme.ndims(constant(rng.random(shape))) == len(shape)


def test_adcme_variable_gradients_colocate():
    # ADCME.jl test/variable.jl:178 (gradients_colocate): the gradient op is on its forward op's device
    with tf.device("/cpu:1"):                                             # @cpu 1
        a = constant(rng.random((10, 10)))
        b = times(2, a)
    g = adcme.gradients(total(b), a, colocate_gradients_with_ops=True)   # gradients_colocate(loss, a)
    assert g.device == JuliaString("/device:CPU:1")


# --- test/ops.jl ---------------------------------------------------------------------------------------------------

def test_adcme_ops_star(sess):
    # ADCME.jl test/ops.jl:1 (*): every product of a Float32 matrix, vector and scalar, Julia or Variable
    julia = [rng.random((10, 10)).astype(np.float32), rng.random(10).astype(np.float32), np.float32(rng.random())]
    values = julia + [jl_tf.Variable(v, dtype=FLOAT32) for v in julia]
    init(sess)
    for i in range(1, 7):
        for j in range(1, 7):
            if i <= 3 and j <= 3 or (i in (2, 5) and j in (1, 4)) or (i in (2, 5) and j in (2, 5)):
                continue
            a, b = julia[(i - 1) % 3], julia[(j - 1) % 3]
            want = a @ b if np.ndim(a) == 2 and np.ndim(b) >= 1 else a * b
            assert np.allclose(sess.run(times(values[i - 1], values[j - 1])), want, rtol=1e-5), (i, j)
    M, V = julia[0], julia[1]
    assert np.allclose(sess.run(jl_tf.multiply(values[3], values[3])), M * M)     # A[4] .* A[4]
    assert np.allclose(sess.run(jl_tf.multiply(values[3], M)), M * M)             # A[4] .* A[1]
    assert np.allclose(sess.run(jl_tf.multiply(M, values[3])), M * M)
    assert np.allclose(sess.run(jl_tf.multiply(V, values[4])), V * V)             # A[2] .* A[5]
    assert np.allclose(sess.run(jl_tf.multiply(values[4], values[4])), V * V)
    assert np.allclose(sess.run(jl_tf.multiply(values[4], V)), V * V)


def test_adcme_ops_reshape(sess):
    # ADCME.jl test/ops.jl:34 (reshape): Julia's column-major reshape, with `:`
    M = np.array([[1, 2, 3], [4, 5, 6.0]])
    a = constant(M)
    assert np.allclose(sess.run(adcme.reshape(a, [6])), [1.0, 4.0, 2.0, 5.0, 3.0, 6.0])
    assert np.allclose(sess.run(adcme.reshape(a, [3, 2])), [[1.0, 5.0], [4.0, 3.0], [2.0, 6.0]])
    b = constant(np.array([1, 2, 3, 4, 5, 6]))
    assert np.array_equal(sess.run(adcme.reshape(b, [2, 3])), [[1, 3, 5], [2, 4, 6]])
    assert np.allclose(sess.run(adcme.reshape(constant(2.0), [1])), [2.0])
    N = np.array([[0.136944, 0.364238], [0.250264, 0.202175], [0.712224, 0.388285], [0.163095, 0.797934],
                  [0.740991, 0.382738]])
    a = constant(N)
    assert np.allclose(sess.run(adcme.reshape(a, [-1, 1])), julia_reshape(N, -1, 1))
    assert np.allclose(sess.run(adcme.reshape(a, [1, -1])), julia_reshape(N, 1, -1))


def test_adcme_ops_scatter_update(sess):
    # ADCME.jl test/ops.jl:71 (scatter_update): 1-D and 2-D scatter_add and scatter_update, and their gradients
    A = scatter("scatter_add", variable(np.ones(3)), 3, 2.0)
    C = variable(np.ones((3, 3)))
    D = scatter("scatter_add", C, [2], [1], 1.0)
    init(sess)
    assert np.allclose(sess.run(A), [1.0, 1.0, 3.0])
    assert np.allclose(sess.run(D), [[1, 1, 1], [2, 1, 1], [1, 1, 1.0]])
    F = scatter("scatter_update", C, range(1, 3), COLON, 2 * np.ones((2, 3)))
    assert np.allclose(sess.run(F), [[2, 2, 2], [2, 2, 2], [1, 1, 1.0]])
    F = scatter("scatter_update", C, 1, COLON, 2 * np.ones((1, 3)))              # a 1×3 into row 1, as Julia's
    assert np.allclose(sess.run(F), [[2, 2, 2], [1, 1, 1], [1, 1, 1.0]])          # A[1, :] = ones(1, 3)
    F = scatter("scatter_update", C, 1, 2, 2.0)
    assert np.allclose(sess.run(F), [[1, 2, 1], [1, 1, 1], [1, 1, 1.0]])
    A, B = variable(rng.random(10)), variable(rng.random(5))
    C = scatter("scatter_add", A, [1, 4, 5, 6, 7], times(2, B))
    D, E = gradients(total(C), B), gradients(total(C), A)
    init(sess)
    assert np.allclose(sess.run(D), 2 * np.ones(5)) and np.allclose(sess.run(E), np.ones(10))
    A, B = variable(np.ones((10, 10))), variable(np.ones((3, 4)))
    C = scatter("scatter_add", A, [1, 2, 3], [3, 4, 5, 6], B)
    init(sess)
    want = np.ones((10, 10))
    want[0:3, 2:6] = 2.0
    assert np.allclose(sess.run(C), want)
    a = rng.random(10)
    A = constant(a)
    A = scatter("scatter_add", A, range(3, 5), jl_tf.negative(getindex(A, range(3, 5))))
    a[2:4] = 0.0
    assert np.allclose(sess.run(A), a)


def test_adcme_ops_adjoint(sess):
    # ADCME.jl test/ops.jl:130 (adjoint): a scalar, a vector (a 1×n row), a matrix, the last two axes of a 4-D array
    assert np.isclose(sess.run(adcme.adjoint(constant(1.0))), 1.0)
    a = rng.random(10)
    assert np.allclose(sess.run(adcme.adjoint(constant(a))), a.reshape(1, 10))
    a = rng.random((10, 10))
    assert np.allclose(sess.run(adcme.adjoint(constant(a))), a.T)
    a = rng.random((2, 3, 4, 5))
    assert np.allclose(sess.run(adcme.adjoint(constant(a))), np.transpose(a, (0, 1, 3, 2)))


def test_adcme_ops_scatter_update_pyobject(sess):
    # ADCME.jl test/ops.jl:141 (scatter_update_pyobject): an Int32 index tensor, and the gradients
    A, B = constant(np.ones(10)), constant(np.ones(3))
    ind = jl_tf.constant(np.array([2, 4, 6]), dtype=INT32)
    hit = np.zeros(10, bool)
    hit[[1, 3, 5]] = True
    C = scatter("scatter_add", A, ind, B)
    assert np.allclose(sess.run(C), 1.0 + hit)
    assert np.allclose(sess.run(gradients(total(C), B)), np.ones(3))
    assert np.allclose(sess.run(gradients(total(C), A)), np.ones(10))
    C = scatter("scatter_sub", A, ind, B)
    assert np.allclose(sess.run(C), 1.0 - hit)
    assert np.allclose(sess.run(gradients(total(C), B)), -np.ones(3))
    assert np.allclose(sess.run(gradients(total(C), A)), np.ones(10))
    B = constant(3 * np.ones(3))
    C = scatter("scatter_update", A, ind, B)
    assert np.allclose(sess.run(C), np.where(hit, 3.0, 1.0))
    assert np.allclose(sess.run(gradients(total(C), B)), np.ones(3))
    assert np.allclose(sess.run(gradients(total(C), A)), np.where(hit, 0.0, 1.0))


def test_adcme_ops_operators(sess):
    # ADCME.jl test/ops.jl:162 (Operators), without argmax/argmin/group_assign: ^, max, min, maximum/minimum (dims)
    A = rng.random((10, 2))
    TA, a, b = variable(A), variable(1.0), variable(0.5)
    B = rng.random(10).astype(np.float32)
    TB, TBc = jl_tf.Variable(B, dtype=FLOAT32), jl_tf.constant(B, dtype=FLOAT32)
    init(sess)
    assert np.allclose(sess.run(jl_tf.pow(TB, 2)), B ** 2) and np.allclose(sess.run(jl_tf.pow(TBc, 2)), B ** 2)
    assert np.isclose(sess.run(jl_tf.maximum(a, b)), 1.0) and np.isclose(sess.run(jl_tf.minimum(a, b)), 0.5)
    assert np.isclose(sess.run(jl_tf.reduce_max(TA, axis=None)), A.max())
    assert np.isclose(sess.run(jl_tf.reduce_min(TA, axis=None)), A.min())
    assert np.allclose(sess.run(jl_tf.reduce_max(TA, axis=0)), A.max(axis=0))       # maximum(TA, dims=1)
    assert np.allclose(sess.run(jl_tf.reduce_min(TA, axis=0)), A.min(axis=0))
    assert np.allclose(sess.run(jl_tf.reduce_max(TA, axis=1)), A.max(axis=1))       # dims=2
    assert np.allclose(sess.run(jl_tf.reduce_min(TA, axis=1)), A.min(axis=1))


def test_adcme_ops_concat_and_stack_stack():
    # ADCME.jl test/ops.jl:206 (Concat and stack), the stack: two 10-vectors stack into 2×10
    A = variable(rng.random(10))
    assert adcme.size(stack([A, A])) == (2, 10)


def test_adcme_ops_vectorize(sess):
    # ADCME.jl test/ops.jl:218 (Vectorize): rvec, vec, cvec are column-major
    A = rng.random(10)
    B = julia_reshape(A, 2, 5)
    rA, cB = adcme.rvec(constant(A)), adcme.vec(constant(B))
    a, b = sess.run([rA, cB])
    assert np.allclose(a, A.reshape(1, 10)) and np.allclose(b, A)
    assert np.allclose(sess.run(adcme.rvec(constant(B))), julia_reshape(B.reshape(-1, order="F"), 1, -1))
    cvec = adcme.cvec(constant(B))
    assert np.allclose(sess.run(cvec), B.reshape(-1, 1, order="F")) and adcme.size(cvec) == (10, 1)
    assert np.allclose(sess.run(adcme.vec(constant(B))), B.reshape(-1, order="F"))


def test_adcme_ops_diag(sess):
    # ADCME.jl test/ops.jl:267 (diag): diag and diagm
    C, D = rng.random((3, 3)), rng.random(3)
    assert np.allclose(sess.run(jl_tf.linalg.diag_part(constant(C))), np.diag(C))
    assert np.allclose(sess.run(jl_tf.linalg.diag(constant(D))), np.diag(D))


def test_adcme_ops_dot(sess):
    # ADCME.jl test/ops.jl:274 (dot): dot(tA, tB), dot(A, tB), dot(tA, B) are sum(x .* y)
    A, B = rng.random(10), rng.random(10)
    tA, tB = constant(A), constant(B)
    u = np.sum(A * B)
    for x, y in [(tA, tB), (A, tB), (tA, B)]:
        assert np.isclose(sess.run(total(jl_tf.multiply(x, y))), u)


def test_adcme_ops_prod(sess):
    # ADCME.jl test/ops.jl:284 (prod)
    A = rng.random(10)
    assert np.isclose(sess.run(jl_tf.reduce_prod(constant(A), axis=None)), np.prod(A))


def test_adcme_ops_reshape_tuple(sess):
    # ADCME.jl test/ops.jl:377 (reshape): reshape(o, (100, 2, 50)) is TF's row-major tf.reshape
    o = constant(rng.random((100, 10, 10)))
    A = jl_tf.reshape(o, [100, 2, 50])                                    # reshape(o, dims::Tuple)
    B = jl_tf.reshape(o, (100, 2, 50))                                    # tf.reshape(o, (100,2,50))
    got_a, got_b = sess.run([A, B])
    assert np.allclose(got_a, got_b) and np.allclose(got_a, sess.run(o).reshape(100, 2, 50))


SELU_SCALE, SELU_ALPHA = 1.0507009873554804934193349852946, 1.6732632423543772848170429916717
ACTIVATIONS = {  # ADPlace's tensor method (a tf call) and its Julia number method, written out in NumPy
    "sigmoid": (jl_tf.math.sigmoid, lambda v: 1 / (1 + np.exp(-v))),
    "leaky_relu": (jl_tf.nn.leaky_relu, lambda v: v if v >= 0 else 0.2 * v),
    "selu": (jl_tf.nn.selu, lambda v: SELU_SCALE * (v if v > 0 else SELU_ALPHA * np.expm1(v))),
    "elu": (jl_tf.nn.elu, lambda v: v if v > 0 else np.expm1(v)),
    "softsign": (jl_tf.nn.softsign, lambda v: v / (1 + abs(v))),
    "softplus": (jl_tf.math.softplus, lambda v: v + np.log1p(np.exp(-v)) if v > 0 else np.log1p(np.exp(v))),
    "relu": (jl_tf.nn.relu, lambda v: max(0.0, v)),
    "relu6": (jl_tf.nn.relu6, lambda v: min(max(0.0, v), 6.0)),
}


@pytest.mark.parametrize("name", ACTIVATIONS)
def test_adcme_ops_activation(sess, name):
    # ADCME.jl test/ops.jl:410 (activation): fn(constant(x)) ≈ fn(x) for each of ADCME's activations
    tensor_method, number_method = ACTIVATIONS[name]
    for value in (1.0, -2.0, 7.0):
        assert np.isclose(sess.run(tensor_method(constant(value))), number_method(value)), value
    assert f"{name}(x::PyObject" in SOURCE and f"{name}(x::Real" in SOURCE


def test_adcme_ops_operators_argmax(sess):
    # ADCME.jl test/ops.jl:162 (Operators): argmax(TA, dims=2) are the column indices of Julia's argmax(A, dims=2)
    A = rng.random((10, 2))
    TA = variable(A)
    init(sess)
    assert sess.run(jl_tf.add(jl_tf.argmax(TA, axis=2 - 1), 1)).tolist() == (A.argmax(axis=1) + 1).tolist()
    assert sess.run(jl_tf.add(jl_tf.argmin(TA, axis=2 - 1), 1)).tolist() == (A.argmin(axis=1) + 1).tolist()
    assert "Base.argmax(x::PyObject; dims::Integer=1) = tf.argmax(x; axis=dims - 1) + 1" in SOURCE


def test_adcme_ops_concat_and_stack(sess):
    # ADCME.jl test/ops.jl:206 (Concat and stack): [A;A], [A A], [B;B], [B B], concat([A, A], dims=0)
    A, B = variable(rng.random(10)), variable(rng.random((10, 3)))
    assert adcme.size(jl_tf.concat([A, A], 0)) == (20,)                  # [A; A] = concat([A, A]): dims=1
    assert adcme.size(jl_tf.concat([A, A], 0 - 1)) == (20,)              # concat([A, A], dims=0): axis -1
    assert adcme.size(jl_tf.stack([A, A], axis=1)) == (10, 2)            # [A A]: vectors become columns
    assert adcme.size(jl_tf.concat([B, B], 0)) == (20, 3)
    assert adcme.size(jl_tf.concat([B, B], 1)) == (10, 6)
    for line in ("Base.vcat(x::PyObject, xs::PyObject...) = concat([x, xs...])",
                 "r == 1 && return tf.stack(collect(xs); axis=1)", "return tf.concat(collect(xs), dims - 1)"):
        assert line in SOURCE, line


def test_adcme_ops_copy_assign_bind_group(sess):
    # ADCME.jl test/variable.jl:104 (copy), test/core.jl:13 (assign, bind), test/ops.jl:197 (group)
    a, b = variable(0.0), variable(1.0)
    ops = [jl_tf.assign(a, 2.0), jl_tf.assign(b, 3.0)]                   # assign([a, b], [2.0, 3.0])
    with tf.control_dependencies([op._py for op in ops]):                 # bind(constant(5.0), ops...)
        c = jl_tf.identity(constant(5.0))
    snapshot = jl_tf.identity(a)                                          # copy(a)
    init(sess)
    assert sess.run(c) == 5.0 and sess.run([a, b]) == [2.0, 3.0] and sess.run(snapshot) == 2.0
    sess.run(jl_tf.group(jl_tf.assign(a, 7.0), jl_tf.assign(b, 8.0)))
    assert sess.run([a, b]) == [7.0, 8.0]
    assert "Base.bind(x::PyObject, ops...) = control_dependencies(() -> tf.identity(x), collect(ops))" in SOURCE


def test_adcme_variable_gradient_magnitude(sess):
    # ADCME.jl test/variable.jl:149 (gradient_magnitude): √(‖∂l/∂x‖² + ‖∂l/∂y‖²)
    x, y = constant(rng.random(10)), constant(rng.random(20))
    loss = jl_tf.add(jl_tf.reduce_sum(jl_tf.pow(x, 2)), jl_tf.reduce_sum(y))
    magnitude = jl_tf.global_norm([g for g in gradients(loss, [x, y]) if g is not None])
    want = np.sqrt(np.sum((2 * sess.run(x)) ** 2) + 20.0)
    assert np.isclose(sess.run(magnitude), want)


def test_adcme_optim_custom_bfgs(sess):
    # ADCME.jl test/optim.jl:173 (Custom BFGS!): BFGS!(sess, loss, grads, vars) minimizes over vars only
    pytest.importorskip("scipy")
    x, z = variable(2 * np.ones(10)), variable(1.0)
    other = variable(5.0)                                                  # not in vars: left alone
    loss = jl_tf.add(jl_tf.reduce_sum(jl_tf.pow(jl_tf.subtract(x, 1.0), 2)),
                     jl_tf.add(jl_tf.pow(z, 2), jl_tf.pow(other, 2)))
    init(sess)
    losses = adcme.bfgs(sess, loss, 15000, vars=[x, z], var_list=[x, z], verbose=False)
    assert losses[-1] < 25.0 + 1e-5 and sess.run(other) == 5.0 and np.allclose(sess.run(x), 1.0, atol=1e-6)
    assert "return BFGS!(sess, loss; vars=variables, var_list=variables, kwargs...)" in SOURCE


def test_adcme_ops_trace(sess):
    # ADCME.jl test/ops.jl:418 (trace)
    A = rng.random((10, 10))
    assert np.isclose(sess.run(jl_tf.linalg.trace(constant(A))), np.trace(A))


# --- test/core.jl, test/optim.jl, test/pcl.jl ----------------------------------------------------------------------

def test_adcme_core_control_dependency(sess):
    # ADCME.jl test/core.jl:13 (control_dependency), the scatter_add loop: a = scatter_add(a, i, b[i]) after a
    a, b = variable(np.ones(10)), variable(np.ones(10))
    for i in range(1, 11):
        with tf.control_dependencies([a._py]):                             # control_dependencies(a) do ... end
            a = scatter("scatter_add", a, i, getindex(b, i))
    init(sess)
    assert np.allclose(sess.run(a), 2 * np.ones(10))


def test_adcme_core_run_corner_cases(sess):
    # ADCME.jl test/core.jl:160 (run corner cases): placeholder(0.1) fed 4.0
    pl = jl_tf.placeholder_with_default(constant(0.1), shape=[])
    assert np.isclose(sess.run(pl, feed_dict={pl._py: 4.0}), 4.0) and np.isclose(sess.run(pl), 0.1)


def test_adcme_optim_var_to_bounds(sess):
    # ADCME.jl test/optim.jl:186 (var_to_bounds): BFGS!(sess, x^2, bounds=Dict(x => [1.0, 3.0])) stops at 1
    pytest.importorskip("scipy")
    x = variable(2.0)
    loss = jl_tf.pow(x, 2)
    init(sess)
    adcme.bfgs(sess, loss, 15000, vars=[], bounds={x: np.array([1.0, 3.0])}, verbose=False)
    assert np.isclose(sess.run(x), 1.0)


def test_adcme_pcl_linear_op(sess):
    # ADCME.jl test/pcl.jl:32 (pcl_linear_op), its jacobian and gradients of y = A*x + c at a fed x
    A, c, r, x0 = rng.random((6, 10)), rng.random(6), rng.random(6), rng.random(10)
    x = jl_tf.placeholder_with_default(constant(rng.random(10)), shape=[10])    # placeholder(rand(10))
    y = jl_tf.add(times(A, x), c)
    loss = total(jl_tf.pow(jl_tf.subtract(y, r), 2))
    J, g = adcme.jacobian(y, x), gradients(loss, x)
    gval, Jval = sess.run([g, J], feed_dict={x._py: x0})
    assert np.allclose(Jval, A) and np.allclose(gval, 2 * A.T @ (A @ x0 + c - r))


# --- docs/src ------------------------------------------------------------------------------------------------------

def test_adcme_tu_basic_tensors(sess):
    # ADCME.jl docs/src/tu_basic.md:26, 34, 42 and 61: constants, Variables, placeholders; + * .* inv
    assert [adcme.size(constant(v)) for v in (1.0, rng.random(10), rng.random((10, 10)))] == [(), (10,), (10, 10)]
    assert adcme.size(variable(rng.random((10, 10)))) == (10, 10)
    assert adcme.size(jl_tf.placeholder(FLOAT64, shape=[10, 10])) == (10, 10)
    d = rng.random(10)
    p = jl_tf.placeholder_with_default(constant(d), shape=[10])                   # placeholder(rand(10))
    assert np.allclose(sess.run(p), d)
    M, v = rng.random((10, 10)) + 10 * np.eye(10), rng.random(10)
    a, b = constant(M), constant(v)
    assert np.allclose(sess.run(jl_tf.add(a, 1.0)), M + 1)
    assert np.allclose(sess.run(times(a, b)), M @ v)
    assert np.allclose(sess.run(times(a, a)), M @ M)
    assert np.allclose(sess.run(jl_tf.multiply(a, a)), M * M)
    assert np.allclose(sess.run(jl_tf.linalg.inv(a)), np.linalg.inv(M))


def test_adcme_tu_basic_operator_table(sess):
    # ADCME.jl docs/src/tu_basic.md:112 (the table of operators): indexing with end, rows, 3-D, reductions, squeeze
    V, M, T = rng.random(6), rng.random((6, 4)), rng.random((5, 3, 4))
    v, m, t = constant(V), constant(M), constant(T)
    end_v, end_m1, end_m2, end_t1 = adcme.size(v, 1), adcme.size(m, 1), adcme.size(m, 2), adcme.size(t, 1)
    assert np.allclose(sess.run(getindex(v, range(1, 4))), V[0:3])
    assert np.allclose(sess.run(getindex(v, [1, 3, 4])), V[[0, 2, 3]])
    assert np.allclose(sess.run(getindex(v, range(3, end_v + 1))), V[2:])                 # v[3:end]
    assert np.allclose(sess.run(getindex(v, COLON)), V)
    assert np.allclose(sess.run(getindex(m, 3, COLON)), M[2, :])
    assert np.allclose(sess.run(getindex(m, COLON, 3)), M[:, 2])
    assert np.isclose(sess.run(getindex(m, 1, 3)), M[0, 2])
    assert np.allclose(sess.run(getindex(m, [1, 2, 5], [2, 3])), M[np.ix_([0, 1, 4], [1, 2])])
    assert np.allclose(sess.run(getindex(t, 1, COLON, COLON)), T[0])
    assert np.allclose(sess.run(getindex(t, [1, 2, 3], COLON, 3)), T[[0, 1, 2], :, 2])
    assert np.allclose(sess.run(getindex(t, range(1, end_t1 + 1, 3), 1, 4)), T[0::3, 0, 3])   # m[1:3:end, 1, 4]
    assert np.isclose(sess.run(getindex(v, end_v)), V[-1])                                    # v[end]
    assert np.isclose(sess.run(getindex(m, 1, end_m2)), M[0, -1])                             # m[1, end]
    assert np.allclose(sess.run(getindex(m, 2)), M[1, :]) and end_m1 == 6                     # m[2]: a row
    assert np.allclose(sess.run(times(v, v)), V * V)                                          # sum(a*b)'s a*b
    assert np.allclose(sess.run(adcme.adjoint(m)), M.T)
    assert np.isclose(sess.run(jl_tf.reduce_mean(m, axis=None)), M.mean())
    assert np.allclose(sess.run(jl_tf.reduce_mean(m, axis=0)), M.mean(axis=0))               # mean(x, dims=1)
    one = constant(rng.random((1, 1, 3)))
    assert adcme.size(jl_tf.squeeze(one, axis=None)) == (3,)
    assert adcme.size(jl_tf.squeeze(one, axis=0)) == (1, 3)                                  # squeeze(x, dims=1)
    assert adcme.size(jl_tf.squeeze(one, axis=[0, 1])) == (3,)                               # dims=[1;2]
    assert np.isclose(sess.run(jl_tf.norm(v, ord=2.0, axis=None)), np.linalg.norm(V))
    assert np.allclose(sess.run(total(m, dims=1)), M.sum(axis=0))
    assert np.allclose(sess.run(scatter("scatter_update", v, [2, 4], np.array([7.0, 8.0]))),
                       np.where(np.arange(6) == 1, 7.0, np.where(np.arange(6) == 3, 8.0, V)))
    A2 = M.copy()
    A2[np.ix_([0, 2], [1, 3])] -= 1.0
    assert np.allclose(sess.run(scatter("scatter_sub", m, [1, 3], [2, 4], 1.0)), A2)


def test_adcme_tu_inv_adam(sess):
    # ADCME.jl docs/src/tu_inv.md:268: AdamOptimizer(0.01, beta1=0.5).minimize(loss), one step checked
    x = variable(np.array([1.0, -2.0]))
    loss = total(jl_tf.pow(x, 2))
    opt = jl_tf.train.AdamOptimizer(0.01, beta1=0.5).minimize(loss)
    init(sess)
    sess.run(opt)
    grad = 2 * np.array([1.0, -2.0])
    m, v = 0.5 * grad, 0.001 * grad ** 2                                   # TF1's Adam, first step
    step = 0.01 * np.sqrt(1 - 0.999) / (1 - 0.5) * m / (np.sqrt(v) + 1e-8)
    assert np.allclose(sess.run(x), np.array([1.0, -2.0]) - step)


def test_scatter_values_of_higher_rank_follow_julias_setindex_shape_rule(sess):
    # Julia's A[1, :] = v takes v of 3, 1×3 or 3×1 (its dimensions other than 1 are those indexed), not 2×3
    C = constant(np.zeros((3, 3)))
    for value in (np.arange(1.0, 4.0), np.arange(1.0, 4.0).reshape(1, 3), np.arange(1.0, 4.0).reshape(3, 1)):
        assert np.array_equal(sess.run(scatter("scatter_update", C, 1, COLON, value))[0], [1.0, 2.0, 3.0])
    with pytest.raises(ValueError):
        scatter("scatter_update", C, 1, COLON, np.ones((2, 3)))
