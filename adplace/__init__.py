"""adplace: device placement for dataflow graphs. `import adplace as tf` and TF1 graph-mode code runs.

Only re-exports live here; see adplace/framework (graph), adplace/ops (op constructors), adplace/placement.py (the
placer) and adplace/runtime (sessions).
"""
import types as _types

from adplace import config, errors, nn, train
from adplace import adcme, contrib, layers
from adplace.framework import dtypes
from adplace.framework.device_spec import DeviceSpec
from adplace.framework.dtypes import (DType, as_dtype, bfloat16, bool, complex64, complex128, double, float16, float32,  # noqa: A004
                                      float32_ref, float64, float64_ref, half, int8, int16, int32, int32_ref, int64,
                                      int64_ref, string, uint8, uint16, uint32, uint64)
from adplace.framework.conversion import convert_to_tensor, register_tensor_conversion_function
from adplace.framework.default_graph import (add_to_collection, add_to_collections, colocate_with, container,
                                             control_dependencies, device, get_collection, get_collection_ref,
                                             name_scope, op_scope, set_random_seed)
from adplace.framework.graph import Graph, GraphKeys, get_default_graph, reset_default_graph
from adplace.framework.operation import Operation, Tensor
from adplace.framework.importer import import_graph_def
from adplace.framework.tensor_util import make_ndarray, make_tensor_proto
from adplace.lib import protos as _protos
from adplace.framework.indexed_slices import IndexedSlices, IndexedSlicesValue
from adplace.framework.sparse_tensor import SparseTensor, SparseTensorValue, convert_to_tensor_or_sparse_tensor
from adplace.ops.indexed_slices_ops import convert_to_tensor_or_indexed_slices, scalar_mul
from adplace.framework.session_stack import get_default_session
from adplace.framework.registry import NoGradient, NotDifferentiable, RegisterGradient
from adplace.framework.tensor_shape import Dimension, TensorShape
from adplace.gradients import AggregationMethod, UnconnectedGradients, custom_gradient, gradients, hessians
from adplace.gradient_tools import grad_pass_through, recompute_grad
from adplace.framework.default_graph import init_scope
from adplace.kernels import cpu as _cpu_kernels  # noqa: F401 - constant, array, random and NoOp kernels
from adplace.kernels import math as _math_kernels  # noqa: F401 - elementwise, matmul, reduction, cast, ... kernels
from adplace.kernels import state as _state_kernels  # noqa: F401 - variable and training-op kernels
from adplace.kernels import scatter as _scatter_kernels  # noqa: F401 - Scatter*, SparseApply*, CountUpTo
from adplace.kernels import ftrl as _ftrl_kernels  # noqa: F401 - ApplyFtrl*, SparseApplyFtrl*
from adplace.kernels import conv as _conv_kernels  # noqa: F401 - registers the conv and pooling kernels
from adplace.kernels import nn as _nn_kernels  # noqa: F401 - registers the nn ops' kernels
from adplace.kernels import array as _array_kernels  # noqa: F401 - gather, one_hot, pad, ... kernels
from adplace.kernels import io as _io_kernels  # noqa: F401 - SaveV2, RestoreV2, MergeV2Checkpoints, ... kernels
from adplace.kernels import checks as _check_kernels  # noqa: F401 - Assert, CheckNumerics, Print kernels
from adplace.kernels import control_flow as _control_flow_kernels  # noqa: F401 - Switch, Merge, Enter, ... kernels
from adplace.kernels import stack as _stack_kernels  # noqa: F401 - StackV2, StackPushV2, StackPopV2 kernels
from adplace.kernels import linalg as _linalg_kernels  # noqa: F401 - matrix inverse, diag, einsum, ... kernels
from adplace.kernels import script as _script_kernels  # noqa: F401 - PyFunc kernels (CPU only)
from adplace.kernels import sparse as _sparse_kernels  # noqa: F401 - SparseToDense, SparseReorder, ... kernels (CPU)
from adplace.kernels import sparse_math as _sparse_math_kernels  # noqa: F401 - SparseAdd, SparseReduceSum, ... (CPU)
from adplace.kernels import data_flow as _data_flow_kernels  # noqa: F401 - GatherNd, ScatterNd, stitch, segments
from adplace.kernels import tensor_array as _tensor_array_kernels  # noqa: F401 - TensorArray*V3 kernels
from adplace.kernels import queues as _queue_kernels  # noqa: F401 - FIFOQueueV2, QueueEnqueueV2, ... kernels
from adplace.kernels import readers as _reader_kernels  # noqa: F401 - TextLineReaderV2, ReaderReadV2, ... kernels
from adplace.ops.script_ops import numpy_function, py_func
from adplace.ops.array_ops import identity_n
from adplace.ops.selection_ops import one_hot, where, where_v2
from adplace.ops.slicing_ops import gather, newaxis, pad, reverse
from adplace.ops.slicing_ops import reverse as reverse_v2, slice_ as slice  # noqa: A004 - TF's public name
from adplace.ops.broadcast_ops import broadcast_to, tile
from adplace.ops.array_ops import placeholder_with_default, shape_n
from adplace.ops.selection_ops import boolean_mask, sequence_mask
from adplace.ops.grid_ops import lin_space, linspace, meshgrid
from adplace.ops.sort_ops import unique
from adplace.ops.math_ops import (acos, acosh, asin, asinh, atan, atan2, atanh, cosh, digamma, div_no_nan, erf,
                                  erfc, expm1, lgamma, log_sigmoid, polygamma, realdiv, rint, round, saturate_cast,  # noqa: A004
                                  sinh, to_double, to_int32, to_int64, truncatediv, truncatemod)
