"""The CuPy backend (adplace/kernels/gpu.py, kernels/fusion.py, runtime/fusion.py) on fake CUDA GPUs.

`fake_gpu` (tests/conftest.py) installs tests/fake_cupy.py, a NumPy-backed CuPy that refuses what CuPy refuses
(implicit host conversion, host arrays as operands) and logs what a GPU would do: launches with their stream,
copies with their direction and whether the host side was pinned, synchronisations, event records and waits. These
tests run everywhere; tests/gpu/test_real_gpu.py runs the same comparisons on a real GPU (`pytest -m gpu`).
"""

import numpy as np
import pytest

import adplace as tf
import op_cases
from adplace import cli, devices
from adplace.framework import registry
from adplace.kernels import fusion, gpu
from adplace.runtime.step_stats import transfers

GPU0 = "/job:localhost/replica:0/task:0/device:GPU:0"
GPU1 = "/job:localhost/replica:0/task:0/device:GPU:1"
CPU0 = "/job:localhost/replica:0/task:0/device:CPU:0"
CPU_ONLY = tf.ConfigProto(device_count={"GPU": 0}, allow_soft_placement=True)
SOFT = tf.ConfigProto(allow_soft_placement=True)


def _since(cp, start: int, kind: str) -> list:
    return [e for e in cp.fake_log[start:] if e[0] == kind]


def _stream_ptr(sess, index: int = 0) -> int:
    return next(s.stream.ptr for s in sess._ctx.cuda_states if s.device.index == index)


# --- kernels: every GPU op type against its CPU kernel ------------------------------------------------------------
def test_every_op_type_with_a_gpu_kernel_has_a_comparison_case():
    gpu_ops = {t for (t, device_type) in registry._KERNELS if device_type == "GPU"}
    covered = set().union(*op_cases.COVERS.values())
    assert gpu_ops <= covered, sorted(gpu_ops - covered)


@pytest.mark.parametrize("name", sorted(op_cases.CASES))
def test_gpu_kernel_matches_cpu_kernel(fake_gpu, name):
    start = len(fake_gpu.fake_log)
    gpu_values, types, placed = op_cases.run_case(name, SOFT, "/gpu:0")
    cpu_values, _, cpu_placed = op_cases.run_case(name, CPU_ONLY, "/gpu:0")
    assert set().union(*cpu_placed.values()) == {CPU0}
    for op_type in op_cases.COVERS[name]:  # the op types compared really ran on the (fake) CUDA GPU
        assert GPU0 in placed[op_type], (op_type, placed[op_type])
    op_cases.assert_same(gpu_values, cpu_values, random=name in op_cases.RANDOM_CASES)
    if name not in ("invert_permutation", "broadcast_gradient"):  # int32-only programs stay in host memory
        assert _since(fake_gpu, start, "launch") or _since(fake_gpu, start, "memcpy")


def test_int32_tensors_of_gpu_ops_stay_in_host_memory(fake_gpu):
    with tf.device("/gpu:0"):
        shape = tf.shape(tf.zeros([3, 4]))
        total = shape * 2 + 1
    with tf.Session() as sess:
        placed = dict((row[0], row[3]) for row in sess.placement_table())
        plan = sess.plan_for(total)
        value = sess.run(total)
    assert placed[total.op.name] == GPU0
    assert value.tolist() == [7, 9] and type(value) is np.ndarray
    assert all(k.__qualname__ != f"gpu:{total.op.name}" for k in plan.kernels)  # a host kernel, not a launch


def test_fetched_gpu_values_never_alias_what_the_graph_keeps(fake_gpu):
    with tf.device("/gpu:0"):
        shape = tf.identity(tf.constant([3, 4]))       # int32: host memory on the GPU
        floats = tf.transpose(tf.constant(np.arange(6, dtype=np.float32).reshape(2, 3)))  # a device view
    sess = tf.Session()
    first, t = sess.run([shape, floats])
    first[0] = 99
    assert sess.run(shape).tolist() == [3, 4]
    assert t.flags.c_contiguous and t.tolist() == [[0, 3], [1, 4], [2, 5]]


