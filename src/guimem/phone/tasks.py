"""The task templates of the synthetic phone, built from the shared subgoal library.

A template has a goal with parameters (``"Send {text!r} to {name}"``), the plan that solves it
(subgoals from :mod:`guimem.phone.subgoals`), a ``prepare`` that puts the phone in a state where
the task makes sense, and a ``check`` on the hidden final state.
"""

from __future__ import annotations

import itertools
import random
from dataclasses import dataclass
from typing import Any, Callable, Mapping, Sequence

from guimem.core.data import DataError
from guimem.core.env import Task
from guimem.phone import apps as A
from guimem.phone.catalogue import PHOTO_SUBJECTS, STICKERS
from guimem.phone.subgoals import (
    SUBGOAL_TYPES,
    SubgoalSpec,
    add_to_cart,
    choose_option,
    confirm_order,
    create_new,
    delete_item,
    mark_favourite,
    menu_action,
    navigate,
    open_app,
    pick_grid_cell,
    press_button,
    search_for,
    select_list_item,
    share_item,
    toggle_option,
    type_into_field,
    write_and_submit,
)
from guimem.phone.toolkit import slug

Params = dict[str, str]
Data = dict[str, dict]


@dataclass(frozen=True)
class TaskTemplate:
    """A parameterised task: its goal text, parameter space, plan, preparation and success check."""

    id: str
    app: str
    goal: str  # format string over the parameters
    space: tuple[tuple[str, tuple[str, ...]], ...]  # parameter name -> its values
    plan: Callable[[Params], list[SubgoalSpec]]  # the expert's subgoals inside the app (the same for every variant)
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

    def full_plan(self, params: Params, start: str = "app") -> list[SubgoalSpec]:
        """The plan from where an episode starts: inside the app, or on the launcher (``open_app`` first)."""
        return ([open_app(self.app)] if start == "launcher" else []) + self.plan(params)


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


def toggle_template(tid: str, app: str, goal: str, options: Mapping[str, str], where: str = "prefs") -> None:
    """Register a "turn {state} {option}" task: go to the page that shows the switch (where it sits
    differs between app variants), then flip it."""

    def plan(p: Params) -> list[SubgoalSpec]:
        key, on = options[p["option"]], p["state"] == "on"
        wid = f"toggle:{slug(key)}"
        return [navigate(f"the {p['option']} switch", ("widget", wid)), toggle_option(p["option"], wid, on)]

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
toggle_template("settings.network", _SET, "Turn {state} {option}",
                {"Wi-Fi": "wifi", "Bluetooth": "bluetooth", "Airplane mode": "airplane"})
toggle_template("settings.display", _SET, "Turn {state} {option} on the phone",
                {"Dark theme": "dark_theme", "Auto-rotate": "auto_rotate"})
toggle_template("settings.sound", _SET, "Turn {state} {option}", {"Vibrate on ring": "vibrate", "Do not disturb": "dnd"})
toggle_template("settings.battery", _SET, "Turn {state} {option}", {"Battery saver": "battery_saver"})
_NOTIF_APPS = ("Messages", "Notes", "Shop", "Gallery", "Clock", "Calendar", "Camera", "Maps", "Music", "Weather")
toggle_template("settings.app_notifications", _SET, "Turn {state} notifications for {option}",
                {a: a for a in _NOTIF_APPS}, where="notif")


def _font_prepare(d: Data, p: Params, rng: random.Random) -> None:
    d[_SET]["font_size"] = _other(rng, A.FONT_SIZES, p["size"])


_register(TaskTemplate(
    "settings.font_size", _SET, "Set the font size to {size}", (("size", A.FONT_SIZES),),
    lambda p: [navigate("the display settings", ("widget", "row:font_size")),
               choose_option("font size", p["size"], "row:font_size", f"radio:{slug(p['size'])}")],
    lambda d, p: d[_SET]["font_size"] == p["size"], _font_prepare,
    lambda d, p, r: {"size": _other(r, A.FONT_SIZES, p["size"])}))


def _ring_prepare(d: Data, p: Params, rng: random.Random) -> None:
    d[_SET]["ringtone"] = _other(rng, A.RINGTONES, p["tone"])


_register(TaskTemplate(
    "settings.ringtone", _SET, "Set the ringtone to {tone}", (("tone", A.RINGTONES),),
    lambda p: [navigate("the ringtones", ("page", "settings/ringtone", "")),
               select_list_item(p["tone"], f"radio:{slug(p['tone'])}", ("task",), verb="choose")],
    lambda d, p: d[_SET]["ringtone"] == p["tone"], _ring_prepare,
    lambda d, p, r: {"tone": _other(r, A.RINGTONES, p["tone"])}))


