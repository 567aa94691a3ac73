"""tf.data iterators in graph mode: initializable, one-shot, reinitializable and feedable iterators; the end of the
data; errors of one element that leave the iterator usable; many threads on one iterator; deadlines and
Session.close while get_next waits; cache files; captured tensors evaluated at initialization."""
import os
import threading
import time

import numpy as np
import pytest

import adplace as tf


def _all(sess, element, limit=10000):
    out = []
    for _ in range(limit):
        try:
            out.append(sess.run(element))
        except tf.errors.OutOfRangeError:
            return out
    raise AssertionError("no end of sequence")


def _data_threads():
    return [t for t in threading.enumerate() if t.name.startswith("adplace-data")]


# --- kinds of iterators ----------------------------------------------------------------------------------------
def test_initializable_iterator_takes_fed_placeholders_and_restarts_when_initialized_again():
    n = tf.placeholder(tf.int64, [])
    it = tf.data.Dataset.range(n).map(lambda v: v * 10).make_initializable_iterator()
    element = it.get_next()
    with tf.Session() as sess:
        sess.run(it.initializer, {n: 3})
        assert sess.run(element) == 0
        sess.run(it.initializer, {n: 2})
        assert _all(sess, element) == [0, 10]
        with pytest.raises(tf.errors.OutOfRangeError, match="End of sequence"):
            sess.run(element)  # stays at its end


def test_get_next_before_initialization_is_a_failed_precondition():
    it = tf.data.Dataset.range(3).make_initializable_iterator()
    with tf.Session() as sess, pytest.raises(tf.errors.FailedPreconditionError, match="not been initialized"):
        sess.run(it.get_next())


def test_reinitializable_iterator_switches_between_datasets_of_one_structure():
    train = tf.data.Dataset.from_tensor_slices((np.arange(4.0, dtype=np.float32), np.arange(4)))
    test = tf.data.Dataset.from_tensor_slices((np.full(2, -1.0, np.float32), np.array([7, 8])))
    it = tf.data.Iterator.from_structure(train.output_types, train.output_shapes)
    x, y = it.get_next()
    to_train, to_test = it.make_initializer(train), it.make_initializer(test)
    with tf.Session() as sess:
        sess.run(to_train)
        assert [tuple(v) for v in _all(sess, (x, y))] == [(0.0, 0), (1.0, 1), (2.0, 2), (3.0, 3)]
        sess.run(to_test)
        assert [int(v) for _, v in _all(sess, (x, y))] == [7, 8]


def test_make_initializer_refuses_other_types_and_structures():
    it = tf.data.Iterator.from_structure((tf.float32, tf.int64))
    with pytest.raises(TypeError, match="output types"):
        it.make_initializer(tf.data.Dataset.from_tensors((1, np.int64(2))))
    with pytest.raises(TypeError, match="structure"):
        it.make_initializer(tf.data.Dataset.range(3))


def test_one_shot_iterator_needs_no_initializer_and_refuses_placeholders():
    element = tf.data.Dataset.range(3).repeat(2).make_one_shot_iterator().get_next()
    with tf.Session() as sess:
        assert _all(sess, element) == [0, 1, 2, 0, 1, 2]
    with pytest.raises(ValueError, match="Cannot capture a placeholder"):
        tf.data.Dataset.range(tf.placeholder(tf.int64, [])).make_one_shot_iterator()


def test_one_shot_iterator_starts_afresh_in_each_session():
    element = tf.data.Dataset.range(2).make_one_shot_iterator().get_next()
    for _ in range(2):
        with tf.Session() as sess:
            assert _all(sess, element) == [0, 1]


def test_feedable_iterator_follows_the_fed_string_handle():
    a = tf.data.Dataset.range(3).make_one_shot_iterator()
    b = tf.data.Dataset.range(100, 103).make_initializable_iterator()
    handle = tf.placeholder(tf.string, [])
    feedable = tf.data.Iterator.from_string_handle(handle, a.output_types, a.output_shapes)
    element = feedable.get_next()
    with tf.Session() as sess:
        ha, hb = sess.run([a.string_handle(), b.string_handle()])
        sess.run(b.initializer)
        assert [sess.run(element, {handle: h}) for h in (ha, hb, ha, hb, hb)] == [0, 100, 1, 101, 102]
        with pytest.raises(tf.errors.OutOfRangeError):
            sess.run(element, {handle: hb})
        with pytest.raises(tf.errors.NotFoundError, match="string handle"):
            sess.run(element, {handle: b"no such iterator"})


