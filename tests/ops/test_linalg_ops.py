"""Tests for adplace.ops.linalg_ops, linalg_grad and einsum_ops: values against NumPy, static shapes and TF1's
build-time errors, run-time errors of the solvers, and gradients against central differences."""

import numpy as np
import pytest

import adplace as tf


def run(fetches, feed_dict=None):
    with tf.Session() as sess:
        return sess.run(fetches, feed_dict)


def grad_error(build, x0, y_shape=None):
    """compute_gradient_error of y = build(x) at x0, in float64."""
    with tf.Graph().as_default(), tf.Session():
        x = tf.placeholder(tf.float64, x0.shape)
        y = build(x)
        return tf.test.compute_gradient_error(x, list(x0.shape), y, y.shape.as_list() if y_shape is None else y_shape,
                                              x_init_value=x0)


RNG = np.random.default_rng(0)
A = np.array([[4.0, 1.0, 0.5], [2.0, 3.0, -1.0], [0.0, 1.0, 5.0]])
SPD = A @ A.T + 3 * np.eye(3)
BATCH = RNG.normal(size=(2, 3, 3)) + 4 * np.eye(3)


# --- diagonals and bands ----------------------------------------------------------------------------------------------
def test_diag_ops_values_and_shapes():
    d = np.array([[1.0, 2.0], [3.0, 4.0]], np.float32)
    m = tf.matrix_diag(d)
    assert m.op.type == "MatrixDiag" and m.shape.as_list() == [2, 2, 2]
    part = tf.matrix_diag_part(tf.constant(np.arange(24.0).reshape(2, 3, 4)))
    assert part.shape.as_list() == [2, 3]
    full = tf.diag(tf.constant(d))
    assert full.op.type == "Diag" and full.shape.as_list() == [2, 2, 2, 2]
    got = run([m, part, full, tf.diag_part(full), tf.matrix_set_diag(tf.zeros([2, 3]), [7.0, 8.0])])
    np.testing.assert_array_equal(got[0], [np.diag(r) for r in d])
    np.testing.assert_array_equal(got[1], np.diagonal(np.arange(24.0).reshape(2, 3, 4), 0, -2, -1))
    np.testing.assert_array_equal(got[2].reshape(4, 4), np.diag(d.ravel()))
    np.testing.assert_array_equal(got[3], d)
    np.testing.assert_array_equal(got[4], [[7, 0, 0], [0, 8, 0]])


def test_matrix_diag_keeps_inf_off_the_diagonal_zero():
    np.testing.assert_array_equal(run(tf.matrix_diag([np.inf, 1.0])), [[np.inf, 0], [0, 1]])


def test_band_part_keeps_the_band():
    x = np.arange(16.0).reshape(4, 4)
    got = run([tf.matrix_band_part(x, 1, 0), tf.matrix_band_part(x, -1, 0), tf.matrix_band_part(x, 0, -1)])
    np.testing.assert_array_equal(got[0], np.tril(np.triu(x, -1)))
    np.testing.assert_array_equal(got[1], np.tril(x))
    np.testing.assert_array_equal(got[2], np.triu(x))


def test_diag_shape_errors_name_the_op():
    with pytest.raises(ValueError, match=r"at least rank 2 but is rank 1 for 'diag_part' \(op: "
                                         r"'MatrixDiagPart'\) with input shapes: \[3\]"):
        tf.matrix_diag_part(tf.constant([1.0, 2.0, 3.0]))
    with pytest.raises(ValueError, match="Dimensions must be equal, but are 2 and 3"):
        tf.matrix_set_diag(tf.zeros([2, 4]), tf.zeros([3]))
    with pytest.raises(ValueError, match="even and non-zero rank"):
        tf.diag_part(tf.zeros([2, 2, 2]))


def test_eye_and_trace():
    got = run([tf.eye(3), tf.eye(2, 3, dtype=tf.float64), tf.eye(2, batch_shape=[4]), tf.trace(tf.constant(BATCH))])
    np.testing.assert_array_equal(got[0], np.eye(3))
    assert got[1].dtype == np.float64
    np.testing.assert_array_equal(got[1], np.eye(2, 3))
    assert got[2].shape == (4, 2, 2)
    np.testing.assert_allclose(got[3], np.trace(BATCH, axis1=-2, axis2=-1))
    assert tf.eye(2, 3).op.type == "MatrixSetDiag" and tf.eye(3).op.type == "MatrixDiag"
    with pytest.raises(TypeError, match="num_rows and num_columns must be positive integer values"):
        tf.eye(2.5)


