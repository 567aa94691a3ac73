"""The plan pass that lets a step compute into the array of an input whose last reader it is (TF's buffer
forwarding, `OpKernelContext::forward_input_or_allocate_output`): an intermediate's memory is reused once its last
consumer has run, instead of every elementwise op allocating a fresh array.

Chosen when a plan's sequential runner is generated: a step on the CPU (or a virtual GPU) gets the kernel from
adplace.kernels.forwarding when one of its inputs is freed right after it (no later step reads it, no fetch
returns it), is not fed, and is read once by the step. Whether the array is really free is decided at run time
by its reference count, so fed, fetched, aliased, viewed, constant, memoised and variable values are never written.
Where the shape is not static (a `None` batch dimension), the generated code tests the array's size before calling
the forwarding kernel, so steps on small arrays pay a comparison, not a call.
Only the sequential runners use these kernels: on the inter-op pool the last reader in plan order need not be the
last to run, and traced runs, loops' sub-plans and plans a cond may leave values dead in use the plain kernels.
Turned off by `RewriterConfig(memory_optimization=RewriterConfig.NO_MEM_OPT)`.
"""
from __future__ import annotations

from typing import Callable, NamedTuple

from adplace.kernels import forwarding
from adplace.runtime.plan_slots import as_tuple as _as_tuple


def enabled(config) -> bool:
    """Whether a session with ConfigProto `config` forwards buffers (memory_optimization not NO_MEM_OPT)."""
    from adplace.runtime import options

    return config.graph_options.rewrite_options.memory_optimization != options.RewriterConfig.NO_MEM_OPT


class Forwarding(NamedTuple):
    """A step's forwarding kernel, the input slot it may write into, and whether that input is always large enough
    (a static shape of MIN_BYTES or more); otherwise generated code calls it only for arrays that are."""

    kernel: Callable
    slot: int
    always: bool


def forwarding_kernels(plan) -> dict[int, Forwarding]:
    """Step index -> how it may write its result into the array of an input dying at that step."""
    if not plan.forwards_buffers or forwarding.FREE_REFS is None:
        return {}
    fed = set(plan.feed_slots)
    chosen = {}
    for index, (kernel, ins, frees, op, device) in enumerate(zip(plan.kernels, plan.ins, plan.frees, plan.ops,
                                                                 plan.devices)):
        ins = _as_tuple(ins)
        if device.is_cuda or index in plan.transfer_steps or index in plan.fused or len(ins) != len(op._inputs) or \
                not 1 <= len(ins) <= 2:
            continue
        dying = set(_as_tuple(frees)) - fed
        for position, slot in enumerate(ins):
            if slot in dying and ins.count(slot) == 1:
                variant = forwarding.forwarding_kernel(op, kernel, position)
                if variant is not None:
                    shape = op._outputs[0]._shape
                    chosen[index] = Forwarding(variant, slot, shape.is_fully_defined())
                    break
    return chosen
