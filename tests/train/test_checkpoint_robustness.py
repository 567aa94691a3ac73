"""Robustness of checkpoint files (adplace/train/checkpoint_management.py, adplace/lib/io/atomic_file.py; the `.npz` format of
older adplace versions, still read; V2 bundles have more tests in test_checkpoint_v2.py): damaged data files raise
DataLossError naming the file, damaged `checkpoint` state files are handled as TF does, and interrupted or killed saves leave the
previous checkpoint intact and their temporaries are removed by the next save."""
import functools
import io
import json
import logging
import os
import re
import select
import signal
import struct
import subprocess
import sys
import tempfile
import textwrap
import threading
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

import adplace as tf
from adplace import errors
from adplace.lib.io import tensor_bundle
from adplace.lib.io import atomic_file
from adplace.train import checkpoint_management

REPO_ROOT = Path(tf.__file__).resolve().parents[1]
FUZZ = settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])

VALUES = {
    "w": np.arange(6, dtype=np.float32).reshape(2, 3),
    "step": np.array(7, dtype=np.int64),
    "words": np.array([b"alpha", b"", b"\xce\xbb"], dtype=object),
    "mask": np.array([True, False]),
    "half": np.array([0.5, 4.0], dtype=np.float16),
}
DTYPES = {"w": tf.float32, "step": tf.int64, "words": tf.string, "mask": tf.bool, "half": tf.float16}


@functools.lru_cache(maxsize=None)
def valid_checkpoint_bytes() -> bytes:
    """The bytes of a checkpoint of VALUES, written by the real writer."""
    with tempfile.TemporaryDirectory() as directory:
        prefix = os.path.join(directory, "valid")
        checkpoint_management.write_data_file(prefix, VALUES, DTYPES)
        return Path(prefix + ".npz").read_bytes()


def _assert_values_equal(actual, expected):
    assert actual.keys() == expected.keys()
    for key in expected:
        assert np.asarray(actual[key]).dtype == np.asarray(expected[key]).dtype, key
        np.testing.assert_array_equal(actual[key], expected[key], err_msg=key)


def _assert_data_loss(call, path: str):
    """`call()` raises DataLossError (exactly that class) with a message under 1 KB naming `path`."""
    with pytest.raises(errors.DataLossError) as info:
        call()
    message = str(info.value)
    assert path in message and len(message.encode()) < 1024, message


def _assert_every_reader_reports_data_loss(prefix: str):
    path = prefix + ".npz"
    _assert_data_loss(lambda: tf.train.NewCheckpointReader(prefix), path)
    _assert_data_loss(lambda: tf.train.load_checkpoint(prefix), path)
    _assert_data_loss(lambda: tf.train.list_variables(prefix), path)
    _assert_data_loss(lambda: tf.train.load_variable(prefix, "w"), path)


def _read_all(prefix: str) -> dict:
    reader = tf.train.load_checkpoint(prefix)
    return {name: reader.get_tensor(name) for name in reader.get_variable_to_shape_map()}


# --- damaged data files ------------------------------------------------------------------------------------------

@FUZZ
@given(st.binary(max_size=4096))
@example(b"")
@example(b"PK\x05\x06" + bytes(18))  # an empty zip archive: no index member
@example(b"PK\x03\x04")
@example(b"\x93NUMPY\x01\x00")
def test_arbitrary_bytes_as_data_file_are_data_loss(tmp_path, content):
    prefix = str(tmp_path / "model")
    Path(prefix + ".npz").write_bytes(content)
    _assert_every_reader_reports_data_loss(prefix)


def test_every_truncation_of_a_valid_checkpoint_is_data_loss(tmp_path):
    content = valid_checkpoint_bytes()
    prefix = str(tmp_path / "model")
    Path(prefix + ".npz").write_bytes(content)
    _assert_values_equal(_read_all(prefix), VALUES)  # the whole file reads back
    for length in range(len(content)):
        Path(prefix + ".npz").write_bytes(content[:length])
        _assert_data_loss(lambda: tf.train.NewCheckpointReader(prefix), prefix + ".npz")
        if length % 64 == 0:
            _assert_every_reader_reports_data_loss(prefix)


