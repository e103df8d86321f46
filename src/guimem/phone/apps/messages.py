"""The Messages app: chats with contacts, threads with text and sticker messages, composing,
search, calls, and settings behind a bottom tab.
"""

from __future__ import annotations

import random

from guimem.phone.catalogue import STICKERS
from guimem.phone.apps.base import App, info_page, operation, overlay, screen
from guimem.phone.toolkit import TABS_TOP, Builder, Entry, Page, PhoneState, View, W, Widget, slug


CONTACTS = ("Alice Chen", "Bob Smith", "Carla Diaz", "David Kim", "Emma Brown", "Farid Khan", "Grace Lee",
            "Hugo Martin", "Ines Silva", "Jack Wilson", "Kira Novak", "Liam Murphy", "Maya Patel", "Noah Garcia",
            "Olivia Rossi", "Pablo Ortiz", "Quinn Taylor", "Rosa Alvarez")
CHAT_LINES = ("See you soon!", "Thanks a lot", "Running late", "Sounds good", "Call me later", "Happy birthday!",
              "Did you see it?", "On my way", "Lunch tomorrow?", "Got the tickets")


def first_name(contact: str) -> str:
    return contact.split()[0]


class MessagesApp(App):
    key, name, root = "messages", "Messages", "messages/chats"
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

    @screen
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

    @screen
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

    @screen
    def s_compose(self, b: Builder, v: View) -> None:
        b.topbar("New chat")
        b.field("field:to", "To: name")
        typed = v.page.fields.get("field:to", "").lower()
        hits = [c for c in v.data["contacts"] if typed in c.lower()]
        b.rows([Entry(f"item:{slug(first_name(c))}", c, glyph=f"dot:{c}", tap=("op", "open_chat", c)) for c in hits])

    @screen
    def s_stickers(self, b: Builder, v: View) -> None:
        b.topbar("Stickers")
        b.grid([Entry(f"cell:{s}", glyph=f"sticker:{s}", tap=("op", "send_sticker", v.page.arg, s))
                for s in v.perm("stickers", STICKERS)], cols=4, cell_h=44)

    @screen
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

    @screen
    def s_settings(self, b: Builder, v: View) -> None:
        b.topbar("Settings", back=False)
        b.tabs(v.perm("tabs", self.TABS), v.page.screen)
        self.nav_rows(b, v, [("Notifications", "row:notifications", ("push", "messages/notifications", "")),
                             ("Appearance", "row:appearance", ("push", "messages/appearance", "")),
                             ("Privacy", "row:privacy", ("push", "messages/privacy", "")),
                             ("Storage", "row:storage", info_page("messages", "Storage")),
                             ("Help", "row:help", info_page("messages", "Help"))], row_h=32)

    @screen
    def s_appearance(self, b: Builder, v: View) -> None:
        b.topbar("Appearance")
        self.toggles(b, v, self.section_items(v.variant, "appearance"))

    @screen
    def s_notifications(self, b: Builder, v: View) -> None:
        b.topbar("Notifications")
        self.toggles(b, v, self.section_items(v.variant, "notifications"))

    @screen
    def s_privacy(self, b: Builder, v: View) -> None:
        b.topbar("Privacy")
        self.toggles(b, v, self.section_items(v.variant, "privacy"))

    @screen
    def s_calls(self, b: Builder, v: View) -> None:
        b.topbar("Calls", back=False)
        b.tabs(v.perm("tabs", self.TABS), v.page.screen)
        b.rows([Entry(f"item:{slug(first_name(c['contact']))}", c["contact"], sub=f"{2 + i} days ago",
                      tap=info_page("messages", "Call details")) for i, c in enumerate(v.data["chats"][:6])])

    @overlay
    def o_thread_menu(self, b: Builder, v: View, contact: str) -> None:
        chat = self.chat(v.data, contact) or {"muted": False}
        b.menu(v.perm("thread_menu", [("Unmute" if chat["muted"] else "Mute", "menu:mute", ("op", "mute", contact)),
                                      ("Block", "menu:block", info_page("messages", "Blocked contacts")),
                                      ("Delete chat", "menu:delete", ("overlay", "messages/confirm_delete", contact))]))

    @overlay
    def o_chat_menu(self, b: Builder, v: View, contact: str) -> None:
        chat = self.chat(v.data, contact) or {"muted": False}
        b.menu(v.perm("chat_menu", [("Unmute" if chat["muted"] else "Mute", "menu:mute", ("op", "mute", contact)),
                                    ("Delete chat", "menu:delete", ("overlay", "messages/confirm_delete", contact)),
                                    ("Mark as read", "menu:mark_read", ("close",))]), top=120)

    @overlay
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

    @operation
    def op_send(self, state: PhoneState, contact: str) -> None:
        text = state.page.fields.get("field:message", "")
        if text.strip():
            self._append(state, contact, text)
            state.page.fields["field:message"] = ""

    @operation
    def op_send_sticker(self, state: PhoneState, contact: str, sticker: str) -> None:
        self._append(state, contact, f"[sticker:{sticker}]")
        state.stack.pop()

    @operation
    def op_mute(self, state: PhoneState, contact: str) -> None:
        chat = self.chat(state.data[self.key], contact)
        if chat:
            chat["muted"] = not chat["muted"]
        state.overlay = None

    @operation
    def op_delete_chat(self, state: PhoneState, contact: str) -> None:
        data = state.data[self.key]
        data["chats"] = [c for c in data["chats"] if c["contact"] != contact]
        state.overlay = None
        self.pop_to(state, "messages/chats")

    @operation
    def op_open_chat(self, state: PhoneState, contact: str) -> None:
        state.stack.pop()
        state.stack.append(self.new_page("messages/thread", contact, state))

