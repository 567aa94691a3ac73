# ADPlace's tests: `julia --project=julia -e 'using Pkg; Pkg.test()'`, with a Python that has adplace
# installed (JULIA_CONDAPKG_BACKEND=Null JULIA_PYTHONCALL_EXE=/path/to/python, or CondaPkg's own).
using ADPlace
using PythonCall: PythonCall, Py, PyException, pyfunc
using Test

const EXAMPLES = joinpath(@__DIR__, "..", "examples")
isempty(tf.config.cuda_gpus()) && tf.config.set_virtual_gpus(2)

"""Run an example at top level, as a user's script, in a fresh graph and a scratch directory. Call it as a
top-level statement of its own: the globals it defines are then visible to the statements after it (Julia ≥ 1.12
binds new globals per world age, so a testset that includes a file cannot read that file's globals)."""
function run_example(name)
    reset_default_graph()
    dir = mktempdir()
    cd(dir) do
        include(joinpath(EXAMPLES, name))
    end
    return dir
end

graph_ops() = tf.get_default_graph().get_operations()

colocation_dir = run_example("adcme_colocation.jl")
@testset "ADCME's script, line by line" begin
    # @cpu 0 / @gpu: string scopes, stored canonical
    @test d.device == "/device:GPU:0"
    @test d.op.inputs[1].op.name == "Sin"
    # the user's closure received ops it could read as Julia values: variable on the CPU, sin on the GPU
    @test a isa PyObject && a.op.type == "VariableV2"
    @test a.device == "/device:CPU:0"
    @test b.device == "/device:GPU:0"
    @test a.device isa String
    @test c.device == "/device:CPU:0"
    # colocate=true: the Sin's gradient (a Cos under gradients/) was built on the Sin's device
    sin_grads = [op for op in graph_ops() if startswith(op.name, "gradients") && op.type == "Cos"]
    @test !isempty(sin_grads)
    @test all(op.device == b.device for op in sin_grads)
    # the profiled run returned a Julia number and the trace was written
    expected = -sin(sin(1.0)) * cos(1.0) + cos(sin(1.0))
    @test run(sess, g + c) ≈ expected
    trace = read(joinpath(colocation_dir, "true.json"), String)
    @test occursin("traceEvents", trace) && occursin("GPU:0", trace) && occursin("CPU:0", trace)
    @test update_ops isa Vector && isempty(update_ops)
end

@testset "assign_to_device and PS_OPS of the package" begin
    reset_default_graph()
    @test ADPlace.PS_OPS == ["Variable", "VariableV2", "AutoReloadVariable"]
    assign = ADPlace.assign_to_device("/device:GPU:1")
    @test assign(tf.NodeDef(name="v", op="VariableV2")) == "/device:CPU:0"   # a NodeDef, as TF 1.x may pass
    @test assign(tf.NodeDef(name="m", op="MatMul")) == "/device:GPU:1"
    v = w = nothing                                  # locals of the testset, assigned inside the block
    @pywith tf.device(assign) begin
        v = Variable(1.0)
        w = v * 2.0
    end
    @test (v.device, w.device) == ("/device:CPU:0", "/device:GPU:1")
    @test ADPlace.assign_to_device("/gpu:0", "/cpu:1")(v.op) == "/cpu:1"
end

@testset "values a device function sees are Julia values" begin
    reset_default_graph()
    x = constant(1.0)
    @test pybuiltin("isinstance")(x.op, tf.NodeDef) === false
    @test pybuiltin("isinstance")(x.op.node_def, tf.NodeDef) === true
    @test x.op.node_def.op === "Const"
    seen = Any[]
    @pywith tf.device(op -> (push!(seen, op); "/cpu:0")) begin
        constant(2.0)
    end
    @test seen[1] isa PyObject && seen[1].type == "Const"
    # the trap this conversion avoids: with PythonCall's raw Py, op.node_def.op is a Python str, never
    # equal to a Julia String, so a closure written for PyCall silently puts the variable on the GPU
    raw = pyfunc(op -> op.node_def.op in ["VariableV2"] ? "/cpu:0" : "/gpu:0")
    v_raw = nothing
    @pywith tf.device(raw) begin
        v_raw = Variable(1.0)
    end
    @test v_raw.device == "/gpu:0"
end

@testset "@pywith exits the context, also when the block throws" begin
    reset_default_graph()
    err = try
        @pywith tf.device("/gpu:0") begin
            error("boom")
        end
    catch e
        e
    end
    @test err == ErrorException("boom")
    @test constant(1.0).device == ""                 # the scope was exited
    @test_throws PyException @pywith tf.device("/gpu:0") begin
        tf.constant(1.0; dtype="no such dtype")
    end
    @test constant(1.0).device == ""
    @test_throws ArgumentError @pywith 42 begin end
    @test (@pywith tf.device("/cpu:0") begin 1 end) === nothing
    scope_name = nothing
    @pywith tf.name_scope("tower") as scope begin
        scope_name = scope
    end
    @test scope_name == "tower/"
