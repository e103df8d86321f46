"""What every app shares: the :class:`App` base class, its registries of screens, overlays and
data operations, and the pieces several apps build with (the dead-end info page, toggles, rows).

Every app has at least 8 screen types (``App.screens``), a dead-end ``info`` screen, an
overflow or tab path to its settings, and per-episode layout shuffles (``View.perm``).

An app declares its screens, overlays and operations by decorating methods with
:func:`screen` (``s_<name>``), :func:`overlay` (``o_<name>``) and :func:`operation`
(``op_<name>``); each class then holds them in the registries ``screens``, ``overlays`` and
``operations`` (name -> method), which is all the world dispatches on.
"""

from __future__ import annotations

import random
from typing import Any, Callable, ClassVar, Sequence, TypeVar

from guimem.phone.toolkit import ROW_H, AppVariant, Builder, Cmd, Entry, Page, PhoneState, View, slug

F = TypeVar("F", bound=Callable[..., None])

REGISTRIES: dict[str, str] = {"screen": "s_", "overlay": "o_", "operation": "op_"}
"""What an app registers (see :class:`App`) and the prefix of the method names that register it."""


def _registrar(kind: str) -> Callable[[F], F]:
    prefix = REGISTRIES[kind]

    def register(method: F) -> F:
        if not method.__name__.startswith(prefix):
            raise TypeError(f"{method.__qualname__}: a method registered as {kind} is named {prefix}<name>")
        method.registered_as = (kind, method.__name__[len(prefix):])  # type: ignore[attr-defined]
        return method

    register.__doc__ = f"Register a method ``{prefix}<name>`` as the app's {kind} ``<name>``."
    return register


screen = _registrar("screen")
overlay = _registrar("overlay")
operation = _registrar("operation")


class UnknownName(LookupError):
    """A screen, overlay or operation that the app does not register."""


class Registry(dict[str, Callable[..., None]]):
    """One app's screens, overlays or operations by name; looking up another name raises an
    :class:`UnknownName` that lists the registered ones."""

    def __init__(self, app: str, kind: str):
        super().__init__()
        self.app, self.kind = app, kind

    def __missing__(self, name: str) -> Callable[..., None]:
        raise UnknownName(f"the {self.app} app has no {self.kind} {name!r}; its {self.kind}s: {', '.join(self)}")


class App:
    """An app: its screens, overlays and data operations, each registered under its name.

    A subclass's registries (``screens``, ``overlays``, ``operations``: name -> method) hold the
    methods it and its bases decorate with :func:`screen`, :func:`overlay` and :func:`operation`:
    its own in the order it defines them, then those it inherits (a method it defines wins).
    """

    key: str = ""
    name: str = ""
    root: str = ""  # screen shown when the app opens
    screens: ClassVar[Registry]  # every base screen type (without the "<key>/" prefix) -> its builder
    overlays: ClassVar[Registry]  # every overlay type -> its builder
    operations: ClassVar[Registry]  # every data operation -> its method
    search_screens: frozenset[str] = frozenset()  # screens whose search field is focused on entry
    dark_key: str = "dark_mode"  # the pref that switches this app to the dark theme
    # settings pages (screen name) -> their switches (pref key, label) in the reference design; a variant moves some
    TOGGLE_SECTIONS: dict[str, tuple[tuple[str, str], ...]] = {}
    settings: tuple[str, str] | None = None  # (label, screen) of the page a variant may open from a toolbar gear

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        tables = {kind: Registry(cls.name, kind) for kind in REGISTRIES}
        for klass in cls.__mro__:
            for method in vars(klass).values():
                if hasattr(method, "registered_as"):
                    kind, name = method.registered_as
                    tables[kind].setdefault(name, method)
        cls.screens, cls.overlays, cls.operations = (tables[kind] for kind in REGISTRIES)

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
        b = Builder(page.screen, page, state.variant(self.key))
        self.screens[name](self, b, View(state, self.key, page))
        return b

    def build_overlay(self, b: Builder, state: PhoneState, oid: str, arg: str) -> None:
        self.overlays[oid.split("/", 1)[1]](self, b, View(state, self.key, state.page), arg)

    def operate(self, state: PhoneState, name: str, *args: Any) -> None:
        """Run the data operation ``name`` on ``state``."""
        self.operations[name](self, state, *args)

    # -- shared pieces
    @screen
    def s_info(self, b: Builder, v: View) -> None:
        """A dead end: a page with nothing useful on it."""
        b.topbar(v.page.arg or "About")
        b.text(f"{self.name} · {v.page.arg}", big=True)
        for line in ("Nothing to change here.", "Version 4.2.1", "Go back to continue."):
            b.text(line, style="sub")

    # -- where things sit in a variant
    def section_items(self, variant: AppVariant, screen: str) -> list[tuple[str, str]]:
        """The switches (key, label) on settings page ``screen`` in ``variant``: the reference ones
        not moved away, then those moved here."""
        moved = dict(variant.moved)
        items = [(k, label) for k, label in self.TOGGLE_SECTIONS[screen] if moved.get(k, screen) == screen]
        return items + [(k, label) for s, its in self.TOGGLE_SECTIONS.items() if s != screen
                        for k, label in its if moved.get(k) == screen]

    def switch_screen(self, variant: AppVariant, key: str) -> str:
        """The settings page (screen name) that shows the switch ``key`` in ``variant``."""
        home = next(s for s, its in self.TOGGLE_SECTIONS.items() if any(k == key for k, _ in its))
        return dict(variant.moved).get(key, home)

    def root_icons(self, v: View, icons: Sequence[tuple[str, str, Cmd]]) -> list[tuple[str, str, Cmd]]:
        """The root screen's toolbar icons, with the settings gear where the variant puts settings there."""
        icons = list(icons)
        if self.settings is not None and v.variant.settings_entry == "toolbar":
            icons.insert(0, ("gear", "icon:settings", ("push", self.settings[1], "")))
        return icons

    def overflow_entries(self, v: View, entries: Sequence[tuple[str, str, Cmd]]) -> list[tuple[str, str, Cmd]]:
        """An overflow menu's entries, with the settings entry first where the variant keeps it there."""
        entries = list(entries)
        if self.settings is not None and v.variant.settings_entry == "overflow":
            label, screen = self.settings
            entries.insert(0, (label, f"menu:{slug(label)}", ("push", screen, "")))
        return entries

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

    @operation
    def op_toggle(self, state: PhoneState, where: str, key: str) -> None:
        d = state.data[self.key][where]
        d[key] = not d[key]

    def pop_to(self, state: PhoneState, screen: str) -> None:
        """Pop pages until ``screen`` is on top (or only the root is left)."""
        while len(state.stack) > 1 and state.page.screen != screen:
            state.stack.pop()


def info_page(app: str, topic: str) -> Cmd:
    return ("push", f"{app}/info", topic)
