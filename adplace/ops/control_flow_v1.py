"""tf.cond, tf.case, tf.switch_case and tf.while_loop as TF1 builds them (control flow v1): Switch/Merge for a cond,
Enter/Merge/Switch/LoopCond/NextIteration/Exit for a loop, named under `cond/` and `while/` as TF names them, so the
graph exports to TF's GraphDef and back. The runtime runs the loop's frame (adplace/runtime/control_flow.py).

    r = tf.cond(x > 0, lambda: x * 2, lambda: -x)                      # only the taken branch runs
    i, acc = tf.while_loop(lambda i, a: i < 10, lambda i, a: (i + 1, a * 2), [0, 1.0])
"""
from __future__ import annotations

import builtins
import functools

from adplace.framework import dtypes as _dtypes
from adplace.framework import nest
from adplace.framework.conversion import convert_to_tensor
from adplace.framework.default_graph import control_dependencies, get_default_graph, name_scope
from adplace.framework.indexed_slices import IndexedSlices
from adplace.framework.operation import Operation, Tensor
from adplace.framework.sparse_tensor import SparseTensor
from adplace.framework.tensor_shape import TensorShape, as_shape
from adplace.ops import array_ops, logical_ops, math_ops, reduction_ops
from adplace.ops.control_flow_contexts import CondContext, WhileContext, builder, merge, slices_parts, switch


# --- values that cross a branch or loop boundary: tensors, IndexedSlices, TensorArrays (by their flow) -------------
def _is_tensor_array(value) -> bool:
    return hasattr(value, "flow") and hasattr(value, "handle") and not isinstance(value, Tensor)


def _components(value) -> list:
    """The tensors that carry `value` across a Merge or a loop."""
    if isinstance(value, SparseTensor):
        return [value.indices, value.values, value.dense_shape]
    if isinstance(value, IndexedSlices):
        return slices_parts(value)
    if _is_tensor_array(value):
        return [value.flow]
    if isinstance(value, Operation):
        raise TypeError(f"Expected a tensor, not the op {value.name!r}")
    return [convert_to_tensor(value)]


def _rebuild(like, tensors: list):
    if isinstance(like, SparseTensor):
        return SparseTensor(*tensors)
    if isinstance(like, IndexedSlices):
        return IndexedSlices(*tensors)
    if _is_tensor_array(like):
        from adplace.ops import tensor_array_ops  # noqa: PLC0415 - TensorArray is built on this module
        return tensor_array_ops.build_ta_with_new_flow(like, tensors[0])
    return tensors[0]


def _flat_tensors(structure) -> list:
    return [t for leaf in nest.flatten(structure) for t in _components(leaf)]


def _pack(structure, tensors: list):
    leaves, rebuilt, at = nest.flatten(structure), [], 0
    for leaf in leaves:
        n = len(_components(leaf))
        rebuilt.append(_rebuild(leaf, tensors[at:at + n]))
        at += n
    return nest.pack_sequence_as(structure, rebuilt)


# --- cond --------------------------------------------------------------------------------------------------------
def _branch(context: CondContext, fn, strict: bool):
    """Build one branch in its context: (what fn returned, an op in it replaced by the predicate's value after the
    op as TF does, and a one-element list or tuple unpacked unless `strict`; its tensors as seen outside the
    branch's switches)."""
    with context:
        result = fn()
        if result is None:
            return None, []
        if not strict and isinstance(result, (list, builtins.tuple)) and len(result) == 1:
            result = result[0]
        if isinstance(result, Operation):
            result = _gated(context, result)
        leaves = nest.flatten(result)
        if any(isinstance(leaf, Operation) for leaf in leaves):
            leaves = [_gated(context, leaf) if isinstance(leaf, Operation) else leaf for leaf in leaves]
            result = nest.pack_sequence_as(result, leaves)
        return result, [context.value(t) for t in _flat_tensors(result)]