end

@testset "@cpu and @gpu take the device id at run time" begin
    reset_default_graph()
    made = PyObject[]
    for i in 0:1
        @gpu i begin
            push!(made, constant(1.0))
        end
    end
    @test [t.device for t in made] == ["/device:GPU:0", "/device:GPU:1"]
    on_cpu = nothing
    @cpu begin
        on_cpu = constant(1.0)
    end
    @test on_cpu.device == "/device:CPU:0"
end

@testset "Julia values and tensors mix; run returns Julia arrays" begin
    reset_default_graph()
    A = [1.0 2.0; 3.0 4.0]
    x = constant(A)
    p = placeholder(Float64; shape=[nothing, 2])
    sess = Session()
    @test run(sess, x) == A                          # same indices: A[1, 2] is the tensor's [0, 1]
    B = [1.0 2.0; 3.0 4.0; 5.0 6.0]
    @test run(sess, p, p => B) == B                  # a 3×2 Julia matrix fed and fetched back
    @test run(sess, sum(p), p => B) == sum(B)
    @test run(sess, sum(p; dims=1), p => B) == vec(sum(B; dims=1))
    @test run(sess, x * x) ≈ A * A                   # rank 2 × rank 2: matmul
    @test run(sess, x * [1.0, 1.0]) ≈ A * [1.0, 1.0] # matrix × vector
    @test run(sess, matmul(x, [0.0 1.0; 1.0 0.0])) ≈ A * [0.0 1.0; 1.0 0.0]
    @test run(sess, 2.0 * x + 1.0 - x / 2.0) ≈ @. 2A + 1 - A / 2
    @test run(sess, x .* x ./ x .- x .+ 1.0) ≈ ones(2, 2)
    @test run(sess, x^2) ≈ A .^ 2                     # ADCME's ^ is elementwise
    @test run(sess, x .^ 2) ≈ A .^ 2
    @test run(sess, -x) == -A
    @test run(sess, sqrt(exp(log(x)))) ≈ sqrt.(A)
    @test run(sess, sin(x) + cos(x)) ≈ sin.(A) + cos.(A)
    @test run(sess, constant(Float32[1, 2])) isa Vector{Float32}
    @test run(sess, constant([true, false])) == [true, false]
    @test run(sess, constant(3)) === 3
    @test run(sess, [x, constant(1.0)]) == Any[A, 1.0]
    @test run(sess, tf.no_op()) === nothing
    @test Variable(1.0).dtype.base_dtype.name == "float64"   # Julia literals are Float64, as in ADCME
    @test_throws ArgumentError constant('c')
    @test_throws ArgumentError constant([1.0, 2.0]) * constant(A)
end

@testset "gradients, sessions, collections" begin
    reset_default_graph()
    u = Variable(2.0; name="weight")
    @test gradients(constant(1.0), u) === nothing
    gs = gradients(u^2 + 3.0 * u, [u, u])
    sess = Session(soft=true, intra=1, inter=1); init(sess)
    @test run(sess, gs) == [7.0, 7.0]
    @test get_collection() == [u]
    @test get_collection(TRAINABLE_VARIABLES) == [u]
    @test get_collection("weig") == [u]
    @test isempty(get_collection("nothing matches"))
    @test isempty(get_collection(UPDATE_OPS))
    on_gpu = nothing
    @gpu begin
        on_gpu = u * 2.0
    end
    cpu_only = Session(GPU=0, soft=true); init(cpu_only)
    @test run(cpu_only, on_gpu) == 4.0               # soft placement moved it to the CPU
    strict = Session(GPU=0)
    @test_throws PyException init(strict)            # the whole graph is placed at the first run, as in TF
    x1 = constant(1.0)
    z = control_dependencies([u.op]) do
        tf.identity(x1)
    end
    @test u.op in z.op.control_inputs
end

