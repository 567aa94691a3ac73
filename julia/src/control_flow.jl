# Control flow, ADCME style: while_loop over Julia functions, TensorArray read and written from 1, if_else.

"""
    get_dtype(o)

The Julia type of the dtype of a tensor, variable or [`TensorArray`](@ref) (ADCME's `get_dtype`):
`Float64` for `tf.float64`, `Int32` for `tf.int32`, `Bool`, `String`, ...; `nothing` for a dtype
with no Julia type (`bfloat16`).
"""
function get_dtype(o::PyObject)
    name = o.dtype.base_dtype.name
    return name == "string" ? String : get(JULIA_ELTYPES, name, nothing)
end

"""
    while_loop(condition, body, loop_vars; parallel_iterations=10, kwargs...)

ADCME's `while_loop`: `tf.while_loop` with Julia functions. `condition(vars...)` returns a scalar
boolean tensor (`i <= n`); `body(vars...)` returns the loop variables' next values as a tuple
(`i + 1, ta`). The first loop variable is the loop index, an `Int32` tensor, as ADCME requires
(`constant(2, dtype=Int32)`). Returns the final values: a `Vector`, or the value itself for one
loop variable. Keywords go to `tf.while_loop` (`maximum_iterations`, `back_prop`,
`shape_invariants`, ...), and `gradients` flow back through the loop. ADCME's 1 + 2 + ... + 10:

    ta = write(TensorArray(10), 1, constant(1.0))
    condition(i, ta) = i <= 10
    body(i, ta) = (i + 1, write(ta, i, read(ta, i - 1) + 1))
    _, out = while_loop(condition, body, [constant(2, dtype=Int32), ta])
    run(sess, sum(stack(out)))   # 55.0
"""
function while_loop(condition::Union{PyObject,Function}, body::Function, loop_vars::Union{PyObject,AbstractVector};
        parallel_iterations::Integer=10, kwargs...)
    vars = loop_vars isa PyObject ? [loop_vars] : loop_vars
    isempty(vars) && throw(ArgumentError("while_loop: no loop variables"))
    index_type = vars[1] isa PyObject ? get_dtype(vars[1]) : typeof(vars[1])
    index_type === Int32 || throw(ArgumentError("while_loop: the loop index (the first loop variable) must be " *
        "Int32, got $index_type; start it with constant(1, dtype=Int32)"))
    return tf.while_loop(condition, body, vars; parallel_iterations=parallel_iterations, kwargs...)
end

"""What ADCME's `TensorArray` sets unless the caller does: Float64 elements, a fixed size, reads that keep them."""
const TENSOR_ARRAY_DEFAULTS = (dtype=Float64, dynamic_size=false, clear_after_read=false)

"""
    TensorArray(size=0; dtype=Float64, dynamic_size=false, clear_after_read=false, kwargs...)

ADCME's `TensorArray`: a `tf.TensorArray` of `size` elements for [`while_loop`](@ref). Unlike
`tf.TensorArray`'s, its elements are `Float64` and can be read more than once
(`clear_after_read=false`), as a time-stepping loop reads the previous step. Other keywords go to
`tf.TensorArray` (`element_shape`, `infer_shape`, `name`, ...); `dtype` is a Julia type or a `tf`
dtype. Index it from 1: `read(ta, i)`, `write(ta, i, value)`; `stack(ta)` is one tensor of all.
"""
function TensorArray(size_::Integer=0; kwargs...)
    return tf.TensorArray(; merge(TENSOR_ARRAY_DEFAULTS, values(kwargs), (size=size_,))...)
end

"""
    read(ta, i)

Element `i` of the [`TensorArray`](@ref) `ta`, counted from 1 (ADCME's `read`: `ta.read(i - 1)`);
`i` is an `Integer` or an `Int32` tensor such as a loop index.
"""
Base.read(ta::PyObject, i::Union{PyObject,Integer}) = ta.read(i - 1)

"""
    write(ta, i, value)

The [`TensorArray`](@ref) `ta` with `value` as element `i`, counted from 1 (ADCME's `write`:
`ta.write(i - 1, value)`); use the returned TensorArray from then on. A Julia number or array is
written as a constant of `ta`'s dtype.
"""
Base.write(ta::PyObject, i::Union{PyObject,Integer}, value::PyObject) = ta.write(i - 1, value)
Base.write(ta::PyObject, i::Union{PyObject,Integer}, value::JuliaValue) =
    write(ta, i, constant(value; dtype=ta.dtype))

"""
    stack(ta)

All elements of the [`TensorArray`](@ref) `ta` as one tensor whose first dimension indexes them
(ADCME's `stack`: `ta.stack()`).
"""
Base.stack(ta::PyObject) = ta.stack()

"""
    stack(xs::Vector{PyObject}; dims=1)

The tensors `xs` (of one shape) stacked along a new 1-based dimension `dims`: `tf.stack` (ADCME's
`stack` of a vector of tensors).
"""
Base.stack(xs::AbstractVector{PyObject}; dims::Integer=1) = tf.stack(collect(xs); axis=dims - 1)

"""
    set_shape(o, shape)
    set_shape(o, dims...)

ADCME's `set_shape`: give the tensor `o` the static shape `shape` (a tuple or vector, `nothing` for
an unknown dimension) and return `o`, e.g. `set_shape(stack(ta), (m + 1, n))`. A shape that
contradicts what is known of `o` is an error.
"""
function set_shape(o::PyObject, shape::Union{Tuple,AbstractVector})
    o.set_shape(shape)
    return o
end
set_shape(o::PyObject, dims::Union{Integer,Nothing}...) = set_shape(o, dims)

"""
    if_else(condition, fn1, fn2, args...; kwargs...)

ADCME's `if_else`. For a scalar boolean `condition` (a tensor or a Julia `Bool`), `tf.cond`:
`fn1()` if it holds, else `fn2()`, where a branch is a Julia function of no arguments (only the
taken one runs) or a value (a tensor or Julia number, which the branch returns). For a boolean
array or tensor of higher rank, the elementwise choice `tf.where_v2(condition, fn1, fn2)` between
two values. Other arguments go to `tf.cond` (`strict`, `name`). `tf.cond(pred, () -> a, () -> b)`
and `tf.case([pred => f, ...]; default=g)` take Julia functions too.
"""
function if_else(condition::Union{PyObject,AbstractArray{Bool},Bool}, fn1, fn2, args...; kwargs...)
    condition isa PyObject || (condition = constant(condition))
    if get_dtype(condition) === Bool && rank(condition) == 0
        return tf.cond(condition, branch_function(fn1), branch_function(fn2), args...; kwargs...)
    end
    return tf.where_v2(condition, constant(fn1), constant(fn2))
end

"""A branch of `if_else`: a function as it is, a value as a function returning it (Julia numbers as constants)."""
branch_function(f::Function) = f
branch_function(value) = () -> constant(value)