def test_random_ops_on_the_gpu_are_reproducible_per_op_seed(fake_gpu):
    with tf.device("/gpu:0"):
        r = tf.random_normal([64], seed=7)
    values = []
    for _ in range(2):
        with tf.Session() as sess:
            values.append(sess.run(r))
    np.testing.assert_array_equal(values[0], values[1])
    assert values[0].dtype == np.float32 and values[0].std() > 0.5


# --- streams, copies, synchronisation -----------------------------------------------------------------------------
def test_gpu_ops_are_enqueued_on_the_device_stream_and_only_fetches_synchronise(fake_gpu):
    x = tf.constant(np.linspace(-1, 1, 12, dtype=np.float32).reshape(3, 4))
    with tf.device("/gpu:0"):
        h = tf.matmul(tf.sin(x), tf.transpose(x))
        y = tf.reduce_sum(tf.nn.relu(h), 1)
        z = tf.reduce_mean(h)
    sess = tf.Session()
    sess.run([y, z])
    start = len(fake_gpu.fake_log)
    y_value, z_value = sess.run([y, z])
    stream = _stream_ptr(sess)
    launches = _since(fake_gpu, start, "launch")
    assert launches and {e[3] for e in launches} == {stream} and stream != 0
    syncs = _since(fake_gpu, start, "sync")
    assert [e[1] for e in syncs] == ["get", "get"] and {e[3] for e in syncs} == {stream}  # one per fetch, no more
    copies = _since(fake_gpu, start, "memcpy")
    assert [(e[1], e[3]) for e in copies] == [("DtoH", True), ("DtoH", True)]  # into pinned memory
    np.testing.assert_allclose(y_value, np.maximum(np.sin(x_ := np.linspace(-1, 1, 12).reshape(3, 4)) @ x_.T, 0)
                               .sum(1), rtol=1e-5)
    assert type(z_value) is np.float32


def test_host_to_gpu_copies_go_through_pinned_memory_and_pinned_feeds_are_copied_directly(fake_gpu):
    with tf.device("/cpu:0"):
        a = tf.placeholder(tf.float32, [256])
        b = a * 2.0
    with tf.device("/gpu:0"):
        p = tf.placeholder(tf.float32, [256])
        c = tf.exp(b) + p
    sess = tf.Session()
    host = np.linspace(0, 1, 256, dtype=np.float32)
    pinned = tf.pinned_empty((256,), np.float32)
    pinned[:] = host
    sess.run(c, {a: host, p: host})
    start = len(fake_gpu.fake_log)
    value = sess.run(c, {a: host, p: pinned})
    copies = [(e[1], e[3]) for e in _since(fake_gpu, start, "memcpy")]
    assert copies == [("HtoD", True), ("HtoD", True), ("DtoH", True)]
    np.testing.assert_allclose(value, np.exp(host * 2) + host, rtol=1e-6)
    assert gpu.is_pinned(pinned, fake_gpu) and not gpu.is_pinned(host, fake_gpu)


@pytest.mark.parametrize("fake_gpu", [2], indirect=True)
def test_gpu_to_gpu_copies_are_peer_copies_ordered_after_the_producer(fake_gpu):
    with tf.device("/gpu:0"):
        a = tf.sin(tf.constant(np.arange(8, dtype=np.float32)))
    with tf.device("/gpu:1"):
        b = a * 3.0
    sess = tf.Session()
    sess.run(b)
    start = len(fake_gpu.fake_log)
    value = sess.run(b)
    s0, s1 = _stream_ptr(sess, 0), _stream_ptr(sess, 1)
    log = fake_gpu.fake_log[start:]
    peer = [i for i, e in enumerate(log) if e[0] == "memcpy" and e[1] == "peer"]
    assert len(peer) == 1 and log[peer[0]][4:] == (1, s1)
    recorded = {e[2] for e in log[:peer[0]] if e[0] == "record" and e[1] == s0}
    waited = {e[2] for e in log[:peer[0]] if e[0] == "wait" and e[1] == s1}
    assert recorded & waited  # the destination stream waited on an event of the producer's stream
    assert any(e[0] == "wait" and e[1] == s0 for e in log[peer[0]:])  # and the source waits for the copy to end
    np.testing.assert_allclose(value, np.sin(np.arange(8, dtype=np.float32)) * 3, rtol=1e-6)
    assert [(t.src_device, t.dst_device) for t in sess.plan_for(b).transfers] == [(GPU0, GPU1)]


