"""Tests for adplace/placement.py: the placer (TF's placer.cc semantics) on CPU:0 and virtual GPUs.

Placed devices come from the session (`sess.placement`, `sess.placement_table()`); requests from `op.device`.
"""

import numpy as np
import pytest

import adplace as tf
from adplace.errors import InvalidArgumentError
from placement_log import CPU0, GPU0, GPU1, placement_lines


pytestmark = pytest.mark.usefixtures("virtual_gpus_only")


def notes_by_name(sess) -> dict[str, str]:
    return {name: note for name, _, _, _, note in sess.placement_table()}


# --- defaults and explicit requests ------------------------------------------------------------------------------

def test_no_request_prefers_gpu_over_cpu(gpus):
    y = tf.sin(tf.constant(1.0))
    assert tf.Session().placement(y) == GPU0


@pytest.mark.parametrize("gpus", [3], indirect=True)
def test_no_request_picks_the_lowest_gpu_index(gpus):
    with tf.device("/gpu:*"):
        y = tf.sin(tf.constant(1.0))
    z = tf.cos(y)
    sess = tf.Session()
    assert sess.placement(y) == GPU0 and sess.placement(z) == GPU0


def test_no_gpus_means_cpu():
    y = tf.sin(tf.constant(1.0))
    assert tf.Session().placement(y) == CPU0


@pytest.mark.parametrize("request_, expected", [("/cpu:0", CPU0), ("/gpu:1", GPU1), ("/device:GPU:0", GPU0),
                                                ("/job:localhost/replica:0/task:0/device:GPU:1", GPU1),
                                                ("/device:CPU:*", CPU0)])
def test_explicit_request_wins(gpus, request_, expected):
    x = tf.constant([1.0, 2.0])
    with tf.device(request_):
        y = tf.sin(x)
    sess = tf.Session()
    assert sess.placement(y) == expected
    np.testing.assert_allclose(sess.run(y), np.sin([1.0, 2.0]), rtol=1e-6)


@pytest.mark.parametrize("request_, canonical", [("/device:GPU:9", "/device:GPU:9"), ("/cpu:7", "/device:CPU:7")])
def test_missing_device_is_an_error_naming_op_request_and_devices(gpus, request_, canonical):
    with tf.device(request_):
        y = tf.constant(1.0, name="wanted")
    with pytest.raises(InvalidArgumentError, match=r"operation wanted\b") as info:
        tf.Session().run(y)
    message = str(info.value)
    assert f"explicitly assigned to {canonical}" in message
    assert f"available devices are [ {CPU0}, {GPU0}, {GPU1} ]" in message
    assert info.value.op is y.op


def test_soft_placement_of_missing_devices(gpus):
    with tf.device("/device:GPU:9"):
        x = tf.constant(1.0, name="x")
    with tf.device("/cpu:7"):
        y = tf.constant(2.0, name="y")
    z = x + y
    sess = tf.Session(config=tf.ConfigProto(allow_soft_placement=True))
    assert sess.run(z) == 3.0
    assert sess.placement(x) in (GPU0, GPU1)  # same type, any index
    assert sess.placement(y) == CPU0
    notes = notes_by_name(sess)
    assert "soft placement" in notes["x"] and "GPU:9" in notes["x"]
    assert "soft placement" in notes["y"] and "CPU:7" in notes["y"]
    assert notes["add"] == ""
    assert (x.device, y.device) == ("/device:GPU:9", "/device:CPU:7")


def test_soft_placement_note_is_in_the_log(gpus, capsys):
    with tf.device("/device:GPU:9"):
        x = tf.constant(1.0, name="x")
    sess = tf.Session(config=tf.ConfigProto(allow_soft_placement=True, log_device_placement=True))
    sess.run(x)
    out = capsys.readouterr().out
    assert ("x", "Const", GPU0) in placement_lines(out)
    assert "soft placement" in out and "GPU:9" in out


def test_request_for_other_job_is_an_error_even_with_soft_placement(gpus):
    with tf.device("/job:ps/task:0"):
        x = tf.constant(1.0, name="remote")
    with pytest.raises(InvalidArgumentError, match="remote"):
        tf.Session(config=tf.ConfigProto(allow_soft_placement=True)).run(x)


# --- colocation ----------------------------------------------------------------------------------------------------

def test_colocate_with_puts_ops_on_the_same_device(gpus):
    with tf.device("/gpu:1"):
        a = tf.constant([1.0, 2.0], name="a")
    with tf.colocate_with(a):
        b = tf.sin(a, name="b")
    c = tf.cos(a, name="c")
    sess = tf.Session()
    assert sess.placement(b) == sess.placement(a) == GPU1
    assert sess.placement(c) == GPU0  # not colocated: the default


