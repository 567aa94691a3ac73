"""tf.variable_scope and tf.get_variable: variables named by scope, created once and shared on request.

A graph holds one variable store (adplace/ops/variable_store.py: full name -> Variable) and one per-thread
scope store (collection `("__varscope",)`: the current VariableScope and how often each scope name was opened), as
in TF. `reuse` is inherited by nested scopes; re-entering a VariableScope object keeps its name and settings.

    for i, gpu in enumerate(["/gpu:0", "/gpu:1"]):
        with tf.device(gpu), tf.variable_scope(tf.get_variable_scope(), reuse=i > 0):
            w = tf.get_variable("w", shape=[3, 1])   # one variable "w:0", created by tower 0, shared by tower 1
"""
from __future__ import annotations

import contextlib
import copy
import functools
import logging
import threading

from adplace.framework import dtypes as _dtypes
from adplace.framework.conversion import convert_to_tensor
from adplace.framework.default_graph import get_collection, graph_of, name_scope
from adplace.framework.graph import GraphKeys, get_default_graph
from adplace.ops.partitioned_variables import PartitionedVariable
from adplace.ops.partitioned_variables import PartitionInfo as _PartitionInfo  # noqa: F401 - TF's name here too
from adplace.ops.variable_store import _VARSTORE_KEY, AUTO_REUSE, _VariableStore
from adplace.ops.variables import (Variable, VariableAggregation, VariableSynchronization,  # noqa: F401 - TF
                                   validate_synchronization_aggregation_trainable)  # exports both enums here too

_log = logging.getLogger("adplace")
_VARSCOPESTORE_KEY = ("__varscope",)


