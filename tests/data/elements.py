"""Running a dataset to its end with either `tf` module, and elements as JSON (bytes as text, arrays as lists)."""
import numpy as np


def drain(tf, dataset, limit: int = 1000) -> list:
    """Every element of `dataset` through a one-shot iterator, until OutOfRangeError (at most `limit`)."""
    element = tf.data.make_one_shot_iterator(dataset).get_next() if hasattr(tf.data, "make_one_shot_iterator") \
        else dataset.make_one_shot_iterator().get_next()
    out = []
    with tf.Session() as sess:
        for _ in range(limit):
            try:
                out.append(sess.run(element))
            except tf.errors.OutOfRangeError:
                break
    return out


def to_json(value):
    if isinstance(value, dict):
        return {str(k): to_json(v) for k, v in sorted(value.items())}
    if isinstance(value, (list, tuple)):
        return [to_json(v) for v in value]
    if isinstance(value, bytes):
        return value.decode("latin-1")
    array = np.asarray(value)
    if array.dtype == object or array.dtype.kind == "S":
        return to_json(array.tolist())
    return {"dtype": array.dtype.name, "value": array.tolist()}
