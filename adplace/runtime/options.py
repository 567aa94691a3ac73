"""ConfigProto, GPUOptions, GraphOptions, RunOptions, RunMetadata: TF's option messages as plain Python objects.

Like protobuf messages, they take keyword fields, reject unknown fields with ValueError, and nest:
`config.gpu_options.allow_growth = True`.
"""
from __future__ import annotations

from adplace.runtime.message import RepeatedMessages, _Message
from adplace.runtime.step_stats import StepStats


class GPUOptions(_Message):
    """GPU memory and visibility options (tf.GPUOptions)."""

    _FIELDS = {"per_process_gpu_memory_fraction": 0.0, "allow_growth": False, "allocator_type": "",
               "visible_device_list": "", "deferred_deletion_bytes": 0, "polling_active_delay_usecs": 0,
               "polling_inactive_delay_msecs": 0, "force_gpu_compatible": False}


class OptimizerOptions(_Message):
    _FIELDS = {"do_common_subexpression_elimination": False, "do_constant_folding": False, "opt_level": 0,
               "do_function_inlining": False, "global_jit_level": 0}


class RewriterConfig(_Message):
    """Graph rewrites (TF's rewriter_config.proto). `remapping` covers adplace's elementwise fusion on CUDA GPUs:
    DEFAULT or ON fuses, OFF runs every op as its own kernel."""

    DEFAULT, ON, OFF, AGGRESSIVE = 0, 1, 2, 3
    _FIELDS = {"remapping": 0, "constant_folding": 0, "arithmetic_optimization": 0, "dependency_optimization": 0,
               "layout_optimizer": 0, "memory_optimization": 0, "disable_model_pruning": False}


class GraphOptions(_Message):
    _FIELDS = {"optimizer_options": OptimizerOptions(), "place_pruned_graph": False, "enable_bfloat16_sendrecv": False,
               "build_cost_model": 0, "infer_shapes": False, "timeline_step": 0, "rewrite_options": RewriterConfig()}


class ThreadPoolOptionProto(_Message):
    """One entry of ConfigProto.session_inter_op_thread_pool (accepted; adplace runs each step on its own pool)."""

    _FIELDS = {"num_threads": 0, "global_name": ""}


class ConfigProto(_Message):
    """Session configuration (tf.ConfigProto): soft placement, placement log, device counts, threads, GPU options."""

    _FIELDS = {"device_count": {}, "intra_op_parallelism_threads": 0, "inter_op_parallelism_threads": 0,
               "use_per_session_threads": False, "placement_period": 0, "device_filters": [],
               "gpu_options": GPUOptions(), "allow_soft_placement": False, "log_device_placement": False,
               "graph_options": GraphOptions(), "operation_timeout_in_ms": 0, "isolate_session_state": False,
               "session_inter_op_thread_pool": RepeatedMessages(ThreadPoolOptionProto)}


class RunOptions(_Message):
    """Per-run options (tf.RunOptions): tracing level and timeout."""

    NO_TRACE, SOFTWARE_TRACE, HARDWARE_TRACE, FULL_TRACE = 0, 1, 2, 3
    _FIELDS = {"trace_level": 0, "timeout_in_ms": 0, "inter_op_thread_pool": 0, "output_partition_graphs": False,
               "report_tensor_allocations_upon_oom": False}


class CallableOptions(_Message):
    """What Session._make_callable_from_options runs: feed and fetch tensor names, target op names, run options."""

    _FIELDS = {"feed": [], "fetch": [], "target": [], "run_options": RunOptions(), "tensor_connection": [],
               "feed_devices": {}, "fetch_devices": {}, "fetch_skip_sync": False}


class RunMetadata(_Message):
    """What a run reports back (tf.RunMetadata): step stats when traced, partition graphs when asked."""

    _FIELDS = {"step_stats": StepStats(), "cost_graph": None, "partition_graphs": []}


def short_debug_string(message: _Message) -> str:
    """The fields of `message` that differ from their defaults, on one line, as protobuf's ShortDebugString writes
    them (TF quotes it in session errors): `allow_soft_placement: true gpu_options { allow_growth: true }`."""
    parts = []
    for name, default in type(message)._FIELDS.items():
        value = getattr(message, name)
        if value == default:
            continue
        if isinstance(value, _Message):
            parts.append(f"{name} {{ {short_debug_string(value)} }}")
        elif isinstance(value, dict):
            parts.extend(f"{name} {{ key: {_text(k)} value: {_text(v)} }}" for k, v in value.items())
        elif isinstance(value, (list, tuple)):
            parts.extend(f"{name} {{ {short_debug_string(v)} }}" if isinstance(v, _Message) else f"{name}: {_text(v)}"
                         for v in value)
        else:
            parts.append(f"{name}: {_text(value)}")
    return " ".join(parts)


def _text(value) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return f'"{value}"'
    return str(value)
