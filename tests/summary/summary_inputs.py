"""The summaries that test_tf_interop.py builds with adplace and tf_summary_peer.py builds with real TensorFlow, on the
same inputs, to compare their serialized protos. Imports neither framework: each side passes its own."""
import numpy as np


def inputs() -> dict:
    rng = np.random.RandomState(0)
    return {"values": (rng.randn(1000) * 3).astype(np.float32),
            "images": np.concatenate([rng.rand(2, 4, 5, 3) * 2 - 0.5,
                                      np.full((1, 4, 5, 3), np.nan)]).astype(np.float32),
            "pixels": rng.randint(0, 256, (2, 3, 3, 4)).astype(np.uint8),
            "clips": (rng.rand(2, 50) * 2.2 - 1.1).astype(np.float32),
            "text": np.array([b"first *line*", b"second"], dtype=object)}


def build(summary, constant) -> list:
    """Summaries of inputs() made with `summary` (tf.compat.v1.summary or adplace's tf.summary) and `constant`."""
    data = inputs()
    return [summary.scalar("loss", constant(data["values"][0])),
            summary.histogram("values", constant(data["values"])),
            summary.image("images", constant(data["images"]), max_outputs=3),
            summary.image("pixels", constant(data["pixels"]), max_outputs=1),
            summary.audio("clips", constant(data["clips"]), 8000, max_outputs=2),
            summary.text("notes", constant(data["text"]))]
