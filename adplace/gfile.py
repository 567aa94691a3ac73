"""tf.gfile: TF1's file-system names (GFile, Exists, Glob, Walk, ...) over adplace.lib.io.file_io.

    tf.gfile.MakeDirs("/tmp/run"); tf.gfile.Exists("file:///tmp/run"); tf.gfile.Walk("/tmp/run")
"""
from __future__ import annotations

from typing import Iterator

from adplace.lib.io.file_io import FastGFile, FileStatistics, GFile
from adplace.lib.io.file_io import copy as Copy  # noqa: N812 - TF1's public names
from adplace.lib.io.file_io import exists as Exists  # noqa: N812
from adplace.lib.io.file_io import glob as Glob  # noqa: N812
from adplace.lib.io.file_io import isdir as IsDirectory  # noqa: N812
from adplace.lib.io.file_io import listdir as ListDirectory  # noqa: N812
from adplace.lib.io.file_io import makedirs as MakeDirs  # noqa: N812
from adplace.lib.io.file_io import mkdir as MkDir  # noqa: N812
from adplace.lib.io.file_io import remove as Remove  # noqa: N812
from adplace.lib.io.file_io import rename as Rename  # noqa: N812
from adplace.lib.io.file_io import rmtree as DeleteRecursively  # noqa: N812
from adplace.lib.io.file_io import stat as Stat  # noqa: N812
from adplace.lib.io.file_io import walk as _walk

Open = GFile

__all__ = ["Copy", "DeleteRecursively", "Exists", "FastGFile", "FileStatistics", "GFile", "Glob", "IsDirectory",
           "ListDirectory", "MakeDirs", "MkDir", "Open", "Remove", "Rename", "Stat", "Walk"]


def Walk(top, in_order: bool = True) -> Iterator[tuple[str, list[str], list[str]]]:  # noqa: N802 - TF1's name
    """(directory, subdirectory names, file names) for `top` and every directory under it; parents first when
    `in_order`, else children first."""
    return _walk(top, in_order)
