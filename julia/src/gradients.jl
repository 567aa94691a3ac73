# Gradients as ADCME computes them: a gradient for a scalar, a Jacobian otherwise.

"""
    gradients(ys, xs; colocate=false, kwargs...)

ADCME's `gradients`. For a scalar `ys`, the gradient with respect to `xs`, shaped like it (`nothing`
where `ys` does not depend on `xs`); for a non-scalar `ys`, the Jacobian, shaped `size(ys)` then
`size(xs)`, one gradient per element of `ys` in a `while_loop` (TF's `tf.gradients` would sum them).
A vector or tuple of `xs` (or of `ys`) gives a vector. `colocate=true` (TF's
`colocate_gradients_with_ops`) builds each gradient op on the device of its forward op. Other
keywords (`stop_gradients`, ...) go to `tf.gradients`.
"""
function gradients(ys, xs; colocate::Bool=false, kwargs...)
    python_xs = xs isa Tuple ? collect(xs) : xs
    python_ys = ys isa Tuple ? collect(ys) : ys
    return tf.adcme.gradients(python_ys, python_xs; colocate_gradients_with_ops=colocate, kwargs...)
end

"""
    jacobian(ys, xs)

The Jacobian J[i..., j...] = ∂ys[i...]/∂xs[j...], shaped `size(ys)` then `size(xs)` (ADCME asks for
vectors; any shapes work here), zeros where an element of `ys` does not depend on `xs`.
"""
jacobian(ys::PyObject, xs::PyObject; kwargs...) = tf.adcme.jacobian(ys, xs; kwargs...)

"""
    hessian(y, x)

The Hessian of the scalar `y` with respect to `x` (a vector, or any shape: `size(x)` twice):
`tf.hessians`.
"""
hessian(y::PyObject, x::PyObject; kwargs...) = tf.adcme.hessian(y, x; kwargs...)

"""
    hessian_vector(y, x, v)

The Hessian of the scalar `y` with respect to `x` times `v` (shaped like `x`), without forming the
Hessian.
"""
hessian_vector(y::PyObject, x::PyObject, v; kwargs...) = tf.adcme.hessian_vector(y, x, v; kwargs...)

"""
    gradients_colocate(loss, xs)

ADCME's `gradients_colocate`: the gradients of the scalar `loss` with respect to `xs` (one tensor or
a vector), each gradient op on its forward op's device: `gradients(loss, xs; colocate=true)`.
"""
gradients_colocate(loss::PyObject, xs) = gradients(loss, xs; colocate=true)

"""
    gradient_magnitude(loss, xs)

ADCME's `gradient_magnitude`: √(Σᵢ ‖∂loss/∂xsᵢ‖²) over one tensor or a vector of them
(`tf.global_norm` of the gradients), a number to watch while training.
"""
gradient_magnitude(loss::PyObject, xs) =
    tf.global_norm([g for g in gradients(loss, xs isa AbstractVector ? xs : [xs]) if g !== nothing])
