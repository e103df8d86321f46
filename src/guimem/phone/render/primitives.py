"""Drawing primitives of the synthetic phone: text fitted to a width, and the pictures that carry no
words at all and are told apart by appearance only: icons (``ICON_GLYPHS``: gear, more, plus,
magnifier, star, trash, share, ...; each also in app variants' own designs, :func:`draw_design`), photos (``PHOTO_SUBJECTS``: beach, mountain, city, ...),
stickers (``STICKERS``: heart, sun, ...), app icons and product dots.

Every primitive is pure (the same arguments give the same pixels) and uses Pillow's bundled font
only, so screens look the same on every machine.
"""

from __future__ import annotations

import math
import random
from functools import lru_cache

from PIL import Image, ImageDraw, ImageFont

from guimem.phone.toolkit import DESIGN_OF, stable_int

Color = tuple[int, int, int]
Box = tuple[float, float, float, float]  # x0, y0, x1, y1 in output pixels


# ----------------------------------------------------------------------------- text
@lru_cache(maxsize=16)
def font(size: int) -> ImageFont.FreeTypeFont:
    """Pillow's bundled font at ``size`` pixels (no system fonts: identical everywhere)."""
    return ImageFont.load_default(size=size)


@lru_cache(maxsize=8192)
def _text_mask(text: str, size: int) -> Image.Image:
    """The text drawn once as an 8-bit mask, cached: a screen pastes it instead of drawing the glyphs again."""
    f = font(size)
    x0, y0, x1, y1 = f.getbbox(text)
    mask = Image.new("L", (max(1, x1), max(1, y1)), 0)
    ImageDraw.Draw(mask).text((0, 0), text, font=f, fill=255)
    return mask


def _most_chars(width: int) -> int:
    """How many characters of a text are ever measured against ``width`` pixels: every glyph of the
    bundled font advances the pen one pixel at least, so no more than ``width`` fit (twice that, and
    a few, leaves room for zero-width marks)."""
    return 2 * max(0, int(width)) + 8


def fit_text(text: str, size: int, width: int) -> str:
    """``text`` cut with an ellipsis so it fits in ``width`` pixels: the longest start of it that fits
    with the ellipsis after it, or the whole text when it fits as it is. Only the first
    :func:`_most_chars` characters are looked at, and the cut is found by bisection: the cost is
    bounded by ``width``, whatever the length of the text."""
    return _fit_text(text[:_most_chars(width) + 1], size, width)  # one more: a longer text never fits whole


@lru_cache(maxsize=8192)
def _fit_text(text: str, size: int, width: int) -> str:
    f = font(size)
    if len(text) <= _most_chars(width) and f.getlength(text) <= width:
        return text
    lo, hi = 0, min(len(text), _most_chars(width))  # text[:lo] fits with the ellipsis (or lo is 0)
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if f.getlength(text[:mid] + "…") <= width:
            lo = mid
        else:
            hi = mid - 1
    return text[:lo] + "…"


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
    """Draw the label-free icon ``name`` centred in ``box``: a glyph of :data:`ICON_GLYPHS` in its
    familiar drawing, or ``"<glyph>@<design>"`` in an app variant's own design (:func:`draw_design`)."""
    if "@" in name:
        glyph, _, design = name.partition("@")
        draw_design(d, glyph, int(design), box, color)
        return
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


DESIGN_SHAPES: tuple[str, ...] = ("ring", "disc", "square", "block", "triangle", "bar", "pillar", "slash", "dots",
                                  "chevron", "arc", "cross")
"""The strokes an app variant's own glyph designs are composed of (:func:`draw_design`)."""


def design_strokes(glyph: str, design: int) -> list[tuple[str, float, float, float]]:
    """The strokes of ``glyph`` in design ``design``: 2 or 3 (shape, x, y, size) with the centre in
    units of the icon's radius, the same on every machine. Each design is its own arbitrary mark,
    as a maker's icon set is: nothing in it says what it does, and no two designs of one glyph coincide."""
    rng = random.Random(stable_int("design", DESIGN_OF.get(glyph, glyph), design))
    cells = rng.sample([(-0.5, -0.5), (0.5, -0.5), (-0.5, 0.5), (0.5, 0.5), (0.0, 0.0)], rng.choice((2, 3)))
    shapes = rng.sample(DESIGN_SHAPES, len(cells))
    return [(shape, x, y, rng.choice((0.4, 0.5))) for shape, (x, y) in zip(shapes, cells)]


def draw_design(d: ImageDraw.ImageDraw, glyph: str, design: int, box: Box, color: Color) -> None:
    """Draw ``glyph`` in an app variant's own design (:func:`design_strokes`) centred in ``box``; a
    filled glyph (``star_filled``: the favourite, set) fills the outlined strokes of its design."""
    x0, y0, x1, y1 = box
    cx, cy = (x0 + x1) / 2, (y0 + y1) / 2
    r = min(x1 - x0, y1 - y0) * 0.34
    w = max(1, int(round(r / 4.5)))
    filled = glyph in FILLED_GLYPHS
    for shape, sx, sy, size in design_strokes(glyph, design):
        px, py, q = cx + sx * r, cy + sy * r, size * r
        rect = [px - q, py - q, px + q, py + q]
        if shape in ("ring", "disc"):
            d.ellipse(rect, fill=color if shape == "disc" or filled else None, outline=color, width=w)
        elif shape in ("square", "block"):
            d.rectangle(rect, fill=color if shape == "block" or filled else None, outline=color, width=w)
        elif shape == "triangle":
            pts = [(px, py - q), (px + q, py + q), (px - q, py + q)]
            d.polygon(pts, fill=color) if filled else d.polygon(pts, outline=color, width=w)
        elif shape == "bar":
            _line(d, [(px - q, py), (px + q, py)], color, w + 1)
        elif shape == "pillar":
            _line(d, [(px, py - q), (px, py + q)], color, w + 1)
        elif shape == "slash":
            _line(d, [(px - q, py + q), (px + q, py - q)], color, w + 1)
        elif shape == "dots":
            for dx in (-0.6, 0.6):
                d.ellipse([px + dx * q - w, py - w, px + dx * q + w, py + w], fill=color)
        elif shape == "chevron":
            _line(d, [(px - q, py - q * 0.6), (px, py + q * 0.6), (px + q, py - q * 0.6)], color, w)
        elif shape == "arc":
            d.arc(rect, 200, 340, fill=color, width=w + 1)
        elif shape == "cross":
            _line(d, [(px - q, py - q), (px + q, py + q)], color, w)
            _line(d, [(px - q, py + q), (px + q, py - q)], color, w)


FILLED_GLYPHS = frozenset({"star_filled"})
"""Glyphs whose design is drawn filled: a state of another glyph (:data:`guimem.phone.toolkit.DESIGN_OF`)."""

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
