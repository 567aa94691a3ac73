"""TensorArray: a list of tensors that graph ops write and read by index (TF1's tf.TensorArray over the V3 ops).

Each op takes the array's `handle` (a resource) and a float `flow` scalar; ops that change the array return a new
flow, and `write`, `scatter`, `unstack` and `split` return a new TensorArray object holding it, so later reads
depend on earlier writes through data edges. Gradients are in tensor_array_grad.py, kernels in
adplace.kernels.tensor_array.

    ta = tf.TensorArray(tf.float32, size=3)
    ta = ta.write(0, 1.0).write(1, 2.0).write(2, 3.0)
    total = tf.reduce_sum(ta.stack())                      # 6.0
    rows = tf.TensorArray(tf.float32, size=2).unstack(m)    # rows.read(1) is m[1]
"""
from __future__ import annotations

import contextlib

import numpy as np

from adplace.framework import dtypes as _dtypes
from adplace.framework.conversion import convert_to_tensor
from adplace.framework.default_graph import colocate_with, get_default_graph, name_scope
from adplace.framework.operation import Tensor
from adplace.framework.registry import register_op
from adplace.framework.tensor_shape import TensorShape, as_shape, dims_text, unknown_shape
from adplace.ops import array_ops, math_ops
from adplace.ops.op_builder import apply_op, apply_op_1, check_dtype, constant_value, shapes_text

_HANDLE = TensorShape([2])
_SCALAR = TensorShape([])
# Ops whose output 0 is their input 0's TensorArray handle: shape inference follows them to the TensorArrayV3.
_HANDLE_PASSING = frozenset({"TensorArrayGradV3", "Identity", "Enter", "RefEnter", "Switch", "RefSwitch", "Merge",
                             "RefMerge", "Exit", "RefExit", "NextIteration", "RefNextIteration"})


# --- shape inference ------------------------------------------------------------------------------------------------
def _where(op_type: str, name: str, inputs) -> str:
    return f" for '{name}' (op: '{op_type}') with input shapes: {shapes_text(inputs)}."


def _check_ranks(op_type: str, name: str, inputs, ranks: dict) -> None:
    """TF's WithRank checks: {input index: rank}; the handle (input 0, when given rank 1) must also hold 2."""
    for i, rank in ranks.items():
        dims = inputs[i]._shape.as_tuple()
        if dims is not None and len(dims) != rank:
            raise ValueError(f"Shape must be rank {rank} but is rank {len(dims)}{_where(op_type, name, inputs)}")
    if ranks.get(0) == 1:
        dims = inputs[0]._shape.as_tuple()
        if dims is not None and dims[0] not in (None, 2):
            raise ValueError(f"Dimension must be 2 but is {dims[0]}{_where(op_type, name, inputs)}")


def _check_types(op_type: str, inputs, types: dict) -> None:
    for i, (arg, dtype) in types.items():
        check_dtype(op_type, arg, inputs[i]._dtype, (dtype,))


def handle_element_shape(handle: Tensor) -> TensorShape | None:
    """The element shape TF's shape functions attach to a TensorArray handle: the TensorArrayV3's element_shape
    when it is fully defined or all elements share one shape (infer_shape); None when there is none."""
    t = handle
    for _ in range(1000):
        op = t._op
        if op._type == "TensorArrayV3":
            shape = op._attrs.get("element_shape") or unknown_shape()
            return shape if shape.is_fully_defined() or op._attrs.get("identical_element_shapes") else None
        if op._type not in _HANDLE_PASSING or not op._inputs:
            return None
        t = op._inputs[0]
    return None


def _merge_shapes(a: TensorShape, b: TensorShape, where: str) -> TensorShape:
    """TF's InferenceContext::Merge, with its error messages."""
    da, db = a.as_tuple(), b.as_tuple()
    if da is not None and db is not None:
        if len(da) != len(db):
            raise ValueError(f"Shapes must be equal rank, but are {len(da)} and {len(db)}{where}")
        for i, (x, y) in enumerate(zip(da, db)):
            if x is not None and y is not None and x != y:
                raise ValueError(f"Dimension {i} in both shapes must be equal, but are {x} and {y}. Shapes are "
                                 f"{dims_text(da)} and {dims_text(db)}.{where}")
    return a.merge_with(b)


