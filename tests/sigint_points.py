"""A deterministic Ctrl-C for tests: SIGINT sent at the k-th point of a run where Python can run a signal handler.

Python runs a SIGINT handler only at a function's start, after a call of a C function, at a backward jump, and inside
C calls that check for signals. A profile hook stands in for the signal: at the k-th function start or C return it
raises SIGINT, whose handler (`handler`, raising KeyboardInterrupt like Python's own while `budget` lasts) runs there,
or is held back if the code holds Ctrl-C then. Tests sweep k over every such point of a run.
"""
import gc
import signal
import sys


class SigintPoints:
    """A SIGINT handler raising KeyboardInterrupt `budget` times, and a profile hook that sends SIGINT at the `at`-th
    point (function start or C return) counted from `start()`: the run's first, or the first after a kernel's
    KeyboardInterrupt."""

    def __init__(self):
        self.budget, self.at, self.count, self.fired = 0, -1, -1, False

    def handler(self, signum, frame):
        if self.budget > 0:
            self.budget -= 1
            raise KeyboardInterrupt

    def start(self) -> None:
        self.count = 0

    def profile(self, frame, event, arg):
        if self.count < 0 or event not in ("call", "c_return"):
            return
        if self.count == self.at:
            self.fired = True
            signal.raise_signal(signal.SIGINT)  # runs the handler installed now, here
        self.count += 1

    def run(self, sess, fetch, at: int, budget: int, counting: bool) -> str:
        """sess.run(fetch) with SIGINT at point `at` (counting from the run's start when `counting`, else from
        `start()`); 'ok' or 'interrupted'. The cyclic GC is off meanwhile: a collection starting at a point runs
        other code's gc callbacks (hypothesis's) there, where a KeyboardInterrupt is not the run's to handle (CPython
        reports it as unraisable, and once left a generator of the run calling a traceback object)."""
        self.at, self.budget, self.fired = at, budget, False
        self.count = 0 if counting else -1
        collecting = gc.isenabled()
        gc.disable()
        sys.setprofile(self.profile)
        try:
            sess.run(fetch)
            return "ok"
        except KeyboardInterrupt:
            return "interrupted"
        finally:
            sys.setprofile(None)
            self.budget, self.count = 0, -1
            if collecting:
                gc.enable()
