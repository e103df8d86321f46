"""The shared subgoal library: every task template is a sequence of these subgoal types.

A :class:`SubgoalSpec` carries its library type (:data:`SUBGOAL_TYPES`), its sub-intent in
words, the expert's moves and a postcondition the world can check.
"""

from __future__ import annotations

from dataclasses import dataclass

from guimem.phone.apps import APPS
from guimem.phone.toolkit import slug

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
