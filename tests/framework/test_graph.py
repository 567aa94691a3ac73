"""Tests for adplace.framework.graph: names, lookup, collections, device scopes, colocation, control
dependencies and the Tensor class (TF1 graph-mode semantics, reference sections 3.3-3.5 and 4.5)."""

import numpy as np
import pytest

import adplace as tf


# --- unique names and name scopes -------------------------------------------------------------------------------

def test_repeated_default_names_get_numeric_suffixes():
    names = [tf.constant(1.0).op.name for _ in range(3)]
    assert names == ["Const", "Const_1", "Const_2"]


def test_explicit_name_clashing_with_generated_suffix_is_skipped():
    tf.constant(1.0, name="x")
    tf.constant(1.0, name="x_1")
    # "x" is in use once, "x_1" is taken, so the next "x" must skip to "x_2".
    assert tf.constant(1.0, name="x").op.name == "x_2"


def test_names_clash_case_insensitively_but_keep_their_case():
    assert tf.constant(1.0, name="foo").op.name == "foo"
    assert tf.constant(1.0, name="FOO").op.name == "FOO_1"
    assert tf.constant(1.0, name="Foo").op.name == "Foo_2"


def test_nested_name_scopes_prefix_op_names():
    with tf.name_scope("a") as outer:
        with tf.name_scope("b") as inner:
            c = tf.constant(1.0)
    assert (outer, inner) == ("a/", "a/b/")
    assert c.op.name == "a/b/Const"
    assert c.name == "a/b/Const:0"


def test_reopened_scope_name_is_made_unique():
    with tf.name_scope("a"):
        tf.constant(1.0)
    with tf.name_scope("a") as scope:
        c = tf.constant(1.0)
    assert scope == "a_1/"
    assert c.op.name == "a_1/Const"


def test_scope_reentry_with_trailing_slash_reuses_the_scope():
    with tf.name_scope("a") as scope:
        first = tf.constant(1.0)
    with tf.name_scope(scope) as again:
        second = tf.constant(1.0)
    assert again == "a/"
    assert (first.op.name, second.op.name) == ("a/Const", "a/Const_1")


def test_name_scope_none_uses_default_name():
    with tf.name_scope(None, "default") as scope:
        c = tf.constant(1.0)
    assert scope == "default/"
    assert c.op.name == "default/Const"
    with tf.name_scope(None, "default") as scope2:
        pass
    assert scope2 == "default_1/"


def test_name_scope_explicit_name_beats_default():
    with tf.name_scope("given", "default") as scope:
        pass
    assert scope == "given/"


def test_empty_name_scope_resets_to_root():
    with tf.name_scope("a"):
        with tf.name_scope("") as scope:
            c = tf.constant(1.0)
    assert scope == ""
    assert c.op.name == "Const"


def test_get_name_scope_reports_current_scope():
    g = tf.get_default_graph()
    with tf.name_scope("outer"):
        with tf.name_scope("inner"):
            assert g.get_name_scope() == "outer/inner"
    assert g.get_name_scope() == ""


@pytest.mark.parametrize("bad", ["-bad", "has space", "_leading_underscore", "a:0"])
def test_invalid_op_names_raise_value_error(bad):
    with pytest.raises(ValueError, match="not a valid node name"):
        tf.constant(1.0, name=bad)


def test_invalid_scope_name_raises_value_error():
    with pytest.raises(ValueError, match="not a valid scope name"):
        with tf.name_scope("bad scope"):
            pass


# --- lookup -------------------------------------------------------------------------------------------------------

def test_get_operation_by_name_returns_the_op():
    c = tf.constant(1.0, name="x")
    g = tf.get_default_graph()
    assert g.get_operation_by_name("x") is c.op


def test_get_operation_by_name_missing_raises_key_error():
    with pytest.raises(KeyError, match="nope"):
        tf.get_default_graph().get_operation_by_name("nope")


def test_get_tensor_by_name_returns_the_tensor():
    c = tf.constant(1.0, name="x")
    assert tf.get_default_graph().get_tensor_by_name("x:0") is c


def test_get_tensor_by_name_with_op_name_raises_value_error():
    tf.constant(1.0, name="x")
    with pytest.raises(ValueError, match="refers to an Operation, not a Tensor"):
        tf.get_default_graph().get_tensor_by_name("x")


