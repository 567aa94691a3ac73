"""tf.data.experimental (also tf.contrib.data): the names TF1 scripts use from it, as compositions of Dataset's own
transformations (TF fuses some of them into single ops; the elements are the same)."""
from __future__ import annotations

from typing import Callable

from adplace.data.dataset_ops import AUTOTUNE, Dataset


def make_one_shot_iterator(dataset: Dataset):
    return dataset.make_one_shot_iterator()


def make_initializable_iterator(dataset: Dataset, shared_name: str | None = None):
    return dataset.make_initializable_iterator(shared_name)


def get_single_element(dataset: Dataset):
    """The only element of `dataset` (tf.data.experimental.get_single_element): a one-shot iterator's first."""
    return dataset.make_one_shot_iterator().get_next()


def map_and_batch(map_func: Callable, batch_size, num_parallel_batches=None, drop_remainder: bool = False,
                  num_parallel_calls=None) -> Callable[[Dataset], Dataset]:
    """For Dataset.apply: map, then batch."""
    if num_parallel_batches is not None and num_parallel_calls is not None:
        raise ValueError("`num_parallel_batches` and `num_parallel_calls` are mutually exclusive.")
    parallel = num_parallel_calls if num_parallel_batches is None else num_parallel_batches * batch_size
    return lambda dataset: dataset.map(map_func, parallel).batch(batch_size, drop_remainder)


def shuffle_and_repeat(buffer_size, count=None, seed=None) -> Callable[[Dataset], Dataset]:
    """For Dataset.apply: shuffle (a new order each epoch), then repeat."""
    return lambda dataset: dataset.shuffle(buffer_size, seed).repeat(count)


def parallel_interleave(map_func: Callable, cycle_length, block_length: int = 1, sloppy: bool = False,
                        buffer_output_elements=None, prefetch_input_elements=None) -> Callable[[Dataset], Dataset]:
    """For Dataset.apply: interleave with cycle_length parallel calls (in the deterministic order)."""
    del sloppy, buffer_output_elements, prefetch_input_elements
    return lambda dataset: dataset.interleave(map_func, cycle_length, block_length, num_parallel_calls=cycle_length)


def unbatch() -> Callable[[Dataset], Dataset]:
    return lambda dataset: dataset.unbatch()


__all__ = ["AUTOTUNE", "get_single_element", "make_initializable_iterator", "make_one_shot_iterator",
           "map_and_batch", "parallel_interleave", "shuffle_and_repeat", "unbatch"]
