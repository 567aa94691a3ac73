"""tf.Graph, name scopes, Tensor and Operation text as TF 1.x graph mode has them (ops.py is the reference):
feeding/fetching marks, create_op's TF signature, collections, finalize, thread-local stacks, unique_name,
as_graph_element's errors and the name-scope rules."""
import threading

import numpy as np
import pytest

import adplace as tf


# --- feeding and fetching marks (read by Session.run) -------------------------------------------------------------

def test_prevent_feeding_and_fetching_mark_single_elements():
    a, b = tf.constant(1.0, name="a"), tf.constant(2.0, name="b")
    g = tf.get_default_graph()
    assert g.is_feedable(a) and g.is_fetchable(a) and g.is_fetchable(a.op)
    g.prevent_feeding(a)
    g.prevent_fetching(b.op)
    assert not g.is_feedable(a) and g.is_fetchable(a)
    assert g.is_feedable(b)
    assert not g.is_fetchable(b.op) and not g.is_fetchable(b)  # a tensor is judged by its op


# --- create_op: TF's signature ------------------------------------------------------------------------------------

def test_create_op_takes_tf_keywords_and_python_attrs():
    g = tf.get_default_graph()
    x = tf.constant([1.0, 2.0], name="x")
    op = g.create_op("AddN", [x, x], dtypes=[tf.float32], input_types=[tf.float32, tf.float32], name="sum",
                     attrs={"N": 2, "T": tf.float32})
    assert op.name == "sum" and op.type == "AddN" and op.outputs[0].dtype == tf.float32
    assert op.get_attr("N") == 2
    with tf.Session() as sess:
        np.testing.assert_allclose(sess.run(op.outputs[0]), [2.0, 4.0])


def test_create_op_rejects_non_tensor_inputs_by_position():
    g = tf.get_default_graph()
    x = tf.constant(1.0)
    with pytest.raises(TypeError, match=r"Input #1 is not a tensor: 2\.0"):
        g.create_op("AddN", [x, 2.0], attrs={"N": 2, "T": tf.float32})


def test_create_op_checks_given_dtypes_and_input_types_and_leaves_the_graph_unchanged():
    g = tf.get_default_graph()
    x = tf.constant(1.0, name="x")
    before = g.get_operations()
    with pytest.raises(TypeError, match=r"'Identity_?\w*' \(Identity\) outputs \['float32'\]"):
        g.create_op("Identity", [x], dtypes=[tf.int32], attrs={"T": tf.float32})
    with pytest.raises(TypeError, match=r"In op 'Identity', input types \(\[tf.float32\]\) are not compatible "
                                        r"with expected types \(\[tf.int32\]\)"):
        g.create_op("Identity", [x], input_types=[tf.int32], attrs={"T": tf.float32})
    assert g.get_operations() == before
    assert g.create_op("Identity", [x], attrs={"T": tf.float32}).name == "Identity"  # the name was given back


def test_create_op_compute_device_false_skips_device_scopes_but_not_colocation():
    g = tf.get_default_graph()
    with tf.device("/cpu:0"):
        base = tf.constant(1.0, name="base")
    with tf.device("/gpu:0"):
        free = g.create_op("Identity", [base], attrs={"T": tf.float32}, compute_device=False)
        placed = g.create_op("Identity", [base], attrs={"T": tf.float32})
        with tf.colocate_with(base):
            colocated = g.create_op("Identity", [base], attrs={"T": tf.float32}, compute_device=False)
    assert (free.device, placed.device, colocated.device) == ("", "/device:GPU:0", "/device:CPU:0")


def test_create_op_on_a_finalized_graph_raises_tf_runtime_error():
    g = tf.Graph()
    with g.as_default():
        x = tf.constant(1.0)
    g.finalize()
    with pytest.raises(RuntimeError, match="^Graph is finalized and cannot be modified.$"):
        g.create_op("Identity", [x], attrs={"T": tf.float32})


# --- collections and finalize -------------------------------------------------------------------------------------

