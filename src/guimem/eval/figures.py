"""The actor stage's figures: what showing the memory does to held-out step accuracy, drawn so that a
difference of a few points is visible and can be judged (step counts, 95% intervals, p-values).

Every condition is scored on the same held-out steps, so a difference is read step by step
(:func:`guimem.eval.action_match.paired_counts`): ``fixed`` steps are right only with the memory,
``broken`` steps right only without it, and the exact sign test on those discordant steps gives
the p-value.

* :func:`accuracy_by_condition_figure` — the absolute accuracy with no memory and of the majority
  action (shares, from zero), and for every memory kind x modality the paired difference against
  no memory, with its 95% interval, the fixed/broken counts and the sign test's p-value;
* :func:`memory_effect_figure` — accuracy with no memory and with the memory as text where the
  right experience was retrieved and where it was not, and accuracy per modality on the steps
  where the memory names the element to touch that the goal does not; step counts and p-values;
* :func:`modality_contest_figure` — per group of steps, the share only the text and the share only
  the image rendering of the same experience gets right (:mod:`guimem.eval.modality`).

Intervals: a share gets the Wilson score interval (:func:`wilson_interval`); a difference of two
shares on the same steps gets the Wald interval for paired proportions (:func:`paired_difference`).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from statistics import NormalDist
from typing import Any

import numpy as np
from matplotlib.axes import Axes
from matplotlib.figure import Figure

from guimem.core.data import DataError
from guimem.eval.action_match import paired_counts
from guimem.viz.plotting import MEMORY_COLORS, MEMORY_LABELS, MODALITY_COLORS

Z95 = NormalDist().inv_cdf(0.975)  # two-sided 95%: 1.96
ANNOTATION_SIZE = 6.5  # font size of the counts and p-values written beside the points
ANNOTATION_ROOM = 0.16  # share-axis height a three-line annotation above a point takes (4.6-inch figure)
MAJORITY_COLOR = "#333333"  # the majority-action floor (as in the stage's other figures)


# ----------------------------------------------------------------------------- intervals
def wilson_interval(successes: int, n: int, z: float = Z95) -> tuple[float, float]:
    """Wilson score interval of the share ``successes / n`` (Wilson, 1927): inside [0, 1], it always
    contains the share and stays sensible near 0 or 1 and for a few steps, unlike ``p ± z·se``."""
    if n <= 0 or not 0 <= successes <= n:
        raise DataError("successes", f"expected 0 <= successes <= n with n > 0, got {successes} of {n}")
    p, z2 = successes / n, z * z
    centre = (p + z2 / (2 * n)) / (1 + z2 / n)
    half = z * math.sqrt(p * (1 - p) / n + z2 / (4 * n * n)) / (1 + z2 / n)
    return max(0.0, min(p, centre - half)), min(1.0, max(p, centre + half))  # (p inside despite rounding)


def paired_difference(fixed: int, broken: int, n: int, z: float = Z95) -> tuple[float, float, float]:
    """Difference of two shares scored on the same ``n`` steps, and its interval: ``(diff, low, high)``.

    ``diff = (fixed - broken) / n``; the Wald interval for paired proportions (the discordant
    steps carry its variance): ``se = sqrt(fixed + broken - (fixed - broken)**2 / n) / n``, cut to [-1, 1].
    """
    if n <= 0 or fixed < 0 or broken < 0 or fixed + broken > n:
        raise DataError("fixed", f"expected fixed, broken >= 0 with fixed + broken <= n, got {fixed}, {broken} of {n}")
    diff = (fixed - broken) / n
    se = math.sqrt(max(0.0, fixed + broken - (fixed - broken) ** 2 / n)) / n
    return diff, max(-1.0, diff - z * se), min(1.0, diff + z * se)  # a difference of shares stays in [-1, 1]


def format_p(p: float) -> str:
    """A sign-test p-value as written on the figures: three decimals, ``<0.001`` below that."""
    return "p<0.001" if p < 0.001 else f"p={p:.3f}"


def _counts_text(counts: Mapping[str, Any]) -> str:
    """``+fixed/−broken`` and the p-value, on two lines."""
    return f"+{counts['fixed']}/\u2212{counts['broken']}\n{format_p(counts['p_value'])}"


# ----------------------------------------------------------------------------- layout helpers
def _offsets(members: int, width: float) -> list[float]:
    """Centres of ``members`` equal slots across a group ``width`` wide, around the group's centre."""
    return [(j - (members - 1) / 2) * width / members for j in range(members)]


