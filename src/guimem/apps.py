"""The apps of the synthetic phone: screens as widget layouts, and the operations behind them.

A screen is a :class:`Layout`: a tuple of :class:`Widget` (each with a logical-pixel box
on the 180 x 360 canvas, a look, and the *command* a tap or long press runs) plus an
optional overlay (menu, dialog, popup) that blocks what is under it. Apps build layouts
from the phone's hidden :class:`PhoneState` and never draw pixels themselves
(:mod:`guimem.render` does).

Commands are plain tuples run by :class:`guimem.world.World`:

=================  ==========================================================
``("push", s, a)``  open screen ``s`` with argument ``a`` on top of the stack
``("tab", s)``      replace the stack by screen ``s`` (bottom tabs)
``("back",)``       the back button
``("overlay", o, a)`` open menu/dialog ``o`` with argument ``a``
``("close",)``      close the overlay
``("focus", f)``    focus the text field ``f``
``("op", name, *a)`` an app operation that changes data (``App.op_<name>``)
``("open", app)``   open an app (launcher icons)
``("dismiss",)``    dismiss the interrupting popup
``("accept",)``     accept the popup: it leads to a dead end
``("noop",)``       clickable, does nothing useful
=================  ==========================================================

Every app has at least 8 screen types (``App.screens``), a dead-end ``info`` screen, an
overflow or tab path to its settings, and per-episode layout shuffles (``View.perm``).
"""

from __future__ import annotations

import hashlib
import random
import re
from dataclasses import dataclass, field
from typing import Any, Callable, Sequence, TypeVar

from guimem.render import LOGICAL_SIZE, PHOTO_SUBJECTS, STICKERS

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
    kind: str  # a renderer kind, see guimem.render.WIDGET_KINDS
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

    @property
    def page(self) -> Page:
        return self.stack[-1]


@dataclass(frozen=True)
class View:
    """What a screen builder reads: the app's data, the page, and the episode's shuffles."""

    state: PhoneState
    app: str
    page: Page

    @property
    def data(self) -> dict:
        return self.state.data[self.app]

    def perm(self, key: str, items: Sequence[T]) -> list[T]:
        """``items`` in this episode's order for ``key`` (unchanged when shuffles are off)."""
        items = list(items)
        if self.state.shuffle_seed is None:
            return items
        random.Random(stable_int(self.state.shuffle_seed, self.app, key)).shuffle(items)
        return items

    def flip(self, key: str) -> bool:
        """A per-episode coin for binary layout choices (e.g. which side the FAB sits)."""
        return self.state.shuffle_seed is not None and stable_int(self.state.shuffle_seed, self.app, key) % 2 == 1


# ----------------------------------------------------------------------------- builder
class Builder:
    """Places widgets top to bottom; lists and grids scroll by whole rows."""

    def __init__(self, screen: str, page: Page | None):
        self.screen, self.page = screen, page
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
        return Layout(self.screen, tuple(self.widgets), tuple(self.overlay), self.modal, self.scroll_box,
                      self.scroll_max, self.scroll_step, tuple(self.offscreen))

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
        for i, (glyph, wid, cmd) in enumerate(icons):
            x0 = right + 26 * i
            self.add(Widget(wid, "icon", (x0, BAR_TOP + 2, x0 + 26, CONTENT_TOP - 2), glyph=glyph, tap=cmd))

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
        self.add(Widget(wid, "icon", (x0, self.bottom - 52, x0 + 40, self.bottom - 12), glyph=glyph, style="fab", tap=cmd))

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


# ----------------------------------------------------------------------------- apps
class App:
    """An app: its screens (``s_<name>``), overlays (``o_<name>``) and data operations (``op_<name>``)."""

    key: str = ""
    name: str = ""
    root: str = ""  # screen shown when the app opens
    screens: tuple[str, ...] = ()  # every base screen type (without the "<key>/" prefix)
    overlays: tuple[str, ...] = ()  # every overlay type
    search_screens: frozenset[str] = frozenset()  # screens whose search field is focused on entry
    dark_key: str = "dark_mode"  # the pref that switches this app to the dark theme

    # -- data
    def init_data(self, rng: random.Random) -> dict:
        """Fresh content for one episode (drawn from ``rng``)."""
        raise NotImplementedError

    def dark(self, state: PhoneState) -> bool:
        return bool(state.data[self.key]["prefs"].get(self.dark_key, False))

    # -- navigation
    def new_page(self, screen: str, arg: str, state: PhoneState) -> Page:
        """A page for ``screen``; search screens start with their field focused."""
        page = Page(screen, arg)
        if screen.split("/", 1)[1] in self.search_screens:
            page.focus = "field:search"
        self.on_push(page, state)
        return page

    def on_push(self, page: Page, state: PhoneState) -> None:
        """Prefill a new page's fields (editors)."""

    def on_enter(self, state: PhoneState) -> None:
        """The enter key: submits a focused search field."""
        page = state.page
        if page.focus == "field:search":
            page.fields["query"] = page.fields.get("field:search", "")
            page.scroll = 0

    # -- building
    def build(self, state: PhoneState) -> Builder:
        """The layout builder of the current page (overlays are added by the world)."""
        page = state.page
        name = page.screen.split("/", 1)[1]
        b = Builder(page.screen, page)
        getattr(self, f"s_{name}")(b, View(state, self.key, page))
        return b

    def build_overlay(self, b: Builder, state: PhoneState, oid: str, arg: str) -> None:
        getattr(self, f"o_{oid.split('/', 1)[1]}")(b, View(state, self.key, state.page), arg)

    # -- shared pieces
    def s_info(self, b: Builder, v: View) -> None:
        """A dead end: a page with nothing useful on it."""
        b.topbar(v.page.arg or "About")
        b.text(f"{self.name} · {v.page.arg}", big=True)
        for line in ("Nothing to change here.", "Version 4.2.1", "Go back to continue."):
            b.text(line, style="sub")

    def toggle_entries(self, v: View, items: Sequence[tuple[str, str]], where: str = "prefs") -> list[Entry]:
        """Labelled toggles (key, label) bound to ``data[where][key]``, in this episode's order."""
        values = v.data[where]
        return [Entry(f"toggle:{slug(k)}", label, kind="toggle", on=bool(values[k]), tap=("op", "toggle", where, k))
                for k, label in v.perm(f"toggles:{v.page.screen}", items)]

    def toggles(self, b: Builder, v: View, items: Sequence[tuple[str, str]], where: str = "prefs") -> None:
        """A list of labelled toggles, see :meth:`toggle_entries`."""
        b.rows(self.toggle_entries(v, items, where))

    def nav_rows(self, b: Builder, v: View, items: Sequence[tuple[str, str, Cmd]], row_h: int = ROW_H) -> None:
        """Rows leading elsewhere (label, id, command), shuffled per episode."""
        b.rows([Entry(wid, label, tap=cmd, chevron=True) for label, wid, cmd in v.perm(f"rows:{v.page.screen}", items)],
               row_h=row_h)

    def op_toggle(self, state: PhoneState, where: str, key: str) -> None:
        d = state.data[self.key][where]
        d[key] = not d[key]

    def pop_to(self, state: PhoneState, screen: str) -> None:
        """Pop pages until ``screen`` is on top (or only the root is left)."""
        while len(state.stack) > 1 and state.page.screen != screen:
            state.stack.pop()


def _info(app: str, topic: str) -> Cmd:
    return ("push", f"{app}/info", topic)


# ============================================================================= Settings
RINGTONES = ("Chime", "Bells", "Breeze", "Crystal", "Echo", "Harp", "Marimba", "Orbit", "Pulse", "Ripple",
             "Signal", "Zen")
FONT_SIZES = ("Small", "Default", "Large", "Largest")
OTHER_APPS = ("Calendar", "Camera", "Maps", "Music", "Weather")
SETTING_INDEX: dict[str, tuple[str, str, str]] = {  # label -> (pref key, screen, section label)
    "Wi-Fi": ("wifi", "settings/network", "Network & internet"),
    "Bluetooth": ("bluetooth", "settings/network", "Network & internet"),
    "Airplane mode": ("airplane", "settings/network", "Network & internet"),
    "Dark theme": ("dark_theme", "settings/display", "Display"),
    "Auto-rotate": ("auto_rotate", "settings/display", "Display"),
    "Vibrate on ring": ("vibrate", "settings/sound", "Sound"),
    "Do not disturb": ("dnd", "settings/sound", "Sound"),
    "Battery saver": ("battery_saver", "settings/battery", "Battery"),
}


