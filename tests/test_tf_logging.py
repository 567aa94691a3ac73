"""tf.logging: TF1's functions and levels on the "adplace" logger."""
import logging

import pytest

import adplace as tf


@pytest.fixture
def records():
    logger = logging.getLogger("adplace")
    seen = []
    handler = logging.Handler()
    handler.emit = seen.append
    logger.addHandler(handler)
    level = logger.level
    yield seen
    logger.removeHandler(handler)
    logger.setLevel(level)


def test_levels_are_pythons_and_set_verbosity_filters(records):
    assert (tf.logging.DEBUG, tf.logging.INFO, tf.logging.WARN, tf.logging.ERROR, tf.logging.FATAL) == (10, 20, 30,
                                                                                                          40, 50)
    tf.logging.set_verbosity(tf.logging.WARN)
    assert tf.logging.get_verbosity() == tf.logging.WARN
    tf.logging.info("hidden %d", 1)
    tf.logging.warning("shown %d", 2)
    tf.logging.error("also %s", "shown")
    tf.logging.set_verbosity(tf.logging.INFO)
    tf.logging.info("step %d", 3)
    assert [(r.levelno, r.getMessage()) for r in records] == [(30, "shown 2"), (40, "also shown"), (20, "step 3")]


def test_every_n_and_first_n_count_per_call_site(records):
    tf.logging.set_verbosity(tf.logging.INFO)
    for i in range(7):
        tf.logging.log_every_n(tf.logging.INFO, "every %d", 3, i)
        tf.logging.log_first_n(tf.logging.INFO, "first %d", 2, i)
    tf.logging.log_if(tf.logging.INFO, "no", False)
    tf.logging.log_if(tf.logging.INFO, "yes", True)
    assert [r.getMessage() for r in records] == ["every 0", "first 0", "first 1", "every 3", "every 6", "yes"]
