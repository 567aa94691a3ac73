"""
    ADPlace

Device placement for dataflow graphs from Julia, as ADCME.jl users wrote it: `@cpu`, `@gpu`,
`@pywith`, `assign_to_device` and `gradients(ys, xs; colocate=true)` over the Python package
`adplace` (loaded through PythonCall), with ADCME's control flow: `while_loop` over Julia functions,
`TensorArray` with 1-based `read`/`write` and `stack`, and `if_else`. Nothing is computed in Julia:
every function here is a thin call into Python, and values cross the boundary as ADCME users expect
(see [`PyObject`](@ref)).
"""
module ADPlace

using PythonCall: PythonCall, Py, PyArray, PyException, ispy, pybuiltins, pyconvert, pydict, pyeq,
    pyfunc, pygetattr, pyhasattr, pyimport, pyis, pyisinstance, pylist, pyrepr, pysetattr, pytruth,
    pytuple, pytype

export PyObject, tf, @pywith, @cpu, @gpu, pybuiltin, Variable, constant, placeholder, gradients,
    Session, init, run_profile, save_profile, get_collection, matmul, reset_default_graph,
    control_dependencies, UPDATE_OPS, TRAINABLE_VARIABLES, GLOBAL_VARIABLES, while_loop, TensorArray,
    if_else, set_shape, get_dtype

# --- PyObject: Python objects that answer with Julia values ------------------------------------

"""
    PyObject

A Python object as ADCME users knew it from PyCall: attribute access, calls and their results come
back as Julia values where one exists (`str` → `String`, `bool` → `Bool`, `int` → `Int`, `float`
→ `Float64`, `None` → `nothing`, `list` → `Vector`, `tuple` → `Tuple`, `dict` → `Dict`, NumPy
arrays and scalars → `Array`s and numbers), and as `PyObject` otherwise. Julia values passed to
Python are converted the other way; Julia arrays become NumPy arrays with the same indices (a copy).

A Julia function passed to Python (a device function) receives its arguments converted the same
way, so `op.node_def.op` is a Julia `String` and `in(op.node_def.op, PS_OPS)` works. PythonCall's
own `Py` would give Python `str`s, which never `==` a Julia `String`.
"""
struct PyObject
    py::Py
    PyObject(py::Py) = new(py)
end

PythonCall.ispy(::PyObject) = true
PythonCall.Py(x::PyObject) = getfield(x, :py)

"""
    tf

The Python module `adplace` (TensorFlow 1.x's API), as a [`PyObject`](@ref): `tf.device`,
`tf.NodeDef`, `tf.GraphKeys.UPDATE_OPS`, `tf.train.AdamOptimizer`, ...
"""
const tf = PyObject(PythonCall.pynew())
const numpy = PythonCall.pynew()

function __init__()
    PythonCall.pycopy!(numpy, pyimport("numpy"))
    PythonCall.pycopy!(getfield(tf, :py), pyimport("adplace"))
end

"""NumPy dtype names and the Julia element types their arrays convert to."""
const JULIA_ELTYPES = Dict(
    "bool" => Bool, "int8" => Int8, "int16" => Int16, "int32" => Int32, "int64" => Int64,
    "uint8" => UInt8, "uint16" => UInt16, "uint32" => UInt32, "uint64" => UInt64,
    "float16" => Float16, "float32" => Float32, "float64" => Float64,
    "complex64" => ComplexF32, "complex128" => ComplexF64,
)

"""Element types whose Julia arrays NumPy reads directly (PythonCall's array interface)."""
const NumPyEltype = Union{Bool,Int8,Int16,Int32,Int64,UInt8,UInt16,UInt32,UInt64,Float16,Float32,
    Float64,ComplexF32,ComplexF64}

"""
    tojulia(x::Py)

A Python value as a Julia value (the rules of [`PyObject`](@ref)); objects without one are wrapped.
"""
function tojulia(x::Py)
    pyis(x, pybuiltins.None) && return nothing
    pyisinstance(x, pybuiltins.bool) && return pytruth(x)
    pyisinstance(x, pybuiltins.str) && return pyconvert(String, x)
    pyisinstance(x, pybuiltins.int) && return pyconvert(Int, x)
    pyisinstance(x, pybuiltins.float) && return pyconvert(Float64, x)
    pyisinstance(x, pybuiltins.complex) && return pyconvert(ComplexF64, x)
    pyisinstance(x, pybuiltins.list) && return Any[tojulia(v) for v in x]
    pyisinstance(x, pybuiltins.tuple) && return Tuple(tojulia(v) for v in x)
    pyisinstance(x, pybuiltins.dict) && return Dict{Any,Any}(tojulia(k) => tojulia(x[k]) for k in x)
    if pyisinstance(x, numpy.ndarray) || pyisinstance(x, numpy.generic)
        return array_tojulia(x)
    end
    return PyObject(x)