# --- memory options -----------------------------------------------------------------------------------------------
def test_memory_fraction_caps_the_pool_and_oom_names_op_device_and_bytes(fake_gpu):
    config = tf.ConfigProto(gpu_options=tf.GPUOptions(per_process_gpu_memory_fraction=1 / 256, allow_growth=True))
    with tf.device("/gpu:0"):
        w = tf.Variable(np.ones((4, 4), np.float32), name="w")
        big = tf.matmul(tf.ones([2048, 4]), tf.ones([4, 2048]), name="big")  # 16 MiB output, over the 4 MiB cap
        step = tf.assign_add(w, tf.ones([4, 4]))
        with tf.control_dependencies([step]):
            failing = tf.reduce_sum(big)
    sess = tf.Session(config=config)
    assert fake_gpu.get_default_memory_pool().get_limit() == (1 << 30) // 256
    sess.run(w.initializer)
    with pytest.raises(tf.errors.ResourceExhaustedError) as info:
        sess.run(failing)
    text = str(info.value)
    assert "'big' (MatMul)" in text and GPU0 in text and f"{2048 * 2048 * 4} bytes" in text
    assert "per_process_gpu_memory_fraction" in text and info.value.op is big.op
    np.testing.assert_array_equal(sess.run(w), np.ones((4, 4)))  # the failed step's AssignAdd was undone
    assert sess.run(step).sum() == 32  # the session is still usable


def test_without_allow_growth_the_pool_reserves_its_cap_up_front(fake_gpu, monkeypatch):
    monkeypatch.delenv("TF_FORCE_GPU_ALLOW_GROWTH")
    pool = fake_gpu.get_default_memory_pool()
    tf.Session(config=tf.ConfigProto(gpu_options=tf.GPUOptions(per_process_gpu_memory_fraction=0.25)))
    assert pool.get_limit() == (1 << 30) // 4 and pool.total_bytes() >= (1 << 30) // 4
    assert pool.used_bytes() == 0  # reserved in the pool's cache, not held by anything


def test_the_reservation_is_reused_by_the_device_stream_of_every_session(fake_gpu, monkeypatch):
    monkeypatch.delenv("TF_FORCE_GPU_ALLOW_GROWTH")
    pool = fake_gpu.get_default_memory_pool()
    config = tf.ConfigProto(gpu_options=tf.GPUOptions(per_process_gpu_memory_fraction=0.25))
    tf.Session(config=config)
    reserved = pool.total_bytes()
    with tf.device("/gpu:0"):
        y = tf.reduce_sum(tf.exp(tf.ones([512, 512])))
    for _ in range(2):
        assert tf.Session(config=config).run(y) == pytest.approx(512 * 512 * np.e, rel=1e-5)
    assert pool.total_bytes() == reserved  # served from the reserved block, not from new device memory


def test_float_floordiv_is_tfs_floor_of_the_quotient_on_cpu_and_gpu(fake_gpu):
    with tf.device("/gpu:0"):
        on_gpu = tf.floordiv(tf.constant([1.0, -7.0]), tf.constant([0.1, 2.0]))
    with tf.device("/cpu:0"):
        on_cpu = tf.floordiv(tf.constant([1.0, -7.0]), tf.constant([0.1, 2.0]))
    gpu_value, cpu_value = tf.Session().run([on_gpu, on_cpu])
    assert gpu_value.tolist() == cpu_value.tolist() == [10.0, -4.0]  # NumPy's 1.0 // 0.1 would give 9.0


def test_allow_growth_or_tfs_environment_variable_reserves_nothing(fake_gpu, monkeypatch):
    monkeypatch.delenv("TF_FORCE_GPU_ALLOW_GROWTH")
    tf.Session(config=tf.ConfigProto(gpu_options=tf.GPUOptions(allow_growth=True)))
    monkeypatch.setattr(gpu, "_configured", {})
    monkeypatch.setenv("TF_FORCE_GPU_ALLOW_GROWTH", "true")
    tf.Session()
    assert fake_gpu.get_default_memory_pool().total_bytes() == 0