class VariableScope:
    """A variable scope's name and the defaults (reuse, initializer, dtype, ...) its get_variable calls inherit."""

    def __init__(self, reuse, name: str = "", initializer=None, regularizer=None, caching_device=None,
                 partitioner=None, custom_getter=None, name_scope: str = "", dtype=_dtypes.float32,
                 use_resource=None, constraint=None):
        self._name, self._reuse, self._initializer, self._regularizer = name, reuse, initializer, regularizer
        self._caching_device, self._partitioner, self._custom_getter = caching_device, partitioner, custom_getter
        self._name_scope, self._dtype = name_scope, _dtypes.as_dtype(dtype)
        self._use_resource, self._constraint = use_resource, constraint

    name = property(lambda self: self._name)
    original_name_scope = property(lambda self: self._name_scope)
    reuse = property(lambda self: self._reuse)
    initializer = property(lambda self: self._initializer)
    dtype = property(lambda self: self._dtype)
    use_resource = property(lambda self: self._use_resource)
    regularizer = property(lambda self: self._regularizer)
    caching_device = property(lambda self: self._caching_device)
    partitioner = property(lambda self: self._partitioner)
    custom_getter = property(lambda self: self._custom_getter)
    constraint = property(lambda self: self._constraint)

    def reuse_variables(self) -> None:
        """Reuse variables in this scope from now on (the old tower idiom)."""
        self._reuse = True

    def set_initializer(self, initializer) -> None:
        self._initializer = initializer

    def set_dtype(self, dtype) -> None:
        self._dtype = _dtypes.as_dtype(dtype)

    def set_use_resource(self, use_resource) -> None:
        self._use_resource = use_resource

    def set_regularizer(self, regularizer) -> None:
        self._regularizer = regularizer

    def set_caching_device(self, caching_device) -> None:
        self._caching_device = caching_device

    def set_partitioner(self, partitioner) -> None:
        self._partitioner = partitioner

    def set_custom_getter(self, custom_getter) -> None:
        self._custom_getter = custom_getter

    def get_collection(self, name: str) -> list:
        """The items of collection `name` whose names start with this scope's name and a slash."""
        return get_collection(name, self._name + "/" if self._name else None)

    def trainable_variables(self) -> list:
        return self.get_collection(GraphKeys.TRAINABLE_VARIABLES)

    def global_variables(self) -> list:
        return self.get_collection(GraphKeys.GLOBAL_VARIABLES)

    def local_variables(self) -> list:
        return self.get_collection(GraphKeys.LOCAL_VARIABLES)

    def get_variable(self, var_store: _VariableStore, name: str, shape=None, dtype=None, initializer=None,
                     regularizer=None, reuse=None, trainable=None, collections=None, caching_device=None,
                     partitioner=None, validate_shape=True, use_resource=None, custom_getter=None, constraint=None,
                     synchronization=None, aggregation=None) -> Variable:
        """get_variable with this scope's name prefix and defaults; the name scope plays no part in the name."""
        regularizer = self._regularizer if regularizer is None else regularizer
        caching_device = self._caching_device if caching_device is None else caching_device
        partitioner = self._partitioner if partitioner is None else partitioner
        custom_getter = self._custom_getter if custom_getter is None else custom_getter
        reuse = self._reuse if reuse is None else reuse
        use_resource = self._use_resource if use_resource is None else use_resource
        full_name = self._name + "/" + name if self._name else name
        with name_scope(None):
            if dtype is not None and initializer is not None and not callable(initializer):
                init_dtype = convert_to_tensor(initializer).dtype.base_dtype
                if init_dtype != dtype:
                    raise ValueError(f"Initializer type '{init_dtype}' and explicit dtype '{_dtypes.as_dtype(dtype)}' "
                                     "don't match.")
            return var_store.get_variable(
                full_name, shape=shape, dtype=self._dtype if dtype is None else dtype,
                initializer=self._initializer if initializer is None else initializer, regularizer=regularizer,
                reuse=reuse, trainable=trainable, collections=collections, caching_device=caching_device,
                partitioner=partitioner, validate_shape=validate_shape, use_resource=use_resource,
                custom_getter=custom_getter, constraint=self._constraint if constraint is None else constraint,
                synchronization=synchronization, aggregation=aggregation)

    def _get_partitioned_variable(self, var_store: _VariableStore, name: str | None, shape=None, dtype=None,
                                  initializer=None, regularizer=None, trainable=None, collections=None,
                                  caching_device=None, partitioner=None, validate_shape=True, use_resource=None,
                                  constraint=None, synchronization=None,
                                  aggregation=None) -> PartitionedVariable:
        """The partitioned variable `<scope>/<name>` (the scope's own name when `name` is empty), with this scope's
        defaults; what create_partitioned_variables builds on.

        Raises:
          ValueError: the scope has a custom getter, or there is no partitioner.
        """
        initializer = self._initializer if initializer is None else initializer
        regularizer = self._regularizer if regularizer is None else regularizer
        constraint = self._constraint if constraint is None else constraint
        caching_device = self._caching_device if caching_device is None else caching_device
        partitioner = self._partitioner if partitioner is None else partitioner
        if self._custom_getter is not None:
            raise ValueError(f"Private access to _get_partitioned_variable is not allowed when a custom getter is "
                             f"set.  Current custom getter: {self._custom_getter}.  It is likely that you're using "
                             "create_partitioned_variables.  If so, consider instead using get_variable with a "
                             "non-empty partitioner parameter instead.")
        if partitioner is None:
            raise ValueError("No partitioner was specified")
        full_name = "/".join(part for part in (self.name, name) if part)
        synchronization, aggregation, trainable = validate_synchronization_aggregation_trainable(
            synchronization, aggregation, trainable, full_name)
        with name_scope(None):
            return var_store._get_partitioned_variable(
                full_name, partitioner, shape=shape, dtype=self._dtype if dtype is None else dtype,
                initializer=initializer, regularizer=regularizer, reuse=self.reuse, trainable=trainable,
                collections=collections, caching_device=caching_device, validate_shape=validate_shape,
                constraint=constraint, synchronization=synchronization, aggregation=aggregation)


class _VariableScopeStore(threading.local):
    """Per thread: the current variable scope and how many times each scope name has been opened."""

    def __init__(self):
        super().__init__()
        self.current_scope = VariableScope(False)
        self.variable_scopes_count: dict[str, int] = {}

    def open_variable_scope(self, scope_name: str) -> None:
        self.variable_scopes_count[scope_name] = self.variable_scopes_count.get(scope_name, 0) + 1

    def close_variable_subscopes(self, scope_name: str) -> None:
        for name in self.variable_scopes_count:
            if name.startswith(scope_name + "/"):
                self.variable_scopes_count[name] = 0

    def variable_scope_count(self, scope_name: str) -> int:
        return self.variable_scopes_count.get(scope_name, 0)


def _graph_singleton(key: tuple, factory):
    graph = get_default_graph()
    found = graph.get_collection(key)
    if found:
        return found[0]
    value = factory()
    graph.add_to_collection(key, value)
    return value


def _get_variable_scope_store() -> _VariableScopeStore:
    return _graph_singleton(_VARSCOPESTORE_KEY, _VariableScopeStore)


def _get_default_variable_store() -> _VariableStore:
    return _graph_singleton(_VARSTORE_KEY, _VariableStore)


def get_variable_scope() -> VariableScope:
    """The current variable scope (tf.get_variable_scope)."""
    return _get_variable_scope_store().current_scope


