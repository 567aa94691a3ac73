"""Real TensorFlow's side of the GraphDef interop tests (tests/framework/test_graph_def_interop.py), run as a
subprocess so that TensorFlow never shares a process with adplace.

    python tf_graph_def_peer.py load DIR      # import every DIR/<case>.pb into TF; run the fetches DIR/<case>.json names
    python tf_graph_def_peer.py write DIR     # write TF-built GraphDefs and the values TF computes for them

`load` writes each GraphDef TF loaded back as TF writes it (DIR/<case>.tf.pbtf), and DIR/results.json: {"load": per case "ok" or the error TF raised (an import error, or a non-underscore
attr the op's OpDef does not declare, which TF's NodeDef validation rejects when a session runs it), "run": for cases
whose .json lists fetches, "ok" or TF's error}, and the values TF computes as DIR/<case>.tf.<i>.npy. `write` writes <graph>.pb, <graph>.json
(tensor and op names) and <graph>.<key>.npy reference values. Arrays are .npy without pickles.
"""
import json
import os
import pathlib
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402
from tensorflow.python.framework import op_def_registry  # noqa: E402

tf1 = tf.compat.v1
tf1.disable_eager_execution()
tf1.disable_resource_variables()


def _check_attrs(graph_def) -> None:
    for node in graph_def.node:
        op_def = op_def_registry.get(node.op)
        declared = {a.name for a in op_def.attr}
        extra = [k for k in node.attr if not k.startswith("_") and k not in declared]
        if extra:
            raise ValueError(f"NodeDef mentions attrs {extra} not in Op<name={node.op}> (node {node.name})")


def load(folder: pathlib.Path) -> None:
    results, runs = {}, {}
    for path in sorted(folder.glob("*.pb")):
        case = path.stem
        graph_def = tf1.GraphDef()
        graph_def.ParseFromString(path.read_bytes())
        graph = tf.Graph()
        try:
            with graph.as_default():
                tf1.import_graph_def(graph_def, name="")
            _check_attrs(graph_def)
            results[case] = "ok"
            (folder / f"{case}.tf.pbtf").write_bytes(graph.as_graph_def().SerializeToString())  # as TF writes it
        except Exception as e:  # noqa: BLE001 - every failure is reported to the test, which judges it
            results[case] = _text(e)
            continue
        spec_path = path.with_suffix(".json")
        if spec_path.exists():
            try:
                _run(graph, json.loads(spec_path.read_text()), folder, case)
                runs[case] = "ok"
            except Exception as e:  # noqa: BLE001
                runs[case] = _text(e)
    (folder / "results.json").write_text(json.dumps({"load": results, "run": runs}, indent=1))


def _text(error: Exception) -> str:
    lines = [line for line in str(error).splitlines() if line.strip()]
    return f"{type(error).__name__}: {' | '.join(lines[:6])[:1000]}"


def _run(graph, spec: dict, folder: pathlib.Path, case: str) -> None:
    """Run the spec's init ops, then its fetches, saving each fetched value as <case>.tf.<i>.npy."""
    with tf1.Session(graph=graph) as sess:
        for name in spec.get("init", []):
            sess.run(name)
        values = sess.run(spec["fetches"])
    for i, value in enumerate(values):
        if value is not None:  # None: a fetched op
            np.save(folder / f"{case}.tf.{i}.npy", np.asarray(value), allow_pickle=False)


def _save(folder: pathlib.Path, graph_name: str, graph, names: dict, values: dict) -> None:
    (folder / f"{graph_name}.pb").write_bytes(graph.as_graph_def().SerializeToString())
    (folder / f"{graph_name}.json").write_text(json.dumps(names))
    for key, value in values.items():
        np.save(folder / f"{graph_name}.{key}.npy", np.asarray(value), allow_pickle=False)