@pytest.mark.parametrize("fake_gpu", [2], indirect=True)
def test_scalars_and_views_keep_their_shape_across_gpus(fake_gpu):
    with tf.device("/gpu:0"):
        total = tf.reduce_sum(tf.ones([3]))
        view = tf.transpose(tf.constant(np.arange(6, dtype=np.float32).reshape(2, 3)))
    with tf.device("/gpu:1"):
        scaled, moved = total * 2.0, view + 0.0
    value, moved_value = tf.Session().run([scaled, moved])
    assert type(value) is np.float32 and value == 6.0
    assert moved_value.tolist() == [[0, 3], [1, 4], [2, 5]]


@pytest.mark.parametrize("fake_gpu", [2], indirect=True)
def test_visible_device_list_renumbers_real_gpus(fake_gpu):
    with tf.device("/gpu:0"):
        y = tf.sin(tf.constant([1.0, 2.0]))
    sess = tf.Session(config=tf.ConfigProto(gpu_options=tf.GPUOptions(visible_device_list="1", allow_growth=True)))
    start = len(fake_gpu.fake_log)
    sess.run(y)
    assert [d.name for d in sess.list_devices()] == [CPU0, GPU0]
    assert {e[2] for e in _since(fake_gpu, start, "launch")} == {1}  # GPU:0 of the session is physical GPU 1


# --- fusion -------------------------------------------------------------------------------------------------------
def _chain_graph():
    x = tf.placeholder(tf.float32, [64], name="x")
    with tf.device("/gpu:0"):
        y = tf.cos(tf.sin(x) * 2.0 + 1.0, name="y")
        z = tf.nn.relu(y - 0.25, name="z")
    return x, y, z


def test_elementwise_chain_runs_as_one_fused_kernel_with_the_same_values(fake_gpu):
    x, _, z = _chain_graph()
    feed = {x: np.linspace(-3, 3, 64, dtype=np.float32)}
    sess = tf.Session()
    expected = tf.Session(config=CPU_ONLY).run(z, feed)
    sess.run(z, feed)
    start = len(fake_gpu.fake_log)
    value = sess.run(z, feed)
    launches = _since(fake_gpu, start, "launch")
    assert len(launches) == 1 and launches[0][1].startswith("adplace_fused_")
    np.testing.assert_allclose(value, expected, rtol=1e-5, atol=1e-7)
    plan = sess.plan_for(z, feed)
    assert list(plan.fused.values()) == [["Sin", "mul", "add", "y", "sub", "z"]]


def test_fusion_keeps_fetched_intermediates_and_traces_one_node_per_kernel(fake_gpu):
    x, y, z = _chain_graph()
    feed = {x: np.linspace(-3, 3, 64, dtype=np.float32)}
    sess = tf.Session()
    meta = tf.RunMetadata()
    y_value, z_value = sess.run([y, z], feed, options=tf.RunOptions(trace_level=tf.RunOptions.FULL_TRACE),
                                run_metadata=meta)
    assert sorted(sess.plan_for([y, z], feed).fused.values()) == [["Sin", "mul", "add", "y"], ["sub", "z"]]
    gpu_nodes = next(d.node_stats for d in meta.step_stats.dev_stats if d.device == GPU0)
    fused = [n for n in gpu_nodes if "= _FusedElementwise(" in n.timeline_label]   # one node per kernel, its root's name
    assert [n.node_name for n in fused] == ["y", "z"]
    assert fused[0].timeline_label.startswith("y = _FusedElementwise(")
    cpu = tf.Session(config=CPU_ONLY).run([y, z], feed)
    np.testing.assert_allclose(y_value, cpu[0], rtol=1e-5)
    np.testing.assert_allclose(z_value, cpu[1], rtol=1e-5, atol=1e-7)


