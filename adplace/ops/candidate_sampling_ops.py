"""Candidate samplers for sampled losses (TF's candidate_sampling_ops.py): stateful random ops seeded like every
random op (graph seed + op seed), with CPU kernels only, as in TF, and ComputeAccidentalHits.

Each sampler returns (sampled_candidates int64 [num_sampled], true_expected_count float32 [batch, num_true],
sampled_expected_count float32 [num_sampled]); an expected count is how often a class is expected among the draws
(with `unique`, among the draws it took to find num_sampled distinct classes).

    sampled, true_count, sampled_count = tf.nn.log_uniform_candidate_sampler(labels, 1, 64, True, 50000, seed=7)
"""
from __future__ import annotations

from adplace.framework import dtypes as _dtypes
from adplace.framework.conversion import convert_to_tensor
from adplace.framework.default_graph import get_seed
from adplace.framework.operation import Tensor
from adplace.framework.registry import NotDifferentiable, register_op
from adplace.framework.tensor_shape import TensorShape
from adplace.ops.op_builder import apply_op, shapes_text

SAMPLER_OPS = ("UniformCandidateSampler", "LogUniformCandidateSampler", "FixedUnigramCandidateSampler")


def _true_classes(op_type: str, true_classes) -> Tensor:
    """The int64 [batch, num_true] input; a Tensor of another dtype is TF's TypeError."""
    if isinstance(true_classes, Tensor) and true_classes.dtype.base_dtype is not _dtypes.int64:
        raise TypeError(f"Input 'true_classes' of '{op_type}' Op has type {true_classes.dtype.base_dtype.name} that "
                        f"does not match expected type of int64.")
    return convert_to_tensor(true_classes, dtype=_dtypes.int64, name="true_classes")


def _check_true_classes(op_type: str, name: str, inputs, num_true: int) -> int | None:
    """The batch size from true_classes [batch, num_true], checked as TF's shape functions do."""
    dims = inputs[0]._shape.as_tuple()
    if dims is None:
        return None
    if len(dims) != 2:
        raise ValueError(f"Shape must be rank 2 but is rank {len(dims)} for '{name}' (op: '{op_type}') with input "
                         f"shapes: {shapes_text(inputs)}.")
    if dims[1] is not None and dims[1] != num_true:
        raise ValueError(f"Dimension 1 in both shapes must be equal, but are {dims[1]} and {num_true}. Shapes are "
                         f"{shapes_text(inputs[:1])} and [?,{num_true}]. for '{name}' (op: '{op_type}')")
    return dims[0]


def _sampler_infer(op_type: str):
    def infer(inputs, attrs, name):
        for attr in ("num_true", "num_sampled", "range_max"):
            if attrs[attr] < 1:
                raise ValueError(f"Value for attr '{attr}' of {attrs[attr]} must be at least minimum 1 for '{name}' "
                                 f"(op: '{op_type}')")
        batch = _check_true_classes(op_type, name, inputs, attrs["num_true"])
        n = attrs["num_sampled"]
        return [(_dtypes.int64, TensorShape([n])), (_dtypes.float32, TensorShape([batch, attrs["num_true"]])),
                (_dtypes.float32, TensorShape([n]))]
    return infer


for _op_type in SAMPLER_OPS:
    register_op(_op_type, _sampler_infer(_op_type), is_stateful=True)
    NotDifferentiable(_op_type)


def _sampler(op_type: str, true_classes, num_true, num_sampled, unique, range_max, seed, name, **attrs):
    seed1, seed2 = get_seed(seed)
    true_classes = _true_classes(op_type, true_classes)
    op = apply_op(op_type, [true_classes], {"num_true": int(num_true), "num_sampled": int(num_sampled),
                                            "unique": bool(unique), "range_max": int(range_max),
                                            "seed": seed1 or 0, "seed2": seed2 or 0, **attrs}, name=name or op_type)
    return tuple(op._outputs)


def uniform_candidate_sampler(true_classes, num_true: int, num_sampled: int, unique: bool, range_max: int, seed=None,
                              name: str | None = None) -> tuple[Tensor, Tensor, Tensor]:
    """`num_sampled` classes drawn uniformly from [0, range_max) (tf.nn.uniform_candidate_sampler); distinct when
    `unique`. Returns (sampled_candidates, true_expected_count, sampled_expected_count)."""
    return _sampler("UniformCandidateSampler", true_classes, num_true, num_sampled, unique, range_max, seed, name)


