"""adplace.nn: the tf.nn names of ops defined in adplace.ops."""
from adplace.ops.math_ops import log_sigmoid, relu, sigmoid, tanh
from adplace.ops.sort_ops import top_k
from adplace.ops.conv_ops import (avg_pool, avg_pool2d, conv2d, conv2d_backprop_filter, conv2d_backprop_input,
                                  conv2d_transpose, local_response_normalization, lrn, max_pool, max_pool2d)
from adplace.ops.nn_ops import batch_normalization, bias_add, moments
from adplace.ops.candidate_sampling_ops import (compute_accidental_hits, fixed_unigram_candidate_sampler,
                                                log_uniform_candidate_sampler, uniform_candidate_sampler)
from adplace.ops.nn_impl import (dropout, l2_normalize, log_poisson_loss, nce_loss, sampled_softmax_loss,
                                 sigmoid_cross_entropy_with_logits, weighted_cross_entropy_with_logits, xw_plus_b)
from adplace.ops.nn_ops import crelu
from adplace.ops.embedding_ops import embedding_lookup, embedding_lookup_sparse, safe_embedding_lookup_sparse
from adplace.ops.nn_impl import pool
from adplace.ops.nn_ops import (elu, in_top_k, l2_loss, leaky_relu, log_softmax, relu6, selu, softmax, softplus,
                                softsign)
from adplace.ops.cross_entropy_ops import (softmax_cross_entropy_with_logits, softmax_cross_entropy_with_logits_v2,
                                           sparse_softmax_cross_entropy_with_logits)

__all__ = ["avg_pool", "avg_pool2d", "batch_normalization", "bias_add", "conv2d", "conv2d_backprop_filter",
           "conv2d_backprop_input", "conv2d_transpose", "local_response_normalization", "lrn", "max_pool",
           "max_pool2d", "moments", "relu", "sigmoid", "tanh"]
__all__ += ["crelu", "pool"]
__all__ += ["embedding_lookup", "embedding_lookup_sparse", "safe_embedding_lookup_sparse"]
__all__ += ["compute_accidental_hits", "dropout", "elu", "fixed_unigram_candidate_sampler", "in_top_k", "l2_loss",
            "l2_normalize", "leaky_relu", "log_poisson_loss", "log_softmax", "log_uniform_candidate_sampler",
            "nce_loss", "relu6", "sampled_softmax_loss", "selu", "sigmoid_cross_entropy_with_logits", "softmax",
            "softmax_cross_entropy_with_logits", "softmax_cross_entropy_with_logits_v2", "softplus", "softsign",
            "sparse_softmax_cross_entropy_with_logits", "uniform_candidate_sampler",
            "weighted_cross_entropy_with_logits", "xw_plus_b"]
