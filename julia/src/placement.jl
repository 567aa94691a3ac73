# Device placement as ADCME wrote it: @pywith, @cpu, @gpu and the assign_to_device closure.

"""
    @pywith ctx begin ... end
    @pywith ctx as x begin ... end

Run the block inside the Python context manager `ctx` (Python's `with ctx as x:`), as PyCall's
`@pywith` did, and return the block's value. The block stays in the caller's scope (it is not a
closure): it runs inside a `try`, so, as with ADCME, write `global a = ...` to keep a binding made at
top level. `__exit__` runs also when the block throws; the error then reaches the caller unchanged
unless `__exit__` suppresses a Python exception.
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
        result = Ref{Any}(nothing)
        try
            $bind
            result[] = $(esc(block))
        catch err
            exited[] = true
            exit_on_error(exit_method, manager, err) || rethrow()
        finally
            exited[] || exit_method(manager, pybuiltins.None, pybuiltins.None, pybuiltins.None)
        end
        result[]
    end
end

function context_manager(x, text::String)
    ispy(x) || throw(ArgumentError("@pywith: `$text` should be a Python context manager, got a $(typeof(x))"))
    return Py(x)
end

"""Call `__exit__` for an error of the block; true when Python suppressed it."""
function exit_on_error(exit_method::Py, manager::Py, err)
    err isa PyError && (err = err.exception)
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

Build the ops of the block on `/cpu:id` (id 0 when missing): `@pywith tf.device("/cpu:id")`; the
value is the block's. Unlike ADCME, `id` is evaluated when the block runs, so `@cpu i begin ... end`
works in a loop.
"""
macro cpu(id, block)
    device_block("cpu", id, block)
end
macro cpu(block)
    device_block("cpu", 0, block)
end

"""
    @gpu [id] begin ... end

Build the ops of the block on `/gpu:id` (id 0 when missing): `@pywith tf.device("/gpu:id")`; the
value is the block's. Unlike ADCME, `id` is evaluated when the block runs, so `@gpu i begin ... end`
builds towers in a loop. Without a GPU, adplace's virtual GPUs (`tf.config.set_virtual_gpus(n)`)
take the place.
"""
macro gpu(id, block)
    device_block("gpu", id, block)
end
macro gpu(block)
    device_block("gpu", 0, block)
end

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
