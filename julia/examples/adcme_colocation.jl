# ADCME's placement example (docs/src/parallel.md), run on adplace: variables on the CPU and compute
# on the GPU with assign_to_device, then gradients colocated with their forward ops and profiled.
# Without a CUDA GPU, adplace's virtual GPU takes the place of GPU:0.

# %% Load ADPlace; without a CUDA GPU, one virtual GPU
using ADPlace
isempty(tf.config.cuda_gpus()) && tf.config.set_virtual_gpus(1)

# %% @cpu and @gpu: device scopes for the ops built inside
@cpu 0 begin
    global a = Variable(1.0)
    global b = sin(a)
end
@gpu begin                                  # device id 0 when missing
    global d = cos(b)
end

# %% ADCME's user-written device function: variables on the parameter device, the rest on `device`
PS_OPS = ["Variable", "VariableV2", "AutoReloadVariable"]
function assign_to_device(device, ps_device="/device:CPU:0")   # user-written, as in ADCME's docs
    function _assign(op)
        node_def = pybuiltin("isinstance")(op, tf.NodeDef) ? op : op.node_def
        if node_def.op in PS_OPS
            return ps_device
        else
            return device
        end
    end
    return _assign
end

# %% @pywith tf.device(f): the function places each op; check where a and b went
@pywith tf.device(assign_to_device("/device:GPU:0")) begin
    global a = Variable(1.0)
    global b = sin(a)
end
a.device == "/device:CPU:0"; b.device == "/device:GPU:0"
println("a.device = ", a.device, ", b.device = ", b.device)

# %% An op on the CPU, and its gradient colocated with the forward ops
@pywith tf.device("/CPU:0") begin
    global c = cos(b)
end
g = gradients(c, a, colocate=true)

# %% Run once with a trace and save it as a Chrome trace
sess = Session(); init(sess)
run_profile(sess, g + c)
println("g + c = ", run(sess, g + c))
save_profile("true.json")

# %% UPDATE_OPS, read inside a device scope
@pywith tf.device("/cpu:0") begin
    global update_ops = get_collection(tf.GraphKeys.UPDATE_OPS)
end
