"""The Settings app: network, display and sound switches, ringtones, per-app notifications and
app info, a settings search, and dead-end sections.
"""

from __future__ import annotations

import random
from typing import Iterable

from guimem.phone.apps.base import App, info_page, operation, overlay, screen
from guimem.phone.toolkit import Builder, Entry, PhoneState, View, slug


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
    search_screens = frozenset({"search"})
    dark_key = "dark_theme"
    SECTIONS = (("Network & internet", "network"), ("Display", "display"), ("Sound", "sound"),
                ("Notifications", "notifications"), ("Apps", "apps"), ("Battery", "battery"))
    TOGGLE_SECTIONS = {"network": (("wifi", "Wi-Fi"), ("bluetooth", "Bluetooth"), ("airplane", "Airplane mode")),
                       "display": (("dark_theme", "Dark theme"), ("auto_rotate", "Auto-rotate")),
                       "sound": (("vibrate", "Vibrate on ring"), ("dnd", "Do not disturb")),
                       "battery": (("battery_saver", "Battery saver"),)}
    DEAD_ENDS = ("Storage", "Security", "Accessibility", "Location", "System", "About phone")

    def __init__(self, installed: Iterable[str]):
        """``installed``: the names of the phone's other apps, listed before ``OTHER_APPS`` on the
        Apps and Notifications pages."""
        self.installed = tuple(installed)

    def init_data(self, rng: random.Random) -> dict:
        prefs = {k: rng.random() < 0.5 for k, _, _ in SETTING_INDEX.values()}
        prefs["dark_theme"] = rng.random() < 0.25
        apps = list(self.installed) + list(OTHER_APPS)
        return {"prefs": prefs, "notif": {a: rng.random() < 0.8 for a in apps}, "apps": apps,
                "font_size": rng.choice(FONT_SIZES), "ringtone": rng.choice(RINGTONES), "cleared": []}

    @screen
    def s_main(self, b: Builder, v: View) -> None:
        b.topbar("Settings", back=False, icons=[("search", "icon:search", ("push", "settings/search", ""))])
        items = [(label, f"row:{slug(label)}", ("push", f"settings/{s}", "")) for label, s in self.SECTIONS]
        items += [(label, f"row:{slug(label)}", info_page("settings", label)) for label in self.DEAD_ENDS]
        self.nav_rows(b, v, items)

    @screen
    def s_network(self, b: Builder, v: View) -> None:
        b.topbar("Network & internet")
        entries = self.toggle_entries(v, self.section_items(v.variant, "network"))
        b.rows(entries + [Entry("row:data_usage", "Data usage", tap=info_page("settings", "Data usage"), chevron=True)])

    @screen
    def s_display(self, b: Builder, v: View) -> None:
        b.topbar("Display")
        entries = self.toggle_entries(v, self.section_items(v.variant, "display"))
        entries.append(Entry("row:font_size", "Font size", sub=v.data["font_size"], tap=("overlay", "settings/font_size", ""),
                             chevron=True))
        b.rows(v.perm("display", entries), row_h=32)

    @screen
    def s_sound(self, b: Builder, v: View) -> None:
        b.topbar("Sound")
        entries = self.toggle_entries(v, self.section_items(v.variant, "sound"))
        entries.append(Entry("row:ringtone", "Ringtone", sub=v.data["ringtone"], tap=("push", "settings/ringtone", ""),
                             chevron=True))
        b.rows(v.perm("sound", entries), row_h=32)

    @screen
    def s_ringtone(self, b: Builder, v: View) -> None:
        b.topbar("Ringtone")
        b.rows([Entry(f"radio:{slug(r)}", r, kind="radio", on=v.data["ringtone"] == r, tap=("op", "set", "ringtone", r))
                for r in RINGTONES])

    @screen
    def s_notifications(self, b: Builder, v: View) -> None:
        b.topbar("Notifications")
        self.toggles(b, v, [(a, a) for a in v.data["apps"]], where="notif")

    @screen
    def s_apps(self, b: Builder, v: View) -> None:
        b.topbar("Apps")
        b.rows([Entry(f"item:{slug(a)}", a, sub="Installed", tap=("push", "settings/app_info", a), chevron=True)
                for a in v.data["apps"]])

    @screen
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

    @screen
    def s_battery(self, b: Builder, v: View) -> None:
        b.topbar("Battery")
        b.text("Battery 76% · about 9 h left", big=True)
        b.rows(self.toggle_entries(v, self.section_items(v.variant, "battery"))
               + [Entry("row:battery_usage", "Battery usage", tap=info_page("settings", "Battery usage"), chevron=True)])

    @screen
    def s_search(self, b: Builder, v: View) -> None:
        b.topbar("Search settings")
        b.field("field:search", "Search settings")
        query = v.page.fields.get("query")
        if query is None:
            return
        say, q = v.variant.say, query.lower()
        hits = [label for label in SETTING_INDEX if q and (q in label.lower() or q in say(label).lower())]
        if not hits:
            b.text("No results", style="sub")
        screens = {key: self.switch_screen(v.variant, key) for key, _, _ in SETTING_INDEX.values()}
        titles = dict((s, label) for label, s in self.SECTIONS)
        b.rows([Entry(f"item:{slug(h)}", h, sub=titles[screens[SETTING_INDEX[h][0]]],
                      tap=("push", f"settings/{screens[SETTING_INDEX[h][0]]}", "")) for h in hits])

    @overlay
    def o_font_size(self, b: Builder, v: View, arg: str) -> None:
        b.dialog("Font size", "", [("Cancel", "btn:cancel", ("close",))],
                 options=[(f, f"radio:{slug(f)}", v.data["font_size"] == f, ("op", "set_font", f)) for f in FONT_SIZES])

    @overlay
    def o_confirm_clear(self, b: Builder, v: View, arg: str) -> None:
        b.dialog("Clear cache?", f"Cached data of {arg} will be removed.",
                 v.perm("confirm", [("Cancel", "btn:cancel", ("close",)), ("OK", "btn:ok", ("op", "clear_cache", arg))]))

    @operation
    def op_set(self, state: PhoneState, key: str, value: str) -> None:
        state.data[self.key][key] = value

    @operation
    def op_set_font(self, state: PhoneState, size: str) -> None:
        state.data[self.key]["font_size"] = size
        state.overlay = None

    @operation
    def op_clear_cache(self, state: PhoneState, app: str) -> None:
        if app not in state.data[self.key]["cleared"]:
            state.data[self.key]["cleared"].append(app)
        state.overlay = None