@FUZZ
@given(st.data())
def test_overwritten_bytes_give_data_loss_or_the_exact_values(tmp_path, data):
    """A burst of up to 4 changed bytes anywhere is either detected or lands where it changes nothing (zip metadata
    the reader ignores): CRCs and the index checks never let a wrong value through."""
    content = bytearray(valid_checkpoint_bytes())
    start = data.draw(st.integers(0, len(content) - 1), label="start")
    burst = data.draw(st.binary(min_size=1, max_size=min(4, len(content) - start)), label="burst")
    content[start:start + len(burst)] = burst
    prefix = str(tmp_path / "model")
    Path(prefix + ".npz").write_bytes(bytes(content))
    try:
        values = _read_all(prefix)
    except errors.DataLossError as e:
        assert prefix + ".npz" in str(e) and len(str(e).encode()) < 1024
    else:
        _assert_values_equal(values, VALUES)


def _write_archive(path: Path, members: dict, index=None, raw_index: bytes | None = None):
    """A NumPy zip archive of `members` plus an `__index__` member holding `index` as JSON (or `raw_index`)."""
    if raw_index is None and index is not None:
        raw_index = json.dumps(index).encode()
    if raw_index is not None:
        members = {**members, "__index__": np.frombuffer(raw_index, dtype=np.uint8)}
    buffer = io.BytesIO()
    np.savez(buffer, **members)
    path.write_bytes(buffer.getvalue())


def _index(**entries):
    return {"format": 1, "tensors": entries}


W = np.arange(6, dtype=np.float32)
GOOD_W = {"member": "0", "dtype": "float32", "shape": [2, 3]}

BAD_ARCHIVES = {
    "no index member": ({"0": W}, None, None),
    "index not JSON": ({"0": W}, None, b"{not json"),
    "index not UTF-8": ({"0": W}, None, b"\xff\xfe\xfa"),
    "index a list": ({"0": W}, [1, 2], None),
    "index format 2": ({"0": W}, {"format": 2, "tensors": {}}, None),
    "tensors a list": ({"0": W}, {"format": 1, "tensors": [GOOD_W]}, None),
    "entry a string": ({"0": W}, _index(w="0"), None),
    "member missing": ({"0": W}, _index(w={**GOOD_W, "member": "7"}), None),
    "member a number": ({"0": W}, _index(w={**GOOD_W, "member": 0}), None),
    "member the index": ({"0": W}, _index(w={**GOOD_W, "member": "__index__"}), None),
    "dtype unknown": ({"0": W}, _index(w={**GOOD_W, "dtype": "float33"}), None),
    "dtype a ref": ({"0": W}, _index(w={**GOOD_W, "dtype": "float32_ref"}), None),
    "dtype a list": ({"0": W}, _index(w={**GOOD_W, "dtype": ["float32"]}), None),
    "dtype differs from member": ({"0": W}, _index(w={**GOOD_W, "dtype": "int32"}), None),
    "shape negative": ({"0": W}, _index(w={**GOOD_W, "shape": [-2, -3]}), None),
    "shape of bools": ({"0": W}, _index(w={**GOOD_W, "shape": [True, 6]}), None),
    "shape of floats": ({"0": W}, _index(w={**GOOD_W, "shape": [2.0, 3]}), None),
    "shape a number": ({"0": W}, _index(w={**GOOD_W, "shape": 6}), None),
    "shape too big": ({"0": W}, _index(w={**GOOD_W, "shape": [2, 4]}), None),
    "shape too many dims": ({"0": W}, _index(w={**GOOD_W, "shape": [1] * 65}), None),
    "index of int32": ({"0": W, "__index__": np.zeros(3, np.int32)}, None, None),
    "object member": ({"0": np.array([{"a": 1}], dtype=object)}, _index(w={**GOOD_W, "shape": [1]}), None),
    "string lengths too long": ({"0": np.frombuffer(b"abc", np.uint8), "0_lengths": np.int64([2, 2])},
                                _index(s={"member": "0", "dtype": "string", "shape": [2]}), None),
    "string length negative": ({"0": np.frombuffer(b"abc", np.uint8), "0_lengths": np.int64([4, -1])},
                               _index(s={"member": "0", "dtype": "string", "shape": [2]}), None),
    "string lengths overflow": ({"0": np.frombuffer(b"abc", np.uint8),
                                 "0_lengths": np.int64([2**62, 2**62, 2**62, 2**62 + 3])},
                                _index(s={"member": "0", "dtype": "string", "shape": [4]}), None),
    "string lengths missing": ({"0": np.frombuffer(b"abc", np.uint8)},
                               _index(s={"member": "0", "dtype": "string", "shape": [1]}), None),
    "string lengths as float": ({"0": np.frombuffer(b"abc", np.uint8), "0_lengths": np.float64([3])},
                                _index(s={"member": "0", "dtype": "string", "shape": [1]}), None),
}


