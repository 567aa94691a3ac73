"""The session factory of grpc:// targets (runtime/targets.py), registered when adplace is imported: it loads the
cluster client (cluster_session.py, and Ray) only when a session on a cluster is opened or reset, so `import adplace`
pays for neither.
"""
from __future__ import annotations

from adplace.distributed import ray_backend
from adplace.framework import errors
from adplace.runtime.targets import no_session_factory


class ClusterSessionFactory:
    """Opens ClusterSessions; resets every task of a cluster (tf.Session.reset)."""

    def open(self, target: bytes, graph, config):
        _require_ray(target, config)
        from adplace.distributed.cluster_session import ClusterSession
        return ClusterSession(target, graph, config)

    def reset(self, target: bytes, containers, config) -> None:
        """tf.Session.reset: every task of the cluster drops the variables and shared resources of `containers`
        (all when None) and closes its client sessions."""
        _require_ray(target, config)
        from adplace.distributed.cluster_session import CONNECT_TIMEOUT_MS, cluster_tasks, find_actor
        timeout_ms = config.operation_timeout_in_ms or CONNECT_TIMEOUT_MS
        ray = ray_backend.connect()
        master = find_actor(ray_backend.strip_scheme(target), timeout_ms)
        for address in cluster_tasks(ray.get(master.cluster_dict.remote())).values():
            ray.get(find_actor(address, timeout_ms).reset.remote(list(containers) if containers else None))


def _require_ray(target: bytes, config) -> None:
    """Without Ray, a grpc:// target is TF's NotFoundError (no factory for it), saying what to install."""
    try:
        ray_backend.ray_module()
    except ImportError:
        raise errors.NotFoundError(None, None, f"{no_session_factory(target, config).message} Ray is not installed: "
                                   f"pip install 'adplace[distributed]'.") from None
