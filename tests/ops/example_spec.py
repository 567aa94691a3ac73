"""Examples from a JSON-friendly spec, for adplace's tests and for the real-TF peer (which imports this file from its
own directory): `example(tf, spec)` builds a tf.train.Example of whichever `tf` module it is given."""


def example(tf, spec: dict):
    """An Example from {key: [kind, values]} (kind "bytes" with hex values, "float", "int64", or "none")."""
    features = {}
    for key, (kind, values) in spec.items():
        if kind == "bytes":
            features[key] = tf.train.Feature(bytes_list=tf.train.BytesList(value=[bytes.fromhex(v) for v in values]))
        elif kind == "float":
            features[key] = tf.train.Feature(float_list=tf.train.FloatList(value=values))
        elif kind == "int64":
            features[key] = tf.train.Feature(int64_list=tf.train.Int64List(value=values))
        else:
            features[key] = tf.train.Feature()
    return tf.train.Example(features=tf.train.Features(feature=features))