def _creation_infer(op_type: str):
    def infer(inputs, attrs, name):
        if op_type == "TensorArrayV3":
            _check_types(op_type, inputs, {0: ("size", _dtypes.int32)})
            _check_ranks(op_type, name, inputs, {0: 0})
        else:
            _check_types(op_type, inputs, {0: ("handle", _dtypes.resource), 1: ("flow_in", _dtypes.float32)})
            _check_ranks(op_type, name, inputs, {0: 1})
        return [(_dtypes.resource, _HANDLE), (_dtypes.float32, _SCALAR)]
    return infer


def _write_infer(inputs, attrs, name):
    op_type = "TensorArrayWriteV3"
    _check_types(op_type, inputs, {0: ("handle", _dtypes.resource), 1: ("index", _dtypes.int32),
                                   3: ("flow_in", _dtypes.float32)})
    _check_ranks(op_type, name, inputs, {0: 1, 1: 0, 3: 0})
    element = handle_element_shape(inputs[0])
    if element is not None:
        _merge_shapes(element, inputs[2]._shape, _where(op_type, name, inputs))
    return [(_dtypes.float32, _SCALAR)]


def _read_infer(inputs, attrs, name):
    op_type = "TensorArrayReadV3"
    _check_types(op_type, inputs, {0: ("handle", _dtypes.resource), 1: ("index", _dtypes.int32),
                                   2: ("flow_in", _dtypes.float32)})
    _check_ranks(op_type, name, inputs, {0: 1, 1: 0, 2: 0})
    return [(attrs["dtype"].base_dtype, handle_element_shape(inputs[0]) or unknown_shape())]


def _gather_infer(inputs, attrs, name):
    op_type = "TensorArrayGatherV3"
    _check_types(op_type, inputs, {0: ("handle", _dtypes.resource), 1: ("indices", _dtypes.int32),
                                   2: ("flow_in", _dtypes.float32)})
    _check_ranks(op_type, name, inputs, {0: 1, 1: 1, 2: 0})
    element = handle_element_shape(inputs[0])
    if element is None:
        element = attrs.get("element_shape") or unknown_shape()
    return [(attrs["dtype"].base_dtype, inputs[1]._shape.with_rank(1).concatenate(element))]


def _scatter_infer(inputs, attrs, name):
    op_type = "TensorArrayScatterV3"
    _check_types(op_type, inputs, {0: ("handle", _dtypes.resource), 1: ("indices", _dtypes.int32),
                                   3: ("flow_in", _dtypes.float32)})
    _check_ranks(op_type, name, inputs, {0: 1, 1: 1, 3: 0})
    where = _where(op_type, name, inputs)
    value = inputs[2]._shape
    if value.ndims == 0:
        raise ValueError(f"Shape must be at least rank 1 but is rank 0{where}")
    _merge_shapes(inputs[1]._shape.with_rank(1), value[:1] if value.ndims is not None else unknown_shape(1), where)
    element = handle_element_shape(inputs[0])
    if element is not None:
        _merge_shapes(element, value[1:], where)
    return [(_dtypes.float32, _SCALAR)]


def _concat_infer(inputs, attrs, name):
    op_type = "TensorArrayConcatV3"
    _check_types(op_type, inputs, {0: ("handle", _dtypes.resource), 1: ("flow_in", _dtypes.float32)})
    _check_ranks(op_type, name, inputs, {0: 1, 1: 0})
    return [(attrs["dtype"].base_dtype, unknown_shape()), (_dtypes.int64, TensorShape([None]))]


def _split_infer(inputs, attrs, name):
    op_type = "TensorArraySplitV3"
    _check_types(op_type, inputs, {0: ("handle", _dtypes.resource), 2: ("lengths", _dtypes.int64),
                                   3: ("flow_in", _dtypes.float32)})
    _check_ranks(op_type, name, inputs, {0: 1, 2: 1, 3: 0})
    return [(_dtypes.float32, _SCALAR)]


def _size_infer(inputs, attrs, name):
    _check_types("TensorArraySizeV3", inputs, {0: ("handle", _dtypes.resource), 1: ("flow_in", _dtypes.float32)})
    _check_ranks("TensorArraySizeV3", name, inputs, {0: 1})
    return [(_dtypes.int32, _SCALAR)]