def test_get_tensor_by_name_missing_op_raises_key_error():
    with pytest.raises(KeyError, match="does not exist in the graph"):
        tf.get_default_graph().get_tensor_by_name("missing:0")


def test_get_tensor_by_name_bad_index_raises_key_error():
    tf.constant(1.0, name="x")
    with pytest.raises(KeyError, match="only has 1 outputs"):
        tf.get_default_graph().get_tensor_by_name("x:3")


def test_get_tensor_by_name_non_integer_index_raises_value_error():
    tf.constant(1.0, name="x")
    with pytest.raises(ValueError, match="looks a like a Tensor name"):
        tf.get_default_graph().get_tensor_by_name("x:abc")


def test_as_graph_element_resolves_names_tensors_ops_and_variables():
    g = tf.get_default_graph()
    c = tf.constant(1.0, name="x")
    v = tf.Variable(2.0, name="v")
    assert g.as_graph_element("x") is c.op
    assert g.as_graph_element("x:0") is c
    assert g.as_graph_element(c) is c
    assert g.as_graph_element(c.op) is c.op
    assert g.as_graph_element(v) is v.op.outputs[0]


def test_as_graph_element_rejects_wrong_kind():
    g = tf.get_default_graph()
    c = tf.constant(1.0, name="x")
    with pytest.raises(TypeError, match="Can not convert a Tensor into a Operation"):  # TF's wording
        g.as_graph_element(c, allow_tensor=False)
    with pytest.raises(TypeError, match="Can not convert a Operation into a Tensor"):
        g.as_graph_element(c.op, allow_operation=False)
    with pytest.raises(TypeError, match="int"):
        g.as_graph_element(5)


def test_as_graph_element_rejects_element_of_other_graph():
    other = tf.Graph()
    with other.as_default():
        foreign = tf.constant(1.0)
    with pytest.raises(ValueError, match="not an element of this graph"):
        tf.get_default_graph().as_graph_element(foreign)


def test_get_operations_in_creation_order():
    a = tf.constant(1.0)
    b = a + 1.0
    ops = tf.get_default_graph().get_operations()
    assert [op.name for op in ops] == ["Const", "add/y", "add"]
    assert ops[-1] is b.op


# --- default graph ---------------------------------------------------------------------------------------------

def test_as_default_isolates_ops_in_the_new_graph():
    outer = tf.get_default_graph()
    g = tf.Graph()
    with g.as_default() as entered:
        assert entered is g
        assert tf.get_default_graph() is g
        c = tf.constant(1.0)
    assert c.graph is g
    assert tf.get_default_graph() is outer
    assert len(outer.get_operations()) == 0
    assert [op.name for op in g.get_operations()] == ["Const"]


def test_names_are_per_graph():
    g1, g2 = tf.Graph(), tf.Graph()
    with g1.as_default():
        a = tf.constant(1.0)
    with g2.as_default():
        b = tf.constant(1.0)
    assert a.op.name == b.op.name == "Const"


def test_reset_default_graph_replaces_global_graph():
    before = tf.get_default_graph()
    tf.constant(1.0)
    tf.reset_default_graph()
    after = tf.get_default_graph()
    assert after is not before
    assert after.get_operations() == []


def test_reset_default_graph_inside_nested_graph_raises_assertion_error():
    with tf.Graph().as_default():
        with pytest.raises(AssertionError, match="nested graphs"):
            tf.reset_default_graph()


def test_op_is_built_in_its_inputs_graph_and_mixing_graphs_is_rejected():
    g = tf.Graph()
    with g.as_default():
        foreign = tf.constant(1.0)
    assert tf.identity(foreign).graph is g and (foreign + 1.0).graph is g
    local = tf.constant(2.0)
    with pytest.raises(ValueError, match="same graph"):
        tf.add(foreign, local)


def test_finalize_prevents_new_ops():
    g = tf.get_default_graph()
    tf.constant(1.0)
    g.finalize()
    assert g.finalized
    with pytest.raises(RuntimeError, match="finalized"):
        tf.constant(2.0)
    assert len(g.get_operations()) == 1


# --- collections ---------------------------------------------------------------------------------------------

