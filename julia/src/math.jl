# Arithmetic, broadcasting, comparisons and the math and nn functions ADCME overloads on tensors.

"""Julia values that mix with tensors in arithmetic (converted with `topy`)."""
const JuliaValue = Union{Number,AbstractArray{<:Number}}

"""
    matmul(a, b)

`tf.matmul`: the matrix product of tensors or Julia matrices.
"""
matmul(a, b) = tf.matmul(a, b)

rank(x::PyObject) = x.shape.ndims

add(x, y) = tf.add(x, y)
subtract(x, y) = tf.subtract(x, y)
multiply(x, y) = tf.multiply(x, y)
divide(x, y) = tf.divide(x, y)
power(x, y) = tf.pow(x, y)

"""ADCME's `*`: matrix × matrix and matrix × vector products, elementwise with a scalar or between
vectors; beyond rank 2, a batched matmul with a warning, as ADCME does."""
function times(x::PyObject, y::PyObject)
    rx, ry = rank(x), rank(y)
    (rx === nothing || ry === nothing) &&
        throw(ArgumentError("*: the ranks of $x and $y must be known; use matmul or .* instead"))
    (rx == 0 || ry == 0) && return tf.multiply(x, y)
    rx == 2 && ry == 2 && return tf.matmul(x, y)
    rx == 2 && ry == 1 && return tf.squeeze(tf.matmul(x, tf.expand_dims(y, 1)); axis=1)
    rx == 1 && ry == 2 && throw(ArgumentError("*: [rank 1] × [rank 2] is not defined; use a 1×n matrix"))
    max(rx, ry) <= 2 && return tf.multiply(x, y)
    @warn "Unusual usage of multiplication (ranks $rx and $ry): computing tf.matmul. Check carefully."
    return tf.matmul(x, y)
end
times(x::PyObject, y::JuliaValue) = times(x, constant(y; dtype=x.dtype.base_dtype))
times(x::JuliaValue, y::PyObject) = times(constant(x; dtype=y.dtype.base_dtype), y)

for (op, f) in ((:+, add), (:-, subtract), (:*, times), (:/, divide), (:^, power))
    @eval begin
        Base.$op(x::PyObject, y::PyObject) = $f(x, y)
        Base.$op(x::PyObject, y::JuliaValue) = $f(x, y)
        Base.$op(x::JuliaValue, y::PyObject) = $f(x, y)
    end
end
for (op, f) in ((:+, add), (:-, subtract), (:*, multiply), (:/, divide))
    @eval begin
        Base.Broadcast.broadcasted(::typeof($op), x::PyObject, y::PyObject) = $f(x, y)
        Base.Broadcast.broadcasted(::typeof($op), x::PyObject, y::JuliaValue) = $f(x, y)
        Base.Broadcast.broadcasted(::typeof($op), x::JuliaValue, y::PyObject) = $f(x, y)
    end
end

"""ADCME's rule for `.^` on tensors: an error pointing at `^`, which is already elementwise."""
broadcast_power_error(args...) =
    throw(ArgumentError(".^ is disabled for tensors, as in ADCME: use ^, which is elementwise (x^2 squares each element)"))
Base.Broadcast.broadcasted(::typeof(^), x::PyObject, y::Union{PyObject,JuliaValue}) = broadcast_power_error()
Base.Broadcast.broadcasted(::typeof(^), x::JuliaValue, y::PyObject) = broadcast_power_error()
Base.Broadcast.broadcasted(::typeof(Base.literal_pow), ::typeof(^), x::PyObject, ::Val) = broadcast_power_error()

less(x, y) = tf.less(x, y)
less_equal(x, y) = tf.less_equal(x, y)
greater(x, y) = tf.greater(x, y)
greater_equal(x, y) = tf.greater_equal(x, y)

# Comparisons build boolean tensors, as PyCall's did for ADCME (a while_loop condition is `i <= n`)
for (op, f) in ((:<, less), (:<=, less_equal), (:>, greater), (:>=, greater_equal))
    @eval begin
        Base.$op(x::PyObject, y::PyObject) = $f(x, y)
        Base.$op(x::PyObject, y::JuliaValue) = $f(x, y)
        Base.$op(x::JuliaValue, y::PyObject) = $f(x, y)
        Base.Broadcast.broadcasted(::typeof($op), x::PyObject, y::PyObject) = $f(x, y)
        Base.Broadcast.broadcasted(::typeof($op), x::PyObject, y::JuliaValue) = $f(x, y)
        Base.Broadcast.broadcasted(::typeof($op), x::JuliaValue, y::PyObject) = $f(x, y)
    end
