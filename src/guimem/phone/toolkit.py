"""The synthetic phone's UI toolkit: screens as widget layouts, and the operations behind them.

A screen is a :class:`Layout`: a tuple of :class:`Widget` (each with a logical-pixel box
on the 180 x 360 canvas, a look, and the *command* a tap or long press runs) plus an
optional overlay (menu, dialog, popup) that blocks what is under it. Apps build layouts
from the phone's hidden :class:`PhoneState` and never draw pixels themselves
(:mod:`guimem.phone.render` does).

Commands are plain tuples run by :class:`guimem.phone.world.World`:

=================  ==========================================================
``("push", s, a)``  open screen ``s`` with argument ``a`` on top of the stack
``("tab", s)``      replace the stack by screen ``s`` (bottom tabs)
``("back",)``       the back button
``("overlay", o, a)`` open menu/dialog ``o`` with argument ``a``
``("close",)``      close the overlay
``("focus", f)``    focus the text field ``f``
``("op", name, *a)`` an app operation that changes data (``App.operations[name]``)
``("open", app)``   open an app (launcher icons)
``("dismiss",)``    dismiss the interrupting popup
``("accept",)``     accept the popup: it leads to a dead end
``("noop",)``       clickable, does nothing useful
=================  ==========================================================

Apps (:class:`guimem.phone.apps.base.App`) build their screens with the :class:`Builder`.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import random
import re
from dataclasses import dataclass, field
from typing import Any, Sequence, TypeVar

from guimem.phone.catalogue import LOGICAL_SIZE

T = TypeVar("T")
Cmd = tuple  # a command tuple, see the module docstring
LBox = tuple[int, int, int, int]  # x0, y0, x1, y1 in logical pixels

W, H = LOGICAL_SIZE
BAR_TOP, CONTENT_TOP, TABS_TOP = 14, 44, 328  # status bar above BAR_TOP; bottom tabs from TABS_TOP
ROW_H = 28  # default list row height

ROLES: dict[str, str] = {
    "title": "text", "text": "text", "row": "list_item", "toggle": "toggle", "radio": "radio",
    "button": "button", "icon": "icon", "field": "field", "tab": "tab", "cell": "grid_cell",
    "bubble": "text", "panel": "dialog", "menu_item": "menu_item", "picture": "image",
}
"""UI-tree role of each widget kind; kinds not listed (``bar``) are decoration, not in the tree."""


def slug(text: str) -> str:
    """A stable id fragment: ``'Wi-Fi'`` -> ``'wi_fi'``, ``'7:30'`` -> ``'7_30'``."""
    return re.sub(r"[^a-z0-9]+", "_", text.lower()).strip("_")


def stable_int(*parts: Any) -> int:
    """A 64-bit integer from ``parts`` that does not depend on Python's hash seed."""
    return int.from_bytes(hashlib.sha256(repr(parts).encode()).digest()[:8], "big")


# ----------------------------------------------------------------------------- widgets
@dataclass(frozen=True)
class Widget:
    """One thing on screen: how it looks (``kind``, text, glyph) and what touching it does."""

    id: str
    kind: str  # a renderer kind, see guimem.phone.render.WIDGET_KINDS
    box: LBox
    text: str = ""
    sub: str = ""  # secondary text (row subtitle, field hint)
    glyph: str = ""  # icon / photo / sticker name
    on: bool = False  # state: toggle on, radio selected, field focused, tab selected, cell starred
    style: str = ""  # presentation words: big, sub, center (text); flat (button); chevron (row); fab (icon)
    tap: Cmd = ()  # command on tap; () = not clickable
    long: Cmd = ()  # command on long press
    desc: str = ""  # accessibility description

    @property
    def clickable(self) -> bool:
        return bool(self.tap or self.long)

    def contains(self, x: float, y: float) -> bool:
        """Whether the logical point (x, y) lies inside the box (edges included)."""
        x0, y0, x1, y1 = self.box
        return x0 <= x <= x1 and y0 <= y <= y1


