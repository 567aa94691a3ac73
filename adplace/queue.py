"""tf.queue: TF1's queues under their TF 1.15 module path (tf.queue.FIFOQueue, ...); adplace/ops/queue_ops.py has them."""
from adplace.ops.queue_ops import FIFOQueue, PaddingFIFOQueue, PriorityQueue, QueueBase, RandomShuffleQueue

__all__ = ["FIFOQueue", "PaddingFIFOQueue", "PriorityQueue", "QueueBase", "RandomShuffleQueue"]
