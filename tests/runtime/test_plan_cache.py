"""Tests for adplace/runtime/plan_cache.py: PlanCache's capacity and second-chance eviction, the
ADPLACE_PLAN_CACHE_SIZE setting, and a session's caches staying bounded (entries and memory) under ever new fetch
structures while equal structures share one plan."""
import collections
import os

import numpy as np
import pytest

import adplace as tf
from adplace.runtime import plan_cache
from adplace.runtime.plan_cache import CAPACITY_ENV, DEFAULT_CAPACITY, PlanCache, default_capacity


class Entry:
    def __init__(self, label):
        self.label, self.recent = label, False

    def __repr__(self):
        return f"Entry({self.label!r})"


def _filled(capacity: int, keys: str) -> PlanCache:
    cache = PlanCache(capacity)
    for key in keys:
        cache.put(key, Entry(key))
    return cache


# --- PlanCache ----------------------------------------------------------------------------------------------------

def test_holds_at_most_capacity_entries_evicting_the_oldest_unused():
    cache = _filled(3, "abcdef")
    assert list(cache) == ["d", "e", "f"]
    assert cache.evictions == 3
    assert cache.get("f").label == "f" and cache.get("a") is None


def test_a_recently_used_entry_survives_one_sweep():
    cache = _filled(3, "abc")
    cache["a"].recent = True          # what a cache hit does
    cache.put("d", Entry("d"))        # a: second chance (moved to the back, flag cleared); b: evicted
    assert list(cache) == ["c", "a", "d"]
    assert cache["a"].recent is False
    cache.put("e", Entry("e"))        # c is the oldest unused
    assert list(cache) == ["a", "d", "e"]
    cache.put("f", Entry("f"))        # a had its second chance and was not used since
    assert list(cache) == ["d", "e", "f"]
    assert cache.evictions == 3


def test_when_every_entry_is_recent_one_sweep_clears_them_and_the_oldest_goes():
    cache = _filled(2, "ab")
    for entry in cache.values():
        entry.recent = True
    cache.put("c", Entry("c"))
    assert list(cache) == ["b", "c"]
    assert cache.evictions == 1


def test_putting_an_existing_key_replaces_it_without_evicting():
    cache = _filled(2, "ab")
    replacement = Entry("a2")
    replacement.recent = True
    cache.put("a", replacement)
    assert list(cache) == ["b", "a"] and cache["a"] is replacement
    assert replacement.recent is False  # a new entry starts unused
    assert cache.evictions == 0


def test_capacity_one():
    cache = _filled(1, "abc")
    assert list(cache) == ["c"] and cache.evictions == 2


@pytest.mark.parametrize("capacity", [0, -1])
def test_capacity_below_one_is_rejected(capacity):
    with pytest.raises(ValueError, match="at least 1"):
        PlanCache(capacity)


# --- ADPLACE_PLAN_CACHE_SIZE --------------------------------------------------------------------------------------

def test_default_capacity_without_the_variable(monkeypatch):
    monkeypatch.delenv(CAPACITY_ENV, raising=False)
    assert default_capacity() == DEFAULT_CAPACITY == 512
    assert PlanCache().capacity == 512


@pytest.mark.parametrize(("text", "capacity"), [("", 512), ("   ", 512), ("7", 7), (" 64 ", 64), ("1", 1)])
def test_capacity_from_the_variable(monkeypatch, text, capacity):
    monkeypatch.setenv(CAPACITY_ENV, text)
    assert default_capacity() == capacity
    assert PlanCache().capacity == capacity


@pytest.mark.parametrize("text", ["many", "1.5", "0x10", "5 plans"])
def test_a_non_integer_value_is_a_value_error_naming_the_variable(monkeypatch, text):
    monkeypatch.setenv(CAPACITY_ENV, text)
    with pytest.raises(ValueError, match=rf"^ADPLACE_PLAN_CACHE_SIZE='{text}' is not an integer"):
        default_capacity()


@pytest.mark.parametrize("text", ["0", "-3"])
def test_a_value_below_one_is_a_value_error_naming_the_variable(monkeypatch, text):
    monkeypatch.setenv(CAPACITY_ENV, text)
    with pytest.raises(ValueError, match=rf"^ADPLACE_PLAN_CACHE_SIZE={text} must be at least 1"):
        default_capacity()


def test_a_session_reports_a_bad_setting_when_created(monkeypatch):
    tf.constant(1.0)
    monkeypatch.setenv(CAPACITY_ENV, "lots")
    with pytest.raises(ValueError, match=CAPACITY_ENV):
        tf.Session()


# --- a session's caches -------------------------------------------------------------------------------------------

Pair = collections.namedtuple("Pair", ["x", "y"])


def test_equal_fetch_structures_share_one_plan():
    a, b = tf.constant(1.0), tf.constant([2.0, 3.0])
    sess = tf.Session()
    plan = sess.plan_for([a, b])
    assert sess.plan_for((a, b)) is plan
    assert sess.plan_for({"x": a, "y": b}) is plan
    assert sess.plan_for(Pair(a, b)) is plan
    assert sess.plan_for([a.name, b.name]) is plan
    assert sess.plan_for([b, a]) is not plan  # another order is another plan
    x, y = sess.run({"x": a, "y": b}).values()
    assert x == 1.0 and list(y) == [2.0, 3.0]
    assert len(sess._plans) == 2


def _resident_bytes() -> int:
    try:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError):
        pytest.skip("no /proc/self/statm here: the resident set size cannot be read")


def test_ever_new_fetch_structures_keep_the_caches_and_memory_bounded():
    x = tf.constant(np.arange(4, dtype=np.float32)) * 2.0
    sess = tf.Session()
    for i in range(1_000):  # warm-up: the caches fill up to their capacity
        sess.run({f"k{i}": x})
    before = _resident_bytes()
    for i in range(1_000, 20_000):
        out = sess.run({f"k{i}": x})
    after = _resident_bytes()
    assert list(out) == ["k19999"] and list(out["k19999"]) == [0.0, 2.0, 4.0, 6.0]
    assert len(sess._runs) <= sess._runs.capacity == DEFAULT_CAPACITY
    assert sess._runs.evictions >= 20_000 - DEFAULT_CAPACITY
    assert len(sess._plans) == 1
    assert after - before < 8 * 2 ** 20, f"resident memory grew by {(after - before) / 2 ** 20:.1f} MiB"


def test_a_small_capacity_from_the_environment_evicts_and_results_stay_right(monkeypatch):
    monkeypatch.setenv(CAPACITY_ENV, "2")
    c = tf.placeholder(tf.float32, [])
    outputs = [c * float(k) for k in range(5)]
    sess = tf.Session()
    assert sess._runs.capacity == sess._plans.capacity == 2
    for round_ in range(3):
        for k, out in enumerate(outputs):
            assert sess.run(out, {c: 3.0}) == 3.0 * k
            assert sess.run({f"r{round_}k{k}": out}, {c: 1.0}) == {f"r{round_}k{k}": float(k)}
            assert sess.run([out, outputs[0]], {c: 2.0}) == [2.0 * k, 0.0]
            assert len(sess._runs) <= 2 and len(sess._plans) <= 2
    assert sess._runs.evictions > 0 and sess._plans.evictions > 0


def test_the_capacity_is_read_when_the_session_is_made(monkeypatch):
    monkeypatch.setenv(CAPACITY_ENV, "3")
    sess = tf.Session()
    monkeypatch.setenv(CAPACITY_ENV, "100")
    assert sess._runs.capacity == 3
    assert plan_cache.default_capacity() == 100
