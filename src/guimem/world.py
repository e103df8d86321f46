"""The built-in synthetic phone: tasks, the shared subgoal library, and the environment.

``World.reset(task, seed)`` starts an episode on the launcher; ``World.step(action)`` runs
one AITW-like action (:data:`guimem.data.ACTION_TYPES`) and returns the next observation.
The real-device backend (:mod:`guimem.device`) implements the same :class:`Env` protocol.

What makes memory worth having lives here and in :mod:`guimem.apps`:

* **app-specific paths** the goal does not spell out: dark mode is under ⋮ > Preferences >
  Display in Notes, the Settings tab > Appearance in Messages, Account > Settings >
  Appearance in Shop, ⋮ > Settings in Gallery, ⋮ > Settings > Display in Clock;
* **label-free icons and dense grids**: toolbar icons carry no text or description; photos
  and stickers are told apart only by their picture;
* **per-episode shuffles and themes**: list, menu, tab and toolbar orders and the accent
  colour change between episodes while every label stays the same;
* **interruptions and dead ends**: popups (rate us, notifications, ...) that must be
  dismissed, and menu entries that lead nowhere useful.

Every task template is a sequence of subgoals from ONE library (:data:`SUBGOAL_TYPES`);
success is checked on the hidden final state, never on pixels.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import itertools
import random
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Protocol, Sequence

from PIL import Image

from guimem import apps as A
from guimem.apps import APPS, Layout, PhoneState, slug, stable_int
from guimem.data import Action, DataError, Observation, UIElement
from guimem.render import LOGICAL_SIZE, PHOTO_SUBJECTS, STICKERS, THEME_ACCENTS, Theme, make_theme, render_layout

W, H = LOGICAL_SIZE


# ============================================================================= config
@dataclass(frozen=True)
class WorldConfig:
    """Every knob of the world and its demonstrator; fields map 1:1 to ``params.yaml: world:``."""

    n_train: int = 400  # training episodes
    n_test: int = 120  # test episodes
    image_width: int = 180  # screenshot width in pixels; height is twice that
    max_steps: int = 30  # step budget per episode
    dialog_prob: float = 0.3  # chance that an episode is interrupted by a popup
    shuffle: bool = True  # per-episode layout shuffles (list, menu, tab and toolbar order)
    themes: bool = True  # per-episode accent colours (False: always blue)
    p_launcher_tap: float = 0.5  # the demonstrator opens apps from the launcher grid (else open_app)
    p_wrong_tap: float = 0.05  # per-step chance of a wrong tap, undone with back
    p_give_up: float = 0.08  # per-episode chance of giving up midway
    p_give_up_impossible: float = 0.5  # share of give-ups ending with `impossible` (others wander to the budget)
    p_wrong_state: float = 0.1  # per-episode chance of finishing in a wrong state, then `done`
    success_min: float = 0.6  # the demonstrator's success rate must land in [success_min, success_max]
    success_max: float = 0.92
    test_param_share: float = 0.25  # share of each template's parameter combinations kept for the test split
    unseen_templates: tuple[str, ...] = ("settings.search_toggle", "notes.rename", "messages.mute", "shop.wishlist",
                                         "clock.label_alarm")  # templates only in the test split
    test_unseen_share: float = 0.3  # share of test episodes drawn from the unseen templates

    def __post_init__(self) -> None:
        object.__setattr__(self, "unseen_templates", tuple(self.unseen_templates))
        for name in ("dialog_prob", "p_launcher_tap", "p_wrong_tap", "p_give_up", "p_give_up_impossible",
                     "p_wrong_state", "success_min", "success_max", "test_param_share", "test_unseen_share"):
            v = getattr(self, name)
            if not 0.0 <= v <= 1.0:
                raise DataError(f"world.{name}", f"must be a probability in [0, 1], got {v!r}")
        for name in ("n_train", "n_test", "max_steps", "image_width"):
            if getattr(self, name) < (2 if name == "image_width" else 0):
                raise DataError(f"world.{name}", f"must be a positive integer, got {getattr(self, name)!r}")
        if self.image_width % 2:
            raise DataError("world.image_width", f"must be even, got {self.image_width}")
        unknown = [t for t in self.unseen_templates if t not in TEMPLATES]
        if unknown:
            raise DataError("world.unseen_templates", f"unknown templates {unknown}")

    @classmethod
    def from_dict(cls, d: Mapping[str, Any], path: str | None = None) -> "WorldConfig":
        """Build from the ``world:`` section of params.yaml; unknown or mistyped keys raise DataError."""
        fields = {f.name: f for f in dataclasses.fields(cls)}
        kwargs = {}
        for key, value in d.items():
            if key not in fields:
                raise DataError(f"world.{key}", f"unknown key; expected one of {sorted(fields)}", path)
            default = fields[key].default
            kind = type(default)
            if kind is float and isinstance(value, int) and not isinstance(value, bool):
                value = float(value)
            if kind is tuple and isinstance(value, list):
                value = tuple(value)
            if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
                raise DataError(f"world.{key}", f"expected {kind.__name__}, got {type(value).__name__} {value!r:.60}", path)
            kwargs[key] = value
        try:
            return cls(**kwargs)
        except DataError as err:
            raise DataError(err.field, err.message, path) from None

    def to_dict(self) -> dict[str, Any]:
        d = dataclasses.asdict(self)
        d["unseen_templates"] = list(self.unseen_templates)
        return d


# ============================================================================= tasks
@dataclass(frozen=True)
class Task:
    """A task template with its parameters; ``goal`` is the instruction the agent reads."""

    template: str
    params: tuple[tuple[str, str], ...] = ()

    @property
    def spec(self) -> "TaskTemplate":
        return TEMPLATES[self.template]

    @property
    def p(self) -> dict[str, str]:
        return dict(self.params)

    @property
    def goal(self) -> str:
        return self.spec.goal.format(**self.p)

    @property
    def app(self) -> str:
        return self.spec.app

    def to_dict(self) -> dict[str, Any]:
        return {"template": self.template, "params": dict(self.params)}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> "Task":
        if not isinstance(d, Mapping) or not isinstance(d.get("template"), str):
            raise DataError("task.template", f"expected a template name, got {d!r:.60}")
        if d["template"] not in TEMPLATES:
            raise DataError("task.template", f"unknown template {d['template']!r}")
        params = d.get("params") or {}
        if not isinstance(params, Mapping) or not all(isinstance(v, str) for v in params.values()):
            raise DataError("task.params", f"expected an object of strings, got {params!r:.60}")
        return cls(d["template"], tuple(sorted(params.items())))


Move = tuple  # an expert move: ("open_app", app) ("tap", wid) ("long", wid) ("type", wid, text) ("enter",) ("back",)
Post = tuple  # a postcondition: ("screen", s) ("page", s, arg) ("overlay", o) ("field", wid, text) ("fact", fn) ("task",)


@dataclass(frozen=True)
class SubgoalSpec:
    """One subgoal of a plan: its library type, its sub-intent, the expert's moves, a postcondition."""

    type: str
    text: str
    moves: tuple[Move, ...]
    post: Post = ()


