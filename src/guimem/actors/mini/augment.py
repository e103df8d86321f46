"""Glyphs the weights cannot know: a training step's label-free icons redrawn in designs no phone
shows, and the memory image's crops of the same icons redrawn alike.

On the evaluation phone every toolbar glyph is drawn in a design no training phone shows and
carries no label, so what a bare icon does is told only by a picture of having used it: a crop in
the memory image that looks the same (the pixel-match codes point from it to the live icon). On a
training phone half of the glyphs keep their familiar drawing and the others a design of that
phone, seen in its 150 episodes: the weights learn both, the goal's words name the icon, and
the picture in memory is never needed — so behaviour cloning teaches the actor to ignore it.

:func:`novel_glyphs` makes a training step what an evaluation step is. Each label-free icon of the
live screen (a widget of role ``icon`` without words) is erased and drawn again in a fresh
arbitrary design (:func:`guimem.phone.render.primitives.draw_design`, with design numbers far above
any variant's), in its own colours; each crop of the memory image's strip that looked *the same*
as that icon before (:func:`~guimem.actors.mini.features.pixel_alike`, level 3) is redrawn in the
same fresh design, in the crop's colours. Everything else is left as it was: the words, the UI
tree, the remembered screen above the strip (whose icons are a few pixels wide in the actor's
coarse view), the memory text. The icon's function, its position and the action to take are those
of the step; only the drawing is new, so what tells it apart is the memory, as on the test phone.

The redrawing reads the world's design strokes only to draw; it needs no key of the world, and a
recorded screen's icons are redrawn the same way (its icons are those of role ``icon`` without words).
"""

from __future__ import annotations

import dataclasses
import functools
import math
from collections import Counter
from typing import Iterator, Sequence

import numpy as np
import torch
from PIL import Image, ImageDraw

from guimem.actors.mini.features import ImagePatcher, element_words, pixel_alike
from guimem.core.data import DataError, UIElement, pixel_box
from guimem.core.policy import PolicyInput
from guimem.phone.render.primitives import ICON_GLYPHS, draw_design, draw_icon
from guimem.phone.toolkit import DESIGN_OF, DESIGNED_GLYPHS
from guimem.smg.memories import crop_slots, image_layout
from guimem.train.examples import ActorExample

NOVEL_DESIGN_BASE = 1_000_000
"""Design numbers of the redrawn glyphs start here; a variant's own designs are numbered by its index."""

GLYPH_EXTENT = 0.36
"""Half the side, as a share of the icon's box, of the square around its centre a glyph is drawn in
(familiar drawings reach 0.32 of the side from the centre, the variants' designs 0.34)."""

SAME = 3  # pixel_alike's level for "the same"

FIXED_GLYPHS: tuple[str, ...] = tuple(g for g in ICON_GLYPHS if g not in DESIGNED_GLYPHS and g not in DESIGN_OF)
"""Icons every phone draws alike (back, close, ...): the weights may know them on the test phone
too, so they are never redrawn."""


def label_free_icons(elements: Sequence[UIElement]) -> list[int]:
    """Indices of the elements that are bare icons: role ``icon`` and no words (text or description)."""
    return [i for i, e in enumerate(elements) if e.role == "icon" and not element_words(e)]