from adplace.ops.math_ops import is_finite, is_inf, is_nan
from adplace.ops.math_ops import conj
from adplace.ops.logical_ops import logical_and, logical_not, logical_or, logical_xor
from adplace.ops.reduction_ops import (argmax, argmin, count_nonzero, reduce_all, reduce_any, reduce_logsumexp,
                                       reduce_max, reduce_mean, reduce_min, reduce_prod, reduce_sum)
from adplace.ops.segment_ops import unsorted_segment_sum
from adplace.ops.segment_ops import (segment_max, segment_mean, segment_min, segment_prod, segment_sum,
                                     sparse_segment_mean, sparse_segment_sqrt_n, sparse_segment_sum,
                                     unsorted_segment_max, unsorted_segment_mean, unsorted_segment_min,
                                     unsorted_segment_prod, unsorted_segment_sqrt_n)
from adplace.ops.scatter_nd_ops import (gather_nd, scatter_nd, tensor_scatter_add, tensor_scatter_nd_add,
                                        tensor_scatter_nd_sub, tensor_scatter_nd_update, tensor_scatter_sub,
                                        tensor_scatter_update)
from adplace.ops.data_flow_ops import dynamic_partition, dynamic_stitch, parallel_dynamic_stitch
from adplace.ops.tensor_array_ops import TensorArray
from adplace.ops.queue_ops import FIFOQueue, PaddingFIFOQueue, PriorityQueue, QueueBase, RandomShuffleQueue
from adplace.ops.accumulator_ops import ConditionalAccumulator, ConditionalAccumulatorBase, SparseConditionalAccumulator
from adplace.kernels import accumulators as _accumulator_kernels  # noqa: F401 - the accumulators' kernels
from adplace import queue  # tf.queue.FIFOQueue, ...
from adplace import data  # tf.data.Dataset, tf.data.Iterator, ...
from adplace.kernels import datasets as _dataset_kernels  # noqa: F401 - the dataset ops' kernels
from adplace.kernels import iterators as _iterator_kernels  # noqa: F401 - the iterator ops' kernels
from adplace.ops.reader_ops import (FixedLengthRecordReader, IdentityReader, ReaderBase, TextLineReader,
                                  TFRecordReader, WholeFileReader)