def _gated(context: CondContext, op: Operation) -> Tensor:
    with control_dependencies([op]):
        return array_ops.identity(context.pivot)


def cond(pred, true_fn=None, false_fn=None, strict: bool = False, name: str | None = None, fn1=None, fn2=None):
    """`true_fn()` if `pred` else `false_fn()`, in the graph (tf.cond): only the taken branch's ops run.

    Both functions must return the same structure of the same dtypes; a one-element list or tuple is unpacked
    unless `strict`; a branch returning an op gives the predicate's value once the op ran. Tensors the branches
    use from outside enter through Switch ops on `pred`.
    """
    true_fn = true_fn if fn1 is None else fn1
    false_fn = false_fn if fn2 is None else fn2
    if not callable(true_fn):
        raise TypeError("true_fn must be callable.")
    if not callable(false_fn):
        raise TypeError("false_fn must be callable.")
    if isinstance(pred, bool):
        raise TypeError("pred must not be a Python bool")
    with name_scope(name, "cond", [pred]):
        pred = convert_to_tensor(pred)
        p_false, p_true = switch(pred, pred)
        pivot_true = array_ops.identity(p_true, name="switch_t")
        pivot_false = array_ops.identity(p_false, name="switch_f")
        pred = array_ops.identity(pred, name="pred_id")
        graph = pred.graph
        result_t, flat_t = _branch(CondContext(graph, pred, pivot_true, 1), true_fn, strict)
        result_f, flat_f = _branch(CondContext(graph, pred, pivot_false, 0), false_fn, strict)
        if (result_t is None) != (result_f is None):
            raise ValueError(f"true_fn and false_fn must both return something or both nothing: {result_t!r} and "
                             f"{result_f!r}")
        if result_t is None:
            return None
        if strict:
            nest.assert_same_structure(result_t, result_f, check_types=True)
        nest.assert_same_structure(result_t, result_f)
        if len(flat_t) != len(flat_f):
            raise ValueError(f"true_fn and false_fn return different composite values: {result_t!r} and "
                             f"{result_f!r}")
        for t, f in zip(flat_t, flat_f):
            if t.dtype.base_dtype is not f.dtype.base_dtype:
                raise ValueError(f"Outputs of true_fn and false_fn must have the same type: {t.dtype.name}, "
                                 f"{f.dtype.name}")
        merges = [merge([f, t])[0] for f, t in zip(flat_f, flat_t)]
        return _pack(result_t, merges)


def case(pred_fn_pairs, default=None, exclusive: bool = False, strict: bool = False, name: str = "case"):
    """The function of the first true predicate, else `default` (tf.case), as nested conds. With `exclusive`, an
    Assert checks that at most one predicate is true."""
    pairs = list(pred_fn_pairs.items()) if isinstance(pred_fn_pairs, dict) else list(pred_fn_pairs)
    for pair in pairs:
        if not isinstance(pair, tuple) or len(pair) != 2:
            raise TypeError("Each entry in pred_fn_pairs must be a 2-tuple")
        pred, fn = pair
        if not callable(fn):
            raise TypeError("fn for pred %s must be callable." % getattr(pred, "name", pred))
    if not pairs and default is None:
        raise ValueError("Must provide at least one of default or pred_fn_pairs")
    with name_scope(name, "case", [p for p, _ in pairs]):
        if default is None:  # TF: the last function is the default, checking that its predicate holds
            *pairs, (last_pred, last_fn) = pairs
            default = functools.partial(_asserted_default, [p for p, _ in pairs] + [last_pred], last_fn)
        preds = [convert_to_tensor(p) for p, _ in pairs]
        for p in preds:
            if p.dtype.base_dtype is not _dtypes.bool:
                raise TypeError(f"pred must be Tensor of type bool: {p.name}")
        checks = []
        if exclusive and len(preds) > 1:
            from adplace.ops import check_ops  # noqa: PLC0415
            count = reduction_ops.reduce_sum(math_ops.cast(array_ops.stack(preds), _dtypes.int32))
            checks = [check_ops.Assert(count <= 1, ["Input error: exclusive=True: more than 1 conditions were "
                                                    "evaluated as True:", array_ops.stack(preds)])]
        fn = default
        for p, f in reversed(list(zip(preds, [f for _, f in pairs]))):
            fn = functools.partial(cond, p, f, fn, strict)
        if checks:
            with control_dependencies(checks):
                return fn()
        return fn()


