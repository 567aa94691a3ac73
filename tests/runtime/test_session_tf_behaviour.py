"""Tests for adplace/runtime/session.py against TF's session contract (tensorflow/python/client/session.py): default
graph and session, targets, device counts, interactive sessions, fetch and feed structures, and TF's errors."""
import collections
import warnings

import numpy as np
import pytest

import adplace as tf
from adplace.errors import InvalidArgumentError, NotFoundError
from adplace.runtime.fetches import FetchMapper, structure_key
from placement_log import CPU0

pytestmark = pytest.mark.usefixtures("virtual_gpus_only")

CPU1 = "/job:localhost/replica:0/task:0/device:CPU:1"
Point = collections.namedtuple("Point", "x y")


class Fields:
    """A minimal attrs-style class: TF's nest recognises `__attrs_attrs__` (entries with a `name`)."""

    __attrs_attrs__ = tuple(collections.namedtuple("Attribute", "name")(n) for n in ("first", "second"))

    def __init__(self, first, second):
        self.first, self.second = first, second


# --- default graph and session -----------------------------------------------------------------------------------

def test_with_session_makes_its_graph_and_itself_the_defaults():
    outer = tf.get_default_graph()
    g = tf.Graph()
    with g.as_default():
        c = tf.constant(6.0, name="c")
    with tf.Session(graph=g) as sess:
        assert tf.get_default_graph() is g and tf.get_default_session() is sess
        d = tf.multiply(c, 7.0, name="d")  # built in g, because g is the default graph here
        assert d.graph is g and d.eval() == 42.0
    assert tf.get_default_graph() is outer and tf.get_default_session() is None
    with pytest.raises(RuntimeError, match="Attempted to use a closed Session."):
        sess.run(d)


def test_with_session_restores_the_defaults_after_an_error():
    g = tf.Graph()
    with g.as_default():
        tf.constant(1.0)
    with pytest.raises(KeyError):
        with tf.Session(graph=g):
            raise KeyError("boom")
    assert tf.get_default_graph() is not g and tf.get_default_session() is None


def test_session_context_is_not_reentrant_but_as_default_is():
    tf.constant(1.0, name="c")
    sess = tf.Session()
    with pytest.raises(RuntimeError, match="Session context managers are not re-entrant. Use `Session.as_default"):
        with sess:
            with sess:
                pass
    sess = tf.Session()
    with sess.as_default(), sess.as_default():
        assert tf.get_default_session() is sess
    assert sess.run("c:0") == 1.0  # as_default does not close


def test_reentering_a_closed_session_enters_but_cannot_run():
    c = tf.constant(5.0)
    with tf.Session() as sess:
        assert sess.run(c) == 5.0
    with sess:  # TF enters a closed session's context; only using it fails
        assert tf.get_default_session() is sess
        with pytest.raises(RuntimeError, match="Attempted to use a closed Session."):
            c.eval()
    assert tf.get_default_session() is None


def test_as_default_keeps_the_default_graph():
    g = tf.Graph()
    with g.as_default():
        c = tf.constant(3.0)
    sess = tf.Session(graph=g)
    with sess.as_default():
        assert tf.get_default_graph() is not g
        assert c.eval() == 3.0


# --- targets and constructor arguments ----------------------------------------------------------------------------

@pytest.mark.parametrize("target", ["tcp://localhost:1234", "INVALID_TARGET", b"local"])
def test_a_target_no_factory_accepts_is_tfs_not_found_error(target):
    text = target.decode() if isinstance(target, bytes) else target
    with pytest.raises(NotFoundError, match=f'No session factory registered for the given session options: '
                                            f'{{target: "{text}" config: .*}} Registered factories are '):
        tf.Session(target)


def test_not_found_error_quotes_the_config_fields_that_were_set():
    config = tf.ConfigProto(allow_soft_placement=True)
    config.gpu_options.allow_growth = True
    with pytest.raises(NotFoundError) as info:
        tf.Session("h:1", config=config)
    assert 'config: gpu_options { allow_growth: true } allow_soft_placement: true}' in str(info.value)  # proto order