@dataclass(frozen=True)
class Layout:
    """A whole screen: base widgets, an optional overlay, and the scroll region."""

    screen: str  # true screen type, e.g. "notes/display" (analysis only)
    widgets: tuple[Widget, ...]
    overlay: tuple[Widget, ...] = ()
    modal: bool = False  # a tap outside a modal overlay does nothing; outside a menu it closes it
    scroll_box: LBox | None = None
    scroll_max: int = 0  # largest scroll offset (rows) of the scroll region
    scroll_step: int = ROW_H  # logical pixels per scrolled row
    offscreen: tuple[tuple[str, int], ...] = ()  # (widget id, -1 above / +1 below) of list entries not shown

    def active(self) -> tuple[Widget, ...]:
        """The widgets a touch can reach: the overlay when there is one, else the base."""
        return self.overlay if self.overlay else self.widgets

    def find(self, wid: str) -> Widget | None:
        """The reachable widget with id ``wid``, or None."""
        return next((w for w in self.active() if w.id == wid), None)

    def hit(self, x: float, y: float) -> Widget | None:
        """The topmost reachable clickable widget under the logical point (x, y)."""
        for w in reversed(self.active()):
            if w.clickable and w.contains(x, y):
                return w
        return None


@dataclass(frozen=True)
class Entry:
    """A list or grid entry before placement; ``trail`` holds controls at its right end."""

    id: str
    text: str = ""
    kind: str = "row"  # row, toggle, radio, cell
    sub: str = ""
    glyph: str = ""
    on: bool = False
    tap: Cmd = ()
    long: Cmd = ()
    chevron: bool = False  # rows: draw a chevron (leads to another screen)
    trail: tuple[tuple[str, str, bool, Cmd], ...] = ()  # (id, glyph or "switch", on, tap)
    desc: str = ""


# ----------------------------------------------------------------------------- state
@dataclass
class Page:
    """One entry of an app's navigation stack."""

    screen: str
    arg: str = ""
    scroll: int = 0  # rows scrolled in the page's list or grid
    fields: dict[str, str] = field(default_factory=dict)  # text field id -> content
    focus: str = ""  # focused field id
    note: str = ""  # transient message, e.g. "Added to cart"


@dataclass(frozen=True)
class AppVariant:
    """How one variant of an app differs from its reference design (variant 0 differs in nothing).

    The same app differs between phone makers and versions; these are the differences the
    built-in phone models (drawn by :func:`guimem.phone.variants.app_variant`):

    * ``words``: synonyms in the app's own labels (``"Dark mode"`` is ``"Night mode"`` here);
    * ``labelled``: toolbar glyphs that carry an accessibility label here (elsewhere they are
      label-free icons that only their picture tells apart);
    * ``settings_entry``: where the app's settings open from, the overflow (⋮) menu or a gear
      icon in the top bar;
    * ``moved``: switches that sit on another settings page than in the reference design;
    * ``order_seed``: the order of menus, tabs and dialog buttons (None: the reference order);
    * ``designs``: toolbar glyphs drawn in a design of this variant's own (elsewhere the familiar
      drawing); a widget then carries the glyph as ``"<glyph>@<variant>"``.
    """

    app: str
    index: int = 0
    words: tuple[tuple[str, str], ...] = ()  # (canonical label, this variant's label)
    labelled: frozenset[str] = frozenset()  # toolbar glyphs with an accessibility label
    settings_entry: str = "overflow"  # "overflow" or "toolbar"
    moved: tuple[tuple[str, str], ...] = ()  # (switch key, settings screen name it sits on here)
    order_seed: int | None = None
    designs: tuple[tuple[str, int], ...] = ()  # (glyph, design): drawn in a design of its own here

    @functools.cached_property
    def _words(self) -> dict[str, str]:
        return dict(self.words)

    @functools.cached_property
    def _designs(self) -> dict[str, int]:
        return dict(self.designs)

    def draw(self, glyph: str) -> str:
        """The glyph as this variant draws it: ``"search@3"`` in design 3, else ``glyph`` itself."""
        design = self._designs.get(DESIGN_OF.get(glyph, glyph))
        return f"{glyph}@{design}" if design is not None else glyph

    def say(self, label: str) -> str:
        """This variant's word for the reference label ``label`` (unchanged when it has none)."""
        return self._words.get(label, label)

    def to_dict(self) -> dict[str, Any]:
        return {"app": self.app, "index": self.index, "words": dict(self.words), "labelled": sorted(self.labelled),
                "settings_entry": self.settings_entry, "moved": dict(self.moved), "designs": dict(self.designs)}


