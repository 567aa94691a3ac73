"""tf.layers: TF1's functional and object layers (dense, conv2d, pooling, flatten, dropout, batch_normalization)
over variable scopes."""
from adplace.layers.base import Layer
from adplace.layers.convolutional import Conv2D, conv2d
from adplace.layers.core import Dense, Dropout, Flatten, dense, dropout, flatten
from adplace.layers.normalization import BatchNormalization, batch_normalization
from adplace.layers.pooling import AveragePooling2D, MaxPooling2D, average_pooling2d, max_pooling2d

__all__ = ["AveragePooling2D", "BatchNormalization", "Conv2D", "Dense", "Dropout", "Flatten", "Layer", "MaxPooling2D",
           "average_pooling2d", "batch_normalization", "conv2d", "dense", "dropout", "flatten", "max_pooling2d"]
