"""adplace.distributed: TF's clusters (tf.train.ClusterSpec, tf.train.Server, sessions on grpc:// targets) on Ray.
Importing this package needs neither Ray nor TensorFlow; Ray is imported only when a cluster is used."""
from adplace.distributed.cluster_spec import ClusterSpec
from adplace.distributed.factory import ClusterSessionFactory
from adplace.distributed.server import Server, start_cluster
from adplace.runtime.targets import register_session_factory

register_session_factory(b"grpc://", ClusterSessionFactory())

__all__ = ["ClusterSpec", "Server", "start_cluster"]
