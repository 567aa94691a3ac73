"""adplace/profiler.py, the pictures: plot_placement (the graph coloured by device) and plot_timeline on given axes."""
import itertools
import re
import sys

import pytest

import adplace as tf
from adplace import profiler
from test_profiler import tower_step

matplotlib = pytest.importorskip("matplotlib", reason='the plots need matplotlib (pip install "adplace[plot]")')
from matplotlib.colors import to_rgba  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402
from matplotlib.patches import FancyArrowPatch, FancyBboxPatch  # noqa: E402

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def _two_device_graph():
    """x and a variable on the CPU, a GPU:0 chain reading both, a control edge, and a sum back on the CPU."""
    with tf.device("/cpu:0"):
        x = tf.constant([1.0, 2.0], name="x")
        v = tf.Variable([3.0, 4.0], name="v")
    with tf.device("/gpu:0"):
        h = tf.sin(x * v, name="h")
        with tf.control_dependencies([v.initializer]):
            k = tf.cos(h, name="k")
    with tf.device("/cpu:0"):
        return tf.reduce_sum(h + k, name="total")


def _boxes(ax) -> dict[str, FancyBboxPatch]:
    return {p.get_gid(): p for p in ax.patches if isinstance(p, FancyBboxPatch)}


def _arrows(ax) -> list[FancyArrowPatch]:
    return [p for p in ax.patches if isinstance(p, FancyArrowPatch)]


def _legend_colours(ax) -> dict[str, tuple]:
    legend = ax.get_legend()
    handles = getattr(legend, "legend_handles", None) or legend.legendHandles
    return {text.get_text(): h.get_facecolor() for text, h in zip(legend.get_texts(), handles)
            if hasattr(h, "get_facecolor")}


def _drawn(graph, sess):
    fig = profiler.plot_placement(graph, sess)
    return fig, fig.axes[0]


# --- plot_placement ------------------------------------------------------------------------------------------------
def test_plot_placement_writes_a_png_without_touching_pyplot(gpus, tmp_path):
    backend, had_pyplot = matplotlib.get_backend(), "matplotlib.pyplot" in sys.modules
    _two_device_graph()
    path = tmp_path / "placement.png"
    assert profiler.plot_placement(tf.get_default_graph(), tf.Session(), str(path)) == str(path)
    assert path.read_bytes()[:8] == PNG_MAGIC and path.stat().st_size > 5000
    assert matplotlib.get_backend() == backend and ("matplotlib.pyplot" in sys.modules) == had_pyplot


def test_plot_placement_fills_each_op_with_its_devices_colour(gpus):
    _two_device_graph()
    graph, sess = tf.get_default_graph(), tf.Session()
    fig, ax = _drawn(graph, sess)
    boxes, legend = _boxes(ax), _legend_colours(ax)
    assert set(boxes) == {op.name for op in graph.get_operations()}
    assert set(legend) == {"CPU:0", "GPU:0"} and legend["CPU:0"] != legend["GPU:0"]
    dot_fill = dict(re.findall(r'^\s*"([^"]+)" \[label="[^"]*", fillcolor="([^"]+)"\];$',
                               profiler.placement_dot(graph, sess), re.M))
    for op in graph.get_operations():
        device = sess.placement(op).rpartition("device:")[2]
        assert boxes[op.name].get_facecolor() == legend[device] == to_rgba(dot_fill[op.name]), op.name
    assert boxes["v"].get_facecolor() == legend["CPU:0"] and boxes["h"].get_facecolor() == legend["GPU:0"]
    labels = [t.get_text() for t in ax.texts]
    assert "h\nSin" in labels and "v/read\nIdentity" in labels


def test_plot_placement_draws_transfers_red_and_control_edges_dashed(gpus):
    _two_device_graph()
    graph, sess = tf.get_default_graph(), tf.Session()
    _, ax = _drawn(graph, sess)
    ops = graph.get_operations()
    crossing = sum(sess.placement(t.op) != sess.placement(op) for op in ops for t in op.inputs)
    arrows = _arrows(ax)
    red = [a for a in arrows if a.get_edgecolor() == to_rgba("red")]
    dashed = [a for a in arrows if a.get_linestyle() in ("--", "dashed")]
    assert crossing >= 3 and len(red) == crossing
    assert len(arrows) == sum(len(op.inputs) + len(op.control_inputs) for op in ops)
    assert len(dashed) == sum(len(op.control_inputs) for op in ops) >= 1
    assert not set(red) & set(dashed)


