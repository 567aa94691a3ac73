"""TF1's conditional accumulators (tf.ConditionalAccumulator, tf.SparseConditionalAccumulator): gradients from many
replicas summed until enough have arrived, then taken as their mean, with stale ones (computed from an older
global step) dropped. SyncReplicasOptimizer (train/sync_replicas_optimizer.py) builds on them.

    acc = tf.ConditionalAccumulator(tf.float32, shape=[2], shared_name="w/grad_accum")
    apply = acc.apply_grad(grad, local_step=step)     # dropped when step < the accumulator's global step
    mean = acc.take_grad(num_required=3)              # blocks until 3 arrived; resets and advances the global step

The ops are TF 1.15's (ConditionalAccumulator, AccumulatorApplyGradient, AccumulatorTakeGradient, ...: a string
reference handle, like a variable's, so the ops using it are placed with it); kernels in kernels/accumulators.py.
"""
from __future__ import annotations

from adplace.framework import dtypes as _dtypes
from adplace.framework.conversion import convert_to_tensor
from adplace.framework.default_graph import name_scope
from adplace.framework.registry import NotDifferentiable, register_op
from adplace.framework.tensor_shape import TensorShape, as_shape, unknown_shape
from adplace.ops.op_builder import SCALAR, apply_op

_HANDLE = [(_dtypes.as_dtype("string_ref"), SCALAR)]

register_op("ConditionalAccumulator", lambda inputs, attrs, name: _HANDLE, is_stateful=True)
register_op("SparseConditionalAccumulator", lambda inputs, attrs, name: _HANDLE, is_stateful=True)
register_op("AccumulatorNumAccumulated", lambda inputs, attrs, name: [(_dtypes.int32, SCALAR)], ref_inputs=(0,),
            is_stateful=True)
register_op("AccumulatorSetGlobalStep", lambda inputs, attrs, name: [], ref_inputs=(0,), is_stateful=True)
register_op("AccumulatorApplyGradient", lambda inputs, attrs, name: [], ref_inputs=(0,), is_stateful=True)
register_op("AccumulatorTakeGradient", lambda inputs, attrs, name: [(attrs["dtype"], unknown_shape())],
            ref_inputs=(0,), is_stateful=True)
register_op("SparseAccumulatorApplyGradient", lambda inputs, attrs, name: [], ref_inputs=(0,), is_stateful=True)
register_op("SparseAccumulatorTakeGradient", lambda inputs, attrs, name: [
    (_dtypes.int64, TensorShape([None])), (attrs["dtype"], unknown_shape()), (_dtypes.int64, TensorShape([None]))],
    ref_inputs=(0,), is_stateful=True)
for _op_type in ("ConditionalAccumulator", "SparseConditionalAccumulator", "AccumulatorNumAccumulated",
                 "AccumulatorSetGlobalStep", "AccumulatorApplyGradient", "AccumulatorTakeGradient",
                 "SparseAccumulatorApplyGradient", "SparseAccumulatorTakeGradient"):
    NotDifferentiable(_op_type)


class ConditionalAccumulatorBase:
    """What both accumulators share: the handle, dtype, count and global step."""

    def __init__(self, dtype, shape, accumulator_ref):
        self._dtype = _dtypes.as_dtype(dtype).base_dtype
        self._shape = as_shape(shape) if shape is not None else unknown_shape()
        self._accumulator_ref = accumulator_ref
        self._name = accumulator_ref.op.name.split("/")[-1]

    accumulator_ref = property(lambda self: self._accumulator_ref)
    name = property(lambda self: self._name)
    dtype = property(lambda self: self._dtype)

    def num_accumulated(self, name: str | None = None):
        """How many gradients were accumulated since the last take."""
        return apply_op("AccumulatorNumAccumulated", [self._accumulator_ref], {},
                        name or f"{self._name}_NumAccumulated")._outputs[0]

    def set_global_step(self, new_global_step, name: str | None = None):
        """Set the step below which applied gradients are dropped as stale."""
        step = convert_to_tensor(new_global_step, _dtypes.int64, name="new_global_step")
        return apply_op("AccumulatorSetGlobalStep", [self._accumulator_ref, step], {},
                        name or f"{self._name}_SetGlobalStep")

    def _local_step(self, local_step):
        return convert_to_tensor(local_step, _dtypes.int64, name="local_step")