end

"""A NumPy array or scalar as a Julia `Array` (a copy, same indices) or number."""
function array_tojulia(x::Py)
    a = numpy.asarray(x)
    T = get(JULIA_ELTYPES, pyconvert(String, a.dtype.name), nothing)
    T === nothing && return tojulia(a.tolist())
    pyconvert(Int, a.ndim) == 0 && return convert(T, tojulia(a.item()))
    return Array(PyArray(numpy.ascontiguousarray(a)))
end

"""
    topy(x)

A Julia value as a Python object: the inverse of [`tojulia`](@ref). Numeric arrays become NumPy
arrays (copied, same indices), Julia types become adplace dtypes, functions become Python callables
that convert their arguments with `tojulia`.
"""
topy(x::PyObject) = getfield(x, :py)
topy(x::Py) = x
topy(x::Nothing) = Py(x)
topy(x::Union{Integer,Float16,Float32,Float64}) = Py(x)   # a subtype of Real: no ambiguity with the next
topy(x::Real) = Py(Float64(x))                             # π, rationals, BigFloat
topy(x::Union{ComplexF32,ComplexF64}) = Py(x)
topy(x::Union{AbstractString,Symbol}) = Py(String(x))
topy(x::AbstractArray{<:NumPyEltype}) = numpy.array(Py(Array(x)); order="C")
topy(x::AbstractArray) = pylist([topy(v) for v in x])
topy(x::Tuple) = pytuple([topy(v) for v in x])
topy(x::AbstractDict) = pydict([topy(k) => topy(v) for (k, v) in x])
topy(x::Pair) = pytuple([topy(x.first), topy(x.second)])
topy(T::Type) = topy(dtype(T))
topy(f::Function) = pyfunc(julia_callback(f); name=string(nameof(f)))
topy(x) = Py(x)

"""`f` as Python calls it: arguments through `tojulia`, the result through `topy`."""
julia_callback(f) = (args...; kwargs...) ->
    topy(f(map(tojulia, args)...; (k => tojulia(v) for (k, v) in kwargs)...))

Base.getproperty(x::PyObject, k::Symbol) = tojulia(pygetattr(getfield(x, :py), string(k)))
Base.setproperty!(x::PyObject, k::Symbol, v) = pysetattr(getfield(x, :py), string(k), topy(v))
Base.hasproperty(x::PyObject, k::Symbol) = pyhasattr(getfield(x, :py), string(k))
Base.propertynames(x::PyObject, private::Bool=false) = propertynames(getfield(x, :py), private)
Base.show(io::IO, x::PyObject) = print(io, "PyObject ", pyrepr(String, getfield(x, :py)))
Base.:(==)(x::PyObject, y::PyObject) = pyeq(Bool, getfield(x, :py), getfield(y, :py))
Base.hash(x::PyObject, h::UInt) = hash(getfield(x, :py), h)

function (f::PyObject)(args...; kwargs...)
    result = getfield(f, :py)(map(topy, args)...; (k => topy(v) for (k, v) in kwargs)...)
    return tojulia(result)
end

"""
    pybuiltin(name)

The Python builtin `name` as a [`PyObject`](@ref), so `pybuiltin("isinstance")(op, tf.NodeDef)`
returns a Julia `Bool`, as it did with PyCall.
"""
pybuiltin(name::Union{AbstractString,Symbol}) = PyObject(pygetattr(pyimport("builtins"), string(name)))

# --- @pywith, @cpu, @gpu -----------------------------------------------------------------------

"""
    @pywith ctx begin ... end
    @pywith ctx as x begin ... end

Run the block inside the Python context manager `ctx` (Python's `with ctx as x:`), as PyCall's
`@pywith` did. The block stays in the caller's scope (it is not a closure): it runs inside a `try`,
so, as with ADCME, write `global a = ...` to keep a binding made at top level. `__exit__` runs also
when the block throws; the error then reaches the caller unchanged unless `__exit__` suppresses a
Python exception. The value is `nothing`.
"""
macro pywith(ctx, args...)
    text = string(ctx)
    length(args) == 1 && return with_expansion(esc(ctx), nothing, args[1], text)
    length(args) == 3 && args[1] === :as && return with_expansion(esc(ctx), args[2], args[3], text)
    throw(ArgumentError("usage: @pywith EXPR [as VAR] BLOCK"))
end