class SettingsApp(App):
    key, name, root = "settings", "Settings", "settings/main"
    screens = ("main", "network", "display", "sound", "ringtone", "notifications", "apps", "app_info", "battery",
               "search", "info")
    overlays = ("font_size", "confirm_clear")
    search_screens = frozenset({"search"})
    dark_key = "dark_theme"
    SECTIONS = (("Network & internet", "network"), ("Display", "display"), ("Sound", "sound"),
                ("Notifications", "notifications"), ("Apps", "apps"), ("Battery", "battery"))
    DEAD_ENDS = ("Storage", "Security", "Accessibility", "Location", "System", "About phone")

    def init_data(self, rng: random.Random) -> dict:
        prefs = {k: rng.random() < 0.5 for k, _, _ in SETTING_INDEX.values()}
        prefs["dark_theme"] = rng.random() < 0.25
        apps = [a.name for a in APP_LIST if a.key != "settings"] + list(OTHER_APPS)
        return {"prefs": prefs, "notif": {a: rng.random() < 0.8 for a in apps}, "apps": apps,
                "font_size": rng.choice(FONT_SIZES), "ringtone": rng.choice(RINGTONES), "cleared": []}

    def s_main(self, b: Builder, v: View) -> None:
        b.topbar("Settings", back=False, icons=[("search", "icon:search", ("push", "settings/search", ""))])
        items = [(label, f"row:{slug(label)}", ("push", f"settings/{s}", "")) for label, s in self.SECTIONS]
        items += [(label, f"row:{slug(label)}", _info("settings", label)) for label in self.DEAD_ENDS]
        self.nav_rows(b, v, items)

    def s_network(self, b: Builder, v: View) -> None:
        b.topbar("Network & internet")
        entries = self.toggle_entries(v, [("wifi", "Wi-Fi"), ("bluetooth", "Bluetooth"), ("airplane", "Airplane mode")])
        b.rows(entries + [Entry("row:data_usage", "Data usage", tap=_info("settings", "Data usage"), chevron=True)])

    def s_display(self, b: Builder, v: View) -> None:
        b.topbar("Display")
        p = v.data["prefs"]
        entries = [Entry("toggle:dark_theme", "Dark theme", kind="toggle", on=p["dark_theme"],
                         tap=("op", "toggle", "prefs", "dark_theme")),
                   Entry("row:font_size", "Font size", sub=v.data["font_size"], tap=("overlay", "settings/font_size", ""),
                         chevron=True),
                   Entry("toggle:auto_rotate", "Auto-rotate", kind="toggle", on=p["auto_rotate"],
                         tap=("op", "toggle", "prefs", "auto_rotate"))]
        b.rows(v.perm("display", entries), row_h=32)

    def s_sound(self, b: Builder, v: View) -> None:
        b.topbar("Sound")
        p = v.data["prefs"]
        entries = [Entry("toggle:vibrate", "Vibrate on ring", kind="toggle", on=p["vibrate"], tap=("op", "toggle", "prefs", "vibrate")),
                   Entry("toggle:dnd", "Do not disturb", kind="toggle", on=p["dnd"], tap=("op", "toggle", "prefs", "dnd")),
                   Entry("row:ringtone", "Ringtone", sub=v.data["ringtone"], tap=("push", "settings/ringtone", ""), chevron=True)]
        b.rows(v.perm("sound", entries), row_h=32)

    def s_ringtone(self, b: Builder, v: View) -> None:
        b.topbar("Ringtone")
        b.rows([Entry(f"radio:{slug(r)}", r, kind="radio", on=v.data["ringtone"] == r, tap=("op", "set", "ringtone", r))
                for r in RINGTONES])

    def s_notifications(self, b: Builder, v: View) -> None:
        b.topbar("Notifications")
        self.toggles(b, v, [(a, a) for a in v.data["apps"]], where="notif")

    def s_apps(self, b: Builder, v: View) -> None:
        b.topbar("Apps")
        b.rows([Entry(f"item:{slug(a)}", a, sub="Installed", tap=("push", "settings/app_info", a), chevron=True)
                for a in v.data["apps"]])

    def s_app_info(self, b: Builder, v: View) -> None:
        app = v.page.arg
        b.topbar(app)
        b.text(f"{app} · version 2.{len(app)}", big=True)
        b.text("Cache: 0 B" if app in v.data["cleared"] else f"Cache: {3 * len(app) + 4} MB", style="sub")
        b.rows([Entry("toggle:notifications", "Notifications", kind="toggle", on=v.data["notif"][app],
                      tap=("op", "toggle", "notif", app))])
        buttons = v.perm("app_info", [("btn:clear_cache", "Clear cache", ("overlay", "settings/confirm_clear", app)),
                                      ("btn:force_stop", "Force stop", ("noop",))])
        for wid, label, cmd in buttons:
            b.button(wid, label, cmd)

    def s_battery(self, b: Builder, v: View) -> None:
        b.topbar("Battery")
        b.text("Battery 76% · about 9 h left", big=True)
        b.rows([Entry("toggle:battery_saver", "Battery saver", kind="toggle", on=v.data["prefs"]["battery_saver"],
                      tap=("op", "toggle", "prefs", "battery_saver")),
                Entry("row:battery_usage", "Battery usage", tap=_info("settings", "Battery usage"), chevron=True)])

    def s_search(self, b: Builder, v: View) -> None:
        b.topbar("Search settings")
        b.field("field:search", "Search settings")
        query = v.page.fields.get("query")
        if query is None:
            return
        hits = [label for label in SETTING_INDEX if query.lower() in label.lower()] if query else []
        if not hits:
            b.text("No results", style="sub")
        b.rows([Entry(f"item:{slug(h)}", h, sub=SETTING_INDEX[h][2], tap=("push", SETTING_INDEX[h][1], ""))
                for h in hits])

    def o_font_size(self, b: Builder, v: View, arg: str) -> None:
        b.dialog("Font size", "", [("Cancel", "btn:cancel", ("close",))],
                 options=[(f, f"radio:{slug(f)}", v.data["font_size"] == f, ("op", "set_font", f)) for f in FONT_SIZES])

    def o_confirm_clear(self, b: Builder, v: View, arg: str) -> None:
        b.dialog("Clear cache?", f"Cached data of {arg} will be removed.",
                 v.perm("confirm", [("Cancel", "btn:cancel", ("close",)), ("OK", "btn:ok", ("op", "clear_cache", arg))]))

    def op_set(self, state: PhoneState, key: str, value: str) -> None:
        state.data[self.key][key] = value

    def op_set_font(self, state: PhoneState, size: str) -> None:
        state.data[self.key]["font_size"] = size
        state.overlay = None

    def op_clear_cache(self, state: PhoneState, app: str) -> None:
        if app not in state.data[self.key]["cleared"]:
            state.data[self.key]["cleared"].append(app)
        state.overlay = None


# ============================================================================= Notes
NOTE_TITLES = ("Groceries", "Book club", "Gift ideas", "Packing list", "Recipes", "Workout plan", "Meeting notes",
               "Garden", "Movies to watch", "Travel plans", "Birthday party", "Reading list", "Car service", "Budget",
               "Podcast ideas", "Home repairs", "Weekend", "Lecture notes", "Yoga", "Dentist")
NOTE_BODIES = ("milk, eggs, bread", "call before Friday", "ask Maya about it", "passport and charger",
               "try the lemon cake", "three sets of ten", "agenda for Monday", "plant tomatoes", "two hours max",
               "book the train", "bring snacks", "start chapter two")


