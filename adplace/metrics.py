"""tf.metrics: TF1's streaming metrics, each returning (value, update_op) (see adplace/ops/metrics_impl.py)."""
from adplace.ops.metrics_impl import (accuracy, auc, false_negatives, false_positives, mean, mean_absolute_error,
                                      mean_squared_error, percentage_below, precision, recall,
                                      root_mean_squared_error, true_negatives, true_positives)

__all__ = ["accuracy", "auc", "false_negatives", "false_positives", "mean", "mean_absolute_error",
           "mean_squared_error", "percentage_below", "precision", "recall", "root_mean_squared_error",
           "true_negatives", "true_positives"]