def _group_axis(ax: Axes, labels: Sequence[str], width: float, inner: Sequence[str] = ()) -> list[float]:
    """Groups at x = 0, 1, ... labelled ``labels`` (major ticks); with ``inner``, one minor tick per
    member labelled with it. Returns the members' offsets within a group (``width`` wide)."""
    offsets = _offsets(max(1, len(inner)), width)
    x = np.arange(len(labels))
    ax.set_xticks(x, labels)
    ax.set_xlim(-0.6, len(labels) - 0.4)
    ax.grid(axis="x", visible=False)
    if inner:
        ax.xaxis.remove_overlapping_locs = False  # a member at a group's centre keeps its label
        ax.set_xticks([i + o for i in x for o in offsets], list(inner) * len(labels), minor=True, fontsize=7)
        ax.tick_params(axis="x", which="major", length=0, pad=14)
        ax.tick_params(axis="x", which="minor", length=2)
    return offsets


def _share_axis(ax: Axes, top: float = 1.0) -> None:
    """A y axis for shares: from 0, ticks 0..1, up to ``top`` (above 1: room for annotations, no ticks)."""
    ax.set_ylim(0, max(1.0, top))
    ax.set_yticks(np.linspace(0, 1, 6))
    ax.spines["left"].set_bounds(0, 1)
    ax.tick_params(axis="y", labelleft=True)


def _share_point(ax: Axes, x: float, successes: int, n: int, color: str, filled: bool = True) -> float:
    """The share ``successes / n`` as a point with its Wilson interval; returns the interval's top."""
    p = successes / n
    low, high = wilson_interval(successes, n)
    ax.errorbar([x], [p], yerr=[[p - low], [high - p]], fmt="o", ms=5, color=color, capsize=2, lw=1.2,
                mfc=color if filled else "white", mew=1.2)
    return high


def _annotate(ax: Axes, x: float, y: float, text: str, gid: str) -> None:
    ax.annotate(text, (x, y), xytext=(0, 2), textcoords="offset points", ha="center", va="bottom",
                fontsize=ANNOTATION_SIZE, linespacing=1.1, gid=gid)


def _successes(share: float, n: int, field: str) -> int:
    """The step count behind a share of ``n`` steps. The splits keep shares, some rounded to 4 places:
    exact up to 10,000 steps; a share that is no count out of ``n`` means ``n`` is not their step count."""
    k = round(share * n)
    if not 0 <= k <= n or abs(share * n - k) > 5e-5 * n + 1e-9:  # half a unit of the 4th place, inclusive
        raise DataError(field, f"the share {share} is not a count out of {n} steps")
    return k


