"""ADPlace's ADCME API (julia/src/arrays.jl, math.jl, graph.jl, gradients.jl, training.jl) driven through Python with
the values the Julia methods hand over (julia_standin: `python_index`, Julia types, 1-based `dims`). Each
`test_mirror_of_runtests_*` repeats a testset of julia/test/runtests.jl call for call, expected values computed with
NumPy in Julia's column-major terms (Julia's `reshape(A, dims)` is `np.reshape(A, dims, order="F")`); the other tests
check that the Julia methods are written as the stand-in assumes. No Julia runs here.
"""
import re

import numpy as np
import pytest

import adplace as tf
from julia_sources import package_source
from julia_standin import (JuliaPyObject, JuliaString, JuliaType, getindex, julia_function, julia_reshape,
                           python_index, scatter, to_julia)

jl_tf = JuliaPyObject(tf)
adcme = jl_tf.adcme
SOURCE = " ".join(package_source().split())
FLOAT64, FLOAT32, INT32, INT64 = (JuliaType(n) for n in ("Float64", "Float32", "Int32", "Int64"))
COLON = slice(None)


def constant(value, dtype=None):
    """ADPlace's `constant` of a NumPy array standing for a Julia array (same indices) or a number."""
    if dtype is None:
        dtype = FLOAT64 if np.asarray(value).dtype.kind == "f" else INT64
    return jl_tf.constant(value, dtype=dtype)


def python_axes(dims):
    """ADPlace's python_axes: 1-based dims as 0-based axes."""
    if dims is None:
        return None
    return dims - 1 if isinstance(dims, int) else [d - 1 for d in dims]


def test_the_julia_methods_are_written_as_the_twins_assume():
    for line in ('Base.getindex(x::PyObject, indices...) = tf.adcme.getindex(x, map(python_index, indices)...)',
                 'python_index(::Colon) = pybuiltins.slice(nothing)',
                 'python_index(r::AbstractRange{<:Integer}) = collect(Int, r)',
                 'python_index(v::AbstractArray{Bool}) = Array{Bool}(v)',
                 'python_index(v::AbstractArray{<:Integer}) = Array{Int}(v)',
                 'python_index(i::Bool) = throw(ArgumentError(',
                 'return (map(python_index, args[1:end-1])..., args[end])',
                 'tf.adcme.reshape(x, [d isa Colon ? -1 : Int(d) for d in dims])',
                 'Base.reshape(x::PyObject, dims::Union{Tuple,AbstractVector}) = tf.reshape(x, collect(Int, dims))',
                 'python_axes(d::Integer) = d - 1', 'python_axes(ds) = [d - 1 for d in ds]',
                 'Base.sum(x::PyObject; dims=nothing, kwargs...) = tf.reduce_sum(x; axis=python_axes(dims), kwargs...)',
                 'placeholder(dtype::Union{Type,PyObject}; shape=Any[], kwargs...) = tf.placeholder(dtype; shape=shape,',
                 'tf.placeholder_with_default(default; shape=collect(Any, size(default)), kwargs...)',
                 'tf.adcme.gradients(python_ys, python_xs; colocate_gradients_with_ops=colocate, kwargs...)',
                 'Float64.(tf.adcme.bfgs(sess, loss, max_iter; vars=collect(vars), kwargs...))',
                 '(rx == 0 || ry == 0) && return tf.multiply(x, y)',
                 'unnamed_variable() = "unnamed_$(Threads.atomic_add!(UNNAMED_VARIABLES, 1) + 1)"'):
        assert line in SOURCE, line


def test_python_index_follows_julias_index_kinds():
    assert python_index(3) == 3 and python_index(COLON) == COLON
    assert python_index(range(2, 6)).tolist() == [2, 3, 4, 5]         # Julia's 2:5
    assert python_index(np.array([True, False])).dtype == np.bool_
    with pytest.raises(TypeError):
        python_index(True)
    with pytest.raises(TypeError):
        python_index(2.5)


