"""tf.train.Supervisor: managed_session initializing or restoring from logdir, the checkpoint and summary services,
stop/request_stop, errors re-raised after the threads stop, OutOfRangeError ending the loop quietly."""
import os
import time

import pytest

import adplace as tf
from small_training_graph import small_training_graph


def _events(logdir):
    events = []
    for name in sorted(os.listdir(logdir)):
        if name.startswith("events.out.tfevents"):
            events += list(tf.train.summary_iterator(os.path.join(logdir, name)))
    return events


def test_managed_session_trains_saves_and_restarts(tmp_path):
    d = str(tmp_path)
    graph, step, w, train = small_training_graph()
    sv = tf.train.Supervisor(graph=graph, logdir=d, save_model_secs=0, save_summaries_secs=0)
    assert sv.global_step is step and sv.logdir == d and sv.save_path == os.path.join(d, "model.ckpt")
    with pytest.raises(RuntimeError, match="finalized"), graph.as_default():
        tf.constant(0)
    with sv.managed_session() as sess:
        while not sv.should_stop():
            if sess.run(train) is None and sess.run(step) >= 4:
                sv.request_stop()
        sv.saver.save(sess, sv.save_path, global_step=sv.global_step)
    assert tf.train.latest_checkpoint(d).endswith("model.ckpt-4")
    assert (tmp_path / "graph.pbtxt").exists()
    statuses = [e.session_log.status for e in _events(d) if e.HasField("session_log")]
    assert statuses == [tf.summary.SessionLog.START, tf.summary.SessionLog.STOP]
    graph, step, w, train = small_training_graph()
    sv = tf.train.Supervisor(graph=graph, logdir=d, save_model_secs=0, save_summaries_secs=0)
    with sv.managed_session() as sess:
        assert sess.run(step) == 4 and sess.run(w) == pytest.approx(0.8 ** 4)


def test_checkpoint_and_summary_services_run_on_their_timers(tmp_path):
    d = str(tmp_path)
    graph, step, w, train = small_training_graph()
    sv = tf.train.Supervisor(graph=graph, logdir=d, save_model_secs=0.05, save_summaries_secs=0.05)
    with sv.managed_session() as sess:
        sess.run(train)
        deadline = time.time() + 10
        while tf.train.latest_checkpoint(d) is None and time.time() < deadline:
            time.sleep(0.02)
        time.sleep(0.2)
    assert tf.train.latest_checkpoint(d).endswith("model.ckpt-1")
    tags = {v.tag for e in _events(d) for v in e.summary.value}
    assert {"loss", "global_step/sec"} <= tags


def test_an_error_in_managed_session_is_reraised_after_stopping(tmp_path):
    graph, step, w, train = small_training_graph()
    sv = tf.train.Supervisor(graph=graph, logdir=str(tmp_path), save_model_secs=0, save_summaries_secs=0)
    with pytest.raises(ValueError, match="boom"):
        with sv.managed_session() as sess:
            sess.run(train)
            raise ValueError("boom")
    assert sv.should_stop()
    with pytest.raises(RuntimeError, match="closed"):
        sess.run(train)


def test_out_of_range_ends_managed_session_quietly():
    graph, step, w, train = small_training_graph()
    sv = tf.train.Supervisor(graph=graph, logdir=None)
    steps = 0
    with sv.managed_session() as sess:
        while not sv.should_stop():
            sess.run(train)
            steps += 1
            if steps == 3:
                raise tf.errors.OutOfRangeError(None, None, "End of sequence")
    assert steps == 3 and sv.should_stop() and sv.summary_writer is None


def test_prepare_or_wait_for_session_summary_computed_and_worker_checks(tmp_path):
    graph, step, w, train = small_training_graph()
    sv = tf.train.Supervisor(graph=graph, logdir=str(tmp_path), save_model_secs=0, save_summaries_secs=0)
    sess = sv.prepare_or_wait_for_session(start_standard_services=False)
    sess.run(train)
    sv.summary_computed(sess, sess.run(sv.summary_op))
    sv.stop()
    sess.close()
    assert [e.step for e in _events(str(tmp_path)) if any(v.tag == "loss" for v in e.summary.value)] == [1]
    with pytest.raises(ValueError, match="When using replicas, all Variables must have their device set"):
        tf.train.Supervisor(graph=small_training_graph()[0], is_chief=False)
    with tf.Graph().as_default() as graph2, tf.device("/cpu:0"):
        tf.Variable(1.0)
    with pytest.raises(RuntimeError, match="Only chief supervisor"):
        tf.train.Supervisor(graph=graph2, is_chief=False).start_standard_services(None)
    assert tf.train.Supervisor.PrepareSession is tf.train.Supervisor.prepare_or_wait_for_session
