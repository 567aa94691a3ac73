"""What a Saver saves: checkpoint keys mapped to the variables behind them, whole or in slices (TF's
saveable_object_util.op_list_to_dict and saveable_objects_for_op).

A key maps to one whole variable, or to the parts of a partitioned variable (each with its SaveSliceInfo). As in TF,
each part is saved as a slice of the key's full tensor (SaveV2 with the part's `spec`), and RestoreV2 reads any
slice back from whatever slices were saved, so a variable saved in 3 parts restores into 2 parts, or into one
unpartitioned variable, and back.

    names_to_slices([pv])   # {"emb/w": [SavedSlice(<emb/w/part_0 ref>, <SaveSliceInfo "10 4 0,4:0,4">), ...]}
"""
from __future__ import annotations

import math
from typing import NamedTuple


from adplace.framework.operation import Operation, Tensor
from adplace.ops.partitioned_variables import PartitionedVariable
from adplace.ops.variable_def import SaveSliceInfo
from adplace.ops.variables import Variable


class SavedSlice(NamedTuple):
    """One variable a checkpoint entry is saved from and restored into: all of it (`slice_info` None) or the
    block `slice_info` names."""

    ref: Tensor
    slice_info: SaveSliceInfo | None


def _variable_ref(var) -> Tensor:
    """The VariableV2 ref tensor behind a Variable or a ref tensor; TypeError for anything else."""
    ref = var._ref() if isinstance(var, Variable) else var
    if not (isinstance(ref, Tensor) and ref.op.type == "VariableV2"):
        raise TypeError(f"Variable to save is not a Variable: {var}")
    return ref


def _slices_of(parts) -> list[SavedSlice]:
    """The parts of one sliced variable (a list or a PartitionedVariable), checked as TF checks them."""
    full_name = None
    slices = []
    for part in parts:
        if not isinstance(part, Variable):
            raise ValueError(f"Slices must all be Variables: {part}")
        info = part._get_save_slice_info()
        if info is None:
            raise ValueError(f"Slices must all be slices: {part}")
        if full_name is None:
            full_name = info.full_name
        elif full_name != info.full_name:
            raise ValueError(f"Slices must all be from the same tensor: {full_name} != {info.full_name}")
        slices.append(SavedSlice(_variable_ref(part), info))
    return slices


def _saveable(value) -> list[SavedSlice]:
    """The slices a dict value of Saver(var_list) stands for."""
    if isinstance(value, (list, tuple, PartitionedVariable)):
        return _slices_of(value)
    return [SavedSlice(_variable_ref(value), None)]


def _list_to_dict(var_list) -> dict[str, list[SavedSlice]]:
    """TF's op_list_to_dict: whole variables by op name, parts grouped under their full name."""
    names_to_slices: dict[str, list[SavedSlice]] = {}
    is_sliced: dict[str, bool] = {}
    for var in sorted(var_list, key=lambda v: str(getattr(v, "name", ""))):
        if isinstance(var, PartitionedVariable):
            if var.name in names_to_slices:
                raise ValueError(f"At least two variables have the same name: {var.name}")
            names_to_slices[var.name], is_sliced[var.name] = _slices_of(var), False
        elif isinstance(var, Variable) and var._get_save_slice_info() is not None:
            name = var._get_save_slice_info().full_name
            if name in names_to_slices and not is_sliced[name]:
                raise ValueError(f"Mixing slices and non-slices with the same name: {name}")
            names_to_slices.setdefault(name, []).extend(_slices_of([var]))
            is_sliced[name] = True
        else:
            ref = _variable_ref(var)
            if ref.op.name in names_to_slices:
                raise ValueError(f"At least two variables have the same name: {ref.op.name}")
            names_to_slices[ref.op.name], is_sliced[ref.op.name] = [SavedSlice(ref, None)], False
    return names_to_slices


def names_to_slices(var_list) -> dict[str, list[SavedSlice]]:
    """{checkpoint key: the slices saved under it} for Saver(var_list), with TF's errors.

    Raises:
      TypeError: `var_list` is not a dict or list, or holds something that is not a variable.
      ValueError: two variables share a key, one variable has two keys, slices disagree, or the slices of a key
        do not cover the whole variable exactly once (stricter than TF, which saves partial coverage).
    """
    if isinstance(var_list, dict):
        result = {key: _saveable(value) for key, value in var_list.items()}
    elif isinstance(var_list, (list, tuple, set)):
        result = _list_to_dict(var_list)
    else:
        raise TypeError(f"Variables to save should be passed in a dict or a list: {var_list}")
    seen_ops: set[Operation] = set()
    for key, slices in sorted(result.items()):
        for saved in slices:
            if saved.ref.op in seen_ops:
                raise ValueError(f"The same saveable will be restored with two names: {key}")
            seen_ops.add(saved.ref.op)
        if slices[0].slice_info is not None:
            _check_tiling(key, [saved.slice_info for saved in slices])
    return result


def _check_tiling(key: str, infos: list[SaveSliceInfo]) -> None:
    """ValueError unless the blocks of `infos` fill their full shape exactly once."""
    full_shape = [int(d) for d in infos[0].full_shape]
    boxes = []
    for info in infos:
        if [int(d) for d in info.full_shape] != full_shape:
            raise ValueError(f"The slices of {key!r} disagree on its full shape: {info.full_shape} vs. {full_shape}")
        box = [(int(o), int(o) + int(s)) for o, s in zip(info.var_offset, info.var_shape)]
        if len(box) != len(full_shape) or any(lo < 0 or hi > dim for (lo, hi), dim in zip(box, full_shape)):
            raise ValueError(f"Slice {info.spec!r} of {key!r} lies outside its full shape {full_shape}.")
        boxes.append(box)
    covered = sum(math.prod(hi - lo for lo, hi in box) for box in boxes)
    overlapping = any(all(max(a[0], b[0]) < min(a[1], b[1]) for a, b in zip(boxes[i], boxes[j]))
                      for i in range(len(boxes)) for j in range(i))
    if overlapping or covered != math.prod(full_shape):
        raise ValueError(f"Cannot save {key!r}: its {len(infos)} slices cover {covered} of its "
                         f"{math.prod(full_shape)} elements{' with overlaps' if overlapping else ''}. Pass every "
                         "part (e.g. the PartitionedVariable).")