@testset "while_loop, TensorArray, read/write/stack, if_else, Julia functions as bodies" begin
    reset_default_graph()
    sess = Session()
    # ADCME's while_loop docstring: element 1 written before the loop, read and write counted from 1
    ta = TensorArray(10)
    ta = write(ta, 1, constant(1.0))
    condition(i, ta) = i <= 10
    body(i, ta) = (i + 1, write(ta, i, read(ta, i - 1) + 1))
    last_i, out = while_loop(condition, body, [constant(2, dtype=Int32), ta])
    @test run(sess, stack(out)) == collect(1.0:10.0)
    @test run(sess, last_i) === Int32(11)
    @test run(sess, read(out, 10)) == 10.0 && run(sess, read(out, constant(3, dtype=Int32))) == 3.0
    @test run(sess, sum(stack(out))) == 55.0
    @test (get_dtype(out), get_dtype(last_i), get_dtype(constant(true))) == (Float64, Int32, Bool)
    # ADCME's rule: the first loop variable is an Int32 index; one tensor in, one tensor out
    @test_throws ArgumentError while_loop(condition, body, [constant(2), ta])
    @test run(sess, while_loop(j -> j < 5, j -> j + 1, constant(0, dtype=Int32))) == 5
    # keywords of TensorArray, Julia arrays written with its dtype
    ints = write(write(TensorArray(2; dtype=Int32), 1, [1, 2]), 2, [3, 4])
    @test run(sess, stack(ints)) == Int32[1 2; 3 4]
    # set_shape, comparisons
    p = placeholder(Float64; shape=[nothing, 3])
    @test set_shape(p, 2, 3) === p && p.shape.as_list() == [2, 3]
    @test set_shape(placeholder(Float64), [nothing, 4]).shape.as_list() == Any[nothing, 4]
    @test_throws PyException set_shape(placeholder(Float64; shape=[2]), (3,))
    @test run(sess, [constant(1.5) < 2.0, 2.0 <= constant(1.5), constant(1.5) > 1.0, constant(1.5) >= 1.5]) ==
          [true, false, true, true]
    # if_else and tf.cond/tf.case over Julia functions: only the taken branch runs, gradients flow through it
    x = placeholder(Float64; shape=[])
    y = if_else(x > 0.0, () -> 2.0 * x, () -> -x)
    @test run(sess, y, x => 3.0) == 6.0 && run(sess, y, x => -4.0) == 4.0
    @test run(sess, gradients(y, x), x => 3.0) == 2.0 && run(sess, gradients(y, x), x => -4.0) == -1.0
    @test run(sess, if_else(true, 1.0, 2.0)) === 1.0
    @test run(sess, if_else([true, false], [1.0, 2.0], [3.0, 4.0])) == [1.0, 4.0]
    @test run(sess, tf.cond(x < 0.0, () -> 0.0 * x, () -> x), x => 5.0) == 5.0
    signum = tf.case([x < 0.0 => () -> constant(-1.0), x > 0.0 => () -> constant(1.0)]; default=() -> constant(0.0))
    @test [run(sess, signum, x => v) for v in (-2.0, 0.0, 2.0)] == [-1.0, 0.0, 1.0]
    # a gradient through a loop whose body multiplies by a captured Variable: d(a^10)/da
    a = Variable(1.5)
    _, a10 = while_loop((k, q) -> k <= 10, (k, q) -> (k + 1, q * a), [constant(1, dtype=Int32), constant(1.0)])
    init(sess)
    @test run(sess, a10) ≈ 1.5^10
    @test run(sess, gradients(a10, a)) ≈ 10 * 1.5^9
end

run_example("multi_gpu_towers.jl")
@testset "the multi-GPU tower example trains" begin
    @test losses[end] < 1e-3 * losses[1]
    @test Float64.(run(sess, coefficients)) ≈ [1.0, 2.0, -3.0] atol = 1e-2
    @test Set(t.device for t in [tower_losses[1], tower_losses[2]]) == Set(["/device:GPU:0", "/device:GPU:1"])
    @test all(v.device == "/device:CPU:0" for v in coefficients)
end

run_example("quickstart.jl")
@testset "the README's quickstart example" begin
    @test (a.device, b.device, c.device) == ("/device:CPU:0", "/device:GPU:0", "/device:CPU:0")
    @test run(sess, c) ≈ cos(sin(1.0)) && run(sess, c) isa Float64   # as the README prints it
    @test run(sess, g) ≈ -sin(sin(1.0)) * cos(1.0)
    @test all(op.device == "/device:GPU:0" for op in graph_ops() if startswith(op.name, "gradients/Sin_grad"))
end

run_example("heat_equation.jl")
@testset "the heat equation example fits κ through the while_loop" begin
    @test size(u_obs) == (steps + 1, n)
    # the data are the explicit scheme's steps for κ = 1, computed here in Julia
    second_difference(v) = [(k > 1 ? v[k-1] : 0.0) - 2v[k] + (k < n ? v[k+1] : 0.0) for k in 1:n] / dx^2
    v = copy(u0)
    for _ in 1:steps
        v = v + dt * second_difference(v)
    end
    @test u_obs[end, :] ≈ v rtol = 1e-12
    @test abs(run(sess, κ) - 1.0) < 0.01
    @test losses[end] < 1e-6 * losses[1]
    # the gradient through the loop is the loss's central difference
    h, κ0 = 1e-5, 0.7
    difference = (run(sess, loss, κ => κ0 + h) - run(sess, loss, κ => κ0 - h)) / 2h
    @test run(sess, g, κ => κ0) ≈ difference rtol = 1e-6
    # one loop frame per simulation (and one for the gradient), not one op per time step
    types = [op.type for op in graph_ops()]
    @test count(==("LoopCond"), types) >= 3 && count(==("MatMul"), types) <= 8
end