def _asserted_default(preds: list, fn):
    """`fn()`, after an Assert that its predicate (the last of `preds`) is true: no condition true is an error."""
    from adplace.ops import check_ops  # noqa: PLC0415
    check = check_ops.Assert(convert_to_tensor(preds[-1]), ["Input error: None of conditions evaluated as True:",
                                                           array_ops.stack([convert_to_tensor(p) for p in preds])])
    with control_dependencies([check]):
        result = fn()
        return nest.map_structure(lambda t: array_ops.identity(t) if isinstance(t, Tensor) else t, result)


def switch_case(branch_index, branch_fns, default=None, name: str = "switch_case"):
    """`branch_fns[branch_index]()`, or `default()` (the last branch when None) for an index out of range
    (tf.switch_case), as nested conds. `branch_fns`: a list of functions, or of (int, function) pairs, or a dict,
    with the keys 0..n-1."""
    if not isinstance(branch_index, Tensor):
        raise TypeError(f"branch_index must a Tensor, got {type(branch_index)}")
    if not branch_index.dtype.is_integer:
        raise TypeError(f"branch_index must an integer Tensor, got {branch_index.dtype}")
    fns = _indexed_branches(branch_fns)
    with name_scope(name, "switch_case", [branch_index]):
        fallback = default if default is not None else fns[-1]
        return case([(math_ops.equal(branch_index, k), f) for k, f in enumerate(fns)], default=fallback)


def _indexed_branches(branch_fns) -> list:
    """switch_case's branches in key order, checked as TF checks them."""
    if not branch_fns:
        raise ValueError("Must provide at least one item in branch_fns")
    if not isinstance(branch_fns, (list, builtins.tuple, dict)):
        raise TypeError("branch_fns must be a list, tuple, or dict")
    pairs = list(branch_fns.items()) if isinstance(branch_fns, dict) else list(branch_fns)
    if all(callable(fn) for fn in pairs):
        pairs = list(enumerate(pairs))
    for pair in pairs:
        if not isinstance(pair, builtins.tuple) or len(pair) != 2:
            raise TypeError("Each entry in branch_fns must be a 2-tuple")
        key, fn = pair
        if not isinstance(key, int):
            raise TypeError(f"key must be a Python `int`, got {type(key)}")
        if not callable(fn):
            raise TypeError(f"fn for key {key} must be callable.")
    keys = sorted(k for k, _ in pairs)
    if keys != list(range(len(keys))):
        raise ValueError(f"branch indices (keys) must form contiguous range of [0 to {len(keys)}) but found "
                         f"{{{','.join(map(str, keys))}}}")
    return [fn for _, fn in sorted(pairs, key=lambda pair: pair[0])]