class NotesApp(App):
    key, name, root = "notes", "Notes", "notes/list"
    screens = ("list", "view", "edit", "search", "preferences", "display", "editor_settings", "backup", "trash", "info")
    overlays = ("overflow", "item_menu", "confirm_delete", "trash_menu", "confirm_empty")
    search_screens = frozenset({"search"})

    def init_data(self, rng: random.Random) -> dict:
        titles = rng.sample(NOTE_TITLES, 14)
        notes = [{"title": t, "body": rng.choice(NOTE_BODIES), "pinned": rng.random() < 0.15} for t in titles[:11]]
        trash = [{"title": t, "body": rng.choice(NOTE_BODIES), "pinned": False} for t in titles[11:]]
        prefs = {k: rng.random() < 0.5 for k in ("large_text", "show_previews", "auto_save", "spell_check", "cloud_backup")}
        prefs["dark_mode"] = rng.random() < 0.25
        return {"prefs": prefs, "notes": notes, "trash": trash}

    def find(self, data: dict, title: str, where: str = "notes") -> dict | None:
        return next((n for n in data[where] if n["title"] == title), None)

    def on_push(self, page: Page, state: PhoneState) -> None:
        if page.screen == "notes/edit" and page.arg:
            note = self.find(state.data[self.key], page.arg)
            if note:
                page.fields = {"field:title": note["title"], "field:body": note["body"]}

    def s_list(self, b: Builder, v: View) -> None:
        icons = v.perm("toolbar", [("search", "icon:search", ("push", "notes/search", "")),
                                   ("more", "icon:more", ("overlay", "notes/overflow", ""))])
        b.topbar("Notes", back=False, icons=icons)
        prefs = v.data["prefs"]
        notes = sorted(v.data["notes"], key=lambda n: not n["pinned"])  # pinned first, stable
        b.rows([Entry(f"item:{slug(n['title'])}", n["title"], sub=n["body"] if prefs["show_previews"] else "",
                      glyph="star_filled" if n["pinned"] else "", tap=("push", "notes/view", n["title"]),
                      long=("overlay", "notes/item_menu", n["title"])) for n in notes],
               row_h=36 if prefs["large_text"] else 28)
        b.fab("plus", "icon:add", ("push", "notes/edit", ""), left=v.flip("fab"))

    def s_view(self, b: Builder, v: View) -> None:
        note = self.find(v.data, v.page.arg) or {"title": v.page.arg, "body": "", "pinned": False}
        icons = v.perm("view_toolbar", [("star_filled" if note["pinned"] else "star", "icon:star", ("op", "pin", note["title"])),
                                        ("edit", "icon:edit", ("push", "notes/edit", note["title"])),
                                        ("trash", "icon:delete", ("overlay", "notes/confirm_delete", note["title"]))])
        b.topbar(note["title"], icons=icons)
        b.text(note["title"], big=True, h=24)
        b.text(note["body"])
        b.text("Edited today", style="sub")

    def s_edit(self, b: Builder, v: View) -> None:
        b.topbar("Edit note" if v.page.arg else "New note", icons=[("check", "icon:save", ("op", "save_note"))])
        b.field("field:title", "Title")
        b.field("field:body", "Note", h=60)

    def s_search(self, b: Builder, v: View) -> None:
        b.topbar("Search")
        b.field("field:search", "Search notes")
        query = v.page.fields.get("query")
        if query is None:
            return
        hits = [n for n in v.data["notes"] if query and query.lower() in n["title"].lower()]
        if not hits:
            b.text("No notes found", style="sub")
        b.rows([Entry(f"item:{slug(n['title'])}", n["title"], sub=n["body"], tap=("push", "notes/view", n["title"]))
                for n in hits])

    def s_preferences(self, b: Builder, v: View) -> None:
        b.topbar("Preferences")
        self.nav_rows(b, v, [("Display", "row:display", ("push", "notes/display", "")),
                             ("Editor", "row:editor", ("push", "notes/editor_settings", "")),
                             ("Backup", "row:backup", ("push", "notes/backup", "")),
                             ("About", "row:about", _info("notes", "About"))], row_h=32)

    def s_display(self, b: Builder, v: View) -> None:
        b.topbar("Display")
        self.toggles(b, v, [("dark_mode", "Dark mode"), ("large_text", "Large text"), ("show_previews", "Show previews")])

    def s_editor_settings(self, b: Builder, v: View) -> None:
        b.topbar("Editor")
        self.toggles(b, v, [("auto_save", "Auto-save"), ("spell_check", "Spell check")])

    def s_backup(self, b: Builder, v: View) -> None:
        b.topbar("Backup")
        b.text("Last backup: never", style="sub")
        self.toggles(b, v, [("cloud_backup", "Back up to cloud")])

    def s_trash(self, b: Builder, v: View) -> None:
        b.topbar("Trash")
        trash = v.data["trash"]
        if not trash:
            b.text("Trash is empty", style="sub")
        b.rows([Entry(f"item:{slug(n['title'])}", n["title"], sub="Deleted", long=("overlay", "notes/trash_menu", n["title"]),
                      tap=("overlay", "notes/trash_menu", n["title"])) for n in trash], bottom=TABS_TOP - 40)
        b.y = TABS_TOP - 38
        b.button("btn:empty_trash", "Empty trash", ("overlay", "notes/confirm_empty", ""))

    def o_overflow(self, b: Builder, v: View, arg: str) -> None:
        b.menu(v.perm("overflow", [("Preferences", "menu:preferences", ("push", "notes/preferences", "")),
                                   ("Sort by", "menu:sort_by", _info("notes", "Sort by")),
                                   ("Trash", "menu:trash", ("push", "notes/trash", "")),
                                   ("Help", "menu:help", _info("notes", "Help"))]))

    def o_item_menu(self, b: Builder, v: View, title: str) -> None:
        note = self.find(v.data, title) or {"pinned": False}
        b.menu(v.perm("item_menu", [("Unpin" if note["pinned"] else "Pin", "menu:pin", ("op", "pin", title)),
                                    ("Rename", "menu:rename", ("push", "notes/edit", title)),
                                    ("Delete", "menu:delete", ("overlay", "notes/confirm_delete", title))]), top=120)

    def o_confirm_delete(self, b: Builder, v: View, title: str) -> None:
        b.dialog("Delete note?", f"'{title}' goes to the trash.",
                 v.perm("confirm", [("Cancel", "btn:cancel", ("close",)), ("Delete", "btn:delete", ("op", "delete", title))]))

    def o_trash_menu(self, b: Builder, v: View, title: str) -> None:
        b.menu(v.perm("trash_menu", [("Restore", "menu:restore", ("op", "restore", title)),
                                     ("Delete forever", "menu:delete_forever", ("op", "purge", title))]), top=120)

    def o_confirm_empty(self, b: Builder, v: View, arg: str) -> None:
        b.dialog("Empty trash?", "Notes in the trash are lost.",
                 v.perm("confirm", [("Cancel", "btn:cancel", ("close",)), ("Empty", "btn:empty", ("op", "empty_trash"))]))

    def op_pin(self, state: PhoneState, title: str) -> None:
        note = self.find(state.data[self.key], title)
        if note:
            note["pinned"] = not note["pinned"]
        state.overlay = None

    def op_save_note(self, state: PhoneState) -> None:
        data, page = state.data[self.key], state.page
        title, body = page.fields.get("field:title", "").strip(), page.fields.get("field:body", "")
        if not title:
            page.note = "A note needs a title"
            return
        old = self.find(data, page.arg) if page.arg else None
        if old is not None:
            old["title"], old["body"] = title, body
        else:
            data["notes"].insert(0, {"title": title, "body": body, "pinned": False})
        state.stack.pop()
        if state.page.screen == "notes/view":
            state.page.arg = title

    def op_delete(self, state: PhoneState, title: str) -> None:
        data = state.data[self.key]
        note = self.find(data, title)
        if note:
            data["notes"].remove(note)
            data["trash"].insert(0, {**note, "pinned": False})
        state.overlay = None
        self.pop_to(state, "notes/list")

    def op_restore(self, state: PhoneState, title: str) -> None:
        data = state.data[self.key]
        note = self.find(data, title, "trash")
        if note:
            data["trash"].remove(note)
            data["notes"].insert(0, note)
        state.overlay = None

    def op_purge(self, state: PhoneState, title: str) -> None:
        data = state.data[self.key]
        data["trash"] = [n for n in data["trash"] if n["title"] != title]
        state.overlay = None

    def op_empty_trash(self, state: PhoneState) -> None:
        state.data[self.key]["trash"] = []
        state.overlay = None