SUBGOAL_TYPES: dict[str, str] = {
    "open_app": "open an app from the launcher",
    "open_overflow_menu": "open the label-free more-options (⋮) menu",
    "open_section": "tap a row or menu entry that leads to another page",
    "select_tab": "switch bottom tab",
    "toggle_option": "flip a switch",
    "search_for": "open search, type a query, submit it",
    "select_list_item": "find an entry in a (possibly scrolled) list and tap it",
    "long_press_item": "long-press a list entry to open its context menu",
    "choose_menu_option": "choose an entry of an open menu or sheet",
    "confirm_dialog": "confirm a dialog",
    "dismiss_popup": "dismiss an interrupting popup",
    "type_into_field": "focus a text field and type into it",
    "create_new": "tap the label-free + control to start something new",
    "save": "tap the label-free ✓ to save",
    "send_message": "tap the label-free send arrow",
    "mark_favourite": "tap the label-free star",
    "delete_item": "tap a label-free trash icon",
    "share_item": "tap the label-free share icon",
    "pick_grid_cell": "find a picture in a dense label-free grid and tap it",
    "add_to_cart": "add a product to the cart",
    "set_quantity": "raise a quantity with the label-free + control",
    "open_cart": "tap the label-free cart icon",
    "press_button": "tap a labelled button or a control that opens a panel",
}
"""The ONE shared subgoal library: every template is a sequence of these types."""


# -- the library: constructors for each subgoal type
def open_app(app: str) -> SubgoalSpec:
    return SubgoalSpec("open_app", f"open {APPS[app].name}", (("open_app", app),), ("screen", APPS[app].root))


def open_overflow_menu(overlay: str) -> SubgoalSpec:
    return SubgoalSpec("open_overflow_menu", "open the more-options menu", (("tap", "icon:more"),), ("overlay", overlay))


def open_section(label: str, wid: str, screen: str, arg: str | None = None) -> SubgoalSpec:
    post = ("page", screen, arg) if arg is not None else ("screen", screen)
    return SubgoalSpec("open_section", f"open the {label} page", (("tap", wid),), post)


def select_tab(label: str, screen: str) -> SubgoalSpec:
    return SubgoalSpec("select_tab", f"switch to the {label} tab", (("tap", f"tab:{slug(label)}"),), ("screen", screen))


def toggle_option(label: str, wid: str, on: bool, post: Post) -> SubgoalSpec:
    return SubgoalSpec("toggle_option", f"turn {'on' if on else 'off'} {label}", (("tap", wid),), post)


def search_for(query: str, entry: str = "icon:search") -> SubgoalSpec:
    moves: tuple[Move, ...] = (("tap", entry),) if entry else ()
    return SubgoalSpec("search_for", f"search for '{query}'", moves + (("type", "field:search", query), ("enter",)),
                       ("field", "query", query))


def select_list_item(label: str, wid: str, post: Post) -> SubgoalSpec:
    return SubgoalSpec("select_list_item", f"open {label}", (("tap", wid),), post)


def long_press_item(label: str, wid: str, overlay: str) -> SubgoalSpec:
    return SubgoalSpec("long_press_item", f"open the options of {label}", (("long", wid),), ("overlay", overlay))


def choose_menu_option(label: str, wid: str, post: Post) -> SubgoalSpec:
    return SubgoalSpec("choose_menu_option", f"choose '{label}'", (("tap", wid),), post)


def confirm_dialog(label: str, wid: str, post: Post = ("task",)) -> SubgoalSpec:
    return SubgoalSpec("confirm_dialog", f"confirm with '{label}'", (("tap", wid),), post)


def dismiss_popup(kind: str, by_back: bool) -> SubgoalSpec:
    what = {"rate": "rate-this-app", "notifications": "notification permission", "whats_new": "what's-new",
            "survey": "survey"}[kind]
    move: Move = ("back",) if by_back else ("tap", "btn:dismiss")
    return SubgoalSpec("dismiss_popup", f"dismiss the {what} popup", (move,), ("no_popup",))


def type_into_field(what: str, wid: str, text: str) -> SubgoalSpec:
    return SubgoalSpec("type_into_field", f"type '{text}' as the {what}", (("type", wid, text),), ("field", wid, text))


def create_new(what: str, screen: str, wid: str = "icon:add") -> SubgoalSpec:
    return SubgoalSpec("create_new", f"start a new {what}", (("tap", wid),), ("screen", screen))


def save(what: str, post: Post = ("task",)) -> SubgoalSpec:
    return SubgoalSpec("save", f"save the {what}", (("tap", "icon:save"),), post)


def send_message(post: Post = ("task",)) -> SubgoalSpec:
    return SubgoalSpec("send_message", "send the message", (("tap", "icon:send"),), post)


def mark_favourite(what: str, post: Post = ("task",)) -> SubgoalSpec:
    return SubgoalSpec("mark_favourite", f"star {what}", (("tap", "icon:star"),), post)


def delete_item(what: str, wid: str, post: Post) -> SubgoalSpec:
    return SubgoalSpec("delete_item", f"delete {what}", (("tap", wid),), post)


def share_item(overlay: str) -> SubgoalSpec:
    return SubgoalSpec("share_item", "open the share options", (("tap", "icon:share"),), ("overlay", overlay))


def pick_grid_cell(label: str, wid: str, post: Post) -> SubgoalSpec:
    return SubgoalSpec("pick_grid_cell", f"pick the {label}", (("tap", wid),), post)


def add_to_cart(item: str, wid: str) -> SubgoalSpec:
    return SubgoalSpec("add_to_cart", f"add {item.lower()} to the cart", (("tap", wid),), ("task",))


def set_quantity(n: int) -> SubgoalSpec:
    return SubgoalSpec("set_quantity", f"set the quantity to {n}", (("tap", "icon:qty_plus"),) * (n - 1), ("field", "qty", str(n)))


def open_cart() -> SubgoalSpec:
    return SubgoalSpec("open_cart", "open the cart", (("tap", "icon:cart"),), ("screen", "shop/cart"))


def press_button(label: str, wid: str, post: Post) -> SubgoalSpec:
    return SubgoalSpec("press_button", f"tap {label}", (("tap", wid),), post)


# ============================================================================= templates
Params = dict[str, str]
Data = dict[str, dict]


@dataclass(frozen=True)
class TaskTemplate:
    """A parameterised task: its goal text, parameter space, plan, preparation and success check."""

    id: str
    app: str
    goal: str  # format string over the parameters
    space: tuple[tuple[str, tuple[str, ...]], ...]  # parameter name -> its values
    plan: Callable[[Params], list[SubgoalSpec]]  # the expert's subgoals (after open_app)
    check: Callable[[Data, Params], bool]  # success on the hidden final state
    prepare: Callable[[Data, Params, random.Random], None] = lambda d, p, r: None  # make the task meaningful
    corrupt: Callable[[Data, Params, random.Random], Params | None] | None = None  # wrong params, same plan shape
    valid: Callable[[Params], bool] = lambda p: True  # filters parameter combinations

    def combos(self) -> list[tuple[tuple[str, str], ...]]:
        """Every valid parameter combination, in a fixed order."""
        names = [n for n, _ in self.space]
        out = []
        for values in itertools.product(*(v for _, v in self.space)):
            p = dict(zip(names, values))
            if self.valid(p):
                out.append(tuple(sorted(p.items())))
        return out

    def full_plan(self, params: Params) -> list[SubgoalSpec]:
        return [open_app(self.app)] + self.plan(params)


TEMPLATES: dict[str, TaskTemplate] = {}


def _register(t: TaskTemplate) -> None:
    assert t.id not in TEMPLATES, t.id
    TEMPLATES[t.id] = t


def _other(rng: random.Random, values: Sequence[str], not_this: str) -> str | None:
    rest = [v for v in values if v != not_this]
    return rng.choice(rest) if rest else None


def _typo(text: str) -> str:
    """A plausible wrong text: the last word dropped, or a letter doubled."""
    words = text.split()
    return " ".join(words[:-1]) if len(words) > 1 else text + text[-1]


