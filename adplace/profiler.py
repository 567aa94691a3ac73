"""Observe a run: ADCME's run_profile/save_profile, per-device summaries, a Gantt chart and a placement graph.

    y_value = run_profile(sess, y)                 # one FULL_TRACE run; its RunMetadata is kept
    save_profile("timeline.json")                  # Chrome trace JSON, for chrome://tracing or ui.perfetto.dev
    step_summary(last_run_metadata().step_stats)   # {'devices': {...: {'ops': 3, ...}}, 'transfers': 1, ...}
    transfers(last_run_metadata().step_stats)      # [Transfer(tensor_name='a:0', src_device=..., bytes=4), ...]
    plot_timeline(last_run_metadata(), "timeline.png")             # or ax=...: two timelines side by side
    plot_placement(tf.get_default_graph(), sess, "placement.png")  # the graph coloured by device (matplotlib)
    placement_dot(tf.get_default_graph(), sess, "placement.dot")   # the same for Graphviz: dot -Tsvg placement.dot

This module sits on top (style.md, house rule 1): framework/, ops/ and runtime/ never import it.
"""
from __future__ import annotations

import math

import logging
from typing import Any

from adplace.client.timeline import Timeline
from adplace.runtime import options as _options
from adplace.runtime.step_stats import copied_tensor as _copied_tensor
from adplace.runtime.step_stats import transfers

_log = logging.getLogger("adplace")

run_metadata: _options.RunMetadata | None = None  # ADCME's module global: the RunMetadata of the latest run_profile

_DEVICE_COLOURS = ("#8dd3c7", "#fdb462", "#bebada", "#fb8072", "#80b1d3", "#b3de69", "#fccde5", "#ffffb3",
                   "#bc80bd", "#ccebc5", "#ffed6f", "#d9d9d9")


# --- ADCME's run_profile / save_profile ---------------------------------------------------------------------------
def run_profile(sess, fetches, feed_dict=None, **kwargs) -> Any:
    """Run `fetches` once with FULL_TRACE and keep the RunMetadata for save_profile (ADCME's run_profile).

    Only the latest profiled run is kept. Returns what sess.run returns.

        y_value = run_profile(sess, y, {x: x0})
        last_run_metadata().step_stats.dev_stats      # one DeviceStepStats per device that ran ops
    """
    global run_metadata
    options = _options.RunOptions(trace_level=_options.RunOptions.FULL_TRACE)
    run_metadata = _options.RunMetadata()
    return sess.run(fetches, feed_dict, options=options, run_metadata=run_metadata, **kwargs)


def last_run_metadata() -> _options.RunMetadata | None:
    """The RunMetadata of the latest run_profile, or None before the first."""
    return run_metadata


def save_profile(filename: str = "default_timeline.json", **kwargs) -> str:
    """Write the latest run_profile's timeline to `filename` as Chrome trace JSON (ADCME's save_profile).

    Keyword arguments go to Timeline.generate_chrome_trace_format (show_dataflow, show_memory, op_time).

    Raises:
      RuntimeError: if run_profile has not been called yet.
    """
    if run_metadata is None:
        raise RuntimeError("save_profile: no profiled run to save. Call run_profile(sess, fetches) first; it runs "
                           "with RunOptions(trace_level=FULL_TRACE) and keeps the step stats.")
    chrome_trace = Timeline(run_metadata.step_stats).generate_chrome_trace_format(**kwargs)
    with open(filename, "w") as io:
        io.write(chrome_trace)
    _log.info("Timeline information saved in %s\n- Open Chrome and navigate to chrome://tracing (or open "
              "https://ui.perfetto.dev)\n- Load the timeline file", filename)
    return filename


# --- summaries ------------------------------------------------------------------------------------------------------
def _op_type(node_stats) -> str:
    return Timeline._parse_op_label(node_stats.timeline_label)[1]