def test_add_to_collection_and_get_collection():
    tf.add_to_collection("things", 1)
    tf.add_to_collection("things", 2)
    assert tf.get_collection("things") == [1, 2]
    assert tf.get_collection("unknown") == []


def test_get_collection_returns_a_copy():
    tf.add_to_collection("things", 1)
    copy = tf.get_collection("things")
    copy.append(99)
    assert tf.get_collection("things") == [1]


def test_get_collection_ref_is_live():
    ref = tf.get_collection_ref("things")
    ref.append("x")
    assert tf.get_collection("things") == ["x"]
    tf.add_to_collection("things", "y")
    assert ref == ["x", "y"]


def test_get_collection_scope_filters_by_name_regex():
    with tf.name_scope("tower_0"):
        a = tf.constant(1.0)
    with tf.name_scope("tower_1"):
        b = tf.constant(1.0)
    for item in (a, b, "no name attribute"):
        tf.add_to_collection("c", item)
    assert tf.get_collection("c", scope="tower_1") == [b]
    assert tf.get_collection("c", scope="tower_.") == [a, b]
    # re.match anchors at the start only.
    assert tf.get_collection("c", scope="Const") == []


def test_add_to_collections_adds_to_each_name():
    tf.add_to_collections(["a", "b"], 7)
    assert tf.get_collection("a") == [7]
    assert tf.get_collection("b") == [7]


def test_variables_land_in_global_and_trainable_collections():
    v = tf.Variable(1.0)
    assert tf.get_collection(tf.GraphKeys.GLOBAL_VARIABLES) == [v]
    assert tf.get_collection(tf.GraphKeys.TRAINABLE_VARIABLES) == [v]


# --- device scopes ---------------------------------------------------------------------------------------------

def test_device_string_scope_is_canonicalised():
    with tf.device("/gpu:1"):
        c = tf.constant(1.0)
    assert c.op.device == "/device:GPU:1"
    assert c.device == "/device:GPU:1"


def test_no_device_scope_leaves_device_empty():
    assert tf.constant(1.0).op.device == ""


def test_device_spec_scope():
    spec = tf.DeviceSpec(job="ps", task=1, device_type="CPU", device_index=0)
    with tf.device(spec):
        c = tf.constant(1.0)
    assert c.op.device == "/job:ps/task:1/device:CPU:0"


def test_nested_string_scopes_merge_inner_fields_win():
    with tf.device("/job:train"):
        with tf.device("/device:GPU:1"):
            c = tf.constant(1.0)
        with tf.device("/job:ps/device:GPU:0"):
            d = tf.constant(1.0)
        e = tf.constant(1.0)
    assert c.op.device == "/job:train/device:GPU:1"
    assert d.op.device == "/job:ps/device:GPU:0"
    assert e.op.device == "/job:train"


def test_device_function_sees_op_type_and_its_result_is_kept_verbatim():
    """TF stores a device function's string as returned (`/gpu:0` stays `/gpu:0`, tensorflow#11484); string
    scopes store canonical strings. Placement and colocation compare the canonical form."""
    seen = []

    def pick(op):
        seen.append(op.type)
        return "/gpu:0" if op.type == "MatMul" else "/cpu:0"

    with tf.device(pick):
        a = tf.constant([[1.0]])
        m = tf.matmul(a, a)
        with tf.colocate_with(m):
            n = tf.identity(m)
    assert seen == ["Const", "MatMul"]  # colocate_with sets device scopes aside
    assert (a.op.device, m.op.device, m.device, m.op.node_def.device) == ("/cpu:0", "/gpu:0", "/gpu:0", "/gpu:0")
    assert (a.op._device, m.op._device) == ("/device:CPU:0", "/device:GPU:0")
    assert n.op.device == "/gpu:0"  # taken from the colocation op, as it was requested
    with tf.Session(config=tf.ConfigProto(allow_soft_placement=False, device_count={"GPU": 0})) as sess:
        with pytest.raises(tf.errors.InvalidArgumentError, match="MatMul"):
            sess.run(m)


