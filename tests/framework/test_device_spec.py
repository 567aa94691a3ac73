"""Tests for adplace.framework.device_spec (TF1 ``tf.DeviceSpec`` semantics)."""

import re
from types import SimpleNamespace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from adplace.framework.device_spec import (
    DeviceSpec,
    canonical_name,
    full_name_matches,
    merge_device,
)

FIELDS = ("job", "replica", "task", "device_type", "device_index")


# --- parsing and printing -------------------------------------------------

@pytest.mark.parametrize("text, expected", [
    ("/cpu:0", "/device:CPU:0"),
    ("/CPU:0", "/device:CPU:0"),
    ("/Gpu:1", "/device:GPU:1"),
    ("/GPU", "/device:GPU:*"),
    ("/gpu:*", "/device:GPU:*"),
    ("GPU:0", "/device:GPU:0"),
    ("/tpu:2", "/device:TPU:2"),
    ("/device:gpu:0", "/device:GPU:0"),
    ("/device:cpu:*", "/device:CPU:*"),
    ("/device:Gpu:0", "/device:Gpu:0"),
    ("/device:GPU:*", "/device:GPU:*"),
    ("/device:XLA_GPU:1", "/device:XLA_GPU:1"),
    ("", ""),
    ("/", ""),
    ("//job:ps//", "/job:ps"),
    ("/task:1/job:ps", "/job:ps/task:1"),
    ("/job:ps/task:0/cpu:0", "/job:ps/task:0/device:CPU:0"),
    ("/job:worker/replica:0/task:1/device:GPU:3",
     "/job:worker/replica:0/task:1/device:GPU:3"),
    ("/job:ps/replica:0/task:1/device:GPU:2",
     "/job:ps/replica:0/task:1/device:GPU:2"),
])
def test_from_string_canonical_form(text, expected):
    assert DeviceSpec.from_string(text).to_string() == expected
    assert canonical_name(text) == expected


def test_fields_after_parse():
    s = DeviceSpec.from_string("/job:worker/replica:0/task:1/device:GPU:3")
    assert (s.job, s.replica, s.task, s.device_type, s.device_index) == (
        "worker", 0, 1, "GPU", 3)
    legacy = DeviceSpec.from_string("/device:Gpu:0")
    assert legacy.device_type == "Gpu"
    assert DeviceSpec.from_string("/gpu:*").device_index is None


def test_constructor_and_to_string():
    assert DeviceSpec().to_string() == ""
    assert DeviceSpec(device_index=3).to_string() == ""
    assert DeviceSpec(job="ps", replica="2", task=1.0).to_string() == (
        "/job:ps/replica:2/task:1")
    assert DeviceSpec(device_type="cpu").device_type == "CPU"
    assert DeviceSpec(device_type="Cpu").device_type == "Cpu"


def test_from_string_copies_device_spec():
    original = DeviceSpec(job="ps", device_type="GPU", device_index=0)
    copy = DeviceSpec.from_string(original)
    assert copy == original and copy is not original
    copy.job = "worker"
    assert original.job == "ps"


@pytest.mark.parametrize("text, pattern", [
    ("/gpu:i", "invalid literal for int"),
    ("/device:GPU:x", "invalid literal for int"),
    ("/job:ps/task:one", "invalid literal for int"),
    ("/replica:", "invalid literal for int"),
    ("/cpu:0/gpu:0", "Multiple device types"),
    ("/device:CPU:0/device:GPU:0", "Multiple device types"),
    ("/foo:bar", "Unknown attribute 'foo'"),
    ("/job:ps:1", "Unknown attribute 'job'"),
    ("/device:GPU", "Unknown attribute 'device'"),
])
def test_invalid_specs_name_the_spec(text, pattern):
    with pytest.raises(ValueError, match=pattern) as info:
        DeviceSpec.from_string(text)
    assert text in str(info.value)
    with pytest.raises(ValueError, match=re.escape(text)):
        canonical_name(text)


@pytest.mark.parametrize("bad", [0, b"/cpu:0", ["/cpu:0"]])
def test_non_string_raises_type_error(bad):
    with pytest.raises(TypeError):
        DeviceSpec.from_string(bad)


def test_none_is_the_empty_spec_as_in_tf():
    assert DeviceSpec.from_string(None) == DeviceSpec()
    assert DeviceSpec(job="ps").parse_from_string(None).to_string() == ""
    assert merge_device(None)(SimpleNamespace(device="/cpu:1")) == "/device:CPU:1"


# --- equality, hashing, repr ----------------------------------------------

