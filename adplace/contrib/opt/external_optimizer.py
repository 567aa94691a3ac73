"""tf.contrib.opt's bridge to optimizers outside the graph: an algorithm such as scipy.optimize.minimize drives a
Session, evaluating the loss and its gradient (built by adplace's tf.gradients) at points it chooses.

    opt = tf.contrib.opt.ScipyOptimizerInterface(loss, method="L-BFGS-B", options={"maxiter": 100},
                                                 var_to_bounds={w: (0.0, np.inf)})
    opt.minimize(sess, feed_dict={x: data}, fetches=[loss], loss_callback=print, step_callback=record)

All optimized variables are packed into one float64 vector (in var_list order, each flattened in C order); the
packing happens on the host, so float32 and float64 variables, and variables on different devices, mix freely.
Candidate points are fed in place of the variables, so the variables themselves change once, at the end: one
session.run of assign ops built with the optimizer, fed values already cast and shaped. A minimize that raises (a
failing loss, KeyboardInterrupt, an error in a callback) leaves every variable as it was. A step_callback that raises
StopIteration ends the search early instead, and the point it was given is written back as the result.
"""
from __future__ import annotations

from typing import Callable

import numpy as np

from adplace import tf_logging as logging
from adplace.framework.conversion import convert_to_tensor
from adplace.framework.default_graph import name_scope
from adplace.framework.indexed_slices import IndexedSlices
from adplace.framework.session_stack import get_default_session
from adplace.gradients import gradients
from adplace.ops.array_ops import placeholder
from adplace.ops.variables import Variable, trainable_variables

__all__ = ["ExternalOptimizerInterface", "ScipyOptimizerInterface"]

_SCIPY_HINT = 'ScipyOptimizerInterface needs SciPy, an optional dependency: pip install "adplace[scipy]"'


def _scipy_optimize():
    """scipy.optimize, imported only when a ScipyOptimizerInterface is built or minimizes (SciPy is optional)."""
    try:
        import scipy.optimize
    except ImportError as exc:
        raise ImportError(_SCIPY_HINT) from exc
    return scipy.optimize


class _PackedGradient:
    """The gradients of one scalar w.r.t. every optimized variable; fetched together and packed on the host into one
    float64 vector. A None gradient (the scalar does not depend on that variable) packs as zeros."""

    def __init__(self, grads: list, slices: list[slice], size: int):
        self.grads = grads
        self.slices = slices
        self.size = size

    def tensors(self) -> list:
        return [g for g in self.grads if g is not None]

    def pack(self, values: list) -> np.ndarray:
        out = np.zeros(self.size, dtype=np.float64)
        values = iter(values)
        for grad, where in zip(self.grads, self.slices):
            if grad is not None:
                out[where] = np.asarray(next(values), dtype=np.float64).ravel()
        return out


def _check_single_element(tensor, what: str) -> None:
    shape = tensor.get_shape()
    if shape.is_fully_defined() and shape.num_elements() != 1:
        raise ValueError(f"{what} {tensor.name} must be a scalar, got shape {shape}")


def _bound_array(bound, default: float, shape: tuple, var) -> np.ndarray:
    """One side of a variable's bounds broadcast to its shape, None meaning `default` (-inf or +inf)."""
    try:
        values = np.vectorize(lambda b: default if b is None else b, otypes=[np.float64])(
            np.asarray(bound, dtype=object))
        return np.broadcast_to(values, shape)
    except (ValueError, TypeError) as exc:
        raise ValueError(f"var_to_bounds for variable {var.name}: bound {bound!r} does not broadcast to the "
                         f"variable's shape {shape} ({exc})") from None