ON_OFF = ("on", "off")


def toggle_template(tid: str, app: str, goal: str, options: Mapping[str, str], path: Sequence[SubgoalSpec],
                    where: str = "prefs") -> None:
    """Register a "turn {state} {option}" task whose switch sits at the end of an app-specific ``path``."""

    def plan(p: Params) -> list[SubgoalSpec]:
        key, on = options[p["option"]], p["state"] == "on"
        return list(path) + [toggle_option(p["option"], f"toggle:{slug(key)}", on, ("task",))]

    def prepare(d: Data, p: Params, rng: random.Random) -> None:
        d[app][where][options[p["option"]]] = p["state"] != "on"

    def check(d: Data, p: Params) -> bool:
        return d[app][where][options[p["option"]]] == (p["state"] == "on")

    def corrupt(d: Data, p: Params, rng: random.Random) -> Params | None:
        other = _other(rng, list(options), p["option"])
        return {**p, "option": other} if other else None

    _register(TaskTemplate(tid, app, goal, (("option", tuple(options)), ("state", ON_OFF)), plan, check, prepare,
                           corrupt if len(options) > 1 else None))


# -- Settings ---------------------------------------------------------------------------------
_SET = "settings"
_NET = open_section("Network & internet", "row:network_internet", "settings/network")
toggle_template("settings.network", _SET, "Turn {state} {option}",
                {"Wi-Fi": "wifi", "Bluetooth": "bluetooth", "Airplane mode": "airplane"}, [_NET])
toggle_template("settings.display", _SET, "Turn {state} {option} on the phone",
                {"Dark theme": "dark_theme", "Auto-rotate": "auto_rotate"},
                [open_section("Display", "row:display", "settings/display")])
toggle_template("settings.sound", _SET, "Turn {state} {option}", {"Vibrate on ring": "vibrate", "Do not disturb": "dnd"},
                [open_section("Sound", "row:sound", "settings/sound")])
toggle_template("settings.battery", _SET, "Turn {state} {option}", {"Battery saver": "battery_saver"},
                [open_section("Battery", "row:battery", "settings/battery")])
_NOTIF_APPS = ("Messages", "Notes", "Shop", "Gallery", "Clock", "Calendar", "Camera", "Maps", "Music", "Weather")
toggle_template("settings.app_notifications", _SET, "Turn {state} notifications for {option}",
                {a: a for a in _NOTIF_APPS}, [open_section("Notifications", "row:notifications", "settings/notifications")],
                where="notif")


def _font_prepare(d: Data, p: Params, rng: random.Random) -> None:
    d[_SET]["font_size"] = _other(rng, A.FONT_SIZES, p["size"])


_register(TaskTemplate(
    "settings.font_size", _SET, "Set the font size to {size}", (("size", A.FONT_SIZES),),
    lambda p: [open_section("Display", "row:display", "settings/display"),
               press_button("Font size", "row:font_size", ("overlay", "settings/font_size")),
               choose_menu_option(p["size"], f"radio:{slug(p['size'])}", ("task",))],
    lambda d, p: d[_SET]["font_size"] == p["size"], _font_prepare,
    lambda d, p, r: {"size": _other(r, A.FONT_SIZES, p["size"])}))


def _ring_prepare(d: Data, p: Params, rng: random.Random) -> None:
    d[_SET]["ringtone"] = _other(rng, A.RINGTONES, p["tone"])


_register(TaskTemplate(
    "settings.ringtone", _SET, "Set the ringtone to {tone}", (("tone", A.RINGTONES),),
    lambda p: [open_section("Sound", "row:sound", "settings/sound"),
               open_section("Ringtone", "row:ringtone", "settings/ringtone"),
               select_list_item(p["tone"], f"radio:{slug(p['tone'])}", ("task",))],
    lambda d, p: d[_SET]["ringtone"] == p["tone"], _ring_prepare,
    lambda d, p, r: {"tone": _other(r, A.RINGTONES, p["tone"])}))


def _cache_prepare(d: Data, p: Params, rng: random.Random) -> None:
    d[_SET]["cleared"] = [a for a in d[_SET]["cleared"] if a != p["app"]]


_register(TaskTemplate(
    "settings.clear_cache", _SET, "Clear the cache of {app}", (("app", _NOTIF_APPS),),
    lambda p: [open_section("Apps", "row:apps", "settings/apps"),
               select_list_item(p["app"], f"item:{slug(p['app'])}", ("page", "settings/app_info", p["app"])),
               press_button("Clear cache", "btn:clear_cache", ("overlay", "settings/confirm_clear")),
               confirm_dialog("OK", "btn:ok")],
    lambda d, p: p["app"] in d[_SET]["cleared"], _cache_prepare,
    lambda d, p, r: {"app": _other(r, _NOTIF_APPS, p["app"])}))


def _search_plan(p: Params) -> list[SubgoalSpec]:
    key, screen, _ = A.SETTING_INDEX[p["setting"]]
    return [search_for(p["setting"]),
            select_list_item(f"the {p['setting']} result", f"item:{slug(p['setting'])}", ("screen", screen)),
            toggle_option(p["setting"], f"toggle:{key}", p["state"] == "on", ("task",))]


def _search_prepare(d: Data, p: Params, rng: random.Random) -> None:
    d[_SET]["prefs"][A.SETTING_INDEX[p["setting"]][0]] = p["state"] != "on"


_register(TaskTemplate(
    "settings.search_toggle", _SET, "Find the {setting} setting and turn it {state}",
    (("setting", tuple(A.SETTING_INDEX)), ("state", ON_OFF)), _search_plan,
    lambda d, p: d[_SET]["prefs"][A.SETTING_INDEX[p["setting"]][0]] == (p["state"] == "on"), _search_prepare))

# -- Notes ------------------------------------------------------------------------------------
_NOTES = "notes"
_NOTES_PREFS = [open_overflow_menu("notes/overflow"), open_section("Preferences", "menu:preferences", "notes/preferences")]
toggle_template("notes.display", _NOTES, "Turn {state} {option} in Notes",
                {"Dark mode": "dark_mode", "Large text": "large_text", "Show previews": "show_previews"},
                _NOTES_PREFS + [open_section("Display", "row:display", "notes/display")])
toggle_template("notes.editor", _NOTES, "Turn {state} {option} in Notes", {"Auto-save": "auto_save", "Spell check": "spell_check"},
                _NOTES_PREFS + [open_section("Editor", "row:editor", "notes/editor_settings")])

NEW_NOTE_TITLES = ("Ideas", "Chores", "Errands", "Quotes", "Plans for May", "Soup recipe")
NEW_NOTE_BODIES = ("buy stamps", "water the plants", "call the bank", "fix the bike", "book a table", "pay rent")


def _note_exists(d: Data, title: str, where: str = "notes") -> bool:
    return any(n["title"] == title for n in d[_NOTES][where])


def _ensure_note(d: Data, title: str, rng: random.Random, where: str = "notes", pinned: bool = False) -> None:
    """Put the note ``title`` in ``where`` (notes or trash) at a random place, and nowhere else."""
    for w in ("notes", "trash"):
        d[_NOTES][w] = [n for n in d[_NOTES][w] if n["title"] != title]
    pos = rng.randint(0, len(d[_NOTES][where]))
    d[_NOTES][where].insert(pos, {"title": title, "body": rng.choice(A.NOTE_BODIES), "pinned": pinned})


def _existing_note(d: Data, not_this: str, rng: random.Random, where: str = "notes", unpinned: bool = False) -> str | None:
    titles = [n["title"] for n in d[_NOTES][where] if n["title"] != not_this and not (unpinned and n["pinned"])]
    return rng.choice(titles) if titles else None