def step_summary(step_stats) -> dict:
    """Per-device op counts and times, and the step's transfers, from a traced run's StepStats.

    Copies (`_Recv` nodes) are counted as transfers, not as ops. Times are microseconds.

        step_summary(md.step_stats)
        # {'devices': {'/job:localhost/replica:0/task:0/device:CPU:0': {'ops': 2, 'op_time_us': 7,
        #                                                              'transfer_time_us': 0}, ...},
        #  'transfers': 1, 'transfer_bytes': 400, 'transfer_list': [('a:0', '/...CPU:0', '/...GPU:0', 400)],
        #  'wall_us': 31}
    """
    devices: dict[str, dict[str, int]] = {}
    starts, ends = [], []
    for dev in step_stats.dev_stats:
        row = devices.setdefault(dev.device, {"ops": 0, "op_time_us": 0, "transfer_time_us": 0})
        for ns in dev.node_stats:
            starts.append(ns.all_start_micros)
            ends.append(ns.all_start_micros + ns.all_end_rel_micros)
            if _copied_tensor(ns) is not None:
                row["transfer_time_us"] += ns.all_end_rel_micros
            else:
                row["ops"] += 1
                row["op_time_us"] += ns.all_end_rel_micros
    copies = [tuple(t) for t in transfers(step_stats)]
    return {"devices": devices, "transfers": len(copies), "transfer_bytes": sum(t[3] for t in copies),
            "transfer_list": copies, "wall_us": max(ends) - min(starts) if starts else 0}


def _short_device(name: str) -> str:
    """'/job:localhost/replica:0/task:0/device:GPU:1' -> 'GPU:1' (the part a reader compares)."""
    return name.rpartition("device:")[2] if "device:" in name else name


def format_comparison(rows: dict[str, dict]) -> str:
    """An aligned text table of step_summary results, one row per label: ops per device, transfers, bytes.

        print(format_comparison({"colocate=True": s1, "colocate=False": s2}))
        # run             CPU:0 ops  GPU:0 ops  GPU:1 ops  transfers  bytes
        # colocate=True           2          9          9          2    800
    """
    devices = sorted({_short_device(d) for summary in rows.values() for d in summary["devices"]})
    header = ["run"] + [f"{d} ops" for d in devices] + ["transfers", "bytes"]
    table = [header]
    for label, summary in rows.items():
        ops = {d: 0 for d in devices}
        for name, stats in summary["devices"].items():
            ops[_short_device(name)] += stats["ops"]
        table.append([label] + [str(ops[d]) for d in devices] + [str(summary["transfers"]),
                                                                  str(summary["transfer_bytes"])])
    widths = [max(len(r[i]) for r in table) for i in range(len(header))]
    return "\n".join("  ".join(cell.ljust(w) if i == 0 else cell.rjust(w) for i, (cell, w) in
                               enumerate(zip(r, widths))).rstrip() for r in table)


# --- a Gantt chart --------------------------------------------------------------------------------------------------
def _lanes(node_stats) -> list[int]:
    """The Timeline's lanes for one device: the first lane whose last op ended strictly before each op starts."""
    lane_ends, lanes = [0], []
    for ns in node_stats:
        lane = next((i for i, end in enumerate(lane_ends) if ns.all_start_micros > end), len(lane_ends))
        if lane == len(lane_ends):
            lane_ends.append(0)
        lane_ends[lane] = ns.all_start_micros + ns.all_end_rel_micros
        lanes.append(lane)
    return lanes


def _matplotlib(what: str):
    """matplotlib's Figure, Agg canvas and Patch, or an ImportError that says how to install it."""
    try:
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure
        from matplotlib.patches import Patch
    except ImportError as e:
        raise ImportError(f'{what} needs matplotlib: pip install "adplace[plot]"') from e
    return Figure, FigureCanvasAgg, Patch


def _axes_for(what: str, ax, figsize: tuple[float, float]):
    """(ax, whether we made its figure): the caller's axes, or axes on a new Agg figure outside pyplot."""
    Figure, FigureCanvasAgg, _ = _matplotlib(what)
    if ax is not None:
        return ax, False
    fig = Figure(figsize=figsize)
    FigureCanvasAgg(fig)
    return fig.add_subplot(), True


