"""Sparse updates benchmark: one embedding training step (256 ids into a [rows, 64] float32 table) in adplace against
the same update in hand-written NumPy, in place (what TF's CPU kernels do) and copy-then-update (what adplace does).

    python benchmarks/sparse_updates.py            # full run, writes results/sparse_updates.json
    python benchmarks/sparse_updates.py --quick    # smoke run: small tables, few samples (JSON to $TMPDIR)

Rows: for each table size and optimizer (GradientDescent: ScatterSub; Adagrad: SparseApplyAdagrad on deduplicated
rows), one `sess.run(train, {ids: ...})` of `minimize(reduce_sum(embedding_lookup(table, ids)))`. NumPy in place:
`np.subtract.at` of the gradient rows (Adagrad: the accumulator rows too). NumPy copy: the same after copying the
table (and accumulator), what adplace must pay when a fetched value or another step holds the stored array; here
nothing does, so adplace writes the rows in place. Medians of interleaved samples; nothing here asserts a time.
"""
from __future__ import annotations

import datetime
import sys

import numpy as np

import adplace as tf

try:  # run as a script (benchmarks/ is sys.path[0]) or imported as benchmarks.sparse_updates
    from dispatch import _fmt_time, _sources_digest, compare, machine_info, parse_args, print_table, source_info, \
        write_results
except ImportError:  # pragma: no cover - the package-style import
    from benchmarks.dispatch import (_fmt_time, _sources_digest, compare, machine_info, parse_args, print_table,
                                     source_info, write_results)

BATCH, WIDTH, LR = 256, 64, 0.1


def _numpy_step(optimizer: str, copy: bool):
    """The hand-written update of `state` (table, accumulator) for ids, in place or on copies."""
    def step(state, ids):
        table, accum = state
        if copy:
            table = table.copy()
        if optimizer == "sgd":
            np.subtract.at(table, ids, np.full((len(ids), WIDTH), LR, np.float32))
        else:
            rows, counts = np.unique(ids, return_counts=True)
            grad = np.repeat(counts[:, None].astype(np.float32), WIDTH, axis=1)
            if copy:
                accum = accum.copy()
            accum[rows] += grad * grad
            table[rows] -= LR * grad / np.sqrt(accum[rows])
        state[:] = [table, accum]
    return step


def run_case(rows: int, optimizer: str, samples: int) -> dict:
    graph = tf.Graph()
    with graph.as_default():
        table = tf.Variable(np.zeros((rows, WIDTH), np.float32), name="table")
        ids = tf.placeholder(tf.int32, [BATCH], name="ids")
        opt = tf.train.GradientDescentOptimizer(LR) if optimizer == "sgd" else tf.train.AdagradOptimizer(LR)
        train = opt.minimize(tf.reduce_sum(tf.nn.embedding_lookup(table, ids)))
        init = tf.global_variables_initializer()
    feed_ids = np.random.default_rng(0).integers(0, rows, BATCH).astype(np.int32)
    with tf.Session(graph=graph) as sess:
        sess.run(init)
        state_in_place = [np.zeros((rows, WIDTH), np.float32), np.full((rows, WIDTH), 0.1, np.float32)]
        state_copy = [a.copy() for a in state_in_place]
        in_place, copying = _numpy_step(optimizer, False), _numpy_step(optimizer, True)
        times = compare(lambda: sess.run(train, {ids: feed_ids}),
                        {"numpy_in_place": lambda: in_place(state_in_place, feed_ids),
                         "numpy_copy": lambda: copying(state_copy, feed_ids)}, samples, calls=3)
    median = times["median_us"]
    return {"rows": rows, "optimizer": optimizer, **{f"{k}_us": v for k, v in median.items()},
            "ratio_in_place": median["adplace"] / median["numpy_in_place"],
            "ratio_copy": median["adplace"] / median["numpy_copy"]}


def main(argv=None) -> dict:
    args = parse_args(argv, "sparse_updates", __doc__.split("\n")[0], "small tables, few samples")
    sizes, samples = ((10_000, 100_000), 3) if args.quick else ((10_000, 100_000, 1_000_000), 9)
    digest = _sources_digest(tf.__path__[0])
    cases = [run_case(rows, optimizer, samples) for rows in sizes for optimizer in ("sgd", "adagrad")]
    print_table(["table rows", "optimizer", "adplace", "NumPy in place", "NumPy copy", "/ in place", "/ copy"],
                [[f"{c['rows']:,}", c["optimizer"], _fmt_time(c["adplace_us"]), _fmt_time(c["numpy_in_place_us"]),
                  _fmt_time(c["numpy_copy_us"]), f"{c['ratio_in_place']:.1f}x", f"{c['ratio_copy']:.2f}x"]
                 for c in cases])
    source = source_info()
    source["sources_sha1_at_start"] = digest
    results = {"benchmark": "sparse_updates", "date": datetime.datetime.now().isoformat(timespec="seconds"),
               "machine": machine_info(), "adplace_source": source, "quick": args.quick, "samples": samples,
               "batch": BATCH, "width": WIDTH, "cases": cases}
    write_results(results, args.out)
    return results


if __name__ == "__main__":
    main(sys.argv[1:])
