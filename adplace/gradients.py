"""Reverse-mode autodiff on the graph (tf.gradients), with gradient colocation and per-device aggregation.

    with tf.device(tf.assign_to_device("/device:GPU:0")):
        a = tf.Variable(1.0)
        b = tf.sin(a)
    with tf.device("/CPU:0"):
        c = tf.cos(b)
    g, = tf.gradients(c, a, colocate_gradients_with_ops=True)   # Sin's gradient on GPU:0, Cos's on CPU:0

The walk mirrors TF 1.x (gradients_util.py): the ops between xs and ys are found, each is differentiated once all
its consumers' gradients arrived, several gradients of one tensor are summed with add_n (per device first), and
each op's gradient ops are built under `<name>/<op name>_grad/`. With `colocate_gradients_with_ops` they are built
inside `colocate_with(op)`, so they land on the forward op's device; without it they follow the device scope in
force where `gradients` is called.
"""
from __future__ import annotations

import collections
import contextlib
import enum
import functools
import inspect
import itertools

from adplace.framework import dtypes as _dtypes
from adplace.framework.conversion import convert_to_tensor
from adplace.framework.default_graph import get_default_graph, name_scope
from adplace.framework.graph import GraphKeys
from adplace.framework.indexed_slices import IndexedSlices
from adplace.framework.nest import flatten
from adplace.framework.registry import RegisterGradient
from adplace.framework.operation import Operation, Tensor
from adplace.framework.registry import get_gradient_function
from adplace.ops import (array_grad, conv_grad, data_flow_grad, linalg_grad, math_grad,  # noqa: F401 - register
                         nn_grad, segment_grad, sparse_grad)  # noqa: F401 - gradients
from adplace.ops import array_ops, control_flow_grad, control_flow_ops, indexed_slices_ops, math_ops, while_grad
from adplace.ops.constant_op import constant
from adplace.ops.variable_scope import get_variable_scope

_DIFFERENTIABLE = _dtypes.FLOATING | _dtypes.COMPLEX


class AggregationMethod:
    """How several gradients of one tensor are summed (tf.AggregationMethod)."""
    ADD_N = 0
    DEFAULT = ADD_N
    EXPERIMENTAL_TREE = 1
    EXPERIMENTAL_ACCUMULATE_N = 2


class UnconnectedGradients(enum.Enum):
    """What `gradients` returns for an x that the ys do not depend on: None, or zeros shaped like x."""
    NONE = "none"
    ZERO = "zero"


def _as_list(values) -> list:
    return list(values) if isinstance(values, (list, tuple)) else [values]


def _is_differentiable(t: Tensor) -> bool:
    """Only floating and complex tensors carry gradients; integer tensors act as stop_gradients (as in TF)."""
    return t._dtype.base_dtype in _DIFFERENTIABLE


def _between_ops(to_ops: list, from_ops: list) -> set:
    """Ops on a path from some x to some y, following differentiable tensors only."""
    reached, stack = set(), list(from_ops)
    while stack:
        op = stack.pop()
        if op in reached:
            continue
        reached.add(op)
        for out in op._outputs:
            if _is_differentiable(out):
                stack.extend(out.consumers())
    between, stack = set(), [op for op in to_ops if op in reached]
    while stack:
        op = stack.pop()
        if op in between:
            continue
        between.add(op)
        stack.extend(t._op for t in op._inputs if t._op in reached)
    return between


def _check_same_graph(values: list) -> None:
    """TF's ValueError (ops.name_scope's graph check) when ys, xs, stop_gradients and grad_ys span several graphs;
    made before any op is built. Values that are not graph elements (Python numbers, arrays) belong to any graph."""
    original = None
    for value in values:
        element = value if isinstance(value, (Tensor, Operation)) else \
            value._as_graph_element() if hasattr(value, "_as_graph_element") else None
        if element is None:
            continue
        if original is None:
            original = element
        elif element.graph is not original.graph:
            raise ValueError(f"{element} must be from the same graph as {original}. tf.gradients builds its ops in "
                             f"one graph: create ys, xs, grad_ys and stop_gradients under the same "
                             f"`with graph.as_default():`.")