def test_collection_keys_include_empty_collections_but_not_internal_tuple_keys():
    g = tf.get_default_graph()
    g.add_to_collection("losses_here", 1)
    g.get_collection_ref("empty_one")
    g.add_to_collection(("internal",), 2)
    assert set(g.get_all_collection_keys()) == {"losses_here", "empty_one"}
    assert set(g.collections) == {"losses_here", "empty_one", ("internal",)}
    g.clear_collection("losses_here")
    assert g.get_collection("losses_here") == [] and "losses_here" not in g.collections
    g.clear_collection("never_there")  # no error, as in TF


def test_finalized_graph_refuses_collection_changes_but_allows_reads():
    g = tf.Graph()
    g.add_to_collection("k", 1)
    g.finalize()
    assert g.finalized
    for change in (lambda: g.add_to_collection("k", 2), lambda: g.add_to_collections(["k"], 2),
                   lambda: g.clear_collection("k")):
        with pytest.raises(RuntimeError, match="Graph is finalized and cannot be modified."):
            change()
    assert g.get_collection("k") == [1] and g.get_collection_ref("k") == [1]


def test_version_counts_ops_and_building_function_is_false():
    g = tf.Graph()
    assert g.version == 0 and g.building_function is False
    with g.as_default():
        tf.constant(1.0)
        tf.constant(2.0)
    assert g.version == 2


# --- thread-local build stacks ------------------------------------------------------------------------------------

def _in_thread(graph, build):
    result = []
    thread = threading.Thread(target=lambda: result.append(build()))
    thread.start()
    thread.join()
    return result[0]


def test_device_and_control_stacks_are_shared_between_threads_by_default():
    g = tf.Graph()
    with g.as_default():
        first = tf.constant(0.0, name="first")
    with g.device("/gpu:1"), g.control_dependencies([first]), g.name_scope("main_only"):
        def build():
            with g.as_default():
                return tf.constant(1.0, name="c").op
        op = _in_thread(g, build)
    assert op.device == "/device:GPU:1"
    assert op.control_inputs == [first.op]
    assert op.name == "c"  # name scopes are always per thread


def test_switch_to_thread_local_gives_each_thread_the_stacks_as_they_were_at_the_switch():
    g = tf.Graph()
    with g.device("/gpu:1"):
        g.switch_to_thread_local()
        with g.device("/cpu:0"):
            def build():
                with g.as_default():
                    inner = tf.constant(1.0, name="in_thread").op
                    with g.device("/gpu:0"):
                        tf.constant(1.0, name="thread_scope")
                return inner
            op = _in_thread(g, build)
        with g.as_default():
            after = tf.constant(2.0, name="after").op
    assert op.device == "/device:GPU:1"  # the main thread's "/cpu:0" block is not seen by the other thread
    assert after.device == "/device:GPU:1"  # and the other thread's block left the main thread's stack alone
    assert g.get_operation_by_name("thread_scope").device == "/device:GPU:0"


# --- names --------------------------------------------------------------------------------------------------------

def test_unique_name_follows_tf():
    g = tf.Graph()
    assert g.unique_name("foo", mark_as_used=False) == "foo"
    assert g.unique_name("foo") == "foo"
    assert g.unique_name("foo", mark_as_used=False) == "foo_1"
    assert g.unique_name("Foo") == "Foo_1"  # case-insensitive clash, case kept
    assert g.unique_name("foo_2") == "foo_2"
    assert g.unique_name("foo") == "foo_3"  # foo_2 is taken
    with g.name_scope("outer"):
        assert g.get_name_scope() == "outer"
        assert g.unique_name("x") == "outer/x"
    assert g.get_name_scope() == ""


def test_root_scope_names_follow_the_op_name_rule_and_nested_ones_the_scope_rule():
    g = tf.Graph()
    for bad in ("_a", "-a", "/", "a b"):
        with pytest.raises(ValueError, match=f"^'{bad}' is not a valid scope name$"):
            with g.name_scope(bad):
                pass
    with g.name_scope("outer"):
        with g.name_scope("_inner") as scope:
            assert scope == "outer/_inner/"
        with g.name_scope("/") as slash:  # an absolute scope naming the top level
            assert slash == "/" and g.get_name_scope() == ""