def _get_unique_variable_scope(prefix: str) -> str:
    """`prefix`, or `prefix_N` with the first N whose full scope name has not been opened in the current scope."""
    store = _get_variable_scope_store()
    current = store.current_scope.name
    name = current + "/" + prefix if current else prefix
    if store.variable_scope_count(name) == 0:
        return prefix
    idx = 1
    while store.variable_scope_count(f"{name}_{idx}") > 0:
        idx += 1
    return f"{prefix}_{idx}"


def _maybe_wrap_custom_getter(custom_getter, old_getter):
    """Nest custom getters: the inner scope's getter calls the outer one, which calls the real getter."""
    if old_getter is None:
        return custom_getter

    def wrapped_custom_getter(getter, *args, **kwargs):
        return custom_getter(functools.partial(old_getter, getter), *args, **kwargs)
    return wrapped_custom_getter


def _check_nesting(store: _VariableScopeStore, entered: VariableScope) -> None:
    if store.current_scope is not entered:
        raise RuntimeError(f"Improper nesting of variable_scope: exiting {entered.name!r} while "
                           f"{store.current_scope.name!r} is the current scope; exit scopes in reverse order.")


class _pure_variable_scope:  # noqa: N801 - TF's name
    """Enter a variable scope without touching the name scope (`old_name_scope` is recorded as its name scope)."""

    def __init__(self, name_or_scope, reuse=None, initializer=None, regularizer=None, caching_device=None,
                 partitioner=None, custom_getter=None, old_name_scope=None, dtype=None, use_resource=None,
                 constraint=None):
        self._name_or_scope, self._reuse, self._old_name_scope = name_or_scope, reuse, old_name_scope
        self._settings = {"initializer": initializer, "regularizer": regularizer, "caching_device": caching_device,
                          "partitioner": partitioner, "dtype": dtype, "use_resource": use_resource}
        self._custom_getter, self._constraint = custom_getter, constraint
        self._store = _get_variable_scope_store()
        if isinstance(name_or_scope, VariableScope):
            self._new_name = name_or_scope.name
            self._cached_scope = self._derive(name_or_scope, reuse if reuse else name_or_scope.reuse,
                                              name_or_scope.name, name_or_scope.original_name_scope)

    def _derive(self, parent: VariableScope, reuse, name: str, scope_name: str) -> VariableScope:
        """A copy of `parent`'s settings under a new name, overridden by the settings given to this scope."""
        scope = VariableScope(reuse, name=name, initializer=parent.initializer, regularizer=parent.regularizer,
                              caching_device=parent.caching_device, partitioner=parent.partitioner,
                              dtype=parent.dtype, use_resource=parent.use_resource,
                              custom_getter=parent.custom_getter, name_scope=scope_name, constraint=self._constraint)
        for setting, value in self._settings.items():
            if value is not None:
                getattr(scope, "set_" + setting)(value)
        if self._custom_getter is not None:
            scope.set_custom_getter(_maybe_wrap_custom_getter(self._custom_getter, parent.custom_getter))
        return scope

    def __enter__(self) -> VariableScope:
        store = self._store
        self._old = store.current_scope
        if isinstance(self._name_or_scope, VariableScope):
            store.open_variable_scope(self._new_name)
            self._old_subscopes = copy.copy(store.variable_scopes_count)
            scope = self._cached_scope
        else:
            old = self._old
            self._new_name = old.name + "/" + self._name_or_scope if old.name else self._name_or_scope
            reuse = self._reuse or old.reuse  # reuse is inherited by sub-scopes
            scope_name = self._name_or_scope if self._old_name_scope is None else self._old_name_scope
            scope = self._derive(old, reuse, self._new_name, scope_name)
            store.open_variable_scope(self._new_name)
        store.current_scope = self._entered = scope
        return scope


    def __exit__(self, *exc) -> bool:
        store = self._store
        _check_nesting(store, self._entered)
        if isinstance(self._name_or_scope, VariableScope):
            store.variable_scopes_count = self._old_subscopes
        else:
            store.close_variable_subscopes(self._new_name)
        store.current_scope = self._old
        return False


