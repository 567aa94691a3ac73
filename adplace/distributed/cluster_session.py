"""Sessions on a cluster (tf.Session("grpc://host:port")): the client places the graph on the devices of every task
of the cluster, cuts each run signature into pieces per task (partition.py), registers each piece with its task
once, and runs a step as Ray calls: every piece starts when the values it takes are ready, values move between tasks
through Ray's object store, and only the fetched values come back.

    with tf.Session(server.target) as sess:     # the task at that address is the master: unconstrained ops go there
        sess.run(train_op)

Errors: a task that is not there (never started, or its actor died) is UnavailableError naming it, within
`ConfigProto.operation_timeout_in_ms` (10 s when unset) for finding it; an op's error on a task is raised as that
error; a run past RunOptions.timeout_in_ms is DeadlineExceededError.

What a step moved between tasks is `last_step_transfers`; a traced run (RunOptions(trace_level=FULL_TRACE) and a
RunMetadata) gets the tasks' step stats with the transfers between tasks in them (transfers.py).
"""
from __future__ import annotations

import contextlib
import itertools
import threading
import time
import uuid

from adplace.devices import DEVICE_TYPE_PRIORITY, Device
from adplace.distributed import partition as _partition
from adplace.distributed import ray_backend
from adplace.distributed.cluster_spec import ClusterSpec
from adplace.distributed import transfers as _transfers
from adplace.distributed.task import TaskError
from adplace.framework import errors
from adplace.placement import PlacementTable, Placer
from adplace.runtime.feeds import feed_converter, feed_tensors
from adplace.runtime.fetches import FetchMapper

CONNECT_TIMEOUT_MS = 10_000


def _task_name(job: str, task: int) -> str:
    return f"/job:{job}/replica:0/task:{task}"


def _unavailable(what: str, exc: BaseException | None = None) -> errors.UnavailableError:
    detail = f" ({type(exc).__name__}: {exc})" if exc is not None else ""
    return errors.UnavailableError(None, None, f"{what}{detail}")


def cluster_tasks(cluster: dict) -> dict[tuple[str, int], str]:
    """(job, task index) -> address of every task of a cluster (a ClusterSpec's dict)."""
    spec = ClusterSpec(cluster)
    return {(job, i): spec.task_address(job, i) for job in spec.jobs for i in spec.task_indices(job)}


def find_actor(address: str, timeout_ms: int):
    """The actor of the task at `address`, waiting up to `timeout_ms` for it to appear; UnavailableError after."""
    ray = ray_backend.connect()
    deadline = time.monotonic() + timeout_ms / 1000
    while True:
        try:
            actor = ray.get_actor(ray_backend.actor_name(address), namespace=ray_backend.NAMESPACE)
            ray.get(actor.ping.remote(), timeout=max(0.1, deadline - time.monotonic()))
            return actor
        except Exception as exc:  # noqa: BLE001 - not there yet, or dying: retried until the deadline
            if time.monotonic() >= deadline:
                raise _unavailable(f"No task is serving {address} (waited {timeout_ms} ms)", exc) from None
            time.sleep(0.1)