def _mlp(folder: pathlib.Path) -> None:
    """A two-layer MLP: loss, gradients, one SGD step (ApplyGradientDescent), loss after the step."""
    rng = np.random.default_rng(7)
    x_value, y_value = rng.normal(size=(5, 3)).astype(np.float32), rng.normal(size=(5, 2)).astype(np.float32)
    graph = tf.Graph()
    with graph.as_default():
        x = tf1.placeholder(tf.float32, [None, 3], name="x")
        y = tf1.placeholder(tf.float32, [None, 2], name="y")
        w1 = tf1.Variable(rng.normal(size=(3, 4)).astype(np.float32), name="w1")
        b1 = tf1.Variable(np.zeros(4, np.float32), name="b1")
        w2 = tf1.Variable(rng.normal(size=(4, 2)).astype(np.float32), name="w2")
        b2 = tf1.Variable(np.full(2, 0.1, np.float32), name="b2")
        hidden = tf.nn.relu(tf.matmul(x, w1) + b1)
        out = tf.nn.sigmoid(tf.matmul(hidden, w2) + b2)  # (adplace has no BiasAddGrad)
        loss = tf.reduce_mean(tf.square(out - y), name="loss")
        variables = [w1, b1, w2, b2]
        grads = tf1.gradients(loss, variables)
        with tf1.control_dependencies(grads):  # every gradient before any update: the step's values are defined
            train = tf1.train.GradientDescentOptimizer(0.5).apply_gradients(zip(grads, variables), name="train")
        init = tf1.global_variables_initializer()
        feed = {x: x_value, y: y_value}
        with tf1.Session(graph=graph) as sess:
            sess.run(init)
            before = sess.run([loss] + grads, feed)
            sess.run(train, feed)
            after = sess.run([loss] + [v.value() for v in variables], feed)
    names = {"init": init.name, "x": x.name, "y": y.name, "loss": loss.name, "grads": [g.name for g in grads],
             "train": train.name, "variables": [v.op.name + ":0" for v in variables]}
    values = {"x": x_value, "y": y_value, "loss_before": before[0], "loss_after": after[0],
              **{f"grad{i}": g for i, g in enumerate(before[1:])}, **{f"var{i}": v for i, v in enumerate(after[1:])}}
    _save(folder, "mlp", graph, names, values)


def _placed(folder: pathlib.Path) -> None:
    """Devices and colocation: a variable on the CPU, ops colocated with it, a control dependency."""
    graph = tf.Graph()
    with graph.as_default():
        with tf.device("/device:CPU:0"):
            v = tf1.Variable(np.arange(6, dtype=np.float32).reshape(2, 3), name="v")
        with tf.device("/job:localhost/replica:0/task:0/device:CPU:0"):
            a = tf.constant(np.ones((2, 3), np.float32), name="a")
        with graph.colocate_with(v.op):
            near = tf.identity(v * 2.0, name="near")
        marker = tf1.no_op(name="marker")
        with tf1.control_dependencies([marker]):
            total = tf.add(near, a, name="total")
        parts = tf.split(total, [1, 2], axis=1, name="parts")
        init = tf1.global_variables_initializer()
        with tf1.Session(graph=graph) as sess:
            sess.run(init)
            values = sess.run({"total": total, "part0": parts[0], "part1": parts[1]})
    names = {"init": init.name, "total": total.name, "parts": [p.name for p in parts], "near": near.op.name,
             "marker": marker.name,
             "v": v.op.name, "a": a.op.name}
    _save(folder, "placed", graph, names, values)


def _loops(folder: pathlib.Path) -> None:
    """TF1 control flow (v1): a while loop with a cond and a TensorArray in its body, and its gradients (TF's
    backward loop with stacks, including pops inside the cond's gradient)."""
    tf1.disable_control_flow_v2()
    graph = tf.Graph()
    with graph.as_default():
        x = tf1.placeholder(tf.float64, [3], name="x")
        w = tf1.Variable(np.array([0.9, 1.1, 0.7]), name="w")

        def body(i, u, ta):
            step = tf1.cond(tf.reduce_sum(u) > 0.0, lambda: u * w + tf.sin(u), lambda: u - w * 0.5)
            return i + 1, step, ta.write(i, step)
        ta = tf1.TensorArray(tf.float64, size=4)
        _, final, ta = tf1.while_loop(lambda i, u, t: i < 4, body, [0, x, ta])
        loss = tf.reduce_sum(final * final) + tf.reduce_sum(ta.stack() * 0.5)
        grads = tf1.gradients(loss, [x, w])
        init = tf1.global_variables_initializer()
        x_value = np.array([0.3, -0.2, 0.4])
        with tf1.Session(graph=graph) as sess:
            sess.run(init)
            values = sess.run({"loss": loss, "gx": grads[0], "gw": grads[1]}, {x: x_value})
    names = {"init": init.name, "x": x.name, "loss": loss.name, "grads": [g.name for g in grads]}
    _save(folder, "loops", graph, names, {**values, "x": x_value})


def write(folder: pathlib.Path) -> None:
    _mlp(folder)
    _placed(folder)
    _loops(folder)


if __name__ == "__main__":
    command, target = sys.argv[1], pathlib.Path(sys.argv[2])
    {"load": load, "write": write}[command](target)