def test_device_function_returning_a_non_device_names_the_op_and_adds_nothing():
    g = tf.get_default_graph()
    tf.constant(0.0, name="c")

    def pick(op):
        return 3
    with pytest.raises(TypeError, match=r"Device function '.*pick' returned 3 \(type int\) for op 'c_1' \(Const\); it "
                                        r"must return a device string"):
        with tf.device(pick):
            tf.constant(1.0, name="c")
    assert [op.name for op in g.get_operations()] == ["c"]
    assert tf.constant(2.0, name="c").op.name == "c_1"  # the failed op's name was given back


def test_device_function_error_message_is_short_for_a_huge_result():
    with pytest.raises(TypeError) as info:
        with tf.device(lambda op: list(range(100_000))):
            tf.constant(1.0)
    assert len(str(info.value)) < 1024 and "'Const' (Const)" in str(info.value)


def test_device_function_returning_device_spec():
    with tf.device(lambda op: tf.DeviceSpec(device_type="GPU", device_index=3)):
        c = tf.constant(1.0)
    assert c.op.device == "/device:GPU:3"


def test_device_function_returning_none_clears_device():
    with tf.device("/gpu:0"):
        with tf.device(lambda op: None):
            c = tf.constant(1.0)
    # the string scope outside still fills in after the function cleared it
    assert c.op.device == "/device:GPU:0"


def test_device_none_clears_outer_scopes():
    with tf.device("/job:train/device:GPU:0"):
        with tf.device(None):
            c = tf.constant(1.0)
            with tf.device("/cpu:0"):
                d = tf.constant(1.0)
    assert c.op.device == ""
    assert d.op.device == "/device:CPU:0"


def test_device_empty_string_is_a_null_merge():
    with tf.device("/job:train"):
        with tf.device(""):
            c = tf.constant(1.0)
    assert c.op.device == "/job:train"


def test_device_function_outside_string_scope_overrides_it():
    with tf.device(lambda op: "/cpu:0"):
        with tf.device("/gpu:1"):
            c = tf.constant(1.0)
    assert (c.op.device, c.op._device) == ("/cpu:0", "/device:CPU:0")  # verbatim request, canonical for placement


def test_device_function_sees_device_set_by_inner_scope():
    seen = []

    def record(op):
        seen.append(op.device)
        return op.device

    with tf.device(record):
        with tf.device("/gpu:1"):
            tf.constant(1.0)
    assert seen == ["/device:GPU:1"]


def test_device_function_node_def_matches_op():
    seen = []

    def pick(op):
        nd = op.node_def
        seen.append((nd.op, op.type, nd.name, op.name))
        return ""

    with tf.device(pick):
        tf.constant(1.0, name="c")
    assert seen == [("Const", "Const", "c", "c")]


def test_device_scope_does_not_leak_after_block():
    with tf.device("/gpu:0"):
        pass
    assert tf.constant(1.0).op.device == ""


def test_device_rejects_bad_argument_type():
    with pytest.raises(TypeError, match="tf.device"):
        with tf.device(42):
            pass


def test_assign_to_device_puts_variables_on_cpu_and_rest_on_gpu():
    with tf.device(tf.assign_to_device("/device:GPU:0")):
        a = tf.Variable(1.0)
        b = tf.sin(a)
    assert a.device == "/device:CPU:0"
    assert a.op.type == "VariableV2"
    assert b.device == "/device:GPU:0"
    # the read snapshot is colocated with the variable, not with the GPU scope
    assert a.value().op.device == "/device:CPU:0"
    assert a.initial_value.op.device == "/device:GPU:0"


def test_user_closure_with_node_def_isinstance_check():
    ps_ops = ("Variable", "VariableV2")

    def assign(op):
        node_def = op if isinstance(op, tf.NodeDef) else op.node_def
        return "/cpu:0" if node_def.op in ps_ops else "/gpu:0"

    # the closure works on both an Operation and a plain NodeDef
    assert assign(tf.NodeDef(name="v", op="VariableV2")) == "/cpu:0"
    with tf.device(assign):
        v = tf.Variable(1.0)
        y = v * 2.0
    assert v.device == "/cpu:0"
    assert y.op.device == "/gpu:0"


# --- colocate_with -------------------------------------------------------------------------------------------

