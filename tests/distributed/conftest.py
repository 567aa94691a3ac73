"""A local Ray cluster for the cluster tests, started once per test session: a head node and a second node, both on
127.0.0.1, as Ray's cluster utilities make them. Subprocess clients reach it through $ADPLACE_RAY_ADDRESS.

    def test_x(cluster):                      # ClusterSpec with one ps task and two worker tasks, servers running
        with tf.Session(cluster.target("worker", 0)) as sess: ...
"""
import itertools
import os

import pytest

from adplace.distributed import ray_backend

# Every node of the test cluster on 127.0.0.1: Ray then takes the loopback address as each node's own (read when Ray
# is imported, and inherited by the processes it starts).
os.environ.setdefault("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "0")
ray = pytest.importorskip("ray", reason="Ray is not installed (pip install '.[distributed]')")
_ports = itertools.count(24000)


@pytest.fixture(scope="session")
def ray_cluster():
    from ray.cluster_utils import Cluster
    nodes = Cluster(initialize_head=True, head_node_args={"num_cpus": 2, "include_dashboard": False})
    nodes.add_node(num_cpus=1)
    previous = os.environ.get(ray_backend.ADDRESS_ENV)
    os.environ[ray_backend.ADDRESS_ENV] = nodes.address
    ray_backend.connect(nodes.address)
    yield nodes
    ray.shutdown()
    nodes.shutdown()
    if previous is None:
        os.environ.pop(ray_backend.ADDRESS_ENV, None)
    else:
        os.environ[ray_backend.ADDRESS_ENV] = previous


class RunningCluster:
    """A ClusterSpec of fresh localhost addresses and its servers, stopped after the test."""

    def __init__(self, jobs: dict):
        import adplace as tf
        from adplace.distributed import start_cluster
        self.spec = tf.train.ClusterSpec({job: [f"localhost:{next(_ports)}" for _ in range(n)]
                                          for job, n in jobs.items()})
        self.servers = start_cluster(self.spec)

    def target(self, job: str, task: int = 0) -> str:
        return "grpc://" + self.spec.task_address(job, task)

    def server(self, job: str, task: int = 0):
        return next(s for s in self.servers if s.target == self.target(job, task))

    def stop(self) -> None:
        for server in self.servers:
            server._stop()


@pytest.fixture
def cluster(ray_cluster, request):
    """One ps task and two workers (or `@pytest.mark.parametrize("cluster", [{"ps": 2, ...}], indirect=True)`)."""
    running = RunningCluster(getattr(request, "param", None) or {"ps": 1, "worker": 2})
    yield running
    running.stop()
