"""tf.DeviceSpec as TF 1.15's (DeviceSpecV1: mutable fields, parse_from_string sets every field, merge_from),
and tf.device(None) / device functions in graphs."""
import pytest

import adplace as tf
from adplace.framework.device_spec import DeviceSpec, merge_device


def test_fields_can_be_set_one_by_one_and_the_text_follows():
    spec = DeviceSpec()
    assert spec.to_string() == ""
    spec.job = "trainer"
    spec.task = 7
    assert spec.to_string() == "/job:trainer/task:7"
    spec.device_type, spec.device_index = "gpu", 1  # legacy lower case is upper-cased
    assert spec.to_string() == "/job:trainer/task:7/device:GPU:1"
    spec.task, spec.replica = None, 4
    assert spec.to_string() == "/job:trainer/replica:4/device:GPU:1"
    spec.device_index = None
    assert spec.to_string() == "/job:trainer/replica:4/device:GPU:*"  # any index
    spec.device_type = None
    assert spec.to_string() == "/job:trainer/replica:4"
    assert hash(spec) == hash(DeviceSpec(job="trainer", replica=4))


def test_parse_from_string_replaces_the_whole_spec_and_returns_it():
    spec = DeviceSpec()
    assert spec.parse_from_string("/job:a/replica:2") is spec
    spec.parse_from_string("/replica:5/task:1/cpu:3")
    assert (spec.job, spec.replica, spec.task, spec.device_type, spec.device_index) == (None, 5, 1, "CPU", 3)
    spec.parse_from_string("/job:b/device:GPU:0")
    assert spec.to_string() == "/job:b/device:GPU:0"
    with pytest.raises(ValueError, match="Multiple device types are not allowed"):
        spec.parse_from_string("/job:b/device:GPU:0/cpu:1")
    assert spec.to_string() == "/job:b/device:GPU:0"


def test_merge_from_lets_the_argument_win_on_the_fields_it_sets():
    spec = DeviceSpec.from_string("/job:a/replica:3")
    assert spec.merge_from(DeviceSpec.from_string("/task:2/device:GPU:1")) is None
    assert spec.to_string() == "/job:a/replica:3/task:2/device:GPU:1"
    spec.merge_from(DeviceSpec.from_string("/job:c/cpu:0"))
    assert spec.to_string() == "/job:c/replica:3/task:2/device:CPU:0"
    spec.merge_from(DeviceSpec.from_string("/device:SomeAccelerator:4"))  # any type after "device:"
    assert spec.to_string() == "/job:c/replica:3/task:2/device:SomeAccelerator:4"


def test_make_merged_spec_and_replace_return_new_specs():
    base = DeviceSpec.from_string("/job:a/replica:0")
    merged = base.make_merged_spec(DeviceSpec.from_string("/task:5/gpu:2"))
    assert merged.to_string() == "/job:a/replica:0/task:5/device:GPU:2"
    assert base.to_string() == "/job:a/replica:0"
    again = merged.make_merged_spec(DeviceSpec.from_string("/job:z/cpu:1"))
    assert again.to_string() == "/job:z/replica:0/task:5/device:CPU:1"
    assert again.replace(replica=None, device_index=None).to_string() == "/job:z/task:5/device:CPU:*"
    assert again.replace(device_type="GPU").to_string() == "/job:z/replica:0/task:5/device:GPU:1"
    assert again.to_string() == "/job:z/replica:0/task:5/device:CPU:1"


def test_equality_is_by_text_and_specs_are_dict_keys():
    a, b = DeviceSpec.from_string("/gpu:0"), DeviceSpec(device_type="GPU", device_index=0)
    assert a == b and {a: 1}[b] == 1
    assert a != "/device:GPU:0"  # a string is not a DeviceSpec


def test_merge_device_function_fills_only_unset_fields_of_the_op():
    class NodeDefLike:
        device = "/job:w/cpu:0"

    assert merge_device("/job:ps/task:1/gpu:0")(NodeDefLike()) == "/job:w/task:1/device:CPU:0"
    assert merge_device("")(NodeDefLike()) == "/job:w/device:CPU:0"


# --- in graphs ------------------------------------------------------------------------------------------------------

def test_device_none_shuts_out_every_outer_scope_and_function():
    with tf.device(lambda op: "/gpu:0"), tf.device("/job:ps"):
        with tf.device(None):
            bare = tf.constant(1.0, name="bare")
            with tf.device("/cpu:0"):
                inner = tf.constant(1.0, name="inner")
        outer = tf.constant(1.0, name="outer")
    assert (bare.device, inner.device) == ("", "/device:CPU:0")
    assert outer.op.device == "/gpu:0"  # the outer function runs last and its answer replaces the merged one


def test_device_function_returning_none_leaves_the_op_unplaced_and_outer_scopes_still_merge():
    with tf.device("/job:ps"):
        with tf.device(lambda op: None):
            c = tf.constant(1.0)
    assert c.device == "/job:ps"


def test_device_spec_objects_as_scopes_merge_like_strings():
    with tf.device(DeviceSpec(job="train")):
        with tf.device(DeviceSpec(device_type="GPU", device_index=1)):
            c = tf.constant(1.0)
        with tf.device(DeviceSpec(job="ps", device_type="GPU", device_index=0)):
            d = tf.constant(1.0)
    assert (c.device, d.device) == ("/job:train/device:GPU:1", "/job:ps/device:GPU:0")
