"""Operation and Tensor: the nodes and edges of a graph; NodeDef, the proto an op is written as.

An op's `device` is its *requested* device (canonical form, e.g. "/device:GPU:0"); where it actually runs is decided
by the placer at session run time and never written back here.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from adplace.framework import dtypes as _dtypes
from adplace.framework.device_spec import DeviceSpecV2, canonical_name
from adplace.framework.errors import OperatorNotAllowedInGraphError
from adplace.framework.session_stack import session_for
from adplace.framework.tensor_shape import TensorShape, as_shape
from adplace.lib import protos

if TYPE_CHECKING:
    from adplace.framework.graph import Graph



def __getattr__(name: str):
    """NodeDef: what `op.node_def` returns and device functions may be given, TF's proto (tf.NodeDef), loaded on first
    use so that importing adplace loads no protobuf."""
    if name == "NodeDef":
        return protos.node_def_pb2.NodeDef
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


class TensorRef:
    """What `Tensor.ref()` returns: hashed and compared by the tensor's identity; `deref()` gives it back."""

    __slots__ = ("_tensor",)

    def __init__(self, tensor: "Tensor"):
        self._tensor = tensor

    def deref(self) -> "Tensor":
        return self._tensor

    def __hash__(self) -> int:
        return id(self._tensor)

    def __eq__(self, other) -> bool:
        return isinstance(other, TensorRef) and other._tensor is self._tensor

    def __repr__(self) -> str:
        return f"<Reference wrapping {self._tensor!r}>"


class Tensor:
    """A symbolic output of an Operation: (op, index), dtype and static shape. Values exist only in Session.run."""

    # __slots__: a graph holds up to millions of these; slots halve their memory and speed attribute access.
    __slots__ = ("_op", "_value_index", "_dtype", "_shape", "__weakref__")
    __array_priority__ = 100  # so ndarray + Tensor defers to Tensor.__radd__

    def __init__(self, op: "Operation", value_index: int, dtype: _dtypes.DType, shape: TensorShape):
        self._op, self._value_index, self._dtype, self._shape = op, value_index, dtype, shape

    op = property(lambda self: self._op)
    value_index = property(lambda self: self._value_index)
    dtype = property(lambda self: self._dtype)
    graph = property(lambda self: self._op._graph)
    shape = property(lambda self: self._shape)
    device = property(lambda self: self._op._device_text)

    @property
    def name(self) -> str:
        return f"{self._op._name}:{self._value_index}"

    def get_shape(self) -> TensorShape:
        return self._shape

    def set_shape(self, shape) -> None:
        """Refine the static shape; ValueError if incompatible."""
        self._shape = self._shape.merge_with(as_shape(shape))

    def _shape_tuple(self) -> tuple | None:
        """The static shape as a tuple (None for unknown dims), or None when the rank is unknown (TF's private)."""
        return self._shape.as_tuple()

    def consumers(self) -> list["Operation"]:
        return [op for op in self._op._consumers if any(t is self for t in op._inputs)]

    def eval(self, feed_dict=None, session=None):
        """The value of this tensor in `session` (default: the default session)."""
        return session_for(self._op._graph, session, "evaluate tensor").run(self, feed_dict)

    def _as_node_def_input(self) -> str:
        return self._op._name if self._value_index == 0 else f"{self._op._name}:{self._value_index}"

    def __repr__(self) -> str:
        return f"<tf.Tensor '{self.name}' shape={self._shape} dtype={self._dtype.name}>"

    def __str__(self) -> str:
        """TF's text: `Tensor("add:0", shape=(2,), dtype=float32, device=/device:GPU:0)`; the shape only when
        the rank is known, the device only when one was requested."""
        shape = f", shape={self._shape}" if self._shape.ndims is not None else ""
        device = f", device={self.device}" if self.device else ""
        return f'Tensor("{self.name}"{shape}, dtype={self._dtype.name}{device})'

    def __bool__(self):
        raise OperatorNotAllowedInGraphError(f"Using a `tf.Tensor` as a Python `bool` is not allowed: {self.name!r} has no value until "
                        "Session.run. Use `if t is not None:` to test for None, or tf.cond to branch on its value.")

    def __iter__(self):
        """`self[0]`, `self[1]`, ... along a statically known first dimension (`a, b = t` unpacks a pair).

        Indexing is the `__getitem__` that ops/slicing_ops registers on Tensor, as TF registers its operators.
        """
        dims = self._shape.as_tuple()
        if dims is None:
            raise TypeError(f"Cannot iterate over a tensor with unknown shape ({self.name!r} is not iterable).")
        if not dims:
            raise TypeError(f"Cannot iterate over a scalar tensor ({self.name!r} is not iterable).")
        if dims[0] is None:
            raise TypeError(f"Cannot iterate over a tensor with unknown first dimension ({self.name!r} is not "
                            f"iterable: shape {self._shape}).")
        return (self[i] for i in range(dims[0]))

    def experimental_ref(self) -> "TensorRef":
        """A hashable reference to this tensor, for use as a dict key or set member (tf.Tensor.experimental_ref)."""
        return TensorRef(self)

    ref = experimental_ref

    def __len__(self):
        raise TypeError(f"len is not well defined for symbolic Tensors ({self.name!r}). Use tf.shape(x)[0].")

    def __array__(self, dtype=None, copy=None):
        raise NotImplementedError(f"Cannot convert a symbolic Tensor ({self.name}) to a numpy array: "
                                  "run it with Session.run first.")

    __hash__ = object.__hash__


