# Data-parallel training on several GPUs, as ADCME's and TF's multi-GPU recipes do it: variables on
# the CPU, one tower per GPU (variables read from the CPU, compute on the tower's GPU, gradients
# colocated with their ops), gradients averaged and applied on the CPU. Fits y = 1 + 2x - 3x².
# Where there are fewer CUDA GPUs than towers, adplace's virtual GPUs make up the rest.

# %% Load ADPlace; virtual GPUs make up for missing CUDA GPUs
using ADPlace

ngpu = 2
ncuda = length(tf.config.cuda_gpus())
ncuda < ngpu && tf.config.set_virtual_gpus(ngpu - ncuda)

# %% The data: y = 1 + 2x - 3x², with a small wiggle
xdata = collect(range(-1.0, 1.0; length=256))
ydata = @. 1 + 2xdata - 3xdata^2 + 0.01sin(40xdata)

# %% The model's variables, on the CPU
@cpu begin
    global coefficients = [Variable(0.0; name="c$k") for k in 0:2]
end
c0, c1, c2 = coefficients

# %% One tower per GPU: placeholders, loss and colocated gradients on GPU i, variables read from the CPU
feeds = Pair[]
tower_losses = []
tower_grads = []
for i in 0:ngpu-1
    @pywith tf.device(ADPlace.assign_to_device("/device:GPU:$i")) begin
        x = placeholder(Float64; shape=[nothing])
        y = placeholder(Float64; shape=[nothing])
        loss = sum((c0 + c1 * x + c2 * x^2 - y)^2) / length(xdata)
        push!(tower_losses, loss)
        push!(tower_grads, gradients(loss, coefficients; colocate=true))
        part = i+1:ngpu:length(xdata)                 # this tower's share of the data
        push!(feeds, x => xdata[part], y => ydata[part])
    end
end

# %% Average the towers' gradients and apply them on the CPU
@cpu begin
    global total_loss = tf.add_n(tower_losses)
    average = [tf.add_n([grads[k] for grads in tower_grads]) / ngpu for k in 1:3]
    global train = tf.train.GradientDescentOptimizer(1.0).apply_gradients(collect(zip(average, coefficients)))
end

# %% Train: one run computes every tower and applies the averaged step
sess = Session(); init(sess)
losses = Float64[]
for step in 1:200
    push!(losses, run(sess, [total_loss, train], feeds...)[1])
end
println("loss: ", losses[1], " -> ", losses[end])
println("coefficients: ", run(sess, coefficients))   # ≈ [1, 2, -3]