# ============================================================================= Messages
CONTACTS = ("Alice Chen", "Bob Smith", "Carla Diaz", "David Kim", "Emma Brown", "Farid Khan", "Grace Lee",
            "Hugo Martin", "Ines Silva", "Jack Wilson", "Kira Novak", "Liam Murphy", "Maya Patel", "Noah Garcia",
            "Olivia Rossi", "Pablo Ortiz", "Quinn Taylor", "Rosa Alvarez")
CHAT_LINES = ("See you soon!", "Thanks a lot", "Running late", "Sounds good", "Call me later", "Happy birthday!",
              "Did you see it?", "On my way", "Lunch tomorrow?", "Got the tickets")


def first_name(contact: str) -> str:
    return contact.split()[0]


class MessagesApp(App):
    key, name, root = "messages", "Messages", "messages/chats"
    screens = ("chats", "thread", "compose", "stickers", "search", "settings", "appearance", "notifications",
               "privacy", "calls", "info")
    overlays = ("thread_menu", "chat_menu", "confirm_delete")
    search_screens = frozenset({"search"})
    TABS = (("Chats", "messages/chats"), ("Calls", "messages/calls"), ("Settings", "messages/settings"))

    def init_data(self, rng: random.Random) -> dict:
        with_chat = rng.sample(CONTACTS, 11)
        chats = [{"contact": c, "muted": rng.random() < 0.15,
                  "msgs": [[rng.random() < 0.5, rng.choice(CHAT_LINES)] for _ in range(rng.randint(1, 4))]}
                 for c in with_chat]
        prefs = {k: rng.random() < 0.5 for k in ("large_text", "bubble_colours", "sounds", "vibrate", "previews",
                                                 "read_receipts", "typing_indicator")}
        prefs["dark_mode"] = rng.random() < 0.25
        return {"prefs": prefs, "chats": chats, "contacts": list(CONTACTS)}

    def chat(self, data: dict, contact: str) -> dict | None:
        return next((c for c in data["chats"] if c["contact"] == contact), None)

    def on_push(self, page: Page, state: PhoneState) -> None:
        if page.screen == "messages/compose":
            page.focus = "field:to"

    def s_chats(self, b: Builder, v: View) -> None:
        icons = v.perm("toolbar", [("search", "icon:search", ("push", "messages/search", "")),
                                   ("plus", "icon:add", ("push", "messages/compose", ""))])
        b.topbar("Messages", back=False, icons=icons)
        b.tabs(v.perm("tabs", self.TABS), v.page.screen)
        previews = v.data["prefs"]["previews"]
        b.rows([Entry(f"item:{slug(first_name(c['contact']))}", c["contact"],
                      sub=(("[sticker]" if c["msgs"][-1][1].startswith("[") else c["msgs"][-1][1]) if previews and c["msgs"] else ""),
                      glyph=f"dot:{c['contact']}", tap=("push", "messages/thread", c["contact"]),
                      long=("overlay", "messages/chat_menu", c["contact"])) for c in v.data["chats"]], row_h=32)

    def s_thread(self, b: Builder, v: View) -> None:
        contact = v.page.arg
        chat = self.chat(v.data, contact) or {"msgs": [], "muted": False}
        b.topbar(contact, icons=[("more", "icon:more", ("overlay", "messages/thread_menu", contact))])
        if chat["muted"]:
            b.text("Muted", style="sub")
        y = b.y + 4
        for i, (mine, text) in enumerate(chat["msgs"][-7:]):
            sticker = text.startswith("[sticker:")
            w = 40 if sticker else min(150, 16 + 6 * len(text))
            x0 = W - 8 - w if mine else 8
            b.add(Widget(f"msg:{i}", "bubble", (x0, y, x0 + w, y + (36 if sticker else 22)), text="" if sticker else text,
                         glyph=f"sticker:{text[9:-1]}" if sticker else "", on=mine))
            y += 40 if sticker else 26
        b.y = TABS_TOP - 4
        sides = v.perm("composer", ["icon:sticker", "icon:send"])
        for wid, x0 in zip(sides, (2, W - 28)):
            cmd = ("push", "messages/stickers", contact) if wid == "icon:sticker" else ("op", "send", contact)
            b.add(Widget(wid, "icon", (x0, b.y + 4, x0 + 26, b.y + 30), glyph="smiley" if wid == "icon:sticker" else "send", tap=cmd))
        b.field("field:message", "Message", x0=30, x1=W - 30)

    def s_compose(self, b: Builder, v: View) -> None:
        b.topbar("New chat")
        b.field("field:to", "To: name")
        typed = v.page.fields.get("field:to", "").lower()
        hits = [c for c in v.data["contacts"] if typed in c.lower()]
        b.rows([Entry(f"item:{slug(first_name(c))}", c, glyph=f"dot:{c}", tap=("op", "open_chat", c)) for c in hits])

    def s_stickers(self, b: Builder, v: View) -> None:
        b.topbar("Stickers")
        b.grid([Entry(f"cell:{s}", glyph=f"sticker:{s}", tap=("op", "send_sticker", v.page.arg, s))
                for s in v.perm("stickers", STICKERS)], cols=4, cell_h=44)

    def s_search(self, b: Builder, v: View) -> None:
        b.topbar("Search")
        b.field("field:search", "Search messages")
        query = v.page.fields.get("query")
        if query is None:
            return
        q = query.lower()
        hits = [c for c in v.data["chats"] if q and (q in c["contact"].lower() or any(q in t.lower() for _, t in c["msgs"]))]
        if not hits:
            b.text("No results", style="sub")
        b.rows([Entry(f"item:{slug(first_name(c['contact']))}", c["contact"], glyph=f"dot:{c['contact']}",
                      tap=("push", "messages/thread", c["contact"])) for c in hits])

    def s_settings(self, b: Builder, v: View) -> None:
        b.topbar("Settings", back=False)
        b.tabs(v.perm("tabs", self.TABS), v.page.screen)
        self.nav_rows(b, v, [("Notifications", "row:notifications", ("push", "messages/notifications", "")),
                             ("Appearance", "row:appearance", ("push", "messages/appearance", "")),
                             ("Privacy", "row:privacy", ("push", "messages/privacy", "")),
                             ("Storage", "row:storage", _info("messages", "Storage")),
                             ("Help", "row:help", _info("messages", "Help"))], row_h=32)

    def s_appearance(self, b: Builder, v: View) -> None:
        b.topbar("Appearance")
        self.toggles(b, v, [("dark_mode", "Dark mode"), ("large_text", "Large text"), ("bubble_colours", "Bubble colours")])

    def s_notifications(self, b: Builder, v: View) -> None:
        b.topbar("Notifications")
        self.toggles(b, v, [("sounds", "Sounds"), ("vibrate", "Vibrate"), ("previews", "Message previews")])

    def s_privacy(self, b: Builder, v: View) -> None:
        b.topbar("Privacy")
        self.toggles(b, v, [("read_receipts", "Read receipts"), ("typing_indicator", "Typing indicator")])

    def s_calls(self, b: Builder, v: View) -> None:
        b.topbar("Calls", back=False)
        b.tabs(v.perm("tabs", self.TABS), v.page.screen)
        b.rows([Entry(f"item:{slug(first_name(c['contact']))}", c["contact"], sub=f"{2 + i} days ago",
                      tap=_info("messages", "Call details")) for i, c in enumerate(v.data["chats"][:6])])

    def o_thread_menu(self, b: Builder, v: View, contact: str) -> None:
        chat = self.chat(v.data, contact) or {"muted": False}
        b.menu(v.perm("thread_menu", [("Unmute" if chat["muted"] else "Mute", "menu:mute", ("op", "mute", contact)),
                                      ("Block", "menu:block", _info("messages", "Blocked contacts")),
                                      ("Delete chat", "menu:delete", ("overlay", "messages/confirm_delete", contact))]))

    def o_chat_menu(self, b: Builder, v: View, contact: str) -> None:
        chat = self.chat(v.data, contact) or {"muted": False}
        b.menu(v.perm("chat_menu", [("Unmute" if chat["muted"] else "Mute", "menu:mute", ("op", "mute", contact)),
                                    ("Delete chat", "menu:delete", ("overlay", "messages/confirm_delete", contact)),
                                    ("Mark as read", "menu:mark_read", ("close",))]), top=120)

    def o_confirm_delete(self, b: Builder, v: View, contact: str) -> None:
        b.dialog("Delete chat?", f"All messages with {first_name(contact)} go.",
                 v.perm("confirm", [("Cancel", "btn:cancel", ("close",)), ("Delete", "btn:delete", ("op", "delete_chat", contact))]))

    def _append(self, state: PhoneState, contact: str, text: str) -> None:
        data = state.data[self.key]
        chat = self.chat(data, contact)
        if chat is None:
            chat = {"contact": contact, "muted": False, "msgs": []}
        else:
            data["chats"].remove(chat)
        chat["msgs"].append([True, text])
        data["chats"].insert(0, chat)  # most recent first

    def op_send(self, state: PhoneState, contact: str) -> None:
        text = state.page.fields.get("field:message", "")
        if text.strip():
            self._append(state, contact, text)
            state.page.fields["field:message"] = ""

    def op_send_sticker(self, state: PhoneState, contact: str, sticker: str) -> None:
        self._append(state, contact, f"[sticker:{sticker}]")
        state.stack.pop()

    def op_mute(self, state: PhoneState, contact: str) -> None:
        chat = self.chat(state.data[self.key], contact)
        if chat:
            chat["muted"] = not chat["muted"]
        state.overlay = None

    def op_delete_chat(self, state: PhoneState, contact: str) -> None:
        data = state.data[self.key]
        data["chats"] = [c for c in data["chats"] if c["contact"] != contact]
        state.overlay = None
        self.pop_to(state, "messages/chats")

    def op_open_chat(self, state: PhoneState, contact: str) -> None:
        state.stack.pop()
        state.stack.append(self.new_page("messages/thread", contact, state))