def test_feedable_iterator_refuses_an_iterator_of_other_types():
    floats = tf.data.Dataset.from_tensors(1.0).make_one_shot_iterator()
    handle = tf.placeholder(tf.string, [])
    element = tf.data.Iterator.from_string_handle(handle, tf.int64).get_next()
    with tf.Session() as sess:
        with pytest.raises(tf.errors.InvalidArgumentError, match="output types"):
            sess.run(element, {handle: sess.run(floats.string_handle())})


def test_shared_name_iterators_are_one_iterator_across_sessions():
    it = tf.data.Dataset.range(4).make_initializable_iterator(shared_name="shared_it")
    element = it.get_next()
    with tf.Session() as first, tf.Session() as second:
        first.run(it.initializer)
        assert [first.run(element), second.run(element), first.run(element)] == [0, 1, 2]


def test_element_of_unexpected_shape_is_refused_at_get_next():
    ds = tf.data.Dataset.from_generator(lambda: iter([[1.0, 2.0], [1.0, 2.0, 3.0]]), tf.float32, [None])
    it = tf.data.Iterator.from_structure(tf.float32, [2])
    init, element = it.make_initializer(ds), it.get_next()
    with tf.Session() as sess:
        sess.run(init)
        assert sess.run(element).tolist() == [1.0, 2.0]
        with pytest.raises(tf.errors.InvalidArgumentError, match=r"Incompatible shapes at component 0: expected "
                                                                 r"\[2\] but got \[3\]"):
            sess.run(element)


# --- what functions see ---------------------------------------------------------------------------------------
def test_captured_tensors_are_evaluated_when_the_iterator_is_initialized():
    scale = tf.Variable(2.0)
    it = tf.data.Dataset.range(3).map(lambda v: tf.cast(v, tf.float32) * scale).make_initializable_iterator()
    element = it.get_next()
    with tf.Session() as sess:
        sess.run(scale.initializer)
        sess.run(it.initializer)
        sess.run(scale.assign(5.0))
        assert _all(sess, element) == [0.0, 2.0, 4.0]
        sess.run(it.initializer)
        assert _all(sess, element) == [0.0, 5.0, 10.0]


def test_random_ops_in_a_map_function_draw_anew_for_each_element():
    element = tf.data.Dataset.range(50).map(lambda v: tf.random_uniform([])).make_one_shot_iterator().get_next()
    with tf.Session() as sess:
        values = _all(sess, element)
    assert len(set(values)) == 50 and all(0.0 <= v < 1.0 for v in values)


def test_map_function_must_be_callable_and_filter_must_return_a_scalar_bool():
    ds = tf.data.Dataset.range(3)
    with pytest.raises(TypeError, match="callable"):
        ds.map(3)
    with pytest.raises(ValueError, match="scalar boolean"):
        ds.filter(lambda v: v)


def test_flat_map_function_must_return_a_dataset():
    with pytest.raises(TypeError, match="Dataset"):
        tf.data.Dataset.range(3).flat_map(lambda v: v)


# --- order --------------------------------------------------------------------------------------------------
def _epochs(seed, reshuffle, n=20, epochs=3):
    element = tf.data.Dataset.range(n).shuffle(n, seed=seed, reshuffle_each_iteration=reshuffle).repeat(
        epochs).make_one_shot_iterator().get_next()
    with tf.Session() as sess:
        values = _all(sess, element)
    return [values[i * n:(i + 1) * n] for i in range(epochs)]


def test_shuffle_gives_permutations_new_each_epoch_and_the_same_for_a_seed():
    epochs = _epochs(7, True)
    assert all(sorted(e) == list(range(20)) for e in epochs)
    assert epochs[0] != epochs[1] and epochs[1] != epochs[2]
    assert _epochs(7, True) == epochs  # same seed, same orders
    assert _epochs(8, True)[0] != epochs[0]


