"""Tests for adplace/lib/io/file_io.py through tf.gfile and tf.io.gfile: TF's GFile semantics (lazy opening, modes,
read(n), lines, seek/tell), the file-system functions on plain paths and file:// URLs, and TF's error classes."""
import errno
import os

import pytest

import adplace as tf
from adplace.lib.io import file_io

gfile, io_gfile = tf.gfile, tf.io.gfile


@pytest.fixture
def tree(tmp_path):
    """tmp/a.txt, tmp/s/f2, tmp/s/t/f1."""
    (tmp_path / "a.txt").write_text("alpha\nbeta\n")
    (tmp_path / "s" / "t").mkdir(parents=True)
    (tmp_path / "s" / "f2").write_text("two")
    (tmp_path / "s" / "t" / "f1").write_text("one")
    return tmp_path


def test_namespaces_have_tf_names():
    for name in ("Copy", "DeleteRecursively", "Exists", "FastGFile", "GFile", "Glob", "IsDirectory", "ListDirectory",
                 "MakeDirs", "MkDir", "Open", "Remove", "Rename", "Stat", "Walk"):
        assert callable(getattr(gfile, name)), name
    for name in ("GFile", "copy", "exists", "get_registered_schemes", "glob", "isdir", "join", "listdir",
                 "makedirs", "mkdir", "remove", "rename", "rmtree", "stat", "walk"):
        assert callable(getattr(io_gfile, name)), name
    assert gfile.Open is gfile.GFile and io_gfile.GFile is gfile.GFile


def test_write_mode_opens_the_file_at_the_first_write(tmp_path):
    path = str(tmp_path / "x.txt")
    f = gfile.GFile(path, "w")
    f.close()
    assert not os.path.exists(path)
    with gfile.GFile(path, "w") as f:
        f.write("héllo\n")
        f.write(b"bytes\n")
        assert f.tell() == len("héllo\n".encode()) + 6
    assert open(path, "rb").read() == "héllo\nbytes\n".encode()


def test_text_and_binary_reads(tree):
    path = str(tree / "a.txt")
    assert gfile.GFile(path).read() == "alpha\nbeta\n"
    assert gfile.GFile(path, "rb").read() == b"alpha\nbeta\n"
    f = gfile.GFile(path)
    assert f.read(3) == "alp" and f.tell() == 3
    assert f.readline() == "ha\n"
    assert f.readlines() == ["beta\n"]
    assert f.read() == "" and f.readline() == ""
    assert list(gfile.GFile(path, "rb")) == [b"alpha\n", b"beta\n"]
    assert gfile.GFile(path).size() == 11


def test_seek_from_start_current_and_end(tree):
    f = gfile.GFile(str(tree / "a.txt"), "rb")
    f.seek(6)
    assert f.read(2) == b"be"
    f.seek(1, 1)
    assert f.read(1) == b"a"
    f.seek(-3, 2)
    assert f.read() == b"ta\n"
    f.seek(position=0)
    assert f.read(1) == b"a"
    with pytest.raises(tf.errors.InvalidArgumentError, match="negative position: -1"):
        f.seek(-1)
    with pytest.raises(tf.errors.InvalidArgumentError, match="Invalid whence argument: 3"):
        f.seek(0, 3)
    with pytest.raises(TypeError):
        f.seek()


def test_modes(tree):
    path = str(tree / "a.txt")
    with gfile.GFile(path, "a") as f:
        f.write("gamma\n")
    assert gfile.GFile(path).read() == "alpha\nbeta\ngamma\n"
    with gfile.GFile(path, "r+") as f:  # as TF: r+ writes truncate
        f.write("ZZ")
    assert gfile.GFile(path).read() == "ZZ"
    with pytest.raises(tf.errors.InvalidArgumentError, match="mode is not 'r' or 'w'"):
        gfile.GFile(path, "x")
    with pytest.raises(tf.errors.PermissionDeniedError, match="isn't open for writing"):
        gfile.GFile(path, "r").write("x")
    with pytest.raises(tf.errors.PermissionDeniedError, match="isn't open for reading"):
        gfile.GFile(str(tree / "new"), "w").read()
    g = gfile.GFile(path, "wb")
    assert (g.name, g.mode) == (path, "wb")


