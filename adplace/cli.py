"""The `adplace` command: `adplace devices` lists devices, `adplace demo` runs ADCME's placement examples.

    adplace devices            # CPU:0 and every GPU; virtual GPUs are marked "(virtual)"
    adplace demo               # variables on the CPU, compute on GPU:0, a two-tower model, gradient colocation on
                               # and off, and a data-parallel polynomial fit trained with Adam on 2 GPUs
    adplace demo --trace DIR   # the same; its Chrome traces and PNG timelines go to DIR (default ./adplace-traces),
                               # and a TensorBoard log directory (graphs, traced runs, the fit's loss) to DIR/tensorboard
    adplace demo --cluster     # a local Ray cluster, 1 ps + 2 workers, between-graph training (distributed/demo.py)
"""
from __future__ import annotations

import argparse
import os
import sys

import numpy as np


def _cmd_devices(args: argparse.Namespace) -> int:
    from adplace import devices

    if args.virtual_gpus is not None:
        devices.set_virtual_gpus(args.virtual_gpus)
    found = devices.list_devices()
    for d in found:
        if d.is_virtual:
            kind = "virtual GPU, computes with NumPy"
        elif d.is_cuda:
            free, total = devices.gpu_memory_info(d)
            kind = f"{d.description}, memory: {free / 2**30:.1f} GiB free of {total / 2**30:.1f} GiB; CuPy"
        else:
            kind = "host CPU, NumPy"
        print(f"{d.name}  ({kind})")
    if not any(d.is_cuda for d in found):
        print(f"No CUDA GPU: {devices.why_no_cuda()}.")
    if not any(d.device_type == "GPU" for d in found):
        print("Set ADPLACE_VIRTUAL_GPUS=N (or pass --virtual-gpus N) for virtual GPUs.")
    return 0


def _demo_devices(requested: int | None) -> str:
    """Pick the demo's GPUs: real ones when present, else 2 virtual GPUs; returns a sentence saying which."""
    from adplace import devices

    if requested is not None:
        devices.set_virtual_gpus(requested)
        return f"Using {requested} virtual GPU(s) as asked (virtual GPUs compute with NumPy)."
    real = devices.cuda_gpus()
    if real:
        return f"Using {len(real)} real GPU(s): " + "; ".join(d.description for d in real)
    if devices.virtual_gpu_count() == 0:
        devices.set_virtual_gpus(2)
    return (f"No GPU found: using {devices.virtual_gpu_count()} virtual GPUs, which place and transfer like GPUs "
            "but compute with NumPy.")


def _section(title: str) -> None:
    print(f"\n== {title} " + "=" * max(0, 72 - len(title)))


def _adcme_graph():
    """ADCME's example graph, on a fresh default graph: a on the CPU (assign_to_device), b = sin(a) on GPU:0,
    c = cos(b) on the CPU."""
    import adplace as tf

    tf.reset_default_graph()
    with tf.device(tf.assign_to_device("/device:GPU:0")):
        a = tf.Variable(1.0, name="a")
        b = tf.sin(a, name="b")
    with tf.device("/CPU:0"):
        c = tf.cos(b, name="c")
    return a, b, c


def _adcme_placement() -> None:
    """ADCME's example: variables on the CPU (assign_to_device), sin on GPU:0, cos on the CPU."""
    import adplace as tf

    a, b, c = _adcme_graph()
    print(f"requested devices: a.device = {a.device!r}, b.device = {b.device!r}, c.device = {c.device!r}")
    print("placement log (name: (type): placed device):")
    with tf.Session(config=tf.ConfigProto(log_device_placement=True)) as sess:
        sess.run(tf.global_variables_initializer())
        value = sess.run(c)
        plan = sess.plan_for(c)
    print(f"c = cos(sin(1)) = {value:.6f} (NumPy: {np.cos(np.sin(1.0)):.6f})")
    print(f"cross-device transfers in the step: {len(plan.transfers)}")
    for t in plan.transfers:
        print(f"  {t.tensor_name}: {t.src_device} -> {t.dst_device}")