from adplace.ops import tensor_array_grad as _tensor_array_grad  # noqa: F401 - TensorArray gradients
from adplace.framework.dtypes import resource, variant
from adplace.ops import logical_ops as _logical_ops
from adplace import compat
from adplace.compat import disable_eager_execution, disable_v2_behavior, executing_eagerly
from adplace.framework.random_seed import get_seed
from adplace.ops.random_ops import categorical as _categorical, multinomial, random_shuffle
from adplace.ops.clip_ops import (clip_by_average_norm, clip_by_global_norm, clip_by_norm, clip_by_value,
                                  global_norm)
from adplace.ops.array_ops import (concat, expand_dims, fill, identity, invert_permutation, ones, ones_like,
                                   placeholder, rank, reshape, shape, size, split, squeeze, stack, stop_gradient,
                                   transpose, unstack, zeros, zeros_like)
from adplace.ops.constant_op import constant
from adplace.ops.control_flow_ops import group, no_op, tuple, with_dependencies  # noqa: A004
from adplace.ops.control_flow_v1 import case, cond, switch_case, while_loop
from adplace.ops.functional_ops import foldl, foldr, map_fn, scan
from adplace.ops import control_flow_grad as _control_flow_grad  # noqa: F401 - Switch, Merge, ... gradients
from adplace.ops import stack_ops as _stack_ops  # noqa: F401 - StackV2, ... (while-loop gradients)
from adplace.ops.init_ops import (constant_initializer, glorot_normal_initializer, glorot_uniform_initializer,
                                  initializers, ones_initializer, random_normal_initializer, random_uniform_initializer,
                                  truncated_normal_initializer, variance_scaling_initializer, zeros_initializer)
from adplace.ops.math_ops import (abs, add, add_n, cast, ceil, cos, cumprod, cumsum, div, divide, equal, exp, floor, floordiv,  # noqa: A004
                                  floormod, greater, greater_equal, less, less_equal, log, log1p, matmul, maximum,
                                  minimum, multiply, negative, not_equal, pow, range, reciprocal, relu, rsqrt,
                                  sigmoid, sign, sin, sqrt, square, squared_difference, subtract, tan, tanh, to_float,
                                  truediv)
from adplace.ops.random_ops import random_normal, random_uniform, truncated_normal
from adplace.ops.state_ops import assign, assign_add, assign_sub, is_variable_initialized
from adplace.ops.state_ops import (batch_scatter_update, count_up_to, scatter_add, scatter_div, scatter_max,
                                   scatter_min, scatter_mul, scatter_nd_add, scatter_nd_sub, scatter_nd_update,
                                   scatter_sub, scatter_update)
from adplace.ops.variables import (Variable, all_variables, global_variables, global_variables_initializer,
                                   initialize_all_variables, local_variables, local_variables_initializer,
                                   trainable_variables, variables_initializer)
from adplace.ops.variables import (VariableAggregation, VariableSynchronization, assert_variables_initialized,
                                   report_uninitialized_variables)
from adplace.ops.variable_scope import (AUTO_REUSE, VariableScope, get_local_variable, get_variable,
                                        get_variable_scope, variable_scope)
from adplace.ops.variable_scope import no_regularizer, variable_creator_scope
from adplace.ops.variable_scope import create_partitioned_variables
from adplace.ops.partitioned_variables import (PartitionedVariable, fixed_size_partitioner,
                                               min_max_variable_partitioner, variable_axis_size_partitioner)
from adplace.ops.init_ops import identity_initializer, uniform_unit_scaling_initializer
from adplace.runtime.session import InteractiveSession, Session
from adplace import client, profiler
from adplace import app, flags, losses, metrics
from adplace import debugging, linalg, math
from adplace import sparse
from adplace import gfile, io, summary  # tf.gfile, tf.io.gfile, tf.summary (ops, FileWriter, protos)
from adplace import python_io
from adplace.kernels import parsing as _parsing_kernels  # noqa: F401 - ParseExample, DecodeCSV, ... kernels (CPU)
from adplace.kernels import files as _file_kernels  # noqa: F401 - the MatchingFiles kernel (CPU)
from adplace.kernels import sparse_tensors_map as _sparse_map_kernels  # noqa: F401 - AddSparseToTensorsMap, ... (CPU)
from adplace.kernels import sequence_parsing as _sequence_parsing_kernels  # noqa: F401 - Parse*SequenceExample (CPU)
from adplace.ops.sequence_parsing_ops import parse_single_sequence_example
from adplace.ops.file_ops import matching_files
from adplace.ops.parsing_ops import (FixedLenFeature, FixedLenSequenceFeature, SparseFeature, VarLenFeature,
                                     decode_csv, decode_raw, parse_example, parse_single_example)