def test_mirror_of_runtests_indexing(sess, virtual_gpus_only):
    A = julia_reshape(np.arange(1.0, 13.0), 3, 4)
    x, v = constant(A), constant(np.arange(1.0, 6.0))
    assert adcme.size(x) == (3, 4) and adcme.size(x, 3) == 1 and adcme.length(x) == 12 and adcme.ndims(x) == 2
    p = jl_tf.placeholder(FLOAT64, shape=[None, 4])
    assert adcme.size(p) == (None, 4) and adcme.length(p) is None and adcme.size(p, 1) is None
    end = adcme.size(v, 1)
    assert sess.run(getindex(v, 2)) == 2.0 and sess.run(getindex(v, end)) == 5.0
    assert sess.run(getindex(v, range(2, end + 1))).tolist() == [2, 3, 4, 5]
    assert sess.run(getindex(v, range(1, end + 1, 2))).tolist() == [1, 3, 5]
    assert sess.run(getindex(v, [1, 3, 3])).tolist() == [1, 3, 3]
    assert sess.run(getindex(v, np.array([True, False, True, False, False]))).tolist() == [1, 3]
    assert sess.run(getindex(x, 2, 3)) == A[1, 2]
    assert np.array_equal(sess.run(getindex(x, COLON, 2)), A[:, 1])
    assert np.array_equal(sess.run(getindex(x, 2, COLON)), A[1, :])
    assert np.array_equal(sess.run(getindex(x, range(1, 3), [1, 4])), A[0:2][:, [0, 3]])
    assert np.array_equal(sess.run(getindex(x, 2)), A[1, :])
    assert np.array_equal(sess.run(getindex(x, COLON)), A.reshape(-1, order="F"))
    B = julia_reshape(np.arange(1.0, 25.0), 2, 3, 4)
    y = constant(B)
    assert np.array_equal(sess.run(getindex(y, 2, COLON, 1)), B[1, :, 0])
    assert np.array_equal(sess.run(getindex(y, COLON, [1, 3], 4)), B[:, [0, 2], 3])
    i = jl_tf.constant(3, dtype=INT32)
    assert sess.run(getindex(v, i)) == 3.0 and sess.run(getindex(x, i, 2)) == A[2, 1]
    with pytest.raises(ValueError, match="out of bounds"):
        getindex(x, 4, 1)
    w = jl_tf.Variable(np.arange(1.0, 6.0), dtype=FLOAT64)
    sess.run(jl_tf.global_variables_initializer())
    grad = adcme.gradients(jl_tf.reduce_sum(getindex(w, [1, 1, 4])), w, colocate_gradients_with_ops=False)
    assert sess.run(grad).tolist() == [2, 0, 0, 1, 0]
    with tf.device("/gpu:0"):
        on_gpu = getindex(v, range(2, 4))
    assert on_gpu.device == JuliaString("/device:GPU:0")


def test_mirror_of_runtests_scatter(sess):
    A = np.zeros((3, 4))
    x = constant(A)
    B = A.copy()
    B[1, [0, 2]] = [5.0, 6.0]
    assert np.array_equal(sess.run(scatter("scatter_update", x, 2, [1, 3], np.array([5.0, 6.0]))), B)
    C = A.copy()
    C[:, 1] += 1.0
    assert np.array_equal(sess.run(scatter("scatter_add", x, COLON, 2, 1.0)), C)
    assert sess.run(scatter("scatter_sub", constant(np.ones(4)), [1, 1, 4], np.array([1.0, 2.0, 3.0]))).tolist() == \
        [-2, 1, 1, -2]
    assert sess.run(scatter("scatter_update", constant(np.ones(3)), jl_tf.constant(2, dtype=INT32), 0.0)).tolist() == \
        [1, 0, 1]
    assert np.array_equal(sess.run(x), A)


