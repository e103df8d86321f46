"""The SMG stage's figures: a memory graph around its busiest node, nodes as strips of the screens
merged into them, and the scores of segmentations and judges (subgoals along an episode's steps,
the judge's confusion matrix). Each returns the figure (or draws on the axes it is given) for
:func:`guimem.viz.plotting.save_figure`.
"""

from __future__ import annotations

import textwrap
from pathlib import Path
from typing import Any, Mapping, Sequence

import matplotlib.pyplot as plt
import networkx as nx
import numpy as np
from matplotlib.offsetbox import AnnotationBbox, OffsetImage

from guimem.core.data import Episode, Subgoal
from guimem.core.io import file_inside
from guimem.core.store import open_image
from guimem.smg.annotate import behaviour_of
from guimem.smg.graph import MemoryGraph
from guimem.smg.segmentation_scores import JUDGE_VERDICTS, JudgeScores, boundaries, part_bounds
from guimem.smg.segmenters import Span
from guimem.viz.plotting import SUCCESS_COLORS


# ============================================================================ the memory graph
def draw_node_strips(graph: MemoryGraph, store_root: str | Path, screen_of: Mapping[str, str | None],
                     max_nodes: int = 12, per_node: int = 6, thumb: tuple[int, int] = (54, 120)) -> Any:
    """A figure with one row per node (the most visited first, at most ``max_nodes``): up to
    ``per_node`` of its merged screenshots side by side, each captioned with its true type, and a
    title that says how many of the graph's nodes are shown; returns the Figure."""
    nodes = sorted(graph.graph.nodes, key=lambda n: (-len(graph.node_screenshots(n)), n))[:max_nodes]
    fig, axes = plt.subplots(max(1, len(nodes)), per_node, figsize=(per_node * 1.1, max(1, len(nodes)) * 2.1),
                             squeeze=False)
    for row, node in zip(axes, nodes + [None] * (len(axes) - len(nodes))):
        shots = graph.node_screenshots(node) if node is not None else []
        for j, ax in enumerate(row):
            ax.set_axis_off()
            if j < len(shots):
                image = open_image(file_inside(store_root, shots[j], "screenshot")).convert("RGB").resize(thumb)
                ax.imshow(np.asarray(image))
                ax.set_title(screen_of.get(shots[j]) or "?", fontsize=5)
        if node is not None:
            row[0].text(-0.15, 0.5, f"node {node}\n{len(shots)} screens", transform=row[0].transAxes, ha="right",
                        va="center", fontsize=6)
    total = graph.graph.number_of_nodes()
    shown = "all" if len(nodes) == total else f"the {len(nodes)} most visited"
    fig.suptitle(f"{shown} of the graph's {total} nodes, one per row (up to {per_node} of its screens each)",
                 fontsize=8)
    fig.subplots_adjust(left=0.16, wspace=0.05, hspace=0.35)
    return fig


def neighbourhood(graph: MemoryGraph, max_nodes: int) -> list[int]:
    """The most visited node and its nearest neighbours (either edge direction), up to ``max_nodes``."""
    g = graph.graph
    if not g.number_of_nodes():
        return []
    start = min(g.nodes, key=lambda n: (-g.nodes[n]["count"], n))
    dist = nx.single_source_shortest_path_length(g.to_undirected(as_view=True), start)
    return sorted(dist, key=lambda n: (dist[n], -g.nodes[n]["count"], n))[:max_nodes]