def test_reading_a_missing_file_fails_at_the_first_read(tmp_path):
    f = gfile.GFile(str(tmp_path / "missing"))
    with pytest.raises(tf.errors.NotFoundError, match="missing; No such file or directory"):
        f.read()
    with pytest.raises(tf.errors.FailedPreconditionError, match="Is a directory"):
        gfile.GFile(str(tmp_path)).read()


def test_file_urls(tree):
    url = "file://" + str(tree)
    assert gfile.Exists(url + "/a.txt") and not gfile.Exists(url + "/nope")
    assert gfile.ListDirectory(url) == ["a.txt", "s"]
    assert gfile.Glob(url + "/*") == [url + "/a.txt", url + "/s"]
    with gfile.GFile(url + "/u.txt", "w") as f:
        f.write("via url")
    assert (tree / "u.txt").read_text() == "via url"
    assert list(gfile.Walk(url + "/s")) == [(url + "/s", ["t"], ["f2"]), (url + "/s/t", [], ["f1"])]
    assert io_gfile.join("file:///a", "b") == "file:///a/b"


def test_other_file_systems_are_unimplemented():
    with pytest.raises(tf.errors.UnimplementedError, match="File system scheme 'gs' not implemented"):
        gfile.Exists("gs://bucket/x")


def test_exists_isdir_stat(tree):
    assert gfile.Exists(str(tree)) and gfile.IsDirectory(str(tree))
    assert not gfile.IsDirectory(str(tree / "a.txt")) and not gfile.IsDirectory(str(tree / "nope"))
    info = gfile.Stat(str(tree / "a.txt"))
    assert (info.length, info.is_directory) == (11, False)
    assert info.mtime_nsec == os.stat(tree / "a.txt").st_mtime_ns
    assert io_gfile.stat(str(tree)).is_directory
    with pytest.raises(tf.errors.NotFoundError):
        gfile.Stat(str(tree / "nope"))


def test_directories(tree):
    gfile.MakeDirs(str(tree / "m" / "n"))
    gfile.MakeDirs(str(tree / "m" / "n"))  # existing: fine
    gfile.MkDir(str(tree / "m"))
    assert gfile.IsDirectory(str(tree / "m" / "n"))
    with pytest.raises(tf.errors.NotFoundError):
        gfile.MkDir(str(tree / "x" / "y"))
    with pytest.raises(tf.errors.FailedPreconditionError, match="a.txt is not a directory"):
        gfile.MakeDirs(str(tree / "a.txt" / "sub"))
    with pytest.raises(tf.errors.NotFoundError, match="Could not find directory"):
        gfile.ListDirectory(str(tree / "a.txt"))
    assert io_gfile.listdir(str(tree)) == ["a.txt", "m", "s"]


def test_remove_and_delete_recursively(tree):
    with pytest.raises(tf.errors.NotFoundError, match="No such file"):
        gfile.Remove(str(tree / "nope"))
    with pytest.raises(tf.errors.FailedPreconditionError, match="Is a directory"):
        gfile.Remove(str(tree / "s"))
    gfile.Remove(str(tree / "a.txt"))
    assert not (tree / "a.txt").exists()
    with pytest.raises(tf.errors.NotFoundError, match="not found"):
        gfile.DeleteRecursively(str(tree / "nope"))
    gfile.DeleteRecursively(str(tree / "s"))
    assert not (tree / "s").exists()