def test_colocation_without_any_request_follows_the_group(gpus):
    with tf.device("/cpu:0"):
        x = tf.placeholder(tf.float32, [2], name="x")
    a = tf.identity(x, name="a")
    with tf.colocate_with(a):
        with tf.device("/cpu:0"):
            b = tf.sin(a, name="b")
    sess = tf.Session()
    assert sess.placement(a) == sess.placement(b) == CPU0  # b's request pulls its whole group


def test_variable_assign_and_read_share_the_variables_device(gpus):
    with tf.device("/gpu:1"):
        v = tf.Variable(1.0, name="v")
    inc = tf.assign_add(v, 2.0)
    sess = tf.Session()
    sess.run(v.initializer)
    sess.run(inc)
    assert sess.run(v) == 3.0
    for element in (v, v.initializer, v.value(), inc):
        assert sess.placement(element) == GPU1


def test_variable_assign_requested_on_gpu_stays_with_variable_on_cpu(gpus):
    # ADCME's closure: VariableV2 on CPU, everything else (Assign included) requested on GPU:0.
    with tf.device(tf.assign_to_device("/device:GPU:0")):
        v = tf.Variable(1.0, name="v")
        upd = tf.assign(v, 5.0, name="upd")
        y = tf.sin(v, name="y")
    # TF builds ops with a ref input inside colocate_with(the variable): the device function is not consulted
    assert v.initializer.device == upd.op.device == "/device:CPU:0"
    assert v.initializer.get_attr("_class") == upd.op.get_attr("_class") == [b"loc:@v"]
    sess = tf.Session()
    sess.run(v.initializer)
    sess.run(upd)
    assert sess.run(v) == 5.0
    assert sess.placement(v) == sess.placement(v.initializer) == sess.placement(upd) == CPU0
    assert sess.placement(v.value()) == CPU0
    assert sess.placement(y) == GPU0


def _conflicting_group():
    a = tf.constant(1.0, name="a")
    with tf.colocate_with(a):
        with tf.device("/gpu:0"):
            b = tf.identity(a, name="b")
        with tf.device("/gpu:1"):
            c = tf.identity(a, name="c")
    return a, b, c


def test_conflicting_requests_in_a_colocation_group_are_an_error(gpus):
    a, b, c = _conflicting_group()
    assert (b.device, c.device) == ("/device:GPU:0", "/device:GPU:1")
    with pytest.raises(InvalidArgumentError, match="Cannot colocate nodes b and c") as info:
        tf.Session().run(c)
    assert "/device:GPU:0" in str(info.value) and "/device:GPU:1" in str(info.value)


def test_soft_placement_relaxes_conflicting_colocation_requests(gpus):
    a, b, c = _conflicting_group()
    sess = tf.Session(config=tf.ConfigProto(allow_soft_placement=True))
    assert sess.run([b, c]) == [1.0, 1.0]
    assert sess.placement(a) == sess.placement(b) == sess.placement(c)


def test_no_common_kernel_type_in_a_colocation_group(gpus):
    with tf.device("/cpu:0"):
        v = tf.Variable(3, name="counter")  # int32: CPU only
    with tf.colocate_with(v.op):
        y = tf.identity(v, name="y")
    sess = tf.Session()
    sess.run(v.initializer)
    assert sess.run(y) == 3 and sess.placement(y) == CPU0


# --- generators (TF's heuristic A) ---------------------------------------------------------------------------------

def test_unrequested_constant_follows_its_single_consumer(gpus):
    x = tf.placeholder(tf.float32, [2], name="x")
    k = tf.constant([3.0, 4.0], name="k")
    with tf.device("/gpu:1"):
        y = x * k
    sess = tf.Session()
    assert sess.placement(k) == GPU1
    assert sess.plan_for(y, {x: [1.0, 2.0]}).transfers == ()  # no copy for the constant
    assert x.op.device == "" and sess.placement(x) == GPU1  # a placeholder is a generator too


def test_constant_requested_on_cpu_stays_on_cpu(gpus):
    with tf.device("/cpu:0"):
        k = tf.constant([3.0, 4.0], name="k")
    with tf.device("/gpu:1"):
        y = tf.sin(k)
    sess = tf.Session()
    assert sess.placement(k) == CPU0 and sess.placement(y) == GPU1


def test_constant_with_consumers_on_different_devices_keeps_the_default(gpus):
    k = tf.constant(5.0, name="k")
    with tf.device("/cpu:0"):
        a = tf.sin(k)
    with tf.device("/gpu:1"):
        b = tf.cos(k)
    sess = tf.Session()
    assert sess.placement(k) == GPU0
    assert (sess.placement(a), sess.placement(b)) == (CPU0, GPU1)


# --- session configuration -----------------------------------------------------------------------------------------