# ============================================================================= Shop
CATALOG: dict[str, tuple[str, ...]] = {
    "Fruit": ("Apples", "Bananas", "Cherries", "Grapes", "Lemons", "Mangoes", "Oranges", "Pears", "Plums", "Strawberries"),
    "Dairy": ("Butter", "Cheese", "Cream", "Eggs", "Milk", "Yogurt"),
    "Bakery": ("Bagels", "Baguette", "Croissants", "Muffins", "Rolls", "Sourdough"),
    "Drinks": ("Coffee", "Juice", "Lemonade", "Soda", "Tea", "Water"),
    "Snacks": ("Chips", "Cookies", "Crackers", "Nuts", "Popcorn", "Pretzels"),
    "Household": ("Batteries", "Candles", "Soap", "Sponges", "Tissues"),
}
PRODUCTS: tuple[str, ...] = tuple(p for items in CATALOG.values() for p in items)


def price(item: str) -> str:
    """A fixed price per product."""
    return f"${1 + stable_int('price', item) % 9}.{stable_int('cents', item) % 100:02d}"


class ShopApp(App):
    key, name, root = "shop", "Shop", "shop/home"
    screens = ("home", "category", "product", "search", "cart", "checkout", "order_done", "account", "orders",
               "wishlist", "settings", "appearance", "notifications", "deals", "info")
    overlays = ("confirm_order",)
    search_screens = frozenset({"search"})
    TABS = (("Shop", "shop/home"), ("Deals", "shop/deals"), ("Account", "shop/account"))

    def init_data(self, rng: random.Random) -> dict:
        cart = {p: rng.randint(1, 3) for p in rng.sample(PRODUCTS, rng.randint(0, 3))}
        prefs = {k: rng.random() < 0.5 for k in ("compact_list", "deal_alerts", "order_updates")}
        prefs["dark_mode"] = rng.random() < 0.25
        return {"prefs": prefs, "cart": cart, "wishlist": rng.sample(PRODUCTS, 2), "orders": [], "delivery": "Standard"}

    def on_push(self, page: Page, state: PhoneState) -> None:
        if page.screen == "shop/product":
            page.fields["qty"] = "1"

    def _cart_icon(self) -> tuple[str, str, Cmd]:
        return ("cart", "icon:cart", ("push", "shop/cart", ""))

    def s_home(self, b: Builder, v: View) -> None:
        b.topbar("Shop", back=False, icons=[self._cart_icon()])
        b.tabs(v.perm("tabs", self.TABS), v.page.screen)
        b.add(Widget("field:search", "field", (8, b.y + 3, W - 8, b.y + 26), sub="Search products", desc="Search products",
                     tap=("push", "shop/search", "")))
        b.y += 30
        self.nav_rows(b, v, [(c, f"row:{slug(c)}", ("push", "shop/category", c)) for c in CATALOG], row_h=32)

    def _product_rows(self, b: Builder, v: View, items: Sequence[str], add: bool = True, sub: Callable[[str], str] = price) -> None:
        row_h = 26 if v.data["prefs"]["compact_list"] else 32
        b.rows([Entry(f"item:{slug(p)}", p, sub=sub(p), glyph=f"dot:{p}", tap=("push", "shop/product", p),
                      trail=((f"icon:add:{slug(p)}", "plus", False, ("op", "add", p, 1)),) if add else ())
                for p in items], row_h=row_h)

    def s_category(self, b: Builder, v: View) -> None:
        b.topbar(v.page.arg, icons=[self._cart_icon()])
        if v.page.note:
            b.text(v.page.note, style="sub")
        self._product_rows(b, v, CATALOG[v.page.arg])

    def s_product(self, b: Builder, v: View) -> None:
        item = v.page.arg
        star = "star_filled" if item in v.data["wishlist"] else "star"
        b.topbar(item, icons=v.perm("product_toolbar", [(star, "icon:star", ("op", "wishlist", item)), self._cart_icon()]))
        b.picture(f"dot:{item}", 110)
        b.text(f"{item} · {price(item)}", big=True, h=22)
        y = b.y + 4
        qty = v.page.fields.get("qty", "1")
        b.add(Widget("icon:qty_minus", "icon", (40, y, 66, y + 26), glyph="minus", tap=("op", "qty", -1)))
        b.add(Widget("text:qty", "text", (80, y, 100, y + 26), text=qty, style="center big"))
        b.add(Widget("icon:qty_plus", "icon", (114, y, 140, y + 26), glyph="plus", tap=("op", "qty", 1)))
        b.y = y + 30
        b.button("btn:add_to_cart", "Add to cart", ("op", "add", item, 0))
        if v.page.note:
            b.text(v.page.note, style="center")

    def s_search(self, b: Builder, v: View) -> None:
        b.topbar("Search", icons=[self._cart_icon()])
        b.field("field:search", "Search products")
        query = v.page.fields.get("query")
        if query is None:
            return
        hits = [p for p in PRODUCTS if query and query.lower() in p.lower()]
        if not hits:
            b.text("No products found", style="sub")
        self._product_rows(b, v, hits, add=False)

    def s_cart(self, b: Builder, v: View) -> None:
        b.topbar("Cart")
        cart = v.data["cart"]
        if not cart:
            b.text("Your cart is empty", style="sub")
            return
        b.rows([Entry(f"item:{slug(p)}", p, sub=f"x{q} · {price(p)}", glyph=f"dot:{p}", tap=("push", "shop/product", p),
                      trail=((f"icon:remove:{slug(p)}", "trash", False, ("op", "remove", p)),)) for p, q in cart.items()],
               row_h=32, bottom=TABS_TOP - 40)
        b.y = TABS_TOP - 38
        b.button("btn:checkout", "Checkout", ("push", "shop/checkout", ""))

    def s_checkout(self, b: Builder, v: View) -> None:
        b.topbar("Checkout")
        b.text("Deliver to: 12 Park Lane", style="sub")
        n = sum(v.data["cart"].values())
        b.text(f"{n} items", big=True)
        b.rows([Entry(f"radio:{slug(d)}", f"{d} delivery", kind="radio", on=v.data["delivery"] == d,
                      tap=("op", "delivery", d)) for d in v.perm("delivery", ("Standard", "Express"))])
        b.button("btn:place_order", "Place order", ("overlay", "shop/confirm_order", ""))

    def s_order_done(self, b: Builder, v: View) -> None:
        b.topbar("Order placed", back=False)
        b.text(f"Thank you! Order #{len(v.data['orders'])} is on its way.", big=True, h=30)
        b.button("btn:continue", "Continue shopping", ("tab", "shop/home"), w=140)

    def s_account(self, b: Builder, v: View) -> None:
        b.topbar("Account", back=False)
        b.tabs(v.perm("tabs", self.TABS), v.page.screen)
        self.nav_rows(b, v, [("Orders", "row:orders", ("push", "shop/orders", "")),
                             ("Wishlist", "row:wishlist", ("push", "shop/wishlist", "")),
                             ("Settings", "row:settings", ("push", "shop/settings", "")),
                             ("Help", "row:help", _info("shop", "Help"))], row_h=32)

    def s_orders(self, b: Builder, v: View) -> None:
        b.topbar("Orders")
        orders = v.data["orders"]
        if not orders:
            b.text("No orders yet", style="sub")
        b.rows([Entry(f"item:order_{i + 1}", f"Order #{i + 1}", sub=f"{o['n']} items · {o['delivery']}",
                      tap=_info("shop", f"Order #{i + 1}")) for i, o in enumerate(orders)])

    def s_wishlist(self, b: Builder, v: View) -> None:
        b.topbar("Wishlist")
        self._product_rows(b, v, v.data["wishlist"], add=False)

    def s_settings(self, b: Builder, v: View) -> None:
        b.topbar("Settings")
        self.nav_rows(b, v, [("Appearance", "row:appearance", ("push", "shop/appearance", "")),
                             ("Notifications", "row:notifications", ("push", "shop/notifications", "")),
                             ("Payment methods", "row:payment_methods", _info("shop", "Payment methods")),
                             ("Addresses", "row:addresses", _info("shop", "Addresses"))], row_h=32)

    def s_appearance(self, b: Builder, v: View) -> None:
        b.topbar("Appearance")
        self.toggles(b, v, [("dark_mode", "Dark mode"), ("compact_list", "Compact list")])

    def s_notifications(self, b: Builder, v: View) -> None:
        b.topbar("Notifications")
        self.toggles(b, v, [("deal_alerts", "Deal alerts"), ("order_updates", "Order updates")])

    def s_deals(self, b: Builder, v: View) -> None:
        b.topbar("Deals", back=False, icons=[self._cart_icon()])
        b.tabs(v.perm("tabs", self.TABS), v.page.screen)
        self._product_rows(b, v, PRODUCTS[::6], add=False, sub=lambda p: f"-20% · {price(p)}")

    def o_confirm_order(self, b: Builder, v: View, arg: str) -> None:
        b.dialog("Place order?", f"{v.data['delivery']} delivery, paid by card.",
                 v.perm("confirm", [("Cancel", "btn:cancel", ("close",)), ("Place order", "btn:confirm", ("op", "order"))]))

    def op_add(self, state: PhoneState, item: str, qty: int) -> None:
        n = qty or int(state.page.fields.get("qty", "1"))
        cart = state.data[self.key]["cart"]
        cart[item] = cart.get(item, 0) + n
        state.page.note = f"Added {n} {item}"

    def op_qty(self, state: PhoneState, delta: int) -> None:
        page = state.page
        page.fields["qty"] = str(min(9, max(1, int(page.fields.get("qty", "1")) + delta)))
        page.note = ""

    def op_remove(self, state: PhoneState, item: str) -> None:
        state.data[self.key]["cart"].pop(item, None)

    def op_wishlist(self, state: PhoneState, item: str) -> None:
        wl = state.data[self.key]["wishlist"]
        wl.remove(item) if item in wl else wl.append(item)

    def op_delivery(self, state: PhoneState, kind: str) -> None:
        state.data[self.key]["delivery"] = kind

    def op_order(self, state: PhoneState) -> None:
        data = state.data[self.key]
        if data["cart"]:
            data["orders"].append({"items": dict(data["cart"]), "n": sum(data["cart"].values()), "delivery": data["delivery"]})
            data["cart"] = {}
            state.overlay = None
            state.stack = [state.stack[0], self.new_page("shop/order_done", "", state)]
        else:
            state.overlay = None