end

Base.:^(x::PyObject, y::Integer) = power(x, y)  # more specific than Base's ^(x, p::Integer)
Base.broadcastable(x::PyObject) = Ref(x)          # f.(x) calls f(x): the tensor is one value to broadcast

# --- elementwise functions ------------------------------------------------------------------------
Base.:-(x::PyObject) = tf.negative(x)
Base.abs(x::PyObject) = tf.abs(x)
Base.sign(x::PyObject) = tf.sign(x)
Base.sqrt(x::PyObject) = tf.sqrt(x)
Base.exp(x::PyObject) = tf.exp(x)
Base.expm1(x::PyObject) = tf.math.expm1(x)
Base.log(x::PyObject) = tf.log(x)
Base.log1p(x::PyObject) = tf.math.log1p(x)
Base.sin(x::PyObject) = tf.sin(x)
Base.cos(x::PyObject) = tf.cos(x)
Base.tan(x::PyObject) = tf.tan(x)
Base.tanh(x::PyObject) = tf.tanh(x)
Base.max(x::PyObject, y::Union{PyObject,JuliaValue}) = tf.maximum(x, y)
Base.max(x::JuliaValue, y::PyObject) = tf.maximum(x, y)
Base.min(x::PyObject, y::Union{PyObject,JuliaValue}) = tf.minimum(x, y)
Base.min(x::JuliaValue, y::PyObject) = tf.minimum(x, y)

"""
    sigmoid(x)

The logistic function 1 / (1 + exp(-x)), elementwise on a tensor (`tf.math.sigmoid`) or of a number.
"""
sigmoid(x::PyObject) = tf.math.sigmoid(x)
sigmoid(x::Real) = 1 / (1 + exp(-x))

"""
    relu(x)

max(0, x), elementwise on a tensor (`tf.nn.relu`) or of a number.
"""
relu(x::PyObject) = tf.nn.relu(x)
relu(x::Real) = max(zero(x), x)

"""
    softplus(x)

log(1 + exp(x)), elementwise on a tensor (`tf.math.softplus`) or of a number (computed stably).
"""
softplus(x::PyObject) = tf.math.softplus(x)
softplus(x::Real) = x > 0 ? x + log1p(exp(-x)) : log1p(exp(x))

"""
    leaky_relu(x; alpha=0.2)

x for x ≥ 0, `alpha * x` below, elementwise on a tensor (`tf.nn.leaky_relu`) or of a number.
"""
leaky_relu(x::PyObject; kwargs...) = tf.nn.leaky_relu(x; kwargs...)
leaky_relu(x::Real; alpha=0.2) = x >= 0 ? float(x) : alpha * x

"""
    relu6(x)

min(max(0, x), 6), elementwise on a tensor (`tf.nn.relu6`) or of a number.
"""
relu6(x::PyObject) = tf.nn.relu6(x)
relu6(x::Real) = min(max(zero(x), x), oftype(x, 6))

"""
    elu(x)

x for x > 0, exp(x) - 1 below, elementwise on a tensor (`tf.nn.elu`) or of a number.
"""
elu(x::PyObject) = tf.nn.elu(x)
elu(x::Real) = x > 0 ? float(x) : expm1(x)

"""
    selu(x)

The scaled ELU, λ x for x > 0 and λ α (exp(x) - 1) below (λ ≈ 1.0507, α ≈ 1.6733), elementwise on a tensor
(`tf.nn.selu`) or of a number.
"""
selu(x::PyObject) = tf.nn.selu(x)
selu(x::Real) = 1.0507009873554804934193349852946 *
    (x > 0 ? float(x) : 1.6732632423543772848170429916717 * expm1(x))

"""
    softsign(x)

x / (1 + |x|), elementwise on a tensor (`tf.nn.softsign`) or of a number.
"""
softsign(x::PyObject) = tf.nn.softsign(x)
softsign(x::Real) = x / (1 + abs(x))

