"""The six apps of the synthetic phone (Settings, Notes, Messages, Shop, Gallery, Clock), the
launcher and the interrupting popups, built with :mod:`guimem.phone.toolkit`.
"""

from __future__ import annotations

import random
import re
from typing import Callable, Sequence

from guimem.phone.catalogue import PHOTO_SUBJECTS, STICKERS
from guimem.phone.toolkit import (
    TABS_TOP,
    App,
    Builder,
    Cmd,
    Entry,
    Page,
    PhoneState,
    View,
    W,
    Widget,
    info_page,
    slug,
    stable_int,
)

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
    TOGGLE_SECTIONS = {"network": (("wifi", "Wi-Fi"), ("bluetooth", "Bluetooth"), ("airplane", "Airplane mode")),
                       "display": (("dark_theme", "Dark theme"), ("auto_rotate", "Auto-rotate")),
                       "sound": (("vibrate", "Vibrate on ring"), ("dnd", "Do not disturb")),
                       "battery": (("battery_saver", "Battery saver"),)}
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
        items += [(label, f"row:{slug(label)}", info_page("settings", label)) for label in self.DEAD_ENDS]
        self.nav_rows(b, v, items)

    def s_network(self, b: Builder, v: View) -> None:
        b.topbar("Network & internet")
        entries = self.toggle_entries(v, self.section_items(v.variant, "network"))
        b.rows(entries + [Entry("row:data_usage", "Data usage", tap=info_page("settings", "Data usage"), chevron=True)])

    def s_display(self, b: Builder, v: View) -> None:
        b.topbar("Display")
        entries = self.toggle_entries(v, self.section_items(v.variant, "display"))
        entries.append(Entry("row:font_size", "Font size", sub=v.data["font_size"], tap=("overlay", "settings/font_size", ""),
                             chevron=True))
        b.rows(v.perm("display", entries), row_h=32)

    def s_sound(self, b: Builder, v: View) -> None:
        b.topbar("Sound")
        entries = self.toggle_entries(v, self.section_items(v.variant, "sound"))
        entries.append(Entry("row:ringtone", "Ringtone", sub=v.data["ringtone"], tap=("push", "settings/ringtone", ""),
                             chevron=True))
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
        b.rows(self.toggle_entries(v, self.section_items(v.variant, "battery"))
               + [Entry("row:battery_usage", "Battery usage", tap=info_page("settings", "Battery usage"), chevron=True)])

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
    TOGGLE_SECTIONS = {"display": (("dark_mode", "Dark mode"), ("large_text", "Large text"), ("show_previews", "Show previews")),
                       "editor_settings": (("auto_save", "Auto-save"), ("spell_check", "Spell check")),
                       "backup": (("cloud_backup", "Back up to cloud"),)}
    settings = ("Preferences", "notes/preferences")

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
        icons = v.perm("toolbar", self.root_icons(v, [("search", "icon:search", ("push", "notes/search", "")),
                                                      ("more", "icon:more", ("overlay", "notes/overflow", ""))]))
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
                             ("About", "row:about", info_page("notes", "About"))], row_h=32)

    def s_display(self, b: Builder, v: View) -> None:
        b.topbar("Display")
        self.toggles(b, v, self.section_items(v.variant, "display"))

    def s_editor_settings(self, b: Builder, v: View) -> None:
        b.topbar("Editor")
        self.toggles(b, v, self.section_items(v.variant, "editor_settings"))

    def s_backup(self, b: Builder, v: View) -> None:
        b.topbar("Backup")
        b.text("Last backup: never", style="sub")
        self.toggles(b, v, self.section_items(v.variant, "backup"))

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
        b.menu(v.perm("overflow", self.overflow_entries(v, [
                                   ("Sort by", "menu:sort_by", info_page("notes", "Sort by")),
                                   ("Trash", "menu:trash", ("push", "notes/trash", "")),
                                   ("Help", "menu:help", info_page("notes", "Help"))])))

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
    TOGGLE_SECTIONS = {"appearance": (("dark_mode", "Dark mode"), ("large_text", "Large text"), ("bubble_colours", "Bubble colours")),
                       "notifications": (("sounds", "Sounds"), ("vibrate", "Vibrate"), ("previews", "Message previews")),
                       "privacy": (("read_receipts", "Read receipts"), ("typing_indicator", "Typing indicator"))}

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
                             ("Storage", "row:storage", info_page("messages", "Storage")),
                             ("Help", "row:help", info_page("messages", "Help"))], row_h=32)

    def s_appearance(self, b: Builder, v: View) -> None:
        b.topbar("Appearance")
        self.toggles(b, v, self.section_items(v.variant, "appearance"))

    def s_notifications(self, b: Builder, v: View) -> None:
        b.topbar("Notifications")
        self.toggles(b, v, self.section_items(v.variant, "notifications"))

    def s_privacy(self, b: Builder, v: View) -> None:
        b.topbar("Privacy")
        self.toggles(b, v, self.section_items(v.variant, "privacy"))

    def s_calls(self, b: Builder, v: View) -> None:
        b.topbar("Calls", back=False)
        b.tabs(v.perm("tabs", self.TABS), v.page.screen)
        b.rows([Entry(f"item:{slug(first_name(c['contact']))}", c["contact"], sub=f"{2 + i} days ago",
                      tap=info_page("messages", "Call details")) for i, c in enumerate(v.data["chats"][:6])])

    def o_thread_menu(self, b: Builder, v: View, contact: str) -> None:
        chat = self.chat(v.data, contact) or {"muted": False}
        b.menu(v.perm("thread_menu", [("Unmute" if chat["muted"] else "Mute", "menu:mute", ("op", "mute", contact)),
                                      ("Block", "menu:block", info_page("messages", "Blocked contacts")),
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
    TOGGLE_SECTIONS = {"appearance": (("dark_mode", "Dark mode"), ("compact_list", "Compact list")),
                       "notifications": (("deal_alerts", "Deal alerts"), ("order_updates", "Order updates"))}

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
                             ("Help", "row:help", info_page("shop", "Help"))], row_h=32)

    def s_orders(self, b: Builder, v: View) -> None:
        b.topbar("Orders")
        orders = v.data["orders"]
        if not orders:
            b.text("No orders yet", style="sub")
        b.rows([Entry(f"item:order_{i + 1}", f"Order #{i + 1}", sub=f"{o['n']} items · {o['delivery']}",
                      tap=info_page("shop", f"Order #{i + 1}")) for i, o in enumerate(orders)])

    def s_wishlist(self, b: Builder, v: View) -> None:
        b.topbar("Wishlist")
        self._product_rows(b, v, v.data["wishlist"], add=False)

    def s_settings(self, b: Builder, v: View) -> None:
        b.topbar("Settings")
        self.nav_rows(b, v, [("Appearance", "row:appearance", ("push", "shop/appearance", "")),
                             ("Notifications", "row:notifications", ("push", "shop/notifications", "")),
                             ("Payment methods", "row:payment_methods", info_page("shop", "Payment methods")),
                             ("Addresses", "row:addresses", info_page("shop", "Addresses"))], row_h=32)

    def s_appearance(self, b: Builder, v: View) -> None:
        b.topbar("Appearance")
        self.toggles(b, v, self.section_items(v.variant, "appearance"))

    def s_notifications(self, b: Builder, v: View) -> None:
        b.topbar("Notifications")
        self.toggles(b, v, self.section_items(v.variant, "notifications"))

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
    TOGGLE_SECTIONS = {"settings": (("dark_mode", "Dark mode"), ("show_dates", "Show dates"), ("auto_backup", "Auto backup"))}
    settings = ("Settings", "gallery/settings")

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
        b.topbar("Gallery", back=False, icons=v.perm("toolbar", self.root_icons(v, [("more", "icon:more", ("overlay", "gallery/more", ""))])))
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
        self.toggles(b, v, self.section_items(v.variant, "settings"))

    def s_editor(self, b: Builder, v: View) -> None:
        b.topbar("Edit photo")
        b.picture(f"photo:{v.page.arg}", 160)
        for f in ("Vivid", "Mono", "Warm"):
            b.button(f"btn:{slug(f)}", f, ("noop",), flat=True)

    def o_more(self, b: Builder, v: View, arg: str) -> None:
        b.menu(v.perm("more", self.overflow_entries(v, [("Select", "menu:select", info_page("gallery", "Select")),
                                                        ("Help", "menu:help", info_page("gallery", "Help"))])))

    def o_viewer_more(self, b: Builder, v: View, subject: str) -> None:
        b.menu(v.perm("viewer_more", [("Details", "menu:details", info_page("gallery", "Details")),
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
    TOGGLE_SECTIONS = {"display": (("dark_mode", "Dark mode"), ("h24", "24-hour clock"), ("show_seconds", "Show seconds")),
                       "alarm_settings": (("gradual_volume", "Gradual volume"), ("vibrate", "Vibrate"))}
    settings = ("Settings", "clock/settings")

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
        b.topbar("Clock", back=False, icons=v.perm("toolbar", self.root_icons(v, [("more", "icon:more", ("overlay", "clock/more", ""))])))
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
                             ("Help", "row:help", info_page("clock", "Help")),
                             ("Feedback", "row:feedback", info_page("clock", "Feedback"))], row_h=32)

    def s_display(self, b: Builder, v: View) -> None:
        b.topbar("Display")
        self.toggles(b, v, self.section_items(v.variant, "display"))

    def s_alarm_settings(self, b: Builder, v: View) -> None:
        b.topbar("Alarms")
        self.toggles(b, v, self.section_items(v.variant, "alarm_settings"))

    def o_more(self, b: Builder, v: View, arg: str) -> None:
        b.menu(v.perm("more", self.overflow_entries(v, [
                               ("Help", "menu:help", info_page("clock", "Help")),
                               ("Feedback", "menu:feedback", info_page("clock", "Feedback"))])))

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
