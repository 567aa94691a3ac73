"""Feed values: what Session.run accepts for a fed tensor, converted once per run into an array the plan may use.

TF's rules (session.py `_run`): no Tensors as values, a Python int must fit the tensor's dtype (TypeError), the value
is converted with `np.asarray(value, dtype)` (NumPy's TypeError/ValueError), and its shape must be compatible with
the tensor's static shape (ValueError). adplace is stricter where TF silently feeds something else than was given:
`None` (TF feeds NaN to a float tensor, False to a bool one) and a complex array fed to a real tensor (TF drops the
imaginary part) are TypeErrors, and a non-string element fed to a string tensor is a TypeError (TF: InternalError
"Unsupported object type int" from its C conversion). Every message names the tensor and stays short: a big value
is described by its shape and dtype (or length), never printed.

The converter runs once per fed value per run, so the common feed (an ndarray) takes a few cheap checks and one
`astype`; everything that is diagnosed happens off that path. Where the plan cannot let a fed array escape (it is
not fetched as it is, nor kept by a stateful op: `borrowable_feeds`), an ndarray of the tensor's exact dtype and
shape is not even copied.

Feed keys are resolved once per feed signature (`feed_tensors`): a Tensor, a name (str or bytes), a composite (a
SparseTensor fed a SparseTensorValue or an (indices, values, dense_shape) tuple), or a nested tuple of them whose value
is a nested tuple of the same structure (TF's `nest.flatten_dict_items`):

    tensors, flatten = feed_tensors(graph, {(a, (b, c)): (va, (vb, vc))})   # [a, b, c]
    flatten({(a, (b, c)): (va, (vb, vc))})                                  # [va, vb, vc]
"""
from __future__ import annotations

import reprlib
import threading
import weakref
from collections.abc import Mapping
from typing import Callable

import numpy as np

from adplace.framework import dtypes as _dtypes
from adplace.framework.nest import flatten
from adplace.framework.operation import Operation, Tensor
from adplace.kernels.gpu import in_pinned_memory
from adplace.runtime.fetches import REGISTERED_EXPANSIONS, registered_expansion

_ndarray = np.ndarray
_REPR = reprlib.Repr()
_REPR.maxlevel, _REPR.maxlist, _REPR.maxtuple, _REPR.maxstring, _REPR.maxother = 3, 6, 6, 60, 60
_REPR.maxdict = 4


def describe(value) -> str:
    """A short text for a value in an error message: its repr when small, else its type and size."""
    if isinstance(value, (np.ndarray, np.generic)):
        if value.size <= 6:
            text = repr(value)
            if len(text) <= 120:
                return text
        return f"array of shape {value.shape} and dtype {value.dtype}"
    if isinstance(value, (list, tuple)) and len(value) > 6:
        return f"{type(value).__name__} of {len(value)} elements"
    if isinstance(value, int) and value.bit_length() > 128:  # repr of a huge int is slow, and past 4300 digits fails
        return f"int of {value.bit_length()} bits"
    try:
        return _REPR.repr(value)
    except Exception:  # noqa: BLE001 - a repr that fails must not hide the real error
        return f"object of type {type(value).__name__}"


def _clip(text: str, limit: int = 200) -> str:
    return text if len(text) <= limit else text[:limit] + "..."


def _check_not_graph_element(value, tensor: Tensor) -> None:
    """TF's TypeErrors for a Tensor, Operation or Variable, and (adplace) for None, given as a feed value."""
    if value is None:
        dtype = tensor.dtype.base_dtype
        nan = " (for a missing value, feed float('nan') explicitly)" if dtype.is_floating else ""
        raise TypeError(f"Cannot feed None for Tensor '{tensor.name}' of dtype {dtype.name}: a feed value must be a "
                        f"Python scalar, string, list or numpy ndarray. Feed an array{nan}.")
    if isinstance(value, (Tensor, Operation)) or hasattr(value, "_as_graph_element"):
        raise TypeError(f"The value of a feed cannot be a tf.Tensor object. Acceptable feed values include Python "
                        f"scalars, strings, lists, numpy ndarrays, or TensorHandles. For reference, the tensor object "
                        f"was {_clip(str(value))} which was passed to the feed with key {tensor}. Evaluate it first "
                        f"(value = sess.run(tensor)) and feed the result.")