def _cache_prepare(d: Data, p: Params, rng: random.Random) -> None:
    d[_SET]["cleared"] = [a for a in d[_SET]["cleared"] if a != p["app"]]


_register(TaskTemplate(
    "settings.clear_cache", _SET, "Clear the cache of {app}", (("app", _NOTIF_APPS),),
    lambda p: [navigate(f"the app info of {p['app']}", ("page", "settings/app_info", p["app"])),
               press_button("Clear cache", "btn:clear_cache", ("task",), confirm="btn:ok")],
    lambda d, p: p["app"] in d[_SET]["cleared"], _cache_prepare,
    lambda d, p, r: {"app": _other(r, _NOTIF_APPS, p["app"])}))


def _search_plan(p: Params) -> list[SubgoalSpec]:
    key = A.SETTING_INDEX[p["setting"]][0]
    return [search_for(p["setting"]),
            select_list_item(f"the {p['setting']} result", f"item:{slug(p['setting'])}", ("visible", f"toggle:{key}")),
            toggle_option(p["setting"], f"toggle:{key}", p["state"] == "on")]


def _search_prepare(d: Data, p: Params, rng: random.Random) -> None:
    d[_SET]["prefs"][A.SETTING_INDEX[p["setting"]][0]] = p["state"] != "on"


_register(TaskTemplate(
    "settings.search_toggle", _SET, "Find the {setting} setting and turn it {state}",
    (("setting", tuple(A.SETTING_INDEX)), ("state", ON_OFF)), _search_plan,
    lambda d, p: d[_SET]["prefs"][A.SETTING_INDEX[p["setting"]][0]] == (p["state"] == "on"), _search_prepare))

# -- Notes ------------------------------------------------------------------------------------
_NOTES = "notes"
toggle_template("notes.display", _NOTES, "Turn {state} {option} in Notes",
                {"Dark mode": "dark_mode", "Large text": "large_text", "Show previews": "show_previews"})
toggle_template("notes.editor", _NOTES, "Turn {state} {option} in Notes", {"Auto-save": "auto_save", "Spell check": "spell_check"})

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
               write_and_submit("text", "field:body", p["body"], "icon:save", "save")],
    lambda d, p: any(n["title"] == p["title"] and n["body"] == p["body"] for n in d[_NOTES]["notes"]),
    corrupt=lambda d, p, r: {**p, "body": _typo(p["body"])}))
_register(TaskTemplate(
    "notes.delete", _NOTES, "Delete the note '{title}'", (("title", A.NOTE_TITLES),),
    lambda p: [menu_action("delete", f"the note '{p['title']}'", f"item:{slug(p['title'])}", "menu:delete",
                           confirm="btn:delete")],
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
               navigate(f"the editor of the note '{p['old']}'", ("page", "notes/edit", p["old"])),
               write_and_submit("title", "field:title", p["new"], "icon:save", "save")],
    lambda d, p: _note_exists(d, p["new"]) and not _note_exists(d, p["old"]),
    lambda d, p, r: _ensure_note(d, p["old"], r),
    lambda d, p, r: {**p, "new": _typo(p["new"])}))
_register(TaskTemplate(
    "notes.restore", _NOTES, "Restore the note '{title}' from the trash", (("title", A.NOTE_TITLES),),
    lambda p: [navigate("the trash", ("page", "notes/trash", "")),
               menu_action("restore", f"the note '{p['title']}'", f"item:{slug(p['title'])}", "menu:restore")],
    lambda d, p: _note_exists(d, p["title"]) and not _note_exists(d, p["title"], "trash"),
    lambda d, p, r: _ensure_note(d, p["title"], r, where="trash"),
    lambda d, p, r: {"title": _existing_note(d, p["title"], r, where="trash")}))

# -- Messages ---------------------------------------------------------------------------------
_MSG = "messages"
toggle_template("messages.appearance", _MSG, "Turn {state} {option} in Messages",
                {"Dark mode": "dark_mode", "Large text": "large_text", "Bubble colours": "bubble_colours"})
toggle_template("messages.notifications", _MSG, "Turn {state} {option} in Messages",
                {"Sounds": "sounds", "Vibrate": "vibrate", "Message previews": "previews"})

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
    lambda p: [_open_chat(p["name"]), write_and_submit("message", "field:message", p["text"], "icon:send", "send")],
    lambda d, p: _last_is(d, p["name"], p["text"]), lambda d, p, r: _ensure_chat(d, p["name"], r),
    lambda d, p, r: {**p, "text": _typo(p["text"])}))


