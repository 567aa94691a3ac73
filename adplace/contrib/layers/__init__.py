"""tf.contrib.layers: contrib's layer functions, weight initializers and regularizers."""
from adplace.contrib.layers.initializers import (variance_scaling_initializer, xavier_initializer,
                                                 xavier_initializer_conv2d)
from adplace.contrib.layers.layers import (avg_pool2d, conv2d, convolution2d, dropout, flatten, fully_connected,
                                          max_pool2d)
from adplace.contrib.layers.regularizers import (apply_regularization, l1_l2_regularizer, l1_regularizer,
                                                 l2_regularizer, sum_regularizer)

__all__ = ["apply_regularization", "avg_pool2d", "conv2d", "convolution2d", "dropout", "flatten", "fully_connected",
           "l1_l2_regularizer", "l1_regularizer", "l2_regularizer", "max_pool2d", "sum_regularizer",
           "variance_scaling_initializer", "xavier_initializer", "xavier_initializer_conv2d"]
