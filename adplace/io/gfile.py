"""tf.io.gfile: TF2's snake_case file-system names (exists, glob, walk, GFile, ...) over adplace.lib.io.file_io.

    tf.io.gfile.makedirs("/tmp/run"); tf.io.gfile.glob("/tmp/run/*.txt")
"""
from adplace.lib.io.file_io import (GFile, copy, exists, get_registered_schemes, glob, isdir, join, listdir, makedirs,
                                    mkdir, remove, rename, rmtree, stat, walk)

__all__ = ["GFile", "copy", "exists", "get_registered_schemes", "glob", "isdir", "join", "listdir", "makedirs",
           "mkdir", "remove", "rename", "rmtree", "stat", "walk"]
