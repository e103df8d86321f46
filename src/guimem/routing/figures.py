"""The SwitchMem figures: who wins the non-tied steps (paper Fig. 2), the preference signal by
layer, and routing against random at every image-use rate. Each takes plain numbers (what the
stage notebooks compute and also write to ``results/``) and returns a matplotlib figure."""

from __future__ import annotations

from typing import Any, Mapping, Sequence

import numpy as np
from matplotlib.figure import Figure

from guimem.viz.plotting import MEMORY_LABELS, MODALITY_COLORS, table_figure

ANNOTATION_SIZE = 7
RULE_NAMES = {"aitw": "AITW", "learngui": "LearnGUI"}
PAPER_TABLE_ONE: dict[str, dict[str, float]] = {
    "aitw": {"none": 41.92, "text": 48.76, "image": 49.30, "both": 47.08, "switchmem": 51.42},
    "learngui": {"none": 23.49, "text": 35.64, "image": 37.44, "both": 26.92, "switchmem": 38.13}}
"""The SwitchMem paper's Table 1 (Qwen3.5-9B actor): step-level action score (%) by step rule."""
TABLE_ONE_KEY = (
    "none / text / image / both: every step shown the memory so (the same frozen actor).  SwitchMem: the router's "
    "rendering per step (share of steps routed to the image).\n"
    "random: as many steps routed to the image as SwitchMem, drawn at random (expected accuracy).  binary: the same "
    "router trained on the binary preference.  density: the most crowded screens routed to the image, at SwitchMem's "
    "rate.\noracle: the better rendering at every step (an upper bound).  paper: the SwitchMem paper's Table 1 "
    "(another actor and data; its scale, not its values, compares).")


def modality_wins_figure(shares: Mapping[str, Mapping[str, Any]],
                         title: str = "Which rendering of the same experience wins the steps where they differ") -> Figure:
    """One pair of stacked bars per row of ``shares`` (``{label: {"text_wins", "image_wins",
    "non_tied", "non_tied_share"}}``): the share of non-tied steps won by text and by image."""
    import matplotlib.pyplot as plt

    names = list(shares)
    y = np.arange(len(names))[::-1]
    fig, ax = plt.subplots(figsize=(7.2, 0.5 * len(names) + 1.4), layout="constrained")
    text = np.array([shares[n]["text_wins"] if shares[n]["non_tied"] else 0.0 for n in names])
    image = np.array([shares[n]["image_wins"] if shares[n]["non_tied"] else 0.0 for n in names])
    ax.barh(y, text, color=MODALITY_COLORS["text"], label="text wins")
    ax.barh(y, image, left=text, color=MODALITY_COLORS["image"], label="image wins")
    for yi, n, t in zip(y, names, text):
        s = shares[n]
        ax.annotate(f"{100 * t:.0f}%", (t / 2, yi), ha="center", va="center", fontsize=ANNOTATION_SIZE, color="white")
        ax.annotate(f"non-tied {s['non_tied']} of {s['steps']} ({100 * s['non_tied_share']:.0f}%)", (1.0, yi),
                    xytext=(5, 0), textcoords="offset points", va="center", fontsize=ANNOTATION_SIZE, color="#444444")
    ax.axvline(0.5, color="#888888", lw=0.8, ls=":")
    ax.set_yticks(y, names)
    ax.set_xlim(0, 1.45)
    ax.set_xticks([0, 0.25, 0.5, 0.75, 1.0])
    ax.set_xlabel("share of the non-tied steps")
    ax.set_title(title, fontsize=10)
    ax.legend(loc="lower right", fontsize=8)
    return fig


def layer_curve_figure(curves: Mapping[str, Sequence[Mapping[str, Any]]],
                       title: str = "Does the hidden-state shift h_I − h_T say which rendering the actor prefers?"
                       ) -> Figure:
    """Accuracy and ROC AUC of the preference probe by layer, one line per curve (``{label: rows of
    :func:`guimem.routing.probe.layer_curve`}``), 95% intervals as bands, chance and majority dashed."""
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(9.0, 3.6), layout="constrained")
    colors = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd"]
    for (label, rows), color in zip(curves.items(), colors):
        layers = [r["layer"] for r in rows]
        for ax, key in zip(axes, ("accuracy", "auc")):
            v = np.array([r[key] for r in rows], dtype=float)
            ci = np.array([r[f"{key}_ci"] for r in rows], dtype=float)
            ax.plot(layers, v, marker="o", color=color, label=f"{label} (n={rows[0]['steps']})")
            ax.fill_between(layers, ci[:, 0], ci[:, 1], color=color, alpha=0.15, lw=0)
        axes[0].plot(layers, [r["majority"] for r in rows], color=color, ls=":", lw=1)
    axes[0].set_ylabel("accuracy (dotted: majority class)")
    axes[1].axhline(0.5, color="#888888", lw=0.8, ls="--")
    axes[1].set_ylabel("ROC AUC (dashed: chance)")
    for ax in axes:
        ax.set_xlabel("layer (0: embeddings)")
        ax.set_xticks(layers)
    axes[1].legend(fontsize=7, loc="best")
    fig.suptitle(title, fontsize=10)
    return fig