# ============================================================================= Gallery
SHARE_TARGETS = ("Messages", "Notes", "Mail", "Drive")
SHARE_GLYPHS = {"Messages": "app:messages", "Notes": "app:notes", "Mail": "app:calendar", "Drive": "app:files"}


class GalleryApp(App):
    key, name, root = "gallery", "Gallery", "gallery/photos"
    screens = ("photos", "viewer", "albums", "album", "trash", "trash_item", "new_album", "settings", "info", "editor")
    overlays = ("more", "viewer_more", "confirm_delete", "share_sheet")
    TABS = (("Photos", "gallery/photos"), ("Albums", "gallery/albums"))

    def init_data(self, rng: random.Random) -> dict:
        subjects = list(PHOTO_SUBJECTS)
        rng.shuffle(subjects)
        photos = [{"subject": s, "fav": rng.random() < 0.2} for s in subjects[:15]]
        prefs = {k: rng.random() < 0.5 for k in ("show_dates", "auto_backup")}
        prefs["dark_mode"] = rng.random() < 0.25
        return {"prefs": prefs, "photos": photos, "trash": subjects[15:], "albums": ["Camera", "Favourites", "Screenshots"],
                "shared": []}

    def photo(self, data: dict, subject: str) -> dict | None:
        return next((p for p in data["photos"] if p["subject"] == subject), None)

    def _grid(self, b: Builder, photos: Sequence[dict], screen: str) -> None:
        b.grid([Entry(f"cell:{p['subject']}", glyph=f"photo:{p['subject']}", on=p["fav"], tap=("push", screen, p["subject"]))
                for p in photos], cols=3, cell_h=58)

    def s_photos(self, b: Builder, v: View) -> None:
        b.topbar("Gallery", back=False, icons=[("more", "icon:more", ("overlay", "gallery/more", ""))])
        b.tabs(v.perm("tabs", self.TABS), v.page.screen)
        if v.data["prefs"]["show_dates"]:
            b.text("Today", style="sub")
        self._grid(b, v.data["photos"], "gallery/viewer")

    def s_viewer(self, b: Builder, v: View) -> None:
        subject = v.page.arg
        p = self.photo(v.data, subject) or {"subject": subject, "fav": False}
        b.topbar("", icons=[("more", "icon:more", ("overlay", "gallery/viewer_more", subject))])
        b.picture(f"photo:{subject}", 200)
        tools = v.perm("viewer_toolbar", [("star_filled" if p["fav"] else "star", "icon:star", ("op", "fav", subject)),
                                          ("share", "icon:share", ("overlay", "gallery/share_sheet", subject)),
                                          ("trash", "icon:delete", ("overlay", "gallery/confirm_delete", subject))])
        for i, (glyph, wid, cmd) in enumerate(tools):
            x0 = 24 + i * 52
            b.add(Widget(wid, "icon", (x0, 290, x0 + 30, 320), glyph=glyph, tap=cmd))

    def s_albums(self, b: Builder, v: View) -> None:
        b.topbar("Albums", back=False, icons=[("plus", "icon:add", ("push", "gallery/new_album", ""))])
        b.tabs(v.perm("tabs", self.TABS), v.page.screen)
        rows = [Entry(f"row:{slug(a)}", a, sub=f"{len(self._album(v.data, a))} photos", tap=("push", "gallery/album", a),
                      chevron=True) for a in v.data["albums"]]
        rows.append(Entry("row:trash", "Trash", sub=f"{len(v.data['trash'])} photos", tap=("push", "gallery/trash", ""), chevron=True))
        b.rows(v.perm("albums", rows), row_h=34)

    def _album(self, data: dict, name: str) -> list[dict]:
        if name == "Camera":
            return data["photos"]
        if name == "Favourites":
            return [p for p in data["photos"] if p["fav"]]
        return []

    def s_album(self, b: Builder, v: View) -> None:
        b.topbar(v.page.arg)
        photos = self._album(v.data, v.page.arg)
        if not photos:
            b.text("No photos yet", style="sub")
        self._grid(b, photos, "gallery/viewer")

    def s_trash(self, b: Builder, v: View) -> None:
        b.topbar("Trash")
        b.text("Photos are deleted after 30 days", style="sub")
        self._grid(b, [{"subject": s, "fav": False} for s in v.data["trash"]], "gallery/trash_item")

    def s_trash_item(self, b: Builder, v: View) -> None:
        b.topbar("")
        b.picture(f"photo:{v.page.arg}", 180)
        for wid, label, cmd in v.perm("trash_item", [("btn:restore", "Restore", ("op", "restore", v.page.arg)),
                                                     ("btn:delete_forever", "Delete forever", ("op", "purge", v.page.arg))]):
            b.button(wid, label, cmd)

    def s_new_album(self, b: Builder, v: View) -> None:
        b.topbar("New album", icons=[("check", "icon:save", ("op", "create_album"))])
        b.field("field:name", "Album name")

    def s_settings(self, b: Builder, v: View) -> None:
        b.topbar("Settings")
        self.toggles(b, v, [("dark_mode", "Dark mode"), ("show_dates", "Show dates"), ("auto_backup", "Auto backup")])

    def s_editor(self, b: Builder, v: View) -> None:
        b.topbar("Edit photo")
        b.picture(f"photo:{v.page.arg}", 160)
        for f in ("Vivid", "Mono", "Warm"):
            b.button(f"btn:{slug(f)}", f, ("noop",), flat=True)

    def o_more(self, b: Builder, v: View, arg: str) -> None:
        b.menu(v.perm("more", [("Settings", "menu:settings", ("push", "gallery/settings", "")),
                               ("Select", "menu:select", _info("gallery", "Select")),
                               ("Help", "menu:help", _info("gallery", "Help"))]))

    def o_viewer_more(self, b: Builder, v: View, subject: str) -> None:
        b.menu(v.perm("viewer_more", [("Details", "menu:details", _info("gallery", "Details")),
                                      ("Edit", "menu:edit", ("push", "gallery/editor", subject)),
                                      ("Set as wallpaper", "menu:wallpaper", ("close",))]))

    def o_confirm_delete(self, b: Builder, v: View, subject: str) -> None:
        b.dialog("Delete photo?", "It moves to the trash.",
                 v.perm("confirm", [("Cancel", "btn:cancel", ("close",)), ("Delete", "btn:delete", ("op", "delete", subject))]))

    def o_share_sheet(self, b: Builder, v: View, subject: str) -> None:
        b.sheet("Share with", [(t, f"share:{slug(t)}", SHARE_GLYPHS[t], ("op", "share", subject, t))
                               for t in v.perm("share", SHARE_TARGETS)])

    def op_fav(self, state: PhoneState, subject: str) -> None:
        p = self.photo(state.data[self.key], subject)
        if p:
            p["fav"] = not p["fav"]

    def op_delete(self, state: PhoneState, subject: str) -> None:
        data = state.data[self.key]
        p = self.photo(data, subject)
        if p:
            data["photos"].remove(p)
            data["trash"].insert(0, subject)
        state.overlay = None
        state.stack.pop()

    def op_share(self, state: PhoneState, subject: str, target: str) -> None:
        state.data[self.key]["shared"].append([subject, target])
        state.overlay = None
        state.page.note = f"Shared with {target}"

    def op_restore(self, state: PhoneState, subject: str) -> None:
        data = state.data[self.key]
        if subject in data["trash"]:
            data["trash"].remove(subject)
            data["photos"].insert(0, {"subject": subject, "fav": False})
        state.stack.pop()

    def op_purge(self, state: PhoneState, subject: str) -> None:
        data = state.data[self.key]
        data["trash"] = [s for s in data["trash"] if s != subject]
        state.stack.pop()

    def op_create_album(self, state: PhoneState) -> None:
        name = state.page.fields.get("field:name", "").strip()
        albums = state.data[self.key]["albums"]
        if name and name not in albums:
            albums.append(name)
            state.stack.pop()