def test_remapping_off_turns_fusion_off(fake_gpu):
    x, _, z = _chain_graph()
    config = tf.ConfigProto(graph_options=tf.GraphOptions(
        rewrite_options=tf.RewriterConfig(remapping=tf.RewriterConfig.OFF)))
    sess = tf.Session(config=config)
    feed = {x: np.ones(64, np.float32)}
    start = len(fake_gpu.fake_log)
    sess.run(z, feed)
    assert sess.plan_for(z, feed).fused == {}
    assert not any(e[1].startswith("adplace_fused_") for e in _since(fake_gpu, start, "launch"))


def test_gradients_of_elementwise_chains_fuse_too(fake_gpu):
    x = tf.placeholder(tf.float32, [32], name="x")
    with tf.device("/gpu:0"):
        y = tf.reduce_sum(tf.sin(tf.cos(x) * x))
        (g,) = tf.gradients(y, [x])
    feed = {x: np.linspace(-2, 2, 32, dtype=np.float32)}
    sess = tf.Session()
    value = sess.run(g, feed)
    groups = sess.plan_for(g, feed).fused
    assert any(any(name.startswith("gradients/") for name in members) for members in groups.values())
    np.testing.assert_allclose(value, tf.Session(config=CPU_ONLY).run(g, feed), rtol=1e-5, atol=1e-6)


def test_gradient_ops_of_unary_ops_fuse(fake_gpu):
    """TanhGrad etc. join fused chains, so their CUDA expressions are compared with the CPU kernels by the
    `unary_gradients` case of test_gpu_kernel_matches_cpu_kernel."""
    graph = tf.Graph()
    with graph.as_default(), tf.device("/gpu:0"):
        fetches, feeds = op_cases.CASES["unary_gradients"](np.random.default_rng(0))
    sess = tf.Session(graph=graph, config=SOFT)
    sess.run(fetches, feeds)
    fused = sess.plan_for(fetches, feeds).fused.values()
    fused_types = {graph.get_operation_by_name(name).type for members in fused for name in members}
    assert fused_types >= set(op_cases.COVERS["unary_gradients"])


def test_fused_kernels_are_compiled_once_per_chain_signature(fake_gpu):
    x, _, z = _chain_graph()
    feed = {x: np.ones(64, np.float32)}
    for _ in range(2):
        tf.Session().run(z, feed)
    assert len(fusion._cache) == 1


def test_chains_across_devices_or_shapes_do_not_fuse(fake_gpu):
    x = tf.placeholder(tf.float32, [4, 3])
    with tf.device("/gpu:0"):
        a = tf.sin(x)
    with tf.device("/cpu:0"):
        b = tf.cos(a)
    with tf.device("/gpu:0"):
        c = tf.exp(b) + tf.constant([1.0, 2.0, 3.0])  # a [3] row broadcast: not a scalar, so Add is not fused
    sess = tf.Session()
    feed = {x: np.ones((4, 3), np.float32)}
    value = sess.run(c, feed)
    assert sess.plan_for(c, feed).fused == {}
    np.testing.assert_allclose(value, np.exp(np.cos(np.sin(np.ones((4, 3))))) + np.array([1, 2, 3]), rtol=1e-6)


# --- tracing ------------------------------------------------------------------------------------------------------
def test_traced_gpu_steps_are_timed_by_cuda_events(fake_gpu):
    x, _, z = _chain_graph()
    sess = tf.Session()
    start = len(fake_gpu.fake_log)
    meta = tf.RunMetadata()
    sess.run(z, {x: np.ones(64, np.float32)}, options=tf.RunOptions(trace_level=tf.RunOptions.FULL_TRACE),
             run_metadata=meta)
    stream = _stream_ptr(sess)
    assert len([e for e in _since(fake_gpu, start, "record") if e[1] == stream]) >= 3  # anchor + start/end per op
    nodes = next(d.node_stats for d in meta.step_stats.dev_stats if d.device == GPU0)
    assert nodes and all(n.all_start_nanos > 0 and n.all_end_rel_nanos >= 0 for n in nodes)
    assert [n.node_name for n in nodes if "= _FusedElementwise(" in n.timeline_label] == ["z"]
    start = len(fake_gpu.fake_log)
    sess.run(z, {x: np.ones(64, np.float32)})
    assert len(_since(fake_gpu, start, "record")) == 1  # untraced: only the feed's staging-buffer event


