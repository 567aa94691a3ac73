"""One task of a cluster (/job:ps/task:0): its devices, the variables and resources that outlive client sessions
(TF's resource containers), and the graph pieces clients register and run on it. A Ray actor holds one (server.py);
the class itself has no Ray in it, so it is also tested directly.

    task = Task(cluster_dict, "ps", 0)
    task.register("key", graph_def_bytes, inputs=["x:0"], outputs=["y:0"], targets=["train"])
    values = task.run("key", step_options, *input_values)

A piece runs in a session of its own over the piece's graph, on this task's devices, whose kernels find variables in
the task's store by (container, name), resources without a shared_name in the client session's store by op name (so
the pieces of one client session share them), and resources with one in the task's (so all clients share them, and
they outlive the client sessions, as TF's resource containers do, until tf.Session.reset).
A piece's run is a step: it fails as a whole, leaving the variables it wrote as they were.
"""
from __future__ import annotations

import dataclasses
import itertools
import threading
import time

from adplace import devices as _devices
from adplace.distributed.transfers import PieceReport, nbytes
from adplace.distributed.cluster_spec import ClusterSpec
from adplace.framework import errors
from adplace.framework.graph import Graph
from adplace.framework.importer import import_graph_def
from adplace.lib import protos
from adplace.runtime import options as _options
from adplace.runtime.kernel_context import KernelContext
from adplace.runtime.resources import SessionResources, target_manager
from adplace.runtime.session import BaseSession
from adplace.runtime.variable_state import StepGate, VariableCell
from adplace.runtime.waits import Waits

_orders = itertools.count(1)


class _ClientResources(SessionResources):
    """A client session's resources on this task: private ones (named by op, _PieceContext.resource_name, so shared
    by its pieces), shared ones in the task's target manager (shared by every client)."""

    def close(self) -> None:
        """Drop the client session's private resources; shared ones stay on the task (TF's resource containers)
        until tf.Session.reset."""
        self._own.release(self._token)


class _PieceContext(KernelContext):
    """Kernels of a piece: the task's variables and step gate, the client session's resources."""

    def __init__(self, placement, target: bytes, task: "Task", resources: _ClientResources):
        super().__init__(placement, target)
        self._task = task
        self.gate, self.steps = task.gate, task.gate.steps
        self.waits = Waits(self.steps, placement)
        self.resources = resources

    @staticmethod
    def resource_name(op, shared_name: str) -> str:
        """Without a shared_name, a resource is named after its op alone: every piece of the client session that
        makes it again (partition.py) finds the same one."""
        return shared_name or f"_{op.name}"

    def variable(self, op) -> VariableCell:
        return self._task.variable(op.get_attr("container") if "container" in op._attrs else "", op.name,
                                   self._placement.device_by_op_id[op._id])

    def close(self) -> None:
        self.waits.close()
        self._functions.close()


class _PieceSession(BaseSession):
    """A registered piece's session: the task's devices and a _PieceContext."""

    def __init__(self, graph: Graph, task: "Task", resources: _ClientResources, config):
        self._task, self._resources = task, resources
        super().__init__("", graph, config)

    def _local_devices(self) -> list:
        return self._task.devices

    def _kernel_context(self, placement) -> KernelContext:
        return _PieceContext(placement, self._task.target, self._task, self._resources)


class _Piece:
    def __init__(self, session: _PieceSession, call):
        self.session, self.call = session, call


