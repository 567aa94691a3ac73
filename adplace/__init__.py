"""adplace: device placement for dataflow graphs. `import adplace as tf` and TF1 graph-mode code runs.

Only re-exports live here; see adplace/framework (graph), adplace/ops (op constructors), adplace/placement.py (the
placer) and adplace/runtime (sessions).
"""
import types as _types

from adplace import config, errors, nn, train
from adplace import contrib, layers
from adplace.framework import dtypes
from adplace.framework.device_spec import DeviceSpec
from adplace.framework.dtypes import (DType, as_dtype, bool, complex64, complex128, double, float16, float32,  # noqa: A004
                                      float32_ref, float64, float64_ref, half, int8, int16, int32, int32_ref, int64,
                                      int64_ref, string, uint8, uint16, uint32, uint64)
from adplace.framework.conversion import convert_to_tensor, register_tensor_conversion_function
from adplace.framework.default_graph import (add_to_collection, add_to_collections, colocate_with,
                                             control_dependencies, device, get_collection, get_collection_ref,
                                             name_scope, set_random_seed)
from adplace.framework.graph import Graph, GraphKeys, get_default_graph, reset_default_graph
from adplace.framework.operation import NodeDef, Operation, Tensor
from adplace.framework.session_stack import get_default_session
from adplace.framework.registry import NoGradient, NotDifferentiable, RegisterGradient
from adplace.framework.tensor_shape import Dimension, TensorShape
from adplace.gradients import AggregationMethod, UnconnectedGradients, gradients
from adplace.gradient_checker import compute_gradient as _compute_gradient
from adplace.gradient_checker import compute_gradient_error as _compute_gradient_error
from adplace.kernels import cpu as _cpu_kernels  # noqa: F401 - registers the NumPy kernels
from adplace.ops.array_ops import (concat, expand_dims, fill, identity, invert_permutation, newaxis, ones, ones_like,
                                   placeholder, rank, reshape, shape, size, split, squeeze, stack, stop_gradient, tile,
                                   transpose, unstack, where, zeros, zeros_like)
from adplace.ops.constant_op import constant
from adplace.ops.control_flow_ops import group, no_op, tuple, with_dependencies  # noqa: A004
from adplace.ops.init_ops import (constant_initializer, glorot_normal_initializer, glorot_uniform_initializer,
                                  initializers, ones_initializer, random_normal_initializer, random_uniform_initializer,
                                  truncated_normal_initializer, variance_scaling_initializer, zeros_initializer)
from adplace.ops.math_ops import (abs, add, add_n, cast, ceil, cos, cumprod, cumsum, div, divide, equal, exp, floor, floordiv,  # noqa: A004
                                  floormod, greater, greater_equal, less, less_equal, log, log1p, matmul, maximum,
                                  minimum, multiply, negative, not_equal, pow, range, reciprocal, reduce_max,
                                  reduce_mean, reduce_min, reduce_prod, reduce_sum, relu, rsqrt, sigmoid, sign, sin,
                                  sqrt, square, squared_difference, subtract, tan, tanh, to_float, truediv)
from adplace.ops.random_ops import random_normal, random_uniform, truncated_normal
from adplace.ops.state_ops import assign, assign_add, assign_sub, is_variable_initialized
from adplace.ops.variables import (Variable, all_variables, global_variables, global_variables_initializer,
                                   initialize_all_variables, local_variables, local_variables_initializer,
                                   trainable_variables, variables_initializer)
from adplace.ops.variable_scope import (AUTO_REUSE, VariableScope, get_local_variable, get_variable,
                                        get_variable_scope, variable_scope)
from adplace.runtime.options import (ConfigProto, GPUOptions, GraphOptions, OptimizerOptions, RewriterConfig,
                                     RunMetadata, RunOptions)
from adplace.runtime.session import InteractiveSession, Session
from adplace import client, profiler
from adplace.profiler import run_profile, save_profile
from adplace.train.device_setter import PS_OPS, assign_to_device
from adplace.kernels.gpu import pinned_empty

mod = floormod
random = _types.SimpleNamespace(uniform=random_uniform, normal=random_normal, truncated_normal=truncated_normal,
                                set_random_seed=set_random_seed)
test = _types.SimpleNamespace(compute_gradient=_compute_gradient, compute_gradient_error=_compute_gradient_error)

__version__ = "0.1.0"