def test_eye_with_tensor_sizes():
    n = tf.placeholder(tf.int32, [])
    np.testing.assert_array_equal(run(tf.eye(n), {n: 3}), np.eye(3))
    np.testing.assert_array_equal(run(tf.eye(2, n), {n: 4}), np.eye(2, 4))


def test_matrix_transpose():
    x = np.arange(24.0).reshape(2, 3, 4)
    t = tf.matrix_transpose(x)
    assert t.shape.as_list() == [2, 4, 3]
    np.testing.assert_array_equal(run(t), x.transpose(0, 2, 1))
    np.testing.assert_array_equal(run(tf.linalg.transpose(tf.constant(x[0]))), x[0].T)
    p = tf.placeholder(tf.float64)
    np.testing.assert_array_equal(run(tf.matrix_transpose(p), {p: x}), x.transpose(0, 2, 1))
    with pytest.raises(ValueError, match="should be a \\(batch\\) matrix, with rank >= 2"):
        tf.matrix_transpose([1.0, 2.0])


# --- decompositions and solvers ----------------------------------------------------------------------------------------
def test_inverse_determinant_cholesky_solve_values():
    b = RNG.normal(size=(3, 2))
    got = run([tf.matrix_inverse(A), tf.matrix_inverse(A, adjoint=True), tf.matrix_determinant(BATCH),
               tf.cholesky(SPD), tf.matrix_solve(A, b), tf.matrix_solve(A, b, adjoint=True),
               tf.matrix_triangular_solve(A, b), tf.matrix_triangular_solve(A, b, lower=False)])
    np.testing.assert_allclose(got[0], np.linalg.inv(A))
    np.testing.assert_allclose(got[1], np.linalg.inv(A.T))
    np.testing.assert_allclose(got[2], np.linalg.det(BATCH))
    np.testing.assert_allclose(got[3], np.linalg.cholesky(SPD))
    np.testing.assert_allclose(got[4], np.linalg.solve(A, b))
    np.testing.assert_allclose(got[5], np.linalg.solve(A.T, b))
    np.testing.assert_allclose(got[6], np.linalg.solve(np.tril(A), b))
    np.testing.assert_allclose(got[7], np.linalg.solve(np.triu(A), b))


def test_self_adjoint_eig():
    e, v = tf.self_adjoint_eig(tf.constant(SPD))
    assert e.shape.as_list() == [3] and v.shape.as_list() == [3, 3]
    e_val, v_val = run([e, v])
    np.testing.assert_allclose(e_val, np.linalg.eigvalsh(SPD))
    np.testing.assert_allclose(v_val @ np.diag(e_val) @ v_val.T, SPD, atol=1e-10)
    np.testing.assert_allclose(run(tf.linalg.eigvalsh(SPD)), e_val)


def test_float32_stays_float32():
    a = tf.constant(A.astype(np.float32))
    for y in (tf.matrix_inverse(a), tf.matrix_determinant(a), tf.matrix_solve(a, a)):
        assert y.dtype == tf.float32 and run(y).dtype == np.float32


def test_solver_shape_and_dtype_errors():
    with pytest.raises(ValueError, match=r"Dimensions must be equal, but are 2 and 3 for 'MatrixInverse' \(op: "
                                         r"'MatrixInverse'\) with input shapes: \[2,3\]"):
        tf.matrix_inverse(tf.zeros([2, 3]))
    with pytest.raises(ValueError, match="Dimensions must be equal, but are 3 and 2"):
        tf.matrix_solve(tf.zeros([3, 3]), tf.zeros([2, 1]))
    with pytest.raises(TypeError, match="DataType int32 not in list of allowed values"):
        tf.matrix_determinant(tf.constant([[1, 2], [3, 4]]))


def test_singular_and_indefinite_inputs_fail_at_run_time():
    with pytest.raises(tf.errors.InvalidArgumentError, match="Input is not invertible"):
        run(tf.matrix_inverse([[1.0, 2.0], [2.0, 4.0]]))
    with pytest.raises(tf.errors.InvalidArgumentError, match="Cholesky decomposition was not successful"):
        run(tf.cholesky([[1.0, 2.0], [2.0, 1.0]]))
    with pytest.raises(tf.errors.InvalidArgumentError, match="Input matrix is not invertible"):
        run(tf.matrix_solve([[1.0, 2.0], [2.0, 4.0]], [[1.0], [1.0]]))