def _towers() -> None:
    """The multi-tower example: a matmul per GPU, summed on the CPU."""
    import adplace as tf

    tf.reset_default_graph()
    gpus = [d for d in tf.config.list_devices() if d.device_type == "GPU"][:2]
    towers = []
    for gpu in gpus:
        with tf.device(f"/gpu:{gpu.index}"):
            a = tf.constant([1.0, 2.0, 3.0, 4.0], shape=[2, 2])
            b = tf.constant([1.0, 2.0, 3.0, 4.0], shape=[2, 2])
            towers.append(tf.matmul(a, b))
    with tf.device("/cpu:0"):
        total = tf.add_n(towers)
    print("placement log (name: (type): placed device):")
    with tf.Session(config=tf.ConfigProto(log_device_placement=True)) as sess:
        value = sess.run(total)
    print(f"sum over {len(towers)} tower(s) of [[1,2],[3,4]] @ [[1,2],[3,4]] =")
    print(value)


def _can_plot() -> bool:
    """Whether matplotlib imports, so the demo can draw PNG timelines."""
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        return False
    return True


def _save_trace(trace_dir: str, name: str, plot: bool) -> list[str]:
    """Save the latest run_profile as Chrome trace `trace_dir/name.json` and, when `plot`, a PNG timeline
    `trace_dir/name.png`; returns the paths written."""
    import adplace as tf
    from adplace import profiler

    written = [tf.save_profile(os.path.join(trace_dir, f"{name}.json"))]
    if plot:
        written.append(profiler.plot_timeline(profiler.last_run_metadata(), os.path.join(trace_dir, f"{name}.png")))
    return written


def _tensorboard_writer(logdir: str, run: str, sess):
    """A FileWriter of run `run` under TensorBoard log directory `logdir`, with the session's graph."""
    import adplace as tf

    return tf.summary.FileWriter(os.path.join(logdir, run), sess.graph)


def _gradient_colocation(trace_dir: str, plot: bool, logdir: str) -> list[str]:
    """ADCME's `gradients(c, a, colocate=true)`: where each gradient op runs with colocation on and off, and a
    traced run of each (`run_profile`/`save_profile`) saved as Chrome trace JSON (and a PNG timeline) and compared;
    each graph and traced run also goes to TensorBoard log directory `logdir`. Returns the trace files written."""
    import adplace as tf
    from adplace import profiler

    expected = -np.sin(np.sin(1.0)) * np.cos(1.0)
    summaries, written = {}, []
    for colocate in (True, False):
        a, b, c = _adcme_graph()
        g, = tf.gradients(c, a, colocate_gradients_with_ops=colocate)
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            value = sess.run(g)
            print(f"colocate_gradients_with_ops={colocate}: dc/da = {value:.6f} (-sin(sin(1))*cos(1) = "
                  f"{expected:.6f}); gradient ops ran on:")
            for op in tf.get_default_graph().get_operations():
                if op.name.startswith("gradients/"):
                    print(f"  {op.name:<28} {op.type:<8} {sess.placement(op)}")
            tf.run_profile(sess, g + c)
            with _tensorboard_writer(logdir, f"colocate_{str(colocate).lower()}", sess) as writer:
                writer.add_run_metadata(profiler.last_run_metadata(), "g + c")
            files = _save_trace(trace_dir, f"colocate_{str(colocate).lower()}", plot)
            summaries[f"colocate={colocate}"] = profiler.step_summary(profiler.last_run_metadata().step_stats)
            print(f"  traced run of g + c saved to {' and '.join(files)} (open the JSON in chrome://tracing or "
                  "ui.perfetto.dev)")
            written += files
    print("traced run of g + c, ops per device and cross-device transfers:")
    print(profiler.format_comparison(summaries))
    return written


def _prints_steps(bar) -> bool:
    """Whether the fit prints "step N loss X" lines: when no bar shows, or when stdout is not the terminal the bar
    draws on (`adplace demo > log.txt`), so a log still shows progress and lines never break the bar."""
    return bar.disable or not sys.stdout.isatty()