def _close_infer(inputs, attrs, name):
    _check_types("TensorArrayCloseV3", inputs, {0: ("handle", _dtypes.resource)})
    _check_ranks("TensorArrayCloseV3", name, inputs, {0: 1})
    return []


register_op("TensorArrayV3", _creation_infer("TensorArrayV3"), is_stateful=True)
register_op("TensorArrayGradV3", _creation_infer("TensorArrayGradV3"), is_stateful=True)
register_op("TensorArrayWriteV3", _write_infer, is_stateful=True)
register_op("TensorArrayReadV3", _read_infer, is_stateful=True, is_view=True)  # the value written, as it was
register_op("TensorArrayGatherV3", _gather_infer, is_stateful=True)
register_op("TensorArrayScatterV3", _scatter_infer, is_stateful=True)
register_op("TensorArrayConcatV3", _concat_infer, is_stateful=True)
register_op("TensorArraySplitV3", _split_infer, is_stateful=True)
register_op("TensorArraySizeV3", _size_infer, is_stateful=True)
register_op("TensorArrayCloseV3", _close_infer, is_stateful=True)


# --- the TensorArray class ------------------------------------------------------------------------------------------
def _partial_shape(shape) -> TensorShape:
    return unknown_shape() if shape is None else as_shape(shape)