@pytest.mark.parametrize("case", BAD_ARCHIVES)
def test_valid_zip_with_a_bad_index_or_member_is_data_loss(tmp_path, case):
    members, index, raw_index = BAD_ARCHIVES[case]
    _write_archive(tmp_path / "model.npz", members, index, raw_index)
    _assert_every_reader_reports_data_loss(str(tmp_path / "model"))


def test_hand_built_archive_with_a_good_index_reads_back(tmp_path):
    """The control for the cases above: the same construction with a consistent index is a valid checkpoint."""
    _write_archive(tmp_path / "model.npz", {"0": W}, _index(w=GOOD_W))
    np.testing.assert_array_equal(tf.train.load_variable(str(tmp_path / "model"), "w:0"), W.reshape(2, 3))


def test_member_claiming_more_bytes_than_the_file_has_is_data_loss(tmp_path):
    """Sizes in the zip directory are checked against the file before anything that size is allocated."""
    _write_archive(tmp_path / "model.npz", {"0": W}, _index(w=GOOD_W))
    content = bytearray((tmp_path / "model.npz").read_bytes())
    entry = content.index(b"PK\x01\x02")  # the zip directory's record of the first member
    assert content[entry + 46:entry + 51] == b"0.npy"
    content[entry + 20:entry + 28] = struct.pack("<II", 0xFFFFFFF0, 0xFFFFFFF0)  # compressed, uncompressed size
    (tmp_path / "model.npz").write_bytes(bytes(content))
    with pytest.raises(errors.DataLossError, match=r"member '0' claims 4294967280 stored bytes; the file has \d+"):
        tf.train.NewCheckpointReader(str(tmp_path / "model"))


json_values = st.recursive(st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=8),
                           lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner,
                                                                                          max_size=3),
                           max_leaves=8)
entry_fields = st.one_of(json_values, st.sampled_from(["0", "0_lengths", "1", "1_lengths", "float32", "string", "int64",
                                                       "uint8", "bool"]), st.lists(st.integers(-2, 7), max_size=3))
FUZZ_MEMBERS = {"0": W.reshape(2, 3), "0_lengths": np.int64([1, 2, 3]), "1": np.frombuffer(b"abcdef", np.uint8),
                "1_lengths": np.int64([1, 2, 3])}


@FUZZ
@given(st.one_of(json_values, st.dictionaries(st.sampled_from(["member", "dtype", "shape", "x"]), entry_fields)),
       st.binary(max_size=64))