def test_mirror_of_runtests_layout(sess):
    A = julia_reshape(np.arange(1.0, 25.0), 4, 6)
    x = constant(A)
    for dims in [(3, 8), (24,), (-1, 2), (2, 3, 4)]:
        want = julia_reshape(A, *dims)
        assert np.array_equal(sess.run(adcme.reshape(x, list(dims))), want), dims
    assert np.array_equal(sess.run(adcme.reshape(adcme.reshape(x, [2, 3, 4]), [6, 4])), julia_reshape(A, 6, 4))
    assert np.array_equal(sess.run(jl_tf.reshape(x, [6, 4])), A.reshape(6, 4))      # TF's row-major, as ADCME
    assert np.array_equal(sess.run(adcme.vec(x)), A.reshape(-1, order="F"))
    assert np.array_equal(sess.run(adcme.rvec(x)), julia_reshape(A, 1, 24))
    assert np.array_equal(sess.run(adcme.cvec(x)), julia_reshape(A, 24, 1))
    assert np.array_equal(sess.run(adcme.adjoint(x)), A.T)
    assert sess.run(adcme.adjoint(constant(np.array([1.0, 2.0, 3.0])))).shape == (1, 3)
    Z = np.array([[1 + 2j, 3], [0, 1j]])
    assert np.array_equal(sess.run(adcme.adjoint(jl_tf.constant(Z))), Z.conj().T)
    assert np.array_equal(sess.run(adcme.transpose(jl_tf.constant(Z))), Z.T)
    p = jl_tf.placeholder(FLOAT64, shape=[4, 6])
    assert np.array_equal(sess.run(adcme.reshape(p, [6, 4]), feed_dict={p._py: A}), julia_reshape(A, 6, 4))


def test_mirror_of_runtests_gradients(sess):
    x = constant(np.array([1.0, 2.0, 3.0]))
    x1, x2, x3 = (getindex(x, k) for k in (1, 2, 3))
    ys = jl_tf.stack([jl_tf.multiply(x1, x2), jl_tf.sin(x3), jl_tf.pow(x1, 2)], axis=0)
    J = np.array([[2.0, 1.0, 0.0], [0.0, 0.0, np.cos(3.0)], [2.0, 0.0, 0.0]])
    assert np.allclose(sess.run(adcme.gradients(ys, x, colocate_gradients_with_ops=False)), J)
    assert np.allclose(sess.run(adcme.jacobian(ys, x)), J)
    s = jl_tf.constant(2.0, dtype=FLOAT64)
    assert sess.run(adcme.gradients(jl_tf.multiply(s, x), s)).tolist() == [1, 2, 3]
    row = adcme.reshape(jl_tf.multiply(x, s), [1, 3])
    assert adcme.size(adcme.gradients(row, s)) == (1, 3)
    cubes = jl_tf.reduce_sum(jl_tf.pow(x, 3))
    assert np.allclose(sess.run(adcme.hessian(cubes, x)), np.diag([6.0, 12.0, 18.0]))
    assert np.allclose(sess.run(adcme.hessian_vector(cubes, x, np.array([1.0, 0.0, 1.0]))), [6, 0, 18])
    squares = jl_tf.reduce_sum(jl_tf.pow(x, 2))
    gs = adcme.gradients(squares, [x, s], colocate_gradients_with_ops=False)
    assert sess.run(gs[0]).tolist() == [2, 4, 6] and gs[1] is None