def _no_chat(d: Data, p: Params, rng: random.Random) -> None:
    d[_MSG]["chats"] = [c for c in d[_MSG]["chats"] if c["contact"] != _contact(p["name"])]


_register(TaskTemplate(
    "messages.new_chat", _MSG, "Start a new chat with {name} and say '{text}'", (("name", FIRST_NAMES), ("text", MESSAGE_TEXTS)),
    lambda p: [create_new("chat", "messages/compose"), type_into_field("recipient", "field:to", p["name"]),
               select_list_item(p["name"], f"item:{slug(p['name'])}", ("page", "messages/thread", _contact(p["name"]))),
               write_and_submit("message", "field:message", p["text"], "icon:send", "send")],
    lambda d, p: _last_is(d, p["name"], p["text"]), _no_chat, lambda d, p, r: {**p, "text": _typo(p["text"])}))
_register(TaskTemplate(
    "messages.sticker", _MSG, "Send a {sticker} sticker to {name}", (("name", FIRST_NAMES), ("sticker", STICKERS)),
    lambda p: [navigate(f"the stickers for {p['name']}", ("page", "messages/stickers", _contact(p["name"]))),
               pick_grid_cell(f"{p['sticker']} sticker", f"cell:{p['sticker']}", ("task",))],
    lambda d, p: _last_is(d, p["name"], f"[sticker:{p['sticker']}]"), lambda d, p, r: _ensure_chat(d, p["name"], r),
    lambda d, p, r: {**p, "sticker": _other(r, STICKERS, p["sticker"])}))
_register(TaskTemplate(
    "messages.delete_chat", _MSG, "Delete the chat with {name}", (("name", FIRST_NAMES),),
    lambda p: [menu_action("delete", f"the chat with {p['name']}", f"item:{slug(p['name'])}", "menu:delete",
                           confirm="btn:delete")],
    lambda d, p: _chat(d, p["name"]) is None, lambda d, p, r: _ensure_chat(d, p["name"], r),
    lambda d, p, r: {"name": _other_chat(d, p["name"], r)}))
_register(TaskTemplate(
    "messages.mute", _MSG, "Mute the chat with {name}", (("name", FIRST_NAMES),),
    lambda p: [_open_chat(p["name"]), menu_action("mute", "the chat", "icon:more", "menu:mute", press="tap")],
    lambda d, p: bool(_chat(d, p["name"]) and _chat(d, p["name"])["muted"]),
    lambda d, p, r: _ensure_chat(d, p["name"], r, muted=False),
    lambda d, p, r: {"name": _other_chat(d, p["name"], r, unmuted=True)}))

# -- Shop -------------------------------------------------------------------------------------
_SHOP = "shop"
toggle_template("shop.appearance", _SHOP, "Turn {state} {option} in Shop", {"Dark mode": "dark_mode", "Compact list": "compact_list"})
_CATEGORY_OF = {p: c for c, items in A.CATALOG.items() for p in items}


def _search_product(item: str) -> list[SubgoalSpec]:
    return [search_for(item, entry="field:search"),
            select_list_item(item.lower(), f"item:{slug(item)}", ("page", "shop/product", item))]


def _not_in_cart(d: Data, p: Params, rng: random.Random) -> None:
    d[_SHOP]["cart"].pop(p["item"], None)


_register(TaskTemplate(
    "shop.add_searched", _SHOP, "Add {n} {item} to the cart", (("n", ("2", "3", "4")), ("item", A.PRODUCTS)),
    lambda p: _search_product(p["item"]) + [add_to_cart(p["item"], "btn:add_to_cart", int(p["n"]))],
    lambda d, p: d[_SHOP]["cart"].get(p["item"]) == int(p["n"]), _not_in_cart,
    lambda d, p, r: {**p, "n": str(int(p["n"]) + r.choice((-1, 1)))}))
