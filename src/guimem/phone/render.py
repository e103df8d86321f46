"""Drawing the synthetic phone: themes, glyphs, pictures and whole screens.

A screen is laid out by :mod:`guimem.phone.apps` in *logical* pixels on a 180 x 360 canvas
(``LOGICAL_SIZE``) and drawn here at any width with the same 1:2 aspect ratio. Drawing is
pure: the same :class:`~guimem.phone.toolkit.Layout` and width always give the same pixels, so the
world can cache images by layout.

Three kinds of pictures carry no words at all and are told apart by appearance only:
icons (``ICON_GLYPHS``: gear, more, plus, magnifier, star, trash, share, ...), photos
(``PHOTO_SUBJECTS``: beach, mountain, city, ...) and stickers (``STICKERS``: heart, sun, ...).
"""

from __future__ import annotations

import math
import textwrap
from dataclasses import dataclass
from functools import lru_cache
from typing import TYPE_CHECKING, Callable, Mapping, Sequence

import numpy as np
from PIL import Image, ImageDraw, ImageFont

from guimem.phone.catalogue import LOGICAL_SIZE

if TYPE_CHECKING:  # pragma: no cover
    from guimem.core.data import Action, Episode, Observation, UIElement
    from guimem.phone.toolkit import Layout, Widget

Color = tuple[int, int, int]
Box = tuple[float, float, float, float]  # x0, y0, x1, y1 in output pixels


# ----------------------------------------------------------------------------- themes
@dataclass(frozen=True)
class Theme:
    """A colour scheme; the labels of a screen never depend on it."""

    name: str
    bg: Color  # screen background
    surface: Color  # rows, cards, dialogs
    text: Color  # primary text
    subtext: Color  # secondary text
    accent: Color  # toggles on, focused fields, FAB, selected tab
    on_accent: Color  # text and glyphs drawn on the accent colour
    divider: Color  # row separators, outlines
    bar: Color  # top bar background


_ACCENTS: dict[str, Color] = {
    "blue": (33, 111, 219), "teal": (0, 128, 118), "purple": (118, 70, 190),
    "orange": (214, 98, 20), "pink": (196, 46, 110), "green": (46, 125, 50),
}


def make_theme(accent: str, dark: bool) -> Theme:
    """The light or dark theme with the named accent colour."""
    a = _ACCENTS[accent]
    if dark:
        return Theme(f"dark-{accent}", bg=(24, 25, 28), surface=(38, 40, 44), text=(236, 236, 238),
                     subtext=(160, 162, 168), accent=tuple(min(255, c + 50) for c in a), on_accent=(20, 20, 22),
                     divider=(62, 64, 70), bar=(32, 33, 37))
    return Theme(f"light-{accent}", bg=(246, 246, 248), surface=(255, 255, 255), text=(28, 28, 30),
                 subtext=(108, 110, 118), accent=a, on_accent=(255, 255, 255), divider=(222, 222, 228),
                 bar=tuple(int(0.12 * c + 0.88 * 255) for c in a))


THEME_ACCENTS: tuple[str, ...] = tuple(_ACCENTS)


# ----------------------------------------------------------------------------- text
@lru_cache(maxsize=16)
def font(size: int) -> ImageFont.FreeTypeFont:
    """Pillow's bundled font at ``size`` pixels (no system fonts: identical everywhere)."""
    return ImageFont.load_default(size=size)


@lru_cache(maxsize=8192)
def _text_mask(text: str, size: int) -> Image.Image:
    """The text drawn once as an 8-bit mask; pasting a cached mask is ~50x faster than drawing."""
    f = font(size)
    x0, y0, x1, y1 = f.getbbox(text)
    mask = Image.new("L", (max(1, x1), max(1, y1)), 0)
    ImageDraw.Draw(mask).text((0, 0), text, font=f, fill=255)
    return mask


@lru_cache(maxsize=8192)
def fit_text(text: str, size: int, width: int) -> str:
    """``text`` cut with an ellipsis so it fits in ``width`` pixels."""
    f = font(size)
    if f.getlength(text) <= width:
        return text
    while text and f.getlength(text + "…") > width:
        text = text[:-1]
    return text + "…"


def draw_text(im: Image.Image, xy: tuple[float, float], text: str, size: int, color: Color,
              width: float | None = None, anchor: str = "l") -> None:
    """Paste ``text`` at ``xy`` (left/centre ``anchor`` 'l'/'c', vertically centred on y)."""
    if not text:
        return
    if width is not None:
        text = fit_text(text, size, max(1, int(width)))
    mask = _text_mask(text, size)
    x = xy[0] - (mask.width / 2 if anchor == "c" else 0)
    y = xy[1] - size * 0.62
    im.paste(color, (int(round(x)), int(round(y))), mask)


# ----------------------------------------------------------------------------- icons
def _line(d: ImageDraw.ImageDraw, pts, color: Color, w: int) -> None:
    d.line([(float(x), float(y)) for x, y in pts], fill=color, width=w, joint="curve")


