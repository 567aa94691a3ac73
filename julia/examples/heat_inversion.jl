# ADCME's inverse problem: recover the unknown, space-dependent coefficient of the 1-D heat equation
# u_t = (κ(x) u_x)_x on (0, 1), zero at both ends, from the temperature recorded at four sensors. κ(x) =
# exp(θ₁ + θ₂ (x - 1/2)) is positive for every θ, and its two parameters are what the data must identify.
# The explicit time steps run on GPU 0 in a while_loop over a TensorArray, θ lives on the CPU, and BFGS!
# (scipy's L-BFGS-B) fits θ with gradients taken back through the loop. The same program in Python:
# examples/heat_inversion.py.

# %% Load ADPlace; a virtual GPU stands in where there is no CUDA GPU
using ADPlace
isempty(tf.config.cuda_gpus()) && tf.config.virtual_gpu_count() == 0 && tf.config.set_virtual_gpus(1)

# %% The grid, the initial temperature, the sensors and the difference matrix
n = 20                                      # interior grid points
steps = 100                                 # time steps
T = 0.02                                    # final time
dx = 1 / (n + 1)
dt = T / steps                              # κ dt / dx² < 1/2 while κ ≤ 5.6: the explicit scheme is stable
x = collect(1:n) * dx
faces = (collect(1:n+1) .- 0.5) * dx        # κ is needed between grid points, where the fluxes are
u0 = @. sin(π * x) + 0.5sin(2π * x)
sensors = [4, 8, 12, 16]                    # grid points with a thermometer (1-based)
difference = [k == i ? 1.0 : k == i + 1 ? -1.0 : 0.0 for k in 1:n+1, i in 1:n] / dx   # u_x at the faces

# %% The forward model: κ(x) from θ, then step i reads step i - 1 from the TensorArray and writes step i
function simulate(θ)
    κ = exp(θ[1] + θ[2] * (faces .- 0.5))
    D = constant(difference)
    DT = D'
    function condition(i, u_arr)
        i <= steps + 1
    end
    function body(i, u_arr)
        u = read(u_arr, i - 1)
        flux = κ .* (D * u)                 # κ u_x at the n + 1 faces (u is zero beyond both ends)
        u_next = u - dt * (DT * flux)       # u_t = (κ u_x)_x: the flux difference across each cell
        u_arr = write(u_arr, i, u_next)
        i + 1, u_arr
    end
    u_arr = TensorArray(steps + 1)
    u_arr = write(u_arr, 1, u0)
    i = constant(2, dtype=Int32)
    _, u_all = while_loop(condition, body, [i, u_arr])
    return set_shape(stack(u_all), (steps + 1, n))
end

# %% Synthetic data: the sensors' temperatures at every step for θ_true, computed on GPU 0
θ_true = [0.2, -0.6]
sess = Session()
u_obs = @gpu 0 begin
    run(sess, simulate(constant(θ_true))[:, sensors])
end

# %% The unknown θ: a Variable on the CPU, where ADCME keeps parameters
@cpu begin
    global θ = Variable(zeros(2))
end

# %% The model on GPU 0: the same simulation from θ, and the squared misfit at the sensors
@gpu 0 begin
    global u = simulate(θ)
    global loss = sum((u[:, sensors] - u_obs)^2)
end

# %% Fit θ with BFGS!, bounded to a box where the explicit scheme stays stable
init(sess)
loss0 = run(sess, loss)
θ_path = Vector{Float64}[]
losses = BFGS!(sess, loss, 100; vars=[θ], callback=(vs, step, value) -> push!(θ_path, vs[1]),
    bounds=Dict(θ => (-1.0, 1.0)), verbose=false)

# %% The fitted θ against θ_true
θ_fit = run(sess, θ)
println("fitted θ = ", θ_fit, " (true ", θ_true, "), error ", maximum(abs.(θ_fit - θ_true)))
println("loss ", loss0, " -> ", losses[end], " in ", length(losses), " BFGS steps")
