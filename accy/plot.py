"""A picture of the arena plan: each buffer a rectangle over time (work items) ×
address (bytes), one panel per function, the way people look at memory plans.

matplotlib is an optional dependency (`pip install 'accy[plot]'`).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from xdsl.dialects.builtin import ModuleOp

from accy.diagnostics import AccyError
from accy.passes.analysis import AnalysisManager
from accy.passes.arena import align_up
from accy.passes.arena_plan import ARENA, planned_bytes
from accy.passes.buffers import BUFFERS, value_names
from accy.passes.liveness import LIVENESS, LiveInterval
from accy.passes.schedule import SCHEDULE


def _pyplot():
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        raise AccyError("--accy-arena-plot needs matplotlib: pip install 'accy[plot]'") from None
    return plt


def check_plot_path(path: Path) -> None:
    """Refuse an image file name whose format matplotlib cannot write (before any work)."""
    plt = _pyplot()
    formats = plt.figure().canvas.get_supported_filetypes()
    plt.close("all")
    suffix = path.suffix.lstrip(".").lower()
    if suffix not in formats:
        raise AccyError(
            f"cannot draw the arena plot as '{path}': "
            + (f"unknown image format '.{suffix}'" if suffix else "the name has no extension")
            + f"; known formats: {', '.join(sorted(formats))}"
        )


def format_bytes(count: float) -> str:
    """`0`, `512 B`, `4 KiB`, `43.75 KiB`, `1.5 MiB`: the unit a reader thinks in."""
    if count == 0:
        return "0"
    for unit, scale in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if abs(count) >= scale:
            return f"{count / scale:.2f}".rstrip("0").rstrip(".") + f" {unit}"
    return f"{count:g} B"


def _byte_step(span: int, ticks: int) -> int:
    """A power-of-two tick step giving at most about `ticks` intervals over `span` bytes."""
    step = 1
    while span / step > ticks:
        step *= 2
    return step


_COLOURS = {
    "input": "tab:blue",
    "output": "tab:orange",
    "temporary": "tab:grey",
    "workspace": "tab:purple",
    "constant": "tab:green",
}
_HALF = 0.45  # a box covers its work items ± this much
_MIN_HEIGHT = 0.02  # the least drawn height of a box, as a fraction of its axis
_LABEL_SIZE = 7


@dataclass
class _Box:
    start: float
    end: float
    offset: int
    size: int
    """Bytes reserved (aligned)."""
    bytes: int
    """Bytes of the value itself."""
    kind: str
    name: str
    live: LiveInterval


def _kind(slot) -> str:
    if slot.role.input:
        return "input"
    return "output" if slot.role.output else "temporary"


def _split_reuse(boxes: list[_Box]) -> None:
    """A buffer that takes over another's storage at the work item where the other dies
    (in-place reuse) shares that item: draw the hand-over at the item's middle."""
    for a in boxes:
        for b in boxes:
            touching = a is not b and a.offset == b.offset and a.live.end == b.live.start
            if touching and (a.live.start < a.live.end or b.live.start < b.live.end):
                a.end, b.start = a.live.end, b.live.start


def _draw_boxes(axis, boxes: list[_Box], top: int, renderer) -> list[_Box]:
    """Draw the boxes on `axis` (y from 0 to `top` bytes), each at least `_MIN_HEIGHT` of
    the axis tall, and label those whose label fits inside; returns the unlabelled."""
    from matplotlib.patches import Rectangle

    least = _MIN_HEIGHT * top
    unlabelled = []
    for box in sorted(boxes, key=lambda b: -b.size):  # slivers drawn over big neighbours
        height = max(box.size, least)
        bottom = max(0, min(box.offset, top - height))  # a sliver at the top stays inside
        axis.add_patch(
            Rectangle(
                (box.start, bottom),
                box.end - box.start,
                height,
                facecolor=_COLOURS[box.kind],
                edgecolor="black",
                linewidth=0.6,
                alpha=0.75,
                zorder=2 if box.size >= least else 3,
            )
        )
        (x0, y0), (x1, y1) = axis.transData.transform(
            [(box.start, bottom), (box.end, bottom + height)]
        )
        room_w, room_h = (x1 - x0) - 4, (y1 - y0) - 2
        size = format_bytes(box.bytes)
        for text in (f"{box.name}\n{size}", f"{box.name} {size}", box.name):
            label = axis.text(
                (box.start + box.end) / 2,
                bottom + height / 2,
                text,
                fontsize=_LABEL_SIZE,
                ha="center",
                va="center",
                zorder=4,
                clip_on=True,
            )
            extent = label.get_window_extent(renderer)
            if extent.width <= room_w and extent.height <= room_h:
                break
            label.remove()
        else:
            unlabelled.append(box)
    return unlabelled