def _colocated(op: Operation, colocate: bool):
    """Where an op's gradient is built: with the op (ignoring outer device scopes), or where `gradients` is."""
    return op._graph.colocate_with(op, ignore_existing=True) if colocate else contextlib.nullcontext()


def _default_grad_ys(ys: list, grad_ys: list, colocate: bool) -> list:
    """Ones shaped like each y where grad_ys gives None; given grad_ys are checked and named grad_ys_<i>."""
    out = []
    for i, (y, grad_y) in enumerate(zip(ys, grad_ys)):
        with _colocated(y.op, colocate):
            if grad_y is None:
                if y.dtype.is_complex:
                    raise TypeError(f"Gradients of complex tensors must set grad_ys (y.dtype = {y.dtype!r})")
                dims = array_ops.shape(y)  # TF's order: gradients/Shape, then gradients/grad_ys_<i>, then Fill
                out.append(array_ops.fill(dims, constant(1, dtype=y.dtype.base_dtype, name=f"grad_ys_{i}")))
                continue
            if not isinstance(grad_y, IndexedSlices):
                grad_y = convert_to_tensor(grad_y, dtype=y.dtype.base_dtype)
            if y.dtype.is_floating and not grad_y.dtype.is_floating:
                raise TypeError(f"Gradient type {grad_y.dtype.name} generated for real-valued tensor {y.name} with "
                                f"type {y.dtype.name} must be real")
            out.append(_identity_grad_y(grad_y, i))
    return out


def _identity_grad_y(grad_y, i: int):
    """A given grad_y as the gradient walk's start (grad_ys_<i>); an IndexedSlices stays sparse, each part named."""
    if not isinstance(grad_y, IndexedSlices):
        return array_ops.identity(grad_y, name=f"grad_ys_{i}")
    dense_shape = grad_y.dense_shape
    if dense_shape is not None:
        dense_shape = array_ops.identity(dense_shape, name=f"grad_ys_{i}_shape")
    return IndexedSlices(array_ops.identity(grad_y.values, name=f"grad_ys_{i}_values"),
                         array_ops.identity(grad_y.indices, name=f"grad_ys_{i}_indices"), dense_shape)


def _multi_device_add_n(tensors: list) -> Tensor:
    """Sum gradients per device first (each partial sum colocated with its first tensor), then the partial sums."""
    by_device = collections.defaultdict(list)
    for t in tensors:
        by_device[t.device].append(t)
    summands = []
    for device in sorted(by_device):
        group = by_device[device]
        with group[0].op._graph.colocate_with(group[0].op, ignore_existing=True):
            summands.append(math_ops.add_n(group))
    return math_ops.add_n(summands)


def _aggregate(op: Operation, out_grads: list, method: int) -> list:
    """One gradient per output of `op`: None, the single gradient, or the sum of several (IndexedSlices among them
    are concatenated, staying sparse)."""
    result = []
    for grads in out_grads:
        if len(grads) < 2:
            result.append(grads[0] if grads else None)
        elif not all(isinstance(g, Tensor) for g in grads):
            result.append(indexed_slices_ops.aggregate_indexed_slices(grads))
        elif method == AggregationMethod.ADD_N:
            result.append(_multi_device_add_n(grads))
        else:  # TREE and ACCUMULATE_N: pairwise sums, so each gradient can be freed early
            with name_scope(op.name + "_gradient_sum"):
                running = grads[0]
                for g in grads[1:]:
                    running = math_ops.add_n([running, g])
                result.append(running)
    return result