# --- gradients ---------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("build, x0", [
    (tf.matrix_inverse, A),
    (lambda x: tf.matrix_inverse(x, adjoint=True), A),
    (tf.matrix_determinant, BATCH),
    (lambda x: tf.cholesky(0.5 * (x + tf.matrix_transpose(x))), SPD),
    (lambda x: tf.matrix_solve(x, tf.constant(A[:, :2])), A),
    (lambda x: tf.matrix_solve(tf.constant(A), x, adjoint=True), A),
    (lambda x: tf.matrix_triangular_solve(x, tf.constant(A)), A),
    (lambda x: tf.matrix_triangular_solve(x, tf.constant(A), lower=False, adjoint=True), A),
    (tf.trace, BATCH),
    (tf.matrix_diag, A),
    (tf.matrix_diag_part, BATCH),
    (lambda x: tf.matrix_set_diag(x, np.array([1.0, 2.0, 3.0])), A),
    (lambda x: tf.matrix_set_diag(tf.constant(A), x[0]), A),
    (tf.diag, A),
    (lambda x: tf.diag_part(tf.reshape(x, [3, 3])), A),
    (lambda x: tf.matrix_band_part(x, 1, 0), A),
    (lambda x: tf.self_adjoint_eig(x)[0], SPD),
    (lambda x: tf.abs(tf.self_adjoint_eig(x)[1]), SPD),
    (lambda x: tf.norm(x), A),
    (lambda x: tf.norm(x, ord=3, axis=1), A),
    (lambda x: tf.linalg.logdet(0.5 * (x + tf.matrix_transpose(x))), SPD),  # Cholesky reads one triangle
])
def test_gradients_match_central_differences(build, x0):
    assert grad_error(build, x0) < 1e-6


# --- einsum and tensordot ------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("equation, shapes", [
    ("ij,jk->ik", [(2, 3), (3, 4)]),
    ("ij,jk", [(2, 3), (3, 4)]),
    ("bij,bjk->bik", [(2, 2, 3), (2, 3, 4)]),
    ("...ij,...jk->...ik", [(2, 2, 3), (3, 4)]),
    ("ij->ji", [(2, 3)]),
    ("ij->", [(2, 3)]),
    ("i,j->ij", [(2,), (3,)]),
    ("ij,ij->i", [(2, 3), (2, 3)]),
    ("ij,jk,kl->il", [(2, 3), (3, 4), (4, 2)]),
    ("ijk,k->ij", [(2, 3, 4), (4,)]),
])
def test_einsum_matches_numpy(equation, shapes):
    values = [RNG.normal(size=s) for s in shapes]
    y = tf.einsum(equation, *[tf.constant(v) for v in values])
    expected = np.einsum(equation, *values)
    assert y.shape.as_list() == list(expected.shape)
    np.testing.assert_allclose(run(y), expected)


@pytest.mark.parametrize("equation, shapes", [
    ("ij,jk->ik", [(2, 3), (3, 4)]),
    ("ij,jk->i", [(2, 3), (3, 4)]),
    ("ij,k->i", [(2, 3), (4,)]),
    ("ij->j", [(2, 3)]),
    ("...ij,...jk->...ik", [(2, 2, 3), (3, 4)]),
    ("aij,jk->ak", [(2, 2, 3), (3, 4)]),
])
def test_einsum_gradients(equation, shapes):
    values = [RNG.normal(size=s) for s in shapes]
    assert grad_error(lambda x: tf.einsum(equation, x, *values[1:]), values[0]) < 1e-6
    if len(values) > 1:
        assert grad_error(lambda x: tf.einsum(equation, values[0], x), values[1]) < 1e-6


def test_einsum_errors():
    with pytest.raises(ValueError, match="has 2 input subscripts but 1 tensors were given"):
        tf.einsum("ij,jk->ik", tf.zeros([2, 2]))
    with pytest.raises(ValueError, match="Expected dimension 3 at axis 0 of the input shaped \\[4,2\\] but got "
                                         "dimension 4"):
        tf.einsum("ij,jk->ik", tf.zeros([2, 3]), tf.zeros([4, 2]))
    assert tf.einsum("ij->ji", tf.zeros([2, 3])).op.type == "Einsum"