REFERENCE = AppVariant("")
"""The reference design of every app (variant 0)."""


@dataclass
class PhoneState:
    """The whole hidden state of the phone for one episode."""

    app: str  # "launcher" or an app key
    stack: list[Page]
    data: dict[str, dict]  # per-app data, plain JSON-like values
    accent: str  # theme accent colour of this episode
    shuffle_seed: int | None  # None: no layout shuffles
    overlay: tuple[str, str] | None = None  # (overlay id, argument)
    popup: str | None = None  # interrupting popup kind shown now
    variants: dict[str, AppVariant] = field(default_factory=dict)  # app key -> its variant on this phone

    @property
    def page(self) -> Page:
        return self.stack[-1]

    def variant(self, app: str) -> AppVariant:
        """The variant of ``app`` installed on this phone (the reference design if none is set)."""
        return self.variants.get(app, REFERENCE)


@dataclass(frozen=True)
class View:
    """What a screen builder reads: the app's data, the page, and the episode's shuffles."""

    state: PhoneState
    app: str
    page: Page

    @property
    def data(self) -> dict:
        return self.state.data[self.app]

    @property
    def variant(self) -> AppVariant:
        return self.state.variant(self.app)

    def perm(self, key: str, items: Sequence[T]) -> list[T]:
        """``items`` in their order for ``key``: the app variant's for chrome (menus, tabs, dialog
        buttons: :data:`CHROME_KEYS`), this episode's for lists and icon toolbars (:data:`EPISODE_KEYS`;
        unchanged when shuffles are off)."""
        items = list(items)
        seed = self.variant.order_seed if key.split(":")[0] in CHROME_KEYS else self.state.shuffle_seed
        if seed is None:
            return items
        random.Random(stable_int(seed, self.app, key)).shuffle(items)
        return items

    def flip(self, key: str) -> bool:
        """The coin for binary layout choices (which side the FAB sits): the app variant's, or this
        episode's for a key of :data:`EPISODE_KEYS`."""
        seed = self.state.shuffle_seed if key in EPISODE_KEYS else self.variant.order_seed
        return seed is not None and stable_int(seed, self.app, key) % 2 == 1


CHROME_KEYS = frozenset({
    "tabs", "overflow", "more", "item_menu", "trash_menu", "thread_menu", "chat_menu", "alarm_menu", "viewer_more",
    "confirm", "form", "app_info", "trash_item"})
"""Order keys fixed by the app variant (its design); every other key is shuffled per episode."""

EPISODE_KEYS = frozenset({"toolbar", "view_toolbar", "product_toolbar", "viewer_toolbar", "edit_toolbar", "composer",
                          "fab"})
"""The icon toolbars (and the FAB's side): reordered per episode, so "the bare icon at top right"
does not carry from one episode to the next while the glyph does."""

TRANSLATED_KINDS = frozenset({"title", "text", "row", "toggle", "button", "tab", "menu_item"})
"""Widget kinds whose text is the app's own wording (a variant's synonyms apply); others show content."""

