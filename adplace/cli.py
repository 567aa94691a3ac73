"""The `adplace` command: `adplace devices` lists devices, `adplace demo` runs ADCME's placement examples.

    adplace devices            # CPU:0 and every GPU; virtual GPUs are marked "(virtual)"
    adplace demo               # variables on the CPU, compute on GPU:0, a two-tower model; prints the placement log
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
        elif d.device_type == "GPU":
            kind = f"{d.description}; its ops compute with NumPy until adplace's CuPy kernels land"
        else:
            kind = "host CPU, NumPy"
        print(f"{d.name}  ({kind})")
    if not any(d.device_type == "GPU" for d in found):
        print("No GPU found. Set ADPLACE_VIRTUAL_GPUS=N (or pass --virtual-gpus N) for virtual GPUs.")
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


def _adcme_placement() -> None:
    """ADCME's example: variables on the CPU (assign_to_device), sin on GPU:0, cos on the CPU."""
    import adplace as tf

    tf.reset_default_graph()
    with tf.device(tf.assign_to_device("/device:GPU:0")):
        a = tf.Variable(1.0, name="a")
        b = tf.sin(a, name="b")
    with tf.device("/CPU:0"):
        c = tf.cos(b, name="c")
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


def _cmd_demo(args: argparse.Namespace) -> int:
    print(_demo_devices(args.virtual_gpus))
    _section("ADCME placement: variables on the CPU, compute on GPU:0")
    _adcme_placement()
    _section("Multi-tower: one matmul per GPU, add_n on the CPU")
    _towers()
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
    demo = sub.add_parser("demo", help="run ADCME's placement example and a two-tower example",
                          description="Run ADCME's assign_to_device example and a multi-tower example, printing the "
                          "placement log and results. Without a GPU it uses 2 virtual GPUs.")
    demo.add_argument("--virtual-gpus", type=int, metavar="N", help="use N virtual GPUs instead of real ones")
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