def _tensor_type(tensor: Tensor) -> str:
    """How TF's feed errors name a tensor's type (its NumPy type, "<class 'numpy.int32'>"), with the tensor."""
    dtype = tensor.dtype.base_dtype
    return f"Tensor type {dtype.as_numpy_dtype} of Tensor '{tensor.name}' ({dtype.name})"


def _incompatible_int(value: int, tensor: Tensor, advice: str) -> TypeError:
    return TypeError(f"Type of feed value {describe(value)} with type {type(value)} is not compatible with "
                     f"{_tensor_type(tensor)}. {advice}")


def _complex_to_real(value, tensor: Tensor) -> TypeError:
    dtype = tensor.dtype.base_dtype.name
    return TypeError(f"Cannot feed complex value {describe(value)} to Tensor '{tensor.name}' of real dtype {dtype}: "
                     f"it would drop the imaginary part. Feed np.real(value) (or np.abs(value)), or make the tensor "
                     f"complex64/complex128.")


def _int_checker(tensor: Tensor) -> Callable:
    """TF's check of a Python int feed (`numpy_dtype(value) != value` is a TypeError): a function raising it."""
    dtype = tensor.dtype.base_dtype
    np_dtype = np.dtype(dtype.as_numpy_dtype)
    if np_dtype.kind in "iu":
        info = np.iinfo(np_dtype)
        lo, hi, advice = int(info.min), int(info.max), "Try explicitly setting the type of the feed tensor to a " \
                                                       "larger type (e.g. int64)."
    elif np_dtype.kind == "b":
        lo, hi, advice = 0, 1, "Feed True or False (e.g. bool(value))."
    else:
        hi = int(np.finfo(np_dtype).max) if np_dtype.kind != "V" else int(float(dtype.max))  # V: bfloat16
        lo, advice = -hi, "Try explicitly setting the type of the feed tensor to a larger type (e.g. float64)."

    def check(value: int) -> None:
        if not lo <= value <= hi:
            raise _incompatible_int(value, tensor, advice)
    return check


def _numeric_converter(tensor: Tensor) -> Callable:
    """Everything but the ndarray fast path, for a numeric tensor: the checks TF makes, then NumPy's conversion."""
    np_dtype = np.dtype(tensor.dtype.base_dtype.as_numpy_dtype)
    real = np_dtype.kind != "c"
    check_int = _int_checker(tensor)
    name, dtype_name = tensor.name, tensor.dtype.base_dtype.name
    larger = "int64" if np_dtype.kind in "iub" else "float64"

    def convert(value) -> np.ndarray:
        cls = type(value)
        if cls is float:  # a Python float (learning rate, keep_prob): nothing to check
            return np.array(value, dtype=np_dtype)
        if cls is int:
            check_int(value)
            return np.array(value, dtype=np_dtype)
        _check_not_graph_element(value, tensor)
        if isinstance(value, int):
            check_int(value)
        dtype = getattr(value, "dtype", None)
        if real and isinstance(dtype, np.dtype) and dtype.kind == "c":  # a NumPy complex scalar or ndarray subclass
            raise _complex_to_real(value, tensor)
        try:
            return np.array(value, dtype=np_dtype)
        except OverflowError:  # NumPy 2: a Python int out of range inside a list
            raise TypeError(f"Type of feed value {describe(value)} is not compatible with {_tensor_type(tensor)}: "
                            f"it holds a Python int out of range. Try explicitly setting the type of the feed tensor "
                            f"to a larger type (e.g. {larger}).") from None
        except (TypeError, ValueError) as e:
            hint = " Feed np.real(value), or make the tensor complex64/complex128." if "complex" in str(e) and real \
                else f" Feed numbers convertible to {dtype_name}."
            raise type(e)(f"Cannot feed value {describe(value)} for Tensor '{name}' of dtype {dtype_name}: "
                          f"{_clip(str(e)).rstrip('.')}.{hint}") from None
    return convert