class Operation:
    """A node of the graph: type, inputs, control inputs, attrs, outputs and the requested device."""

    __slots__ = ("_graph", "_name", "_type", "_inputs", "_control_inputs", "_outputs", "_attrs", "_device",
                 "_device_text", "_id", "_colocation", "_consumers", "_control_outputs", "_op_def", "_original_op",
                 "_control_flow_context", "__weakref__")

    def __init__(self, graph: Graph, op_type: str, name: str, inputs: tuple, attrs: dict, control_inputs: list,
                 output_specs: list, op_def):
        self._graph, self._type, self._name = graph, op_type, name
        self._inputs, self._attrs, self._op_def = inputs, attrs, op_def
        self._device = self._device_text = ""
        self._colocation = ()
        self._original_op = graph._state.original_op  # set while a gradient function builds this op
        self._control_flow_context = None  # the cond branch or while body it was built in (set by the graph)
        self._consumers: list[Operation] = []
        self._control_outputs: list[Operation] = []
        seen = {id(t._op) for t in inputs}
        self._control_inputs = []
        for c in control_inputs:
            if id(c) not in seen:
                seen.add(id(c))
                self._control_inputs.append(c)
        self._outputs = tuple(Tensor(self, i, dt, sh) for i, (dt, sh) in enumerate(output_specs))

    name = property(lambda self: self._name)
    type = property(lambda self: self._type)
    graph = property(lambda self: self._graph)
    outputs = property(lambda self: list(self._outputs))
    control_inputs = property(lambda self: list(self._control_inputs))
    device = property(lambda self: self._device_text)
    op_def = property(lambda self: self._op_def, doc="The op type's definition (its `name` is the op type).")

    @property
    def inputs(self) -> tuple:
        return self._inputs

    @property
    def node_def(self):
        """This op as TF's NodeDef proto (graph_io.node_def: TF's attrs, `_class` for colocation)."""
        from adplace.framework.graph_io import node_def
        return node_def(self)

    def values(self) -> tuple:
        return self._outputs

    def get_attr(self, name: str):
        if name == "_class" and self._colocation:
            return list(self._colocation)
        try:
            return self._attrs[name]
        except KeyError:
            raise ValueError(f"Operation '{self._name}' has no attr named '{name}'.") from None

    def colocation_groups(self) -> list[bytes]:
        """The `loc:@name` groups this op must share a device with (its own name when none)."""
        return list(self._colocation) if self._colocation else [b"loc:@" + self._name.encode()]

    def run(self, feed_dict=None, session=None) -> None:
        """Run this op in `session` (default: the default session)."""
        session_for(self._graph, session, "execute operation").run(self, feed_dict)

    def _add_control_input(self, op: "Operation") -> None:
        """Make this op wait for `op` too (TF's private Operation._add_control_input); an existing edge is kept once."""
        self._add_control_inputs([op])

    def _add_control_inputs(self, ops) -> None:
        """Add control inputs after creation, skipping ones already present, as TF's C API does."""
        ops = list(ops)
        for op in ops:
            if not isinstance(op, Operation):
                raise TypeError(f"op must be an Operation: {op}")
        with self._graph._lock:
            for op in ops:
                if all(c is not op for c in self._control_inputs):
                    self._control_inputs.append(op)
                    op._control_outputs.append(self)

    def _remove_all_control_inputs(self) -> None:
        """Drop every control input (TF's private Operation._remove_all_control_inputs)."""
        with self._graph._lock:
            for c in self._control_inputs:
                c._control_outputs[:] = [o for o in c._control_outputs if o is not self]
            self._control_inputs = []

    def _get_control_flow_context(self):
        """The cond branch or while body this op was built in (TF's private accessor); None at top level."""
        return self._control_flow_context

    def _update_input(self, index: int, tensor: "Tensor") -> None:
        """Replace input `index` (TF's private Operation._update_input): a while loop's Merge gets its NextIteration
        input once the body is built. Same dtype only; consumers lists follow."""
        old = self._inputs[index]
        if tensor._dtype != old._dtype:
            raise TypeError(f"Cannot update input {index} of {self._name}: {tensor._dtype.name} is not "
                            f"{old._dtype.name}")
        with self._graph._lock:
            self._inputs = self._inputs[:index] + (tensor,) + self._inputs[index + 1:]
            if not any(t._op is old._op for t in self._inputs) and self in old._op._consumers:
                old._op._consumers.remove(self)
            if self not in tensor._op._consumers:
                tensor._op._consumers.append(self)

    def _set_device(self, device) -> None:
        """Request `device`. `op.device` keeps the text as given (TF stores a device function's "/gpu:0"
        verbatim); placement and colocation compare the canonical form in `_device`."""
        text = device.to_string() if isinstance(device, DeviceSpecV2) else device
        self._device = canonical_name(text)
        self._device_text = text or ""

    def __repr__(self) -> str:
        return f"<tf.Operation '{self._name}' type={self._type}>"

    def __str__(self) -> str:
        return str(self.node_def)

    __hash__ = object.__hash__


def is_variable_op(op: Operation) -> bool:
    """Whether `op` holds a variable: no inputs, and its one output is the variable by reference (VariableV2)."""
    return not op._inputs and len(op._outputs) == 1 and op._outputs[0]._dtype.is_ref_dtype


def ref_variable(tensor: Tensor) -> Operation:
    """The variable a reference tensor points to: a VariableV2's output, or an Assign/Apply* output passed on.

    An op with a reference output hands on the reference it took as its first ref input (TF's `output_ref`), so
    `tf.assign(v, 1.0)` and `v.assign_add(2.0)` both lead back to `v`'s VariableV2.
    """
    op = tensor._op
    while not is_variable_op(op) and op._op_def.ref_inputs:
        op = op._inputs[op._op_def.ref_inputs[0]]._op
    return op


def ancestor_op_ids(elements: list) -> set:
    """Ids of every op the elements (Tensors or Operations) depend on, through data, reference and control edges,
    their own ops included."""
    stack = [e._op if isinstance(e, Tensor) else e for e in elements]
    seen: set = set()
    while stack:
        op = stack.pop()
        if op._id in seen:
            continue
        seen.add(op._id)
        stack.extend(t._op for t in op._inputs)
        stack.extend(op._control_inputs)
    return seen