# ----------------------------------------------------------------------------- figures
def accuracy_by_condition_figure(hits: Mapping[str, np.ndarray], kinds: Sequence[str], modalities: Sequence[str],
                                 majority_accuracy: float) -> Figure:
    """Held-out step accuracy with each memory kind x modality, against no memory, on the same steps.

    Args:
        hits: condition -> ``[n]`` bool step hits over the same held-out steps: ``"none"`` and
            ``"<kind>/<modality>"`` for every kind and modality drawn.
        kinds: memory kinds, in the order drawn (labels from ``MEMORY_LABELS``).
        modalities: the memory modalities shown (e.g. text, image, both).
        majority_accuracy: step accuracy of the majority action on the same steps.

    Left: the absolute accuracy with no memory and of the majority action (shares, axis from 0,
    Wilson intervals). Right: per kind and modality, the paired difference in step accuracy
    against no memory, in percentage points, with its 95% interval, a zero line, and the fixed and
    broken step counts with the exact sign test's p-value (:func:`~guimem.eval.action_match.paired_counts`).
    """
    import matplotlib.pyplot as plt

    if "none" not in hits:
        raise DataError("hits", "no 'none' condition to compare against")
    base = np.asarray(hits["none"], dtype=bool)
    n = len(base)
    if n == 0:
        raise DataError("hits", "no steps")
    missing = [f"{k}/{m}" for k in kinds for m in modalities if f"{k}/{m}" not in hits]
    if missing:
        raise DataError("hits", f"missing conditions {missing}")
    if not 0 <= majority_accuracy <= 1:
        raise DataError("majority_accuracy", f"must be a share in [0, 1], got {majority_accuracy}")

    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4.2), gridspec_kw={"width_ratios": [1, 5]})
    # left: the absolute level, a share from zero
    for x, (k, color) in enumerate(((int(base.sum()), MODALITY_COLORS["none"]),
                                    (_successes(majority_accuracy, n, "majority_accuracy"), MAJORITY_COLOR))):
        low, high = wilson_interval(k, n)
        left.bar([x], [k / n], 0.6, color=color, yerr=[[k / n - low], [high - k / n]], capsize=3,
                 error_kw={"lw": 1, "ecolor": "#555555"})
        _annotate(left, x, high, f"{k / n:.3f}", gid="share")
    left.set_xticks([0, 1], ["no\nmemory", "majority\naction"])
    left.set_xlim(-0.6, 1.6)
    left.grid(axis="x", visible=False)
    _share_axis(left)
    left.set(ylabel="held-out step accuracy", title=f"Absolute ({n} steps)")

    # right: the paired differences against no memory
    offsets = _group_axis(right, [MEMORY_LABELS.get(k, k) for k in kinds], 0.75, modalities)
    points = []
    for i, kind in enumerate(kinds):
        for offset, m in zip(offsets, modalities):
            counts = paired_counts(hits[f"{kind}/{m}"], base)
            diff, low, high = (100 * v for v in paired_difference(counts["fixed"], counts["broken"], n))
            points.append((i + offset, diff, low, high, m, counts))
    lows, highs = [p[2] for p in points], [p[3] for p in points]
    span = max(max(highs), 0.0) - min(min(lows), 0.0) or 1.0
    right.axhline(0, color=MODALITY_COLORS["none"], lw=1.2, zorder=1)
    for x, diff, low, high, m, counts in points:
        right.errorbar([x], [diff], yerr=[[diff - low], [high - diff]], fmt="o", ms=5, capsize=2, lw=1.2,
                       color=MODALITY_COLORS[m])
        _annotate(right, x, high, _counts_text(counts), gid="p_value")
    right.set_ylim(min(min(lows), 0.0) - 0.08 * span, max(max(highs), 0.0) + 0.3 * span)
    right.set(ylabel="step accuracy \u2212 no memory (points)",
              title="Memory shown vs none, same steps: difference, 95% paired interval, "
                    "fixed/broken steps, sign test")
    fig.tight_layout()
    return fig


