# Python exceptions as Julia exceptions.

"""
    PyError

A Python exception raised by adplace, thrown in Julia: `kind` is its Python class name
(`"InvalidArgumentError"`, `"ValueError"`, ...), `message` its message, `op` the name of the op at
fault (`nothing` when the error has none) and `exception` PythonCall's `PyException`, with the
Python traceback. Its printed form names the op:

    InvalidArgumentError: ... (op: MatMul_1)
"""
struct PyError <: Exception
    kind::String
    message::String
    op::Union{String,Nothing}
    exception::PyException
end

function PyError(e::PyException)
    parts = pygetattr(pygetattr(getfield(tf, :py), "adcme"), "error_parts")(e.v)
    kind, message, op = tojulia(parts)
    return PyError(kind, message, op, e)
end

function Base.showerror(io::IO, e::PyError)
    print(io, e.kind, ": ", e.message)
    e.op === nothing || occursin(e.op, e.message) || print(io, " (op: ", e.op, ")")
end

"""`f()`, a call into Python, with a Python exception thrown as a [`PyError`](@ref)."""
function python(f)
    try
        return f()
    catch err
        err isa PyException && throw(PyError(err))
        rethrow()
    end
end
