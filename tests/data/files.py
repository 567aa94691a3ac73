"""The input files of pipelines.py, written the same way for both runs."""
import gzip
import os
import struct
import zlib


def _masked_crc(data: bytes) -> int:
    from adplace.lib.io import crc
    return crc.mask(crc.crc32c(data))


def _record(data: bytes) -> bytes:
    length = struct.pack("<Q", len(data))
    return length + struct.pack("<I", _masked_crc(length)) + data + struct.pack("<I", _masked_crc(data))


def write(d: str) -> None:
    for k in range(3):
        with open(os.path.join(d, f"lines_{k}.txt"), "w") as f:
            f.write("header\n" + "".join(f"file{k} line{i}\n" for i in range(k + 1)))
    with open(os.path.join(d, "crlf.txt"), "wb") as f:
        f.write(b"one\r\ntwo\n\nlast without newline")
    with gzip.open(os.path.join(d, "lines.gz"), "wb") as f:
        f.write(b"zipped 1\nzipped 2\n")
    with open(os.path.join(d, "a.tfrecord"), "wb") as f:
        f.write(b"".join(_record(r) for r in (b"r0", b"", b"r2" * 50)))
    with open(os.path.join(d, "b.tfrecord.zlib"), "wb") as f:
        f.write(zlib.compress(b"".join(_record(r) for r in (b"z0", b"z1"))))
    with open(os.path.join(d, "fixed.bin"), "wb") as f:
        f.write(b"HH" + bytes(range(9)) + b"F")  # a header, 3 records of 3 bytes, a footer
    for k in range(2):
        with open(os.path.join(d, f"data_{k}.csv"), "w") as f:
            f.write("x,header,line\n" + "".join(f"{k}.5,{i}.25,{k * 10 + i}\n" for i in range(5)))
