"""The README's Julia example (julia/examples/quickstart.jl) made through Python, call for call, with ADPlace's value
conversions (julia_standin): its output is the one the README pastes under the Julia block."""
import re
from pathlib import Path

import adplace as tf
from julia_standin import JuliaPyObject, JuliaString, julia_function, pybuiltin, to_julia, to_python

ROOT = Path(__file__).resolve().parents[2]
jl_tf = JuliaPyObject(tf)
PS_OPS = [JuliaString("Variable"), JuliaString("VariableV2"), JuliaString("AutoReloadVariable")]
PS_DEVICE = JuliaString("/device:CPU:0")


def adplace_assign_to_device(device, ps_device=PS_DEVICE):
    """ADPlace.assign_to_device (julia/src/ADPlace.jl), ADCME's closure."""
    def _assign(op):
        node_def = op if pybuiltin("isinstance")(op, jl_tf.NodeDef) else op.node_def
        return ps_device if node_def.op in PS_OPS else device
    return _assign


def julia_println(*args) -> str:
    """Julia's `println` of Strings and Float64s: text as is, floats in their shortest round-trip form."""
    return "".join(a.text if isinstance(a, JuliaString) else repr(float(a)) for a in args) + "\n"


def quickstart() -> str:
    """julia/examples/quickstart.jl, line for line; returns what it prints."""
    if not to_julia(tf.config.cuda_gpus()):
        jl_tf.config.set_virtual_gpus(1)
    with to_python(jl_tf.device(julia_function(adplace_assign_to_device(JuliaString("/device:GPU:0"))))):
        a = jl_tf.Variable(1.0, dtype=jl_tf.float64)          # Variable(1.0): a Julia Float64
        b = jl_tf.sin(a)
    with to_python(jl_tf.device(JuliaString("/cpu:0"))):      # @cpu begin ... end
        c = jl_tf.cos(b)
    g = jl_tf.gradients(c, a, colocate_gradients_with_ops=True)[0]
    sess = jl_tf.Session(config=jl_tf.ConfigProto())
    sess.run(jl_tf.global_variables_initializer(), feed_dict=None)
    sp = JuliaString(" ")
    return (julia_println(a.device, sp, b.device, sp, c.device)
            + julia_println(sess.run(c, feed_dict=None), sp, sess.run(g, feed_dict=None)))


def test_the_readme_julia_output_is_what_the_example_prints(virtual_gpus_only):
    readme = (ROOT / "README.md").read_text()
    quickstart_jl = (ROOT / "julia" / "examples" / "quickstart.jl").read_text()
    found = re.search(r"```julia\n" + re.escape(quickstart_jl) + r"```\s*```text\n(.*?)```", readme, re.S)
    assert found, "README: the quickstart.jl block, then a ```text block with its output"
    assert quickstart() == found.group(1)


def test_the_twin_follows_the_example_file():
    """Every call the twin makes is in quickstart.jl, in the same order."""
    source = (ROOT / "julia" / "examples" / "quickstart.jl").read_text()
    calls = ["set_virtual_gpus(1)", "ADPlace.assign_to_device(\"/device:GPU:0\")", "Variable(1.0)", "sin(a)",
             "@cpu begin", "cos(b)", "gradients(c, a, colocate=true)", "Session()", "init(sess)",
             "println(a.device", "run(sess, c)", "run(sess, g)"]
    positions = [source.find(call) for call in calls]
    assert -1 not in positions and positions == sorted(positions), dict(zip(calls, positions))
