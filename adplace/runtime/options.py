"""ConfigProto, GPUOptions, GraphOptions, RunOptions, RunMetadata: TF's option messages as plain Python objects.

Like protobuf messages, they take keyword fields, reject unknown fields with ValueError, and nest:
`config.gpu_options.allow_growth = True`.
"""
from __future__ import annotations

import copy


class _Message:
    """A protobuf-like message with a fixed set of fields and default values."""

    _FIELDS: dict = {}

    def __init__(self, **fields):
        for name, default in self._FIELDS.items():
            object.__setattr__(self, name, copy.deepcopy(default))
        for name, value in fields.items():
            if name not in self._FIELDS:
                raise ValueError(f'Protocol message {type(self).__name__} has no "{name}" field.')
            setattr(self, name, value)

    def __setattr__(self, name, value):
        if name not in self._FIELDS:
            raise AttributeError(f"Assignment not allowed (no field \"{name}\" in protocol message object "
                                 f"{type(self).__name__}).")
        object.__setattr__(self, name, value)

    def __eq__(self, other):
        return type(other) is type(self) and vars(self) == vars(other)

    def __repr__(self) -> str:
        changed = {k: v for k, v in vars(self).items() if v != self._FIELDS[k]}
        return f"{type(self).__name__}({', '.join(f'{k}={v!r}' for k, v in changed.items())})"

    def CopyFrom(self, other) -> None:  # noqa: N802 - protobuf's name
        for name in self._FIELDS:
            object.__setattr__(self, name, copy.deepcopy(getattr(other, name)))


class GPUOptions(_Message):
    """GPU memory and visibility options (tf.GPUOptions)."""

    _FIELDS = {"per_process_gpu_memory_fraction": 0.0, "allow_growth": False, "allocator_type": "",
               "visible_device_list": "", "deferred_deletion_bytes": 0, "polling_active_delay_usecs": 0,
               "polling_inactive_delay_msecs": 0, "force_gpu_compatible": False}


class OptimizerOptions(_Message):
    _FIELDS = {"do_common_subexpression_elimination": False, "do_constant_folding": False, "opt_level": 0,
               "do_function_inlining": False, "global_jit_level": 0}


class GraphOptions(_Message):
    _FIELDS = {"optimizer_options": OptimizerOptions(), "place_pruned_graph": False, "enable_bfloat16_sendrecv": False,
               "build_cost_model": 0, "infer_shapes": False, "timeline_step": 0}


class ConfigProto(_Message):
    """Session configuration (tf.ConfigProto): soft placement, placement log, device counts, threads, GPU options."""

    _FIELDS = {"device_count": {}, "intra_op_parallelism_threads": 0, "inter_op_parallelism_threads": 0,
               "use_per_session_threads": False, "placement_period": 0, "device_filters": [],
               "gpu_options": GPUOptions(), "allow_soft_placement": False, "log_device_placement": False,
               "graph_options": GraphOptions(), "operation_timeout_in_ms": 0, "isolate_session_state": False}


class RunOptions(_Message):
    """Per-run options (tf.RunOptions): tracing level and timeout."""

    NO_TRACE, SOFTWARE_TRACE, HARDWARE_TRACE, FULL_TRACE = 0, 1, 2, 3
    _FIELDS = {"trace_level": 0, "timeout_in_ms": 0, "inter_op_thread_pool": 0, "output_partition_graphs": False,
               "report_tensor_allocations_upon_oom": False}


class StepStats(_Message):
    """Per-device execution records of a traced run (filled by the profiler layer)."""

    _FIELDS = {"dev_stats": []}


class RunMetadata(_Message):
    """What a run reports back (tf.RunMetadata): step stats when traced, partition graphs when asked."""

    _FIELDS = {"step_stats": StepStats(), "cost_graph": None, "partition_graphs": []}
