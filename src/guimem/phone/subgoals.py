"""The shared subgoal library: every task template is a sequence of these subgoal types.

A :class:`SubgoalSpec` carries its library type (:data:`SUBGOAL_TYPES`), its sub-intent in
words, the expert's moves and a postcondition the world can check. A subgoal is one sub-intent
and usually several actions ("write the message and send it": tap the field, type, tap send).

Moves say *what* to do, not how to get there: ``("reach", target)`` is the whole route to
where ``target`` is shown, found on the phone itself by :func:`guimem.phone.expert.route`, so
one plan serves every app variant (where the variant puts that page is its own business).
"""

from __future__ import annotations

from dataclasses import dataclass

from guimem.phone.apps import APPS
from guimem.phone.toolkit import slug

Move = tuple
"""An expert move: ``("open_app", app)`` ``("reach", target)`` ``("tap", wid)`` ``("long", wid)``
``("switch", wid, on)`` ``("type", wid, text)`` ``("enter", query)`` ``("set_qty", n)`` ``("back",)``.
A target is ``("widget", wid)`` (a screen that shows it, in view or further down its list) or
``("page", screen, arg)``."""
Post = tuple
"""A postcondition: ``("screen", s)`` ``("page", s, arg)`` ``("overlay", o)`` ``("visible", wid)``
``("field", wid, text)`` ``("no_popup",)`` ``("task",)``."""


@dataclass(frozen=True)
class SubgoalSpec:
    """One subgoal of a plan: its library type, its sub-intent, the expert's moves, a postcondition."""

    type: str
    text: str
    moves: tuple[Move, ...]
    post: Post = ()


SUBGOAL_TYPES: dict[str, str] = {
    "open_app": "open an app from the launcher",
    "navigate": "go to the page where something is done: through menus, tabs, rows and toolbar icons",
    "toggle_option": "find a switch (scrolling if needed) and flip it",
    "search_for": "open search, type a query, submit it",
    "select_list_item": "find an entry in a (possibly scrolled) list and open it",
    "menu_action": "open an entry's menu (long press or ⋮) and choose an action in it, confirming if asked",
    "choose_option": "open a chooser and pick one of its options",
    "dismiss_popup": "dismiss an interrupting popup",
    "type_into_field": "focus a text field and type into it",
    "write_and_submit": "type into a field and submit it with the control beside it (save, send, start)",
    "create_new": "tap the + control to start something new",
    "mark_favourite": "tap the star",
    "delete_item": "tap a trash control and confirm",
    "share_item": "open the share sheet and pick where to",
    "pick_grid_cell": "find a picture in a dense label-free grid (opening it first) and tap it",
    "add_to_cart": "set a quantity and add the product to the cart",
    "confirm_order": "choose the delivery, place the order and confirm it",
    "press_button": "tap a labelled button (and confirm the dialog it opens)",
}
"""The ONE shared subgoal library: every template is a sequence of these types."""


# -- the library: constructors for each subgoal type
def open_app(app: str) -> SubgoalSpec:
    return SubgoalSpec("open_app", f"open {APPS[app].name}", (("open_app", app),), ("screen", APPS[app].root))


def navigate(where: str, target: tuple) -> SubgoalSpec:
    """Go to ``where`` (words of the intent), the page that shows ``target``."""
    post = ("visible", target[1]) if target[0] == "widget" else ("page", target[1], target[2])
    return SubgoalSpec("navigate", f"go to {where}", (("reach", target),), post)


def toggle_option(label: str, wid: str, on: bool, post: Post = ("task",)) -> SubgoalSpec:
    return SubgoalSpec("toggle_option", f"turn {'on' if on else 'off'} {label}", (("switch", wid, on),), post)


def search_for(query: str, entry: str = "icon:search") -> SubgoalSpec:
    moves: tuple[Move, ...] = (("tap", entry),) if entry else ()
    return SubgoalSpec("search_for", f"search for '{query}'", moves + (("type", "field:search", query), ("enter", query)),
                       ("field", "query", query))


def select_list_item(label: str, wid: str, post: Post, verb: str = "open") -> SubgoalSpec:
    """Tap the entry ``wid`` (scrolling to it); a radio entry (``verb="choose"``) is chosen only if it is not yet."""
    move: Move = ("switch", wid, True) if verb == "choose" else ("tap", wid)
    return SubgoalSpec("select_list_item", f"{verb} {label}", (move,), post)


