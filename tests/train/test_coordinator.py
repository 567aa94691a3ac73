"""tf.train.Coordinator and tf.train.LooperThread: stop requests, errors re-raised by join(), grace periods."""
import sys
import threading
import time
import traceback

import pytest

import adplace as tf


pytestmark = pytest.mark.usefixtures("no_leaked_threads")


def _started(*targets):
    threads = [threading.Thread(target=t, daemon=True) for t in targets]
    for t in threads:
        t.start()
    return threads


def _raise_and_report(coord, error, how):
    """Raise `error` and report it as `how` says: "exception", "exc_info" or "context"."""
    if how == "context":
        with coord.stop_on_exception():
            raise error
    try:
        raise error
    except Exception as e:
        coord.request_stop(e if how == "exception" else sys.exc_info())


def test_stop_api():
    coord = tf.train.Coordinator()
    assert not coord.should_stop() and not coord.wait_for_stop(0.01)
    coord.request_stop()
    assert coord.should_stop() and coord.wait_for_stop(0.01) and coord.wait_for_stop()


def test_stop_requested_by_another_thread_wakes_waiter():
    coord = tf.train.Coordinator()
    go = threading.Event()
    (t,) = _started(lambda: (go.wait(), coord.request_stop()))
    assert not coord.wait_for_stop(0.05)
    go.set()
    assert coord.wait_for_stop(5)
    t.join()


def test_join_waits_for_given_and_registered_threads_without_a_stop():
    coord = tf.train.Coordinator()
    done = []

    def work(n, register):
        if register:
            coord.register_thread(threading.current_thread())
        time.sleep(0.02 * n)
        done.append(n)

    registered = [threading.Thread(target=work, args=(n, True)) for n in (1, 3)]
    given = [threading.Thread(target=work, args=(2, False))]
    for t in registered + given:
        t.start()
    while len(coord._registered_threads) < 2:
        time.sleep(0.001)
    assert not coord.joined
    coord.join(given)
    assert sorted(done) == [1, 2, 3]
    assert not any(t.is_alive() for t in registered + given)
    assert coord.joined and not coord.should_stop()
    assert coord._registered_threads == set()  # a join forgets the registered threads


def test_join_raises_runtime_error_naming_threads_past_the_grace_period():
    coord = tf.train.Coordinator()
    release = threading.Event()
    laggard = threading.Thread(target=release.wait, name="laggard", daemon=True)
    quick = threading.Thread(target=coord.wait_for_stop, name="quick", daemon=True)
    for t in (laggard, quick):
        t.start()
    coord.request_stop()
    start = time.monotonic()
    with pytest.raises(RuntimeError, match=r"^Coordinator stopped with threads still running: laggard$"):
        coord.join([laggard, quick], stop_grace_period_secs=0.2)
    assert 0.15 < time.monotonic() - start < 2
    assert coord.joined
    release.set()
    laggard.join()


@pytest.mark.parametrize("grace", [1e-10, 0.0, -1.0])
def test_tiny_or_negative_grace_period_still_reports_laggards(grace):
    coord = tf.train.Coordinator()
    release = threading.Event()
    (t,) = _started(release.wait)
    coord.request_stop()
    with pytest.raises(RuntimeError, match="threads still running"):
        coord.join([t], stop_grace_period_secs=grace)
    release.set()
    t.join()


def test_ignore_live_threads_returns_and_thread_ending_within_grace_is_fine():
    coord = tf.train.Coordinator()
    release = threading.Event()
    (laggard,) = _started(release.wait)
    coord.request_stop()
    coord.join([laggard], stop_grace_period_secs=0.05, ignore_live_threads=True)
    assert laggard.is_alive()
    coord.clear_stop()
    (slow,) = _started(lambda: (coord.wait_for_stop(), time.sleep(0.1)))
    coord.request_stop()
    coord.join([slow], stop_grace_period_secs=5)  # ends 0.1 s after the stop: no error
    assert not slow.is_alive()
    release.set()
    laggard.join()


@pytest.mark.parametrize("how", ["exception", "exc_info", "context"])
def test_join_reraises_the_first_reported_error_with_its_traceback(how):
    coord = tf.train.Coordinator()
    first_go, second_go = threading.Event(), threading.Event()

    def first():
        first_go.wait()
        try:
            _raise_and_report(coord, RuntimeError("First"), how)
        finally:
            second_go.set()

    def second():
        second_go.wait()
        _raise_and_report(coord, RuntimeError("Too late"), how)

    threads = _started(first, second)
    first_go.set()
    with pytest.raises(RuntimeError, match="^First$") as info:
        coord.join(threads)
    assert "_raise_and_report" in [frame.name for frame in traceback.extract_tb(info.value.__traceback__)]
    with pytest.raises(RuntimeError, match="^First$"):
        coord.raise_requested_exception()