def _pack_bounds(variables: list, var_to_bounds: dict) -> list[tuple[float, float]]:
    """(low, high) per element of the packed vector; variables without an entry are unbounded."""
    wanted = {id(v) for v in variables}
    for key in var_to_bounds:
        if id(key) not in wanted:
            logging.warning("var_to_bounds: %s is not an optimized variable; its bounds are ignored",
                            getattr(key, "name", key))
    lows, highs = [], []
    for var in variables:
        shape = tuple(var.get_shape().as_list())
        bounds = var_to_bounds.get(var, (None, None))
        try:
            low, high = bounds
        except (TypeError, ValueError):
            raise ValueError(f"var_to_bounds for variable {var.name} must be a (low, high) pair, got {bounds!r}") from None
        low = _bound_array(low, -np.inf, shape, var)
        high = _bound_array(high, np.inf, shape, var)
        if np.isnan(low).any() or np.isnan(high).any() or (low > high).any():
            raise ValueError(f"var_to_bounds for variable {var.name}: low must be <= high and neither NaN")
        lows.extend(low.ravel().tolist())
        highs.extend(high.ravel().tolist())
    return list(zip(lows, highs))


class ExternalOptimizerInterface:
    """Base class of the bridges to external optimization algorithms (TF's tf.contrib.opt name).

    A subclass implements `_minimize`; `minimize` hands it functions of the packed float64 vector and writes the
    vector it returns back into the variables. The base class itself cannot minimize (NotImplementedError).
    """

    def __init__(self, loss, var_list: list | None = None, equalities: list | None = None,
                 inequalities: list | None = None, var_to_bounds: dict | None = None, **optimizer_kwargs):
        """Prepare to minimize the scalar `loss` over `var_list` (default: the trainable variables).

        equalities: scalar tensors held at zero; inequalities: scalar tensors held >= 0.
        var_to_bounds: {variable: (low, high)}, each side a number, None (unbounded), +-inf, or anything that
        broadcasts to the variable's shape (np.broadcast_to); variables left out are unbounded.
        optimizer_kwargs: passed to the algorithm (kept, unchanged, as `self.optimizer_kwargs`).
        """
        self._loss = loss
        self._equalities = list(equalities or [])
        self._inequalities = list(inequalities or [])
        self._vars = list(trainable_variables() if var_list is None else var_list)
        if not self._vars:
            raise ValueError("No variables to optimize.")
        for var in self._vars:
            if not isinstance(var, Variable):
                raise TypeError(f"var_list must hold Variables, got {var!r}")
            if not var.get_shape().is_fully_defined():
                raise ValueError(f"variable {var.name} must have a fully defined shape, got {var.get_shape()}")
        _check_single_element(loss, "loss")
        for constraint in self._equalities + self._inequalities:
            _check_single_element(constraint, "constraint")

        self._shapes = [tuple(v.get_shape().as_list()) for v in self._vars]
        ends = np.cumsum([int(np.prod(s, dtype=np.int64)) for s in self._shapes]).tolist()
        self._packing_slices = [slice(start, end) for start, end in zip([0] + ends[:-1], ends)]
        self._packed_size = ends[-1]
        self._packed_bounds = None if var_to_bounds is None else _pack_bounds(self._vars, var_to_bounds)
        self.optimizer_kwargs = optimizer_kwargs

        with name_scope(type(self).__name__):
            self._update_placeholders = [placeholder(v.dtype.base_dtype, shape, name="update")
                                         for v, shape in zip(self._vars, self._shapes)]
            self._var_updates = [v.assign(p) for v, p in zip(self._vars, self._update_placeholders)]
        self._packed_loss_grad = self._packed_gradient(loss)
        self._packed_equality_grads = [self._packed_gradient(c) for c in self._equalities]
        self._packed_inequality_grads = [self._packed_gradient(c) for c in self._inequalities]

    def _packed_gradient(self, tensor) -> _PackedGradient:
        grads = [convert_to_tensor(g) if isinstance(g, IndexedSlices) else g
                 for g in gradients(tensor, self._vars)]
        return _PackedGradient(grads, self._packing_slices, self._packed_size)

    def minimize(self, session=None, feed_dict: dict | None = None, fetches: list | None = None,
                 step_callback: Callable | None = None, loss_callback: Callable | None = None, **run_kwargs) -> None:
        """Run the algorithm through `session` (default: the default session), then write the result back.

        feed_dict: fed on every evaluation. fetches: tensors evaluated with each loss evaluation and passed, as
        positional arguments, to loss_callback. step_callback(packed_vector): called at each algorithm step.
        run_kwargs: passed to the final session.run that assigns the variables.
        """
        session = get_default_session() if session is None else session
        if session is None:
            raise ValueError("minimize needs a session: pass one or call it inside `with session.as_default()`")
        feed_dict = dict(feed_dict or {})
        fetches = list(fetches) if isinstance(fetches, (list, tuple)) else ([] if fetches is None else [fetches])
        step_callback = step_callback or (lambda xk: None)

        def funcs(tensors):
            return [self._make_eval_func(t, session, feed_dict, fetches) for t in tensors]

        initial_val = self._pack_values(session.run(self._vars))
        packed = self._minimize(
            initial_val=initial_val,
            loss_grad_func=self._make_eval_func([self._loss, self._packed_loss_grad], session, feed_dict, fetches,
                                                loss_callback),
            equality_funcs=funcs(self._equalities), equality_grad_funcs=funcs(self._packed_equality_grads),
            inequality_funcs=funcs(self._inequalities), inequality_grad_funcs=funcs(self._packed_inequality_grads),
            packed_bounds=self._packed_bounds, step_callback=step_callback, optimizer_kwargs=self.optimizer_kwargs)
        values = self._unpack(packed)
        session.run(self._var_updates, feed_dict=dict(zip(self._update_placeholders, values)), **run_kwargs)

    def _minimize(self, initial_val, loss_grad_func, equality_funcs, equality_grad_funcs, inequality_funcs,
                  inequality_grad_funcs, packed_bounds, step_callback, optimizer_kwargs) -> np.ndarray:
        """The algorithm: return the packed vector that minimizes the loss, starting from `initial_val`.

        loss_grad_func(x) -> [loss, packed float64 gradient]; each constraint function c(x) -> [value] and each
        constraint gradient function -> [packed float64 gradient] (one-element lists, as in TF); packed_bounds: a
        (low, high) pair per element or None; step_callback(x) after each step. A subclass may raise
        NotImplementedError for arguments its algorithm cannot honour (e.g. constraints).
        """
        raise NotImplementedError("ExternalOptimizerInterface is abstract: subclass it and implement _minimize()")

    def _pack_values(self, values: list) -> np.ndarray:
        """Variable values (any float dtype) as one flat float64 vector."""
        return np.concatenate([np.asarray(v, dtype=np.float64).ravel() for v in values])

    def _unpack(self, packed) -> list[np.ndarray]:
        """A packed vector as one array per variable, in the variable's shape and dtype; raises before any use if
        the vector has the wrong length."""
        packed = np.asarray(packed, dtype=np.float64).ravel()
        if packed.size != self._packed_size:
            raise ValueError(f"_minimize returned {packed.size} values for {self._packed_size} variable elements")
        return [packed[where].reshape(shape).astype(v.dtype.base_dtype.as_numpy_dtype)
                for v, where, shape in zip(self._vars, self._packing_slices, self._shapes)]

    def _make_eval_func(self, tensors, session, feed_dict: dict, fetches: list, callback: Callable | None = None):
        """f(x) -> [value of each of `tensors`] with the variables fed the unpacked `x`; feed_dict wins over those
        feeds. With a callback, `fetches` are evaluated in the same run and passed to it."""
        tensors = tensors if isinstance(tensors, list) else [tensors]
        fetches = fetches if callable(callback) else []

        def eval_func(x):
            feeds = {v: value for v, value in zip(self._vars, self._unpack(x))}
            feeds.update(feed_dict)
            flat = []
            for t in tensors:
                flat.extend(t.tensors() if isinstance(t, _PackedGradient) else [t])
            values = session.run(flat + fetches, feed_dict=feeds)
            if callable(callback):
                callback(*values[len(flat):])
            results, at = [], 0
            for t in tensors:
                if isinstance(t, _PackedGradient):
                    count = len(t.tensors())
                    results.append(t.pack(values[at:at + count]))
                    at += count
                else:
                    results.append(values[at])
                    at += 1
            return results

        return eval_func


