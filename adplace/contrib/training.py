"""tf.contrib.training's ps placement strategies (TF keeps them there, beside replica_device_setter's users).

    greedy = tf.contrib.training.GreedyLoadBalancingStrategy(2, tf.contrib.training.byte_size_load_fn)
    setter = tf.train.replica_device_setter(ps_tasks=2, ps_strategy=greedy)   # variables by size, not by turn
"""
from adplace.train.device_setter import GreedyLoadBalancingStrategy, byte_size_load_fn

__all__ = ["GreedyLoadBalancingStrategy", "byte_size_load_fn"]