def test_constructor_argument_types_are_tfs_type_errors():
    with pytest.raises(TypeError, match="target must be a string, but got <class 'int'>"):
        tf.Session(37)
    with pytest.raises(TypeError, match=r'Did you do "Session\(config\)" instead of "Session\(config=config\)"\?'):
        tf.Session(tf.ConfigProto())
    with pytest.raises(TypeError, match="config must be a tf.ConfigProto, but got <class 'int'>"):
        tf.Session(config=37)
    with pytest.raises(TypeError, match="graph must be a tf.Graph, but got <class 'int'>"):
        tf.Session(graph=37)


def test_sess_str_graph_and_reset():
    sess = tf.Session()
    assert sess.sess_str == b"" and sess.graph is tf.get_default_graph()
    assert tf.Session(target=None).sess_str is None
    c = tf.constant(2.0)
    assert tf.Session.reset("") is None and sess.run(c) == 2.0  # in-process reset does nothing
    with pytest.raises(NotFoundError, match="No session factory registered"):
        tf.Session.reset("localhost:1234", containers=["a"])


# --- device counts ----------------------------------------------------------------------------------------------

def test_device_count_cpu_gives_that_many_cpu_devices():
    sess = tf.Session(config=tf.ConfigProto(device_count={"CPU": 2, "GPU": 0}))
    listed = sess.list_devices()
    assert [d.name for d in listed] == [CPU0, CPU1] and {d.device_type for d in listed} == {"CPU"}
    with tf.device("/cpu:1"):
        a = tf.constant([1.0, 2.0], name="a")
    b = tf.reduce_sum(a * 2.0, name="b")
    assert sess.run(b) == 6.0
    assert sess.placement(a) == CPU1 and sess.placement(b) == CPU0  # unplaced ops go to CPU:0, as in TF


def test_an_op_on_a_missing_cpu_fails_without_soft_placement():
    with tf.device("/cpu:1"):
        a = tf.constant(1.0, name="a")
    with pytest.raises(InvalidArgumentError, match="'a'"):
        tf.Session().run(a)


def test_device_count_gpu_zero_hides_virtual_gpus(monkeypatch):
    monkeypatch.setenv("ADPLACE_VIRTUAL_GPUS", "2")
    with tf.device("/gpu:0"):
        x = tf.constant([1.0, 2.0], name="x")
        y = tf.negative(x, name="y")
    assert [d.device_type for d in tf.Session().list_devices()] == ["CPU", "GPU", "GPU"]
    no_gpu = tf.ConfigProto(device_count={"GPU": 0})
    assert [d.device_type for d in tf.Session(config=no_gpu).list_devices()] == ["CPU"]
    with pytest.raises(InvalidArgumentError, match="'(x|y)'"):
        tf.Session(config=no_gpu).run(y)
    soft = tf.ConfigProto(device_count={"GPU": 0}, allow_soft_placement=True)
    sess = tf.Session(config=soft)
    np.testing.assert_array_equal(sess.run(y), [-1.0, -2.0])
    assert sess.placement(y) == CPU0


# --- interactive sessions ---------------------------------------------------------------------------------------

def test_interactive_session_runs_ops_added_after_it_started():
    sess = tf.InteractiveSession()
    try:
        a = tf.constant(1.0, shape=[1, 2])
        b = tf.constant(2.0, shape=[2, 3])
        c = tf.matmul(a, b)
        np.testing.assert_array_equal(c.eval(), [[4.0, 4.0, 4.0]])
        e = tf.matmul(c, tf.constant([1.0, 2.0, 3.0], shape=[3, 1]))  # the graph grows after a run
        np.testing.assert_array_equal(e.eval(), [[24.0]])
        assert sess._config.gpu_options.allow_growth and sess._config.graph_options.place_pruned_graph
    finally:
        sess.close()
    assert tf.get_default_session() is None


def test_interactive_session_on_a_graph_installs_that_graph_until_closed():
    g = tf.Graph()
    sess = tf.InteractiveSession(graph=g)
    assert tf.get_default_graph() is g and tf.get_default_session() is sess
    assert tf.constant(4.0).eval() == 4.0
    sess.close()
    sess.close()  # closing twice uninstalls once
    assert tf.get_default_graph() is not g and tf.get_default_session() is None


