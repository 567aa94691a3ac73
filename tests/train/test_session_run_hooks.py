"""tf.train's SessionRunHooks under MonitoredSession: call order, StopAtStepHook's exact last step, checkpoints and
summaries at the right steps, LoggingTensorHook's messages, NaN checks, FinalOpsHook and FeedFnHook."""
import logging
import os

import numpy as np
import pytest

import adplace as tf


def _model():
    """A fresh graph with a global step, w (1.0) and a train op stepping both; returns (graph, step, train, loss)."""
    graph = tf.Graph()
    with graph.as_default():
        step = tf.train.get_or_create_global_step()
        w = tf.Variable(1.0, name="w")
        loss = tf.identity(w * w, name="loss")
        tf.summary.scalar("train_loss", loss)
        train = tf.train.GradientDescentOptimizer(0.1).minimize(loss, global_step=step)
    return graph, step, train, loss


def _train(graph, train, hooks, limit=100, **kwargs):
    """Run `train` until should_stop; returns the number of runs."""
    runs = 0
    with graph.as_default(), tf.train.MonitoredSession(hooks=hooks, **kwargs) as sess:
        while not sess.should_stop() and runs < limit:
            sess.run(train)
            runs += 1
    return runs


class Recorder(tf.train.SessionRunHook):
    def __init__(self, calls, name, fetch=None):
        self.calls, self.name, self.fetch, self.results = calls, name, fetch, []

    def begin(self):
        self.calls.append((self.name, "begin", tf.get_default_graph()._finalized))

    def after_create_session(self, session, coord):
        self.calls.append((self.name, "after_create_session", isinstance(coord, tf.train.Coordinator)))

    def before_run(self, run_context):
        self.calls.append((self.name, "before_run"))
        return tf.train.SessionRunArgs(self.fetch) if self.fetch is not None else None

    def after_run(self, run_context, run_values):
        self.calls.append((self.name, "after_run"))
        self.results.append(run_values.results)

    def end(self, session):
        self.calls.append((self.name, "end"))


def test_hooks_are_called_in_tf_order_with_their_fetches():
    graph, step, train, _ = _model()
    calls = []
    a, b = Recorder(calls, "a", fetch=step), Recorder(calls, "b")
    runs = _train(graph, train, [a, b, tf.train.StopAtStepHook(last_step=2)])
    assert runs == 2
    assert calls == [("a", "begin", False), ("b", "begin", False),
                     ("a", "after_create_session", True), ("b", "after_create_session", True),
                     ("a", "before_run"), ("b", "before_run"), ("a", "after_run"), ("b", "after_run"),
                     ("a", "before_run"), ("b", "before_run"), ("a", "after_run"), ("b", "after_run"),
                     ("a", "end"), ("b", "end")]
    assert [int(r) for r in a.results] == [0, 1] and b.results == [None, None]


@pytest.mark.parametrize("kwargs, start, expected_last", [({"last_step": 7}, 0, 7), ({"num_steps": 4}, 0, 4)])
def test_stop_at_step_hook_stops_exactly_at_the_last_step(kwargs, start, expected_last):
    graph, step, train, _ = _model()
    runs = _train(graph, train, [tf.train.StopAtStepHook(**kwargs)])
    assert runs == expected_last - start


def test_stop_at_step_hook_argument_errors():
    with pytest.raises(ValueError, match="One of num_steps or last_step"):
        tf.train.StopAtStepHook()
    with pytest.raises(ValueError, match="Only one of"):
        tf.train.StopAtStepHook(num_steps=1, last_step=2)
    with tf.Graph().as_default():
        with pytest.raises(RuntimeError, match="Global step should be created to use StopAtStepHook"):
            tf.train.StopAtStepHook(num_steps=1).begin()