def test_device_count_gpu_zero_hides_gpus(gpus):
    y = tf.sin(tf.constant(1.0))
    sess = tf.Session(config=tf.ConfigProto(device_count={"GPU": 0}))
    assert [d.name for d in sess.list_devices()] == [CPU0]
    assert sess.placement(y) == CPU0


@pytest.mark.parametrize("gpus", [3], indirect=True)
def test_visible_device_list_renumbers_gpus(gpus):
    y = tf.sin(tf.constant(1.0))
    config = tf.ConfigProto()
    config.gpu_options.visible_device_list = "1"
    sess = tf.Session(config=config)
    assert [d.name for d in sess.list_devices()] == [CPU0, GPU0]
    assert sess._devices[1].description == "virtual GPU 1 (NumPy)"  # physical GPU 1 is now GPU:0
    assert sess.placement(y) == GPU0

    swapped = tf.Session(config=tf.ConfigProto(gpu_options=tf.GPUOptions(visible_device_list="2,0")))
    assert [d.description for d in swapped._devices[1:]] == ["virtual GPU 2 (NumPy)", "virtual GPU 0 (NumPy)"]


# --- incremental placement -----------------------------------------------------------------------------------------

def test_ops_added_after_a_run_are_placed_and_logged_on_the_next_run(gpus, capsys):
    x = tf.constant(1.0, name="x")
    y = tf.sin(x, name="y")
    sess = tf.Session(config=tf.ConfigProto(log_device_placement=True))
    assert sess.run(y) == pytest.approx(np.sin(1.0))
    assert placement_lines(capsys.readouterr().out) == [("x", "Const", GPU0), ("y", "Sin", GPU0)]
    before = sess.placement_table()

    with tf.device("/cpu:0"):
        z = tf.multiply(y, 2.0, name="z")
    sess.run(y)  # the cached signature still places the grown graph, as TF's Extend does
    assert placement_lines(capsys.readouterr().out) == [("z/y", "Const", CPU0), ("z", "Mul", CPU0)]
    assert sess.run(z) == pytest.approx(2 * np.sin(1.0))
    assert placement_lines(capsys.readouterr().out) == []  # nothing new to place, nothing logged
    assert sess.placement_table()[:len(before)] == before


def test_new_op_colocated_with_a_placed_variable_joins_its_device(gpus):
    with tf.device("/gpu:0"):
        v = tf.Variable(1.0, name="v")
    sess = tf.Session()
    sess.run(v.initializer)
    assert sess.placement(v) == GPU0
    with tf.device("/gpu:1"):
        inc = tf.assign_add(v, 1.0, name="inc")  # a reference edge: the variable's device wins
    sess.run(inc)
    assert sess.run(v) == 2.0
    assert sess.placement(inc) == GPU0


def test_new_op_colocated_with_placed_group_but_requesting_elsewhere(gpus):
    v = tf.Variable(1.0, name="v")
    sess = tf.Session()
    sess.run(v.initializer)
    with tf.colocate_with(v.op):
        with tf.device("/cpu:0"):
            r = tf.identity(v, name="r")
    with pytest.raises(InvalidArgumentError, match=r"operation r\b"):
        sess.run(r)


def test_soft_placement_keeps_a_placed_group_where_it_is(gpus):
    v = tf.Variable(1.0, name="v")
    sess = tf.Session(config=tf.ConfigProto(allow_soft_placement=True))
    sess.run(v.initializer)
    with tf.colocate_with(v.op):
        with tf.device("/cpu:0"):
            r = tf.identity(v, name="r")
    assert sess.run(r) == 1.0
    assert sess.placement(r) == sess.placement(v) == GPU0
    assert tf.Session().placement(r) == CPU0  # a fresh session places the whole group by r's request


# --- scale and invariants ------------------------------------------------------------------------------------------

def test_placement_of_a_large_chain(gpus):
    x = tf.placeholder(tf.float32, [4], name="x")
    h, chain = x, []
    for i in range(20000):
        with tf.device("/cpu:0" if i % 3 == 0 else None):
            h = (tf.sin, tf.cos, tf.square)[i % 3](h)
        chain.append(h)
    table = tf.Session().placement_table()
    assert len(table) == 20001
    assert table[0][3] == CPU0  # the placeholder follows its only consumer
    by_name = {name: placed for name, _, _, placed, _ in table}
    for i, t in enumerate(chain):
        assert by_name[t.op.name] == (CPU0 if i % 3 == 0 else GPU0), t.op.name


def test_placement_never_changes_op_device(gpus):
    with tf.device("/gpu:9"):
        a = tf.constant(1.0, name="a")
    with tf.device(tf.assign_to_device("/gpu:1")):
        v = tf.Variable(2.0, name="v")
        b = a * v
    c = tf.sin(b)
    requested = {op.name: op.device for op in tf.get_default_graph().get_operations()}
    sess = tf.Session(config=tf.ConfigProto(allow_soft_placement=True))
    sess.run(v.initializer)
    sess.run(c)
    assert {op.name: op.device for op in tf.get_default_graph().get_operations()} == requested
    assert [(name, req) for name, _, req, _, _ in sess.placement_table()] == list(requested.items())
    assert c.device == "" and sess.placement(c) == GPU0