def novel_glyphs(inp: PolicyInput, rng: np.random.Generator, crop_size: int = 16) -> PolicyInput:
    """``inp`` with its label-free icons, and the memory crops that showed them, redrawn in fresh
    designs (see the module docstring); ``inp`` itself when its screen has no bare icon.

    ``crop_size``: the side at which crops are compared to find a memory crop's live icon (the
    actor's own, ``ActorConfig.crop_size``). Draws from ``rng`` once per bare icon (glyph, design).
    """
    icons = label_free_icons(inp.elements)
    if not icons:
        return inp
    shot = inp.screenshot.convert("RGB")  # a copy (convert always returns a new image): redrawn in place below
    w, h = shot.size
    same: dict[int, list[int]] = {}  # icon position in ``icons`` -> memory crop slots that showed it
    slots: list[tuple[int, int, int, int]] = []
    memory = None
    if inp.memory_image is not None:
        memory = inp.memory_image.convert("RGB")  # a copy, likewise
        _, slots = image_layout(memory.size)
        patcher = ImagePatcher(max_cache=0)
        live = patcher.crops(shot, [inp.elements[i].bounds for i in icons], crop_size)
        remembered = patcher.crops(memory, crop_slots(memory.size), crop_size)
        alike = pixel_alike(live, remembered)  # [n_icons, n_slots]
        for j in range(alike.shape[1]):
            hits = (alike[:, j] == SAME).nonzero().flatten().tolist()
            if len(hits) == 1:  # a crop as like two live icons tells neither apart: left as it is
                same.setdefault(hits[0], []).append(j)
    glyphs = sorted(DESIGNED_GLYPHS)
    for k, i in enumerate(icons):
        glyph = glyphs[int(rng.integers(len(glyphs)))]
        design = NOVEL_DESIGN_BASE + int(rng.integers(NOVEL_DESIGN_BASE))
        drawn, cut = _drawn_box(inp.elements[i].bounds, w, h), pixel_box(inp.elements[i].bounds, w, h)
        if not redraw(shot, drawn, glyph, design):
            continue  # a blank icon, or one every phone draws alike: left as it is
        mask = _glyph_mask(glyph, design, drawn, cut)
        for j in same.get(k, []):
            repaint(memory, slots[j], _in_slot(drawn, cut, slots[j]), mask)
    return dataclasses.replace(inp, screenshot=shot, memory_image=memory)


def redraw(image: Image.Image, box: tuple[int, int, int, int], glyph: str, design: int) -> bool:
    """Erase the glyph drawn in ``box`` of ``image`` (in place) and draw ``glyph`` in ``design``
    there instead, in the colours the old one had (:func:`_colours`). False (nothing changed) when
    the box holds a single colour, or one of the :data:`FIXED_GLYPHS` in its familiar drawing."""
    x0, y0, x1, y1 = box
    if x1 - x0 < 2 or y1 - y0 < 2:
        raise DataError("bounds", f"an icon's box must span at least 2 x 2 pixels, got {box}")
    background, ink = _colours(image, box)
    if ink == background or fixed_glyph(image.crop(box), background, ink) is not None:
        return False
    _erase(image, box, background)
    draw_design(ImageDraw.Draw(image), glyph, design, box, ink)
    return True


