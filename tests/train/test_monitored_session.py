"""tf.train.MonitoredSession / SingularMonitoredSession / MonitoredTrainingSession: initialization, checkpoint restart,
graph finalization, errors closing the session, OutOfRangeError ending the loop, run_step_fn, queue runners."""
import threading

import numpy as np
import pytest

import adplace as tf
from small_training_graph import small_training_graph


def _run_until_stop(sess, fetch):
    values = []
    while not sess.should_stop():
        values.append(sess.run(fetch))
    return values


def test_monitored_training_session_restarts_from_the_latest_checkpoint(tmp_path):
    d = str(tmp_path)
    graph, step, w, train = small_training_graph()
    with graph.as_default(), tf.train.MonitoredTrainingSession(
            checkpoint_dir=d, save_checkpoint_steps=2, save_summaries_steps=1,
            hooks=[tf.train.StopAtStepHook(last_step=5)]) as sess:
        assert [int(v[1]) for v in _run_until_stop(sess, [train, step])] == [0, 1, 2, 3, 4]
    saved = [int(p.rsplit("-", 1)[1]) for p in tf.train.get_checkpoint_state(d).all_model_checkpoint_paths]
    assert saved == [0, 2, 4, 5]
    graph, step, w, train = small_training_graph()  # a new process would build the same graph
    with graph.as_default(), tf.train.MonitoredTrainingSession(
            checkpoint_dir=d, save_checkpoint_steps=2, hooks=[tf.train.StopAtStepHook(last_step=8)]) as sess:
        assert sess.run(w) == pytest.approx(0.8 ** 5)
        assert [int(v[1]) for v in _run_until_stop(sess, [train, step])] == [5, 6, 7]
    assert tf.train.latest_checkpoint(d).endswith("model.ckpt-8")
    tf.summary.FileWriterCache.clear()


def test_monitored_training_session_hooks_follow_tf_defaults(tmp_path):
    graph, step, w, train = small_training_graph()
    mine = tf.train.StopAtStepHook(num_steps=1)
    with graph.as_default():
        sess = tf.train.MonitoredTrainingSession(checkpoint_dir=str(tmp_path), hooks=[mine])
    kinds = [type(h).__name__ for h in sess._hooks]
    assert kinds == ["StepCounterHook", "SummarySaverHook", "CheckpointSaverHook", "StopAtStepHook"]
    assert sess._hooks[2]._timer._every_secs == 600 and sess._hooks[1]._timer._every_steps == 100
    sess.close()
    with graph.as_default():
        sess = tf.train.MonitoredTrainingSession(hooks=[mine])
    assert sess._hooks == [mine]
    sess.close()
    tf.summary.FileWriterCache.clear()


def test_the_graph_is_finalized_while_the_session_lives():
    graph, step, w, train = small_training_graph()
    with graph.as_default():
        with tf.train.MonitoredSession() as sess:
            with pytest.raises(RuntimeError, match="finalized"):
                tf.constant(1.0)
            assert sess.graph is graph
        assert sess.graph is None and sess.should_stop()
        tf.constant(1.0)  # unfinalized again, as TF does when the graph was not finalized before


class _Ends(tf.train.SessionRunHook):
    def __init__(self):
        self.ended = 0

    def end(self, session):
        self.ended += 1


def test_an_error_in_the_loop_closes_the_session_and_is_reraised():
    graph, step, w, train = small_training_graph()
    hook = _Ends()
    with graph.as_default():
        with pytest.raises(ValueError, match="boom"):
            with tf.train.MonitoredSession(hooks=[hook]) as sess:
                sess.run(train)
                raise ValueError("boom")
    assert hook.ended == 0 and sess._is_closed() and sess.should_stop()
    with pytest.raises(RuntimeError, match="Session is already closed"):
        sess.close()


def test_out_of_range_ends_the_loop_cleanly():
    graph, step, w, train = small_training_graph()

    class Exhausted(tf.train.SessionRunHook):  # stands in for an input that runs out after 3 steps
        def before_run(self, run_context):
            if run_context.session.run(step) == 3:
                raise tf.errors.OutOfRangeError(None, None, "End of sequence")

    hook = _Ends()
    runs = 0
    with graph.as_default():
        with tf.train.MonitoredSession(hooks=[Exhausted(), hook]) as sess:
            while not sess.should_stop():
                sess.run(train)
                runs += 1
    assert runs == 3 and hook.ended == 1 and sess.should_stop()