class Task:
    """A cluster task's state (see the module)."""

    def __init__(self, cluster: dict, job: str, task_index: int, config_bytes: bytes = b""):
        self.cluster, self.job, self.task_index = cluster, job, task_index
        self.address = ClusterSpec(cluster).task_address(job, task_index)
        self.target = ("grpc://" + self.address).encode()
        self.config = _options.ConfigProto()
        if config_bytes:
            self.config.ParseFromString(config_bytes)
        self.devices = [dataclasses.replace(d, job=job, task=task_index)
                        for d in _devices.local_devices(self.config.device_count,
                                                        self.config.gpu_options.visible_device_list)]
        self.gate = StepGate()
        self._lock = threading.Lock()
        self._variables: dict[tuple[str, str], VariableCell] = {}
        self._sessions: dict[str, tuple[_ClientResources, dict]] = {}  # client session -> (resources, pieces)

    # --- what clients ask ---------------------------------------------------------------------------------------
    def ping(self) -> tuple[str, int]:
        return self.job, self.task_index

    def cluster_dict(self) -> dict:
        return self.cluster

    def list_devices(self) -> list[tuple[str, str, int, int]]:
        return [(d.device_type, d.index, d.memory_limit_bytes, int(d.is_virtual)) for d in self.devices]

    def register(self, session_id: str, key: str, graph_def: bytes, inputs: list[str], outputs: list[str],
                 targets: list[str]) -> None:
        """Build piece `key` of a client session once: its graph, its session, its callable."""
        with self._lock:
            resources, pieces = self._sessions.get(session_id) or (None, None)
            if resources is None:
                resources = _ClientResources(self.target)
                pieces = {}
                self._sessions[session_id] = (resources, pieces)
            if key in pieces:
                return
        proto = protos.graph_pb2.GraphDef()
        proto.ParseFromString(graph_def)
        graph = Graph()
        with graph.as_default():
            import_graph_def(proto, name="")
        config = _options.ConfigProto()
        config.CopyFrom(self.config)
        config.allow_soft_placement = False
        config.log_device_placement = False
        session = _PieceSession(graph, self, resources, config)
        feeds = [graph.get_tensor_by_name(n) for n in inputs]
        fetches = [graph.get_tensor_by_name(n) for n in outputs] + [graph.get_operation_by_name(n) for n in targets]
        call = session.make_callable(fetches, feed_list=feeds, accept_options=True)
        with self._lock:
            pieces.setdefault(key, _Piece(session, call))

    def run(self, session_id: str, key: str, timeout_ms: int, n_outputs: int, n_inputs: int, *values,
            trace: bool = False) -> list:
        """Run a registered piece with its `n_inputs` input values (the values after them are the done markers of
        the pieces it runs after, which Ray waited for); its output values, then its own done marker: a
        transfers.PieceReport (output bytes, times, and its step stats when `trace`)."""
        try:
            piece = self._sessions[session_id][1][key]
        except KeyError:
            raise TaskError("AbortedError", f"Piece {key} of session {session_id} is not registered on "
                                            f"{self.address} (the task was reset or restarted)") from None
        options = _options.RunOptions(timeout_in_ms=timeout_ms) if timeout_ms > 0 or trace else None
        metadata = None
        if trace:
            options.trace_level = _options.RunOptions.FULL_TRACE
            metadata = _options.RunMetadata()
        values = values[:n_inputs]
        start = time.time_ns()
        try:
            results = piece.call(*values, options=options, run_metadata=metadata) if options is not None else \
                piece.call(*values)
        except errors.OpError as exc:  # TF's errors hold ops, which stay here: the client gets class and message
            raise TaskError(type(exc).__name__, f"{exc.message} (on {self.address})") from None
        outputs = list(results)[:n_outputs]
        stats = metadata.step_stats.SerializeToString() if trace else b""
        return [*outputs, PieceReport([nbytes(v) for v in outputs], start, time.time_ns(), stats)]

    def close_session(self, session_id: str) -> None:
        with self._lock:
            resources, pieces = self._sessions.pop(session_id, (None, {}))
        for piece in pieces.values():
            piece.session.close()
        if resources is not None:
            resources.close()

    def reset(self, containers: list[str] | None) -> None:
        """tf.Session.reset: drop the variables and shared resources of `containers` ("" the default container;
        None: all) and close the client sessions."""
        with self._lock:
            sessions = list(self._sessions)
            for key in list(self._variables):
                if containers is None or not containers or key[0] in containers:
                    del self._variables[key]
        for session_id in sessions:
            self.close_session(session_id)
        target_manager(self.target).clear(containers)

    # --- kernels' view ------------------------------------------------------------------------------------------
    def variable(self, container: str, name: str, device) -> VariableCell:
        key = (container or "", name)
        cell = self._variables.get(key)
        if cell is None:
            with self._lock:
                cell = self._variables.get(key)
                if cell is None:
                    cell = self._variables[key] = VariableCell(name, device, next(_orders))
        return cell


class TaskError(Exception):
    """An op's error on a task, as it travels to the client: TF's error class name and the message."""

    def __init__(self, kind: str, message: str):
        super().__init__(kind, message)
        self.kind, self.message = kind, message

    def as_op_error(self) -> errors.OpError:
        cls = getattr(errors, self.kind, None)
        cls = cls if isinstance(cls, type) and issubclass(cls, errors.OpError) else errors.UnknownError
        return cls(None, None, self.message)