def test_placement_accepts_ops_tensors_variables_and_names(gpus):
    with tf.device("/gpu:1"):
        v = tf.Variable(1.0, name="v")
        y = tf.sin(v, name="y")
    sess = tf.Session()
    assert sess.placement(y) == sess.placement(y.op) == sess.placement("y") == sess.placement("y:0") == GPU1
    assert sess.placement(v) == GPU1


def test_placement_table_rows(gpus):
    with tf.device("/cpu:0"):
        a = tf.constant(1.0, name="a")
    tf.sin(a, name="b")
    assert tf.Session().placement_table() == [("a", "Const", "/device:CPU:0", CPU0, ""), ("b", "Sin", "", GPU0, "")]


def test_placement_log_goes_to_sys_stdout_with_device_mapping(gpus, capsys):
    tf.sin(tf.constant(1.0, name="k"), name="s")
    sess = tf.Session(config=tf.ConfigProto(log_device_placement=True))
    out = capsys.readouterr().out
    assert out.startswith("Device mapping:\n")
    assert f"{GPU0} -> virtual GPU 0" in out and f"{GPU1} -> virtual GPU 1" in out
    assert CPU0 not in out  # plain CPUs have no physical description
    sess.run("s")
    captured = capsys.readouterr()
    assert placement_lines(captured.out) == [("k", "Const", GPU0), ("s", "Sin", GPU0)]
    assert "s: (Sin)" not in captured.err


def test_device_mapping_without_gpus(capsys):
    tf.Session(config=tf.ConfigProto(log_device_placement=True))
    assert capsys.readouterr().out == "Device mapping: no known devices.\n"


def test_no_log_without_log_device_placement(gpus, capsys):
    y = tf.sin(tf.constant(1.0))
    tf.Session().run(y)
    assert capsys.readouterr().out == ""


def test_late_writer_with_another_request_joins_the_already_placed_variable(gpus):
    v = tf.Variable(1.0, name="v")
    sess = tf.Session()
    sess.run(v.initializer)
    with tf.device("/gpu:1"):
        inc = tf.assign_add(v, 1.0, name="inc")
    assert sess.run(inc) == 2.0
    assert sess.placement(inc) == sess.placement(v) == GPU0


def test_shape_ops_stay_with_their_input(gpus):
    with tf.device("/cpu:0"):
        x = tf.placeholder(tf.float32, [None, 2], name="x")
        y = x * 2.0
    s = tf.shape(y, name="s")
    assert s.op.type == "Shape"  # the first dimension is only known at run time
    sess = tf.Session()
    assert sess.placement(s) == CPU0 and sess.plan_for(s, {x: [[1.0, 2.0]]}).transfers == ()


def test_shape_size_and_rank_of_static_shapes_are_constants_as_in_tf1():
    x = tf.zeros([2, 3])
    s, n, r = tf.shape(x), tf.size(x), tf.rank(x)
    assert [t.op.type for t in (s, n, r)] == ["Const", "Const", "Const"]
    assert [t.op.name for t in (s, n, r)] == ["Shape", "Size", "Rank"]
    assert tf.shape(x, optimize=False).op.type == "Shape"
    like = tf.ones_like(x, optimize=False)  # TF: ones(shape_internal(x, optimize=False)), a Shape op then Fill
    assert like.op.type == "Fill" and like.op.inputs[0].op.type == "Shape"
    p = tf.placeholder(tf.float32, [None, 3])
    assert (tf.shape(p).op.type, tf.size(p).op.type, tf.rank(p).op.type) == ("Shape", "Size", "Const")
    assert tf.rank(tf.placeholder(tf.float32)).op.type == "Rank"
    empty = tf.size(tf.placeholder(tf.float32, [None, 0]))
    assert empty.op.type == "Const" and tf.Session().run(empty) == 0
    with tf.Session() as sess:
        assert [list(v) if np.ndim(v) else int(v) for v in sess.run([s, n, r])] == [[2, 3], 6, 2]
        assert list(sess.run(tf.shape(p), {p: np.zeros([4, 3])})) == [4, 3]


def test_default_grad_ys_are_named_as_in_tf1():
    x = tf.constant(1.0)
    tf.gradients(tf.sin(x), x)
    names = [(op.name, op.type) for op in tf.get_default_graph().get_operations() if op.name.startswith("gradients/")]
    assert names[:3] == [("gradients/Shape", "Const"), ("gradients/grad_ys_0", "Const"), ("gradients/Fill", "Fill")]