def _side_list(axis, legend, boxes: list[_Box], renderer) -> None:
    """List the unlabelled boxes under the legend, as many as fit beside the axis."""
    if not boxes:
        return
    figure = axis.figure
    bottom = legend.get_window_extent(renderer).y0 - 6
    floor = axis.get_window_extent(renderer).y0
    line = _LABEL_SIZE * 1.25 * figure.dpi / 72
    room = max(2, int((bottom - floor) // line))
    lines = [
        f"{b.name} {format_bytes(b.bytes)} at {format_bytes(b.offset)}, "
        + (
            f"item {b.live.start}"
            if b.live.start == b.live.end
            else f"items {b.live.start}–{b.live.end}"
        )
        for b in sorted(boxes, key=lambda b: (b.live.start, b.offset))
    ]
    if len(lines) > room - 1:
        lines = lines[: room - 2] + [f"… and {len(lines) - (room - 2)} more"]
    x, y = axis.transAxes.inverted().transform((legend.get_window_extent(renderer).x0, bottom))
    text = axis.text(
        x,
        y,
        "too small to label:\n" + "\n".join(lines),
        transform=axis.transAxes,
        fontsize=_LABEL_SIZE,
        va="top",
        ha="left",
    )
    text.set_in_layout(False)


def _item_ticks(axis, span: LiveInterval, schedule) -> None:
    from matplotlib.ticker import FuncFormatter, MaxNLocator

    count = span.end - span.start + 1
    if count <= 24:
        items = range(span.start, span.end + 1)
        axis.set_xticks(list(items))
        kinds = {w.id: w.kind.value for w in schedule.work_items}
        axis.set_xticklabels(
            [f"{i}\n{kinds[i]}" if i in kinds else str(i) for i in items], fontsize=7
        )
        axis.set_xlabel("work item (id, kind)", fontsize=8)
    else:
        axis.set_xlabel("work item", fontsize=8)
        axis.tick_params(axis="x", labelsize=7)
        axis.xaxis.set_major_locator(MaxNLocator(integer=True, nbins=20))
        axis.xaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{round(v)}"))


def _byte_axis(axis, top: int, ticks: int) -> None:
    from matplotlib.ticker import FuncFormatter, MultipleLocator

    axis.set_ylim(0, top)
    axis.yaxis.set_major_locator(MultipleLocator(_byte_step(top, ticks)))
    axis.yaxis.set_major_formatter(FuncFormatter(lambda v, _: format_bytes(int(v))))
    axis.tick_params(axis="y", labelsize=7)


def plot_arena(module: ModuleOp, manager: AnalysisManager, path: Path) -> None:
    """Draw every function's arena into the image file `path` (written whole or not at
    all): per function, its buffers as boxes over work items × arena address, and (in a
    band above it) the function's constants in the module's constant arena, live the
    whole function. Boxes too small to label are listed beside the legend."""
    check_plot_path(path)
    plt = _pyplot()
    import matplotlib
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch

    plan = manager.get(ARENA, module)
    buffers = manager.get(BUFFERS, module)
    schedule = manager.get(SCHEDULE, module)
    spans = manager.get(LIVENESS, module).function_range
    alignment = manager.options.arena_alignment
    arenas = list(plan.functions.values())
    constants = {
        arena.function: [
            buffers.slots[s]
            for s in plan.constant_offsets
            if buffers.slots[s].function_name == arena.function
        ]
        for arena in arenas
    }
    heights = [0.8 + 3.2 + (1.0 if constants[a.function] else 0.0) for a in arenas]
    names: dict = {}

    def ssa(slot) -> str:
        if slot.function not in names:
            names[slot.function] = value_names(slot.function)
        return f"%{names[slot.function].get(slot.value, slot.id)}"

    with matplotlib.rc_context({"svg.fonttype": "none"}):  # SVG text stays text
        tall = 0.3 + sum(heights) * 1.1
        figure = plt.figure(figsize=(12, tall))
        outer = figure.add_gridspec(len(arenas), 1, height_ratios=heights, hspace=0.45)
        figure.subplots_adjust(left=0.08, right=0.74, top=1 - 0.45 / tall, bottom=0.7 / tall)
        renderer = figure.canvas.get_renderer()
        for index, arena in enumerate(arenas):
            name = arena.function
            span = spans.get(name, LiveInterval(0, 0))
            band = None
            if constants[name]:
                inner = outer[index].subgridspec(2, 1, height_ratios=[0.9, 3.2], hspace=0.06)
                band = figure.add_subplot(inner[0])
                axis = figure.add_subplot(inner[1], sharex=band)
            else:
                axis = figure.add_subplot(outer[index])
            boxes = []
            for slot_id, offset in arena.offsets.items():
                slot, live = buffers.slots[slot_id], plan.intervals[slot_id]
                raw = planned_bytes(slot, plan.planned_rows) or 0
                boxes.append(
                    _Box(
                        live.start - _HALF,
                        live.end + _HALF,
                        offset,
                        align_up(raw, alignment),
                        raw,
                        _kind(slot),
                        ssa(slot),
                        live,
                    )
                )
            for w in arena.workspaces:
                size = align_up(w.term.bytes, alignment)
                boxes.append(
                    _Box(
                        w.interval.start - _HALF,
                        w.interval.end + _HALF,
                        w.offset,
                        size,
                        w.term.bytes,
                        "workspace",
                        w.term.name,
                        w.interval,
                    )
                )
            _split_reuse(boxes)
            axis.set_xlim(span.start - 0.6, span.end + 0.6)
            _item_ticks(axis, span, schedule)
            top = max(arena.size, 1)
            _byte_axis(axis, top, 8)
            axis.axhline(arena.lower_bound, color="red", linestyle="--", linewidth=1, zorder=5)
            axis.set_ylabel("arena offset", fontsize=8)
            separate = f", {len(arena.separate)} dynamic slot(s) separate" if arena.separate else ""
            title = (
                f"@{name}: arena {format_bytes(arena.size)}, lower bound "
                f"{format_bytes(arena.lower_bound)}, temporaries "
                f"{format_bytes(arena.temporaries_size)}{separate}"
            )
            kinds = {b.kind for b in boxes}
            band_boxes = []
            if band is not None:
                for slot in constants[name]:
                    raw = slot.byte_size or 0
                    band_boxes.append(
                        _Box(
                            span.start - _HALF,
                            span.end + _HALF,
                            plan.constant_offsets[slot.id],
                            align_up(raw, alignment),
                            raw,
                            "constant",
                            ssa(slot),
                            span,
                        )
                    )
                kinds.add("constant")
                _byte_axis(band, max(plan.constant_size, 1), 2)
                band.tick_params(axis="x", labelbottom=False)
                band.set_ylabel(
                    f"constants\n(module: {format_bytes(plan.constant_size)})", fontsize=8
                )
                band.set_title(title, fontsize=10)
            else:
                axis.set_title(title, fontsize=10)
            handles = [
                Patch(facecolor=_COLOURS[k], edgecolor="black", alpha=0.75, label=k)
                for k in _COLOURS
                if k in kinds
            ]
            handles.append(
                Line2D(
                    [],
                    [],
                    color="red",
                    linestyle="--",
                    linewidth=1,
                    label=f"lower bound {format_bytes(arena.lower_bound)}",
                )
            )
            top_axis = band if band is not None else axis
            legend = top_axis.legend(
                handles=handles,
                loc="upper left",
                bbox_to_anchor=(1.01, 1.0),
                fontsize=7,
                frameon=False,
                borderaxespad=0,
            )
            legend.set_in_layout(False)
            unlabelled = _draw_boxes(axis, boxes, top, renderer)
            if band is not None:
                unlabelled += _draw_boxes(band, band_boxes, max(plan.constant_size, 1), renderer)
            _side_list(axis, legend, unlabelled, renderer)
        scratch = path.with_name(f".{path.name}.partial{path.suffix}")
        try:
            figure.savefig(scratch)
            os.replace(scratch, path)
        except OSError as error:
            scratch.unlink(missing_ok=True)
            raise AccyError(f"cannot write arena plot '{path}': {error.strerror}") from None
        finally:
            plt.close(figure)