@example({"member": "1", "dtype": "string", "shape": [3, 1]}, b"")
@example({"member": "0", "dtype": "float32", "shape": [6]}, b'{"format": 1, "tensors": {}}')
def test_fuzzed_index_gives_data_loss_or_the_member_it_names(tmp_path, entry, raw_index):
    """An index entry of any JSON value (mostly nearly-right ones), or any bytes as the whole index, gives
    DataLossError or exactly the data of the member the entry names, in the shape it gives."""
    prefix = str(tmp_path / "model")
    for index, raw in ((_index(t=entry), None), (None, raw_index)):
        _write_archive(tmp_path / "model.npz", FUZZ_MEMBERS, index, raw)
        try:
            reader = tf.train.NewCheckpointReader(prefix)
        except errors.DataLossError as e:
            assert prefix + ".npz" in str(e) and len(str(e).encode()) < 1024
            continue
        assert reader.get_variable_to_shape_map().keys() <= {"t"}
        if reader.has_tensor("t"):
            value = reader.get_tensor("t")
            assert list(value.shape) == entry["shape"]
            if reader.get_variable_to_dtype_map()["t"] is tf.string:
                assert entry["member"] == "1" and value.ravel().tolist() == [b"a", b"bc", b"def"]
            else:
                expected = FUZZ_MEMBERS[entry["member"]]
                assert value.dtype == expected.dtype and value.ravel().tolist() == expected.ravel().tolist()


@pytest.fixture
def two_variables():
    """a=[9,9] float32 and a string s=[b"keep"], initialized in a session; yields (sess, saver, variables)."""
    variables = {"a": tf.Variable([9.0, 9.0], name="a"), "s": tf.Variable(np.array([b"keep"], object), name="s")}
    saver = tf.train.Saver()
    with tf.Session() as sess:
        sess.run([v.initializer for v in variables.values()])
        yield sess, saver, variables