class variable_scope:  # noqa: N801 - TF's public name
    """A context manager for defining ops that create variables (tf.variable_scope).

    A string opens scope `name` under the current one (and a name scope for the ops, made unique); a VariableScope
    object re-enters that scope (a new name scope named like its last component); `default_name` is used, made
    unique (`dense`, `dense_1`, ...), when `name_or_scope` is None. `reuse` is True, tf.AUTO_REUSE, or False/None
    to inherit the enclosing scope's setting.

        with tf.variable_scope("foo"):
            with tf.variable_scope("bar"):
                v = tf.get_variable("v", [1])     # v.name == "foo/bar/v:0"
        with tf.variable_scope("foo", reuse=True):
            v1 = tf.get_variable("bar/v", [1])    # v1 is v

    Raises:
      ValueError: reuse=True without a name_or_scope, or an invalid `reuse` value.
      TypeError: name_or_scope is neither a string nor a VariableScope, or both it and default_name are None.
    """

    def __init__(self, name_or_scope, default_name: str | None = None, values=None, initializer=None,
                 regularizer=None, caching_device=None, partitioner=None, custom_getter=None, reuse=None,
                 dtype=None, use_resource=None, constraint=None, auxiliary_name_scope: bool = True):
        if default_name is None and name_or_scope is None:
            raise TypeError("If default_name is None then name_or_scope is required")
        if name_or_scope is not None and not isinstance(name_or_scope, (VariableScope, str)):
            raise TypeError("VariableScope: name_or_scope must be a string or VariableScope.")
        if reuse is False:
            reuse = None  # False means "inherit", as None does: scopes cannot stop reusing
        if not (reuse is True or reuse is None or reuse is AUTO_REUSE):
            raise ValueError("The reuse parameter must be True or False or None.")
        if not isinstance(auxiliary_name_scope, bool):
            raise TypeError(f"The value of auxiliary_name_scope must be boolean, but {auxiliary_name_scope} "
                            "was given.")
        self._name_or_scope, self._default_name, self._reuse = name_or_scope, default_name, reuse
        self._settings = {"initializer": initializer, "regularizer": regularizer, "caching_device": caching_device,
                          "partitioner": partitioner, "custom_getter": custom_getter, "dtype": dtype,
                          "use_resource": use_resource, "constraint": constraint}
        self._auxiliary_name_scope = auxiliary_name_scope
        self._graph = graph_of(values)
        self._exit_stack: contextlib.ExitStack | None = None

    def __enter__(self) -> VariableScope:
        stack = contextlib.ExitStack()
        try:
            if self._graph is not get_default_graph():
                stack.enter_context(self._graph.as_default())
            scope = self._enter(stack)
        except BaseException:
            stack.close()
            raise
        self._exit_stack, self._entered = stack, scope
        return scope

    def _enter(self, stack: contextlib.ExitStack) -> VariableScope:
        graph = self._graph
        settings = self._settings
        current_name_scope = None
        if not self._auxiliary_name_scope:
            current = graph.get_name_scope()
            current_name_scope = graph.name_scope(current + "/" if current else "")
        if self._name_or_scope is None:
            if self._reuse:
                raise ValueError("reuse=True cannot be used without a name_or_scope")
            scope_name = stack.enter_context(current_name_scope or graph.name_scope(self._default_name))
            unique_name = _get_unique_variable_scope(self._default_name)
            return stack.enter_context(_pure_variable_scope(unique_name, reuse=self._reuse,
                                                            old_name_scope=scope_name, **settings))
        if isinstance(self._name_or_scope, str):
            short_name = self._name_or_scope
        else:
            short_name = self._name_or_scope.name.split("/")[-1]
        old_name_scope = None
        if short_name or current_name_scope is not None:  # else: re-entering the root scope opens no name scope
            scope_name = stack.enter_context(current_name_scope or graph.name_scope(short_name))
            old_name_scope = (scope_name if isinstance(self._name_or_scope, str)
                              else self._name_or_scope.original_name_scope)
        return stack.enter_context(_pure_variable_scope(self._name_or_scope, reuse=self._reuse,
                                                        old_name_scope=old_name_scope, **settings))

    def __exit__(self, *exc) -> bool:
        _check_nesting(_get_variable_scope_store(), self._entered)  # before unwinding: a misnested exit undoes nothing
        stack, self._exit_stack = self._exit_stack, None
        return bool(stack.__exit__(*exc))