def repaint(image: Image.Image, slot: tuple[int, int, int, int], box: tuple[float, float, float, float],
            mask: Image.Image) -> None:
    """Erase the glyph at ``box`` of a memory crop ``slot`` (in place) and paint ``mask`` (a glyph
    drawn at the live icon's size over its cut box) there, scaled into the slot as the strip scales
    a remembered crop (:func:`guimem.smg.memories.render.render_image`), in the slot's colours."""
    background, ink = _colours(image, box)
    if ink == background:
        return
    side = slot[2] - slot[0]
    scale = side / max(mask.size)
    fitted = mask.resize((max(1, round(mask.width * scale)), max(1, round(mask.height * scale))), Image.BILINEAR)
    _erase(image, box, background)
    image.paste(ink, (slot[0] + (side - fitted.width) // 2, slot[1] + (side - fitted.height) // 2), fitted)


def _glyph_mask(glyph: str, design: int, drawn: tuple[int, int, int, int], cut: tuple[int, int, int, int]) -> Image.Image:
    """``glyph`` in ``design`` drawn in white on black in box ``drawn``, on a canvas the size of ``cut``."""
    mask = Image.new("L", (cut[2] - cut[0], cut[3] - cut[1]), 0)
    draw_design(ImageDraw.Draw(mask), glyph, design,
                (drawn[0] - cut[0], drawn[1] - cut[1], drawn[2] - cut[0], drawn[3] - cut[1]), 255)
    return mask


def _inner(box: tuple[float, float, float, float]) -> tuple[int, int, int, int]:
    """The square around the box's centre a glyph is drawn in (:data:`GLYPH_EXTENT`), in whole pixels."""
    x0, y0, x1, y1 = box
    cx, cy, half = (x0 + x1) / 2, (y0 + y1) / 2, GLYPH_EXTENT * min(x1 - x0, y1 - y0)
    return int(cx - half), int(cy - half), math.ceil(cx + half), math.ceil(cy + half)


def _colours(image: Image.Image, box: tuple[float, float, float, float]) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """The background (the commonest colour around the box's centre) and the ink (the colour there
    farthest from it) of the glyph drawn in ``box``."""
    pixels = [tuple(p) for p in np.asarray(image.crop(_inner(box))).reshape(-1, 3).tolist()]
    background = Counter(pixels).most_common(1)[0][0]
    ink = max(set(pixels), key=lambda p: (sum((a - b) ** 2 for a, b in zip(p, background)), p))
    return background, ink


def _erase(image: Image.Image, box: tuple[float, float, float, float], background: tuple[int, ...]) -> None:
    x0, y0, x1, y1 = _inner(box)
    ImageDraw.Draw(image).rectangle((x0, y0, x1 - 1, y1 - 1), fill=background)


def fixed_glyph(icon: Image.Image, background: tuple[int, ...], ink: tuple[int, ...],
                crop_size: int = 16) -> str | None:
    """Which of the :data:`FIXED_GLYPHS` ``icon`` (an icon's box cut out of a screen) shows in its
    familiar drawing — the same as that drawing in these colours, at ``crop_size`` — else None."""
    shown = ImagePatcher(max_cache=0).crops(icon, [(0.0, 0.0, 1.0, 1.0)], crop_size)
    levels = pixel_alike(shown, _fixed_drawings(icon.size, background, ink, crop_size))[0]  # [n_fixed]
    return FIXED_GLYPHS[int(levels.argmax())] if int(levels.max()) == SAME else None


@functools.lru_cache(maxsize=256)
def _fixed_drawings(size: tuple[int, int], background: tuple[int, ...], ink: tuple[int, ...],
                    crop_size: int) -> torch.Tensor:
    """``[n_fixed, 3*crop*crop]``: each of the :data:`FIXED_GLYPHS` drawn in a box of ``size``, as crops."""
    patcher, out = ImagePatcher(max_cache=0), []
    for glyph in FIXED_GLYPHS:
        drawing = Image.new("RGB", size, background)
        draw_icon(ImageDraw.Draw(drawing), glyph, (0, 0, *size), ink, background)
        out.append(patcher.crops(drawing, [(0.0, 0.0, 1.0, 1.0)], crop_size))
    return torch.cat(out)


def _drawn_box(bounds: tuple[float, float, float, float], w: int, h: int) -> tuple[int, int, int, int]:
    """The box a widget was drawn in, in whole pixels: its bounds (the box over the screen's size, to
    four decimals) times the size, rounded."""
    x0, y0, x1, y1 = bounds
    return (round(x0 * w), round(y0 * h), max(round(x0 * w) + 1, round(x1 * w)), max(round(y0 * h) + 1, round(y1 * h)))


def _in_slot(drawn: tuple[int, int, int, int], cut: tuple[int, int, int, int],
             slot: tuple[int, int, int, int]) -> tuple[float, float, float, float]:
    """Where ``drawn`` (a live icon's box) lies in a memory crop ``slot`` that shows an icon cut along
    ``cut``: the strip fits the cut box into the slot's square, its aspect kept and centred
    (:func:`guimem.smg.memories.render.render_image`), so the glyph is redrawn where the remembered one sits."""
    cw, ch = cut[2] - cut[0], cut[3] - cut[1]
    side = slot[2] - slot[0]
    scale = side / max(cw, ch)
    fw, fh = max(1, round(cw * scale)), max(1, round(ch * scale))
    ox, oy = slot[0] + (side - fw) // 2, slot[1] + (side - fh) // 2
    return (ox + (drawn[0] - cut[0]) * scale, oy + (drawn[1] - cut[1]) * scale,
            ox + (drawn[2] - cut[0]) * scale, oy + (drawn[3] - cut[1]) * scale)


def redraw_inputs(examples: Sequence[ActorExample], share: float, seed: int,
                  crop_size: int = 16) -> Iterator[PolicyInput]:
    """Each example's input, a seeded ``share`` of them through :func:`novel_glyphs` — lazily, so
    the redrawn screens are featurised one at a time and never held together. The draw depends on
    ``seed`` and the example's position only."""
    if not 0.0 <= share <= 1.0:
        raise DataError("novel_glyphs", f"expected a share in [0, 1], got {share!r}")
    chosen = np.random.default_rng([seed, 7]).random(len(examples)) < share  # [n]
    for i, ex in enumerate(examples):
        yield novel_glyphs(ex.input, np.random.default_rng([seed, 7, i]), crop_size) if chosen[i] else ex.input
