"""Real TensorFlow's side of the TFRecord interop tests, run in a subprocess by tests/tf_peer.py's run_peer:

    tf_record_peer.py DIR RECORDS_FILE

reads DIR/adplace_{NONE,ZLIB,GZIP}.tfrecord (written by adplace) with TF's tf_record_iterator, writes the records of
RECORDS_FILE (JSON list of hex strings) to DIR/tf_{NONE,ZLIB,GZIP}.tfrecord with TF's TFRecordWriter, and prints
a JSON object {compression: [hex records TF read]}.
"""
import json
import os
import sys

import tensorflow as tf

KINDS = {"NONE": "", "ZLIB": "ZLIB", "GZIP": "GZIP"}


def main(directory: str, records_file: str) -> None:
    with open(records_file) as f:
        records = [bytes.fromhex(r) for r in json.load(f)]
    read = {}
    for kind, compression in KINDS.items():
        options = tf.io.TFRecordOptions(compression_type=compression)
        path = os.path.join(directory, f"adplace_{kind}.tfrecord")
        read[kind] = [r.hex() for r in tf.compat.v1.io.tf_record_iterator(path, options)]
        with tf.io.TFRecordWriter(os.path.join(directory, f"tf_{kind}.tfrecord"), options) as writer:
            for record in records:
                writer.write(record)
    print(json.dumps(read))


if __name__ == "__main__":
    main(*sys.argv[1:])
