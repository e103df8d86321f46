"""Drawing whole screens: the themes, and each widget kind drawn from its box, text, glyph and state.

A screen is laid out by :mod:`guimem.phone.apps` in *logical* pixels on a 180 x 360 canvas
(``LOGICAL_SIZE``) and drawn here at any width with the same 1:2 aspect ratio. Drawing is
pure: the same :class:`~guimem.phone.toolkit.Layout` and width always give the same pixels, so the
world can cache images by layout.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Callable

from PIL import Image, ImageDraw

from guimem.phone.catalogue import LOGICAL_SIZE
from guimem.phone.render.primitives import Color, draw_icon, draw_picture, draw_text, fit_text, font

if TYPE_CHECKING:  # pragma: no cover
    from guimem.phone.toolkit import Layout, Widget


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