def _finish(ax, made_figure: bool, path: str | None):
    """Lay out a figure we made, save it to `path` when given; returns path, else the Figure."""
    fig = ax.figure
    if made_figure:
        fig.tight_layout()
    if path is None:
        return fig
    fig.savefig(path, bbox_inches="tight")  # legends beside the axes are kept whole
    return path


def plot_timeline(run_metadata_or_step_stats, path: str | None = None, *, ax=None, title: str | None = None):
    """Draw a traced run as a per-device Gantt chart (one row per device and lane).

    Boxes are ops coloured by type and labelled when wide enough; copies are hatched boxes on the destination row,
    labelled with the tensor they move, with an arrow from the end of its producer (or from the source device's row).
    Needs matplotlib (`pip install "adplace[plot]"`).

        plot_timeline(md, "timeline.png")                 # saves (format from the extension); returns the path
        fig, (left, right) = plt.subplots(1, 2, figsize=(16, 4), layout="constrained")
        plot_timeline(md_on, ax=left, title="colocated")  # draws on `left`; returns its Figure, saves nothing
        plot_timeline(md_off, ax=right, title="not colocated")

    Args:
      run_metadata_or_step_stats: a RunMetadata from a FULL_TRACE run, or its StepStats.
      path: where to save the figure (.png, .svg, .pdf, ...); None: do not save.
      ax: matplotlib Axes to draw on; None: a new figure on its own Agg canvas, so pyplot and the global backend are
        untouched.
      title: the axes' title (default: what the hatching and arrows mean).

    Returns:
      `path` when it saved, else the Figure drawn on.
    """
    _, _, Patch = _matplotlib("plot_timeline")
    step_stats = getattr(run_metadata_or_step_stats, "step_stats", run_metadata_or_step_stats)
    rows, boxes = _timeline_rows(step_stats)
    op_types = sorted({_op_type(ns) for _, ns, copied in boxes if copied is None})
    legend_columns = max(1, math.ceil((len(op_types) + 1) / _LEGEND_ROWS))
    legend_height = 0.9 + 0.2 * math.ceil((len(op_types) + 1) / legend_columns)
    ax, made_figure = _axes_for("plot_timeline", ax, (12 + 1.6 * (legend_columns - 1),
                                                      max(1.6 + 0.5 * max(len(rows), 1), legend_height)))
    nodes = [ns for _, ns, _ in boxes]
    origin = min((ns.all_start_micros for ns in nodes), default=0)
    span = max((ns.all_start_micros + ns.all_end_rel_micros - origin for ns in nodes), default=1) or 1
    end_of = {ns.node_name: (row, ns.all_start_micros + ns.all_end_rel_micros - origin) for row, ns, _ in boxes}
    styles = _type_styles(op_types)
    for row, ns, copied in boxes:
        x, width = ns.all_start_micros - origin, max(ns.all_end_rel_micros, span * 1e-3)
        colour, hatch = ("white", "////") if copied else styles[_op_type(ns)]
        ax.broken_barh([(x, width)], (row - 0.4, 0.8), facecolors=colour, edgecolor="black", linewidth=0.5,
                       hatch=hatch)
        if width > span * 0.05:
            text = copied if copied else ns.node_name.rsplit("/", 1)[-1]
            ax.text(x + width / 2, row, text, ha="center", va="center", fontsize=8, clip_on=True)
        if copied:  # arrow from the end of the producer (recorded in the same step) to the copy's end
            src_row, src_x = end_of.get(copied.split(":")[0], (None, x))
            if src_row is not None:
                ax.annotate("", xy=(x + width, row), xytext=(src_x, src_row),
                            arrowprops={"arrowstyle": "->", "color": "crimson", "linewidth": 1.2})
    handles = [Patch(facecolor=styles[t][0], hatch=styles[t][1], edgecolor="black", label=t) for t in op_types]
    handles.append(Patch(facecolor="white", edgecolor="black", hatch="////", label="copy (_Recv)"))
    ax.legend(handles=handles, loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8, frameon=False,
              ncol=legend_columns, title="op type", title_fontsize=8)
    ax.set_yticks(range(len(rows)), rows)
    ax.set_ylim(len(rows) - 0.5, -0.5)
    ax.set_xlim(0, span * 1.02)
    xlabel = "time since the step's first op (us)"
    if any(" lane " in row for row in rows):
        xlabel += "\nrows: one per device; 'lane k': ops of one device that overlapped in time (concurrent threads)"
    ax.set_xlabel(xlabel)
    ax.set_title(title or "Per-device timeline (hatched: cross-device copies; arrows: source -> destination)")
    return _finish(ax, made_figure, path)