_register(TaskTemplate(
    "notes.create", _NOTES, "Create a note titled '{title}' that says '{body}'",
    (("title", NEW_NOTE_TITLES), ("body", NEW_NOTE_BODIES)),
    lambda p: [create_new("note", "notes/edit"), type_into_field("title", "field:title", p["title"]),
               type_into_field("text", "field:body", p["body"]), save("note")],
    lambda d, p: any(n["title"] == p["title"] and n["body"] == p["body"] for n in d[_NOTES]["notes"]),
    corrupt=lambda d, p, r: {**p, "body": _typo(p["body"])}))
_register(TaskTemplate(
    "notes.delete", _NOTES, "Delete the note '{title}'", (("title", A.NOTE_TITLES),),
    lambda p: [long_press_item(f"the note '{p['title']}'", f"item:{slug(p['title'])}", "notes/item_menu"),
               choose_menu_option("Delete", "menu:delete", ("overlay", "notes/confirm_delete")),
               confirm_dialog("Delete", "btn:delete")],
    lambda d, p: not _note_exists(d, p["title"]) and _note_exists(d, p["title"], "trash"),
    lambda d, p, r: _ensure_note(d, p["title"], r),
    lambda d, p, r: {"title": _existing_note(d, p["title"], r)}))
_register(TaskTemplate(
    "notes.pin", _NOTES, "Pin the note '{title}'", (("title", A.NOTE_TITLES),),
    lambda p: [select_list_item(f"the note '{p['title']}'", f"item:{slug(p['title'])}", ("page", "notes/view", p["title"])),
               mark_favourite("the note")],
    lambda d, p: any(n["title"] == p["title"] and n["pinned"] for n in d[_NOTES]["notes"]),
    lambda d, p, r: _ensure_note(d, p["title"], r),
    lambda d, p, r: {"title": _existing_note(d, p["title"], r, unpinned=True)}))
_register(TaskTemplate(
    "notes.rename", _NOTES, "Rename the note '{old}' to '{new}'", (("old", A.NOTE_TITLES), ("new", NEW_NOTE_TITLES)),
    lambda p: [search_for(p["old"]),
               select_list_item(f"the note '{p['old']}'", f"item:{slug(p['old'])}", ("page", "notes/view", p["old"])),
               press_button("the edit pencil", "icon:edit", ("screen", "notes/edit")),
               type_into_field("title", "field:title", p["new"]), save("note")],
    lambda d, p: _note_exists(d, p["new"]) and not _note_exists(d, p["old"]),
    lambda d, p, r: _ensure_note(d, p["old"], r),
    lambda d, p, r: {**p, "new": _typo(p["new"])}))
_register(TaskTemplate(
    "notes.restore", _NOTES, "Restore the note '{title}' from the trash", (("title", A.NOTE_TITLES),),
    lambda p: [open_overflow_menu("notes/overflow"), open_section("Trash", "menu:trash", "notes/trash"),
               long_press_item(f"the note '{p['title']}'", f"item:{slug(p['title'])}", "notes/trash_menu"),
               choose_menu_option("Restore", "menu:restore", ("task",))],
    lambda d, p: _note_exists(d, p["title"]) and not _note_exists(d, p["title"], "trash"),
    lambda d, p, r: _ensure_note(d, p["title"], r, where="trash"),
    lambda d, p, r: {"title": _existing_note(d, p["title"], r, where="trash")}))

# -- Messages ---------------------------------------------------------------------------------
_MSG = "messages"
_MSG_SETTINGS = [select_tab("Settings", "messages/settings")]
toggle_template("messages.appearance", _MSG, "Turn {state} {option} in Messages",
                {"Dark mode": "dark_mode", "Large text": "large_text", "Bubble colours": "bubble_colours"},
                _MSG_SETTINGS + [open_section("Appearance", "row:appearance", "messages/appearance")])
toggle_template("messages.notifications", _MSG, "Turn {state} {option} in Messages",
                {"Sounds": "sounds", "Vibrate": "vibrate", "Message previews": "previews"},
                _MSG_SETTINGS + [open_section("Notifications", "row:notifications", "messages/notifications")])

FIRST_NAMES = tuple(A.first_name(c) for c in A.CONTACTS)
MESSAGE_TEXTS = ("see you at 5", "running late", "happy birthday", "call me back", "thanks for lunch", "on my way",
                 "good luck today", "see you tomorrow")


def _contact(name: str) -> str:
    return next(c for c in A.CONTACTS if A.first_name(c) == name)


def _chat(d: Data, name: str) -> dict | None:
    return next((c for c in d[_MSG]["chats"] if c["contact"] == _contact(name)), None)


def _ensure_chat(d: Data, name: str, rng: random.Random, muted: bool | None = None) -> None:
    chat = _chat(d, name)
    if chat is None:
        chat = {"contact": _contact(name), "muted": False, "msgs": [[False, rng.choice(A.CHAT_LINES)]]}
        d[_MSG]["chats"].insert(rng.randint(0, len(d[_MSG]["chats"])), chat)
    if muted is not None:
        chat["muted"] = muted


def _other_chat(d: Data, name: str, rng: random.Random, unmuted: bool = False) -> str | None:
    names = [A.first_name(c["contact"]) for c in d[_MSG]["chats"]
             if A.first_name(c["contact"]) != name and not (unmuted and c["muted"])]
    return rng.choice(names) if names else None


def _last_is(d: Data, name: str, text: str) -> bool:
    chat = _chat(d, name)
    return bool(chat and chat["msgs"] and chat["msgs"][-1] == [True, text])


def _open_chat(name: str) -> SubgoalSpec:
    return select_list_item(f"the chat with {name}", f"item:{slug(name)}", ("page", "messages/thread", _contact(name)))


_register(TaskTemplate(
    "messages.send", _MSG, "Send '{text}' to {name}", (("name", FIRST_NAMES), ("text", MESSAGE_TEXTS)),
    lambda p: [_open_chat(p["name"]), type_into_field("message", "field:message", p["text"]), send_message()],
    lambda d, p: _last_is(d, p["name"], p["text"]), lambda d, p, r: _ensure_chat(d, p["name"], r),
    lambda d, p, r: {**p, "text": _typo(p["text"])}))


def _no_chat(d: Data, p: Params, rng: random.Random) -> None:
    d[_MSG]["chats"] = [c for c in d[_MSG]["chats"] if c["contact"] != _contact(p["name"])]


_register(TaskTemplate(
    "messages.new_chat", _MSG, "Start a new chat with {name} and say '{text}'", (("name", FIRST_NAMES), ("text", MESSAGE_TEXTS)),
    lambda p: [create_new("chat", "messages/compose"), type_into_field("recipient", "field:to", p["name"]),
               select_list_item(p["name"], f"item:{slug(p['name'])}", ("page", "messages/thread", _contact(p["name"]))),
               type_into_field("message", "field:message", p["text"]), send_message()],
    lambda d, p: _last_is(d, p["name"], p["text"]), _no_chat, lambda d, p, r: {**p, "text": _typo(p["text"])}))
_register(TaskTemplate(
    "messages.sticker", _MSG, "Send a {sticker} sticker to {name}", (("name", FIRST_NAMES), ("sticker", STICKERS)),
    lambda p: [_open_chat(p["name"]), press_button("the sticker button", "icon:sticker", ("screen", "messages/stickers")),
               pick_grid_cell(f"{p['sticker']} sticker", f"cell:{p['sticker']}", ("task",))],
    lambda d, p: _last_is(d, p["name"], f"[sticker:{p['sticker']}]"), lambda d, p, r: _ensure_chat(d, p["name"], r),
    lambda d, p, r: {**p, "sticker": _other(r, STICKERS, p["sticker"])}))
