"""How many BLAS threads each BLAS kernel (MatMul, BatchMatMul) runs on: one process-wide policy, `POLICY`.

Rule (ConfigProto's intra_op_parallelism_threads = 0, the default): a product of m*k*n multiply-adds gets
`min(bound, m*k*n // MNK_PER_THREAD)` threads, at least one: under SMALL_MNK (2**19) it runs on one thread, and a
large one on every thread the bound allows. The bound is the library's own thread count when a step starts (all CPUs,
or what OPENBLAS_NUM_THREADS / a threadpoolctl limit set), a session's intra_op_parallelism_threads when given, and,
while the inter-op pool runs ops side by side, the pool's share of the CPUs (StepRunner.parallel_blas_threads); with
several steps in flight, the smallest of their bounds.
Calibration (2-core AMD EPYC VM, NumPy 2.4's OpenBLAS 0.3.31, float32, 1 vs 2 threads, medians of 9 samples): up to
80x80x80 (512,000 multiply-adds) two threads gain nothing (OpenBLAS itself stays on one); 128x32x128 (524,288) gains
1.45x, 88^3 1.36x, 128x10x512 1.33x, 128^3 1.52x, 512^3 1.97x. So 2**18 multiply-adds a thread is the least worth a
thread here; products under 2**16 skip the policy altogether (every BLAS runs them on one thread).
Measured, per kernel (BlasKernel): where the rule gives a large product several threads, the kernel also times it on
one thread, and keeps the rule's count while it measures at least 1.05x faster than one thread; once on one thread,
it goes back only when the rule's count measures 1.25x faster (each count's time is the median of its last 5 calls;
the other count is re-timed after 8 calls, then 16, ... up to every 256 while the choice holds, and all kernels'
re-timings together take at most 1/20 of the BLAS time: on a busy machine one re-timing on two threads can cost tens
of ms). On this VM, with other processes busy on both cores (load ~4), a 1024^3 product took 37 ms on one thread and
83 ms on two (OpenBLAS splits the work evenly and waits for its slowest, descheduled thread), and the MLP step ran
12 ms with two threads against 6.5 ms with one: the size rule alone cannot see that. Medians and the two thresholds,
not a running average against 1.25x: on a quiet machine the MLP's products run 1.3-1.9x faster on two threads at the
median, but one call in twenty is 1.3x slower than that or worse, and with an average each such call moved its kernel
to one thread for a while; a product 1.3x faster sat at the threshold. Measured with benchmarks/blas_policy.py (each
variant in a worker process of its own, rounds alternating them), the MLP step with default threads on a quiet
machine: 1.10-1.16x its time with the policy off when averaging, 1.04-1.08x with medians alone, 1.02-1.03x now; with
one other process spinning the policy runs it at 0.3-0.5x of the policy-off time, with two at 0.5-0.8x.

Safety: OpenBLAS's thread count is global to the process, and changing it while another thread is inside a threaded
gemm is not something OpenBLAS promises to survive (raising it starts server threads under its own lock; the running
call already split its work for the old count). So the count is never changed while an adplace BLAS call is in
flight: calls that want the current count run side by side; a call that wants fewer threads than the current count
waits for the calls in flight to finish (bounded, see WAIT_S) and then lowers it; a call that wants more runs with the
current count rather than wait. BLAS calls made outside adplace's kernels (user code in other threads) are not seen.
When no call is in flight and no step with a bound of its own (intra_op_parallelism_threads, the pool's share) is
running, the library's count is restored: after each call, so a step that never ends (a run blocked on a queue, or
one a Ctrl-C cut short between its start and its end) leaves nothing changed, and the count read when a step starts
is always the library's own. A Ctrl-C landing anywhere in a call or a step scope leaves no call counted in flight
and no bound registered (`counted_call`): either would hold later calls' counts, a call counted in flight forever
making every call that wants fewer threads wait WAIT_S.

Cost (measured on the same VM, busy): threadpoolctl's `limit()` context, which re-reads every library, costs 5 us
idle and 20-45 us busy a step; here a step's bound costs 1.5-3.5 us (the count read once through OpenBLAS's own C
function, set only when the wanted count differs from the cached one, ~0.1 us a library) and a BLAS call 1.5-3 us
(a lock, two clock reads, the choice). Without threadpoolctl (the `threads` extra) the policy stays off: kernels
call BLAS directly.
"""
from __future__ import annotations