def _star_points(cx: float, cy: float, r: float, n: int = 5, inner: float = 0.45) -> list[tuple[float, float]]:
    pts = []
    for i in range(2 * n):
        rr = r if i % 2 == 0 else r * inner
        a = -math.pi / 2 + i * math.pi / n
        pts.append((cx + rr * math.cos(a), cy + rr * math.sin(a)))
    return pts


def draw_icon(d: ImageDraw.ImageDraw, name: str, box: Box, color: Color, bg: Color) -> None:
    """Draw the label-free icon ``name`` centred in ``box``."""
    x0, y0, x1, y1 = box
    cx, cy = (x0 + x1) / 2, (y0 + y1) / 2
    r = min(x1 - x0, y1 - y0) * 0.32
    w = max(1, int(round(r / 4.5)))
    if name == "back":
        _line(d, [(cx + r * 0.2, cy - r * 0.8), (cx - r * 0.6, cy), (cx + r * 0.2, cy + r * 0.8)], color, w)
        _line(d, [(cx - r * 0.6, cy), (cx + r * 0.9, cy)], color, w)
    elif name == "more":
        for dy in (-0.75, 0, 0.75):
            d.ellipse([cx - w, cy + dy * r - w, cx + w, cy + dy * r + w], fill=color)
    elif name in ("plus", "minus"):
        _line(d, [(cx - r, cy), (cx + r, cy)], color, w + 1)
        if name == "plus":
            _line(d, [(cx, cy - r), (cx, cy + r)], color, w + 1)
    elif name == "search":
        rr = r * 0.6
        d.ellipse([cx - r * 0.9, cy - r * 0.9, cx - r * 0.9 + 2 * rr, cy - r * 0.9 + 2 * rr], outline=color, width=w)
        _line(d, [(cx + r * 0.15, cy + r * 0.15), (cx + r, cy + r)], color, w + 1)
    elif name == "gear":
        d.polygon(_star_points(cx, cy, r, n=8, inner=0.72), fill=color)
        d.ellipse([cx - r * 0.32, cy - r * 0.32, cx + r * 0.32, cy + r * 0.32], fill=bg)
    elif name in ("star", "star_filled"):
        pts = _star_points(cx, cy, r)
        if name == "star_filled":
            d.polygon(pts, fill=color)
        else:
            d.polygon(pts, outline=color, width=w)
    elif name == "trash":
        d.rectangle([cx - r * 0.6, cy - r * 0.45, cx + r * 0.6, cy + r], outline=color, width=w)
        _line(d, [(cx - r * 0.9, cy - r * 0.65), (cx + r * 0.9, cy - r * 0.65)], color, w)
        _line(d, [(cx - r * 0.25, cy - r * 0.95), (cx + r * 0.25, cy - r * 0.95)], color, w)
        for dx in (-0.22, 0.22):
            _line(d, [(cx + dx * r, cy - r * 0.2), (cx + dx * r, cy + r * 0.75)], color, max(1, w - 1))
    elif name == "share":
        pts = [(cx + r * 0.7, cy - r * 0.7), (cx - r * 0.7, cy), (cx + r * 0.7, cy + r * 0.7)]
        _line(d, pts, color, w)
        for px, py in pts:
            d.ellipse([px - r * 0.3, py - r * 0.3, px + r * 0.3, py + r * 0.3], fill=color)
    elif name == "send":
        d.polygon([(cx - r, cy - r * 0.85), (cx + r, cy), (cx - r, cy + r * 0.85), (cx - r * 0.55, cy)], fill=color)
    elif name == "cart":
        _line(d, [(cx - r, cy - r * 0.8), (cx - r * 0.6, cy - r * 0.8), (cx - r * 0.3, cy + r * 0.4),
                  (cx + r * 0.8, cy + r * 0.4), (cx + r, cy - r * 0.45), (cx - r * 0.5, cy - r * 0.45)], color, w)
        for dx in (-0.2, 0.6):
            d.ellipse([cx + dx * r - r * 0.18, cy + r * 0.65, cx + dx * r + r * 0.18, cy + r], fill=color)
    elif name == "check":
        _line(d, [(cx - r * 0.85, cy), (cx - r * 0.25, cy + r * 0.6), (cx + r * 0.9, cy - r * 0.6)], color, w + 1)
    elif name == "close":
        _line(d, [(cx - r * 0.7, cy - r * 0.7), (cx + r * 0.7, cy + r * 0.7)], color, w + 1)
        _line(d, [(cx - r * 0.7, cy + r * 0.7), (cx + r * 0.7, cy - r * 0.7)], color, w + 1)
    elif name == "edit":
        _line(d, [(cx - r * 0.7, cy + r * 0.7), (cx + r * 0.6, cy - r * 0.6)], color, w + 2)
        d.polygon([(cx - r * 0.95, cy + r * 0.95), (cx - r * 0.85, cy + r * 0.45), (cx - r * 0.45, cy + r * 0.85)], fill=color)
    elif name == "smiley":
        d.ellipse([cx - r, cy - r, cx + r, cy + r], outline=color, width=w)
        for dx in (-0.35, 0.35):
            d.ellipse([cx + dx * r - w, cy - r * 0.3 - w, cx + dx * r + w, cy - r * 0.3 + w], fill=color)
        d.arc([cx - r * 0.55, cy - r * 0.35, cx + r * 0.55, cy + r * 0.6], 20, 160, fill=color, width=w)
    elif name == "chevron":
        _line(d, [(cx - r * 0.3, cy - r * 0.6), (cx + r * 0.3, cy), (cx - r * 0.3, cy + r * 0.6)], color, w)
    elif name == "bell":
        d.chord([cx - r * 0.75, cy - r * 0.9, cx + r * 0.75, cy + r * 0.9], 180, 360, fill=color)
        d.rectangle([cx - r * 0.75, cy, cx + r * 0.75, cy + r * 0.45], fill=color)
        d.ellipse([cx - r * 0.2, cy + r * 0.5, cx + r * 0.2, cy + r * 0.9], fill=color)
    elif name == "mic":
        d.rounded_rectangle([cx - r * 0.35, cy - r, cx + r * 0.35, cy + r * 0.3], radius=r * 0.35, fill=color)
        d.arc([cx - r * 0.65, cy - r * 0.4, cx + r * 0.65, cy + r * 0.6], 0, 180, fill=color, width=w)
    else:
        raise KeyError(f"unknown icon glyph {name!r}")