# ============================================================================= Clock
CITIES = ("Amsterdam", "Athens", "Bangkok", "Berlin", "Cairo", "Chicago", "Dubai", "Lima", "Lisbon", "London",
          "Madrid", "Mumbai", "Nairobi", "Oslo", "Paris", "Rome", "Seoul", "Sydney", "Tokyo", "Toronto")


def alarm_id(h: int, m: int) -> str:
    return f"{h}:{m:02d}"


class ClockApp(App):
    key, name, root = "clock", "Clock", "clock/alarms"
    screens = ("alarms", "new_alarm", "edit_alarm", "timer", "world", "city_search", "stopwatch", "settings", "display",
               "alarm_settings", "info")
    overlays = ("more", "alarm_menu", "confirm_delete")
    search_screens = frozenset({"city_search"})
    TABS = (("Alarm", "clock/alarms"), ("Timer", "clock/timer"), ("World", "clock/world"), ("Stopwatch", "clock/stopwatch"))

    def init_data(self, rng: random.Random) -> dict:
        n, times = rng.randint(4, 8), set()
        while len(times) < n:
            times.add((rng.randint(5, 11), rng.choice((0, 15, 30, 45))))
        alarms = [{"h": h, "m": m, "on": rng.random() < 0.6, "label": ""} for h, m in sorted(times)]
        prefs = {k: rng.random() < 0.5 for k in ("h24", "show_seconds", "gradual_volume", "vibrate")}
        prefs["dark_mode"] = rng.random() < 0.25
        return {"prefs": prefs, "alarms": alarms, "timer": 0, "cities": rng.sample(CITIES, 3), "stopwatch": False}

    def alarm(self, data: dict, aid: str) -> dict | None:
        return next((a for a in data["alarms"] if alarm_id(a["h"], a["m"]) == aid), None)

    def fmt(self, data: dict, a: dict) -> str:
        return f"{a['h']:02d}:{a['m']:02d}" if data["prefs"]["h24"] else f"{a['h']}:{a['m']:02d} AM"

    def on_push(self, page: Page, state: PhoneState) -> None:
        if page.screen == "clock/edit_alarm":
            a = self.alarm(state.data[self.key], page.arg)
            if a:
                page.fields = {"field:time": alarm_id(a["h"], a["m"]), "field:label": a["label"]}

    def s_alarms(self, b: Builder, v: View) -> None:
        b.topbar("Clock", back=False, icons=[("more", "icon:more", ("overlay", "clock/more", ""))])
        b.tabs(v.perm("tabs", self.TABS), v.page.screen)
        rows = []
        for a in v.data["alarms"]:
            aid = alarm_id(a["h"], a["m"])
            rows.append(Entry(f"item:{slug(aid)}", self.fmt(v.data, a), sub=a["label"] or "Alarm",
                              tap=("push", "clock/edit_alarm", aid), long=("overlay", "clock/alarm_menu", aid),
                              trail=((f"toggle:{slug(aid)}", "switch", a["on"], ("op", "toggle_alarm", aid)),)))
        b.rows(rows, row_h=40, bottom=TABS_TOP - 56)
        b.fab("plus", "icon:add", ("push", "clock/new_alarm", ""), left=v.flip("fab"))

    def _alarm_form(self, b: Builder, v: View) -> None:
        for wid, label, hint in v.perm("form", [("field:time", "Time", "h:mm, e.g. 7:30"), ("field:label", "Label", "Label")]):
            b.text(label, style="sub", h=14)
            b.field(wid, hint)
        if v.page.note:
            b.text(v.page.note, style="sub")

    def s_new_alarm(self, b: Builder, v: View) -> None:
        b.topbar("New alarm", icons=[("check", "icon:save", ("op", "save_alarm"))])
        self._alarm_form(b, v)

    def s_edit_alarm(self, b: Builder, v: View) -> None:
        b.topbar("Edit alarm", icons=v.perm("edit_toolbar", [("check", "icon:save", ("op", "save_alarm")),
                                                             ("trash", "icon:delete", ("overlay", "clock/confirm_delete", v.page.arg))]))
        self._alarm_form(b, v)

    def s_timer(self, b: Builder, v: View) -> None:
        b.topbar("Timer", back=False)
        b.tabs(v.perm("tabs", self.TABS), v.page.screen)
        running = v.data["timer"]
        if running:
            b.text(f"{running}:00 left", big=True, h=40, style="center")
            b.button("btn:stop", "Stop", ("op", "stop_timer"))
        else:
            b.text("Minutes", style="sub", h=14)
            b.field("field:minutes", "Minutes")
            b.button("btn:start", "Start", ("op", "start_timer"))

    def s_world(self, b: Builder, v: View) -> None:
        b.topbar("World clock", back=False, icons=[("plus", "icon:add", ("push", "clock/city_search", ""))])
        b.tabs(v.perm("tabs", self.TABS), v.page.screen)
        b.rows([Entry(f"item:{slug(c)}", c, sub=f"{(stable_int('tz', c) % 24):02d}:41") for c in v.data["cities"]], row_h=34)

    def s_city_search(self, b: Builder, v: View) -> None:
        b.topbar("Add city")
        b.field("field:search", "Search cities")
        typed = v.page.fields.get("field:search", "").lower()
        hits = [c for c in CITIES if typed and c.lower().startswith(typed)]
        b.rows([Entry(f"item:{slug(c)}", c, tap=("op", "add_city", c)) for c in hits])

    def s_stopwatch(self, b: Builder, v: View) -> None:
        b.topbar("Stopwatch", back=False)
        b.tabs(v.perm("tabs", self.TABS), v.page.screen)
        b.text("00:03.2" if v.data["stopwatch"] else "00:00.0", big=True, h=40, style="center")
        b.button("btn:start", "Stop" if v.data["stopwatch"] else "Start", ("op", "stopwatch"))

    def s_settings(self, b: Builder, v: View) -> None:
        b.topbar("Settings")
        self.nav_rows(b, v, [("Display", "row:display", ("push", "clock/display", "")),
                             ("Alarms", "row:alarms", ("push", "clock/alarm_settings", "")),
                             ("Help", "row:help", _info("clock", "Help")),
                             ("Feedback", "row:feedback", _info("clock", "Feedback"))], row_h=32)

    def s_display(self, b: Builder, v: View) -> None:
        b.topbar("Display")
        self.toggles(b, v, [("dark_mode", "Dark mode"), ("h24", "24-hour clock"), ("show_seconds", "Show seconds")])

    def s_alarm_settings(self, b: Builder, v: View) -> None:
        b.topbar("Alarms")
        self.toggles(b, v, [("gradual_volume", "Gradual volume"), ("vibrate", "Vibrate")])

    def o_more(self, b: Builder, v: View, arg: str) -> None:
        b.menu(v.perm("more", [("Settings", "menu:settings", ("push", "clock/settings", "")),
                               ("Help", "menu:help", _info("clock", "Help")),
                               ("Feedback", "menu:feedback", _info("clock", "Feedback"))]))

    def o_alarm_menu(self, b: Builder, v: View, aid: str) -> None:
        b.menu(v.perm("alarm_menu", [("Delete", "menu:delete", ("overlay", "clock/confirm_delete", aid)),
                                     ("Skip next", "menu:skip", ("close",))]), top=120)

    def o_confirm_delete(self, b: Builder, v: View, aid: str) -> None:
        b.dialog("Delete alarm?", f"The {aid} alarm is removed.",
                 v.perm("confirm", [("Cancel", "btn:cancel", ("close",)), ("Delete", "btn:delete", ("op", "delete_alarm", aid))]))

    def op_toggle_alarm(self, state: PhoneState, aid: str) -> None:
        a = self.alarm(state.data[self.key], aid)
        if a:
            a["on"] = not a["on"]

    def op_save_alarm(self, state: PhoneState) -> None:
        data, page = state.data[self.key], state.page
        match = re.fullmatch(r"(\d{1,2}):(\d{2})", page.fields.get("field:time", "").strip())
        if not match or int(match[1]) > 23 or int(match[2]) > 59:
            page.note = "Enter a time like 7:30"
            return
        h, m = match[1], match[2]
        label = page.fields.get("field:label", "")
        old = self.alarm(data, page.arg) if page.arg else None
        if old is not None:
            data["alarms"].remove(old)
        data["alarms"] = [a for a in data["alarms"] if (a["h"], a["m"]) != (int(h), int(m))]
        data["alarms"].append({"h": int(h), "m": int(m), "on": True, "label": label})
        data["alarms"].sort(key=lambda a: (a["h"], a["m"]))
        state.stack.pop()

    def op_delete_alarm(self, state: PhoneState, aid: str) -> None:
        data = state.data[self.key]
        data["alarms"] = [a for a in data["alarms"] if alarm_id(a["h"], a["m"]) != aid]
        state.overlay = None
        self.pop_to(state, "clock/alarms")

    def op_start_timer(self, state: PhoneState) -> None:
        text = state.page.fields.get("field:minutes", "").strip()
        if text.isdigit() and 0 < int(text) < 1000:
            state.data[self.key]["timer"] = int(text)
            state.page.fields = {}
            state.page.focus = ""

    def op_stop_timer(self, state: PhoneState) -> None:
        state.data[self.key]["timer"] = 0

    def op_stopwatch(self, state: PhoneState) -> None:
        state.data[self.key]["stopwatch"] = not state.data[self.key]["stopwatch"]

    def op_add_city(self, state: PhoneState, city: str) -> None:
        cities = state.data[self.key]["cities"]
        if city not in cities:
            cities.append(city)
        state.stack.pop()


