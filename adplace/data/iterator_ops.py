"""tf.data.Iterator in TF1 graph mode: a resource on the CPU that walks a dataset; `get_next()` is the op that
yields the next element (OutOfRangeError at the end).

    iterator = tf.data.Iterator.from_structure(ds.output_types, ds.output_shapes)
    init_train, init_test = iterator.make_initializer(train), iterator.make_initializer(test)
    x, y = iterator.get_next()

    handle = tf.placeholder(tf.string, [])                       # a feedable iterator
    it = tf.data.Iterator.from_string_handle(handle, ds.output_types, ds.output_shapes)
    sess.run(it.get_next(), {handle: sess.run(train_iterator.string_handle())})

A one-shot iterator's dataset is rebuilt inside its OneShotIterator op's `dataset_factory` function (TF's capture
by value), so it may not depend on placeholders or variables.
"""
from __future__ import annotations

import itertools

from adplace.data import structure
from adplace.framework import dtypes as _dtypes
from adplace.framework import function_graph
from adplace.framework.default_graph import name_scope
from adplace.framework.graph import get_default_graph
from adplace.framework.operation import Operation, Tensor
from adplace.ops import dataset_ops as gen

_shared_names = itertools.count()


class Iterator:
    """An iterator resource, its initializer (if any) and the structure of its elements."""

    def __init__(self, iterator_resource: Tensor, initializer: Operation | None, output_types, output_shapes,
                 output_classes=None):
        del output_classes  # always Tensor here
        self._iterator_resource = iterator_resource
        self._initializer = initializer
        self._spec = structure.from_types_and_shapes(output_types, output_shapes)
        self._string_handle = None

    output_types = property(lambda self: structure.types(self._spec))
    output_shapes = property(lambda self: structure.shapes(self._spec))
    output_classes = property(lambda self: structure.classes(self._spec))

    @property
    def initializer(self) -> Operation:
        if self._initializer is None:
            raise ValueError("Iterator does not have an initializer.")
        return self._initializer

    @staticmethod
    def from_structure(output_types, output_shapes=None, shared_name: str | None = None,
                       output_classes=None) -> "Iterator":
        """An iterator for elements of this structure, not yet bound to a dataset (see make_initializer)."""
        spec = structure.from_types_and_shapes(output_types, output_shapes)
        flat = structure.flatten(spec)
        resource = gen.iterator_op("IteratorV2", [], {"shared_name": shared_name or "", "container": "",
                                                      "output_types": [s.dtype for s in flat],
                                                      "output_shapes": [s.shape for s in flat]}, name="Iterator")
        return Iterator(resource, None, structure.types(spec), structure.shapes(spec), output_classes)

    @staticmethod
    def from_string_handle(string_handle, output_types, output_shapes=None, output_classes=None) -> "Iterator":
        """The iterator a string handle (Iterator.string_handle(), usually fed) names, at each run."""
        from adplace.framework.conversion import convert_to_tensor
        spec = structure.from_types_and_shapes(output_types, output_shapes)
        flat = structure.flatten(spec)
        handle = convert_to_tensor(string_handle, _dtypes.string, name="string_handle")
        resource = gen.iterator_op("IteratorFromStringHandleV2", [handle],
                                   {"output_types": [s.dtype for s in flat],
                                    "output_shapes": [s.shape for s in flat]})
        return Iterator(resource, None, structure.types(spec), structure.shapes(spec), output_classes)

    def make_initializer(self, dataset, name: str | None = None) -> Operation:
        """The op that (re)starts this iterator on `dataset`, whose element structure and types must match."""
        if not structure.same_structure(self._spec, dataset._spec):
            raise TypeError(f"Expected output structure {self.output_types}, but got dataset with output "
                            f"structure {dataset.output_types}.")
        mine, theirs = structure.flatten(self._spec), structure.flatten(dataset._spec)
        if [s.dtype for s in mine] != [s.dtype for s in theirs]:
            raise TypeError(f"Expected output types {self.output_types} but got dataset with output types "
                            f"{dataset.output_types}.")
        for a, b in zip(mine, theirs):
            if not a.shape.is_compatible_with(b.shape):
                raise TypeError(f"Expected output shapes compatible with {self.output_shapes} but got dataset "
                                f"with output shapes {dataset.output_shapes}.")
        with name_scope(name, "make_initializer") as scope:
            return gen.make_iterator(dataset._variant_tensor, self._iterator_resource, name=scope)

    def get_next(self, name: str | None = None):
        """The next element, in the dataset's structure (OutOfRangeError when none is left)."""
        flat = structure.flatten(self._spec)
        values = gen.get_next(self._iterator_resource, [s.dtype for s in flat], [s.shape for s in flat],
                              name=name or "IteratorGetNext")
        return structure.pack(self._spec, values)

    def string_handle(self, name: str | None = None) -> Tensor:
        """A string tensor naming this iterator, to feed to an Iterator.from_string_handle."""
        if name is None:
            if self._string_handle is None:
                self._string_handle = gen.string_handle(self._iterator_resource)
            return self._string_handle
        return gen.string_handle(self._iterator_resource, name=name)


def one_shot_iterator(dataset) -> Iterator:
    """OneShotIterator: its dataset_factory function rebuilds `dataset`'s ops, which must not read placeholders or
    variables; the iterator starts on its first run."""
    outer = get_default_graph()
    if dataset._variant_tensor.graph is not outer:
        raise ValueError("The dataset must be from the default graph to make a one-shot iterator of it.")

    def factory():
        return [_copy_by_value(dataset._variant_tensor)]

    function, _ = function_graph.trace("make_dataset", factory, [], outer)
    flat = structure.flatten(dataset._spec)
    resource = gen.iterator_op("OneShotIterator", [], {"dataset_factory": function, "container": "",
                                                       "shared_name": "", "output_types": [s.dtype for s in flat],
                                                       "output_shapes": [s.shape for s in flat]},
                               name="OneShotIterator")
    return Iterator(resource, None, dataset.output_types, dataset.output_shapes)


def _copy_by_value(tensor: Tensor) -> Tensor:
    """`tensor`'s op and every op it depends on (data and control inputs), made again in the default (function)
    graph. Placeholders and variables cannot be copied (TF's capture by value refuses them too)."""
    order, seen, stack = [], set(), [tensor.op]
    while stack:
        op = stack.pop()
        if op in seen:
            continue
        seen.add(op)
        if op.type == "Placeholder":
            raise ValueError(f"Cannot capture a placeholder (name:{op.name}, type:{op.type}) by value: use "
                             f"make_initializable_iterator() for a dataset that depends on a placeholder.")
        if any(t.dtype.is_ref_dtype for t in op.outputs) or op.type in ("VarHandleOp", "ReadVariableOp"):
            raise ValueError(f"Cannot capture a stateful node (name:{op.name}, type:{op.type}) by value: use "
                             f"make_initializable_iterator() for a dataset that reads a variable.")
        order.append(op)
        stack.extend(t.op for t in op.inputs)
        stack.extend(op.control_inputs)
    graph = get_default_graph()
    copies: dict = {}
    for op in _topological(order):
        inputs = [copies[t.op].outputs[t.value_index] for t in op.inputs]
        with graph.control_dependencies([copies[c] for c in op.control_inputs]):
            copies[op] = graph._create_op_internal(op.type, inputs, dict(op._attrs), op.name)
    return copies[tensor.op].outputs[tensor.value_index]


def _topological(ops: list) -> list:
    """`ops` in creation order, which is topological in a graph."""
    return sorted(ops, key=lambda op: op._id)