# --- while_loop --------------------------------------------------------------------------------------------------
def while_loop(cond, body, loop_vars, shape_invariants=None, parallel_iterations: int = 10, back_prop: bool = True,
               swap_memory: bool = False, name: str | None = None, maximum_iterations=None,
               return_same_structure: bool = False):
    """Repeat `loop_vars = body(*loop_vars)` while `cond(*loop_vars)` (tf.while_loop, TF1's frames).

    `loop_vars` is any nest of tensors, IndexedSlices and TensorArrays; `body` returns the same structure with the
    same dtypes and, unless `shape_invariants` allow more, the same shapes. `maximum_iterations` stops the loop
    after that many iterations (an extra loop variable counts them).
    """
    if not callable(cond):
        raise TypeError("cond must be callable.")
    if not callable(body):
        raise TypeError("body must be callable.")
    if not isinstance(parallel_iterations, int) or parallel_iterations < 1:
        raise TypeError("parallel_iterations must be a positive integer.")
    if not nest.is_sequence(loop_vars):
        loop_vars = [loop_vars]
    if not nest.flatten(loop_vars):
        raise ValueError("No loop variables provided")
    with name_scope(name, "while", [v for v in nest.flatten(loop_vars) if isinstance(v, Tensor)]) as scope:
        pack_one = len(loop_vars) == 1 and not return_same_structure
        structure = loop_vars
        if maximum_iterations is not None:
            limit = convert_to_tensor(maximum_iterations, name="maximum_iterations")
            if limit.shape.rank not in (None, 0):
                raise ValueError(f"maximum_iterations must be a scalar, saw shape: {limit.shape}")
            counter = array_ops.zeros([], dtype=limit.dtype, name="iteration_counter")
            user_cond, user_body = cond, body
            if pack_one:
                structure = (counter, loop_vars[0])
                shape_invariants = None if shape_invariants is None else (TensorShape([]), _first(shape_invariants))
                cond = lambda i, lv: logical_ops.logical_and(i < limit, user_cond(lv))  # noqa: E731
                body = lambda i, lv: (i + 1, user_body(lv))  # noqa: E731
            else:
                structure = (counter, loop_vars)
                shape_invariants = None if shape_invariants is None else (TensorShape([]), shape_invariants)
                cond = lambda i, lv: logical_ops.logical_and(i < limit, user_cond(*lv))  # noqa: E731
                body = lambda i, lv: (i + 1, user_body(*lv))  # noqa: E731
        context = WhileContext(get_default_graph(), scope + "while_context", parallel_iterations, back_prop,
                               swap_memory, maximum_iterations)
        result = _build_loop(context, cond, body, structure, shape_invariants)
        if maximum_iterations is not None:  # (TF then keeps the structure, also where it flattens to one)
            return result[1]
        if pack_one:
            return result[0]
        leaves = nest.flatten(result)
        if not return_same_structure and len(leaves) == 1:  # TF: loop variables that flatten to one come back as it
            return leaves[0]
        return result


def _first(shape_invariants):
    return shape_invariants[0] if isinstance(shape_invariants, (list, tuple)) else shape_invariants


