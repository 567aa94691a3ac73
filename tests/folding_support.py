"""Plan-pass tests' shared pieces: a session config with constant folding off (the unoptimised path optimised plans
are checked against) and trace node names without a copy's step number."""
import re

import adplace as tf


def unfolded_config(**kwargs) -> tf.ConfigProto:
    """A ConfigProto (of `kwargs`) whose RewriterConfig turns constant folding off."""
    config = tf.ConfigProto(**kwargs)
    config.graph_options.rewrite_options.constant_folding = tf.RewriterConfig.OFF
    return config


def unnumbered(name: str) -> str:
    """A node name without the step number a copy's node carries (`flipped/_6`)."""
    return re.sub(r"/_\d+$", "/_", name)