class ClusterSession:
    """The remote half of a tf.Session on a grpc:// target (runtime/session.py delegates to it)."""

    def __init__(self, target: bytes, graph, config):
        self._graph, self._config = graph, config
        self._timeout_ms = config.operation_timeout_in_ms or CONNECT_TIMEOUT_MS
        self._ray = ray_backend.connect()
        master_address = ray_backend.strip_scheme(target)
        master = find_actor(master_address, self._timeout_ms)
        tasks = cluster_tasks(self._ray.get(master.cluster_dict.remote()))
        self._addresses = {_task_name(job, i): address for (job, i), address in tasks.items()}
        self._task_ids = {_task_name(job, i): (job, i) for job, i in tasks}
        self._master = next(name for name, address in self._addresses.items() if address == master_address)
        self._actors = {self._master: master}
        self._session_id = uuid.uuid4().hex
        self._lock = threading.RLock()
        self._plans: dict = {}
        self._registered: dict = {}  # task -> set of piece keys registered there (by this session)
        self._plan_ids = itertools.count()
        self._closed = False
        self.last_step_transfers: dict = {}  # (source task, destination task) -> bytes of the latest step
        devices = self._devices()
        self._placement = PlacementTable(devices)
        self._placer = Placer(self._placement, config.allow_soft_placement, config.log_device_placement,
                              preferred_task=self._master)

    # --- tasks ----------------------------------------------------------------------------------------------------
    def _actor(self, task: str):
        actor = self._actors.get(task)
        if actor is None:
            address = self._addresses[task]
            actor = self._actors[task] = find_actor(address, self._timeout_ms)
        return actor

    def _devices(self) -> list[Device]:
        found = []
        for task in sorted(self._addresses):
            job, index = self._task_ids[task]
            actor = self._actor(task)  # UnavailableError when it is not there
            try:
                listed = self._ray.get(actor.list_devices.remote())
            except Exception as exc:  # noqa: BLE001 - a task that died meanwhile
                raise _unavailable(f"Task {task} at {self._addresses[task]} is unreachable", exc) from None
            found += [Device(kind, i, bool(virtual), memory_limit_bytes=memory, job=job, task=index)
                      for kind, i, memory, virtual in listed]
        return sorted(found, key=lambda d: (-DEVICE_TYPE_PRIORITY.get(d.device_type, 0), d.name))

    def list_devices(self) -> list:
        from adplace.devices import DeviceAttributes
        return [DeviceAttributes(d.name, d.device_type, d.memory_limit_bytes, 0) for d in self._placement.devices]

    # --- running ------------------------------------------------------------------------------------------------
    def run(self, fetches, feed_dict=None, options=None, run_metadata=None):
        if self._closed:
            raise RuntimeError("Attempted to use a closed Session.")
        if not self._graph._ops:
            raise RuntimeError("The Session graph is empty.  Add operations to the graph before calling run().")
        fed, flatten = feed_tensors(self._graph, feed_dict) if feed_dict else ([], None)
        mapper = FetchMapper(self._graph, fetches)
        values = [] if not feed_dict else [feed_converter(t)(v) for t, v in zip(
            fed, feed_dict.values() if flatten is None else flatten(feed_dict))]
        plan = self._plan(tuple(mapper.elements), tuple(fed))
        timeout_ms = (options.timeout_in_ms if options is not None and options.timeout_in_ms else 0) or \
            self._config.operation_timeout_in_ms
        trace = options is not None and run_metadata is not None and \
            options.trace_level == options.FULL_TRACE
        results, reports = self._step(plan, values, timeout_ms, trace)
        self.last_step_transfers = _transfers.step_transfers(plan, values, reports, results)
        if run_metadata is not None:
            run_metadata.Clear()
            if trace:
                run_metadata.step_stats.SetInParent()
                _transfers.fill_step_stats(run_metadata.step_stats, plan, list(fed), reports,
                                           self._placement.device_of)
            if options is not None and options.output_partition_graphs:
                _transfers.add_partition_graphs(run_metadata, plan)
        return mapper.build(results)

    def make_callable(self, fetches, feed_list=None, accept_options: bool = False):
        """Session.make_callable: a function of the `feed_list` values running `fetches` (keywords `options` and
        `run_metadata` pass on to run)."""
        feeds = list(feed_list or [])

        def session_callable(*values, options=None, run_metadata=None):
            if len(values) != len(feeds):
                raise TypeError(f"session_callable() takes {len(feeds)} feed values, got {len(values)}")
            return self.run(fetches, dict(zip(feeds, values)) if feeds else None, options, run_metadata)
        return session_callable

    def _plan(self, elements: tuple, fed: tuple):
        key = (elements, fed, self._graph.version)
        with self._lock:
            plan = self._plans.get(key)
            if plan is None:
                _partition.follow_handles(self._placement, self._placer.place(self._graph))
                plan = _partition.partition(self._graph, self._placement.device_of, list(elements), list(fed))
                plan.id = f"{self._session_id}/{next(self._plan_ids)}"
                self._plans[key] = plan
            for j, piece in enumerate(plan.pieces):
                self._register(plan, j, piece)
        return plan

    def _register(self, plan, j: int, piece) -> None:
        key = f"{plan.id}/{j}"
        done = self._registered.setdefault(piece.task, set())
        if key in done:
            return
        actor = self._actor(piece.task)
        outputs = [t.name for t in piece.outputs]
        self._call(piece.task, actor.register.remote(self._session_id, key, piece.graph_def, piece.input_names,
                                                     outputs, piece.targets))
        done.add(key)

    def _call(self, task: str, ref, timeout_s: float | None = None):
        try:
            return self._ray.get(ref, timeout=timeout_s)
        except Exception as exc:  # noqa: BLE001 - mapped to TF's errors below
            raise self._error(task, exc) from None

    def _error(self, task: str | None, exc: BaseException) -> BaseException:
        ray = self._ray
        cause = getattr(exc, "cause", None)
        if isinstance(cause, TaskError):
            if cause.kind == "AbortedError" and task is not None:  # the task forgot this session: register again
                self._registered.pop(task, None)
            return cause.as_op_error()
        if isinstance(exc, errors.OpError):
            return exc
        if isinstance(exc, ray.exceptions.GetTimeoutError):
            return errors.DeadlineExceededError(None, None, "Timed out waiting for the tasks of the step")
        gone = tuple(getattr(ray.exceptions, name) for name in ("RayActorError", "ActorDiedError",
                                                                 "ActorUnavailableError")
                     if hasattr(ray.exceptions, name))
        if isinstance(exc, gone):
            if task is not None:
                self._actors.pop(task, None)
                self._registered.pop(task, None)
            where = f"Task {task} at {self._addresses.get(task, '?')}" if task else "A task"
            return _unavailable(f"{where} is unavailable (its actor died or restarted)", exc)
        return exc

    def _step(self, plan, feeds: list, timeout_ms: int, trace: bool = False) -> tuple[list, list]:
        """Run the plan's pieces: the fetched values, and each piece's transfers.PieceReport."""
        refs: list = []
        done: list = []
        tasks: list = []
        for j, piece in enumerate(plan.pieces):
            args = [feeds[s[1]] if s[0] == "feed" else refs[s[1]][s[2]] for s in piece.inputs]
            deps = [done[i] for i in sorted(piece.after)]
            actor = self._actor(piece.task)
            n = len(piece.outputs)
            out = actor.run.options(num_returns=n + 1).remote(self._session_id, f"{plan.id}/{j}", timeout_ms, n,
                                                                len(args), *args, *deps, trace=trace)
            out = out if n else [out]
            refs.append(out[:n])
            done.append(out[n])
            tasks.append(piece.task)
        timeout_s = timeout_ms / 1000 + 5 if timeout_ms else None
        # every piece, in order: the first error is the step's
        reports = [self._call(tasks[j], marker, timeout_s) for j, marker in enumerate(done)]
        reports = [r[-1] if isinstance(r, list) else r for r in reports]  # one return: Task.run's whole list
        results = []  # one per tensor fetch (FetchMapper.build's order)
        for source in plan.fetches:
            if source is None:
                continue
            if source[0] == "feed":
                results.append(feeds[source[1]])
            else:
                results.append(self._call(tasks[source[1]], refs[source[1]][source[2]], timeout_s))
        return results, reports

    def snapshot(self):
        """Saver.save/restore's block: a plain one. As in TF's distributed runtime, other clients' steps may run on
        the ps tasks while a checkpoint is written (each save op reads each variable whole)."""
        if self._closed:
            raise RuntimeError("Attempted to use a closed Session.")
        return contextlib.nullcontext()

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        for actor in list(self._actors.values()):
            try:
                actor.close_session.remote(self._session_id)
            except Exception:  # noqa: BLE001 - a task that is gone has nothing to close
                pass