def _build_loop(context: WhileContext, cond, body, structure, shape_invariants):
    structure = nest.map_structure(lambda v: v if isinstance(v, (IndexedSlices, SparseTensor)) or
                                   _is_tensor_array(v) else convert_to_tensor(v), structure)
    flat = _flat_tensors(structure)
    invariants = _shape_invariants(structure, flat, shape_invariants)
    enters = []
    for t, shape in zip(flat, invariants):
        enter = context.enter(t, is_constant=False)
        enter._shape = shape  # the loop's values may be less specific than the first one
        enters.append(enter)
    context.loop_enters = [e.op for e in enters]
    with context:
        merges = [builder("Merge", [e, e], {"T": e.dtype.base_dtype, "N": 2}, "Merge")._outputs[0] for e in enters]
        for m, shape in zip(merges, invariants):
            m._shape = shape
        context.pivot = merges[0]
        predicate = convert_to_tensor(cond(*_pack(structure, merges)))
        if predicate.dtype.base_dtype is not _dtypes.bool or predicate.shape.rank not in (None, 0):
            raise ValueError(f"The while_loop condition must return a scalar bool tensor, got {predicate!r}")
        loop_cond = builder("LoopCond", [predicate], {}, "LoopCond")._outputs[0]
        context.pivot = context.loop_cond = loop_cond
        switches = [switch(m, loop_cond) for m in merges]
        body_vars = [array_ops.identity(s[1], name="Identity") for s in switches]
        context.pivot = body_vars[0]
        result = body(*_pack(structure, body_vars))
        if not nest.is_sequence(result):
            result = [result]
        nest.assert_same_structure(list(structure), list(result))
        result = nest.map_structure(lambda v: v if isinstance(v, (IndexedSlices, SparseTensor)) or
                                    _is_tensor_array(v) else convert_to_tensor(v), list(result))
        flat_next = _flat_tensors(result)
        if len(flat_next) != len(merges):
            raise ValueError(f"The while_loop body returned {len(flat_next)} tensors for {len(merges)} loop "
                             f"variables: {result!r}")
        for m, n, e in zip(merges, flat_next, flat):
            if n.dtype.base_dtype is not m.dtype.base_dtype:
                raise TypeError(f"Input tensor '{e.name}' enters the loop with type {m.dtype.name}, but has type "
                                f"{n.dtype.base_dtype.name} after one iteration.")
            if n.dtype._is_ref:  # a reference returned by the body (a scatter's output): its value goes round
                n = array_ops.identity(n)
            if not m.shape.is_compatible_with(n.shape):
                raise ValueError(f"Input tensor '{e.name}' enters the loop with shape {m.shape}, but has shape "
                                 f"{n.shape} after one iteration. To allow the shape to vary across iterations, use "
                                 f"the `shape_invariants` argument of tf.while_loop to specify a less-specific "
                                 f"shape.")
            n = context.value(n)
            next_iteration = builder("NextIteration", [n], {"T": n.dtype.base_dtype}, "NextIteration")
            m.op._update_input(1, next_iteration._outputs[0])
    exits = [builder("Exit", [s[0]], {"T": s[0].dtype.base_dtype}, "Exit")._outputs[0] for s in switches]
    for e in exits:
        e.op._control_flow_context = context.outer
    if context.external_controls:
        for enter in context.loop_enters:
            enter._add_control_inputs(context.external_controls)
    return _pack(structure, exits)


def _sparse_invariants(leaf: SparseTensor, invariant) -> list:
    """A SparseTensor loop variable's component shapes: any number of values, of the dense shape's rank (TF)."""
    rank = leaf.dense_shape.shape[0] if invariant is None or as_shape(invariant).rank is None else \
        as_shape(invariant).rank
    return [TensorShape([None, rank]), TensorShape([None]), TensorShape([rank])]


def _shape_invariants(structure, flat: list, shape_invariants) -> list:
    leaves = nest.flatten(structure)
    if shape_invariants is None:
        return [shape for leaf in leaves for shape in (_sparse_invariants(leaf, None) if
                                                        isinstance(leaf, SparseTensor) else
                                                        [c.shape for c in _components(leaf)])]
    flat_invariants = nest.flatten(shape_invariants)
    if len(flat_invariants) != len(leaves):
        raise ValueError(f"shape_invariants must have the structure of loop_vars: {shape_invariants!r} for "
                         f"{structure!r}")
    shapes = []
    for leaf, invariant in zip(leaves, flat_invariants):
        if isinstance(leaf, SparseTensor):
            shapes.extend(_sparse_invariants(leaf, invariant))
            continue
        n = len(_components(leaf))
        invariant = as_shape(invariant)
        first = _components(leaf)[0]
        if not invariant.is_compatible_with(first.shape) or (invariant.rank is not None and first.shape.rank is not
                                                              None and not _less_specific(invariant, first.shape)):
            raise ValueError(f"The shape invariant specified for {first.name} is not compatible with the initial "
                             f"shape of the loop variable. It enters the loop with shape {first.shape}, but the "
                             f"specified shape invariant is {invariant}.")
        shapes.append(invariant)
        shapes.extend(c.shape if isinstance(leaf, IndexedSlices) else invariant for c in _components(leaf)[1:n])
    return shapes


def _less_specific(invariant: TensorShape, shape: TensorShape) -> bool:
    return all(a is None or a == b for a, b in zip(invariant.as_tuple(), shape.as_tuple()))