_register(TaskTemplate(
    "messages.delete_chat", _MSG, "Delete the chat with {name}", (("name", FIRST_NAMES),),
    lambda p: [long_press_item(f"the chat with {p['name']}", f"item:{slug(p['name'])}", "messages/chat_menu"),
               choose_menu_option("Delete chat", "menu:delete", ("overlay", "messages/confirm_delete")),
               confirm_dialog("Delete", "btn:delete")],
    lambda d, p: _chat(d, p["name"]) is None, lambda d, p, r: _ensure_chat(d, p["name"], r),
    lambda d, p, r: {"name": _other_chat(d, p["name"], r)}))
_register(TaskTemplate(
    "messages.mute", _MSG, "Mute the chat with {name}", (("name", FIRST_NAMES),),
    lambda p: [_open_chat(p["name"]), open_overflow_menu("messages/thread_menu"),
               choose_menu_option("Mute", "menu:mute", ("task",))],
    lambda d, p: bool(_chat(d, p["name"]) and _chat(d, p["name"])["muted"]),
    lambda d, p, r: _ensure_chat(d, p["name"], r, muted=False),
    lambda d, p, r: {"name": _other_chat(d, p["name"], r, unmuted=True)}))

# -- Shop -------------------------------------------------------------------------------------
_SHOP = "shop"
toggle_template("shop.appearance", _SHOP, "Turn {state} {option} in Shop", {"Dark mode": "dark_mode", "Compact list": "compact_list"},
                [select_tab("Account", "shop/account"), open_section("Settings", "row:settings", "shop/settings"),
                 open_section("Appearance", "row:appearance", "shop/appearance")])
_CATEGORY_OF = {p: c for c, items in A.CATALOG.items() for p in items}


def _search_product(item: str) -> list[SubgoalSpec]:
    return [search_for(item, entry="field:search"),
            select_list_item(item.lower(), f"item:{slug(item)}", ("page", "shop/product", item))]


def _not_in_cart(d: Data, p: Params, rng: random.Random) -> None:
    d[_SHOP]["cart"].pop(p["item"], None)


_register(TaskTemplate(
    "shop.add_searched", _SHOP, "Add {n} {item} to the cart", (("n", ("2", "3", "4")), ("item", A.PRODUCTS)),
    lambda p: _search_product(p["item"]) + [set_quantity(int(p["n"])), add_to_cart(p["item"], "btn:add_to_cart")],
    lambda d, p: d[_SHOP]["cart"].get(p["item"]) == int(p["n"]), _not_in_cart,
    lambda d, p, r: {**p, "n": str(int(p["n"]) + r.choice((-1, 1)))}))
_register(TaskTemplate(
    "shop.add_from_aisle", _SHOP, "Add {item} from the {category} aisle to the cart",
    (("category", tuple(A.CATALOG)), ("item", A.PRODUCTS)),
    lambda p: [open_section(p["category"], f"row:{slug(p['category'])}", "shop/category", p["category"]),
               add_to_cart(p["item"], f"icon:add:{slug(p['item'])}")],
    lambda d, p: d[_SHOP]["cart"].get(p["item"]) == 1, _not_in_cart,
    lambda d, p, r: {**p, "item": _other(r, A.CATALOG[p["category"]], p["item"])},
    valid=lambda p: _CATEGORY_OF[p["item"]] == p["category"]))


def _remove_prepare(d: Data, p: Params, rng: random.Random) -> None:
    cart = d[_SHOP]["cart"]
    cart[p["item"]] = rng.randint(1, 3)
    if len(cart) < 2:
        cart[_other(rng, A.PRODUCTS, p["item"])] = 1


def _other_cart_item(d: Data, p: Params, rng: random.Random) -> Params | None:
    other = _other(rng, sorted(d[_SHOP]["cart"]), p["item"])
    return {"item": other} if other else None


_register(TaskTemplate(
    "shop.remove", _SHOP, "Remove {item} from the cart", (("item", A.PRODUCTS),),
    lambda p: [open_cart(), delete_item(p["item"].lower(), f"icon:remove:{slug(p['item'])}", ("task",))],
    lambda d, p: p["item"] not in d[_SHOP]["cart"], _remove_prepare, _other_cart_item))
_SPEEDS = ("Standard", "Express")


def _checkout_prepare(d: Data, p: Params, rng: random.Random) -> None:
    if not d[_SHOP]["cart"]:
        d[_SHOP]["cart"][rng.choice(A.PRODUCTS)] = rng.randint(1, 3)
    d[_SHOP]["delivery"] = _other(rng, _SPEEDS, p["speed"])
    d[_SHOP]["orders"] = []


_register(TaskTemplate(
    "shop.checkout", _SHOP, "Order everything in the cart with {speed} delivery", (("speed", _SPEEDS),),
    lambda p: [open_cart(), press_button("Checkout", "btn:checkout", ("screen", "shop/checkout")),
               select_list_item(f"{p['speed']} delivery", f"radio:{slug(p['speed'])}", ("fact", "delivery")),
               press_button("Place order", "btn:place_order", ("overlay", "shop/confirm_order")),
               confirm_dialog("Place order", "btn:confirm")],
    lambda d, p: not d[_SHOP]["cart"] and len(d[_SHOP]["orders"]) == 1 and d[_SHOP]["orders"][0]["delivery"] == p["speed"],
    _checkout_prepare, lambda d, p, r: {"speed": _other(r, _SPEEDS, p["speed"])}))


def _wish_prepare(d: Data, p: Params, rng: random.Random) -> None:
    d[_SHOP]["wishlist"] = [w for w in d[_SHOP]["wishlist"] if w != p["item"]]


_register(TaskTemplate(
    "shop.wishlist", _SHOP, "Add {item} to my wishlist", (("item", A.PRODUCTS),),
    lambda p: _search_product(p["item"]) + [mark_favourite(p["item"].lower())],
    lambda d, p: p["item"] in d[_SHOP]["wishlist"], _wish_prepare,
    lambda d, p, r: {"item": _other(r, [x for x in A.PRODUCTS if x not in d[_SHOP]["wishlist"]], p["item"])}))

# -- Gallery ----------------------------------------------------------------------------------
_GAL = "gallery"
toggle_template("gallery.settings", _GAL, "Turn {state} {option} in Gallery",
                {"Dark mode": "dark_mode", "Show dates": "show_dates", "Auto backup": "auto_backup"},
                [open_overflow_menu("gallery/more"), open_section("Settings", "menu:settings", "gallery/settings")])


def _photo_in(d: Data, subject: str, rng: random.Random, where: str = "photos", fav: bool = False) -> None:
    """Put the photo ``subject`` in ``where`` (photos or trash) at a random position."""
    g = d[_GAL]
    g["photos"] = [p for p in g["photos"] if p["subject"] != subject]
    g["trash"] = [s for s in g["trash"] if s != subject]
    if where == "photos":
        g["photos"].insert(rng.randint(0, len(g["photos"])), {"subject": subject, "fav": fav})
    else:
        g["trash"].insert(rng.randint(0, len(g["trash"])), subject)


def _other_photo(d: Data, subject: str, rng: random.Random, where: str = "photos", unfav: bool = False) -> str | None:
    g = d[_GAL]
    pool = [p["subject"] for p in g["photos"] if not (unfav and p["fav"])] if where == "photos" else list(g["trash"])
    return _other(rng, pool, subject)


