# Building graphs and running them, ADCME style: tensors from Julia values, variables, placeholders,
# sessions, collections.

"""
    dtype(T)

The adplace dtype of the Julia type `T` (ADCME's table): Float64 → `tf.float64`, Float32, Int64,
Int32, Bool, ComplexF64 → `tf.complex128`, ComplexF32, String and Char → `tf.string`.
"""
dtype(::Type{Float64}) = tf.float64
dtype(::Type{Float32}) = tf.float32
dtype(::Type{Int64}) = tf.int64
dtype(::Type{Int32}) = tf.int32
dtype(::Type{Bool}) = tf.bool
dtype(::Type{ComplexF64}) = tf.complex128
dtype(::Type{ComplexF32}) = tf.complex64
dtype(::Type{<:Union{String,Char}}) = tf.string
dtype(T::Type) = throw(ArgumentError(
    "no adplace dtype for the Julia type $T; use Float64, Float32, Int64, Int32, Bool, ComplexF64, ComplexF32, String or Char"))
dtype(d::PyObject) = d

"""The dtype a Julia value becomes: Julia literals are Float64, so ADCME graphs default to float64."""
dtype_of(x) = dtype(typeof(x))
dtype_of(x::AbstractString) = dtype(String)
dtype_of(x::AbstractArray) = dtype(eltype(x))

"""`kwargs` with the dtype of the Julia `value` added, unless one is given or `value` is a tensor."""
with_dtype(value, kwargs) =
    value isa PyObject || haskey(kwargs, :dtype) ? kwargs : (; dtype=dtype_of(value), kwargs...)

"""
    Variable(initial_value; trainable=true, name=nothing, kwargs...)

`tf.Variable`, with the dtype of a Julia initial value (`Variable(1.0)` is float64). Keywords go to
`tf.Variable` (`name`, `trainable`, `dtype` as a Julia type or a `tf` dtype).
"""
Variable(initial_value; kwargs...) = tf.Variable(initial_value; with_dtype(initial_value, kwargs)...)

"""
    constant(value; dtype, name)

`tf.constant` with the dtype of a Julia value (any type of ADCME's table, a `Char` as a one-letter
string); Julia arrays keep their indices (`A[i, j]` is the tensor's element `[i-1, j-1]`). A
`PyObject` is returned as it is.
"""
constant(value::PyObject; kwargs...) = value
constant(value::AbstractChar; kwargs...) = constant(string(value); kwargs...)
constant(value; kwargs...) = tf.constant(value; with_dtype(value, kwargs)...)

"""
    convert_to_tensor(x; dtype=missing)
    convert_to_tensor(xs::Vector, dtypes::Vector)

ADCME's `convert_to_tensor`: a tensor as it is (cast when `dtype` differs), a Julia value as a
[`constant`](@ref) (of `dtype` when given); `nothing` and `missing` pass through. The second form
converts each value to its dtype.
"""
function convert_to_tensor(x; dtype=missing)
    (x === nothing || x === missing) && return x
    if x isa PyObject
        return dtype === missing || get_dtype(x) === dtype ? x : tf.cast(x, dtype)
    end
    return dtype === missing ? constant(x) : constant(x; dtype=dtype)
end
convert_to_tensor(xs::AbstractVector, dtypes::AbstractVector) = [convert_to_tensor(x; dtype=d) for (x, d) in zip(xs, dtypes)]

"""
    placeholder(T; shape=[], name=nothing)
    placeholder(value; name=nothing)

`tf.placeholder` of a Julia type or `tf` dtype. As in ADCME, the default shape is `[]`, a scalar:
write `placeholder(Float64, shape=[nothing, 10])` for a batch of rows (`nothing` is an unknown
dimension) and `shape=nothing` for an unknown rank. With a Julia value or a tensor, a placeholder
that takes it as its default (`tf.placeholder_with_default`), of its type and size.
"""
placeholder(dtype::Union{Type,PyObject}; shape=Any[], kwargs...) = tf.placeholder(dtype; shape=shape, kwargs...)
function placeholder(value::Union{Number,AbstractArray}; kwargs...)
    default = convert_to_tensor(value)
    return tf.placeholder_with_default(default; shape=collect(Any, size(default)), kwargs...)