def test_plot_placement_on_given_axes_returns_that_figure_and_saves_nothing(gpus, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    _two_device_graph()
    fig = Figure()
    left, right = fig.subplots(1, 2)
    assert profiler.plot_placement(tf.get_default_graph(), tf.Session(), ax=right, title="mine") is fig
    assert right.get_title() == "mine" and len(_boxes(right)) == len(tf.get_default_graph().get_operations())
    assert not left.patches and list(tmp_path.iterdir()) == []


def _two_tower_gradient_graph():
    """About 60 ops: x and w on the CPU, a tower per GPU, and the gradient of the summed losses."""
    with tf.device("/cpu:0"):
        x = tf.placeholder(tf.float32, [8], name="x")
        w = tf.Variable(0.5, name="w")
    parts = []
    for i in range(2):
        with tf.device(f"/gpu:{i}"):
            parts.append(tf.reduce_mean(tf.square(tf.tanh(w * x) - x)))
    tf.gradients(tf.add_n(parts), [w], colocate_gradients_with_ops=True)
    return tf.get_default_graph()


def test_plot_placement_keeps_a_gradient_graph_legible(gpus):
    graph = _two_tower_gradient_graph()
    assert 40 <= len(graph.get_operations()) <= 70
    _, ax = _drawn(graph, tf.Session())
    boxes = _boxes(ax)
    for a, b in itertools.combinations(boxes.values(), 2):
        apart_x = a.get_x() + a.get_width() <= b.get_x() or b.get_x() + b.get_width() <= a.get_x()
        apart_y = a.get_y() + a.get_height() <= b.get_y() or b.get_y() + b.get_height() <= a.get_y()
        assert apart_x or apart_y, (a.get_gid(), b.get_gid())
    for op in graph.get_operations():   # every op is drawn below all of its inputs
        assert all(boxes[op.name].get_y() < boxes[t.op.name].get_y() for t in op.inputs), op.name
    assert min(t.get_fontsize() for t in ax.texts) >= 6


def test_layout_routes_every_long_edge_beside_the_boxes_of_the_rows_it_crosses(gpus):
    graph = _two_tower_gradient_graph()
    ops = graph.get_operations()
    sess = tf.Session()
    where, bends = profiler._layered_layout(ops, profiler._placed_devices(graph, sess))
    assert bends, "this graph has edges that skip rows"
    for (src, dst), points in bends.items():
        assert [row for _, row in points] == list(range(where[src][1] + 1, where[dst][1]))
        for bend_x, bend_row in points:
            crowded = [name for name, (x, row) in where.items() if row == bend_row and abs(x - bend_x) < 0.5]
            assert crowded == [], (src, dst, bend_row)


def test_plot_placement_without_matplotlib_says_what_to_install(gpus, monkeypatch):
    _two_device_graph()
    monkeypatch.setitem(sys.modules, "matplotlib.figure", None)
    with pytest.raises(ImportError, match=re.escape('plot_placement needs matplotlib: pip install "adplace[plot]"')):
        profiler.plot_placement(tf.get_default_graph(), tf.Session())


def test_placement_dot_and_plot_share_the_device_colours():
    assert profiler._device_colours(["/b", "/a", "/b"]) == {"/a": profiler._DEVICE_COLOURS[0],
                                                            "/b": profiler._DEVICE_COLOURS[1]}


# --- plot_timeline on given axes -----------------------------------------------------------------------------------
def test_two_timelines_go_side_by_side_on_given_axes(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    fig = Figure(figsize=(14, 3))
    left, right = fig.subplots(1, 2)
    step = tower_step()
    assert profiler.plot_timeline(step, ax=left, title="colocate=True") is fig
    assert profiler.plot_timeline(tf.RunMetadata(step_stats=step), ax=right, title="colocate=False") is fig
    assert (left.get_title(), right.get_title()) == ("colocate=True", "colocate=False")
    node_count = sum(len(d.node_stats) for d in step.dev_stats)
    assert len(left.collections) == len(right.collections) == node_count   # one broken_barh per op or copy
    assert [t.get_text() for t in left.get_yticklabels()] == ["CPU:0 lane 0", "CPU:0 lane 1", "GPU:0", "GPU:1"]
    assert list(tmp_path.iterdir()) == []
    path = tmp_path / "both.png"
    assert profiler.plot_timeline(step, str(path), ax=right) == str(path)
    assert path.read_bytes()[:8] == PNG_MAGIC


def test_plot_timeline_without_a_path_returns_its_own_figure():
    fig = profiler.plot_timeline(tower_step(), title="one step")
    assert isinstance(fig, Figure) and fig.axes[0].get_title() == "one step"
    assert type(fig.canvas).__name__ == "FigureCanvasAgg"
    assert len(fig.axes[0].collections) == sum(len(d.node_stats) for d in tower_step().dev_stats)


def test_a_timeline_of_many_op_types_keeps_its_whole_legend_and_explains_lanes(tmp_path):
    """30 op types on three rows: the legend gets columns and the figure the height to hold them, and the saved
    PNG keeps the legend beside the axes (bbox_inches="tight"); the lane rows are explained under the time axis."""
    from test_profiler import CPU, node, step
    nodes = [node(f"op{i} = Type{i:02d}()", 3 * i, 5, 4) for i in range(30)]  # each overlaps the next: 2 lanes
    fig = profiler.plot_timeline(step(**{CPU: nodes}))
    ax = fig.axes[0]
    legend = ax.get_legend()
    assert [t.get_text() for t in legend.get_texts()][:2] == ["Type00", "Type01"] and len(legend.get_texts()) == 31
    handles = getattr(legend, "legend_handles", None) or legend.legendHandles
    looks = {(tuple(h.get_facecolor()), h.get_hatch()) for h in handles}
    assert len(looks) == 31  # no two op types (nor the copies) drawn alike
    fig.canvas.draw()
    box, figure_box = legend.get_window_extent(), fig.bbox
    assert box.y0 >= figure_box.y0 - 1 and box.y1 <= figure_box.y1 + 1  # no entry cut off above or below
    assert "'lane k': ops of one device that overlapped in time" in ax.get_xlabel()
    path = tmp_path / "many.png"
    profiler.plot_timeline(step(**{CPU: nodes}), str(path))
    import matplotlib.image
    width = matplotlib.image.imread(str(path)).shape[1]
    assert width > fig.get_figwidth() * fig.dpi * 0.9  # the saved image is wide enough to hold the legend