def test_colocate_with_sets_class_attr_and_groups():
    a = tf.constant(1.0, name="a")
    with tf.colocate_with(a.op):
        b = tf.constant(2.0, name="b")
    assert b.op.colocation_groups() == [b"loc:@a"]
    assert b.op.get_attr("_class") == [b"loc:@a"]
    assert list(b.op.node_def.attr["_class"].list.s) == [b"loc:@a"]
    # ops outside the block are in their own group only
    assert a.op.colocation_groups() == [b"loc:@a"]
    c = tf.constant(3.0, name="c")
    assert c.op.colocation_groups() == [b"loc:@c"]


def test_colocate_with_an_op_of_another_graph_is_a_value_error_naming_it():
    other = tf.Graph()
    with other.as_default(), tf.device("/gpu:1"):
        foreign = tf.constant(1.0, name="foreign_const")
    with tf.device("/cpu:0"):
        with pytest.raises(ValueError, match="'foreign_const' is from another graph"):
            with tf.colocate_with(foreign.op):
                tf.constant(2.0, name="never_built")
        with pytest.raises(ValueError, match="'foreign_const' is from another graph"):
            with tf.get_default_graph().colocate_with(foreign):  # a tensor: its op
                pass
        after = tf.constant(3.0, name="after")
    assert after.op.colocation_groups() == [b"loc:@after"]  # no colocation or device scope was left behind
    assert after.op.device == "/device:CPU:0"
    assert "never_built" not in [op.name for op in tf.get_default_graph().get_operations()]


def test_op_without_colocation_has_no_class_attr():
    c = tf.constant(1.0, name="c")
    with pytest.raises(ValueError, match="_class"):
        c.op.get_attr("_class")


def test_colocate_with_tensor_uses_its_op():
    a = tf.constant(1.0, name="a")
    with tf.colocate_with(a):
        b = tf.constant(2.0)
    assert b.op.colocation_groups() == [b"loc:@a"]


def test_colocate_with_copies_device_of_colocated_op():
    with tf.device("/gpu:1"):
        a = tf.constant(1.0, name="a")
    with tf.colocate_with(a):
        b = tf.constant(2.0)
    assert b.op.device == "/device:GPU:1"


def test_colocate_with_ignores_outer_device_scopes():
    a = tf.constant(1.0, name="a")
    with tf.device("/job:ps/device:GPU:0"):
        with tf.colocate_with(a):
            b = tf.constant(2.0)
        c = tf.constant(3.0)
    assert b.op.device == ""
    assert c.op.device == "/job:ps/device:GPU:0"


def test_device_scope_opened_inside_colocate_with_applies():
    a = tf.constant(1.0, name="a")
    with tf.device("/job:ps"):
        with tf.colocate_with(a):
            with tf.device("/gpu:1"):
                b = tf.constant(2.0)
    assert b.op.device == "/device:GPU:1"
    assert b.op.colocation_groups() == [b"loc:@a"]


def test_nested_colocate_with_accumulates_sorted_groups():
    b = tf.constant(1.0, name="b")
    a = tf.constant(1.0, name="a")
    with tf.colocate_with(b):
        with tf.colocate_with(a):
            c = tf.constant(2.0)
    assert c.op.colocation_groups() == [b"loc:@a", b"loc:@b"]


def test_colocation_is_transitive_through_colocated_op():
    a = tf.constant(1.0, name="a")
    with tf.colocate_with(a):
        b = tf.constant(2.0, name="b")
    with tf.colocate_with(b):
        c = tf.constant(3.0)
    # b's own groups are [loc:@a], so c joins a's group
    assert c.op.colocation_groups() == [b"loc:@a"]


def test_colocate_with_ignore_existing_starts_fresh():
    a = tf.constant(1.0, name="a")
    b = tf.constant(1.0, name="b")
    with tf.colocate_with(a):
        with tf.colocate_with(b, ignore_existing=True):
            c = tf.constant(2.0)
        with tf.colocate_with(None, ignore_existing=True):
            d = tf.constant(2.0, name="d")
        e = tf.constant(2.0)
    assert c.op.colocation_groups() == [b"loc:@b"]
    assert d.op.colocation_groups() == [b"loc:@d"]
    assert e.op.colocation_groups() == [b"loc:@a"]


def test_colocate_with_none_without_ignore_existing_raises():
    with pytest.raises(ValueError, match="ignore_existing is not True"):
        with tf.colocate_with(None):
            pass