def gradients(ys, xs, grad_ys=None, name: str = "gradients", colocate_gradients_with_ops: bool = False,
              gate_gradients: bool = False, aggregation_method: int | None = None, stop_gradients=None,
              unconnected_gradients="none") -> list:
    """Symbolic sum over ys of d(y)/d(x) for each x in xs (tf.gradients); None for an x the ys do not depend on.

    `grad_ys` weights each y (default ones); `stop_gradients` are tensors not differentiated through;
    `gate_gradients` makes each op's input gradients available together (tf.tuple); `aggregation_method` chooses
    how several gradients of one tensor are summed.
    """
    _check_same_graph(_as_list(ys) + _as_list(xs) + ([] if stop_gradients is None else _as_list(stop_gradients))
                      + ([] if grad_ys is None else _as_list(grad_ys)))
    ys = [convert_to_tensor(y, name="y") for y in _as_list(ys)]
    xs = [convert_to_tensor(x, name="x", as_ref=True) for x in _as_list(xs)]
    grad_ys = [None] * len(ys) if grad_ys is None else _as_list(grad_ys)
    if len(grad_ys) != len(ys):
        raise ValueError(f"Passed {len(grad_ys)} grad_ys for {len(ys)} ys")
    stop_gradients = [] if stop_gradients is None else [convert_to_tensor(t) for t in _as_list(stop_gradients)]
    method = AggregationMethod.DEFAULT if aggregation_method is None else aggregation_method
    if method not in (AggregationMethod.ADD_N, AggregationMethod.EXPERIMENTAL_TREE,
                      AggregationMethod.EXPERIMENTAL_ACCUMULATE_N):
        raise ValueError(f"Invalid aggregation_method specified {aggregation_method}.")
    try:
        unconnected = UnconnectedGradients(getattr(unconnected_gradients, "value", unconnected_gradients))
    except ValueError:
        raise ValueError(f"Unknown value for unconnected_gradients: {unconnected_gradients!r}") from None

    with name_scope(name, "gradients", ys + xs + [g for g in grad_ys if isinstance(g, Tensor)]), \
            while_grad.gradient_pass(get_default_graph()):
        grad_ys = _default_grad_ys(ys, grad_ys, colocate_gradients_with_ops)
        to_ops, from_ops = [y.op for y in ys], [x.op for x in xs]
        between = _between_ops(to_ops, from_ops)
        loop_exits = _LoopExits(between)
        between.update(loop_exits.unused_ops())
        pending = collections.Counter(t._op for op in between for t in op._inputs if t._op in between)
        exits_pending = collections.Counter(t._op for op in between if op._type == "Exit" for t in op._inputs
                                            if t._op in between)
        stop_ops = {op for op in from_ops if not any(pending[t._op] > 0 for t in op._inputs)}
        stop_ops.update(t.op for t in stop_gradients)

        grads: dict = {}  # op -> per output: a list of incoming gradients, then (once processed) their sum
        first_visits: set = set()  # loop Switches whose Exit-side gradient was taken (TF visits them twice)

        def add_grad(t: Tensor, grad: Tensor) -> None:
            grads.setdefault(t._op, [[] for _ in t._op._outputs])[t._value_index].append(grad)

        for y, grad_y in zip(ys, grad_ys):
            add_grad(y, grad_y)
        queue = collections.deque(dict.fromkeys(op for op in to_ops if op in between and pending[op] == 0))
        while queue:
            op = queue.popleft()
            if op._type == "Exit":
                ready, woken = loop_exits.arrive(op, grads.get(op))
                queue.extend(woken)
                if not ready:
                    continue  # no gradient into its loop yet: it waits (its Switch stays pending)
                if not grads.get(op, [[]])[0]:  # another Exit of its loop has one: zeros, as TF
                    add_grad(op._outputs[0], array_ops.zeros_like(op._outputs[0]))
            loop_switch = while_grad.is_loop_switch(op)
            first_visit = loop_switch and op not in first_visits
            flowing = any(grads.get(op, ()))  # nothing flows (a stop_gradient): no backward loop is needed
            loop_context = while_grad.grad_context(op) if flowing else contextlib.nullcontext()
            with _colocated(op, colocate_gradients_with_ops), loop_context:
                out_grads = _aggregate(op, grads.get(op, [[] for _ in op._outputs]), method)
                if not first_visit:
                    grads[op] = out_grads
                in_grads = _op_input_grads(op, out_grads, op not in stop_ops, gate_gradients)
                for i, (t_in, in_grad) in enumerate(zip(op._inputs, in_grads)):
                    if in_grad is None or not _is_differentiable(t_in):
                        continue
                    if not isinstance(in_grad, Tensor):  # IndexedSlices: the dense shape is not checked
                        add_grad(t_in, in_grad)
                        continue
                    try:
                        in_grad.set_shape(t_in._shape)
                    except ValueError:
                        raise ValueError(f"Incompatible shapes between op input and calculated input gradient. "
                                         f"Forward operation: {op.name}. Input index: {i}. Original input shape: "
                                         f"{t_in._shape}. Calculated input gradient shape: {in_grad._shape}") \
                            from None
                    add_grad(t_in, in_grad)
            if loop_switch:
                if not first_visit:
                    continue  # its inputs were counted down at its first visit
                first_visits.add(op)
            for t_in in op._inputs:
                source = t_in._op
                pending[source] -= 1
                if source not in between:
                    continue
                if pending[source] == 0 and (source not in first_visits or exits_pending[source] == 0):
                    queue.append(source)
                elif op._type == "Exit" and while_grad.is_loop_switch(source):
                    exits_pending[source] -= 1
                    if exits_pending[source] == 0:  # its Exit's gradient is in: the first of its two visits
                        queue.append(source)
        return [_result(grads, x, unconnected, method) for x in xs]


