"""Figures of the synthetic phone's data: screenshots annotated with their UI tree and action,
contact sheets of screens, and a summary of a generated dataset.
"""

from __future__ import annotations

import math
import textwrap
from typing import TYPE_CHECKING, Mapping, Sequence

import numpy as np
from PIL import Image, ImageDraw

from guimem.phone.render.primitives import Color, draw_text

if TYPE_CHECKING:  # pragma: no cover
    from guimem.core.data import Action, Episode, Observation, UIElement


ROLE_COLOURS: dict[str, Color] = {"icon": (230, 60, 60), "grid_cell": (230, 140, 0), "field": (0, 150, 120),
                                  "toggle": (120, 60, 200), "button": (0, 110, 220)}  # others: grey


def annotate(image: Image.Image, elements: Sequence["UIElement"] = (), action: "Action | None" = None) -> Image.Image:
    """A copy of a screenshot with its UI-tree bounds outlined and ``action`` marked on it.

    Clickable elements are outlined in a colour per role (icons red, grid cells orange,
    fields green, toggles purple, buttons blue, the rest grey); non-clickable ones dotted grey.
    Taps are a ring, long presses a double ring, swipes an arrow; other actions are written
    in a banner at the bottom.
    """
    im = image.convert("RGB")
    w, h = im.size
    d = ImageDraw.Draw(im)
    for e in elements:
        x0, y0, x1, y1 = e.bounds[0] * w, e.bounds[1] * h, e.bounds[2] * w - 1, e.bounds[3] * h - 1
        colour = ROLE_COLOURS.get(e.role, (140, 140, 140))
        if e.clickable:
            d.rectangle([x0, y0, x1, y1], outline=colour, width=1)
        else:
            for x in range(int(x0), int(x1), 4):
                d.point([(x, y0), (x, y1)], fill=(160, 160, 160))
    if action is not None:
        _mark_action(im, d, action)
    return im


def _mark_action(im: Image.Image, d: ImageDraw.ImageDraw, action: "Action") -> None:
    w, h = im.size
    red = (255, 0, 90)
    if action.point is not None:
        x, y = action.point[0] * w, action.point[1] * h
        r, lw = w * 0.07, max(2, w // 80)
        for rr in ((r, 1.6 * r) if action.type == "long_press" else (r,)):  # a white halo keeps the ring visible
            d.ellipse([x - rr - lw, y - rr - lw, x + rr + lw, y + rr + lw], outline=(255, 255, 255), width=lw)
            d.ellipse([x - rr, y - rr, x + rr, y + rr], outline=red, width=lw)
        d.ellipse([x - lw, y - lw, x + lw, y + lw], fill=red)
        if action.type == "swipe":
            (ex, ey) = action.end_point()
            ex, ey = ex * w, ey * h
            d.line([(x, y), (ex, ey)], fill=red, width=max(2, w // 60))
            ang = math.atan2(ey - y, ex - x)
            for da in (2.6, -2.6):
                d.line([(ex, ey), (ex + 2 * r * math.cos(ang + da), ey + 2 * r * math.sin(ang + da))], fill=red,
                       width=max(2, w // 60))
        return
    label = action.type.upper() + (f' "{action.text}"' if action.text else "")
    size = max(8, w // 15)
    d.rectangle([0, h - 2.2 * size, w, h], fill=red)
    draw_text(im, (w / 2, h - 1.1 * size), label, size, (255, 255, 255), width=w - 8, anchor="c")


def contact_sheet(images: Sequence[Image.Image], captions: Sequence[str], cols: int, title: str = ""):
    """A matplotlib figure laying ``images`` out in a grid, each with its caption below."""
    import matplotlib.pyplot as plt

    rows = max(1, (len(images) + cols - 1) // cols)
    fig, axes = plt.subplots(rows, cols, figsize=(1.55 * cols, 3.25 * rows), squeeze=False)
    for ax in axes.flat:
        ax.axis("off")
    for ax, im, cap in zip(axes.flat, images, captions):
        ax.imshow(im, interpolation="nearest")
        ax.set_title(textwrap.fill(cap, 26), fontsize=6.5, pad=2)
    if title:
        fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    return fig


def pick_screens(episodes: Sequence["Episode"], screens: Sequence[str]) -> list[tuple["Observation", "Action | None"]]:
    """The first observation of each wanted screen type (and the action taken on it), in ``screens`` order."""
    found: dict[str, tuple] = {}
    for ep in episodes:
        pairs = [(s.observation, s.action) for s in ep.steps] + ([(ep.final, None)] if ep.final is not None else [])
        for obs, act in pairs:
            if obs.screen in screens and obs.screen not in found:
                found[obs.screen] = (obs, act)
    return [found[s] for s in screens if s in found]


def dataset_summary_figure(splits: Mapping[str, Sequence["Episode"]]):
    """Four panels: episodes per app, demonstrator success per app, episode lengths, steps per subgoal type."""
    import matplotlib.pyplot as plt

    names = list(splits)
    apps = sorted({e.app for eps in splits.values() for e in eps})
    colours = ("#0072B2", "#E69F00", "#009E73")
    fig, ((a, b), (c, dd)) = plt.subplots(2, 2, figsize=(9.5, 6.4))
    x = np.arange(len(apps))
    width = 0.8 / max(1, len(names))
    for i, name in enumerate(names):
        eps = splits[name]
        n = [sum(e.app == app for e in eps) for app in apps]
        rate = [100 * np.mean([bool(e.success) for e in eps if e.app == app]) if k else 0 for app, k in zip(apps, n)]
        a.bar(x + i * width, n, width, label=name, color=colours[i % len(colours)])
        b.bar(x + i * width, rate, width, label=name, color=colours[i % len(colours)])
        c.hist([len(e.steps) for e in eps], bins=np.arange(0.5, 31.5, 1), alpha=0.65, label=name, color=colours[i % len(colours)])
    for ax, title in ((a, "episodes per app"), (b, "demonstrator success (%) per app")):
        ax.set_xticks(x + width * (len(names) - 1) / 2, apps, rotation=30, ha="right")
        ax.set_title(title)
        ax.legend()
    c.set_title("steps per episode")
    c.set_xlabel("steps")
    c.legend()
    counts: dict[str, int] = {}
    for eps in splits.values():
        for e in eps:
            for s in e.steps:
                if s.subgoal is not None:
                    counts[s.subgoal.type] = counts.get(s.subgoal.type, 0) + 1
    order = sorted(counts, key=lambda k: counts[k])
    dd.barh(order, [counts[k] for k in order], color="#56B4E9")
    dd.set_title("steps per subgoal type (all splits)")
    dd.tick_params(axis="y", labelsize=7)
    fig.tight_layout()
    return fig