# --- the earlier programs, on a CUDA GPU --------------------------------------------------------------------------
def test_adcme_colocation_program_on_a_cuda_gpu(fake_gpu):
    with tf.device(tf.assign_to_device("/device:GPU:0")):
        a = tf.Variable(1.0, name="a")
        b = tf.sin(a)
    with tf.device("/CPU:0"):
        c = tf.cos(b)
    g = tf.gradients(c, a, colocate_gradients_with_ops=True)
    sess = tf.Session()
    sess.run(tf.global_variables_initializer())
    meta = tf.RunMetadata()
    value = sess.run(g[0] + c, options=tf.RunOptions(trace_level=tf.RunOptions.FULL_TRACE), run_metadata=meta)
    assert value == pytest.approx(-np.sin(np.sin(1.0)) * np.cos(1.0) + np.cos(np.sin(1.0)), rel=1e-6)
    assert type(value) is np.float32
    assert len(transfers(meta.step_stats)) == 4  # as on virtual GPUs (tests/test_programs_profiling.py)


def test_training_on_a_cuda_gpu_matches_the_cpu(fake_gpu):
    def train(config):
        graph = tf.Graph()
        with graph.as_default(), tf.device("/gpu:0"):
            rng = np.random.default_rng(3)
            xs = rng.uniform(-1, 1, (64, 1)).astype(np.float32)
            x = tf.constant(np.hstack([xs ** k for k in range(4)]))
            y = tf.constant(1 + 2 * xs - xs ** 3)
            w = tf.Variable(tf.zeros([4, 1]), name="w")
            loss = tf.reduce_mean(tf.square(tf.matmul(x, w) - y))
            step = tf.train.AdamOptimizer(0.05).minimize(loss, colocate_gradients_with_ops=True)
            init = tf.global_variables_initializer()
        with tf.Session(graph=graph, config=config) as sess:
            sess.run(init)
            losses = [sess.run([step, loss])[1] for _ in range(60)]
            return losses, sess.run(w)

    gpu_losses, gpu_w = train(SOFT)
    cpu_losses, cpu_w = train(CPU_ONLY)
    assert gpu_losses[-1] < 0.1 * gpu_losses[0]
    np.testing.assert_allclose(gpu_losses, cpu_losses, rtol=1e-4)
    np.testing.assert_allclose(gpu_w, cpu_w, rtol=1e-4, atol=1e-5)


def test_devices_lists_each_cuda_gpu_with_name_capability_and_memory(fake_gpu, capsys):
    assert cli.main(["devices"]) == 0
    out = capsys.readouterr().out
    assert f"{GPU0}  (device: 0, name: Fake GPU (NumPy), compute capability: 9.0, memory: " in out
    assert "GiB free of 1.0 GiB; CuPy)" in out and "No CUDA GPU" not in out


@pytest.mark.parametrize("fake_gpu", [2], indirect=True)
def test_towers_on_two_cuda_gpus_run_in_parallel_threads_with_the_same_values(fake_gpu):
    rng = np.random.default_rng(0)
    weights = [rng.standard_normal((16, 16)).astype(np.float32) / 4 for _ in range(2)]
    outs = []
    for i, w in enumerate(weights):
        with tf.device(f"/gpu:{i}"):
            h = tf.constant(np.ones((16, 16), np.float32))
            for _ in range(5):
                h = tf.tanh(tf.matmul(h, tf.constant(w)))
            outs.append(tf.reduce_sum(h))
    total = tf.add_n(outs)
    sess = tf.Session(config=tf.ConfigProto(inter_op_parallelism_threads=2, allow_soft_placement=True))
    value = sess.run(total)
    assert sess.plan_for(total).mode == "parallel"
    expected = tf.Session(config=CPU_ONLY).run(total)
    assert value == pytest.approx(expected, rel=1e-5)
    assert {e[2] for e in fake_gpu.fake_log if e[0] == "launch"} == {0, 1}