def test_colocate_with_variable_and_read_op_colocation():
    v = tf.Variable(1.0, name="v")
    read = v.value()
    assert read.op.name == "v/read"
    assert read.op.type == "Identity"
    assert read.op.colocation_groups() == [b"loc:@v"]
    assert read.op.get_attr("_class") == [b"loc:@v"]
    with tf.colocate_with(v):
        c = tf.constant(1.0)
    assert c.op.colocation_groups() == [b"loc:@v"]


def test_colocate_with_restores_device_stack_after_block():
    a = tf.constant(1.0, name="a")
    with tf.device("/gpu:0"):
        with tf.colocate_with(a):
            pass
        b = tf.constant(1.0)
    assert b.op.device == "/device:GPU:0"
    assert b.op.colocation_groups() == [b"loc:@Const"]


# --- control_dependencies -------------------------------------------------------------------------------------

def test_seed_example_control_inputs():
    a = tf.constant(1.0)
    b = a + 2.0
    with tf.control_dependencies([a, b]):
        x = tf.constant(3.0)
    assert x.op.control_inputs == [a.op, b.op]


def test_only_ops_created_inside_get_control_inputs():
    a = tf.constant(1.0)
    before = tf.constant(2.0)
    with tf.control_dependencies([a]):
        inside = tf.constant(3.0)
    after = tf.constant(4.0)
    assert before.op.control_inputs == []
    assert inside.op.control_inputs == [a.op]
    assert after.op.control_inputs == []
    assert a.op._control_outputs == [inside.op]


def test_control_dependencies_accept_operations():
    noop = tf.no_op(name="noop")
    with tf.control_dependencies([noop]):
        c = tf.constant(1.0)
    assert c.op.control_inputs == [noop]
    assert "^noop" in c.op.node_def.input


def test_nested_control_dependencies_accumulate():
    a = tf.constant(1.0, name="a")
    b = tf.constant(1.0, name="b")
    with tf.control_dependencies([a]):
        with tf.control_dependencies([b, a]):  # `a` again is dropped
            c = tf.constant(1.0)
    assert c.op.control_inputs == [a.op, b.op]


def test_control_dependencies_none_clears():
    a = tf.constant(1.0, name="a")
    b = tf.constant(1.0, name="b")
    with tf.control_dependencies([a]):
        with tf.control_dependencies(None):
            c = tf.constant(1.0)
            with tf.control_dependencies([b]):
                d = tf.constant(1.0)
        e = tf.constant(1.0)
    assert c.op.control_inputs == []
    assert d.op.control_inputs == [b.op]
    assert e.op.control_inputs == [a.op]


def test_data_input_created_inside_block_prunes_its_controls():
    a = tf.constant(1.0, name="a")
    with tf.control_dependencies([a]):
        b = tf.constant(2.0, name="b")
        c = tf.identity(b)
    assert b.op.control_inputs == [a.op]
    assert c.op.control_inputs == []


def test_pruning_applies_per_block():
    a = tf.constant(1.0, name="a")
    outer_input = None
    with tf.control_dependencies([a]):
        outer_input = tf.constant(2.0, name="made_in_outer")
        b = tf.constant(1.0, name="b")
        with tf.control_dependencies([b]):
            c = tf.identity(outer_input)
    # outer block's controls pruned (input created there); inner block's still apply
    assert c.op.control_inputs == [b.op]


def test_control_input_already_a_data_input_is_skipped():
    a = tf.constant(1.0, name="a")
    with tf.control_dependencies([a]):
        c = tf.identity(a)
    assert c.op.control_inputs == []
    assert [t.op for t in c.op.inputs] == [a.op]


def test_control_dependencies_rejects_non_graph_elements():
    with pytest.raises(TypeError, match="Control input must be Operation or Tensor"):
        with tf.control_dependencies([1.0]):
            pass


def test_control_dependencies_with_variable_uses_its_op():
    v = tf.Variable(1.0, name="v")
    with tf.control_dependencies([v]):
        c = tf.constant(1.0)
    assert c.op.control_inputs == [v.op]


# --- Tensor ----------------------------------------------------------------------------------------------------