@pytest.mark.parametrize("damage", ["empty", "truncated", "garbage", "index not a dict"])
def test_restore_of_a_damaged_npz_file_is_data_loss_and_changes_nothing(tmp_path, two_variables, damage):
    sess, saver, variables = two_variables
    prefix = str(tmp_path / "model")
    checkpoint_management.write_data_file(prefix, {"a": np.float32([1, 2]), "s": np.array([b"x"], object)},
                                          {"a": tf.float32, "s": tf.string})
    path = tmp_path / "model.npz"
    content = path.read_bytes()
    if damage == "index not a dict":
        _write_archive(path, {"0": np.float32([1, 2])}, index=["a", "s"])
    else:
        path.write_bytes({"empty": b"", "truncated": content[:len(content) // 2],
                          "garbage": np.random.default_rng(0).bytes(len(content))}[damage])
    before = sess.run(variables)
    _assert_data_loss(lambda: saver.restore(sess, prefix), str(path))
    _assert_values_equal(sess.run(variables), before)


@pytest.mark.parametrize("damage", ["empty index", "truncated index", "garbage index", "truncated data",
                                    "flipped data byte"])
def test_restore_of_a_damaged_v2_checkpoint_is_data_loss_and_changes_nothing(tmp_path, two_variables, damage):
    sess, saver, variables = two_variables
    prefix = saver.save(sess, str(tmp_path / "model"), write_state=False)
    path = tmp_path / ("model.index" if "index" in damage else "model.data-00000-of-00001")
    content = path.read_bytes()
    path.write_bytes({"empty index": b"", "truncated index": content[:len(content) // 2],
                      "garbage index": np.random.default_rng(0).bytes(len(content)),
                      "truncated data": content[:-1],
                      "flipped data byte": content[:2] + bytes([content[2] ^ 1]) + content[3:]}[damage])
    before = sess.run(variables)
    _assert_data_loss(lambda: saver.restore(sess, prefix), str(path))
    _assert_values_equal(sess.run(variables), before)


def test_missing_data_file_is_still_not_found(tmp_path, two_variables):
    sess, saver, _ = two_variables
    prefix = str(tmp_path / "absent")
    with pytest.raises(errors.NotFoundError, match="absent"):
        tf.train.NewCheckpointReader(prefix)
    with pytest.raises(errors.NotFoundError, match="absent"):
        tf.train.list_variables(prefix)
    with pytest.raises(ValueError, match=f"^The passed save_path is not a valid checkpoint: {re.escape(prefix)}$"):
        saver.restore(sess, prefix)
    with pytest.raises(ValueError, match="Couldn't find 'checkpoint' file"):
        tf.train.load_checkpoint(str(tmp_path))


# --- damaged `checkpoint` state files (TF: unreadable or unparsable -> warning and None; no path -> ValueError) ---

class _Records(logging.Handler):
    def __init__(self):
        super().__init__(logging.WARNING)
        self.messages = []

    def emit(self, record):
        self.messages.append(record.getMessage())


@pytest.fixture
def adplace_warnings():
    """The messages of WARNING records the "adplace" logger emits during the test."""
    handler = _Records()
    logger = logging.getLogger("adplace")
    logger.addHandler(handler)
    yield handler.messages
    logger.removeHandler(handler)


def _check_state_outcome(directory: str, warnings: list) -> "tf.train.CheckpointState | None":
    """get_checkpoint_state's only outcomes: a state of str paths, None with a warning naming the file, or TF's
    ValueError for a state without a model_checkpoint_path; latest_checkpoint agrees."""
    state_path = os.path.join(directory, "checkpoint")
    warnings.clear()
    try:
        state = tf.train.get_checkpoint_state(directory)
    except ValueError as e:
        assert str(e).startswith(f"Invalid checkpoint state loaded from {directory}: {state_path}"), e
        with pytest.raises(ValueError, match="Invalid checkpoint state loaded from"):
            tf.train.latest_checkpoint(directory)
        return None
    if state is None:
        assert any(state_path in m and "Checkpoint ignored" in m and len(m) < 2048 for m in warnings), warnings
        assert tf.train.latest_checkpoint(directory) is None
        return None
    assert isinstance(state.model_checkpoint_path, str) and state.model_checkpoint_path
    assert all(isinstance(p, str) for p in state.all_model_checkpoint_paths)
    assert all(isinstance(t, float) for t in state.all_model_checkpoint_timestamps)
    assert isinstance(state.last_preserved_timestamp, float)
    assert tf.train.latest_checkpoint(directory) in (None, state.model_checkpoint_path)
    return state


@FUZZ
@given(st.binary(max_size=512) | st.text(max_size=200).map(str.encode))
@example(b"\xff\xfe\x00garbage")
@example(b'model_checkpoint_path: "model-1"\nall_model_checkpoint_paths: "model-1"\n')
@example(b'model_checkpoint_path: "m"\nmodel_checkpoint_path: [[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[\n')
@example(b"last_preserved_timestamp: 12.5\n")
def test_arbitrary_state_file_bytes_have_only_tf_outcomes(tmp_path, adplace_warnings, content):
    (tmp_path / "checkpoint").write_bytes(content)
    _check_state_outcome(str(tmp_path), adplace_warnings)


@pytest.mark.parametrize("content, expected", [
    (b"", "raises"),
    (b"\n  \n", "raises"),
    (b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR", "ignored"),
    (b'model_checkpoint_path: "m-1', "ignored"),
    (b"model_checkpoint_path: 5\n", "ignored"),
    (b'model_checkpoint_path: "m-1"\ncolour: "blue"\n', "ignored"),
    (b'model_checkpoint_path: "m-1"\nlast_preserved_timestamp: soon\n', "ignored"),
    (b'# written by hand\nmodel_checkpoint_path: "m-1"\n', "m-1"),
])
def test_state_file_examples(tmp_path, adplace_warnings, content, expected):
    (tmp_path / "checkpoint").write_bytes(content)
    if expected == "raises":
        with pytest.raises(ValueError, match=f"^Invalid checkpoint state loaded from {re.escape(str(tmp_path))}"):
            tf.train.get_checkpoint_state(str(tmp_path))
    elif expected == "ignored":
        assert tf.train.get_checkpoint_state(str(tmp_path)) is None
        assert any(str(tmp_path / "checkpoint") in m for m in adplace_warnings), adplace_warnings
    else:
        assert tf.train.get_checkpoint_state(str(tmp_path)).model_checkpoint_path == str(tmp_path / expected)


def test_state_file_that_is_a_directory_is_ignored(tmp_path, adplace_warnings):
    (tmp_path / "checkpoint").mkdir()
    assert tf.train.get_checkpoint_state(str(tmp_path)) is None
    assert tf.train.latest_checkpoint(str(tmp_path)) is None
    assert any(str(tmp_path / "checkpoint") in m for m in adplace_warnings)


def test_every_truncation_of_a_state_file(tmp_path, adplace_warnings):
    """Cut anywhere, a real state file gives None (warned), TF's ValueError (cut to nothing), or the true latest
    checkpoint with a prefix of the true list of kept ones."""
    prefixes = [str(tmp_path / f"model-{step}") for step in (1, 2, 3)]
    for prefix in prefixes:
        checkpoint_management.write_data_file(prefix, {"w": W}, {"w": tf.float32})
    checkpoint_management.update_checkpoint_state(str(tmp_path), prefixes[-1], prefixes, None, [1.5, 2.5, 3.5], 1.0)
    content = (tmp_path / "checkpoint").read_bytes()
    outcomes = set()
    for length in range(len(content) + 1):
        (tmp_path / "checkpoint").write_bytes(content[:length])
        state = _check_state_outcome(str(tmp_path), adplace_warnings)
        if state is not None:
            assert state.model_checkpoint_path == prefixes[-1]
            assert state.all_model_checkpoint_paths == prefixes[:len(state.all_model_checkpoint_paths)]
            assert tf.train.latest_checkpoint(str(tmp_path)) == prefixes[-1]
        outcomes.add("state" if state else "none")
    assert outcomes == {"state", "none"}
    assert tf.train.get_checkpoint_state(str(tmp_path)).all_model_checkpoint_paths == prefixes


# --- interrupted saves -------------------------------------------------------------------------------------------

def _temporaries(directory) -> list[str]:
    return sorted(name for name in os.listdir(directory) if name.endswith(".tmp"))


class _WriteFailure(Exception):
    pass


@pytest.mark.parametrize("failure", [OSError(28, "No space left on device"), KeyboardInterrupt(), _WriteFailure()])
def test_exception_mid_write_keeps_the_previous_checkpoint_and_no_temporary(tmp_path, monkeypatch, failure):
    v = tf.Variable([1.0, 2.0], name="v")
    saver = tf.train.Saver()
    prefix = str(tmp_path / "m")
    temporaries_seen = []

    def index_then_fail(file, items, *args):
        file.write(bytes(100))  # the data file is written, part of the index reaches the disk, then a failure
        file.flush()
        temporaries_seen.extend(_temporaries(tmp_path))
        raise failure

    with tf.Session() as sess:
        sess.run(v.initializer)
        saver.save(sess, prefix)
        state_before = (tmp_path / "checkpoint").read_bytes()
        v.load([5.0, 6.0], sess)
        monkeypatch.setattr(tensor_bundle.table, "write_table", index_then_fail)
        with pytest.raises((errors.UnknownError, type(failure))):
            saver.save(sess, prefix)
        monkeypatch.undo()
        assert len(temporaries_seen) == 2 and all(
            re.fullmatch(rf"\.m\.(index|data-00000-of-00001)\.{os.getpid()}\.[0-9a-f]{{16}}\.tmp", name)
            for name in temporaries_seen), temporaries_seen
        assert sorted(os.listdir(tmp_path)) == ["checkpoint", "m.data-00000-of-00001", "m.index", "m.meta"]
        assert (tmp_path / "checkpoint").read_bytes() == state_before
        assert not atomic_file._temporaries_being_written
        saver.restore(sess, prefix)
        assert sess.run(v).tolist() == [1.0, 2.0]


def _dead_pid() -> int:
    """The pid of a process that has exited (and been reaped)."""
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return child.pid


def test_next_save_removes_stale_temporaries_and_keeps_live_ones(tmp_path):
    dead, me = _dead_pid(), os.getpid()
    stale = [f".m.npz.{dead}.0123456789abcdef.tmp", f".checkpoint.{dead}.00000000000000ff.tmp",
             f".m.npz.{me}.fedcba9876543210.tmp", f".checkpoint.{me}.0000000000000001.tmp"]
    kept = [f".m.npz.{os.getppid()}.0123456789abcdef.tmp",  # a live process's save in progress
            ".m.npz.1.0123456789abcdef.tmp",               # init: alive, maybe not ours to signal
            ".m.npz.xz12ab_c.tmp",                          # not our naming scheme
            f".m.npz.{dead}.0123.tmp", f"m.npz.{dead}.0123456789abcdef.tmp", "notes.tmp"]
    for name in stale + kept:
        (tmp_path / name).write_bytes(b"partial")
    checkpoint_management.write_data_file(str(tmp_path / "m"), {"w": W}, {"w": tf.float32})
    assert _temporaries(tmp_path) == sorted(kept)
    np.testing.assert_array_equal(tf.train.load_variable(str(tmp_path / "m"), "w"), W)


def test_save_never_removes_a_temporary_another_thread_is_writing(tmp_path, monkeypatch):
    real_savez = np.savez
    writing, release = threading.Event(), threading.Event()

    def savez_blocking_in_writer_thread(file, **members):
        if threading.current_thread().name == "writer":
            file.write(b"PK\x03\x04")
            writing.set()
            assert release.wait(10)
            file.seek(0)
        real_savez(file, **members)

    monkeypatch.setattr(checkpoint_management.np, "savez", savez_blocking_in_writer_thread)
    failures = []

    def write_slowly():
        try:
            checkpoint_management.write_data_file(str(tmp_path / "slow"), {"w": W}, {"w": tf.float32})
        except BaseException as e:  # reported to the test thread below
            failures.append(e)

    writer = threading.Thread(target=write_slowly, name="writer")
    writer.start()
    try:
        assert writing.wait(10)
        in_progress = _temporaries(tmp_path)
        assert len(in_progress) == 1
        checkpoint_management.write_data_file(str(tmp_path / "fast"), {"w": W + 1}, {"w": tf.float32})
        checkpoint_management.update_checkpoint_state(str(tmp_path), str(tmp_path / "fast"))
        assert _temporaries(tmp_path) == in_progress
    finally:
        release.set()
        writer.join(10)
    assert not failures and _temporaries(tmp_path) == []
    np.testing.assert_array_equal(tf.train.load_variable(str(tmp_path / "slow"), "w"), W)
    np.testing.assert_array_equal(tf.train.load_variable(str(tmp_path), "w"), W + 1)


def test_concurrent_saves_into_one_directory_all_succeed(tmp_path):
    """Four threads save 10 checkpoints each into one directory; none removes another's temporary mid-write."""
    failures = []

    def save_many(thread_index):
        try:
            for step in range(10):
                prefix = str(tmp_path / f"t{thread_index}-{step}")
                checkpoint_management.write_data_file(prefix, {"w": W + step}, {"w": tf.float32})
        except BaseException as e:  # reported to the test thread below
            failures.append(e)

    threads = [threading.Thread(target=save_many, args=(i,)) for i in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    assert not failures
    assert _temporaries(tmp_path) == []
    for i in range(4):
        np.testing.assert_array_equal(tf.train.load_variable(str(tmp_path / f"t{i}-9"), "w"), W + 9)


CHILD_SAVE_THAT_HANGS_MID_WRITE = textwrap.dedent("""
    import os, sys, time
    import numpy as np
    import adplace as tf
    from adplace.lib.io import tensor_bundle

    def index_that_hangs(file, items, *args):
        file.write(b"the first bytes of an index")
        file.flush()
        tmp = sorted(n for n in os.listdir(sys.argv[1]) if n.endswith(".tmp"))
        print("WRITING", *tmp, flush=True)
        time.sleep(60)

    tensor_bundle.table.write_table = index_that_hangs
    v = tf.Variable([7.0, 8.0], name="v")
    with tf.Session() as sess:
        sess.run(v.initializer)
        tf.train.Saver().save(sess, os.path.join(sys.argv[1], "model"))
""")


def _start_child_blocked_mid_save(directory) -> tuple[subprocess.Popen, list[str]]:
    """A Python process saving checkpoint `model` into `directory`, blocked inside the write of its index; returns
    it and its temporaries' names (data file and index)."""
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT)}
    child = subprocess.Popen([sys.executable, "-c", CHILD_SAVE_THAT_HANGS_MID_WRITE, str(directory)], env=env,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    ready, _, _ = select.select([child.stdout], [], [], 30)
    line = child.stdout.readline() if ready else ""
    if not line.startswith("WRITING "):
        child.kill()
        pytest.fail(f"child did not reach the write: {line!r} {child.communicate(timeout=10)}")
    names = line.split()[1:]
    assert len(names) == 2 and all(re.fullmatch(rf"\.model\.(index|data-00000-of-00001)\.{child.pid}\.[0-9a-f]{{16}}"
                                                rf"\.tmp", name) for name in names), names
    return child, names


@pytest.fixture
def saved_model(tmp_path):
    """Checkpoint `model` in tmp_path with v=[1,2], from this process; yields (sess, saver, v, prefix)."""
    v = tf.Variable([1.0, 2.0], name="v")
    saver = tf.train.Saver()
    with tf.Session() as sess:
        sess.run(v.initializer)
        prefix = saver.save(sess, str(tmp_path / "model"))
        v.load([0.0, 0.0], sess)
        yield sess, saver, v, prefix


@pytest.mark.skipif(os.name != "posix", reason="SIGKILL and pid probing are POSIX")
def test_process_killed_mid_save_keeps_previous_checkpoint_and_next_save_removes_its_temporary(tmp_path,
                                                                                              saved_model):
    sess, saver, v, prefix = saved_model
    state_before = (tmp_path / "checkpoint").read_bytes()
    child, temporaries = _start_child_blocked_mid_save(tmp_path)
    child.send_signal(signal.SIGKILL)
    child.communicate(timeout=10)
    assert child.returncode == -signal.SIGKILL
    assert _temporaries(tmp_path) == temporaries  # a killed process cleans nothing up
    assert (tmp_path / "checkpoint").read_bytes() == state_before
    saver.restore(sess, tf.train.latest_checkpoint(str(tmp_path)))
    assert sess.run(v).tolist() == [1.0, 2.0]
    saver.save(sess, str(tmp_path / "other"))
    assert _temporaries(tmp_path) == []


@pytest.mark.skipif(os.name != "posix", reason="pid probing is POSIX")
def test_save_keeps_the_temporary_of_a_live_process_mid_save(tmp_path, saved_model):
    sess, saver, v, prefix = saved_model
    child, temporaries = _start_child_blocked_mid_save(tmp_path)
    try:
        saver.save(sess, prefix)  # the same prefix and directory the child is writing
        assert _temporaries(tmp_path) == temporaries
    finally:
        child.kill()
        child.communicate(timeout=10)
    saver.restore(sess, prefix)
    assert sess.run(v).tolist() == [0.0, 0.0]
