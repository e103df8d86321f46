"""The Notes app: a list of notes (pinned first), viewing and editing, search, a trash, and
preferences reached from the overflow menu or a toolbar gear.
"""

from __future__ import annotations

import random

from guimem.phone.apps.base import App, info_page, operation, overlay, screen
from guimem.phone.toolkit import TABS_TOP, Builder, Entry, Page, PhoneState, View, slug


NOTE_TITLES = ("Groceries", "Book club", "Gift ideas", "Packing list", "Recipes", "Workout plan", "Meeting notes",
               "Garden", "Movies to watch", "Travel plans", "Birthday party", "Reading list", "Car service", "Budget",
               "Podcast ideas", "Home repairs", "Weekend", "Lecture notes", "Yoga", "Dentist")
NOTE_BODIES = ("milk, eggs, bread", "call before Friday", "ask Maya about it", "passport and charger",
               "try the lemon cake", "three sets of ten", "agenda for Monday", "plant tomatoes", "two hours max",
               "book the train", "bring snacks", "start chapter two")


class NotesApp(App):
    key, name, root = "notes", "Notes", "notes/list"
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

    @screen
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

    @screen
    def s_view(self, b: Builder, v: View) -> None:
        note = self.find(v.data, v.page.arg) or {"title": v.page.arg, "body": "", "pinned": False}
        icons = v.perm("view_toolbar", [("star_filled" if note["pinned"] else "star", "icon:star", ("op", "pin", note["title"])),
                                        ("edit", "icon:edit", ("push", "notes/edit", note["title"])),
                                        ("trash", "icon:delete", ("overlay", "notes/confirm_delete", note["title"]))])
        b.topbar(note["title"], icons=icons)
        b.text(note["title"], big=True, h=24)
        b.text(note["body"])
        b.text("Edited today", style="sub")

    @screen
    def s_edit(self, b: Builder, v: View) -> None:
        b.topbar("Edit note" if v.page.arg else "New note", icons=[("check", "icon:save", ("op", "save_note"))])
        b.field("field:title", "Title")
        b.field("field:body", "Note", h=60)

    @screen
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

    @screen
    def s_preferences(self, b: Builder, v: View) -> None:
        b.topbar("Preferences")
        self.nav_rows(b, v, [("Display", "row:display", ("push", "notes/display", "")),
                             ("Editor", "row:editor", ("push", "notes/editor_settings", "")),
                             ("Backup", "row:backup", ("push", "notes/backup", "")),
                             ("About", "row:about", info_page("notes", "About"))], row_h=32)

    @screen
    def s_display(self, b: Builder, v: View) -> None:
        b.topbar("Display")
        self.toggles(b, v, self.section_items(v.variant, "display"))

    @screen
    def s_editor_settings(self, b: Builder, v: View) -> None:
        b.topbar("Editor")
        self.toggles(b, v, self.section_items(v.variant, "editor_settings"))

    @screen
    def s_backup(self, b: Builder, v: View) -> None:
        b.topbar("Backup")
        b.text("Last backup: never", style="sub")
        self.toggles(b, v, self.section_items(v.variant, "backup"))

    @screen
    def s_trash(self, b: Builder, v: View) -> None:
        b.topbar("Trash")
        trash = v.data["trash"]
        if not trash:
            b.text("Trash is empty", style="sub")
        b.rows([Entry(f"item:{slug(n['title'])}", n["title"], sub="Deleted", long=("overlay", "notes/trash_menu", n["title"]),
                      tap=("overlay", "notes/trash_menu", n["title"])) for n in trash], bottom=TABS_TOP - 40)
        b.y = TABS_TOP - 38
        b.button("btn:empty_trash", "Empty trash", ("overlay", "notes/confirm_empty", ""))

    @overlay
    def o_overflow(self, b: Builder, v: View, arg: str) -> None:
        b.menu(v.perm("overflow", self.overflow_entries(v, [
                                   ("Sort by", "menu:sort_by", info_page("notes", "Sort by")),
                                   ("Trash", "menu:trash", ("push", "notes/trash", "")),
                                   ("Help", "menu:help", info_page("notes", "Help"))])))

    @overlay
    def o_item_menu(self, b: Builder, v: View, title: str) -> None:
        note = self.find(v.data, title) or {"pinned": False}
        b.menu(v.perm("item_menu", [("Unpin" if note["pinned"] else "Pin", "menu:pin", ("op", "pin", title)),
                                    ("Rename", "menu:rename", ("push", "notes/edit", title)),
                                    ("Delete", "menu:delete", ("overlay", "notes/confirm_delete", title))]), top=120)

    @overlay
    def o_confirm_delete(self, b: Builder, v: View, title: str) -> None:
        b.dialog("Delete note?", f"'{title}' goes to the trash.",
                 v.perm("confirm", [("Cancel", "btn:cancel", ("close",)), ("Delete", "btn:delete", ("op", "delete", title))]))

    @overlay
    def o_trash_menu(self, b: Builder, v: View, title: str) -> None:
        b.menu(v.perm("trash_menu", [("Restore", "menu:restore", ("op", "restore", title)),
                                     ("Delete forever", "menu:delete_forever", ("op", "purge", title))]), top=120)

    @overlay
    def o_confirm_empty(self, b: Builder, v: View, arg: str) -> None:
        b.dialog("Empty trash?", "Notes in the trash are lost.",
                 v.perm("confirm", [("Cancel", "btn:cancel", ("close",)), ("Empty", "btn:empty", ("op", "empty_trash"))]))

    @operation
    def op_pin(self, state: PhoneState, title: str) -> None:
        note = self.find(state.data[self.key], title)
        if note:
            note["pinned"] = not note["pinned"]
        state.overlay = None

    @operation
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

    @operation
    def op_delete(self, state: PhoneState, title: str) -> None:
        data = state.data[self.key]
        note = self.find(data, title)
        if note:
            data["notes"].remove(note)
            data["trash"].insert(0, {**note, "pinned": False})
        state.overlay = None
        self.pop_to(state, "notes/list")

    @operation
    def op_restore(self, state: PhoneState, title: str) -> None:
        data = state.data[self.key]
        note = self.find(data, title, "trash")
        if note:
            data["trash"].remove(note)
            data["notes"].insert(0, note)
        state.overlay = None

    @operation
    def op_purge(self, state: PhoneState, title: str) -> None:
        data = state.data[self.key]
        data["trash"] = [n for n in data["trash"] if n["title"] != title]
        state.overlay = None

    @operation
    def op_empty_trash(self, state: PhoneState) -> None:
        state.data[self.key]["trash"] = []
        state.overlay = None

