"""Tests for adplace/devices.py: CPU:0 always, virtual GPUs from the env or the API, CUDA GPUs only through CuPy."""

import pytest

import adplace as tf
from adplace import devices
from placement_log import CPU0


def test_cpu0_always_exists():
    listed = devices.local_devices()
    assert listed[0].name == CPU0 and listed[0].device_type == "CPU" and listed[0].index == 0
    assert not listed[0].is_virtual
    assert devices.local_devices(device_count={"CPU": 0})[0].name == CPU0  # CPU:0 cannot be hidden


def test_device_names(gpus):
    gpu = devices.local_devices()[1]
    assert gpu.name == "/job:localhost/replica:0/task:0/device:GPU:0"
    assert gpu.short_name == "/device:GPU:0"


def test_env_var_gives_virtual_gpus(monkeypatch, no_cupy):
    monkeypatch.setenv("ADPLACE_VIRTUAL_GPUS", "3")
    listed = devices.local_devices()
    assert [d.name for d in listed] == [CPU0] + [f"/job:localhost/replica:0/task:0/device:GPU:{i}" for i in range(3)]
    gpus = listed[1:]
    assert all(d.is_virtual and d.device_type == "GPU" for d in gpus)
    assert all(str(d).endswith("(virtual)") and d.name in str(d) for d in gpus)
    assert "(virtual)" not in str(listed[0])
    assert devices.virtual_gpu_count() == 3
    assert len(tf.Session().list_devices()) == 4


@pytest.mark.parametrize("text", ["two", "-1", "1.5"])
def test_bad_env_value_is_a_value_error_naming_the_variable(monkeypatch, text):
    monkeypatch.setenv("ADPLACE_VIRTUAL_GPUS", text)
    with pytest.raises(ValueError, match="ADPLACE_VIRTUAL_GPUS") as info:
        devices.local_devices()
    assert repr(text) in str(info.value)


def test_empty_env_value_means_no_virtual_gpus(monkeypatch, no_cupy):
    monkeypatch.setenv("ADPLACE_VIRTUAL_GPUS", "  ")
    assert [d.name for d in devices.local_devices()] == [CPU0]


def test_set_virtual_gpus_overrides_the_env(monkeypatch, no_cupy):
    monkeypatch.setenv("ADPLACE_VIRTUAL_GPUS", "3")
    tf.config.set_virtual_gpus(1)
    assert tf.config.virtual_gpu_count() == 1
    assert len(devices.local_devices()) == 2
    tf.config.set_virtual_gpus(0)
    assert [d.name for d in devices.local_devices()] == [CPU0]
    tf.config.set_virtual_gpus(None)  # back to the env
    assert len(devices.local_devices()) == 4


def test_set_virtual_gpus_wins_over_a_bad_env(monkeypatch):
    monkeypatch.setenv("ADPLACE_VIRTUAL_GPUS", "lots")
    tf.config.set_virtual_gpus(2)
    assert devices.virtual_gpu_count() == 2


@pytest.mark.parametrize("count", [-1, 1.5, "2"])
def test_set_virtual_gpus_rejects_bad_counts(count):
    with pytest.raises(ValueError, match="non-negative"):
        tf.config.set_virtual_gpus(count)
    assert devices.virtual_gpu_count() == 0  # nothing changed


def test_sessions_see_the_count_at_creation(no_cupy):
    tf.config.set_virtual_gpus(2)
    before = tf.Session()
    tf.config.set_virtual_gpus(1)
    after = tf.Session()
    assert len(before.list_devices()) == 3 and len(after.list_devices()) == 2


def test_config_list_devices(gpus, no_cupy):
    listed = tf.config.list_devices()
    assert [d.name for d in listed] == [CPU0, "/job:localhost/replica:0/task:0/device:GPU:0",
                                        "/job:localhost/replica:0/task:0/device:GPU:1"]
    assert [d.is_virtual for d in listed] == [False, True, True]
    assert [d.name for d in tf.Session().list_devices()] == [d.name for d in listed]


def test_visible_device_list_selects_and_renumbers(no_cupy):
    tf.config.set_virtual_gpus(3)
    listed = devices.local_devices(visible_device_list="2,0")
    assert [(d.name, d.description) for d in listed[1:]] == [
        ("/job:localhost/replica:0/task:0/device:GPU:0", "virtual GPU 2 (NumPy)"),
        ("/job:localhost/replica:0/task:0/device:GPU:1", "virtual GPU 0 (NumPy)")]
    assert all(d.is_virtual for d in listed[1:])


@pytest.mark.parametrize("text, match", [("5", "invalid GPU id '5'"), ("0,x", "comma-separated"),
                                         ("-1", "invalid GPU id '-1'")])
def test_invalid_visible_device_list_is_a_value_error(no_cupy, text, match):
    tf.config.set_virtual_gpus(2)
    with pytest.raises(ValueError, match=match):
        devices.local_devices(visible_device_list=text)
    with pytest.raises(ValueError, match=match):
        tf.Session(config=tf.ConfigProto(gpu_options=tf.GPUOptions(visible_device_list=text)))


def test_device_count_limits_gpus(no_cupy):
    tf.config.set_virtual_gpus(3)
    assert len(devices.local_devices(device_count={"GPU": 1})) == 2
    assert len(devices.local_devices(device_count={"GPU": 0})) == 1


def test_without_cupy_there_are_no_cuda_gpus(no_cupy):
    assert devices.cuda_gpus() == ()
    tf.config.set_virtual_gpus(1)
    assert [d.is_virtual for d in devices.local_devices()] == [False, True]


def test_kernel_availability_is_queryable_from_config():
    assert tf.config.has_kernel("VariableV2", "GPU", tf.float32)
    assert not tf.config.has_kernel("VariableV2", "GPU", tf.int32)
    assert tf.config.kernel_device_types("MatMul", tf.int32) == frozenset({"CPU"})
    assert "MatMul" in tf.config.registered_op_types()