ICON_GLYPHS: tuple[str, ...] = (
    "back", "more", "plus", "minus", "search", "gear", "star", "star_filled", "trash", "share", "send",
    "cart", "check", "close", "edit", "smiley", "chevron", "bell", "mic",
)


# ----------------------------------------------------------------------------- photos
def _sky(d, box, top: Color, horizon: float, ground: Color) -> float:
    x0, y0, x1, y1 = box
    hy = y0 + (y1 - y0) * horizon
    d.rectangle([x0, y0, x1, hy], fill=top)
    d.rectangle([x0, hy, x1, y1], fill=ground)
    return hy


def _photo(d: ImageDraw.ImageDraw, subject: str, box: Box) -> None:
    """A small picture of ``subject``: flat shapes, distinct colours, no text."""
    x0, y0, x1, y1 = box
    W, H = x1 - x0, y1 - y0
    P = lambda fx, fy: (x0 + fx * W, y0 + fy * H)  # noqa: E731 - relative point in the box
    R = lambda fx0, fy0, fx1, fy1: [*P(fx0, fy0), *P(fx1, fy1)]  # noqa: E731
    if subject == "beach":
        _sky(d, box, (135, 200, 245), 0.5, (60, 120, 200))
        d.rectangle(R(0, 0.72, 1, 1), fill=(236, 210, 140))
        d.ellipse(R(0.62, 0.1, 0.86, 0.34), fill=(255, 214, 40))
    elif subject == "mountain":
        _sky(d, box, (170, 210, 240), 0.8, (90, 140, 80))
        d.polygon([P(0, 0.85), P(0.38, 0.2), P(0.75, 0.85)], fill=(110, 110, 125))
        d.polygon([P(0.3, 0.34), P(0.38, 0.2), P(0.46, 0.34)], fill=(255, 255, 255))
        d.polygon([P(0.45, 0.85), P(0.75, 0.38), P(1, 0.85)], fill=(135, 135, 150))
    elif subject == "city":
        _sky(d, box, (30, 40, 80), 0.9, (50, 50, 60))
        for i, (fx, fh) in enumerate([(0.05, 0.5), (0.28, 0.7), (0.52, 0.4), (0.74, 0.62)]):
            d.rectangle(R(fx, 0.9 - fh, fx + 0.2, 0.9), fill=(70 + 15 * i, 80, 110))
            for wy in range(3):
                d.rectangle(R(fx + 0.05, 0.95 - fh + 0.12 * wy, fx + 0.09, 1.0 - fh + 0.12 * wy), fill=(250, 220, 100))
    elif subject == "forest":
        _sky(d, box, (200, 230, 250), 0.75, (60, 110, 50))
        for fx in (0.05, 0.3, 0.55, 0.78):
            d.polygon([P(fx, 0.85), P(fx + 0.1, 0.25), P(fx + 0.2, 0.85)], fill=(30, 100, 45))
    elif subject == "sunset":
        for i, c in enumerate([(250, 140, 60), (240, 100, 80), (180, 70, 120), (90, 50, 120)]):
            d.rectangle(R(0, i * 0.25, 1, (i + 1) * 0.25), fill=c)
        d.chord(R(0.3, 0.5, 0.7, 0.9), 180, 360, fill=(255, 220, 90))
    elif subject == "cat":
        d.rectangle(R(0, 0, 1, 1), fill=(250, 235, 215))
        d.polygon([P(0.22, 0.4), P(0.3, 0.1), P(0.45, 0.32)], fill=(130, 130, 135))
        d.polygon([P(0.78, 0.4), P(0.7, 0.1), P(0.55, 0.32)], fill=(130, 130, 135))
        d.ellipse(R(0.2, 0.25, 0.8, 0.85), fill=(130, 130, 135))
        d.ellipse(R(0.33, 0.45, 0.43, 0.55), fill=(120, 220, 90))
        d.ellipse(R(0.57, 0.45, 0.67, 0.55), fill=(120, 220, 90))
    elif subject == "dog":
        d.rectangle(R(0, 0, 1, 1), fill=(210, 235, 250))
        d.ellipse(R(0.22, 0.2, 0.78, 0.85), fill=(170, 110, 60))
        d.ellipse(R(0.1, 0.25, 0.3, 0.65), fill=(110, 65, 30))
        d.ellipse(R(0.7, 0.25, 0.9, 0.65), fill=(110, 65, 30))
        d.ellipse(R(0.42, 0.58, 0.58, 0.7), fill=(30, 30, 30))
    elif subject == "flower":
        d.rectangle(R(0, 0, 1, 1), fill=(225, 245, 225))
        d.line([P(0.5, 0.55), P(0.5, 0.95)], fill=(40, 140, 50), width=max(1, int(W / 18)))
        for a in range(5):
            ang = a * 2 * math.pi / 5
            fx, fy = 0.5 + 0.17 * math.cos(ang), 0.38 + 0.17 * math.sin(ang)
            d.ellipse(R(fx - 0.12, fy - 0.12, fx + 0.12, fy + 0.12), fill=(240, 100, 160))
        d.ellipse(R(0.42, 0.3, 0.58, 0.46), fill=(255, 210, 50))
    elif subject == "car":
        _sky(d, box, (200, 225, 245), 0.75, (90, 90, 95))
        d.rectangle(R(0.1, 0.45, 0.9, 0.72), fill=(210, 40, 40))
        d.polygon([P(0.25, 0.45), P(0.35, 0.28), P(0.65, 0.28), P(0.75, 0.45)], fill=(190, 30, 30))
        d.ellipse(R(0.18, 0.62, 0.36, 0.8), fill=(30, 30, 30))
        d.ellipse(R(0.64, 0.62, 0.82, 0.8), fill=(30, 30, 30))
    elif subject == "boat":
        _sky(d, box, (180, 220, 250), 0.65, (30, 90, 170))
        d.polygon([P(0.15, 0.62), P(0.85, 0.62), P(0.72, 0.8), P(0.28, 0.8)], fill=(120, 70, 40))
        d.polygon([P(0.5, 0.1), P(0.5, 0.58), P(0.8, 0.58)], fill=(255, 255, 255))
    elif subject == "snowman":
        _sky(d, box, (150, 180, 220), 0.7, (250, 250, 255))
        d.ellipse(R(0.3, 0.45, 0.7, 0.9), fill=(255, 255, 255), outline=(200, 200, 210))
        d.ellipse(R(0.37, 0.2, 0.63, 0.48), fill=(255, 255, 255), outline=(200, 200, 210))
        d.polygon([P(0.5, 0.32), P(0.62, 0.35), P(0.5, 0.37)], fill=(250, 130, 20))
    elif subject == "desert":
        _sky(d, box, (250, 215, 150), 0.7, (225, 180, 100))
        d.rectangle(R(0.45, 0.3, 0.55, 0.85), fill=(40, 140, 60))
        d.rectangle(R(0.3, 0.45, 0.45, 0.52), fill=(40, 140, 60))
        d.rectangle(R(0.3, 0.35, 0.36, 0.52), fill=(40, 140, 60))
        d.rectangle(R(0.55, 0.55, 0.7, 0.62), fill=(40, 140, 60))
    elif subject == "lake":
        _sky(d, box, (190, 225, 250), 0.55, (50, 130, 190))
        d.polygon([P(0, 0.55), P(0.3, 0.2), P(0.6, 0.55)], fill=(80, 120, 80))
        d.polygon([P(0.4, 0.55), P(0.7, 0.28), P(1, 0.55)], fill=(60, 100, 70))
        d.polygon([P(0, 0.55), P(0.3, 0.8), P(0.6, 0.55)], fill=(70, 120, 150))
    elif subject == "bridge":
        _sky(d, box, (210, 230, 250), 0.7, (40, 100, 160))
        d.arc(R(0.05, 0.35, 0.95, 1.05), 180, 360, fill=(200, 60, 40), width=max(2, int(W / 12)))
        d.rectangle(R(0, 0.62, 1, 0.68), fill=(200, 60, 40))
    elif subject == "moon":
        d.rectangle(R(0, 0, 1, 1), fill=(15, 20, 50))
        d.ellipse(R(0.3, 0.2, 0.75, 0.65), fill=(250, 245, 200))
        d.ellipse(R(0.4, 0.15, 0.85, 0.6), fill=(15, 20, 50))
        for fx, fy in ((0.15, 0.2), (0.8, 0.8), (0.2, 0.75), (0.6, 0.85)):
            d.ellipse(R(fx, fy, fx + 0.04, fy + 0.04), fill=(255, 255, 255))
    elif subject == "cake":
        d.rectangle(R(0, 0, 1, 1), fill=(255, 235, 240))
        d.rectangle(R(0.2, 0.5, 0.8, 0.85), fill=(150, 90, 60))
        d.rectangle(R(0.2, 0.5, 0.8, 0.58), fill=(255, 250, 250))
        d.rectangle(R(0.47, 0.28, 0.53, 0.5), fill=(90, 160, 230))
        d.ellipse(R(0.45, 0.18, 0.55, 0.3), fill=(255, 170, 30))
    elif subject == "balloons":
        d.rectangle(R(0, 0, 1, 1), fill=(200, 235, 255))
        for fx, c in ((0.2, (230, 50, 60)), (0.45, (250, 200, 40)), (0.68, (60, 160, 230))):
            d.ellipse(R(fx, 0.15, fx + 0.2, 0.45), fill=c)
            d.line([P(fx + 0.1, 0.45), P(0.5, 0.9)], fill=(80, 80, 80), width=1)
    elif subject == "lighthouse":
        _sky(d, box, (170, 210, 245), 0.8, (40, 90, 160))
        for i in range(4):
            d.rectangle(R(0.4, 0.3 + i * 0.125, 0.6, 0.425 + i * 0.125), fill=(220, 40, 40) if i % 2 == 0 else (255, 255, 255))
        d.polygon([P(0.36, 0.3), P(0.5, 0.12), P(0.64, 0.3)], fill=(60, 60, 60))
    else:
        raise KeyError(f"unknown photo subject {subject!r}")