def test_tensor_basic_properties():
    a = tf.constant([[1.0, 2.0, 3.0]])
    s = a + a
    assert s.name == "add:0"
    assert s.op.type == "Add"
    assert s.op.name == "add"
    assert s.value_index == 0
    assert s.dtype == tf.float32
    assert s.graph is tf.get_default_graph()
    assert s.op.outputs == [s]
    b = tf.constant([[1.0]])
    m = tf.multiply(b, 2.0)
    assert b.consumers() == [m.op]


def test_tensor_shape_and_dimensions():
    a = tf.placeholder(tf.float32, shape=[None, 3])
    assert a.shape.as_list() == [None, 3]
    assert a.get_shape() == a.shape
    assert isinstance(a.shape[0], tf.Dimension)
    assert a.shape[0].value is None
    assert a.shape[1].value == 3
    assert a.shape.ndims == 2


def test_set_shape_merges_static_shape():
    a = tf.placeholder(tf.float32, shape=[None, 3])
    a.set_shape([5, None])
    assert a.shape.as_list() == [5, 3]
    b = tf.placeholder(tf.float32)
    b.set_shape([2, 2])
    assert b.shape.as_list() == [2, 2]


def test_set_shape_incompatible_raises_value_error():
    a = tf.placeholder(tf.float32, shape=[None, 3])
    with pytest.raises(ValueError, match="not compatible"):
        a.set_shape([2, 4])
    with pytest.raises(ValueError, match="not compatible"):
        a.set_shape([2, 3, 1])
    assert a.shape.as_list() == [None, 3]


def test_tensor_bool_raises_type_error():
    a = tf.constant(1.0)
    with pytest.raises(TypeError, match="as a Python `bool` is not allowed"):
        bool(a)
    with pytest.raises(TypeError):
        if a:
            pass


def test_tensor_to_numpy_raises_not_implemented():
    a = tf.constant([1.0, 2.0])
    with pytest.raises(NotImplementedError, match="Cannot convert a symbolic Tensor"):
        np.asarray(a)


def test_tensor_len_raises_type_error():
    with pytest.raises(TypeError, match="len is not well defined"):
        len(tf.constant([1.0, 2.0]))


def test_tensor_iteration_indexes_a_known_first_dim():
    a = tf.constant([[1.0, 2.0], [3.0, 4.0]])
    rows = list(a)
    assert len(rows) == 2
    assert [r.op.type for r in rows] == ["StridedSlice", "StridedSlice"]  # t[0], t[1], as TF iterates
    with tf.Session() as sess:
        np.testing.assert_allclose(sess.run(rows[1]), [3.0, 4.0])
    with pytest.raises(TypeError, match="unknown first dimension"):
        iter(tf.placeholder(tf.float32, shape=[None]))
    with pytest.raises(TypeError, match="unknown shape"):
        iter(tf.placeholder(tf.float32))
    with pytest.raises(TypeError, match="scalar tensor"):
        iter(tf.constant(1.0))


def test_tensor_is_hashable_and_compared_by_identity():
    a = tf.constant(1.0)
    b = tf.constant(1.0)
    assert len({a, b, a}) == 2
    # TF1 Tensors do not overload ==: it is Python identity, not an Equal op
    assert (a == b) is False
    assert (a == a) is True
    assert len(tf.get_default_graph().get_operations()) == 2


def test_tensor_eval_with_default_session():
    a = tf.constant([1.0, 2.0]) * 3.0
    with tf.Session() as sess:
        np.testing.assert_allclose(a.eval(), [3.0, 6.0])
        np.testing.assert_allclose(a.eval(session=sess), [3.0, 6.0])


def test_tensor_eval_with_feed_dict():
    p = tf.placeholder(tf.float32, shape=[2])
    y = p * 2.0
    with tf.Session():
        np.testing.assert_allclose(y.eval(feed_dict={p: [1.0, 5.0]}), [2.0, 10.0])


def test_tensor_eval_without_session_raises_value_error():
    a = tf.constant(1.0)
    with pytest.raises(ValueError, match="No default session is registered"):
        a.eval()


def test_tensor_eval_in_session_of_other_graph_raises():
    a = tf.constant(1.0)
    with tf.Graph().as_default():
        other = tf.Session()
    with pytest.raises(ValueError, match="graph is different"):
        a.eval(session=other)