class _LoopExits:
    """The Exits of forward while loops in one gradient pass. A loop's backward path starts when one of its Exits
    gets a gradient; its Exits without one then start with zeros (TF's unused and deferred loop exits), so every
    loop variable's backward merge exists. A loop none of whose Exits gets a gradient builds nothing."""

    def __init__(self, between: set):
        self._unused: dict = {}    # loop -> Exits of variables the ys do not read whose Switch is on the path
        self._deferred: dict = {}  # loop -> Exits that came without a gradient before the loop had one
        self._started: set = set()
        for op in sorted(between, key=_op_id):
            if while_grad.is_loop_switch(op):
                for consumer in op._outputs[0].consumers():
                    if consumer._type == "Exit" and consumer not in between and \
                            _is_differentiable(consumer._outputs[0]):
                        self._unused.setdefault(op._control_flow_context, []).append(consumer)

    def unused_ops(self) -> list:
        return [op for ops in self._unused.values() for op in ops]

    def arrive(self, op: Operation, incoming) -> tuple[bool, list]:
        """An Exit about to be processed, with its incoming gradient lists: (process it now?, Exits to queue)."""
        loop = op._inputs[0]._op._control_flow_context
        if loop in self._started:
            return True, []
        if incoming is None or not incoming[0]:
            self._deferred.setdefault(loop, []).append(op)
            return False, []
        self._started.add(loop)
        return True, self._unused.pop(loop, []) + self._deferred.pop(loop, [])


def _op_id(op: Operation) -> int:
    return op._id


def _op_input_grads(op: Operation, out_grads: list, differentiate: bool, gate: bool) -> list:
    """Call the op's gradient function (missing output gradients filled with zeros); Nones when nothing flows."""
    if not differentiate or all(g is None for g in out_grads):
        return [None] * len(op._inputs)
    grad_fn = get_gradient_function(op)
    if grad_fn is None:
        return [None] * len(op._inputs)
    fill = not while_grad.is_loop_switch(op)  # a loop Switch tells its two visits apart by the missing gradient
    for i, g in enumerate(out_grads):
        if g is None and fill and _is_differentiable(op._outputs[i]):
            out_grads[i] = control_flow_grad.missing_switch_grad(op, i) if op._type == "Switch" else \
                array_ops.zeros_like(op._outputs[i])
    with name_scope(op.name + "_grad"), op._graph._original_op(op):
        in_grads = _as_list(grad_fn(op, *out_grads))
        if len(in_grads) != len(op._inputs):
            raise ValueError(f"Num gradients {len(in_grads)} generated for op {op.node_def} do not match num "
                             f"inputs {len(op._inputs)}")
        if gate and sum(g is not None for g in in_grads) > 1:
            with op._graph.device(None), op._graph.colocate_with(None, ignore_existing=True):
                in_grads = control_flow_ops.tuple(in_grads)
    return in_grads


def _result(grads: dict, x: Tensor, unconnected: UnconnectedGradients, method: int) -> Tensor | None:
    op_grads = grads.get(x._op)
    grad = None if op_grads is None else op_grads[x._value_index]
    if isinstance(grad, list):  # x's op was not processed (a consumer's gradient never came: a stop_gradient)
        grad = _aggregate(x._op, [grad], method)[0] if grad else None
    if grad is None and unconnected is UnconnectedGradients.ZERO:
        return array_ops.zeros_like(x)
    return grad