# ============================================================================= launcher & popups
APP_LIST: tuple[App, ...] = (SettingsApp(), MessagesApp(), NotesApp(), ShopApp(), GalleryApp(), ClockApp())
APPS: dict[str, App] = {a.key: a for a in APP_LIST}
APP_BY_NAME: dict[str, App] = {a.name.lower(): a for a in APP_LIST}
DECOY_APPS = ("camera", "maps", "music", "weather", "calendar", "files")


def build_launcher(state: PhoneState) -> Builder:
    """The home screen: a dense grid of app icons (their order shuffled per episode)."""
    b = Builder("launcher/home", Page("launcher/home"))
    b.add(Widget("text:clock", "text", (8, 30, W - 8, 70), text="9:41", style="center big"))
    b.add(Widget("text:date", "text", (8, 70, W - 8, 86), text="Tuesday, 14 May", style="center"))
    b.y = 100
    keys = [a.key for a in APP_LIST] + list(DECOY_APPS)
    view = View(state, "launcher", b.page)
    cells = [Entry(f"app:{k}", APPS[k].name if k in APPS else k.title(), kind="cell", glyph=f"app:{k}",
                   tap=("open", k) if k in APPS else ("noop",)) for k in view.perm("icons", keys)]
    b.grid(cells, cols=4, cell_h=58)
    return b


POPUPS: dict[str, tuple[str, str, tuple[tuple[str, str, Cmd], ...], bool]] = {
    # kind: (title, body, buttons (label, id, command), has a label-free close icon)
    "rate": ("Enjoying {app}?", "Rate us in the store.", (("Not now", "btn:dismiss", ("dismiss",)), ("Rate", "btn:accept", ("accept",))), False),
    "notifications": ("Allow notifications?", "{app} would like to notify you.",
                      (("Don't allow", "btn:dismiss", ("dismiss",)), ("Allow", "btn:allow", ("dismiss",))), False),
    "whats_new": ("What's new in {app}", "Faster and fresher.", (("Got it", "btn:dismiss", ("dismiss",)),), True),
    "survey": ("Help us improve", "A 1-minute survey about {app}?", (("Later", "btn:dismiss", ("dismiss",)), ("Start", "btn:accept", ("accept",))), True),
}


def build_popup(b: Builder, kind: str, app_name: str, state: PhoneState) -> None:
    """Add the interrupting popup ``kind`` as a modal overlay (buttons shuffled per episode)."""
    title, body, buttons, close = POPUPS[kind]
    order = View(state, "popup", b.page or Page("")).perm(f"popup:{kind}", buttons)
    b.dialog(title.format(app=app_name), body.format(app=app_name), order, close=("dismiss",) if close else None)