def _string_converter(tensor: Tensor) -> Callable:
    """A string tensor's feed: an object array of bytes (str is UTF-8 encoded); any other element is a TypeError."""
    name = tensor.name

    def convert(value) -> np.ndarray:
        _check_not_graph_element(value, tensor)
        if isinstance(value, int):  # TF: str(value) != value
            raise _incompatible_int(value, tensor, "Feed bytes or str values (e.g. str(value)).")
        try:
            array = np.array(value, dtype=object)
        except ValueError as e:
            raise ValueError(f"Cannot feed value {describe(value)} for Tensor '{name}' of dtype string: "
                             f"{_clip(str(e))}") from None
        flat = array.reshape(-1)
        out = np.empty(flat.size, dtype=object)
        for i, v in enumerate(flat.tolist()):
            if isinstance(v, str):
                v = v.encode()
            elif not isinstance(v, bytes):
                where = "" if array.ndim == 0 else f"element {i} of "
                raise TypeError(f"Cannot feed {where}value {describe(value)} to Tensor '{name}' of dtype string: "
                                f"{describe(v)} of type {type(v).__name__} is not bytes or str. Convert the "
                                f"elements first (e.g. str(v)).")
            out[i] = v
        return out.reshape(array.shape)
    return convert


def feed_converter(tensor: Tensor, borrow: bool = False, pinned: bool = True) -> Callable:
    """A function turning a fed value into an array of the tensor's dtype, checking its static shape.

    The array is owned (a copy), except that with `borrow` (the plan may read the caller's array: see
    `borrowable_feeds`) an ndarray of exactly the tensor's dtype whose shape fits is returned as it is, and with
    `pinned` (the value may go to a CUDA GPU) so is one in pinned memory.
    """
    dtype = tensor.dtype.base_dtype
    np_dtype = np.dtype(dtype.as_numpy_dtype)
    static = tensor.shape
    name = tensor.name
    dims = static.as_tuple()
    rank = None if dims is None else len(dims)
    known = tuple((i, d) for i, d in enumerate(dims or ()) if d is not None)  # checked without building shapes
    is_string = dtype is _dtypes.string
    real = np_dtype.kind != "c"
    convert_other = _string_converter(tensor) if is_string else _numeric_converter(tensor)

    def shape_error(shape: tuple) -> ValueError:
        return ValueError(f"Cannot feed value of shape {shape!r} for Tensor '{name}', which has shape '{static}'")

    def convert(value):
        # An ndarray (never a graph element) of a dtype NumPy may cast; `astype` always copies, except for an array
        # of the right dtype in pinned memory, which is fed as it is (copied straight to a GPU).
        if type(value) is _ndarray and not is_string:
            value_dtype = value.dtype
            if value_dtype is not np_dtype and real and value_dtype.kind == "c":
                raise _complex_to_real(value, tensor)
            array = value if pinned and value_dtype == np_dtype and in_pinned_memory(value) else \
                value.astype(np_dtype)
        else:
            array = convert_other(value)
        if rank is not None:
            shape = array.shape
            if len(shape) != rank:
                raise shape_error(shape)
            for i, d in known:
                if shape[i] != d:
                    raise shape_error(shape)
        return array

    if not borrow or is_string:  # a string feed is always rebuilt (its elements become bytes)
        return convert
    if rank is not None and len(known) == rank:  # a fully known shape: one tuple comparison
        def convert_borrowed(value):
            if type(value) is _ndarray and value.dtype is np_dtype and value.shape == dims:
                return value
            return convert(value)
        convert_borrowed.passes = (np_dtype, dims)  # what feeds_converter inlines
    else:
        def convert_borrowed(value):
            if type(value) is _ndarray and value.dtype is np_dtype:
                if rank is not None:
                    shape = value.shape
                    if len(shape) != rank or any(shape[i] != d for i, d in known):
                        raise shape_error(shape)
                return value
            return convert(value)
    return convert_borrowed


