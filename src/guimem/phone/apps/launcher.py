"""The phone's apps and its home screen: the six installed apps (``APP_LIST``, by key in ``APPS``,
by lower-case name in ``APP_BY_NAME``) and the launcher's grid of their icons among decoys.
"""

from __future__ import annotations

from guimem.phone.apps.base import App
from guimem.phone.apps.clock import ClockApp
from guimem.phone.apps.gallery import GalleryApp
from guimem.phone.apps.messages import MessagesApp
from guimem.phone.apps.notes import NotesApp
from guimem.phone.apps.settings import SettingsApp
from guimem.phone.apps.shop import ShopApp
from guimem.phone.toolkit import Builder, Entry, Page, PhoneState, View, W, Widget

_BESIDE_SETTINGS: tuple[App, ...] = (MessagesApp(), NotesApp(), ShopApp(), GalleryApp(), ClockApp())
APP_LIST: tuple[App, ...] = (SettingsApp(a.name for a in _BESIDE_SETTINGS), *_BESIDE_SETTINGS)
"""Every installed app, in the order the phone draws their content and the launcher lists them."""
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
