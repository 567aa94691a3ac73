"""ADCME's `BFGS!`: L-BFGS-B (or another scipy.optimize method) over the session, with adplace's gradients."""
from collections.abc import Callable

from adplace import tf_logging

OPTIONS = {"ftol": 1e-12, "gtol": 1e-12}
"""ADCME's tolerances: it stops on `max_iter` or when the loss no longer changes at all."""


def _checked_bounds(bounds: dict) -> dict:
    """`bounds` keyed by variables, as ScipyOptimizerInterface's var_to_bounds wants them."""
    for var in bounds:
        if not hasattr(var, "trainable"):
            raise ValueError(f"BFGS!: bounds are keyed by Variables; {getattr(var, 'name', var)!r} is not one")
        if not var.trainable:
            tf_logging.warning("BFGS!: %s is not trainable, so its bounds are ignored", var.name)
    return bounds


def bfgs(session, loss, max_iter: int = 15000, vars=(), callback: Callable | None = None,  # noqa: A002 - ADCME's name
         method: str = "L-BFGS-B", bounds: dict | None = None, feed_dict: dict | None = None, verbose: bool = True,
         **kwargs) -> list[float]:
    """Minimize `loss` over its trainable variables with scipy.optimize (ADCME's `BFGS!`) and return the loss after
    each step. `callback(values_of_vars, step, loss)` runs after each step; `bounds` maps variables to (low, high);
    `feed_dict` feeds every evaluation; other keywords go to tf.contrib.opt.ScipyOptimizerInterface. The variables
    hold the best point found when it returns."""
    from adplace.contrib.opt import ScipyOptimizerInterface

    if bounds is not None:
        if "var_to_bounds" in kwargs:
            raise TypeError("BFGS!: give bounds or var_to_bounds, not both")
        kwargs["var_to_bounds"] = bounds
    if "var_to_bounds" in kwargs:
        _checked_bounds(kwargs["var_to_bounds"])
    options = {**OPTIONS, "maxiter": int(max_iter), **kwargs.pop("options", {})}
    optimizer = ScipyOptimizerInterface(loss, method=method, options=options, **kwargs)
    vars = list(vars)  # noqa: A001
    latest, losses = {}, []

    def loss_callback(value, *values):
        latest["loss"], latest["vars"] = float(value), list(values)

    def step_callback(_position):
        step = len(losses)
        losses.append(latest["loss"])
        if verbose:
            print(f"iter {step}, loss = {latest['loss']}")
        if callback is not None:
            callback(latest["vars"], step, latest["loss"])

    optimizer.minimize(session, feed_dict=feed_dict, fetches=[loss, *vars], loss_callback=loss_callback,
                       step_callback=step_callback)
    return losses
