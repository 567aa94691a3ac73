"""Real TensorFlow's side of the checkpoint interop tests (test_checkpoint_interop.py), run in a subprocess so that
TF never enters the pytest process. Prints one JSON object on stdout.

    python tf_checkpoint_peer.py save PREFIX      # TF1 Saver saves VARIABLES (one partitioned) at PREFIX
    python tf_checkpoint_peer.py read PREFIX      # TF's NewCheckpointReader: name -> dtype, shape, values
    python tf_checkpoint_peer.py restore PREFIX   # TF1 Saver restores VARIABLES (another partitioning): values
    python tf_checkpoint_peer.py state DIR        # TF's reading of DIR's `checkpoint` state file
"""
import json
import os
import sys

import numpy as np

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

# name -> (dtype name, value); "part" is also created as a partitioned variable
VARIABLES = {
    "dense/kernel": ("float32", np.arange(12, dtype=np.float32).reshape(3, 4) / 7),
    "dense/bias": ("float64", np.array([1e-300, -2.5, np.pi])),
    "scalar": ("float32", np.float32(42.5)),
    "step": ("int64", np.int64(2**40 + 3)),
    "counts": ("int32", np.array([[1, -2], [3, 2**31 - 1]], np.int32)),
    "flags": ("bool", np.array([True, False, True])),
    "half": ("float16", np.array([0.5, -65504.0], np.float16)),
    "cplx": ("complex64", np.array([1 + 2j, -3.5j], np.complex64)),
    "bytes_u8": ("uint8", np.array([0, 255, 7], np.uint8)),
    "words": ("string", np.array([b"alpha", b"", "\u03bb".encode(), b"\x00\xff"], dtype=object)),
    "empty": ("float32", np.zeros([0, 3], np.float32)),
    "part": ("float32", np.arange(14, dtype=np.float32).reshape(7, 2) - 3),
}


def encode(value: np.ndarray) -> list:
    """A JSON-able flat list of the value's elements (complex as [re, im], bytes as latin-1 text)."""
    flat = np.asarray(value).reshape(-1)
    if flat.dtype == object:
        return [bytes(v).decode("latin-1") for v in flat]
    if np.iscomplexobj(flat):
        return [[float(v.real), float(v.imag)] for v in flat]
    if flat.dtype == np.bool_:
        return [bool(v) for v in flat]
    return [float(v) if flat.dtype.kind == "f" else int(v) for v in flat.tolist()]


def _graph(tf, initial: bool, parts: int):
    variables = {}
    for name, (dtype, value) in VARIABLES.items():
        init = value if initial else np.zeros_like(value) if dtype != "string" else np.array([b""] * value.size,
                                                                                           dtype=object)
        if name == "part":
            variables[name] = tf.compat.v1.get_variable(name, shape=value.shape, dtype=tf.as_dtype(dtype),
                                                        initializer=tf.compat.v1.zeros_initializer(),
                                                        partitioner=tf.compat.v1.fixed_size_partitioner(parts))
        else:
            variables[name] = tf.compat.v1.Variable(init, dtype=tf.as_dtype(dtype), name=name)
    return variables


def main(mode: str, prefix: str) -> dict:
    import tensorflow as tf
    if mode == "state":
        state = tf.compat.v1.train.get_checkpoint_state(prefix)
        return {"latest": tf.train.latest_checkpoint(prefix), "all": list(state.all_model_checkpoint_paths)}
    if mode == "read":
        reader = tf.compat.v1.train.NewCheckpointReader(prefix)
        dtypes = reader.get_variable_to_dtype_map()
        return {name: {"shape": shape, "dtype": dtypes[name].name, "values": encode(reader.get_tensor(name))}
                for name, shape in reader.get_variable_to_shape_map().items()}
    tf.compat.v1.disable_eager_execution()
    variables = _graph(tf, initial=mode == "save", parts=3 if mode == "save" else 2)
    saver = tf.compat.v1.train.Saver()
    with tf.compat.v1.Session() as sess:
        sess.run(tf.compat.v1.global_variables_initializer())
        if mode == "save":
            for part in variables["part"]:  # each part's block of the full value
                offset, shape = part._save_slice_info.var_offset, part._save_slice_info.var_shape
                part.load(VARIABLES["part"][1][offset[0]:offset[0] + shape[0]], sess)
            saver.save(sess, prefix)
        else:
            saver.restore(sess, prefix)
        values = sess.run({name: (v.as_tensor() if name == "part" else v) for name, v in variables.items()})
    return {name: encode(value) for name, value in values.items()}


if __name__ == "__main__":
    print(json.dumps(main(sys.argv[1], sys.argv[2])))
