"""The TF way: one process per task, each calling tf.train.Server(...).join(); a client in this process trains on
them, and a task whose actor ends lets its process's join() return."""
import json
import pathlib
import subprocess
import sys

import pytest

import adplace as tf
from adplace.distributed import ray_backend

SCRIPT = pathlib.Path(__file__).with_name("server_process.py")


def test_tasks_started_by_their_own_processes_serve_a_client(ray_cluster):
    spec = {"ps": ["localhost:25001"], "worker": ["localhost:25002"]}
    processes = [subprocess.Popen([sys.executable, str(SCRIPT), json.dumps(spec), job, "0"], stdout=subprocess.PIPE,
                                  text=True) for job in spec]
    try:
        for p in processes:
            assert p.stdout.readline().startswith("serving grpc://")
        with tf.device("/job:ps/task:0"):
            w = tf.Variable([0.0, 0.0], name="w")
        with tf.device("/job:worker/task:0"):
            step = tf.assign_add(w, [1.0, 2.0])
        with tf.Session("grpc://localhost:25002") as sess:
            sess.run(w.initializer)
            for _ in range(3):
                sess.run(step)
            assert sess.run(w).tolist() == [3.0, 6.0]
        with pytest.raises(tf.errors.UnknownError, match="already served"):
            tf.train.Server(tf.train.ClusterSpec(spec), job_name="ps", task_index=0)
        ray = ray_backend.connect()
        for address in ("localhost:25001", "localhost:25002"):
            ray.kill(ray.get_actor(ray_backend.actor_name(address), namespace=ray_backend.NAMESPACE))
        for p in processes:
            out, _ = p.communicate(timeout=30)
            assert "joined" in out and p.returncode == 0
    finally:
        for p in processes:
            if p.poll() is None:
                p.kill()


def test_create_local_server_is_a_one_task_cluster_on_a_free_port(ray_cluster):
    server = tf.train.Server.create_local_server()
    try:
        assert server.target.startswith("grpc://localhost:")
        assert server.cluster_spec.jobs == ["local"] and server.cluster_spec.num_tasks("local") == 1
        with tf.device("/job:local/task:0"):
            total = tf.reduce_sum(tf.constant([1.0, 2.0, 3.5]))
        with tf.Session(server.target) as sess:
            assert sess.run(total) == 6.5
            assert [d.name for d in sess.list_devices()] == ["/job:local/replica:0/task:0/device:CPU:0"]
    finally:
        server._stop()
