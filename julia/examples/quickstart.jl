using ADPlace                                   # `tf` is the Python module adplace
isempty(tf.config.cuda_gpus()) && tf.config.set_virtual_gpus(1)

@pywith tf.device(ADPlace.assign_to_device("/device:GPU:0")) begin
    global a = Variable(1.0)                    # variables stay on the CPU
    global b = sin(a)                           # compute goes to GPU:0
end
@cpu begin
    global c = cos(b)
end
g = gradients(c, a, colocate=true)              # sin's gradient runs on GPU:0 too
sess = Session(); init(sess)
println(a.device, " ", b.device, " ", c.device)
println(run(sess, c), " ", run(sess, g))