def test_variable_scope_at_the_root_follows_the_scope_name_rule():
    with pytest.raises(ValueError, match="'_' is not a valid scope name"):
        with tf.variable_scope("_"):
            pass


def test_name_scope_resets_and_reenters_and_yields_the_absolute_scope():
    g = tf.get_default_graph()
    with tf.name_scope("a"):
        with tf.name_scope(None) as top:
            top_op = tf.constant(1.0, name="top")
        with tf.name_scope("") as also_top:
            pass
        with tf.name_scope("x/y/") as given:
            deep = tf.constant(1.0, name="deep")
        with g.name_scope(b"b") as from_bytes:
            pass
    assert (top, also_top, given, from_bytes) == ("", "", "x/y/", "a/b/")
    assert (top_op.op.name, deep.op.name) == ("top", "x/y/deep")


def test_name_scope_default_name_is_made_unique_and_values_must_share_a_graph():
    scopes = []
    for _ in range(2):
        with tf.name_scope(None, "block") as scope:
            scopes.append(scope)
    assert scopes == ["block/", "block_1/"]
    with pytest.raises(ValueError, match=r"At least one of name \(None\) and default_name \(None\) must be "):
        with tf.name_scope(None, None, values=[]):
            pass
    other = tf.Graph()
    with other.as_default():
        foreign = tf.constant(1.0, name="foreign")
    local = tf.constant(1.0, name="local")
    with pytest.raises(ValueError, match=r'Tensor\("local:0".* must be from the same graph as Tensor\("foreign:0"'):
        with tf.name_scope("s", values=[foreign, local]):
            pass


def test_op_scope_is_name_scope_with_values_first_and_enters_their_graph():
    other = tf.Graph()
    with other.as_default():
        w = tf.Variable([2.0], name="w")
        x = tf.constant(1.0, name="x")
    assert tf.get_default_graph() is not other
    with tf.op_scope([x, w], None, "norm") as scope:
        assert tf.get_default_graph() is other
        inner = tf.identity(x, name="out")
    assert (scope, inner.op.name) == ("norm/", "norm/out")
    with tf.op_scope([x], "") as top:
        assert top == ""
    with pytest.raises(ValueError, match="must be provided"):
        with tf.op_scope([x], None):
            pass
    with pytest.raises(ValueError, match="must be from the same graph"):
        with tf.op_scope([x, tf.constant(3.0)], "mixed"):
            pass


def test_create_op_name_none_takes_the_type_but_an_empty_name_is_invalid():
    g = tf.get_default_graph()
    assert g.create_op("NoOp", [], [], name=None).name == "NoOp"
    with pytest.raises(ValueError, match="'' is not a valid node name"):
        g.create_op("NoOp", [], [], name="")
    assert [op.name for op in g.get_operations()] == ["NoOp"]


def test_converting_an_operation_to_a_tensor_raises_tf_type_error():
    op = tf.no_op(name="step")
    with pytest.raises(TypeError, match=r"Can't convert Operation 'step' to Tensor \(target dtype=None, "
                                        r"name='x', as_ref=False\)"):
        tf.convert_to_tensor(op, name="x")
    with pytest.raises(TypeError, match="Can't convert Operation 'step'"):
        tf.add(op, 1.0)


def test_control_inputs_added_after_creation_are_deduplicated_and_run_first():
    counter = tf.Variable(0, name="counter")
    bump = tf.assign_add(counter, 1).op
    first, second = tf.constant(1, name="first").op, tf.constant(2, name="second").op
    out = tf.constant(5, name="out")
    out.op._add_control_input(first)
    out.op._add_control_input(first)
    out.op._add_control_inputs([first, second, second, bump])
    assert out.op.control_inputs == [first, second, bump]
    assert out.op in first._control_outputs
    with pytest.raises(TypeError, match="op must be an Operation"):
        out.op._add_control_input(out)
    with tf.Session() as sess:
        sess.run(counter.initializer)
        assert sess.run(out) == 5 and sess.run(counter) == 1
    out.op._remove_all_control_inputs()
    assert out.op.control_inputs == [] and out.op not in first._control_outputs


