"""KernelContext: what kernel factories may ask of a session (variable cells, random streams, the steps' journals,
transfers and fetch conversion per device), one per session.

    ctx = KernelContext(placement, target)
    cell = ctx.variable(var_op)              # the variable's VariableCell in this session
    kernel = ctx.kernel(op, device)          # built once per (op, session), shared by every plan
    queue = ctx.resources.lookup_or_create(container, name, shared, make, check)     # runtime/resources.py
    run = ctx.function(op._attrs["f"])        # a traced function's runner (runtime/functions.py)
    ctx.waits.wait(cond, ready, op, "Dequeue")                                         # runtime/waits.py
"""
from __future__ import annotations

from typing import Callable

import numpy as np

from adplace.framework.registry import kernel_factory
from adplace.kernels import gpu as _gpu
from adplace.kernels.registration import forward
from adplace.runtime.executor import _fetch_copy, _fetch_value
from adplace.runtime import variable_state
from adplace.runtime.functions import FunctionRunners
from adplace.runtime.resources import SessionResources
from adplace.runtime.variable_state import StepGate, VariableCell
from adplace.runtime.waits import Waits


class KernelContext:
    """What kernel factories may ask of the session: variable cells, per-op random streams, the steps' journals
    (`steps.slot.journal`: the running step's, per thread), and the array module of the device a kernel is built for
    (NumPy here; adplace.kernels.gpu's context for CUDA)."""

    xp = np
    write_rows = staticmethod(variable_state.write_rows)  # row writes (Scatter*, SparseApply*): in place when safe
    fuse_elementwise = True  # fuse elementwise chains on CUDA GPUs (ConfigProto's remapping rewrite can turn it off)
    fold_constants = True    # compute constant subgraphs when plans are built (RewriterConfig.constant_folding)
    optimize_dependencies = True  # values nothing reads are not computed (RewriterConfig.dependency_optimization)
    forward_buffers = True   # steps may compute into inputs they read last (RewriterConfig.memory_optimization)

    def __init__(self, placement, target: bytes | None = b""):
        self._placement = placement
        self._cells: dict[int, VariableCell] = {}
        self._rngs: dict[int, np.random.Generator] = {}
        self._kernels: list = []        # op id -> kernel (a list: graphs reach millions of ops)
        self.gate = StepGate()           # snapshots against variable-writing steps
        self.steps = self.gate.steps     # per thread: the journal of the step it runs kernels for
        self._cuda: dict = {}            # CUDA device -> its adplace.kernels.gpu.DeviceState (stream, events)
        self.resources = SessionResources(target)   # queues and other resources, by container and shared_name
        self.waits = Waits(self.steps, placement)    # blocking kernels wait through it
        self._functions = FunctionRunners()          # traced functions that kernels call (runtime/functions.py)

    def close(self) -> None:
        """The session closes: cancel its kernels' waits, drop its resources (and its hold on shared ones)."""
        self.waits.close()
        self.resources.close()
        self._functions.close()

    def function(self, function) -> Callable[[list], list]:
        """The runner of a traced function (framework/function_graph.DefinedFunction) in this session: called with
        the function's argument and captured values, it returns its outputs (runtime/functions.py)."""
        return self._functions.get(function)

    @staticmethod
    def resource_name(op, shared_name: str) -> str:
        """The name of a resource op's resource in the session's store: its `shared_name`, else one private to the
        op (TF's `_<n>_<op name>`; a cluster task names it after the op alone, distributed/task.py)."""
        return shared_name or f"_{op._id}_{op.name}"

    def variable(self, op) -> VariableCell:
        """The cell of variable op `op` in this session (made when a plan first needs it)."""
        cell = self._cells.get(op._id)
        if cell is None:
            cell = self._cells[op._id] = VariableCell(op.name, self._placement.device_by_op_id[op._id], op._id)
        return cell

    def random_generator(self, op) -> np.random.Generator:
        rng = self._rngs.get(op._id)
        if rng is None:
            seed, seed2 = op._attrs.get("seed", 0), op._attrs.get("seed2", 0)
            rng = np.random.default_rng([seed, seed2] if seed or seed2 else None)
            self._rngs[op._id] = rng
        return rng

    @staticmethod
    def to_device(value):
        """A host value (a Const's) as the device holds it: NumPy devices hold it as it is."""
        return value

    def kernels_sized(self, n_ops: int) -> list:
        """The session's kernels by op id, grown to cover `n_ops` ops (None where not built yet)."""
        kernels = self._kernels
        if n_ops > len(kernels):
            kernels.extend([None] * (n_ops - len(kernels)))
        return kernels

    def kernel(self, op, device) -> Callable:
        """The op's kernel in this session, built once and shared by every plan that runs the op."""
        kernels = self.kernels_sized(op._id + 1)
        kernel = kernels[op._id]
        if kernel is None:
            if device.is_cuda:
                kernel = _gpu.build_kernel(op, self.cuda_state(device), self)
            else:
                kernel = kernel_factory(op._type, device.device_type)(op, self)
            kernels[op._id] = kernel
        return kernel

    def cuda_state(self, device) -> "_gpu.DeviceState":
        """The session's stream and events on a CUDA device, made on first use."""
        state = self._cuda.get(device)
        if state is None:
            state = self._cuda[device] = _gpu.DeviceState(device, _gpu.cupy_module())
        return state

    @property
    def cuda_states(self) -> list:
        return list(self._cuda.values())

    def transfer_kernel(self, src, dst) -> Callable:
        """The copy from device `src` to `dst` (None: a host value being fed): a CUDA copy, or between devices in host
        memory (the CPU, virtual GPUs) the value itself, as Identity passes it on. Devices may share an array there:
        every write into an existing array (buffer forwarding, in-place variable updates, row writes) first checks
        that nothing else refers to it."""
        if dst.is_cuda:
            if src is not None and src.is_cuda:
                return _gpu.peer_kernel(self.cuda_state(src), self.cuda_state(dst))
            return _gpu.upload_kernel(self.cuda_state(dst))
        if src is not None and src.is_cuda:
            return _gpu.download_kernel(self.cuda_state(src))
        return forward  # host memory: the value itself

    def fetch_converter(self, device, copy_host_values: bool) -> Callable:
        """How a fetch on a CUDA device reaches the caller: device arrays arrive in fresh pinned memory; host-memory
        values (int32) follow the plan's rule for the others (copied when they may alias what the graph keeps)."""
        download, is_device_array = _gpu.download_kernel(self.cuda_state(device)), _gpu.is_device_array
        convert_host = _fetch_copy if copy_host_values else _fetch_value
        return lambda value: _fetch_value(download(value)) if is_device_array(value) else convert_host(value)
