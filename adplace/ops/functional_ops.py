"""tf.map_fn, tf.scan, tf.foldl and tf.foldr as TF 1.15 builds them: the elements are unstacked into TensorArrays,
a tf.while_loop (named `map/while/...`, `scan/while/...`, `foldl/while/...`) reads one element per iteration and
calls `fn`, and map_fn and scan write each result to a TensorArray that is stacked after the loop. Gradients come
from the while loop's and the TensorArrays' gradients; the graph exports to TF's GraphDef like TF's own.

    squares = tf.map_fn(lambda x: x * x, tf.constant([1.0, 2.0, 3.0]))      # [1, 4, 9]
    sums = tf.scan(lambda a, x: a + x, tf.constant([1, 2, 3]))             # [1, 3, 6]
    total = tf.foldl(lambda a, x: a + x, tf.constant([1, 2, 3]), 10)       # 16
"""
from __future__ import annotations

import contextlib
from typing import Any, Callable

from adplace.framework import nest
from adplace.framework.conversion import convert_to_tensor
from adplace.framework.default_graph import name_scope
from adplace.framework.operation import Tensor
from adplace.framework.tensor_shape import Dimension, TensorShape
from adplace.ops import array_ops
from adplace.ops.constant_op import constant
from adplace.ops.control_flow_v1 import while_loop
from adplace.ops.tensor_array_ops import TensorArray
from adplace.ops.variable_scope import get_variable_scope


# --- what the four share ---------------------------------------------------------------------------------------------
def _check_callable(fn) -> None:
    if not callable(fn):
        raise TypeError("fn must be callable.")


def _flattening(structure) -> tuple[Callable, Callable]:
    """(flatten, pack) for values shaped like `structure`: a lone tensor is a list of one."""
    if nest.is_sequence(structure):
        return nest.flatten, lambda flat: nest.pack_sequence_as(structure, flat)
    return (lambda value: [value]), (lambda flat: flat[0])


@contextlib.contextmanager
def _cached_variable_reads():
    """Variables that `fn` gets with tf.get_variable are read once where the loop runs, not in every iteration
    (TF sets the variable scope's caching device for the loop's construction)."""
    scope = get_variable_scope()
    if scope.caching_device is not None:
        yield
        return
    scope.set_caching_device(lambda op: op.device)
    try:
        yield
    finally:
        scope.set_caching_device(None)


def _elements(elems, elems_flat: list) -> list[Tensor]:
    """The flat elems as tensors named `elem`; ValueError for none and for scalars, as TF words it."""
    if not elems_flat:
        raise ValueError(f"elems must be a Tensor or (possibly nested) sequence of Tensors. Got {elems!r}, which "
                         f"does not contain any Tensors.")
    tensors = [convert_to_tensor(e, name="elem") for e in elems_flat]
    if tensors[0].shape.ndims == 0:
        if len(tensors) == 1:
            raise ValueError("elems must be a 1+ dimensional Tensor, not a scalar")
        raise ValueError("elements in elems must be 1+ dimensional Tensors, not scalars")
    return tensors


def _length(tensors: list[Tensor]):
    """The number of elements: a Python int when the first dimension is known (and not 0), else a tensor."""
    return tensors[0].shape[0].value or array_ops.shape(tensors[0])[0]


def _static_length(tensors: list[Tensor]) -> Dimension:
    """The first dimension all elems share; ValueError where two known ones differ."""
    n = tensors[0].shape.with_rank_at_least(1)[0]
    for t in tensors[1:]:
        n = n.merge_with(t.shape.with_rank_at_least(1)[0])
    return n


def _unstacked(tensor: Tensor, n, element_shape=None) -> TensorArray:
    return TensorArray(dtype=tensor.dtype, size=n, dynamic_size=False, infer_shape=True,
                       element_shape=element_shape).unstack(tensor)


def _stacked(arrays: list[TensorArray], n_static: Dimension) -> list[Tensor]:
    results = [ta.stack() for ta in arrays]
    for r in results:
        r.set_shape(TensorShape([n_static.value]).concatenate(r.shape[1:]))
    return results


# --- map_fn ----------------------------------------------------------------------------------------------------------
def map_fn(fn: Callable, elems, dtype=None, parallel_iterations: int | None = None, back_prop: bool = True,
           swap_memory: bool = False, infer_shape: bool = True, name: str | None = None):
    """`fn` applied to each slice of `elems` along its first dimension, the results stacked (tf.map_fn).

    `elems` may be a nest of tensors sharing their first dimension; `fn` gets the same nest of slices. When `fn`
    returns another structure or other dtypes, `dtype` gives them (a dtype or a nest of dtypes).
    """
    _check_callable(fn)
    from adplace.framework.sparse_tensor import SparseTensor  # noqa: PLC0415 - keep the import graph small
    if isinstance(elems, SparseTensor):
        raise TypeError("To perform a map on the values of a sparse tensor use either  SparseTensor(input.indices, "
                        "fn(input.values), input.dense_shape) or  SparseTensor(input.indices, map_fn(fn, "
                        "input.values), input.dense_shape)")
    parallel_iterations = parallel_iterations or 10
    input_flatten, input_pack = _flattening(elems)
    output_flatten, output_pack = _flattening(elems if dtype is None else dtype)
    elems_flat = input_flatten(elems)
    with name_scope(name, "map", [e for e in elems_flat if isinstance(e, Tensor)]), _cached_variable_reads():
        elems_flat = _elements(elems, elems_flat)
        dtype = dtype if dtype is not None else input_pack([e.dtype for e in elems_flat])
        n_static = _static_length(elems_flat)
        n = _length(elems_flat)
        elems_ta = [_unstacked(e, n) for e in elems_flat]
        i = constant(0)
        accs_ta = [TensorArray(dtype=dt, size=n, dynamic_size=False, infer_shape=infer_shape)
                   for dt in output_flatten(dtype)]

        def compute(i, tas):
            values = fn(input_pack([ta.read(i) for ta in elems_ta]))
            nest.assert_same_structure(dtype, values)
            return i + 1, [ta.write(i, v) for ta, v in zip(tas, output_flatten(values))]

        _, accs_ta = while_loop(lambda i, _: i < n, compute, (i, accs_ta),
                                parallel_iterations=parallel_iterations, back_prop=back_prop,
                                swap_memory=swap_memory, maximum_iterations=n)
        return output_pack(_stacked(accs_ta, n_static))