# --- without CuPy -------------------------------------------------------------------------------------------------
def test_without_cupy_there_are_no_cuda_gpus_and_the_reason_says_how_to_get_them(no_cupy, capsys):
    assert devices.cuda_gpus() == ()
    assert 'CuPy is not installed (pip install "adplace[gpu]"' in devices.why_no_cuda()
    assert cli.main(["devices"]) == 0
    out = capsys.readouterr().out
    assert "No CUDA GPU: CuPy is not installed" in out and "ADPLACE_VIRTUAL_GPUS=N" in out


def test_without_cupy_gpu_helpers_raise_a_clear_import_error(no_cupy):
    with pytest.raises(ImportError, match=r'needs CuPy, which is not installed \(pip install "adplace\[gpu\]"\)'):
        tf.pinned_empty((4,), np.float32)


def test_without_cupy_virtual_gpus_still_compute_with_numpy(no_cupy, gpus):
    with tf.device("/gpu:1"):
        y = tf.sin(tf.constant([0.5]))
    with tf.Session() as sess:
        value = sess.run(y)
        assert sess.placement(y) == GPU1
    assert type(value) is np.ndarray and value[0] == pytest.approx(np.sin(0.5))


def test_host_memory_kernels_upload_their_device_dtype_outputs(fake_gpu):
    """An op chosen by int32 runs on host values; its int64 or bool outputs must still reach GPU ops as CuPy arrays
    (the gradient of two gathers concatenates a cast range with int64 indices)."""
    with tf.device("/gpu:0"):
        wide = tf.cast(tf.range(0, 3), tf.int64)
        joined = tf.concat([wide, tf.constant(np.array([7], np.int64))], 0)
        mask = tf.equal(tf.range(0, 3), 1)
        picked = tf.where(mask, tf.ones([3]), tf.zeros([3]))
    with tf.Session() as sess:
        joined_value, picked_value = sess.run([joined, picked])
        assert sess.placement(joined) == GPU0 and sess.placement(picked) == GPU0
    assert joined_value.tolist() == [0, 1, 2, 7] and picked_value.tolist() == [0, 1, 0]


def test_cuda_errors_from_cupy_are_reported_as_the_reason(fake_gpu, monkeypatch):
    def no_driver():
        raise fake_gpu.cuda.runtime.CUDARuntimeError(35)
    monkeypatch.setattr(fake_gpu.cuda.runtime, "getDeviceCount", no_driver)
    devices.cuda_gpus.cache_clear()
    assert devices.cuda_gpus() == ()
    assert devices.why_no_cuda().startswith("CuPy is installed but CUDA reports no usable GPU (CUDARuntimeError")


# --- generated CUDA compiles (NVRTC, where installed) -------------------------------------------------------------
def test_every_fusible_op_compiles_with_nvrtc_for_float_and_double():
    nvrtc_check = pytest.importorskip("nvrtc_check")
    if not nvrtc_check.available():
        pytest.skip(f"NVRTC is not available: {nvrtc_check.reason()}")
    comparisons = {"Less", "LessEqual", "Greater", "GreaterEqual", "Equal", "NotEqual"}
    for dtype in (tf.float32, tf.float64):
        for op_type, expr in fusion.FUSIBLE.items():
            binary = "{1}" in expr
            out = tf.bool if op_type in comparisons else dtype
            members = [fusion.Member(op_type, dtype, out, ("x0", "x1") if binary else ("x0",))]
            if out != tf.bool:
                members.append(fusion.Member("Sigmoid", dtype, dtype, ("t0",)))
            source = fusion.chain_source(members, [dtype, dtype] if binary else [dtype])
            ptx = nvrtc_check.compile_elementwise(source.in_params, source.out_params, source.operation, source.name,
                                                  preamble=fusion.PREAMBLE)
            assert source.name in ptx


@pytest.mark.parametrize("name,dtype", [("subtract", np.float32), ("add", np.int64), ("maximum", np.float16),
                                        ("minimum", np.int32), ("multiply", np.float64), ("subtract", np.uint32)])
