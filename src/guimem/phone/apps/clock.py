"""The Clock app: alarms (with a time form that checks its input), a timer, world clocks with a city
search, a stopwatch, and settings.
"""

from __future__ import annotations

import random
import re

from guimem.phone.apps.base import App, info_page, operation, overlay, screen
from guimem.phone.toolkit import TABS_TOP, Builder, Entry, Page, PhoneState, View, slug, stable_int


CITIES = ("Amsterdam", "Athens", "Bangkok", "Berlin", "Cairo", "Chicago", "Dubai", "Lima", "Lisbon", "London",
          "Madrid", "Mumbai", "Nairobi", "Oslo", "Paris", "Rome", "Seoul", "Sydney", "Tokyo", "Toronto")


def alarm_id(h: int, m: int) -> str:
    return f"{h}:{m:02d}"


class ClockApp(App):
    key, name, root = "clock", "Clock", "clock/alarms"
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

    @screen
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

    @screen
    def s_new_alarm(self, b: Builder, v: View) -> None:
        b.topbar("New alarm", icons=[("check", "icon:save", ("op", "save_alarm"))])
        self._alarm_form(b, v)

    @screen
    def s_edit_alarm(self, b: Builder, v: View) -> None:
        b.topbar("Edit alarm", icons=v.perm("edit_toolbar", [("check", "icon:save", ("op", "save_alarm")),
                                                             ("trash", "icon:delete", ("overlay", "clock/confirm_delete", v.page.arg))]))
        self._alarm_form(b, v)

    @screen
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

    @screen
    def s_world(self, b: Builder, v: View) -> None:
        b.topbar("World clock", back=False, icons=[("plus", "icon:add", ("push", "clock/city_search", ""))])
        b.tabs(v.perm("tabs", self.TABS), v.page.screen)
        b.rows([Entry(f"item:{slug(c)}", c, sub=f"{(stable_int('tz', c) % 24):02d}:41") for c in v.data["cities"]], row_h=34)

    @screen
    def s_city_search(self, b: Builder, v: View) -> None:
        b.topbar("Add city")
        b.field("field:search", "Search cities")
        typed = v.page.fields.get("field:search", "").lower()
        hits = [c for c in CITIES if typed and c.lower().startswith(typed)]
        b.rows([Entry(f"item:{slug(c)}", c, tap=("op", "add_city", c)) for c in hits])

    @screen
    def s_stopwatch(self, b: Builder, v: View) -> None:
        b.topbar("Stopwatch", back=False)
        b.tabs(v.perm("tabs", self.TABS), v.page.screen)
        b.text("00:03.2" if v.data["stopwatch"] else "00:00.0", big=True, h=40, style="center")
        b.button("btn:start", "Stop" if v.data["stopwatch"] else "Start", ("op", "stopwatch"))

    @screen
    def s_settings(self, b: Builder, v: View) -> None:
        b.topbar("Settings")
        self.nav_rows(b, v, [("Display", "row:display", ("push", "clock/display", "")),
                             ("Alarms", "row:alarms", ("push", "clock/alarm_settings", "")),
                             ("Help", "row:help", info_page("clock", "Help")),
                             ("Feedback", "row:feedback", info_page("clock", "Feedback"))], row_h=32)

    @screen
    def s_display(self, b: Builder, v: View) -> None:
        b.topbar("Display")
        self.toggles(b, v, self.section_items(v.variant, "display"))

    @screen
    def s_alarm_settings(self, b: Builder, v: View) -> None:
        b.topbar("Alarms")
        self.toggles(b, v, self.section_items(v.variant, "alarm_settings"))

    @overlay
    def o_more(self, b: Builder, v: View, arg: str) -> None:
        b.menu(v.perm("more", self.overflow_entries(v, [
                               ("Help", "menu:help", info_page("clock", "Help")),
                               ("Feedback", "menu:feedback", info_page("clock", "Feedback"))])))

    @overlay
    def o_alarm_menu(self, b: Builder, v: View, aid: str) -> None:
        b.menu(v.perm("alarm_menu", [("Delete", "menu:delete", ("overlay", "clock/confirm_delete", aid)),
                                     ("Skip next", "menu:skip", ("close",))]), top=120)

    @overlay
    def o_confirm_delete(self, b: Builder, v: View, aid: str) -> None:
        b.dialog("Delete alarm?", f"The {aid} alarm is removed.",
                 v.perm("confirm", [("Cancel", "btn:cancel", ("close",)), ("Delete", "btn:delete", ("op", "delete_alarm", aid))]))

    @operation
    def op_toggle_alarm(self, state: PhoneState, aid: str) -> None:
        a = self.alarm(state.data[self.key], aid)
        if a:
            a["on"] = not a["on"]

    @operation
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

    @operation
    def op_delete_alarm(self, state: PhoneState, aid: str) -> None:
        data = state.data[self.key]
        data["alarms"] = [a for a in data["alarms"] if alarm_id(a["h"], a["m"]) != aid]
        state.overlay = None
        self.pop_to(state, "clock/alarms")

    @operation
    def op_start_timer(self, state: PhoneState) -> None:
        text = state.page.fields.get("field:minutes", "").strip()
        if text.isdigit() and 0 < int(text) < 1000:
            state.data[self.key]["timer"] = int(text)
            state.page.fields = {}
            state.page.focus = ""

    @operation
    def op_stop_timer(self, state: PhoneState) -> None:
        state.data[self.key]["timer"] = 0

    @operation
    def op_stopwatch(self, state: PhoneState) -> None:
        state.data[self.key]["stopwatch"] = not state.data[self.key]["stopwatch"]

    @operation
    def op_add_city(self, state: PhoneState, city: str) -> None:
        cities = state.data[self.key]["cities"]
        if city not in cities:
            cities.append(city)
        state.stack.pop()