def log_uniform_candidate_sampler(true_classes, num_true: int, num_sampled: int, unique: bool, range_max: int,
                                  seed=None, name: str | None = None) -> tuple[Tensor, Tensor, Tensor]:
    """`num_sampled` classes from the Zipfian P(k) = log((k + 2) / (k + 1)) / log(range_max + 1), for classes
    sorted by decreasing frequency (tf.nn.log_uniform_candidate_sampler). Returns as uniform_candidate_sampler."""
    return _sampler("LogUniformCandidateSampler", true_classes, num_true, num_sampled, unique, range_max, seed, name)


def fixed_unigram_candidate_sampler(true_classes, num_true: int, num_sampled: int, unique: bool, range_max: int,
                                    vocab_file: str = "", distortion: float = 1.0, num_reserved_ids: int = 0,
                                    num_shards: int = 1, shard: int = 0, unigrams=(), seed=None,
                                    name: str | None = None) -> tuple[Tensor, Tensor, Tensor]:
    """Classes drawn with probability proportional to unigram_count ** distortion (tf.nn.fixed_unigram_candidate_sampler).

    The counts come from `unigrams` or from `vocab_file` (CSV lines whose last field is the count); the first
    `num_reserved_ids` ids are never drawn. Only num_shards=1 is supported.
    """
    if num_shards != 1 or shard != 0:
        raise NotImplementedError(f"fixed_unigram_candidate_sampler with num_shards={num_shards}, shard={shard}: "
                                  f"only one shard is supported; sample the whole vocabulary")
    if bool(vocab_file) == bool(len(unigrams)):
        raise ValueError("Must provide either vocab_file or unigrams, but not both" if vocab_file else
                         "Must provide either vocab_file or unigrams")
    if vocab_file:
        with open(vocab_file) as f:
            unigrams = [float(line.rsplit(",", 1)[-1]) for line in f if line.strip()]
    if num_reserved_ids + len(unigrams) != range_max:
        raise ValueError(f"range_max ({range_max}) must equal the number of unigrams ({len(unigrams)}) plus "
                         f"num_reserved_ids ({num_reserved_ids})")
    return _sampler("FixedUnigramCandidateSampler", true_classes, num_true, num_sampled, unique, range_max, seed,
                    name, distortion=float(distortion), num_reserved_ids=int(num_reserved_ids),
                    unigrams=[float(u) for u in unigrams])


# --- ComputeAccidentalHits ------------------------------------------------------------------------------------------
def _accidental_hits_infer(inputs, attrs, name):
    _check_true_classes("ComputeAccidentalHits", name, inputs, attrs["num_true"])
    sampled = inputs[1]._shape.as_tuple()
    if sampled is not None and len(sampled) != 1:
        raise ValueError(f"Shape must be rank 1 but is rank {len(sampled)} for '{name}' (op: 'ComputeAccidentalHits')"
                         f" with input shapes: {shapes_text(inputs)}.")
    hits = TensorShape([None])
    return [(_dtypes.int32, hits), (_dtypes.int64, hits), (_dtypes.float32, hits)]


register_op("ComputeAccidentalHits", _accidental_hits_infer)
NotDifferentiable("ComputeAccidentalHits")


def compute_accidental_hits(true_classes, sampled_candidates, num_true: int, seed=None,
                            name: str | None = None) -> tuple[Tensor, Tensor, Tensor]:
    """Where a sampled candidate equals one of a row's true classes (tf.nn.compute_accidental_hits).

    Returns (indices int32: the row, ids int64: the position in sampled_candidates, weights float32: -FLT_MAX),
    one entry per hit, to be added to the sampled logits so that hits drop out of the loss.
    """
    seed1, seed2 = get_seed(seed)
    true_classes = _true_classes("ComputeAccidentalHits", true_classes)
    sampled = convert_to_tensor(sampled_candidates, dtype=_dtypes.int64, name="sampled_candidates")
    op = apply_op("ComputeAccidentalHits", [true_classes, sampled], {"num_true": int(num_true), "seed": seed1 or 0,
                                                                     "seed2": seed2 or 0},
                  name=name or "ComputeAccidentalHits")
    return tuple(op._outputs)
