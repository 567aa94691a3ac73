"""
    ADPlace

Device placement for dataflow graphs from Julia, as ADCME.jl users wrote it: `@cpu`, `@gpu`,
`@pywith`, `assign_to_device` and `gradients(ys, xs; colocate=true)` over the Python package
`adplace` (loaded through PythonCall), with the ADCME API around them: tensors indexed from 1 and
laid out column-major as Julia arrays, Jacobians, placeholders, optimizers and `BFGS!`, the math
ADCME overloads, and its control flow (`while_loop` over Julia functions, `TensorArray` with 1-based
`read`/`write` and `stack`, `if_else`). Nothing is computed in Julia: every function here is a thin
call into Python (`tf`, and `tf.adcme` for ADCME's conventions), and values cross the boundary as
ADCME users expect (see [`PyObject`](@ref)); Python errors arrive as [`PyError`](@ref)s.
"""
module ADPlace

import LinearAlgebra
import LinearAlgebra: det, diag, diagm, dot, norm, tr
import Statistics
import Statistics: mean
using PythonCall: PythonCall, Py, PyArray, PyException, ispy, pybuiltins, pyconvert, pydict, pyeq,
    pyfunc, pygetattr, pyhasattr, pyimport, pyis, pyisinstance, pylist, pyrepr, pysetattr, pytruth,
    pytuple, pytype

export PyObject, PyError, tf, @pywith, @cpu, @gpu, pybuiltin, Variable, constant, placeholder,
    convert_to_tensor, get_variable, variable_scope, gradients, jacobian, hessian, hessian_vector,
    gradients_colocate, Session, init, run_profile, save_profile, get_collection, matmul,
    reset_default_graph, control_dependencies, UPDATE_OPS, TRAINABLE_VARIABLES, GLOBAL_VARIABLES,
    while_loop, TensorArray, if_else, set_shape, get_dtype, scatter_update, scatter_add, scatter_sub,
    rvec, cvec, sigmoid, relu, softplus, cast, squeeze, AdamOptimizer, AdadeltaOptimizer,
    AdagradOptimizer, GradientDescentOptimizer, RMSPropOptimizer, minimize, ScipyOptimizerInterface,
    ScipyOptimizerMinimize, BFGS!, mean, norm, dot, diag, diagm, det, tr, leaky_relu, relu6, elu, selu,
    softsign, gradient_magnitude, assign, group, concat

include("pyobject.jl")
include("errors.jl")
include("placement.jl")
include("graph.jl")
include("arrays.jl")
include("math.jl")
include("gradients.jl")
include("control_flow.jl")
include("training.jl")

end