def rate_sweep_figure(sweeps: Mapping[str, Sequence[Mapping[str, float]]], fixed: Mapping[str, float],
                      title: str = "Routing against random routing at every image-use rate") -> Figure:
    """Step accuracy against the share of steps routed to Image: each router's curve (``{label:
    rows of :func:`guimem.routing.route_scores.rate_sweep`}``), random routing with its 95% band (from
    the first), and the fixed text and image accuracies at rates 0 and 1."""
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6.4, 4.0), layout="constrained")
    first = next(iter(sweeps.values()))
    rates = [r["rate"] for r in first]
    ax.plot(rates, [r["random"] for r in first], color="#888888", ls="--", label="random (ratio-matched)")
    ax.fill_between(rates, [r["random_lo"] for r in first], [r["random_hi"] for r in first], color="#888888",
                    alpha=0.15, lw=0)
    colors = ["#d62728", "#1f77b4", "#2ca02c", "#9467bd"]
    for (label, rows), color in zip(sweeps.items(), colors):
        ax.plot([r["rate"] for r in rows], [r["router"] for r in rows], marker="o", ms=3, color=color, label=label)
    ax.scatter([0.0, 1.0], [fixed["text"], fixed["image"]], color=[MODALITY_COLORS["text"], MODALITY_COLORS["image"]],
               zorder=5, label="fixed text (0) / image (1)")
    ax.set_xlabel("share of steps routed to Image")
    ax.set_ylabel("step accuracy")
    ax.set_title(title, fontsize=10)
    ax.legend(fontsize=7)
    return fig



def headroom_figure(rows: Mapping[str, Mapping[str, Any]],
                    title: str = "Best fixed rendering → SwitchMem → per-step oracle") -> Figure:
    """Paper Fig. 3: per row (``{label: {"best_fixed_accuracy", "switchmem", "oracle", "best_fixed"}}``)
    three bars — the better fixed rendering, SwitchMem, the oracle that sees which one was right."""
    import matplotlib.pyplot as plt

    names = list(rows)
    x = np.arange(len(names))
    fig, ax = plt.subplots(figsize=(max(5.0, 1.6 * len(names) + 1.5), 3.8), layout="constrained")
    bars = (("best fixed", "best_fixed_accuracy", "#999999"), ("SwitchMem", "switchmem", "#d62728"),
            ("oracle (reference)", "oracle", "#2ca02c"))
    for j, (label, key, color) in enumerate(bars):
        values = [100 * rows[n][key] for n in names]
        ax.bar(x + (j - 1) * 0.26, values, width=0.25, color=color, label=label)
        for xi, v in zip(x + (j - 1) * 0.26, values):
            ax.annotate(f"{v:.1f}", (xi, v), xytext=(0, 2), textcoords="offset points", ha="center",
                        fontsize=ANNOTATION_SIZE)
    ax.set_xticks(x, [f"{n}\n(best: {rows[n]['best_fixed']})" for n in names], fontsize=8)
    low = min(100 * rows[n]["best_fixed_accuracy"] for n in names)
    ax.set_ylim(max(0.0, low - 15), min(100.0, max(100 * rows[n]["oracle"] for n in names) + 6))
    ax.set_ylabel("step accuracy (%)")
    ax.set_title(title, fontsize=10)
    ax.legend(fontsize=7, loc="upper left")
    return fig


def where_image_helps_figure(groups: Mapping[str, Mapping[str, Mapping[str, float]]],
                             title: str = "Where the image rendering helps: image minus text, and SwitchMem's image share"
                             ) -> Figure:
    """Per axis of :func:`guimem.routing.route_scores.where_image_helps`, a bar per group: image minus
    text accuracy (points), with the share of the group's steps SwitchMem routes to Image beside it."""
    import matplotlib.pyplot as plt

    labels, deltas, shares, counts, seps = [], [], [], [], []
    for axis, by in groups.items():
        for name, g in by.items():
            labels.append(f"{axis}: {name}")
            deltas.append(100 * g["image_minus_text"])
            shares.append(100 * g["image_share"])
            counts.append(g["steps"])
        seps.append(len(labels))
    y = np.arange(len(labels))[::-1]
    fig, (ax, bx) = plt.subplots(1, 2, figsize=(9.0, 0.36 * len(labels) + 1.4), sharey=True, layout="constrained",
                                 gridspec_kw={"width_ratios": [3, 2]})
    ax.barh(y, deltas, color=[MODALITY_COLORS["image"] if d > 0 else MODALITY_COLORS["text"] for d in deltas])
    ax.axvline(0, color="#333333", lw=0.8)
    for yi, d, n in zip(y, deltas, counts):
        ax.annotate(f"n={n}", (d, yi), xytext=(4 if d >= 0 else -4, 0), textcoords="offset points", va="center",
                    ha="left" if d >= 0 else "right", fontsize=ANNOTATION_SIZE, color="#444444")
    ax.set_yticks(y, labels, fontsize=8)
    ax.set_xlabel("image − text step accuracy (points)")
    span = max(5.0, max(abs(d) for d in deltas) * 1.35)
    ax.set_xlim(-span, span)
    bx.barh(y, shares, color="#d62728")
    bx.set_xlim(0, 100)
    bx.set_xlabel("SwitchMem: steps routed to Image (%)")
    for s in seps[:-1]:
        for a in (ax, bx):
            a.axhline(len(labels) - s - 0.5, color="#bbbbbb", lw=0.6)
    from matplotlib.patches import Patch
    fig.legend(handles=[Patch(color=MODALITY_COLORS["image"], label="image better than text on the group's steps"),
                        Patch(color=MODALITY_COLORS["text"], label="text better than image"),
                        Patch(color="#d62728", label="SwitchMem's share of the group's steps sent to the image")],
               loc="outside lower center", ncols=3, fontsize=7, frameon=False)
    fig.suptitle(title, fontsize=10)
    return fig