def _polynomial_fit(steps: int, trace_dir: str, plot: bool, logdir: str) -> list[str]:
    """The data-parallel fit of y = 5x^2 + 3 from ADCME's docs: one tower per GPU sharing w, trained with Adam, a
    progress bar showing the loss; its last step is traced. The graph, the loss every 10 steps and the traced step
    go to TensorBoard log directory `logdir`. Returns the trace files written."""
    import adplace as tf
    from adplace import profiler
    from adplace.progress import progress

    tf.reset_default_graph()
    tf.set_random_seed(0)  # w's initial value: the same output every run
    num_gpus = max(1, min(2, sum(d.device_type == "GPU" for d in tf.config.list_devices())))

    def model(x, y):
        w = tf.get_variable("w", shape=[3, 1])
        f = tf.stack([tf.square(x), x, tf.ones_like(x)], 1)
        yhat = tf.squeeze(tf.matmul(f, w), 1)
        return tf.square(yhat - y)

    x, y = tf.placeholder(tf.float32), tf.placeholder(tf.float32)
    loss = tf.train.make_parallel(model, num_gpus, x=x, y=y)
    mean_loss = tf.reduce_mean(loss)
    train_op = tf.train.AdamOptimizer(0.1).minimize(mean_loss, colocate_gradients_with_ops=True)
    loss_summary = tf.summary.scalar("loss", mean_loss)
    rng = np.random.default_rng(0)
    with tf.Session() as sess, _tensorboard_writer(logdir, "polynomial_fit", sess) as writer:
        sess.run(tf.global_variables_initializer())
        with progress(range(1, steps + 1), desc="polynomial fit") as bar:
            print_steps = _prints_steps(bar)
            for step in bar:
                x_val = rng.uniform(-10.0, 10.0, size=100)
                feed = {x: x_val, y: 5 * np.square(x_val) + 3}
                logged = step % 10 == 0 or step == steps
                fetches = [train_op, mean_loss] + ([loss_summary] if logged else [])
                if step == steps:  # traced: the saved timeline shows one data-parallel training step
                    values = tf.run_profile(sess, fetches, feed)
                    writer.add_run_metadata(profiler.last_run_metadata(), f"step {step}", step)
                else:
                    values = sess.run(fetches, feed)
                loss_val = values[1]
                if logged:
                    writer.add_summary(values[2], step)
                bar.set_postfix(loss=f"{loss_val:.6g}", refresh=False)
                if print_steps and step % 100 == 0:
                    print(f"step {step:5d}  loss {loss_val:12.6f}")
        w, = sess.run(tf.contrib.framework.get_variables_by_name("w"))
        towers = sorted({sess.placement(op) for op in tf.get_default_graph().get_operations()
                         if op.type == "BatchMatMulV2"})
    written = _save_trace(trace_dir, "polynomial_fit", plot)
    print(f"final w = {np.array2string(w.ravel(), precision=4)} (target [5, 0, 3]; the constant term converges "
          f"slowest); {num_gpus} tower(s); the towers' matmul gradients ran on {', '.join(towers)}")
    print(f"traced training step {steps} saved to {' and '.join(written)}")
    return written


def _cmd_demo(args: argparse.Namespace) -> int:
    if args.cluster:
        from adplace.distributed.demo import run_demo
        return run_demo(args.steps or 200, args.nodes, args.trace_dir)
    args.steps = args.steps or 1000
    print(_demo_devices(args.virtual_gpus))
    os.makedirs(args.trace_dir, exist_ok=True)
    logdir = os.path.join(args.trace_dir, "tensorboard")
    plot = _can_plot()
    _section("ADCME placement: variables on the CPU, compute on GPU:0")
    _adcme_placement()
    _section("Multi-tower: one matmul per GPU, add_n on the CPU")
    _towers()
    _section("Gradient colocation: ADCME's gradients(c, a, colocate=true)")
    written = _gradient_colocation(args.trace_dir, plot, logdir)
    _section("Data-parallel polynomial fit on 2 GPUs: Adam, colocate_gradients_with_ops=True")
    written += _polynomial_fit(args.steps, args.trace_dir, plot, logdir)
    _section("TensorBoard")
    print(f"graphs, traced runs (per-op time and memory) and the fit's loss written to {logdir}; view them with:")
    print(f"  tensorboard --logdir {logdir}")
    _section("Files written")
    for path in written:
        print(path)
    if not plot:
        print('PNG timelines skipped: matplotlib is not installed (pip install "adplace[plot]" to draw them).')
    return 0


_MAIN_DESCRIPTION = """\
Device placement for dataflow graphs: TF1 graph mode on NumPy and CuPy
(`import adplace as tf`), with ADCME's placement idioms. This command lists
the devices a session would use and runs a demo of placement and multi-GPU
training."""