"""The code of `@pywith`: `ctx` is already escaped; `var` and `block` are the user's."""
function with_expansion(ctx, var, block, text::String)
    bind = var === nothing ? nothing : :($(esc(var)) = tojulia(value))
    return quote
        manager = context_manager($ctx, $text)
        exit_method = pytype(manager).__exit__
        value = pytype(manager).__enter__(manager)
        exited = Ref(false)
        try
            $bind
            $(esc(block))
        catch err
            exited[] = true
            exit_on_error(exit_method, manager, err) || rethrow()
        finally
            exited[] || exit_method(manager, pybuiltins.None, pybuiltins.None, pybuiltins.None)
        end
        nothing
    end
end

function context_manager(x, text::String)
    ispy(x) || throw(ArgumentError("@pywith: `$text` should be a Python context manager, got a $(typeof(x))"))
    return Py(x)
end

"""Call `__exit__` for an error of the block; true when Python suppressed it."""
function exit_on_error(exit_method::Py, manager::Py, err)
    err isa PyException && return pytruth(exit_method(manager, err.t, err.v, err.b))
    exit_method(manager, pybuiltins.None, pybuiltins.None, pybuiltins.None)
    return false
end

"""`tf.device("/kind:id")`, the scope of `@cpu` and `@gpu`."""
device_scope(kind::String, id) = tf.device("/$kind:$id")

"""The code of `@cpu`/`@gpu`: `@pywith device_scope(kind, id)`, with `id` evaluated in the caller's scope."""
device_block(kind::String, id, block) =
    with_expansion(:(device_scope($kind, $(esc(id)))), nothing, block, "tf.device(\"/$kind:$id\")")

"""
    @cpu [id] begin ... end

Build the ops of the block on `/cpu:id` (id 0 when missing): `@pywith tf.device("/cpu:id")`.
Unlike ADCME, `id` is evaluated when the block runs, so `@cpu i begin ... end` works in a loop.
"""
macro cpu(id, block)
    device_block("cpu", id, block)
end
macro cpu(block)
    device_block("cpu", 0, block)
end

"""
    @gpu [id] begin ... end

Build the ops of the block on `/gpu:id` (id 0 when missing): `@pywith tf.device("/gpu:id")`.
Unlike ADCME, `id` is evaluated when the block runs, so `@gpu i begin ... end` builds towers in a
loop. Without a GPU, adplace's virtual GPUs (`tf.config.set_virtual_gpus(n)`) take the place.
"""
macro gpu(id, block)
    device_block("gpu", id, block)
end
macro gpu(block)
    device_block("gpu", 0, block)
end

# --- the device function of ADCME's documentation -----------------------------------------------

"""Op types of variables, which `assign_to_device` keeps on the parameter device."""
const PS_OPS = ["Variable", "VariableV2", "AutoReloadVariable"]

"""
    ADPlace.assign_to_device(device, ps_device="/device:CPU:0")

A device function for `tf.device`: variables (op types in `ADPlace.PS_OPS`) on `ps_device`, every
other op on `device`. It is ADCME's documented closure, word for word:

    @pywith tf.device(ADPlace.assign_to_device("/device:GPU:0")) begin
        global a = Variable(1.0)   # a.device == "/device:CPU:0"
        global b = sin(a)          # b.device == "/device:GPU:0"
    end
"""
function assign_to_device(device::AbstractString, ps_device::AbstractString="/device:CPU:0")
    function _assign(op)
        node_def = pybuiltin("isinstance")(op, tf.NodeDef) ? op : op.node_def
        return node_def.op in PS_OPS ? ps_device : device
    end
    return _assign
end

# --- graph building, ADCME style -----------------------------------------------------------------

"""
    dtype(T)

The adplace dtype of the Julia type `T` (ADCME's table): Float64 → `tf.float64`, Float32, Int64,
Int32, Bool, ComplexF64 → `tf.complex128`, ComplexF32, String.
"""
dtype(::Type{Float64}) = tf.float64
dtype(::Type{Float32}) = tf.float32
dtype(::Type{Int64}) = tf.int64
dtype(::Type{Int32}) = tf.int32
dtype(::Type{Bool}) = tf.bool
dtype(::Type{ComplexF64}) = tf.complex128
dtype(::Type{ComplexF32}) = tf.complex64
dtype(::Type{String}) = tf.string
dtype(T::Type) = throw(ArgumentError(
    "no adplace dtype for the Julia type $T; use Float64, Float32, Int64, Int32, Bool, ComplexF64, ComplexF32 or String"))