def closed_loop_figure(table: Mapping[str, Mapping[str, Any]], conditions: Sequence[str], title: str) -> Figure:
    """Closed-loop success rate per condition (``success_table`` rows): the mean as a bar, each world
    seed as a dot, the standard deviation over seeds as an error bar."""
    import matplotlib.pyplot as plt

    colors = {"none": "#999999", "text": MODALITY_COLORS["text"], "image": MODALITY_COLORS["image"],
              "both": MODALITY_COLORS.get("both", "#9467bd"), "switchmem": "#d62728"}
    fig, ax = plt.subplots(figsize=(6.4, 3.8), layout="constrained")
    x = np.arange(len(conditions))
    means = [table[c]["mean"] for c in conditions]
    ax.bar(x, means, yerr=[table[c]["std"] for c in conditions], color=[colors.get(c, "#555555") for c in conditions],
           capsize=3, width=0.6)
    for xi, c in zip(x, conditions):
        seeds = table[c]["per_seed"]
        ax.scatter(np.full(len(seeds), xi) + np.linspace(-0.12, 0.12, len(seeds)), seeds, color="#222222", s=9, zorder=3)
        ax.annotate(f"{table[c]['mean']:.1f}", (xi, table[c]["mean"]), xytext=(0, 3), textcoords="offset points",
                    ha="center", va="bottom", fontsize=ANNOTATION_SIZE)
    ax.set_xticks(x, ["SwitchMem" if c == "switchmem" else c for c in conditions])
    ax.set_ylabel("task success (%)")
    ax.set_title(title, fontsize=10)
    return fig


def labelled_table_figure(columns: Sequence[str], rows: Sequence[Sequence[str]], title: str = "",
                          label_share: float = 0.26, note: str = "") -> Figure:
    """:func:`~guimem.viz.plotting.table_figure` with its first column (the row labels) given
    ``label_share`` of the width and the others sharing the rest, so long labels are not cut."""
    fig = table_figure(columns, rows, title, note)
    fig.set_size_inches(fig.get_size_inches()[0] * 1.15, fig.get_size_inches()[1])
    table = fig.axes[0].tables[0]
    n = len(columns)
    for (_, col), cell in table.get_celld().items():
        cell.set_width(label_share if col == 0 else (1.0 - label_share) / (n - 1))
    return fig


def table_one_figure(baselines: Mapping[str, Mapping[str, Mapping[str, float]]],
                     tables: Mapping[str, Mapping[str, Mapping[str, Any]]], title: str) -> Figure:
    """Table 1 as a figure, one row per memory and step rule, in percent: the memories that are not
    routed (``baselines``: ``{memory: {rule: {rendering: accuracy}}}``) with their fixed renderings
    only, then the routed ones (``tables``: Table 1 of ``routing.recipe.score_routers``), then the
    paper's rows (:data:`PAPER_TABLE_ONE`), with a key to the routing columns."""
    columns = ["memory, step rule", "none", "text", "image", "both", "SwitchMem", "random", "binary", "density",
               "oracle"]
    fixed = lambda t: [f"{100 * t[c]:.1f}" for c in ("none", "text", "image", "both")]  # noqa: E731
    rows = [[f"{MEMORY_LABELS[kind]}, {RULE_NAMES[r]}", *fixed(t)] + ["—"] * 5
            for kind, by_rule in baselines.items() for r, t in by_rule.items()]
    for kind, by_rule in tables.items():
        for r, t in by_rule.items():
            rows.append([f"{MEMORY_LABELS[kind]}, {RULE_NAMES[r]}", *fixed(t)]
                        + [f"{100 * t['switchmem']:.1f} ({100 * t['switchmem_image_rate']:.0f}% img)",
                           f"{100 * t['random']:.1f}", f"{100 * t['binary']:.1f}", f"{100 * t['density']:.1f}",
                           f"{100 * t['oracle']:.1f}"])
    for r, t in PAPER_TABLE_ONE.items():
        rows.append([f"paper (Qwen3.5-9B), {RULE_NAMES[r]}", *[f"{t[c]:.1f}" for c in ("none", "text", "image", "both")],
                     f"{t['switchmem']:.1f}"] + ["—"] * 4)
    return labelled_table_figure(columns, rows, title, note=TABLE_ONE_KEY)