_MAIN_EPILOG = """\
environment variables:
  ADPLACE_VIRTUAL_GPUS=N  add N virtual GPUs: they place and transfer like
                          GPUs but compute with NumPy
  ADPLACE_PROGRESS=0|1    progress bars, and notes on steps slower than a
                          second, off (0) or on (1); by default they show when
                          stderr is a terminal or in a Jupyter notebook
  ADPLACE_PLAN_CACHE_SIZE=N
                          compiled plans (and fetch structures) one session
                          keeps; the least recently used go first (default 512)
  ADPLACE_RAY_ADDRESS=host:port
                          the Ray cluster that sessions on grpc:// targets
                          and tf.train.Server use (default: a new local one
                          on 127.0.0.1)
  ADPLACE_CPU_FUSION=0|1  fuse hot elementwise chains on the CPU into compiled
                          Numba loops (needs adplace[jit]); 0 turns it off
                          (default 1)
  ADPLACE_CACHE_DIR=DIR   where fused CPU loops are cached (default
                          $XDG_CACHE_HOME/adplace or ~/.cache/adplace)
  TF_FORCE_GPU_ALLOW_GROWTH=true
                          on a CUDA GPU, take memory as ops ask for it instead
                          of reserving the card up front, as TF does
  TF_NUM_INTEROP_THREADS=N
                          threads that run independent ops at once, for
                          sessions whose ConfigProto leaves it at 0 (default:
                          the CPUs this process may use)
  TF_NUM_INTRAOP_THREADS=N
                          threads one kernel (BLAS) may use, for sessions
                          whose ConfigProto leaves it at 0 (default: the
                          library's own choice)

examples:
  adplace devices                   list CPU:0 and the GPUs
  adplace devices --virtual-gpus 4  the same, with 4 virtual GPUs added
  adplace demo                      run the placement and training examples
  adplace demo --trace /tmp/traces  write its traces and timelines there
  adplace demo --cluster            train between-graph on a local Ray cluster
  ADPLACE_PROGRESS=0 adplace demo > demo.log
                                    no progress bar; the log gets a
                                    "step N loss X" line every 100 steps

Run `adplace COMMAND --help` for a command's options and output."""

_DEVICES_DESCRIPTION = """\
List CPU:0, the CUDA GPUs (through CuPy) and any virtual GPUs: the devices a
tf.Session places ops on."""

_DEVICES_EPILOG = """\
output:
  One line per device: its full name, then what backs it (the host CPU, a CUDA
  GPU with its free and total memory, or a virtual GPU). Without a CUDA GPU,
  why none was found and how to get virtual GPUs.

environment variables:
  ADPLACE_VIRTUAL_GPUS=N  add N virtual GPUs (--virtual-gpus overrides it)

examples:
  adplace devices
  adplace devices --virtual-gpus 2"""

_DEMO_DESCRIPTION = """\
Run ADCME's assign_to_device example, a multi-tower example, gradient
colocation on and off, and a data-parallel polynomial fit on 2 GPUs trained
with Adam. Without a GPU it uses 2 virtual GPUs."""

_DEMO_EPILOG = """\
output:
  Each example's placement log (op name, type, device), its results checked
  against NumPy and its cross-device transfers; the fit's loss as it trains (a
  progress bar on a terminal; a "step N loss X" line every 100 steps when the
  bar is off or stdout is not a terminal); the fitted weights; and the list of
  files written.

files written to the --trace directory:
  colocate_true.json     Chrome traces of the gradient-colocation example,
  colocate_false.json    colocation on and off (open them in chrome://tracing
                         or https://ui.perfetto.dev)
  polynomial_fit.json    Chrome trace of the fit's last training step
  tensorboard/           a TensorBoard log directory: one run per example
                         with its graph and traced run, and the fit's loss
                         (view it with: tensorboard --logdir DIR/tensorboard)
  *.png                  a timeline of each traced run, one row per device;
                         needs matplotlib (pip install "adplace[plot]"),
                         skipped with a note without it

environment variables:
  ADPLACE_VIRTUAL_GPUS=N  add N virtual GPUs (without a CUDA GPU the demo adds
                          2 unless this is set; --virtual-gpus overrides it)
  ADPLACE_PROGRESS=0|1    the progress bar off (0) or on (1); by default on
                          when stderr is a terminal
  ADPLACE_RAY_ADDRESS=host:port
                          with --cluster: use this running Ray cluster
                          instead of starting local nodes

--cluster:
  Starts --nodes Ray nodes on 127.0.0.1, one Ray actor per task of the
  ClusterSpec {ps: [localhost:2222], worker: [localhost:2223, localhost:2224]}
  (the addresses only name tasks), trains y = 5x^2 + 3 with one client thread
  per worker (variables on the ps by replica_device_setter, asynchronous Adam),
  prints each worker's steps and loss and the bytes one step moves between
  tasks, writes cluster_step.json (a traced step) to the --trace directory,
  and stops the cluster. Without Ray it says so and exits.

examples:
  adplace demo
  adplace demo --steps 200 --trace /tmp/traces
  adplace demo --cluster --steps 100
  ADPLACE_PROGRESS=0 adplace demo --virtual-gpus 4 > demo.log"""