def memory_effect_figure(shown_right: Mapping[str, Mapping[str, Any]], informative: Mapping[str, Mapping[str, Any]],
                         kinds: Sequence[str], modalities: Sequence[str], n_steps: int) -> Figure:
    """Where showing the memory could help: two splits of the same held-out steps, per memory kind.

    Args:
        shown_right: kind -> :func:`~guimem.eval.memory_effect.right_experience_split` (its
            ``text/right`` and ``text/wrong`` entries are drawn).
        informative: kind -> :func:`~guimem.eval.memory_effect.names_target_split`.
        kinds: memory kinds, in the order drawn.
        modalities: the modalities drawn on the right panel, ``none`` included.
        n_steps: held-out steps per kind (the splits keep shares; the counts come from this).

    Left: accuracy with no memory and with the memory as text, on the steps where the right
    experience was retrieved (filled) and where it was not (hollow); each pair with its step
    count, fixed/broken steps and sign-test p-value. Right: accuracy per modality on the steps
    where the memory text names the element to touch and the goal does not; the step count under
    each kind, text vs none's counts and p-value above. Shares from 0 with Wilson intervals.
    """
    import matplotlib.pyplot as plt
    from matplotlib.lines import Line2D

    if n_steps <= 0:
        raise DataError("n_steps", f"must be positive, got {n_steps}")
    for name, split in (("shown_right", shown_right), ("informative", informative)):
        missing = [k for k in kinds if k not in split]
        if missing:
            raise DataError(name, f"missing memory kinds {missing}")

    fig, (a, b) = plt.subplots(1, 2, figsize=(14, 4.6))
    labels = [MEMORY_LABELS.get(k, k) for k in kinds]
    # left: right vs wrong experience, none -> text on each side
    offsets = _group_axis(a, labels, 0.8, ("right", "wrong"))
    tops = np.zeros((len(kinds), 2))  # the top of each pair's intervals, where its annotation goes
    for i, kind in enumerate(kinds):
        n_right = _successes(shown_right[kind]["share_of_steps"], n_steps, f"shown_right[{kind}].share_of_steps")
        for s, (offset, side, n) in enumerate(zip(offsets, ("right", "wrong"), (n_right, n_steps - n_right))):
            entry = shown_right[kind][f"text/{side}"]
            if n == 0:
                _annotate(a, i + offset, 0.0, "no steps", gid="count")
                continue
            if entry["fixed"] + entry["broken"] > n:
                raise DataError(f"shown_right[{kind}].text/{side}", f"more discordant steps than its {n} steps")
            for dx, key, color in ((-0.06, "none", MODALITY_COLORS["none"]), (0.06, "memory", MODALITY_COLORS["text"])):
                k = _successes(entry[key], n, f"shown_right[{kind}].text/{side}.{key}")
                tops[i, s] = max(tops[i, s], _share_point(a, i + offset + dx, k, n, color, filled=side == "right"))
            _annotate(a, i + offset, tops[i, s], f"{n} steps\n{_counts_text(entry)}", gid="p_value")
    _share_axis(a, tops.max() + ANNOTATION_ROOM)
    a.set(ylabel="held-out step accuracy",
          title="Right vs wrong experience retrieved (hit_shown): no memory vs memory as text")

    # right: steps where the memory names the element to touch and the goal does not
    counts = {k: _successes(informative[k]["share_of_steps"], n_steps, f"informative[{k}].share_of_steps")
              for k in kinds}
    _group_axis(b, [f"{label}\n{counts[k]} steps ({informative[k]['share_of_steps']:.0%})"
                    for label, k in zip(labels, kinds)], 0.8)
    offsets = _offsets(len(modalities), 0.8)
    tops = np.zeros((len(kinds), 1))
    for i, kind in enumerate(kinds):
        n = counts[kind]
        if n == 0:
            _annotate(b, i, 0.0, "no steps", gid="count")
            continue
        for offset, m in zip(offsets, modalities):
            k = _successes(informative[kind][m], n, f"informative[{kind}].{m}")
            tops[i, 0] = max(tops[i, 0], _share_point(b, i + offset, k, n, MODALITY_COLORS[m]))
        vs = informative[kind]["text_vs_none"]
        _annotate(b, i, tops[i, 0], f"text vs none: +{vs['fixed']}/\u2212{vs['broken']}\n{format_p(vs['p_value'])}",
                  gid="p_value")
    _share_axis(b, tops.max() + ANNOTATION_ROOM)
    b.set(ylabel="held-out step accuracy", title="Memory names the element to touch, the goal does not")

    handles = [Line2D([], [], marker="o", ls="", color=MODALITY_COLORS[m], label="no memory" if m == "none"
                      else f"memory as {m}") for m in dict.fromkeys(("none", "text", *modalities))]
    handles.append(Line2D([], [], marker="o", ls="", color="#555555", mfc="white", label="hollow: wrong experience"))
    fig.legend(handles=handles, loc="lower center", ncols=len(handles), fontsize=8, bbox_to_anchor=(0.5, -0.01))
    fig.tight_layout(rect=(0, 0.05, 1, 1))
    return fig