def test_a_second_interactive_session_warns():
    first = tf.InteractiveSession()
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            second = tf.InteractiveSession()
            second.close()
        assert any("An interactive session is already active" in str(w.message) for w in caught)
    finally:
        first.close()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        tf.InteractiveSession().close()
    assert not caught


# --- fetch structures -------------------------------------------------------------------------------------------

def test_nested_structures_come_back_with_their_types():
    a, c = tf.constant(42.0, name="a"), tf.constant(44.0, name="c")
    b = tf.no_op(name="b")
    fetches = {"d": [a, b, c], "e": (a, "b", c), "f": Point(x=a, y=[c]),
               "g": collections.OrderedDict([(3, a), (2, "a"), (1, b)])}
    result = tf.Session().run(fetches)
    assert type(result) is dict and result["d"] == [42.0, None, 44.0]
    assert type(result["e"]) is tuple and result["e"] == (42.0, None, 44.0)
    assert type(result["f"]) is Point and result["f"] == Point(42.0, [44.0])
    assert type(result["g"]) is collections.OrderedDict and list(result["g"].items()) == [(3, 42.0), (2, None),
                                                                                          (1, None)]
    assert tf.Session().run([[], (), {}]) == [[], (), {}]


def test_attrs_classes_are_fetch_structures():
    t1, t2 = tf.constant([1.5, 2.5]), tf.constant([[1, 2]])
    result = tf.Session().run(Fields(t1, {"k": Fields(t2, [t1])}))
    assert type(result) is Fields and type(result.second["k"]) is Fields
    np.testing.assert_array_equal(result.first, [1.5, 2.5])
    np.testing.assert_array_equal(result.second["k"].first, [[1, 2]])
    np.testing.assert_array_equal(result.second["k"].second[0], [1.5, 2.5])
    fed = tf.Session().run(Fields(t1, t2), feed_dict={t1: [7.0, 8.0]})
    np.testing.assert_array_equal(fed.first, [7.0, 8.0])


def test_attrs_package_classes_when_installed():
    attr = pytest.importorskip("attr")

    @attr.s
    class Sample:
        field0 = attr.ib()
        field1 = attr.ib()

    a, b = tf.constant(1.0), tf.constant(2)
    result = tf.Session().run(Sample(a, [Sample(b, a)]))
    assert isinstance(result, Sample) and result.field0 == 1.0
    assert isinstance(result.field1[0], Sample) and result.field1[0].field0 == 2


def test_fetch_by_string_names_of_every_type():
    c = tf.constant(42.0, name="c")
    sess = tf.Session()
    for name in ("c:0", "c:0", b"c:0", r"c:0"):
        assert sess.run(name) == 42.0
    assert sess.run("c") is None and sess.run(b"c") is None  # an op name runs the op
    assert sess.run([c, b"c:0", "c"]) == [42.0, 42.0, None]


def test_list_subclass_comes_back_as_a_list():
    class Batch(list):
        pass

    c = tf.constant(1.0)
    result = tf.Session().run(Batch([c]))
    assert type(result) is list and result == [1.0]


def test_structure_keys_tell_structures_apart():
    a = tf.constant(1.0, name="a")
    assert structure_key([a]) != structure_key((a,)) != structure_key(a)
    assert structure_key(Fields(a, a)) == structure_key(Fields(a, a))
    assert structure_key(Fields(a, [a])) != structure_key(Fields(a, a))
    assert FetchMapper(a.graph, Fields(a, "a")).elements == [a, a.op]


def test_fetch_none_or_a_number_is_tfs_type_error():
    tf.constant(1.0)
    sess = tf.Session()
    for bad in (None, [None], {"b": None}):
        with pytest.raises(TypeError, match="Fetch argument None has invalid type"):
            sess.run(bad)
    with pytest.raises(TypeError, match="Fetch argument 3 has invalid type <class 'int'>, must be a string or Tensor"):
        sess.run(3)


# --- feed structures ----------------------------------------------------------------------------------------------

