"""TF1's random seeds: the graph-level seed (tf.set_random_seed) and the (graph seed, op seed) pair each random op
gets from it (tf.get_seed), with TF's rules.

    tf.set_random_seed(1)
    a = tf.random_uniform([2])   # seeds (1, op count so far): the same values in every new session and program run
"""
from __future__ import annotations

from adplace.framework.graph import get_default_graph

DEFAULT_GRAPH_SEED = 87654321
_MAXINT32 = 2**31 - 1


def _truncate_seed(seed: int) -> int:
    return seed % _MAXINT32  # the kernels take 32-bit seeds


def get_seed(op_seed) -> tuple:
    """The (graph seed, op seed) pair of a random op about to be built in the default graph (tf.get_seed).

    - graph seed set, op seed None: the op seed is the graph's op count so far (TF's graph._last_id), so each op
      has its own stream and a rebuilt graph the same ones;
    - graph seed None, op seed set: the graph seed is DEFAULT_GRAPH_SEED;
    - both None: (None, None), nondeterministic.
    (0, 0) becomes (0, 2**31 - 1), since the kernels read (0, 0) as "nondeterministic". adplace has no eager mode,
    so the eager global seed of TF2 plays no part.
    """
    graph = get_default_graph()
    if graph.seed is not None:
        seeds = _truncate_seed(graph.seed), _truncate_seed(len(graph._ops) if op_seed is None else op_seed)
    elif op_seed is not None:
        seeds = DEFAULT_GRAPH_SEED, _truncate_seed(op_seed)
    else:
        seeds = None, None
    return (0, _MAXINT32) if seeds == (0, 0) else seeds


def set_random_seed(seed) -> None:
    """Set the default graph's seed (tf.set_random_seed): every random op built afterwards gets a reproducible
    stream. None clears it."""
    get_default_graph().seed = seed