def _open_photo(subject: str) -> SubgoalSpec:
    return pick_grid_cell(f"photo of the {subject}", f"cell:{subject}", ("page", "gallery/viewer", subject))


def _photo_of(d: Data, subject: str) -> dict | None:
    return next((p for p in d[_GAL]["photos"] if p["subject"] == subject), None)


_register(TaskTemplate(
    "gallery.delete", _GAL, "Delete the photo of the {subject}", (("subject", PHOTO_SUBJECTS),),
    lambda p: [_open_photo(p["subject"]), delete_item("the photo", "icon:delete", ("overlay", "gallery/confirm_delete")),
               confirm_dialog("Delete", "btn:delete")],
    lambda d, p: _photo_of(d, p["subject"]) is None and p["subject"] in d[_GAL]["trash"],
    lambda d, p, r: _photo_in(d, p["subject"], r), lambda d, p, r: {"subject": _other_photo(d, p["subject"], r)}))
_register(TaskTemplate(
    "gallery.favourite", _GAL, "Add the photo of the {subject} to favourites", (("subject", PHOTO_SUBJECTS),),
    lambda p: [_open_photo(p["subject"]), mark_favourite("the photo")],
    lambda d, p: bool(_photo_of(d, p["subject"]) and _photo_of(d, p["subject"])["fav"]),
    lambda d, p, r: _photo_in(d, p["subject"], r), lambda d, p, r: {"subject": _other_photo(d, p["subject"], r, unfav=True)}))
_register(TaskTemplate(
    "gallery.share", _GAL, "Share the photo of the {subject} to {target}", (("subject", PHOTO_SUBJECTS), ("target", A.SHARE_TARGETS)),
    lambda p: [_open_photo(p["subject"]), share_item("gallery/share_sheet"),
               choose_menu_option(p["target"], f"share:{slug(p['target'])}", ("task",))],
    lambda d, p: [p["subject"], p["target"]] in d[_GAL]["shared"], lambda d, p, r: _photo_in(d, p["subject"], r),
    lambda d, p, r: {**p, "target": _other(r, A.SHARE_TARGETS, p["target"])}))
_register(TaskTemplate(
    "gallery.restore", _GAL, "Restore the photo of the {subject} from the trash", (("subject", PHOTO_SUBJECTS),),
    lambda p: [select_tab("Albums", "gallery/albums"), open_section("Trash", "row:trash", "gallery/trash"),
               pick_grid_cell(f"photo of the {p['subject']}", f"cell:{p['subject']}", ("page", "gallery/trash_item", p["subject"])),
               press_button("Restore", "btn:restore", ("task",))],
    lambda d, p: _photo_of(d, p["subject"]) is not None and p["subject"] not in d[_GAL]["trash"],
    lambda d, p, r: _photo_in(d, p["subject"], r, where="trash"),
    lambda d, p, r: {"subject": _other_photo(d, p["subject"], r, where="trash")}))
ALBUM_NAMES = ("Holiday", "Family", "Pets", "Food", "Road trip", "Best of 2024")
_register(TaskTemplate(
    "gallery.new_album", _GAL, "Create an album called '{name}'", (("name", ALBUM_NAMES),),
    lambda p: [select_tab("Albums", "gallery/albums"), create_new("album", "gallery/new_album"),
               type_into_field("album name", "field:name", p["name"]), save("album")],
    lambda d, p: p["name"] in d[_GAL]["albums"], corrupt=lambda d, p, r: {"name": _typo(p["name"])}))

# -- Clock ------------------------------------------------------------------------------------
_CLK = "clock"
toggle_template("clock.display", _CLK, "Turn {state} {option} in Clock",
                {"Dark mode": "dark_mode", "24-hour clock": "h24", "Show seconds": "show_seconds"},
                [open_overflow_menu("clock/more"), open_section("Settings", "menu:settings", "clock/settings"),
                 open_section("Display", "row:display", "clock/display")])
ALARM_TIMES = tuple(A.alarm_id(h, m) for h in range(5, 12) for m in (0, 15, 30, 45))
NEW_ALARM_TIMES = tuple(A.alarm_id(h, m) for h in range(5, 12) for m in (10, 20, 40, 50))


def _hm(t: str) -> tuple[int, int]:
    h, m = t.split(":")
    return int(h), int(m)


def _alarm(d: Data, t: str) -> dict | None:
    return next((a for a in d[_CLK]["alarms"] if (a["h"], a["m"]) == _hm(t)), None)


def _ensure_alarm(d: Data, t: str, rng: random.Random, on: bool | None = None) -> None:
    a = _alarm(d, t)
    if a is None:
        a = {"h": _hm(t)[0], "m": _hm(t)[1], "on": rng.random() < 0.5, "label": ""}
        d[_CLK]["alarms"].append(a)
        d[_CLK]["alarms"].sort(key=lambda x: (x["h"], x["m"]))
    if on is not None:
        a["on"] = on


def _other_alarm(d: Data, t: str, rng: random.Random) -> str | None:
    return _other(rng, [A.alarm_id(a["h"], a["m"]) for a in d[_CLK]["alarms"]], t)


def _alarm_set_prepare(d: Data, p: Params, rng: random.Random) -> None:
    d[_CLK]["alarms"] = [a for a in d[_CLK]["alarms"] if (a["h"], a["m"]) != _hm(p["time"])]


def _alarm_set_corrupt(d: Data, p: Params, rng: random.Random) -> Params:
    h, m = _hm(p["time"])
    return {"time": A.alarm_id(h, (m + 5) % 60)}


_register(TaskTemplate(
    "clock.set_alarm", _CLK, "Set an alarm for {time}", (("time", NEW_ALARM_TIMES),),
    lambda p: [create_new("alarm", "clock/new_alarm"), type_into_field("time", "field:time", p["time"]), save("alarm")],
    lambda d, p: bool(_alarm(d, p["time"]) and _alarm(d, p["time"])["on"]), _alarm_set_prepare, _alarm_set_corrupt))
_register(TaskTemplate(
    "clock.switch_alarm", _CLK, "Turn {state} the {time} alarm", (("time", ALARM_TIMES), ("state", ON_OFF)),
    lambda p: [toggle_option(f"the {p['time']} alarm", f"toggle:{slug(p['time'])}", p["state"] == "on", ("task",))],
    lambda d, p: bool(_alarm(d, p["time"]) and _alarm(d, p["time"])["on"] == (p["state"] == "on")),
    lambda d, p, r: _ensure_alarm(d, p["time"], r, on=p["state"] != "on"),
    lambda d, p, r: {**p, "time": _other_alarm(d, p["time"], r)}))
_register(TaskTemplate(
    "clock.delete_alarm", _CLK, "Delete the {time} alarm", (("time", ALARM_TIMES),),
    lambda p: [long_press_item(f"the {p['time']} alarm", f"item:{slug(p['time'])}", "clock/alarm_menu"),
               choose_menu_option("Delete", "menu:delete", ("overlay", "clock/confirm_delete")), confirm_dialog("Delete", "btn:delete")],
    lambda d, p: _alarm(d, p["time"]) is None, lambda d, p, r: _ensure_alarm(d, p["time"], r),
    lambda d, p, r: {"time": _other_alarm(d, p["time"], r)}))
TIMER_MINUTES = ("2", "3", "5", "10", "15", "20", "25", "30", "45", "60")


def _timer_prepare(d: Data, p: Params, rng: random.Random) -> None:
    d[_CLK]["timer"] = 0