def test_nested_tuple_feed_keys():
    z = (((tf.zeros([2]),),), tf.zeros([2]), (tf.zeros([2]),))
    result = [z[0][0][0] * 2, z[1] * 2, z[2][0] * 2]
    values = (((np.array([1, 1]),),), np.array([2, 2]), (np.array([3, 3]),))
    sess = tf.Session()
    for _ in range(2):  # the second run takes the cached path
        out = sess.run(result, feed_dict={z: values})
        np.testing.assert_array_equal(out[0], [2.0, 2.0])
        np.testing.assert_array_equal(out[1], [4.0, 4.0])
        np.testing.assert_array_equal(out[2], [6.0, 6.0])
    a, b = tf.placeholder(tf.float32, []), tf.placeholder(tf.float32, [])
    assert sess.run(a + b, {(a, b): (1.0, 2.0)}) == 3.0
    assert sess.run([a, b], {(a, b): [5.0, 6.0], }) == [5.0, 6.0]


def test_nested_tuple_feed_errors():
    a, b = tf.placeholder(tf.float32, []), tf.placeholder(tf.float32, [])
    sess = tf.Session()
    with pytest.raises(ValueError, match="Could not flatten dictionary. Key had 2 elements, but value had 3 elements"):
        sess.run(a + b, {(a, b): (1.0, 2.0, 3.0)})
    with pytest.raises(ValueError, match="Could not flatten dictionary: key .* is not unique"):
        sess.run(a + b, {(a, a): (1.0, 2.0), b: 1.0})
    sess.run(a + b, {(a, b): (1.0, 2.0)})
    with pytest.raises(ValueError, match="Key had 2 elements, but value had 1 elements"):
        sess.run(a + b, {(a, b): (1.0,)})  # the same signature, cached: values are still checked


def test_feed_and_fetch_by_string_names():
    x = tf.placeholder(tf.float32, [2], name="x")
    y = tf.multiply(x, 2.0, name="y")
    sess = tf.Session()
    np.testing.assert_array_equal(sess.run("y:0", {"x:0": [1.0, 2.0]}), [2.0, 4.0])
    np.testing.assert_array_equal(sess.run(y, {b"x:0": [3.0, 4.0]}), [6.0, 8.0])
    np.testing.assert_array_equal(sess.run(x, {x: [5.0, 6.0]}), [5.0, 6.0])  # a fed tensor fetches its fed value


def test_feed_dict_must_be_a_dictionary():
    x = tf.placeholder(tf.float32, [])
    with pytest.raises(TypeError, match="input must be a dictionary"):
        tf.Session().run(x, [(x, 1.0)])


# --- TF's errors -------------------------------------------------------------------------------------------------

def test_tensors_of_another_graph_are_value_errors():
    with tf.Graph().as_default():
        c1 = tf.constant(1.0, name="c")
    with tf.Graph().as_default() as g2:
        c2 = tf.constant(2.0, name="c")
    with tf.Session(graph=g2) as sess:
        assert sess.run(c2) == 2.0
        with pytest.raises(ValueError, match=r"Fetch argument .* cannot be interpreted as a Tensor\. \(Tensor .* is "
                                             r"not an element of this graph\.\)"):
            sess.run(c1)
        with pytest.raises(ValueError, match="is not an element of this graph"):
            sess.run(c1.op)
        with pytest.raises(TypeError, match="Cannot interpret feed_dict key as Tensor: .* is not an element of this "
                                            "graph"):
            sess.run(c2, {c1: 3.0})


def test_unknown_names_and_bad_feed_keys():
    tf.constant(1.0, name="a")
    sess = tf.Session()
    with pytest.raises(ValueError, match="Fetch argument 'foo:0' cannot be interpreted as a Tensor"):
        sess.run("foo:0")
    with pytest.raises(TypeError, match="Cannot interpret feed_dict key as Tensor"):
        sess.run("a:0", feed_dict={"a": [2.0]})