"""
    argmax(x; dims=1)
    argmin(x; dims=1)

The 1-based index of the largest (smallest) element along the 1-based dimension `dims`, which is
dropped (ADCME's: `tf.argmax` + 1, int64); for a vector, the index of its largest element.
"""
Base.argmax(x::PyObject; dims::Integer=1) = tf.argmax(x; axis=dims - 1) + 1
Base.argmin(x::PyObject; dims::Integer=1) = tf.argmin(x; axis=dims - 1) + 1

"""
    cast(x, T)
    cast(T, x)

The tensor `x` as element type `T` (a Julia type or a `tf` dtype): `tf.cast`.
"""
cast(x::PyObject, T::Union{Type,PyObject}) = tf.cast(x, dtype(T))
cast(T::Type, x::PyObject) = cast(x, T)

"""
    squeeze(x; dims=nothing)

`x` without its dimensions of size 1 (only the 1-based `dims`, when given): `tf.squeeze`.
"""
squeeze(x::PyObject; dims=nothing) = tf.squeeze(x; axis=python_axes(dims))

# --- reductions over 1-based dims -----------------------------------------------------------------
"""The 0-based axis or axes of 1-based Julia `dims` (`nothing`: all)."""
python_axes(::Nothing) = nothing
python_axes(d::Integer) = d - 1
python_axes(ds) = [d - 1 for d in ds]

"""
    sum(x; dims=nothing)
    prod(x; dims=nothing)
    maximum(x; dims=nothing)
    minimum(x; dims=nothing)

`tf.reduce_sum`, `reduce_prod`, `reduce_max`, `reduce_min` over all elements, or over the 1-based
dimension(s) `dims` (which are dropped, as in TF and ADCME; pass `keepdims=true` to keep them).
Other keywords go to TF.
"""
Base.sum(x::PyObject; dims=nothing, kwargs...) = tf.reduce_sum(x; axis=python_axes(dims), kwargs...)
Base.prod(x::PyObject; dims=nothing, kwargs...) = tf.reduce_prod(x; axis=python_axes(dims), kwargs...)
Base.maximum(x::PyObject; dims=nothing, kwargs...) = tf.reduce_max(x; axis=python_axes(dims), kwargs...)
Base.minimum(x::PyObject; dims=nothing, kwargs...) = tf.reduce_min(x; axis=python_axes(dims), kwargs...)

"""
    mean(x; dims=nothing)

The mean of all elements of a tensor, or over the 1-based dimension(s) `dims` (dropped):
`tf.reduce_mean`.
"""
Statistics.mean(x::PyObject; dims=nothing, kwargs...) = tf.reduce_mean(x; axis=python_axes(dims), kwargs...)

# --- linear algebra -------------------------------------------------------------------------------
"""
    norm(x, p=2; dims=nothing)

The p-norm of all elements of a tensor (Julia's `norm`, also for matrices), or along the 1-based
`dims`: `tf.norm`.
"""
LinearAlgebra.norm(x::PyObject, p::Real=2; dims=nothing) = tf.norm(x; ord=Float64(p), axis=python_axes(dims))

"""
    dot(x, y)

The sum of the elementwise products of `x` and `y` (tensors or a tensor and a Julia array).
"""
LinearAlgebra.dot(x::PyObject, y::Union{PyObject,AbstractArray{<:Number}}) = sum(x .* y)
LinearAlgebra.dot(x::AbstractArray{<:Number}, y::PyObject) = sum(x .* y)

"""
    diag(x)

The diagonal of a matrix (of each matrix of a batch): `tf.linalg.diag_part`.
"""
LinearAlgebra.diag(x::PyObject) = tf.linalg.diag_part(x)

"""
    diagm(x)

The square matrix with the vector `x` on its diagonal: `tf.linalg.diag`.
"""
LinearAlgebra.diagm(x::PyObject) = tf.linalg.diag(x)

"""
    inv(x)

The inverse of a square matrix: `tf.linalg.inv`.
"""
Base.inv(x::PyObject) = tf.linalg.inv(x)

"""
    det(x)

The determinant of a square matrix: `tf.linalg.det`.
"""
LinearAlgebra.det(x::PyObject) = tf.linalg.det(x)

"""
    tr(x)

The trace of a square matrix: `tf.linalg.trace`.
"""
LinearAlgebra.tr(x::PyObject) = tf.linalg.trace(x)