class TensorArray:
    """A list of tensors of one dtype, written and read by index inside the graph (tf.TensorArray, TF1's graph
    implementation). Each write returns a new TensorArray sharing the handle: use it for later ops.

    `size` is the initial length (grown by writes past it when `dynamic_size`); with `clear_after_read` (the
    default) an element can be read once; with `infer_shape` all elements share one shape, learned from
    `element_shape` and the writes. With `colocate_with_first_write_call` the TensorArray's ops go where the value
    of its first write lives.
    """

    def __init__(self, dtype, size=None, dynamic_size=None, clear_after_read=None, tensor_array_name=None,
                 handle=None, flow=None, infer_shape: bool = True, element_shape=None,
                 colocate_with_first_write_call: bool = True, name: str | None = None):
        if handle is not None and tensor_array_name:
            raise ValueError("Cannot construct with both handle and tensor_array_name")
        if handle is not None and not isinstance(handle, Tensor):
            raise TypeError("Handle must be a Tensor")
        if handle is None and size is None:
            raise ValueError("Size must be provided if handle is not provided")
        for arg, value in (("size", size), ("element_shape", element_shape), ("dynamic_size", dynamic_size),
                           ("clear_after_read", clear_after_read)):
            if handle is not None and value is not None:
                raise ValueError(f"Cannot provide both a handle and {arg} at the same time")
        self._dynamic_size = bool(dynamic_size)
        self._dtype = _dtypes.as_dtype(dtype).base_dtype
        self._colocate_with_first_write_call = colocate_with_first_write_call
        self._colocate_with = [] if colocate_with_first_write_call else None
        self._element_shape = [_partial_shape(element_shape)]  # a list: TensorArrays sharing a handle share it
        self._infer_shape = infer_shape
        self._size = size
        with name_scope(name, "TensorArray", [v for v in (handle, size, flow) if isinstance(v, Tensor)]) as scope:
            if handle is not None:
                if flow is None:
                    raise ValueError("flow must not be None if handle is not None.")
                self._handle, self._flow = handle, flow
                return
            size = convert_to_tensor(size, dtype=_dtypes.int32, name="size") if not isinstance(size, Tensor) \
                else size
            attrs = {"dtype": self._dtype, "element_shape": self._element_shape[0],
                     "identical_element_shapes": bool(infer_shape), "dynamic_size": self._dynamic_size,
                     "clear_after_read": True if clear_after_read is None else bool(clear_after_read),
                     "tensor_array_name": tensor_array_name or ""}
            graph = get_default_graph()
            # Created without a device: colocating later ops with the first write places it with that value.
            ctx = contextlib.ExitStack()
            if colocate_with_first_write_call:
                ctx.enter_context(graph.device(None))
                ctx.enter_context(graph.colocate_with(None, ignore_existing=True))
            with ctx:
                self._handle, self._flow = apply_op("TensorArrayV3", [size], attrs, name=scope).outputs

    # --- properties -------------------------------------------------------------------------------------------
    flow = property(lambda self: self._flow, doc="The float scalar that orders the ops on this TensorArray.")
    dtype = property(lambda self: self._dtype)
    handle = property(lambda self: self._handle, doc="The resource handle of the TensorArray.")
    dynamic_size = property(lambda self: self._dynamic_size)
    element_shape = property(lambda self: self._element_shape[0], doc="The static shape of its elements.")
    _implementation = property(lambda self: self)  # where TF keeps what this class holds itself

    def _check_element_shape(self, shape) -> None:
        shape = as_shape(shape)
        if not shape.is_compatible_with(self.element_shape):
            raise ValueError(f"Inconsistent shapes: saw {shape} but expected {self.element_shape} ")
        if self._infer_shape:
            self._element_shape[0] = self.element_shape.merge_with(shape)

    @contextlib.contextmanager
    def _maybe_colocate_with(self, value: Tensor):
        """Colocate with the value of the first write (remembered across the TensorArrays sharing the handle)."""
        if not self._colocate_with_first_write_call:
            yield
            return
        if not self._colocate_with:
            self._colocate_with.append(value)
        with colocate_with(self._colocate_with[0]):
            yield

    def _with_flow(self, flow: Tensor) -> "TensorArray":
        """A TensorArray sharing this one's handle, shapes and colocation, with a new flow (TF's
        build_ta_with_new_flow)."""
        ta = TensorArray(self._dtype, handle=self._handle, flow=flow, infer_shape=self._infer_shape,
                         colocate_with_first_write_call=self._colocate_with_first_write_call)
        ta._dynamic_size, ta._size = self._dynamic_size, self._size
        ta._colocate_with, ta._element_shape = self._colocate_with, self._element_shape
        return ta

    def _value(self, value, dtype=None, preferred: bool = True) -> Tensor:
        if preferred:
            return convert_to_tensor(value, preferred_dtype=self._dtype, name="value")
        return convert_to_tensor(value, dtype=dtype, name="value")

    # --- methods ----------------------------------------------------------------------------------------------
    def identity(self) -> "TensorArray":
        """The same TensorArray with its flow through an Identity, so control dependencies in force apply to
        later ops on it."""
        return self._with_flow(array_ops.identity(self._flow))

    def grad(self, source: str, flow: Tensor | None = None, name: str | None = None) -> "TensorArray":
        """The gradient TensorArray of this one for the gradient computation `source` (made when it runs)."""
        flow = self._flow if flow is None else flow
        graph = self._handle.graph
        with name_scope(name, "TensorArrayGrad", [self._handle]), colocate_with(self._handle):
            g_handle, _ = apply_op("TensorArrayGradV3", [self._handle, flow], {"source": source}, name=name).outputs
            with graph.control_dependencies([g_handle]):
                flow = array_ops.identity(flow, name="gradient_flow")
            g = TensorArray(self._dtype, handle=g_handle, flow=flow, infer_shape=self._infer_shape,
                            colocate_with_first_write_call=False)
            g._element_shape = self._element_shape
            return g

    def read(self, index, name: str | None = None) -> Tensor:
        """The element at `index` (an int32 scalar)."""
        index = convert_to_tensor(index, dtype=_dtypes.int32, name="index")
        value = apply_op_1("TensorArrayReadV3", [self._handle, index, self._flow], {"dtype": self._dtype},
                           name=name)
        if self._element_shape:
            value.set_shape(self._element_shape[0])
        return value

    def write(self, index, value, name: str | None = None) -> "TensorArray":
        """Write `value` at `index`; returns the TensorArray to use from now on."""
        with name_scope(name, "TensorArrayWrite", [t for t in (self._handle, index, value) if isinstance(t, Tensor)]):
            value = self._value(value)
            self._check_element_shape(value.shape)
            index = convert_to_tensor(index, dtype=_dtypes.int32, name="index")
            with self._maybe_colocate_with(value):
                flow = apply_op_1("TensorArrayWriteV3", [self._handle, index, value, self._flow],
                                  {"T": value.dtype.base_dtype}, name=name)
            return self._with_flow(flow)

    def stack(self, name: str | None = None) -> Tensor:
        """All elements stacked along a new first dimension (each must be written, all of one shape)."""
        with colocate_with(self._handle), name_scope(name, "TensorArrayStack", [self._handle]):
            value = self.gather(math_ops.range(0, self.size()), name=name)
            size = None if self._size is None else constant_value(convert_to_tensor(self._size))
            if self.element_shape and not self._dynamic_size and size is not None:
                value.set_shape(TensorShape([int(size)]).concatenate(self.element_shape))
            return value

    def gather(self, indices, name: str | None = None) -> Tensor:
        """The elements at `indices` (an int32 vector), stacked."""
        indices = convert_to_tensor(indices, dtype=_dtypes.int32, name="indices")
        value = apply_op_1("TensorArrayGatherV3", [self._handle, indices, self._flow],
                           {"dtype": self._dtype, "element_shape": self._element_shape[0]}, name=name)
        if self.element_shape:
            value.set_shape(TensorShape([None]).concatenate(self.element_shape))
        return value

    def concat(self, name: str | None = None) -> Tensor:
        """All elements concatenated along their first dimension."""
        value, _ = apply_op("TensorArrayConcatV3", [self._handle, self._flow],
                            {"dtype": self._dtype, "element_shape_except0": self.element_shape[1:]},
                            name=name).outputs
        if self.element_shape:
            dim0 = None
            if self._infer_shape:
                size = constant_value(self.size())
                if size is not None and self.element_shape[0].value is not None:
                    dim0 = int(size) * self.element_shape[0].value
            value.set_shape(TensorShape([dim0]).concatenate(self.element_shape[1:]))
        return value

    def unstack(self, value, name: str | None = None) -> "TensorArray":
        """Write value[i] at index i, for each i along value's first dimension."""
        with name_scope(name, "TensorArrayUnstack", [t for t in (self._handle, value) if isinstance(t, Tensor)]):
            value = self._value(value)
            num_elements = array_ops.shape(value)[0]
            return self.scatter(indices=math_ops.range(0, num_elements), value=value, name=name)

    def scatter(self, indices, value, name: str | None = None) -> "TensorArray":
        """Write value[i] at indices[i]."""
        with name_scope(name, "TensorArrayScatter",
                        [t for t in (self._handle, value, indices) if isinstance(t, Tensor)]):
            value = self._value(value)
            self._check_element_shape(value.shape[1:])
            indices = convert_to_tensor(indices, dtype=_dtypes.int32, name="indices")
            with self._maybe_colocate_with(value):
                flow = apply_op_1("TensorArrayScatterV3", [self._handle, indices, value, self._flow],
                                  {"T": value.dtype.base_dtype}, name=name)
            return self._with_flow(flow)

    def split(self, value, lengths, name: str | None = None) -> "TensorArray":
        """Split value along its first dimension into pieces of `lengths` rows, one element each."""
        with name_scope(name, "TensorArraySplit",
                        [t for t in (self._handle, value, lengths) if isinstance(t, Tensor)]):
            value = self._value(value, self._dtype, preferred=False)
            with self._maybe_colocate_with(value):
                lengths_64 = math_ops.cast(lengths, _dtypes.int64)
                known = constant_value(lengths_64)
                if value.shape.ndims is not None and known is not None:
                    known = np.asarray(known)
                    if known.shape and known.size and known.max() == known.min():
                        self._check_element_shape(TensorShape([int(known[0])]).concatenate(value.shape[1:]))
                flow = apply_op_1("TensorArraySplitV3", [self._handle, value, lengths_64, self._flow],
                                  {"T": value.dtype.base_dtype}, name=name)
            return self._with_flow(flow)

    def size(self, name: str | None = None) -> Tensor:
        """The number of elements (an int32 scalar): the constant size of a fixed-size TensorArray."""
        if not self._dynamic_size and self._size is not None:
            return convert_to_tensor(self._size, dtype=_dtypes.int32)
        return apply_op_1("TensorArraySizeV3", [self._handle, self._flow], name=name)

    def close(self, name: str | None = None):
        """Release the elements; later ops on the TensorArray fail."""
        return apply_op("TensorArrayCloseV3", [self._handle], name=name)

    def mark_used(self) -> None:
        """TF's way to silence its warning about a TensorArray built and never used; adplace has none."""


def build_ta_with_new_flow(old_ta: TensorArray, flow: Tensor) -> TensorArray:
    """A TensorArray sharing `old_ta`'s handle, shapes and colocation, with the flow `flow` (TF's function of the
    same name; control flow uses it to carry TensorArrays through cond branches and loops)."""
    return old_ta._with_flow(flow)