_register(TaskTemplate(
    "shop.add_from_aisle", _SHOP, "Add {item} from the {category} aisle to the cart",
    (("category", tuple(A.CATALOG)), ("item", A.PRODUCTS)),
    lambda p: [navigate(f"the {p['category']} aisle", ("page", "shop/category", p["category"])),
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
    lambda p: [navigate("the cart", ("page", "shop/cart", "")), delete_item(p["item"].lower(), f"icon:remove:{slug(p['item'])}")],
    lambda d, p: p["item"] not in d[_SHOP]["cart"], _remove_prepare, _other_cart_item))
_SPEEDS = ("Standard", "Express")


def _checkout_prepare(d: Data, p: Params, rng: random.Random) -> None:
    if not d[_SHOP]["cart"]:
        d[_SHOP]["cart"][rng.choice(A.PRODUCTS)] = rng.randint(1, 3)
    d[_SHOP]["delivery"] = _other(rng, _SPEEDS, p["speed"])
    d[_SHOP]["orders"] = []


_register(TaskTemplate(
    "shop.checkout", _SHOP, "Order everything in the cart with {speed} delivery", (("speed", _SPEEDS),),
    lambda p: [navigate("the checkout", ("page", "shop/checkout", "")),
               confirm_order(p["speed"])],
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
                {"Dark mode": "dark_mode", "Show dates": "show_dates", "Auto backup": "auto_backup"})


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
    lambda p: [_open_photo(p["subject"]), delete_item("the photo", "icon:delete", confirm="btn:delete")],
    lambda d, p: _photo_of(d, p["subject"]) is None and p["subject"] in d[_GAL]["trash"],
    lambda d, p, r: _photo_in(d, p["subject"], r), lambda d, p, r: {"subject": _other_photo(d, p["subject"], r)}))
_register(TaskTemplate(
    "gallery.favourite", _GAL, "Add the photo of the {subject} to favourites", (("subject", PHOTO_SUBJECTS),),
    lambda p: [_open_photo(p["subject"]), mark_favourite("the photo")],
    lambda d, p: bool(_photo_of(d, p["subject"]) and _photo_of(d, p["subject"])["fav"]),
    lambda d, p, r: _photo_in(d, p["subject"], r), lambda d, p, r: {"subject": _other_photo(d, p["subject"], r, unfav=True)}))
_register(TaskTemplate(
    "gallery.share", _GAL, "Share the photo of the {subject} to {target}", (("subject", PHOTO_SUBJECTS), ("target", A.SHARE_TARGETS)),
    lambda p: [_open_photo(p["subject"]), share_item(p["target"], f"share:{slug(p['target'])}")],
    lambda d, p: [p["subject"], p["target"]] in d[_GAL]["shared"], lambda d, p, r: _photo_in(d, p["subject"], r),
    lambda d, p, r: {**p, "target": _other(r, A.SHARE_TARGETS, p["target"])}))
_register(TaskTemplate(
    "gallery.restore", _GAL, "Restore the photo of the {subject} from the trash", (("subject", PHOTO_SUBJECTS),),
    lambda p: [navigate("the trash", ("page", "gallery/trash", "")),
               pick_grid_cell(f"photo of the {p['subject']}", f"cell:{p['subject']}", ("page", "gallery/trash_item", p["subject"])),
               press_button("Restore", "btn:restore", ("task",))],
    lambda d, p: _photo_of(d, p["subject"]) is not None and p["subject"] not in d[_GAL]["trash"],
    lambda d, p, r: _photo_in(d, p["subject"], r, where="trash"),
    lambda d, p, r: {"subject": _other_photo(d, p["subject"], r, where="trash")}))
ALBUM_NAMES = ("Holiday", "Family", "Pets", "Food", "Road trip", "Best of 2024")
_register(TaskTemplate(
    "gallery.new_album", _GAL, "Create an album called '{name}'", (("name", ALBUM_NAMES),),
    lambda p: [navigate("a new album", ("page", "gallery/new_album", "")),
               write_and_submit("album name", "field:name", p["name"], "icon:save", "save")],
    lambda d, p: p["name"] in d[_GAL]["albums"], corrupt=lambda d, p, r: {"name": _typo(p["name"])}))

# -- Clock ------------------------------------------------------------------------------------
_CLK = "clock"
toggle_template("clock.display", _CLK, "Turn {state} {option} in Clock",
                {"Dark mode": "dark_mode", "24-hour clock": "h24", "Show seconds": "show_seconds"})
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
    lambda p: [create_new("alarm", "clock/new_alarm"), write_and_submit("time", "field:time", p["time"], "icon:save", "save")],
    lambda d, p: bool(_alarm(d, p["time"]) and _alarm(d, p["time"])["on"]), _alarm_set_prepare, _alarm_set_corrupt))
_register(TaskTemplate(
    "clock.switch_alarm", _CLK, "Turn {state} the {time} alarm", (("time", ALARM_TIMES), ("state", ON_OFF)),
    lambda p: [toggle_option(f"the {p['time']} alarm", f"toggle:{slug(p['time'])}", p["state"] == "on")],
    lambda d, p: bool(_alarm(d, p["time"]) and _alarm(d, p["time"])["on"] == (p["state"] == "on")),
    lambda d, p, r: _ensure_alarm(d, p["time"], r, on=p["state"] != "on"),
    lambda d, p, r: {**p, "time": _other_alarm(d, p["time"], r)}))