def draw_graph(graph: MemoryGraph, store_root: str | Path, ax: Any, max_nodes: int = 12,
               thumb: tuple[int, int] = (24, 48), seed: int = 0) -> list[int]:
    """Draw the most visited node's neighbourhood (screen thumbnails) with edges coloured by the
    judged success of their subgoal, and a key to the colours.

    Returns the drawn node ids (see :func:`neighbourhood`). Layout: the most visited node in the
    centre, the others on a ring around it in the order :func:`neighbourhood` gives (nearest first),
    so no two thumbnails overlap; under each, its id and (xN) the screens merged into it. ``seed``
    is kept for callers; the layout draws nothing at random.
    """
    from matplotlib.lines import Line2D

    nodes = neighbourhood(graph, max_nodes)
    sub = graph.graph.subgraph(nodes)
    ring = nodes[1:]
    pos = {nodes[0]: (0.0, 0.0)} if nodes else {}
    for i, n in enumerate(ring):  # clockwise from the top
        angle = np.pi / 2 - 2 * np.pi * i / len(ring)
        pos[n] = (1.6 * np.cos(angle), np.sin(angle))  # a wide ellipse: the figure is wider than tall
    for u, v, key in sorted(sub.edges(keys=True)):
        success = graph.edges[key].subgoal.success
        rad = 0.0 if u == v else 0.1 + 0.05 * (key % 3)
        ax.annotate("", xy=pos[v], xytext=pos[u], arrowprops=dict(
            arrowstyle="-|>", color=SUCCESS_COLORS[success], lw=0.8, alpha=0.7,
            connectionstyle=f"arc3,rad={rad}", shrinkA=14, shrinkB=14))
    for n in nodes:
        image = open_image(file_inside(store_root, graph.node_screenshots(n)[0], "screenshot")).resize(thumb)
        ax.add_artist(AnnotationBbox(OffsetImage(np.asarray(image), zoom=1.0), pos[n], frameon=True, pad=0.1))
        ax.annotate(f"{n} (x{graph.graph.nodes[n]['count']})", pos[n], xytext=(0, -thumb[1] / 2 - 7),
                    textcoords="offset points", ha="center", va="top", fontsize=6, zorder=5,
                    bbox=dict(boxstyle="round,pad=0.15", fc="white", ec="none", alpha=0.9))
    ax.set_xlim(-1.9, 1.9)
    ax.set_ylim(-1.3, 1.25)
    ax.set_axis_off()
    ax.legend(handles=[Line2D([], [], color=c, lw=1.5, label=f"subgoal edge judged {name}")
                       for name, c in SUCCESS_COLORS.items()], loc="upper center", bbox_to_anchor=(0.5, 0.0),
              ncols=len(SUCCESS_COLORS), fontsize=7, frameon=False,
              title="under a node: its id (xN: screens merged into it)", title_fontsize=7)
    return nodes


# ============================================================================ segmentations and judges
def draw_boundaries(episode: Episode, segmentations: Mapping[str, Sequence[Span | Subgoal]]):
    """A figure: one row per segmentation of ``episode``, its subgoals as coloured runs of steps
    with their intents, the steps' actions along the bottom."""
    n = len(episode.steps)
    rows = list(segmentations.items())
    fig, ax = plt.subplots(figsize=(max(6.4, 0.75 * n + 2.5), 0.9 * len(rows) + 1.6))
    palette = plt.get_cmap("tab20").colors
    for r, (name, parts) in enumerate(rows):
        y = len(rows) - 1 - r
        for k, part in enumerate(parts):
            first, last = part_bounds(part)
            ax.barh(y, last - first + 1, left=first - 0.5, height=0.7, color=palette[k % len(palette)],
                    edgecolor="white", linewidth=2)
            label = textwrap.fill(part.text, width=max(8, 12 * (last - first + 1)), max_lines=3, placeholder="…")
            ax.text((first + last) / 2, y, label, ha="center", va="center", fontsize=7, clip_on=True)
        for b in boundaries(parts):
            ax.plot([b - 0.5, b - 0.5], [y - 0.42, y + 0.42], color="black", linewidth=2)
    verbs = [behaviour_of([s.action]) for s in episode.steps]
    ax.set_yticks(range(len(rows)), [name for name, _ in reversed(rows)])
    ax.set_xticks(range(n), [f"{i}\n{v}" for i, v in enumerate(verbs)], fontsize=7)
    ax.set_xlim(-0.5, n - 0.5)
    ax.set_xlabel("step and action")
    ax.grid(False)
    ax.set_title(f"{episode.id}: {episode.goal}", fontsize=9)
    for side in ("top", "right"):
        ax.spines[side].set_visible(False)
    fig.tight_layout()
    return fig


def draw_judge_confusion(scores: Mapping[str, JudgeScores]):
    """A figure: the judge's 3x2 confusion matrix (verdict vs true outcome), one panel per split."""
    fig, axes = plt.subplots(1, len(scores), figsize=(3.2 * len(scores) + 0.4, 3.4), squeeze=False)
    for ax, (name, s) in zip(axes[0], scores.items()):
        m = np.array(s.matrix, dtype=float)  # [3 verdicts, 2 outcomes]
        ax.imshow(m, cmap="Blues", vmin=0, vmax=max(1.0, m.max()))
        ax.grid(False)
        for i in range(m.shape[0]):
            for j in range(m.shape[1]):
                ax.text(j, i, f"{int(m[i, j])}", ha="center", va="center",
                        color="white" if m[i, j] > 0.6 * m.max() else "black")
        ax.set_xticks([0, 1], ["success", "failure"])
        ax.set_yticks([0, 1, 2], list(JUDGE_VERDICTS))
        ax.set_xlabel("true outcome")
        ax.set_title(f"{name}: accuracy {s.accuracy:.2f}\n(decided {s.decided_accuracy:.2f}, coverage {s.coverage:.2f})",
                     fontsize=8)
    axes[0][0].set_ylabel("judge verdict")
    fig.tight_layout()
    return fig