from adplace.ops.string_ops import string_split
from adplace.ops.sparse_ops import (sparse_fill_empty_rows, sparse_merge, sparse_placeholder, sparse_reorder,
                                    sparse_reset_shape, sparse_reshape, sparse_retain, sparse_tensor_to_dense,
                                    sparse_to_dense, sparse_to_indicator, sparse_transpose)
from adplace.ops.sparse_math_ops import (sparse_add, sparse_maximum, sparse_minimum, sparse_reduce_max,
                                         sparse_reduce_max_sparse, sparse_reduce_sum, sparse_reduce_sum_sparse,
                                         sparse_softmax, sparse_tensor_dense_matmul)
from adplace.ops.sparse_slicing_ops import sparse_concat, sparse_slice, sparse_split
from adplace.ops.check_ops import (Assert, add_check_numerics_ops, assert_equal, assert_greater, assert_greater_equal,
                                   assert_integer, assert_less, assert_less_equal, assert_near, assert_negative,
                                   assert_non_negative, assert_non_positive, assert_none_equal, assert_positive,
                                   assert_rank, assert_rank_at_least, assert_rank_in, assert_scalar, assert_type,
                                   check_numerics, is_non_decreasing, is_numeric_tensor, is_strictly_increasing,
                                   verify_tensor_all_finite)
from adplace.ops.einsum_ops import einsum, tensordot
from adplace.ops.linalg_ops import (cholesky, diag, diag_part, eye, matrix_band_part, matrix_determinant, matrix_diag,
                                    matrix_diag_part, matrix_inverse, matrix_set_diag, matrix_solve, matrix_transpose,
                                    matrix_triangular_solve, norm, self_adjoint_eig, self_adjoint_eigvals, trace)
from adplace.ops.logging_ops import Print
from adplace import tf_logging as logging
from adplace.profiler import run_profile, save_profile
from adplace.train.device_setter import PS_OPS, assign_to_device
from adplace.kernels.gpu import pinned_empty

mod = floormod
random = _types.SimpleNamespace(uniform=random_uniform, normal=random_normal, truncated_normal=truncated_normal,
                                set_random_seed=set_random_seed, get_seed=get_seed, shuffle=random_shuffle,
                                categorical=_categorical, multinomial=multinomial)
bitwise = _types.SimpleNamespace(bitwise_and=_logical_ops.bitwise_and, bitwise_or=_logical_ops.bitwise_or,
                                 bitwise_xor=_logical_ops.bitwise_xor, invert=_logical_ops.invert,
                                 left_shift=_logical_ops.left_shift, right_shift=_logical_ops.right_shift)
from adplace import test  # tf.test: TestCase, main, compute_gradient(_error), is_gpu_available, Benchmark, mock

__version__ = "0.1.0"

_OPTION_PROTOS = frozenset({"ConfigProto", "GPUOptions", "GraphOptions", "OptimizerOptions", "RewriterConfig",
                            "RunMetadata", "RunOptions"})


def __getattr__(name: str):
    """tf.ConfigProto, tf.RunOptions, tf.GraphDef...: TF's protos, loaded on first use so that `import adplace` stays fast."""
    if name in _OPTION_PROTOS:
        from adplace.runtime import options
        return getattr(options, name)
    if name in ("GraphDef", "NodeDef"):
        return getattr(_protos.graph_pb2 if name == "GraphDef" else _protos.node_def_pb2, name)
    raise AttributeError(f"module 'adplace' has no attribute {name!r}")