_register(TaskTemplate(
    "clock.timer", _CLK, "Start a timer for {n} minutes", (("n", TIMER_MINUTES),),
    lambda p: [select_tab("Timer", "clock/timer"), type_into_field("minutes", "field:minutes", p["n"]),
               press_button("Start", "btn:start", ("task",))],
    lambda d, p: d[_CLK]["timer"] == int(p["n"]), _timer_prepare,
    lambda d, p, r: {"n": _other(r, TIMER_MINUTES, p["n"])}))


def _city_prepare(d: Data, p: Params, rng: random.Random) -> None:
    d[_CLK]["cities"] = [c for c in d[_CLK]["cities"] if c != p["city"]]


_register(TaskTemplate(
    "clock.add_city", _CLK, "Add {city} to the world clock", (("city", A.CITIES),),
    lambda p: [select_tab("World", "clock/world"), create_new("city", "clock/city_search"),
               type_into_field("city name", "field:search", p["city"]),
               select_list_item(p["city"], f"item:{slug(p['city'])}", ("task",))],
    lambda d, p: p["city"] in d[_CLK]["cities"], _city_prepare,
    lambda d, p, r: {"city": _other(r, [c for c in A.CITIES if c not in d[_CLK]["cities"]], p["city"])}))
ALARM_LABELS = ("Gym", "Work", "Medicine", "School run", "Wake up", "Meeting")
_register(TaskTemplate(
    "clock.label_alarm", _CLK, "Label the {time} alarm '{label}'", (("time", ALARM_TIMES), ("label", ALARM_LABELS)),
    lambda p: [select_list_item(f"the {p['time']} alarm", f"item:{slug(p['time'])}", ("page", "clock/edit_alarm", p["time"])),
               type_into_field("label", "field:label", p["label"]), save("alarm")],
    lambda d, p: bool(_alarm(d, p["time"]) and _alarm(d, p["time"])["label"] == p["label"]),
    lambda d, p, r: _ensure_alarm(d, p["time"], r), lambda d, p, r: {**p, "label": _typo(p["label"])}))


def sample_task(template: str, rng: random.Random, combos: Sequence[tuple[tuple[str, str], ...]] | None = None) -> Task:
    """A task of ``template`` with parameters drawn from ``combos`` (default: all valid ones)."""
    pool = combos if combos is not None else TEMPLATES[template].combos()
    return Task(template, rng.choice(list(pool)))


def subgoal_reuse() -> dict[str, Any]:
    """Which library types each template uses, and the share of types used by >= 2 templates."""
    users: dict[str, set[str]] = {t: set() for t in SUBGOAL_TYPES}
    for tid, t in TEMPLATES.items():
        params = dict(t.combos()[0])
        for sg in t.full_plan(params):
            users[sg.type].add(tid)
    used = {k: sorted(v) for k, v in users.items() if v}
    shared = [k for k, v in used.items() if len(v) >= 2]
    return {"types_used": len(used), "types_shared": len(shared), "share": len(shared) / max(1, len(used)),
            "templates_per_type": {k: len(v) for k, v in used.items()}}


# ============================================================================= environment
@dataclass(frozen=True)
class WorldObservation:
    """One screen: the picture, its UI tree, the true screen type, and a content key for caching."""

    image: Image.Image
    elements: tuple[UIElement, ...]
    screen: str | None  # true screen type (analysis only: no method may read it); None when unknown (a real phone)
    key: str  # 16 hex digits identifying the rendered pixels (equal keys -> equal images)

    def to_observation(self, screenshot: str) -> Observation:
        """The :class:`guimem.data.Observation` of this screen, with its screenshot at ``screenshot``."""
        return Observation(screenshot=screenshot, elements=self.elements, screen=self.screen)


class Env(Protocol):
    """The interface the world and the real-device backend share."""

    def reset(self, task: Task, seed: int) -> WorldObservation:
        """Start ``task`` (``seed`` fixes all randomness) and return the first screen."""
        ...

    def step(self, action: Action) -> tuple[WorldObservation, bool, dict[str, Any]]:
        """Run ``action``; return the next screen, whether the episode ended, and info."""
        ...


POPUP_KINDS: tuple[str, ...] = tuple(A.POPUPS)


