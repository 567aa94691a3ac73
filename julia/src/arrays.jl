# Tensors as ADCME's Julia arrays: sizes, 1-based indexing, scatter updates and the column-major
# layout. The rules are in Python (`tf.adcme`, tested there against NumPy); these methods hand over
# Julia's index values.

"""
    size(x)
    size(x, d)

The static shape of a tensor as a tuple (`nothing` for an unknown dimension, `()` for a scalar,
`nothing` for an unknown rank); `size(x, d)` is dimension `d`, 1 beyond the rank, as for arrays.
"""
Base.size(x::PyObject) = tf.adcme.size(x)
Base.size(x::PyObject, d::Integer) = tf.adcme.size(x, d)

"""
    length(x)

The number of elements of a tensor (`nothing` when a dimension is unknown); `len` of other Python
objects.
"""
Base.length(x::PyObject) = tf.adcme.length(x)

"""
    ndims(x)

The rank of a tensor (an error when it is unknown).
"""
Base.ndims(x::PyObject) = tf.adcme.ndims(x)

Base.firstindex(x::PyObject) = 1
Base.firstindex(x::PyObject, d::Integer) = 1
Base.lastindex(x::PyObject) = known_size(x, 1)
Base.lastindex(x::PyObject, d::Integer) = known_size(x, d)

"""Dimension `d` of `x`, which must be known (for `end`)."""
function known_size(x::PyObject, d::Integer)
    n = size(x, d)
    n === nothing && throw(ArgumentError(
        "`end` needs dimension $d of $(x.name), which is unknown; give it a shape with set_shape"))
    return n
end

"""An index as `tf.adcme` takes it: an Int, `slice(None)` for `:`, a vector of Ints or Bools, or a tensor."""
python_index(i::Bool) = throw(ArgumentError("a Bool is not an index; use a vector of Bools as a mask"))
python_index(i::Integer) = Int(i)
python_index(::Colon) = pybuiltins.slice(nothing)
python_index(r::AbstractRange{<:Integer}) = collect(Int, r)
python_index(v::AbstractArray{Bool}) = Array{Bool}(v)
python_index(v::AbstractArray{<:Integer}) = Array{Int}(v)
python_index(i::PyObject) = i
python_index(i) = throw(ArgumentError("a tensor index must be an integer, a range, a vector of integers or Bools, `:` or an integer tensor; got $(typeof(i))"))

"""
    x[i], x[i, j], x[:, j], x[2:end], x[idx], x[mask]

ADCME's 1-based indexing of tensors: an integer drops its dimension, `:` keeps it, a range or vector
gathers, a `Bool` vector masks, an integer tensor (a loop index) selects at run time. Indices count
from 1, `end` is the last. One index on a matrix selects rows, as ADCME (and TF) do, except `x[:]`,
which is `vec(x)`. Gradients flow through (a gather).
"""
Base.getindex(x::PyObject, indices...) = tf.adcme.getindex(x, map(python_index, indices)...)

Base.setindex!(x::PyObject, value, indices...) = throw(ArgumentError(
    "tensors are values and cannot be assigned in place; write x = scatter_update(x, i..., value) " *
    "(or scatter_add, scatter_sub), as in ADCME"))

"""
    scatter_update(x, i..., value)

ADCME's `x[i...] = value` for tensors: a new tensor equal to `x` except at the 1-based indices
`i...` (one per dimension, as in [`getindex`](@ref)), where it holds `value`, broadcast to the
indexed shape by Julia's rules (`x[:, 1:2] .= v` fills both columns with the vector `v`; ADCME
requires the exact shape).
"""
scatter_update(x::PyObject, args...) = tf.adcme.scatter_update(x, scattered(args)...)

"""
    scatter_add(x, i..., value)

ADCME's `x[i...] += value`: a new tensor, `value` added at the indices (repeated indices add up).
"""
scatter_add(x::PyObject, args...) = tf.adcme.scatter_add(x, scattered(args)...)

"""
    scatter_sub(x, i..., value)

ADCME's `x[i...] -= value`: a new tensor, `value` subtracted at the indices.
"""
scatter_sub(x::PyObject, args...) = tf.adcme.scatter_sub(x, scattered(args)...)

"""The indices of a scatter (all but the last argument) as Python indices, the value as it is."""
function scattered(args)
    length(args) >= 2 || throw(ArgumentError("scatter: give the indices and the value"))
    return (map(python_index, args[1:end-1])..., args[end])
end

"""
    reshape(x, dims...)
    reshape(x, dims::Union{Tuple,Vector})

ADCME's two reshapes. With dimensions as arguments, Julia's: the elements in column-major order, so
`reshape(constant(A), m, n)` holds `reshape(A, m, n)`; one dimension may be `:`. With a tuple or a
vector, TF's row-major `tf.reshape`, as ADCME documents (`reshape(x, [10, 5])`).
"""
Base.reshape(x::PyObject, dims::Union{Integer,Colon}...) =
    tf.adcme.reshape(x, [d isa Colon ? -1 : Int(d) for d in dims])
Base.reshape(x::PyObject, dims::Union{Tuple,AbstractVector}) = tf.reshape(x, collect(Int, dims))

"""
    vec(x)

All elements of a tensor as a vector in Julia's column-major order (`vec(constant(A))` holds
`vec(A)`); a scalar becomes a 1-vector. (ADCME's `vec` fails beyond rank 2.)
"""
Base.vec(x::PyObject) = tf.adcme.vec(x)

"""
    rvec(x)

ADCME's `rvec`: the elements of `x` as a 1×n row, column-major.
"""
rvec(x::PyObject) = tf.adcme.rvec(x)

"""
    cvec(x)

ADCME's `cvec`: the elements of `x` as an n×1 column, column-major.
"""
cvec(x::PyObject) = tf.adcme.cvec(x)

"""
    x'
    adjoint(x)
    transpose(x)

A scalar as it is, a vector as a 1×n row matrix, a matrix transposed (the last two dimensions
beyond rank 2, as ADCME does); `adjoint` also conjugates complex values.
"""
Base.adjoint(x::PyObject) = tf.adcme.adjoint(x)
Base.transpose(x::PyObject) = tf.adcme.transpose(x)

"""
    [a; b], vcat(xs...)
    [a b], hcat(xs...)

Julia's concatenation of tensors: `vcat` along the first dimension (scalars become a vector), `hcat`
along the second (vectors become the columns of a matrix, scalars a 1×n row).
"""
Base.vcat(x::PyObject, xs::PyObject...) = concat([x, xs...])
function Base.hcat(x::PyObject, xs::PyObject...)
    xs = (x, xs...)
    r = rank(x)
    r == 0 && return tf.reshape(tf.stack(collect(xs)), [1, length(xs)])
    r == 1 && return tf.stack(collect(xs); axis=1)
    return tf.concat(collect(xs), 1)
end

"""
    concat(xs::Vector; dims=1)

The tensors `xs` joined along the 1-based dimension `dims` (`tf.concat`); scalars are stacked into a
vector, as ADCME does.
"""
function concat(xs::AbstractVector; dims::Integer=1)
    all(x -> rank(x) == 0, xs) && return tf.stack(collect(xs))
    return tf.concat(collect(xs), dims - 1)
end