def test_eq_hash_repr():
    a = DeviceSpec.from_string("/gpu:0")
    b = DeviceSpec(device_type="GPU", device_index=0)
    assert a == b and hash(a) == hash(b) and len({a, b}) == 1
    assert a != DeviceSpec.from_string("/gpu:1")
    assert a != "/device:GPU:0"
    assert a.__eq__("/device:GPU:0") is NotImplemented
    assert hash(a) == hash("/device:GPU:0")
    assert repr(a) == ("<DeviceSpec(job=None, replica=None, task=None, "
                       "device_type='GPU', device_index=0)>")


# --- V1 mutation ------------------------------------------------------------

def test_setters_recompute_string_and_hash():
    s = DeviceSpec()
    s.job = "ps"
    s.replica = "1"
    s.task = 2
    s.device_type = "gpu"
    s.device_index = "3"
    assert s.to_string() == "/job:ps/replica:1/task:2/device:GPU:3"
    assert hash(s) == hash(s.to_string())
    s.device_index = None
    assert s.to_string() == "/job:ps/replica:1/task:2/device:GPU:*"
    s.device_type = None
    s.job = None
    assert s.to_string() == "/replica:1/task:2"
    assert s == DeviceSpec(replica=1, task=2)
    with pytest.raises(AttributeError):
        s.other = 1


def test_parse_from_string_sets_every_field_as_tf_1_14_and_later():
    s = DeviceSpec(job="ps", task=0, device_type="CPU", device_index=0)
    assert s.parse_from_string("/task:3/gpu:1") is s
    assert s.to_string() == "/task:3/device:GPU:1"  # job cleared: the text names no job
    s.parse_from_string("/device:GPU:*")
    assert (s.task, s.device_type, s.device_index) == (None, "GPU", None)
    s.parse_from_string("")
    assert s.to_string() == "" and s == DeviceSpec()
    s.parse_from_string("/job:ps/cpu:0")
    with pytest.raises(ValueError, match="foo"):
        s.parse_from_string("/foo:1")
    assert s.to_string() == "/job:ps/device:CPU:0"  # an invalid spec changes nothing


def test_merge_from_and_make_merged_spec_and_replace():
    s = DeviceSpec(job="ps", task=0)
    assert s.merge_from(DeviceSpec(task=3, device_type="GPU")) is None
    assert s.to_string() == "/job:ps/task:3/device:GPU:*"
    merged = DeviceSpec(job="ps").make_merged_spec(
        DeviceSpec(device_type="GPU", device_index=1))
    assert merged.to_string() == "/job:ps/device:GPU:1"
    base = DeviceSpec(job="ps", device_type="CPU", device_index=0)
    assert base.replace(device_type="gpu").to_string() == "/job:ps/device:GPU:0"
    assert base.replace(job=None).to_string() == "/device:CPU:0"
    assert base.to_string() == "/job:ps/device:CPU:0"


# --- module functions -------------------------------------------------------

def test_canonical_name():
    assert canonical_name(None) == ""
    assert canonical_name("") == ""
    assert canonical_name("/gpu:1") == "/device:GPU:1"
    assert canonical_name("/job:ps/cpu:0") == "/job:ps/device:CPU:0"
    assert canonical_name(DeviceSpec(task=1)) == "/task:1"


def test_merge_device_current_fields_take_precedence():
    f = merge_device("/job:ps/gpu:0")
    assert f(SimpleNamespace(device="")) == "/job:ps/device:GPU:0"
    assert f(SimpleNamespace(device=None)) == "/job:ps/device:GPU:0"
    assert f(SimpleNamespace()) == "/job:ps/device:GPU:0"
    assert f(SimpleNamespace(device="/cpu:1")) == "/job:ps/device:CPU:1"
    assert f(SimpleNamespace(device="/job:worker")) == (
        "/job:worker/device:GPU:0")
    assert f(SimpleNamespace(device="/cpu:1")) == "/job:ps/device:CPU:1"
    g = merge_device(DeviceSpec(device_type="GPU"))
    assert g(SimpleNamespace(device=DeviceSpec(device_index=2))) == (
        "/device:GPU:2")
    with pytest.raises(ValueError):
        merge_device("/bogus:0")
    with pytest.raises(ValueError):
        f(SimpleNamespace(device="/gpu:x"))


def test_merge_device_ignores_later_mutation_of_scope_spec():
    scope = DeviceSpec(job="ps")
    f = merge_device(scope)
    scope.job = "worker"
    assert f(SimpleNamespace(device="/cpu:0")) == "/job:ps/device:CPU:0"


def test_full_name_matches():
    full = ("worker", 0, 1, "GPU", 3)
    assert full_name_matches(DeviceSpec(), *full)
    assert full_name_matches(DeviceSpec.from_string("/job:worker/gpu:3"), *full)
    assert full_name_matches(DeviceSpec.from_string("/gpu:*"), *full)
    assert not full_name_matches(DeviceSpec.from_string("/gpu:2"), *full)
    assert not full_name_matches(DeviceSpec.from_string("/cpu:3"), *full)
    assert not full_name_matches(DeviceSpec(task=0), *full)
    assert not full_name_matches(DeviceSpec(device_type="Gpu"), *full)


