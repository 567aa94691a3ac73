"""Stateful ops on variables: VariableV2, the Assign family, the sparse writes (Scatter*, ScatterNd*) and
CountUpTo, which take the variable by reference.

A reference edge (VariableV2 -> Assign) forces both ends onto one device, as in TF. The writing ops output the
variable by reference, so fetching one gives the variable's value after the write:

    sess.run(tf.scatter_add(v, [0, 0], [1.0, 2.0]))   # v[0] += 3.0; returns v's new value
"""
from __future__ import annotations

from adplace.framework import dtypes as _dtypes
from adplace.framework.conversion import convert_to_tensor
from adplace.framework.default_graph import name_scope
from adplace.framework.operation import Tensor
from adplace.framework.registry import NotDifferentiable, register_op
from adplace.framework.tensor_shape import TensorShape, dims_text
from adplace.ops import array_ops, math_ops
from adplace.ops.op_builder import SCALAR, apply_op_1, check_dtype, shapes_text

INDEX_TYPES = frozenset({_dtypes.int32, _dtypes.int64})

register_op("VariableV2", lambda inputs, attrs, name: [(attrs["dtype"]._as_ref, attrs["shape"])],
            is_stateful=True, is_view=True)


def _assign_infer(op_type: str):
    def infer(inputs, attrs, name):
        ref, value = inputs
        require_ref(op_type, "ref", ref, name)
        if value._dtype.base_dtype is not ref._dtype.base_dtype:
            raise TypeError(f"Input 'value' of '{op_type}' Op has type {value._dtype.base_dtype.name} that does not "
                            f"match type {ref._dtype.name} of argument 'ref'.")
        shape = ref._shape
        if op_type != "Assign" or attrs["validate_shape"]:
            if not ref._shape.is_compatible_with(value._shape):
                raise ValueError(f"Shapes must be equal rank and compatible for '{name}' (op: '{op_type}') with "
                                 f"input shapes: {shapes_text(inputs)}.")
            shape = ref._shape.merge_with(value._shape)
        else:
            shape = value._shape
        return [(ref._dtype, shape)]
    return infer


for _op_type in ("Assign", "AssignAdd", "AssignSub"):
    register_op(_op_type, _assign_infer(_op_type), ref_inputs=(0,), is_stateful=True, is_view=True)
register_op("IsVariableInitialized", lambda inputs, attrs, name: [(_dtypes.bool, SCALAR)], ref_inputs=(0,))
register_op("InitializedValue", lambda inputs, attrs, name: [(inputs[1]._dtype.base_dtype, inputs[1]._shape)],
            ref_inputs=(0,), is_view=True)


def variable_op_v2(shape, dtype, name: str = "Variable", container: str = "", shared_name: str = "") -> Tensor:
    """The VariableV2 op itself: its output is the variable by reference (dtype `*_ref`)."""
    return apply_op_1("VariableV2", [], {"shape": TensorShape(shape), "dtype": _dtypes.as_dtype(dtype).base_dtype,
                                         "container": container, "shared_name": shared_name}, name=name)


def variable_op(shape, dtype, name: str = "Variable", set_shape: bool = True, container: str = "",
                shared_name: str = "") -> Tensor:
    """TF1's deprecated raw variable op: a VariableV2 of `shape` (unknown when `set_shape=False`), uninitialized
    until something assigns it."""
    return variable_op_v2(shape if set_shape else None, dtype, name=name, container=container,
                          shared_name=shared_name)


def _ref(ref):
    return ref._ref() if hasattr(ref, "_ref") else ref


def _assign_op(op_type: str, ref, value, use_locking, name, validate_shape=True) -> Tensor:
    """Build an Assign-family op; `use_locking=None` takes TF's op default (Assign locks, AssignAdd/Sub do not)."""
    ref = _ref(ref)
    if use_locking is None:
        use_locking = op_type == "Assign"
    with name_scope(name, op_type, [ref]) as scope:
        value = convert_to_tensor(value, dtype=ref.dtype.base_dtype, name="value")
        return apply_op_1(op_type, [ref, value], {"T": ref.dtype.base_dtype, "use_locking": bool(use_locking),
                                                  "validate_shape": bool(validate_shape)}, name=scope)


def assign(ref, value, validate_shape: bool | None = None, use_locking: bool | None = None,
           name: str | None = None) -> Tensor:
    """Store `value` in the variable `ref`; returns the ref after the assignment (tf.assign).

    `use_locking` (default True, as TF's Assign op) makes the store exclusive with other locked updates of `ref`.
    """
    return _assign_op("Assign", ref, value, use_locking, name, True if validate_shape is None else validate_shape)