def test_shape_tuple_gives_static_dims_or_none():
    assert tf.constant([[1.0, 2.0]])._shape_tuple() == (1, 2)
    assert tf.placeholder(tf.float32, [None, 3])._shape_tuple() == (None, 3)
    assert tf.placeholder(tf.float32)._shape_tuple() is None


# --- as_graph_element ---------------------------------------------------------------------------------------------

def test_as_graph_element_errors_follow_tf():
    g = tf.get_default_graph()
    c = tf.constant(1.0, name="c")
    with pytest.raises(ValueError, match="allow_tensor and allow_operation can't both be False."):
        g.as_graph_element(c, allow_tensor=False, allow_operation=False)
    with pytest.raises(TypeError, match="^Can not convert a int into a Tensor or Operation.$"):
        g.as_graph_element(3)
    with pytest.raises(TypeError, match="^Can not convert a float into a Tensor.$"):
        g.as_graph_element(1.5, allow_operation=False)
    with pytest.raises(ValueError, match="looks a like a Tensor name"):
        g.as_graph_element("c:0:1")
    assert g.as_graph_element(b"c:0") is c
    assert g.as_graph_element("c:-1") is c  # TF indexes the output list as Python does
    other = tf.Graph()
    with other.as_default():
        foreign = tf.constant(1.0, name="foreign")
    with pytest.raises(ValueError, match=r'^Tensor Tensor\("foreign:0", shape=\(\), dtype=float32\) is not an '
                                         r'element of this graph.$'):
        g.as_graph_element(foreign)
    with pytest.raises(ValueError, match="^Operation name: \"foreign\""):
        g.as_graph_element(foreign.op)


# --- Tensor and Operation text, identity ----------------------------------------------------------------------------

def test_tensor_str_and_repr_match_tf():
    c = tf.constant([1.0, 2.0], name="c")
    assert str(c) == 'Tensor("c:0", shape=(2,), dtype=float32)'
    assert repr(c) == "<tf.Tensor 'c:0' shape=(2,) dtype=float32>"
    with tf.device("/gpu:0"):
        d = tf.identity(c, name="d")
    assert str(d) == 'Tensor("d:0", shape=(2,), dtype=float32, device=/device:GPU:0)'
    p = tf.placeholder(tf.int32, name="p")
    assert str(p) == 'Tensor("p:0", dtype=int32)'  # unknown rank: no shape, as TF prints it
    assert repr(p) == "<tf.Tensor 'p:0' shape=<unknown> dtype=int32>"
    q = tf.placeholder(tf.float32, [None, 3], name="q")
    assert str(q) == 'Tensor("q:0", shape=(?, 3), dtype=float32)'


def test_operation_repr_and_str_match_tf():
    a = tf.constant(1.0, name="a")
    with tf.device("/cpu:0"), tf.control_dependencies([a]):
        b = tf.add(a, a, name="b")
    assert repr(b.op) == "<tf.Operation 'b' type=Add>"
    assert str(b.op) == ('name: "b"\nop: "Add"\ninput: "a"\ninput: "a"\ndevice: "/device:CPU:0"\n'
                         'attr {\n  key: "T"\n  value {\n    type: DT_FLOAT\n  }\n}\n')


def test_tensors_hash_and_compare_by_identity_and_refs_work_as_keys():
    a, b = tf.constant(1.0), tf.constant(1.0)
    assert a == a and a != b and (a == 1.0) is False
    assert len({a, b, a}) == 2
    table = {a.ref(): "a", b.experimental_ref(): "b"}
    assert table[a.ref()] == "a" and a.ref().deref() is a and a.ref() != b.ref()


def test_variables_created_in_a_container_block_record_it():
    g = tf.Graph()
    with g.as_default():
        outside = tf.Variable(1.0, name="outside")
        with tf.container("experiment0"):
            inside = tf.Variable(2.0, name="inside")
            with g.container("nested"):
                nested = tf.Variable(3.0, name="nested")
            back = tf.Variable(4.0, name="back")
        plain = tf.constant(1.0)
    assert [v.op.get_attr("container") for v in (outside, inside, nested, back)] == ["", "experiment0", "nested",
                                                                                      "experiment0"]
    with pytest.raises(ValueError):
        plain.op.get_attr("container")  # only stateful ops with a container attr take it