def test_copy_and_rename(tree):
    src, dst = str(tree / "a.txt"), str(tree / "s" / "f2")
    with pytest.raises(tf.errors.AlreadyExistsError):
        gfile.Copy(src, dst)
    assert (tree / "s" / "f2").read_text() == "two"
    gfile.Copy(src, dst, overwrite=True)
    assert (tree / "s" / "f2").read_text() == "alpha\nbeta\n"
    assert sorted(os.listdir(tree / "s")) == ["f2", "t"]  # no temporary file left behind
    with pytest.raises(tf.errors.NotFoundError):
        gfile.Copy(str(tree / "nope"), str(tree / "z"))
    with pytest.raises(tf.errors.FailedPreconditionError, match="Is a directory"):
        gfile.Copy(src, str(tree / "s"), overwrite=True)
    with pytest.raises(tf.errors.AlreadyExistsError):
        gfile.Rename(dst, src)
    io_gfile.rename(dst, str(tree / "moved"))
    assert (tree / "moved").exists() and not (tree / "s" / "f2").exists()
    gfile.Rename(str(tree / "moved"), src, overwrite=True)
    assert (tree / "a.txt").read_text() == "alpha\nbeta\n"
    with pytest.raises(tf.errors.NotFoundError):
        gfile.Rename(str(tree / "nope"), str(tree / "z"))


def test_glob(tree):
    root = str(tree)
    assert gfile.Glob(root + "/*") == [root + "/a.txt", root + "/s"]
    assert gfile.Glob(root + "/*/*") == [root + "/s/f2", root + "/s/t"]
    assert gfile.Glob(root + "/s/f?") == [root + "/s/f2"]
    assert gfile.Glob(root + "/s/[^t]*") == [root + "/s/f2"]
    assert gfile.Glob(root + "/a.txt") == [root + "/a.txt"]
    assert gfile.Glob(root + "/nope/*") == []
    assert gfile.Glob([root + "/s/*", root + "/*.txt"]) == [root + "/s/f2", root + "/s/t", root + "/a.txt"]
    assert "/tmp" in gfile.Glob("/*") and "/tmp" in gfile.Glob("/t?p")
    (tree / ".hidden").write_text("")
    assert root + "/.hidden" in gfile.Glob(root + "/*")  # TF's glob matches dot files


def test_walk(tree):
    root = str(tree)
    assert list(gfile.Walk(root)) == [(root, ["s"], ["a.txt"]), (root + "/s", ["t"], ["f2"]),
                                      (root + "/s/t", [], ["f1"])]
    assert [d for d, _, _ in gfile.Walk(root, in_order=False)] == [root + "/s/t", root + "/s", root]
    assert list(gfile.Walk(root + "/nope")) == []
    errors_seen = []
    assert list(io_gfile.walk(root + "/nope", onerror=errors_seen.append)) == []
    assert isinstance(errors_seen[0], tf.errors.NotFoundError)


def test_os_errors_map_to_tf_classes():
    assert isinstance(file_io.os_error(PermissionError(errno.EACCES, "Permission denied"), "/p"),
                      tf.errors.PermissionDeniedError)
    assert str(file_io.os_error(FileNotFoundError(errno.ENOENT, "No such file or directory"), b"/q")) == \
        "/q; No such file or directory"
    assert isinstance(file_io.os_error(OSError(errno.EIO, "I/O error"), "/r"), tf.errors.UnknownError)


def test_permission_denied_is_reported(tmp_path, monkeypatch):
    def denied(*args, **kwargs):
        raise PermissionError(errno.EACCES, "Permission denied")
    monkeypatch.setattr("builtins.open", denied)
    with pytest.raises(tf.errors.PermissionDeniedError, match="x.txt; Permission denied"):
        gfile.GFile(str(tmp_path / "x.txt"), "w").write("data")


def test_atomic_write_and_read_whole_files(tmp_path):
    path = str(tmp_path / "w.txt")
    file_io.atomic_write_string_to_file(path, "first")
    file_io.atomic_write_string_to_file(path, b"second")
    assert file_io.read_file_to_string(path) == "second"
    assert file_io.read_file_to_string(path, binary_mode=True) == b"second"
    assert os.listdir(tmp_path) == ["w.txt"]
    with pytest.raises(tf.errors.AlreadyExistsError):
        file_io.atomic_write_string_to_file(path, "third", overwrite=False)
    assert file_io.read_file_to_string(path) == "second" and os.listdir(tmp_path) == ["w.txt"]