def _positive_int(text: str) -> int:
    """argparse type: an integer of at least 1."""
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value


def _non_negative_int(text: str) -> int:
    """argparse type: an integer of at least 0."""
    value = int(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be at least 0, got {value}")
    return value


def _version() -> str:
    """The installed distribution's version, else the source tree's adplace.__version__."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("adplace")
    except PackageNotFoundError:
        from adplace import __version__
        return __version__


def _add_devices_parser(sub) -> None:
    devices = sub.add_parser("devices", help="list the devices a session would use",
                             description=_DEVICES_DESCRIPTION, epilog=_DEVICES_EPILOG,
                             formatter_class=argparse.RawDescriptionHelpFormatter)
    devices.add_argument("--virtual-gpus", type=_non_negative_int, metavar="N", help="add N virtual GPUs (default: "
                         "$ADPLACE_VIRTUAL_GPUS, else 0)")
    devices.set_defaults(run=_cmd_devices)


def _add_demo_parser(sub) -> None:
    demo = sub.add_parser("demo", help="run ADCME's placement, gradient-colocation and multi-GPU training examples, "
                          "writing traces and timelines",
                          description=_DEMO_DESCRIPTION, epilog=_DEMO_EPILOG,
                          formatter_class=argparse.RawDescriptionHelpFormatter)
    demo.add_argument("--virtual-gpus", type=_non_negative_int, metavar="N", help="use N virtual GPUs instead of "
                      "real ones (default: the real GPUs, else $ADPLACE_VIRTUAL_GPUS or 2 virtual ones)")
    demo.add_argument("--steps", type=_positive_int, default=None, metavar="N", help="training steps of the "
                      "polynomial fit (default 1000; with --cluster, per worker, default 200)")
    demo.add_argument("--cluster", action="store_true", help="instead: start a local Ray cluster (needs Ray: "
                      "pip install 'adplace[distributed]'), a ClusterSpec of 1 ps and 2 worker tasks on it, and train "
                      "the polynomial fit between-graph, one client thread per worker; then stop it all")
    demo.add_argument("--nodes", type=_positive_int, default=2, metavar="N", help="with --cluster: Ray nodes to "
                      "start on 127.0.0.1 (default 2; none when $ADPLACE_RAY_ADDRESS names a running cluster)")
    demo.add_argument("--trace", dest="trace_dir", default="adplace-traces", metavar="DIR", help="directory for "
                      "the Chrome traces (.json) and PNG timelines; created if missing (default ./adplace-traces)")
    demo.add_argument("--trace-dir", dest="trace_dir", default="adplace-traces", help=argparse.SUPPRESS)
    demo.set_defaults(run=_cmd_demo)


def build_parser() -> argparse.ArgumentParser:
    """The `adplace` argument parser: `devices` and `demo` subcommands, `--version`, help with examples."""
    parser = argparse.ArgumentParser(prog="adplace", description=_MAIN_DESCRIPTION, epilog=_MAIN_EPILOG,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--version", action="version", version=f"%(prog)s {_version()}",
                        help="print the version and exit")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND", title="commands")
    _add_devices_parser(sub)
    _add_demo_parser(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Run the `adplace` command; returns its exit status (2 for bad input, 1 when a file cannot be written)."""
    args = build_parser().parse_args(argv)
    try:
        return args.run(args)
    except ValueError as e:
        print(f"adplace: {e}", file=sys.stderr)
        return 2
    except BrokenPipeError:  # `adplace demo | head`: stop quietly, as Python's docs advise
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1
    except OSError as e:  # e.g. --trace names a file, or a directory we may not write to
        print(f"adplace: {e}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
