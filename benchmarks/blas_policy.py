"""The BLAS thread policy (adplace.kernels.blas_threads, issue #24 item 4) on mlp_step.py's 784-512-512-10 Adam step
with default threads: adplace as shipped ("policy": the size rule, then each product's measured choice between one
thread and the rule's count), the size rule alone ("size_rule": no measurement) and the policy off ("off": every
product on OpenBLAS's own count), each in a worker process of its own, on a quiet machine and with 1 and 2 other
processes spinning on the CPUs (what the measured choice is for).

    python benchmarks/blas_policy.py              # busy 0, 1, 2; writes benchmarks/results/blas_policy.json
    python benchmarks/blas_policy.py --quick      # a quiet machine only, 3 rounds (JSON to the temp directory)

Rounds visit the workers in a shuffled order, each timing a batch of steps after a pause (SETTLE_S: the workers'
OpenBLAS threads spin a while after their last product). Every number is a median over rounds, in microseconds per
step; a variant's ratio is the median of its per-round ratios to "off" in the same round.
"""
from __future__ import annotations

import os
import random
import statistics
import subprocess
import sys
import time

import adplace as tf

try:  # run as a script (benchmarks/ is sys.path[0]) or imported as benchmarks.blas_policy
    from dispatch import parse_args, print_table, run_fields, run_start, stop_worker, write_results
except ImportError:  # pragma: no cover - the package-style import
    from benchmarks.dispatch import parse_args, print_table, run_fields, run_start, stop_worker, write_results

VARIANTS = ("off", "size_rule", "policy")
STEPS_PER_BATCH = 20
WARMUP = 100  # steps before the first batch: plans tier up, kernels settle their choices
SETTLE_S = 0.3
SPIN = "while True: pass"


def worker_main(variant: str) -> None:
    """A worker: build the step with `variant` of the policy, warm up, then answer each stdin line "N" with the
    microseconds per step of N steps (0 ends)."""
    from adplace.kernels import blas_threads
    if variant == "off":
        blas_threads.POLICY.attach = lambda controller: None  # never attached: kernels call BLAS directly
    elif variant == "size_rule":
        blas_threads.BlasKernel.pick = lambda kernel, mnk: blas_threads.POLICY.threads_for(mnk)
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import mlp_step
    _, step = mlp_step.build_graph_step(tf, mlp_step.make_data(), "default")
    for _ in range(WARMUP):
        step()
    print(f"ready {int(blas_threads.POLICY.enabled)}", flush=True)
    for line in sys.stdin:
        n = int(line)
        if n <= 0:
            return
        start = time.perf_counter_ns()
        for _ in range(n):
            step()
        print((time.perf_counter_ns() - start) / n / 1e3, flush=True)


def run_condition(busy: int, rounds: int) -> dict:
    """Every variant's median us per step and median ratio to "off", with `busy` spinning processes."""
    spinners = [subprocess.Popen([sys.executable, "-c", SPIN]) for _ in range(busy)]
    workers, enabled = {}, {}
    try:
        for variant in VARIANTS:
            proc = subprocess.Popen([sys.executable, os.path.abspath(__file__), "--worker", variant],
                                    stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
            workers[variant] = proc
            ready = proc.stdout.readline().split()
            if not ready or ready[0] != "ready":
                raise RuntimeError(f"the {variant} worker failed to start")
            enabled[variant] = ready[1] == "1"
        times = {variant: [] for variant in VARIANTS}
        for _ in range(rounds):
            order = list(VARIANTS)
            random.shuffle(order)
            for variant in order:
                time.sleep(SETTLE_S)
                workers[variant].stdin.write(f"{STEPS_PER_BATCH}\n")
                workers[variant].stdin.flush()
                times[variant].append(float(workers[variant].stdout.readline()))
    finally:
        for proc in workers.values():
            stop_worker(proc, "0\n")
        for spinner in spinners:
            spinner.kill()
            spinner.wait()
    off = times["off"]
    return {variant: {"policy_enabled": enabled[variant], "median_us": statistics.median(t),
                      "ratio_to_off": statistics.median(a / b for a, b in zip(t, off)), "samples_us": t}
            for variant, t in times.items()}


def main(argv=None) -> int:
    if argv is None and len(sys.argv) == 3 and sys.argv[1] == "--worker":
        worker_main(sys.argv[2])
        return 0
    args = parse_args(argv, "blas_policy", __doc__.splitlines()[0], "a quiet machine only, 3 rounds")
    conditions, rounds = ((0,), 3) if args.quick else ((0, 1, 2), 24)
    start = run_start()
    results, rows = {}, []
    for busy in conditions:
        result = results[str(busy)] = run_condition(busy, rounds)
        for variant in VARIANTS:
            rows.append([busy, variant, f"{result[variant]['median_us']:.0f}",
                         f"{result[variant]['ratio_to_off']:.3f}x"])
    print(f"MLP Adam step, default threads; us per step (median of {rounds} rounds of {STEPS_PER_BATCH} steps)")
    print_table(["busy processes", "variant", "us/step", "/off (per-round median)"], rows)
    write_results({"benchmark": "blas_policy", "rounds": rounds, "steps_per_batch": STEPS_PER_BATCH,
                   "busy": results, **run_fields(start, args.quick)}, args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