def test_bad_feed_values_are_tfs_errors():
    s = tf.placeholder(tf.string, [], name="s")
    i = tf.placeholder(tf.int32, [], name="i")
    sess = tf.Session()
    with pytest.raises(TypeError, match="is not compatible with Tensor type <class 'object'> of Tensor 's:0'"):
        sess.run(s, {s: 3})
    with pytest.raises(TypeError, match="is not compatible with Tensor type <class 'numpy.int32'>"):
        sess.run(i, {i: np.iinfo(np.int64).max})
    with pytest.raises(TypeError, match="cannot be a tf.Tensor object"):
        sess.run(i, {i: tf.constant(1)})
    with pytest.raises(ValueError, match="Cannot feed value of shape"):
        sess.run(i, {i: [1, 2]})
    with pytest.raises(ValueError, match="invalid literal"):
        sess.run(i, {i: "seven"})


def test_prevent_feeding_and_fetching():
    x = tf.placeholder(tf.float32, [], name="x")
    y = tf.add(x, 1.0, name="y")
    z = tf.multiply(y, 2.0, name="z")
    g = tf.get_default_graph()
    g.prevent_feeding(y)
    g.prevent_fetching(z.op)
    sess = tf.Session()
    with pytest.raises(ValueError, match=r'^Tensor Tensor\("y:0", shape=\(\), dtype=float32\) may not be fed\.$'):
        sess.run(y, {y: 1.0})
    with pytest.raises(ValueError, match="^Operation 'z' has been marked as not fetchable."):
        sess.run(z, {x: 1.0})
    with pytest.raises(ValueError, match="Operation 'z' has been marked as not fetchable."):
        sess.run([y, {"k": z.op}], {x: 1.0})
    assert sess.run(y, {x: 1.0}) == 2.0


def test_an_empty_graph_and_a_closed_session_are_runtime_errors():
    with pytest.raises(RuntimeError, match="^The Session graph is empty.  Add operations to the graph before"):
        tf.Session().run({})
    c = tf.constant(1.0)
    sess = tf.Session()
    sess.close()
    for use in (lambda: sess.run(c), lambda: sess.make_callable(c), lambda: sess.partial_run_setup([c])):
        with pytest.raises(RuntimeError, match="^Attempted to use a closed Session.$"):
            use()


def test_shapes_that_do_not_broadcast_at_run_time_give_tfs_incompatible_shapes_error():
    a = tf.placeholder(tf.float32)
    b = tf.placeholder(tf.float32)
    with pytest.raises(tf.errors.InvalidArgumentError, match=r"^Incompatible shapes: \[2\] vs. \[1,3\]\n") as info:
        tf.Session().run(a + b, {a: [1.0, 2.0], b: [[1.0, 2.0, 3.0]]})
    assert info.value.op.name == "add"


# --- RunMetadata.HasField, thread-pool options, _DeviceAttributes ----------------------------------------------

def test_run_metadata_has_step_stats_only_after_a_traced_run():
    metadata = tf.RunMetadata()
    with tf.Graph().as_default():
        c = tf.constant(1.0)
        with tf.Session() as sess:
            sess.run(c, run_metadata=metadata)
            assert not metadata.HasField("step_stats")
            sess.run(c, options=tf.RunOptions(trace_level=tf.RunOptions.FULL_TRACE), run_metadata=metadata)
    assert metadata.HasField("step_stats") and not metadata.HasField("cost_graph")
    with pytest.raises(ValueError, match='has no "bogus" field'):
        metadata.HasField("bogus")


def test_session_inter_op_thread_pool_is_a_repeated_field_with_add():
    config = tf.ConfigProto()
    pool = config.session_inter_op_thread_pool.add(num_threads=2)
    pool.global_name = "shared"
    assert len(config.session_inter_op_thread_pool) == 1 and not tf.ConfigProto().session_inter_op_thread_pool
    with tf.Graph().as_default():
        c = tf.constant(3.0)
        with tf.Session(config=config) as sess:
            assert sess.run(c) == 3.0


def test_device_attributes_canonicalize_the_name_and_print_like_tf():
    from adplace.runtime.session import _DeviceAttributes
    attrs = _DeviceAttributes("/job:worker/replica:0/task:3/cpu:1", "CPU", 1337, 7)
    assert attrs.name == "/job:worker/replica:0/task:3/device:CPU:1"
    assert (attrs.device_type, attrs.memory_limit_bytes, attrs.incarnation) == ("CPU", 1337, 7)
    assert "%s" % attrs == "_DeviceAttributes(/job:worker/replica:0/task:3/device:CPU:1, CPU, 1337, 7)"