def test_checkpoint_saver_hook_saves_at_creation_every_n_steps_and_at_the_end(tmp_path):
    graph, step, train, _ = _model()
    seen = []

    class Listener(tf.train.CheckpointSaverListener):
        def before_save(self, session, global_step_value):
            seen.append(("before", global_step_value))

        def after_save(self, session, global_step_value):
            seen.append(("after", global_step_value))

        def end(self, session, global_step_value):
            seen.append(("end", global_step_value))

    with graph.as_default():
        saver = tf.train.Saver()
        hook = tf.train.CheckpointSaverHook(str(tmp_path), save_steps=3, saver=saver, listeners=[Listener()])
    _train(graph, train, [hook, tf.train.StopAtStepHook(last_step=7)])
    state = tf.train.get_checkpoint_state(str(tmp_path))
    saved = [int(p.rsplit("-", 1)[1]) for p in state.all_model_checkpoint_paths]
    assert saved == [0, 3, 6, 7]
    assert state.model_checkpoint_path.endswith("model.ckpt-7")
    assert tf.train.load_variable(str(tmp_path), "global_step") == 7
    assert (tmp_path / "graph.pbtxt").exists() and (tmp_path / "model.ckpt-7.meta").exists()
    assert [s for s in seen if s[0] == "after"] == [("after", 0), ("after", 3), ("after", 6), ("after", 7)]
    assert seen[-1] == ("end", 7)


def test_a_listener_returning_true_stops_training(tmp_path):
    graph, step, train, _ = _model()

    class StopAt2(tf.train.CheckpointSaverListener):
        def after_save(self, session, global_step_value):
            return global_step_value >= 2

    with graph.as_default():
        hook = tf.train.CheckpointSaverHook(str(tmp_path), save_steps=2, saver=tf.train.Saver(), listeners=[StopAt2()])
    assert _train(graph, train, [hook]) == 2


def _scalars(logdir, tag):
    """{step: value} of scalar `tag` over the event files of `logdir`."""
    found = {}
    for name in sorted(os.listdir(logdir)):
        if name.startswith("events.out.tfevents"):
            for event in tf.train.summary_iterator(os.path.join(logdir, name)):
                for value in event.summary.value:
                    if value.tag == tag:
                        found[event.step] = value.simple_value
    return found


def _session_logs(logdir):
    found = []
    for name in sorted(os.listdir(logdir)):
        if name.startswith("events.out.tfevents"):
            found += [(e.session_log.status, e.step) for e in tf.train.summary_iterator(os.path.join(logdir, name))
                      if e.HasField("session_log")]
    return found


def test_summary_saver_hook_writes_summaries_every_n_steps(tmp_path):
    graph, step, train, loss = _model()
    with graph.as_default():
        writer = tf.summary.FileWriter(str(tmp_path))
        hook = tf.train.SummarySaverHook(save_steps=2, summary_writer=writer, summary_op=tf.summary.merge_all())
    _train(graph, train, [hook, tf.train.StopAtStepHook(last_step=6)])
    writer.close()
    values = _scalars(str(tmp_path), "train_loss")
    assert sorted(values) == [1, 3, 5]  # written at the step after each run that computed them
    assert values[1] == 1.0 and values[3] == pytest.approx(0.8 ** 4)
    session_log = tf.summary.SessionLog
    assert (session_log.START, 1) in _session_logs(str(tmp_path))


def test_summary_saver_hook_needs_exactly_one_of_scaffold_and_summary_op():
    with pytest.raises(ValueError, match="Exactly one of scaffold or summary_op"):
        tf.train.SummarySaverHook(save_steps=1)
    with pytest.raises(ValueError, match="Either every_secs or every_steps"):
        tf.train.SummarySaverHook(summary_op=object())


def test_step_counter_hook_writes_steps_per_second(tmp_path):
    graph, step, train, _ = _model()
    hook = tf.train.StepCounterHook(every_n_steps=2, output_dir=str(tmp_path))
    _train(graph, train, [hook, tf.train.StopAtStepHook(last_step=5)])
    tf.summary.FileWriterCache.clear()
    values = _scalars(str(tmp_path), "global_step/sec")
    assert sorted(values) == [3, 5] and all(v > 0 for v in values.values())