@pytest.mark.parametrize("how", ["exception", "exc_info", "context"])
def test_out_of_range_is_a_clean_stop_by_default(how):
    coord = tf.train.Coordinator()
    threads = _started(lambda: _raise_and_report(coord, tf.errors.OutOfRangeError(None, None, "end"), how))
    coord.join(threads)
    assert coord.should_stop()
    coord.raise_requested_exception()  # nothing recorded


def test_custom_clean_stop_types_replace_the_default():
    coord = tf.train.Coordinator(clean_stop_exception_types=[StopIteration, ValueError])
    threads = _started(lambda: _raise_and_report(coord, ValueError("clean"), "exception"))
    coord.join(threads)
    coord.clear_stop()
    threads = _started(lambda: _raise_and_report(coord, tf.errors.OutOfRangeError(None, None, "now an error"),
                                                 "exception"))
    with pytest.raises(tf.errors.OutOfRangeError, match="now an error"):
        coord.join(threads)


def test_a_clean_stop_first_makes_later_errors_ignored():
    coord = tf.train.Coordinator()
    coord.request_stop()
    _raise_and_report(coord, RuntimeError("after the stop"), "exception")
    coord.join([])


def test_clear_stop_forgets_the_error_and_the_join():
    coord = tf.train.Coordinator()
    _raise_and_report(coord, RuntimeError("First"), "exception")
    with pytest.raises(RuntimeError, match="First"):
        coord.join([])
    coord.clear_stop()
    assert not coord.should_stop() and not coord.joined
    coord.raise_requested_exception()
    threads = _started(lambda: _raise_and_report(coord, RuntimeError("Second"), "context"))
    with pytest.raises(RuntimeError, match="^Second$"):
        coord.join(threads)


@pytest.mark.parametrize("how", ["exception", "exc_info"])
def test_request_stop_after_join_raises_at_once(how):
    coord = tf.train.Coordinator()
    coord.join([])
    with pytest.raises(RuntimeError, match="Too late"):
        _raise_and_report(coord, RuntimeError("Too late"), how)
    _raise_and_report(coord, tf.errors.OutOfRangeError(None, None, "clean"), how)  # a clean stop never raises
    coord.request_stop()


def test_exception_raised_earlier_keeps_its_traceback():
    coord = tf.train.Coordinator()
    try:
        raise KeyError("kept")
    except KeyError as e:
        saved = e
    coord.request_stop(saved)  # outside its handler
    with pytest.raises(KeyError) as info:
        coord.join()
    assert info.value is saved
    assert "test_exception_raised_earlier_keeps_its_traceback" in [
        f.name for f in traceback.extract_tb(info.value.__traceback__)]


@pytest.mark.parametrize("use_kwargs", [False, True])
def test_looper_thread_with_target_args_and_kwargs(use_kwargs):
    coord = tf.train.Coordinator()
    counter, calls = [3], []

    def step(coord, n):
        calls.append(n[0])
        if n[0] == 0:
            coord.request_stop()
        else:
            n[0] -= 1

    args, kwargs = ((coord,), {"n": counter}) if use_kwargs else ((coord, counter), None)
    looper = tf.train.LooperThread.loop(coord, None, target=step, args=args, kwargs=kwargs)
    assert looper.daemon
    coord.join()  # the looper registered itself
    assert calls == [3, 2, 1, 0] and counter == [0]


def test_looper_thread_timer_and_error_reporting():
    coord = tf.train.Coordinator()
    times = []

    def tick():
        times.append(time.monotonic())
        if len(times) == 4:
            raise ValueError("fourth tick")

    looper = tf.train.LooperThread.loop(coord, 0.05, target=tick)
    with pytest.raises(ValueError, match="fourth tick"):
        coord.join([looper])
    assert len(times) == 4 and times[-1] - times[0] >= 0.12


def test_looper_thread_subclass_hooks_and_argument_errors():
    events = []

    class Looper(tf.train.LooperThread):
        def start_loop(self):
            events.append("start")

        def run_loop(self):
            events.append("loop")
            self._coord.request_stop()

        def stop_loop(self):
            events.append("stop")

    coord = tf.train.Coordinator()
    Looper(coord, 0).start()
    coord.join()
    assert events == ["start", "loop", "stop"]
    with pytest.raises(ValueError, match="must be a Coordinator"):
        tf.train.LooperThread(object(), None)
    with pytest.raises(ValueError, match="require that you also pass 'target'"):
        tf.train.LooperThread(coord, None, args=(1,))