_LEGEND_ROWS = 16  # legend entries per column of plot_timeline's op-type legend
_TYPE_HATCHES = (None, "..", "xx", "--")  # after every 20 colours, the next pattern: each op type looks different


def _type_styles(op_types: list) -> dict:
    """Op type -> (fill colour, hatch): tab20's colours, then the same colours with a pattern."""
    from matplotlib import colormaps

    palette = colormaps["tab20"]
    return {t: (palette(i % 20), _TYPE_HATCHES[i // 20 % len(_TYPE_HATCHES)]) for i, t in enumerate(op_types)}


def _timeline_rows(step_stats):
    """(y labels top to bottom, [(row, node stats, copied tensor or None)])."""
    rows, boxes = [], []
    for dev in step_stats.dev_stats:
        lanes = _lanes(dev.node_stats)
        first_row = len(rows)
        count = max(lanes, default=0) + 1
        rows += [_short_device(dev.device) + (f" lane {k}" if count > 1 else "") for k in range(count)]
        boxes += [(first_row + lane, ns, _copied_tensor(ns)) for ns, lane in zip(dev.node_stats, lanes)]
    return rows, boxes


# --- placement drawings: one colour per placed device -------------------------------------------------------------
def _placed_devices(graph, sess) -> dict[str, str]:
    """Op name -> the full name of the device `sess` placed it on ("" for an op the session has not placed)."""
    placed = {name: device for name, _, _, device, _ in sess.placement_table()}
    return {op.name: placed.get(op.name, "") for op in graph.get_operations()}


def _device_colours(devices) -> dict[str, str]:
    """Device name -> fill colour, in sorted device order, so the DOT document and the plot colour alike."""
    return {d: _DEVICE_COLOURS[i % len(_DEVICE_COLOURS)] for i, d in enumerate(sorted(set(devices)))}


# --- placement as a Graphviz document -------------------------------------------------------------------------------
def _dot_id(text: str) -> str:
    """A DOT double-quoted ID: backslashes and quotes escaped, newlines kept as DOT's `\\n`."""
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


def placement_dot(graph, sess, path: str | None = None) -> str:
    """The graph as a Graphviz DOT document, each op filled with its placed device's colour.

    One cluster per placed device, outlined in its colour and labelled with its name (the legend); data edges solid,
    control edges dashed, and data edges between devices bold, red and labelled as transfers. Plain text, no graphviz
    package needed: render with `dot -Tsvg placement.dot -o placement.svg`. Writes to `path` when given.

        placement_dot(tf.get_default_graph(), sess)   # 'digraph placement {\\n  rankdir=TB; ...'
    """
    placed = _placed_devices(graph, sess)
    ops = graph.get_operations()
    colour = _device_colours(placed.values())
    devices = list(colour)
    lines = ["digraph placement {", "  rankdir=TB;", '  node [shape=box, style="rounded,filled", fontsize=10];']
    for i, device in enumerate(devices):
        lines += [f"  subgraph {_dot_id(f'cluster_{i}')} {{",
                  f"    label={_dot_id(device or 'unplaced')}; style=rounded; color={_dot_id(colour[device])}; "
                  "penwidth=2; fontsize=11;"]
        lines += [f"    {_dot_id(op.name)} [label={_dot_id(op.name + chr(10) + op.type)}, "
                  f"fillcolor={_dot_id(colour[device])}];"
                  for op in ops if placed.get(op.name, "") == device]
        lines.append("  }")
    for op in ops:
        dst = placed.get(op.name, "")
        for t in op.inputs:
            src = placed.get(t.op.name, "")
            edge = f"  {_dot_id(t.op.name)} -> {_dot_id(op.name)}"
            if src != dst:
                tensor = t.op.name if t.value_index == 0 else f"{t.op.name}:{t.value_index}"
                label = f"transfer {tensor}\n{_short_device(src)} -> {_short_device(dst)}"
                lines.append(f'{edge} [style=bold, color="red", fontcolor="red", label={_dot_id(label)}];')
            else:
                lines.append(f"{edge};")
        lines += [f"  {_dot_id(c.name)} -> {_dot_id(op.name)} [style=dashed];" for c in op.control_inputs]
    lines.append("}")
    document = "\n".join(lines) + "\n"
    if path is not None:
        with open(path, "w") as io:
            io.write(document)
    return document


# --- placement drawn with matplotlib -------------------------------------------------------------------------------
_LAYOUT_SWEEPS = 6  # alternating down and up passes of the layered layout; more barely moves a 150-op graph
_HALF_WIDTH = {True: 0.5, False: 0.15}  # half the slot of an op (True) and of a bend point (False), in columns


def _layered_layout(ops, placed: dict[str, str]) -> tuple[dict, dict]:
    """A small Sugiyama layout: ({op name: (x, row)}, {(src, dst): [(x, row) of each bend]}).

    Row = longest path from a source, except that constant-like ops move down to just above their first consumer. An
    edge that skips rows gets a bend point in each row it crosses, which takes a narrow slot there, so no edge runs
    behind a box. Within a row, ops move toward the mean x of their neighbours in sweeps down and up, bend points
    onto the straight line between their edge's ends, all kept apart by their slots.
    """
    preds = {op.name: list(dict.fromkeys([t.op.name for t in op.inputs] + [c.name for c in op.control_inputs]))
             for op in ops}
    row = _rows(ops, preds)
    neighbours: dict[str, list[str]] = {name: [] for name in preds}
    bends: dict[tuple[str, str], list[tuple]] = {}
    for dst, sources in preds.items():
        for src in sources:
            neighbours[src].append(dst)
            neighbours[dst].append(src)
            bends[src, dst] = [(src, dst, r) for r in range(row[src] + 1, row[dst])]
            row.update({point: point[2] for point in bends[src, dst]})
    x = _order_rows(row, neighbours, placed)
    left = min(x.values(), default=0.0)
    return ({name: (x[name] - left, row[name]) for name in preds},
            {edge: [(x[p] - left, row[p]) for p in points] for edge, points in bends.items() if points})


def _rows(ops, preds: dict[str, list[str]]) -> dict[str, int]:
    """Op name -> row: longest path from a source; constants, and ops computed from constants alone, move down to
    just above their first consumer (so a shape constant sits next to its Fill, not at the top)."""
    from graphlib import TopologicalSorter

    order = list(TopologicalSorter(preds).static_order())
    succs: dict[str, list[str]] = {name: [] for name in preds}
    for name, inputs in preds.items():
        for p in inputs:
            succs[p].append(name)
    row: dict[str, int] = {}
    for name in order:
        row[name] = 1 + max((row[p] for p in preds[name]), default=-1)
    is_const = {op.name: op.type == "Const" for op in ops}
    floating: dict[str, bool] = {}
    for name in order:
        floating[name] = all(floating[p] for p in preds[name]) if preds[name] else is_const[name]
    for name in reversed(order):
        if floating[name] and succs[name]:
            row[name] = min(row[s] for s in succs[name]) - 1
    return row


def _order_rows(row: dict, neighbours: dict[str, list[str]], placed: dict[str, str]) -> dict:
    """Node (op name, or a bend point (src, dst, row)) -> x. Ops start in creation order grouped by device; then
    sweeps down and up move each op toward the mean x of its neighbours and each bend onto the line between its
    edge's ends, left to right, each at least two half slots from the node on its left."""
    rows: dict[int, list] = {}
    for node in row:
        rows.setdefault(row[node], []).append(node)
    x: dict = {}
    for nodes in rows.values():
        ops = sorted((n for n in nodes if isinstance(n, str)), key=placed.get)
        x.update({name: float(i) for i, name in enumerate(ops)})

    def wanted(node) -> float:
        if isinstance(node, str):
            return _mean_x(neighbours[node], x, x[node])
        src, dst, r = node
        return x[src] + (x[dst] - x[src]) * (r - row[src]) / (row[dst] - row[src])

    for sweep in range(_LAYOUT_SWEEPS):
        for depth in sorted(rows, reverse=sweep % 2 == 1):
            target = {n: wanted(n) for n in rows[depth]}
            previous, previous_half = -float("inf"), 0.0
            for node in sorted(rows[depth], key=lambda n: (target[n], x.get(n, target[n]))):
                half = _HALF_WIDTH[isinstance(node, str)]
                x[node] = previous = max(target[node], previous + previous_half + half)
                previous_half = half
    return x


def _mean_x(names: list, x: dict, default: float) -> float:
    """The mean x of `names`, or `default` when there are none."""
    return sum(x[n] for n in names) / len(names) if names else default


def _short_op_name(name: str, limit: int = 22) -> str:
    """The last two scopes of an op name ('gradients/Sin_grad/Cos' -> 'Sin_grad/Cos'), cut to `limit` characters."""
    short = "/".join(name.split("/")[-2:])
    return short if len(short) <= limit else "\u2026" + short[-(limit - 1):]


def plot_placement(graph, sess, path: str | None = None, *, ax=None, title: str | None = None):
    """Draw the graph with each op as a box filled with its placed device's colour (as placement_dot does).

    A layered layout, top to bottom: an op sits one row below its deepest input, a constant just above its first
    consumer. Data edges are arrows, those between devices red (each one a transfer), control edges dashed; the
    legend names the devices. Labels give the op's last two name scopes and its type; the font shrinks when the
    boxes get small (graphs well past ~40 ops). Needs matplotlib (`pip install "adplace[plot]"`), no Graphviz.

        plot_placement(tf.get_default_graph(), sess, "placement.png")   # saves; returns the path
        plot_placement(tf.get_default_graph(), sess, ax=ax)              # draws on ax; returns its Figure

    Args:
      graph: the Graph to draw (every op in it).
      sess: a Session on `graph`; its placement decides the colours.
      path: where to save the figure; None: do not save.
      ax: matplotlib Axes to draw on; None: a new figure on its own Agg canvas (pyplot untouched).
      title: the axes' title (default: what the colours and line styles mean).

    Returns:
      `path` when it saved, else the Figure drawn on.
    """
    _, _, Patch = _matplotlib("plot_placement")
    from matplotlib.lines import Line2D

    ops = graph.get_operations()
    placed = _placed_devices(graph, sess)
    colour = _device_colours(placed.values())
    where, bends = _layered_layout(ops, placed)
    columns = max((x for x, _ in [*where.values(), *(p for points in bends.values() for p in points)]), default=0) + 1
    layers = max((d for _, d in where.values()), default=0) + 1
    ax, made_figure = _axes_for("plot_placement", ax, (min(1 + 1.7 * columns, 24), min(1.5 + 0.75 * layers, 40)))
    longest = max((len(text) for op in ops for text in (_short_op_name(op.name), op.type)), default=1)
    fontsize = _label_fontsize(ax, columns, layers, longest)
    _draw_op_boxes(ax, ops, where, {name: colour[device] for name, device in placed.items()}, fontsize)
    _draw_edges(ax, ops, where, bends, placed)
    handles = [Patch(facecolor=colour[d], edgecolor="black", label=_short_device(d) or "unplaced") for d in colour]
    handles += [Line2D([], [], color="red", linewidth=1.6, label="transfer (cross-device)"),
                Line2D([], [], color="dimgray", linestyle="--", label="control edge")]
    ax.legend(handles=handles, loc="upper center", bbox_to_anchor=(0.5, 0.0), ncol=min(len(handles), 6), fontsize=8,
              frameon=False)   # below the graph, so side-by-side panels keep their width
    ax.set_xlim(-0.6, columns - 0.4)
    ax.set_ylim(-layers + 0.4, 0.6)
    ax.set_axis_off()
    ax.set_title(title or "Placement by device (red: cross-device transfers; dashed: control edges)")
    return _finish(ax, made_figure, path)


_BOX_W, _BOX_H = 0.9, 0.55  # an op's box, in layout units (one column wide, one row high)
_EM_PER_CHAR, _EM_PER_LABEL_HEIGHT = 0.55, 2.6  # DejaVu Sans: mean glyph width; two lines with their spacing
_EDGE_STYLES = {"data": ("dimgray", "-", 0.8), "transfer": ("red", "-", 1.6), "control": ("dimgray", "--", 0.8)}


def _label_fontsize(ax, columns: float, rows: int, longest_label: int) -> float:
    """The largest font (3 to 9 pt) at which a box label of `longest_label` characters fits its box on `ax`."""
    width_in, height_in = ax.get_position().size * ax.figure.get_size_inches()
    by_width = 72 * _BOX_W * width_in / columns / (longest_label * _EM_PER_CHAR)
    by_height = 72 * _BOX_H * height_in / rows / _EM_PER_LABEL_HEIGHT
    return max(3.0, min(9.0, by_width, by_height))


def _draw_op_boxes(ax, ops, where: dict, fill: dict[str, str], fontsize: float) -> None:
    """One rounded box per op at its layout position, filled with `fill[op name]`, its gid the op's name."""
    from matplotlib.patches import FancyBboxPatch

    for op in ops:
        x, depth = where[op.name]
        box = FancyBboxPatch((x - _BOX_W / 2, -depth - _BOX_H / 2), _BOX_W, _BOX_H,
                             boxstyle="round,pad=0,rounding_size=0.1", facecolor=fill[op.name], edgecolor="black",
                             linewidth=0.6, zorder=2)
        box.set_gid(op.name)
        ax.add_patch(box)
        ax.text(x, -depth, f"{_short_op_name(op.name)}\n{op.type}", ha="center", va="center", fontsize=fontsize,
                zorder=3, clip_on=True)


def _draw_edges(ax, ops, where: dict, bends: dict, placed: dict[str, str]) -> None:
    """An arrow per input (red between devices) and per control input (dashed), from the bottom of the source's box
    to the top of the target's, passing through its bend points vertically (so never behind a box)."""
    from matplotlib.patches import FancyArrowPatch
    from matplotlib.path import Path

    for op in ops:
        edges = [(t.op.name, "transfer" if placed[t.op.name] != placed[op.name] else "data") for t in op.inputs]
        for src, kind in edges + [(c.name, "control") for c in op.control_inputs]:
            (src_x, src_row), (dst_x, dst_row) = where[src], where[op.name]
            points = [(src_x, -src_row - _BOX_H / 2)]
            for bend_x, bend_row in bends.get((src, op.name), ()):
                points += [(bend_x, -bend_row + _BOX_H / 2), (bend_x, -bend_row - _BOX_H / 2)]
            points.append((dst_x, -dst_row + _BOX_H / 2))
            color, linestyle, linewidth = _EDGE_STYLES[kind]
            arrow = FancyArrowPatch(path=Path(points), arrowstyle="-|>", mutation_scale=8, color=color,
                                    linestyle=linestyle, linewidth=linewidth, shrinkA=0, shrinkB=0, zorder=1)
            arrow.set_gid(kind)
            ax.add_patch(arrow)