def _hessian_vector_product(ys, xs, v) -> list:
    """d/dxs of sum(d(ys)/d(xs) * v): the Hessian of ys times the vectors v, without forming the Hessian
    (TF's gradients_impl._hessian_vector_product). v is held constant (stop_gradient)."""
    xs, v = _as_list(xs), _as_list(v)
    if len(v) != len(xs):
        raise ValueError("xs and v must have the same length.")
    grads = gradients(ys, xs)
    products = [math_ops.multiply(g, array_ops.stop_gradient(v_i)) for g, v_i in zip(grads, v) if g is not None]
    return gradients(products, xs)


def hessians(ys, xs, name: str = "hessians", colocate_gradients_with_ops: bool = False,
             gate_gradients: bool = False, aggregation_method: int | None = None) -> list:
    """For each x in xs, the Hessian of sum(ys) with respect to x, shaped x.shape + x.shape (tf.hessians).

    TF builds a while_loop over the elements of x; adplace differentiates each element of the first gradient in
    turn, unrolled (tf.adcme.jacobian is the loop form), which needs x's shape fully defined at graph construction.

    Raises:
      ValueError: an x whose shape is not fully defined, or whose first gradient does not depend on x (as when
        ys is x itself: TF's TensorArray.write of a None gradient fails the same way).
    """
    kwargs = {"colocate_gradients_with_ops": colocate_gradients_with_ops, "gate_gradients": gate_gradients,
              "aggregation_method": aggregation_method}
    xs = _as_list(xs)
    with name_scope(name, "hessians", _as_list(ys) + xs):
        result = []
        for gradient, x in zip(gradients(ys, xs, **kwargs), xs):
            x = convert_to_tensor(x)
            if not x.shape.is_fully_defined():
                raise ValueError(f"hessians() needs the shape of {x.name} fully defined; it is {x.shape}.")
            if gradient is None:
                raise ValueError(f"hessians(): {x.name} is not connected to ys, so it has no Hessian.")
            flat = array_ops.reshape(gradient, [-1])
            rows = []
            for j in range(x.shape.num_elements()):
                row = gradients(flat[j], x, **kwargs)[0]
                if row is None:
                    raise ValueError(f"hessians(): the gradient with respect to {x.name} does not depend on "
                                     f"{x.name}, so its second derivative is undefined (None).")
                rows.append(row)
            result.append(array_ops.reshape(array_ops.stack(rows), x.shape.as_list() * 2))
        return result


_override_ids = itertools.count()


def with_gradient(kind: str, results: list, inputs: list, grad_fn) -> list:
    """`results` through one IdentityN (with `inputs` appended) whose gradient is `grad_fn(*result_grads)`, one
    gradient per input: a one-off gradient_override_map entry, so tf.gradients does not differentiate the ops that
    computed `results`, and gradients reach them only through `inputs` (custom_gradient, recompute_grad, ...)."""
    n_results = len(results)
    grad_name = f"{kind}-{next(_override_ids)}"

    @RegisterGradient(grad_name)
    def _grad(unused_op, *result_grads):
        return [None] * n_results + list(grad_fn(*result_grads[:n_results]))

    with get_default_graph().gradient_override_map({"IdentityN": grad_name}):
        return array_ops.identity_n(results + inputs)[:n_results]


class _CustomGradient:
    """The callable that @custom_gradient returns; binds `self` when it decorates a method."""

    def __init__(self, f):
        self._f = f
        functools.update_wrapper(self, f)

    def __get__(self, instance, owner):
        return self if instance is None else _CustomGradient(self._f.__get__(instance, owner))

    def __call__(self, *args, **kwargs):
        if kwargs:
            raise ValueError("The custom_gradient decorator currently supports keywords arguments only when eager "
                             "execution is enabled.")
        graph = get_default_graph()
        args = [convert_to_tensor(a) for a in args]
        variables_before = _variable_ids(graph)
        result, grad_fn = self._f(*args)
        use_resource = bool(getattr(get_variable_scope(), "use_resource", None))
        if _variable_ids(graph) - variables_before and not use_resource:
            raise TypeError("All variables used by a function wrapped with @custom_gradient must be "
                            "`ResourceVariable`s. Ensure that no `variable_scope` is created with "
                            "`use_resource=False`.")
        flat_result = list(result) if isinstance(result, (list, tuple)) else [result]
        variables = get_dependent_variables(args, flat_result)
        _check_variables_argument(grad_fn, variables, use_resource)
        n_args = len(args)

        def input_and_variable_grads(*result_grads):
            if not variables:
                return _as_list(grad_fn(*result_grads))
            input_grads, variable_grads = grad_fn(*result_grads, variables=variables)
            if len(variable_grads) != len(variables):
                raise ValueError("Must return gradient for each variable from @custom_gradient grad_fn.")
            return _as_list(input_grads)[:n_args] + list(variable_grads)

        outputs = with_gradient("CustomGradient", flat_result, args + [v.value() for v in variables],
                                input_and_variable_grads)
        if isinstance(result, (list, tuple)):
            return type(result)(outputs)
        return outputs[0]


