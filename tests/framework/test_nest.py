"""framework/nest.flatten: the one structure walk feeds and gradients share (TF's nest.flatten order)."""
from adplace.framework.nest import flatten


def test_flatten_walks_lists_and_tuples_in_order_and_dicts_by_sorted_key():
    assert flatten((1, [2, {"y": 4, "x": (3,)}], ())) == [1, 2, 3, 4]
    assert flatten("leaf") == ["leaf"] and flatten({}) == [] and flatten(None) == [None]
