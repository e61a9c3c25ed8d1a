"""A picture of the arena plan: each buffer a rectangle over time (work items) ×
address (bytes), one panel per function, the way people look at memory plans.

matplotlib is an optional dependency (`pip install 'accy[plot]'`).
"""

from __future__ import annotations

import os
from pathlib import Path

from xdsl.dialects.builtin import ModuleOp

from accy.diagnostics import AccyError
from accy.passes.analysis import AnalysisManager
from accy.passes.arena import align_up
from accy.passes.arena_plan import ARENA, planned_bytes
from accy.passes.buffers import BUFFERS


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


def plot_arena(module: ModuleOp, manager: AnalysisManager, path: Path) -> None:
    """Draw every function's arena into the image file `path` (written whole or not at
    all)."""
    check_plot_path(path)
    plt = _pyplot()
    from matplotlib.patches import Rectangle

    plan = manager.get(ARENA, module)
    buffers = manager.get(BUFFERS, module)
    alignment = manager.options.alignment
    arenas = list(plan.functions.values())
    figure, axes = plt.subplots(
        len(arenas), 1, figsize=(10, 3.5 * max(1, len(arenas))), squeeze=False
    )
    colours = {"input": "tab:blue", "output": "tab:orange", "temporary": "tab:grey"}
    for axis, arena in zip(axes[:, 0], arenas):
        boxes = []
        for slot_id, offset in arena.offsets.items():
            slot = buffers.slots[slot_id]
            live = plan.intervals[slot_id]
            kind = "input" if slot.role.input else "output" if slot.role.output else "temporary"
            size = align_up(planned_bytes(slot, plan.planned_rows) or 0, alignment)
            boxes.append((live, offset, size, kind, f"s{slot_id}"))
        for w in arena.workspaces:
            size = align_up(w.term.bytes, alignment)
            boxes.append((w.interval, w.offset, size, "temporary", w.term.name))
        for live, offset, size, kind, label in boxes:
            axis.add_patch(
                Rectangle(
                    (live.start - 0.45, offset),
                    live.end - live.start + 0.9,
                    size,
                    facecolor=colours[kind],
                    edgecolor="black",
                    alpha=0.7,
                )
            )
            axis.text(live.start - 0.4, offset + size / 2, label, fontsize=7, va="center")
        times = [b[0].end for b in boxes] + [0]
        axis.set_xlim(-1, max(times) + 1)
        axis.set_ylim(0, max(arena.size, 1))
        axis.axhline(arena.lower_bound, color="red", linestyle="--", linewidth=1)
        axis.set_title(
            f"@{arena.function}: arena {arena.size} bytes, lower bound {arena.lower_bound}"
        )
        axis.set_xlabel("work item")
        axis.set_ylabel("byte offset")
    figure.tight_layout()
    scratch = path.with_name(f".{path.name}.partial{path.suffix}")
    try:
        figure.savefig(scratch)
        os.replace(scratch, path)
    except OSError as error:
        scratch.unlink(missing_ok=True)
        raise AccyError(f"cannot write arena plot '{path}': {error.strerror}") from None
    finally:
        plt.close(figure)