@pytest.mark.parametrize("axes, a_shape, b_shape", [
    (1, (2, 3), (3, 4)), (0, (2,), (3,)), (2, (2, 3, 4), (3, 4, 5)), ([[0], [1]], (3, 2), (4, 3)),
    ([[1, 0], [0, 2]], (3, 2, 5), (2, 4, 3)), ([-1, 0], (2, 3), (3, 2)),
])
def test_tensordot_matches_numpy(axes, a_shape, b_shape):
    a, b = RNG.normal(size=a_shape), RNG.normal(size=b_shape)
    y = tf.tensordot(tf.constant(a), tf.constant(b), axes)
    expected = np.tensordot(a, b, axes)
    assert y.shape.as_list() == list(expected.shape)
    np.testing.assert_allclose(run(y), expected)


def test_tensordot_with_unknown_free_dims_and_its_errors():
    p = tf.placeholder(tf.float64, [None, 3])
    b = RNG.normal(size=(3, 4))
    a = RNG.normal(size=(5, 3))
    np.testing.assert_allclose(run(tf.tensordot(p, b, 1), {p: a}), a @ b)
    with pytest.raises(ValueError, match="'axes' must be an integer or have length 2."):
        tf.tensordot(a, b, [[1], [0], [2]])
    with pytest.raises(ValueError, match="'axes' must be at least 0."):
        tf.tensordot(a, b, -1)
    with pytest.raises(ValueError, match="Different number of contraction axes 'a' and 'b', 2 != 1."):
        tf.tensordot(a, b, [[0, 1], [0]])


# --- norm --------------------------------------------------------------------------------------------------------------
def test_norm_values():
    x = np.array([[1.0, -2.0], [3.0, 4.0]])
    got = run([tf.norm(x), tf.norm(x, axis=1), tf.norm(x, ord=1, axis=0, keepdims=True),
               tf.norm(x, ord=np.inf, axis=1), tf.norm(x, ord=1, axis=[0, 1]), tf.norm(x, ord=np.inf, axis=(0, 1)),
               tf.norm(x, ord="fro", axis=[0, 1]), tf.norm(x, ord=3), tf.linalg.norm(x, keep_dims=True)])
    np.testing.assert_allclose(got[0], np.linalg.norm(x))
    np.testing.assert_allclose(got[1], np.linalg.norm(x, axis=1))
    np.testing.assert_allclose(got[2], np.linalg.norm(x, ord=1, axis=0, keepdims=True))
    np.testing.assert_allclose(got[3], np.linalg.norm(x, ord=np.inf, axis=1))
    np.testing.assert_allclose(got[4], np.linalg.norm(x, ord=1))
    np.testing.assert_allclose(got[5], np.linalg.norm(x, ord=np.inf))
    np.testing.assert_allclose(got[6], np.linalg.norm(x, ord="fro"))
    np.testing.assert_allclose(got[7], np.sum(np.abs(x) ** 3) ** (1 / 3))
    assert got[8].shape == (1, 1)


def test_norm_argument_errors():
    with pytest.raises(ValueError, match="'ord' must be a supported vector norm, got fro"):
        tf.norm([1.0, 2.0], ord="fro")
    with pytest.raises(ValueError, match="'axis' must be None, an integer, or a tuple of 2 unique integers"):
        tf.norm([[1.0]], axis=[0, 0])
    with pytest.raises(ValueError, match="'ord' must be a supported matrix norm"):
        tf.norm([[1.0]], ord=3, axis=[0, 1])


# --- namespaces ----------------------------------------------------------------------------------------------------------
def test_linalg_namespace_aliases():
    assert tf.linalg.inv is tf.matrix_inverse and tf.linalg.det is tf.matrix_determinant
    assert tf.linalg.matmul is tf.matmul and tf.linalg.einsum is tf.einsum and tf.linalg.tensordot is tf.tensordot
    assert tf.linalg.band_part is tf.matrix_band_part and tf.linalg.diag is tf.matrix_diag
    assert tf.linalg.tensor_diag is tf.diag and tf.linalg.trace is tf.trace and tf.linalg.eye is tf.eye
    np.testing.assert_allclose(run(tf.linalg.matvec(A, [1.0, 0.0, 0.0])), A[:, 0])
    np.testing.assert_allclose(run(tf.linalg.logdet(SPD)), np.log(np.linalg.det(SPD)))
    np.testing.assert_allclose(run(tf.linalg.adjoint(A)), A.T)


def test_math_namespace_reexports_existing_ops():
    assert tf.math.reduce_sum is tf.reduce_sum and tf.math.log1p is tf.log1p and tf.math.softplus is tf.nn.softplus
    assert tf.math.is_non_decreasing is tf.is_non_decreasing
    for name in tf.math.__all__:
        assert callable(getattr(tf.math, name)), name