class ScipyOptimizerInterface(ExternalOptimizerInterface):
    """scipy.optimize.minimize driving a Session (TF's tf.contrib.opt.ScipyOptimizerInterface).

    optimizer_kwargs are minimize's: method (default "L-BFGS-B"), options, tol, ... ; jac, callback, constraints
    and bounds are set from the graph (bounds through var_to_bounds) and raise ValueError if given. Constraints
    need a method that supports them (SLSQP, COBYLA, trust-constr).
    """

    _DEFAULT_METHOD = "L-BFGS-B"
    _SET_AUTOMATICALLY = ("jac", "callback", "constraints")

    def __init__(self, loss, var_list: list | None = None, equalities: list | None = None,
                 inequalities: list | None = None, var_to_bounds: dict | None = None, **optimizer_kwargs):
        _scipy_optimize()
        self._check_kwargs(optimizer_kwargs)
        super().__init__(loss, var_list=var_list, equalities=equalities, inequalities=inequalities,
                         var_to_bounds=var_to_bounds, **optimizer_kwargs)

    @classmethod
    def _check_kwargs(cls, optimizer_kwargs: dict) -> None:
        if "bounds" in optimizer_kwargs:
            raise ValueError("Bounds must be set using the var_to_bounds argument")
        for name in cls._SET_AUTOMATICALLY:
            if name in optimizer_kwargs:
                raise ValueError(f"Optimizer keyword arg '{name}' is set automatically and cannot be injected "
                                 "manually")

    def _minimize(self, initial_val, loss_grad_func, equality_funcs, equality_grad_funcs, inequality_funcs,
                  inequality_grad_funcs, packed_bounds, step_callback, optimizer_kwargs) -> np.ndarray:
        optimize = _scipy_optimize()
        self._check_kwargs(optimizer_kwargs)
        kwargs = dict(optimizer_kwargs)
        method = kwargs.pop("method", self._DEFAULT_METHOD)
        constraints = [{"type": "eq", "fun": f, "jac": g} for f, g in zip(equality_funcs, equality_grad_funcs)]
        constraints += [{"type": "ineq", "fun": f, "jac": g} for f, g in zip(inequality_funcs, inequality_grad_funcs)]
        stopped = []

        def fun(x):
            loss, grad = loss_grad_func(x)
            return np.float64(np.reshape(loss, ())), np.asarray(grad, dtype=np.float64)

        def callback(xk, *unused):      # a positional signature: SciPy passes the point, not an OptimizeResult
            try:
                step_callback(xk)
            except StopIteration:
                stopped.append(np.array(xk, dtype=np.float64))
                raise

        try:
            result = optimize.minimize(fun, initial_val, jac=True, callback=callback, method=method,
                                       constraints=constraints, bounds=packed_bounds, **kwargs)
        except StopIteration:           # SciPy < 1.11 lets the callback's StopIteration through
            if not stopped:
                raise
            result = None
        if stopped:
            logging.info("Optimization stopped by step_callback (StopIteration)")
            return stopped[-1]
        lines, args = ["Optimization terminated with:", "  Message: %s", "  Objective function value: %f"], \
            [result.message, result.fun]
        for key, text in (("nit", "  Number of iterations: %d"), ("nfev", "  Number of functions evaluations: %d")):
            if key in result:
                lines.append(text)
                args.append(result[key])
        logging.info("\n".join(lines), *args)
        return result.x
