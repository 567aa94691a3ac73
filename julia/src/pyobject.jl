# PyObject: Python objects that answer with Julia values, and the conversions both ways.

"""
    PyObject

A Python object as ADCME users knew it from PyCall: attribute access, calls and their results come
back as Julia values where one exists (`str` → `String`, `bool` → `Bool`, `int` → `Int`, `float`
→ `Float64`, `None` → `nothing`, `list` → `Vector`, `tuple` → `Tuple`, `dict` → `Dict`, NumPy
arrays and scalars → `Array`s and numbers), and as `PyObject` otherwise. Julia values passed to
Python are converted the other way; Julia arrays become NumPy arrays with the same indices (a copy).
A Python exception raised by a call or an attribute is thrown as a [`PyError`](@ref).

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
`tf.NodeDef`, `tf.GraphKeys.UPDATE_OPS`, `tf.train.AdamOptimizer`, ... (`tf.adcme` holds the
Python half of ADCME's conventions that this package calls).
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
topy(x::AbstractChar) = Py(string(x))
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

Base.getproperty(x::PyObject, k::Symbol) = tojulia(python(() -> pygetattr(getfield(x, :py), string(k))))
Base.setproperty!(x::PyObject, k::Symbol, v) = python(() -> pysetattr(getfield(x, :py), string(k), topy(v)))
Base.hasproperty(x::PyObject, k::Symbol) = pyhasattr(getfield(x, :py), string(k))
Base.propertynames(x::PyObject, private::Bool=false) = propertynames(getfield(x, :py), private)
Base.show(io::IO, x::PyObject) = print(io, "PyObject ", pyrepr(String, getfield(x, :py)))
Base.:(==)(x::PyObject, y::PyObject) = pyeq(Bool, getfield(x, :py), getfield(y, :py))
Base.hash(x::PyObject, h::UInt) = hash(getfield(x, :py), h)

function (f::PyObject)(args...; kwargs...)
    pyargs = map(topy, args)
    pykwargs = [k => topy(v) for (k, v) in kwargs]
    return tojulia(python(() -> getfield(f, :py)(pyargs...; pykwargs...)))
end

"""
    pybuiltin(name)

The Python builtin `name` as a [`PyObject`](@ref), so `pybuiltin("isinstance")(op, tf.NodeDef)`
returns a Julia `Bool`, as it did with PyCall.
"""
pybuiltin(name::Union{AbstractString,Symbol}) = PyObject(pygetattr(pyimport("builtins"), string(name)))