class ConditionalAccumulator(ConditionalAccumulatorBase):
    """Dense gradients of one shape (tf.ConditionalAccumulator)."""

    def __init__(self, dtype, shape=None, shared_name: str | None = None, name: str = "conditional_accumulator",
                 reduction_type: str = "MEAN"):
        if reduction_type not in ("MEAN", "SUM"):
            raise ValueError(f"reduction_type must be MEAN or SUM, got {reduction_type!r}")
        shape = unknown_shape() if shape is None else as_shape(shape)
        ref = apply_op("ConditionalAccumulator", [], {"dtype": _dtypes.as_dtype(dtype).base_dtype, "shape": shape,
                                                      "container": "", "shared_name": shared_name or "",
                                                      "reduction_type": reduction_type}, name)._outputs[0]
        super().__init__(dtype, shape, ref)

    def apply_grad(self, grad, local_step=0, name: str | None = None):
        """Add `grad` (computed at `local_step`) unless it is stale; InvalidArgumentError for another shape."""
        grad = convert_to_tensor(grad, self._dtype, name="grad")
        if not self._shape.is_compatible_with(grad.shape):
            raise ValueError(f"Shapes {grad.shape} and {self._shape} are incompatible (apply_grad of "
                             f"{self._name}).")
        return apply_op("AccumulatorApplyGradient", [self._accumulator_ref, self._local_step(local_step), grad],
                        {"dtype": self._dtype}, name or f"{self._name}_ApplyGradient")

    def take_grad(self, num_required, name: str | None = None):
        """The mean (or sum) of the gradients once `num_required` arrived (blocking); resets the accumulator and
        advances its global step."""
        required = convert_to_tensor(num_required, _dtypes.int32, name="num_required")
        out = apply_op("AccumulatorTakeGradient", [self._accumulator_ref, required], {"dtype": self._dtype},
                       name or f"{self._name}_TakeGradient")._outputs[0]
        out.set_shape(self._shape)
        return out


class SparseConditionalAccumulator(ConditionalAccumulatorBase):
    """IndexedSlices gradients (tf.SparseConditionalAccumulator): rows summed by index, averaged per row."""

    def __init__(self, dtype, shape=None, shared_name: str | None = None,
                 name: str = "sparse_conditional_accumulator", reduction_type: str = "MEAN"):
        if reduction_type not in ("MEAN", "SUM"):
            raise ValueError(f"reduction_type must be MEAN or SUM, got {reduction_type!r}")
        shape = unknown_shape() if shape is None else as_shape(shape)
        ref = apply_op("SparseConditionalAccumulator", [], {
            "dtype": _dtypes.as_dtype(dtype).base_dtype, "shape": shape, "container": "",
            "shared_name": shared_name or "", "reduction_type": reduction_type}, name)._outputs[0]
        super().__init__(dtype, shape, ref)

    def apply_indexed_slices_grad(self, grad, local_step=0, name: str | None = None):
        return self.apply_grad(grad.indices, grad.values, grad.dense_shape, local_step, name)

    def apply_grad(self, grad_indices, grad_values, grad_shape=None, local_step=0, name: str | None = None):
        with name_scope(None, "SparseAccumulatorApplyGradient"):
            indices = convert_to_tensor(grad_indices, _dtypes.int64, name="gradient_indices")
            values = convert_to_tensor(grad_values, self._dtype, name="gradient_values")
            known = grad_shape is not None
            shape = convert_to_tensor(grad_shape if known else [], _dtypes.int64, name="gradient_shape")
        return apply_op("SparseAccumulatorApplyGradient",
                        [self._accumulator_ref, self._local_step(local_step), indices, values, shape],
                        {"dtype": self._dtype, "has_known_shape": known}, name or f"{self._name}_ApplyGradient")

    def take_grad(self, num_required, name: str | None = None):
        """(indices, values, shape) of the mean of the gradients once `num_required` arrived."""
        required = convert_to_tensor(num_required, _dtypes.int32, name="num_required")
        return tuple(apply_op("SparseAccumulatorTakeGradient", [self._accumulator_ref, required],
                              {"dtype": self._dtype}, name or f"{self._name}_TakeGradient")._outputs)

    def take_indexed_slices_grad(self, num_required, name: str | None = None):
        from adplace.framework.indexed_slices import IndexedSlices
        indices, values, shape = self.take_grad(num_required, name)
        return IndexedSlices(values, indices, shape)