class World:
    """The synthetic phone as an environment; deterministic from ``(task, seed)``."""

    def __init__(self, config: WorldConfig | None = None, cache_size: int = 512,
                 image_cache: OrderedDict | None = None):
        """``image_cache`` (an empty ``OrderedDict`` to start) lets many worlds share one bounded
        cache of rendered screens: a render key fixes the pixels, so sharing changes nothing but time."""
        self.config = config or WorldConfig()
        self._images: OrderedDict[tuple, tuple[str, Image.Image, tuple[UIElement, ...]]] = (
            OrderedDict() if image_cache is None else image_cache)  # render key -> (hex key, image, tree)
        self._cache_size = cache_size
        self.state: PhoneState | None = None
        self.task: Task | None = None
        self.t = 0  # steps taken
        self.ended: str | None = None  # "done", "impossible", "budget" once the episode is over
        self._popup_at: int | None = None  # step after which the popup shows
        self._popup_kind = ""
        self._layout: Layout | None = None

    # -- episode
    def reset(self, task: Task, seed: int) -> WorldObservation:
        """Fresh phone content, theme, shuffles and popup schedule from ``seed``; start on the launcher."""
        rng = random.Random(stable_int("world", seed))
        data = {key: app.init_data(rng) for key, app in APPS.items()}
        accent = rng.choice(THEME_ACCENTS) if self.config.themes else "blue"
        shuffle_seed = rng.getrandbits(32) if self.config.shuffle else None
        popup = rng.random() < self.config.dialog_prob
        self._popup_kind = rng.choice(POPUP_KINDS)
        self._popup_at = rng.randint(1, 4) if popup else None
        task.spec.prepare(data, task.p, rng)
        self.state = PhoneState("launcher", [A.Page("launcher/home")], data, accent, shuffle_seed)
        self.task, self.t, self.ended = task, 0, None
        return self._observe()

    def step(self, action: Action) -> tuple[WorldObservation, bool, dict[str, Any]]:
        """Run one action; the episode ends on done/impossible or when the step budget is spent."""
        if self.state is None or self.ended:
            raise RuntimeError("step() after the episode ended; call reset() first")
        self.t += 1
        effect = self._apply(action)
        if action.type in ("done", "impossible"):
            self.ended = action.type
        elif self.t >= self.config.max_steps:
            self.ended = "budget"
        self._maybe_popup()
        obs = self._observe()
        info: dict[str, Any] = {"effect": effect, "steps": self.t, "screen": obs.screen}
        if self.ended:
            info["success"] = self.success()
            info["ended"] = self.ended
        return obs, self.ended is not None, info

    def success(self) -> bool:
        """The task's check on the hidden state; an episode that declared `impossible` fails."""
        assert self.state is not None and self.task is not None
        return self.ended != "impossible" and bool(self.task.spec.check(self.state.data, self.task.p))

    # -- what the expert may read
    @property
    def layout(self) -> Layout:
        if self._layout is None:
            self._layout = self._build()
        return self._layout

    def holds(self, post: Post) -> bool:
        """Whether a subgoal postcondition holds now (popups are ignored)."""
        st = self.state
        kind = post[0] if post else "none"
        top = st.page if st.app != "launcher" else None
        if kind == "screen":
            return top is not None and st.overlay is None and top.screen == post[1]
        if kind == "page":
            return top is not None and st.overlay is None and (top.screen, top.arg) == (post[1], post[2])
        if kind == "overlay":
            return st.overlay is not None and st.overlay[0] == post[1]
        if kind == "field":
            return top is not None and top.fields.get(post[1]) == post[2]
        if kind == "task":
            return bool(self.task.spec.check(st.data, self.task.p))
        if kind == "no_popup":
            return st.popup is None
        return True  # "fact" and empty posts are checked by the task check at the end

    # -- internals
    def _build(self) -> Layout:
        st = self.state
        if st.app == "launcher":
            b = A.build_launcher(st)
        else:
            app = APPS[st.app]
            b = app.build(st)
            if st.popup:
                A.build_popup(b, st.popup, app.name, st)
                b.screen = f"popup/{st.popup}"
            elif st.overlay:
                app.build_overlay(b, st, *st.overlay)
                b.screen = st.overlay[0]
        return b.layout()

    def theme(self) -> Theme:
        st = self.state
        dark = APPS["settings"].dark(st) if st.app in ("launcher", "settings") else APPS[st.app].dark(st)
        return make_theme(st.accent, dark)

    def _observe(self) -> WorldObservation:
        self._layout = None
        layout, theme = self.layout, self.theme()
        rkey = (layout.widgets, layout.overlay, theme, self.config.image_width)
        hit = self._images.get(rkey)
        if hit is None:
            image = render_layout(layout, theme, self.config.image_width)
            hit = (hashlib.sha256(repr(rkey).encode()).hexdigest()[:16], image, ui_elements(layout))
            self._images[rkey] = hit
            if len(self._images) > self._cache_size:
                self._images.popitem(last=False)
        else:
            self._images.move_to_end(rkey)
        return WorldObservation(hit[1], hit[2], layout.screen, hit[0])

    def _maybe_popup(self) -> None:
        st = self.state
        if self._popup_at is not None and self.t >= self._popup_at and st.app != "launcher" and not self.ended:
            st.popup, self._popup_at = self._popup_kind, None

    def _apply(self, action: Action) -> str:
        """Change the state by one action; returns a short description of what happened."""
        st, kind = self.state, action.type
        if kind in ("done", "impossible"):
            return kind
        if kind == "home":
            st.app, st.stack, st.overlay, st.popup = "launcher", [A.Page("launcher/home")], None, None
            return "home"
        if kind == "open_app":
            app = A.APP_BY_NAME.get((action.text or "").strip().lower())
            if app is None:
                return "no such app"
            self._open(app.key)
            return f"opened {app.name}"
        if kind == "back":
            return self._back()
        if kind in ("tap", "long_press"):
            return self._touch(action)
        if kind == "swipe":
            return self._swipe(action)
        if kind == "type":
            page = st.page if st.app != "launcher" else None
            if page is None or not page.focus or st.popup or st.overlay:
                return "typed into nothing"
            page.fields[page.focus] = action.text or ""
            return f"typed into {page.focus}"
        if kind == "enter":
            if st.app != "launcher" and not st.popup and not st.overlay:
                APPS[st.app].on_enter(st)
                return "enter"
            return "enter ignored"
        raise AssertionError(kind)

    def _open(self, key: str) -> None:
        st = self.state
        app = APPS[key]
        st.app, st.overlay, st.popup = key, None, None
        st.stack = [app.new_page(app.root, "", st)]

    def _back(self) -> str:
        st = self.state
        if st.popup:
            st.popup = None
            return "dismissed popup"
        if st.overlay:
            st.overlay = None
            return "closed overlay"
        if st.app == "launcher":
            return "nothing to go back to"
        if len(st.stack) > 1:
            st.stack.pop()
            return "back"
        st.app, st.stack = "launcher", [A.Page("launcher/home")]
        return "left the app"

    def _touch(self, action: Action) -> str:
        layout = self.layout
        x, y = action.point[0] * W, action.point[1] * H
        w = layout.hit(x, y)
        if w is None:
            if layout.overlay and not layout.modal:
                self.state.overlay = None
                return "closed overlay"
            return "nothing there"
        cmd = w.long if action.type == "long_press" else w.tap
        if not cmd:
            return f"no {action.type} on {w.id}"
        self._run(cmd)
        return f"{action.type} {w.id}"

    def _swipe(self, action: Action) -> str:
        layout, st = self.layout, self.state
        (x0, y0), (x1, y1) = action.point, action.end
        dx, dy = (x1 - x0) * W, (y1 - y0) * H
        box = layout.scroll_box
        if layout.overlay or box is None or abs(dy) < abs(dx) or not (box[0] <= x0 * W <= box[2] and box[1] <= y0 * H <= box[3]):
            return "swipe without effect"
        rows = max(1, round(abs(dy) / layout.scroll_step))
        page = st.page
        before = min(page.scroll, layout.scroll_max)
        page.scroll = max(0, min(layout.scroll_max, before + (rows if dy < 0 else -rows)))
        return f"scrolled {page.scroll - before:+d} rows"

    def _run(self, cmd: tuple) -> None:
        """Run a widget's command (see :mod:`guimem.apps`)."""
        st = self.state
        kind = cmd[0]
        app = APPS.get(st.app)
        if kind == "push":
            st.overlay = None
            st.stack.append(app.new_page(cmd[1], cmd[2], st))
        elif kind == "tab":
            st.overlay = None
            st.stack = [app.new_page(cmd[1], "", st)]
        elif kind == "back":
            self._back()
        elif kind == "overlay":
            st.overlay = (cmd[1], cmd[2])
        elif kind == "close":
            st.overlay = None
        elif kind == "focus":
            st.page.focus = cmd[1]
        elif kind == "op":
            getattr(app, f"op_{cmd[1]}")(st, *cmd[2:])
        elif kind == "open":
            self._open(cmd[1])
        elif kind == "dismiss":
            st.popup = None
        elif kind == "accept":
            st.popup, st.overlay = None, None
            st.stack.append(app.new_page(f"{app.key}/info", "Rate us" if self._popup_kind == "rate" else "Survey", st))
        elif kind != "noop":
            raise AssertionError(f"unknown command {cmd!r}")


def ui_elements(layout: Layout) -> tuple[UIElement, ...]:
    """The accessibility tree of a layout: what a touch can reach, bounds normalised to [0, 1].

    Label-free icons and picture cells get positional ids (``icon0``, ``cell3``: their order
    on this screen), so that nothing but their pixels and place tells what they are.
    """
    out, counts = [], {"icon": 0, "cell": 0}
    for w in layout.active():
        eid = w.id
        if w.kind in counts and not w.text and not w.desc:
            eid = f"{w.kind}{counts[w.kind]}"
            counts[w.kind] += 1
        e = _element(w, eid)
        if e is not None:
            out.append(e)
    return tuple(out)


@functools.lru_cache(maxsize=65536)
def _element(w: A.Widget, eid: str) -> UIElement | None:
    """One widget's UI-tree node with id ``eid`` (None for decoration); widgets recur, so nodes are cached."""
    role = A.ROLES.get(w.kind)
    if role is None:
        return None
    x0, y0, x1, y1 = w.box
    bounds = (round(max(0, x0) / W, 4), round(max(0, y0) / H, 4), round(min(W, x1) / W, 4), round(min(H, y1) / H, 4))
    return UIElement(id=eid, role=role, text=w.text, description=w.desc, bounds=bounds, clickable=w.clickable,
                     selected=w.on)


def screen_types() -> dict[str, list[str]]:
    """Every screen type per app (base screens and overlays), from the app definitions."""
    return {a.key: [f"{a.key}/{s}" for s in a.screens] + [f"{a.key}/{o}" for o in a.overlays] for a in A.APP_LIST}
