# ADCME's time stepping with while_loop and TensorArray: the 1-D heat equation u_t = κ u_xx on (0, 1), zero at
# both ends, stepped explicitly (u ← u + κ dt u_xx, second differences for u_xx), every step written into a
# TensorArray. κ is a trainable Variable, fitted by gradient descent through the loop to data made with κ = 1.
# The same example in Python: examples/heat_equation.py.

# %% Load ADPlace
using ADPlace

# %% The grid, the initial temperature and the second-difference matrix (sizes small enough to fit in seconds)
n = 20                                      # interior grid points
steps = 100                                 # time steps; 1,000 works as well (dt shrinks, the loop runs longer)
T = 0.05                                    # final time
dx = 1 / (n + 1)
dt = T / steps                              # κ dt / dx² stays below 1/2 for κ ≤ 2: the explicit scheme is stable
x = collect(1:n) * dx
u0 = @. sin(π * x) + 0.5sin(3π * x)
laplacian = [i == j ? -2.0 : abs(i - j) == 1 ? 1.0 : 0.0 for i in 1:n, j in 1:n] / dx^2

# %% The simulation: step i reads step i - 1 from the TensorArray and writes step i (1-based, as in ADCME)
function simulate(κ)
    K = constant(laplacian)
    λ = κ * dt
    function condition(i, u_arr)
        i <= steps + 1
    end
    function body(i, u_arr)
        u = read(u_arr, i - 1)
        u_next = u + λ * (K * u)
        u_arr = write(u_arr, i, u_next)
        i + 1, u_arr
    end
    u_arr = TensorArray(steps + 1)
    u_arr = write(u_arr, 1, u0)
    i = constant(2, dtype=Int32)
    _, u_all = while_loop(condition, body, [i, u_arr])
    return set_shape(stack(u_all), (steps + 1, n))
end

# %% Data: the temperature at every step for κ = 1
sess = Session()
u_obs = run(sess, simulate(1.0))

# %% The model: κ a Variable, the mean squared misfit to the data, its gradient through the loop
κ = Variable(0.5)
u = simulate(κ)
loss = sum((u - u_obs)^2) / length(u_obs)
g = gradients(loss, κ)
train = tf.train.GradientDescentOptimizer(20.0).minimize(loss)

# %% Fit κ by gradient descent
init(sess)
losses = Float64[]
for iteration in 1:20
    push!(losses, run(sess, [loss, train])[1])
end
println("fitted κ = ", run(sess, κ), " (true 1.0), loss ", losses[1], " -> ", run(sess, loss))