# ----------------------------------------------------------------------------- stickers
def _sticker(d: ImageDraw.ImageDraw, name: str, box: Box, bg: Color) -> None:
    """A label-free sticker glyph in its own colour."""
    x0, y0, x1, y1 = box
    cx, cy = (x0 + x1) / 2, (y0 + y1) / 2
    r = min(x1 - x0, y1 - y0) * 0.36
    if name == "heart":
        d.ellipse([cx - r, cy - r * 0.8, cx, cy + r * 0.1], fill=(226, 40, 70))
        d.ellipse([cx, cy - r * 0.8, cx + r, cy + r * 0.1], fill=(226, 40, 70))
        d.polygon([(cx - r * 0.97, cy - r * 0.2), (cx + r * 0.97, cy - r * 0.2), (cx, cy + r)], fill=(226, 40, 70))
    elif name == "star":
        d.polygon(_star_points(cx, cy, r), fill=(250, 190, 20))
    elif name == "sun":
        for a in range(8):
            ang = a * math.pi / 4
            d.line([(cx + r * 0.6 * math.cos(ang), cy + r * 0.6 * math.sin(ang)),
                    (cx + r * math.cos(ang), cy + r * math.sin(ang))], fill=(250, 150, 20), width=max(1, int(r / 5)))
        d.ellipse([cx - r * 0.5, cy - r * 0.5, cx + r * 0.5, cy + r * 0.5], fill=(250, 190, 20))
    elif name == "moon":
        d.ellipse([cx - r, cy - r, cx + r, cy + r], fill=(240, 210, 90))
        d.ellipse([cx - r * 0.4, cy - r * 1.1, cx + r * 1.3, cy + r * 0.6], fill=bg)
    elif name in ("smile", "sad"):
        d.ellipse([cx - r, cy - r, cx + r, cy + r], fill=(255, 205, 60))
        for dx in (-0.35, 0.35):
            d.ellipse([cx + dx * r - r * 0.1, cy - r * 0.4, cx + dx * r + r * 0.1, cy - r * 0.15], fill=(60, 40, 20))
        if name == "smile":
            d.arc([cx - r * 0.55, cy - r * 0.3, cx + r * 0.55, cy + r * 0.6], 20, 160, fill=(60, 40, 20), width=max(1, int(r / 6)))
        else:
            d.arc([cx - r * 0.5, cy + r * 0.2, cx + r * 0.5, cy + r * 0.9], 200, 340, fill=(60, 40, 20), width=max(1, int(r / 6)))
    elif name == "cloud":
        for fx, fy, fr in ((-0.45, 0.1, 0.45), (0.0, -0.2, 0.6), (0.45, 0.1, 0.45)):
            d.ellipse([cx + (fx - fr) * r, cy + (fy - fr) * r, cx + (fx + fr) * r, cy + (fy + fr) * r], fill=(150, 180, 210))
        d.rectangle([cx - 0.45 * r, cy, cx + 0.45 * r, cy + 0.55 * r], fill=(150, 180, 210))
    elif name == "bolt":
        d.polygon([(cx + r * 0.2, cy - r), (cx - r * 0.6, cy + r * 0.15), (cx - r * 0.05, cy + r * 0.15),
                   (cx - r * 0.25, cy + r), (cx + r * 0.6, cy - r * 0.2), (cx + r * 0.05, cy - r * 0.2)], fill=(250, 200, 0))
    elif name == "drop":
        d.ellipse([cx - r * 0.6, cy - r * 0.1, cx + r * 0.6, cy + r], fill=(40, 140, 230))
        d.polygon([(cx - r * 0.55, cy + r * 0.3), (cx, cy - r), (cx + r * 0.55, cy + r * 0.3)], fill=(40, 140, 230))
    elif name == "flower":
        for a in range(6):
            ang = a * math.pi / 3
            fx, fy = cx + r * 0.5 * math.cos(ang), cy + r * 0.5 * math.sin(ang)
            d.ellipse([fx - r * 0.38, fy - r * 0.38, fx + r * 0.38, fy + r * 0.38], fill=(190, 90, 220))
        d.ellipse([cx - r * 0.3, cy - r * 0.3, cx + r * 0.3, cy + r * 0.3], fill=(255, 220, 60))
    elif name == "note":
        d.ellipse([cx - r * 0.8, cy + r * 0.35, cx - r * 0.15, cy + r], fill=(60, 60, 200))
        d.rectangle([cx - r * 0.25, cy - r, cx - r * 0.1, cy + r * 0.7], fill=(60, 60, 200))
        d.polygon([(cx - r * 0.1, cy - r), (cx + r * 0.7, cy - r * 0.6), (cx - r * 0.1, cy - r * 0.3)], fill=(60, 60, 200))
    elif name == "diamond":
        d.polygon([(cx, cy - r), (cx + r * 0.75, cy), (cx, cy + r), (cx - r * 0.75, cy)], fill=(60, 200, 220))
    elif name == "fire":
        d.polygon([(cx, cy - r), (cx + r * 0.7, cy + r * 0.2), (cx + r * 0.5, cy + r), (cx - r * 0.5, cy + r),
                   (cx - r * 0.7, cy + r * 0.2)], fill=(240, 90, 20))
        d.polygon([(cx, cy - r * 0.1), (cx + r * 0.35, cy + r * 0.55), (cx, cy + r), (cx - r * 0.35, cy + r * 0.55)],
                  fill=(255, 200, 40))
    elif name == "clover":
        for fx, fy in ((0, -0.45), (0.45, 0), (0, 0.45), (-0.45, 0)):
            d.ellipse([cx + (fx - 0.42) * r, cy + (fy - 0.42) * r, cx + (fx + 0.42) * r, cy + (fy + 0.42) * r], fill=(40, 160, 70))
    elif name == "check":
        d.ellipse([cx - r, cy - r, cx + r, cy + r], fill=(40, 170, 90))
        d.line([(cx - r * 0.5, cy), (cx - r * 0.1, cy + r * 0.45), (cx + r * 0.55, cy - r * 0.4)], fill=(255, 255, 255),
               width=max(1, int(r / 4)))
    elif name == "gift":
        d.rectangle([cx - r * 0.8, cy - r * 0.3, cx + r * 0.8, cy + r], fill=(220, 50, 80))
        d.rectangle([cx - r * 0.15, cy - r * 0.3, cx + r * 0.15, cy + r], fill=(255, 210, 60))
        d.rectangle([cx - r * 0.9, cy - r * 0.55, cx + r * 0.9, cy - r * 0.25], fill=(240, 70, 100))
    elif name == "ghost":
        d.chord([cx - r * 0.7, cy - r, cx + r * 0.7, cy + r * 0.4], 180, 360, fill=(235, 235, 245), outline=(150, 150, 170))
        d.rectangle([cx - r * 0.7, cy - r * 0.3, cx + r * 0.7, cy + r * 0.9], fill=(235, 235, 245))
        for dx in (-0.25, 0.25):
            d.ellipse([cx + dx * r - r * 0.1, cy - r * 0.4, cx + dx * r + r * 0.1, cy - r * 0.15], fill=(40, 40, 60))
    else:
        raise KeyError(f"unknown sticker {name!r}")