def get_variable(name: str, shape=None, dtype=None, initializer=None, regularizer=None, trainable=None,
                 collections=None, caching_device=None, partitioner=None, validate_shape: bool = True,
                 use_resource=None, custom_getter=None, constraint=None, synchronization=None,
                 aggregation=None) -> Variable:
    """Get an existing variable or create a new one, named `<variable scope>/<name>` (tf.get_variable).

    Creation uses `initializer` (an initializer called with the shape, a callable taking no arguments, or a value
    whose shape becomes the variable's), else the scope's initializer, else Glorot-uniform (floats) or zeros.
    The variable is placed by the device scopes active here, and its initializer is colocated with it.

    Args:
      name: the name relative to the current variable scope.
      shape: the shape of a new variable; checked against the existing one on reuse.
      dtype: the dtype (default: the scope's, float32).
      initializer, regularizer, trainable, collections, caching_device, validate_shape, custom_getter,
      constraint: as in TF1.
    Returns:
      The Variable.
    Raises:
      ValueError: it exists and the scope does not reuse, it does not exist and the scope reuses (True), the
        shape or dtype differs from the existing variable's, or a new variable's shape is not fully defined.
    """
    return get_variable_scope().get_variable(
        _get_default_variable_store(), name, shape=shape, dtype=dtype, initializer=initializer,
        regularizer=regularizer, trainable=trainable, collections=collections, caching_device=caching_device,
        partitioner=partitioner, validate_shape=validate_shape, use_resource=use_resource,
        custom_getter=custom_getter, constraint=constraint, synchronization=synchronization,
        aggregation=aggregation)


def get_local_variable(name: str, shape=None, dtype=None, initializer=None, regularizer=None, trainable=False,
                       collections=None, caching_device=None, partitioner=None, validate_shape: bool = True,
                       use_resource=None, custom_getter=None, constraint=None, synchronization=None,
                       aggregation=None) -> Variable:
    """get_variable in the LOCAL_VARIABLES collection, not trainable (tf.get_local_variable); same arguments."""
    collections = [GraphKeys.LOCAL_VARIABLES] + list(collections or [])
    return get_variable(name, shape=shape, dtype=dtype, initializer=initializer, regularizer=regularizer,
                        trainable=trainable, collections=collections, caching_device=caching_device,
                        partitioner=partitioner, validate_shape=validate_shape, use_resource=use_resource,
                        custom_getter=custom_getter, constraint=constraint, synchronization=synchronization,
                        aggregation=aggregation)


def no_regularizer(_) -> None:
    """A regularizer that adds no loss: turns off a scope's regularizer for one variable or sub-scope."""
    return None


@contextlib.contextmanager
def variable_creator_scope(variable_creator):
    """Make every Variable built in this block go through `variable_creator(next_creator, **kwargs)`
    (tf.variable_creator_scope); the innermost scope's creator runs first and calls `next_creator` to go on.

        def renamed(next_creator, **kwargs):
            kwargs["name"] = "forced"
            return next_creator(**kwargs)
        with tf.variable_creator_scope(renamed):
            v = tf.Variable(1.0, name="mine")     # v.name == "forced:0"

    Raises:
      RuntimeError: scopes exited out of order.
    """
    graph = get_default_graph()
    old = graph._variable_creator_stack
    new = old + (variable_creator,)
    graph._variable_creator_stack = new
    try:
        yield
    finally:
        if graph._variable_creator_stack is not new:
            raise RuntimeError("Exiting variable_creator_scope without proper nesting.")
        graph._variable_creator_stack = old


def create_partitioned_variables(shape, slicing, initializer, dtype=_dtypes.float32, trainable: bool = True,
                                 collections=None, name: str | None = None, reuse=None) -> list[Variable]:
    """The parts of a new variable of `shape` cut as `slicing` says (parts per axis, more than one on at most one
    axis), as a list of Variables (deprecated tf.create_partitioned_variables; use get_variable with a partitioner).

    The whole variable is named by variable scope `name` (default "PartitionedVariable", made unique). A callable
    `initializer` is called once per part with the part's shape; a tensor or array of the full shape is sliced.

        vs = tf.create_partitioned_variables([13, 5], [3, 1], tf.zeros_initializer())
        [v.name for v in vs]   # ["PartitionedVariable/part_0:0", ".../part_1:0", ".../part_2:0"]: 5, 4, 4 rows

    Raises:
      ValueError: `shape` and `slicing` differ in length, `shape` is a scalar, or `slicing` is invalid for it.
    """
    _log.warning("create_partitioned_variables is deprecated.  Use tf.get_variable with a partitioner set, or "
                 "tf.get_partitioned_variable_list, instead.")
    if len(shape) != len(slicing):
        raise ValueError(f"The 'shape' and 'slicing' of a partitioned Variable must have the length: shape: {shape}, "
                         f"slicing: {slicing}")
    if len(shape) < 1:
        raise ValueError(f"A partitioned Variable must have rank at least 1: shape: {shape}")
    with variable_scope(name, "PartitionedVariable", reuse=reuse):
        partitioned = get_variable_scope()._get_partitioned_variable(
            _get_default_variable_store(), None, shape=shape, dtype=dtype, initializer=initializer,
            trainable=trainable, partitioner=lambda **unused_kwargs: slicing, collections=collections)
    return list(partitioned)