def assign_add(ref, value, use_locking: bool | None = None, name: str | None = None) -> Tensor:
    """ref += value (tf.assign_add). With `use_locking=True` the read-modify-write is atomic: N threads adding 1.0
    K times each add exactly N*K; without it (TF's default) concurrent increments may be lost."""
    return _assign_op("AssignAdd", ref, value, use_locking, name)


def assign_sub(ref, value, use_locking: bool | None = None, name: str | None = None) -> Tensor:
    """ref -= value (tf.assign_sub)."""
    return _assign_op("AssignSub", ref, value, use_locking, name)


def is_variable_initialized(ref, name: str | None = None) -> Tensor:
    return apply_op_1("IsVariableInitialized", [_ref(ref)], {"dtype": _ref(ref).dtype.base_dtype},
                      name=name or "IsVariableInitialized")


# --- sparse writes: Scatter*, ScatterNd*, CountUpTo -----------------------------------------------------------------
def require_ref(op_type: str, arg: str, t: Tensor, name: str) -> None:
    """TF's error for a non-reference tensor where an op writes a variable."""
    if not t._dtype.is_ref_dtype:
        raise TypeError(f"'{op_type}' Op requires that input '{arg}' be a mutable tensor (a Variable), got "
                        f"{t.name} of dtype {t._dtype.name} in '{name}'")


def merge_error(a: TensorShape, b: TensorShape) -> str:
    """TF's InferenceContext::Merge message for two incompatible shapes."""
    if a.ndims != b.ndims:
        return f"Shapes must be equal rank, but are {a.ndims} and {b.ndims}"
    for i, (da, db) in enumerate(zip(a.as_tuple(), b.as_tuple())):
        if da is not None and db is not None and da != db:
            return (f"Dimension {i} in both shapes must be equal, but are {da} and {db}. Shapes are "
                    f"{dims_text(a.as_tuple())} and {dims_text(b.as_tuple())}.")
    return "Shapes are incompatible"


def _scatter_checks(op_type: str, allowed, inputs, name: str) -> str:
    """The checks every scatter op shares (ref input, T and Tindices); returns the " for 'name' ..." suffix."""
    ref, indices, updates = inputs
    require_ref(op_type, "ref", ref, name)
    dtype = ref._dtype.base_dtype
    if updates._dtype.base_dtype is not dtype:
        raise TypeError(f"Input 'updates' of '{op_type}' Op has type {updates._dtype.base_dtype.name} that does not "
                        f"match type {dtype.name} of argument 'ref'.")
    check_dtype(op_type, "T", dtype, allowed)
    check_dtype(op_type, "Tindices", indices._dtype, INDEX_TYPES)
    return f" for '{name}' (op: '{op_type}') with input shapes: {shapes_text(inputs)}."


def _scatter_infer(op_type: str, allowed):
    """TF's ScatterUpdateShape: updates is a scalar or has shape indices.shape + ref.shape[1:]."""
    def infer(inputs, attrs, name):
        ref, indices, updates = inputs
        where = _scatter_checks(op_type, allowed, inputs, name)
        if updates._shape.ndims != 0:
            row = TensorShape(None) if ref._shape.ndims is None else TensorShape(ref._shape.as_tuple()[1:])
            expected = indices._shape.concatenate(row)
            if not updates._shape.is_compatible_with(expected):
                raise ValueError(merge_error(updates._shape, expected) + where)
        return [(ref._dtype, ref._shape)]
    return infer


def scatter_nd_shape(out: TensorShape, indices: Tensor, updates: Tensor, where: str, out_name: str = "input") -> None:
    """TF's ScatterNd shape checks (ScatterNdUpdateShape; ScatterNd names its `out` "output"): indices [..., K]
    address out.shape[:K], and updates = indices.shape[:-1] + out.shape[K:]. ValueError otherwise:

        scatter_nd_shape(TensorShape([2, 2, 2]), zeros([3, 2, 2]), zeros([2, 2, 2]), where)
        # The outer 2 dimensions of indices.shape=[3,2,2] must match the outer 2 dimensions of updates.shape=[2,2,2]: ...
    """
    for t in (indices, updates):
        if t._shape.ndims == 0:
            raise ValueError("Shape must be at least rank 1 but is rank 0" + where)
    ix_shape, up_shape = indices._shape, updates._shape
    if out.num_elements() == 0 and (ix_shape.num_elements() or up_shape.num_elements()):
        raise ValueError("Indices and updates specified for empty output shape" + where)
    if ix_shape.ndims is None or up_shape.ndims is None or ix_shape.as_tuple()[-1] is None:
        return
    k, outer = ix_shape.as_tuple()[-1], ix_shape.ndims - 1
    ix_text, up_text = dims_text(ix_shape.as_tuple()), dims_text(up_shape.as_tuple())
    if not ix_shape[:outer].is_compatible_with(up_shape[:outer]):
        raise ValueError(f"The outer {outer} dimensions of indices.shape={ix_text} must match the outer {outer} "
                         f"dimensions of updates.shape={up_text}: {merge_error(ix_shape[:outer], up_shape[:outer])}"
                         + where)
    if out.ndims is not None and not out[k:].is_compatible_with(up_shape[outer:]):
        raise ValueError(f"The inner {out.ndims - k} dimensions of {out_name}.shape={dims_text(out.as_tuple())} must "
                         f"match the inner {up_shape.ndims - outer} dimensions of updates.shape={up_text}: "
                         f"{merge_error(out[k:], up_shape[outer:])}" + where)


