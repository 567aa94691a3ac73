"""tf.train.Server on Ray: each task of a cluster is a detached Ray actor (task.Task) named after its address, so
clients find it from a `grpc://host:port` target, and its variables and resources live as long as it does.

    cluster = tf.train.ClusterSpec({"ps": ["localhost:2222"], "worker": ["localhost:2223", "localhost:2224"]})
    server = tf.train.Server(cluster, job_name="worker", task_index=0)    # starts the task's actor
    with tf.Session(server.target) as sess: ...
    server.join()                                                         # blocks while the task lives

The address names the task; it is not a socket adplace listens on (Ray carries the traffic). GPU tasks declare
their GPUs to Ray (`ConfigProto.device_count["GPU"]`), so Ray places them on nodes that have them.
"""
from __future__ import annotations

import functools
import socket
import time

from adplace.distributed import ray_backend
from adplace.distributed.cluster_spec import ClusterSpec
from adplace.framework import errors
from adplace.runtime import options as _options


@functools.lru_cache(maxsize=None)
def _task_actor_class():
    from adplace.distributed.task import Task
    return ray_backend.ray_module().remote(Task)


class Server:
    """An in-cluster task (tf.train.Server(server_or_cluster_def, job_name, task_index, protocol, config, start))."""

    def __init__(self, server_or_cluster_def, job_name: str | None = None, task_index: int | None = None,
                 protocol: str | None = None, config=None, start: bool = True):
        cluster = ClusterSpec(server_or_cluster_def)
        if not cluster.jobs:
            raise ValueError("The cluster spec has no jobs.")
        if job_name is None:
            if len(cluster.jobs) != 1:
                raise ValueError("Must specify an explicit `job_name`.")
            job_name = cluster.jobs[0]
        if task_index is None:
            indices = cluster.task_indices(job_name)
            if len(indices) != 1:
                raise ValueError("Must specify an explicit `task_index`.")
            task_index = indices[0]
        if protocol not in (None, "grpc"):
            raise ValueError(f"Unsupported protocol {protocol!r}: adplace's servers speak 'grpc' (over Ray).")
        if config is not None and not isinstance(config, _options.ConfigProto):
            raise TypeError(f"config must be a tf.ConfigProto, but got {type(config)}")
        self._cluster, self._job, self._task = cluster, job_name, int(task_index)
        self._address = cluster.task_address(job_name, self._task)
        self._config = config if config is not None else _options.ConfigProto()
        self._actor = None
        if start:
            self.start()

    target = property(lambda self: f"grpc://{self._address}", doc="The target to open sessions on this task.")
    cluster_spec = property(lambda self: self._cluster)

    def start(self) -> None:
        """Start the task's actor (once); UnknownError when another live task already serves the address."""
        if self._actor is not None:
            return
        ray = ray_backend.connect()
        name = ray_backend.actor_name(self._address)
        try:
            ray.get_actor(name, namespace=ray_backend.NAMESPACE)
        except ValueError:
            pass
        else:
            raise errors.UnknownError(None, None, f"Could not start server for /job:{self._job}/task:{self._task}: "
                                      f"{self._address} is already served by a live task.")
        gpus = self._config.device_count.get("GPU", 0)
        actor = _task_actor_class().options(
            name=name, namespace=ray_backend.NAMESPACE, lifetime="detached", max_concurrency=64, num_cpus=0,
            num_gpus=gpus).remote(self._cluster.as_dict(), self._job, self._task, self._config.SerializeToString())
        ray.get(actor.ping.remote())
        self._actor = actor

    def join(self) -> None:
        """Block while the task lives (TF's server.join() never returns; this one returns when the actor ends)."""
        ray = ray_backend.connect()
        while True:
            try:
                ray.get(self._actor.ping.remote())
            except Exception:  # noqa: BLE001 - the actor ended: so does join
                return
            time.sleep(1.0)

    def _stop(self) -> None:
        """End the task's actor (its variables and resources go with it) and wait until it is gone, so that no later
        call reaches it and a new Server may take its address. Not in TF's API: for tests and helpers."""
        if self._actor is not None:
            ray = ray_backend.ray_module()
            ray.kill(self._actor)  # asynchronous: calls made just after may still run
            deadline = time.monotonic() + 30
            while time.monotonic() < deadline:
                try:
                    ray.get(self._actor.ping.remote(), timeout=1.0)
                except ray.exceptions.GetTimeoutError:
                    continue
                except Exception:  # noqa: BLE001 - the actor died: done
                    break
                time.sleep(0.05)
            self._actor = None

    @staticmethod
    def create_local_server(config=None, start: bool = True) -> "Server":
        """A one-task cluster on a free localhost port (job "local")."""
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        return Server({"local": [f"localhost:{port}"]}, protocol="grpc", config=config, start=start)


def start_cluster(cluster, config=None) -> list[Server]:
    """A Server for every task of `cluster` (a ClusterSpec or its dict), from this one process."""
    spec = ClusterSpec(cluster)
    return [Server(spec, job, i, config=config) for job in spec.jobs for i in spec.task_indices(job)]
