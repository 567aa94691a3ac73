"""TensorFlow's contestant for benchmarks/speed.py: a worker process running graph_rows' graphs on
`tensorflow.compat.v1` (graph mode, v2 behaviour off), answering common.serve's JSON requests.

    python benchmarks/peers/tf_peer.py [--threads 1]

--threads 1: sessions use ConfigProto(intra_op_parallelism_threads=1, inter_op_parallelism_threads=1) (TF sizes its
CPU pools once a process, so one-thread rows get a process of their own); otherwise ConfigProto(). Placement is soft
(allow_soft_placement) so the seed's /gpu:0 and /gpu:1 towers run on this CPU-only TensorFlow."""
import argparse
import os
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
os.environ.setdefault("CUDA_VISIBLE_DEVICES", "")
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from peers import common, graph_rows  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", default="default")
    threads = parser.parse_args().threads
    import tensorflow
    v1 = tensorflow.compat.v1
    v1.disable_v2_behavior()
    kwargs = {"allow_soft_placement": True}
    if threads == "1":
        kwargs.update(intra_op_parallelism_threads=1, inter_op_parallelism_threads=1)

    def info() -> dict:
        return {"tensorflow": tensorflow.__version__, "config": dict(kwargs),
                "intra_op_threads_default": tensorflow.config.threading.get_intra_op_parallelism_threads(),
                "inter_op_threads_default": tensorflow.config.threading.get_inter_op_parallelism_threads(),
                "blas": common.blas_info(), "env": common.thread_env(), "affinity": common.affinity(),
                "pid": os.getpid()}

    common.serve(lambda row, p: graph_rows.make(v1, row, p, v1.ConfigProto(**kwargs)), info)


if __name__ == "__main__":
    main()