def _scatter_nd_infer(op_type: str, allowed):
    """ScatterNdUpdate/Add/Sub: the scatter checks, then scatter_nd_shape against the variable's shape."""
    def infer(inputs, attrs, name):
        ref, indices, updates = inputs
        scatter_nd_shape(ref._shape, indices, updates, _scatter_checks(op_type, allowed, inputs, name))
        return [(ref._dtype, ref._shape)]
    return infer


_MIN_MAX_TYPES = frozenset({_dtypes.float16, _dtypes.bfloat16, _dtypes.float32, _dtypes.float64, _dtypes.int32,
                            _dtypes.int64})
for _op_type, _allowed in (("ScatterUpdate", _dtypes.ALL), ("ScatterAdd", _dtypes.NUMERIC),
                           ("ScatterSub", _dtypes.NUMERIC), ("ScatterMul", _dtypes.NUMERIC),
                           ("ScatterDiv", _dtypes.NUMERIC), ("ScatterMin", _MIN_MAX_TYPES),
                           ("ScatterMax", _MIN_MAX_TYPES)):
    register_op(_op_type, _scatter_infer(_op_type, _allowed), ref_inputs=(0,), is_stateful=True, is_view=True)
    NotDifferentiable(_op_type)
for _op_type, _allowed in (("ScatterNdUpdate", _dtypes.ALL), ("ScatterNdAdd", _dtypes.NUMERIC),
                           ("ScatterNdSub", _dtypes.NUMERIC)):
    register_op(_op_type, _scatter_nd_infer(_op_type, _allowed), ref_inputs=(0,), is_stateful=True, is_view=True)
    NotDifferentiable(_op_type)


def _count_up_to_infer(inputs, attrs, name):
    ref, = inputs
    require_ref("CountUpTo", "ref", ref, name)
    check_dtype("CountUpTo", "T", ref._dtype, INDEX_TYPES)
    if ref._shape.ndims not in (None, 0):
        raise ValueError(f"Shape must be rank 0 but is rank {ref._shape.ndims} for '{name}' (op: 'CountUpTo') with "
                         f"input shapes: {shapes_text(inputs)}.")
    return [(ref._dtype.base_dtype, SCALAR)]


register_op("CountUpTo", _count_up_to_infer, ref_inputs=(0,), is_stateful=True, is_view=True)
NotDifferentiable("CountUpTo")


def _scatter_op(op_type: str, ref, indices, updates, use_locking: bool, name: str | None) -> Tensor:
    ref = _ref(ref)
    with name_scope(name, op_type, [ref]) as scope:
        indices = convert_to_tensor(indices, name="indices")
        typed = isinstance(updates, Tensor)  # a Tensor keeps its dtype: a mismatch is the op's TypeError, as in TF
        updates = convert_to_tensor(updates, dtype=None if typed else ref.dtype.base_dtype, name="updates")
        return apply_op_1(op_type, [ref, indices, updates], {"T": ref.dtype.base_dtype, "Tindices": indices.dtype,
                                                             "use_locking": bool(use_locking)}, name=scope)


def scatter_update(ref, indices, updates, use_locking: bool = True, name: str | None = None) -> Tensor:
    """ref[indices[i], ...] = updates[i, ...] (tf.scatter_update); returns the ref after the update.

    `updates` has shape indices.shape + ref.shape[1:], or is a scalar written to every row named. Of several
    updates of one row, the last wins. An index outside [0, ref.shape[0]) is an InvalidArgumentError and the
    variable is left unchanged.
    """
    return _scatter_op("ScatterUpdate", ref, indices, updates, use_locking, name)


def scatter_add(ref, indices, updates, use_locking: bool = False, name: str | None = None) -> Tensor:
    """ref[indices[i], ...] += updates[i, ...] (tf.scatter_add): every update of a repeated index adds.

        tf.scatter_add(v, [0, 0, 2], [1.0, 2.0, 5.0])   # v[0] += 3.0, v[2] += 5.0
    """
    return _scatter_op("ScatterAdd", ref, indices, updates, use_locking, name)