end

"""How many unnamed variables `get_variable` has made in this Julia session."""
const UNNAMED_VARIABLES = Threads.Atomic{Int}(0)

"""A fresh name for an unnamed variable of `get_variable`, `unnamed_<n>` (ADCME draws `unnamed_<random letters>`):
fresh in every scope, since `n` never repeats."""
unnamed_variable() = "unnamed_$(Threads.atomic_add!(UNNAMED_VARIABLES, 1) + 1)"

"""
    variable_scope(f, name_or_scope; reuse=tf.AUTO_REUSE, kwargs...)

Run `f()` inside `tf.variable_scope(name_or_scope)`, reusing its variables by default, as ADCME
does; returns `f()`.
"""
variable_scope(f, name_or_scope; reuse=tf.AUTO_REUSE, kwargs...) =
    @pywith tf.variable_scope(name_or_scope; reuse=reuse, kwargs...) begin
        f()
    end

"""
    get_variable(name::String; kwargs...)
    get_variable(value; name=missing, scope="")
    get_variable(T::Type; shape, name=missing, scope="")

ADCME's `get_variable`: `tf.get_variable(name; kwargs...)`; a variable initialized to a Julia value
or tensor; or one of type `T` and `shape` with the default initializer. In the last two, the
variable `name` in `scope` is reused when it exists.
"""
get_variable(name::AbstractString; kwargs...) = tf.get_variable(name; kwargs...)
function get_variable(value::Union{PyObject,Bool,Number,AbstractArray{<:Number}};
        name::Union{AbstractString,Missing}=missing, scope::AbstractString="")
    initial = constant(value)
    variable_name = name === missing ? unnamed_variable() : name
    return variable_scope(scope) do
        tf.get_variable(variable_name; initializer=initial, dtype=initial.dtype.base_dtype)
    end
end
function get_variable(T::Type; shape, name::Union{AbstractString,Missing}=missing, scope::AbstractString="")
    variable_name = name === missing ? unnamed_variable() : name
    return variable_scope(scope) do
        tf.get_variable(variable_name; shape=collect(shape), dtype=dtype(T))
    end
end

"""Keywords of ADCME's `Session` and the `ConfigProto` fields they set."""
const SESSION_KEYWORDS = (intra=:intra_op_parallelism_threads, inter=:inter_op_parallelism_threads,
    soft=:allow_soft_placement)

"""
    Session(; intra, inter, soft, CPU, GPU, kwargs...)
    Session(; config=tf.ConfigProto(...))

`tf.Session` with ADCME's keywords: `intra`/`inter` thread counts, `soft=true` for soft placement,
`CPU=n`/`GPU=m` device counts; other keywords are `ConfigProto` fields (`log_device_placement=true`).
With `config`, everything goes to `tf.Session` unchanged.
"""
function Session(args...; kwargs...)
    haskey(kwargs, :config) && return tf.Session(args...; kwargs...)
    fields = Dict{Symbol,Any}()
    counts = Dict{String,Int}()
    for (k, v) in kwargs
        if k in (:CPU, :GPU)
            counts[string(k)] = v
        else
            fields[get(SESSION_KEYWORDS, k, k)] = v
        end
    end
    isempty(counts) || (fields[:device_count] = counts)
    return tf.Session(args...; config=tf.ConfigProto(; fields...))
end

"""
    init(sess)

Run the initializers of all global variables: `run(sess, tf.global_variables_initializer())`.
"""
init(sess::PyObject) = run(sess, tf.global_variables_initializer())

"""Feeds given as pairs, as a Python dict (`nothing` when there are none)."""
python_feeds(feeds) = isempty(feeds) ? nothing : pydict([topy(k) => topy(v) for (k, v) in feeds])

"""
    run(sess, fetches, feeds::Pair...; kwargs...)

`sess.run(fetches, feed_dict)` with feeds written as pairs, `run(sess, y, x => [1.0, 2.0])`. Returns
Julia values: arrays (same indices as the tensor), numbers for scalars, `nothing` for ops.
"""
Base.run(sess::PyObject, fetches, feeds::Pair...; kwargs...) =
    sess.run(fetches; feed_dict=python_feeds(feeds), kwargs...)