# --- scan ------------------------------------------------------------------------------------------------------------
def scan(fn: Callable, elems, initializer=None, parallel_iterations: int = 10, back_prop: bool = True,
         swap_memory: bool = False, infer_shape: bool = True, reverse: bool = False, name: str | None = None):
    """The accumulators `a = fn(a, x)` over the slices `x` of `elems`, each one stacked (tf.scan).

    Without `initializer` the first slice (the last one with `reverse`) is the first accumulator and the output
    has the structure of `elems`; with it, the output has the initializer's structure. `reverse` scans last to
    first, and the results keep the order of `elems`.
    """
    _check_callable(fn)
    input_flatten, input_pack = _flattening(elems)
    output_flatten, output_pack = _flattening(elems if initializer is None else initializer)
    elems_flat = input_flatten(elems)
    with name_scope(name, "scan", [e for e in elems_flat if isinstance(e, Tensor)]), _cached_variable_reads():
        elems_flat = _elements(elems, elems_flat)
        n_static = _static_length(elems_flat)
        n = _length(elems_flat)
        elems_ta = [_unstacked(e, n, e.shape[1:]) for e in elems_flat]
        if initializer is None:
            a_flat = [ta.read(n - 1 if reverse else 0) for ta in elems_ta]
            start = 1
        else:
            a_flat = [convert_to_tensor(a) for a in output_flatten(initializer)]
            start = 0
        accs_ta = [TensorArray(dtype=a.dtype, size=n, dynamic_size=False, infer_shape=infer_shape,
                               element_shape=a.shape if infer_shape else None) for a in a_flat]
        if initializer is None:
            accs_ta = [ta.write(n - 1 if reverse else 0, a) for ta, a in zip(accs_ta, a_flat)]

        def compute(i, a_flat, tas):
            a_out = fn(output_pack(a_flat), input_pack([ta.read(i) for ta in elems_ta]))
            nest.assert_same_structure(elems if initializer is None else initializer, a_out)
            flat = output_flatten(a_out)
            return (i - 1 if reverse else i + 1), flat, [ta.write(i, a) for ta, a in zip(tas, flat)]

        if reverse:
            first, condition = n - 1 - start, (lambda i, _a, _t: i >= 0)
        else:
            first, condition = start, (lambda i, _a, _t: i < n)
        _, _, accs_ta = while_loop(condition, compute, (first, a_flat, accs_ta),
                                   parallel_iterations=parallel_iterations, back_prop=back_prop,
                                   swap_memory=swap_memory, maximum_iterations=n)
        return output_pack(_stacked(accs_ta, n_static))


# --- foldl and foldr -------------------------------------------------------------------------------------------------
def _fold(fn: Callable, elems, initializer, parallel_iterations: int, back_prop: bool, swap_memory: bool, name,
          kind: str) -> Any:
    _check_callable(fn)
    with name_scope(name, kind, [e for e in nest.flatten(elems) if isinstance(e, Tensor)]), \
            _cached_variable_reads():
        elems_flat = _elements(elems, nest.flatten(elems))
        _static_length(elems_flat)
        n = _length(elems_flat)
        elems_ta = nest.pack_sequence_as(elems, [_unstacked(e, n) for e in elems_flat])
        read = lambda i: nest.map_structure(lambda ta: ta.read(i), elems_ta)  # noqa: E731
        if kind == "foldl":
            i, a = (constant(1), read(0)) if initializer is None else (constant(0), initializer)

            def compute(i, a):
                return [i + 1, fn(a, read(i))]

            condition = lambda i, a: i < n  # noqa: E731
        else:
            i = n - 1 if initializer is None else n
            a = read(i) if initializer is None else initializer

            def compute(i, a):
                i -= 1
                return [i, fn(a, read(i))]

            condition = lambda i, a: i > 0  # noqa: E731
        _, result = while_loop(condition, compute, [i, a], parallel_iterations=parallel_iterations,
                               back_prop=back_prop, swap_memory=swap_memory, maximum_iterations=n)
        return result


def foldl(fn: Callable, elems, initializer=None, parallel_iterations: int = 10, back_prop: bool = True,
          swap_memory: bool = False, name: str | None = None):
    """`a = fn(a, x)` over the slices `x` of `elems`, first to last; the last `a` (tf.foldl). Without
    `initializer` the first slice is the first `a`."""
    return _fold(fn, elems, initializer, parallel_iterations, back_prop, swap_memory, name, "foldl")


def foldr(fn: Callable, elems, initializer=None, parallel_iterations: int = 10, back_prop: bool = True,
          swap_memory: bool = False, name: str | None = None):
    """`a = fn(a, x)` over the slices `x` of `elems`, last to first; the last `a` (tf.foldr). Without
    `initializer` the last slice is the first `a`."""
    return _fold(fn, elems, initializer, parallel_iterations, back_prop, swap_memory, name, "foldr")