GLYPH_WORDS: dict[str, str] = {
    "search": "Search", "more": "More options", "plus": "Add", "gear": "Settings", "star": "Favourite",
    "star_filled": "Favourite", "trash": "Delete", "edit": "Edit", "share": "Share", "cart": "Cart", "send": "Send",
    "check": "Save", "smiley": "Stickers"}
"""The accessibility label a toolbar glyph carries in variants that label it."""

DESIGN_OF: dict[str, str] = {"star_filled": "star"}
"""Glyphs drawn as another's design (a filled star is the favourite's design, filled)."""

DESIGNED_GLYPHS: frozenset[str] = frozenset(g for g in GLYPH_WORDS if g not in DESIGN_OF)
"""The toolbar functions a variant may draw in a design of its own (:func:`guimem.phone.variants.app_variant`)."""


# ----------------------------------------------------------------------------- builder
class Builder:
    """Places widgets top to bottom; lists and grids scroll by whole rows."""

    def __init__(self, screen: str, page: Page | None, variant: AppVariant = REFERENCE):
        self.screen, self.page, self.variant = screen, page, variant
        self.widgets: list[Widget] = []
        self.overlay: list[Widget] = []
        self.modal = False
        self.scroll_box: LBox | None = None
        self.scroll_max = 0
        self.scroll_step = ROW_H
        self.offscreen: list[tuple[str, int]] = []
        self.y = CONTENT_TOP  # next free y of the content area
        self.bottom = H  # bottom of the content area

    def add(self, w: Widget) -> Widget:
        self.widgets.append(w)
        return w

    def layout(self) -> Layout:
        """The screen, in this app variant's words."""
        return Layout(self.screen, self._say(self.widgets), self._say(self.overlay), self.modal, self.scroll_box,
                      self.scroll_max, self.scroll_step, tuple(self.offscreen))

    def _say(self, widgets: Sequence[Widget]) -> tuple[Widget, ...]:
        variant = self.variant
        if variant.designs:
            widgets = [dataclasses.replace(w, glyph=variant.draw(w.glyph)) if w.kind == "icon" and w.glyph else w
                       for w in widgets]
        if not variant.words:
            return tuple(widgets)
        say = variant.say
        return tuple(dataclasses.replace(w, text=say(w.text), sub=say(w.sub),
                                         desc=say(w.desc) if w.kind != "toggle" else w.desc)
                     if w.kind in TRANSLATED_KINDS and (say(w.text) != w.text or say(w.sub) != w.sub) else w
                     for w in widgets)

    # -- bars
    def topbar(self, title: str, back: bool = True, icons: Sequence[tuple[str, str, Cmd]] = ()) -> None:
        """Top bar: a back arrow (not on root screens), the title, label-free icons at the right."""
        self.add(Widget("bar", "bar", (0, BAR_TOP, W, CONTENT_TOP)))
        x = 4
        if back:
            self.add(Widget("nav:back", "icon", (2, BAR_TOP + 2, 28, CONTENT_TOP - 2), glyph="back", tap=("back",)))
            x = 32
        right = W - 2 - 26 * len(icons)
        self.add(Widget("title", "title", (x, BAR_TOP + 4, max(x + 10, right - 2), CONTENT_TOP - 4), text=title))
        labelled = self.variant.labelled
        for i, (glyph, wid, cmd) in enumerate(icons):
            x0 = right + 26 * i
            self.add(Widget(wid, "icon", (x0, BAR_TOP + 2, x0 + 26, CONTENT_TOP - 2), glyph=glyph, tap=cmd,
                            desc=GLYPH_WORDS.get(glyph, "") if glyph in labelled else ""))

    def tabs(self, tabs: Sequence[tuple[str, str]], current: str) -> None:
        """Bottom tabs: (label, screen) pairs; the content area ends above them."""
        n = len(tabs)
        for i, (label, screen) in enumerate(tabs):
            x0, x1 = i * W // n, (i + 1) * W // n
            self.add(Widget(f"tab:{slug(label)}", "tab", (x0, TABS_TOP, x1, H), text=label, on=screen == current,
                            tap=("tab", screen)))
        self.bottom = TABS_TOP

    def fab(self, glyph: str, wid: str, cmd: Cmd, left: bool = False) -> None:
        """A floating round action button at the bottom right (or left)."""
        x0 = 12 if left else W - 52
        self.add(Widget(wid, "icon", (x0, self.bottom - 52, x0 + 40, self.bottom - 12), glyph=glyph, style="fab", tap=cmd,
                        desc=GLYPH_WORDS.get(glyph, "") if glyph in self.variant.labelled else ""))

    # -- content
    def text(self, text: str, h: int = 18, style: str = "", big: bool = False) -> None:
        """A line of plain text (style 'sub' for secondary, 'center' to centre it)."""
        words = " ".join(w for w in (style, "big" if big else "") if w)
        self.add(Widget(f"text:{len(self.widgets)}", "text", (8, self.y, W - 8, self.y + h), text=text, style=words))
        self.y += h

    def field(self, wid: str, hint: str, h: int = 26, x0: int = 8, x1: int = W - 8) -> None:
        """A text field showing its content (or its hint); tapping focuses it."""
        page = self.page
        self.add(Widget(wid, "field", (x0, self.y + 3, x1, self.y + h), text=page.fields.get(wid, ""), sub=hint,
                        on=page.focus == wid, tap=("focus", wid), desc=hint))
        self.y += h + 4

    def button(self, wid: str, label: str, cmd: Cmd, flat: bool = False, w: int = 120) -> None:
        """A labelled button, centred."""
        x0 = (W - w) // 2
        self.add(Widget(wid, "button", (x0, self.y + 4, x0 + w, self.y + 30), text=label, style="flat" if flat else "",
                        tap=cmd))
        self.y += 34

    def picture(self, glyph: str, h: int) -> None:
        """A big label-free picture (a photo, a product)."""
        self.add(Widget("picture", "picture", (10, self.y + 4, W - 10, self.y + h), glyph=glyph))
        self.y += h + 6

    def _region(self, n_rows: int, row_h: int, bottom: int | None) -> tuple[int, int, int]:
        """Claim the scroll region; returns (top, first visible row, visible rows)."""
        assert self.scroll_box is None, "one scroll region per screen"
        top, bottom = self.y, bottom or self.bottom
        visible = max(1, (bottom - top) // row_h)
        self.scroll_max = max(0, n_rows - visible)
        first = min(self.page.scroll if self.page else 0, self.scroll_max)
        self.scroll_box = (0, top, W, bottom)
        self.scroll_step = row_h
        self.y = top + min(n_rows, visible) * row_h
        return top, first, visible

    def rows(self, entries: Sequence[Entry], row_h: int = ROW_H, bottom: int | None = None) -> None:
        """A vertical list; entries outside the viewport are recorded in ``offscreen``."""
        top, first, visible = self._region(len(entries), row_h, bottom)
        for i, e in enumerate(entries):
            ids = [e.id] + [t[0] for t in e.trail]
            if not first <= i < first + visible:
                self.offscreen += [(wid, -1 if i < first else 1) for wid in ids]
                continue
            y = top + (i - first) * row_h
            desc = e.desc or (("on" if e.on else "off") if e.kind == "toggle" else e.sub)
            self.add(Widget(e.id, e.kind, (0, y, W, y + row_h), text=e.text, sub=e.sub, glyph=e.glyph,
                            on=e.on, style="chevron" if e.chevron else "", tap=e.tap, long=e.long, desc=desc))
            x1 = W
            for wid, glyph, on, cmd in reversed(e.trail):
                if glyph == "switch":
                    self.add(Widget(wid, "toggle", (x1 - 40, y, x1, y + row_h), on=on, tap=cmd, desc="on" if on else "off"))
                    x1 -= 40
                else:
                    self.add(Widget(wid, "icon", (x1 - 28, y + (row_h - 26) // 2, x1 - 2, y + (row_h + 26) // 2),
                                    glyph=glyph, tap=cmd))
                    x1 -= 28

    def grid(self, cells: Sequence[Entry], cols: int, cell_h: int, bottom: int | None = None) -> None:
        """A grid of cells, ``cols`` per row, scrolling by rows of cells."""
        n_rows = (len(cells) + cols - 1) // cols
        top, first, visible = self._region(n_rows, cell_h, bottom)
        cw = (W - 8) // cols
        for i, e in enumerate(cells):
            r, c = divmod(i, cols)
            if not first <= r < first + visible:
                self.offscreen.append((e.id, -1 if r < first else 1))
                continue
            x0, y0 = 4 + c * cw, top + (r - first) * cell_h
            self.add(Widget(e.id, "cell", (x0, y0, x0 + cw, y0 + cell_h), text=e.text, glyph=e.glyph, on=e.on,
                            tap=e.tap, long=e.long, desc=e.desc))

    # -- overlays
    def menu(self, entries: Sequence[tuple[str, str, Cmd]], top: int = CONTENT_TOP - 6) -> None:
        """A non-modal popup menu at the top right: (label, id, command) entries."""
        x0, h = 84, 26
        self.overlay.append(Widget("menu", "panel", (x0, top, W - 4, top + 6 + h * len(entries))))
        for i, (label, wid, cmd) in enumerate(entries):
            y = top + 3 + h * i
            self.overlay.append(Widget(wid, "menu_item", (x0, y, W - 4, y + h), text=label, tap=cmd))

    def dialog(self, title: str, body: str, buttons: Sequence[tuple[str, str, Cmd]],
               options: Sequence[tuple[str, str, bool, Cmd]] = (), close: Cmd | None = None) -> None:
        """A modal dialog: title, body text, radio ``options``, buttons (label, id, command)."""
        h = 30 + (18 if body else 0) + 26 * len(options) + (34 if buttons else 8)
        y0 = (H - h) // 2
        self.modal = True
        self.overlay.append(Widget("dialog", "panel", (14, y0, W - 14, y0 + h)))
        self.overlay.append(Widget("dialog:title", "text", (24, y0 + 8, W - 40, y0 + 26), text=title, style="big"))
        if close is not None:
            self.overlay.append(Widget("icon:close", "icon", (W - 40, y0 + 4, W - 16, y0 + 28), glyph="close", tap=close))
        y = y0 + 30
        if body:
            self.overlay.append(Widget("dialog:body", "text", (24, y, W - 22, y + 16), text=body, style="sub"))
            y += 18
        for label, wid, on, cmd in options:
            self.overlay.append(Widget(wid, "radio", (16, y, W - 16, y + 26), text=label, on=on, tap=cmd))
            y += 26
        bw = (W - 44) // max(1, len(buttons))
        for i, (label, wid, cmd) in enumerate(buttons):
            x0 = 22 + i * bw
            self.overlay.append(Widget(wid, "button", (x0, y + 2, x0 + bw - 4, y + 28), text=label, style="flat", tap=cmd))

    def sheet(self, title: str, cells: Sequence[tuple[str, str, str, Cmd]]) -> None:
        """A non-modal bottom sheet with a grid of labelled cells (label, id, glyph, command)."""
        rows = (len(cells) + 3) // 4
        y0 = H - 34 - 62 * rows
        self.overlay.append(Widget("sheet", "panel", (0, y0, W, H)))
        self.overlay.append(Widget("sheet:title", "text", (12, y0 + 6, W - 12, y0 + 26), text=title, style="big"))
        for i, (label, wid, glyph, cmd) in enumerate(cells):
            r, c = divmod(i, 4)
            x0, y = 6 + c * 42, y0 + 30 + r * 62
            self.overlay.append(Widget(wid, "cell", (x0, y, x0 + 42, y + 58), text=label, glyph=glyph, tap=cmd))