def test_shuffle_without_reshuffling_repeats_one_order():
    first, second, third = _epochs(3, False)
    assert first == second == third and first != list(range(20))


def test_shuffle_with_a_small_buffer_only_moves_elements_so_far():
    element = tf.data.Dataset.range(100).shuffle(3, seed=1).make_one_shot_iterator().get_next()
    with tf.Session() as sess:
        values = _all(sess, element)
    assert sorted(values) == list(range(100))
    assert all(v <= i + 2 for i, v in enumerate(values))  # element i is drawn from the first i + 3


# --- errors of one element --------------------------------------------------------------------------------------
def test_a_malformed_csv_line_fails_its_element_and_the_next_lines_still_come(tmp_path):
    path = tmp_path / "data.csv"
    path.write_text("1,2\nx,3\n4,5\n")
    ds = tf.data.TextLineDataset(str(path)).map(lambda line: tf.decode_csv(line, [[0], [0]]))
    element = ds.make_one_shot_iterator().get_next()
    with tf.Session() as sess:
        assert sess.run(element) == (1, 2)
        with pytest.raises(tf.errors.InvalidArgumentError, match="Field 0"):
            sess.run(element)
        assert sess.run(element) == (4, 5)
        with pytest.raises(tf.errors.OutOfRangeError):
            sess.run(element)


def test_a_missing_file_is_not_found_and_the_next_file_is_read(tmp_path):
    (tmp_path / "b.txt").write_text("b1\nb2\n")
    names = [str(tmp_path / "missing.txt"), str(tmp_path / "b.txt")]
    element = tf.data.TextLineDataset(names).make_one_shot_iterator().get_next()
    with tf.Session() as sess:
        with pytest.raises(tf.errors.NotFoundError, match="missing.txt"):
            sess.run(element)
        assert _all(sess, element) == [b"b1", b"b2"]


def test_a_corrupt_tfrecord_is_data_loss_naming_the_file(tmp_path):
    path = str(tmp_path / "r.tfrecord")
    with tf.python_io.TFRecordWriter(path) as writer:
        writer.write(b"good")
        writer.write(b"will be damaged")
    data = bytearray(open(path, "rb").read())
    data[-6] ^= 0xFF
    open(path, "wb").write(bytes(data))
    element = tf.data.TFRecordDataset(path).make_one_shot_iterator().get_next()
    with tf.Session() as sess:
        assert sess.run(element) == b"good"
        with pytest.raises(tf.errors.DataLossError, match="r.tfrecord"):
            sess.run(element)


def test_fixed_length_records_that_do_not_divide_the_body_are_refused(tmp_path):
    path = tmp_path / "f.bin"
    path.write_bytes(b"H" + bytes(7))
    element = tf.data.FixedLengthRecordDataset(str(path), 3, header_bytes=1).make_one_shot_iterator().get_next()
    with tf.Session() as sess, pytest.raises(tf.errors.InvalidArgumentError, match="not an exact multiple"):
        sess.run(element)


def test_batching_elements_of_different_shapes_is_refused():
    ds = tf.data.Dataset.from_generator(lambda: iter([[1], [1, 2]]), tf.int64, [None]).batch(2)
    element = ds.make_one_shot_iterator().get_next()
    with tf.Session() as sess, pytest.raises(tf.errors.InvalidArgumentError,
                                             match=r"Cannot batch tensors with different shapes in component 0. "
                                                   r"First element had shape \[1\] and element 1 had shape \[2\]"):
        sess.run(element)


@pytest.mark.parametrize("raised, expected", [(ValueError, tf.errors.InvalidArgumentError),
                                              (RuntimeError, tf.errors.UnknownError)])
def test_a_generator_that_raises_fails_that_element_and_ends(raised, expected):
    def gen():
        yield 1
        raise raised("broken generator")
    element = tf.data.Dataset.from_generator(gen, tf.int64, []).make_one_shot_iterator().get_next()
    with tf.Session() as sess:
        assert sess.run(element) == 1
        with pytest.raises(expected, match="broken generator"):
            sess.run(element)
        with pytest.raises(tf.errors.OutOfRangeError):
            sess.run(element)


