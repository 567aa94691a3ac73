"""tf.debugging: TF 1.15's assertions and numeric checks, for the names adplace has.

    with tf.control_dependencies([tf.debugging.assert_rank(x, 2)]):   # ValueError now if x's rank is known and not 2
        y = tf.identity(x)
"""
from adplace.ops.check_ops import (Assert, assert_equal, assert_greater, assert_greater_equal, assert_integer,
                                   assert_less, assert_less_equal, assert_near, assert_negative, assert_non_negative,
                                   assert_non_positive, assert_none_equal, assert_positive, assert_rank,
                                   assert_rank_at_least, assert_rank_in, assert_scalar, assert_type, check_numerics,
                                   is_non_decreasing, is_numeric_tensor, is_strictly_increasing,
                                   verify_tensor_all_finite as assert_all_finite)
from adplace.ops.math_ops import is_finite, is_inf, is_nan

__all__ = ["Assert", "assert_all_finite", "assert_equal", "assert_greater", "assert_greater_equal", "assert_integer",
           "assert_less", "assert_less_equal", "assert_near", "assert_negative", "assert_non_negative",
           "assert_non_positive", "assert_none_equal", "assert_positive", "assert_rank", "assert_rank_at_least",
           "assert_rank_in", "assert_scalar", "assert_type", "check_numerics", "is_finite", "is_inf", "is_nan",
           "is_non_decreasing", "is_numeric_tensor", "is_strictly_increasing"]