# --- the default-session stack ------------------------------------------------------------------------------

def test_default_sessions_must_close_innermost_first_and_reset_forgets_them():
    from adplace.framework.session_stack import _default_session_stack
    outer, inner = tf.Session(), tf.Session()
    outer_block, inner_block = outer.as_default(), inner.as_default()
    outer_block.__enter__()
    inner_block.__enter__()
    assert tf.get_default_session() is inner
    with pytest.raises(AssertionError, match="Nesting violated for default stack"):
        outer_block.__exit__(None, None, None)
    _default_session_stack.reset()
    assert tf.get_default_session() is None
    inner_block.__exit__(None, None, None)  # after reset(): no complaint
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # "An interactive session is already active": expected here
        first, second = tf.InteractiveSession(), tf.InteractiveSession()
    first.close()  # interactive sessions may close in any order
    assert tf.get_default_session() is second
    second.close()
    assert tf.get_default_session() is None


# --- bytes names, registered fetch/feed conversions, callables from CallableOptions -----------------------------

def test_ops_named_with_bytes_get_text_names_and_fetch_by_bytes():
    with tf.Graph().as_default():
        e = tf.constant(44.0, name=b"e")
        assert e.name == "e:0" and isinstance(e.op.name, str)
        with tf.Session() as sess:
            assert sess.run(b"e:0") == sess.run("e:0") == 44.0


def test_registered_conversion_functions_fetch_and_feed_custom_objects():
    from adplace.runtime.fetches import REGISTERED_EXPANSIONS, register_session_run_conversion_functions

    class Doubled:
        def __init__(self, value):
            self.tensor = tf.convert_to_tensor(value) * 2.0

    register_session_run_conversion_functions(Doubled, lambda d: ([d.tensor], lambda values: values[0]),
                                              lambda d, value: [(d.tensor, value)], lambda d: [d.tensor])
    try:
        with pytest.raises(ValueError, match="has already been registered"):
            register_session_run_conversion_functions(Doubled, lambda d: ([d.tensor], list))
        with tf.Graph().as_default():
            doubled = Doubled(np.array([1.0, 2.0]))
            with tf.Session() as sess:
                np.testing.assert_allclose(sess.run(doubled), [2.0, 4.0])
                np.testing.assert_allclose(sess.run(doubled, feed_dict={doubled: [7.0, 8.0]}), [7.0, 8.0])
                handle = sess.partial_run_setup([doubled], [doubled])
                np.testing.assert_allclose(sess.partial_run(handle, doubled, {doubled: [5.0, 6.0]}), [5.0, 6.0])
    finally:
        REGISTERED_EXPANSIONS[:] = [e for e in REGISTERED_EXPANSIONS if e[0] is not Doubled]


def test_make_callable_from_options_feeds_fetches_and_targets_by_name():
    from adplace.runtime.options import CallableOptions
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float32, name="x")
        tf.add(x, 1.0, name="y")
        counter = tf.Variable(0, name="counter")
        tf.assign_add(counter, 1, name="bump")
        options = CallableOptions(feed=["x:0"], fetch=["y:0"], target=["bump"])
        options.run_options.trace_level = tf.RunOptions.FULL_TRACE
        with tf.Session() as sess:
            sess.run(counter.initializer)
            step = sess._make_callable_from_options(options)
            metadata = tf.RunMetadata()
            assert step(np.float32(1.0), run_metadata=metadata) == [2.0]
            assert step(np.float32(4.0)) == [5.0]
            assert sess.run(counter) == 2 and metadata.HasField("step_stats")


def test_a_grpc_target_without_ray_is_not_found_saying_what_to_install(tmp_path):
    """In a process where Ray cannot be imported, a grpc:// target has no factory, as in a TF build without gRPC."""
    import subprocess
    import sys
    script = ("import sys; sys.modules['ray'] = None\n"
              "import adplace as tf\n"
              "try:\n    tf.Session('grpc://localhost:2222')\n"
              "except tf.errors.NotFoundError as e:\n    print('NotFound', e.message)\n")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert done.stdout.startswith("NotFound No session factory registered") and "adplace[distributed]" in done.stdout