"""
    run_profile(sess, fetches, feeds::Pair...; kwargs...)

`run` once with a full trace (ADCME's `run_profile`) and keep its step stats for [`save_profile`](@ref).
"""
run_profile(sess::PyObject, fetches, feeds::Pair...; kwargs...) =
    tf.run_profile(sess, fetches; feed_dict=python_feeds(feeds), kwargs...)

"""
    save_profile(filename="default_timeline.json"; kwargs...)

Write the latest [`run_profile`](@ref)'s timeline as Chrome trace JSON (open it in chrome://tracing
or https://ui.perfetto.dev). Keywords go to `Timeline.generate_chrome_trace_format`
(`show_dataflow`, `show_memory`).
"""
function save_profile(filename::AbstractString="default_timeline.json"; kwargs...)
    path = tf.save_profile(filename; kwargs...)
    @info "Timeline information saved in $path\n- Open Chrome and navigate to chrome://tracing (or https://ui.perfetto.dev)\n- Load the timeline file"
    return path
end

"""The collection key of batch normalisation's update ops (`tf.GraphKeys.UPDATE_OPS`), as ADCME exports it."""
const UPDATE_OPS = "update_ops"
"""The collection key of trainable variables (`tf.GraphKeys.TRAINABLE_VARIABLES`)."""
const TRAINABLE_VARIABLES = "trainable_variables"
"""The collection key of all global variables (`tf.GraphKeys.GLOBAL_VARIABLES`)."""
const GLOBAL_VARIABLES = "variables"

"""
    get_collection(name=missing)

ADCME's `get_collection`: the trainable variables when `name` is missing; the collection for
`UPDATE_OPS`, `TRAINABLE_VARIABLES` and `GLOBAL_VARIABLES`; otherwise the trainable variables whose
names match the regular expression `name`.
"""
function get_collection(name::Union{AbstractString,Missing}=missing)
    name === missing && return tf.get_collection(TRAINABLE_VARIABLES)
    name in (UPDATE_OPS, TRAINABLE_VARIABLES, GLOBAL_VARIABLES) && return tf.get_collection(name)
    pattern = Regex(name)
    return unique(v for v in tf.get_collection(TRAINABLE_VARIABLES) if occursin(pattern, v.name))
end

"""
    reset_default_graph()

Start a new, empty default graph (`tf.reset_default_graph()`).
"""
reset_default_graph() = tf.reset_default_graph()

"""
    assign(v, value)
    assign(vs::Vector, values::Vector)

The op that sets the variable `v` to `value` when run (`tf.assign`); for vectors, one op per pair
(ADCME's `group_assign`).
"""
assign(v::PyObject, value; kwargs...) = tf.assign(v, value; kwargs...)
assign(vs::AbstractVector, values::AbstractVector; kwargs...) = [tf.assign(v, x; kwargs...) for (v, x) in zip(vs, values)]

"""
    group(ops...)

One op that runs all of `ops` (`tf.group`).
"""
group(ops...; kwargs...) = tf.group(ops...; kwargs...)

"""
    copy(x)

A tensor with the value `x` has when it runs (`tf.identity`): for a variable, its current value.
"""
Base.copy(x::PyObject) = tf.identity(x)

"""
    bind(x, ops...)

`x` (as a new identity tensor) made to run after `ops`: ADCME's way to run ops nothing depends on,
as `x = bind(x, tf.print(x))`.
"""
Base.bind(x::PyObject, ops...) = control_dependencies(() -> tf.identity(x), collect(ops))

"""
    control_dependencies(f, ops)

Run `f()` inside `tf.control_dependencies(ops)`: ops created in `f` run after `ops` (one op or
tensor, or a vector or tuple of them). Returns `f()`.
"""
function control_dependencies(f, ops)
    deps = ops isa Union{AbstractVector,Tuple} ? collect(ops) : [ops]
    return @pywith tf.control_dependencies(deps) begin
        f()
    end
end