import sys
import threading
import time
from typing import Callable

SMALL_MNK = 1 << 19        # fewer multiply-adds than this: one thread
MNK_PER_THREAD = 1 << 18   # the least work per thread worth starting one for (measured, see above)
TINY_MNK = 1 << 16         # fewer: no policy at all (BLAS libraries keep such products on one thread themselves)
WAIT_S = 1.0               # longest wait for calls in flight before running with the count as it is
PROBE_SPACING = 20         # after a re-timing taking t, no kernel re-times another count for 20 t of BLAS time


class BlasThreads:
    """The process-wide BLAS thread count: cached, changed only with no adplace BLAS call in flight."""

    def __init__(self):
        self.enabled = False
        self._make = None             # threadpoolctl's ThreadpoolController, once attached
        self._modules = 0             # len(sys.modules) when the libraries were last looked for
        self._libs: tuple = ()        # threadpoolctl library controllers of user_api "blas"
        self._getters: tuple = ()     # their get_num_threads and set_num_threads functions
        self._setters: tuple = ()
        self._originals: tuple = ()   # their counts when last read, restored after the steps
        self._dirty = False           # a count was changed since
        self._lock = threading.Lock()  # held plainly on the fast paths; the condition only to wait
        self._cond = threading.Condition(self._lock)
        self._waiting = 0             # calls waiting for the calls in flight to finish
        self.current = 0              # the count last read from or set in the libraries
        self.original = 0             # the count to restore when nothing is in flight
        self._active = 0              # adplace BLAS calls in flight
        self._bounded: dict[int, int] = {}  # bound -> steps in flight with it
        self.bound = 0                # the count a large product may use now
        self.blas_ns = 0              # time the timed BLAS calls took, all kernels together
        self.probe_after = 0          # the blas_ns before which no kernel re-times its other count

    def attach(self, controller) -> None:
        """Start managing the BLAS libraries a threadpoolctl ThreadpoolController found (looked for again when a
        step starts after new modules were imported: a library loaded later is managed too)."""
        with self._lock:
            if self._make is None:
                self._make = type(controller)
                self._scan(controller)

    def _scan(self, controller) -> None:
        libs = [lib for lib in controller.lib_controllers if lib.user_api == "blas"]
        self._getters = tuple(_raw(lib, "get") or lib.get_num_threads for lib in libs)
        # threadpoolctl >= 3.6 lets one Python thread only set OpenBLAS's count (the others' calls are dropped);
        # the policy serializes its changes itself, from whichever thread runs the kernel.
        self._setters = tuple(_raw(lib, "set") or getattr(lib, "_real_set_num_threads", lib.set_num_threads)
                              for lib in libs)
        self._libs = tuple(libs)
        self._modules = len(sys.modules)
        if self._libs:
            self.current = self.original = self.bound = self._read()
        self.enabled = bool(self._libs)

    def _read(self) -> int:
        """Read each library's count (kept, to restore) and return the smallest."""
        self._originals = tuple(get() or 1 for get in self._getters)
        self._dirty = False
        return max(1, min(self._originals))

    def _set(self, n: int) -> None:
        for setter in self._setters:
            setter(n)
        self.current, self._dirty = n, True

    # --- steps ------------------------------------------------------------------------------------------------------
    def refresh(self) -> None:
        """Before a BLAS call of a step without a bound of its own: honour the changes made to the libraries' counts
        since the last call (threadpoolctl, env) and the libraries loaded since, when nothing holds the count."""
        if self._active or self._bounded or self._dirty or self._make is None:
            return  # read without the lock: the locked call below checks again
        with self._lock:
            self._refresh()
            if not self._bounded:
                self.bound = self.original

    def _refresh(self) -> None:
        if not self._active and not self._bounded and not self._dirty and self._make is not None:
            if len(sys.modules) != self._modules:  # imports since: maybe another BLAS library
                self._scan(self._make())
            elif self._getters:
                self.current = self.original = self._read()

    def begin_step(self, bound: int, entered: list | None = None) -> None:
        """A step starts: its BLAS calls may use up to `bound` threads (0: the library's count at this moment).
        `entered` gets an item once the bound counts (no signal handler can run between the two): a caller that a
        Ctrl-C interrupts in here ends the step only then."""
        with self._lock:
            self._refresh()
            if bound > 0:
                self._bounded[bound] = self._bounded.get(bound, 0) + 1
                if entered is not None:
                    entered.append(bound)
                self.bound = min(self._bounded)
                if self.enabled and self.bound < self.current and not self._active:  # py_funcs see it too
                    self._set(self.bound)
            elif not self._bounded:
                self.bound = self.original

    def end_step(self, bound: int, ended: list | None = None) -> None:
        """A step ends; `ended` gets an item once its bound no longer counts (see begin_step)."""
        with self._lock:
            if bound > 0:
                left = self._bounded[bound] - 1
                if left:
                    self._bounded[bound] = left
                else:
                    del self._bounded[bound]
            if ended is not None:
                ended.append(bound)
            if bound > 0:
                self.bound = min(self._bounded) if self._bounded else self.original
            if self._dirty and not self._active and not self._bounded:
                self._restore()

    def _restore(self) -> None:
        for setter, n in zip(self._setters, self._originals):
            setter(n)
        self.current, self._dirty = self.original, False

    # --- calls ------------------------------------------------------------------------------------------------------
    def threads_for(self, mnk: int) -> int:
        """The threads a product of `mnk` multiply-adds gets under the current bound."""
        if mnk < SMALL_MNK:
            return 1
        return max(1, min(self.bound, mnk // MNK_PER_THREAD))

    def enter(self, want: int, entered: list | None = None) -> int:
        """A BLAS call wanting `want` threads starts; returns the count it runs on. Pair with exit(): see
        `counted_call`, which `entered` is for (an item once the call counts as in flight)."""
        with self._lock:
            if want != self.current:
                if want < self.current and self._active:
                    self._waiting += 1
                    try:
                        self._cond.wait_for(lambda: not self._active, WAIT_S)
                    finally:
                        self._waiting -= 1
                if not self._active:
                    self._set(want)
            self._active += 1
            if entered is not None:
                entered.append(want)
            return self.current

    def exit(self, ended: list | None = None) -> None:
        with self._lock:
            self._active -= 1
            if ended is not None:
                ended.append(True)
            if not self._active:
                if self._dirty and not self._bounded:
                    self._restore()
                if self._waiting:
                    self._cond.notify_all()  # calls waiting to lower the count


def counted_call(enter: Callable, exit: Callable, arg, work: Callable, *args):
    """`work(enter(arg, marks), *args)`, then `exit(marks)`. `enter` appends to `marks` once it counts something (a
    call in flight, a step's bound), with no signal handler able to run between the two, and `exit` once it no
    longer counts it. A Ctrl-C landing anywhere, in enter or exit too, leaves nothing counted: a count leaked by an
    interrupt would hold every later product's thread count. So exit runs here, in this frame (a handler may run at
    any function's start, a `with` block's __exit__ too), retried until it counted, the KeyboardInterrupt after."""
    marks: list = []
    try:
        return work(enter(arg, marks), *args)
    finally:
        if marks:
            ended: list = []
            stop = None
            while not ended:
                try:
                    exit(ended)
                except KeyboardInterrupt as e:
                    stop = e
            if stop is not None:
                raise stop


def _raw(lib, verb: str):
    """OpenBLAS's own (pthreads) {verb}_num_threads C function, called without threadpoolctl's Python wrapper
    (~0.1 us instead of ~1 us), or None for other libraries and threadpoolctl versions."""
    find = getattr(lib, "_get_symbol", None)
    if find is None or lib.internal_api != "openblas" or getattr(lib, "threading_layer", None) == "openmp":
        return None
    try:
        return find(f"openblas_{verb}_num_threads")
    except Exception:  # noqa: BLE001 - a private helper of threadpoolctl: any failure means "not available"
        return None


def _median(times: list) -> int:
    """The middle of a count's recent times (the lower middle of an even number)."""
    return sorted(times)[(len(times) - 1) // 2]


POLICY = BlasThreads()


class BlasKernel:
    """One kernel's BLAS calls: `kernel(fn, mnk, *args)` runs fn(*args) on the count the policy picks.

    Where the size rule allows several threads, the count is also chosen by measurement: the kernel times its calls
    on one thread and on the rule's count, keeps the rule's count while it is GAIN times faster and one thread
    otherwise, and re-times the other now and then (less often while the choice holds). Concurrent calls of one
    kernel may race on these figures: a lost update only delays a choice. OpenBLAS splits a product evenly between its threads, so on a machine whose cores are busy
    with other work the call waits for its slowest thread: there one thread is often faster, and this finds it.
    """

    __slots__ = ("mnk", "rule", "best", "samples", "calls", "probe_at", "interval")
    FIRST_INTERVAL, MAX_INTERVAL = 8, 256
    GAIN = 1.25   # one thread -> the rule's count when that measures this much faster
    LEAVE = 1.05  # the rule's count -> one thread when that measures less than this much faster
    SAMPLES = 5   # each count's estimate is the median of its last SAMPLES calls

    def __init__(self):
        self.mnk = self.rule = -1

    def _reset(self, mnk: int, rule: int) -> None:
        self.mnk, self.rule, self.best, self.samples, self.calls = mnk, rule, rule, {}, 0
        self.probe_at, self.interval = 0, self.FIRST_INTERVAL

    def pick(self, mnk: int) -> int:
        """The count for this call: the size rule's, or one thread where that measured faster."""
        rule = POLICY.threads_for(mnk)
        if rule == 1:
            self.mnk = -1
            return 1
        if mnk != self.mnk or rule != self.rule:
            self._reset(mnk, rule)
        self.calls += 1
        if len(self.samples) < 2:  # time both candidates first: the rule's count, then one thread
            return 1 if rule in self.samples else rule
        if self.calls >= self.probe_at and POLICY.blas_ns >= POLICY.probe_after:
            self.probe_at = self.calls + self.interval
            return 1 if self.best != 1 else rule
        return self.best

    def record(self, threads: int, ns: int) -> None:
        """A call's time, into its count's estimate: the median of that count's last SAMPLES times, so that one call
        slowed by another process does not move the kernel. The rule's count is left for one thread once it measures
        less than LEAVE times faster, and taken back only when GAIN times faster (a kernel on a busy machine must not
        return to a count whose slow calls cost far more; on a quiet one, a product 1.3x faster on two threads must
        not leave them whenever its median wavers)."""
        recent = self.samples.get(threads)
        probe = threads != self.best
        POLICY.blas_ns += ns
        if probe and recent is not None:  # all kernels' re-timings take at most 1 / PROBE_SPACING of the BLAS time
            POLICY.probe_after = POLICY.blas_ns + PROBE_SPACING * ns
        if recent is None:
            recent = self.samples[threads] = []
        elif len(recent) == self.SAMPLES:
            del recent[0]
        recent.append(ns)
        if len(self.samples) == 2:  # hysteresis: the rule's count is kept while LEAVE times faster, taken back at GAIN
            ratio = self.LEAVE if self.best == self.rule else self.GAIN
            best = self.rule if _median(self.samples[self.rule]) * ratio < _median(self.samples[1]) else 1
            if best != self.best:
                self.best, self.interval = best, self.FIRST_INTERVAL
            elif probe:  # the choice held: re-time less often
                self.interval = min(2 * self.interval, self.MAX_INTERVAL)

    def __call__(self, fn, mnk: int, *args, **kwargs):
        if mnk < TINY_MNK or not POLICY.enabled:
            return fn(*args, **kwargs)
        POLICY.refresh()
        want = self.pick(mnk)
        return counted_call(POLICY.enter, POLICY.exit, want, self._timed, want, mnk, fn, args, kwargs)

    def _timed(self, ran: int, want: int, mnk: int, fn, args, kwargs):
        """fn(*args, **kwargs) on `ran` threads, timed for the choice when that is the count it wanted."""
        start = time.perf_counter_ns()
        out = fn(*args, **kwargs)
        if ran == want and self.mnk == mnk:
            self.record(want, time.perf_counter_ns() - start)
        return out
