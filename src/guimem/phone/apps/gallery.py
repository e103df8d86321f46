"""The Gallery app: a grid of label-free photos, a viewer with favourite, share and delete, albums,
a trash, a photo editor, and settings.
"""

from __future__ import annotations

import random
from typing import Sequence

from guimem.phone.catalogue import PHOTO_SUBJECTS
from guimem.phone.apps.base import App, info_page, operation, overlay, screen
from guimem.phone.toolkit import Builder, Entry, PhoneState, View, Widget, slug


SHARE_TARGETS = ("Messages", "Notes", "Mail", "Drive")
SHARE_GLYPHS = {"Messages": "app:messages", "Notes": "app:notes", "Mail": "app:calendar", "Drive": "app:files"}


class GalleryApp(App):
    key, name, root = "gallery", "Gallery", "gallery/photos"
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

    @screen
    def s_photos(self, b: Builder, v: View) -> None:
        b.topbar("Gallery", back=False, icons=v.perm("toolbar", self.root_icons(v, [("more", "icon:more", ("overlay", "gallery/more", ""))])))
        b.tabs(v.perm("tabs", self.TABS), v.page.screen)
        if v.data["prefs"]["show_dates"]:
            b.text("Today", style="sub")
        self._grid(b, v.data["photos"], "gallery/viewer")

    @screen
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

    @screen
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

    @screen
    def s_album(self, b: Builder, v: View) -> None:
        b.topbar(v.page.arg)
        photos = self._album(v.data, v.page.arg)
        if not photos:
            b.text("No photos yet", style="sub")
        self._grid(b, photos, "gallery/viewer")

    @screen
    def s_trash(self, b: Builder, v: View) -> None:
        b.topbar("Trash")
        b.text("Photos are deleted after 30 days", style="sub")
        self._grid(b, [{"subject": s, "fav": False} for s in v.data["trash"]], "gallery/trash_item")

    @screen
    def s_trash_item(self, b: Builder, v: View) -> None:
        b.topbar("")
        b.picture(f"photo:{v.page.arg}", 180)
        for wid, label, cmd in v.perm("trash_item", [("btn:restore", "Restore", ("op", "restore", v.page.arg)),
                                                     ("btn:delete_forever", "Delete forever", ("op", "purge", v.page.arg))]):
            b.button(wid, label, cmd)

    @screen
    def s_new_album(self, b: Builder, v: View) -> None:
        b.topbar("New album", icons=[("check", "icon:save", ("op", "create_album"))])
        b.field("field:name", "Album name")

    @screen
    def s_settings(self, b: Builder, v: View) -> None:
        b.topbar("Settings")
        self.toggles(b, v, self.section_items(v.variant, "settings"))

    @screen
    def s_editor(self, b: Builder, v: View) -> None:
        b.topbar("Edit photo")
        b.picture(f"photo:{v.page.arg}", 160)
        for f in ("Vivid", "Mono", "Warm"):
            b.button(f"btn:{slug(f)}", f, ("noop",), flat=True)

    @overlay
    def o_more(self, b: Builder, v: View, arg: str) -> None:
        b.menu(v.perm("more", self.overflow_entries(v, [("Select", "menu:select", info_page("gallery", "Select")),
                                                        ("Help", "menu:help", info_page("gallery", "Help"))])))

    @overlay
    def o_viewer_more(self, b: Builder, v: View, subject: str) -> None:
        b.menu(v.perm("viewer_more", [("Details", "menu:details", info_page("gallery", "Details")),
                                      ("Edit", "menu:edit", ("push", "gallery/editor", subject)),
                                      ("Set as wallpaper", "menu:wallpaper", ("close",))]))

    @overlay
    def o_confirm_delete(self, b: Builder, v: View, subject: str) -> None:
        b.dialog("Delete photo?", "It moves to the trash.",
                 v.perm("confirm", [("Cancel", "btn:cancel", ("close",)), ("Delete", "btn:delete", ("op", "delete", subject))]))

    @overlay
    def o_share_sheet(self, b: Builder, v: View, subject: str) -> None:
        b.sheet("Share with", [(t, f"share:{slug(t)}", SHARE_GLYPHS[t], ("op", "share", subject, t))
                               for t in v.perm("share", SHARE_TARGETS)])

    @operation
    def op_fav(self, state: PhoneState, subject: str) -> None:
        p = self.photo(state.data[self.key], subject)
        if p:
            p["fav"] = not p["fav"]

    @operation
    def op_delete(self, state: PhoneState, subject: str) -> None:
        data = state.data[self.key]
        p = self.photo(data, subject)
        if p:
            data["photos"].remove(p)
            data["trash"].insert(0, subject)
        state.overlay = None
        state.stack.pop()

    @operation
    def op_share(self, state: PhoneState, subject: str, target: str) -> None:
        state.data[self.key]["shared"].append([subject, target])
        state.overlay = None
        state.page.note = f"Shared with {target}"

    @operation
    def op_restore(self, state: PhoneState, subject: str) -> None:
        data = state.data[self.key]
        if subject in data["trash"]:
            data["trash"].remove(subject)
            data["photos"].insert(0, {"subject": subject, "fav": False})
        state.stack.pop()

    @operation
    def op_purge(self, state: PhoneState, subject: str) -> None:
        data = state.data[self.key]
        data["trash"] = [s for s in data["trash"] if s != subject]
        state.stack.pop()

    @operation
    def op_create_album(self, state: PhoneState) -> None:
        name = state.page.fields.get("field:name", "").strip()
        albums = state.data[self.key]["albums"]
        if name and name not in albums:
            albums.append(name)
            state.stack.pop()

