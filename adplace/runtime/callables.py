"""Session.make_callable: a function running one compiled (fetches, feeds) signature, with TF's call signature.

    step = sess.make_callable([loss, train_op], feed_list=[x, y])
    loss_value, _ = step(x_batch, y_batch)        # feeds by position; no fetch or feed lookup per call

The plan and the feed converters are resolved once, when the callable is made (or, when the graph cannot run the
fetches yet, e.g. an unfed placeholder, at its first call, where TF reports that error); each call converts its
arguments, runs the plan and rebuilds the fetch structure, as Session.run does after its cache lookup.
"""
from __future__ import annotations

from typing import Callable

from adplace.framework import errors
from adplace.runtime import options as _options

_OPTION_NAMES = ("options", "run_metadata")


def make_callable(session, fetches, feed_list=None, accept_options: bool = False) -> Callable:
    """A callable running `fetches` with one positional argument per entry of `feed_list` (see Session)."""
    if feed_list is not None and not isinstance(feed_list, (list, tuple)):
        raise TypeError("`feed_list` must be a list or tuple.")
    session._check_open()
    keys = list(feed_list or ())
    feed_keys = dict.fromkeys(keys)
    try:
        compiled = session._compile(fetches, feed_keys)
    except errors.OpError:  # the graph cannot run these fetches (yet): TF reports that when the callable is called
        compiled = None
    by_dict = len(feed_keys) != len(keys)  # repeated keys: TF's feed_dict keeps the last value
    # TF: a callable with a feed_list passes keywords on to run(); one without takes them only when accept_options.
    takes_options = accept_options or feed_list is not None
    positional_options = accept_options and feed_list is None  # TF binds them positionally too (functools.partial)
    n_feeds = len(keys)

    def session_callable(*feed_args, **kwargs):
        session._check_open()
        if positional_options and feed_args:
            if len(feed_args) > len(_OPTION_NAMES):
                raise TypeError(f"session_callable() takes at most 2 positional arguments (options, run_metadata) "
                                f"but {len(feed_args)} were given")
            kwargs = {**dict(zip(_OPTION_NAMES, feed_args)), **kwargs}
            feed_args = ()
        options = run_metadata = None
        if kwargs:
            if not takes_options:
                raise TypeError(f"session_callable() got an unexpected keyword argument {next(iter(kwargs))!r}: "
                                f"pass accept_options=True to make_callable to give RunOptions and RunMetadata")
            unknown = [k for k in kwargs if k not in _OPTION_NAMES]
            if unknown:
                raise TypeError(f"session_callable() got an unexpected keyword argument {unknown[0]!r}")
            options, run_metadata = kwargs.get("options"), kwargs.get("run_metadata")
        if len(feed_args) != n_feeds:
            if feed_list is None:
                raise TypeError(f"session_callable() takes 0 positional arguments but {len(feed_args)} were given: "
                                f"the callable was made without a feed_list")
            raise ValueError(f"Expected {n_feeds} feed values, got {len(feed_args)}: the callable takes one "
                             f"positional argument per feed_list entry ({', '.join(str(getattr(k, 'name', k)) for k in keys)})")
        nonlocal compiled
        if compiled is None:
            compiled = session._compile(fetches, feed_keys)
        flatten = compiled.flatten
        if by_dict or flatten is not None:  # nested-tuple keys take their values apart as Session.run does
            values = dict(zip(keys, feed_args))
            values = values.values() if flatten is None else flatten(values)
        else:
            values = feed_args
        feeds = compiled.convert(values)
        plan = compiled.plan
        if plan.variants is not None:
            plan = plan.variants.select(feeds)
        if options is not None or run_metadata is not None or session._timeout_ms:
            return session._execute_observed(plan, feeds, compiled.build, options, run_metadata)
        return session._execute(plan, feeds, compiled.build)
    return session_callable


def make_callable_from_options(session, callable_options) -> Callable:
    """Session._make_callable_from_options: a function taking one positional value per `callable_options.feed`
    name (and an optional `run_metadata=`) and returning the list of `fetch` values, after running the `target`
    ops too, with `callable_options.run_options`."""
    fetch, target = list(callable_options.fetch), list(callable_options.target)
    run = make_callable(session, fetch + target, list(callable_options.feed), accept_options=True)
    options = None if callable_options.run_options == _options.RunOptions() else callable_options.run_options

    def callable_from_options(*feed_values, run_metadata=None):
        return run(*feed_values, options=options, run_metadata=run_metadata)[:len(fetch)]
    return callable_from_options
