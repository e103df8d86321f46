"""One look for every figure: the shared style, colours per memory kind and modality, and PNGs
that are byte-identical from run to run.

Importing this module applies the style (:func:`use_style`); it chooses no backend: figures
show inline in a notebook, and the saved PNGs are rendered by Agg whatever the backend.

    from guimem.viz.plotting import MEMORY_COLORS, save_figure
    fig, ax = plt.subplots()
    ax.bar(names, rates, color=[MEMORY_COLORS[n] for n in names])
    save_figure(fig, figure_path(figures_dir, "closed_loop", "success_rate"))
"""

from __future__ import annotations

import csv
import io
import os
from pathlib import Path
from typing import Any, Mapping, Sequence

import matplotlib
from matplotlib.figure import Figure

from guimem.core.io import atomic_write_bytes, atomic_write_text

DPI = 150  # every saved figure; a 6.4 x 4 inch figure is 960 x 600 pixels
FONT = "DejaVu Sans"  # ships with matplotlib, so text renders the same on every machine

# The memories and no memory, in the order tables and bars show them (the paper's order, SMG last).
MEMORY_ORDER: tuple[str, ...] = ("none", "flat", "action_graph", "task_graph", "smg")
MEMORY_LABELS: dict[str, str] = {
    "none": "None",
    "flat": "Subgoal-Flat",
    "action_graph": "Action-Graph",
    "task_graph": "Task-Graph",
    "smg": "Subgoal-Graph",
}
# Okabe-Ito colours (distinguishable with colour-vision deficiency); SMG gets the loudest one.
MEMORY_COLORS: dict[str, str] = {
    "none": "#999999",  # grey
    "flat": "#56B4E9",  # sky blue
    "action_graph": "#009E73",  # bluish green
    "task_graph": "#CC79A7",  # reddish purple
    "smg": "#D55E00",  # vermillion
}
MODALITY_COLORS: dict[str, str] = {
    "none": "#999999",  # grey: no memory shown
    "text": "#0072B2",  # blue
    "image": "#E69F00",  # orange
    "both": "#009E73",  # bluish green
}
SUCCESS_COLORS: dict[str, str] = {
    "yes": "#009E73",  # bluish green
    "no": "#D55E00",  # vermillion
    "uncertain": "#999999",  # grey
}

STYLE: dict[str, Any] = {
    "figure.dpi": 100,  # on screen; saved files use DPI
    "figure.figsize": (6.4, 4.0),
    "figure.facecolor": "white",
    "font.family": "sans-serif",
    "font.sans-serif": [FONT],
    "font.size": 9,
    "axes.titlesize": 10,
    "axes.labelsize": 9,
    "axes.spines.top": False,
    "axes.spines.right": False,
    "axes.grid": True,
    "grid.alpha": 0.3,
    "axes.prop_cycle": matplotlib.cycler(color=[MEMORY_COLORS[k] for k in MEMORY_ORDER[1:]] + ["#0072B2", "#E69F00"]),
    "image.cmap": "viridis",
    "legend.frameon": False,
    "savefig.dpi": DPI,
    "savefig.bbox": "tight",
    "savefig.facecolor": "white",
    "svg.hashsalt": "guimem",  # fixed ids if anyone saves SVG
}

# PNG text chunks matplotlib would write; "Software" names its version, so none is kept.
_PNG_METADATA: Mapping[str, str | None] = {"Software": None}


def use_style() -> None:
    """Apply the shared style to matplotlib's global settings."""
    matplotlib.rcParams.update(STYLE)


def figure_path(figures_dir: str | os.PathLike[str], stage: str, what: str) -> Path:
    """``<figures_dir>/<stage>_<what>.png``: a figure is named after its stage and what it shows."""
    for field, value in (("stage", stage), ("what", what)):
        if not value or not all(c.isalnum() or c in "_-" for c in value):
            raise ValueError(f"figure name field '{field}' must be letters, digits, '_' or '-', got {value!r}")
    return Path(figures_dir) / f"{stage}_{what}.png"


def write_plot_data(plots_dir: str | os.PathLike[str], stage: str, what: str,
                    rows: Sequence[Mapping[str, Any]]) -> None:
    """Write the data behind a curve or sweep as ``<plots_dir>/<stage>_<what>.csv`` (one row per point,
    the columns of the first row), atomically: the file a ``plots:`` entry in dvc.yaml reads, so
    that ``dvc plots diff`` compares experiments."""
    if not rows:
        raise ValueError(f"{stage}_{what}: no rows to write")
    columns = list(rows[0])
    for i, row in enumerate(rows):
        if list(row) != columns:
            raise ValueError(f"{stage}_{what}: row {i} has columns {list(row)}, the first row {columns}")
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow(columns)
    writer.writerows([[row[c] for c in columns] for row in rows])
    atomic_write_text(figure_path(plots_dir, stage, what).with_suffix(".csv"), buf.getvalue())


def png_bytes(fig: Figure, dpi: int = DPI) -> bytes:
    """The figure as PNG bytes: Agg-rendered at ``dpi``, tight bounding box, no metadata."""
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=dpi, bbox_inches="tight", facecolor="white", metadata=dict(_PNG_METADATA))
    return buf.getvalue()


def save_figure(fig: Figure, path: str | os.PathLike[str], dpi: int = DPI) -> None:
    """Write ``fig`` as a deterministic PNG to ``path`` atomically, creating parent folders.

    Returns nothing (like matplotlib's ``savefig``), so that a notebook cell ending with it shows
    the figure and no stray path."""
    path = Path(path)
    if path.suffix.lower() != ".png":
        raise ValueError(f"{path}: figures are saved as PNG; the path must end in .png")
    atomic_write_bytes(path, png_bytes(fig, dpi))


def table_figure(columns: Sequence[str], rows: Sequence[Sequence[str]], title: str = "", note: str = "") -> Figure:
    """A table of strings drawn as a figure (header row shaded), for tables kept as PNG; ``note``
    (the key to its columns) is written under it."""
    import matplotlib.pyplot as plt

    note_lines = note.count("\n") + 1 if note else 0
    fig, ax = plt.subplots(figsize=(1.6 + 1.7 * len(columns), 0.6 + 0.34 * (len(rows) + 1) + 0.2 * note_lines))
    ax.axis("off")
    table = ax.table(cellText=[list(r) for r in rows], colLabels=list(columns), loc="center", cellLoc="center")
    table.auto_set_font_size(False)
    table.set_fontsize(9)
    table.scale(1.0, 1.4)
    for (row, _), cell in table.get_celld().items():
        if row == 0:
            cell.set_facecolor("#e8e8ee")
            cell.set_text_props(weight="bold")
    if title:
        ax.set_title(title)
    if note:  # under the table, aligned with its left edge (the table spans the axes' width)
        ax.text(0.0, 0.0, note, transform=ax.transAxes, fontsize=8, ha="left", va="top", color="#333333")
    return fig


def notice_figure(title: str, text: str) -> Figure:
    """A figure that says, in words, why a stage drew nothing here (e.g. a closed loop with no
    environment): the stage's figure file exists, and whoever opens it reads the reason."""
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7.0, 1.6))
    ax.axis("off")
    ax.set_title(title)
    ax.text(0.5, 0.5, text, transform=ax.transAxes, fontsize=10, ha="center", va="center", wrap=True,
            color="#333333")
    return fig


use_style()
