"""Observe a run: ADCME's run_profile/save_profile, per-device summaries, a Gantt chart and a placement graph.

    y_value = run_profile(sess, y)                 # one FULL_TRACE run; its RunMetadata is kept
    save_profile("timeline.json")                  # Chrome trace JSON, for chrome://tracing or ui.perfetto.dev
    step_summary(last_run_metadata().step_stats)   # {'devices': {...: {'ops': 3, ...}}, 'transfers': 1, ...}
    plot_timeline(last_run_metadata(), "timeline.png")
    placement_dot(tf.get_default_graph(), sess, "placement.dot")   # then: dot -Tsvg placement.dot

This module sits on top (style.md, house rule 1): framework/, ops/ and runtime/ never import it.
"""
from __future__ import annotations

import logging
from typing import Any

from adplace.client.timeline import Timeline
from adplace.runtime.options import RunMetadata, RunOptions

_log = logging.getLogger("adplace")

run_metadata: RunMetadata | None = None  # ADCME's module global: the RunMetadata of the latest run_profile

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
    options = RunOptions(trace_level=RunOptions.FULL_TRACE)
    run_metadata = RunMetadata()
    return sess.run(fetches, feed_dict, options=options, run_metadata=run_metadata, **kwargs)


def last_run_metadata() -> RunMetadata | None:
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
def _transfer_rows(step_stats) -> list[tuple[str, str, str, int]]:
    """(tensor, src device, dst device, bytes) for every copy, in start order. A `_Recv` without transfer stats (a
    TF-made trace) is read from its label and outputs, its source device unknown ("")."""
    found = []
    for dev in step_stats.dev_stats:
        for ns in dev.node_stats:
            t, copied = ns.transfer, _copied_tensor(ns)
            if t is not None:
                row = (t.tensor_name, t.src_device, t.dst_device, t.bytes)
            elif copied is not None:
                nbytes = sum(o.tensor_description.allocation_description.requested_bytes for o in ns.output)
                row = (copied, "", dev.device, nbytes)
            else:
                continue
            found.append(((ns.all_start_micros, ns.all_start_nanos), row))
    return [row for _, row in sorted(found, key=lambda pair: pair[0])]


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
    transfers = _transfer_rows(step_stats)
    return {"devices": devices, "transfers": len(transfers), "transfer_bytes": sum(t[3] for t in transfers),
            "transfer_list": transfers, "wall_us": max(ends) - min(starts) if starts else 0}


def _copied_tensor(node_stats) -> str | None:
    """The tensor a copy node moves (from its transfer stats, else its `_Recv` label), or None for other ops."""
    if node_stats.transfer is not None:
        return node_stats.transfer.tensor_name
    _, op, inputs = Timeline._parse_op_label(node_stats.timeline_label)
    return (inputs[0] if inputs else node_stats.node_name) if op == "_Recv" else None


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


def plot_timeline(run_metadata_or_step_stats, path: str) -> str:
    """Draw a traced run as a per-device Gantt chart (one row per device and lane) and save it to `path`.

    Boxes are ops coloured by type and labelled when wide enough; copies are hatched boxes on the destination row,
    labelled with the tensor they move, with an arrow from the end of its producer (or from the source device's row).
    The format follows the extension (.png, .svg, .pdf). Needs matplotlib
    (`pip install "adplace[plot]"`); draws on its own Agg canvas, so pyplot and the global backend are untouched.
    Returns `path`.
    """
    try:
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure
        from matplotlib.patches import Patch
    except ImportError as e:
        raise ImportError('plot_timeline needs matplotlib: pip install "adplace[plot]"') from e
    step_stats = getattr(run_metadata_or_step_stats, "step_stats", run_metadata_or_step_stats)
    nodes = [ns for dev in step_stats.dev_stats for ns in dev.node_stats]
    origin = min((ns.all_start_micros for ns in nodes), default=0)
    span = max((ns.all_start_micros + ns.all_end_rel_micros - origin for ns in nodes), default=1) or 1

    rows, boxes, row_of_device = [], [], {}  # rows: y labels top to bottom; boxes: (row, node stats, copied tensor)
    for dev in step_stats.dev_stats:
        lanes = _lanes(dev.node_stats)
        row_of_device[dev.device] = first_row = len(rows)
        count = max(lanes, default=0) + 1
        rows += [_short_device(dev.device) + (f" lane {k}" if count > 1 else "") for k in range(count)]
        boxes += [(first_row + lane, ns, _copied_tensor(ns)) for ns, lane in zip(dev.node_stats, lanes)]
    end_of = {ns.node_name: (row, ns.all_start_micros + ns.all_end_rel_micros - origin) for row, ns, _ in boxes}

    fig = Figure(figsize=(12, 1.2 + 0.5 * max(len(rows), 1)))
    FigureCanvasAgg(fig)
    ax = fig.add_subplot()
    op_types = sorted({_op_type(ns) for _, ns, copied in boxes if copied is None})
    colours = {t: f"C{i % 10}" for i, t in enumerate(op_types)}
    for row, ns, copied in boxes:
        x, width = ns.all_start_micros - origin, max(ns.all_end_rel_micros, span * 1e-3)
        ax.broken_barh([(x, width)], (row - 0.4, 0.8), facecolors="white" if copied else colours[_op_type(ns)],
                       edgecolor="black", linewidth=0.5, hatch="////" if copied else None)
        if width > span * 0.05:
            text = copied if copied else ns.node_name.rsplit("/", 1)[-1]
            ax.text(x + width / 2, row, text, ha="center", va="center", fontsize=8, clip_on=True)
        if copied:  # arrow from the producer's end (else the source device's first row) to the copy's end
            src_row, src_x = end_of.get(copied.split(":")[0], (None, x))
            if src_row is None and ns.transfer is not None:
                src_row = row_of_device.get(ns.transfer.src_device)
            if src_row is not None:
                ax.annotate("", xy=(x + width, row), xytext=(src_x, src_row),
                            arrowprops={"arrowstyle": "->", "color": "crimson", "linewidth": 1.2})
    handles = [Patch(facecolor=colours[t], edgecolor="black", label=t) for t in op_types[:20]]
    handles.append(Patch(facecolor="white", edgecolor="black", hatch="////", label="copy (_Recv)"))
    ax.legend(handles=handles, loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8, frameon=False)
    ax.set_yticks(range(len(rows)), rows)
    ax.set_ylim(len(rows) - 0.5, -0.5)
    ax.set_xlim(0, span * 1.02)
    ax.set_xlabel("time since the step's first op (us)")
    ax.set_title("Per-device timeline (hatched: cross-device copies; arrows: source -> destination)")
    fig.tight_layout()
    fig.savefig(path)
    return path


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
    placed = {name: device for name, _, _, device, _ in sess.placement_table()}
    ops = graph.get_operations()
    devices = sorted({placed.get(op.name, "") for op in ops})
    colour = {d: _DEVICE_COLOURS[i % len(_DEVICE_COLOURS)] for i, d in enumerate(devices)}
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