def test_logging_tensor_hook_logs_every_n_iter_and_at_end(caplog):
    graph, step, train, loss = _model()
    with graph.as_default():
        hook = tf.train.LoggingTensorHook({"step": step, "loss": "loss"}, every_n_iter=2, at_end=True)
    with caplog.at_level(logging.INFO, logger="adplace"):
        _train(graph, train, [hook, tf.train.StopAtStepHook(last_step=5)])
    lines = [r.getMessage() for r in caplog.records if "step = " in r.getMessage()]
    assert len(lines) == 4  # iterations 0, 2, 4, then at the end
    assert lines[0] == "loss = 1.0, step = 0"
    assert lines[1].startswith("loss = 0.4096, step = 2 (") and lines[1].endswith(" sec)")
    assert lines[-1].startswith("loss = ") and "step = 5" in lines[-1]


def test_logging_tensor_hook_formatter_and_argument_errors(caplog):
    graph, step, train, _ = _model()
    with graph.as_default():
        hook = tf.train.LoggingTensorHook([step], every_n_secs=3600, formatter=lambda v: f"at {v[step]}")
    with caplog.at_level(logging.INFO, logger="adplace"):
        _train(graph, train, [hook, tf.train.StopAtStepHook(last_step=3)])
    assert [r.getMessage() for r in caplog.records if r.getMessage().startswith("at ")] == ["at 0"]
    with pytest.raises(ValueError, match="exactly one of every_n_iter and every_n_secs"):
        tf.train.LoggingTensorHook({"a": step})
    with pytest.raises(ValueError, match="invalid every_n_iter=0"):
        tf.train.LoggingTensorHook({"a": step}, every_n_iter=0)


def _nan_model():
    graph = tf.Graph()
    with graph.as_default():
        step = tf.train.get_or_create_global_step()
        x = tf.placeholder(tf.float32, [])
        loss = tf.identity(x * 1.0)
        train = tf.group(tf.assign_add(step, 1), loss)
    return graph, x, loss, train


def test_nan_tensor_hook_raises_and_closes_the_session():
    graph, x, loss, train = _nan_model()
    calls = []
    with graph.as_default():
        sess = tf.train.MonitoredSession(hooks=[tf.train.NanTensorHook(loss), Recorder(calls, "r")])
        sess.run(train, {x: 1.0})
        with pytest.raises(tf.train.NanLossDuringTrainingError, match="NaN loss during training"):
            with sess:
                sess.run(train, {x: np.nan})
    assert sess.should_stop() and ("r", "end") not in calls


def test_nan_tensor_hook_without_failing_requests_a_stop():
    graph, x, loss, train = _nan_model()
    with graph.as_default(), tf.train.MonitoredSession(hooks=[tf.train.NanTensorHook(loss, False)]) as sess:
        sess.run(train, {x: 2.0})
        assert not sess.should_stop()
        sess.run(train, {x: np.nan})
        assert sess.should_stop()
        with pytest.raises(RuntimeError, match="Run called even after should_stop requested"):
            sess.run(train, {x: 1.0})


def test_final_ops_hook_and_feed_fn_hook():
    graph, x, loss, train = _nan_model()
    with graph.as_default():
        final = tf.train.FinalOpsHook(tf.train.get_global_step())
        feeds = iter([3.0, 4.0])
        feed = tf.train.FeedFnHook(lambda: {x: next(feeds)})
        with tf.train.MonitoredSession(hooks=[final, feed]) as sess:
            assert sess.run(loss) == 3.0
            assert sess.run([train, loss])[1] == 4.0
            with pytest.raises(RuntimeError, match="Same tensor is fed by a SessionRunHook and user"):
                sess.run(loss, {x: 1.0})
    assert final.final_ops_values == 1


def test_second_or_step_timer():
    timer = tf.train.SecondOrStepTimer(every_steps=3)
    assert timer.should_trigger_for_step(5)
    assert timer.update_last_triggered_step(5) == (None, None)
    assert not timer.should_trigger_for_step(5) and not timer.should_trigger_for_step(7)
    assert timer.should_trigger_for_step(8)
    secs, steps = timer.update_last_triggered_step(8)
    assert steps == 3 and secs >= 0 and timer.last_triggered_step() == 8
    with pytest.raises(ValueError, match="Can not provide both"):
        tf.train.SecondOrStepTimer(every_secs=1, every_steps=1)