def test_run_passes_feeds_options_and_run_metadata():
    graph = tf.Graph()
    with graph.as_default():
        x = tf.placeholder(tf.float32, [2])
        y = x * 2.0
        seen = []

        class Options(tf.train.SessionRunHook):
            def before_run(self, run_context):
                seen.append(run_context.original_args)
                return tf.train.SessionRunArgs(None, options=tf.RunOptions(timeout_in_ms=5000))

            def after_run(self, run_context, run_values):
                seen.append(run_values.options.timeout_in_ms)

        with tf.train.SingularMonitoredSession(hooks=[Options()]) as sess:
            np.testing.assert_allclose(sess.run({"y": y}, feed_dict={x: [1.0, 2.0]},
                                                options=tf.RunOptions(timeout_in_ms=10),
                                                run_metadata=tf.RunMetadata())["y"], [2.0, 4.0])
            np.testing.assert_allclose(sess.raw_session().run(y, {x: [1.0, 1.0]}), [2.0, 2.0])
    assert seen[0].fetches == {"y": y} and seen[1] == 5000


def test_run_step_fn():
    graph, step, w, train = small_training_graph()
    with graph.as_default(), tf.train.MonitoredSession() as sess:
        def step_fn(step_context):
            if step_context.session.run(step) >= 2:
                step_context.request_stop()
            return step_context.run_with_hooks(train)

        while not sess.should_stop():
            sess.run_step_fn(step_fn)
        with pytest.raises(ValueError, match="step_context"):
            sess.run_step_fn(lambda ctx: None)
    assert sess.should_stop()
    with graph.as_default(), tf.train.MonitoredSession() as sess:
        assert sess.run(step) == 0  # no checkpoint dir: a fresh start


def test_scaffold_init_fn_collections_and_errors(tmp_path):
    graph, step, w, train = small_training_graph()
    with graph.as_default():
        set_w = tf.assign(w, 3.0)
        scaffold = tf.train.Scaffold(init_fn=lambda scaffold, sess: sess.run(set_w))
        assert tf.train.Scaffold(copy_from_scaffold=scaffold)._user_init_fn is scaffold._user_init_fn
        with tf.train.SingularMonitoredSession(scaffold=scaffold) as sess:
            assert sess.run(w) == 3.0
        assert graph.get_collection("ready_op") == [scaffold.ready_op]
        assert graph.get_collection(tf.GraphKeys.SAVERS) == [scaffold.saver]
        graph.add_to_collection("init_op", tf.no_op())
        with pytest.raises(RuntimeError, match='More than one item in the collection "init_op"'):
            tf.train.Scaffold().finalize()
        with pytest.raises(TypeError, match="copy_from_scaffold"):
            tf.train.Scaffold(copy_from_scaffold=1)


def test_checkpoint_filename_with_path_restores_that_checkpoint(tmp_path):
    graph, step, w, train = small_training_graph()
    with graph.as_default():
        saver = tf.train.Saver()
        with tf.Session() as s:
            s.run(tf.global_variables_initializer())
            s.run(tf.assign(w, 7.0))
            path = saver.save(s, str(tmp_path / "m"))
        with tf.train.SingularMonitoredSession(checkpoint_filename_with_path=path) as sess:
            assert sess.run(w) == 7.0


class _FakeRunner:
    """A QueueRunner stand-in: one thread waiting for the coordinator's stop."""

    def __init__(self):
        self.threads = []

    def create_threads(self, sess, coord=None, daemon=False, start=False):
        thread = threading.Thread(target=coord.wait_for_stop, daemon=daemon)
        coord.register_thread(thread)
        if start:
            thread.start()
        self.threads.append(thread)
        return [thread]


def test_queue_runners_are_started_with_the_coordinator_and_joined_at_close():
    graph, step, w, train = small_training_graph()
    runner = _FakeRunner()
    with graph.as_default():
        graph.add_to_collection(tf.GraphKeys.QUEUE_RUNNERS, runner)
        with tf.train.MonitoredSession() as sess:
            sess.run(train)
            assert len(runner.threads) == 1 and runner.threads[0].is_alive()
    assert not runner.threads[0].is_alive()


def test_a_thread_error_reported_to_the_coordinator_is_raised():
    graph, step, w, train = small_training_graph()

    class Reporter(tf.train.SessionRunHook):
        def after_create_session(self, session, coord):
            self.coord = coord

    hook = Reporter()
    with graph.as_default():
        with pytest.raises(tf.errors.InvalidArgumentError, match="reader failed"):
            with tf.train.MonitoredSession(hooks=[hook]) as sess:
                sess.run(train)
                hook.coord.request_stop(tf.errors.InvalidArgumentError(None, None, "reader failed"))
                sess.should_stop()
