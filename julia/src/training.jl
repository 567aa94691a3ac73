# Training as ADCME users write it: TF's optimizers with ADCME's defaults, and scipy's through BFGS!.

"""
    AdamOptimizer(learning_rate=1e-3; kwargs...)

`tf.train.AdamOptimizer` (ADCME's default learning rate); keywords go to it (`beta1`, `beta2`,
`epsilon`, `name`). `learning_rate` may be a tensor, such as a placeholder fed each step.
"""
AdamOptimizer(learning_rate=1e-3; kwargs...) = tf.train.AdamOptimizer(learning_rate; kwargs...)

"""
    AdadeltaOptimizer(learning_rate=1e-3; kwargs...)

`tf.train.AdadeltaOptimizer` (keywords `rho`, `epsilon`, `name`).
"""
AdadeltaOptimizer(learning_rate=1e-3; kwargs...) = tf.train.AdadeltaOptimizer(learning_rate; kwargs...)

"""
    AdagradOptimizer(learning_rate=1e-3; kwargs...)

`tf.train.AdagradOptimizer` (keywords `initial_accumulator_value`, `name`).
"""
AdagradOptimizer(learning_rate=1e-3; kwargs...) = tf.train.AdagradOptimizer(learning_rate; kwargs...)

"""
    GradientDescentOptimizer(learning_rate=1e-3; kwargs...)

`tf.train.GradientDescentOptimizer`.
"""
GradientDescentOptimizer(learning_rate=1e-3; kwargs...) = tf.train.GradientDescentOptimizer(learning_rate; kwargs...)

"""
    RMSPropOptimizer(learning_rate=1e-3; kwargs...)

`tf.train.RMSPropOptimizer` (keywords `decay`, `momentum`, `epsilon`, `name`).
"""
RMSPropOptimizer(learning_rate=1e-3; kwargs...) = tf.train.RMSPropOptimizer(learning_rate; kwargs...)

"""
    minimize(opt, loss; colocate_gradients_with_ops=false, kwargs...)

The op that takes one step of the optimizer `opt` on `loss` (`opt.minimize(loss)`); keywords go to
it (`var_list`, `global_step`, `colocate_gradients_with_ops`).
"""
minimize(opt::PyObject, loss::PyObject; kwargs...) = opt.minimize(loss; kwargs...)

"""ADCME's scipy options: stop after `maxiter` steps or when the loss no longer changes at all."""
const SCIPY_OPTIONS = Dict("maxiter" => 15000, "ftol" => 1e-12, "gtol" => 1e-12)

"""
    ScipyOptimizerInterface(loss; method="L-BFGS-B", options=ADPlace.SCIPY_OPTIONS, kwargs...)

`tf.contrib.opt.ScipyOptimizerInterface`: minimizes `loss` over its trainable variables with
`scipy.optimize.minimize` (scipy: `pip install "adplace[scipy]"`), the gradients computed by adplace.
Keywords: `var_list`, `var_to_bounds` (a `Dict` of variables to `(low, high)`), `equalities`,
`inequalities`, and scipy's. Run it with [`ScipyOptimizerMinimize`](@ref).
"""
ScipyOptimizerInterface(loss::PyObject; method="L-BFGS-B", options=SCIPY_OPTIONS, kwargs...) =
    tf.contrib.opt.ScipyOptimizerInterface(loss; method=method, options=options, kwargs...)

"""
    ScipyOptimizerMinimize(sess, opt; feed_dict, fetches, step_callback, loss_callback)

Run the scipy optimization `opt` of [`ScipyOptimizerInterface`](@ref) in `sess` (`opt.minimize(sess)`):
the variables hold the solution afterwards.
"""
ScipyOptimizerMinimize(sess::PyObject, opt::PyObject; kwargs...) = opt.minimize(sess; kwargs...)

"""
    BFGS!(sess, loss, max_iter=15000; vars=PyObject[], callback=nothing, method="L-BFGS-B",
          bounds=nothing, feed_dict=nothing, verbose=true, kwargs...)

ADCME's `BFGS!`: minimize `loss` over its trainable variables with scipy's L-BFGS-B (or `method`),
the gradients computed by adplace, for at most `max_iter` steps; returns the loss after each step.
`callback(vs, step, loss)` runs after each step with the values of `vars`; `bounds` is a `Dict` of
variables to `[low, high]`; `feed_dict` (a `Dict`) feeds each evaluation. It prints one line per
step (`verbose=false` silences it). The variables hold the solution afterwards.

    a = Variable(1.0)
    sess = Session(); init(sess)
    BFGS!(sess, (a - 10.0)^2)      # run(sess, a) ≈ 10.0
"""
function BFGS!(sess::PyObject, loss::PyObject, max_iter::Integer=15000; vars=PyObject[], kwargs...)
    return Float64.(tf.adcme.bfgs(sess, loss, max_iter; vars=collect(vars), kwargs...))
end

"""
    BFGS!(sess, loss, grads, vars; kwargs...)

ADCME's `BFGS!` with given gradients and variables (there, through Optim.jl): minimizes `loss` over
`vars` only (one variable or a vector) with L-BFGS-B. `grads` (ADCME's `gradients(loss, vars[i])`)
are not needed: adplace takes the same gradients itself. Keywords as for `BFGS!(sess, loss)`.
"""
function BFGS!(sess::PyObject, loss::PyObject, grads::Union{PyObject,AbstractVector,Nothing},
        vars::Union{PyObject,AbstractVector}; kwargs...)
    variables = vars isa PyObject ? [vars] : collect(vars)
    return BFGS!(sess, loss; vars=variables, var_list=variables, kwargs...)
end