def test_a_generator_yielding_the_wrong_type_or_shape_is_refused():
    bad_type = tf.data.Dataset.from_generator(lambda: iter(["text"]), tf.float32, [])
    bad_shape = tf.data.Dataset.from_generator(lambda: iter([[1.0, 2.0]]), tf.float32, [3])
    with tf.Session() as sess:
        with pytest.raises(tf.errors.InvalidArgumentError, match="expected type was float32"):
            sess.run(bad_type.make_one_shot_iterator().get_next())
        with pytest.raises(tf.errors.InvalidArgumentError, match="where an element of shape"):
            sess.run(bad_shape.make_one_shot_iterator().get_next())


def test_from_generator_calls_the_generator_anew_with_its_args_for_each_iterator():
    calls = []

    def gen(n, text):
        calls.append((int(n), text))
        yield from range(int(n))
    it = tf.data.Dataset.from_generator(gen, tf.int64, [], args=(3, "x")).make_initializable_iterator()
    element = it.get_next()
    with tf.Session() as sess:
        for _ in range(2):
            sess.run(it.initializer)
            assert _all(sess, element) == [0, 1, 2]
    assert calls == [(3, b"x"), (3, b"x")]


# --- threads, deadlines, closing --------------------------------------------------------------------------------
def test_many_threads_on_one_iterator_get_every_element_exactly_once():
    ds = tf.data.Dataset.range(4000).map(lambda v: v * 3, num_parallel_calls=3).prefetch(8)
    element = ds.make_one_shot_iterator().get_next()
    got, errors = [], []
    with tf.Session() as sess:
        def consume():
            try:
                while True:
                    got.append(int(sess.run(element)))
            except tf.errors.OutOfRangeError:
                pass
            except Exception as exc:  # noqa: BLE001 - reported below
                errors.append(exc)
        threads = [threading.Thread(target=consume) for _ in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(60)
    assert not errors
    assert sorted(got) == [v * 3 for v in range(4000)]


def _blocking_dataset(release: threading.Event):
    def gen():
        yield 1
        release.wait(20)
        yield 2
    return tf.data.Dataset.from_generator(gen, tf.int64, []).prefetch(1)


def test_a_get_next_waiting_past_its_deadline_times_out_and_loses_nothing():
    release = threading.Event()
    element = _blocking_dataset(release).make_one_shot_iterator().get_next()
    options = tf.RunOptions(timeout_in_ms=200)
    with tf.Session() as sess:
        assert sess.run(element, options=options) == 1
        started = time.monotonic()
        with pytest.raises(tf.errors.DeadlineExceededError):
            sess.run(element, options=options)
        assert time.monotonic() - started < 5
        release.set()
        assert sess.run(element) == 2
        with pytest.raises(tf.errors.OutOfRangeError):
            sess.run(element)


def test_operation_timeout_in_ms_bounds_a_waiting_get_next():
    release = threading.Event()
    element = _blocking_dataset(release).make_one_shot_iterator().get_next()
    with tf.Session(config=tf.ConfigProto(operation_timeout_in_ms=200)) as sess:
        sess.run(element)
        with pytest.raises(tf.errors.DeadlineExceededError):
            sess.run(element)
        release.set()


def test_closing_the_session_cancels_a_waiting_get_next_and_stops_its_threads():
    before = len(_data_threads())
    release = threading.Event()
    element = _blocking_dataset(release).make_one_shot_iterator().get_next()
    sess = tf.Session()
    sess.run(element)
    caught = []

    def wait():
        try:
            sess.run(element)
        except Exception as exc:  # noqa: BLE001 - checked below
            caught.append(exc)
    waiter = threading.Thread(target=wait)
    waiter.start()
    time.sleep(0.2)
    sess.close()
    waiter.join(10)
    release.set()
    assert len(caught) == 1 and isinstance(caught[0], tf.errors.CancelledError)
    deadline = time.monotonic() + 10
    while len(_data_threads()) > before and time.monotonic() < deadline:
        time.sleep(0.05)
    assert len(_data_threads()) == before


# --- cache --------------------------------------------------------------------------------------------------
def test_cache_in_memory_reads_the_input_once_per_initialization():
    calls = []

    def gen():
        calls.append(1)
        yield from range(3)
    it = tf.data.Dataset.from_generator(gen, tf.int64, []).cache().repeat(3).make_initializable_iterator()
    element = it.get_next()
    with tf.Session() as sess:
        sess.run(it.initializer)
        assert _all(sess, element) == [0, 1, 2] * 3
    assert len(calls) == 1


def test_cache_file_is_written_once_and_read_by_later_sessions(tmp_path):
    source = tmp_path / "lines.txt"
    source.write_text("a\nb\n")
    prefix = str(tmp_path / "cache" / "lines")
    os.makedirs(os.path.dirname(prefix))
    element = tf.data.TextLineDataset(str(source)).cache(prefix).make_one_shot_iterator().get_next()
    with tf.Session() as sess:
        assert _all(sess, element) == [b"a", b"b"]
    assert os.path.exists(prefix + ".index")
    source.unlink()
    with tf.Session() as sess:
        assert _all(sess, element) == [b"a", b"b"]


def test_one_shot_iterator_refuses_a_dataset_reading_a_variable():
    v = tf.Variable([1, 2])
    with pytest.raises(ValueError, match="Cannot capture a stateful node"):
        tf.data.Dataset.from_tensor_slices(v).make_one_shot_iterator()


# --- list_files ---------------------------------------------------------------------------------------------
def test_list_files_lists_matches_shuffled_unless_asked_not_to(tmp_path):
    names = sorted(str(tmp_path / f"{i:02d}.txt") for i in range(20))
    for name in names:
        open(name, "w").close()
    (tmp_path / "other.csv").write_text("")
    in_order = tf.data.Dataset.list_files(str(tmp_path / "*.txt"), shuffle=False).make_one_shot_iterator()
    shuffled = tf.data.Dataset.list_files(str(tmp_path / "*.txt"), seed=4).make_one_shot_iterator()
    with tf.Session() as sess:
        plain = [v.decode() for v in _all(sess, in_order.get_next())]
        mixed = [v.decode() for v in _all(sess, shuffled.get_next())]
    assert plain == names
    assert sorted(mixed) == names and mixed != names


def test_list_files_without_a_match_is_an_invalid_argument_when_the_iterator_starts(tmp_path):
    element = tf.data.Dataset.list_files(str(tmp_path / "*.none")).make_one_shot_iterator().get_next()
    with tf.Session() as sess, pytest.raises(tf.errors.InvalidArgumentError, match="No files matched pattern"):
        sess.run(element)


# --- parallel map keeps each error at its element's place -------------------------------------------------------
def _fails_at_five(v):
    if v == 5:
        raise ValueError("element five")
    return v * 2


@pytest.mark.parametrize("parallel", [None, 2, 3])
def test_a_failing_map_element_raises_in_its_place_and_the_rest_follow_in_order(parallel):
    ds = tf.data.Dataset.range(40).map(lambda v: tf.py_func(_fails_at_five, [v], tf.int64), parallel)
    element = ds.make_one_shot_iterator().get_next()
    with tf.Session() as sess:
        before = [sess.run(element) for _ in range(5)]
        with pytest.raises(tf.errors.InvalidArgumentError, match="element five"):
            sess.run(element)
        after = _all(sess, element)
    assert before == [0, 2, 4, 6, 8] and after == [v * 2 for v in range(6, 40)]


def test_an_input_error_under_a_parallel_map_keeps_its_place(tmp_path):
    (tmp_path / "a.txt").write_text("".join(f"a{i}\n" for i in range(20)))
    (tmp_path / "c.txt").write_text("c0\nc1\n")
    names = [str(tmp_path / n) for n in ("a.txt", "b_missing.txt", "c.txt")]
    ds = tf.data.TextLineDataset(names).map(lambda line: tf.py_func(lambda b: b + b"!", [line], tf.string),
                                            num_parallel_calls=2)
    element = ds.make_one_shot_iterator().get_next()
    with tf.Session() as sess:
        first = [sess.run(element) for _ in range(20)]
        with pytest.raises(tf.errors.NotFoundError, match="b_missing"):
            sess.run(element)
        rest = _all(sess, element)
    assert first == [f"a{i}!".encode() for i in range(20)] and rest == [b"c0!", b"c1!"]