def modality_contest_figure(by_group: Mapping[str, Mapping[str, Any]], overall: Mapping[str, Any],
                            title: str = "Text or image: where each rendering of the same experience wins") -> Figure:
    """Per group of held-out steps (:func:`guimem.eval.modality.step_groups`, and all steps), the
    share of steps only the text rendering gets right and the share only the image rendering gets
    right, side by side, with the group's step count: where a router between them could gain."""
    import matplotlib.pyplot as plt

    groups = {"all steps": overall, **{k: v for k, v in by_group.items() if v["steps"]}}
    names = list(groups)
    y = np.arange(len(names))[::-1]
    fig, ax = plt.subplots(figsize=(7.2, 0.45 * len(names) + 1.4), layout="constrained")
    shares = {key: [groups[n]["non_tied"] * groups[n][f"{key}_wins"] / groups[n]["steps"] if groups[n]["non_tied"]
                    else 0.0 for n in names] for key in ("text", "image")}
    for offset, key, label in ((0.18, "text", "only text right"), (-0.18, "image", "only image right")):
        ax.barh(y + offset, shares[key], height=0.34, color=MODALITY_COLORS[key], label=label)
    longest = max(max(v) for v in shares.values())
    for i, (yi, n) in enumerate(zip(y, names)):  # the counts to the right of the group's longer bar
        g = groups[n]
        ax.annotate(f"n={g['steps']}, oracle +{100 * g['oracle_gain']:.1f} pts",
                    (max(shares["text"][i], shares["image"][i]), yi), xytext=(5, 0), textcoords="offset points",
                    va="center", fontsize=ANNOTATION_SIZE, color="#444444")
    ax.set_yticks(y, names)
    ax.set_xlabel("share of the group's steps")
    ax.set_xlim(0, max(0.05, longest * 1.45))
    ax.set_title(title, fontsize=10)
    ax.legend(loc="lower right", fontsize=8)
    return fig


def experience_worth_figure(worth: Mapping[str, Mapping[str, Any]], memories: Sequence[str], modality: str,
                            labels: Mapping[str, str] = MEMORY_LABELS) -> Figure:
    """Closed-loop success (%) on the same tasks and seeds: on the training phones without memory (the
    ceiling), then on the evaluation phone with each of ``memories`` (shown as ``modality``) and with
    the oracle memory as text and as an image; each bar its mean over seeds, the seeds as dots. The
    dashed lines mark the ceiling and the evaluation phone without memory: the gap experience can close."""
    import matplotlib.pyplot as plt

    names = ["training phones", *memories, "oracle/text", "oracle/image"]
    missing = [n for n in names if n not in worth]
    if missing:
        raise DataError("worth", f"no success rates for {missing}")
    colors = {"training phones": "#333333", "oracle/text": MODALITY_COLORS["text"],
              "oracle/image": MODALITY_COLORS["image"], **MEMORY_COLORS}
    fig, ax = plt.subplots(figsize=(1.0 + 0.8 * len(names), 3.4), layout="constrained")
    for x, name in enumerate(names):
        row = worth[name]
        ax.bar([x], [row["mean"]], color=colors.get(name, "#999999"), width=0.7)
        ax.plot([x] * len(row["per_seed"]), row["per_seed"], "o", ms=3, color="black", alpha=0.6)
        ax.annotate(f"{row['mean']:.0f}", (x, row["mean"]), xytext=(0, 2), textcoords="offset points", ha="center",
                    va="bottom", fontsize=ANNOTATION_SIZE)
    for name, style in (("training phones", "--"), ("none", ":")):
        if name in worth:
            ax.axhline(worth[name]["mean"], color="#666666", lw=0.8, ls=style)
    ax.set_xticks(range(len(names)), [labels.get(n, n).replace("/", "\n") for n in names], fontsize=8)
    ax.axvline(0.5, color="#bbbbbb", lw=0.8)
    ax.axvline(len(memories) + 0.5, color="#bbbbbb", lw=0.8)
    ax.set(ylim=(0, 105), ylabel="closed-loop success (%)",
           title=f"What experience is worth: training phones | evaluation phone, memory as {modality} | oracle")
    ax.title.set_fontsize(9)
    return fig