def feeds_converter(converters: list) -> Callable:
    """`values -> [converters[0](values[0]), ...]` for a sized iterable of exactly len(converters) values (a
    feed_dict's values, a callable's arguments): straight-line code, which tests inline what a borrowing converter
    of a fully known shape would return as it is (an ndarray of its dtype and shape) instead of calling it."""
    if not converters:
        return lambda values: []
    values = ", ".join(f"v{i}" for i in range(len(converters)))
    lines = ["def convert(values):", f"    {values}, = values"]
    namespace: dict = {"_ndarray": _ndarray}
    for i, convert in enumerate(converters):
        namespace[f"c{i}"] = convert
        passes = getattr(convert, "passes", None)
        if passes is None:
            lines.append(f"    v{i} = c{i}(v{i})")
        else:
            namespace[f"d{i}"], namespace[f"s{i}"] = passes
            lines.append(f"    if type(v{i}) is not _ndarray or v{i}.dtype is not d{i} or v{i}.shape != s{i}: "
                         f"v{i} = c{i}(v{i})")
    lines.append(f"    return [{values}]")
    exec(compile("\n".join(lines), "<adplace feeds>", "exec"), namespace)  # noqa: S102 - generated from fixed names
    return namespace["convert"]


# Non-view ops whose kernels may return an input (or a view of one) as an output: the reference control-flow
# forwarders and the sparse ops that may pass a component (a dense_shape) on. (View ops are found by is_view.)
_FORWARDING = frozenset({"RefSwitch", "RefMerge", "SparseAdd", "SparseConcat", "SparseFillEmptyRows", "SparseReduceMaxSparse", "SparseReduceSumSparse",
                         "SparseReorder", "SparseReshape", "SparseSlice", "SparseSoftmax", "SparseSparseMaximum",
                         "SparseSparseMinimum", "SparseSplit"})


# Training ops only read their gradients and hyperparameters: every new value is computed into a new array.
_READ_ONLY_UPDATES = ("Apply", "SparseApply")


def borrowable_feeds(plan) -> list[bool]:
    """Per feed of `plan`: whether a run may give the kernels the caller's array itself rather than a copy.

    Kernels never write into their inputs and a non-view op's output is a new array (the contract that lets a
    variable's stored array be read without a copy), so sharing a fed array is safe unless it, or a view of it
    (through view ops, forwarding ops, transfers and simplified steps), could outlive the run or leave it: it is
    fetched without a copy (the fed tensor itself, a Slice, a cond's Merge) or reaches a stateful op (Assign, a
    queue, a TensorArray, a dataset may keep it; training ops, Apply* and SparseApply*, only read theirs) or a while
    loop (the body may keep a value). Computed once per plan (one pass over its steps).
    """
    with _BORROWABLE_LOCK:  # sessions compile in many threads; a WeakKeyDictionary is not safe for that alone
        borrow = _BORROWABLE.get(plan)
    if borrow is None:
        borrow = _borrowable(plan)
        with _BORROWABLE_LOCK:
            _BORROWABLE[plan] = borrow
    return list(borrow)


_BORROWABLE: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # plan -> borrowable_feeds(plan)
_BORROWABLE_LOCK = threading.Lock()