def test_mirror_of_runtests_placeholders_and_variables(sess):
    p = jl_tf.placeholder(FLOAT64, shape=[])                         # ADPlace's default shape
    assert adcme.size(p) == ()
    default = constant(np.array([1.0, 2.0]))
    q = jl_tf.placeholder_with_default(default, shape=list(adcme.size(default)))
    assert adcme.size(q) == (2,) and sess.run(q).tolist() == [1, 2]
    assert sess.run(q, feed_dict={q._py: np.array([3.0, 4.0])}).tolist() == [3, 4]
    with tf.variable_scope("s", reuse=tf.AUTO_REUSE):
        g1 = jl_tf.get_variable("g", initializer=constant(2.0), dtype=FLOAT64)
    with tf.variable_scope("s", reuse=tf.AUTO_REUSE):
        g2 = jl_tf.get_variable("g", initializer=constant(3.0), dtype=FLOAT64)
    assert g1 == g2 and g1.name == JuliaString("s/g:0")
    with tf.variable_scope("", reuse=tf.AUTO_REUSE):              # ADPlace's unnamed_variable(): unnamed_<n>
        fresh = [jl_tf.get_variable(f"unnamed_{n}", initializer=constant(float(n)), dtype=FLOAT64) for n in (1, 2)]
    assert fresh[0] != fresh[1] and fresh[1].name == JuliaString("unnamed_2:0")
    z = jl_tf.get_variable("z", shape=[2, 3], dtype=FLOAT64)
    assert adcme.size(z) == (2, 3)


def test_mirror_of_runtests_math_dims(sess):
    A = np.array([[1.0, -2.0, 3.0], [-4.0, 5.0, -6.0]])
    x = constant(A)
    assert np.allclose(sess.run(jl_tf.reduce_mean(x, axis=python_axes(1))), A.mean(axis=0))
    assert np.array_equal(sess.run(jl_tf.reduce_sum(x, axis=python_axes(2))), A.sum(axis=1))
    assert sess.run(jl_tf.reduce_sum(x, axis=python_axes((1, 2)))) == A.sum()
    assert np.array_equal(sess.run(jl_tf.reduce_min(x, axis=python_axes(2))), A.min(axis=1))
    assert np.isclose(sess.run(jl_tf.norm(x, ord=2.0, axis=None)), np.linalg.norm(A))
    assert np.isclose(sess.run(jl_tf.norm(x, ord=1.0, axis=None)), np.abs(A).sum())   # Julia's norm(A, 1)
    assert np.array_equal(sess.run(jl_tf.squeeze(constant(np.ones((1, 3))), axis=python_axes(1))), np.ones(3))
    B = julia_reshape(np.arange(1.0, 25.0), 2, 3, 4)
    assert np.array_equal(sess.run(jl_tf.multiply(constant(B), constant(2.0))), 2 * B)   # rank 3 × scalar


def test_mirror_of_runtests_pyerror_parts(sess):
    failing = jl_tf.gather(constant(np.array([1.0, 2.0])), jl_tf.constant(5, dtype=INT64))
    with pytest.raises(tf.errors.InvalidArgumentError) as raised:
        sess.run(failing)
    kind, message, op = to_julia(tf.adcme.error_parts(raised.value))
    assert (kind, op) == (JuliaString("InvalidArgumentError"), JuliaString("GatherV2"))
    assert "5" in message.text


def test_mirror_of_runtests_bfgs(sess):
    pytest.importorskip("scipy")
    theta1 = jl_tf.Variable(5.0, dtype=FLOAT64)
    theta2 = jl_tf.Variable(5.0, dtype=FLOAT64)
    fit = jl_tf.add(jl_tf.pow(jl_tf.subtract(theta1, 1.0), 2),
                    jl_tf.multiply(10.0, jl_tf.pow(jl_tf.subtract(theta2, 2.0), 2)))
    sess.run(jl_tf.global_variables_initializer())
    steps = []
    losses = adcme.bfgs(sess, fit, 100, vars=[theta1, theta2], verbose=False,
                        callback=julia_function(lambda vs, step, loss: steps.append(step)))
    assert np.allclose(sess.run([theta1, theta2]), [1.0, 2.0], atol=1e-6)
    assert steps == list(range(len(losses))) and losses[-1] < 1e-10


def test_the_julia_bool_index_is_refused_in_julia_too():
    assert re.search(r"python_index\(i::Bool\) = throw\(ArgumentError", SOURCE)