def test_writes_at_repeated_indices_match_numpy_where_cuda_has_no_atomic(fake_gpu, name, dtype):
    """CuPy's ufunc.at takes only the dtypes CUDA has atomics for (subtract: int32/uint32 alone); the rest run in
    rounds, with every repeated index applied as NumPy's unbuffered ufunc.at does."""
    from adplace.kernels.repeated_index import ufunc_at
    rows = np.array([3, 0, 3, 3, 1, 0])
    values = (np.arange(12).reshape(6, 2) % 5 + 1).astype(dtype)
    start = np.full((4, 2), 7, dtype)
    expected = start.copy()
    getattr(np, name).at(expected, rows, values)
    if name == "subtract" and dtype == np.float32:
        with pytest.raises(TypeError, match="only supports int32, uint32"):
            fake_gpu.subtract.at(fake_gpu.asarray(start), fake_gpu.asarray(rows), fake_gpu.asarray(values))
    target = fake_gpu.asarray(start)
    ufunc_at(fake_gpu, name, target, rows, fake_gpu.asarray(values))
    np.testing.assert_array_equal(fake_gpu.asnumpy(target), expected)


def test_host_run_int32_kernels_read_device_inputs_on_the_device_stream(fake_gpu):
    """An int32 op on a GPU runs on the host; the device values it reads must be copied on the device stream: the
    null stream does not wait for a non-blocking stream, so a copy there can read memory not yet written."""
    with tf.device("/gpu:0"):
        x = tf.matmul(tf.ones([4, 4]), tf.ones([4, 4]))
        n = tf.reduce_sum(tf.cast(x, tf.int32))
    sess = tf.Session()
    sess.run(n)
    start = len(fake_gpu.fake_log)
    assert sess.run(n) == 64
    gets = [e for e in _since(fake_gpu, start, "sync") if e[1] == "get"]
    assert gets and {e[3] for e in gets} == {_stream_ptr(sess)}


def test_a_loop_reads_its_gpu_predicate_on_the_device_stream(fake_gpu):
    """A while loop's predicate computed on the GPU is read back every iteration on the device stream (found on an
    H200: read off it, loops ended after 0 or 1 iterations under load)."""
    with tf.device("/gpu:0"):
        _, y = tf.while_loop(lambda i, y: y < 100.0, lambda i, y: (i + 1, y * 3.0), [0, tf.constant(1.0)])
    sess = tf.Session()
    sess.run(y)
    start = len(fake_gpu.fake_log)
    assert sess.run(y) == 243.0
    gets = [e for e in _since(fake_gpu, start, "sync") if e[1] == "get"]
    assert len(gets) >= 6 and {e[3] for e in gets} == {_stream_ptr(sess)}


def test_threads_feeding_one_gpu_placeholder_each_get_their_own_value(fake_gpu, fast_switching):
    """The pinned staging buffer of a host->GPU copy is shared by every run of the plan: a thread must not refill it
    between another thread's fill and copy, or that copy uploads the wrong feed."""
    import threading
    x = tf.placeholder(tf.float64, [])
    with tf.device("/gpu:0"):
        y = x * 1.0
    sess = tf.Session()
    wrong = []

    def work(offset):
        for i in range(300):
            value = float(offset * 1000 + i)
            got = sess.run(y, {x: value})
            if got != value:
                wrong.append((value, got))
    threads = [threading.Thread(target=work, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert wrong == []


def test_a_pinned_feed_goes_to_the_gpu_straight_from_the_callers_buffer(fake_gpu, monkeypatch):
    """No host copy of a feed in pinned memory: the feed converter keeps it, and the upload needs no staging."""
    from adplace.runtime import feeds
    with tf.device("/gpu:0"):
        p = tf.placeholder(tf.float32, [1024])
        y = p * 2.0
    pinned = tf.pinned_empty((1024,), np.float32)
    pinned[:] = np.arange(1024)
    assert feeds.feed_converter(p)(pinned) is pinned
    pageable = np.arange(1024, dtype=np.float32)
    assert not np.shares_memory(feeds.feed_converter(p)(pageable), pageable)  # pageable memory: an owned copy
    sess = tf.Session()
    monkeypatch.setattr(gpu._Staging, "fill", lambda self, value: pytest.fail("a pinned feed was staged"))
    np.testing.assert_array_equal(sess.run(y, {p: pinned}), np.arange(1024) * 2.0)