def _borrowable(plan) -> tuple:
    borrow = [True] * len(plan.feed_slots)
    reach: dict = {}  # slot -> the feeds whose array it may hold
    for k, slot in enumerate(plan.feed_slots):
        reach.setdefault(slot, set()).add(k)
    transfers, ops, outs = plan.transfer_steps, plan.ops, plan.outs
    aliasing = {op._id for op in plan.simplified_ops}  # steps passing their input on (runtime/simplification.py)
    for i, ins in enumerate(plan.ins):
        if type(ins) is int:  # most steps: one input, rarely a feed or a view of one
            if ins not in reach:
                continue
            feeds = reach[ins]
        else:
            feeds = set().union(*[reach[s] for s in ins if s in reach])
            if not feeds:
                continue
        op = ops[i]
        op_def = op._op_def
        if op_def.is_stateful and not op._type.startswith(_READ_ONLY_UPDATES) or op._type == "LoopCond":
            for k in feeds:
                borrow[k] = False
        elif op_def.is_view or i in transfers or op._type in _FORWARDING or op._id in aliasing:
            step_outs = outs[i]
            for s in (step_outs,) if type(step_outs) is int else step_outs:
                if s is not None:
                    reach.setdefault(s, set()).update(feeds)
    for i, slot in enumerate(plan.fetch_slots):
        if slot in reach and not plan.fetch_copies[i]:
            for k in reach[slot]:
                borrow[k] = False
    return tuple(borrow)


def _expansion(key):
    """The function a registered key type (register_session_run_conversion_functions) expands its feeds with."""
    return registered_expansion(key, 2) if REGISTERED_EXPANSIONS else None


def _flat_items(feed_dict: Mapping, keys_only: bool = False) -> list[tuple]:
    """(key, value) pairs of `feed_dict` in flat order: a nested-tuple key takes its value apart the same way, and a
    key of a registered type (a SparseTensor or IndexedSlices too) gives the pairs its function returns. With
    `keys_only` the values are not taken apart (they are None): make_callable resolves its feed keys before it has
    values."""
    items = []
    for key, value in feed_dict.items():
        expand = _expansion(key)
        if expand is not None:
            keys = registered_expansion(key, 3) if keys_only else None  # the tensors, without taking a value apart
            items.extend([(k, None) for k in keys(key)] if keys is not None else expand(key, value))
        elif isinstance(key, tuple):
            flat_keys = flatten(key)
            flat_values = [None] * len(flat_keys) if keys_only else flatten(value)
            if len(flat_keys) != len(flat_values):
                raise ValueError(f"Could not flatten dictionary. Key had {len(flat_keys)} elements, but value had "
                                 f"{len(flat_values)} elements. Key: {flat_keys}, value: {_clip(describe(value))}.")
            items.extend(zip(flat_keys, flat_values))
        else:
            items.append((key, value))
    return items


def _flatten_items(feed_dict: Mapping) -> list:
    """The values of `feed_dict` in flat key order (see _flat_items)."""
    return [value for _, value in _flat_items(feed_dict)]


def feed_tensors(graph, feed_dict) -> tuple[list, Callable | None]:
    """The fed tensors of a feed_dict's keys, in order, and how to flatten a feed_dict with these keys into one value
    per tensor (None when no key is a tuple: then the values are `feed_dict.values()` as they are).

    Raises TF's errors: TypeError for a key that is not a tensor of this graph, ValueError for a tensor marked with
    `graph.prevent_feeding` and for nested keys that repeat a key.
    """
    if not isinstance(feed_dict, Mapping):
        raise TypeError(f"input must be a dictionary, got feed_dict of type {type(feed_dict).__name__}")
    nested = any(isinstance(key, tuple) or _expansion(key) is not None for key in feed_dict)
    keys = [key for key, _ in _flat_items(feed_dict, keys_only=True)] if nested else list(feed_dict)
    if nested:
        seen: set = set()
        for key in keys:
            if key in seen:
                raise ValueError(f"Could not flatten dictionary: key {key} is not unique.")
            seen.add(key)
    tensors = []
    for key in keys:
        try:
            tensor = graph.as_graph_element(key.decode() if isinstance(key, bytes) else key, allow_tensor=True,
                                            allow_operation=False)
        except (KeyError, ValueError, TypeError) as e:
            raise TypeError(f"Cannot interpret feed_dict key as Tensor: {e.args[0] if e.args else e}") from None
        if not graph.is_feedable(tensor):
            raise ValueError(f"Tensor {tensor} may not be fed.")
        tensors.append(tensor)
    return tensors, (_flatten_items if nested else None)