def draw_picture(d: ImageDraw.ImageDraw, glyph: str, box: Box, fg: Color, bg: Color) -> None:
    """Draw ``glyph``: ``photo:<subject>``, ``sticker:<name>``, ``app:<key>`` or an icon name."""
    kind, _, name = glyph.partition(":")
    if kind == "photo":
        _photo(d, name, box)
    elif kind == "sticker":
        _sticker(d, name, box, bg)
    elif kind == "app":
        _app_icon(d, name, box)
    elif kind == "dot":
        x0, y0, x1, y1 = box
        r = min(x1 - x0, y1 - y0) * 0.3
        cx, cy = (x0 + x1) / 2, (y0 + y1) / 2
        d.ellipse([cx - r, cy - r, cx + r, cy + r], fill=_name_colour(name))
    else:
        draw_icon(d, glyph, box, fg, bg)


APP_COLOURS: dict[str, Color] = {
    "settings": (96, 106, 120), "messages": (40, 150, 90), "notes": (235, 180, 30), "shop": (225, 90, 40),
    "gallery": (200, 60, 140), "clock": (50, 90, 200), "camera": (70, 70, 70), "maps": (60, 160, 160),
    "music": (160, 60, 200), "weather": (90, 170, 230), "calendar": (220, 60, 60), "files": (120, 120, 60),
}
_APP_GLYPH: dict[str, str] = {
    "settings": "gear", "messages": "send", "notes": "edit", "shop": "cart", "gallery": "star_filled",
    "clock": "bell", "camera": "smiley", "maps": "search", "music": "mic", "weather": "plus",
    "calendar": "check", "files": "more",
}