"""The dtype a Julia value becomes: Julia literals are Float64, so ADCME graphs default to float64."""
dtype_of(x) = dtype(typeof(x))
dtype_of(x::AbstractString) = dtype(String)
dtype_of(x::AbstractArray) = dtype(eltype(x))

"""`kwargs` with the dtype of the Julia `value` added, unless one is given or `value` is a tensor."""
with_dtype(value, kwargs) =
    value isa PyObject || haskey(kwargs, :dtype) ? kwargs : (; dtype=dtype_of(value), kwargs...)

"""
    Variable(initial_value; kwargs...)

`tf.Variable`, with the dtype of a Julia initial value (`Variable(1.0)` is float64). Keywords go to
`tf.Variable` (`name`, `trainable`, `dtype` as a Julia type or a `tf` dtype).
"""
Variable(initial_value; kwargs...) = tf.Variable(initial_value; with_dtype(initial_value, kwargs)...)

"""
    constant(value; kwargs...)

`tf.constant` with the dtype of a Julia value; Julia arrays keep their indices (`A[i, j]` is the
tensor's element `[i-1, j-1]`). A `PyObject` is returned as it is.
"""
constant(value::PyObject; kwargs...) = value
constant(value; kwargs...) = tf.constant(value; with_dtype(value, kwargs)...)

"""
    placeholder(dtype; shape=nothing, name=nothing)

`tf.placeholder` of a Julia type or `tf` dtype, e.g. `placeholder(Float64, shape=[nothing, 10])`
(`nothing` is an unknown dimension).
"""
placeholder(dtype::Union{Type,PyObject}; kwargs...) = tf.placeholder(dtype; kwargs...)

"""
    gradients(ys, xs; colocate=false, kwargs...)

`tf.gradients(ys, xs)`: one gradient for one `x`, a `Vector` for a vector of `xs`; `nothing` where
`ys` does not depend on `x`. `colocate=true` (TF's `colocate_gradients_with_ops`) builds each
gradient op on the device of its forward op. Other keywords (`grad_ys`, `stop_gradients`, ...) go to
`tf.gradients`.
"""
function gradients(ys, xs; colocate::Bool=false, kwargs...)
    grads = tf.gradients(ys, xs; colocate_gradients_with_ops=colocate, kwargs...)
    return xs isa AbstractVector ? grads : grads[1]
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
    control_dependencies(f, ops)

Run `f()` inside `tf.control_dependencies(ops)`: ops created in `f` run after `ops`. Returns `f()`.
"""
function control_dependencies(f, ops)
    ops isa AbstractVector || (ops = [ops])
    return PythonCall.pywith(_ -> f(), tf.control_dependencies(ops))
end

# --- math on tensors and Julia values --------------------------------------------------------------

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

"""ADCME's `*`: matrix × matrix and matrix × vector products, elementwise otherwise."""
function times(x::PyObject, y::PyObject)
    rx, ry = rank(x), rank(y)
    (rx === nothing || ry === nothing) &&
        throw(ArgumentError("*: the ranks of $x and $y must be known; use matmul or .* instead"))
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
for (op, f) in ((:+, add), (:-, subtract), (:*, multiply), (:/, divide), (:^, power))
    @eval begin
        Base.Broadcast.broadcasted(::typeof($op), x::PyObject, y::PyObject) = $f(x, y)
        Base.Broadcast.broadcasted(::typeof($op), x::PyObject, y::JuliaValue) = $f(x, y)
        Base.Broadcast.broadcasted(::typeof($op), x::JuliaValue, y::PyObject) = $f(x, y)
    end
end

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
Base.Broadcast.broadcasted(::typeof(Base.literal_pow), ::typeof(^), x::PyObject, ::Val{p}) where {p} =
    power(x, p)

Base.broadcastable(x::PyObject) = Ref(x)          # f.(x) calls f(x): the tensor is one value to broadcast
Base.:-(x::PyObject) = tf.negative(x)
Base.sin(x::PyObject) = tf.sin(x)
Base.cos(x::PyObject) = tf.cos(x)
Base.exp(x::PyObject) = tf.exp(x)
Base.log(x::PyObject) = tf.log(x)
Base.sqrt(x::PyObject) = tf.sqrt(x)

"""
    sum(x::PyObject; dims=nothing)

`tf.reduce_sum` over all elements, or over the 1-based dimension(s) `dims`.
"""
Base.sum(x::PyObject; dims=nothing) =
    dims === nothing ? tf.reduce_sum(x) : tf.reduce_sum(x; axis=python_axes(dims))

python_axes(d::Integer) = d - 1
python_axes(ds) = pylist([d - 1 for d in ds])

# --- control flow, ADCME style: while_loop, TensorArray, if_else ----------------------------------

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

end