def menu_action(option: str, label: str, wid: str, option_wid: str, confirm: str = "", press: str = "long",
                post: Post = ("task",)) -> SubgoalSpec:
    """Open the menu of ``wid`` (a long press, or a tap on a ⋮ control: ``press="tap"``), choose
    ``option_wid``, then tap ``confirm`` if a dialog asks."""
    moves: tuple[Move, ...] = ((press, wid), ("tap", option_wid)) + ((("tap", confirm),) if confirm else ())
    return SubgoalSpec("menu_action", f"{option} {label} from its menu", moves, post)


def choose_option(what: str, value: str, opener: str, option_wid: str, post: Post = ("task",)) -> SubgoalSpec:
    return SubgoalSpec("choose_option", f"set the {what} to {value}", (("tap", opener), ("tap", option_wid)), post)


def dismiss_popup(kind: str, by_back: bool) -> SubgoalSpec:
    what = {"rate": "rate-this-app", "notifications": "notification permission", "whats_new": "what's-new",
            "survey": "survey"}[kind]
    move: Move = ("back",) if by_back else ("tap", "btn:dismiss")
    return SubgoalSpec("dismiss_popup", f"dismiss the {what} popup", (move,), ("no_popup",))


def type_into_field(what: str, wid: str, text: str) -> SubgoalSpec:
    return SubgoalSpec("type_into_field", f"type '{text}' as the {what}", (("type", wid, text),), ("field", wid, text))


def write_and_submit(what: str, wid: str, text: str, submit: str, verb: str, post: Post = ("task",)) -> SubgoalSpec:
    """Type ``text`` into ``wid`` and tap ``submit`` ("write 'see you' and send it")."""
    return SubgoalSpec("write_and_submit", f"write '{text}' as the {what} and {verb} it",
                       (("type", wid, text), ("tap", submit)), post)


def create_new(what: str, screen: str, wid: str = "icon:add") -> SubgoalSpec:
    return SubgoalSpec("create_new", f"start a new {what}", (("tap", wid),), ("screen", screen))


def mark_favourite(what: str, post: Post = ("task",)) -> SubgoalSpec:
    return SubgoalSpec("mark_favourite", f"star {what}", (("tap", "icon:star"),), post)


def delete_item(what: str, wid: str, confirm: str = "", post: Post = ("task",)) -> SubgoalSpec:
    moves: tuple[Move, ...] = (("tap", wid),) + ((("tap", confirm),) if confirm else ())
    return SubgoalSpec("delete_item", f"delete {what}", moves, post)


def share_item(target: str, target_wid: str) -> SubgoalSpec:
    return SubgoalSpec("share_item", f"share it to {target}", (("tap", "icon:share"), ("tap", target_wid)), ("task",))


def pick_grid_cell(label: str, wid: str, post: Post, opener: str = "") -> SubgoalSpec:
    """Tap the picture ``wid`` in its grid (opened first with ``opener``, if given)."""
    moves: tuple[Move, ...] = ((("tap", opener),) if opener else ()) + (("tap", wid),)
    return SubgoalSpec("pick_grid_cell", f"pick the {label}", moves, post)


def add_to_cart(item: str, wid: str, n: int = 1) -> SubgoalSpec:
    moves: tuple[Move, ...] = ((("set_qty", str(n)),) if n > 1 else ()) + (("tap", wid),)
    what = f"{n} {item.lower()}" if n > 1 else item.lower()
    return SubgoalSpec("add_to_cart", f"add {what} to the cart", moves, ("task",))


def confirm_order(speed: str) -> SubgoalSpec:
    """Choose the delivery, place the order and confirm it."""
    return SubgoalSpec("confirm_order", f"place the order with {speed} delivery",
                       (("switch", f"radio:{slug(speed)}", True), ("tap", "btn:place_order"), ("tap", "btn:confirm")),
                       ("task",))


def press_button(label: str, wid: str, post: Post, confirm: str = "") -> SubgoalSpec:
    """Tap the button ``wid``, then ``confirm`` in the dialog it opens, if given."""
    moves: tuple[Move, ...] = (("tap", wid),) + ((("tap", confirm),) if confirm else ())
    return SubgoalSpec("press_button", f"tap {label}" + (" and confirm" if confirm else ""), moves, post)
