"""The CuPy backend on a real NVIDIA GPU (`pytest -m gpu`): every GPU kernel against its CPU kernel, streams,
transfers, memory options, fusion and the earlier issues' programs. Skipped, with the reason, where CuPy or a GPU
is missing; tests/gpu/test_gpu_backend.py checks the same behaviour on fake GPUs everywhere."""
import numpy as np
import pytest

import adplace as tf
import op_cases
from adplace import devices
from test_programs_training import EXPECTED, _colocation_example

pytestmark = [pytest.mark.gpu,
              pytest.mark.skipif(not devices.cuda_gpus(), reason=f"no CUDA GPU: {devices.why_no_cuda()}")]

GPU0 = "/job:localhost/replica:0/task:0/device:GPU:0"
CPU_ONLY = tf.ConfigProto(device_count={"GPU": 0}, allow_soft_placement=True)
GPU_CONFIG = tf.ConfigProto(allow_soft_placement=True, gpu_options=tf.GPUOptions(allow_growth=True))


@pytest.fixture(autouse=True)
def _real_gpus_only(monkeypatch):
    monkeypatch.delenv("ADPLACE_VIRTUAL_GPUS", raising=False)
    tf.config.set_virtual_gpus(0)


@pytest.mark.parametrize("name", sorted(op_cases.CASES))
def test_gpu_kernel_matches_cpu_kernel(name):
    gpu_values, _, placed = op_cases.run_case(name, GPU_CONFIG, "/gpu:0")
    cpu_values, _, _ = op_cases.run_case(name, CPU_ONLY, "/gpu:0")
    for op_type in op_cases.COVERS[name]:
        assert GPU0 in placed[op_type], (op_type, placed[op_type])
    op_cases.assert_same(gpu_values, cpu_values, random=name in op_cases.RANDOM_CASES)


def test_devices_lists_name_capability_and_memory(capsys):
    from adplace import cli
    assert cli.main(["devices"]) == 0
    out = capsys.readouterr().out
    assert "compute capability" in out and "GiB free of" in out


def test_fused_chain_matches_cpu_and_runs_one_kernel():
    x = tf.placeholder(tf.float32, [1 << 20])
    with tf.device("/gpu:0"):
        y = tf.nn.relu(tf.cos(tf.sin(x) * 2.0 + 1.0) - 0.25)
        g = tf.gradients(tf.reduce_sum(y), x)[0]
    feed = {x: np.linspace(-3, 3, 1 << 20, dtype=np.float32)}
    sess = tf.Session(config=GPU_CONFIG)
    values = sess.run([y, g], feed)
    expected = tf.Session(config=CPU_ONLY).run([y, g], feed)
    for got, want in zip(values, expected):
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
    assert sess.plan_for([y, g], feed).fused


@pytest.fixture
def fresh_memory_options(monkeypatch):
    """Let this test's GPUOptions apply (the first session of a process decides), and lift its cap afterwards."""
    import cupy
    from adplace.kernels import gpu
    monkeypatch.setattr(gpu, "_configured", {})
    yield
    with cupy.cuda.Device(0):
        cupy.get_default_memory_pool().set_limit(size=0)


def test_memory_fraction_oom_is_resource_exhausted_and_the_session_survives(fresh_memory_options):
    import cupy
    free, total = cupy.cuda.runtime.memGetInfo()
    config = tf.ConfigProto(gpu_options=tf.GPUOptions(per_process_gpu_memory_fraction=0.05, allow_growth=True))
    n = int((total * 0.06 / 4) ** 0.5) + 1024  # an n x n float32 output over 5% of the memory
    with tf.device("/gpu:0"):
        big = tf.matmul(tf.ones([n, 8]), tf.ones([8, n]), name="big")
        small = tf.reduce_sum(tf.ones([8, 8]))
    sess = tf.Session(config=config)
    with pytest.raises(tf.errors.ResourceExhaustedError, match="'big' \\(MatMul\\)"):
        sess.run(tf.reduce_sum(big))
    assert sess.run(small) == 64


def test_adcme_colocation_example_on_the_gpu():
    value, placed = _colocation_example(colocate=True, config=GPU_CONFIG)
    assert value[0] == pytest.approx(EXPECTED, rel=1e-6)
    assert {d for n, d in placed.items() if n.startswith("gradients/Sin_grad/")} == {"device:GPU:0"}


def test_profile_of_a_gpu_run_has_event_timed_gpu_ops(tmp_path):
    with tf.device("/gpu:0"):
        y = tf.reduce_sum(tf.matmul(tf.ones([256, 256]), tf.ones([256, 256])))
    sess = tf.Session(config=GPU_CONFIG)
    assert tf.run_profile(sess, y) == 256 ** 3
    nodes = next(d.node_stats for d in tf.profiler.last_run_metadata().step_stats.dev_stats if d.device == GPU0)
    assert {n.node_name for n in nodes} >= {"MatMul", "Sum"}
    tf.save_profile(str(tmp_path / "gpu.json"))
    assert (tmp_path / "gpu.json").stat().st_size > 0


def test_host_run_int32_ops_wait_for_the_gpu_work_they_read():
    """A Cast to int32 on the GPU runs on the host after a long matmul: it must read the finished product."""
    n = 4096
    with tf.device("/gpu:0"):
        product = tf.matmul(tf.ones([n, n]), tf.ones([n, n]))
        counts = tf.cast(product, tf.int32)
        total = tf.reduce_sum(tf.cast(tf.equal(counts, n), tf.int64))
    sess = tf.Session(config=GPU_CONFIG)
    for _ in range(3):
        assert sess.run(total) == n * n


@pytest.mark.parametrize("kind", ["max", "min"])
def test_float64_segment_extremum_gradients_match_the_cpu(kind):
    """float64 SegmentMax/Min and their gradients are exact on the GPU: CuPy's float64 maximum.at/minimum.at round the
    values through float32 (an H200, CuPy 14.2), so adplace does not use them."""
    x0 = np.array([[0.5, -1.2], [1.7, 2.1], [-0.3, 0.9], [2.5, -2.2], [1.1, 0.4], [-1.9, 1.4]])
    x = tf.placeholder(tf.float64, [6, 2])
    with tf.device("/gpu:0"):
        y = getattr(tf, f"segment_{kind}")(x, [0, 0, 1, 3, 3, 3])
        grad = tf.gradients(tf.reduce_sum(y * tf.constant(np.arange(8.0).reshape(4, 2))), x)[0]
    gpu_values = tf.Session(config=GPU_CONFIG).run([y, grad], {x: x0})
    cpu_values = tf.Session(config=CPU_ONLY).run([y, grad], {x: x0})
    for got, want in zip(gpu_values, cpu_values):
        np.testing.assert_array_equal(got, want)