def scatter_sub(ref, indices, updates, use_locking: bool = False, name: str | None = None) -> Tensor:
    """ref[indices[i], ...] -= updates[i, ...] (tf.scatter_sub); repeated indices subtract each update."""
    return _scatter_op("ScatterSub", ref, indices, updates, use_locking, name)


def scatter_mul(ref, indices, updates, use_locking: bool = False, name: str | None = None) -> Tensor:
    """ref[indices[i], ...] *= updates[i, ...] (tf.scatter_mul); repeated indices multiply each update in."""
    return _scatter_op("ScatterMul", ref, indices, updates, use_locking, name)


def scatter_div(ref, indices, updates, use_locking: bool = False, name: str | None = None) -> Tensor:
    """ref[indices[i], ...] /= updates[i, ...] (tf.scatter_div); repeated indices divide by each update in turn
    (integers: C's truncating division)."""
    return _scatter_op("ScatterDiv", ref, indices, updates, use_locking, name)


def scatter_min(ref, indices, updates, use_locking: bool = False, name: str | None = None) -> Tensor:
    """ref[indices[i], ...] = min(ref[indices[i], ...], updates[i, ...]) (tf.scatter_min)."""
    return _scatter_op("ScatterMin", ref, indices, updates, use_locking, name)


def scatter_max(ref, indices, updates, use_locking: bool = False, name: str | None = None) -> Tensor:
    """ref[indices[i], ...] = max(ref[indices[i], ...], updates[i, ...]) (tf.scatter_max)."""
    return _scatter_op("ScatterMax", ref, indices, updates, use_locking, name)


def scatter_nd_update(ref, indices, updates, use_locking: bool = True, name: str | None = None) -> Tensor:
    """ref[tuple(indices[..., :])] = updates[...] (tf.scatter_nd_update): the last axis of `indices` (length K)
    addresses an element (K = rank) or a slice of ref; updates has shape indices.shape[:-1] + ref.shape[K:].

        tf.scatter_nd_update(v, [[4], [3]], [9, 10])   # v[4] = 9, v[3] = 10
    """
    return _scatter_op("ScatterNdUpdate", ref, indices, updates, use_locking, name)


def scatter_nd_add(ref, indices, updates, use_locking: bool = False, name: str | None = None) -> Tensor:
    """ref[tuple(indices[..., :])] += updates[...] (tf.scatter_nd_add); repeated indices add each update."""
    return _scatter_op("ScatterNdAdd", ref, indices, updates, use_locking, name)


def scatter_nd_sub(ref, indices, updates, use_locking: bool = False, name: str | None = None) -> Tensor:
    """ref[tuple(indices[..., :])] -= updates[...] (tf.scatter_nd_sub)."""
    return _scatter_op("ScatterNdSub", ref, indices, updates, use_locking, name)


def batch_scatter_update(ref, indices, updates, use_locking: bool = True, name: str | None = None) -> Tensor:
    """scatter_update along the last axis of `indices`, batched over its leading axes (tf.batch_scatter_update):
    ref[i_1, ..., i_n, indices[i_1, ..., i_n, j]] = updates[i_1, ..., i_n, j]. Built as a ScatterNdUpdate whose
    indices prefix each index with its batch position.

    Raises:
      ValueError: if the rank of `indices` is unknown.
    """
    with name_scope(name):
        indices = convert_to_tensor(indices, name="indices")
        rank = indices.shape.ndims
        if rank is None:
            raise ValueError("batch_gather does not allow indices with unknown shape.")
        indices_shape = array_ops.shape(indices)
        nd_indices = array_ops.expand_dims(indices, axis=-1)
        coordinates = []
        for dimension in range(rank - 1):  # the batch position along each leading axis, broadcast to indices
            positions = array_ops.reshape(math_ops.range(0, indices_shape[dimension], 1),
                                          [-1 if d == dimension else 1 for d in range(rank + 1)])
            positions = math_ops.cast(positions, nd_indices.dtype)
            coordinates.append(positions * array_ops.ones_like(nd_indices))
        coordinates.append(nd_indices)
        return scatter_nd_update(ref, array_ops.concat(coordinates, axis=-1), updates, use_locking=use_locking)


def count_up_to(ref, limit: int, name: str | None = None) -> Tensor:
    """Increment the scalar int variable `ref` unless it has reached `limit`; outputs its value before the increment
    (tf.count_up_to). Read and increment are one atomic step, so concurrent callers get distinct values; at the limit
    it raises OutOfRangeError "Reached limit of <limit>" and leaves `ref` unchanged."""
    ref = _ref(ref)
    return apply_op_1("CountUpTo", [ref], {"limit": int(limit), "T": ref.dtype.base_dtype}, name=name or "CountUpTo")