def _variable_ids(graph) -> set:
    return {id(v) for key in (GraphKeys.GLOBAL_VARIABLES, GraphKeys.LOCAL_VARIABLES)
            for v in graph.get_collection(key)}


def _check_variables_argument(grad_fn, variables: list, use_resource: bool) -> None:
    """TF's rules: variables f reads (not through its arguments) reach grad_fn as `variables=`, so grad_fn must
    take that keyword; a grad_fn that takes it while f reads none is an error outside a use_resource scope."""
    params = inspect.signature(grad_fn).parameters.values()
    wants_variables = any(p.name == "variables" or p.kind is p.VAR_KEYWORD for p in params)
    if variables and not wants_variables:
        raise TypeError("If using @custom_gradient with a function that uses variables, then grad_fn must accept "
                        "a keyword argument 'variables'.")
    if wants_variables and not variables and not use_resource:
        raise TypeError("If using @custom_gradient with a function that uses variables, the enclosing variable "
                        "scope must have use_resource=True.")


def custom_gradient(f):
    """Decorator giving `f` its own gradient (tf.custom_gradient).

    `f(*tensors)` returns `(result, grad_fn)`: `result` a Tensor or a list/tuple of Tensors, and `grad_fn(*dys)`
    the gradients with respect to f's tensor arguments (one per argument; None where nothing flows). Inside
    tf.gradients the ops f built are not differentiated; grad_fn is called instead. Graph mode only, positional
    tensor arguments only (as in TF's graph mode).

        @tf.custom_gradient
        def log1pexp(x):
            e = tf.exp(x)
            return tf.log(1 + e), lambda dy: dy * (1 - 1 / (1 + e))    # stable for large x
    """
    return _CustomGradient(f)


_VARIABLE_OP_TYPES = ("VariableV2", "Variable", "VarHandleOp")


def get_dependent_variables(input_ops, output_ops) -> list:
    """The trainable variables the outputs depend on through differentiable tensors, not through the inputs
    (TF's custom_gradient.get_dependent_variables: what a custom gradient must also differentiate).

        y = tf.identity(x) + v            # v a trainable Variable
        get_dependent_variables([x], [y]) == [v]; with x = v * 5.0 the inputs cut v off: []
    """
    stop = {id(convert_to_tensor(t)) for t in flatten(input_ops)}
    pending = [convert_to_tensor(t) for t in flatten(output_ops)]
    seen_ops: set = set()
    found = []
    while pending:
        t = pending.pop()
        if id(t) in stop or not _is_differentiable(t) or t._op in seen_ops:
            continue
        seen_ops.add(t._op)
        if t._op.type in _VARIABLE_OP_TYPES:
            found.append(t._op)
        pending.extend(t._op._inputs)
    variables = (_trainable_variable_named(op) for op in found)
    return [v for v in variables if v is not None]


def _trainable_variable_named(var_op: Operation):
    candidates = [v for v in var_op.graph.get_collection(GraphKeys.GLOBAL_VARIABLES) if v.op is var_op]
    if not candidates:
        raise ValueError(f"Unsuccessful at finding variable {var_op.name}.")
    trainable = set(map(id, var_op.graph.get_collection(GraphKeys.TRAINABLE_VARIABLES)))
    candidates = [v for v in candidates if id(v) in trainable]
    return candidates[0] if candidates else None