def test_operation_run_with_default_session():
    v = tf.Variable(1.0)
    inc = tf.assign_add(v, 2.0)
    with tf.Session() as sess:
        sess.run(v.initializer)
        inc.op.run()
        np.testing.assert_allclose(sess.run(v), 3.0)


def test_convert_to_tensor():
    t = tf.convert_to_tensor([1, 2])
    assert t.dtype == tf.int32
    assert t.op.type == "Const"
    assert tf.convert_to_tensor(t) is t
    assert tf.convert_to_tensor(3.0, dtype=tf.float64).dtype == tf.float64
    with pytest.raises(ValueError, match="requested dtype float32"):
        tf.convert_to_tensor(t, dtype=tf.float32)
    with pytest.raises(TypeError, match="Failed to convert object"):
        tf.convert_to_tensor(object())


def test_nested_colocation_takes_the_first_stacked_ops_device():
    with tf.device("/gpu:0"):
        a = tf.constant(1.0, name="a")
    with tf.device("/gpu:1"):
        b = tf.constant(2.0, name="b")
    with tf.colocate_with(a), tf.colocate_with(b):
        c = tf.constant(3.0, name="c")
    assert c.op.device == "/device:GPU:0"
    assert c.op.colocation_groups() == [b"loc:@a", b"loc:@b"]


def test_lookup_errors_match_tf():
    tf.constant(1.0, name="x")
    g = tf.get_default_graph()
    with pytest.raises(ValueError, match="'x:0' appears to refer to a Tensor"):
        g.get_operation_by_name("x:0")
    with pytest.raises(ValueError, match="'nope' looks like an \\(invalid\\) Operation name"):
        g.get_tensor_by_name("nope")
    with pytest.raises(TypeError, match="Operation names are strings"):
        g.get_operation_by_name(5)


def test_name_scope_with_values_enters_their_graph():
    g = tf.Graph()
    with g.as_default():
        t = tf.constant(1.0)
    with tf.name_scope("s", values=[t]):
        c = tf.constant(2.0)
    assert c.graph is g and c.op.name == "s/Const"


def test_device_opened_inside_colocation_is_kept_and_warned_once(caplog):
    with tf.device("/cpu:0"):
        a = tf.constant(1.0, name="a")
    with tf.colocate_with(a):
        with tf.device("/gpu:0"):
            b = tf.constant(2.0, name="b")
            c = tf.constant(3.0, name="c")
        d = tf.constant(4.0, name="d")
    assert (b.op.device, c.op.device, d.op.device) == ("/device:GPU:0", "/device:GPU:0", "/device:CPU:0")
    warnings = [r for r in caplog.records if "Tried to colocate op 'b'" in r.getMessage()]
    assert len(warnings) == 1 and not any("'c'" in r.getMessage() for r in caplog.records)


def test_an_empty_graph_is_truthy_so_graph_or_default_keeps_it():
    g = tf.Graph()
    assert len(g) == 0 and bool(g) is True
    with tf.Graph().as_default():
        tf.train.get_or_create_global_step()
        # an explicit, empty graph is used, not the default graph (which already has a global step)
        step = tf.train.create_global_step(g)
    assert step.graph is g


def test_register_shape_is_accepted_and_recorded_like_tf1s_deprecated_decorator():
    from adplace.framework.registry import RegisterShape

    def shape_fn(op):
        return [tf.TensorShape(None)]

    assert RegisterShape("TestOnlyShapeOp")(shape_fn) is shape_fn
    assert RegisterShape("TestOnlyNoneShapeOp")(None) is None
    assert RegisterShape.registered["TestOnlyShapeOp"] is shape_fn
    with pytest.raises(TypeError, match="op_type must be a string"):
        RegisterShape(3)


def test_a_tensor_as_a_bool_is_an_operator_not_allowed_in_graph_and_a_type_error():
    t = tf.constant(1.0)
    with pytest.raises(tf.errors.OperatorNotAllowedInGraphError, match="as a Python `bool` is not allowed"):
        bool(t)
    assert issubclass(tf.errors.OperatorNotAllowedInGraphError, TypeError)
    assert t.op.op_def.name == "Const"
