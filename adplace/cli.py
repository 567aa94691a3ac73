"""The `adplace` command: `adplace devices` lists devices, `adplace demo` runs ADCME's placement examples.

    adplace devices            # CPU:0 and every GPU; virtual GPUs are marked "(virtual)"
    adplace demo               # variables on the CPU, compute on GPU:0, a two-tower model, gradient colocation on
                               # and off, and a data-parallel polynomial fit trained with Adam on 2 GPUs
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


def _gradient_colocation(trace_dir: str) -> None:
    """ADCME's `gradients(c, a, colocate=true)`: where each gradient op runs with colocation on and off, and a
    traced run of each (`run_profile`/`save_profile`) saved as Chrome trace JSON and compared."""
    import adplace as tf
    from adplace import profiler

    expected = -np.sin(np.sin(1.0)) * np.cos(1.0)
    summaries = {}
    os.makedirs(trace_dir, exist_ok=True)
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
            path = tf.save_profile(os.path.join(trace_dir, f"colocate_{str(colocate).lower()}.json"))
            summaries[f"colocate={colocate}"] = profiler.step_summary(profiler.last_run_metadata().step_stats)
            print(f"  traced run of g + c saved to {path} (open in chrome://tracing or ui.perfetto.dev)")
    print("traced run of g + c, ops per device and cross-device transfers:")
    print(profiler.format_comparison(summaries))


def _polynomial_fit(steps: int) -> None:
    """The data-parallel fit of y = 5x^2 + 3 from ADCME's docs: one tower per GPU sharing w, trained with Adam."""
    import adplace as tf

    tf.reset_default_graph()
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
    rng = np.random.default_rng(0)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        for step in range(1, steps + 1):
            x_val = rng.uniform(-10.0, 10.0, size=100)
            _, loss_val = sess.run([train_op, mean_loss], {x: x_val, y: 5 * np.square(x_val) + 3})
            if step % 100 == 0:
                print(f"step {step:5d}  loss {loss_val:12.6f}")
        w, = sess.run(tf.contrib.framework.get_variables_by_name("w"))
        towers = sorted({sess.placement(op) for op in tf.get_default_graph().get_operations()
                         if op.type == "BatchMatMulV2"})
    print(f"final w = {np.array2string(w.ravel(), precision=4)} (target [5, 0, 3]; the constant term converges "
          f"slowest); {num_gpus} tower(s); the towers' matmul gradients ran on {', '.join(towers)}")


def _cmd_demo(args: argparse.Namespace) -> int:
    print(_demo_devices(args.virtual_gpus))
    _section("ADCME placement: variables on the CPU, compute on GPU:0")
    _adcme_placement()
    _section("Multi-tower: one matmul per GPU, add_n on the CPU")
    _towers()
    _section("Gradient colocation: ADCME's gradients(c, a, colocate=true)")
    _gradient_colocation(args.trace_dir)
    _section("Data-parallel polynomial fit on 2 GPUs: Adam, colocate_gradients_with_ops=True")
    _polynomial_fit(args.steps)
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="adplace", description="Device placement for dataflow graphs (TF1 graph "
                                     "mode on NumPy and CuPy, with ADCME's placement idioms).")
    sub = parser.add_subparsers(dest="command", required=True)
    devices = sub.add_parser("devices", help="list the devices a session would use",
                             description="List CPU:0, CUDA GPUs (through CuPy) and virtual GPUs.")
    devices.add_argument("--virtual-gpus", type=int, metavar="N", help="add N virtual GPUs (default: "
                         "$ADPLACE_VIRTUAL_GPUS or 0)")
    devices.set_defaults(run=_cmd_devices)
    demo = sub.add_parser("demo", help="run ADCME's placement, gradient-colocation and multi-GPU training examples",
                          description="Run ADCME's assign_to_device example, a multi-tower example, gradient "
                          "colocation on and off, and a data-parallel polynomial fit on 2 GPUs, printing placements "
                          "and results. Without a GPU it uses 2 virtual GPUs.")
    demo.add_argument("--virtual-gpus", type=int, metavar="N", help="use N virtual GPUs instead of real ones")
    demo.add_argument("--steps", type=int, default=1000, metavar="N", help="training steps of the polynomial fit "
                      "(default 1000)")
    demo.add_argument("--trace-dir", default="adplace-traces", metavar="DIR", help="where the colocation example "
                      "writes its two Chrome traces (default ./adplace-traces)")
    demo.set_defaults(run=_cmd_demo)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return args.run(args)
    except ValueError as e:
        print(f"adplace: {e}", file=sys.stderr)
        return 2
    except BrokenPipeError:  # `adplace demo | head`: stop quietly, as Python's docs advise
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1


if __name__ == "__main__":
    sys.exit(main())
