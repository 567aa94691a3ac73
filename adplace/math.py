"""tf.math: TF 1.15's math namespace, for the names adplace has (re-exported from the ops modules and tf.nn).

    tf.math.reduce_sum(x, 1);  tf.math.log1p(x);  tf.math.is_nan(x);  tf.math.softplus(x)
"""
from adplace.nn import in_top_k, l2_normalize, log_softmax, softmax, softplus, softsign
from adplace.ops.sort_ops import top_k
from adplace.ops.math_ops import (acos, acosh, asin, asinh, atan, atan2, atanh, cosh, digamma, div_no_nan, erf, erfc,
                                  expm1, lgamma, log_sigmoid, polygamma, realdiv, rint, round, sinh,  # noqa: A004
                                  truncatediv, truncatemod)
from adplace.ops.array_ops import invert_permutation
from adplace.ops.check_ops import is_non_decreasing, is_strictly_increasing
from adplace.ops.logical_ops import logical_and, logical_not, logical_or, logical_xor
from adplace.ops.math_ops import (abs, add, add_n, ceil, cos, cumprod, cumsum, divide, equal, exp, floor,  # noqa: A004
                                  floordiv, floormod, greater, greater_equal, is_finite, is_inf, is_nan, less,
                                  less_equal, log, log1p, maximum, minimum, multiply, negative, not_equal, pow,
                                  reciprocal, rsqrt, sigmoid, sign, sin, sqrt, square, squared_difference, subtract,
                                  tan, tanh, truediv)
from adplace.ops.reduction_ops import (argmax, argmin, count_nonzero, reduce_all, reduce_any, reduce_logsumexp,
                                       reduce_max, reduce_mean, reduce_min, reduce_prod, reduce_sum)
from adplace.ops.segment_ops import unsorted_segment_sum
from adplace.ops.reduction_ops import reduce_euclidean_norm
from adplace.ops.math_ops import conj
from adplace.ops.indexed_slices_ops import scalar_mul
from adplace.ops.segment_ops import (segment_max, segment_mean, segment_min, segment_prod, segment_sum,
                                     unsorted_segment_max, unsorted_segment_mean, unsorted_segment_min,
                                     unsorted_segment_prod, unsorted_segment_sqrt_n)

mod = floormod

__all__ = ["abs", "add", "add_n", "argmax", "argmin", "ceil", "cos", "count_nonzero", "cumprod", "cumsum", "divide",
           "equal", "exp", "floor", "floordiv", "floormod", "greater", "greater_equal", "in_top_k",
           "invert_permutation", "is_finite", "is_inf", "is_nan", "is_non_decreasing", "is_strictly_increasing",
           "l2_normalize", "less", "less_equal", "log", "log1p", "log_softmax", "logical_and", "logical_not",
           "logical_or", "logical_xor", "maximum", "minimum", "mod", "multiply", "negative", "not_equal", "pow",
           "reciprocal", "reduce_all", "reduce_any", "reduce_logsumexp", "reduce_max", "reduce_mean", "reduce_min",
           "reduce_prod", "reduce_sum", "rsqrt", "sigmoid", "sign", "sin", "softmax", "softplus", "softsign", "sqrt",
           "square", "squared_difference", "subtract", "tan", "tanh", "truediv", "unsorted_segment_sum"]
__all__ += ["acos", "acosh", "asin", "asinh", "atan", "atan2", "atanh", "cosh", "digamma", "div_no_nan", "erf", "erfc",
            "expm1", "lgamma", "log_sigmoid", "polygamma", "realdiv", "rint", "round", "sinh", "top_k", "truncatediv",
            "truncatemod"]
__all__ += ["conj", "reduce_euclidean_norm"]
__all__ += ["scalar_mul", "segment_max", "segment_mean", "segment_min", "segment_prod", "segment_sum",
            "unsorted_segment_max", "unsorted_segment_mean", "unsorted_segment_min", "unsorted_segment_prod",
            "unsorted_segment_sqrt_n"]