# --- properties ---------------------------------------------------------------

indices = st.none() | st.integers(0, 10**6)
specs = st.builds(
    DeviceSpec,
    job=st.none() | st.from_regex(r"[a-z][a-z0-9_]{0,8}", fullmatch=True),
    replica=indices,
    task=indices,
    device_type=st.sampled_from([None, "CPU", "GPU", "TPU"]),
    device_index=indices,
)


def fields(spec):
    return tuple(getattr(spec, name) for name in FIELDS)


@given(specs)
def test_round_trip(s):
    parsed = DeviceSpec.from_string(s.to_string())
    assert parsed.to_string() == s.to_string()
    if s.device_type is not None or s.device_index is None:
        assert parsed == s
        assert fields(parsed) == fields(s)


@given(specs, specs)
def test_merge_properties(a, b):
    merged = a.make_merged_spec(b)
    for name in FIELDS:
        mine, theirs = getattr(a, name), getattr(b, name)
        assert getattr(merged, name) == (theirs if theirs is not None else mine)
    assert merged.make_merged_spec(b) == merged
    assert a.make_merged_spec(DeviceSpec()) == a
    assert DeviceSpec().make_merged_spec(a) == a
    mutated = DeviceSpec.from_string(a)
    mutated.merge_from(b)
    assert fields(mutated) == fields(merged)


@settings(max_examples=300)
@given(st.text())
def test_arbitrary_text_raises_only_value_error(text):
    try:
        DeviceSpec.from_string(text)
    except ValueError:
        pass


@given(st.lists(st.sampled_from(
    ["job:ps", "cpu:0", "gpu:*", "device:GPU:1", "task:3", "replica:x",
     "foo:bar", "", ":", "TPU", "device:gpu:2", "job:a:b"]), max_size=6))
def test_structured_text_raises_only_value_error(parts):
    text = "/".join(parts)
    try:
        canonical = canonical_name(text)
    except ValueError as err:
        assert text in str(err)
    else:
        assert canonical_name(canonical) == canonical


@given(specs)
def test_canonical_name_idempotent(s):
    once = canonical_name(s.to_string())
    assert canonical_name(once) == once
    assert canonical_name(s) == once


@given(specs, specs)
def test_merge_device_matches_make_merged_spec(outer, inner):
    inner_str = inner.to_string()
    expected = outer.make_merged_spec(DeviceSpec.from_string(inner_str))
    f = merge_device(outer)
    obj = SimpleNamespace(device=inner_str)
    assert f(obj) == expected.to_string()
    assert f(obj) == expected.to_string()
    if outer.device_type is not None or outer.device_index is None:
        assert merge_device(outer.to_string())(obj) == expected.to_string()


# --- DeviceSpecV1 (mutable, TF1's tf.DeviceSpec) and DeviceSpecV2 (immutable) --------------------------------------

def test_device_spec_is_the_mutable_v1_class_and_v2_is_immutable():
    from adplace.framework.device_spec import DeviceSpecV1, DeviceSpecV2
    assert DeviceSpec is DeviceSpecV1 and issubclass(DeviceSpecV1, DeviceSpecV2)
    v2 = DeviceSpecV2(job="ps", device_type="gpu", device_index=1)
    assert v2.to_string() == "/job:ps/device:GPU:1"
    with pytest.raises(AttributeError):
        v2.task = 3
    assert not hasattr(v2, "merge_from")
    parsed = v2.parse_from_string("/cpu:0")          # a new spec; v2 itself is unchanged
    assert parsed.to_string() == "/device:CPU:0" and type(parsed) is DeviceSpecV2
    assert v2.to_string() == "/job:ps/device:GPU:1"
    merged = v2.make_merged_spec(DeviceSpecV2(task=2))
    assert type(merged) is DeviceSpecV2 and merged.to_string() == "/job:ps/task:2/device:GPU:1"
    assert v2 == DeviceSpecV1.from_string("/job:ps/device:GPU:1")


def test_a_v2_spec_works_as_a_device_scope():
    import adplace as tf
    from adplace.framework.device_spec import DeviceSpecV2
    with tf.Graph().as_default():
        with tf.device(DeviceSpecV2(job="worker", device_type="CPU", device_index=0)):
            c = tf.constant(1.0)
    assert c.device == "/job:worker/device:CPU:0"


def test_check_valid_raises_on_malformed_specs_only():
    from adplace.framework.device_spec import check_valid
    check_valid("/job:foo/replica:0")
    with pytest.raises(ValueError, match="invalid literal for int"):
        check_valid("/job:j/task:bar")
    with pytest.raises(ValueError, match="Unknown attribute 'bogus'"):
        check_valid("/bogus:1")