_register(TaskTemplate(
    "clock.delete_alarm", _CLK, "Delete the {time} alarm", (("time", ALARM_TIMES),),
    lambda p: [menu_action("delete", f"the {p['time']} alarm", f"item:{slug(p['time'])}", "menu:delete", confirm="btn:delete")],
    lambda d, p: _alarm(d, p["time"]) is None, lambda d, p, r: _ensure_alarm(d, p["time"], r),
    lambda d, p, r: {"time": _other_alarm(d, p["time"], r)}))
TIMER_MINUTES = ("2", "3", "5", "10", "15", "20", "25", "30", "45", "60")


def _timer_prepare(d: Data, p: Params, rng: random.Random) -> None:
    d[_CLK]["timer"] = 0


_register(TaskTemplate(
    "clock.timer", _CLK, "Start a timer for {n} minutes", (("n", TIMER_MINUTES),),
    lambda p: [navigate("the timer", ("page", "clock/timer", "")),
               write_and_submit("minutes", "field:minutes", p["n"], "btn:start", "start")],
    lambda d, p: d[_CLK]["timer"] == int(p["n"]), _timer_prepare,
    lambda d, p, r: {"n": _other(r, TIMER_MINUTES, p["n"])}))


def _city_prepare(d: Data, p: Params, rng: random.Random) -> None:
    d[_CLK]["cities"] = [c for c in d[_CLK]["cities"] if c != p["city"]]


_register(TaskTemplate(
    "clock.add_city", _CLK, "Add {city} to the world clock", (("city", A.CITIES),),
    lambda p: [navigate("the city search of the world clock", ("page", "clock/city_search", "")),
               type_into_field("city name", "field:search", p["city"]),
               select_list_item(p["city"], f"item:{slug(p['city'])}", ("task",))],
    lambda d, p: p["city"] in d[_CLK]["cities"], _city_prepare,
    lambda d, p, r: {"city": _other(r, [c for c in A.CITIES if c not in d[_CLK]["cities"]], p["city"])}))
ALARM_LABELS = ("Gym", "Work", "Medicine", "School run", "Wake up", "Meeting")
_register(TaskTemplate(
    "clock.label_alarm", _CLK, "Label the {time} alarm '{label}'", (("time", ALARM_TIMES), ("label", ALARM_LABELS)),
    lambda p: [select_list_item(f"the {p['time']} alarm", f"item:{slug(p['time'])}", ("page", "clock/edit_alarm", p["time"])),
               write_and_submit("label", "field:label", p["label"], "icon:save", "save")],
    lambda d, p: bool(_alarm(d, p["time"]) and _alarm(d, p["time"])["label"] == p["label"]),
    lambda d, p, r: _ensure_alarm(d, p["time"], r), lambda d, p, r: {**p, "label": _typo(p["label"])}))


def sample_task(template: str, rng: random.Random, combos: Sequence[tuple[tuple[str, str], ...]] | None = None) -> Task:
    """A task of ``template`` with parameters drawn from ``combos`` (default: all valid ones)."""
    pool = combos if combos is not None else TEMPLATES[template].combos()
    return make_task(template, rng.choice(list(pool)))


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


# ============================================================================= tasks from templates
def spec_of(task: Task) -> TaskTemplate:
    """The template ``task`` was drawn from; a task without one cannot run in the built-in world."""
    if task.template is None:
        raise DataError("task.template", f"the built-in world runs template tasks only; {task.goal!r:.60} has none")
    if task.template not in TEMPLATES:
        raise DataError("task.template", f"unknown template {task.template!r}")
    return TEMPLATES[task.template]


def make_task(template: str, params: tuple[tuple[str, str], ...] = ()) -> Task:
    """The task of ``template`` with ``params`` (its goal written out, its app named)."""
    if template not in TEMPLATES:
        raise DataError("task.template", f"unknown template {template!r}")
    spec = TEMPLATES[template]
    return Task(goal=spec.goal.format(**dict(params)), app=spec.app, template=template, params=tuple(params))


def task_from_dict(d: Mapping[str, Any]) -> Task:
    """A template task stored by :meth:`Task.to_dict`, checked against the templates."""
    if not isinstance(d, Mapping) or not isinstance(d.get("template"), str):
        raise DataError("task.template", f"expected a template name, got {d!r:.60}")
    if d["template"] not in TEMPLATES:
        raise DataError("task.template", f"unknown template {d['template']!r}")
    params = d.get("params") or {}
    if not isinstance(params, Mapping) or not all(isinstance(v, str) for v in params.values()):
        raise DataError("task.params", f"expected an object of strings, got {params!r:.60}")
    return make_task(d["template"], tuple(sorted(params.items())))
