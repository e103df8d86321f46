"""How a memory is shown to the actor: what it retrieved, as a text block and as an image.

This is the one module to open to change what the actor sees of a memory. :class:`RenderStyle`
says how much is shown; :func:`render_text` writes the block of the prompt (a header, then one
line per item: outcome, task, subgoal, actions in words, result); :func:`render_image` draws the
same items: the top-1 item's first screen (actions marked, border coloured by outcome) over a strip
of crops of the elements the shown items touched. :func:`image_layout` is the actor's geometry contract: where the
remembered screen and each crop sit in the image; the miniature actor cuts the image along the same
boxes, so a change here is a change to its input. :func:`count_tokens` measures a block as the
actor's tokenizer reads it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Sequence

from PIL import Image, ImageDraw, ImageFont

from guimem.core.data import DataError, UIElement, pixel_box
from guimem.core.io import check_number, file_inside
from guimem.core.store import open_image
from guimem.models.tokenizer import words
from guimem.smg.memories.items import MemoryItem, Retrieved

MIN_PANEL = 8  # pixels: the smallest side of one item's panel in the memory image
MEMORY_CROPS = 4  # crops of touched elements in the memory image's strip (the shown items' first actions, round robin)


def image_layout(size: tuple[int, int]) -> tuple[tuple[int, int, int, int], list[tuple[int, int, int, int]]]:
    """Where things are in a memory image of ``size`` (width, height): the box of the remembered
    screen (the top, in the live screen's geometry) and the boxes of the :data:`MEMORY_CROPS` crops
    (a strip along the bottom of ``width // MEMORY_CROPS`` square slots, each crop inside a frame
    one pixel wide), each ``(x0, y0, x1, y1)``. The miniature actor cuts the image along the same
    boxes, so the frame never enters a crop it compares with the screen."""
    width, height = size
    side = width // MEMORY_CROPS
    screen = (0, 0, width, height - side)
    return screen, [(i * side + 1, height - side + 1, (i + 1) * side - 1, height - 1) for i in range(MEMORY_CROPS)]


def crop_slots(size: tuple[int, int]) -> list[tuple[float, float, float, float]]:
    """The crop boxes of :func:`image_layout` as fractions of ``size`` (width, height): where a reader
    of the memory image cuts its strip, in the normalised geometry of a UI element's bounds."""
    width, height = size
    return [(x0 / width, y0 / height, x1 / width, y1 / height) for x0, y0, x1, y1 in image_layout(size)[1]]


@dataclass(frozen=True)
class RenderStyle:
    """How much of a retrieval the actor is shown: the first ``max_items`` items, in words (the SMG
    block) and in pixels (the top-1 item's screen in the live screen's geometry, and the elements
    every shown item touched), so the two renderings hold the same experience."""

    max_items: int = 3  # items rendered as text; the rest are counted, not shown
    max_actions: int = 4  # actions shown per item
    show_goal: bool = True  # the past task's goal
    show_effect: bool = True  # the effect sentence
    image_size: tuple[int, int] = (180, 405)  # (width, height): a 180 x 360 screen over a strip of 4 crops of 45 px

    def __post_init__(self) -> None:
        check_number(self.max_items, "max_items", lo=1, integer=True)
        check_number(self.max_actions, "max_actions", lo=1, integer=True)
        for name in ("show_goal", "show_effect"):
            if not isinstance(getattr(self, name), bool):
                raise DataError(name, f"expected true or false, got {getattr(self, name)!r:.60}")
        size = self.image_size
        if not isinstance(size, (tuple, list)) or len(size) != 2:
            raise DataError("image_size", f"expected (width, height), got {size!r:.60}")
        for value in size:
            check_number(value, "image_size", lo=1, integer=True)
        screen, crops = image_layout(tuple(size))
        if min(screen[2] - screen[0], screen[3] - screen[1], crops[0][2] - crops[0][0] + 2) < MIN_PANEL:
            raise DataError("image_size", f"{size[0]}x{size[1]} pixels leave the remembered screen or its crops "
                                          f"smaller than {MIN_PANEL} pixels")
        object.__setattr__(self, "image_size", tuple(size))



# ============================================================================ text
OUTCOME_WORDS = {"yes": "succeeded", "no": "failed", "uncertain": "unsure"}


def item_text(n: int, item: MemoryItem, style: RenderStyle) -> str:
    """One line of the memory block, e.g. ``1. failed | task: ... | subgoal: ... | did: ... | result: ...``."""
    parts = [f"{n}. {OUTCOME_WORDS.get(item.success, item.success)}"]
    if style.show_goal:
        parts.append(f"task: {item.goal}")
    if item.kind == "subgoal":
        parts.append(f"subgoal: {item.text}")
    shown = list(item.phrases[: style.max_actions])
    more = len(item.phrases) - len(shown)
    parts.append("did: " + "; ".join(shown) + (f" (+{more} more)" if more > 0 else ""))
    if style.show_effect and item.effect:
        parts.append(f"result: {item.effect.rstrip('.')}")
    return " | ".join(parts)


def render_text(retrieved: Retrieved, style: RenderStyle = RenderStyle()) -> str:
    """The memory block: a header line, then one line per shown item (best first)."""
    items = retrieved.items[: style.max_items]
    if not items:
        return "Past experience: none."
    total = len(retrieved.items)
    head = f"Past experience ({len(items)} of {total}):" if total > len(items) else "Past experience:"
    return "\n".join([head] + [item_text(i + 1, it, style) for i, it in enumerate(items)])


def count_tokens(text: str) -> int:
    """How many tokens the actor's tokenizer makes of ``text``."""
    return len(words(text))


# ============================================================================ image
OUTCOME_COLOURS = {"yes": (0, 158, 115), "no": (213, 94, 0), "uncertain": (240, 228, 66)}  # Okabe-Ito
MARK = (255, 0, 200)  # action marks: a magenta no theme uses
MARK_EDGE = (255, 255, 255)
EMPTY = (128, 128, 128)


def _font(size: int) -> ImageFont.ImageFont:
    return ImageFont.load_default(size=max(6, size))


def _fitting_prefix(f: ImageFont.FreeTypeFont, text: str, width: float) -> str:
    """The longest start of ``text`` that ``f`` draws within ``width`` pixels ('' when none does).

    Every glyph of the font advances the pen one pixel at least, so no more than ``width``
    characters fit (and ``2 * width + 8`` leaves room for zero-width marks): only those are
    measured, and the cut is found by bisection, so the cost is bounded by ``width``, whatever
    the length of the text (a typed text of megabytes included)."""
    hi = min(len(text), 2 * max(0, int(width)) + 8)
    if f.getlength(text[:hi]) <= width:
        return text[:hi]
    lo, hi = 0, hi - 1  # text[:lo] fits (or lo is 0); text[:hi + 1] does not
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if f.getlength(text[:mid]) <= width:
            lo = mid
        else:
            hi = mid - 1
    return text[:lo]


def _badge(d: ImageDraw.ImageDraw, xy: tuple[float, float], text: str, size: int, width: float) -> None:
    """A small filled label (typed text, back, open app ...) clipped to ``width`` pixels."""
    f = _font(size)
    text = _fitting_prefix(f, text, width - 4)
    x, y = xy
    w = f.getlength(text) + 4
    d.rectangle((x, y, x + w, y + size + 4), fill=MARK, outline=MARK_EDGE)
    d.text((x + 2, y + 1), text, font=f, fill=(255, 255, 255))


def _arrow(d: ImageDraw.ImageDraw, a: tuple[float, float], b: tuple[float, float], width: int, head: float) -> None:
    d.line([a, b], fill=MARK_EDGE, width=width + 2)
    d.line([a, b], fill=MARK, width=width)
    ang = math.atan2(b[1] - a[1], b[0] - a[0])
    for s in (-1, 1):
        tip = (b[0] - head * math.cos(ang + s * 0.5), b[1] - head * math.sin(ang + s * 0.5))
        d.line([b, tip], fill=MARK, width=width)


def draw_actions(panel: Image.Image, item: MemoryItem, style: RenderStyle) -> None:
    """Mark an item's actions where they were made: those taken on its anchor screen (the actions
    after it that left the screen are shown by their crops): rings at taps, arrows for swipes,
    typed text noted. Marks are numbered when the item has several actions; the first is drawn thickest.
    """
    d = ImageDraw.Draw(panel)
    w, h = panel.size
    r, fs = max(3.0, 0.09 * w), max(7, int(0.075 * w))
    badge_y = h - 2 * (fs + 6)
    for j, action in enumerate(item.actions[: style.max_actions]):
        if item.shot(j) != item.anchor:
            continue
        width = max(1, round(w / (40 if j == 0 else 80)))
        label = str(j + 1) if len(item.actions) > 1 else ""
        if action.type in ("tap", "long_press"):
            x, y = action.point[0] * w, action.point[1] * h
            for rr in ([r, 0.6 * r] if action.type == "long_press" else [r]):
                d.ellipse((x - rr, y - rr, x + rr, y + rr), outline=MARK_EDGE, width=width + 2)
                d.ellipse((x - rr, y - rr, x + rr, y + rr), outline=MARK, width=width)
            if label:
                d.text((x + r, y - r - fs), label, font=_font(fs), fill=MARK, stroke_width=1, stroke_fill=MARK_EDGE)
        elif action.type == "swipe":
            a = (action.point[0] * w, action.point[1] * h)
            end = action.end_point()
            b = (end[0] * w, end[1] * h)
            _arrow(d, a, b, width + 1, r)
            if label:
                d.text((a[0] + 2, a[1]), label, font=_font(fs), fill=MARK, stroke_width=1, stroke_fill=MARK_EDGE)
        elif action.type == "type":
            target = item.targets[j] if j < len(item.targets) else None
            prev = item.targets[j - 1] if j > 0 and j - 1 < len(item.targets) else None
            box = target or prev  # the field typed into: this action's target, else the one tapped before
            y = box.bounds[3] * h + 2 if box is not None else 0.15 * h
            _badge(d, (2, min(y, h - fs - 6)), f"{label + ': ' if label else ''}type \"{action.text}\"", fs, w - 4)
        else:
            text = {"open_app": f"open {action.text}", "long_press": "long press"}.get(action.type, action.type)
            _badge(d, (2, badge_y), f"{label + ': ' if label else ''}{text}", fs, w - 4)
            badge_y -= fs + 6


@lru_cache(maxsize=1024)
def _anchor(store_root: str, rel: str, size: tuple[int, int]) -> Image.Image:
    """The screenshot ``rel`` of the store, decoded and resized once (anchors recur across retrievals;
    store screenshots are content-addressed, so a path's pixels never change); callers copy it."""
    return open_image(file_inside(store_root, rel, "anchor")).resize(size, Image.BILINEAR)


def render_panel(item: MemoryItem, store_root: str | Path, size: tuple[int, int], style: RenderStyle) -> Image.Image:
    """One item: its anchor screen, actions marked, inside a border coloured by its outcome."""
    w, h = size
    border = max(2, round(w / 60))
    panel = Image.new("RGB", size, OUTCOME_COLOURS.get(item.success, EMPTY))
    inner = (w - 2 * border, h - 2 * border)
    shot = _anchor(str(store_root), item.anchor, inner).copy()
    draw_actions(shot, item, style)
    panel.paste(shot, (border, border))
    return panel


@lru_cache(maxsize=4096)
def _crop(store_root: str, rel: str, bounds: tuple[float, float, float, float], side: int) -> Image.Image:
    """The element at ``bounds`` on screenshot ``rel``, cut out at full resolution and scaled, its
    aspect kept, to fit a ``side`` square (centred on grey): a square glyph fills the square; a wide
    list row becomes a thin band whose words are too small to read, as in any picture of a screen."""
    shot = open_image(file_inside(store_root, rel, "anchor"))
    w, h = shot.size
    element = shot.crop(pixel_box(bounds, w, h))
    scale = side / max(element.size)
    fitted = element.resize((max(1, round(element.width * scale)), max(1, round(element.height * scale))), Image.BILINEAR)
    out = Image.new("RGB", (side, side), EMPTY)
    out.paste(fitted, ((side - fitted.width) // 2, (side - fitted.height) // 2))
    return out


def touched_crops(items: Sequence[MemoryItem], style: RenderStyle) -> list[tuple[MemoryItem, str, UIElement]]:
    """The elements the crop strip shows, at most :data:`MEMORY_CROPS`: round robin over the shown
    items (each one's first touched element, then each one's second, ...), so the strip holds every
    item the text block holds, best first: ``(item, screenshot, element)`` each."""
    per_item = [[(item, item.shot(j), t) for j, t in enumerate(item.targets[: style.max_actions]) if t is not None]
                for item in items]
    out = []
    for rank in range(max((len(t) for t in per_item), default=0)):
        out += [touched[rank] for touched in per_item if rank < len(touched)]
    return out[:MEMORY_CROPS]


def render_image(retrieved: Retrieved, store_root: str | Path, style: RenderStyle = RenderStyle()) -> Image.Image:
    """The shown items as a picture — the same items the text block holds (the first ``max_items``):
    the top-1 item's first screen in the live screen's geometry (the whole width, so a remembered
    control sits where it sits on a screen of this variant), each action marked where it was made,
    inside a border coloured by the item's outcome; below it a strip of crops of the elements the
    shown items touched (:func:`touched_crops`: each item's first, then its next), at full
    resolution and in their own aspect, so a label-free glyph stays recognisable (and a list row's
    words do not), each framed in its item's outcome colour
    (:func:`image_layout`). An empty retrieval is a grey image."""
    canvas = Image.new("RGB", style.image_size, EMPTY)
    if not retrieved.items:
        return canvas
    shown = retrieved.items[: style.max_items]
    screen, crops = image_layout(style.image_size)
    canvas.paste(render_panel(shown[0], store_root, (screen[2] - screen[0], screen[3] - screen[1]), style), screen[:2])
    draw = ImageDraw.Draw(canvas)
    for (x0, y0, x1, y1), (item, shot, target) in zip(crops, touched_crops(shown, style)):
        draw.rectangle((x0 - 1, y0 - 1, x1, y1), fill=OUTCOME_COLOURS.get(item.success, EMPTY))  # the frame
        canvas.paste(_crop(str(store_root), shot, target.bounds, x1 - x0), (x0, y0))
    return canvas