def _app_icon(d: ImageDraw.ImageDraw, key: str, box: Box) -> None:
    x0, y0, x1, y1 = box
    d.rounded_rectangle([x0, y0, x1, y1], radius=(x1 - x0) * 0.25, fill=APP_COLOURS[key])
    draw_icon(d, _APP_GLYPH[key], box, (255, 255, 255), APP_COLOURS[key])


def _name_colour(name: str) -> Color:
    """A stable colour for a name (product dots), independent of Python's hash seed."""
    h = sum((i + 1) * ord(c) for i, c in enumerate(name))
    return (60 + h % 170, 60 + (h // 7) % 170, 60 + (h // 49) % 170)


# ----------------------------------------------------------------------------- screens
def render_layout(layout: "Layout", theme: Theme, width: int) -> Image.Image:
    """Draw a whole screen: status bar, widgets, then the overlay (dialog/menu) over a scrim."""
    s = width / LOGICAL_SIZE[0]
    im = Image.new("RGB", (width, 2 * width), theme.bg)
    d = ImageDraw.Draw(im)
    _status_bar(im, d, theme, s)
    for w in layout.widgets:
        _draw_widget(im, d, w, theme, s)
    if layout.overlay:
        im = Image.blend(im, Image.new("RGB", im.size, (0, 0, 0)), 0.45)
        d = ImageDraw.Draw(im)
        for w in layout.overlay:
            _draw_widget(im, d, w, theme, s)
    return im


def _status_bar(im: Image.Image, d: ImageDraw.ImageDraw, theme: Theme, s: float) -> None:
    d.rectangle([0, 0, im.width, 14 * s], fill=theme.bar)
    draw_text(im, (6 * s, 7.5 * s), "9:41", _fs(9, s), theme.text)
    d.rectangle([160 * s, 4 * s, 172 * s, 10 * s], outline=theme.text, width=1)
    d.rectangle([161 * s, 5 * s, 168 * s, 9 * s], fill=theme.text)


def _fs(size: float, s: float) -> int:
    return max(6, int(round(size * s)))


def _draw_widget(im: Image.Image, d: ImageDraw.ImageDraw, w: "Widget", t: Theme, s: float) -> None:
    """Draw one widget; its look depends on ``kind`` only (the role is for the UI tree)."""
    x0, y0, x1, y1 = (v * s for v in w.box)
    _DRAWERS[w.kind](im, d, w, t, s, (x0, y0, x1, y1))


def _d_bar(im, d, w, t, s, b):
    d.rectangle(b, fill=t.bar)


def _d_title(im, d, w, t, s, b):
    draw_text(im, (b[0], (b[1] + b[3]) / 2), w.text, _fs(13, s), t.text, width=b[2] - b[0])


def _d_text(im, d, w, t, s, b):
    style = w.style.split()
    size = _fs(12 if "big" in style else 10, s)
    anchor = "c" if "center" in style else "l"
    x = (b[0] + b[2]) / 2 if anchor == "c" else b[0]
    draw_text(im, (x, (b[1] + b[3]) / 2), w.text, size, t.subtext if "sub" in style else t.text,
              width=b[2] - b[0], anchor=anchor)


def _d_row(im, d, w, t, s, b):
    d.rectangle(b, fill=t.surface)
    d.line([(b[0], b[3] - 1), (b[2], b[3] - 1)], fill=t.divider, width=1)
    x = b[0] + 8 * s
    if w.glyph:
        size = b[3] - b[1] - 6 * s
        draw_picture(d, w.glyph, (x, b[1] + 3 * s, x + size, b[3] - 3 * s), t.subtext, t.surface)
        x += size + 6 * s
    chevron = "chevron" in w.style.split()
    right = b[2] - (18 * s if chevron else 6 * s)
    if w.sub:
        draw_text(im, (x, b[1] + (b[3] - b[1]) * 0.34), w.text, _fs(11, s), t.text, width=right - x)
        draw_text(im, (x, b[1] + (b[3] - b[1]) * 0.72), w.sub, _fs(9, s), t.subtext, width=right - x)
    else:
        draw_text(im, (x, (b[1] + b[3]) / 2), w.text, _fs(11, s), t.text, width=right - x)
    if chevron:  # this row leads somewhere
        draw_icon(d, "chevron", (b[2] - 18 * s, b[1], b[2] - 4 * s, b[3]), t.subtext, t.surface)


def _d_toggle(im, d, w, t, s, b):
    cy = (b[1] + b[3]) / 2
    tx0, tx1 = b[2] - 30 * s, b[2] - 8 * s
    d.rounded_rectangle([tx0, cy - 6 * s, tx1, cy + 6 * s], radius=6 * s, fill=t.accent if w.on else t.divider)
    kx = tx1 - 6 * s if w.on else tx0 + 6 * s
    d.ellipse([kx - 5 * s, cy - 5 * s, kx + 5 * s, cy + 5 * s], fill=(255, 255, 255))
    if w.text:  # a labelled row; a bare switch (inside a row) has no text
        d.rectangle([b[0], b[1], tx0 - 2 * s, b[3]], fill=t.surface)
        d.line([(b[0], b[3] - 1), (b[2], b[3] - 1)], fill=t.divider, width=1)
        draw_text(im, (b[0] + 8 * s, cy), w.text, _fs(11, s), t.text, width=tx0 - b[0] - 12 * s)


def _d_radio(im, d, w, t, s, b):
    cy = (b[1] + b[3]) / 2
    d.rectangle(b, fill=t.surface)
    cx = b[0] + 14 * s
    d.ellipse([cx - 5 * s, cy - 5 * s, cx + 5 * s, cy + 5 * s], outline=t.accent if w.on else t.subtext, width=max(1, int(s)))
    if w.on:
        d.ellipse([cx - 2.5 * s, cy - 2.5 * s, cx + 2.5 * s, cy + 2.5 * s], fill=t.accent)
    draw_text(im, (cx + 10 * s, cy), w.text, _fs(11, s), t.text, width=b[2] - cx - 14 * s)


def _d_button(im, d, w, t, s, b):
    filled = "flat" not in w.style.split()
    if filled:
        d.rounded_rectangle(b, radius=6 * s, fill=t.accent)
    draw_text(im, ((b[0] + b[2]) / 2, (b[1] + b[3]) / 2), w.text, _fs(11, s), t.on_accent if filled else t.accent,
              width=b[2] - b[0] - 4 * s, anchor="c")


def _d_icon(im, d, w, t, s, b):
    if "fab" in w.style.split():  # a floating action button: accent disc
        d.ellipse(b, fill=t.accent)
        draw_icon(d, w.glyph, b, t.on_accent, t.accent)
    else:
        draw_picture(d, w.glyph, b, t.text, t.bg)


def _d_field(im, d, w, t, s, b):
    d.rounded_rectangle(b, radius=4 * s, fill=t.surface, outline=t.accent if w.on else t.divider,
                        width=max(1, int(round(2 * s if w.on else s))))
    x = b[0] + 6 * s
    cy = (b[1] + b[3]) / 2
    if w.text:
        draw_text(im, (x, cy), w.text, _fs(11, s), t.text, width=b[2] - x - 6 * s)
    else:
        draw_text(im, (x, cy), w.sub, _fs(11, s), t.subtext, width=b[2] - x - 6 * s)
    if w.on:  # caret after the text
        cx = x + (font(_fs(11, s)).getlength(fit_text(w.text, _fs(11, s), int(b[2] - x - 6 * s))) if w.text else 0) + s
        d.line([(cx, cy - 6 * s), (cx, cy + 6 * s)], fill=t.accent, width=max(1, int(s)))


def _d_tab(im, d, w, t, s, b):
    d.rectangle(b, fill=t.bar)
    colour = t.accent if w.on else t.subtext
    if w.on:
        d.rectangle([b[0] + 8 * s, b[1], b[2] - 8 * s, b[1] + 3 * s], fill=t.accent)
    draw_text(im, ((b[0] + b[2]) / 2, (b[1] + b[3]) / 2 + s), w.text, _fs(10, s), colour, width=b[2] - b[0] - 2 * s, anchor="c")


def _d_cell(im, d, w, t, s, b):
    pad = 2 * s
    if w.text:  # a labelled cell (launcher, share sheet): picture above the label
        size = min(b[2] - b[0], b[3] - b[1] - 12 * s) - 2 * pad
        cx = (b[0] + b[2]) / 2
        draw_picture(d, w.glyph, (cx - size / 2, b[1] + pad, cx + size / 2, b[1] + pad + size), t.text, t.bg)
        draw_text(im, (cx, b[3] - 6 * s), w.text, _fs(9, s), t.text, width=b[2] - b[0], anchor="c")
    else:
        draw_picture(d, w.glyph, (b[0] + pad, b[1] + pad, b[2] - pad, b[3] - pad), t.text, t.surface)
    if w.on:  # selected / favourite mark
        draw_icon(d, "star_filled", (b[2] - 14 * s, b[1] + 2 * s, b[2] - 2 * s, b[1] + 14 * s), (255, 215, 0), t.bg)


def _d_bubble(im, d, w, t, s, b):
    mine = w.on
    d.rounded_rectangle(b, radius=7 * s, fill=t.accent if mine else t.surface, outline=None if mine else t.divider)
    if w.glyph:
        size = b[3] - b[1] - 4 * s
        draw_picture(d, w.glyph, (b[0] + 4 * s, b[1] + 2 * s, b[0] + 4 * s + size, b[3] - 2 * s), t.text, t.surface)
    else:
        draw_text(im, (b[0] + 6 * s, (b[1] + b[3]) / 2), w.text, _fs(10, s), t.on_accent if mine else t.text,
                  width=b[2] - b[0] - 10 * s)


def _d_panel(im, d, w, t, s, b):
    d.rounded_rectangle(b, radius=8 * s, fill=t.surface, outline=t.divider)


def _d_menu_item(im, d, w, t, s, b):
    draw_text(im, (b[0] + 10 * s, (b[1] + b[3]) / 2), w.text, _fs(11, s), t.text, width=b[2] - b[0] - 14 * s)


def _d_picture(im, d, w, t, s, b):
    draw_picture(d, w.glyph, b, t.text, t.bg)


_DRAWERS: dict[str, Callable] = {
    "bar": _d_bar, "title": _d_title, "text": _d_text, "row": _d_row, "toggle": _d_toggle, "radio": _d_radio,
    "button": _d_button, "icon": _d_icon, "field": _d_field, "tab": _d_tab, "cell": _d_cell, "bubble": _d_bubble,
    "panel": _d_panel, "menu_item": _d_menu_item, "picture": _d_picture,
}
WIDGET_KINDS: tuple[str, ...] = tuple(_DRAWERS)


# ----------------------------------------------------------------------------- figures
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
